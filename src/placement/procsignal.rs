//! Polling signal for tasks iolab does not run itself (`--pid`), from /proc.
//!
//! The study counted calls of the kernel's `blk_mq_poll()`; without kprobes we infer
//! polling from what a poller cannot hide. Per interval and per thread:
//! - it ran (schedstat run time ≥ [`MIN_ON_CPU`] of the interval): a poller keeps
//!   its CPU busy;
//! - it hardly slept voluntarily (≤ [`MAX_VOLUNTARY_PER_S`] voluntary context
//!   switches per second): an interrupt-driven I/O thread sleeps once per I/O, a
//!   poller spins instead;
//! - and it did I/O work in the kernel: read/write-family system calls (syscr +
//!   syscw from /proc/TID/io, e.g. preadv2 with RWF_HIPRI), or at least
//!   [`MIN_SYS_SHARE`] of its CPU time in the kernel (io_uring IOPOLL reaps inside
//!   io_uring_enter, which syscr does not count). A compute task passes the first
//!   two tests but fails this one.
//!
//! What it misses (documented in docs/placement.md): pollers that spin on a
//! user-mapped completion queue without system calls (SPDK, a CQ-ring spinner, an
//! SQPOLL submitter) look like compute tasks; a compute task that does steady
//! buffered reads looks like a poller. utime/stime have clock-tick (10 ms)
//! resolution, so intervals shorter than ~100 ms make the kernel-share test noisy.

use std::path::PathBuf;

use crate::measure::clock::now_ns;

/// Least share of the interval a thread must have run to count as polling.
pub const MIN_ON_CPU: f64 = 0.10;
/// Most voluntary context switches per second a poller may show.
pub const MAX_VOLUNTARY_PER_S: f64 = 100.0;
/// Least share of CPU time in the kernel that counts as kernel-side polling when no
/// read/write-family system calls were seen.
pub const MIN_SYS_SHARE: f64 = 0.30;

/// Counters of one thread at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcSample {
    pub at_ns: u64,
    /// schedstat: time spent running, ns.
    pub run_ns: u64,
    /// stat: user and system time, clock ticks.
    pub utime: u64,
    pub stime: u64,
    pub voluntary: u64,
    pub involuntary: u64,
    /// io: syscr + syscw, when readable.
    pub io_calls: Option<u64>,
}

/// The evidence behind one interval's verdict.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ProcVerdict {
    pub polled: bool,
    pub on_cpu: f64,
    pub voluntary_per_s: f64,
    pub io_calls: Option<u64>,
    /// Share of CPU time in the kernel, when any ticks were charged.
    pub sys_share: Option<f64>,
}

/// Samples one thread of one process.
#[derive(Debug)]
pub struct ProcSampler {
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub pid: u32,
    pub tid: u32,
    dir: PathBuf,
    last: ProcSample,
}

/// Why a process or thread could not be sampled from /proc.
// The io::Error is in the message and deliberately not a `source`: error chains
// printed with `{:#}` would say it twice.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    #[error("--pid {pid}: {dir}: {err}")]
    Threads {
        pid: u32,
        dir: String,
        err: std::io::Error,
    },
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("{path}: {err}")]
    Read { path: String, err: std::io::Error },
    #[error("{dir}/schedstat: unexpected `{text}`")]
    Schedstat { dir: String, text: String },
    #[error(
        "{dir}/stat: cannot find utime/stime; iolab reads Linux's /proc/TID/stat layout, so \
         run it where /proc is the kernel's procfs"
    )]
    StatTimes { dir: String },
    #[error("{dir}/status: no `{key}`")]
    StatusField { dir: String, key: String },
}

/// Thread ids of a process, ascending.
pub fn threads_of(pid: u32) -> Result<Vec<u32>, ProcError> {
    let dir = format!("/proc/{pid}/task");
    let mut v = Vec::new();
    for e in std::fs::read_dir(&dir).map_err(|err| ProcError::Threads {
        pid,
        dir: dir.clone(),
        err,
    })? {
        let e = e?;
        if let Some(t) = e.file_name().to_str().and_then(|s| s.parse().ok()) {
            v.push(t);
        }
    }
    v.sort_unstable();
    Ok(v)
}

fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .map(|r| r.trim_start_matches(':').trim())
}

/// Parse /proc/TID/stat's utime and stime (fields 14 and 15; the command name in
/// parentheses may itself contain spaces and parentheses, so count from the last `)`).
pub fn parse_stat_times(stat: &str) -> Option<(u64, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): utime is field 14 -> index 11.
    Some((f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?))
}

impl ProcSampler {
    pub fn new(pid: u32, tid: u32) -> Result<Self, ProcError> {
        let dir = PathBuf::from(format!("/proc/{pid}/task/{tid}"));
        let mut s = ProcSampler {
            pid,
            tid,
            dir,
            last: ProcSample::default(),
        };
        s.last = s.read()?;
        Ok(s)
    }

    fn read_file(&self, name: &str) -> Result<String, ProcError> {
        let p = self.dir.join(name);
        std::fs::read_to_string(&p).map_err(|err| ProcError::Read {
            path: p.display().to_string(),
            err,
        })
    }

    pub fn read(&self) -> Result<ProcSample, ProcError> {
        let dir = || self.dir.display().to_string();
        let at_ns = now_ns();
        let sched = self.read_file("schedstat")?;
        let run_ns = sched
            .split_whitespace()
            .next()
            .and_then(|x| x.parse().ok())
            .ok_or_else(|| ProcError::Schedstat {
                dir: dir(),
                text: sched.clone(),
            })?;
        let stat = self.read_file("stat")?;
        let (utime, stime) =
            parse_stat_times(&stat).ok_or_else(|| ProcError::StatTimes { dir: dir() })?;
        let status = self.read_file("status")?;
        let num = |k: &str| -> Result<u64, ProcError> {
            field(&status, k)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| ProcError::StatusField {
                    dir: dir(),
                    key: k.to_string(),
                })
        };
        let voluntary = num("voluntary_ctxt_switches")?;
        let involuntary = num("nonvoluntary_ctxt_switches")?;
        // /proc/TID/io needs ptrace access to the target; without it the kernel-share
        // test alone decides.
        let io_calls = self.read_file("io").ok().and_then(|io| {
            Some(
                field(&io, "syscr")?.parse::<u64>().ok()?
                    + field(&io, "syscw")?.parse::<u64>().ok()?,
            )
        });
        Ok(ProcSample {
            at_ns,
            run_ns,
            utime,
            stime,
            voluntary,
            involuntary,
            io_calls,
        })
    }

    /// Read the counters again and judge the interval since the previous call.
    pub fn sample(&mut self) -> Result<ProcVerdict, ProcError> {
        let now = self.read()?;
        let v = judge(&self.last, &now);
        self.last = now;
        Ok(v)
    }
}

/// The verdict for the interval between two samples (pure, for tests).
pub fn judge(a: &ProcSample, b: &ProcSample) -> ProcVerdict {
    let dt = b.at_ns.saturating_sub(a.at_ns).max(1) as f64;
    let on_cpu = b.run_ns.saturating_sub(a.run_ns) as f64 / dt;
    let voluntary_per_s = b.voluntary.saturating_sub(a.voluntary) as f64 * 1e9 / dt;
    let io_calls = match (a.io_calls, b.io_calls) {
        (Some(x), Some(y)) => Some(y.saturating_sub(x)),
        _ => None,
    };
    let (du, ds) = (
        b.utime.saturating_sub(a.utime),
        b.stime.saturating_sub(a.stime),
    );
    let sys_share = (du + ds > 0).then(|| ds as f64 / (du + ds) as f64);
    let kernel_io =
        io_calls.is_some_and(|n| n > 0) || sys_share.is_some_and(|s| s >= MIN_SYS_SHARE);
    ProcVerdict {
        polled: on_cpu >= MIN_ON_CPU && voluntary_per_s <= MAX_VOLUNTARY_PER_S && kernel_io,
        on_cpu,
        voluntary_per_s,
        io_calls,
        sys_share,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(at_ms: u64, run_ms: u64, u: u64, st: u64, vol: u64, io: u64) -> ProcSample {
        ProcSample {
            at_ns: at_ms * 1_000_000,
            run_ns: run_ms * 1_000_000,
            utime: u,
            stime: st,
            voluntary: vol,
            involuntary: 0,
            io_calls: Some(io),
        }
    }

    #[test]
    fn poller_compute_and_sleeper_are_told_apart() {
        let a = s(0, 0, 0, 0, 0, 0);
        // Spins 100% with preadv2 calls and no sleeps: P.
        assert!(judge(&a, &s(100, 100, 4, 6, 0, 50_000)).polled);
        // Spins 100% without I/O: C.
        assert!(!judge(&a, &s(100, 100, 10, 0, 0, 0)).polled);
        // Sleeps per I/O: interrupt-driven, not P.
        assert!(!judge(&a, &s(100, 30, 1, 2, 5_000, 5_000)).polled);
        // Kernel-side polling without read syscalls (IOPOLL via io_uring_enter).
        assert!(judge(&a, &s(100, 90, 3, 6, 1, 0)).polled);
        // Idle.
        assert!(!judge(&a, &s(100, 0, 0, 0, 0, 0)).polled);
    }

    #[test]
    fn stat_with_odd_command_name() {
        let line = "123 (a) b (c)) R 1 1 1 0 -1 4194304 10 0 0 0 77 88 0 0 20 0 1 0 1 0 0";
        assert_eq!(parse_stat_times(line), Some((77, 88)));
    }

    #[test]
    fn samples_this_thread() {
        let pid = std::process::id();
        // SAFETY: gettid takes nothing and cannot fail.
        let tid = unsafe { libc::gettid() } as u32;
        assert!(threads_of(pid).unwrap().contains(&tid));
        // This thread's own CPU clock: on a loaded machine the thread may get a
        // small share of wall time, so it spins for 20 ms of CPU, not of wall
        // time, and the share it must show is what it actually got.
        let thread_cpu_ns = || {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: a valid clock id and a timespec to fill.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
        };
        let wall0 = now_ns();
        let mut sm = ProcSampler::new(pid, tid).unwrap();
        let cpu0 = thread_cpu_ns();
        let mut x = 0u64;
        while thread_cpu_ns() - cpu0 < 20_000_000 {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let v = sm.sample().unwrap();
        let wall = (now_ns() - wall0) as f64;
        // schedstat's run time covers at least the 20 ms spun, over an interval
        // no longer than `wall`: half of that share leaves room for tick skew.
        let least = 0.5 * 20_000_000.0 / wall;
        assert!(
            v.on_cpu >= least,
            "a spinning thread ran 20 ms of CPU in {:.1} ms: {v:?}",
            wall / 1e6
        );
    }
}
