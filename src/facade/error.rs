//! The one error type of the front door: each variant wraps the error enum of
//! the part of iolab that failed, so `{}` prints that part's own message (which
//! names the option, file or device and what would be valid) and `source()`
//! reaches it for a caller that wants to match on it.

/// Why a facade call failed. The wrapped errors are boxed so a `Result`
/// stays small on the success path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A job's options or job file: unknown option (with the closest known
    /// name), bad value, conflicting options, unreadable file.
    #[error(transparent)]
    Job(Box<crate::job::error::JobError>),
    /// The run could not start or finish: a target that cannot be opened, a
    /// backend or completion model the machine lacks, a setup step that failed.
    #[error(transparent)]
    Engine(Box<crate::engine::error::EngineError>),
    /// `probe`: the target cannot be probed, or nothing could be measured there.
    #[error(transparent)]
    Probe(Box<crate::probe::ProbeError>),
    /// `probe`'s measuring time is outside what it accepts.
    #[error("probe runtime: {0}")]
    ProbeRuntime(#[from] crate::probe::cli::RuntimeError),
    /// `observe`: the collector (eBPF or tracefs) could not count.
    #[error(transparent)]
    Collector(Box<crate::observe::collector::CollectorError>),
    /// `observe`: the command could not be started or its processes listed.
    #[error(transparent)]
    Spawn(Box<crate::observe::target::SpawnError>),
    /// `observe`: /proc/stat or /proc/interrupts could not be read.
    #[error(transparent)]
    CpuSource(Box<crate::measure::cpu::CpuSourceError>),
    /// The operation needs root (tracefs, eBPF, block devices).
    #[error(transparent)]
    NeedsRoot(Box<crate::sys::NeedsRoot>),
    /// A file the run writes beside its results (fio's `--bandwidth-log`).
    #[error("{what}: {err}")]
    Io {
        /// What was being written.
        what: String,
        /// The operating system's reason.
        err: std::io::Error,
    },
    /// A builder call that cannot make sense whatever follows it.
    #[error("{0}")]
    Usage(String),
}

macro_rules! boxed_from {
    ($($variant:ident: $t:ty),* $(,)?) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Error {
                Error::$variant(Box::new(e))
            }
        }
    )*};
}

boxed_from!(
    Job: crate::job::error::JobError,
    Engine: crate::engine::error::EngineError,
    Probe: crate::probe::ProbeError,
    Collector: crate::observe::collector::CollectorError,
    Spawn: crate::observe::target::SpawnError,
    CpuSource: crate::measure::cpu::CpuSourceError,
    NeedsRoot: crate::sys::NeedsRoot,
);

/// `Result` with the facade's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
