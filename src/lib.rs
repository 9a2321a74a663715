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
//! # Layout
//!
//! The path of one I/O is visible in the module layout:
//! `job` (what to run) -> `workload` (next request) -> `sched` (class, throttle)
//! -> `device` (a backend's queue pair) -> `completion` (how the thread learns it
//! finished) -> `measure` (timestamps, histograms, CPU). `engine` runs that loop per
//! worker thread, `report` renders results, `lab` holds the study reproductions.

pub mod buf;
pub mod compare;
pub mod completion;
pub mod device;
pub mod engine;
mod facade;
pub mod job;
pub mod lab;
pub mod manual;
pub mod measure;
pub mod observe;
pub mod placement;
pub mod probe;
pub mod report;
pub mod request;
pub(crate) mod ring;
pub mod sched;
pub mod sys;
pub mod workload;

pub use facade::schema;
pub use facade::{
    Error, Job, Jobs, Observation, ProbeOptions, Result, RunOptions, Summary, observe_command,
    probe,
};
pub use observe::report::ObserveReport;
pub use probe::ProbeReport;
pub use report::model::{JobResult, RunResult};
