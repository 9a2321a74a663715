//! The `iolab run --report` page: per job a summary, the latency distribution,
//! the clat CDF, IOPS over time, the job's fio logs over time (`logs`),
//! per-class latency and how the I/O was done.

use std::fmt::Write;

use super::shell::{anchor, data_table, figure, fmt_num, kv_table, page_close, page_open};
use crate::measure::recorder::LAT_BUCKET_BOUNDS_NS;
use crate::placement::corunner::Kernel;
use crate::report::chart::{Chart, ChartKind, Series};
use crate::report::escape::escape;
use crate::report::model::{DirResult, JobEngine, JobResult, LatStats, Percentiles, RunResult};
use crate::report::study::{Cell, Table};

/// "2 ns", "250 µs", "2 s": a latency bound for axis categories.
fn fmt_ns(ns: u64) -> String {
    let v = ns as f64;
    if ns >= 1_000_000_000 {
        format!("{}s", crate::report::svg::fmt_si_single(v / 1e9))
    } else if ns >= 1_000_000 {
        format!("{}ms", crate::report::svg::fmt_si_single(v / 1e6))
    } else if ns >= 1_000 {
        format!("{}µs", crate::report::svg::fmt_si_single(v / 1e3))
    } else {
        format!("{ns}ns")
    }
}

/// fio's latency distribution (percent of read/write I/Os per bucket, clat)
/// as a bar chart over the buckets from the first to the last non-empty one.
fn latency_histogram(j: &JobResult) -> Chart {
    let pcts: Vec<f64> = j
        .latency_ns
        .0
        .iter()
        .chain(&j.latency_us.0)
        .chain(&j.latency_ms.0)
        .map(|(_, v)| *v)
        .collect();
    let mut labels: Vec<String> = LAT_BUCKET_BOUNDS_NS
        .iter()
        .map(|&b| format!("<{}", fmt_ns(b)))
        .collect();
    labels.push(format!(
        "≥{}",
        fmt_ns(LAT_BUCKET_BOUNDS_NS[LAT_BUCKET_BOUNDS_NS.len() - 1])
    ));
    let n = pcts.len().min(labels.len());
    let first = pcts[..n].iter().position(|&p| p > 0.0);
    let last = pcts[..n].iter().rposition(|&p| p > 0.0);
    let (categories, points) = match (first, last) {
        (Some(a), Some(b)) => (
            labels[a..=b].to_vec(),
            (a..=b).map(|i| ((i - a) as f64, pcts[i])).collect(),
        ),
        _ => (vec![], vec![]),
    };
    Chart {
        title: format!("{}: completion latency distribution", j.jobname),
        kind: ChartKind::Bar,
        x_label: "clat bucket (fio's latency buckets)".into(),
        y_label: "% of I/Os".into(),
        categories,
        series: vec![Series {
            name: String::new(),
            points,
        }],
        log_x: false,
    }
}

/// clat CDF per direction from the percentiles, anchored at min and max.
fn latency_cdf(j: &JobResult) -> Chart {
    let mut series = Vec::new();
    let mut lo = f64::INFINITY;
    let mut hi: f64 = 0.0;
    for (name, d) in dirs_with_data(j) {
        let mut pts = Vec::new();
        let s = &d.clat_ns;
        if s.n == 0 {
            continue;
        }
        pts.push((s.min as f64 / 1e3, 0.0));
        if let Some(p) = own_clat(j, name, d) {
            for (pct, ns) in &p.0 {
                pts.push((*ns as f64 / 1e3, pct / 100.0));
            }
        }
        pts.push((s.max as f64 / 1e3, 1.0));
        for &(x, _) in &pts {
            if x > 0.0 {
                lo = lo.min(x);
                hi = hi.max(x);
            }
        }
        series.push(Series {
            name: name.to_string(),
            points: pts,
        });
    }
    Chart {
        title: format!("{}: completion latency CDF", j.jobname),
        kind: ChartKind::Cdf,
        x_label: "clat (µs)".into(),
        y_label: "fraction of I/Os".into(),
        categories: vec![],
        series,
        // Latencies with a long tail only read on a log axis.
        log_x: lo.is_finite() && hi / lo >= 20.0,
    }
}

/// IOPS per full log interval and direction.
/// The span the job's logs cover, ms. Results saved before `iolab.runtime_ms`
/// existed have only fio's `job_runtime` (the workers' times summed), which
/// is the span for one worker.
fn wall_runtime_ms(j: &JobResult) -> u64 {
    if j.iolab.runtime_ms > 0 {
        j.iolab.runtime_ms
    } else {
        j.job_runtime / u64::from(j.iolab.workers.max(1))
    }
}

fn iops_over_time(j: &JobResult) -> (Chart, Option<String>) {
    let log = &j.iolab.iops_log;
    let mut chart = Chart {
        title: format!("{}: IOPS over time", j.jobname),
        kind: ChartKind::Line,
        x_label: "time (s)".into(),
        y_label: "IOPS".into(),
        ..Default::default()
    };
    if log.interval_ms == 0 {
        return (
            chart,
            Some("the IOPS log interval is below 1 ms, too fine for this chart".into()),
        );
    }
    // The trailing interval is partial and would read as a drop in IOPS.
    let full = (wall_runtime_ms(j) / log.interval_ms) as usize;
    let used = full.min(log.ios.len());
    let mut notes = Vec::new();
    if used == 0 && !log.ios.is_empty() {
        notes.push(format!(
            "the run ({} ms) was shorter than one log interval ({} ms)",
            wall_runtime_ms(j),
            log.interval_ms
        ));
    }
    if log.dropped > 0 {
        notes.push(format!(
            "{} completions fell past the log's capacity and are not shown",
            log.dropped
        ));
    }
    let per_s = 1000.0 / log.interval_ms as f64;
    for (k, name) in ["read", "write", "fsync"].iter().enumerate() {
        if log.ios[..used].iter().all(|s| s[k] == 0) {
            continue;
        }
        chart.series.push(Series {
            name: name.to_string(),
            points: log.ios[..used]
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    (
                        (i + 1) as f64 * log.interval_ms as f64 / 1e3,
                        s[k] as f64 * per_s,
                    )
                })
                .collect(),
        });
    }
    (chart, (!notes.is_empty()).then(|| notes.join("; ")))
}

fn dirs_with_data(j: &JobResult) -> Vec<(&'static str, &DirResult)> {
    j.dirs()
        .into_iter()
        .filter(|(_, d)| d.total_ios > 0)
        .collect()
}

fn pctl(s: &LatStats, p: f64) -> Option<u64> {
    find_pct(s.percentile.as_ref()?, p)
}

fn find_pct(l: &Percentiles, p: f64) -> Option<u64> {
    l.0.iter()
        .find(|(q, _)| (q - p).abs() < 1e-9)
        .map(|(_, v)| *v)
}

/// A direction's completion-latency percentiles, iolab's own (finer than
/// fio's bins) where the result has them, else fio's.
fn own_clat<'a>(j: &'a JobResult, name: &str, d: &'a DirResult) -> Option<&'a Percentiles> {
    j.iolab
        .clat_percentile
        .get(name)
        .or(d.clat_ns.percentile.as_ref())
}

fn us(ns: f64) -> String {
    fmt_num(ns / 1e3)
}

/// One row per key of the job's `iolab.engine` object, as the fio JSON has
/// it (keys sorted), each value as JSON text (strings bare).
fn engine_rows(e: &JobEngine) -> Vec<(String, String)> {
    match serde_json::to_value(e) {
        Ok(serde_json::Value::Object(m)) => {
            m.into_iter().map(|(k, v)| (k, json_text(&v))).collect()
        }
        // A struct of plain fields always serialises to an object.
        _ => Vec::new(),
    }
}

fn json_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn job_section(out: &mut String, i: usize, j: &JobResult) {
    let _ = writeln!(
        out,
        "<section class=\"job\" id=\"{}\">\n<h2>Job {}</h2>",
        anchor("job", i, &j.jobname),
        escape(&j.jobname)
    );
    let _ = writeln!(
        out,
        "<p class=\"sub\">group {} · {} worker{} · runtime {} ms · usr {:.1}% sys {:.1}% · {} context switches{}</p>",
        j.groupid,
        j.iolab.workers,
        if j.iolab.workers == 1 { "" } else { "s" },
        wall_runtime_ms(j),
        j.usr_cpu,
        j.sys_cpu,
        j.ctx,
        if j.error != 0 {
            format!(" · <span class=\"warn\">error {}</span>", j.error)
        } else {
            String::new()
        }
    );
    if !j.job_options.0.is_empty() {
        out.push_str("<h3>Options</h3>\n");
        kv_table(out, &j.job_options.0);
    }
    let dirs = dirs_with_data(j);
    if dirs.is_empty() && j.sync.total_ios == 0 {
        out.push_str("<p class=\"warn\">This job completed no I/O.</p>\n");
    } else {
        out.push_str("<table class=\"data\"><thead><tr><th></th><th class=\"num\">I/Os</th><th class=\"num\">IOPS</th><th class=\"num\">MiB/s</th><th class=\"num\">clat mean µs</th><th class=\"num\">p50</th><th class=\"num\">p99</th><th class=\"num\">p99.9</th><th class=\"num\">max</th><th class=\"num\">slat mean µs</th></tr></thead><tbody>\n");
        for (name, d) in &dirs {
            let p = |q| {
                own_clat(j, name, d)
                    .and_then(|l| find_pct(l, q))
                    .map_or("-".into(), |v| us(v as f64))
            };
            let _ = writeln!(
                out,
                "<tr><td>{name}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                d.total_ios,
                fmt_num(d.iops),
                fmt_num(d.bw_bytes as f64 / (1u64 << 20) as f64),
                us(d.clat_ns.mean),
                p(50.0),
                p(99.0),
                p(99.9),
                us(d.clat_ns.max as f64),
                us(d.slat_ns.mean),
            );
        }
        if j.sync.total_ios > 0 {
            let s = &j.sync.lat_ns;
            let _ = writeln!(
                out,
                "<tr><td>fsync</td><td class=\"num\">{}</td><td class=\"num\">-</td><td class=\"num\">-</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">-</td></tr>",
                j.sync.total_ios,
                us(s.mean),
                pctl(s, 50.0).map_or("-".into(), |v| us(v as f64)),
                pctl(s, 99.0).map_or("-".into(), |v| us(v as f64)),
                pctl(s, 99.9).map_or("-".into(), |v| us(v as f64)),
                us(s.max as f64),
            );
        }
        out.push_str("</tbody></table>\n");
        figure(out, &latency_histogram(j));
        figure(out, &latency_cdf(j));
        let (chart, note) = iops_over_time(j);
        figure(out, &chart);
        if let Some(n) = note {
            let _ = writeln!(
                out,
                "<p class=\"legend-note\">IOPS over time: {}.</p>",
                escape(&n)
            );
        }
        // The job's fio logs, read back from where the run wrote them.
        let (charts, notes) = super::logs::charts(i, j);
        for c in &charts {
            figure(out, c);
        }
        for n in notes {
            let _ = writeln!(out, "<p class=\"legend-note\">{}.</p>", escape(&n));
        }
    }
    if !j.iolab.classes.is_empty() {
        let t = Table {
            title: "Latency by request class".into(),
            columns: ["class", "I/Os", "MiB", "clat mean µs", "p50", "p99"]
                .map(String::from)
                .to_vec(),
            rows: j
                .iolab
                .classes
                .iter()
                .map(|c| {
                    let p = |q| pctl(&c.clat_ns, q).map_or(f64::NAN, |v| v as f64 / 1e3);
                    vec![
                        Cell::text(c.class.as_str()),
                        Cell::num(c.ios as f64, 0),
                        Cell::num(c.bytes as f64 / (1u64 << 20) as f64, 1),
                        Cell::num(c.clat_ns.mean / 1e3, 2),
                        Cell::num(p(50.0), 2),
                        Cell::num(p(99.0), 2),
                    ]
                })
                .collect(),
        };
        data_table(out, &t);
    }
    if let Some(e) = &j.iolab.engine {
        out.push_str("<h3>How the I/O was done</h3>\n");
        kv_table(out, &engine_rows(e));
    }
    out.push_str("</section>\n");
}

/// The report for one `iolab run`: per job a summary, the latency
/// distribution, the clat CDF and IOPS over time.
pub fn render_run_html(run: &RunResult) -> String {
    let mut out = String::with_capacity(64 * 1024);
    page_open(&mut out, "iolab run report");
    out.push_str("<h1>iolab run report</h1>\n");
    let _ = writeln!(
        out,
        "<p class=\"sub\">{} · {} · {} job{}</p>",
        escape(&run.fio_version),
        escape(&run.time),
        run.jobs.len(),
        if run.jobs.len() == 1 { "" } else { "s" }
    );
    let mut facts: Vec<(String, String)> = Vec::new();
    if let Some(c) = &run.iolab.clock {
        facts.push((
            "clock".into(),
            format!(
                "{}: {:.1} ns per reading, resolution {} ns",
                c.source, c.cost_ns, c.resolution_ns
            ),
        ));
    }
    facts.extend(run.iolab.notes.0.iter().cloned());
    if !facts.is_empty() {
        kv_table(&mut out, &facts);
    }
    if run.jobs.len() > 1 {
        out.push_str("<nav class=\"toc\"><strong>Jobs</strong>\n<ol>\n");
        for (i, j) in run.jobs.iter().enumerate() {
            let _ = writeln!(
                out,
                "<li><a href=\"#{}\">{}</a></li>",
                anchor("job", i, &j.jobname),
                escape(&j.jobname)
            );
        }
        out.push_str("</ol></nav>\n");
    }
    for (i, j) in run.jobs.iter().enumerate() {
        job_section(&mut out, i, j);
    }
    if !run.disk_util.is_empty() {
        let t = Table {
            title: "Disk utilisation".into(),
            columns: ["disk", "read I/Os", "write I/Os", "util %"]
                .map(String::from)
                .to_vec(),
            rows: run
                .disk_util
                .iter()
                .map(|d| {
                    vec![
                        Cell::text(d.name.clone()),
                        Cell::num(d.read_ios as f64, 0),
                        Cell::num(d.write_ios as f64, 0),
                        Cell::num(d.util, 2),
                    ]
                })
                .collect(),
        };
        out.push_str("<section>\n");
        data_table(&mut out, &t);
        out.push_str("</section>\n");
    }
    for p in &run.iolab.placement {
        let t = Table {
            title: format!(
                "Placement, group {}: {}{}{}",
                p.groupid,
                p.policy.as_deref().unwrap_or("as the jobs ask"),
                p.topology
                    .as_ref()
                    .map_or(String::new(), |t| format!(" on {t}")),
                p.balancer.as_ref().map_or(String::new(), |b| format!(
                    "; live balancer: {} ticks of {:.0} ms, {} migrations{}",
                    b.ticks,
                    b.interval_ms,
                    b.migrations,
                    if b.reached_best {
                        ", ended at the study's best placement"
                    } else {
                        ""
                    }
                ))
            ),
            columns: [
                "task",
                "kind",
                "allowed CPUs",
                "last CPU",
                "CPU %",
                "co-runner work units/s",
            ]
            .map(String::from)
            .to_vec(),
            rows: p
                .tasks
                .iter()
                .map(|t| {
                    vec![
                        Cell::text(t.name.clone()),
                        Cell::text(format!(
                            "{}{}",
                            if t.kind == crate::placement::TaskKind::Poll {
                                "P (I/O worker)"
                            } else {
                                "C (co-runner)"
                            },
                            t.predicted
                                .as_ref()
                                .map_or(String::new(), |k| format!(", predicted {}", k.letter()))
                        )),
                        Cell::text(t.cpus.clone()),
                        Cell::text(t.last_cpu.map_or("-".into(), |c| c.to_string())),
                        Cell::num(t.cpu_pct, 1),
                        match (t.kernel.map(Kernel::name), t.units_per_s) {
                            (Some(k), Some(u)) => Cell::text(format!("{u:.0} ({k})")),
                            _ => Cell::text("-"),
                        },
                    ]
                })
                .collect(),
        };
        out.push_str("<section>\n");
        data_table(&mut out, &t);
        out.push_str("</section>\n");
    }
    if let Some(sys) = &run.iolab.system
        && let Ok(v) = serde_json::to_string_pretty(sys)
    {
        let _ = writeln!(
            out,
            "<details><summary>System-wide deltas (/proc/stat, /proc/interrupts, cpuidle)</summary><pre>{}</pre></details>",
            escape(&v)
        );
    }
    page_close(&mut out);
    out
}
