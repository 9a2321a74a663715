//! What the engine measured, before it is assembled into the fio-shaped model:
//! one [`JobRun`] per job clone (stream), one [`GroupRun`] per stonewall group.
//!
//! The engine fills these and hands them over; `report::assemble` folds them into
//! a [`RunResult`](crate::report::model::RunResult). They live here, not in
//! `engine`, so `report` never imports `engine` (the engine depends on report's
//! types, not the reverse).

use crate::completion::CompletionStats;
use crate::completion::adaptive::Decision;
use crate::device::BackendStats;
use crate::device::null::FaultCounts;
use crate::job::CompletionModel;
use crate::measure::cpu::ThreadUsage;
use crate::measure::recorder::Recorder;
use crate::report::model::PlacementReport;
use crate::report::trace::JobTrace;
use crate::sched::SchedStats;
use crate::workload::verify::VerifyStats;

/// Everything measured for one job clone.
#[derive(Debug)]
pub struct JobRun {
    pub job: usize,
    pub jobnum: u32,
    pub groupid: u32,
    pub rec: Recorder,
    /// Measured runtime (after ramp) in ns.
    pub runtime_ns: u64,
    /// CPU of the worker thread; shared by all streams of a shared worker.
    pub cpu: ThreadUsage,
    /// How many streams shared the worker (CPU is the worker's, not per stream).
    pub worker_streams: usize,
    pub model: CompletionModel,
    pub backend: &'static str,
    pub completion: CompletionStats,
    pub backend_stats: BackendStats,
    pub sched: SchedStats,
    pub adaptive: Vec<Decision>,
    pub error: Option<String>,
    pub interrupted: bool,
    /// Requests submitted, completed ok or with an error, timed out, spurious.
    pub acct: Accounting,
    /// Data verification of this stream (None when the job does not verify).
    pub verify: Option<VerifyStats>,
    /// The worker's request slots free at the end, and in all (shared worker).
    pub slots_free: (usize, usize),
    /// Commands the backend still holds at the end, where it counts them.
    pub device_in_flight: Option<u32>,
    /// Faults the device injected (null device; shared worker: whole device).
    pub injected: Option<FaultCounts>,
    pub continue_on_error: crate::job::ContinueOnError,
    /// The joined block trace, `iolab.engine.trace` (only with `--trace`).
    pub trace: Option<JobTrace>,
}

/// One stonewall group's results.
#[derive(Debug)]
pub struct GroupRun {
    pub groupid: u32,
    pub jobs: Vec<JobRun>,
    /// Wall time of the group, ns.
    pub wall_ns: u64,
    /// Where the group's threads ran, when it chose CPUs or ran co-runners.
    pub placement: Option<PlacementReport>,
}

/// Request accounting of one stream: at the end `submitted = ok + errors`
/// unless the run was interrupted with requests in flight.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Accounting {
    /// Requests handed to the backend.
    pub submitted: u64,
    pub ok: u64,
    pub errors: u64,
    /// Errors that were io_timeout aborts (also counted in `errors`).
    pub timeouts: u64,
    /// Completions for a slot that was not in flight (a backend bug); ignored.
    pub spurious: u64,
    /// Reads whose data failed verification (they completed: counted in `ok`).
    pub verify_failures: u64,
}

impl Accounting {
    /// Add another stream's counts (numjobs folded by group_reporting).
    pub fn add(&mut self, o: &Accounting) {
        self.submitted += o.submitted;
        self.ok += o.ok;
        self.errors += o.errors;
        self.timeouts += o.timeouts;
        self.spurious += o.spurious;
        self.verify_failures += o.verify_failures;
    }
}
