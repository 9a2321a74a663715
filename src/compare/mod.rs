//! `iolab compare`: did a change make it faster? Two sides of run results
//! (iolab's or fio's JSON; one file or one per round; fleet directories),
//! matched job by job, each metric judged with a named test, rendered as
//! text, JSON and an HTML page, and gated for CI with `--fail-if`.
//!
//! `load` reads a side, `analyze` reaches the verdicts (with `stats`), `gate`
//! applies `--fail-if`, `run` runs interleaved A/B rounds, `fleet` pairs up
//! hosts, `text` and `html` render `model`'s [`model::Report`].

pub mod analyze;
pub mod cli;
pub mod fleet;
pub mod gate;
pub mod html;
pub mod load;
pub mod model;
pub mod run;
pub mod stats;
pub mod text;
