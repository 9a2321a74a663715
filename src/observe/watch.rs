//! The observing loop, one for `iolab observe` and the library's
//! `observe_command`: open a collector, start or attach to the target, report
//! each interval and the total, detach, and leave nothing behind.

use std::io::Write;
use std::time::Duration;

use super::collector::{Backend, Collector, CollectorError};
use super::names::syscall_name;
use super::report::{InFlight, ObserveReport, Snapshot, build_report};
use super::target::{PidFd, SpawnError, Target, process_gone, process_tree_threads, spawn_held};
use crate::measure::clock::now_ns;
use crate::measure::cpu::CpuSourceError;
use crate::sys::cleanup;

/// What to observe and how; checked by the caller (the CLI checks its
/// arguments, the library its command).
pub(crate) struct Plan<'a> {
    /// `None`: eBPF where it works, else tracefs.
    pub backend: Option<Backend>,
    /// Kernel trace buffer per CPU, KiB (tracefs).
    pub buffer_kb: u64,
    /// Time one call in this many (bpf; 1: every call).
    pub time_sample: u32,
    /// A running process to attach to, or else `cmd` to start.
    pub pid: Option<i32>,
    /// The command to start and observe (program and arguments).
    pub cmd: &'a [String],
    /// Report every so often, besides the total.
    pub interval: Option<Duration>,
    /// Stop after this long.
    pub duration: Option<Duration>,
}

/// Observe what `plan` says until the process exits, the duration passes or
/// a stop is requested (Ctrl-C where the CLI installed its handlers). Each
/// report, the intervals' and then the total, goes to `report` as it is made;
/// an event the kernel dropped fails the observation after the total is
/// reported (exact counts are the promise). Returns the exit status of a
/// command started here (128 + signal when a signal ended it), 0 for a
/// process attached to.
pub(crate) fn observe<E>(
    plan: &Plan,
    report: &mut dyn FnMut(&ObserveReport) -> Result<(), E>,
) -> Result<u8, E>
where
    E: From<CollectorError> + From<SpawnError> + From<CpuSourceError>,
{
    let mut collector = Collector::open(plan.backend, plan.buffer_kb, plan.time_sample)?;
    let started = match plan.pid {
        Some(p) => Ok((Target::Existing { pid: p }, format!("pid {p}"))),
        None => spawn_held(plan.cmd).map(|t| (t, format!("`{}`", plan.cmd.join(" ")))),
    };
    let (mut target, label) = match started {
        Ok(t) => t,
        Err(e) => {
            let _ = collector.remove();
            return Err(e.into());
        }
    };
    let result = watch(&mut collector, &mut target, &label, plan, report);
    // Whatever happened, a held child must not wait forever: closing the pipe
    // without a byte makes it exit 127.
    if let Target::Child { go, .. } = &mut target {
        go.take();
    }
    let removed = collector.remove();
    let code = result?;
    removed?;
    Ok(code)
}

fn watch<E>(
    tracer: &mut Collector,
    target: &mut Target,
    label: &str,
    plan: &Plan,
    report: &mut dyn FnMut(&ObserveReport) -> Result<(), E>,
) -> Result<u8, E>
where
    E: From<CollectorError> + From<SpawnError> + From<CpuSourceError>,
{
    let pid = target.pid();
    match target {
        Target::Child { go, .. } => {
            tracer.add_pids(&[pid])?;
            tracer.start()?;
            let mut g = go.take().expect("child is held until now");
            g.write_all(b"g").map_err(SpawnError::Release)?;
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
    let (interval, duration) = (plan.interval, plan.duration);
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
            report(&r)?;
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
        report(&r)?;
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
    report(&total)?;
    tracer.require_no_loss()?;
    Ok(exit_code.unwrap_or(0))
}
