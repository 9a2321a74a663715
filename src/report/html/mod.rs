//! The HTML report: one self-contained file (inline CSS and SVG, no script,
//! no network) for `iolab lab` results, for `iolab run --report`, and for
//! `iolab report RESULTS.json...` which re-renders saved lab results.
//!
//! `shell` is the page every report shares; `lab`, `run` and `fleet` are the
//! views (`fleet` for `iolab report --fleet DIR`); `logs` the run view's log
//! charts. Saved lab results are read back by `report::load` (re-exported
//! here), and text is escaped by `report::escape`, which the SVG charts share.
//!
//! Everything that comes from results (names, labels, notes) is user input as
//! far as this module knows and is escaped on the way out.

mod fleet;
mod lab;
mod logs;
mod run;
mod shell;

#[cfg(any(test, feature = "testing"))]
pub use crate::report::escape::escape;
#[cfg(any(test, feature = "testing"))]
pub use crate::report::load::LoadError;
pub use crate::report::load::load_results;
#[cfg(any(test, feature = "testing"))]
pub use fleet::fleet_charts;
pub use fleet::render_fleet_html;
pub use lab::{LabSet, render_lab_html, render_lab_set_html};
pub use run::render_run_html;
#[cfg(any(test, feature = "testing"))]
pub use shell::WriteError;
pub use shell::write_index;
// The page shell, shared with `iolab compare`'s page.
pub(crate) use shell::{anchor, page_close, page_open};
