//! The front door: what a program embedding iolab needs, re-exported at the
//! crate root. Build jobs with fio's option names ([`Job`]) or read fio job
//! text ([`Jobs`]), run them and get the typed result ([`RunResult`]); probe a
//! target ([`probe()`]); observe a command ([`observe_command`]). Every call
//! fails with one [`Error`].
//!
//! What the front door promises an embedder: the engine clock initialises
//! itself on first use; no signal handler is installed and the process never
//! exits on iolab's account (the `iolab` command line installs its own
//! SIGINT/SIGTERM policy at its edge); each call undoes what it changed on the
//! machine before it returns.

mod error;
mod job;
mod observe;
mod probe;
mod run;
pub mod schema;

pub use error::{Error, Result};
pub use job::{Job, Jobs};
pub use observe::{Observation, observe_command};
pub use probe::{ProbeOptions, probe};
pub use run::{RunOptions, Summary};
