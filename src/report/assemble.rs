//! From the engine's raw results to the fio-shaped model: fold each job's
//! clones (fio's `group_reporting`), sum their engine counters into one
//! [`JobEngine`], name the disks under the targets and put the run together.
//!
//! Pure: reads the raw results and snapshots it is given, runs nothing.

use crate::job::{Engine, JobSpec};
use crate::measure::clock::ClockCheck;
use crate::measure::cpu::{DiskStats, SystemDelta, SystemSnapshot, ThreadUsage, disk_of_path};
use crate::measure::recorder::Recorder;
use crate::report::model::{
    JobEngine, JobLogs, JobMeta, JobResult, OrderedMap, RunExtras, RunResult, VerifyReport,
    apply_group_aggregates,
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

/// fio reports each clone on its own, or one entry per job with group_reporting.
/// `fio_bins`: keep json+'s latency bins.
pub fn group_results(specs: &[JobSpec], g: &GroupRun, fio_bins: bool) -> Vec<JobResult> {
    let mut out = Vec::new();
    let mut done = vec![false; g.jobs.len()];
    for i in 0..g.jobs.len() {
        if done[i] {
            continue;
        }
        let spec = &specs[g.jobs[i].job];
        let members: Vec<usize> = if spec.group_reporting {
            (i..g.jobs.len())
                .filter(|&k| g.jobs[k].job == g.jobs[i].job)
                .collect()
        } else {
            vec![i]
        };
        let mut rec: Recorder = g.jobs[members[0]].rec.clone();
        let mut cpu = ThreadUsage::default();
        let (mut runtime, mut runtime_sum) = (0, 0);
        for &k in &members {
            done[k] = true;
            if k != members[0] {
                rec.merge(&g.jobs[k].rec);
            }
            // A shared worker's CPU is counted once, on its first stream.
            cpu.add(&share_cpu(&g.jobs[k]));
            runtime = runtime.max(g.jobs[k].runtime_ns);
            runtime_sum += g.jobs[k].runtime_ns;
        }
        if !spec.reporting.stats {
            continue; // stats=0: the job ran, and reports nothing
        }
        let first = &g.jobs[members[0]];
        let meta = JobMeta {
            name: spec.name.clone(),
            groupid: g.groupid,
            jobnum: first.jobnum,
            workers: members.len() as u32,
            pid: std::process::id(),
            options: spec.options.clone(),
            iodepth: spec.iodepth,
            percentile_list: spec.percentile_list.clone(),
            runtime_ns: runtime,
            job_runtime_ns: runtime_sum,
            elapsed_ns: g.wall_ns,
        };
        let mut jr = JobResult::from_recorder(&meta, &rec, &cpu);
        let p = spec.lat_percentiles;
        jr.choose_percentiles(
            &rec,
            [p.slat, p.clat, p.lat],
            &spec.percentile_list,
            fio_bins,
        );
        crate::report::unified::apply(
            &mut jr,
            spec.reporting.unified,
            &rec,
            &meta,
            &cpu,
            [p.slat, p.clat, p.lat],
            &spec.percentile_list,
            fio_bins,
        );
        jr.style = crate::report::model::TextStyle {
            sig_figs: usize::from(spec.reporting.sig_figs),
            bits: spec.reporting.bits,
        };
        let runs: Vec<&JobRun> = members.iter().map(|&k| &g.jobs[k]).collect();
        let steady: Vec<_> = runs.iter().filter_map(|r| r.steady.as_ref()).collect();
        jr.steadystate = crate::report::steady::SteadyReport::merge(&steady);
        if let Some(lt) = runs.iter().find_map(|r| r.lat_target.as_ref()) {
            // fio's keys for the search in the job's result.
            jr.latency_depth = lt.depth;
            jr.latency_target = lt.target_ns;
            jr.latency_window = lt.window_us;
            jr.latency_percentile = lt.percentile;
        }
        jr.iolab.engine = Some(job_engine(spec, &runs));
        out.push(jr);
    }
    out
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

/// The `iolab.engine` object of the job whose clones are `runs`: how the run
/// actually went. Errors, request accounting, verification and injected faults
/// give fio's `total_err`/`first_error` (which fio prints with
/// continue_on_error) and what the conservation checks read.
pub fn job_engine(spec: &JobSpec, runs: &[&JobRun]) -> JobEngine {
    let first = runs[0];
    let mut completion = first.completion;
    let mut backend = first.backend_stats;
    for r in &runs[1..] {
        completion.merge(&r.completion);
        backend.submit_calls += r.backend_stats.submit_calls;
        backend.wait_calls += r.backend_stats.wait_calls;
        // Counted for the whole group only if counted for every job of it.
        backend.punted = backend
            .punted
            .zip(r.backend_stats.punted)
            .map(|(a, b)| a + b);
        backend.interrupts += r.backend_stats.interrupts;
        backend.completed_in_submit += r.backend_stats.completed_in_submit;
        backend.own = backend.own.merge(r.backend_stats.own);
        backend.performed_by = backend.performed_by.or(r.backend_stats.performed_by);
    }
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
        backend: first.backend.to_string(),
        completion_model: first.model.name().to_string(),
        completion,
        completion_summary: completion.describe(first.model),
        policy_summary: completion.describe_policy(first.model),
        backend_stats: backend,
        scheduler: crate::sched::kind_name(spec.scheduler).to_string(),
        scheduler_stats: first.sched,
        adaptive_decisions: first.adaptive.clone(),
        shared_worker_streams: (first.worker_streams > 1).then_some(first.worker_streams),
        interrupted: first.interrupted,
        total_err: acct.errors + acct.verify_failures,
        first_error,
        continue_on_error: runs[0].continue_on_error.name().to_string(),
        accounting: acct,
        verify: verify.map(|v| VerifyReport {
            stats: v,
            first_failure_message: v.first_failure.map(|f| f.to_string()),
        }),
        faults_injected: runs[0].injected,
        error_message: first.error.clone(),
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
    }
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
