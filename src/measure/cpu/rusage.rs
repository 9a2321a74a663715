//! Per-thread and per-process CPU use from getrusage(2).

/// Per-thread CPU use and scheduling counters (getrusage(RUSAGE_THREAD)).
#[derive(
    schemars::JsonSchema,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct ThreadUsage {
    pub user_ns: u64,
    pub sys_ns: u64,
    /// Voluntary context switches (the thread slept: I/O wait, timer, futex).
    pub nvcsw: u64,
    /// Involuntary context switches (preempted).
    pub nivcsw: u64,
    pub minflt: u64,
    pub majflt: u64,
}

/// Whose usage [`rusage`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsageOf {
    /// The calling thread (`RUSAGE_THREAD`, Linux 2.6.26 and later).
    Thread,
    /// The whole process, every thread of it (`RUSAGE_SELF`).
    Process,
}

/// getrusage(2): the one call of it in iolab, so every reader converts and
/// fails alike. `None` when it fails, which with these arguments it cannot
/// (only EFAULT and EINVAL are possible).
pub fn rusage(of: UsageOf) -> Option<libc::rusage> {
    let who = match of {
        UsageOf::Thread => libc::RUSAGE_THREAD,
        UsageOf::Process => libc::RUSAGE_SELF,
    };
    // SAFETY: rusage is plain integers and timevals: all zeroes is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a live, writable rusage that getrusage fills and keeps
    // no pointer to.
    let rc = unsafe { libc::getrusage(who, &mut ru) };
    (rc == 0).then_some(ru)
}

/// User plus system CPU time of the whole process (all threads, io-wq
/// workers included: they are threads of the process that submitted), ns.
pub fn process_cpu_ns() -> Option<u64> {
    rusage(UsageOf::Process).map(|ru| ThreadUsage::from_rusage(&ru).cpu_ns())
}

impl ThreadUsage {
    /// The calling thread's usage so far (all zeroes if getrusage failed).
    /// Call at worker start and end.
    pub fn now() -> ThreadUsage {
        ThreadUsage::try_now().unwrap_or_default()
    }

    /// The calling thread's usage so far, `None` if getrusage failed.
    pub fn try_now() -> Option<ThreadUsage> {
        rusage(UsageOf::Thread).map(|ru| ThreadUsage::from_rusage(&ru))
    }

    fn from_rusage(ru: &libc::rusage) -> ThreadUsage {
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
        ThreadUsage {
            user_ns: tv(ru.ru_utime),
            sys_ns: tv(ru.ru_stime),
            nvcsw: ru.ru_nvcsw as u64,
            nivcsw: ru.ru_nivcsw as u64,
            minflt: ru.ru_minflt as u64,
            majflt: ru.ru_majflt as u64,
        }
    }

    /// User plus system CPU time, ns.
    pub fn cpu_ns(&self) -> u64 {
        self.user_ns + self.sys_ns
    }

    pub fn delta(before: &ThreadUsage, after: &ThreadUsage) -> ThreadUsage {
        ThreadUsage {
            user_ns: after.user_ns.saturating_sub(before.user_ns),
            sys_ns: after.sys_ns.saturating_sub(before.sys_ns),
            nvcsw: after.nvcsw.saturating_sub(before.nvcsw),
            nivcsw: after.nivcsw.saturating_sub(before.nivcsw),
            minflt: after.minflt.saturating_sub(before.minflt),
            majflt: after.majflt.saturating_sub(before.majflt),
        }
    }

    /// Sum of workers (numjobs, group_reporting).
    pub fn add(&mut self, o: &ThreadUsage) {
        self.user_ns += o.user_ns;
        self.sys_ns += o.sys_ns;
        self.nvcsw += o.nvcsw;
        self.nivcsw += o.nivcsw;
        self.minflt += o.minflt;
        self.majflt += o.majflt;
    }

    /// fio's `ctx`: all context switches.
    pub fn ctx(&self) -> u64 {
        self.nvcsw + self.nivcsw
    }
}
