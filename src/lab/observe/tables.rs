//! Study 004's report: each server's tables and charts of its runs, the two
//! servers side by side on the paper's effect, and the comparisons and verdict
//! against the paper's published figures.

use super::bench::{Observed, OverheadPair, Run};
use super::effect::{self, Effect, per_txn, ratio, top_wait_call};
use super::{
    Db, DevKind, DeviceResult, OVERHEAD_GOAL_PCT, PUB_HDD_RUNTIME_S, PUB_HDD_SYSTEM_S,
    PUB_SSD_RUNTIME_S, PUB_SSD_SYSTEM_S, ServerResult,
};
use crate::measure::cpu::CpuTimes;
use crate::report::chart::{Chart, ChartKind, Series};
use crate::report::study::{Cell, Comparison, StudyResult, Table};

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

fn cols(c: &[&str]) -> Vec<String> {
    c.iter().map(|s| s.to_string()).collect()
}

pub(super) fn build(r: &mut StudyResult, servers: &[ServerResult]) {
    let mut effects: Vec<Effect> = Vec::new();
    for s in servers {
        server_tables(r, s);
        let fast = s.devs.iter().find(|d| d.kind == DevKind::Fast);
        let slow = s.devs.iter().find(|d| d.kind == DevKind::Slow);
        if let (Some(f), Some(sl)) = (fast, slow)
            && let Some(e) = effect::effect(s.db, &f.run, &sl.run)
        {
            effects.push(e);
        }
    }
    effect_table(r, &effects);
    charts(r, servers);
    for s in servers {
        comparisons_and_verdict(r, s, effects.iter().find(|e| e.db == s.db));
    }
    r.verdict.extend(effect::verdict(&effects));
    for s in servers {
        if let Some(p) = overhead_pct(s) {
            r.verdict.push(overhead_sentence(s.db, p));
        }
    }
}

/// Tables (i)-(v) of one server, in that order.
fn server_tables(r: &mut StudyResult, s: &ServerResult) {
    throughput_table(r, s);
    cpu_tables(r, s);
    syscall_tables(r, s);
    switches_table(r, s);
    overhead_table(r, s);
}

/// (i) Throughput and device I/O on each device.
fn throughput_table(r: &mut StudyResult, s: &ServerResult) {
    let db = s.db;
    let devs = &s.devs;
    let n = db.name();
    r.tables.push(Table {
        title: format!("(i) {n}: {} on each device (observed)", db.bench()),
        columns: cols(&[
            "device",
            "TPS",
            "latency avg ms",
            "transactions",
            "failed",
            "run s",
            "device reads/s",
            "device writes/s",
        ]),
        rows: devs
            .iter()
            .map(|d| {
                let x = &d.run;
                vec![
                    Cell::text(d.kind.label()),
                    Cell::num(x.out.tps, 1),
                    Cell::num(x.out.latency_ms, 2),
                    Cell::num(x.out.transactions as f64, 0),
                    Cell::num(x.out.failed as f64, 0),
                    Cell::num(x.secs, 1),
                    Cell::num(x.dev_reads as f64 / x.secs, 0),
                    Cell::num(x.dev_writes as f64 / x.secs, 0),
                ]
            })
            .collect(),
    });
}

/// (ii) /proc/stat over the run, like the paper's table 3, and (ii-b) the
/// server's own CPU time where the cgroup gave it.
fn cpu_tables(r: &mut StudyResult, s: &ServerResult) {
    let db = s.db;
    let devs = &s.devs;
    let n = db.name();
    let mut columns = vec!["field".to_string()];
    for d in devs {
        columns.push(format!("{} s/CPU", d.kind.label()));
        columns.push(format!("{} %", d.kind.label()));
    }
    let splits: Vec<[(&str, f64); 6]> =
        devs.iter().map(|d| split_secs(&d.run.stat.total)).collect();
    let mut rows = Vec::new();
    for i in 0..6 {
        let mut row = vec![Cell::text(splits[0][i].0)];
        for sp in &splits {
            let tot: f64 = sp.iter().map(|x| x.1).sum();
            row.push(Cell::num(sp[i].1, 2));
            row.push(Cell::num(100.0 * sp[i].1 / tot.max(1e-9), 1));
        }
        rows.push(row);
    }
    let mut row = vec![Cell::text("total")];
    for sp in &splits {
        row.push(Cell::num(sp.iter().map(|x| x.1).sum(), 2));
        row.push(Cell::num(100.0, 1));
    }
    rows.push(row);
    r.tables.push(Table {
        title: format!("(ii) {n}: /proc/stat over the run, all CPUs (paper's table 3)"),
        columns,
        rows,
    });
    if devs.iter().any(|d| d.run.srv_cpu.is_some()) {
        r.tables.push(Table {
            title: format!(
                "(ii-b) {n}: CPU time of the {} only (cpuacct cgroup; /proc/stat above also \
                 holds everything else this machine ran)",
                db.tasks()
            ),
            columns: cols(&[
                "device",
                "user s",
                "system s",
                "CPUs busy",
                "system % of their CPU",
                "system ms / 1000 transactions",
                "system us / syscall",
            ]),
            rows: devs
                .iter()
                .filter_map(|d| {
                    let c = d.run.srv_cpu?;
                    let (u, sy) = (c.user_ns as f64 / 1e9, c.sys_ns as f64 / 1e9);
                    let calls = d.run.obs.as_ref().map_or(0, Observed::total_calls);
                    Some(vec![
                        Cell::text(d.kind.label()),
                        Cell::num(u, 2),
                        Cell::num(sy, 2),
                        Cell::num((u + sy) / d.run.secs, 2),
                        Cell::num(100.0 * sy / (u + sy).max(1e-9), 1),
                        Cell::num(sys_ms_per_ktxn(db, &d.run).0, 1),
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
}

/// (iii) The server's system calls per device, like `strace -c` (the paper's
/// tables 4 and 5).
fn syscall_tables(r: &mut StudyResult, s: &ServerResult) {
    let db = s.db;
    let devs = &s.devs;
    let n = db.name();
    for d in devs {
        let Some(o) = &d.run.obs else { continue };
        let total_ns: u64 = o.syscalls.iter().map(|s| s.total_ns).sum();
        let mut top = o.syscalls.clone();
        top.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(b.calls.cmp(&a.calls)));
        r.tables.push(Table {
            title: format!(
                "(iii) {n}: system calls of the {}, {} ({} calls, {} threads, {} trace events; \
                 paper's tables 4-5)",
                db.tasks(),
                d.kind.label(),
                o.total_calls(),
                o.threads,
                o.events
            ),
            columns: cols(&[
                "syscall",
                "% time",
                "seconds",
                "usec/call",
                "calls",
                "calls/transaction",
            ]),
            rows: top
                .iter()
                .take(14)
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
}

/// (iv) Context switches and interrupts (the paper's table 6).
fn switches_table(r: &mut StudyResult, s: &ServerResult) {
    let db = s.db;
    let devs = &s.devs;
    let n = db.name();
    r.tables.push(Table {
        title: format!("(iv) {n}: context switches and interrupts (paper's table 6)"),
        columns: cols(&[
            "device",
            "system ctxt",
            "system ctxt/s",
            "server voluntary",
            "server involuntary",
            "server ctxt/s",
            "server ctxt/transaction",
            "interrupts/s",
        ]),
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
}

/// (v) What observing cost: TPS without and with observe attached.
fn overhead_table(r: &mut StudyResult, s: &ServerResult) {
    let db = s.db;
    let devs = &s.devs;
    let n = db.name();
    if let Some(f) = devs.iter().find(|d| d.kind == DevKind::Fast)
        && !f.overhead.is_empty()
    {
        let med = |g: fn(&OverheadPair) -> f64| median_mid(f.overhead.iter().map(g).collect());
        let pct = med(OverheadPair::cost_pct);
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
                "(v) {n}: cost of observing: {} TPS on {} without and with observe attached \
                 (alternating runs)",
                db.bench(),
                f.kind.label()
            ),
            columns: cols(&[
                "run",
                "plain TPS",
                "observed TPS",
                "TPS cost %",
                "trace events/s",
                "reader CPU % of one CPU",
            ]),
            rows,
        });
    }
}

/// Median of the overhead pairs' costs (taken per pair, so a change in machine
/// load between pairs cancels out).
fn overhead_pct(s: &ServerResult) -> Option<f64> {
    let f = s.devs.iter().find(|d| d.kind == DevKind::Fast)?;
    (!f.overhead.is_empty())
        .then(|| median_mid(f.overhead.iter().map(OverheadPair::cost_pct).collect()))
}

/// (vi): the two servers side by side on the paper's two measures.
fn effect_table(r: &mut StudyResult, effects: &[Effect]) {
    if effects.is_empty() {
        return;
    }
    r.tables.push(Table {
        title: format!(
            "(vi) the paper's effect on each server: futex calls per transaction and the \
             server's context switches, fast vs slow device, from the observed counts (paper: \
             futex {:.2}x, context switches/s {:.1}x)",
            effect::pub_futex_ratio(),
            effect::pub_ctxt_ratio()
        ),
        columns: cols(&[
            "server",
            "futex/transaction slow",
            "futex/transaction fast",
            "futex fast/slow",
            "ctxt/s slow",
            "ctxt/s fast",
            "ctxt/s fast/slow",
            "ctxt/transaction slow",
            "ctxt/transaction fast",
            "most frequent wait/wake call",
            "futex % of wait/wake calls",
            "shows the futex effect",
        ]),
        rows: effects
            .iter()
            .map(|e| {
                vec![
                    Cell::text(e.db.name()),
                    Cell::num(e.futex_slow, 2),
                    Cell::num(e.futex_fast, 2),
                    Cell::num(e.futex_ratio, 2),
                    Cell::num(e.ctxt_slow, 0),
                    Cell::num(e.ctxt_fast, 0),
                    Cell::num(e.ctxt_ratio, 2),
                    Cell::num(e.ctxt_txn_slow, 2),
                    Cell::num(e.ctxt_txn_fast, 2),
                    Cell::text(e.wait_call.clone().unwrap_or_else(|| "-".into())),
                    Cell::num(e.futex_share_pct, 1),
                    Cell::text(if e.shows_futex() { "yes" } else { "no" }),
                ]
            })
            .collect(),
    });
}

fn device_index(k: DevKind) -> f64 {
    match k {
        DevKind::Slow => 0.0,
        DevKind::Fast => 1.0,
    }
}

fn charts(r: &mut StudyResult, servers: &[ServerResult]) {
    let devices = vec![
        DevKind::Slow.label().to_string(),
        DevKind::Fast.label().to_string(),
    ];
    let per_server = |f: &dyn Fn(&DeviceResult) -> Option<f64>| -> Vec<Series> {
        servers
            .iter()
            .map(|s| Series {
                name: s.db.name().into(),
                points: s
                    .devs
                    .iter()
                    .filter_map(|d| Some((device_index(d.kind), f(d)?)))
                    .collect(),
            })
            .collect()
    };
    r.charts.push(Chart {
        title: "Throughput of each server (pgbench, sysbench)".into(),
        kind: ChartKind::Bar,
        x_label: "device".into(),
        y_label: "transactions/s".into(),
        categories: devices.clone(),
        series: per_server(&|d| Some(d.run.out.tps)),
        log_x: false,
    });
    r.charts.push(Chart {
        title: "futex calls per transaction (the paper's 3x)".into(),
        kind: ChartKind::Bar,
        x_label: "device".into(),
        y_label: "futex calls per transaction".into(),
        categories: devices.clone(),
        series: per_server(&|d| {
            d.run
                .obs
                .as_ref()
                .map(|o| per_txn(o.calls("futex"), &d.run))
        }),
        log_x: false,
    });
    r.charts.push(Chart {
        title: "Context switches per second of each server's tasks (the paper's ~28x)".into(),
        kind: ChartKind::Bar,
        x_label: "device".into(),
        y_label: "switches/s".into(),
        categories: devices,
        series: per_server(&|d| d.run.obs.as_ref().map(|o| o.switches() as f64 / d.run.secs)),
        log_x: false,
    });
    // Where the CPUs' time went, one bar per server and device.
    let bars: Vec<(String, [(&str, f64); 6])> = servers
        .iter()
        .flat_map(|s| {
            s.devs.iter().map(move |d| {
                (
                    format!("{} {}", s.db.name(), d.kind.tag()),
                    split_secs(&d.run.stat.total),
                )
            })
        })
        .collect();
    if let Some((_, first)) = bars.first() {
        r.charts.push(Chart {
            title: "Where the CPUs' time went (/proc/stat)".into(),
            kind: ChartKind::Stacked,
            x_label: "server and device".into(),
            y_label: "% of CPU time".into(),
            categories: bars.iter().map(|b| b.0.clone()).collect(),
            series: (0..6)
                .map(|k| Series {
                    name: first[k].0.to_string(),
                    points: bars
                        .iter()
                        .enumerate()
                        .map(|(i, (_, sp))| {
                            let tot: f64 = sp.iter().map(|x| x.1).sum();
                            (i as f64, 100.0 * sp[k].1 / tot.max(1e-9))
                        })
                        .collect(),
                })
                .collect(),
            log_x: false,
        });
    }
    for s in servers {
        let fast = s.devs.iter().find(|d| d.kind == DevKind::Fast);
        let slow = s.devs.iter().find(|d| d.kind == DevKind::Slow);
        let top_names: Vec<String> = fast
            .or(slow)
            .and_then(|d| d.run.obs.as_ref())
            .map(|o| {
                let mut v = o.syscalls.clone();
                v.sort_by_key(|s| std::cmp::Reverse(s.calls));
                v.iter().take(8).map(|s| s.name.clone()).collect()
            })
            .unwrap_or_default();
        if top_names.is_empty() {
            continue;
        }
        r.charts.push(Chart {
            title: format!("System calls per transaction ({})", s.db.tasks()),
            kind: ChartKind::Bar,
            x_label: "syscall".into(),
            y_label: "calls per transaction".into(),
            categories: top_names.clone(),
            series: s
                .devs
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
}

/// One server's comparisons with the paper and its verdict sentences.
fn comparisons_and_verdict(r: &mut StudyResult, s: &ServerResult, e: Option<&Effect>) {
    let db = s.db;
    let n = db.name();
    let fast = s.devs.iter().find(|d| d.kind == DevKind::Fast);
    let slow = s.devs.iter().find(|d| d.kind == DevKind::Slow);
    let overhead = overhead_pct(s);
    if let Some(p) = overhead {
        r.comparisons.push(Comparison {
            what: format!("{n}: observe's cost to {} TPS", db.bench()),
            ours: p,
            published: None,
            unit: "%".into(),
            note: format!(
                "goal <= {OVERHEAD_GOAL_PCT}%; the paper used strace, which slows the traced \
                 program far more and (as the paper notes) counts blocked time"
            ),
        });
    }
    let (Some(f), Some(sl), Some(e)) = (fast, slow, e) else {
        r.verdict.push(format!(
            "{n} was measured on one device only, so the fast/slow ratios the paper reports \
             cannot be formed for it (see skipped)"
        ));
        return;
    };
    let (fr, sr) = (&f.run, &sl.run);
    let tput = ratio(fr.out.tps, sr.out.tps);
    let pub_tput = PUB_HDD_RUNTIME_S / PUB_SSD_RUNTIME_S;
    let ((sys_f, src), (sys_s, _)) = (sys_ms_per_ktxn(db, fr), sys_ms_per_ktxn(db, sr));
    let sys = ratio(sys_f, sys_s);
    let pub_sys = PUB_SSD_SYSTEM_S / PUB_HDD_SYSTEM_S;
    let sys_ctxt = ratio(fr.stat.ctxt as f64 / fr.secs, sr.stat.ctxt as f64 / sr.secs);
    let empty = Observed::default();
    let (fo, so) = (
        fr.obs.as_ref().unwrap_or(&empty),
        sr.obs.as_ref().unwrap_or(&empty),
    );
    r.comparisons.push(Comparison {
        what: format!("{n}: throughput fast/slow"),
        ours: tput,
        published: Some(pub_tput),
        unit: "x".into(),
        note: format!(
            "{} TPS {:.0} vs {:.0}; paper: 160,000 requests in 201 s (SSD) vs 3345 s (HDD)",
            db.bench(),
            fr.out.tps,
            sr.out.tps
        ),
    });
    r.comparisons.push(Comparison {
        what: format!("{n}: system time fast/slow, same work"),
        ours: sys,
        published: Some(pub_sys),
        unit: "x".into(),
        note: format!(
            "kernel CPU ms per 1000 transactions {sys_f:.1} vs {sys_s:.1} ({src}); paper: 31.3 s \
             vs 18.9 s for the same 160,000 requests (table 3)"
        ),
    });
    r.comparisons.push(Comparison {
        what: format!("{n}: context switches/s fast/slow"),
        ours: e.ctxt_ratio,
        published: Some(effect::pub_ctxt_ratio()),
        unit: "x".into(),
        note: format!(
            "{} {:.0}/s vs {:.0}/s (all CPUs: {sys_ctxt:.1}x); paper: 201,448/s vs 7,174/s \
             (table 6)",
            db.tasks(),
            e.ctxt_fast,
            e.ctxt_slow
        ),
    });
    r.comparisons.push(Comparison {
        what: format!("{n}: futex calls fast/slow, same work"),
        ours: e.futex_ratio,
        published: Some(effect::pub_futex_ratio()),
        unit: "x".into(),
        note: format!(
            "{:.2} vs {:.2} per transaction; paper: futex 7.72 M vs 2.61 M for the same work \
             (tables 4-5)",
            e.futex_fast, e.futex_slow
        ),
    });
    // Where futex is not the server's main wait, its main wait in futex's place.
    if let Some((wc, _)) = top_wait_call(fo).filter(|(w, _)| *w != "futex") {
        let (a, b) = (per_txn(fo.calls(wc), fr), per_txn(so.calls(wc), sr));
        r.comparisons.push(Comparison {
            what: format!("{n}: {wc} calls fast/slow, same work"),
            ours: ratio(a, b),
            published: Some(effect::pub_futex_ratio()),
            unit: "x".into(),
            note: format!(
                "{a:.2} vs {b:.2} per transaction ({n}'s most frequent wait/wake call, in \
                 futex's place); paper: futex 7.72 M vs 2.61 M for the same work (tables 4-5)"
            ),
        });
    }
    let busy = |x: &Run| {
        x.srv_cpu
            .map(|c| format!("{:.2}", (c.user_ns + c.sys_ns) as f64 / 1e9 / x.secs))
            .unwrap_or_else(|| "-".into())
    };
    r.verdict.push(format!(
        "{n}: the fast device ran {tput:.1}x the slow one's transactions per second (paper: SSD \
         {pub_tput:.1}x faster than HDD). The server kept {} CPUs busy on the fast device and \
         {} on the slow one; machine-wide idle+iowait was {:.0}% vs {:.0}% (this shared \
         machine's other load fills the idle time the paper saw).",
        busy(fr),
        busy(sr),
        idle_wait_pct(&fr.stat.total),
        idle_wait_pct(&sr.stat.total)
    ));
    r.verdict.push(format!(
        "{n}: for the same work the fast device spent {sys:.2}x the kernel time of the slow one \
         (paper: 1.66x more on the SSD): {sys_f:.1} vs {sys_s:.1} ms per 1000 transactions \
         ({src}). {}",
        if sys > 1.0 {
            "Like the paper, the faster device costs more kernel time per unit of work."
        } else {
            "Unlike the paper, the faster device costs less kernel time per unit of work."
        }
    ));
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

fn overhead_sentence(db: Db, p: f64) -> String {
    format!(
        "Attaching observe cost {} {p:.1}% of its TPS on the fast device (median of \
         alternating plain/observed pairs; goal <= {OVERHEAD_GOAL_PCT}%: {}).",
        db.bench(),
        if p <= OVERHEAD_GOAL_PCT {
            "met"
        } else {
            "not met"
        }
    )
}

/// Kernel CPU per 1000 transactions: of the server's tasks when cpuacct is
/// there, else machine-wide (which includes the client and everything else).
fn sys_ms_per_ktxn(db: Db, r: &Run) -> (f64, &'static str) {
    let (sys_s, src) = match r.srv_cpu {
        Some(c) => (
            c.sys_ns as f64 / 1e9,
            match db {
                Db::Postgres => "PostgreSQL processes, cpuacct",
                Db::Mariadb => "MariaDB server, cpuacct",
            },
        ),
        None => (
            r.stat.total.system as f64 / clk_tck(),
            "all CPUs, /proc/stat: includes other load",
        ),
    };
    let v = if r.out.transactions > 0 {
        sys_s * 1e3 / (r.out.transactions as f64 / 1000.0)
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
    use crate::lab::observe::bench::recorded::run;

    fn server(db: Db, fast: Run, slow: Run) -> ServerResult {
        ServerResult {
            db,
            devs: vec![
                DeviceResult {
                    kind: DevKind::Slow,
                    run: slow,
                    overhead: Vec::new(),
                },
                DeviceResult {
                    kind: DevKind::Fast,
                    run: fast,
                    overhead: Vec::new(),
                },
            ],
        }
    }

    fn comparison(r: &StudyResult, what: &str) -> f64 {
        r.comparisons
            .iter()
            .find(|c| c.what == what)
            .unwrap_or_else(|| panic!("no {what:?}: {:?}", r.comparisons))
            .ours
    }

    #[test]
    fn comparisons_and_verdict_follow_the_observed_counts() {
        // Counts recorded from one quick run on this machine (4 s per device).
        let maria = server(
            Db::Mariadb,
            run(
                2567,
                4.1,
                &[("futex", 18_410), ("poll", 31_172), ("fdatasync", 2368)],
                40_032,
                28_636,
            ),
            run(
                405,
                4.4,
                &[("futex", 3129), ("poll", 4810), ("fdatasync", 318)],
                6864,
                5004,
            ),
        );
        let pg = server(
            Db::Postgres,
            run(
                1762,
                4.2,
                &[("epoll_wait", 18_730), ("futex", 1217)],
                19_289,
                286,
            ),
            run(361, 4.2, &[("epoll_wait", 4928), ("futex", 543)], 5890, 141),
        );
        let mut r = StudyResult::default();
        build(&mut r, &[maria, pg]);
        let futex = comparison(&r, "MariaDB: futex calls fast/slow, same work");
        let want = (18_410.0 / 2567.0) / (3129.0 / 405.0);
        assert!((futex - want).abs() < 1e-12, "{futex} vs {want}");
        let ctxt = comparison(&r, "MariaDB: context switches/s fast/slow");
        let want = ((40_032.0 + 28_636.0) / 4.1) / ((6864.0 + 5004.0) / 4.4);
        assert!((ctxt - want).abs() < 1e-9, "{ctxt} vs {want}");
        let pg_futex = comparison(&r, "PostgreSQL: futex calls fast/slow, same work");
        assert!((pg_futex - (1217.0 / 1762.0) / (543.0 / 361.0)).abs() < 1e-12);
        // epoll_wait stands in futex's place for PostgreSQL, not for MariaDB
        // (whose most frequent wait/wake call here is poll).
        comparison(&r, "PostgreSQL: epoll_wait calls fast/slow, same work");
        comparison(&r, "MariaDB: poll calls fast/slow, same work");
        // Neither ratio is above 1, so neither server is said to show the effect.
        assert!(futex < 1.0 && pg_futex < 1.0);
        let v = r.verdict.join("\n");
        assert!(!v.contains("shows the paper's effect"), "{v}");
        assert!(
            v.contains("MariaDB does not show the paper's futex effect (0.93x"),
            "{v}"
        );
        let t = r
            .tables
            .iter()
            .find(|t| t.title.starts_with("(vi)"))
            .expect("the side-by-side table");
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0][0], Cell::text("MariaDB"));
        assert_eq!(t.rows[0].last(), Some(&Cell::text("no")));
    }

    #[test]
    fn median_of_even_count_is_the_middle_mean() {
        assert_eq!(median_mid(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median_mid(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median_mid(vec![]).is_nan());
    }
}
