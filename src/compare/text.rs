//! The text rendering: fio-like, one line per metric.

use std::fmt::Write;

use crate::compare::model::{
    Comparison, MetricRow, OptionDiff, Outcome, Report, Unit, Unjudged, Verdict,
};

/// A value in its unit, three significant digits: 4.13us, 239k, 935MiB/s.
pub fn fmt_value(unit: Unit, v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let sig = |x: f64| {
        let a = x.abs();
        if a >= 100.0 {
            format!("{x:.0}")
        } else if a >= 10.0 {
            format!("{x:.1}")
        } else {
            format!("{x:.2}")
        }
    };
    match unit {
        Unit::Nanoseconds => {
            let a = v.abs();
            if a >= 1e9 {
                format!("{}s", sig(v / 1e9))
            } else if a >= 1e6 {
                format!("{}ms", sig(v / 1e6))
            } else if a >= 1e3 {
                format!("{}us", sig(v / 1e3))
            } else {
                format!("{}ns", sig(v))
            }
        }
        Unit::PerSecond => {
            let a = v.abs();
            if a >= 1e6 {
                format!("{}M", sig(v / 1e6))
            } else if a >= 1e3 {
                format!("{}k", sig(v / 1e3))
            } else {
                sig(v)
            }
        }
        Unit::BytesPerSecond => {
            let a = v.abs();
            let (d, u) = if a >= 1024.0 * 1024.0 * 1024.0 {
                (1024.0 * 1024.0 * 1024.0, "GiB/s")
            } else if a >= 1024.0 * 1024.0 {
                (1024.0 * 1024.0, "MiB/s")
            } else if a >= 1024.0 {
                (1024.0, "KiB/s")
            } else {
                (1.0, "B/s")
            };
            format!("{}{u}", sig(v / d))
        }
    }
}

fn side(unit: Unit, s: &crate::compare::stats::Spread, rounds: usize) -> String {
    if rounds > 1 {
        format!(
            "{} [{}-{}]",
            fmt_value(unit, s.median),
            fmt_value(unit, s.min),
            fmt_value(unit, s.max)
        )
    } else {
        fmt_value(unit, s.median)
    }
}

pub fn row_line(r: &MetricRow) -> String {
    let unit = r.metric.unit();
    let ratio = match (r.ratio, r.ci) {
        (Some(x), Some(ci)) => format!("{x:.3} [{:.3}, {:.3}]", ci.lo, ci.hi),
        (Some(x), None) => format!("{x:.3}"),
        (None, _) => format!("diff {}", fmt_value(unit, r.diff)),
    };
    let mut line = format!(
        "  {:<5} {:<11} base={:<24} new={:<24} ratio={:<22} {:<13} ({}",
        format!("{}:", r.dir),
        r.metric.label(),
        side(unit, &r.base, r.base_rounds),
        side(unit, &r.new, r.new_rounds),
        ratio,
        r.verdict.text(),
        r.test
    );
    if let Some(p) = r.p {
        let _ = write!(line, "; p={p:.3}");
    }
    line.push(')');
    if let Some(n) = &r.note {
        let _ = write!(line, "\n        note: {n}");
    }
    line
}

fn comparison(out: &mut String, c: &Comparison, heading: bool) {
    if heading {
        let _ = writeln!(out, "\n== {} ==", c.title);
    }
    let _ = writeln!(
        out,
        "base: {} ({} round{}, {})\nnew:  {} ({} round{}, {})",
        c.base.path,
        c.base.rounds,
        if c.base.rounds == 1 { "" } else { "s" },
        c.base.producers.join(", "),
        c.new.path,
        c.new.rounds,
        if c.new.rounds == 1 { "" } else { "s" },
        c.new.producers.join(", ")
    );
    for j in &c.jobs {
        let _ = write!(out, "{}:", j.job);
        if j.options_differ.is_empty() {
            out.push_str(" (same options)\n");
        } else {
            let diffs = OptionDiff::describe_all(&j.options_differ, " -> ");
            let _ = writeln!(out, " (options differ: {})", diffs);
        }
        for r in &j.rows {
            let _ = writeln!(out, "{}", row_line(r));
        }
        let faster = j
            .rows
            .iter()
            .filter(|r| r.verdict == Verdict::Faster)
            .count();
        let slower = j
            .rows
            .iter()
            .filter(|r| r.verdict == Verdict::Slower)
            .count();
        let _ = writeln!(
            out,
            "  verdict: {faster} faster, {slower} slower, {} no difference this data can show",
            j.rows.len() - faster - slower
        );
    }
    for m in &c.mismatched {
        let diffs = OptionDiff::describe_all(&m.options, " vs ");
        let _ = writeln!(
            out,
            "{}: NOT COMPARED, options differ ({}); if that is the change under test, say --allow-diff {}",
            m.job,
            diffs,
            m.options
                .iter()
                .map(|d| d.option.as_str())
                .collect::<Vec<_>>()
                .join(",")
        );
    }
    if !c.only_base.is_empty() {
        let _ = writeln!(
            out,
            "only in base (not compared): {}",
            c.only_base.join(", ")
        );
    }
    if !c.only_new.is_empty() {
        let _ = writeln!(out, "only in new (not compared): {}", c.only_new.join(", "));
    }
}

pub fn render(r: &Report) -> String {
    let mut out = format!(
        "iolab compare: {}% intervals; a difference is called when the interval excludes 1, the test gives p < {:.2} (with rounds) and the change is at least {}%\n",
        r.level * 100.0,
        r.alpha,
        r.min_effect * 100.0
    );
    let heading = r.comparisons.len() > 1;
    for c in &r.comparisons {
        comparison(&mut out, c, heading);
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    if !r.fail_if.is_empty() {
        let _ = writeln!(out, "\ngate: {}", r.outcome.text());
        for h in &r.gate_hits {
            let change = match h.ratio {
                Some(x) => format!("{:+.1}%", (x - 1.0) * 100.0),
                None => fmt_value(h.metric.unit(), h.diff),
            };
            let _ = writeln!(
                out,
                "  {}: {}{} {} {} changed {change} ({})",
                h.rule,
                if h.comparison.is_empty() {
                    String::new()
                } else {
                    format!("{} ", h.comparison)
                },
                h.job,
                h.dir,
                h.metric.name(),
                fmt_value(h.metric.unit(), h.diff)
            );
        }
    }
    if r.fail_if.is_empty() && !r.unjudged.is_empty() {
        out.push('\n');
    }
    for u in &r.unjudged {
        let _ = writeln!(
            out,
            "  not judged: {}: {}; to judge it: {}",
            unjudged_name(u, r.comparisons.len() > 1),
            u.why,
            u.fix
        );
    }
    let _ = writeln!(out, "{}", last_line(r));
    out
}

/// What an unjudged item is about: `[comparison: ]job[ dir metric][ (rule)]`.
fn unjudged_name(u: &Unjudged, with_comparison: bool) -> String {
    let mut s = String::new();
    if with_comparison && !u.comparison.is_empty() {
        let _ = write!(s, "{}: ", u.comparison);
    }
    s.push_str(if u.job.is_empty() { "-" } else { &u.job });
    if let Some(d) = &u.dir {
        let _ = write!(s, " {d}");
    }
    if let Some(m) = u.metric {
        let _ = write!(s, " {}", m.name());
    }
    if let Some(rule) = &u.rule {
        let _ = write!(s, " ({rule})");
    }
    s
}

/// The last line: the outcome, its exit status and, when inconclusive, what
/// was not judged and what would judge it.
pub fn last_line(r: &Report) -> String {
    let status = if r.outcome == Outcome::Inconclusive && r.allow_inconclusive {
        format!("exit {}, --allow-inconclusive", r.exit_code)
    } else {
        format!("exit {}", r.exit_code)
    };
    let what = if r.fail_if.is_empty() {
        "compare"
    } else {
        "gate"
    };
    match r.outcome {
        Outcome::Pass => format!(
            "gate: PASS ({status}): every rule judged on every compared row, none crossed: {}",
            r.fail_if.join(", ")
        ),
        Outcome::Report => {
            format!("compare: every job compared, no --fail-if rule ({status})")
        }
        Outcome::Fail => {
            let mut crossed: Vec<&str> = r.gate_hits.iter().map(|h| h.rule.as_str()).collect();
            crossed.dedup();
            let mut s = format!("gate: FAIL ({status}): crossed {}", crossed.join(", "));
            if !r.unjudged.is_empty() {
                let _ = write!(s, "; also {} not judged", r.unjudged.len());
            }
            s
        }
        Outcome::Inconclusive => {
            // One entry per (what, fix), in order: a job not compared under
            // three rules is named once.
            let mut items: Vec<String> = Vec::new();
            for u in &r.unjudged {
                let mut name = if u.job.is_empty() {
                    u.why.clone()
                } else {
                    u.job.clone()
                };
                if let (Some(d), Some(m)) = (&u.dir, u.metric) {
                    let _ = write!(name, " {d} {}", m.name());
                }
                let item = format!("{name} ({})", u.fix);
                if !items.contains(&item) {
                    items.push(item);
                }
            }
            format!(
                "{what}: INCONCLUSIVE ({status}): not judged: {}",
                items.join("; ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_in_their_units() {
        assert_eq!(fmt_value(Unit::Nanoseconds, 4130.0), "4.13us");
        assert_eq!(fmt_value(Unit::Nanoseconds, 512.0), "512ns");
        assert_eq!(fmt_value(Unit::PerSecond, 239_400.0), "239k");
        assert_eq!(
            fmt_value(Unit::BytesPerSecond, 935.0 * 1048576.0),
            "935MiB/s"
        );
        assert_eq!(fmt_value(Unit::Nanoseconds, -2000.0), "-2.00us");
    }
}
