//! Where a group's threads run: fio's `cpus_allowed`/`cpumask` per job, or one
//! of study 001's placement policies over the whole group (`placement=`), and the
//! compute co-runners (`corunners=`) that share the CPUs with the I/O workers.
//!
//! In study 001's words the I/O workers are P tasks and the co-runners C tasks.
//! Everything is decided before a thread starts, so a CPU that is not online or a
//! policy this machine cannot honour (colocate without SMT) stops the run with the
//! job's name instead of producing a run that was not placed as asked.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use crate::engine::error::{EngineError, Result};

use crate::engine::setup::{Prepared, label};
use crate::job::JobSpec;
use crate::placement::balance;
use crate::placement::corunner::{CoRunner, CoRunnerReport, Kernel};
use crate::placement::predictor::SignalSampler;
use crate::placement::topology::{Topology, format_cpu_list};
use crate::placement::{Policy, PollSignal, Predictor, TaskKind, place};
use crate::report::raw::{BalancerReport, PlacedTask, PlacementReport};

/// One co-runner to start: which job clone it belongs to and where it may run.
#[derive(Clone, Debug)]
pub struct CoRunnerPlan {
    pub job: usize,
    pub jobnum: u32,
    pub kernel: Kernel,
    /// Empty = the kernel's load balancer decides.
    pub cpus: Vec<u32>,
}

/// The group's placement, decided before any thread starts.
#[derive(Clone, Debug, Default)]
pub struct GroupPlan {
    pub policy: Option<Policy>,
    /// Allowed CPUs per prepared worker, in `prepared` order (empty = any).
    pub workers: Vec<Vec<u32>>,
    pub corunners: Vec<CoRunnerPlan>,
    /// The topology the CPUs were chosen on (read only when CPUs are chosen).
    pub topology: Option<Topology>,
    /// `placement=balance`: the live balancer's tick, and which workers (indices
    /// into `prepared`) it moves besides the co-runners.
    pub live: Option<(Duration, Vec<usize>)>,
}

impl GroupPlan {
    /// Whether the group asked for anything: no report otherwise.
    pub fn is_active(&self) -> bool {
        self.policy.is_some()
            || !self.corunners.is_empty()
            || self.workers.iter().any(|c| !c.is_empty())
    }
}

fn describe(topo: &Topology) -> String {
    let threads = topo.cores.iter().map(|c| c.cpus.len()).max().unwrap_or(1);
    format!(
        "{} CPUs on {} cores{} ({})",
        topo.num_cpus(),
        topo.cores.len(),
        if threads > 1 {
            format!(", {threads} SMT threads per core")
        } else {
            ", no SMT".to_string()
        },
        topo.source
    )
}

/// The job a worker belongs to for placement: its first stream's. Jobs sharing a
/// worker (one emulated device) must agree, or one of them would be misplaced.
fn worker_job<'a>(jobs: &'a [JobSpec], p: &Prepared) -> Result<&'a JobSpec> {
    let first = &jobs[p.placed[0].job];
    for pl in &p.placed[1..] {
        let other = &jobs[pl.job];
        if other.placement != first.placement
            || other.cpus_allowed != first.cpus_allowed
            || other.cpus_allowed_split != first.cpus_allowed_split
        {
            return Err(EngineError::SharedWorkerCpus {
                job: label(first),
                other: label(other),
            });
        }
    }
    Ok(first)
}

/// Decide where every worker and co-runner of the group runs.
pub fn plan(jobs: &[JobSpec], prepared: &[Prepared]) -> Result<GroupPlan> {
    let mut owners = Vec::with_capacity(prepared.len());
    for p in prepared {
        owners.push(worker_job(jobs, p)?);
    }
    let mut policy: Option<(Policy, &JobSpec)> = None;
    for &j in &owners {
        if let Some(p) = j.placement {
            match policy {
                Some((q, other)) if q != p => {
                    return Err(EngineError::MixedPlacement {
                        job: label(j),
                        policy: p,
                        other: label(other),
                        other_policy: q,
                    });
                }
                _ => policy = Some((p, j)),
            }
        }
    }
    let mut corunners = Vec::new();
    for p in prepared {
        for pl in &p.placed {
            let j = &jobs[pl.job];
            for _ in 0..j.corunners {
                corunners.push(CoRunnerPlan {
                    job: pl.job,
                    jobnum: pl.jobnum,
                    kernel: j.corunner_kernel,
                    cpus: Vec::new(),
                });
            }
        }
    }
    let mut workers: Vec<Vec<u32>> = prepared.iter().map(|p| p.cpus.clone()).collect();
    let pinned = workers.iter().any(|c| !c.is_empty());
    if policy.is_none() && !pinned {
        return Ok(GroupPlan {
            policy: None,
            workers,
            corunners,
            topology: None,
            live: None,
        });
    }
    let topo = Topology::from_system().map_err(EngineError::Topology)?;
    let online = topo.cpus();
    for (cpus, &j) in workers.iter().zip(&owners) {
        if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
            return Err(EngineError::CpuOffline {
                job: label(j),
                cpu: *bad,
                online: format_cpu_list(&online),
            });
        }
    }
    let mut live = None;
    if let Some((pol, by)) = policy {
        // P tasks: the workers of jobs that asked for the policy; C tasks: every
        // co-runner of the group. The policy sees them all at once, as the study's
        // placements do.
        let placed_workers: Vec<usize> = (0..prepared.len())
            .filter(|&i| owners[i].placement.is_some())
            .collect();
        let mut kinds = vec![TaskKind::Poll; placed_workers.len()];
        kinds.extend(std::iter::repeat_n(TaskKind::Compute, corunners.len()));
        if pol.needs_smt() && !topo.has_smt() {
            return Err(EngineError::NeedsSmt {
                job: label(by),
                policy: pol,
                machine: describe(&topo),
            });
        }
        let cpus: Vec<Vec<u32>> = if pol == Policy::Balance {
            // The live balancer starts from round-robin, as a freshly started set
            // of threads would be, and moves tasks as it learns what they do.
            (0..kinds.len())
                .map(|i| vec![online[i % online.len()]])
                .collect()
        } else {
            place(pol, &topo, &kinds)
                .map_err(|err| EngineError::Place {
                    job: label(by),
                    err,
                })?
                .cpus
        };
        if pol == Policy::Balance {
            live = Some((by.balance_interval, placed_workers.clone()));
        }
        let mut cpus = cpus.into_iter();
        for &i in &placed_workers {
            workers[i] = cpus.next().expect("one CPU set per task");
        }
        for c in &mut corunners {
            c.cpus = cpus.next().expect("one CPU set per task");
        }
    }
    Ok(GroupPlan {
        policy: policy.map(|(p, _)| p),
        workers,
        corunners,
        topology: Some(topo),
        live,
    })
}

/// Co-runners started and waiting at the group's start barrier.
pub struct Running {
    threads: Vec<(CoRunnerPlan, CoRunner)>,
    stop: Arc<AtomicBool>,
}

/// Start the planned co-runners; each waits at `go` (the barrier the workers
/// and the caller also wait at) and is pinned before it is released.
pub fn start(plan: &GroupPlan, go: &Arc<Barrier>) -> Result<Running> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::with_capacity(plan.corunners.len());
    for c in &plan.corunners {
        let r = CoRunner::spawn(c.kernel, go.clone(), stop.clone(), u64::MAX)?;
        if !c.cpus.is_empty() {
            crate::placement::affinity::set_affinity(r.tid(), &c.cpus).map_err(|err| {
                EngineError::PinCoRunner {
                    cpus: format_cpu_list(&c.cpus),
                    err,
                }
            })?;
        }
        threads.push((c.clone(), r));
    }
    Ok(Running { threads, stop })
}

impl Running {
    /// Kernel thread ids of the co-runners, in plan order.
    pub fn tids(&self) -> Vec<i32> {
        self.threads.iter().map(|(_, r)| r.tid()).collect()
    }

    /// Stop the co-runners (the group's workers are done) and collect their work.
    pub fn finish(self) -> Result<Vec<(CoRunnerPlan, CoRunnerReport)>> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.threads
            .into_iter()
            .map(|(p, r)| Ok((p, r.join()?)))
            .collect()
    }
}

/// Study 001's balancer running beside the group: every tick each task's 2-bit
/// predictor reads whether the task polled (workers publish their polls; an
/// interrupt-mode or synchronous worker makes none, a co-runner never does) and
/// the balancer's migrations toward its fixed point are applied with
/// sched_setaffinity. Runs on the engine's main thread, which otherwise only
/// waits for the workers.
pub struct LiveBalancer {
    topo: Topology,
    pub interval: Duration,
    tids: Vec<i32>,
    samplers: Vec<SignalSampler>,
    predictors: Vec<Predictor>,
    /// Current CPU of each task (each is pinned to exactly one).
    cpus: Vec<u32>,
    log: BalancerReport,
}

impl LiveBalancer {
    /// Tasks in plan order: the balanced workers (`signals`, `worker_tids`), then
    /// the co-runners. None unless the group's placement is `balance`.
    pub fn new(
        plan: &GroupPlan,
        worker_tids: &[i32],
        signals: &[PollSignal],
        corunner_tids: &[i32],
    ) -> Option<LiveBalancer> {
        let (interval, workers) = plan.live.as_ref()?;
        let topo = plan.topology.as_ref()?;
        let mut tids = Vec::new();
        let mut samplers = Vec::new();
        let mut cpus = Vec::new();
        for &w in workers {
            tids.push(worker_tids[w]);
            samplers.push(SignalSampler::new(signals[w].clone()));
            cpus.push(plan.workers[w][0]);
        }
        for (c, &tid) in plan.corunners.iter().zip(corunner_tids) {
            tids.push(tid);
            samplers.push(SignalSampler::new(PollSignal::new()));
            cpus.push(c.cpus[0]);
        }
        Some(LiveBalancer {
            topo: topo.clone(),
            interval: *interval,
            predictors: vec![Predictor::new(); tids.len()],
            tids,
            samplers,
            cpus,
            log: BalancerReport {
                interval_ms: interval.as_secs_f64() * 1e3,
                ..Default::default()
            },
        })
    }

    /// One balancing period: reclassify every task, apply the migrations.
    pub fn tick(&mut self) {
        self.log.ticks += 1;
        for (p, s) in self.predictors.iter_mut().zip(self.samplers.iter_mut()) {
            p.observe(s.polled());
        }
        let kinds: Vec<TaskKind> = self.predictors.iter().map(Predictor::kind).collect();
        let moves = match balance::balance(&self.topo, &self.cpus, &kinds) {
            Ok(m) => m,
            Err(e) => {
                self.note_error(e.to_string());
                return;
            }
        };
        for m in &moves {
            match crate::placement::affinity::set_affinity(self.tids[m.task], &[m.to]) {
                Ok(()) => {}
                // The thread has finished: nothing to move.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => self.note_error(format!("moving a task to cpu{}: {e}", m.to)),
            }
            self.cpus[m.task] = m.to;
        }
        self.log.migrations += moves.len() as u32;
        if moves.is_empty() {
            self.log.settled_at_tick.get_or_insert(self.log.ticks);
        } else {
            self.log.settled_at_tick = None;
        }
        self.log.reached_best = balance::is_best(&self.topo, &self.cpus, &kinds);
    }

    /// Keep each distinct error once: one that recurs every tick must not grow
    /// the report with the run's length.
    fn note_error(&mut self, e: String) {
        if !self.log.errors.contains(&e) {
            self.log.errors.push(e);
        }
    }

    /// Where each task ended (plan order) and what the predictor took it for.
    pub fn finish(self) -> (BalancerReport, Vec<u32>, Vec<TaskKind>) {
        let kinds = self.predictors.iter().map(Predictor::kind).collect();
        (self.log, self.cpus, kinds)
    }
}

/// One worker as the placement report shows it.
pub struct WorkerSeen {
    pub name: String,
    pub cpus: Vec<u32>,
    pub last_cpu: Option<u32>,
    pub cpu_ns: u64,
}

/// The group's placement as measured: where each task was allowed to run,
/// where it was last seen, and what share of a CPU it got (workers: of the
/// group's wall time `wall_ns`).
pub fn report(
    groupid: u32,
    plan: &GroupPlan,
    jobs: &[JobSpec],
    workers: &[WorkerSeen],
    wall_ns: u64,
    corunners: &[(CoRunnerPlan, CoRunnerReport)],
    balanced: Option<(BalancerReport, Vec<u32>, Vec<TaskKind>)>,
) -> PlacementReport {
    let share = |cpu_ns: u64, wall_ns: u64| 100.0 * cpu_ns as f64 / wall_ns.max(1) as f64;
    let cpus = |c: &[u32]| {
        if c.is_empty() {
            "any".to_string()
        } else {
            format_cpu_list(c)
        }
    };
    let mut tasks: Vec<PlacedTask> = workers
        .iter()
        .map(|w| PlacedTask {
            kind: TaskKind::Poll,
            name: w.name.clone(),
            cpus: cpus(&w.cpus),
            last_cpu: w.last_cpu,
            cpu_pct: share(w.cpu_ns, wall_ns),
            kernel: None,
            units_per_s: None,
            units_per_cpu_s: None,
            predicted: None,
        })
        .collect();
    tasks.extend(corunners.iter().map(|(p, r)| PlacedTask {
        kind: TaskKind::Compute,
        name: format!("{}.{} corunner", jobs[p.job].name, p.jobnum),
        cpus: cpus(&p.cpus),
        last_cpu: r.last_cpu,
        cpu_pct: share(r.cpu_ns, r.elapsed_ns),
        kernel: Some(r.kernel),
        units_per_s: Some(r.units_per_s),
        units_per_cpu_s: Some(r.units_per_cpu_s),
        predicted: None,
    }));
    let balancer = balanced.map(|(log, end, kinds)| {
        // Balanced tasks in plan order: the balanced workers, then co-runners.
        let (_, balanced_workers) = plan.live.as_ref().expect("balanced plan");
        let order = balanced_workers
            .iter()
            .copied()
            .chain(workers.len()..workers.len() + corunners.len());
        for ((t, cpu), kind) in order.zip(end).zip(kinds) {
            tasks[t].cpus = cpu.to_string();
            tasks[t].predicted = Some(kind);
        }
        log
    });
    PlacementReport {
        groupid,
        policy: plan.policy.map(|p| p.name().to_string()),
        topology: plan.topology.as_ref().map(describe),
        tasks,
        balancer,
    }
}
