//! `iolab run`: parse fio-style arguments, run the jobs, print fio-style results.

use std::io::Write;

use anyhow::{Context, Result, anyhow};

use crate::engine::{EngineOptions, run_jobs};
use crate::job::plan::{OutputFormats, RunPlan, parse_run_args};
use crate::measure::blktrace::Sampling;
use crate::measure::clock;
use crate::measure::cpu::SystemSnapshot;
use crate::report::assemble::{self, RunContext};
use crate::report::model::RunResult;

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
    if a.args.iter().any(|s| s == "--version") {
        // fio prints its version and exits, whatever else was given.
        println!("{}", crate::report::model::FIO_VERSION_STRING);
        return Ok(0);
    }
    if let Some(help) = crate::job::plan::cmdhelp(&a.args)? {
        print!("{help}");
        return Ok(0);
    }
    if a.args.is_empty() || a.args.iter().any(|s| s == "--help" || s == "-h") {
        println!(
            "usage: iolab run [JOBFILE...] [--opt=value ...] [--output-format=normal|json|json+|terse[,...]] [--status-interval=T] [--output=FILE] [--allow-destructive] [--cmdhelp[=OPTION|all]]\n\
             e.g.   iolab run --name=t --ioengine=null --size=1g --rw=randread --bs=4k --completion=poll --runtime=2 --time_based\n\
             Options are fio's (see docs/fio-compat.md for what iolab supports and adds)."
        );
        return Ok(if a.args.is_empty() { 1 } else { 0 });
    }
    let plan = parse_run_args(&a.args, &|k| std::env::var(k).ok())?;
    for w in &plan.warnings {
        eprintln!("iolab: warning: {w}");
    }
    for line in plan.debug.iter().chain(&plan.showcmd) {
        println!("{line}");
    }
    if plan.parse_only || plan.flags.showcmd {
        return Ok(0);
    }
    // fio's start-up lines (normal output only): on stdout before the run, or
    // at the head of the --output file.
    let startup = if plan.output_format.normal {
        crate::report::text::startup_lines(&plan.jobs)
    } else {
        String::new()
    };
    if plan.output.is_none() {
        print!("{startup}");
        std::io::stdout().flush()?;
    }
    crate::sys::cleanup::install_signal_handlers()?;
    let opts = EngineOptions {
        allow_destructive: a.allow_destructive,
        trace: a.trace || a.trace_sample.is_some(),
        trace_sampling: a
            .trace_sample
            .as_deref()
            .map(|v| parse_trace_sample(v).with_context(|| format!("--trace-sample={v}")))
            .transpose()?,
        ..Default::default()
    };
    let planned = plan
        .jobs
        .iter()
        .map(|j| j.runtime.unwrap_or_default() + j.ramp_time)
        .max()
        .filter(|d| !d.is_zero());
    let status = crate::engine::progress::StatusLine::start_with(
        format!("Jobs: {}", plan.jobs.iter().map(|j| j.numjobs).sum::<u32>()),
        planned,
        crate::engine::progress::EtaOptions {
            when: plan.flags.eta,
            every: plan.flags.eta_interval,
            newline: plan.flags.eta_newline,
        },
    );
    let f = plan.output_format;
    let printer = plan
        .status_interval
        .map(|every| {
            crate::engine::progress::StatusPrinter::start(
                every,
                !f.normal && !f.terse && (f.json || f.json_plus),
            )
        })
        .transpose()
        .context("--status-interval: cannot start the status thread")?;
    let result = execute(&plan, &opts);
    drop(printer);
    drop(status);
    let failures = crate::sys::cleanup::run_cleanups();
    for f in failures {
        eprintln!("iolab: cleanup: {f}");
    }
    let (run, failed) = result?;
    let text = render(&plan, &run);
    match &plan.output {
        Some(path) => std::fs::write(path, startup + &text)
            .with_context(|| format!("--output={}", path.display()))?,
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

/// The report in every format asked for, in fio's order: terse, then json
/// (json+ when either was asked with bins), then normal.
fn render(plan: &RunPlan, run: &RunResult) -> String {
    let f: OutputFormats = plan.output_format;
    let mut text = String::new();
    if f.terse {
        text += &crate::report::terse::render(run);
    }
    if f.json_plus {
        text += &crate::report::json::render_plus(run);
    } else if f.json {
        text += &crate::report::json::render(run);
    }
    if f.normal {
        let pl = plan
            .jobs
            .first()
            .map(|j| j.percentile_list.clone())
            .unwrap_or_default();
        text += &crate::report::text::render(run, &pl);
        text += &crate::report::text::render_traces(run);
    }
    text
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

/// Run a plan and hand the engine's results to `report::assemble` for fio's
/// result shape. Returns whether any job failed.
pub fn execute(plan: &RunPlan, opts: &EngineOptions) -> Result<(RunResult, bool)> {
    let clock_check = clock::self_check();
    let before = SystemSnapshot::take();
    let groups = run_jobs(&plan.jobs, opts)?;
    let after = SystemSnapshot::take();
    if plan.flags.bandwidth_log {
        crate::engine::agglog::write(&groups, std::path::Path::new("."))
            .context("--bandwidth-log: cannot write agg-*_bw.log in the current directory")?;
    }
    let mut failed = false;
    for e in groups
        .iter()
        .flat_map(|g| &g.jobs)
        .filter_map(|r| r.error.as_ref())
    {
        eprintln!("iolab: {e}");
        failed = true;
    }
    let cx = RunContext {
        clock: clock_check,
        before: &before,
        after: &after,
        global_options: &plan.global_options,
        fio_bins: plan.output_format.json_plus,
    };
    Ok((assemble::run_result(&plan.jobs, &groups, &cx), failed))
}

/// `--trace-sample=PCT[/PERIOD]`, e.g. `20`, `20%`, `10/500ms`, `5/2s` (the
/// period in fio's time units).
fn parse_trace_sample(s: &str) -> Result<Sampling> {
    let (pct, period) = match s.split_once('/') {
        Some((p, t)) => (
            p,
            crate::job::units::parse_time(t, crate::job::units::TimeUnit::Seconds, false)
                .map_err(|e| anyhow!("period {t:?}: {e}"))?,
        ),
        None => (s, Sampling::PERIOD),
    };
    let pct: u32 = pct.trim().trim_end_matches('%').parse().map_err(|_| {
        anyhow!("{pct:?} is not a percentage (PCT or PCT/PERIOD, e.g. 20 or 10/500ms)")
    })?;
    Ok(Sampling::new(pct, period)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn sampling_spec_is_checked() {
        let s = parse_trace_sample("20").unwrap();
        assert_eq!(s.traced, Duration::from_millis(200));
        assert!((s.traced_percent() - 20.0).abs() < 1e-9);
        let s = parse_trace_sample("10%/500ms").unwrap();
        assert_eq!(
            (s.traced, s.period),
            (Duration::from_millis(50), Duration::from_millis(500))
        );
        for bad in ["0", "100", "250/1s"] {
            let e = parse_trace_sample(bad).unwrap_err().to_string();
            assert!(e.contains("1-99"), "{e}");
        }
        for (bad, says) in [
            ("x", "percentage"),
            ("20/1ms", "too short"),
            ("20/xs", "period"),
        ] {
            let e = parse_trace_sample(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
