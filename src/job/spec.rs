//! A job after parsing: every option typed, defaults applied, validated.
//!
//! The parser (`job::parse`) fills this from fio job files and command-line
//! options; the engine only ever reads it.

use std::time::Duration;

use crate::request::Class;

// The refused engines' texts live beside the option table; `Engine::parse`
// gives them.
#[cfg(any(test, feature = "testing"))]
pub use crate::device::engine::ENGINE_NAMES;
pub use crate::job::refusals::{EngineNameError, REFUSED_ENGINES};
// The backends and their options are the backends' (`device::engine`,
// `device::options`, each backend's options beside it); a job holds the
// options as one value, `JobSpec::backend`.
pub use crate::device::engine::Engine;
#[cfg(any(test, feature = "testing"))]
pub use crate::device::null::options::NullFaults;
pub use crate::device::null::options::{IrqMode, LatDist, NullOrder, NullParams};
pub use crate::device::options::{BackendOptions, CallFlags};
// The verification types live in `verify_spec`, beside this file.
pub use crate::job::verify_spec::{Digest, VerifyKind, VerifySpec};

/// Sequential or random offsets; fio's `rw=` names both pattern and direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    Seq,
    Rand,
}

/// Which directions a job issues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Read,
    Write,
    /// Both, mixed by `rwmixread`.
    Mixed,
    /// Trims only (`rw=trim`, `randtrim`).
    Trim,
    /// Each range trimmed, then written (`rw=trimwrite`, `randtrimwrite`).
    TrimWrite,
}

impl Direction {
    /// Which of `[read, write, trim]` the job issues.
    pub const fn issues(self) -> [bool; 3] {
        match self {
            Direction::Read => [true, false, false],
            Direction::Write => [false, true, false],
            Direction::Mixed => [true, true, false],
            Direction::Trim => [false, false, true],
            Direction::TrimWrite => [false, true, true],
        }
    }

    /// Does the job change the target's contents (writes or trims)? Such a job
    /// passes the same safety check before it opens a block device.
    pub const fn modifies(self) -> bool {
        !matches!(self, Direction::Read)
    }
}

/// fio's `rw=` value, split in its two meanings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RwMode {
    pub pattern: Pattern,
    pub dir: Direction,
}

/// fio's `rw=MODE:N` offset modifier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum RwSuffix {
    #[default]
    None,
    /// Sequential: each next offset is the end of the last I/O plus this many
    /// bytes (a hole; negative moves backwards).
    Add(i64),
    /// Random: a new random offset every N I/Os, sequential in between.
    Every(u32),
}

impl RwMode {
    /// fio's spelling, for output.
    pub fn fio_name(&self) -> &'static str {
        match (self.pattern, self.dir) {
            (Pattern::Seq, Direction::Read) => "read",
            (Pattern::Seq, Direction::Write) => "write",
            (Pattern::Seq, Direction::Mixed) => "rw",
            (Pattern::Rand, Direction::Read) => "randread",
            (Pattern::Rand, Direction::Write) => "randwrite",
            (Pattern::Rand, Direction::Mixed) => "randrw",
            (Pattern::Seq, Direction::Trim) => "trim",
            (Pattern::Rand, Direction::Trim) => "randtrim",
            (Pattern::Seq, Direction::TrimWrite) => "trimwrite",
            (Pattern::Rand, Direction::TrimWrite) => "randtrimwrite",
        }
    }
}

/// How random offsets are spread over the region (fio's `random_distribution`).
/// `center` is fio's optional second number: where in the region (0 to 1) the
/// hottest block lies.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RandomDist {
    /// Uniform (fio's `random`, the default).
    #[default]
    Random,
    /// Block of rank k drawn with probability proportional to k^-theta.
    Zipf { theta: f64, center: Option<f64> },
    /// A share `h` of the blocks takes `1 - h` of the accesses.
    Pareto { h: f64, center: Option<f64> },
    /// Gaussian around `center` (default 0.5); `dev` is fio's deviation in
    /// percent of the region (0 to <100).
    Normal { dev: f64, center: Option<f64> },
    /// Per direction [read, write]: (access %, region %) zones from the start.
    Zoned([Vec<(u32, u32)>; 2]),
    /// Per direction: (access %, bytes) zones from the start of the region.
    ZonedAbs([Vec<(u32, u64)>; 2]),
}

/// Block sizes for one direction: `bs`, `bsrange` or `bssplit`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub enum BlockSizes {
    Fixed(u32),
    /// Uniform over [min, max] in multiples of `min` (fio's bsrange with blockalign=min).
    Range {
        min: u32,
        max: u32,
    },
    /// (size, percent) pairs; percents sum to 100.
    Split(Vec<(u32, u32)>),
}

impl BlockSizes {
    pub fn min(&self) -> u32 {
        match self {
            BlockSizes::Fixed(b) => *b,
            BlockSizes::Range { min, .. } => *min,
            BlockSizes::Split(v) => v.iter().map(|p| p.0).min().unwrap_or(0),
        }
    }
    pub fn max(&self) -> u32 {
        match self {
            BlockSizes::Fixed(b) => *b,
            BlockSizes::Range { max, .. } => *max,
            BlockSizes::Split(v) => v.iter().map(|p| p.0).max().unwrap_or(0),
        }
    }
}

/// fio's queue-filling options as a job sets them (`None`: not set). The
/// engine resolves them against `iodepth` (`engine::fill::Fill`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DepthBatch {
    /// `iodepth_batch_submit` (`iodepth_batch`): most requests per submit call;
    /// 0 means `iodepth`.
    pub submit: Option<u32>,
    /// `iodepth_batch_complete_min` (`iodepth_batch_complete`): completions to
    /// wait for; 0 means never sleep for them (peek, as fio's polling example).
    pub complete_min: Option<u32>,
    /// `iodepth_batch_complete_max`: most completions taken per wait.
    pub complete_max: Option<u32>,
    /// `iodepth_low`: once the queue is full, let it drain to this before
    /// refilling; 0 means `iodepth`.
    pub low: Option<u32>,
}

// `Engine` is the backends' list (device::engine); reading its name from a
// job, with the refused engines' reasons, is the option language's.
impl Engine {
    /// Parse an `ioengine=` value. The error says why a known fio engine is not
    /// run here, or lists the engines that are.
    pub fn parse(name: &str) -> Result<Engine, EngineNameError> {
        if let Some(e) = Engine::from_fio_name(name) {
            return Ok(e);
        }
        // fio also takes a path to an engine plugin, or `external:path`.
        let key = if name.starts_with("external:") || name.contains('/') {
            "external"
        } else {
            name
        };
        Err(match REFUSED_ENGINES.iter().find(|(n, _)| *n == key) {
            Some(&(name, why)) => EngineNameError::Refused { name, why },
            None => EngineNameError::Unknown,
        })
    }
}

/// How a worker learns that its I/O finished (docs/completion.md).
#[derive(
    schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum CompletionModel {
    /// Each I/O is done inside its submitting system call (psync and friends).
    Sync,
    /// Sleep until the backend signals a completion (an interrupt).
    Interrupt,
    /// Spin checking for completions without sleeping.
    Poll,
    /// Sleep for an estimate of the service time, then poll (classic hybrid polling).
    Hybrid,
    /// io_uring's hybrid IOPOLL rule (Linux 6.13), in user space.
    #[serde(rename = "hybrid-uring")]
    HybridUring,
    /// PAS (FAST '26): sleep lengthened or shortened by the last two outcomes.
    Pas,
    /// DPAS (FAST '26): PAS with adaptive steps, switching among poll, PAS,
    /// overloaded and interrupt modes by measured load.
    Dpas,
    /// Choose per request size between polling, hybrid sleeping and interrupts by measured cost.
    Adaptive,
}

impl CompletionModel {
    /// Models that sleep on a timer before polling (they need a 1 ns timer slack).
    pub fn naps(self) -> bool {
        matches!(
            self,
            CompletionModel::Hybrid
                | CompletionModel::HybridUring
                | CompletionModel::Pas
                | CompletionModel::Dpas
                | CompletionModel::Adaptive
        )
    }

    /// The model's name, as `completion=` takes it and the reports print it.
    pub fn name(self) -> &'static str {
        match self {
            CompletionModel::Sync => "sync",
            CompletionModel::Interrupt => "interrupt",
            CompletionModel::Poll => "poll",
            CompletionModel::Hybrid => "hybrid",
            CompletionModel::HybridUring => "hybrid-uring",
            CompletionModel::Pas => "pas",
            CompletionModel::Dpas => "dpas",
            CompletionModel::Adaptive => "adaptive",
        }
    }
}

/// Host-side scheduler (docs/scheduler.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SchedKind {
    /// First come, first served.
    Noop,
    /// Strict priority by request class.
    Prio,
    /// Latency-aware queueing: low classes throttled while urgent ones are outstanding (study 003).
    Laq,
}

/// LAT throttling parameters of the `laq` scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LaqParams {
    pub ois_max: u64,
    pub ois_min: u64,
    pub t_wait: Duration,
}

impl Default for LaqParams {
    fn default() -> Self {
        LaqParams {
            ois_max: 1 << 20,
            ois_min: 1 << 19,
            t_wait: Duration::from_millis(1),
        }
    }
}

/// fio's `continue_on_error`: which failures a job survives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ContinueOnError {
    /// Stop the job at its first error (fio's default).
    #[default]
    None,
    Read,
    Write,
    /// Read and write errors.
    Io,
    /// Verification mismatches.
    Verify,
    All,
}

impl ContinueOnError {
    pub const VALID: &'static str = "none, read, write, io, verify, all (or 0 = none, 1 = all)";

    pub fn parse(v: &str) -> Option<ContinueOnError> {
        Some(match v {
            "none" | "0" => ContinueOnError::None,
            "read" => ContinueOnError::Read,
            "write" => ContinueOnError::Write,
            "io" => ContinueOnError::Io,
            "verify" => ContinueOnError::Verify,
            "all" | "1" => ContinueOnError::All,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            ContinueOnError::None => "none",
            ContinueOnError::Read => "read",
            ContinueOnError::Write => "write",
            ContinueOnError::Io => "io",
            ContinueOnError::Verify => "verify",
            ContinueOnError::All => "all",
        }
    }

    /// Does the job go on after an I/O error of this operation? (An fsync
    /// counts as a write, as in fio.)
    pub fn covers_io(self, op: crate::request::Op) -> bool {
        use crate::request::Op;
        match self {
            ContinueOnError::None | ContinueOnError::Verify => false,
            ContinueOnError::Read => op == Op::Read,
            ContinueOnError::Write => op != Op::Read,
            ContinueOnError::Io | ContinueOnError::All => true,
        }
    }
}

/// Where a job's option came from, for error messages (`file:line` or `command line`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Origin(pub String);

/// One job, fully typed. A `numjobs=N` job is expanded by the engine into N
/// workers sharing this spec.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct JobSpec {
    /// The job's name: `name=` when the section sets it, else the section's.
    pub name: String,
    /// The section header's name (`[job1]`, `--name=job1`); empty for a job
    /// built in code. fio names the job's files after it (`job1.0.0`,
    /// `$jobname`) and its clones after it, even when `name=` renames the
    /// job: see [`JobSpec::file_jobname`] and [`JobSpec::clone_name`].
    pub section: String,
    /// The job section's own options as written (fio's `job options` in JSON).
    pub options: Vec<(String, String)>,
    /// Where the section started (`file:line`), for messages.
    pub origin: Origin,
    /// Target path; `None` means fio's default `name.jobnum.0` in `directory`.
    pub filename: Option<String>,
    pub directory: Option<String>,
    /// Bytes of the target to use; `None` = the whole file/device.
    pub size: Option<u64>,
    pub offset: u64,
    pub rw: RwMode,
    pub rwmixread: u32,
    /// Block sizes for reads and writes (fio allows `bs=4k,8k`).
    pub bs: [BlockSizes; 2],
    /// Trims' own block sizes (fio's third value, `bs=4k,4k,8k`); `None`:
    /// trims take the write value ([`JobSpec::trim_bs`]).
    pub bs_trim: Option<BlockSizes>,
    pub direct: bool,
    pub iodepth: u32,
    /// Queue filling (fio's `iodepth_batch_submit`, `iodepth_batch_complete_min`,
    /// `iodepth_batch_complete_max`, `iodepth_low`); `None` = not set, the
    /// engine's default (see `engine::fill`).
    pub depth_batch: DepthBatch,
    pub numjobs: u32,
    pub runtime: Option<Duration>,
    pub time_based: bool,
    pub ramp_time: Duration,
    pub loops: u32,
    pub number_ios: Option<u64>,
    /// IOPS cap per direction [read, write]; 0 = none.
    pub rate_iops: [u64; 2],
    /// Bandwidth cap per direction in bytes/s (fio's `rate`); 0 = none.
    pub rate: [u64; 2],
    /// Minimum bandwidth (bytes/s) and IOPS per direction over each
    /// `rate_cycle`; falling below ends the job with an error. 0 = none.
    pub rate_min: [u64; 2],
    pub rate_iops_min: [u64; 2],
    /// fio's `rate_cycle`: the window `rate_min` is averaged over.
    pub rate_cycle: Duration,
    /// fio's `rate_process=poisson`: exponential gaps between paced I/Os.
    pub rate_poisson: bool,
    /// fio's `io_submit_mode=offload`: a paced job keeps its schedule whatever
    /// its I/O in flight does; `false` (inline, fio's default) lets the I/O in
    /// flight complete before it waits for its next due time (`workload::Pacer`).
    pub io_submit_offload: bool,
    pub thinktime: Duration,
    pub thinktime_blocks: u32,
    pub randrepeat: bool,
    pub randseed: u64,
    /// fio's `rw=MODE:N` suffix.
    pub rw_suffix: RwSuffix,
    /// fio's `norandommap`: random offsets drawn with replacement, even with
    /// one block size.
    pub norandommap: bool,
    /// fio's `random_distribution`.
    pub random_distribution: RandomDist,
    /// fio's `percentage_random` per direction: the share of a random job's
    /// I/Os at a random offset (the rest continue sequentially), 0-100.
    pub percentage_random: [u32; 2],
    /// fio's `blockalign` per direction; 0 = the smallest block size.
    pub blockalign: [u32; 2],
    /// Trims' own `blockalign` (its third value); `None`: the write value.
    pub blockalign_trim: Option<u32>,
    /// fio's `io_size`: bytes of I/O to do, independent of the region's size
    /// (passes wrap over the region until it is done); `None` = the region.
    pub io_size: Option<u64>,
    /// fio's `offset_increment`: clone N starts at `offset + N * this`.
    pub offset_increment: u64,
    /// fio's `fill_device`/`fill_fs`: a write job whose write fails with
    /// ENOSPC ends there, cleanly (the region's end bounds it otherwise).
    pub fill_device: bool,
    pub ioengine: Engine,
    /// The backends' own options (`hipri`, io_uring's, libaio's, `null_*`,
    /// ...), each backend's part beside it in `device/`; the chosen engine's
    /// part is the one used.
    pub backend: BackendOptions,
    /// `slat_percentiles`, `clat_percentiles`, `lat_percentiles`: which latency
    /// objects of the JSON carry `percentile` (and, in json+, `bins`).
    pub lat_percentiles: LatPercentiles,
    /// Issue an fsync every N writes (0 = never).
    pub fsync: u32,
    /// Open with O_SYNC (`sync=1`).
    pub sync: bool,
    /// Report every job of this job's reporting group as one (fio's
    /// `group_reporting`; see [`reporting_groups`]).
    pub group_reporting: bool,
    pub percentile_list: Vec<f64>,
    /// Wait for every job before this one, and start a new reporting group.
    pub stonewall: bool,
    /// Start a new reporting group without waiting (fio's `new_group`).
    pub new_group: bool,
    /// `completion=`; `None` = the engine's default for the backend.
    pub completion: Option<CompletionModel>,
    /// `ioclass=`; `None` = derived from op and sync flags.
    pub ioclass: Option<Class>,
    /// Read-ahead window for sequential readers (bytes; 0 = off).
    pub readahead: u64,
    /// `prio`/`prioclass` for io_uring per-request ioprio (0 = none).
    pub ioprio: u16,
    pub scheduler: SchedKind,
    pub laq: LaqParams,
    /// CPUs the job's worker threads may run on (fio `cpus_allowed`); empty = any.
    pub cpus_allowed: Vec<u32>,
    /// fio `cpus_allowed_policy=split`: clone N runs on the N-th allowed CPU only.
    pub cpus_allowed_split: bool,
    /// iolab `placement=`: the group's workers (P tasks) and co-runners (C tasks)
    /// are placed by this policy of study 001 (see `engine::place`).
    pub placement: Option<crate::placement::Policy>,
    /// iolab `balance_interval=`: how often the live balancer of
    /// `placement=balance` reclassifies tasks and migrates them.
    pub balance_interval: Duration,
    /// iolab `corunners=`: compute threads (C tasks) run beside each clone of the
    /// job for as long as its group runs.
    pub corunners: u32,
    /// iolab `corunner_kernel=`: what the co-runners compute.
    pub corunner_kernel: crate::placement::corunner::Kernel,
    /// fio's `kb_base` (1024 or 1000), kept so output can print sizes the same way.
    pub kb_base: u32,
    /// `size=N%`: this share of the target instead of `size` bytes (engine resolves).
    pub size_percent: Option<u32>,
    /// `offset=N%`: start this share into the target instead of `offset` bytes.
    pub offset_percent: Option<u32>,
    pub verify: VerifySpec,
    /// fio's buffer-contents options (`zero_buffers`, `buffer_pattern`, ...).
    pub buffers: crate::job::buffers::BufferSpec,
    pub continue_on_error: ContinueOnError,
    /// Complete a request that has not finished after this long as an error
    /// (iolab's `io_timeout`); `None` = wait forever.
    pub io_timeout: Option<Duration>,
    /// startdelay, exitall, ignore_error, cmdprio (`job::control`).
    pub control: super::control::ControlSpec,
    /// fdatasync, end_fsync, fsync_on_close (`job::control`).
    pub syncs: super::control::SyncSpec,
    /// nrfiles, filename_format, file_service_type, fallocate, ... (`job::files`).
    pub files: super::files::FileSpec,
    /// steadystate, ss_dur, ss_ramp (`job::steady`).
    pub steady: super::steady::SteadySpec,
    /// latency_target, latency_window, latency_percentile, latency_run (`job::lat_target`).
    pub lat_target: super::lat_target::LatTargetSpec,
    /// think-time family, rw_sequencer, serialize_overlap, random_generator,
    /// allrandrepeat, verify_backlog_batch (`job::workload_opts`).
    pub workload: super::workload_opts::WorkloadOpts,
    /// unified_rw_reporting, stats, unit_base, bwavgtime, max_latency, log
    /// compression, ... (`job::report_opts`).
    pub reporting: super::report_opts::ReportOpts,
    /// zonemode, zonesize, zonerange, zoneskip, ... (`job::zones`).
    pub zones: super::zones::ZoneSpec,
    /// fio's per-job logs (`write_lat_log`, `write_bw_log`, ...).
    pub logs: LogSpec,
    /// invalidate, fadvise_hint, write_hint, lockfile, offset_align, ... (`job::target_opts`).
    pub target: super::target::TargetOpts,
    /// nice, uid, gid, cgroup, exec_prerun, ioscheduler, mem, lockmem (`job::process_opts`).
    pub process: super::process::ProcessSpec,
    /// `file_service_type=zipf|pareto|normal|gauss[:P]`: the distribution of
    /// file choices (`ServiceKind::Distributed`).
    pub file_service_dist: RandomDist,
    /// write_iolog, read_iolog, replay_*, merge_blktrace_* (`job::iolog`).
    pub iolog: super::iolog::IologSpec,
}

/// fio's log options: which logs a job writes and how (see `measure::iolog`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LogSpec {
    /// `write_lat_log=PREFIX`: PREFIX_slat, PREFIX_clat and PREFIX_lat logs.
    pub lat: Option<String>,
    /// `write_bw_log=PREFIX`: PREFIX_bw.
    pub bw: Option<String>,
    /// `write_iops_log=PREFIX`: PREFIX_iops.
    pub iops: Option<String>,
    /// `write_hist_log=PREFIX`: PREFIX_clat_hist (rows only with `log_hist_msec`).
    pub hist: Option<String>,
    /// `log_avg_msec`: one averaged row per window and direction (0 = every I/O).
    pub avg_msec: u32,
    /// `log_hist_msec`: one histogram row per window and direction (0 = none).
    pub hist_msec: u32,
    /// `log_hist_coarseness`: 0-6; each step halves the histogram's bins.
    pub hist_coarseness: u8,
    /// `log_max_value`: a window's maximum instead of its mean.
    pub max_value: bool,
    /// `log_drop_when_full` (iolab only): when the log writer falls a whole
    /// ring behind, drop records (counted) rather than wait for it.
    pub drop_when_full: bool,
    /// `log_offset`: an offset column.
    pub offset: bool,
    /// `log_prio`: the priority column holds the ioprio value in hex.
    pub prio: bool,
    /// `per_job_logs`: `.N` (the job's index) in the file names (fio's default).
    pub per_job: bool,
    /// `log_unix_epoch` / `log_alternate_epoch`: timestamps on a clock's epoch
    /// (ms) instead of from the job's start.
    pub unix_epoch: bool,
    pub alternate_epoch: bool,
    /// `log_alternate_epoch_clock_id`: the clock_gettime(2) clock of those
    /// timestamps (0 = CLOCK_REALTIME).
    pub epoch_clock_id: i32,
}

/// Which JSON latency objects carry percentiles (fio's `*_percentiles`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LatPercentiles {
    pub slat: bool,
    pub clat: bool,
    pub lat: bool,
}

impl Default for LatPercentiles {
    /// fio's defaults: completion latency only.
    fn default() -> Self {
        LatPercentiles {
            slat: false,
            clat: true,
            lat: false,
        }
    }
}

impl LogSpec {
    /// Prefixes of log options written alone (empty here) become the job's
    /// name, as fio names them in a job file.
    pub fn name_bare_prefixes(&mut self, job: &str) {
        for p in [&mut self.lat, &mut self.bw, &mut self.iops, &mut self.hist]
            .into_iter()
            .flatten()
        {
            if p.is_empty() {
                *p = job.to_string();
            }
        }
    }
}

impl Default for LogSpec {
    fn default() -> Self {
        LogSpec {
            lat: None,
            bw: None,
            iops: None,
            hist: None,
            avg_msec: 0,
            hist_msec: 0,
            hist_coarseness: 0,
            max_value: false,
            drop_when_full: false,
            offset: false,
            prio: false,
            per_job: true,
            unix_epoch: false,
            alternate_epoch: false,
            epoch_clock_id: 0,
        }
    }
}

impl LogSpec {
    /// The clock whose epoch log timestamps count from, or None: from the
    /// job's start (fio: `log_alternate_epoch_clock_id` applies once either
    /// epoch option is on).
    pub fn epoch_clock(&self) -> Option<i32> {
        (self.unix_epoch || self.alternate_epoch).then_some(self.epoch_clock_id)
    }

    /// Whether the job writes any log.
    pub fn any(&self) -> bool {
        self.lat.is_some() || self.bw.is_some() || self.iops.is_some() || self.hist.is_some()
    }

    /// Write the logs in `dir` (`--scratch-dir`): each prefix keeps its last
    /// path component, as a scratch `filename` does.
    pub fn move_into(&mut self, dir: &std::path::Path) {
        for p in [&mut self.lat, &mut self.bw, &mut self.iops, &mut self.hist]
            .into_iter()
            .flatten()
        {
            let base = p.rsplit('/').next().unwrap_or(p).to_string();
            *p = dir.join(base).display().to_string();
        }
    }
}

impl JobSpec {
    /// The name fio's file names use (`$jobname`): the section header's,
    /// whatever `name=` says.
    pub fn file_jobname(&self) -> &str {
        if self.section.is_empty() {
            &self.name
        } else {
            &self.section
        }
    }

    /// The name clone `jobnum` reports under: fio gives `name=` to the first
    /// and the section header's name to the clones `numjobs` adds.
    pub fn clone_name(&self, jobnum: u32) -> &str {
        if jobnum == 0 {
            &self.name
        } else {
            self.file_jobname()
        }
    }

    /// The job syncs its writes every N of them: `fsync=N`, `fdatasync=N`
    /// or `sync_file_range=F:N`.
    pub fn syncs_writes(&self) -> bool {
        self.fsync > 0 || self.syncs.fdatasync > 0 || self.syncs.range_every > 0
    }

    /// Trims' block sizes: their own (`bs=4k,4k,8k`), or the write's.
    pub fn trim_bs(&self) -> &BlockSizes {
        self.bs_trim.as_ref().unwrap_or(&self.bs[1])
    }

    /// The largest block size of any direction (what a buffer must hold: a
    /// trimwrite job writes the range it trimmed).
    pub fn max_bs(&self) -> u32 {
        self.bs[0]
            .max()
            .max(self.bs[1].max())
            .max(self.trim_bs().max())
    }

    /// Where clone `jobnum` of this job starts (fio's `offset_increment`).
    pub fn clone_offset(&self, jobnum: u32) -> u64 {
        let o = self
            .offset
            .saturating_add(self.offset_increment.saturating_mul(u64::from(jobnum)));
        // A percentage offset is rounded up to the next boundary (fio's offset_align).
        match self.target.clone_align {
            0 => o,
            a => o.div_ceil(a).saturating_mul(a),
        }
    }
}

/// Each job's reporting group, as fio numbers them: the first job is in group
/// 0, and a later job with `stonewall` or `new_group` starts the next group
/// (a first job with them starts none: there is no group before it to end).
/// A job file after the first starts with a stonewall (`job::plan`), so it
/// starts a group too. The text report's `(g=N)` and `(groupid=N, ...)`, the
/// JSON's `groupid`, the "Run status group N" lines, `group_reporting` and
/// `exit_what=group` all go by these numbers.
pub fn reporting_groups(jobs: &[JobSpec]) -> Vec<u32> {
    let mut id = 0;
    jobs.iter()
        .enumerate()
        .map(|(i, j)| {
            if i > 0 && (j.stonewall || j.new_group) {
                id += 1;
            }
            id
        })
        .collect()
}

impl Default for JobSpec {
    fn default() -> Self {
        JobSpec {
            options: Vec::new(),
            name: String::from("job"),
            section: String::new(),
            origin: Origin::default(),
            filename: None,
            directory: None,
            size: None,
            offset: 0,
            rw: RwMode {
                pattern: Pattern::Seq,
                dir: Direction::Read,
            },
            rwmixread: 50,
            bs: [BlockSizes::Fixed(4096), BlockSizes::Fixed(4096)],
            bs_trim: None,
            direct: false,
            iodepth: 1,
            depth_batch: DepthBatch::default(),
            numjobs: 1,
            runtime: None,
            time_based: false,
            ramp_time: Duration::ZERO,
            loops: 1,
            number_ios: None,
            rate_iops: [0, 0],
            rate: [0, 0],
            rate_min: [0, 0],
            rate_iops_min: [0, 0],
            rate_cycle: Duration::from_millis(1000),
            rate_poisson: false,
            io_submit_offload: false,
            thinktime: Duration::ZERO,
            thinktime_blocks: 1,
            randrepeat: true,
            randseed: 0x89,
            logs: LogSpec::default(),
            rw_suffix: RwSuffix::None,
            norandommap: false,
            random_distribution: RandomDist::Random,
            percentage_random: [100, 100],
            blockalign: [0, 0],
            blockalign_trim: None,
            io_size: None,
            offset_increment: 0,
            fill_device: false,
            ioengine: Engine::Psync,
            backend: BackendOptions::default(),
            lat_percentiles: LatPercentiles::default(),
            fsync: 0,
            sync: false,
            group_reporting: false,
            percentile_list: DEFAULT_PERCENTILES.to_vec(),
            stonewall: false,
            new_group: false,
            completion: None,
            ioclass: None,
            readahead: 0,
            ioprio: 0,
            scheduler: SchedKind::Noop,
            laq: LaqParams::default(),
            cpus_allowed: Vec::new(),
            cpus_allowed_split: false,
            placement: None,
            balance_interval: Duration::from_millis(50),
            corunners: 0,
            corunner_kernel: crate::placement::corunner::Kernel::Int,
            kb_base: 1024,
            size_percent: None,
            offset_percent: None,
            verify: VerifySpec::default(),
            buffers: crate::job::buffers::BufferSpec::default(),
            continue_on_error: ContinueOnError::None,
            io_timeout: None,
            control: Default::default(),
            syncs: Default::default(),
            files: Default::default(),
            steady: Default::default(),
            lat_target: Default::default(),
            workload: Default::default(),
            reporting: Default::default(),
            zones: Default::default(),
            target: Default::default(),
            process: Default::default(),
            file_service_dist: RandomDist::Random,
            iolog: Default::default(),
        }
    }
}

/// fio's default `percentile_list`.
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];
