//! From the engine's raw results to the fio-shaped model: fold the streams
//! of each reporting group (fio's `group_reporting`: every job of the group
//! with its clones), sum their engine counters into one [`JobEngine`], name
//! the disks under the targets and put the run together.
//!
//! Pure: reads the raw results and snapshots it is given, runs nothing.

use crate::completion::CompletionStats;
use crate::device::BackendStats;
use crate::job::{Engine, JobSpec};
use crate::measure::clock::ClockCheck;
use crate::measure::cpu::{DiskStats, SystemDelta, SystemSnapshot, ThreadUsage, disk_of_path};
use crate::measure::recorder::Recorder;
use crate::report::model::{
    JobEngine, JobLogs, JobMeta, JobResult, OrderedMap, RunExtras, RunResult, StageShare,
    VerifyReport, apply_group_aggregates,
};
use crate::report::raw::{Accounting, GroupRun, JobRun};

/// The run's system-wide state before and after its groups ran.
pub struct RunContext<'a> {
    /// Cost and resolution of the engine clock, measured at start.
    pub clock: ClockCheck,
    pub before: &'a SystemSnapshot,
    pub after: &'a SystemSnapshot,
    /// The job file's `[global]` options, as written.
    pub global_options: &'a [(String, String)],
    /// Keep fio's json+ latency bins in the result (`--output-format=json+`).
    pub fio_bins: bool,
}

/// The whole run in fio's result shape.
pub fn run_result(specs: &[JobSpec], groups: &[GroupRun], cx: &RunContext) -> RunResult {
    let mut jobs = Vec::new();
    for g in groups {
        jobs.extend(group_results(specs, g, cx.fio_bins));
    }
    apply_group_aggregates(&mut jobs);
    let disks = disk_names(specs);
    let disk_util = match (&cx.before.disks, &cx.after.disks) {
        (Some(b), Some(a)) if !disks.is_empty() => {
            let names: Vec<&str> = disks.iter().map(String::as_str).collect();
            DiskStats::util(b, a, &names)
        }
        _ => Vec::new(),
    };
    let extras = RunExtras {
        clock: Some(cx.clock),
        system: Some(SystemDelta::between(cx.before, cx.after)),
        placement: groups.iter().filter_map(|g| g.placement.clone()).collect(),
        ..Default::default()
    };
    let mut run = RunResult::new(jobs, disk_util, extras);
    run.global_options = OrderedMap(cx.global_options.to_vec());
    run
}

/// fio's reports of one stonewall group's streams: each clone on its own, or
/// under `group_reporting` every job of a reporting group, clones and all,
/// as one. `fio_bins`: keep json+'s latency bins.
pub fn group_results(specs: &[JobSpec], g: &GroupRun, fio_bins: bool) -> Vec<JobResult> {
    report_members(specs, &g.jobs)
        .iter()
        .map(|members| member_result(specs, g, members, fio_bins))
        .collect()
}

/// The streams of each report, in fio's order (jobs as written, each job's
/// clones after it). fio's rule: a stream of a job with `group_reporting`
/// joins the report before it when that report is of the same reporting
/// group, whatever that report's own job said. A `stats=0` job ran and
/// reports nothing, and parts no report.
fn report_members(specs: &[JobSpec], runs: &[JobRun]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..runs.len())
        .filter(|&k| specs[runs[k].job].reporting.stats)
        .collect();
    order.sort_by_key(|&k| (runs[k].job, runs[k].jobnum));
    let mut reports: Vec<Vec<usize>> = Vec::new();
    for k in order {
        let r = &runs[k];
        match reports.last_mut() {
            Some(m) if specs[r.job].group_reporting && runs[m[0]].groupid == r.groupid => m.push(k),
            _ => reports.push(vec![k]),
        }
    }
    reports
}

/// One report of the streams `members` (indices into `g.jobs`, fio's order).
/// As fio builds a group's report: the name is the first job's, the job
/// options and the percentile settings the last job's (fio copies each
/// member's over the one before); I/O and latencies are summed, and each
/// direction's runtime is the longest of the members that did I/O that way.
fn member_result(specs: &[JobSpec], g: &GroupRun, members: &[usize], fio_bins: bool) -> JobResult {
    let runs: Vec<&JobRun> = members.iter().map(|&k| &g.jobs[k]).collect();
    let first = runs[0];
    let spec = &specs[first.job];
    let last = &specs[runs[runs.len() - 1].job];
    let mut rec: Recorder = first.rec.clone();
    let mut cpu = ThreadUsage::default();
    let (mut runtime, mut runtime_sum) = (0, 0);
    let mut dir_runtime = [0u64; 3];
    for (i, r) in runs.iter().enumerate() {
        if i > 0 {
            rec.merge(&r.rec);
        }
        // A shared worker's CPU is counted once, on its first stream.
        cpu.add(&share_cpu(r));
        runtime = runtime.max(r.runtime_ns);
        runtime_sum += r.runtime_ns;
        for (d, t) in dir_runtime.iter_mut().enumerate() {
            let dir = &r.rec.dirs[d];
            if dir.total_ios > 0 || dir.io_bytes > 0 {
                *t = (*t).max(r.runtime_ns);
            }
        }
    }
    let meta = JobMeta {
        name: spec.clone_name(first.jobnum).to_string(),
        groupid: first.groupid,
        jobnum: first.jobnum,
        workers: runs.len() as u32,
        pid: std::process::id(),
        options: last.options.clone(),
        iodepth: last.iodepth,
        percentile_list: last.percentile_list.clone(),
        runtime_ns: runtime,
        job_runtime_ns: runtime_sum,
        elapsed_ns: g.wall_ns,
    };
    let mut jr = JobResult::from_recorder_by_dir(&meta, &rec, &cpu, dir_runtime);
    let p = last.lat_percentiles;
    jr.choose_percentiles(
        &rec,
        [p.slat, p.clat, p.lat],
        &last.percentile_list,
        fio_bins,
    );
    crate::report::unified::apply(
        &mut jr,
        spec.reporting.unified,
        &rec,
        &meta,
        &cpu,
        [p.slat, p.clat, p.lat],
        &last.percentile_list,
        fio_bins,
    );
    jr.style = crate::report::model::TextStyle {
        sig_figs: usize::from(spec.reporting.sig_figs),
        bits: spec.reporting.bits,
    };
    let steady: Vec<_> = runs.iter().filter_map(|r| r.steady.as_ref()).collect();
    jr.steadystate = crate::report::steady::SteadyReport::merge(&steady);
    if let Some(lt) = runs.iter().find_map(|r| r.lat_target.as_ref()) {
        // fio's keys for the search in the job's result.
        jr.latency_depth = lt.depth;
        jr.latency_target = lt.target_ns;
        jr.latency_window = lt.window_us;
        jr.latency_percentile = lt.percentile;
    }
    jr.iolab.engine = Some(job_engine(specs, &runs));
    jr
}

/// CPU of a worker divided evenly among the streams sharing it.
fn share_cpu(r: &JobRun) -> ThreadUsage {
    let n = r.worker_streams.max(1) as u64;
    ThreadUsage {
        user_ns: r.cpu.user_ns / n,
        sys_ns: r.cpu.sys_ns / n,
        nvcsw: r.cpu.nvcsw / n,
        nivcsw: r.cpu.nivcsw / n,
        minflt: r.cpu.minflt / n,
        majflt: r.cpu.majflt / n,
    }
}

/// The `iolab.engine` object of the report whose streams are `runs`: how the
/// run actually went. Errors, request accounting, verification and injected
/// faults give fio's `total_err`/`first_error` (which fio prints with
/// continue_on_error) and what the conservation checks read. A worker's
/// counters (completion, backend) are added once however many of its
/// streams the report holds. Streams of jobs that ran different stages
/// (group_reporting over jobs of other backends, completion models or
/// schedulers) name them all, comma-separated, and list each in `stages`.
pub fn job_engine(specs: &[JobSpec], runs: &[&JobRun]) -> JobEngine {
    let first = runs[0];
    let mut completion = CompletionStats::default();
    let mut backend = BackendStats::default();
    let mut stages: Vec<StageShare> = Vec::new();
    let mut seen_workers: Vec<usize> = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let spec = &specs[r.job];
        let scheduler = crate::sched::kind_name(spec.scheduler);
        let at = stages.iter().position(|s| {
            s.backend == r.backend
                && s.completion_model == r.model.name()
                && s.scheduler == scheduler
        });
        let stage = match at {
            Some(at) => &mut stages[at],
            None => {
                stages.push(StageShare {
                    backend: r.backend.to_string(),
                    completion_model: r.model.name().to_string(),
                    scheduler: scheduler.to_string(),
                    jobs: Vec::new(),
                    completion: CompletionStats::default(),
                    completion_summary: String::new(),
                });
                stages.last_mut().expect("pushed above")
            }
        };
        if !stage.jobs.contains(&spec.name) {
            stage.jobs.push(spec.name.clone());
        }
        if seen_workers.contains(&r.worker) {
            continue;
        }
        seen_workers.push(r.worker);
        stage.completion.merge(&r.completion);
        completion.merge(&r.completion);
        if i == 0 {
            backend = r.backend_stats;
        } else {
            add_backend(&mut backend, &r.backend_stats);
        }
    }
    let model_of = |s: &StageShare| {
        runs.iter()
            .find(|r| r.model.name() == s.completion_model)
            .map_or(first.model, |r| r.model)
    };
    for s in &mut stages {
        s.completion_summary = s.completion.describe(model_of(s));
    }
    let mixed = stages.len() > 1;
    let names = |f: fn(&StageShare) -> &str| {
        let mut v: Vec<&str> = Vec::new();
        for s in &stages {
            if !v.contains(&f(s)) {
                v.push(f(s));
            }
        }
        v.join(",")
    };
    let (completion_summary, policy_summary) = if mixed {
        let lines: Vec<String> = stages
            .iter()
            .map(|s| format!("{} ({})", s.completion_summary, s.jobs.join(", ")))
            .collect();
        let policies: Vec<String> = stages
            .iter()
            .filter_map(|s| s.completion.describe_policy(model_of(s)))
            .collect();
        (
            lines.join("; "),
            (!policies.is_empty()).then(|| policies.join("; ")),
        )
    } else {
        (
            completion.describe(first.model),
            completion.describe_policy(first.model),
        )
    };
    let mut acct = Accounting::default();
    let mut verify: Option<crate::workload::verify::VerifyStats> = None;
    for r in runs {
        acct.add(&r.acct);
        if let Some(v) = &r.verify {
            let t = verify.get_or_insert_with(Default::default);
            t.written += v.written;
            t.checked += v.checked;
            t.failures += v.failures;
            t.skipped += v.skipped;
            t.first_failure = t.first_failure.or(v.first_failure);
        }
    }
    let first_error = runs
        .iter()
        .map(|r| r.rec.first_error)
        .find(|&e| e != 0)
        .unwrap_or(0);
    JobEngine {
        backend: names(|s| &s.backend),
        completion_model: names(|s| &s.completion_model),
        completion,
        completion_summary,
        policy_summary,
        backend_stats: backend,
        scheduler: names(|s| &s.scheduler),
        scheduler_stats: first.sched,
        adaptive_decisions: first.adaptive.clone(),
        shared_worker_streams: (first.worker_streams > 1).then_some(first.worker_streams),
        interrupted: runs.iter().any(|r| r.interrupted),
        total_err: acct.errors + acct.verify_failures,
        first_error,
        continue_on_error: first.continue_on_error.name().to_string(),
        accounting: acct,
        verify: verify.map(|v| VerifyReport {
            stats: v,
            first_failure_message: v.first_failure.map(|f| f.to_string()),
        }),
        faults_injected: first.injected,
        error_message: runs.iter().find_map(|r| r.error.clone()),
        trace: first.trace.clone(),
        lat_target: first.lat_target.clone(),
        job_logs: runs.iter().filter_map(|r| r.job_logs.as_ref()).fold(
            None,
            |acc: Option<JobLogs>, l| {
                let mut t = acc.unwrap_or_default();
                t.add(l);
                Some(t)
            },
        ),
        stages: if mixed { stages } else { Vec::new() },
    }
}

/// Add another worker's backend counters to `b`.
fn add_backend(b: &mut BackendStats, o: &BackendStats) {
    b.submit_calls += o.submit_calls;
    b.wait_calls += o.wait_calls;
    // Counted for the whole report only if counted for every worker of it.
    b.punted = b.punted.zip(o.punted).map(|(a, c)| a + c);
    b.interrupts += o.interrupts;
    b.completed_in_submit += o.completed_in_submit;
    b.own = b.own.merge(o.own);
    b.performed_by = b.performed_by.or(o.performed_by);
}

/// Block devices under the jobs' targets, for fio's disk_util.
pub fn disk_names(jobs: &[JobSpec]) -> Vec<String> {
    let mut names: Vec<String> = jobs
        .iter()
        .filter(|j| j.ioengine != Engine::Null && j.reporting.disk_util)
        .filter_map(|j| j.filename.as_ref())
        .filter_map(|f| disk_of_path(std::path::Path::new(f)))
        .collect();
    names.sort();
    names.dedup();
    names
}
