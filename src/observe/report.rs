//! One observe report (an interval or the whole run): the counts of a period
//! joined with /proc deltas, and its text rendering. JSON is serde's rendering
//! of the same value.

use serde::Serialize;

use super::collector::Collector;
use super::names::syscall_name;
use super::period::{Period, ThreadStat};
use crate::measure::clock::now_ns;
use crate::measure::cpu::{CpuPercent, CpuSourceError, Interrupts, ProcStat};

/// One syscall row of a report.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
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
#[non_exhaustive]
pub struct IrqRow {
    pub irq: String,
    pub desc: String,
    pub count: u64,
    pub per_s: f64,
}

/// Context switches of the observed tasks.
#[derive(Clone, Copy, Debug, Serialize)]
#[non_exhaustive]
pub struct TaskSwitches {
    pub voluntary: u64,
    pub involuntary: u64,
    pub voluntary_per_s: f64,
    pub involuntary_per_s: f64,
}

/// A system call still running when the report was made.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct InFlight {
    pub tid: i32,
    pub syscall: String,
}

/// One report: an interval or the whole run.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct ObserveReport {
    /// "interval" or "total".
    pub kind: &'static str,
    /// The interval's number (0 for the total report).
    pub index: u64,
    /// What was observed: the command line or `pid N`.
    pub target: String,
    /// Collector that counted: "bpf" or "tracefs".
    pub backend: &'static str,
    /// Seconds the report covers.
    pub elapsed_s: f64,
    /// System-wide /proc/stat split over the period.
    pub cpu: CpuPercent,
    /// Context switches per second, system-wide.
    pub system_ctxt_per_s: f64,
    /// Voluntary and involuntary context switches of the observed tasks.
    pub tasks: TaskSwitches,
    /// System-wide /proc/interrupts deltas, busiest first.
    pub interrupts: Vec<IrqRow>,
    /// System calls by name, most frequent first.
    pub syscalls: Vec<SyscallRow>,
    /// System calls counted, all names.
    pub syscalls_total: u64,
    /// One call in this many was timed, at random (1: every call); above 1,
    /// each row's total_ns is its avg_ns x calls.
    pub time_sample: u32,
    /// Per-thread counts of the observed tasks.
    pub threads: Vec<ThreadStat>,
    /// Tasks the observed process started.
    pub forks: u64,
    /// Tasks that exited.
    pub exits: u64,
    /// Trace events read.
    pub trace_events: u64,
    /// Trace events the kernel dropped (counts then understate).
    pub lost_events: u64,
    /// Total report only: calls entered and not returned when observing stopped.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub in_flight: Vec<InFlight>,
}

pub(crate) struct Snapshot {
    pub(super) t: u64,
    pub(super) stat: ProcStat,
    pub(super) irq: Interrupts,
}

impl Snapshot {
    pub(crate) fn take() -> Result<Snapshot, CpuSourceError> {
        Ok(Snapshot {
            t: now_ns(),
            stat: ProcStat::read()?,
            irq: Interrupts::read()?,
        })
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn build_report(
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
