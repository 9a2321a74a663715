//! What a collector hands out for one period (an interval, or the whole run):
//! per-syscall totals and per-thread counters, the same shape for both backends.

use std::collections::HashMap;

use serde::Serialize;

/// Syscall numbers at or above this share the last slot (printed `syscall_<nr>`).
pub const MAX_NR: usize = 1024;

/// One system call's totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SyscallStat {
    /// Entries seen (a call counts when it starts).
    pub calls: u64,
    /// Returns with -errno.
    pub errors: u64,
    /// Calls whose enter and exit were both seen; `total_ns` covers these.
    pub timed: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

/// Context switches of one thread, from sched_switch.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ThreadStat {
    pub tid: i32,
    pub comm: String,
    pub syscalls: u64,
    /// Switched out while sleeping (blocked in a call, waiting).
    pub voluntary: u64,
    /// Switched out while still runnable (preempted, yielded).
    pub involuntary: u64,
}

/// Accounting for one period (an interval, or the whole run).
#[derive(Clone, Debug, Default)]
pub struct Period {
    pub syscalls: Vec<SyscallStat>,
    pub threads: HashMap<i32, ThreadStat>,
    pub forks: u64,
    pub exits: u64,
}

impl Period {
    pub(crate) fn new() -> Period {
        Period {
            syscalls: vec![SyscallStat::default(); MAX_NR],
            ..Period::default()
        }
    }

    pub(crate) fn thread(&mut self, tid: i32) -> &mut ThreadStat {
        self.threads.entry(tid).or_insert_with(|| ThreadStat {
            tid,
            ..ThreadStat::default()
        })
    }

    /// Non-zero syscalls, most called first.
    pub fn syscall_rows(&self) -> Vec<(usize, SyscallStat)> {
        let mut v: Vec<(usize, SyscallStat)> = self
            .syscalls
            .iter()
            .enumerate()
            .filter(|(_, s)| s.calls > 0 || s.timed > 0)
            .map(|(i, s)| (i, *s))
            .collect();
        v.sort_by(|a, b| b.1.calls.cmp(&a.1.calls).then(a.0.cmp(&b.0)));
        v
    }

    pub fn thread_rows(&self) -> Vec<ThreadStat> {
        let mut v: Vec<ThreadStat> = self.threads.values().cloned().collect();
        v.sort_by_key(|t| t.tid);
        v
    }

    pub fn voluntary(&self) -> u64 {
        self.threads.values().map(|t| t.voluntary).sum()
    }

    pub fn involuntary(&self) -> u64 {
        self.threads.values().map(|t| t.involuntary).sum()
    }
}
