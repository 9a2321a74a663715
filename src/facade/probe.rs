//! Probing a target: what `iolab probe` measures, as a typed report.

use std::path::Path;
use std::time::Duration;

use crate::probe::{ProbeArgs, ProbeReport};

use super::error::Result;

/// What to measure when probing (`iolab probe`'s flags).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProbeOptions {
    /// Time measured per completion model (10 ms to one hour; default 1 s).
    pub runtime: Duration,
    /// Also measure 4 KiB random writes (overwrites data in a file target; a
    /// block device only when the safety check finds nothing on it).
    pub write: bool,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            runtime: Duration::from_secs(1),
            write: false,
        }
    }
}

/// Probe `target` (a block device, a regular file, or a directory where a
/// temporary file is laid out and removed afterwards): its capabilities and
/// their consequences, QD1 4 KiB random-read latency and CPU cost under each
/// completion model that can work there, and a recommendation with its reason.
///
/// ```no_run
/// let report = iolab::probe("/tmp", &iolab::ProbeOptions::default())?;
/// println!("{}", serde_json::to_string_pretty(&report).unwrap());
/// # Ok::<(), iolab::Error>(())
/// ```
pub fn probe(target: impl AsRef<Path>, opts: &ProbeOptions) -> Result<ProbeReport> {
    crate::measure::clock::init();
    let secs = opts.runtime.as_secs_f64();
    crate::probe::cli::parse_runtime(&format!("{secs}"))?;
    let args = ProbeArgs {
        target: target.as_ref().to_path_buf(),
        json: false,
        runtime: opts.runtime,
        write: opts.write,
    };
    // What the probe changes (a temporary file, a thread's CPUs) is undone
    // by its guards before this returns.
    Ok(crate::probe::run(&args)?)
}
