//! Study 001: where should pollers run? C tasks (built-in compute co-runners) and P
//! tasks (QD1 pollers on the null device) under each placement this machine's
//! topology allows, against the study's published figures.
//!
//! Experiments, as in the study:
//! - alone: each C kernel by itself, and one P task by itself (the baselines);
//! - cross-core (2.1): two physical cores, 2 C + 2 P, bunch vs scatter vs free;
//! - in-core (2.2): one physical core, 2 C + 2 P, colocate vs spread (SMT only);
//! - balancer (4): every logical CPU gets one C and one P task on average;
//!   best (the balancer's target computed directly), worst (bunch), free, and the
//!   proposed balancer running live: the predictor classifies the threads from
//!   their poll counters every interval and [`balance::step`] migrations are
//!   applied with sched_setaffinity.

pub mod ptask;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::device::null::NullDevice;
use crate::job::spec::NullParams;
use crate::measure::clock::now_ns;
use crate::placement::affinity::AffinityGuard;
use crate::placement::balance;
use crate::placement::corunner::{CoRunner, CoRunnerReport, Kernel};
use crate::placement::predictor::{Predictor, SignalSampler, TaskKind};
use crate::placement::topology::{Core, Topology, format_cpu_list};
use crate::placement::{Policy, place};
use crate::report::chart::{Chart, ChartKind, Series};
use crate::report::study::{Cell, Comparison, Skipped, StudyResult, Table};
use ptask::{PTask, PTaskIo, PTaskReport};

/// Published: Scatter over Bunch, C task performance (avg / max), section 2.1.
pub const PUB_SCATTER_VS_BUNCH_AVG: f64 = 17.0;
pub const PUB_SCATTER_VS_BUNCH_MAX: f64 = 21.9;
/// Published: Colocate over Spread, section 2.2.
pub const PUB_COLOCATE_VS_SPREAD: f64 = 9.09;
/// Published: proposed balancer over Free and over Worst, section 4.
pub const PUB_BALANCE_VS_FREE: f64 = 9.8;
pub const PUB_BALANCE_VS_WORST: f64 = 21.75;
/// Published: largest spread of P task latency across placements, section 4.
pub const PUB_P_SPREAD: f64 = 2.3;

#[derive(Clone, Debug)]
pub struct PlacementStudyOpts {
    /// CI mode: short runs (the whole study in well under 15 s).
    pub quick: bool,
    /// A what-if topology: show the placements every policy (and the balancer)
    /// would choose on it. Measurements always run on this machine.
    pub topology: Option<PathBuf>,
    /// Length of each measured run; default 0.4 s quick, 2 s otherwise.
    pub run_time: Option<Duration>,
    /// Null device service time for the P tasks' reads.
    pub null_lat: Duration,
    /// Balancer period (the study's balancer runs on the scheduler tick).
    pub balance_interval: Duration,
    pub kernels: Vec<Kernel>,
}

impl Default for PlacementStudyOpts {
    fn default() -> Self {
        PlacementStudyOpts {
            quick: false,
            topology: None,
            run_time: None,
            null_lat: Duration::from_micros(10),
            balance_interval: Duration::from_millis(50),
            kernels: vec![Kernel::Int, Kernel::Float],
        }
    }
}

/// One task's place in one run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TaskPlace {
    pub kind: TaskKind,
    /// Allowed CPUs at the end of the run.
    pub cpus: String,
}

/// The live balancer's log for one run.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct BalancerLog {
    pub ticks: u32,
    pub migrations: u32,
    /// Tick at which the predictor first called every P task a P task.
    pub classified_at_tick: Option<u32>,
    /// Tick after which no more migrations were needed.
    pub settled_at_tick: Option<u32>,
    /// The final placement is the study's best (even loads, P tasks even across
    /// cores, colocated within cores).
    pub reached_best: bool,
}

/// One measured run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PlacementRun {
    pub experiment: String,
    /// Placement label: a policy name, or `best` / `worst` / `proposed`.
    pub placement: String,
    pub kernel: Kernel,
    pub c_tasks: usize,
    pub p_tasks: usize,
    /// C throughput per task (mean), relative to the kernel running alone.
    pub c_norm: f64,
    /// C tasks' CPU time over wall time (mean): time-sharing shows here.
    pub c_cpu_share: f64,
    pub c_reports: Vec<CoRunnerReport>,
    pub p_lat_mean_us: f64,
    pub p_lat_p99_us: f64,
    /// IOPS per P task (mean).
    pub p_iops: f64,
    pub p_reports: Vec<PTaskReport>,
    pub tasks: Vec<TaskPlace>,
    pub balancer: Option<BalancerLog>,
}

/// The what-if placements for a topology file.
#[derive(Clone, Debug, serde::Serialize)]
pub struct WhatIf {
    pub topology: Topology,
    pub c_tasks: usize,
    pub p_tasks: usize,
    /// Per policy: allowed CPUs per task, or why the policy cannot run there.
    pub plans: Vec<(String, Result<Vec<String>, String>)>,
    pub balance_is_best: bool,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct PlacementStudyResult {
    pub topology: Topology,
    pub quick: bool,
    pub run_time_s: f64,
    pub null_lat_us: f64,
    /// Work units per second of each kernel alone.
    pub alone: Vec<(Kernel, f64)>,
    pub p_alone: PTaskReport,
    pub runs: Vec<PlacementRun>,
    pub comparisons: Vec<Comparison>,
    pub verdict: Vec<String>,
    pub skipped: Vec<Skipped>,
    pub whatif: Option<WhatIf>,
    pub duration_s: f64,
}

/// What one run produced: C reports, P reports, final places, balancer log.
type RunOut = (
    Vec<CoRunnerReport>,
    Vec<PTaskReport>,
    Vec<TaskPlace>,
    Option<BalancerLog>,
);

enum Task {
    C(CoRunner),
    P(PTask),
}

struct Setup<'a> {
    opts: &'a PlacementStudyOpts,
    run_ns: u64,
}

impl Setup<'_> {
    fn null_queue(&self, seed: u64) -> Result<Box<dyn crate::device::Queue>> {
        let params = NullParams {
            lat: self.opts.null_lat,
            ..NullParams::default()
        };
        Ok(Box::new(
            NullDevice::new(&params, 1 << 30, 1, seed).context("placement study: null device")?,
        ))
    }

    /// Start the tasks (kinds in order), place them with `cpus` (allowed CPUs per
    /// task), run, and collect. With `live` the proposed balancer runs on `topo`.
    fn run(
        &self,
        kernel: Kernel,
        kinds: &[TaskKind],
        cpus: &[Vec<u32>],
        live: Option<&Topology>,
    ) -> Result<RunOut> {
        let go = Arc::new(Barrier::new(kinds.len() + 1));
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::with_capacity(kinds.len());
        for (i, k) in kinds.iter().enumerate() {
            tasks.push(match k {
                TaskKind::Compute => Task::C(CoRunner::spawn(
                    kernel,
                    go.clone(),
                    stop.clone(),
                    self.run_ns,
                )?),
                TaskKind::Poll => Task::P(PTask::spawn(
                    self.null_queue(i as u64 + 1)?,
                    PTaskIo {
                        block_size: 4096,
                        span: 1 << 30,
                        max_ns: self.run_ns,
                    },
                    go.clone(),
                    stop.clone(),
                )?),
            });
        }
        let tids: Vec<i32> = tasks
            .iter()
            .map(|t| match t {
                Task::C(c) => c.tid(),
                Task::P(p) => p.tid(),
            })
            .collect();
        let mut guard = AffinityGuard::new();
        let mut placed: Vec<Vec<u32>> = cpus.to_vec();
        for (tid, c) in tids.iter().zip(cpus) {
            guard.apply(*tid, c)?;
        }
        // Every task's predictor sees its own poll counter; co-runners never poll.
        let mut samplers: Vec<SignalSampler> = tasks
            .iter()
            .map(|t| match t {
                Task::P(p) => SignalSampler::new(p.signal().clone()),
                Task::C(_) => SignalSampler::new(Default::default()),
            })
            .collect();
        let mut predictors = vec![Predictor::new(); kinds.len()];
        let t0 = now_ns();
        go.wait();
        let mut log = live.map(|_| BalancerLog::default());
        if let (Some(topo), Some(log)) = (live, log.as_mut()) {
            let tick = self.opts.balance_interval;
            while now_ns() - t0 < self.run_ns {
                std::thread::sleep(tick);
                log.ticks += 1;
                for (p, s) in predictors.iter_mut().zip(samplers.iter_mut()) {
                    p.observe(s.polled());
                }
                let classes: Vec<TaskKind> = predictors.iter().map(|p| p.kind()).collect();
                if log.classified_at_tick.is_none() && classes == kinds {
                    log.classified_at_tick = Some(log.ticks);
                }
                // Where each thread is now: its pinned CPU, or where Linux runs it.
                let mut cur = Vec::with_capacity(tids.len());
                for (tid, allowed) in tids.iter().zip(&placed) {
                    cur.push(match allowed.as_slice() {
                        [one] => *one,
                        _ => thread_cpu(*tid).unwrap_or(allowed[0]),
                    });
                }
                let moves = balance::balance(topo, &cur, &classes)?;
                let moved_any = !moves.is_empty();
                for m in &moves {
                    cur[m.task] = m.to;
                }
                // Pin every task once its class is known, even those that stay:
                // a task left unpinned could be moved by Linux behind our back.
                for (t, &cpu) in cur.iter().enumerate() {
                    if placed[t] != [cpu] {
                        guard.apply(tids[t], &[cpu])?;
                        placed[t] = vec![cpu];
                    }
                }
                log.migrations += moves.len() as u32;
                if moved_any {
                    log.settled_at_tick = None;
                } else if log.settled_at_tick.is_none() {
                    log.settled_at_tick = Some(log.ticks);
                }
                log.reached_best = balance::is_best(topo, &cur, kinds);
            }
        } else {
            std::thread::sleep(Duration::from_nanos(self.run_ns));
        }
        stop.store(true, Ordering::Relaxed);
        let mut cr = Vec::new();
        let mut pr = Vec::new();
        for t in tasks {
            match t {
                Task::C(c) => cr.push(c.join()?),
                Task::P(p) => pr.push(p.join()?),
            }
        }
        guard.restore()?;
        let places = kinds
            .iter()
            .zip(&placed)
            .map(|(k, c)| TaskPlace {
                kind: *k,
                cpus: format_cpu_list(c),
            })
            .collect();
        Ok((cr, pr, places, log))
    }
}

/// CPU a thread of this process last ran on (/proc/self/task/TID/stat field 39).
fn thread_cpu(tid: i32) -> Option<u32> {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 1..];
    rest.split_whitespace().nth(36)?.parse().ok()
}

fn sub_topology(topo: &Topology, cores: &[Core]) -> Topology {
    Topology {
        source: format!("{} (cores {})", topo.source, cores.len()),
        packages: 1,
        cores: cores.to_vec(),
        offline: Vec::new(),
    }
}

fn kinds_of(c: usize, p: usize) -> Vec<TaskKind> {
    let mut v = vec![TaskKind::Compute; c];
    v.extend(vec![TaskKind::Poll; p]);
    v
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (mut s, mut n) = (0.0, 0usize);
    for x in v {
        s += x;
        n += 1;
    }
    if n == 0 { f64::NAN } else { s / n as f64 }
}

fn gain_pct(a: f64, b: f64) -> f64 {
    (a / b - 1.0) * 100.0
}

/// The placements `topo` allows for `c` C tasks and `p` P tasks.
pub fn what_if(topo: &Topology, c: usize, p: usize) -> WhatIf {
    let kinds = kinds_of(c, p);
    let mut plans = Vec::new();
    let mut balance_is_best = false;
    for pol in Policy::ALL {
        let r = place(pol, topo, &kinds)
            .map(|plan| {
                if pol == Policy::Balance
                    && let Some(single) = plan.single_cpus()
                {
                    balance_is_best = balance::is_best(topo, &single, &kinds);
                }
                plan.cpus.iter().map(|c| format_cpu_list(c)).collect()
            })
            .map_err(|e| e.to_string());
        plans.push((pol.name().to_string(), r));
    }
    WhatIf {
        topology: topo.clone(),
        c_tasks: c,
        p_tasks: p,
        plans,
        balance_is_best,
    }
}

pub fn run_placement_study(opts: &PlacementStudyOpts) -> Result<PlacementStudyResult> {
    let started = Instant::now();
    anyhow::ensure!(
        !opts.kernels.is_empty(),
        "placement study: no co-runner kernels given (valid: int, float)"
    );
    anyhow::ensure!(
        !opts.balance_interval.is_zero(),
        "placement study: balance interval must be > 0"
    );
    let whatif = match &opts.topology {
        Some(p) => {
            let t = Topology::from_file(p)?;
            let n = t.num_cpus();
            Some(what_if(&t, n, n))
        }
        None => None,
    };
    let topo = Topology::from_system()?;
    let run_time = opts.run_time.unwrap_or(if opts.quick {
        Duration::from_millis(400)
    } else {
        Duration::from_secs(2)
    });
    let su = Setup {
        opts,
        run_ns: run_time.as_nanos() as u64,
    };
    let mut skipped = Vec::new();
    let first = topo.cpus()[0];

    // Baselines: each kernel alone, one P task alone, pinned to the first CPU.
    let mut alone = Vec::new();
    for &k in &opts.kernels {
        let (cr, ..) = su.run(k, &[TaskKind::Compute], &[vec![first]], None)?;
        alone.push((k, cr[0].units_per_s));
    }
    let (_, pr, ..) = su.run(opts.kernels[0], &[TaskKind::Poll], &[vec![first]], None)?;
    let p_alone = pr[0];

    let mut runs = Vec::new();
    let record = |runs: &mut Vec<PlacementRun>,
                  exp: &str,
                  label: &str,
                  k: Kernel,
                  kinds: &[TaskKind],
                  out: RunOut| {
        let (cr, pr, tasks, balancer) = out;
        let base = alone
            .iter()
            .find(|(x, _)| *x == k)
            .map_or(f64::NAN, |a| a.1);
        runs.push(PlacementRun {
            experiment: exp.to_string(),
            placement: label.to_string(),
            kernel: k,
            c_tasks: kinds.iter().filter(|x| **x == TaskKind::Compute).count(),
            p_tasks: kinds.iter().filter(|x| **x == TaskKind::Poll).count(),
            c_norm: mean(cr.iter().map(|r| r.units_per_s / base)),
            c_cpu_share: mean(cr.iter().map(|r| r.cpu_ns as f64 / r.elapsed_ns as f64)),
            p_lat_mean_us: mean(pr.iter().map(|r| r.lat_mean_ns / 1e3)),
            p_lat_p99_us: mean(pr.iter().map(|r| r.lat_p99_ns as f64 / 1e3)),
            p_iops: mean(pr.iter().map(|r| r.iops)),
            c_reports: cr,
            p_reports: pr,
            tasks,
            balancer,
        });
    };

    // 2.1 cross-core: two physical cores, 2 C + 2 P.
    if topo.cores.len() >= 2 {
        let t2 = sub_topology(&topo, &topo.cores[..2]);
        let kinds = kinds_of(2, 2);
        for &k in &opts.kernels {
            for pol in [Policy::Bunch, Policy::Scatter, Policy::Free] {
                let plan = place(pol, &t2, &kinds)?;
                let out = su.run(k, &kinds, &plan.cpus, None)?;
                record(&mut runs, "cross-core", pol.name(), k, &kinds, out);
            }
        }
    } else {
        skipped.push(Skipped {
            part: "cross-core (bunch/scatter/free)".into(),
            reason: format!("needs two physical cores; {} has one", topo.source),
        });
    }

    // 2.2 in-core: one physical core with SMT, 2 C + 2 P.
    if let Some(core) = topo.cores.iter().find(|c| c.cpus.len() >= 2) {
        let t1 = sub_topology(&topo, std::slice::from_ref(core));
        let kinds = kinds_of(2, 2);
        for &k in &opts.kernels {
            for pol in [Policy::Colocate, Policy::Spread] {
                let plan = place(pol, &t1, &kinds)?;
                let out = su.run(k, &kinds, &plan.cpus, None)?;
                record(&mut runs, "in-core", pol.name(), k, &kinds, out);
            }
        }
    } else {
        skipped.push(Skipped {
            part: "in-core (colocate vs spread)".into(),
            reason: Policy::Colocate
                .refusal(&topo)
                .unwrap_or_else(|| "no core with two online logical CPUs".into()),
        });
    }

    // 4 balancer: one C and one P task per logical CPU.
    let n = topo.num_cpus();
    let kinds = kinds_of(n, n);
    let best_pol = if topo.has_smt() {
        Policy::Colocate
    } else {
        Policy::Scatter
    };
    for &k in &opts.kernels {
        for (label, pol) in [
            ("best", best_pol),
            ("worst", Policy::Bunch),
            ("free", Policy::Free),
        ] {
            let plan = place(pol, &topo, &kinds)?;
            let out = su.run(k, &kinds, &plan.cpus, None)?;
            record(&mut runs, "balancer", label, k, &kinds, out);
        }
        let free = place(Policy::Free, &topo, &kinds)?;
        let out = su.run(k, &kinds, &free.cpus, Some(&topo))?;
        record(&mut runs, "balancer", "proposed", k, &kinds, out);
    }

    let (comparisons, verdict) = compare(&runs, &topo, &p_alone);
    Ok(PlacementStudyResult {
        topology: topo,
        quick: opts.quick,
        run_time_s: run_time.as_secs_f64(),
        null_lat_us: opts.null_lat.as_secs_f64() * 1e6,
        alone,
        p_alone,
        runs,
        comparisons,
        verdict,
        skipped,
        whatif,
        duration_s: started.elapsed().as_secs_f64(),
    })
}

fn find<'a>(
    runs: &'a [PlacementRun],
    exp: &str,
    label: &str,
    k: Kernel,
) -> Option<&'a PlacementRun> {
    runs.iter()
        .find(|r| r.experiment == exp && r.placement == label && r.kernel == k)
}

/// Gains per kernel of placement `a` over `b` in experiment `exp` (C throughput).
fn gains(runs: &[PlacementRun], exp: &str, a: &str, b: &str) -> Vec<f64> {
    let mut kernels: Vec<Kernel> = runs.iter().map(|r| r.kernel).collect();
    kernels.dedup();
    kernels
        .into_iter()
        .filter_map(|k| {
            Some(gain_pct(
                find(runs, exp, a, k)?.c_norm,
                find(runs, exp, b, k)?.c_norm,
            ))
        })
        .collect()
}

fn compare(
    runs: &[PlacementRun],
    topo: &Topology,
    p_alone: &PTaskReport,
) -> (Vec<Comparison>, Vec<String>) {
    let mut cmp = Vec::new();
    let mut verdict = Vec::new();
    let c = |what: &str, ours: f64, published: f64, note: &str| Comparison {
        what: what.into(),
        ours,
        published: Some(published),
        unit: "%".into(),
        note: note.into(),
    };
    let sb = gains(runs, "cross-core", "scatter", "bunch");
    if !sb.is_empty() {
        let avg = mean(sb.iter().copied());
        let max = sb.iter().copied().fold(f64::MIN, f64::max);
        cmp.push(c(
            "C tasks: scatter vs bunch (avg)",
            avg,
            PUB_SCATTER_VS_BUNCH_AVG,
            "2.1, 2 cores, 2C+2P",
        ));
        cmp.push(c(
            "C tasks: scatter vs bunch (max)",
            max,
            PUB_SCATTER_VS_BUNCH_MAX,
            "2.1",
        ));
        if topo.has_smt() {
            verdict.push(format!(
                "Scatter gives C tasks {avg:+.1}% over Bunch on average (published +17%)."
            ));
        } else {
            verdict.push(format!(
                "Without SMT, Scatter vs Bunch is {avg:+.1}% for C tasks: each C task gets half \
                 a CPU either way (time-sharing with a P task or with another C task), so the \
                 study's gain, which comes from sharing a core's execution units between SMT \
                 siblings, has nothing to act on here."
            ));
        }
    }
    let cs = gains(runs, "in-core", "colocate", "spread");
    if !cs.is_empty() {
        let avg = mean(cs.iter().copied());
        cmp.push(c(
            "C tasks: colocate vs spread",
            avg,
            PUB_COLOCATE_VS_SPREAD,
            "2.2, 1 core, 2C+2P",
        ));
        verdict.push(format!(
            "Colocate vs Spread: {avg:+.1}% for C tasks (published +9.09%)."
        ));
    }
    let bf = gains(runs, "balancer", "proposed", "free");
    let bw = gains(runs, "balancer", "proposed", "worst");
    if !bf.is_empty() {
        cmp.push(c(
            "C tasks: balancer vs free",
            mean(bf.iter().copied()),
            PUB_BALANCE_VS_FREE,
            "4",
        ));
        cmp.push(c(
            "C tasks: balancer vs worst",
            mean(bw.iter().copied()),
            PUB_BALANCE_VS_WORST,
            "4",
        ));
    }
    // P tasks: spread of mean latency across placements within each experiment.
    let mut worst_spread: f64 = 0.0;
    for exp in ["cross-core", "in-core", "balancer"] {
        let lats: Vec<f64> = runs
            .iter()
            .filter(|r| r.experiment == exp && r.p_lat_mean_us.is_finite())
            .map(|r| r.p_lat_mean_us)
            .collect();
        if lats.len() >= 2 {
            let lo = lats.iter().copied().fold(f64::MAX, f64::min);
            let hi = lats.iter().copied().fold(f64::MIN, f64::max);
            worst_spread = worst_spread.max(gain_pct(hi, lo));
        }
    }
    cmp.push(c(
        "P tasks: latency spread across placements",
        worst_spread,
        PUB_P_SPREAD,
        "max-min over min of mean latency",
    ));
    let shared: Vec<&PlacementRun> = runs
        .iter()
        .filter(|r| r.c_tasks > 0 && r.p_tasks > 0)
        .collect();
    if let Some(r) = shared.first() {
        verdict.push(format!(
            "P task alone: {:.1} us mean, {:.0} IOPS; sharing CPUs with C tasks (e.g. {} {}): \
             {:.1} us mean, {:.1} us p99 — a poller that is time-shared waits for its turn on \
             the CPU, which is why the study's P tasks owned a logical CPU each.",
            p_alone.lat_mean_ns / 1e3,
            p_alone.iops,
            r.experiment,
            r.placement,
            r.p_lat_mean_us,
            r.p_lat_p99_us
        ));
    }
    // Fair time-sharing gives each pinned task 1/(tasks on its CPU) of a CPU; much
    // less means something else on the machine took the CPUs during the run.
    let fair: Vec<(f64, f64)> = runs
        .iter()
        .filter(|r| r.experiment != "in-core" && r.placement != "free" && r.placement != "proposed")
        .map(|r| {
            let cpus = topo.num_cpus().min(r.c_tasks + r.p_tasks).max(1) as f64;
            (
                r.c_cpu_share,
                (cpus / (r.c_tasks + r.p_tasks) as f64).min(1.0),
            )
        })
        .collect();
    if !fair.is_empty() {
        let got = mean(fair.iter().map(|f| f.0));
        let want = mean(fair.iter().map(|f| f.1));
        if got < 0.8 * want {
            verdict.push(format!(
                "C tasks got {got:.2} of a CPU on average where fair sharing among our own \
                 tasks gives {want:.2}: other work on this machine competed for the CPUs, so \
                 differences of a few percent between placements are within the noise; rerun \
                 on an idle machine for figures to compare with the study."
            ));
        }
    }
    for r in runs.iter().filter(|r| r.placement == "proposed") {
        if let Some(b) = &r.balancer {
            verdict.push(format!(
                "Live balancer ({}): predictor classified every task by tick {}, {} migrations, \
                 settled at tick {}, final placement {} the study's best.",
                r.kernel.name(),
                b.classified_at_tick
                    .map_or("never".into(), |t| t.to_string()),
                b.migrations,
                b.settled_at_tick.map_or("never".into(), |t| t.to_string()),
                if b.reached_best { "is" } else { "is NOT" }
            ));
        }
    }
    (cmp, verdict)
}

impl PlacementStudyResult {
    /// The lab framework's shape of this result.
    pub fn to_study_result(&self) -> StudyResult {
        let mut setup = vec![
            ("topology".to_string(), {
                let t = &self.topology;
                format!(
                    "{} physical cores, {} logical CPUs, SMT {}",
                    t.cores.len(),
                    t.num_cpus(),
                    if t.has_smt() { "yes" } else { "no" }
                )
            }),
            (
                "P task".into(),
                format!(
                    "QD1 4 KiB reads on the null device ({:.0} us), polled",
                    self.null_lat_us
                ),
            ),
            (
                "C tasks".into(),
                "built-in int (hash + sort) and float (24x24 matmul) kernels".into(),
            ),
            (
                "run time".into(),
                format!("{:.1} s per placement", self.run_time_s),
            ),
        ];
        for (k, u) in &self.alone {
            setup.push((format!("{} alone", k.name()), format!("{u:.0} units/s")));
        }
        let cols = [
            "experiment",
            "placement",
            "kernel",
            "C/alone",
            "C cpu share",
            "P mean us",
            "P p99 us",
            "P IOPS",
            "tasks (kind:cpus)",
        ]
        .map(String::from)
        .to_vec();
        let rows = self
            .runs
            .iter()
            .map(|r| {
                vec![
                    Cell::text(&r.experiment),
                    Cell::text(&r.placement),
                    Cell::text(r.kernel.name()),
                    Cell::num(r.c_norm, 3),
                    Cell::num(r.c_cpu_share, 2),
                    Cell::num(r.p_lat_mean_us, 1),
                    Cell::num(r.p_lat_p99_us, 1),
                    Cell::num(r.p_iops, 0),
                    Cell::text(
                        r.tasks
                            .iter()
                            .map(|t| format!("{}:{}", t.kind.letter(), t.cpus))
                            .collect::<Vec<_>>()
                            .join(" "),
                    ),
                ]
            })
            .collect();
        let mut tables = vec![Table {
            title: "C throughput (relative to alone) and P latency per placement".into(),
            columns: cols,
            rows,
        }];
        if let Some(w) = &self.whatif {
            let rows = w
                .plans
                .iter()
                .map(|(p, r)| {
                    vec![
                        Cell::text(p),
                        Cell::text(match r {
                            Ok(c) => c.join(" "),
                            Err(e) => format!("refused: {e}"),
                        }),
                    ]
                })
                .collect();
            tables.push(Table {
                title: format!(
                    "What-if on {} ({} C tasks then {} P tasks; CPUs per task){}",
                    w.topology.source,
                    w.c_tasks,
                    w.p_tasks,
                    if w.balance_is_best {
                        "; balance reaches the best placement"
                    } else {
                        ""
                    }
                ),
                columns: vec!["policy".into(), "allowed CPUs per task".into()],
                rows,
            });
        }
        let mut cats = Vec::new();
        let mut series: Vec<Series> = Vec::new();
        for r in &self.runs {
            let cat = format!("{} {}", r.experiment, r.placement);
            let x = match cats.iter().position(|c| c == &cat) {
                Some(i) => i,
                None => {
                    cats.push(cat);
                    cats.len() - 1
                }
            };
            let name = r.kernel.name().to_string();
            match series.iter_mut().find(|s| s.name == name) {
                Some(s) => s.points.push((x as f64, r.c_norm)),
                None => series.push(Series {
                    name,
                    points: vec![(x as f64, r.c_norm)],
                }),
            }
        }
        StudyResult {
            id: "placement".into(),
            seed: "001".into(),
            title: "Polling task placement on (hyperthreaded) multicore CPUs".into(),
            setup,
            tables,
            comparisons: self.comparisons.clone(),
            charts: vec![Chart {
                title: "C task throughput relative to running alone".into(),
                kind: ChartKind::Bar,
                x_label: "placement".into(),
                y_label: "throughput / alone".into(),
                categories: cats,
                series,
                log_x: false,
            }],
            verdict: self.verdict.clone(),
            skipped: self.skipped.clone(),
            duration_s: self.duration_s,
        }
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn render_text(&self) -> String {
        self.to_study_result().render_text()
    }
}
