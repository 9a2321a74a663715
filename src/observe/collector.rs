//! One face over the two ways `iolab observe` counts: the eBPF counter
//! (aggregates in the kernel; the default where BPF works) and the tracefs
//! tracer (streams events and pairs them here; works wherever tracefs does).

use serde::Serialize;

use super::bpf::{BpfCounter, BpfError, check_time_one_in};
use super::period::Period;
use super::tracer::{Tracer, TracerError, TracerOptions, require_no_loss};

/// Why a collector could not be opened or run: its backend's error, or an
/// option that does not fit the backend.
#[derive(Debug, thiserror::Error)]
pub enum CollectorError {
    #[error("--time-sample {n}: {err}")]
    TimeSample { n: u32, err: BpfError },
    #[error(
        "--time-sample {0}: only the bpf backend samples call times \
         (tracefs gets every call's enter and exit event anyway)"
    )]
    TimeSampleTracefs(u32),
    #[error("--backend=bpf: the eBPF counter cannot run here (try --backend=tracefs): {0}")]
    BpfUnavailable(BpfError),
    #[error(transparent)]
    Bpf(#[from] BpfError),
    #[error(transparent)]
    Tracer(#[from] TracerError),
}

type Result<T, E = CollectorError> = std::result::Result<T, E>;

/// Which collector counts (`--backend`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// eBPF programs on raw_syscalls and sched tracepoints, counting in the kernel.
    Bpf,
    /// A tracefs instance streaming raw_syscalls and sched events to iolab.
    Tracefs,
}

impl Backend {
    /// The collector's name, as `--backend` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Bpf => "bpf",
            Backend::Tracefs => "tracefs",
        }
    }
}

/// A live collector of one process tree.
pub enum Collector {
    Bpf(Box<BpfCounter>),
    Tracefs { tracer: Box<Tracer>, buffer_kb: u64 },
}

impl Collector {
    /// The requested backend; with none, BPF where it works, else tracefs after
    /// saying once on stderr why BPF could not be used.
    /// `time_one_in` > 1 times that share of calls at random (bpf only; every
    /// call is still counted).
    pub fn open(requested: Option<Backend>, buffer_kb: u64, time_one_in: u32) -> Result<Collector> {
        check_time_one_in(time_one_in).map_err(|err| CollectorError::TimeSample {
            n: time_one_in,
            err,
        })?;
        if time_one_in > 1 && requested == Some(Backend::Tracefs) {
            return Err(CollectorError::TimeSampleTracefs(time_one_in));
        }
        let tracefs = || -> Result<Collector> {
            Ok(Collector::Tracefs {
                tracer: Box::new(Tracer::new(TracerOptions {
                    buffer_kb,
                    clock: "local",
                })?),
                buffer_kb,
            })
        };
        match requested {
            Some(Backend::Tracefs) => tracefs(),
            Some(Backend::Bpf) => Ok(Collector::Bpf(Box::new(
                BpfCounter::timing_one_in(time_one_in).map_err(CollectorError::BpfUnavailable)?,
            ))),
            None => match BpfCounter::timing_one_in(time_one_in) {
                Ok(b) => Ok(Collector::Bpf(Box::new(b))),
                Err(e) => {
                    // Once per process: a study opens a collector per run.
                    static SAID: std::sync::Once = std::sync::Once::new();
                    SAID.call_once(|| {
                        eprintln!(
                            "iolab observe: eBPF unavailable ({:#}); using the tracefs tracer \
                         (costlier per system call; --backend=tracefs selects it quietly)",
                            e
                        )
                    });
                    if time_one_in > 1 {
                        eprintln!(
                            "iolab observe: --time-sample {time_one_in} has no effect with \
                             tracefs: every call is timed"
                        );
                    }
                    tracefs()
                }
            },
        }
    }

    /// One call in this many is timed (1: every call).
    pub fn time_one_in(&self) -> u32 {
        match self {
            Collector::Bpf(b) => b.time_one_in(),
            Collector::Tracefs { .. } => 1,
        }
    }

    pub fn backend(&self) -> Backend {
        match self {
            Collector::Bpf(_) => Backend::Bpf,
            Collector::Tracefs { .. } => Backend::Tracefs,
        }
    }

    pub fn add_pids(&mut self, tids: &[i32]) -> Result<()> {
        match self {
            Collector::Bpf(b) => Ok(b.add_pids(tids)?),
            Collector::Tracefs { tracer, .. } => Ok(tracer.add_pids(tids)?),
        }
    }

    pub fn start(&mut self) -> Result<()> {
        match self {
            Collector::Bpf(b) => Ok(b.start()?),
            Collector::Tracefs { tracer, .. } => Ok(tracer.start()?),
        }
    }

    /// Periodic work while observing: the tracer drains its buffers; the BPF
    /// counter has nothing to do until a report.
    pub fn poll(&mut self) -> Result<()> {
        match self {
            Collector::Bpf(_) => Ok(()),
            Collector::Tracefs { tracer, .. } => {
                tracer.poll(false)?;
                Ok(())
            }
        }
    }

    /// What happened since the previous interval (reads the kernel's counters).
    pub fn take_interval(&mut self) -> Result<Period> {
        match self {
            Collector::Bpf(b) => Ok(b.take_interval()?),
            Collector::Tracefs { tracer, .. } => Ok(tracer.take_interval()),
        }
    }

    /// Fail if any event was lost so far.
    pub fn require_no_loss(&self) -> Result<()> {
        match self {
            Collector::Bpf(b) => Ok(b.require_no_loss()?),
            Collector::Tracefs { tracer, buffer_kb } => {
                Ok(require_no_loss(&tracer.loss()?, *buffer_kb)?)
            }
        }
    }

    /// Stop counting, and collect everything counted until then.
    pub fn stop(&mut self) -> Result<()> {
        match self {
            Collector::Bpf(b) => {
                b.stop();
                Ok(b.read()?)
            }
            Collector::Tracefs { tracer, .. } => {
                tracer.stop()?;
                tracer.poll(true)?;
                Ok(())
            }
        }
    }

    pub fn total_period(&mut self) -> Result<Period> {
        match self {
            Collector::Bpf(b) => Ok(b.total_period()?),
            Collector::Tracefs { tracer, .. } => Ok(tracer.total_period()),
        }
    }

    /// Calls entered and not returned: (tid, syscall nr).
    pub fn in_flight(&self) -> Vec<(i32, usize)> {
        match self {
            Collector::Bpf(b) => b.in_flight(),
            Collector::Tracefs { tracer, .. } => tracer.in_flight(),
        }
    }

    /// Events handled so far (tracefs: read from the buffers; bpf: handled by
    /// the programs for observed tasks, as of the latest read).
    pub fn events(&self) -> u64 {
        match self {
            Collector::Bpf(b) => b.events(),
            Collector::Tracefs { tracer, .. } => tracer.events,
        }
    }

    pub fn lost_events(&self) -> Result<u64> {
        match self {
            Collector::Bpf(b) => Ok(b.lost()),
            Collector::Tracefs { tracer, .. } => Ok(tracer.loss()?.lost_events()),
        }
    }

    /// Detach and free everything in the kernel (also done on drop).
    pub fn remove(self) -> Result<()> {
        match self {
            Collector::Bpf(_) => Ok(()),
            Collector::Tracefs { tracer, .. } => Ok(tracer.remove()?),
        }
    }
}
