//! `iolab probe TARGET`: what a file or device supports, and which completion
//! model pays there — measured, not assumed.
//!
//! Three parts: the target's capabilities ([`caps::probe_target`]) with
//! the consequence of each; QD1 4 KiB random reads under every completion model
//! that can work there (psync, io_uring interrupt / CQ spinning / hybrid /
//! adaptive, IOPOLL where the device has poll queues), next to this machine's
//! wakeup and clock cost; and a recommendation derived from those numbers with
//! study 000's reasoning (see [`advice`]).

pub mod advice;
pub mod caps;
pub mod cli;
pub mod render;
pub mod target;

use std::path::PathBuf;
use std::time::Duration;

use crate::engine::summary::measure;
use crate::job::{BlockSizes, CompletionModel, Direction, Engine, JobSpec, Pattern, RwMode};
use crate::measure::{calibration, clock};
use caps::{Outcome, TargetCaps, probe_target};
pub use cli::ProbeArgs;

/// A completion model as the probe runs it (psync and IOPOLL are ways of
/// completing too, so they get their own keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelKey {
    /// pread: the I/O completes inside the call.
    Sync,
    /// io_uring, sleeping in io_uring_enter until a completion.
    Interrupt,
    /// The same with the job pinned to one CPU: where io_uring punts every
    /// request, the io-wq worker inherits the submitter's CPUs and runs beside
    /// it, so the hand-off is a local switch instead of two cross-CPU wakeups.
    /// A placement, not a completion model: measured to back the advice, never
    /// recommended.
    InterruptPinned,
    /// io_uring, spinning on the CQ ring.
    Poll,
    Hybrid,
    Adaptive,
    /// io_uring IOPOLL (hipri): the kernel polls the device's completion queue.
    Iopoll,
}

impl ModelKey {
    pub const ALL: [ModelKey; 7] = [
        ModelKey::Sync,
        ModelKey::Interrupt,
        ModelKey::InterruptPinned,
        ModelKey::Poll,
        ModelKey::Hybrid,
        ModelKey::Adaptive,
        ModelKey::Iopoll,
    ];

    pub fn label(self) -> &'static str {
        match self {
            ModelKey::Sync => "sync (psync)",
            ModelKey::Interrupt => "io_uring interrupt",
            ModelKey::InterruptPinned => "io_uring intr., 1 CPU",
            ModelKey::Poll => "io_uring poll (CQ spin)",
            ModelKey::Hybrid => "io_uring hybrid",
            ModelKey::Adaptive => "io_uring adaptive",
            ModelKey::Iopoll => "io_uring IOPOLL",
        }
    }

    fn job(self) -> (Engine, CompletionModel, bool) {
        match self {
            ModelKey::Sync => (Engine::Psync, CompletionModel::Sync, false),
            ModelKey::Interrupt | ModelKey::InterruptPinned => {
                (Engine::IoUring, CompletionModel::Interrupt, false)
            }
            ModelKey::Poll => (Engine::IoUring, CompletionModel::Poll, false),
            ModelKey::Hybrid => (Engine::IoUring, CompletionModel::Hybrid, false),
            ModelKey::Adaptive => (Engine::IoUring, CompletionModel::Adaptive, false),
            ModelKey::Iopoll => (Engine::IoUring, CompletionModel::Poll, true),
        }
    }

    pub fn uses_uring(self) -> bool {
        self != ModelKey::Sync
    }
}

/// Read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    Read,
    Write,
}

/// One model measured at QD1.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    pub model: ModelKey,
    pub label: &'static str,
    pub ios: u64,
    pub iops: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    /// CPU of the submitting thread per I/O (user + system), ns.
    pub cpu_thread_ns_per_io: f64,
    /// CPU of the whole process per I/O, ns: includes io-wq workers, which run
    /// the punted requests on the process's behalf.
    pub cpu_all_ns_per_io: f64,
    pub ctx_per_io: f64,
    /// Requests handed to io-wq workers; `None` for psync, or where punts cannot
    /// be counted (no tracefs).
    pub punted: Option<u64>,
    pub sleeps_per_io: f64,
    pub polls_hit: u64,
    pub polls_empty: u64,
    /// What the adaptive model chose per size class, and why.
    pub adaptive: Vec<String>,
}

/// A model that was not measured, and why.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Skipped {
    pub model: ModelKey,
    pub reason: String,
}

/// The measurements of one operation.
#[derive(Clone, Debug, serde::Serialize)]
#[non_exhaustive]
pub struct OpResult {
    pub op: OpKind,
    /// O_DIRECT was used (otherwise the page cache answers).
    pub direct: bool,
    pub bs: u32,
    pub runtime_s: f64,
    pub rows: Vec<Row>,
    pub skipped: Vec<Skipped>,
    pub recommendation: Option<advice::Recommendation>,
}

/// This machine's costs that decide between sleeping and spinning.
#[derive(Clone, Debug, serde::Serialize)]
#[non_exhaustive]
pub struct MachineCosts {
    /// Median lateness of a 20 us hrtimer sleep, ns.
    pub wakeup_ns: u64,
    pub clock_cost_ns: f64,
    pub clock_resolution_ns: u64,
    pub clock_source: &'static str,
    pub cpus: usize,
}

/// Everything `iolab probe` found.
#[derive(Debug, serde::Serialize)]
#[non_exhaustive]
pub struct ProbeReport {
    /// The path as given.
    pub given: PathBuf,
    /// What the path turned out to be (a block device, a file on a filesystem, ...).
    pub origin: target::TargetOrigin,
    /// The filesystem's type, when the target is a file.
    pub fs_type: Option<String>,
    /// What the target supports (direct I/O, polled queues, alignment).
    pub caps: TargetCaps,
    /// Facts about the target worth knowing, in words.
    pub notes: Vec<String>,
    /// One line per capability, with what it means for I/O here.
    pub consequences: Vec<String>,
    /// This machine's clock and wake-up costs.
    pub machine: MachineCosts,
    /// The read measurements, one row per completion model.
    pub read: OpResult,
    /// The write measurements (with `write` only).
    pub write: Option<OpResult>,
}

/// Why a probe could not finish.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Target(#[from] target::ProbeTargetError),
    #[error("probing {}: {err}", path.display())]
    Caps {
        path: PathBuf,
        err: crate::device::DeviceError,
    },
    #[error("interrupted")]
    Interrupted,
    #[error("no completion model could run on {path}: {why}")]
    NothingRan { path: String, why: String },
    #[error(transparent)]
    Engine(#[from] crate::engine::error::EngineError),
    #[error(
        "no I/O completed in {0:.2} s; probe a target that answers reads, or give it longer with --runtime"
    )]
    NoIo(f64),
}

type Result<T, E = ProbeError> = std::result::Result<T, E>;

/// Probe and measure; the temp file of a directory target is gone on return.
pub fn run(args: &ProbeArgs) -> Result<ProbeReport> {
    let t = target::resolve(&args.target, args.write)?;
    let caps = probe_target(&t.path).map_err(|err| ProbeError::Caps {
        path: t.path.clone(),
        err,
    })?;
    let direct = caps.o_direct_ok.is_yes();
    let bs = [caps.dio_offset_align, caps.logical_block_size]
        .into_iter()
        .flatten()
        .filter(|_| direct)
        .fold(4096u32, u32::max);
    let clk = clock::self_check();
    let machine = MachineCosts {
        wakeup_ns: calibration::wakeup_cost_ns(),
        clock_cost_ns: clk.cost_ns,
        clock_resolution_ns: clk.resolution_ns,
        clock_source: clk.source,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let punts_countable = !matches!(caps.nowait.uring_punted, Outcome::Unknown(_));
    let plan = Plan {
        path: t.path.to_string_lossy().into_owned(),
        direct,
        bs,
        runtime: args.runtime,
        punts_countable,
        iopoll: iopoll_possible(&caps, direct),
        pin_cpu: pin_cpu(&caps),
    };
    let read = measure_op(&plan, OpKind::Read, &machine)?;
    let write = if args.write {
        Some(measure_op(&plan, OpKind::Write, &machine)?)
    } else {
        None
    };
    let consequences = advice::consequences(&caps, t.fs_type.as_deref(), &read);
    Ok(ProbeReport {
        given: t.given.clone(),
        origin: t.origin,
        fs_type: t.fs_type.clone(),
        notes: t.notes.clone(),
        consequences,
        machine,
        read,
        write,
        caps,
    })
}

struct Plan {
    path: String,
    direct: bool,
    bs: u32,
    runtime: Duration,
    punts_countable: bool,
    iopoll: Result<(), IopollUnavailable>,
    /// The CPU the pinned interrupt row runs on, or why it is not measured.
    pin_cpu: Result<u32, NoPinnedRow>,
}

/// Why the pinned interrupt row is not measured.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
enum NoPinnedRow {
    #[error("io_uring does not punt to io-wq here: no worker to place")]
    NoPunts,
    #[error("this process's CPUs cannot be read")]
    CpusUnknown,
    #[error("this process may use one CPU only: every row is pinned")]
    OneCpu,
}

/// The pinned row is measured where io_uring punts (there is an io-wq worker
/// to place) and the process may use more than one CPU (otherwise every row
/// is pinned already): on the first CPU the process may use.
fn pin_cpu(caps: &TargetCaps) -> Result<u32, NoPinnedRow> {
    if !matches!(caps.nowait.uring_punted, Outcome::Yes) {
        return Err(NoPinnedRow::NoPunts);
    }
    let cpus = crate::placement::affinity::get_affinity(0).unwrap_or_default();
    match cpus.as_slice() {
        [] => Err(NoPinnedRow::CpusUnknown),
        [_] => Err(NoPinnedRow::OneCpu),
        [first, ..] => Ok(*first),
    }
}

/// Why the IOPOLL model is skipped on this target.
#[derive(Debug, thiserror::Error)]
enum IopollUnavailable {
    #[error("needs O_DIRECT, which this target does not support")]
    Direct,
    #[error("no block device under the target ({0})")]
    BlockDevice(crate::probe::caps::NoBlockDevice),
    /// The block layer's own account of the missing poll queues.
    #[error("{0}")]
    PollQueues(String),
    #[error("{0}: no queue/io_poll attribute (bio-based driver): no poll queues")]
    Attribute(String),
}

/// IOPOLL needs O_DIRECT and a block queue with poll queues.
fn iopoll_possible(caps: &TargetCaps, direct: bool) -> Result<(), IopollUnavailable> {
    if !direct {
        return Err(IopollUnavailable::Direct);
    }
    match (&caps.block_device, caps.io_poll) {
        (Err(why), _) => Err(IopollUnavailable::BlockDevice(why.clone())),
        (Ok(_), Some(true)) => Ok(()),
        (Ok(q), Some(false)) => Err(IopollUnavailable::PollQueues(
            crate::sys::blockdev::iopoll_missing_message(q),
        )),
        (Ok(q), None) => Err(IopollUnavailable::Attribute(q.disk.clone())),
    }
}

fn measure_op(plan: &Plan, op: OpKind, machine: &MachineCosts) -> Result<OpResult> {
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for key in ModelKey::ALL {
        let unavailable = match key {
            ModelKey::Iopoll => plan.iopoll.as_ref().err().map(|e| e.to_string()),
            ModelKey::InterruptPinned => plan.pin_cpu.as_ref().err().map(|e| e.to_string()),
            _ => None,
        };
        if let Some(reason) = unavailable {
            skipped.push(Skipped { model: key, reason });
            continue;
        }
        if crate::sys::cleanup::stop_requested() {
            return Err(ProbeError::Interrupted);
        }
        match measure_model(plan, op, key) {
            Ok(row) => rows.push(row),
            Err(e) if crate::sys::cleanup::stop_requested() => return Err(e),
            Err(e) => skipped.push(Skipped {
                model: key,
                reason: format!("{e:#}"),
            }),
        }
    }
    if rows.is_empty() {
        let why: Vec<String> = skipped
            .iter()
            .map(|s| format!("{}: {}", s.model.label(), s.reason))
            .collect();
        return Err(ProbeError::NothingRan {
            path: plan.path.clone(),
            why: why.join("; "),
        });
    }
    let recommendation = advice::recommend(&rows, machine.wakeup_ns);
    Ok(OpResult {
        op,
        direct: plan.direct,
        bs: plan.bs,
        runtime_s: plan.runtime.as_secs_f64(),
        rows,
        skipped,
        recommendation,
    })
}

fn measure_model(plan: &Plan, op: OpKind, key: ModelKey) -> Result<Row> {
    let (engine, model, hipri) = key.job();
    let job = JobSpec {
        name: format!("probe-{}", format!("{key:?}").to_lowercase()),
        filename: Some(plan.path.clone()),
        ioengine: engine,
        rw: RwMode {
            pattern: Pattern::Rand,
            dir: match op {
                OpKind::Read => Direction::Read,
                OpKind::Write => Direction::Write,
            },
        },
        bs: [BlockSizes::Fixed(plan.bs), BlockSizes::Fixed(plan.bs)],
        direct: plan.direct,
        iodepth: 1,
        backend: crate::job::BackendOptions {
            flags: crate::job::CallFlags {
                hipri,
                ..Default::default()
            },
            // The punts column: counting costs each punted request a tracepoint
            // (docs/probe.md says what that adds to the CPU columns).
            uring: crate::device::uring::options::UringOptions {
                count_punts: key.uses_uring() && plan.punts_countable,
                ..Default::default()
            },
            ..Default::default()
        },
        completion: Some(model),
        runtime: Some(plan.runtime),
        time_based: true,
        cpus_allowed: match (key, &plan.pin_cpu) {
            (ModelKey::InterruptPinned, Ok(cpu)) => vec![*cpu],
            _ => vec![],
        },
        ..JobSpec::default()
    };
    let before = process_cpu_ns();
    let m = measure(job)?;
    let all_cpu = process_cpu_ns().saturating_sub(before);
    if m.ios == 0 {
        return Err(ProbeError::NoIo(plan.runtime.as_secs_f64()));
    }
    let n = m.ios as f64;
    Ok(Row {
        model: key,
        label: key.label(),
        ios: m.ios,
        iops: m.iops,
        p50_ns: m.lat_p50_ns,
        p99_ns: m.lat_p99_ns,
        cpu_thread_ns_per_io: m.cpu_ns_per_io,
        cpu_all_ns_per_io: all_cpu as f64 / n,
        ctx_per_io: m.ctx_per_io,
        punted: m.punted,
        sleeps_per_io: m.sleeps as f64 / n,
        polls_hit: m.polls_hit,
        polls_empty: m.polls_empty,
        adaptive: m.adaptive,
    })
}

/// User + system CPU of the whole process (all threads, io-wq workers included:
/// they are threads of the process that submitted); 0 if it cannot be read.
fn process_cpu_ns() -> u64 {
    crate::measure::cpu::process_cpu_ns().unwrap_or(0)
}
