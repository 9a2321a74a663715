//! The `iolab observe` command: its arguments, checked, and where its reports
//! go; the observing itself is [`super::watch`]'s.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::collector::Backend;
use super::report::{ObserveReport, render_text};
use super::target::process_gone;
use super::watch::{Plan, observe};
use crate::sys::cleanup;

#[derive(clap::Args, Debug)]
#[command(
    about = "Count system calls, context switches and interrupts of a process or command",
    long_about = "Count system calls, context switches and interrupts of a process or command. \
The report goes to stderr (or to -o FILE), as strace's does, so the command's stdout stays its \
own; iolab observe -- CMD exits with CMD's status. Needs root (eBPF or tracefs).",
    after_help = "Examples:\n  iolab observe -- pgbench -c 4 -T 10 bench\n  \
                  iolab observe --pid 1234 --interval 1 --duration 10 --json -o pg.jsonl"
)]
pub struct ObserveArgs {
    /// Observe this running process, with all its threads and child processes.
    #[arg(long, value_name = "PID")]
    pub pid: Option<i32>,
    /// Print a report every SECS seconds (and the total at the end).
    #[arg(long, value_name = "SECS")]
    pub interval: Option<f64>,
    /// Emit JSON (one object per line: each interval, then the total).
    #[arg(long)]
    pub json: bool,
    /// Write the report to FILE (created or truncated) instead of stderr.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Stop after SECS seconds (default: when the process exits, or on Ctrl-C).
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// How to count: `bpf` (in-kernel counters; the default where eBPF works)
    /// or `tracefs` (a trace instance streaming events to iolab).
    #[arg(long, value_enum, value_name = "BACKEND")]
    pub backend: Option<Backend>,
    /// Time one system call in N, chosen at random (bpf backend; a power of
    /// two). Every call is still counted; averages and maxima come from the
    /// timed calls, totals are average x calls. Cuts the cost per call: the
    /// clock is read around 1/N of the calls only.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub time_sample: u32,
    /// Kernel trace buffer per CPU, in KiB (tracefs backend).
    #[arg(long, value_name = "KIB", default_value_t = 65536)]
    pub buffer_kb: u64,
    /// Command to run and observe (after `--`).
    #[arg(last = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

/// The report goes where strace's goes: stderr, or `-o FILE`. Each report is
/// rendered first and written with one `write_all`, which holds stderr's lock
/// for the whole report: the signal watcher's "SIGINT received" line, printed
/// from another thread, lands before or after a JSON line, never inside it.
fn emit(out: &mut dyn Write, r: &ObserveReport, json: bool) -> Result<()> {
    let text = if json {
        let mut line = serde_json::to_string(r)?;
        line.push('\n');
        line
    } else {
        render_text(r)
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}
fn positive_secs(name: &str, v: Option<f64>) -> Result<Option<Duration>> {
    match v {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => bail!("--{name}: {s} is not a positive number of seconds (e.g. 1 or 0.5)"),
    }
}

pub fn main(args: ObserveArgs) -> Result<u8> {
    let interval = positive_secs("interval", args.interval)?;
    let duration = positive_secs("duration", args.duration)?;
    match (args.pid, args.cmd.is_empty()) {
        (Some(_), false) => bail!("give either --pid PID or -- CMD ARGS..., not both"),
        (None, true) => bail!("nothing to observe: give --pid PID or -- CMD ARGS..."),
        _ => {}
    }
    if let Some(p) = args.pid
        && (p <= 0 || process_gone(p))
    {
        bail!("--pid {p}: no such running process");
    }
    if !(64..=4 * 1024 * 1024).contains(&args.buffer_kb) {
        bail!(
            "--buffer-kb {}: must be between 64 and 4194304 KiB per CPU",
            args.buffer_kb
        );
    }
    if !crate::sys::is_root() {
        return Err(crate::sys::needs_root("observe (tracefs instances and tracepoints)").into());
    }
    // Created before anything is attached, so a bad path costs nothing.
    let mut sink: Box<dyn Write> = match &args.output {
        Some(p) => Box::new(BufWriter::new(
            File::create(p).with_context(|| format!("-o {}", p.display()))?,
        )),
        None => Box::new(std::io::stderr()),
    };
    cleanup::install_signal_handlers(crate::sys::cleanup::SecondSignal::UndoAndExit)?;
    let plan = Plan {
        backend: args.backend,
        buffer_kb: args.buffer_kb,
        time_sample: args.time_sample,
        pid: args.pid,
        cmd: &args.cmd,
        interval,
        duration,
    };
    observe(&plan, &mut |r: &ObserveReport| {
        emit(&mut *sink, r, args.json)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_seconds() {
        assert!(positive_secs("interval", Some(0.0)).is_err());
        assert!(positive_secs("interval", Some(f64::NAN)).is_err());
        assert!(positive_secs("duration", Some(-1.0)).is_err());
        assert_eq!(
            positive_secs("interval", Some(0.5)).unwrap(),
            Some(Duration::from_millis(500))
        );
    }
}
