//! Study 004's report: tables and charts of the runs, and the comparisons and
//! verdict against the paper's published figures.

use super::{
    DevKind, DeviceResult, OVERHEAD_GOAL_PCT, Observed, OverheadPair, PUB_HDD_CTXT_PER_S,
    PUB_HDD_FUTEX_CALLS, PUB_HDD_RUNTIME_S, PUB_HDD_SYSTEM_S, PUB_SSD_CTXT_PER_S,
    PUB_SSD_FUTEX_CALLS, PUB_SSD_RUNTIME_S, PUB_SSD_SYSTEM_S, Run,
};
use crate::measure::cpu::CpuTimes;
use crate::report::chart::{Chart, ChartKind, Series};
use crate::report::study::{Cell, Comparison, StudyResult, Table};

/// Syscalls a process uses to wait for, or wake, another: the candidates for the
/// role futex plays in the paper's MySQL (threads + mutexes). PostgreSQL is
/// processes + semaphores and latches, so the data decides which one it is.
const WAIT_WAKE_CALLS: [&str; 15] = [
    "futex",
    "semop",
    "semtimedop",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "kill",
    "tgkill",
    "nanosleep",
    "clock_nanosleep",
    "sched_yield",
];

/// Clock ticks per second of /proc/stat.
fn clk_tck() -> f64 {
    // SAFETY: sysconf has no side effects.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

fn ncpus() -> f64 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
}

/// The /proc/stat fields the paper's table 3 lists, in seconds per CPU.
fn split_secs(t: &CpuTimes) -> [(&'static str, f64); 6] {
    let k = clk_tck() * ncpus();
    [
        ("user", (t.user + t.nice) as f64 / k),
        ("system", t.system as f64 / k),
        ("idle", t.idle as f64 / k),
        ("iowait", t.iowait as f64 / k),
        ("irq", t.irq as f64 / k),
        ("softirq", t.softirq as f64 / k),
    ]
}

fn per_txn(n: u64, r: &Run) -> f64 {
    if r.pgb.transactions > 0 {
        n as f64 / r.pgb.transactions as f64
    } else {
        f64::NAN
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 && a.is_finite() && b.is_finite() {
        a / b
    } else {
        f64::NAN
    }
}

pub(super) fn build(r: &mut StudyResult, devs: &[DeviceResult]) {
    let names: Vec<String> = devs.iter().map(|d| d.kind.label().to_string()).collect();
    // (i) pgbench.
    r.tables.push(Table {
        title: "(i) pgbench on each device (observed)".into(),
        columns: [
            "device",
            "TPS",
            "latency avg ms",
            "transactions",
            "failed",
            "run s",
            "device reads/s",
            "device writes/s",
        ]
        .map(String::from)
        .to_vec(),
        rows: devs
            .iter()
            .map(|d| {
                let x = &d.run;
                vec![
                    Cell::text(d.kind.label()),
                    Cell::num(x.pgb.tps, 1),
                    Cell::num(x.pgb.latency_ms, 2),
                    Cell::num(x.pgb.transactions as f64, 0),
                    Cell::num(x.pgb.failed as f64, 0),
                    Cell::num(x.secs, 1),
                    Cell::num(x.dev_reads as f64 / x.secs, 0),
                    Cell::num(x.dev_writes as f64 / x.secs, 0),
                ]
            })
            .collect(),
    });
    // (ii) /proc/stat like the paper's table 3.
    let mut cols = vec!["field".to_string()];
    for n in &names {
        cols.push(format!("{n} s/CPU"));
        cols.push(format!("{n} %"));
    }
    let splits: Vec<[(&str, f64); 6]> =
        devs.iter().map(|d| split_secs(&d.run.stat.total)).collect();
    let mut rows = Vec::new();
    for i in 0..6 {
        let mut row = vec![Cell::text(splits[0][i].0)];
        for s in &splits {
            let tot: f64 = s.iter().map(|x| x.1).sum();
            row.push(Cell::num(s[i].1, 2));
            row.push(Cell::num(100.0 * s[i].1 / tot.max(1e-9), 1));
        }
        rows.push(row);
    }
    let mut row = vec![Cell::text("total")];
    for s in &splits {
        row.push(Cell::num(s.iter().map(|x| x.1).sum(), 2));
        row.push(Cell::num(100.0, 1));
    }
    rows.push(row);
    r.tables.push(Table {
        title: "(ii) /proc/stat over the run, all CPUs (paper's table 3)".into(),
        columns: cols,
        rows,
    });
    if devs.iter().any(|d| d.run.pg_cpu.is_some()) {
        r.tables.push(Table {
            title: "(ii-b) CPU time of the PostgreSQL processes only (cpuacct cgroup; \
                    /proc/stat above also holds everything else this machine ran)"
                .into(),
            columns: [
                "device",
                "user s",
                "system s",
                "CPUs busy",
                "system % of their CPU",
                "system ms / 1000 transactions",
                "system us / syscall",
            ]
            .map(String::from)
            .to_vec(),
            rows: devs
                .iter()
                .filter_map(|d| {
                    let c = d.run.pg_cpu?;
                    let (u, sy) = (c.user_ns as f64 / 1e9, c.sys_ns as f64 / 1e9);
                    let calls = d.run.obs.as_ref().map_or(0, Observed::total_calls);
                    Some(vec![
                        Cell::text(d.kind.label()),
                        Cell::num(u, 2),
                        Cell::num(sy, 2),
                        Cell::num((u + sy) / d.run.secs, 2),
                        Cell::num(100.0 * sy / (u + sy).max(1e-9), 1),
                        Cell::num(sys_ms_per_ktxn(&d.run).0, 1),
                        Cell::num(
                            if calls > 0 {
                                sy * 1e6 / calls as f64
                            } else {
                                f64::NAN
                            },
                            2,
                        ),
                    ])
                })
                .collect(),
        });
    }
    // (iii) syscalls per device, like strace -c (tables 4, 5).
    for d in devs {
        let Some(o) = &d.run.obs else { continue };
        let total_ns: u64 = o.syscalls.iter().map(|s| s.total_ns).sum();
        let mut top = o.syscalls.clone();
        top.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(b.calls.cmp(&a.calls)));
        r.tables.push(Table {
            title: format!(
                "(iii) system calls of the PostgreSQL processes, {} ({} calls, {} threads, \
                 {} trace events; paper's tables 4-5)",
                d.kind.label(),
                o.total_calls(),
                o.threads,
                o.events
            ),
            columns: [
                "syscall",
                "% time",
                "seconds",
                "usec/call",
                "calls",
                "calls/transaction",
            ]
            .map(String::from)
            .to_vec(),
            rows: top
                .iter()
                .take(12)
                .map(|s| {
                    vec![
                        Cell::text(s.name.clone()),
                        Cell::num(100.0 * s.total_ns as f64 / total_ns.max(1) as f64, 2),
                        Cell::num(s.total_ns as f64 / 1e9, 3),
                        Cell::num(
                            if s.timed > 0 {
                                s.total_ns as f64 / s.timed as f64 / 1e3
                            } else {
                                f64::NAN
                            },
                            1,
                        ),
                        Cell::num(s.calls as f64, 0),
                        Cell::num(per_txn(s.calls, &d.run), 2),
                    ]
                })
                .collect(),
        });
    }
    // (iv) context switches (table 6).
    r.tables.push(Table {
        title: "(iv) context switches and interrupts (paper's table 6)".into(),
        columns: [
            "device",
            "system ctxt",
            "system ctxt/s",
            "postgres voluntary",
            "postgres involuntary",
            "postgres ctxt/s",
            "postgres ctxt/transaction",
            "interrupts/s",
        ]
        .map(String::from)
        .to_vec(),
        rows: devs
            .iter()
            .map(|d| {
                let x = &d.run;
                let (v, i) = x
                    .obs
                    .as_ref()
                    .map_or((0, 0), |o| (o.voluntary, o.involuntary));
                vec![
                    Cell::text(d.kind.label()),
                    Cell::num(x.stat.ctxt as f64, 0),
                    Cell::num(x.stat.ctxt as f64 / x.secs, 0),
                    Cell::num(v as f64, 0),
                    Cell::num(i as f64, 0),
                    Cell::num((v + i) as f64 / x.secs, 0),
                    Cell::num(per_txn(v + i, x), 2),
                    Cell::num(x.stat.intr as f64 / x.secs, 0),
                ]
            })
            .collect(),
    });
    // (v) observe's overhead.
    let fast = devs.iter().find(|d| d.kind == DevKind::Fast);
    let slow = devs.iter().find(|d| d.kind == DevKind::Slow);
    let mut overhead_pct = None;
    if let Some(f) = fast
        && !f.overhead.is_empty()
    {
        let med = |g: fn(&OverheadPair) -> f64| median_mid(f.overhead.iter().map(g).collect());
        // The cost is taken per pair, so a change in machine load between pairs
        // cancels out.
        let pct = med(OverheadPair::cost_pct);
        overhead_pct = Some(pct);
        let row = |label: String, p: &OverheadPair, cost: f64| {
            vec![
                Cell::text(label),
                Cell::num(p.plain_tps, 1),
                Cell::num(p.observed_tps, 1),
                Cell::num(cost, 1),
                Cell::num(p.events_per_s, 0),
                Cell::num(p.reader_pct, 1),
            ]
        };
        let mut rows: Vec<Vec<Cell>> = f
            .overhead
            .iter()
            .enumerate()
            .map(|(i, p)| row(format!("pair {}", i + 1), p, p.cost_pct()))
            .collect();
        let m = OverheadPair {
            plain_tps: med(|p| p.plain_tps),
            observed_tps: med(|p| p.observed_tps),
            events_per_s: med(|p| p.events_per_s),
            reader_pct: med(|p| p.reader_pct),
        };
        rows.push(row("median".into(), &m, pct));
        r.tables.push(Table {
            title: format!(
                "(v) cost of observing: pgbench TPS on {} without and with observe attached \
                 (alternating runs)",
                f.kind.label()
            ),
            columns: [
                "run",
                "plain TPS",
                "observed TPS",
                "TPS cost %",
                "trace events/s",
                "reader CPU % of one CPU",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        });
    }
    // Charts.
    r.charts.push(Chart {
        title: "pgbench throughput".into(),
        kind: ChartKind::Bar,
        x_label: "device".into(),
        y_label: "transactions/s".into(),
        categories: names.clone(),
        series: vec![Series {
            name: "TPS".into(),
            points: devs
                .iter()
                .enumerate()
                .map(|(i, d)| (i as f64, d.run.pgb.tps))
                .collect(),
        }],
        log_x: false,
    });
    r.charts.push(Chart {
        title: "Where the CPUs' time went (/proc/stat)".into(),
        kind: ChartKind::Stacked,
        x_label: "device".into(),
        y_label: "% of CPU time".into(),
        categories: names.clone(),
        series: (0..6)
            .map(|k| Series {
                name: splits[0][k].0.to_string(),
                points: splits
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let tot: f64 = s.iter().map(|x| x.1).sum();
                        (i as f64, 100.0 * s[k].1 / tot.max(1e-9))
                    })
                    .collect(),
            })
            .collect(),
        log_x: false,
    });
    let top_names: Vec<String> = fast
        .or(slow)
        .and_then(|d| d.run.obs.as_ref())
        .map(|o| o.syscalls.iter().take(8).map(|s| s.name.clone()).collect())
        .unwrap_or_default();
    if !top_names.is_empty() {
        r.charts.push(Chart {
            title: "System calls per transaction (PostgreSQL processes)".into(),
            kind: ChartKind::Bar,
            x_label: "syscall".into(),
            y_label: "calls per transaction".into(),
            categories: top_names.clone(),
            series: devs
                .iter()
                .filter_map(|d| {
                    let o = d.run.obs.as_ref()?;
                    Some(Series {
                        name: d.kind.label().into(),
                        points: top_names
                            .iter()
                            .enumerate()
                            .map(|(i, n)| (i as f64, per_txn(o.calls(n), &d.run)))
                            .collect(),
                    })
                })
                .collect(),
            log_x: false,
        });
    }
    r.charts.push(Chart {
        title: "Context switches per second (all CPUs)".into(),
        kind: ChartKind::Bar,
        x_label: "device".into(),
        y_label: "switches/s".into(),
        categories: names,
        series: vec![Series {
            name: "ctxt/s".into(),
            points: devs
                .iter()
                .enumerate()
                .map(|(i, d)| (i as f64, d.run.stat.ctxt as f64 / d.run.secs))
                .collect(),
        }],
        log_x: false,
    });
    // Comparisons and verdict need both devices.
    let (Some(f), Some(s)) = (fast, slow) else {
        r.verdict.push(
            "only one device was measured, so the fast/slow ratios the paper reports cannot be \
             formed (see skipped)"
                .into(),
        );
        if let Some(p) = overhead_pct {
            r.verdict.push(overhead_sentence(p));
        }
        return;
    };
    let (fr, sr) = (&f.run, &s.run);
    let tput = ratio(fr.pgb.tps, sr.pgb.tps);
    let pub_tput = PUB_HDD_RUNTIME_S / PUB_SSD_RUNTIME_S;
    let ((sys_f, src), (sys_s, _)) = (sys_ms_per_ktxn(fr), sys_ms_per_ktxn(sr));
    let sys = ratio(sys_f, sys_s);
    let pub_sys = PUB_SSD_SYSTEM_S / PUB_HDD_SYSTEM_S;
    let empty = Observed::default();
    let (fo, so) = (
        fr.obs.as_ref().unwrap_or(&empty),
        sr.obs.as_ref().unwrap_or(&empty),
    );
    let sw = |o: &Observed, x: &Run| (o.voluntary + o.involuntary) as f64 / x.secs;
    let ctxt = ratio(sw(fo, fr), sw(so, sr));
    let sys_ctxt = ratio(fr.stat.ctxt as f64 / fr.secs, sr.stat.ctxt as f64 / sr.secs);
    let pub_ctxt = PUB_SSD_CTXT_PER_S / PUB_HDD_CTXT_PER_S;
    let pub_futex = PUB_SSD_FUTEX_CALLS / PUB_HDD_FUTEX_CALLS;
    // The wait/wake call the fast device's processes make most plays futex's part.
    let sync_call = WAIT_WAKE_CALLS
        .iter()
        .map(|n| (*n, fo.calls(n)))
        .filter(|(_, c)| *c > 0)
        .max_by_key(|(_, c)| *c)
        .map(|(n, _)| n.to_string());
    let call_ratio = |n: &str| {
        let (a, b) = (per_txn(fo.calls(n), fr), per_txn(so.calls(n), sr));
        (a, b, ratio(a, b))
    };
    r.comparisons.push(Comparison {
        what: "throughput fast/slow".into(),
        ours: tput,
        published: Some(pub_tput),
        unit: "x".into(),
        note: format!(
            "pgbench TPS {:.0} vs {:.0}; paper: 160,000 requests in 201 s (SSD) vs 3345 s (HDD)",
            fr.pgb.tps, sr.pgb.tps
        ),
    });
    r.comparisons.push(Comparison {
        what: "system time fast/slow, same work".into(),
        ours: sys,
        published: Some(pub_sys),
        unit: "x".into(),
        note: format!(
            "kernel CPU ms per 1000 transactions {sys_f:.1} vs {sys_s:.1} ({src}); paper: 31.3 s \
             vs 18.9 s for the same 160,000 requests (table 3)"
        ),
    });
    r.comparisons.push(Comparison {
        what: "context switches/s fast/slow".into(),
        ours: ctxt,
        published: Some(pub_ctxt),
        unit: "x".into(),
        note: format!(
            "PostgreSQL processes {:.0}/s vs {:.0}/s (all CPUs: {sys_ctxt:.1}x); paper: \
             201,448/s vs 7,174/s (table 6)",
            sw(fo, fr),
            sw(so, sr)
        ),
    });
    let mut calls_cmp: Vec<&str> = Vec::new();
    if let Some(sc) = &sync_call {
        calls_cmp.push(sc);
    }
    if sync_call.as_deref() != Some("futex") {
        calls_cmp.push("futex");
    }
    for n in calls_cmp {
        let (a, b, q) = call_ratio(n);
        r.comparisons.push(Comparison {
            what: format!("{n} calls fast/slow, same work"),
            ours: q,
            published: Some(pub_futex),
            unit: "x".into(),
            note: format!(
                "{a:.2} vs {b:.2} per transaction{}; paper: futex 7.72 M vs 2.61 M for the \
                 same work (tables 4-5)",
                if Some(n) == sync_call.as_deref() {
                    " (PostgreSQL's most frequent wait/wake call)"
                } else {
                    ""
                }
            ),
        });
    }
    if let Some(p) = overhead_pct {
        r.comparisons.push(Comparison {
            what: "observe's cost to pgbench TPS".into(),
            ours: p,
            published: None,
            unit: "%".into(),
            note: format!(
                "goal <= {OVERHEAD_GOAL_PCT}%; the paper used strace, which slows the traced \
                 program far more and (as the paper notes) counts blocked time"
            ),
        });
    }
    // Verdict.
    let busy = |x: &Run| {
        x.pg_cpu
            .map(|c| format!("{:.2}", (c.user_ns + c.sys_ns) as f64 / 1e9 / x.secs))
            .unwrap_or_else(|| "-".into())
    };
    r.verdict.push(format!(
        "The fast device ran {tput:.1}x the slow one's transactions per second (paper: SSD \
         {pub_tput:.1}x faster than HDD). PostgreSQL kept {} CPUs busy on the fast device and {} \
         on the slow one, where its processes mostly waited; machine-wide idle+iowait was {:.0}% \
         vs {:.0}% (this shared machine's other load fills the idle time the paper saw).",
        busy(fr),
        busy(sr),
        idle_wait_pct(&fr.stat.total),
        idle_wait_pct(&sr.stat.total)
    ));
    r.verdict.push(format!(
        "For the same work the fast device spent {sys:.2}x the kernel time of the slow one \
         (paper: 1.66x more on the SSD): {sys_f:.1} vs {sys_s:.1} ms per 1000 transactions \
         ({src}). {}",
        if sys > 1.0 {
            "Like the paper, the faster device costs more kernel time per unit of work."
        } else {
            "Unlike the paper, the faster device costs less kernel time per unit of work: on \
             the slow device every commit sleeps, wakes and reschedules more processes."
        }
    ));
    r.verdict.push(format!(
        "PostgreSQL's context switches per second rose {ctxt:.1}x on the fast device (paper \
         ~28x; all CPUs {sys_ctxt:.1}x); per transaction they switched {:.1} times on the fast \
         device and {:.1} on the slow one, so the rate follows throughput.",
        per_txn(fo.voluntary + fo.involuntary, fr),
        per_txn(so.voluntary + so.involuntary, sr)
    ));
    if let Some(sc) = &sync_call {
        let (a, b, q) = call_ratio(sc);
        let (fa, fb, fq) = call_ratio("futex");
        r.verdict.push(format!(
            "PostgreSQL is processes with latches and semaphores, not threads with mutexes. The \
             wait/wake call it makes most, so the one in futex's place, is {sc}: {a:.2} per \
             transaction fast vs {b:.2} slow ({q:.2}x; the paper's futex rose 2.96x). futex \
             itself (LWLock waits on POSIX semaphores) went {fa:.2} vs {fb:.2} ({fq:.2}x){}.",
            match fo.syscalls.first() {
                Some(t) if t.name != *sc =>
                    format!("; the most frequent call overall is {}", t.name),
                _ => String::new(),
            }
        ));
    }
    if let Some(p) = overhead_pct {
        r.verdict.push(overhead_sentence(p));
    }
}

/// Median; for an even count the mean of the two middle values.
fn median_mid(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn overhead_sentence(p: f64) -> String {
    format!(
        "Attaching observe cost pgbench {p:.1}% of its TPS on the fast device (median of \
         alternating plain/observed pairs; goal <= {OVERHEAD_GOAL_PCT}%: {}).",
        if p <= OVERHEAD_GOAL_PCT {
            "met"
        } else {
            "not met"
        }
    )
}

/// Kernel CPU per 1000 transactions: of the PostgreSQL processes when cpuacct
/// is there, else machine-wide (which includes pgbench and everything else).
fn sys_ms_per_ktxn(r: &Run) -> (f64, &'static str) {
    let (sys_s, src) = match r.pg_cpu {
        Some(c) => (c.sys_ns as f64 / 1e9, "PostgreSQL processes, cpuacct"),
        None => (
            r.stat.total.system as f64 / clk_tck(),
            "all CPUs, /proc/stat: includes other load",
        ),
    };
    let v = if r.pgb.transactions > 0 {
        sys_s * 1e3 / (r.pgb.transactions as f64 / 1000.0)
    } else {
        f64::NAN
    };
    (v, src)
}

fn idle_wait_pct(t: &CpuTimes) -> f64 {
    100.0 * (t.idle + t.iowait) as f64 / t.total().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_even_count_is_the_middle_mean() {
        assert_eq!(median_mid(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median_mid(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median_mid(vec![]).is_nan());
    }
}
