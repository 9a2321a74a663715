//! `iolab probe TARGET`: the command's arguments and entry (every command has
//! its `cli.rs` with `Args` and `main`; ARCHITECTURE.md).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use super::{render, run};

#[derive(clap::Args, Debug, Clone)]
#[command(
    about = "What a device or file supports, and which completion model pays there (measured)",
    long_about = "Probe TARGET (a block device, a regular file, or a directory where a temp \
file is laid out and removed afterwards): its capabilities and their consequences, QD1 4 KiB \
random-read latency and CPU cost under each completion model that can work there, this \
machine's wakeup and clock cost, and a recommendation with its reason. Reads only, unless \
--write. See docs/probe.md."
)]
pub struct ProbeArgs {
    /// Block device, regular file, or directory to probe.
    pub target: PathBuf,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Seconds measured per completion model (e.g. 0.2, 1, 5).
    #[arg(long, default_value = "1", value_parser = parse_runtime, value_name = "SECONDS")]
    pub runtime: Duration,
    /// Also measure 4 KiB random writes (overwrites data in a file target; a block
    /// device only when the safety check finds nothing on it).
    #[arg(long)]
    pub write: bool,
}

/// A `--runtime` value that is not a usable number of seconds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
    #[error("'{0}' is not a number of seconds; e.g. --runtime 0.5")]
    NotANumber(String),
    #[error("{0} s is outside 0.01..3600 seconds; the probe measures each model this long")]
    OutOfRange(String),
}

/// Seconds, fractional allowed, between 10 ms and one hour.
pub fn parse_runtime(s: &str) -> Result<Duration, RuntimeError> {
    let v: f64 = s
        .trim()
        .trim_end_matches('s')
        .parse()
        .map_err(|_| RuntimeError::NotANumber(s.to_string()))?;
    if !v.is_finite() || !(0.01..=3600.0).contains(&v) {
        return Err(RuntimeError::OutOfRange(s.to_string()));
    }
    Ok(Duration::from_secs_f64(v))
}

/// `iolab probe` entry point: run, print, exit code 0 (errors bubble up).
pub fn main(args: ProbeArgs) -> Result<u8> {
    crate::sys::cleanup::install_signal_handlers(crate::sys::cleanup::SecondSignal::UndoAndExit)?;
    let result = run(&args);
    for f in crate::sys::cleanup::run_cleanups() {
        eprintln!("iolab: cleanup: {f}");
    }
    let report = result?;
    if args.json {
        println!("{}", render::json(&report)?);
    } else {
        print!("{}", render::text(&report));
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_accepts_seconds_and_refuses_nonsense() {
        assert_eq!(parse_runtime("0.2").unwrap(), Duration::from_millis(200));
        assert_eq!(parse_runtime("2s").unwrap(), Duration::from_secs(2));
        assert!(
            parse_runtime("0")
                .unwrap_err()
                .to_string()
                .contains("0.01..3600")
        );
        assert!(parse_runtime("-1").is_err());
        assert!(
            parse_runtime("fast")
                .unwrap_err()
                .to_string()
                .contains("not a number")
        );
        assert!(parse_runtime("NaN").is_err());
    }
}
