//! The comparison page: per comparison and job, the verdict table, side-by-side
//! bars of both sides with their spread over rounds, the ratios with their
//! confidence intervals, and overlaid latency CDFs; drawn with the report's
//! shell and SVG charts (one self-contained file).

use std::fmt::Write;

use crate::compare::model::{
    Comparison, JobComparison, Metric, MetricRow, OptionDiff, Report, Unjudged, Verdict,
};
use crate::compare::text::fmt_value;
use crate::report::chart::{Chart, ChartKind, Series};
use crate::report::escape::escape;
use crate::report::html::{anchor, page_close, page_open};
use crate::report::svg::{Whisker, bar_with_intervals_svg, chart_svg};

fn bars(out: &mut String, title: &str, y_label: &str, rows: &[&MetricRow], scale: f64) {
    if rows.is_empty() {
        return;
    }
    let chart = Chart {
        title: title.to_string(),
        kind: ChartKind::Bar,
        x_label: String::new(),
        y_label: y_label.to_string(),
        categories: rows.iter().map(|r| r.metric.label().to_string()).collect(),
        series: vec![
            Series {
                name: "base (median; whisker: min-max of rounds)".into(),
                points: rows
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (i as f64, r.base.median / scale))
                    .collect(),
            },
            Series {
                name: "new".into(),
                points: rows
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (i as f64, r.new.median / scale))
                    .collect(),
            },
        ],
        log_x: false,
    };
    let mut whiskers = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        for (s, sp, n) in [(0, &r.base, r.base_rounds), (1, &r.new, r.new_rounds)] {
            if n > 1 {
                whiskers.push(Whisker {
                    series: s,
                    category: i,
                    lo: sp.min / scale,
                    hi: sp.max / scale,
                });
            }
        }
    }
    out.push_str("<figure>");
    out.push_str(&bar_with_intervals_svg(&chart, &whiskers));
    out.push_str("</figure>\n");
}

fn ratio_chart(out: &mut String, title: &str, rows: &[&MetricRow]) {
    let rows: Vec<&&MetricRow> = rows.iter().filter(|r| r.ratio.is_some()).collect();
    if rows.is_empty() {
        return;
    }
    let chart = Chart {
        title: title.to_string(),
        kind: ChartKind::Bar,
        x_label: String::new(),
        y_label: "new / base".into(),
        categories: rows
            .iter()
            .map(|r| format!("{} {}", r.dir, r.metric.name()))
            .collect(),
        series: vec![Series {
            name: "ratio (whisker: confidence interval)".into(),
            points: rows
                .iter()
                .enumerate()
                .map(|(i, r)| (i as f64, r.ratio.unwrap_or(f64::NAN)))
                .collect(),
        }],
        log_x: false,
    };
    let whiskers: Vec<Whisker> = rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            r.ci.map(|ci| Whisker {
                series: 0,
                category: i,
                lo: ci.lo,
                hi: ci.hi,
            })
        })
        .collect();
    out.push_str("<figure>");
    out.push_str(&bar_with_intervals_svg(&chart, &whiskers));
    out.push_str("</figure>\n");
}

fn verdict_cell(r: &MetricRow) -> String {
    let (cls, word) = match r.verdict {
        Verdict::Faster => ("close", "faster"),
        Verdict::Slower => ("far", "slower"),
        Verdict::NoDifference => ("", "no difference"),
    };
    format!("<td class=\"ratio {cls}\">{word}</td>")
}

fn table(out: &mut String, j: &JobComparison, unjudged: &[&Unjudged]) {
    out.push_str("<table class=\"data\"><thead><tr><th>dir</th><th>metric</th><th class=\"num\">base median</th><th class=\"num\">base min-max</th><th class=\"num\">new median</th><th class=\"num\">new min-max</th><th class=\"num\">new / base</th><th class=\"num\">interval</th><th>verdict</th></tr></thead><tbody>\n");
    for r in &j.rows {
        let u = r.metric.unit();
        let range = |s: &crate::compare::stats::Spread, n: usize| {
            if n > 1 {
                format!("{} - {}", fmt_value(u, s.min), fmt_value(u, s.max))
            } else {
                "1 round".into()
            }
        };
        let cls = match r.verdict {
            Verdict::Faster => " class=\"close\"",
            Verdict::Slower => " class=\"far\"",
            Verdict::NoDifference => "",
        };
        let _ = writeln!(
            out,
            "<tr{cls}><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>{}</tr>",
            escape(&r.dir),
            escape(r.metric.label()),
            escape(&fmt_value(u, r.base.median)),
            escape(&range(&r.base, r.base_rounds)),
            escape(&fmt_value(u, r.new.median)),
            escape(&range(&r.new, r.new_rounds)),
            r.ratio.map_or("-".into(), |x| format!("{x:.3}")),
            r.ci.map_or("-".into(), |c| format!("{:.3} - {:.3}", c.lo, c.hi)),
            verdict_cell(r),
        );
        // The test and any caveat under the row, across the table: long
        // text, which would squeeze a column of its own.
        // The gate's word on this row, as the text's "not judged" lines.
        let gate: String = unjudged
            .iter()
            .filter(|u| u.dir.as_deref() == Some(r.dir.as_str()) && u.metric == Some(r.metric))
            .map(|u| {
                format!(
                    "<br><span class=\"warn\">gate: not judged ({}): {}; to judge it: {}</span>",
                    escape(u.rule.as_deref().unwrap_or("")),
                    escape(&u.why),
                    escape(&u.fix)
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "<tr class=\"test\"><td></td><td colspan=\"8\" class=\"legend-note\">{}{}{}{gate}</td></tr>",
            escape(&r.test),
            r.p.map_or(String::new(), |p| format!("; p = {p:.3}")),
            r.note
                .as_ref()
                .map_or(String::new(), |n| format!("<br>{}", escape(n))),
        );
    }
    out.push_str("</tbody></table>\n");
}

/// Latency metrics in groups whose values are within 10x of each other, so
/// a p99.9 of milliseconds does not flatten a p50 of microseconds.
fn scale_groups<'a>(rows: &[&'a MetricRow]) -> Vec<Vec<&'a MetricRow>> {
    let mut groups: Vec<Vec<&MetricRow>> = Vec::new();
    let top = |r: &MetricRow| {
        r.base
            .max
            .max(r.new.max)
            .max(r.base.median)
            .max(r.new.median)
    };
    let bottom = |r: &MetricRow| r.base.median.min(r.new.median);
    for &r in rows {
        let fits = groups.last().is_some_and(|g| {
            let hi = g.iter().map(|x| top(x)).fold(top(r), f64::max);
            let lo = g.iter().map(|x| bottom(x)).fold(bottom(r), f64::min);
            lo > 0.0 && hi / lo <= 10.0
        });
        if fits {
            groups.last_mut().expect("checked").push(r);
        } else {
            groups.push(vec![r]);
        }
    }
    groups
}

fn job(out: &mut String, ci: usize, ji: usize, j: &JobComparison, unjudged: &[&Unjudged]) {
    let _ = writeln!(
        out,
        "<h3 id=\"{}\">{}</h3>",
        anchor("job", ci * 1000 + ji, &j.job),
        escape(&j.job)
    );
    if !j.options_differ.is_empty() {
        let d = OptionDiff::describe_all(&j.options_differ, " → ");
        let _ = writeln!(
            out,
            "<p class=\"sub\">options that differ: <code>{}</code></p>",
            escape(&d)
        );
    }
    table(out, j, unjudged);
    let dirs: Vec<&str> = {
        let mut v: Vec<&str> = j.rows.iter().map(|r| r.dir.as_str()).collect();
        v.dedup();
        v
    };
    for dir in dirs {
        let rows: Vec<&MetricRow> = j.rows.iter().filter(|r| r.dir == dir).collect();
        let lat: Vec<&MetricRow> = rows
            .iter()
            .copied()
            .filter(|r| r.metric.is_latency())
            .collect();
        for g in scale_groups(&lat) {
            bars(
                out,
                &format!("{} — {dir}: completion latency", j.job),
                "µs",
                &g,
                1e3,
            );
        }
        let iops: Vec<&MetricRow> = rows
            .iter()
            .copied()
            .filter(|r| r.metric == Metric::Iops)
            .collect();
        bars(out, &format!("{} — {dir}: IOPS", j.job), "IOPS", &iops, 1.0);
        let cpu: Vec<&MetricRow> = rows
            .iter()
            .copied()
            .filter(|r| r.metric == Metric::CpuPerIo)
            .collect();
        bars(out, &format!("{}: CPU per I/O", j.job), "µs", &cpu, 1e3);
    }
    let all: Vec<&MetricRow> = j.rows.iter().collect();
    ratio_chart(
        out,
        &format!(
            "{}: new / base with confidence intervals (1 = no change)",
            j.job
        ),
        &all,
    );
    for c in &j.cdfs {
        let chart = Chart {
            title: format!(
                "{} — {}: completion latency CDF (from {})",
                j.job, c.dir, c.from
            ),
            kind: ChartKind::Cdf,
            x_label: "clat (µs)".into(),
            y_label: "fraction of I/Os".into(),
            categories: Vec::new(),
            series: vec![
                Series {
                    name: "base".into(),
                    points: c.base.iter().map(|&(x, y)| (x / 1e3, y)).collect(),
                },
                Series {
                    name: "new".into(),
                    points: c.new.iter().map(|&(x, y)| (x / 1e3, y)).collect(),
                },
            ],
            log_x: true,
        };
        out.push_str("<figure>");
        out.push_str(&chart_svg(&chart));
        out.push_str("</figure>\n");
    }
}

fn comparison(out: &mut String, ci: usize, c: &Comparison, unjudged: &[Unjudged]) {
    let _ = writeln!(
        out,
        "<h2 id=\"{}\">{}</h2>",
        anchor("cmp", ci, &c.title),
        escape(&c.title)
    );
    let _ = writeln!(
        out,
        "<p class=\"sub\">base: <code>{}</code> ({} round(s), {}) — new: <code>{}</code> ({} round(s), {})</p>",
        escape(&c.base.path),
        c.base.rounds,
        escape(&c.base.producers.join(", ")),
        escape(&c.new.path),
        c.new.rounds,
        escape(&c.new.producers.join(", "))
    );
    for (ji, j) in c.jobs.iter().enumerate() {
        let mine: Vec<&Unjudged> = unjudged
            .iter()
            .filter(|u| u.comparison == c.title && u.job == j.job)
            .collect();
        job(out, ci, ji, j, &mine);
    }
    if !c.mismatched.is_empty() {
        out.push_str("<h3>Not compared: options differ</h3><ul class=\"notrun\">\n");
        for m in &c.mismatched {
            let d = OptionDiff::describe_all(&m.options, " vs ");
            let _ = writeln!(out, "<li><b>{}</b>: {}</li>", escape(&m.job), escape(&d));
        }
        out.push_str("</ul>\n");
    }
    for (label, list) in [("only in base", &c.only_base), ("only in new", &c.only_new)] {
        if !list.is_empty() {
            let _ = writeln!(
                out,
                "<p class=\"warn\">{label} (not compared): {}</p>",
                escape(&list.join(", "))
            );
        }
    }
}

pub fn render_html(r: &Report) -> String {
    let mut out = String::with_capacity(64 * 1024);
    page_open(&mut out, "iolab compare");
    out.push_str("<h1>iolab compare</h1>\n");
    let _ = writeln!(
        out,
        "<p class=\"sub\">{}% intervals. A difference is called when the interval of new / base excludes 1, the test on the rounds gives p &lt; {:.2}, and the change is at least {}%; otherwise: no difference this data can show.</p>",
        r.level * 100.0,
        r.alpha,
        r.min_effect * 100.0
    );
    out.push_str("<div class=\"verdict\"><ul>\n");
    for c in &r.comparisons {
        for j in &c.jobs {
            let f = j
                .rows
                .iter()
                .filter(|x| x.verdict == Verdict::Faster)
                .count();
            let s = j
                .rows
                .iter()
                .filter(|x| x.verdict == Verdict::Slower)
                .count();
            let _ = writeln!(
                out,
                "<li>{}{}: {f} faster, {s} slower, {} no difference</li>",
                if r.comparisons.len() > 1 {
                    format!("{} — ", escape(&c.title))
                } else {
                    String::new()
                },
                escape(&j.job),
                j.rows.len() - f - s
            );
        }
    }
    if !r.fail_if.is_empty() {
        let _ = writeln!(
            out,
            "<li><b>gate {}</b>: {}</li>",
            r.outcome.text(),
            escape(
                &r.gate_hits
                    .iter()
                    .map(|h| format!(
                        "{} crossed by {} {} {}",
                        h.rule,
                        h.job,
                        h.dir,
                        h.metric.name()
                    ))
                    .chain(r.gate_hits.is_empty().then(|| r.fail_if.join(", ")))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        );
    }
    for u in &r.unjudged {
        let mut what = String::new();
        if r.comparisons.len() > 1 && !u.comparison.is_empty() {
            what.push_str(&format!("{} — ", u.comparison));
        }
        what.push_str(if u.job.is_empty() { "-" } else { &u.job });
        if let (Some(d), Some(m)) = (&u.dir, u.metric) {
            what.push_str(&format!(" {d} {}", m.name()));
        }
        if let Some(rule) = &u.rule {
            what.push_str(&format!(" ({rule})"));
        }
        let _ = writeln!(
            out,
            "<li class=\"warn\">not judged: <b>{}</b>: {}; to judge it: <code>{}</code></li>",
            escape(&what),
            escape(&u.why),
            escape(&u.fix)
        );
    }
    let _ = writeln!(
        out,
        "<li><b>{}</b></li>",
        escape(&crate::compare::text::last_line(r))
    );
    out.push_str("</ul></div>\n");
    if !r.notes.is_empty() {
        out.push_str("<ul class=\"notrun\">\n");
        for n in &r.notes {
            let _ = writeln!(out, "<li class=\"warn\">{}</li>", escape(n));
        }
        out.push_str("</ul>\n");
    }
    for (i, c) in r.comparisons.iter().enumerate() {
        comparison(&mut out, i, c, &r.unjudged);
    }
    page_close(&mut out);
    out
}
