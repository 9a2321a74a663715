//! What the engine measured, before it is assembled into the fio-shaped model:
//! one [`JobRun`] per job clone (stream), one [`GroupRun`] per stonewall group.
//!
//! The engine fills these and hands them over; `report::assemble` folds them into
//! a `report::model::RunResult`. They live here, not in
//! `engine`, so `report` never imports `engine` (the engine depends on report's
//! types, not the reverse).

use crate::completion::CompletionStats;
use crate::completion::adaptive::Decision;
use crate::device::BackendStats;
use crate::device::null::FaultCounts;
use crate::job::CompletionModel;
use crate::measure::cpu::ThreadUsage;
use crate::measure::recorder::Recorder;
use crate::report::trace::JobTrace;
use crate::sched::SchedStats;
use crate::workload::verify::VerifyStats;

/// Everything measured for one job clone.
#[derive(Debug)]
pub struct JobRun {
    pub job: usize,
    pub jobnum: u32,
    /// The job's reporting group (`job::reporting_groups`).
    pub groupid: u32,
    /// Which worker of the stonewall group ran the stream: streams of one
    /// worker (null-device jobs sharing a filename) share its completion,
    /// backend and scheduler counters.
    pub worker: usize,
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
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub slots_free: (usize, usize),
    /// Commands the backend still holds at the end, where it counts them.
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub device_in_flight: Option<u32>,
    /// Faults the device injected (null device; shared worker: whole device).
    pub injected: Option<FaultCounts>,
    pub continue_on_error: crate::job::ContinueOnError,
    /// The joined block trace, `iolab.engine.trace` (only with `--trace`).
    pub trace: Option<JobTrace>,
    /// fio's `steadystate` object (only with `steadystate=`).
    pub steady: Option<crate::report::steady::SteadyReport>,
    /// fio's latency-target depth search (only with `latency_target=`).
    pub lat_target: Option<crate::report::lat_target::LatTargetReport>,
    /// The stream's per-I/O logs: records, drops and waits (None: no logs).
    pub job_logs: Option<JobLogs>,
}

/// One stonewall group's results.
#[derive(Debug)]
pub struct GroupRun {
    /// Its streams; each names its reporting group (a stonewall group holds
    /// more than one when a job says `new_group`).
    pub jobs: Vec<JobRun>,
    /// Wall time of the group, ns.
    pub wall_ns: u64,
    /// Where the group's threads ran, when it chose CPUs or ran co-runners.
    pub placement: Option<PlacementReport>,
}

/// Request accounting of one stream: at the end `submitted = ok + errors`
/// unless the run was interrupted with requests in flight.
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
    /// Zones reset by a `zonemode=zbd` job (fio's "N zone resets").
    #[serde(default)]
    pub zone_resets: u64,
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
        self.zone_resets += o.zone_resets;
    }
}

/// One group's placement: study 001's P tasks (the I/O workers) and C tasks (the
/// compute co-runners), where each was allowed to run and what it got.
#[derive(schemars::JsonSchema, Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PlacementReport {
    pub groupid: u32,
    /// The policy (`placement=`); None when jobs fixed their own CPUs or let the
    /// kernel choose.
    pub policy: Option<String>,
    /// The topology the CPUs were chosen on (None when none were chosen).
    pub topology: Option<String>,
    pub tasks: Vec<PlacedTask>,
    /// `placement=balance`: what the live balancer did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub balancer: Option<BalancerReport>,
}

/// The live balancer of `placement=balance` over one group.
#[derive(schemars::JsonSchema, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct BalancerReport {
    pub interval_ms: f64,
    /// Balancing periods run.
    pub ticks: u32,
    /// Tasks moved, in all.
    pub migrations: u32,
    /// The tick from which no task moved again (None: still moving at the end).
    pub settled_at_tick: Option<u32>,
    /// The final placement is the study's best for the predicted task kinds.
    pub reached_best: bool,
    /// Migrations the kernel refused (the run goes on without them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

#[derive(schemars::JsonSchema, Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PlacedTask {
    /// `P` (I/O worker) or `C` (co-runner): the task's role.
    pub kind: crate::placement::TaskKind,
    /// `job.clone` for workers, `job.clone corunner` for co-runners.
    pub name: String,
    /// Allowed CPUs in the kernel's list format, or `any`.
    pub cpus: String,
    /// The CPU the thread was on when it finished.
    pub last_cpu: Option<u32>,
    /// CPU time (user + system) over the thread's wall time, percent.
    pub cpu_pct: f64,
    /// Co-runners only: the kernel and the work it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<crate::placement::corunner::Kernel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units_per_cpu_s: Option<f64>,
    /// `placement=balance`: what the predictor took the task for at the end
    /// (`P` polled in the last intervals, `C` did not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted: Option<crate::placement::TaskKind>,
}

/// What a job's fio logs (`write_lat_log`, `write_bw_log`, ...) came to: the
/// records its workers handed the log writer, and what a writer that fell
/// behind cost — waits by default (every I/O is in the log), dropped records
/// with `log_drop_when_full=1`.
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
pub struct JobLogs {
    /// Records handed to the log writer (one per I/O and log file set
    /// without `log_avg_msec`; rows of windows with it).
    pub records: u64,
    /// Records dropped because the writer was a whole ring behind
    /// (`log_drop_when_full=1` only; otherwise 0).
    pub dropped: u64,
    /// Times the workers waited for the writer to free room.
    pub waits: u64,
    /// Time the workers spent in those waits, ns: the log's cost to the run.
    pub wait_ns: u64,
}

impl JobLogs {
    /// Add another worker's counts.
    pub fn add(&mut self, o: &JobLogs) {
        self.records += o.records;
        self.dropped += o.dropped;
        self.waits += o.waits;
        self.wait_ns += o.wait_ns;
    }
}
