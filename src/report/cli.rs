//! `iolab report RESULTS.json... [--out DIR]`: the command's arguments and entry
//! (every command has its `cli.rs` with `Args` and `main`; ARCHITECTURE.md).

use std::path::PathBuf;

use anyhow::Result;

use crate::report::html::{LabSet, load_results, render_lab_set_html, write_index};

/// `iolab report`: render saved `iolab lab` results (`results.json`) as HTML.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// results.json files written by `iolab lab` (or directories holding one);
    /// several are joined into one report.
    #[arg(
        required_unless_present = "fleet",
        conflicts_with = "fleet",
        value_name = "RESULTS.json"
    )]
    pub files: Vec<PathBuf>,
    /// A fleet directory (one subdirectory per host, as deploy/ansible fetches
    /// them): render the fleet view comparing the hosts (docs/fleet.md).
    #[arg(long, value_name = "DIR")]
    pub fleet: Option<PathBuf>,
    /// Directory to write index.html into (created if missing).
    #[arg(long, default_value = "iolab-report")]
    pub out: PathBuf,
}

/// `iolab report RESULTS.json... --out DIR` or `iolab report --fleet DIR --out DIR`.
pub fn main(args: ReportArgs) -> Result<u8> {
    if let Some(dir) = &args.fleet {
        let fleet = crate::report::fleet::load_fleet(dir)?;
        let html = crate::report::html::render_fleet_html(&fleet);
        let path = write_index(&args.out, &html)?;
        println!(
            "fleet report: {} ({} hosts)",
            path.display(),
            fleet.hosts.len()
        );
        return Ok(0);
    }
    let mut loaded = Vec::with_capacity(args.files.len());
    for f in &args.files {
        loaded.push((f.display().to_string(), load_results(f)?));
    }
    let set = LabSet {
        sources: loaded.iter().map(|(n, r)| (n.clone(), r)).collect(),
    };
    let path = write_index(&args.out, &render_lab_set_html(&set))?;
    println!("report: {}", path.display());
    Ok(0)
}
