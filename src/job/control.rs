//! fio's job-control and sync options, parsed: when a job starts
//! (`startdelay`), which jobs stop with it (`exitall`, `exit_what`,
//! `exitall_on_error`), which errors it survives (`ignore_error`), per-request
//! priorities (`cmdprio_percentage`, `cmdprio_class`, `cmdprio`) and the syncs
//! beside `fsync=N` (`fdatasync`, `sync_file_range`, `end_fsync`,
//! `fsync_on_close`).
//!
//! The value parsers and cross-option checks are `job::control_opts`; the
//! engine side (sleeping the delay, the stop flag, the per-request choice)
//! is `engine::control`.

use std::time::Duration;

/// Which jobs `exitall` stops when this job finishes (fio's `exit_what`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExitWhat {
    /// The jobs of its reporting group (`job::reporting_groups`): a
    /// `new_group` beside it runs on.
    #[default]
    Group,
    /// Every job running now (every reporting group of the stonewall group);
    /// the next stonewall group still runs.
    Stonewall,
    /// Every job running now, and no later group starts.
    All,
}

impl ExitWhat {
    pub const VALID: &'static str = "group, stonewall or all";

    #[cfg(any(test, feature = "testing"))]
    pub fn name(self) -> &'static str {
        match self {
            ExitWhat::Group => "group",
            ExitWhat::Stonewall => "stonewall",
            ExitWhat::All => "all",
        }
    }
}

/// `ignore_error`: per direction, the errnos a job goes on after. `None` for a
/// direction keeps `continue_on_error`'s own rule (any errno).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IgnoreError {
    pub lists: [Option<Vec<i32>>; 2],
}

/// One entry of a `cmdprio_bssplit` list (parsed in `job::cmdprio`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BsPrio {
    /// The block size in bytes the entry applies to.
    pub bs: u32,
    /// Share (0-100) of that size's requests issued with this priority.
    pub percentage: u32,
    /// `(class, level)` of the advanced form; `None` in the simple form,
    /// which takes `cmdprio_class`/`cmdprio` of the direction.
    pub prio: Option<(u8, u8)>,
}

/// `cmdprio_percentage` / `cmdprio_class` / `cmdprio` / `cmdprio_bssplit`, per
/// direction [read, write].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CmdPrioSpec {
    /// Share of requests (0-100) issued with the priority below; 0 = off.
    pub percentage: [u64; 2],
    /// ioprio class: 1 real-time, 2 best-effort, 3 idle (fio's default: 1).
    pub class: [u64; 2],
    /// Level within the class, 0-7 (fio's default: 0).
    pub level: [u64; 2],
    /// `cmdprio_bssplit` (`job::cmdprio`): the priority by block size; empty
    /// = not used. Excludes `percentage` (fio's rule).
    pub bssplit: [Vec<BsPrio>; 2],
}

impl Default for CmdPrioSpec {
    fn default() -> Self {
        CmdPrioSpec {
            percentage: [0; 2],
            class: [1; 2],
            level: [0; 2],
            bssplit: Default::default(),
        }
    }
}

impl CmdPrioSpec {
    pub fn enabled(&self) -> bool {
        self.percentage.iter().any(|&p| p > 0) || self.bssplit_enabled()
    }

    /// `cmdprio_bssplit` gives some block size a share.
    pub fn bssplit_enabled(&self) -> bool {
        self.bssplit.iter().flatten().any(|e| e.percentage > 0)
    }

    /// The Linux ioprio value (class << 13 | level) of direction `dir`.
    pub fn ioprio(&self, dir: usize) -> u16 {
        ((self.class[dir] as u16) << 13) | self.level[dir] as u16
    }
}

/// Job control: start delay, exit policy, errors to ignore, per-request priority.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ControlSpec {
    /// `startdelay`: [low, high]; a fixed delay has low == high, a range draws
    /// one delay per clone (seeded by `randseed`, so runs repeat).
    pub startdelay: [Duration; 2],
    pub exitall: bool,
    pub exit_what: ExitWhat,
    pub exitall_on_error: bool,
    pub ignore_error: IgnoreError,
    pub cmdprio: CmdPrioSpec,
    /// `flow`, `flow_id`, `flow_sleep` (`engine::flow`).
    pub flow: FlowSpec,
    /// `wait_for=NAME`: start once every clone of that earlier job has ended.
    pub wait_for: Option<String>,
    /// `numa_cpu_nodes`, `numa_mem_policy` (`job::numa`).
    pub numa: super::numa::NumaSpec,
}

/// fio's flow control: jobs sharing a `flow_id` keep their issued I/O counts
/// in the ratio of their `flow` weights.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FlowSpec {
    /// `flow`: the job's weight, 0 (no flow control, fio's default) to 1000.
    pub weight: u32,
    /// `flow_id`: which flow the job belongs to (default 0).
    pub id: u32,
    /// `flow_sleep`: how long a job ahead of its share waits before trying again.
    pub sleep: Duration,
}

/// Syncs besides `fsync=N`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SyncSpec {
    /// `fdatasync=N`: an fdatasync every N writes (0 = never), counted apart
    /// from `fsync=N` as fio counts it.
    pub fdatasync: u32,
    /// `end_fsync`: fsync the file once the job's I/O is done.
    pub end_fsync: bool,
    /// `fsync_on_close`: fsync the file when the job closes it.
    pub fsync_on_close: bool,
    /// `sync_file_range=FLAGS:N`: SYNC_FILE_RANGE_* flags ...
    pub range_flags: u32,
    /// ... and every how many writes (0 = never): over the range of the file
    /// written since its last sync.
    pub range_every: u32,
}
