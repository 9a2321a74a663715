//! iolab: a user-space I/O stack for the low-latency storage path, with every stage
//! selectable and every microsecond accounted for.
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

pub use facade::{
    Error, Job, Jobs, Observation, ProbeOptions, Result, RunOptions, Summary, observe_command,
    probe,
};
pub use observe::report::ObserveReport;
pub use probe::ProbeReport;
pub use report::model::{JobResult, RunResult};
