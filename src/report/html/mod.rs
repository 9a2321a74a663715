//! The HTML report: one self-contained file (inline CSS and SVG, no script,
//! no network) for `iolab lab` results, for `iolab run --report`, and for
//! `iolab report RESULTS.json...` which re-renders saved lab results.
//!
//! `shell` is the page every report shares; `lab` and `run` are the two
//! views; `command` is `iolab report`.
//!
//! Everything that comes from results (names, labels, notes) is user input as
//! far as this module knows and is escaped on the way out.

mod command;
mod lab;
mod run;
mod shell;

pub use command::{ReportArgs, load_results, report_main};
pub use lab::{LabSet, render_lab_html, render_lab_set_html};
pub use run::render_run_html;
pub use shell::write_index;
