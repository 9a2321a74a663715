//! `iolab run`: parse fio-style arguments, run the jobs, print fio-style results.

use std::io::Write;

use anyhow::{Context, Result};

use crate::engine::{EngineOptions, GroupRun, JobRun, run_jobs};
use crate::job::JobSpec;
use crate::job::plan::{OutputFormat, RunPlan, parse_run_args};
use crate::measure::clock;
use crate::measure::cpu::{DiskStats, SystemDelta, SystemSnapshot, ThreadUsage, disk_of_path};
use crate::measure::recorder::Recorder;
use crate::report::model::{JobMeta, JobResult, RunExtras, RunResult, apply_group_aggregates};

#[derive(clap::Args, Debug)]
#[command(
    disable_help_flag = true,
    about = "Run fio-compatible jobs: job files and/or --key=value options",
    long_about = "Run fio-compatible jobs. Arguments are fio's: job files, and --key=value \
options (before any --name they are global; --name=x starts a job). \
iolab adds --completion=sync|interrupt|poll|hybrid|adaptive, --iosched=noop|prio|laq, \
null_* device options and --allow-destructive. See docs/fio-compat.md."
)]
pub struct RunArgs {
    /// Write to block devices even if they hold a filesystem, are mounted or in use.
    #[arg(long)]
    pub allow_destructive: bool,
    /// Also write an HTML report of the run (latency histogram, CDF, IOPS over time) to DIR/index.html.
    #[arg(long, value_name = "DIR")]
    pub report: Option<std::path::PathBuf>,
    /// Trace the block device under each job (root, tracefs) and add btt's stage table, a latency histogram and the user / block / driver+device / completion split.
    #[arg(long)]
    pub trace: bool,
    /// --trace for only PCT percent (1-99) of every PERIOD (default 1s), so tracing costs about that share of its full cost; the table covers the requests inside the windows.
    #[arg(long, value_name = "PCT[/PERIOD]")]
    pub trace_sample: Option<String>,
    /// Job files and fio options, as for fio.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "JOBFILE|--opt=value"
    )]
    pub args: Vec<String>,
}

pub fn main(mut a: RunArgs) -> Result<u8> {
    take_own_flags(&mut a)?;
    if let Some(help) = crate::job::plan::cmdhelp(&a.args)? {
        print!("{help}");
        return Ok(0);
    }
    if a.args.is_empty() || a.args.iter().any(|s| s == "--help" || s == "-h") {
        println!(
            "usage: iolab run [JOBFILE...] [--opt=value ...] [--output-format=normal|json] [--output=FILE] [--allow-destructive] [--cmdhelp[=OPTION|all]]\n\
             e.g.   iolab run --name=t --ioengine=null --size=1g --rw=randread --bs=4k --completion=poll --runtime=2 --time_based\n\
             Options are fio's (see docs/fio-compat.md for what iolab supports and adds)."
        );
        return Ok(if a.args.is_empty() { 1 } else { 0 });
    }
    let plan = parse_run_args(&a.args, &|k| std::env::var(k).ok())?;
    for w in &plan.warnings {
        eprintln!("iolab: warning: {w}");
    }
    if plan.parse_only {
        return Ok(0);
    }
    crate::sys::cleanup::install_signal_handlers()?;
    let opts = EngineOptions {
        allow_destructive: a.allow_destructive,
        trace: a.trace || a.trace_sample.is_some(),
        trace_sampling: a
            .trace_sample
            .as_deref()
            .map(|v| {
                crate::measure::blktrace::Sampling::parse(v)
                    .with_context(|| format!("--trace-sample={v}"))
            })
            .transpose()?,
        ..Default::default()
    };
    let planned = plan
        .jobs
        .iter()
        .map(|j| j.runtime.unwrap_or_default() + j.ramp_time)
        .max()
        .filter(|d| !d.is_zero());
    let status = crate::engine::progress::StatusLine::start(
        format!("Jobs: {}", plan.jobs.iter().map(|j| j.numjobs).sum::<u32>()),
        planned,
    );
    let result = execute(&plan, &opts);
    drop(status);
    let failures = crate::sys::cleanup::run_cleanups();
    for f in failures {
        eprintln!("iolab: cleanup: {f}");
    }
    let (run, failed) = result?;
    let text = match plan.output_format {
        OutputFormat::Json => crate::report::json::render(&run),
        OutputFormat::Normal => {
            let pl = plan
                .jobs
                .first()
                .map(|j| j.percentile_list.clone())
                .unwrap_or_default();
            crate::report::text::render(&run, &pl) + &crate::engine::trace::render_run_text(&run)
        }
    };
    match &plan.output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("--output={}", path.display()))?
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
    }
    if let Some(dir) = &a.report {
        let path =
            crate::report::html::write_index(dir, &crate::report::html::render_run_html(&run))?;
        eprintln!("iolab: report written to {}", path.display());
    }
    if crate::sys::cleanup::stop_requested() {
        eprintln!("iolab: interrupted: the results above are partial");
        return Ok(130);
    }
    Ok(if failed { 1 } else { 0 })
}

/// iolab's own flags may stand anywhere among fio's options; take them out
/// before the fio parser sees the rest.
fn take_own_flags(a: &mut RunArgs) -> Result<()> {
    let mut rest = Vec::with_capacity(a.args.len());
    let mut it = std::mem::take(&mut a.args).into_iter();
    while let Some(arg) = it.next() {
        if arg == "--allow-destructive" {
            a.allow_destructive = true;
        } else if arg == "--trace" {
            a.trace = true;
        } else if arg == "--trace-sample" || arg.starts_with("--trace-sample=") {
            a.trace_sample = Some(match arg.strip_prefix("--trace-sample=") {
                Some(v) => v.to_string(),
                None => it.next().context(
                    "--trace-sample needs a percentage: --trace-sample=PCT[/PERIOD] \
                     (1-99, e.g. 20 or 10/500ms)",
                )?,
            });
        } else if let Some(dir) = arg.strip_prefix("--report=") {
            a.report = Some(dir.into());
        } else if arg == "--report" {
            let dir = it
                .next()
                .context("--report needs a directory: --report=DIR")?;
            a.report = Some(dir.into());
        } else {
            rest.push(arg);
        }
    }
    a.args = rest;
    Ok(())
}

/// Run a plan and build fio's result shape. Returns whether any job failed.
pub fn execute(plan: &RunPlan, opts: &EngineOptions) -> Result<(RunResult, bool)> {
    let clock_check = clock::self_check();
    let before = SystemSnapshot::take();
    let groups = run_jobs(&plan.jobs, opts)?;
    let after = SystemSnapshot::take();
    let system = SystemDelta::between(&before, &after);
    let mut failed = false;
    let mut jobs = Vec::new();
    for g in &groups {
        for r in &g.jobs {
            if let Some(e) = &r.error {
                eprintln!("iolab: {e}");
                failed = true;
            }
        }
        jobs.extend(group_results(&plan.jobs, g));
    }
    apply_group_aggregates(&mut jobs);
    let disks = disk_names(&plan.jobs);
    let disk_util = match (&before.disks, &after.disks) {
        (Some(b), Some(a)) if !disks.is_empty() => {
            let names: Vec<&str> = disks.iter().map(String::as_str).collect();
            DiskStats::util(b, a, &names)
        }
        _ => Vec::new(),
    };
    let extras = RunExtras {
        clock: Some(clock_check),
        system: Some(system),
        placement: groups.iter().filter_map(|g| g.placement.clone()).collect(),
        ..Default::default()
    };
    let mut run = RunResult::new(jobs, disk_util, extras);
    run.global_options = crate::report::model::OrderedMap(plan.global_options.clone());
    Ok((run, failed))
}

/// fio reports each clone on its own, or one entry per job with group_reporting.
fn group_results(specs: &[JobSpec], g: &GroupRun) -> Vec<JobResult> {
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
        let mut runtime = 0;
        for &k in &members {
            done[k] = true;
            if k != members[0] {
                rec.merge(&g.jobs[k].rec);
            }
            // A shared worker's CPU is counted once, on its first stream.
            cpu.add(&share_cpu(&g.jobs[k]));
            runtime = runtime.max(g.jobs[k].runtime_ns);
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
            elapsed_ns: g.wall_ns,
        };
        let mut jr = JobResult::from_recorder(&meta, &rec, &cpu);
        jr.iolab.engine = engine_extras(
            spec,
            &members.iter().map(|&k| &g.jobs[k]).collect::<Vec<_>>(),
        );
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

/// The `iolab.engine` object: how the run actually went, beyond fio's keys.
fn engine_extras(spec: &JobSpec, runs: &[&JobRun]) -> serde_json::Map<String, serde_json::Value> {
    use serde_json::{Value, json};
    let first = runs[0];
    let mut completion = first.completion;
    let mut backend = first.backend_stats;
    for r in &runs[1..] {
        completion.merge(&r.completion);
        backend.submit_calls += r.backend_stats.submit_calls;
        backend.wait_calls += r.backend_stats.wait_calls;
        backend.punted += r.backend_stats.punted;
        backend.interrupts += r.backend_stats.interrupts;
    }
    let mut m = serde_json::Map::new();
    m.insert("backend".into(), Value::from(first.backend));
    m.insert("completion_model".into(), Value::from(first.model.name()));
    m.insert("completion".into(), json!(completion));
    m.insert(
        "completion_summary".into(),
        Value::from(completion.describe(first.model)),
    );
    m.insert("backend_stats".into(), json!(backend));
    m.insert(
        "scheduler".into(),
        Value::from(crate::sched::kind_name(spec.scheduler)),
    );
    m.insert("scheduler_stats".into(), json!(first.sched));
    if !first.adaptive.is_empty() {
        m.insert("adaptive_decisions".into(), json!(first.adaptive));
    }
    if first.worker_streams > 1 {
        m.insert(
            "shared_worker_streams".into(),
            Value::from(first.worker_streams),
        );
    }
    if first.interrupted {
        m.insert("interrupted".into(), Value::from(true));
    }
    reliability_extras(&mut m, runs);
    if let Some(e) = &first.error {
        m.insert("error_message".into(), Value::from(e.clone()));
    }
    if let Some(t) = &first.trace {
        m.insert("trace".into(), t.clone());
    }
    m
}

/// Errors, request accounting, verification and injected faults: fio's
/// `total_err`/`first_error` (which fio prints with continue_on_error) and what
/// the conservation checks read.
fn reliability_extras(m: &mut serde_json::Map<String, serde_json::Value>, runs: &[&JobRun]) {
    use serde_json::{Value, json};
    let mut acct = crate::engine::worker::Accounting::default();
    let mut verify: Option<crate::workload::verify::VerifyStats> = None;
    for r in runs {
        acct.submitted += r.acct.submitted;
        acct.ok += r.acct.ok;
        acct.errors += r.acct.errors;
        acct.timeouts += r.acct.timeouts;
        acct.spurious += r.acct.spurious;
        acct.verify_failures += r.acct.verify_failures;
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
    m.insert(
        "total_err".into(),
        Value::from(acct.errors + acct.verify_failures),
    );
    m.insert("first_error".into(), Value::from(first_error));
    m.insert(
        "continue_on_error".into(),
        Value::from(runs[0].continue_on_error.name()),
    );
    m.insert("accounting".into(), json!(acct));
    if let Some(v) = verify {
        let mut o = json!(v);
        if let Some(f) = v.first_failure {
            o["first_failure_message"] = Value::from(f.to_string());
        }
        m.insert("verify".into(), o);
    }
    if let Some(f) = runs[0].injected {
        m.insert("faults_injected".into(), json!(f));
    }
}

/// Block devices under the jobs' targets, for fio's disk_util.
fn disk_names(jobs: &[JobSpec]) -> Vec<String> {
    let mut names: Vec<String> = jobs
        .iter()
        .filter(|j| j.ioengine != crate::job::Engine::Null)
        .filter_map(|j| j.filename.as_ref())
        .filter_map(|f| disk_of_path(std::path::Path::new(f)))
        .collect();
    names.sort();
    names.dedup();
    names
}
