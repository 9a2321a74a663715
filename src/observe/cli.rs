//! The `iolab observe` command: its arguments, and the loop that attaches a
//! collector to the target, reports each interval and the total, and detaches.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::collector::{Backend, Collector};
use super::names::syscall_name;
use super::report::{InFlight, ObserveReport, Snapshot, build_report, render_text};
use super::target::{PidFd, Target, process_gone, process_tree_threads, spawn_held};
use crate::measure::clock::now_ns;
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
    let mut tracer = Collector::open(args.backend, args.buffer_kb, args.time_sample)?;
    let (mut target, label) = match args.pid {
        Some(p) => (Target::Existing { pid: p }, format!("pid {p}")),
        None => (spawn_held(&args.cmd)?, format!("`{}`", args.cmd.join(" "))),
    };
    let result = observe(
        &mut tracer,
        &mut target,
        &label,
        &args,
        (interval, duration),
        &mut *sink,
    );
    // Whatever happened, a held child must not wait forever: closing the pipe
    // without a byte makes it exit 127.
    if let Target::Child { go, .. } = &mut target {
        go.take();
    }
    let removed = tracer.remove();
    let code = result?;
    removed?;
    Ok(code)
}

fn observe(
    tracer: &mut Collector,
    target: &mut Target,
    label: &str,
    args: &ObserveArgs,
    (interval, duration): (Option<Duration>, Option<Duration>),
    out: &mut dyn Write,
) -> Result<u8> {
    let pid = target.pid();
    match target {
        Target::Child { go, .. } => {
            tracer.add_pids(&[pid])?;
            tracer.start()?;
            let mut g = go.take().expect("child is held until now");
            g.write_all(b"g").context("releasing the command")?;
        }
        Target::Existing { .. } => {
            // An empty set_event_pid means "trace everyone", so the list is filled
            // before tracing starts. event-fork covers threads created after their
            // parent is listed; re-list until none appeared in between.
            let mut known = process_tree_threads(pid)?;
            tracer.add_pids(&known)?;
            tracer.start()?;
            loop {
                let now = process_tree_threads(pid)?;
                let new: Vec<i32> = now.iter().copied().filter(|t| !known.contains(t)).collect();
                if new.is_empty() {
                    break;
                }
                tracer.add_pids(&new)?;
                known.extend(new);
            }
        }
    }
    let start = Snapshot::take()?;
    let t_end = duration.map(|d| start.t + d.as_nanos() as u64);
    let mut last = Snapshot {
        t: start.t,
        stat: start.stat.clone(),
        irq: start.irq.clone(),
    };
    let mut next_report = interval.map(|i| start.t + i.as_nanos() as u64);
    let mut index = 0u64;
    let mut events_at_last = 0u64;
    let mut exit_code: Option<u8> = None;
    // The tracefs tracer drains its buffers at this pace; the BPF counter has
    // nothing to drain. Either way the process's exit ends the wait at once.
    let poll_every = Duration::from_millis(50);
    let exited = PidFd::open(pid);
    loop {
        let mut wait = poll_every;
        for t in [next_report, t_end].into_iter().flatten() {
            wait = wait.min(Duration::from_nanos(t.saturating_sub(now_ns())));
        }
        match &exited {
            Some(fd) => fd.wait(wait),
            None => std::thread::sleep(wait),
        }
        tracer.poll()?;
        let now = now_ns();
        let gone = match target {
            Target::Child { pid, .. } => {
                let mut status = 0;
                // SAFETY: waiting for our own child without blocking.
                let r = unsafe { libc::waitpid(*pid, &mut status, libc::WNOHANG) };
                if r == *pid {
                    exit_code = Some(if libc::WIFEXITED(status) {
                        libc::WEXITSTATUS(status) as u8
                    } else {
                        128u8.wrapping_add(libc::WTERMSIG(status) as u8)
                    });
                    true
                } else {
                    r < 0
                }
            }
            Target::Existing { pid } => process_gone(*pid),
        };
        let stop = gone || cleanup::stop_requested() || t_end.is_some_and(|e| now >= e);
        if stop {
            break;
        }
        if let Some(nr) = next_report
            && now >= nr
        {
            let snap = Snapshot::take()?;
            index += 1;
            let p = tracer.take_interval()?;
            // Loss is checked every interval so a long run fails early.
            tracer.require_no_loss()?;
            let r = build_report(
                tracer,
                "interval",
                index,
                label,
                &p,
                &last,
                &snap,
                (tracer.events() - events_at_last, 0),
            );
            events_at_last = tracer.events();
            emit(out, &r, args.json)?;
            last = snap;
            next_report = Some(nr + interval.expect("set").as_nanos() as u64);
        }
    }
    tracer.stop()?;
    let end = Snapshot::take()?;
    if interval.is_some() && end.t > last.t {
        index += 1;
        let p = tracer.take_interval()?;
        let lost = tracer.lost_events()?;
        let r = build_report(
            tracer,
            "interval",
            index,
            label,
            &p,
            &last,
            &end,
            (tracer.events() - events_at_last, lost),
        );
        emit(out, &r, args.json)?;
    }
    let p = tracer.total_period()?;
    let lost = tracer.lost_events()?;
    let mut total = build_report(
        tracer,
        "total",
        0,
        label,
        &p,
        &start,
        &end,
        (tracer.events(), lost),
    );
    total.in_flight = tracer
        .in_flight()
        .into_iter()
        .map(|(tid, nr)| InFlight {
            tid,
            syscall: syscall_name(nr),
        })
        .collect();
    emit(out, &total, args.json)?;
    tracer.require_no_loss()?;
    Ok(exit_code.unwrap_or(0))
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
