//! `iolab topology`: CPUs, cores and SMT siblings as iolab sees them; with `--pid`,
//! which threads of a process the polling predictor calls P or C tasks.

use std::path::PathBuf;
use std::time::Duration;

use super::predictor::Predictor;
use super::procsignal::{ProcSampler, threads_of};
use super::topology::Topology;

#[derive(clap::Args, Debug)]
pub struct TopologyArgs {
    /// Read a topology file (`packages=1 cores=4 threads=2`, `core LIST` lines, or
    /// this command's --json output) instead of this machine's sysfs.
    #[arg(long, value_name = "FILE")]
    pub topology: Option<PathBuf>,
    /// Print JSON (which --topology accepts back).
    #[arg(long)]
    pub json: bool,
    /// Classify the threads of this process as P (polling) or C tasks with the
    /// 2-bit predictor, from /proc (see docs/placement.md for what it can see).
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
    /// Predictor interval for --pid, in milliseconds.
    #[arg(long, default_value_t = 200, value_name = "MS")]
    pub interval_ms: u64,
    /// Number of intervals to watch for --pid.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub intervals: u32,
}

pub fn main(args: TopologyArgs) -> anyhow::Result<u8> {
    let topo = match &args.topology {
        Some(p) => Topology::from_file(p)?,
        None => Topology::from_system()?,
    };
    if let Some(pid) = args.pid {
        anyhow::ensure!(
            args.interval_ms >= 10,
            "--interval-ms={}: use at least 10 ms (CPU time is charged in clock ticks)",
            args.interval_ms
        );
        anyhow::ensure!(args.intervals >= 1, "--intervals must be at least 1");
        return classify(
            pid,
            Duration::from_millis(args.interval_ms),
            args.intervals,
            args.json,
        );
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&topo)?);
    } else {
        print!("{topo}");
    }
    Ok(0)
}

#[derive(serde::Serialize)]
struct ThreadClass {
    tid: u32,
    name: String,
    predictor: u8,
    class: char,
    last: Option<super::procsignal::ProcVerdict>,
}

fn classify(pid: u32, interval: Duration, n: u32, json: bool) -> anyhow::Result<u8> {
    let mut threads = Vec::new();
    for tid in threads_of(pid)? {
        // A thread that exits before the first sample is simply not listed.
        if let Ok(s) = ProcSampler::new(pid, tid) {
            threads.push((s, Predictor::new(), None));
        }
    }
    anyhow::ensure!(!threads.is_empty(), "--pid {pid}: no threads to watch");
    for _ in 0..n {
        std::thread::sleep(interval);
        for (s, p, last) in threads.iter_mut() {
            if let Ok(v) = s.sample() {
                p.observe(v.polled);
                *last = Some(v);
            }
        }
    }
    let out: Vec<ThreadClass> = threads
        .iter()
        .map(|(s, p, last)| ThreadClass {
            tid: s.tid,
            name: std::fs::read_to_string(format!("/proc/{pid}/task/{}/comm", s.tid))
                .map(|c| c.trim().to_string())
                .unwrap_or_default(),
            predictor: p.value(),
            class: p.kind().letter(),
            last: *last,
        })
        .collect();
    if json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(0);
    }
    println!(
        "{:<8} {:<16} {:<5} {:<9} {:>6} {:>8} {:>9} {:>6}",
        "tid", "name", "class", "predictor", "on-cpu", "vol/s", "io calls", "sys%"
    );
    for t in &out {
        let (cpu, vol, io, sys) = match &t.last {
            Some(v) => (
                format!("{:.0}%", v.on_cpu * 100.0),
                format!("{:.0}", v.voluntary_per_s),
                v.io_calls.map_or("-".into(), |n| n.to_string()),
                v.sys_share
                    .map_or("-".into(), |s| format!("{:.0}", s * 100.0)),
            ),
            None => ("-".into(), "-".into(), "-".into(), "-".into()),
        };
        println!(
            "{:<8} {:<16} {:<5} {:<9} {:>6} {:>8} {:>9} {:>6}",
            t.tid, t.name, t.class, t.predictor, cpu, vol, io, sys
        );
    }
    Ok(0)
}
