//! `iolab observe`: system calls (exact count, total and average time per name),
//! context switches and interrupts of a process tree, at a fraction of strace's cost.
//!
//! System calls and per-thread context switches come from tracepoints
//! (raw_syscalls, sched) in a tracefs instance of our own, filtered in the kernel to
//! the process, its threads and its children; nothing is ptraced. CPU time split,
//! system-wide context switches and interrupts per source are /proc deltas. Any event
//! the kernel drops makes the run fail loudly, since exact counts are the promise.

pub mod bpf;
pub mod collector;
pub mod syscall_table;
pub mod tracer;

use std::ffi::CString;
use std::fs;
use std::io::Write;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::measure::clock::now_ns;
use crate::measure::cpu::{CpuPercent, Interrupts, ProcStat};
use crate::sys::cleanup;
use collector::{Backend, Collector};
use tracer::{Period, ThreadStat, syscall_name};

#[derive(clap::Args, Debug)]
#[command(
    about = "Count system calls, context switches and interrupts of a process or command",
    after_help = "Examples:\n  iolab observe -- pgbench -c 4 -T 10 bench\n  \
                  iolab observe --pid 1234 --interval 1 --duration 10 --json"
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

/// One syscall row of a report.
#[derive(Clone, Debug, Serialize)]
pub struct SyscallRow {
    pub name: String,
    pub nr: usize,
    pub calls: u64,
    pub errors: u64,
    /// Calls whose enter and return were both seen (the time covers these).
    pub timed: u64,
    pub total_ns: u64,
    pub avg_ns: f64,
    pub max_ns: u64,
}

/// One interrupt source's delta.
#[derive(Clone, Debug, Serialize)]
pub struct IrqRow {
    pub irq: String,
    pub desc: String,
    pub count: u64,
    pub per_s: f64,
}

/// Context switches of the observed tasks.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TaskSwitches {
    pub voluntary: u64,
    pub involuntary: u64,
    pub voluntary_per_s: f64,
    pub involuntary_per_s: f64,
}

/// A system call still running when the report was made.
#[derive(Clone, Debug, Serialize)]
pub struct InFlight {
    pub tid: i32,
    pub syscall: String,
}

/// One report: an interval or the whole run.
#[derive(Clone, Debug, Serialize)]
pub struct ObserveReport {
    /// "interval" or "total".
    pub kind: &'static str,
    pub index: u64,
    pub target: String,
    /// Collector that counted: "bpf" or "tracefs".
    pub backend: &'static str,
    pub elapsed_s: f64,
    /// System-wide /proc/stat split over the period.
    pub cpu: CpuPercent,
    pub system_ctxt_per_s: f64,
    pub tasks: TaskSwitches,
    /// System-wide /proc/interrupts deltas, busiest first.
    pub interrupts: Vec<IrqRow>,
    pub syscalls: Vec<SyscallRow>,
    pub syscalls_total: u64,
    /// One call in this many was timed, at random (1: every call); above 1,
    /// each row's total_ns is its avg_ns x calls.
    pub time_sample: u32,
    pub threads: Vec<ThreadStat>,
    pub forks: u64,
    pub exits: u64,
    pub trace_events: u64,
    pub lost_events: u64,
    /// Total report only: calls entered and not returned when observing stopped.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub in_flight: Vec<InFlight>,
}

struct Snapshot {
    t: u64,
    stat: ProcStat,
    irq: Interrupts,
}

impl Snapshot {
    fn take() -> Result<Snapshot> {
        Ok(Snapshot {
            t: now_ns(),
            stat: ProcStat::read()?,
            irq: Interrupts::read()?,
        })
    }
}

#[allow(clippy::too_many_arguments)]
fn build_report(
    collector: &Collector,
    kind: &'static str,
    index: u64,
    target: &str,
    p: &Period,
    a: &Snapshot,
    b: &Snapshot,
    (trace_events, lost_events): (u64, u64),
) -> ObserveReport {
    let secs = (b.t.saturating_sub(a.t)) as f64 / 1e9;
    let rate = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let st = ProcStat::delta(&a.stat, &b.stat);
    let irq = Interrupts::delta(&a.irq, &b.irq);
    let time_one_in = collector.time_one_in();
    let syscalls: Vec<SyscallRow> = p
        .syscall_rows()
        .into_iter()
        .map(|(nr, s)| SyscallRow {
            name: syscall_name(nr),
            nr,
            calls: s.calls,
            errors: s.errors,
            timed: s.timed,
            total_ns: if time_one_in > 1 && s.timed > 0 {
                (s.total_ns as f64 / s.timed as f64 * s.calls as f64).round() as u64
            } else {
                s.total_ns
            },
            avg_ns: if s.timed > 0 {
                s.total_ns as f64 / s.timed as f64
            } else {
                0.0
            },
            max_ns: s.max_ns,
        })
        .collect();
    let (vol, invol) = (p.voluntary(), p.involuntary());
    ObserveReport {
        kind,
        index,
        target: target.to_string(),
        backend: collector.backend().name(),
        elapsed_s: secs,
        cpu: st.total.percent(),
        system_ctxt_per_s: rate(st.ctxt),
        tasks: TaskSwitches {
            voluntary: vol,
            involuntary: invol,
            voluntary_per_s: rate(vol),
            involuntary_per_s: rate(invol),
        },
        interrupts: irq
            .active()
            .into_iter()
            .map(|s| IrqRow {
                irq: s.irq.clone(),
                desc: s.desc.clone(),
                count: s.total,
                per_s: rate(s.total),
            })
            .collect(),
        syscalls_total: syscalls.iter().map(|s| s.calls).sum(),
        time_sample: time_one_in,
        syscalls,
        threads: p.thread_rows(),
        forks: p.forks,
        exits: p.exits,
        trace_events,
        lost_events,
        in_flight: Vec::new(),
    }
}

/// Text rendering of one report.
pub fn render_text(r: &ObserveReport) -> String {
    let mut s = String::new();
    let title = if r.kind == "total" {
        format!("total for {} over {:.3} s", r.target, r.elapsed_s)
    } else {
        format!("interval {} ({:.3} s) {}", r.index, r.elapsed_s, r.target)
    };
    s.push_str(&format!("--- {title} ---\n"));
    let c = &r.cpu;
    s.push_str(&format!(
        "cpu (all CPUs): user {:.1}%  nice {:.1}%  system {:.1}%  idle {:.1}%  iowait {:.1}%  \
         irq {:.1}%  softirq {:.1}%  steal {:.1}%\n",
        c.user, c.nice, c.system, c.idle, c.iowait, c.irq, c.softirq, c.steal
    ));
    s.push_str(&format!(
        "context switches/s: system {:.0}; observed tasks voluntary {:.1} involuntary {:.1} \
         ({} + {})\n",
        r.system_ctxt_per_s,
        r.tasks.voluntary_per_s,
        r.tasks.involuntary_per_s,
        r.tasks.voluntary,
        r.tasks.involuntary
    ));
    s.push_str("interrupts (all CPUs):\n");
    if r.interrupts.is_empty() {
        s.push_str("  none\n");
    }
    for i in r.interrupts.iter().take(12) {
        s.push_str(&format!(
            "  {:>6} {:>10} {:>10.1}/s  {}\n",
            i.irq, i.count, i.per_s, i.desc
        ));
    }
    if r.interrupts.len() > 12 {
        s.push_str(&format!("  ... {} more sources\n", r.interrupts.len() - 12));
    }
    let sampled = if r.time_sample > 1 {
        format!(
            "; times from 1 call in {} at random, total = avg x calls",
            r.time_sample
        )
    } else {
        String::new()
    };
    s.push_str(&format!(
        "system calls (observed tasks): {} calls{sampled}\n  {:<22} {:>11} {:>8} {:>13} {:>11} {:>11}\n",
        r.syscalls_total, "syscall", "calls", "errors", "total (ms)", "avg (us)", "max (us)"
    ));
    for sc in &r.syscalls {
        if sc.timed == 0 {
            // exit, exit_group, calls still blocked (no return was seen), or, with
            // --time-sample, calls none of which was picked for timing.
            s.push_str(&format!(
                "  {:<22} {:>11} {:>8} {:>13} {:>11} {:>11}\n",
                sc.name, sc.calls, sc.errors, "-", "-", "-"
            ));
            continue;
        }
        s.push_str(&format!(
            "  {:<22} {:>11} {:>8} {:>13.3} {:>11.3} {:>11.3}\n",
            sc.name,
            sc.calls,
            sc.errors,
            sc.total_ns as f64 / 1e6,
            sc.avg_ns / 1e3,
            sc.max_ns as f64 / 1e3
        ));
    }
    if !r.threads.is_empty() {
        s.push_str(&format!(
            "threads:\n  {:>8} {:<16} {:>11} {:>10} {:>12}\n",
            "tid", "comm", "syscalls", "voluntary", "involuntary"
        ));
        for t in &r.threads {
            s.push_str(&format!(
                "  {:>8} {:<16} {:>11} {:>10} {:>12}\n",
                t.tid, t.comm, t.syscalls, t.voluntary, t.involuntary
            ));
        }
    }
    if !r.in_flight.is_empty() {
        s.push_str("still inside a system call when observing stopped:");
        for f in &r.in_flight {
            s.push_str(&format!(" {}:{}", f.tid, f.syscall));
        }
        s.push('\n');
    }
    let how = if r.backend == "bpf" {
        "counted in the kernel (bpf)"
    } else {
        "read (tracefs)"
    };
    s.push_str(&format!(
        "events: {} {how}, {} lost; forks {}, exits {}\n",
        r.trace_events, r.lost_events, r.forks, r.exits
    ));
    s
}

fn emit(r: &ObserveReport, json: bool) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, r)?;
        out.write_all(b"\n")?;
    } else {
        out.write_all(render_text(r).as_bytes())?;
    }
    out.flush()?;
    Ok(())
}

/// The observed process: a command we started, or an existing pid.
enum Target {
    Child { pid: i32, go: Option<fs::File> },
    Existing { pid: i32 },
}

impl Target {
    fn pid(&self) -> i32 {
        match self {
            Target::Child { pid, .. } | Target::Existing { pid } => *pid,
        }
    }
}

/// fork a child that waits for one byte on a pipe before exec'ing `cmd`, so the
/// tracer can be set up on its pid before the command's first system call.
fn spawn_held(cmd: &[String]) -> Result<Target> {
    let argv: Vec<CString> = cmd
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .context("command arguments must not contain NUL bytes")?;
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("creating the start pipe");
    }
    let (rd, wr) = (fds[0], fds[1]);
    let msg = b"iolab observe: cannot execute the command\n";
    // SAFETY: the child only calls async-signal-safe functions (read, close,
    // execvp, write, _exit) on memory prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error()).context("fork");
    }
    if pid == 0 {
        // SAFETY: see above.
        unsafe {
            libc::close(wr);
            let mut b = 0u8;
            let n = libc::read(rd, (&mut b as *mut u8).cast(), 1);
            if n == 1 {
                libc::execvp(ptrs[0], ptrs.as_ptr());
                libc::write(2, msg.as_ptr().cast(), msg.len());
            }
            libc::_exit(127);
        }
    }
    // SAFETY: rd is ours; the parent keeps only the write end.
    unsafe { libc::close(rd) };
    // SAFETY: wr is an open descriptor we own from here on.
    let go = unsafe { <fs::File as std::os::fd::FromRawFd>::from_raw_fd(wr) };
    Ok(Target::Child { pid, go: Some(go) })
}

/// All threads of `pid` and of its descendant processes.
pub(crate) fn process_tree_threads(pid: i32) -> Result<Vec<i32>> {
    let mut parent_of: Vec<(i32, i32)> = Vec::new();
    for e in fs::read_dir("/proc")?.flatten() {
        let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Ok(stat) = fs::read_to_string(format!("/proc/{p}/stat"))
            && let Some(ppid) = stat_ppid(&stat)
        {
            parent_of.push((p, ppid));
        }
    }
    let mut procs = vec![pid];
    let mut i = 0;
    while i < procs.len() {
        let p = procs[i];
        procs.extend(parent_of.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    let mut tids = Vec::new();
    for p in procs {
        if let Ok(rd) = fs::read_dir(format!("/proc/{p}/task")) {
            tids.extend(
                rd.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()),
            );
        }
    }
    tids.sort_unstable();
    tids.dedup();
    Ok(tids)
}

/// ppid from /proc/PID/stat (the comm field may contain spaces and parentheses).
fn stat_ppid(stat: &str) -> Option<i32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Whether a pid is gone or a zombie.
pub(crate) fn process_gone(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rfind(')')
            .and_then(|i| s[i + 1..].split_whitespace().next())
            .is_none_or(|st| st == "Z" || st == "X"),
        Err(_) => true,
    }
}

/// A pidfd: readable once the process has exited, so the observer wakes at once
/// instead of at its next poll.
struct PidFd(std::os::fd::OwnedFd);

impl PidFd {
    /// None where pidfd_open is missing (Linux < 5.3); callers then sleep.
    fn open(pid: i32) -> Option<PidFd> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return None;
        }
        // SAFETY: a fresh descriptor nothing else owns.
        Some(PidFd(unsafe {
            <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as i32)
        }))
    }

    /// Wait until the process exits, `d` passes, or a signal arrives.
    fn wait(&self, d: Duration) {
        let mut p = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(&self.0),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = d.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd; EINTR (Ctrl-C) just ends the wait early.
        unsafe { libc::poll(&mut p, 1, ms) };
    }
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
        return Err(crate::sys::need_root(
            "observe (tracefs instances and tracepoints)",
        ));
    }
    cleanup::install_signal_handlers()?;
    let mut tracer = Collector::open(args.backend, args.buffer_kb, args.time_sample)?;
    let (mut target, label) = match args.pid {
        Some(p) => (Target::Existing { pid: p }, format!("pid {p}")),
        None => (spawn_held(&args.cmd)?, format!("`{}`", args.cmd.join(" "))),
    };
    let result = observe(&mut tracer, &mut target, &label, &args, interval, duration);
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
    interval: Option<Duration>,
    duration: Option<Duration>,
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
            emit(&r, args.json)?;
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
        emit(&r, args.json)?;
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
    emit(&total, args.json)?;
    tracer.require_no_loss()?;
    Ok(exit_code.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ppid_from_stat_with_odd_comm() {
        assert_eq!(stat_ppid("42 (a) b) c) S 7 42 42 0"), Some(7));
        assert_eq!(stat_ppid("garbage"), None);
    }

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

    #[test]
    fn own_process_tree_contains_this_thread() {
        let me = std::process::id() as i32;
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let t = process_tree_threads(me).unwrap();
        assert!(t.contains(&me) && t.contains(&tid), "{t:?}");
        assert!(!process_gone(me));
    }
}
