//! The `iolab lab` report: the machine, then per study its setup, tables,
//! our figures beside the published ones, charts, verdict and what was skipped.

use std::fmt::Write;

use super::shell::{
    anchor, data_table, figure, fmt_num, kv_table, or_unknown, page_close, page_open,
};
use crate::report::escape::escape;
use crate::report::study::{Comparison, LabResults, StudyResult};

/// Ratio bands for "ours vs published": within 25% reads as reproduced,
/// within 2x as the same order, beyond that the difference needs explaining.
fn ratio_class(r: f64) -> &'static str {
    let a = r.abs();
    if (0.8..=1.25).contains(&a) {
        "close"
    } else if (0.5..=2.0).contains(&a) {
        "near"
    } else {
        "far"
    }
}

fn comparison_table(out: &mut String, cs: &[Comparison]) {
    out.push_str("<h3>Ours vs published</h3>\n<table class=\"data cmp\">\n<thead><tr><th>what</th><th class=\"num\">ours</th><th class=\"num\">published</th><th>unit</th><th class=\"num\">ours / published</th><th>note</th></tr></thead>\n<tbody>\n");
    for c in cs {
        let ratio = c.ratio().filter(|r| r.is_finite());
        let (cls, ratio_s) = match ratio {
            Some(r) => {
                let cls = ratio_class(r);
                // A mark besides the colour, so the highlight survives print.
                let mark = if cls == "far" { " \u{26A0}" } else { "" };
                (cls, format!("{r:.2}\u{00D7}{mark}"))
            }
            None => ("", "-".into()),
        };
        let _ = writeln!(
            out,
            "<tr class=\"{cls}\"><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num ratio\">{}</td><td>{}</td></tr>",
            escape(&c.what),
            escape(&fmt_num(c.ours)),
            escape(&c.published.map_or("-".into(), fmt_num)),
            escape(&c.unit),
            escape(&ratio_s),
            escape(&c.note)
        );
    }
    out.push_str("</tbody>\n</table>\n<p class=\"legend-note\">Ratio shaded green within 0.8–1.25×, amber within 0.5–2×, red (and \u{26A0}) beyond: a difference to explain, not necessarily an error — the published figures come from other hardware.</p>\n");
}

/// Several saved results shown as one report: the first file's machine in
/// the header, the others' listed, studies in file order.
pub struct LabSet<'a> {
    /// (source name, results), in the order given.
    pub sources: Vec<(String, &'a LabResults)>,
}

/// The lab report for one `iolab lab` run.
pub fn render_lab_html(r: &LabResults) -> String {
    render_lab_set_html(&LabSet {
        sources: vec![(String::new(), r)],
    })
}

fn machine_block(out: &mut String, r: &LabResults) {
    let m = &r.machine;
    let wake = if m.wakeup_cost_ns > 0 {
        format!("{:.1} µs", m.wakeup_cost_ns as f64 / 1e3)
    } else {
        "not measured".into()
    };
    let clock = if m.clock_cost_ns > 0.0 && m.clock_cost_ns.is_finite() {
        format!("{:.1} ns per reading", m.clock_cost_ns)
    } else {
        "not measured".into()
    };
    let items: [(&str, String); 12] = [
        ("host", or_unknown(&m.hostname).to_string()),
        ("kernel", or_unknown(&m.kernel).to_string()),
        ("CPU", or_unknown(&m.cpu_model).to_string()),
        ("CPUs", m.cpus.to_string()),
        ("memory", format!("{:.1} GiB", m.memory_gib)),
        ("root", if m.root { "yes" } else { "no" }.into()),
        ("clock cost", clock),
        ("wakeup cost", wake),
        ("date", or_unknown(&m.date).to_string()),
        ("iolab", or_unknown(&r.iolab_version).to_string()),
        (
            "mode",
            if r.quick {
                "quick (short runs)"
            } else {
                "full"
            }
            .into(),
        ),
        (
            "studies",
            format!("{} run, {} not run", r.studies.len(), r.not_run.len()),
        ),
    ];
    out.push_str("<section class=\"machine\" aria-label=\"machine\">\n");
    for (k, v) in items {
        let _ = writeln!(out, "<div><span>{}</span>{}</div>", escape(k), escape(&v));
    }
    out.push_str("</section>\n");
}

fn study_section(out: &mut String, id: &str, s: &StudyResult, source: Option<&str>) {
    let _ = writeln!(
        out,
        "<section class=\"study\" id=\"{id}\">\n<h2><span class=\"seed\">Study {}</span> — {}</h2>",
        escape(or_unknown(&s.seed)),
        escape(&s.title)
    );
    let mut meta = format!("<code>iolab lab {}</code>", escape(&s.id));
    if s.duration_s.is_finite() && s.duration_s > 0.0 {
        let _ = write!(meta, " · ran {:.1} s", s.duration_s);
    }
    if let Some(src) = source {
        let _ = write!(meta, " · from <code>{}</code>", escape(src));
    }
    let _ = writeln!(out, "<p class=\"sub\">{meta}</p>");
    if !s.verdict.is_empty() {
        out.push_str("<div class=\"verdict\"><strong>Verdict</strong>\n<ul>\n");
        for v in &s.verdict {
            let _ = writeln!(out, "<li>{}</li>", escape(v));
        }
        out.push_str("</ul></div>\n");
    }
    if !s.setup.is_empty() {
        out.push_str("<h3>What was run</h3>\n");
        kv_table(out, &s.setup);
    }
    if !s.comparisons.is_empty() {
        comparison_table(out, &s.comparisons);
    }
    for c in &s.charts {
        figure(out, c);
    }
    for t in &s.tables {
        data_table(out, t);
    }
    if !s.skipped.is_empty() {
        out.push_str("<h3>Skipped here</h3>\n<ul class=\"skipped\">\n");
        for k in &s.skipped {
            let _ = writeln!(
                out,
                "<li><strong>{}</strong>: {}</li>",
                escape(&k.part),
                escape(&k.reason)
            );
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
}

/// The lab report for one or more saved results (see [`LabSet`]).
pub fn render_lab_set_html(set: &LabSet) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let empty = LabResults::default();
    let first = set.sources.first().map_or(&empty, |s| s.1);
    let many = set.sources.len() > 1;
    page_open(
        &mut out,
        &format!("iolab lab — {}", or_unknown(&first.machine.hostname)),
    );
    out.push_str("<h1>iolab lab report</h1>\n<p class=\"sub\">Published storage-I/O studies reproduced on this machine, beside the published figures.</p>\n");
    machine_block(&mut out, first);
    if many {
        out.push_str("<p>This report joins several results files; the machine above is the first one's. Also included:</p>\n<ul>\n");
        for (name, r) in &set.sources[1..] {
            let m = &r.machine;
            let same = m.hostname == first.machine.hostname
                && m.kernel == first.machine.kernel
                && m.cpu_model == first.machine.cpu_model;
            let _ = writeln!(
                out,
                "<li><code>{}</code>: {} studies from {} ({}, {} CPUs, kernel {}), {}, iolab {}, {}{}</li>",
                escape(name),
                r.studies.len(),
                escape(or_unknown(&m.hostname)),
                escape(or_unknown(&m.cpu_model)),
                m.cpus,
                escape(or_unknown(&m.kernel)),
                escape(or_unknown(&m.date)),
                escape(or_unknown(&r.iolab_version)),
                if r.quick { "quick" } else { "full" },
                if same {
                    ""
                } else {
                    " — <span class=\"warn\">a different machine</span>"
                }
            );
        }
        out.push_str("</ul>\n");
    }
    // Ids first, so the table of contents and the sections agree.
    let mut sections: Vec<(String, &StudyResult, Option<&str>)> = Vec::new();
    for (name, r) in &set.sources {
        for s in &r.studies {
            let id = anchor("study", sections.len(), &s.id);
            sections.push((id, s, many.then_some(name.as_str())));
        }
    }
    let not_run: Vec<(&str, &crate::report::study::Skipped)> = set
        .sources
        .iter()
        .flat_map(|(n, r)| r.not_run.iter().map(move |k| (n.as_str(), k)))
        .collect();
    out.push_str("<nav class=\"toc\"><strong>Contents</strong>\n<ol>\n");
    for (id, s, _) in &sections {
        let _ = writeln!(
            out,
            "<li><a href=\"#{id}\">Study {} — {}</a></li>",
            escape(or_unknown(&s.seed)),
            escape(&s.title)
        );
    }
    if !not_run.is_empty() {
        out.push_str("<li><a href=\"#not-run\">Studies not run</a></li>\n");
    }
    out.push_str("</ol></nav>\n");
    if sections.is_empty() {
        out.push_str("<p class=\"warn\">No study produced results.</p>\n");
    }
    for (id, s, src) in &sections {
        study_section(&mut out, id, s, *src);
    }
    if !not_run.is_empty() {
        out.push_str("<section id=\"not-run\">\n<h2>Studies not run</h2>\n<ul class=\"notrun\">\n");
        for (src, k) in not_run {
            let from = if many {
                format!(" (<code>{}</code>)", escape(src))
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "<li><strong>{}</strong>{from}: {}</li>",
                escape(&k.part),
                escape(&k.reason)
            );
        }
        out.push_str("</ul>\n</section>\n");
    }
    page_close(&mut out);
    out
}
