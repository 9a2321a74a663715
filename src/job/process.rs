//! fio's options about a job's thread rather than its I/O, as one type:
//! `nice`, `uid`, `gid`, `cgroup*`, `exec_prerun`/`exec_postrun`,
//! `ioscheduler`, `mem`/`iomem` and `lockmem` (parsers: `job::process_opts`;
//! applied by `engine::process`).

use crate::buf::Mem;

/// The process options of one job.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ProcessSpec {
    /// `nice`: added to the worker thread's nice value (-20 to 19).
    pub nice: i32,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// `cgroup=NAME`: the control group the worker thread runs in.
    pub cgroup: Option<String>,
    /// `cgroup_weight`: the group's block I/O weight (100-1000; 0 = not set).
    pub cgroup_weight: u32,
    pub cgroup_nodelete: bool,
    pub exec_prerun: Option<String>,
    pub exec_postrun: Option<String>,
    /// `ioscheduler`: the elevator the target's device runs during the job.
    pub ioscheduler: Option<String>,
    /// `lockmem`: bytes mlock()ed for the job's duration (0 = none).
    pub lockmem: u64,
    /// fio's `hugepage-size`: the unit huge page memory (`mem=mmaphuge`,
    /// `shmhuge`) is rounded to; 0 = the system's (`/proc/meminfo`).
    pub hugepage_size: u64,
    /// `mem`/`iomem`: where the I/O buffers come from.
    pub mem: Mem,
}
