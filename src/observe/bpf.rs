//! The eBPF collector of `iolab observe`: system calls, per-thread context
//! switches, forks and exits of a process tree counted inside the kernel, with
//! no event stream to user space (bcc's syscount idea, without a compiler: the
//! programs are assembled here, see `bpf/progs.rs`).
//!
//! Tracking is per thread: a thread slot (array indexed by tid when pid_max is
//! small, else a hash map) is both the filter and the thread's counters, so the
//! hot path does one lookup to decide and count. A fork of a tracked task tracks
//! the child before it runs; an exit stops tracking but keeps the counters, so
//! threads that exited still count. User space reads the maps only when it
//! reports (each interval and at the end); interval figures are differences of
//! the cumulative counters, except the per-interval maximum call time, which the
//! programs write into one of two halves chosen by an epoch that user space flips.

pub mod insn;
pub mod progs;
pub mod sys;

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::time::Duration;

pub use sys::BpfError;

use super::period::{Period, SyscallStat, ThreadStat};
use crate::measure::tracefs::{EventFormat, Tracefs};
use progs::{MAX_NR, MapFds, MapValue, SyscallCounters, ThreadSlot, misc, slot, stat};
use sys::Map;

type Result<T, E = BpfError> = std::result::Result<T, E>;

/// pid_max up to this gets an array of thread slots (64 B each: 8 MiB at most),
/// indexed by tid without hashing; beyond it, a hash map of this many threads.
const ARRAY_PID_MAX: u32 = 1 << 17;
const HASH_THREADS: u32 = 1 << 16;
/// After flipping the epoch, programs that read the old value finish within
/// microseconds (they run without sleeping); this leaves a wide margin.
const EPOCH_GRACE: Duration = Duration::from_millis(2);

/// Cumulative counters as last read from the maps.
#[derive(Clone, Debug, Default)]
struct Counters {
    syscalls: Vec<SyscallStat>,
    /// tid -> (syscalls, voluntary, involuntary)
    threads: HashMap<i32, [u64; 3]>,
    misc: [u64; misc::N as usize],
    in_flight: Vec<(i32, usize)>,
    recursion_misses: u64,
}

/// Live eBPF counter of a process tree. Programs are attached by
/// [`BpfCounter::start`] and detached by [`BpfCounter::stop`] or drop; maps and
/// programs are freed when the value is dropped (all are file descriptors).
pub struct BpfCounter {
    /// One call in this many is timed (1: every call).
    time_one_in: u32,
    threads: Map,
    stats: Map,
    maxes: Map,
    epoch_map: Map,
    misc: Map,
    hashed: bool,
    progs: Vec<(&'static str, OwnedFd)>,
    fork_prog: usize,
    links: Vec<OwnedFd>,
    ncpu: usize,
    epoch: u32,
    last: Counters,
    prev: Counters,
    interval_max: Vec<u64>,
    total_max: Vec<u64>,
    comms: HashMap<i32, String>,
}

fn pid_max() -> Result<u32> {
    let s = std::fs::read_to_string("/proc/sys/kernel/pid_max").map_err(BpfError::PidMaxRead)?;
    s.trim()
        .parse()
        .map_err(|err| BpfError::PidMaxParse { text: s, err })
}

/// Size of the u64 values of the per-CPU maps (maxes, misc).
const U64: usize = std::mem::size_of::<u64>();

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().expect("8 bytes"))
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}

/// Time sampling takes one call in a power of two (a mask of the random
/// number in sys_enter): 1 (every call) to 65536.
pub fn check_time_one_in(n: u32) -> Result<()> {
    if n.is_power_of_two() && n <= 1 << 16 {
        Ok(())
    } else {
        Err(BpfError::TimeOneIn(n))
    }
}

impl BpfCounter {
    /// Create the maps and load the programs (nothing is attached yet). Fails,
    /// with the reason, where BPF is unavailable or the verifier refuses.
    #[cfg(any(test, feature = "testing"))]
    pub fn new() -> Result<BpfCounter> {
        BpfCounter::timing_one_in(1)
    }

    /// As [`BpfCounter::new`], timing one call in `n` (a power of two, chosen
    /// at random per call); every call is still counted.
    pub fn timing_one_in(n: u32) -> Result<BpfCounter> {
        check_time_one_in(n)?;
        let ncpu = sys::possible_cpus()?;
        let pm = pid_max()?;
        let hashed = pm > ARRAY_PID_MAX;
        let threads = if hashed {
            Map::create(sys::MAP_HASH, "iolab_threads", 4, slot::SIZE, HASH_THREADS)?
        } else {
            Map::create(sys::MAP_ARRAY, "iolab_threads", 4, slot::SIZE, pm)?
        };
        let stats = Map::create(sys::MAP_PERCPU_ARRAY, "iolab_stats", 4, stat::SIZE, MAX_NR)?;
        let maxes = Map::create(sys::MAP_PERCPU_ARRAY, "iolab_maxes", 4, U64, 2 * MAX_NR)?;
        let epoch_map = Map::create(sys::MAP_ARRAY, "iolab_epoch", 4, 4, 1)?;
        let misc_map = Map::create(sys::MAP_PERCPU_ARRAY, "iolab_misc", 4, U64, misc::N)?;
        let fds = MapFds {
            threads: threads.raw_fd(),
            stats: stats.raw_fd(),
            maxes: maxes.raw_fd(),
            epoch: epoch_map.raw_fd(),
            misc: misc_map.raw_fd(),
        };
        let fork_fmt = fork_format()?;
        let child_off = fork_fmt.field("child_pid")?.offset;
        let raw = sys::PROG_RAW_TRACEPOINT;
        let progs = vec![
            (
                "sys_enter",
                sys::prog_load(
                    raw,
                    "iolab_enter",
                    &progs::sys_enter(&fds, n.trailing_zeros())?,
                )?,
            ),
            (
                "sys_exit",
                sys::prog_load(raw, "iolab_exit", &progs::sys_exit(&fds)?)?,
            ),
            (
                "sched_switch",
                sys::prog_load(raw, "iolab_switch", &progs::sched_switch(&fds)?)?,
            ),
            (
                "sched_process_exit",
                sys::prog_load(raw, "iolab_pexit", &progs::sched_process_exit(&fds)?)?,
            ),
            (
                "sched_process_exec",
                sys::prog_load(raw, "iolab_exec", &progs::sched_process_exec(&fds)?)?,
            ),
            (
                "sched_process_fork",
                sys::prog_load(
                    sys::PROG_TRACEPOINT,
                    "iolab_fork",
                    &progs::sched_process_fork(&fds, child_off as i16)?,
                )?,
            ),
        ];
        Ok(BpfCounter {
            time_one_in: n,
            threads,
            stats,
            maxes,
            epoch_map,
            misc: misc_map,
            hashed,
            fork_prog: 5,
            progs,
            links: Vec::new(),
            ncpu,
            epoch: 0,
            last: Counters {
                syscalls: vec![SyscallStat::default(); MAX_NR as usize],
                ..Counters::default()
            },
            prev: Counters {
                syscalls: vec![SyscallStat::default(); MAX_NR as usize],
                ..Counters::default()
            },
            interval_max: vec![0; MAX_NR as usize],
            total_max: vec![0; MAX_NR as usize],
            comms: HashMap::new(),
        })
    }

    pub fn time_one_in(&self) -> u32 {
        self.time_one_in
    }

    /// "array" or "hash": how thread slots are kept.
    pub fn thread_map_kind(&self) -> &'static str {
        if self.hashed { "hash" } else { "array" }
    }

    /// Track these threads (before or after `start`). A thread already tracked
    /// (by a fork seen in the kernel) keeps its counters.
    pub fn add_pids(&mut self, tids: &[i32]) -> Result<()> {
        let mut v = vec![0u8; slot::SIZE];
        for &tid in tids {
            if tid <= 0 {
                return Err(BpfError::BadTid(tid));
            }
            let key = (tid as u32).to_le_bytes();
            let found = self.threads.lookup(&key, &mut v)?;
            if found && ThreadSlot::from_bytes(&v).on == 1 {
                continue;
            }
            let fresh = ThreadSlot {
                on: 1,
                seen: 1,
                ..ThreadSlot::default()
            };
            self.threads
                .update(&key, fresh.as_bytes(), sys::BPF_ANY)
                .map_err(|err| BpfError::Track {
                    tid,
                    kind: self.thread_map_kind(),
                    entries: self.threads.max_entries,
                    err: Box::new(err),
                })?;
        }
        Ok(())
    }

    /// Attach all programs.
    pub fn start(&mut self) -> Result<()> {
        if !self.links.is_empty() {
            return Ok(());
        }
        // Fork first, so no task created after this is missed; exit and exec
        // before the syscall programs, so a slot never stays "in a call" past
        // its exit, and an exec from another thread is followed from the start.
        // A program on a perf tracepoint belongs to the tracepoint, not to the
        // perf event: one event (on any CPU) runs it for hits on every CPU.
        let fork_id = fork_format()?.id;
        let cpu = sys::online_cpus()?.first().copied().unwrap_or(0);
        let l = sys::perf_tracepoint_attach(fork_id, cpu, &self.progs[self.fork_prog].1)?;
        self.links.push(l);
        for i in [3usize, 4, 2, 0, 1] {
            let (tp, prog) = &self.progs[i];
            let l = sys::raw_tracepoint_open(tp, prog)?;
            self.links.push(l);
        }
        Ok(())
    }

    /// Detach every program; the maps keep their final values for the report.
    pub fn stop(&mut self) {
        self.links.clear();
    }

    /// Read every counter; the next `take_interval`/`total_period` use these.
    pub fn read(&mut self) -> Result<()> {
        let mut c = Counters {
            syscalls: vec![SyscallStat::default(); MAX_NR as usize],
            ..Counters::default()
        };
        let per = stat::SIZE;
        let (keys, vals) = self.stats.lookup_all(per * self.ncpu)?;
        for (i, k) in keys.chunks_exact(4).enumerate() {
            let nr = u32_at(k, 0) as usize;
            let v = &vals[i * per * self.ncpu..(i + 1) * per * self.ncpu];
            let s = &mut c.syscalls[nr.min(MAX_NR as usize - 1)];
            for cpu in v.chunks_exact(per) {
                let n = SyscallCounters::from_bytes(cpu);
                s.calls += n.calls;
                s.errors += n.errors;
                s.timed += n.timed;
                s.total_ns += n.total_ns;
            }
        }
        let (keys, vals) = self.misc.lookup_all(U64 * self.ncpu)?;
        for (i, k) in keys.chunks_exact(4).enumerate() {
            let idx = u32_at(k, 0) as usize;
            let sum: u64 = vals[i * U64 * self.ncpu..(i + 1) * U64 * self.ncpu]
                .chunks_exact(U64)
                .map(|b| u64_at(b, 0))
                .sum();
            if let Some(m) = c.misc.get_mut(idx) {
                *m = sum;
            }
        }
        let (keys, vals) = self.threads.lookup_all(slot::SIZE)?;
        for (k, v) in keys.chunks_exact(4).zip(vals.chunks_exact(slot::SIZE)) {
            let t = ThreadSlot::from_bytes(v);
            if t.seen == 0 {
                continue;
            }
            let tid = u32_at(k, 0) as i32;
            c.threads
                .insert(tid, [t.syscalls, t.voluntary, t.involuntary]);
            let end = t.comm.iter().position(|&b| b == 0).unwrap_or(t.comm.len());
            if end > 0 {
                self.comms
                    .insert(tid, String::from_utf8_lossy(&t.comm[..end]).into_owned());
            } else if !self.comms.contains_key(&tid)
                && let Ok(s) = std::fs::read_to_string(format!("/proc/{tid}/comm"))
            {
                self.comms.insert(tid, s.trim_end().to_string());
            }
            // Timed or not, a call entered and not returned is in flight.
            if t.on == 1 && t.in_call != 0 {
                c.in_flight.push((tid, t.enter_nr as usize));
            }
        }
        c.in_flight.sort_unstable();
        for (_, p) in &self.progs {
            c.recursion_misses += sys::prog_recursion_misses(p)?;
        }
        self.last = c;
        Ok(())
    }

    /// Flip the max epoch, wait for programs that saw the old one, and fold the
    /// old half into the interval and total maxima (then zero it for reuse).
    fn fold_max(&mut self) -> Result<()> {
        let old = self.epoch & 1;
        self.epoch = self.epoch.wrapping_add(1);
        self.epoch_map
            .update(&0u32.to_le_bytes(), &self.epoch.to_le_bytes(), sys::BPF_ANY)?;
        if !self.links.is_empty() {
            std::thread::sleep(EPOCH_GRACE);
        }
        let zero = vec![0u8; U64 * self.ncpu];
        let (keys, vals) = self.maxes.lookup_all(U64 * self.ncpu)?;
        for (i, k) in keys.chunks_exact(4).enumerate() {
            let key = u32_at(k, 0);
            if key / MAX_NR != old {
                continue;
            }
            let nr = (key % MAX_NR) as usize;
            let m = vals[i * U64 * self.ncpu..(i + 1) * U64 * self.ncpu]
                .chunks_exact(U64)
                .map(|b| u64_at(b, 0))
                .max()
                .unwrap_or(0);
            if m > 0 {
                self.interval_max[nr] = self.interval_max[nr].max(m);
                self.total_max[nr] = self.total_max[nr].max(m);
                // Nothing writes this half until the next flip.
                self.maxes.update(k, &zero, sys::BPF_ANY)?;
            }
        }
        Ok(())
    }

    fn period(&self, from: &Counters, to: &Counters, max: &[u64]) -> Period {
        let mut p = Period::new();
        for (nr, s) in p.syscalls.iter_mut().enumerate() {
            let (a, b) = (&from.syscalls[nr], &to.syscalls[nr]);
            *s = SyscallStat {
                calls: b.calls - a.calls,
                errors: b.errors - a.errors,
                timed: b.timed - a.timed,
                total_ns: b.total_ns - a.total_ns,
                max_ns: max[nr],
            };
        }
        for (&tid, b) in &to.threads {
            let a = from.threads.get(&tid).copied().unwrap_or_default();
            let d = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
            // A thread counts in a period if it did something in it.
            if d == [0, 0, 0] && from.threads.contains_key(&tid) {
                continue;
            }
            p.threads.insert(
                tid,
                ThreadStat {
                    tid,
                    comm: self.comms.get(&tid).cloned().unwrap_or_default(),
                    syscalls: d[0],
                    voluntary: d[1],
                    involuntary: d[2],
                },
            );
        }
        p.forks = to.misc[misc::FORKS as usize] - from.misc[misc::FORKS as usize];
        p.exits = to.misc[misc::EXITS as usize] - from.misc[misc::EXITS as usize];
        p
    }

    /// Read the maps and hand out what happened since the previous interval.
    pub fn take_interval(&mut self) -> Result<Period> {
        self.read()?;
        self.fold_max()?;
        let p = self.period(&self.prev, &self.last, &self.interval_max);
        self.interval_max.fill(0);
        self.prev = self.last.clone();
        Ok(p)
    }

    /// Everything since the start, as of the latest read (reads again first).
    pub fn total_period(&mut self) -> Result<Period> {
        self.read()?;
        self.fold_max()?;
        let zero = Counters {
            syscalls: vec![SyscallStat::default(); MAX_NR as usize],
            ..Counters::default()
        };
        Ok(self.period(&zero, &self.last, &self.total_max))
    }

    /// Calls entered and not returned as of the latest read.
    pub fn in_flight(&self) -> Vec<(i32, usize)> {
        self.last.in_flight.clone()
    }

    /// Events the programs handled for observed tasks, as of the latest read:
    /// entries, returns, switch-outs, forks, exits. With time sampling only
    /// the timed calls' returns are counted here.
    pub fn events(&self) -> u64 {
        let c = &self.last;
        let calls: u64 = c.syscalls.iter().map(|s| s.calls + s.timed).sum();
        let sw: u64 = c.threads.values().map(|t| t[1] + t[2]).sum();
        calls
            + sw
            + c.misc[misc::UNPAIRED as usize]
            + c.misc[misc::FORKS as usize]
            + c.misc[misc::EXITS as usize]
    }

    /// Events not counted as of the latest read: threads that could not be
    /// tracked (full thread map) and program runs the kernel skipped.
    pub fn lost(&self) -> u64 {
        self.last.misc[misc::LOST as usize] + self.last.recursion_misses
    }

    /// Fail if anything was lost: exact counts are the promise.
    pub fn require_no_loss(&self) -> Result<()> {
        let c = &self.last;
        let full = c.misc[misc::LOST as usize];
        if full > 0 {
            return Err(BpfError::ThreadMapFull {
                full,
                entries: self.threads.max_entries,
            });
        }
        if c.recursion_misses > 0 {
            return Err(BpfError::RecursionMisses(c.recursion_misses));
        }
        Ok(())
    }
}

fn fork_format() -> Result<EventFormat> {
    let tfs = Tracefs::open()?;
    let p = tfs.root().join("events/sched/sched_process_fork/format");
    let text = match std::fs::read_to_string(&p) {
        Ok(t) => t,
        Err(err) => return Err(BpfError::ReadFormat { path: p, err }),
    };
    Ok(EventFormat::parse("sched", &text)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::names::syscall_nr;

    fn root() -> bool {
        // SAFETY: geteuid has no preconditions.
        let r = unsafe { libc::geteuid() } == 0;
        if !r {
            eprintln!("skipped: BPF programs need root");
        }
        r
    }

    /// Tests here count this process's BPF descriptors: one at a time.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// This process's descriptors that are BPF maps, programs or links, or perf events.
    fn bpf_fds() -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read_link(e.path()).is_ok_and(|l| {
                    let l = l.to_string_lossy();
                    l.contains("bpf") || l.contains("perf_event")
                })
            })
            .count()
    }

    fn getppid_n(n: usize) {
        for _ in 0..n {
            // SAFETY: getppid has no preconditions.
            unsafe { libc::syscall(libc::SYS_getppid) };
        }
    }

    #[test]
    fn detaches_on_stop_and_frees_everything_on_drop_and_error() {
        if !root() {
            return;
        }
        let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let before = bpf_fds();
        let mut c = BpfCounter::new().unwrap();
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        c.add_pids(&[tid]).unwrap();
        c.start().unwrap();
        // 5 maps, 6 programs, 5 raw tracepoint links, 1 perf event.
        assert_eq!(bpf_fds(), before + 17);
        getppid_n(100);
        c.stop();
        assert_eq!(bpf_fds(), before + 11, "links closed by stop");
        let g = syscall_nr("getppid").unwrap();
        let counted = c.take_interval().unwrap().syscalls[g].calls;
        assert_eq!(counted, 100);
        getppid_n(100);
        assert_eq!(
            c.take_interval().unwrap().syscalls[g].calls,
            0,
            "nothing counted after stop"
        );
        drop(c);
        assert_eq!(bpf_fds(), before, "maps and programs closed on drop");
        // The error path: a failing call, then the value goes out of scope.
        let r = (|| -> Result<()> {
            let mut c = BpfCounter::new()?;
            c.start()?;
            c.add_pids(&[-5])
        })();
        assert!(r.unwrap_err().to_string().contains("-5"));
        assert_eq!(bpf_fds(), before, "nothing left after an error");
    }

    #[test]
    fn counts_this_threads_calls_exactly() {
        if !root() {
            return;
        }
        let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let mut c = BpfCounter::new().unwrap();
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        c.add_pids(&[tid]).unwrap();
        c.start().unwrap();
        for _ in 0..1000 {
            // SAFETY: getppid has no preconditions.
            unsafe { libc::syscall(libc::SYS_getppid) };
        }
        let first = c.take_interval().unwrap();
        for _ in 0..234 {
            // SAFETY: as above; an invalid fd makes each close fail with EBADF.
            unsafe { libc::close(-1) };
        }
        c.stop();
        let second = c.take_interval().unwrap();
        let total = c.total_period().unwrap();
        let g = syscall_nr("getppid").unwrap();
        let cl = syscall_nr("close").unwrap();
        assert_eq!(first.syscalls[g].calls, 1000);
        assert_eq!(first.syscalls[g].timed, 1000);
        assert!(first.syscalls[g].max_ns > 0);
        assert_eq!(second.syscalls[g].calls, 0);
        // Reading the maps closes files of its own on this (tracked) thread;
        // only the failed closes are ours alone.
        assert!(second.syscalls[cl].calls >= 234);
        assert_eq!(second.syscalls[cl].errors, 234);
        assert_eq!(total.syscalls[g].calls, 1000);
        assert_eq!(total.syscalls[cl].errors, 234);
        assert!(total.syscalls[g].total_ns >= total.syscalls[g].max_ns);
        let me = &total.threads[&tid];
        assert!(me.syscalls >= 1234, "{me:?}");
        assert_eq!(total.threads.len(), 1, "only this thread is tracked");
        c.require_no_loss().unwrap();
    }

    #[test]
    fn sampled_timing_still_counts_every_call_and_error() {
        if !root() {
            return;
        }
        let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let mut c = BpfCounter::timing_one_in(8).unwrap();
        // SAFETY: gettid has no preconditions.
        c.add_pids(&[unsafe { libc::gettid() }]).unwrap();
        c.start().unwrap();
        for _ in 0..4000 {
            // SAFETY: an invalid fd makes each close fail with EBADF.
            unsafe { libc::close(-1) };
        }
        c.stop();
        let t = c.total_period().unwrap();
        let cl = &t.syscalls[syscall_nr("close").unwrap()];
        // Reading the maps closes files of its own on this thread.
        assert!(cl.calls >= 4000, "{cl:?}");
        assert_eq!(cl.errors, 4000, "errors of untimed calls count too");
        // Binomial(~4000, 1/8): mean 500, sd 21.
        assert!((350..650).contains(&cl.timed), "{cl:?}");
        assert!(BpfCounter::timing_one_in(3).is_err());
        c.require_no_loss().unwrap();
    }
}
