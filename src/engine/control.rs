//! Job control while a group runs (the options are parsed in `job::control`):
//! a worker's start delay, the stop flags `exitall` and `exitall_on_error`
//! raise, the syncs after the last I/O (`end_fsync`, `fsync_on_close`), which
//! errors a stream goes on after (`ignore_error`) and the per-request priority
//! `cmdprio_percentage` picks.
//!
//! What runs per request ([`Halt::fired`], [`goes_on`], [`CmdPrio::pick`]) is a
//! relaxed load or a few integer operations: no allocation, no system call.

use std::os::fd::RawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::engine::cmdprio::BsPrioTable;
use crate::job::control::{CmdPrioSpec, ExitWhat, IgnoreError};
use crate::job::{ContinueOnError, JobSpec};
use crate::measure::iolog::trace_log::TraceLog;
use crate::request::Op;

/// The flags `exitall`/`exitall_on_error` raise, as one worker sees them:
/// its own flag (up: the worker stops), which reporting groups its jobs are
/// in, the flags of every worker of the running stonewall group with theirs,
/// and the run's `all` flag, which keeps later groups from starting.
#[derive(Clone, Debug, Default)]
pub struct StopFlags {
    pub own: Arc<AtomicBool>,
    /// The reporting groups of this worker's jobs (one, unless null-device
    /// jobs of several groups share the worker).
    groups: Vec<u32>,
    /// Every worker of the stonewall group: its reporting groups and flag.
    running: Arc<[(Vec<u32>, Arc<AtomicBool>)]>,
    pub all: Arc<AtomicBool>,
}

impl StopFlags {
    /// The flags of each worker of the next stonewall group, given each
    /// worker's reporting groups: fresh own flags, the run's `all` flag.
    pub fn for_workers(&self, groups: Vec<Vec<u32>>) -> Vec<StopFlags> {
        let running: Arc<[(Vec<u32>, Arc<AtomicBool>)]> =
            groups.into_iter().map(|g| (g, Arc::default())).collect();
        running
            .iter()
            .map(|(g, f)| StopFlags {
                own: f.clone(),
                groups: g.clone(),
                running: running.clone(),
                all: self.all.clone(),
            })
            .collect()
    }

    /// No later group may start.
    pub fn all_stopped(&self) -> bool {
        self.all.load(Ordering::Relaxed)
    }

    /// `exit_what=group`: stop the workers of this worker's reporting
    /// groups (a worker shared with another group stops too: its streams
    /// share one loop).
    fn stop_reporting_groups(&self) {
        self.own.store(true, Ordering::Relaxed);
        for (g, f) in self.running.iter() {
            if g.iter().any(|x| self.groups.contains(x)) {
                f.store(true, Ordering::Relaxed);
            }
        }
    }

    /// `exit_what=stonewall`: stop every worker of the stonewall group.
    fn stop_running(&self) {
        self.own.store(true, Ordering::Relaxed);
        for (_, f) in self.running.iter() {
            f.store(true, Ordering::Relaxed);
        }
    }
}

/// A worker's view of its group's stop flag, read once per loop iteration.
#[derive(Debug, Default)]
pub struct Halt {
    flag: Arc<AtomicBool>,
    seen: bool,
    /// cpuio's `exit_on_io_done`: the group's I/O workers still running; at
    /// 0 the flag counts as up.
    io_left: Option<Arc<AtomicUsize>>,
}

impl Halt {
    pub fn watch(flags: &StopFlags) -> Halt {
        Halt {
            flag: flags.own.clone(),
            seen: false,
            io_left: None,
        }
    }

    /// Also halt once the group's I/O workers (counted by `io_left`) have
    /// all ended (cpuio's `exit_on_io_done`).
    pub fn until_io_done(mut self, io_left: Arc<AtomicUsize>) -> Halt {
        self.io_left = Some(io_left);
        self
    }

    #[inline]
    fn up(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
            || self
                .io_left
                .as_ref()
                .is_some_and(|n| n.load(Ordering::Relaxed) == 0)
    }

    /// Whether the flag went up and [`fired`](Self::fired) has not yet said so
    /// (a look that leaves the one-shot to the loop that acts on it).
    #[inline]
    pub fn pending(&self) -> bool {
        !self.seen && self.up()
    }

    /// True once, the first time it is called after the flag went up.
    #[inline]
    pub fn fired(&mut self) -> bool {
        if !self.seen && self.up() {
            self.seen = true;
            return true;
        }
        false
    }
}

/// Does a stream go on after an I/O error `errno` of `op`? `continue_on_error`
/// decides by direction; an `ignore_error` list for the direction narrows it
/// to the errnos listed (fio's rule). A sync counts as a write, as in fio.
#[inline]
pub fn goes_on(coe: ContinueOnError, ignore: &IgnoreError, op: Op, errno: i32) -> bool {
    if !coe.covers_io(op) {
        return false;
    }
    let dir = usize::from(op != Op::Read);
    ignore.lists[dir]
        .as_ref()
        .is_none_or(|list| list.contains(&errno))
}

/// `cmdprio_percentage` / `cmdprio_bssplit`: which requests carry a command
/// priority, and which.
#[derive(Clone, Debug, Default)]
pub struct CmdPrio {
    percentage: [u32; 2],
    ioprio: [u16; 2],
    bssplit: BsPrioTable,
    rng: u64,
}

impl CmdPrio {
    pub fn new(spec: &CmdPrioSpec, seed: u64) -> CmdPrio {
        let ioprio = [spec.ioprio(0), spec.ioprio(1)];
        CmdPrio {
            percentage: spec.percentage.map(|p| p.min(100) as u32),
            ioprio,
            bssplit: BsPrioTable::new(&spec.bssplit, ioprio),
            // Never zero: xorshift would stay at zero.
            rng: seed | 1,
        }
    }

    /// Whether any request gets a command priority (then requests carry
    /// more than one priority and their latencies are kept per priority).
    pub fn active(&self) -> bool {
        !self.bssplit.is_empty() || self.percentage.iter().any(|&p| p > 0)
    }

    /// Every ioprio a request can carry: `base` (the job's own) first, then
    /// the command priorities, each once.
    pub fn values(&self, base: u16) -> Vec<u16> {
        let mut v = vec![base];
        for d in 0..2 {
            if self.percentage[d] > 0 {
                v.push(self.ioprio[d]);
            }
            v.extend(self.bssplit.values(d));
        }
        let mut seen = Vec::with_capacity(v.len());
        for p in v {
            if !seen.contains(&p) {
                seen.push(p);
            }
        }
        seen
    }

    /// The ioprio for the next request of direction `dir` (0 read, else write)
    /// and `len` bytes: with `cmdprio_bssplit`, the entry of its block size
    /// the draw falls in; otherwise the command priority for `percentage` of
    /// them. `base` (the job's prio/prioclass) for the rest.
    #[inline]
    pub fn pick(&mut self, dir: usize, len: u32, base: u16) -> u16 {
        let d = dir.min(1);
        if !self.bssplit.is_empty() {
            if !self.bssplit.names(d, len) {
                return base;
            }
            let draw = (self.draw() % 100) as u32;
            return self.bssplit.pick(d, len, draw).unwrap_or(base);
        }
        let p = self.percentage[d];
        if p == 0 {
            return base;
        }
        if p >= 100 {
            return self.ioprio[d];
        }
        if (self.draw() % 100) < u64::from(p) {
            self.ioprio[d]
        } else {
            base
        }
    }

    #[inline]
    fn draw(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }
}

/// What a worker does around its loop: wait its start delay, raise the stop
/// flags when its job ends, sync the file at the end.
#[derive(Clone, Debug, Default)]
pub struct WorkerControl {
    pub delay: Duration,
    exitall: Option<ExitWhat>,
    on_error: bool,
    /// fsyncs after the last I/O: one for end_fsync, one for fsync_on_close
    /// (none for a job that does not write, as in fio).
    end_syncs: u32,
    /// `wait_for`: the jobs whose end starts this worker (`engine::waitfor`).
    pub gate: crate::engine::waitfor::StartGate,
    /// `numa_mem_policy`: the worker thread's memory policy.
    mem: Option<crate::job::numa::MemPolicy>,
}

impl WorkerControl {
    /// What two jobs sharing one worker disagree on, of what applies to the
    /// worker as a whole (setup refuses such a pair).
    pub fn disagreement(a: &JobSpec, b: &JobSpec) -> Option<&'static str> {
        if a.control.startdelay != b.control.startdelay {
            Some("startdelay")
        } else if a.control.exitall != b.control.exitall
            || a.control.exit_what != b.control.exit_what
            || a.control.exitall_on_error != b.control.exitall_on_error
        {
            Some("exitall/exit_what/exitall_on_error")
        } else if a.syncs != b.syncs {
            Some("fdatasync/end_fsync/fsync_on_close/sync_file_range")
        } else if a.control.wait_for != b.control.wait_for {
            Some(
                "wait_for (a job cannot wait for one that shares its worker: give them different filenames)",
            )
        } else if a.control.numa != b.control.numa {
            Some("numa_cpu_nodes/numa_mem_policy")
        } else {
            None
        }
    }

    /// The control of a worker whose first job is `first`, clone `jobnum`.
    pub fn new(first: &JobSpec, jobnum: u32) -> WorkerControl {
        let [lo, hi] = first.control.startdelay;
        let delay = if hi > lo {
            // One draw per clone, repeatable from randseed (fio draws from its
            // own seeded generator too).
            let mut x = first
                .randseed
                .wrapping_add(u64::from(jobnum))
                .wrapping_mul(0x9E37_79B9_7F4A_7C15);
            x ^= x >> 31;
            let span = (hi - lo).as_nanos() as u64;
            lo + Duration::from_nanos(x % (span + 1))
        } else {
            lo
        };
        WorkerControl {
            delay,
            exitall: first.control.exitall.then_some(first.control.exit_what),
            on_error: first.control.exitall_on_error,
            // fio syncs at the end only a job that writes (should_fsync).
            end_syncs: if first.rw.dir.issues()[1] {
                u32::from(first.syncs.end_fsync) + u32::from(first.syncs.fsync_on_close)
            } else {
                0
            },
            gate: Default::default(),
            mem: first.control.numa.mem.clone(),
        }
    }

    /// Put the calling (worker) thread under the job's `numa_mem_policy`, so
    /// what it allocates follows the policy as its buffers do (`engine::numa`).
    pub fn enter_mem_policy(&self) -> std::io::Result<()> {
        match &self.mem {
            Some(m) => crate::sys::numa::set_mempolicy(m.mode.mpol(), &m.nodes),
            None => Ok(()),
        }
    }

    /// Sleep the start delay (counted from the group's start, as fio counts
    /// it) and wait for the `wait_for` job. False if the group was stopped (or
    /// the run interrupted) meanwhile: the worker then issues nothing, as in fio.
    pub fn wait_start(&self, flags: &StopFlags) -> bool {
        let end = std::time::Instant::now() + self.delay;
        loop {
            if flags.own.load(Ordering::Relaxed) || crate::sys::cleanup::stop_requested() {
                return false;
            }
            let now = std::time::Instant::now();
            if now >= end && self.gate.open() {
                return true;
            }
            // Short steps so exitall or SIGINT ends a long delay promptly, and
            // a waitee's end starts the waiter within a millisecond.
            let step = if now < end { end - now } else { Duration::ZERO };
            std::thread::sleep(step.clamp(Duration::from_millis(1), Duration::from_millis(10)));
        }
    }

    /// After the loop: the end syncs (the errno of the first that failed,
    /// which the caller makes the job's error, as a failed I/O would be), then
    /// the stop flags this worker's end raises; `failed`: a job of the worker
    /// ended with an error.
    /// `trace`: the worker's `write_iolog`, which gets a `sync` line per
    /// file synced, as fio's does.
    pub fn after_run(
        &self,
        fds: &[RawFd],
        failed: bool,
        flags: &StopFlags,
        mut trace: Option<&mut TraceLog>,
    ) -> Option<i32> {
        let mut sync_err = None;
        for (i, &fd) in fds.iter().enumerate() {
            if self.end_syncs > 0
                && let Some(t) = trace.as_deref_mut()
            {
                t.end_sync(i as u16);
            }
            for _ in 0..self.end_syncs {
                // SAFETY: fsync on a file's descriptor, open until the worker's
                // results are collected.
                if unsafe { libc::fsync(fd) } != 0 {
                    let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
                    sync_err.get_or_insert(errno);
                }
            }
        }
        if self.on_error && (failed || sync_err.is_some()) {
            flags.all.store(true, Ordering::Relaxed);
            flags.stop_running();
        }
        match self.exitall {
            Some(ExitWhat::All) => {
                flags.all.store(true, Ordering::Relaxed);
                flags.stop_running();
            }
            Some(ExitWhat::Stonewall) => flags.stop_running(),
            Some(ExitWhat::Group) => flags.stop_reporting_groups(),
            None => {}
        }
        sync_err
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdprio_picks_the_share_asked_for() {
        let spec = CmdPrioSpec {
            percentage: [20, 100],
            class: [1, 3],
            level: [4, 7],
            bssplit: Default::default(),
        };
        let mut c = CmdPrio::new(&spec, 0x89);
        let base = (2 << 13) | 7;
        let n = 100_000;
        let hits = (0..n)
            .filter(|_| c.pick(0, 4096, base) == (1 << 13) | 4)
            .count();
        let share = hits as f64 / n as f64;
        assert!((0.19..0.21).contains(&share), "read share {share}");
        // The rest keep the job's own priority.
        assert!((0..1000).all(|_| [base, (1 << 13) | 4].contains(&c.pick(0, 4096, base))));
        // 100% of writes (and syncs, which count as writes).
        assert!((0..1000).all(|_| c.pick(1, 4096, base) == (3 << 13) | 7));
        assert_eq!(c.pick(2, 4096, base), (3 << 13) | 7);
        let mut off = CmdPrio::new(&CmdPrioSpec::default(), 1);
        assert_eq!(off.pick(0, 4096, base), base);
    }

    #[test]
    fn ignore_error_narrows_continue_on_error() {
        let mut ig = IgnoreError::default();
        assert!(goes_on(ContinueOnError::Write, &ig, Op::Write, libc::EIO));
        assert!(!goes_on(ContinueOnError::Write, &ig, Op::Read, libc::EIO));
        ig.lists[1] = Some(vec![libc::ENOSPC]);
        assert!(goes_on(
            ContinueOnError::Write,
            &ig,
            Op::Write,
            libc::ENOSPC
        ));
        assert!(goes_on(
            ContinueOnError::Write,
            &ig,
            Op::Fsync,
            libc::ENOSPC
        ));
        assert!(!goes_on(ContinueOnError::Write, &ig, Op::Write, libc::EIO));
        assert!(!goes_on(
            ContinueOnError::None,
            &ig,
            Op::Write,
            libc::ENOSPC
        ));
    }

    #[test]
    fn halt_fires_once() {
        let flags = StopFlags::default();
        let mut h = Halt::watch(&flags);
        assert!(!h.fired());
        flags.own.store(true, Ordering::Relaxed);
        assert!(h.fired());
        assert!(!h.fired());
        let next = flags.for_workers(vec![vec![0]]);
        assert!(!next[0].own.load(Ordering::Relaxed));
    }

    #[test]
    fn exit_what_stops_its_reporting_group_or_every_worker() {
        let up = |w: &[StopFlags]| -> Vec<bool> {
            w.iter().map(|f| f.own.load(Ordering::Relaxed)).collect()
        };
        // Workers of groups 0, 0, 1 and one shared by groups 1 and 2.
        let groups = || vec![vec![0], vec![0], vec![1], vec![1, 2]];
        let run = StopFlags::default();
        let w = run.for_workers(groups());
        w[1].stop_reporting_groups();
        assert_eq!(up(&w), [true, true, false, false]);
        let w = run.for_workers(groups());
        w[2].stop_reporting_groups();
        assert_eq!(up(&w), [false, false, true, true]);
        let w = run.for_workers(groups());
        w[0].stop_running();
        assert_eq!(up(&w), [true; 4]);
        assert!(!run.all_stopped(), "stonewall lets later groups start");
    }
}
