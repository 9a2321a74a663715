//! The fleet view of `iolab report --fleet DIR`: one self-contained page that
//! compares hosts. First the hosts (machine, state, every study's headline
//! figures) and the probed targets (the recommended completion model and its
//! numbers), then per study its charts with one series per host.
//!
//! A host that failed, could not be reached, or left results of another iolab
//! version or schema is named with what went wrong and shown with whatever it
//! left; nothing is dropped.

use std::fmt::Write;

use crate::report::chart::{Chart, ChartKind, Series};
use crate::report::escape::escape;
use crate::report::fleet::{Fleet, FleetHost, HostState};
use crate::report::html::shell::{
    anchor, data_table, figure, fmt_num, or_unknown, page_close, page_open,
};
use crate::report::study::{Cell, StudyResult, Table};

/// A study as the fleet shows it: its name and each host's result.
struct FleetStudy<'a> {
    id: &'a str,
    seed: &'a str,
    title: &'a str,
    /// (host, its result), hosts in fleet order; hosts without the study absent.
    runs: Vec<(&'a str, &'a StudyResult)>,
}

/// Studies in the order they first appear across the hosts.
fn studies(fleet: &Fleet) -> Vec<FleetStudy<'_>> {
    let mut out: Vec<FleetStudy> = Vec::new();
    for h in &fleet.hosts {
        let Some(r) = &h.results else { continue };
        for s in &r.studies {
            match out.iter_mut().find(|f| f.id == s.id) {
                Some(f) => f.runs.push((&h.name, s)),
                None => out.push(FleetStudy {
                    id: &s.id,
                    seed: &s.seed,
                    title: &s.title,
                    runs: vec![(&h.name, s)],
                }),
            }
        }
    }
    out
}

/// A host's charts merged: one chart per (chart title, series) of the study,
/// with one series per host. Stacked bars become grouped bars (segments of
/// different hosts do not add up), categories are matched by name. Returns the
/// charts and, per chart, the hosts that ran the study but have no such chart.
pub fn fleet_charts(runs: &[(&str, &StudyResult)]) -> Vec<(Chart, Vec<String>)> {
    // (title, series name) in first-seen order, with the first chart's shape.
    let mut keys: Vec<(&Chart, &str, bool)> = Vec::new();
    for (_, s) in runs {
        for c in &s.charts {
            for se in &c.series {
                if !keys
                    .iter()
                    .any(|(k, n, _)| k.title == c.title && *n == se.name)
                {
                    keys.push((c, &se.name, c.series.len() > 1));
                }
            }
        }
    }
    let mut out = Vec::new();
    for (shape, series_name, many) in keys {
        let kind = match shape.kind {
            ChartKind::Stacked => ChartKind::Bar,
            k => k,
        };
        let bars = kind == ChartKind::Bar;
        let mut chart = Chart {
            title: if many {
                format!("{}: {}", shape.title, series_name)
            } else {
                shape.title.clone()
            },
            kind,
            x_label: shape.x_label.clone(),
            y_label: if many && shape.y_label.is_empty() {
                series_name.to_string()
            } else {
                shape.y_label.clone()
            },
            categories: Vec::new(),
            series: Vec::new(),
            log_x: shape.log_x,
        };
        let mut missing = Vec::new();
        for (host, s) in runs {
            let found = s
                .charts
                .iter()
                .find(|c| c.title == shape.title)
                .and_then(|c| {
                    c.series
                        .iter()
                        .find(|se| se.name == series_name)
                        .map(|se| (c, se))
                });
            let Some((c, se)) = found else {
                missing.push(host.to_string());
                continue;
            };
            let points = if bars {
                se.points
                    .iter()
                    .filter_map(|&(x, y)| {
                        let name = c.categories.get(x as usize)?;
                        let i = match chart.categories.iter().position(|k| k == name) {
                            Some(i) => i,
                            None => {
                                chart.categories.push(name.clone());
                                chart.categories.len() - 1
                            }
                        };
                        Some((i as f64, y))
                    })
                    .collect()
            } else {
                se.points.clone()
            };
            chart.series.push(Series {
                name: host.to_string(),
                points,
            });
        }
        out.push((chart, missing));
    }
    out
}

fn state_text(h: &FleetHost) -> (String, bool) {
    match h.state() {
        HostState::Ok if h.problems.is_empty() => ("ok".into(), false),
        HostState::Ok => ("ok, with unreadable files".into(), true),
        HostState::Failed { task, .. } => (format!("failed: {task}"), true),
        HostState::Unreachable { .. } => ("unreachable".into(), true),
        HostState::Unrecorded => ("no playbook record".into(), !h.problems.is_empty()),
    }
}

fn hosts_table(out: &mut String, fleet: &Fleet) {
    out.push_str("<table class=\"data hosts\">\n<thead><tr><th>host</th><th>state</th><th>iolab</th><th>CPU</th><th class=\"num\">CPUs</th><th class=\"num\">cores × threads</th><th>kernel</th><th class=\"num\">clock ns</th><th class=\"num\">wakeup µs</th><th>mode</th><th>studies</th></tr></thead>\n<tbody>\n");
    for h in &fleet.hosts {
        let (state, bad) = state_text(h);
        let m = h.results.as_ref().and_then(|r| r.machine.as_ref());
        let version = match (h.results.as_ref(), h.other_version()) {
            (None, _) => "-".to_string(),
            (Some(r), Some(v)) if !r.complete => format!("{} (other schema)", or_unknown(v)),
            (Some(_), Some(v)) => format!("{} (not this one)", or_unknown(v)),
            (Some(_), None) => env!("CARGO_PKG_VERSION").to_string(),
        };
        let cores = h
            .topology
            .as_ref()
            .map_or("-".to_string(), |t| match t.smt() {
                Some(n) => format!("{} × {n}", t.cores.len()),
                None => format!("{} cores, {} threads", t.cores.len(), t.threads()),
            });
        let cpus = m
            .map(|m| m.cpus)
            .or(h.topology.as_ref().map(|t| t.threads()))
            .map_or("-".into(), |n| n.to_string());
        let mode = h
            .results
            .as_ref()
            .and_then(|r| r.quick)
            .or(h.record.as_ref().and_then(|r| r.quick))
            .map_or("-", |q| if q { "quick" } else { "full" });
        let studies = match (&h.results, &h.record) {
            (Some(r), _) if !r.studies.is_empty() => r
                .studies
                .iter()
                .map(|s| s.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            (_, Some(rec)) if !rec.studies.is_empty() => {
                format!("asked: {}", rec.studies.join(", "))
            }
            _ => "-".into(),
        };
        let cls = if bad { " class=\"warn\"" } else { "" };
        let _ = writeln!(
            out,
            "<tr><td style=\"white-space:nowrap\">{}</td><td{cls}>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            if detail_lines(h).is_empty() {
                escape(&h.name)
            } else {
                format!(
                    "<a href=\"#{}\">{}</a>",
                    host_anchor(fleet, h),
                    escape(&h.name)
                )
            },
            escape(&state),
            escape(&version),
            escape(m.map_or("-", |m| or_unknown(&m.cpu_model))),
            escape(&cpus),
            escape(&cores),
            escape(m.map_or("-", |m| or_unknown(&m.kernel))),
            escape(&h.clock_ns().map_or("-".into(), |c| format!("{c:.1}"))),
            escape(
                &h.wakeup_ns()
                    .map_or("-".into(), |w| format!("{:.1}", w as f64 / 1e3))
            ),
            mode,
            escape(&studies)
        );
    }
    out.push_str("</tbody>\n</table>\n");
}

fn host_anchor(fleet: &Fleet, h: &FleetHost) -> String {
    let i = fleet
        .hosts
        .iter()
        .position(|x| std::ptr::eq(x, h))
        .unwrap_or(0);
    anchor("host", i, &h.name)
}

/// What went wrong on a host, or is worth knowing: the failed task with its
/// error, another iolab version, unreadable files, studies not run. Empty for
/// a host where everything asked for was measured and fetched.
fn detail_lines(h: &FleetHost) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    match h.state() {
        HostState::Failed { task, error } => {
            lines.push(format!("failed at “{task}”:"));
            lines.push(error);
        }
        HostState::Unreachable { error } => {
            lines.push("could not be reached:".into());
            lines.push(error);
        }
        _ => {}
    }
    if let Some(v) = h.other_version() {
        lines.push(format!(
            "results from iolab {} (this report: iolab {}); shown as far as they read",
            or_unknown(v),
            env!("CARGO_PKG_VERSION")
        ));
    }
    lines.extend(h.problems.iter().map(|p| p.to_string()));
    if let Some(r) = &h.results {
        for (part, reason) in &r.not_run {
            lines.push(format!("study {part} not run: {reason}"));
        }
    }
    lines
}

/// The details of every host that has any (see [`detail_lines`]).
fn host_details(out: &mut String, fleet: &Fleet) {
    for h in &fleet.hosts {
        let lines = detail_lines(h);
        if lines.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "<div class=\"host-detail\" id=\"{}\"><h3>{}</h3>\n<pre class=\"warn\">{}</pre>\n</div>",
            host_anchor(fleet, h),
            escape(&h.name),
            escape(&lines.join("\n"))
        );
    }
}

/// One table per study: a row per host with the study's own headline figures
/// (its "ours" column: what the study compares with the published figures).
fn headline_tables(out: &mut String, fleet: &Fleet, studies: &[FleetStudy]) {
    for st in studies {
        let mut whats: Vec<(&str, &str)> = Vec::new();
        for (_, s) in &st.runs {
            for c in &s.comparisons {
                if !whats.iter().any(|(w, _)| *w == c.what) {
                    whats.push((&c.what, &c.unit));
                }
            }
        }
        let mut columns = vec!["host".to_string()];
        columns.extend(whats.iter().map(|(w, u)| {
            if u.is_empty() {
                w.to_string()
            } else {
                format!("{w} ({u})")
            }
        }));
        columns.push("note".into());
        let mut rows = Vec::new();
        for h in &fleet.hosts {
            let run = st.runs.iter().find(|(n, _)| *n == h.name).map(|r| r.1);
            let mut row = vec![Cell::text(&h.name)];
            let note = match run {
                Some(s) => {
                    for (w, _) in &whats {
                        row.push(
                            s.comparisons
                                .iter()
                                .find(|c| c.what == *w)
                                .map_or(Cell::num(f64::NAN, 0), |c| {
                                    Cell::num(c.ours, precision(c.ours))
                                }),
                        );
                    }
                    String::new()
                }
                None => {
                    row.extend(whats.iter().map(|_| Cell::num(f64::NAN, 0)));
                    no_study_reason(h, st.id)
                }
            };
            row.push(Cell::text(note));
            rows.push(row);
        }
        let _ = writeln!(
            out,
            "<h3>Study {} ({}) — {}</h3>\n<div class=\"wide\" style=\"overflow-x:auto\">",
            escape(or_unknown(st.seed)),
            escape(st.id),
            escape(st.title)
        );
        host_table(
            out,
            &Table {
                title: String::new(),
                columns,
                rows,
            },
        );
        out.push_str("</div>\n");
    }
}

/// Why a host has no result for a study.
fn no_study_reason(h: &FleetHost, id: &str) -> String {
    if let Some((_, reason)) = h
        .results
        .as_ref()
        .and_then(|r| r.not_run.iter().find(|(p, _)| p.contains(id)))
    {
        return format!("not run: {reason}");
    }
    match h.state() {
        HostState::Failed { task, .. } => format!("failed: {task}"),
        HostState::Unreachable { .. } => "unreachable".into(),
        _ if h.results.is_none() => "no results.json".into(),
        _ => "not asked for".into(),
    }
}

/// `data_table` with the first column (the host) kept on one line: host
/// names such as `db-1` would otherwise break at the hyphen in wide tables.
fn host_table(out: &mut String, t: &Table) {
    let mut frag = String::new();
    data_table(&mut frag, t);
    out.push_str(&frag.replace("<tr><td>", "<tr><td style=\"white-space:nowrap\">"));
}

/// Enough digits for 3 significant figures, as `fmt_num` prints.
fn precision(v: f64) -> u8 {
    let s = fmt_num(v);
    s.split_once('.').map_or(0, |(_, d)| d.len() as u8)
}

fn targets_table(out: &mut String, fleet: &Fleet) {
    let columns = [
        "host",
        "target",
        "I/O",
        "recommended",
        "p50 µs",
        "p99 µs",
        "IOPS",
        "CPU/IO µs",
        "wakeup µs",
        "why",
        "adaptive chose",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    for h in &fleet.hosts {
        let mut seen: Vec<String> = Vec::new();
        for p in &h.probes {
            let v = &p.probe;
            let given = v.given.display().to_string();
            seen.push(given.clone());
            let target = match &v.fs_type {
                Some(fs) => format!("{given} ({fs})"),
                None => given,
            };
            for (op, r) in [("read", Some(&v.read)), ("write", v.write.as_ref())] {
                let Some(r) = r else { continue };
                let io = format!("{op}{}", if r.direct { "" } else { ", buffered" });
                let mut row = vec![Cell::text(&h.name), Cell::text(&target), Cell::text(io)];
                match (&r.recommendation, r.recommended_row()) {
                    (Some(rec), Some(m)) => {
                        row.push(Cell::text(&rec.label));
                        row.push(Cell::num(m.p50_ns as f64 / 1e3, 1));
                        row.push(Cell::num(m.p99_ns as f64 / 1e3, 1));
                        row.push(Cell::num(m.iops, 0));
                        row.push(Cell::num(m.cpu_all_ns_per_io / 1e3, 1));
                        row.push(Cell::num(v.machine.wakeup_ns as f64 / 1e3, 1));
                        let mut why = rec.rule.clone();
                        if let Some(c) = &rec.cheapest {
                            let _ = write!(why, "; if CPU matters more: {c}");
                        }
                        row.push(Cell::text(why));
                    }
                    _ => {
                        row.push(Cell::text("none"));
                        row.extend((0..5).map(|_| Cell::num(f64::NAN, 0)));
                        row.push(Cell::text("no model completed I/O"));
                    }
                }
                row.push(Cell::text(
                    r.adaptive_choice().unwrap_or_else(|| "-".into()),
                ));
                rows.push(row);
            }
        }
        // Targets the inventory named that left no probe output.
        if let Some(rec) = &h.record {
            for t in rec.targets.iter().filter(|t| !seen.contains(t)) {
                let why = match h.state() {
                    // The probe step names each failed target on its own line.
                    HostState::Failed { error, .. } if error.contains(t.as_str()) => error
                        .lines()
                        .filter(|l| l.contains(t.as_str()))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    HostState::Failed { task, .. } => {
                        format!("not probed: the host failed at “{task}”")
                    }
                    HostState::Unreachable { .. } => "not probed: host unreachable".into(),
                    _ => "no probe output was fetched".into(),
                };
                let mut row = vec![Cell::text(&h.name), Cell::text(t), Cell::text("-")];
                row.push(Cell::text("failed"));
                row.extend((0..5).map(|_| Cell::num(f64::NAN, 0)));
                row.push(Cell::text(why));
                rows.push(row);
            }
        }
    }
    if rows.is_empty() {
        out.push_str("<p>No target was probed.</p>\n");
        return;
    }
    host_table(
        out,
        &Table {
            title: String::new(),
            columns,
            rows,
        },
    );
}

fn study_charts(out: &mut String, i: usize, st: &FleetStudy) {
    let _ = writeln!(
        out,
        "<section class=\"study\" id=\"{}\">\n<h2><span class=\"seed\">Study {}</span> — {}</h2>",
        anchor("study", i, st.id),
        escape(or_unknown(st.seed)),
        escape(st.title)
    );
    let hosts: Vec<&str> = st.runs.iter().map(|r| r.0).collect();
    let _ = writeln!(
        out,
        "<p class=\"sub\"><code>iolab lab {}</code> on {} host{}: {}. One series per host.</p>",
        escape(st.id),
        hosts.len(),
        if hosts.len() == 1 { "" } else { "s" },
        escape(&hosts.join(", "))
    );
    let charts = fleet_charts(&st.runs);
    if charts.is_empty() {
        out.push_str("<p>This study drew no charts.</p>\n");
    }
    for (c, missing) in &charts {
        figure(out, c);
        if !missing.is_empty() {
            let _ = writeln!(
                out,
                "<p class=\"legend-note\">No such chart from: {}.</p>",
                escape(&missing.join(", "))
            );
        }
    }
    out.push_str("</section>\n");
}

/// The whole fleet page.
pub fn render_fleet_html(fleet: &Fleet) -> String {
    let mut out = String::with_capacity(256 * 1024);
    let n = fleet.hosts.len();
    let ok = fleet
        .hosts
        .iter()
        .filter(|h| h.state() == HostState::Ok || h.state() == HostState::Unrecorded)
        .count();
    page_open(&mut out, &format!("iolab fleet — {n} hosts"));
    let _ = writeln!(
        out,
        "<h1>iolab fleet report</h1>\n<p class=\"sub\">{n} host{} from <code>{}</code>: {ok} with results, {} failed or unreachable.</p>",
        if n == 1 { "" } else { "s" },
        escape(&fleet.dir.display().to_string()),
        n - ok
    );
    let studies = studies(fleet);
    out.push_str("<nav class=\"toc\"><strong>Contents</strong>\n<ol>\n<li><a href=\"#hosts\">Hosts</a></li>\n<li><a href=\"#headlines\">Headline figures per study</a></li>\n<li><a href=\"#targets\">Probed targets</a></li>\n");
    for (i, st) in studies.iter().enumerate() {
        let _ = writeln!(
            out,
            "<li><a href=\"#{}\">Study {} — {}</a></li>",
            anchor("study", i, st.id),
            escape(or_unknown(st.seed)),
            escape(st.title)
        );
    }
    out.push_str("</ol></nav>\n");

    out.push_str("<section id=\"hosts\">\n<h2>Hosts</h2>\n");
    hosts_table(&mut out, fleet);
    host_details(&mut out, fleet);
    out.push_str("</section>\n<section id=\"headlines\">\n<h2>Headline figures per study</h2>\n<p class=\"sub\">Each study's own figures (the ones it sets beside the published ones), one row per host.</p>\n");
    if studies.is_empty() {
        out.push_str("<p class=\"warn\">No host produced study results.</p>\n");
    }
    headline_tables(&mut out, fleet, &studies);
    out.push_str("</section>\n<section id=\"targets\">\n<h2>Probed targets</h2>\n<p class=\"sub\">QD1 4 KiB random I/O per target: the completion model <code>iolab probe</code> recommends and its measured numbers.</p>\n");
    targets_table(&mut out, fleet);
    out.push_str("</section>\n");
    for (i, st) in studies.iter().enumerate() {
        study_charts(&mut out, i, st);
    }
    page_close(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn study(cats: &[&str], ys: &[f64], line: &[(f64, f64)]) -> StudyResult {
        StudyResult {
            id: "laq".into(),
            charts: vec![
                Chart {
                    title: "bars".into(),
                    kind: ChartKind::Stacked,
                    categories: cats.iter().map(|s| s.to_string()).collect(),
                    series: vec![
                        Series {
                            name: "a".into(),
                            points: ys.iter().enumerate().map(|(i, y)| (i as f64, *y)).collect(),
                        },
                        Series {
                            name: "b".into(),
                            points: vec![(0.0, 1.0)],
                        },
                    ],
                    ..Default::default()
                },
                Chart {
                    title: "line".into(),
                    kind: ChartKind::Line,
                    series: vec![Series {
                        name: "p50".into(),
                        points: line.to_vec(),
                    }],
                    ..Default::default()
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn charts_get_one_series_per_host_and_categories_match_by_name() {
        let x = study(&["noop", "laq"], &[10.0, 2.0], &[(1.0, 5.0)]);
        let mut y = study(&["laq", "prio"], &[3.0, 7.0], &[(1.0, 6.0), (2.0, 8.0)]);
        y.charts.remove(1);
        let charts = fleet_charts(&[("x", &x), ("y", &y)]);
        let titles: Vec<&str> = charts.iter().map(|c| c.0.title.as_str()).collect();
        assert_eq!(titles, ["bars: a", "bars: b", "line"]);
        let (bars, missing) = &charts[0];
        assert_eq!(
            bars.kind,
            ChartKind::Bar,
            "stacked segments become grouped bars"
        );
        assert_eq!(bars.categories, ["noop", "laq", "prio"]);
        assert_eq!(bars.series[0].name, "x");
        assert_eq!(bars.series[0].points, [(0.0, 10.0), (1.0, 2.0)]);
        assert_eq!(bars.series[1].name, "y");
        assert_eq!(bars.series[1].points, [(1.0, 3.0), (2.0, 7.0)]);
        assert!(missing.is_empty());
        let (line, missing) = &charts[2];
        assert_eq!(line.series.len(), 1);
        assert_eq!(missing, &["y".to_string()]);
    }
}
