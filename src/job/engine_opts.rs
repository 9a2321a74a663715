//! The engine-specific options (fio's `--enghelp=ENGINE` lists), typed, and
//! their checks: which engine each belongs to, and what each needs.
//!
//! The option table's entries set [`EngineOpts`]; [`Draft::check_engine`]
//! runs with the other cross-option checks. The backends read their part at
//! setup (`engine::setup`).

/// fio's `stat_type` (filestat): which call is timed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StatType {
    #[default]
    Stat,
    Lstat,
    Statx,
}

impl StatType {
    pub const VALID: &'static str = "stat, lstat or statx";
}

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

/// Every engine-specific option a job set (defaults are fio's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct EngineOpts {
    /// io_uring `sqthread_poll_cpu`: pin the SQ thread (IORING_SETUP_SQ_AFF).
    pub sqthread_poll_cpu: Option<u32>,
    /// pvsync2 `hipri_percentage`: share of requests (0-100) sent with
    /// RWF_HIPRI when `hipri=1`.
    pub hipri_percentage: u32,
    /// io_uring, libaio, pvsync2 `nowait`: RWF_NOWAIT on reads and writes.
    pub nowait: bool,
    /// io_uring, pvsync2 `uncached`: buffered reads and writes drop their
    /// pages once done (RWF_DONTCACHE).
    pub uncached: bool,
    /// io_uring `nonvectored`: `Some(false)` sends IORING_OP_READV/WRITEV
    /// with one iovec; unset or true, IORING_OP_READ/WRITE (fio's choice
    /// wherever the kernel has them).
    pub nonvectored: Option<bool>,
    /// io_uring `force_async`: every N-th request carries IOSQE_ASYNC (0: none).
    pub force_async: u32,
    /// fio's `atomic`: O_DIRECT, and writes carry RWF_ATOMIC.
    pub atomic: bool,
    /// mmap `thp`: private mapping with MADV_HUGEPAGE.
    pub thp: bool,
    /// filestat `stat_type`.
    pub stat_type: StatType,
    /// cpuio `cpuload`: percent of a CPU to use (1-100; 0 = not set).
    pub cpuload: u32,
    /// cpuio `cpuchunks`: microseconds per burn cycle.
    pub cpuchunks: u32,
    /// cpuio `cpumode`.
    pub cpumode: CpuMode,
    /// cpuio `exit_on_io_done`: end when the group's I/O jobs have ended.
    pub exit_on_io_done: bool,
}

impl Default for EngineOpts {
    fn default() -> Self {
        EngineOpts {
            sqthread_poll_cpu: None,
            hipri_percentage: 100,
            nowait: false,
            uncached: false,
            nonvectored: None,
            force_async: 0,
            atomic: false,
            thp: false,
            stat_type: StatType::Stat,
            cpuload: 0,
            cpuchunks: 50_000,
            cpumode: CpuMode::Noop,
            exit_on_io_done: false,
        }
    }
}
