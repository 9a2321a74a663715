//! iolab: a user-space I/O stack for the low-latency storage path, with every stage
//! selectable and every microsecond accounted for.
//!
//! # Use as a library
//!
//! The front door is at the crate root: build a job with fio's option names
//! ([`Job`]) or read fio job text ([`Jobs`]), run it, and read the typed
//! result ([`RunResult`], fio's JSON shape plus iolab's `iolab` objects):
//!
//! ```
//! let run = iolab::Job::new("randread")
//!     .option("ioengine", "null")? // the emulated device: no disk, no root
//!     .option("null_lat", "4us")?
//!     .option("rw", "randread")?
//!     .option("bs", "4k")?
//!     .option("size", "1g")?
//!     .option("number_ios", 2000)?
//!     .run()?;
//! let s = iolab::Summary::of(&run.jobs[0]);
//! assert_eq!(s.ios, 2000);
//! assert!(s.p50_ns >= 4_000 && s.p99_ns >= s.p50_ns);
//! println!("p50 {} ns, p99 {} ns, {:.0} ns of CPU per I/O", s.p50_ns, s.p99_ns, s.cpu_ns_per_io);
//! # Ok::<(), iolab::Error>(())
//! ```
//!
//! [`probe()`] measures which completion model pays on a device or file;
//! [`observe_command`] counts a command's system calls (root). Every call
//! fails with one [`Error`]. The library installs no signal handler and never
//! exits the process; the engine clock initialises itself.
//!
//! # What is public
//!
//! - The front door above: [`Job`], [`Jobs`], [`RunOptions`], [`Summary`],
//!   [`probe()`] with [`ProbeOptions`] and [`ProbeReport`], [`observe_command`]
//!   with [`Observation`] and [`ObserveReport`], [`Error`], and [`schema`] (the
//!   JSON Schemas of what iolab writes).
//! - [`results`]: [`RunResult`] and the types it holds, in fio's JSON shape.
//! - The stages a job chooses: [`Engine`] (the device backend, fio's
//!   `ioengine=`), [`CompletionModel`] (how a worker learns its I/O finished,
//!   `completion=`) and [`SchedKind`] (the host scheduler, `scheduler=`).
//! - [`backend`]: the [`Queue`](backend::Queue) contract a device backend
//!   implements, for a backend of one's own.
//!
//! Everything else (the option table, the engine loop, the backends, the
//! studies, the command line) is internal. The `testing` feature exposes it,
//! hidden from these docs, for iolab's own tests, benches and fuzz targets; it
//! is not a stable API.
//!
//! # Layout
//!
//! The path of one I/O is visible in the module layout (internal):
//! `job` (what to run) -> `workload` (next request) -> `sched` (class, throttle)
//! -> `device` (a backend's queue pair) -> `completion` (how the thread learns it
//! finished) -> `measure` (timestamps, histograms, CPU). `engine` runs that loop per
//! worker thread, `report` renders results, `lab` holds the study reproductions.

#![warn(missing_docs)]

// iolab's internal modules: crate-private in a normal build; `#[doc(hidden)]
// pub` with the `testing` feature, which iolab's own integration tests,
// benches and fuzz targets turn on (Cargo.toml). They are not a stable API.
// Each is declared twice rather than by a macro so that rustfmt, which does
// not look inside macro calls, still finds their files.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod buf;
#[cfg(not(feature = "testing"))]
mod buf;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod cli;
#[cfg(not(feature = "testing"))]
mod cli;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod compare;
#[cfg(not(feature = "testing"))]
mod compare;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod completion;
#[cfg(not(feature = "testing"))]
mod completion;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod device;
#[cfg(not(feature = "testing"))]
mod device;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod engine;
#[cfg(not(feature = "testing"))]
mod engine;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod job;
#[cfg(not(feature = "testing"))]
mod job;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod lab;
#[cfg(not(feature = "testing"))]
mod lab;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod manual;
#[cfg(not(feature = "testing"))]
mod manual;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod measure;
#[cfg(not(feature = "testing"))]
mod measure;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod observe;
#[cfg(not(feature = "testing"))]
mod observe;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod placement;
#[cfg(not(feature = "testing"))]
mod placement;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod probe;
#[cfg(not(feature = "testing"))]
mod probe;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod report;
#[cfg(not(feature = "testing"))]
mod report;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod request;
#[cfg(not(feature = "testing"))]
mod request;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod sched;
#[cfg(not(feature = "testing"))]
mod sched;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod sys;
#[cfg(not(feature = "testing"))]
mod sys;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod workload;
#[cfg(not(feature = "testing"))]
mod workload;

mod facade;
mod ring;

pub use facade::schema;
pub use facade::{
    Error, Job, Jobs, Observation, ProbeOptions, Result, RunOptions, Summary, observe_command,
    probe,
};
pub use job::spec::{CompletionModel, Engine, SchedKind};
/// Which collector [`observe_command`] counts with (`--backend`).
pub use observe::collector::Backend as ObserveBackend;
pub use observe::report::ObserveReport;
pub use probe::ProbeReport;
pub use report::model::{JobResult, RunResult};

/// The typed result of a run: [`RunResult`] and what it holds, in fio's JSON
/// shape (field names, nesting and units of fio 3.33's
/// `--output-format=json`), with iolab's own figures under `iolab` objects
/// ([`JobExtras`](results::JobExtras), [`RunExtras`](results::RunExtras)).
/// Every type serialises to the keys `iolab run --output-format=json` prints
/// and reads back from them; [`schema::run`] is their JSON Schema.
pub mod results {
    pub use crate::completion::CompletionStats;
    pub use crate::device::BackendStats;
    pub use crate::report::model::{
        ClassResult, DirResult, Dist, HistogramInfo, IopsLog, JobEngine, JobExtras, JobResult,
        LatStats, OrderedMap, Percentiles, RunExtras, RunResult, SyncResult, VerifyReport,
    };
    pub use crate::sched::SchedStats;
}

/// The contract a device backend implements: [`Queue`](backend::Queue), one
/// queue pair on a device owned by one worker thread, and the vocabulary it
/// speaks ([`IoCmd`](backend::IoCmd) in, [`Completion`](backend::Completion)
/// out). iolab's own backends (the emulated null device, psync and its
/// relatives, libaio, io_uring, mmap, posixaio) implement it; the completion
/// models drive any `Queue` through [`Wait::Peek`](backend::Wait::Peek)
/// (polling) and [`Wait::Sleep`](backend::Wait::Sleep) (interrupts).
///
/// A backend of one's own implements five methods (the others have
/// defaults). This one completes every command as soon as it is committed:
///
/// ```
/// use iolab::backend::{
///     Caps, Class, Completion, DevResult, Flush, IoCmd, Op, Queue, Queued, Wait,
/// };
///
/// /// A device with no latency: commit completes what was queued.
/// struct Instant {
///     queued: Vec<Completion>,
///     done: Vec<Completion>,
/// }
///
/// impl Queue for Instant {
///     fn name(&self) -> &'static str {
///         "instant"
///     }
///     fn caps(&self) -> Caps {
///         Caps::NONE.with_peek(true)
///     }
///     fn queue(&mut self, cmd: &IoCmd) -> DevResult<Queued> {
///         let c = Completion::new(cmd.slot, cmd.len.into());
///         self.queued.push(c); // within the capacity reserved up front
///         Ok(Queued::Pending)
///     }
///     fn commit(&mut self) -> DevResult<u32> {
///         let n = self.queued.len() as u32;
///         self.done.append(&mut self.queued);
///         Ok(n)
///     }
///     fn reap(&mut self, _wait: Wait, out: &mut [Completion]) -> DevResult<usize> {
///         let n = out.len().min(self.done.len());
///         for (o, c) in out.iter_mut().zip(self.done.drain(..n)) {
///             *o = c;
///         }
///         Ok(n)
///     }
/// }
///
/// let mut q = Instant { queued: Vec::with_capacity(32), done: Vec::with_capacity(32) };
/// let mut buf = vec![0u8; 4096];
/// let cmd = IoCmd::new(Op::Read, 0, 4096, 7, buf.as_mut_ptr())
///     .with_class(Class::Read)
///     .with_flush(Flush::Full);
/// assert_eq!(q.queue(&cmd)?, Queued::Pending);
/// assert_eq!(q.commit()?, 1);
/// let mut out = [Completion::default(); 4];
/// assert_eq!(q.reap(Wait::Peek, &mut out)?, 1);
/// assert_eq!((out[0].slot, out[0].result), (7, 4096));
/// # Ok::<(), iolab::backend::DeviceError>(())
/// ```
pub mod backend {
    pub use crate::device::null::FaultCounts;
    pub use crate::device::{
        BackendStats, Caps, DevResult, DeviceError, DeviceTime, OwnStats, PerformedBy, Queue,
        Queued, Wait,
    };
    pub use crate::request::{Class, Completion, Flush, IoCmd, Op};
}

/// The `iolab` command line (`src/main.rs` calls this and nothing else):
/// parses the process's arguments, runs the command and returns its exit
/// status. Not part of the library's API: a program embedding iolab uses the
/// front door above.
#[doc(hidden)]
pub fn command_line() -> std::process::ExitCode {
    cli::main()
}
