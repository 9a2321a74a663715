//! The fio option language: job files, command-line options, units, errors.
//!
//! `iolab run` calls [`parse_run_args`]; the result is a [`RunPlan`] whose jobs
//! are fully typed [`JobSpec`]s. Checks that need the target (does the file
//! exist, block size vs logical block size, size vs device size) are the
//! engine's.

pub mod buffers;
mod buffers_opts;
mod cmdprio;
pub mod control;
mod control_opts;
mod draft;
mod engine_set;
pub mod errno;
pub mod error;
pub mod expr;
pub mod files;
pub mod files_opts;
pub mod flags;
pub mod ini;
pub mod iolog;
mod iolog_opts;
pub mod lat_target;
pub mod log_epoch;
pub mod numa;
pub mod options;
mod parse;
pub mod plan;
mod prefix;
pub mod process;
mod process_opts;
pub(crate) mod random;
pub mod refusals;
pub mod report_opts;
mod report_set;
pub mod spec;
pub mod steady;
mod steady_opts;
pub mod table;
pub mod target;
mod target_opts;
pub mod units;
mod verify_opts;
pub mod verify_spec;
pub mod workload_opts;
mod workload_set;
pub mod zones;
mod zones_opts;

#[cfg(any(test, feature = "testing"))]
pub use error::JobError;
#[cfg(any(test, feature = "testing"))]
pub use ini::{Keywords, ParseCtx};
#[cfg(any(test, feature = "testing"))]
pub use plan::{
    OptionNote, OutputFormat, OutputFormats, RunPlan, parse_job_file_str, parse_run_args,
    parse_run_args_with,
};
pub use spec::*;

/// fio options iolab deliberately lacks, each with the reason (docs/fio-compat.md).
#[cfg(any(test, feature = "testing"))]
pub fn describe_unsupported() -> Vec<(&'static str, &'static str)> {
    options::unsupported_options()
}
