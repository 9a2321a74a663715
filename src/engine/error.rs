//! Why a run could not start or finish. Most are one job's errors and begin with
//! the job's label (`setup::label`); those about `--trace` begin with `--trace:`.
//! Causes are part of each message, not a `source`, so a `{:#}` chain says each
//! once.

use std::io;
use std::path::PathBuf;

use crate::buf::BufError;
use crate::completion::CompletionError;
use crate::device::DeviceError;
use crate::device::target::TargetError;
use crate::measure::blktrace::BlockTraceError;
use crate::measure::tracefs::mount::MountError;
use crate::placement::Policy;
use crate::placement::corunner::CoRunnerError;
use crate::placement::policy::PolicyError;
use crate::placement::topology::TopologyError;
use crate::sched::SchedError;
use crate::sys::blockdev::BlockDevError;
use crate::sys::fiemap::FiemapError;
use crate::workload::distribution::DistError;
use crate::workload::verify::VerifyError;

/// Label a job for messages: `job 'name' (file:line)`.
pub fn label(job: &crate::job::JobSpec) -> String {
    if job.origin.0.is_empty() {
        format!("job '{}'", job.name)
    } else {
        format!("job '{}' ({})", job.name, job.origin.0)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// fio's job logs (`write_lat_log` and friends).
    #[error(transparent)]
    Log(#[from] crate::measure::iolog::IologError),
    // Building a worker (`setup`).
    #[error(
        "{job} and {other} share the device '{device}' but differ in {what}; jobs sharing a \
         device share one queue and must agree on it"
    )]
    SharedDevice {
        job: String,
        other: String,
        device: String,
        what: &'static str,
    },
    #[error("{job}: iodepth must be at least 1")]
    NoDepth { job: String },
    #[error("{job}: {err}")]
    Buffers { job: String, err: BufError },
    #[error("{job}: ioengine=null needs size= (the capacity of the emulated device), e.g. size=1g")]
    NullNeedsSize { job: String },
    #[error("{job}: null device: {err}")]
    NullDevice { job: String, err: DeviceError },
    /// Boxed: it is large and rare.
    #[error(transparent)]
    Target(Box<TargetError>),
    #[error("{job}: {err}")]
    Backend { job: String, err: DeviceError },
    #[error("{job}: nothing to do: the usable size after offset= is 0 bytes")]
    EmptyRegion { job: String },
    #[error("{job}: {err}")]
    Completion { job: String, err: CompletionError },
    #[error("{job}: {err}")]
    Scheduler { job: String, err: SchedError },
    #[error("{job}: bs={bs} is larger than the {region} bytes the job may address")]
    BlockTooLarge { job: String, bs: u32, region: u64 },
    #[error("{job}: {err}")]
    Verify { job: String, err: VerifyError },
    #[error(
        "{job}: fill_device on the regular file {path} would write until its filesystem is \
         full (fio's meaning); iolab does not fill a filesystem: give size= (or --max-size) to \
         bound the job, or point filename= at a block device"
    )]
    FillUnbounded { job: String, path: String },
    #[error("{job}: {err}")]
    Distribution { job: String, err: DistError },
    /// The random map of a job with variable block sizes cannot be allocated.
    #[error("{job}: {err}")]
    RandomMap {
        job: String,
        err: crate::workload::blockmap::RandomMapError,
    },
    /// `random_generator=lfsr` cannot be set up for the job's region or seed.
    #[error("{job}: {err}")]
    Lfsr {
        job: String,
        err: crate::workload::lfsr::LfsrError,
    },
    #[error("{job}: {err}")]
    Zones {
        job: String,
        err: crate::workload::zones::ZoneError,
    },
    /// `read_iolog`: the log could not be read or merged.
    #[error("{job}: {err}")]
    Replay {
        job: String,
        err: crate::workload::replay::ReplayError,
    },
    #[error(
        "{group}: its jobs open {need} files at once (nrfiles x numjobs, plus {open} open \
         already), above this process's open-file limit of {limit}; lower nrfiles or numjobs, \
         or raise the limit (ulimit -n)"
    )]
    TooManyFiles {
        group: String,
        need: u64,
        open: u64,
        limit: u64,
    },
    #[error(
        "{job}: numa_mem_policy={policy}: set_mempolicy failed: {source}; use a policy over \
         nodes with memory (/sys/devices/system/node/has_memory) or drop the option"
    )]
    MemPolicy {
        job: String,
        policy: String,
        source: io::Error,
    },
    #[error("{job}: pre_read of {path}: {source}; check that the file can be read")]
    PreRead {
        job: String,
        path: String,
        source: io::Error,
    },

    // Placing the group's threads (`place`).
    #[error(
        "{job} and {other} share one worker thread (the same emulated device) but ask for \
         different CPUs (placement=, cpus_allowed=, cpumask=, cpus_allowed_policy=): \
         give them the same CPU options"
    )]
    SharedWorkerCpus { job: String, other: String },
    #[error(
        "{job} says placement={policy} but {other} in the same group says placement={other_policy}: \
         placement places the whole group (its workers and co-runners), so \
         give every job of a group the same placement, or start a new group \
         with stonewall"
    )]
    MixedPlacement {
        job: String,
        policy: Policy,
        other: String,
        other_policy: Policy,
    },
    #[error("placing the group's threads needs the CPU topology: {0}")]
    Topology(TopologyError),
    #[error(
        "{job}: cpus_allowed/cpumask names cpu{cpu}, which is not online here (online: {online})"
    )]
    CpuOffline {
        job: String,
        cpu: u32,
        online: String,
    },
    #[error(
        "{job}: placement={policy} arranges tasks across the SMT siblings of a core, but \
         this machine has one logical CPU per core ({machine}); use scatter, bunch, balance \
         or free here"
    )]
    NeedsSmt {
        job: String,
        policy: Policy,
        machine: String,
    },
    #[error("{job}: {err}")]
    Place { job: String, err: PolicyError },
    #[error(transparent)]
    CoRunner(#[from] CoRunnerError),
    #[error("pinning a co-runner to CPUs {cpus}: {err}")]
    PinCoRunner { cpus: String, err: io::Error },

    // Running the group (`run_jobs`).
    #[error("starting a worker thread: {0}")]
    SpawnWorker(io::Error),
    #[error("a worker thread panicked")]
    WorkerPanicked,

    // `--trace` (`trace`).
    #[error(
        "--trace: {job}: ioengine=null is iolab's emulated device, with no kernel block \
         layer to trace; --trace needs a block device or a file on one (filename=/dev/... \
         or a file path)"
    )]
    TraceNull { job: String },
    #[error("--trace: {job}: {err}")]
    TraceDevice { job: String, err: BlockDevError },
    #[error("--trace: {job}: stat: {err}")]
    TraceStat { job: String, err: io::Error },
    #[error(
        "--trace: {job}: cannot map {} to device sectors with FIEMAP (the \
         breakdown joins requests by sector); use a block device instead: {err}",
        path.display()
    )]
    TraceFiemap {
        job: String,
        path: PathBuf,
        err: FiemapError,
    },
    #[error(
        "--trace: {job}: {} is on device {major}:{minor}, which is not a block device \
         (tmpfs, overlay or a network filesystem?): there are no block events to trace",
        path.display()
    )]
    TraceNotBlock {
        job: String,
        path: PathBuf,
        major: u32,
        minor: u32,
    },
    #[error(
        "--trace: {job}: {} is on partition {major}:{minor}; partitions are not supported \
         (block events carry whole-disk sectors): use the whole disk or a file on an \
         unpartitioned one",
        path.display()
    )]
    TracePartition {
        job: String,
        path: PathBuf,
        major: u32,
        minor: u32,
    },
    #[error("--trace: {0}")]
    TraceMount(MountError),
    /// Boxed: a block-trace error is large and rare.
    #[error("--trace: block tracing of /dev/{dev}: {err}")]
    TraceStart {
        dev: String,
        err: Box<BlockTraceError>,
    },
    #[error("open {}: {err}", path.display())]
    Open { path: PathBuf, err: io::Error },
    #[error(transparent)]
    Fiemap(#[from] FiemapError),

    // Reduced runs (`summary`).
    /// A job ended with an error (its text as the run recorded it).
    #[error("{0}")]
    JobFailed(String),
    #[error("{job}: {err}")]
    Process {
        job: String,
        err: crate::engine::process::ProcessError,
    },
    #[error("interrupted")]
    Interrupted,
}

impl From<TargetError> for EngineError {
    fn from(e: TargetError) -> Self {
        EngineError::Target(Box::new(e))
    }
}

pub(crate) type Result<T, E = EngineError> = std::result::Result<T, E>;
