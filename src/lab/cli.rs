//! `iolab lab [STUDY...]`: run the studies on embedded defaults, write
//! `results.json` and `index.html` to `--out`, print a terminal summary.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::registry::{self, LabContext, STUDIES, Study};
use crate::report::study::{LabResults, Machine, Skipped};

#[derive(clap::Args, Debug)]
pub struct LabArgs {
    /// Studies to run (default: all); the list is the study registry's.
    #[arg(help = studies_help())]
    pub studies: Vec<String>,
    /// Short runs (CI): the whole lab in about two minutes.
    #[arg(long)]
    pub quick: bool,
    /// Where to write index.html and results.json.
    #[arg(long, default_value = "iolab-report")]
    pub out: PathBuf,
    /// Print the results as JSON on stdout instead of the text summary.
    #[arg(long)]
    pub json: bool,
    /// Placement study: also show where every policy and the balancer would put
    /// the tasks on this topology file (`packages=1 cores=4 threads=2`, `core
    /// LIST` lines, or `iolab topology --json` output). Measurements still run on
    /// this machine.
    #[arg(long, value_name = "FILE")]
    pub topology: Option<PathBuf>,
}

/// `STUDIES`' help line: every study's name and subject, from the registry.
fn studies_help() -> String {
    let list: Vec<String> = STUDIES
        .iter()
        .map(|s| format!("{} ({})", s.name(), s.about()))
        .collect();
    format!("Studies to run (default: all): {}", list.join(", "))
}

pub fn main(a: LabArgs) -> Result<u8> {
    for s in &a.studies {
        if registry::find(s).is_none() {
            bail!("unknown study '{s}'; valid studies: {}", registry::names());
        }
    }
    if a.topology.is_some() && !a.studies.is_empty() && !a.studies.iter().any(|s| s == "placement")
    {
        bail!(
            "--topology is a what-if machine for the placement study, which is not among \
             the studies chosen ({}): add `placement`",
            a.studies.join(", ")
        );
    }
    if let Some(t) = &a.topology {
        // Read it now: a bad file should stop the lab before any study runs.
        crate::placement::Topology::from_file(t)?;
    }
    crate::sys::cleanup::install_signal_handlers(crate::sys::cleanup::SecondSignal::UndoAndExit)?;
    let mut chosen: Vec<&dyn Study> = STUDIES
        .iter()
        .copied()
        .filter(|st| a.studies.is_empty() || a.studies.iter().any(|s| s == st.name()))
        .collect();
    // A stable sort: registry order, with the studies that must run last last.
    chosen.sort_by_key(|st| st.runs_last());
    let cx = LabContext {
        quick: a.quick,
        topology: a.topology.as_deref(),
    };
    let progress = std::io::stderr().is_terminal();
    let mut results = LabResults {
        schema_version: crate::report::study::LAB_SCHEMA_VERSION.to_string(),
        iolab_version: env!("CARGO_PKG_VERSION").to_string(),
        machine: machine(),
        quick: a.quick,
        ..Default::default()
    };
    for (i, study) in chosen.iter().enumerate() {
        let name = study.name();
        if crate::sys::cleanup::stop_requested() {
            results.not_run.push(Skipped {
                part: name.to_string(),
                reason: "interrupted".into(),
            });
            continue;
        }
        let t0 = Instant::now();
        let status = crate::engine::progress::StatusLine::start(
            format!("[{}/{}] {name}", i + 1, chosen.len()),
            Some(study.expected(a.quick)),
        );
        // The report files the result under the registry's name and seed.
        let outcome = study.run(&cx).map(|mut r| {
            r.id = name.to_string();
            r.seed = study.seed().to_string();
            r
        });
        drop(status);
        if progress {
            eprint!("[{}/{}] {name}", i + 1, chosen.len());
        }
        match outcome {
            Ok(r) => {
                if progress {
                    eprintln!(" done in {:.1} s", t0.elapsed().as_secs_f64());
                }
                results.studies.push(r);
            }
            Err(e) => {
                if progress {
                    eprintln!(" not run");
                }
                results.not_run.push(Skipped {
                    part: name.to_string(),
                    reason: format!("{e:#}"),
                });
            }
        }
    }
    for f in crate::sys::cleanup::run_cleanups() {
        eprintln!("iolab: cleanup: {f}");
    }
    results.studies.sort_by(|a, b| a.seed.cmp(&b.seed));
    std::fs::create_dir_all(&a.out).with_context(|| format!("--out {}", a.out.display()))?;
    let json = serde_json::to_string_pretty(&results)?;
    let json_path = a.out.join("results.json");
    std::fs::write(&json_path, &json)
        .with_context(|| format!("writing {}", json_path.display()))?;
    let html =
        crate::report::html::write_index(&a.out, &crate::report::html::render_lab_html(&results))?;
    if a.json {
        println!("{json}");
    } else {
        print!("{}", summary(&results));
        println!(
            "report: {}\nresults: {}",
            html.display(),
            json_path.display()
        );
    }
    Ok(if results.studies.is_empty() { 1 } else { 0 })
}

/// The terminal summary: every study's text view, then what did not run.
pub fn summary(r: &LabResults) -> String {
    let m = &r.machine;
    let mut s = format!(
        "iolab {} lab on {} ({}, {} CPUs, {}), {}\n\n",
        r.iolab_version,
        m.hostname,
        m.cpu_model,
        m.cpus,
        m.kernel,
        if r.quick { "quick" } else { "full" }
    );
    for st in &r.studies {
        s += &st.render_text();
        s.push('\n');
    }
    for n in &r.not_run {
        s += &format!("study {} not run: {}\n", n.part, n.reason);
    }
    s
}

/// Facts about this machine for the report header.
pub fn machine() -> Machine {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let cpu_model = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let mem_kib: f64 = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0.0);
    let date = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| crate::report::model::ctime(d.as_secs() as i64))
        .unwrap_or_default();
    Machine {
        hostname: read("/proc/sys/kernel/hostname"),
        kernel: read("/proc/sys/kernel/osrelease"),
        cpu_model,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_gib: mem_kib / (1024.0 * 1024.0),
        root: crate::sys::is_root(),
        clock_cost_ns: crate::measure::clock::self_check().cost_ns,
        wakeup_cost_ns: crate::measure::calibration::wakeup_cost_ns(),
        date,
    }
}
