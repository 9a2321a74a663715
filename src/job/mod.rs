//! The fio option language: job files, command-line options, units, errors.

pub mod spec;
pub use spec::*;
