//! cpuio backend (fio `cpuio`): no I/O; each request burns CPU for one cycle
//! (`cpuchunks`, microseconds), and the job's think time between requests
//! (set by the engine to `cycle x (100 - cpuload) / cpuload`, as fio sets it)
//! keeps the thread's CPU share at `cpuload` percent. These are the C tasks of
//! a co-location study written as an fio job.
//!
//! Two ways to burn (`cpumode`), as fio's:
//! - `noop`: spin on the clock (the vDSO: no system call) for the cycle;
//! - `qsort`: fio's sort round over 256 Ki 32-bit numbers (sort, reverse sort,
//!   sort by byte, reverse sort), repeated until the cycle has passed. fio
//!   times one round and makes that the cycle; iolab keeps the cycle asked
//!   for, so the duty cycle is `cpuload` either way.
//!
//! A request "reads" its block size, which counts as done, as fio counts it.

use super::perform::Perform;
use super::{BackendStats, DevResult};
use crate::measure::clock;
use crate::request::IoCmd;

/// The options of fio's cpuio list a job may set only with cpuio.
pub(crate) const OWNED: &[&str] = &["cpuload", "cpuchunks", "cpumode", "exit_on_io_done"];

/// fio's `cpumode` (cpuio): how a cycle burns CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuMode {
    #[default]
    Noop,
    Qsort,
}

impl CpuMode {
    pub const VALID: &'static str = "noop or qsort";
}

/// cpuio's options, as a job sets them (defaults are fio's). The engine
/// turns `cpuload` and `cpuchunks` into the job's think time (`job::spec`'s
/// checks: that is pacing, the job's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CpuioOptions {
    /// `cpuload`: percent of a CPU to use (1-100; 0 = not set).
    pub cpuload: u32,
    /// `cpuchunks`: microseconds per burn cycle.
    pub cpuchunks: u32,
    /// `cpumode`.
    pub cpumode: CpuMode,
    /// `exit_on_io_done`: end when the group's I/O jobs have ended.
    pub exit_on_io_done: bool,
}

impl Default for CpuioOptions {
    fn default() -> Self {
        CpuioOptions {
            cpuload: 0,
            cpuchunks: 50_000,
            cpumode: CpuMode::Noop,
            exit_on_io_done: false,
        }
    }
}

/// Numbers sorted per qsort round (fio's 256 Ki).
const QSORT_LEN: usize = 256 << 10;

/// One CPU burner.
pub struct CpuBurn {
    cycle_ns: u64,
    mode: CpuMode,
    /// qsort mode's numbers, filled once before the clock starts.
    data: Vec<i32>,
    /// Folded from the sorted data, so the work cannot be optimised away.
    checksum: u64,
    stats: BackendStats,
}

impl std::fmt::Debug for CpuBurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuBurn")
            .field("cycle_ns", &self.cycle_ns)
            .field("mode", &self.mode)
            .finish()
    }
}

/// Marsaglia's multiply-with-carry generator, the one fio fills its numbers with.
fn mwc_fill(data: &mut [i32]) {
    let (mut w, mut z) = (521_288_629u32, 362_436_069u32);
    for x in data {
        z = 36969u32.wrapping_mul(z & 65535).wrapping_add(z >> 16);
        w = 18000u32.wrapping_mul(w & 65535).wrapping_add(w >> 16);
        *x = ((z << 16).wrapping_add(w)) as i32;
    }
}

impl CpuBurn {
    /// `cycle_us`: fio's `cpuchunks`.
    pub fn new(cycle_us: u32, mode: CpuMode) -> CpuBurn {
        let mut data = Vec::new();
        if mode == CpuMode::Qsort {
            data = vec![0; QSORT_LEN];
            mwc_fill(&mut data);
        }
        CpuBurn {
            cycle_ns: u64::from(cycle_us) * 1000,
            mode,
            data,
            checksum: 0,
            stats: BackendStats::default(),
        }
    }

    /// Burn one cycle.
    fn burn(&mut self) {
        let end = clock::now_ns() + self.cycle_ns;
        match self.mode {
            CpuMode::Noop => {
                while clock::now_ns() < end {
                    std::hint::spin_loop();
                }
            }
            CpuMode::Qsort => loop {
                // sort_unstable sorts in place: no allocation per round.
                let d = &mut self.data;
                for step in 0..4 {
                    match step {
                        0 => d.sort_unstable(),
                        1 | 3 => d.sort_unstable_by(|a, b| b.cmp(a)),
                        _ => d.sort_unstable_by_key(|&x| x as i8),
                    }
                    if clock::now_ns() >= end {
                        break;
                    }
                }
                self.checksum = self.checksum.wrapping_add(d[d.len() / 2] as u64);
                if clock::now_ns() >= end {
                    break;
                }
            },
        }
        std::hint::black_box(self.checksum);
    }
}

impl Perform for CpuBurn {
    fn engine_name(&self) -> &'static str {
        "cpuio"
    }

    /// One cycle burnt: the request's block counts as done.
    #[inline]
    fn perform_one(&mut self, cmd: &IoCmd) -> i64 {
        self.burn();
        i64::from(cmd.len)
    }

    fn counters(&self) -> BackendStats {
        self.stats
    }

    /// Burns address no file.
    fn address_files(&mut self, _fds: &[std::os::fd::RawFd]) -> DevResult<()> {
        Ok(())
    }
}
