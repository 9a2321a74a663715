//! A run reduced to the handful of numbers studies and `iolab probe` compare:
//! IOPS, latency percentiles, CPU per I/O, sleeps, context switches.

use crate::engine::error::{EngineError, Result};

use super::{EngineOptions, JobRun, run_jobs};
use crate::job::JobSpec;

/// One job's outcome, reduced.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Measured {
    pub name: String,
    pub ios: u64,
    pub iops: f64,
    pub bw_mib_s: f64,
    pub lat_mean_ns: f64,
    pub lat_p50_ns: u64,
    pub lat_p99_ns: u64,
    pub clat_p50_ns: u64,
    /// CPU time of the worker thread per I/O (user + system), ns.
    pub cpu_ns_per_io: f64,
    /// Worker CPU time / wall time (1.0 = one core busy).
    pub cpu_util: f64,
    pub ctx_per_io: f64,
    pub sleeps: u64,
    pub polls_empty: u64,
    pub polls_hit: u64,
    pub spin_ns: u64,
    /// Requests punted to io-wq, when counted (`count_punts=1`).
    pub punted: Option<u64>,
    pub runtime_s: f64,
    pub model: String,
    pub adaptive: Vec<String>,
    /// The model adaptive settled on for the run's most frequent size class
    /// ("sync" when it performed requests inline); empty for other models.
    pub adaptive_choice: String,
}

impl Measured {
    pub fn from_run(name: &str, r: &JobRun) -> Measured {
        let mut ios = 0;
        let mut bytes = 0;
        let mut lat = crate::measure::recorder::LatHist::new();
        let mut clat = crate::measure::recorder::LatHist::new();
        for d in &r.rec.dirs[..2] {
            ios += d.total_ios;
            bytes += d.io_bytes;
            lat.merge(&d.lat);
            clat.merge(&d.clat);
        }
        let secs = r.runtime_ns as f64 / 1e9;
        let cpu_ns = (r.cpu.user_ns + r.cpu.sys_ns) as f64 / r.worker_streams.max(1) as f64;
        Measured {
            name: name.to_string(),
            ios,
            iops: if secs > 0.0 { ios as f64 / secs } else { 0.0 },
            bw_mib_s: if secs > 0.0 {
                bytes as f64 / secs / (1 << 20) as f64
            } else {
                0.0
            },
            lat_mean_ns: lat.mean(),
            lat_p50_ns: lat.percentile(50.0),
            lat_p99_ns: lat.percentile(99.0),
            clat_p50_ns: clat.percentile(50.0),
            cpu_ns_per_io: if ios > 0 {
                cpu_ns / ios as f64
            } else {
                f64::NAN
            },
            cpu_util: if r.runtime_ns > 0 {
                cpu_ns / r.runtime_ns as f64
            } else {
                0.0
            },
            ctx_per_io: if ios > 0 {
                r.cpu.ctx() as f64 / ios as f64
            } else {
                f64::NAN
            },
            sleeps: r.completion.sleeps,
            polls_empty: r.completion.polls_empty,
            polls_hit: r.completion.polls_hit,
            spin_ns: r.completion.spin_ns,
            punted: r.backend_stats.punted,
            runtime_s: secs,
            model: r.model.name().to_string(),
            adaptive: r
                .adaptive
                .iter()
                .filter(|d| d.samples > 0)
                .map(|d| format!("{} B: {} ({})", d.size_class, d.model.name(), d.why))
                .collect(),
            adaptive_choice: r
                .adaptive
                .iter()
                .max_by_key(|d| d.samples)
                .map(|d| d.model.name().to_string())
                .unwrap_or_default(),
        }
    }
}

/// Run jobs (all in one group unless they say `stonewall`) and reduce each clone.
pub fn run(jobs: &[JobSpec]) -> Result<Vec<(usize, JobRun)>> {
    let groups = run_jobs(jobs, &EngineOptions::default())?;
    let mut out = Vec::new();
    for g in groups {
        for j in g.jobs {
            if let Some(e) = &j.error {
                return Err(EngineError::JobFailed(e.clone()));
            }
            out.push((j.job, j));
        }
    }
    if crate::sys::cleanup::stop_requested() {
        return Err(EngineError::Interrupted);
    }
    Ok(out)
}

/// Run one job; its clones are summed (IOPS) and their latencies merged.
pub fn measure(job: JobSpec) -> Result<Measured> {
    let name = job.name.clone();
    let runs = run(std::slice::from_ref(&job))?;
    let mut total: Option<Measured> = None;
    let mut lat_hist = crate::measure::recorder::LatHist::new();
    let mut cpu_ns = 0.0;
    for (_, r) in &runs {
        for d in &r.rec.dirs[..2] {
            lat_hist.merge(&d.lat);
        }
        let m = Measured::from_run(&name, r);
        cpu_ns += m.cpu_ns_per_io * m.ios as f64;
        total = Some(match total {
            None => m,
            Some(mut t) => {
                t.ios += m.ios;
                t.iops += m.iops;
                t.bw_mib_s += m.bw_mib_s;
                t.sleeps += m.sleeps;
                t.polls_empty += m.polls_empty;
                t.polls_hit += m.polls_hit;
                t.spin_ns += m.spin_ns;
                t.cpu_util += m.cpu_util;
                t
            }
        });
    }
    let mut t = total.unwrap_or_default();
    if runs.len() > 1 {
        t.lat_mean_ns = lat_hist.mean();
        t.lat_p50_ns = lat_hist.percentile(50.0);
        t.lat_p99_ns = lat_hist.percentile(99.0);
        t.cpu_ns_per_io = if t.ios > 0 {
            cpu_ns / t.ios as f64
        } else {
            f64::NAN
        };
    }
    Ok(t)
}
