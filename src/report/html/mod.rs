//! The HTML report: one self-contained file (inline CSS and SVG, no script,
//! no network) for `iolab lab` results, for `iolab run --report`, and for
//! `iolab report RESULTS.json...` which re-renders saved lab results.
//!
//! `shell` is the page every report shares; `lab` and `run` are the two
//! views; `load` reads saved lab results back for `iolab report`.
//!
//! Everything that comes from results (names, labels, notes) is user input as
//! far as this module knows and is escaped on the way out.

mod lab;
mod load;
mod logs;
mod run;
mod shell;

pub use lab::{LabSet, render_lab_html, render_lab_set_html};
pub use load::{LoadError, load_results};
pub use run::render_run_html;
pub use shell::{WriteError, write_index};
// The page shell, shared with the fleet view (`report::fleet_html`).
pub(crate) use shell::{anchor, data_table, figure, fmt_num, or_unknown, page_close, page_open};
