//! `iolab run`: parse fio-style arguments, run the jobs, print fio-style results.

use std::ffi::{OsStr, OsString};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, anyhow};
use clap::builder::NonEmptyStringValueParser;

use crate::engine::{EngineOptions, run_jobs};
use crate::job::plan::{OutputFormats, RunPlan, parse_run_args};
use crate::measure::blktrace::Sampling;
use crate::measure::clock;
use crate::measure::cpu::SystemSnapshot;
use crate::report::assemble::{self, RunContext};
use crate::report::model::RunResult;

/// `iolab run`'s own flags: clap parses them and generates the help; fio's job
/// options stay one free-form list in order (`--name=x` starts a job), which
/// `job::plan` reads. The flags `job::plan` owns (fio's run-wide ones and
/// iolab's caps) are handed back to it as `--key=value`, so it stays the one
/// parser of their values.
#[derive(clap::Args, Debug)]
#[command(
    about = "Run fio-compatible jobs: job files and/or fio's --option=value arguments",
    long_about = "Run fio-compatible jobs. The arguments are fio's: job files, and fio's job \
options as --option=value (before any --name they are global; --name=NAME starts a job; a \
value may also be the next argument). The flags below steer the whole run and may stand \
anywhere among them. iolab adds its own job options (--completion=, --iosched=, null_*, \
placement=, ...): --cmdhelp lists every job option iolab knows, and man iolab-run \
describes each.",
    after_help = "fio's job options (--name, --rw, --bs, --ioengine, --iodepth, ...): \
`iolab run --cmdhelp` lists them, `--cmdhelp=OPTION` describes one, iolab-run(1) and \
docs/fio-compat.md describe them all.\n\n\
Example:\n  iolab run --name=t --ioengine=null --size=1g --rw=randread --bs=4k \\\n            \
--completion=poll --runtime=2 --time_based",
    arg_required_else_help = true,
    args_override_self = true
)]
pub struct RunArgs {
    /// Report formats: normal, json, json+, terse, or a comma list (normal,json); fio's.
    #[arg(long, value_name = "FORMAT[,FORMAT...]", value_parser = NonEmptyStringValueParser::new())]
    pub output_format: Option<String>,
    /// Write the report to FILE instead of stdout (fio's).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Every T (at least 100ms) print the totals so far and the rates of the last T (fio's).
    #[arg(long, value_name = "T", value_parser = NonEmptyStringValueParser::new())]
    pub status_interval: Option<String>,
    /// Run only job section NAME of the job files; repeatable ([global] always applies).
    #[arg(long, value_name = "NAME", value_parser = NonEmptyStringValueParser::new())]
    pub section: Vec<String>,
    /// Parse and check the jobs, run nothing (fio's).
    #[arg(long)]
    pub parse_only: bool,
    /// Help on fio's job options instead of running: all of them by section (no value or
    /// `all`), one (`--cmdhelp=bs`), or the docs table (`markdown`).
    #[arg(
        long,
        value_name = "OPTION|all|markdown",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "all"
    )]
    pub cmdhelp: Option<String>,
    /// No job runs longer than TIME (runtime and ramp_time capped), whatever its job file says.
    #[arg(long, value_name = "TIME", value_parser = NonEmptyStringValueParser::new())]
    pub max_runtime: Option<String>,
    /// No job covers more than SIZE bytes (size, offset capped; a job without a size gets SIZE).
    #[arg(long, value_name = "SIZE", value_parser = NonEmptyStringValueParser::new())]
    pub max_size: Option<String>,
    /// Put every job's files in DIR (a filename keeps its last component; null jobs unchanged).
    #[arg(long, value_name = "DIR")]
    pub scratch_dir: Option<PathBuf>,
    /// Write to block devices even if they hold a filesystem, are mounted or in use.
    #[arg(long)]
    pub allow_destructive: bool,
    /// Also write an HTML report of the run (latency histogram, CDF, IOPS over time) to DIR/index.html.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Trace the block device under each job (root, tracefs) and add btt's stage table, a latency histogram and the user / block / driver+device / completion split.
    #[arg(long)]
    pub trace: bool,
    /// --trace for only PCT percent (1-99) of every PERIOD (default 1s), so tracing costs about that share of its full cost; the table covers the requests inside the windows.
    #[arg(long, value_name = "PCT[/PERIOD]", value_parser = NonEmptyStringValueParser::new())]
    pub trace_sample: Option<String>,
    /// Print the notes on fio options iolab runs otherwise than fio on stderr even when it
    /// is not a terminal (they are always in the JSON report's iolab.notes).
    #[arg(long)]
    pub notes: bool,
    /// Job files and fio's job options (--option=value), in fio's order.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "JOBFILE|--option=value"
    )]
    pub args: Vec<String>,
}

/// clap reads everything from the first job file or fio option on as that
/// free-form list, but iolab's flags may stand anywhere among fio's options, as
/// fio's own do (`iolab run --name=t --rw=read --output-format=json`). So
/// `iolab run`'s flags (each named by the clap definition of `run`, with its
/// value) move in front of the list, which keeps its order; after a `--`
/// nothing moves. Other commands' arguments are returned as they are.
pub fn own_flags_first(cli: &clap::Command, argv: Vec<OsString>) -> Vec<OsString> {
    let Some(run) = cli.find_subcommand("run") else {
        return argv;
    };
    if argv.get(1).map(OsString::as_os_str) != Some(OsStr::new("run")) {
        return argv;
    }
    let mut it = argv.into_iter().peekable();
    let mut front: Vec<OsString> = it.by_ref().take(2).collect();
    let mut rest = Vec::new();
    while let Some(arg) = it.next() {
        if arg == "--" {
            rest.push(arg);
            rest.extend(it.by_ref());
            break;
        }
        let text = arg.to_str().unwrap_or("");
        if text == "-h" || text == "--help" {
            front.push(arg);
            continue;
        }
        let Some((key, has_value)) = text
            .strip_prefix("--")
            .map(|o| (o.split('=').next().unwrap_or(o), o.contains('=')))
        else {
            rest.push(arg);
            continue;
        };
        let Some(flag) = run
            .get_arguments()
            .find(|a| a.get_long() == Some(key) && !a.is_positional())
        else {
            rest.push(arg);
            continue;
        };
        let takes_next =
            !has_value && flag.get_action().takes_values() && !flag.is_require_equals_set();
        if !takes_next {
            front.push(arg);
            continue;
        }
        // As `job::plan` does for fio's options: the next argument is the
        // value unless it is an option itself; then the value is missing, and
        // an empty one makes clap say so.
        match it.next_if(|v| !v.to_str().is_some_and(|v| v.starts_with("--"))) {
            Some(value) => front.extend([arg, value]),
            None => front.push(format!("--{key}=").into()),
        }
    }
    front.extend(rest);
    front
}

impl RunArgs {
    /// The job options with the run-wide flags `job::plan` reads put back as
    /// `--key=value` (their place among the job options means nothing).
    fn plan_args(&self) -> Vec<String> {
        let mut v = self.args.clone();
        let mut put = |key: &str, value: Option<String>| {
            if let Some(value) = value {
                v.push(format!("--{key}={value}"));
            }
        };
        put("output-format", self.output_format.clone());
        put(
            "output",
            self.output.as_ref().map(|p| p.display().to_string()),
        );
        put("status-interval", self.status_interval.clone());
        put("max-runtime", self.max_runtime.clone());
        put("max-size", self.max_size.clone());
        put(
            "scratch-dir",
            self.scratch_dir.as_ref().map(|p| p.display().to_string()),
        );
        for s in &self.section {
            v.push(format!("--section={s}"));
        }
        if self.parse_only {
            v.push("--parse-only".into());
        }
        v
    }
}

pub fn main(a: RunArgs) -> Result<u8> {
    if let Some(path) = inflate_log_arg(&a.args) {
        // fio's --inflate-log: print a log_store_compressed log's text.
        let out = std::io::stdout();
        crate::measure::iolog::compress::inflate(std::path::Path::new(path), &mut out.lock())
            .with_context(|| format!("--inflate-log={path}: not a log fio or iolab compressed"))?;
        return Ok(0);
    }
    if a.args.iter().any(|s| s == "--version") {
        // fio prints its version and exits, whatever else was given.
        println!("{}", crate::report::model::FIO_VERSION_STRING);
        return Ok(0);
    }
    if let Some(which) = &a.cmdhelp {
        print!("{}", crate::job::table::cmdhelp(Some(which))?);
        return Ok(0);
    }
    let plan = parse_run_args(&a.plan_args(), &|k| std::env::var(k).ok())?;
    for w in &plan.warnings {
        eprintln!("iolab: warning: {w}");
    }
    // A note is a fact about the run, not a problem with the job: it goes with
    // the results (JSON `iolab.notes`), and on stderr only to a person watching
    // (or with --notes), so scripts written for fio, which prints nothing for
    // these options, see the stderr they expect.
    if a.notes || std::io::stderr().is_terminal() {
        for n in &plan.notes {
            eprintln!("iolab: note: {n}");
        }
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
    crate::sys::cleanup::install_signal_handlers(crate::sys::cleanup::SecondSignal::UndoAndExit)?;
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
    let mut run = assemble::run_result(&plan.jobs, &groups, &cx);
    run.iolab.notes.0.extend(
        plan.notes
            .iter()
            .map(|n| (n.option.clone(), n.note.clone())),
    );
    Ok((run, failed))
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

/// fio's `--inflate-log=FILE` (a command of its own: nothing else runs).
fn inflate_log_arg(args: &[String]) -> Option<&str> {
    args.iter().find_map(|a| a.strip_prefix("--inflate-log="))
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
