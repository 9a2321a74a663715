//! `--fail-if` rules: the CI gate. A rule names a metric (optionally one
//! direction), a way (`>` worse-if-up, `<` worse-if-down) and a threshold,
//! relative (`+5%`) or absolute in the metric's units (`+20us`, `-1000`). A
//! row crosses it only when its difference is significant.

use crate::compare::model::{
    Comparison, GateHit, Metric, MetricRow, Mismatch, OptionDiff, Outcome, Unit, Unjudged,
};

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RuleError {
    #[error(
        "--fail-if '{rule}': {why}. A rule is [read.|write.|trim.]METRIC then > or < then a signed threshold: \
         relative (p99>+5%, iops<-3%) or absolute in the metric's units (p99>+20us, mean>+500ns, iops<-1000, \
         bw<-100MiB/s, cpu>+1us). Metrics: iops, bw, mean, p50, p99, p99.9, cpu"
    )]
    Bad { rule: String, why: String },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Threshold {
    /// A fraction of BASE (0.05 = 5%).
    Relative(f64),
    /// In the metric's unit (ns, I/Os per second, bytes per second).
    Absolute(f64),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub text: String,
    pub dir: Option<String>,
    pub metric: Metric,
    /// true for `>`: fails when NEW - BASE is above the threshold.
    pub above: bool,
    pub threshold: Threshold,
}

fn metric_named(s: &str) -> Option<Metric> {
    Some(match s {
        "iops" => Metric::Iops,
        "bw" | "bandwidth" => Metric::Bw,
        "mean" | "clat_mean" | "lat" => Metric::ClatMean,
        "p50" | "median" => Metric::P50,
        "p99" => Metric::P99,
        "p99.9" | "p999" => Metric::P999,
        "cpu" | "cpu_per_io" => Metric::CpuPerIo,
        _ => return None,
    })
}

/// Split "123.5us" into (123.5, "us").
fn number_and_unit(s: &str) -> Option<(f64, &str)> {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let v: f64 = s[..end].parse().ok()?;
    Some((v, s[end..].trim()))
}

/// Why a threshold's unit does not fit its metric.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum UnitError {
    #[error("a time needs its unit: ns, us, ms or s (or % for relative)")]
    TimeWithoutUnit,
    #[error("unit '{0}' is not a bandwidth: use B/s, KiB/s, MiB/s, GiB/s, kB/s, MB/s, GB/s (or %)")]
    NotBandwidth(String),
    #[error("unit '{0}' is not a time: use ns, us, ms or s (or %)")]
    NotTime(String),
    #[error("unit '{0}' is not an I/O rate: give a number of IOPS, optionally with k or m (or %)")]
    NotRate(String),
}

fn unit_factor(unit: Unit, u: &str) -> Result<f64, UnitError> {
    let f = match (unit, u) {
        (Unit::Nanoseconds, "ns") => 1.0,
        (Unit::Nanoseconds, "us" | "µs" | "usec") => 1e3,
        (Unit::Nanoseconds, "ms" | "msec") => 1e6,
        (Unit::Nanoseconds, "s" | "sec") => 1e9,
        (Unit::Nanoseconds, "") => {
            return Err(UnitError::TimeWithoutUnit);
        }
        (Unit::PerSecond, "" | "iops" | "/s") => 1.0,
        (Unit::PerSecond, "k") => 1e3,
        (Unit::PerSecond, "m" | "M") => 1e6,
        (Unit::BytesPerSecond, "B/s") => 1.0,
        (Unit::BytesPerSecond, "KiB/s") => 1024.0,
        (Unit::BytesPerSecond, "MiB/s") => 1024.0 * 1024.0,
        (Unit::BytesPerSecond, "GiB/s") => 1024.0 * 1024.0 * 1024.0,
        (Unit::BytesPerSecond, "kB/s") => 1e3,
        (Unit::BytesPerSecond, "MB/s") => 1e6,
        (Unit::BytesPerSecond, "GB/s") => 1e9,
        (Unit::BytesPerSecond, _) => {
            return Err(UnitError::NotBandwidth(u.to_string()));
        }
        (Unit::Nanoseconds, _) => {
            return Err(UnitError::NotTime(u.to_string()));
        }
        (Unit::PerSecond, _) => {
            return Err(UnitError::NotRate(u.to_string()));
        }
    };
    Ok(f)
}

pub fn parse_rule(text: &str) -> Result<Rule, RuleError> {
    let bad = |why: &str| RuleError::Bad {
        rule: text.to_string(),
        why: why.to_string(),
    };
    let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let (pos, above) = match (t.find('>'), t.find('<')) {
        (Some(i), None) => (i, true),
        (None, Some(i)) => (i, false),
        _ => return Err(bad("it needs exactly one of > or <")),
    };
    let (lhs, rhs) = (&t[..pos], &t[pos + 1..]);
    let (dir, name) = match lhs.split_once('.') {
        Some((d @ ("read" | "write" | "trim"), m)) => (Some(d.to_string()), m),
        _ => (None, lhs),
    };
    let metric = metric_named(&name.to_ascii_lowercase())
        .ok_or_else(|| bad(&format!("unknown metric '{name}'")))?;
    let (sign, body) = match rhs.as_bytes().first() {
        Some(b'+') => (1.0, &rhs[1..]),
        Some(b'-') => (-1.0, &rhs[1..]),
        Some(_) => (1.0, rhs),
        None => return Err(bad("the threshold is missing")),
    };
    let (v, unit) =
        number_and_unit(body).ok_or_else(|| bad(&format!("'{rhs}' is not a number")))?;
    let threshold = if unit == "%" {
        Threshold::Relative(sign * v / 100.0)
    } else {
        Threshold::Absolute(
            sign * v * unit_factor(metric.unit(), unit).map_err(|w| bad(&w.to_string()))?,
        )
    };
    Ok(Rule {
        text: text.to_string(),
        dir,
        metric,
        above,
        threshold,
    })
}

impl Rule {
    /// Whether this row crosses the rule: same metric (and direction if the
    /// rule names one), a significant difference, and a change past the
    /// threshold.
    pub fn crossed_by(&self, row: &MetricRow) -> bool {
        if row.metric != self.metric
            || !row.significant
            || self.dir.as_ref().is_some_and(|d| *d != row.dir)
        {
            return false;
        }
        let (change, thr) = match self.threshold {
            Threshold::Relative(t) => match row.ratio {
                Some(r) => (r - 1.0, t),
                None => return false,
            },
            Threshold::Absolute(t) => (row.diff, t),
        };
        if self.above {
            change > thr
        } else {
            change < thr
        }
    }
}

/// The exit status of an inconclusive gate: distinct from 0 (pass), 1 (a
/// rule crossed; iolab's status for a failed run), 2 (bad input), 130 and 141.
pub const INCONCLUSIVE_STATUS: u8 = 3;

/// The power asked of a rounds estimate.
const POWER: f64 = 0.8;

/// What the gate found: the crossings, what it could not judge, the outcome
/// and its exit status.
#[derive(Clone, Debug, PartialEq)]
pub struct GateResult {
    pub hits: Vec<GateHit>,
    pub unjudged: Vec<Unjudged>,
    pub outcome: Outcome,
    pub exit_code: u8,
}

fn option_names(m: &Mismatch) -> String {
    m.options
        .iter()
        .map(|d| d.option.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// Jobs not compared at all: no rule can judge them.
fn jobs_not_compared(c: &Comparison, out: &mut Vec<Unjudged>) {
    let job_item = |job: &str, why: String, fix: String| Unjudged {
        rule: None,
        comparison: c.title.clone(),
        job: job.to_string(),
        dir: None,
        metric: None,
        why,
        fix,
        rounds_needed: None,
    };
    for m in &c.mismatched {
        out.push(job_item(
            &m.job,
            format!(
                "not compared, options differ ({})",
                OptionDiff::describe_all(&m.options, " vs ")
            ),
            format!("--allow-diff {}", option_names(m)),
        ));
    }
    for (side, other, list) in [
        (&c.base.label, &c.new.label, &c.only_base),
        (&c.new.label, &c.base.label, &c.only_new),
    ] {
        for job in list {
            out.push(job_item(
                job,
                format!("only in {side}, not run in {other}"),
                "run it on both sides".into(),
            ));
        }
    }
}

impl Rule {
    /// The rule's threshold as a change of ln(value), seen from a row (an
    /// absolute threshold relative to BASE's median).
    fn threshold_ratio(&self, row: &MetricRow) -> Option<f64> {
        let r = match self.threshold {
            Threshold::Relative(t) => 1.0 + t,
            Threshold::Absolute(t) => 1.0 + t / row.base.median,
        };
        (r.is_finite() && r > 0.0).then_some(r)
    }

    /// A row this rule covers that did not cross it: judged (None), or what
    /// keeps it from being judged. A row is judged when the rounds gave it an
    /// interval of the run-to-run variation (two or more rounds a side) and
    /// that interval stays on the safe side of the threshold.
    fn unjudged(&self, c: &Comparison, job: &str, row: &MetricRow, level: f64) -> Option<Unjudged> {
        let item = |why: String, fix: String, rounds_needed: Option<usize>| Unjudged {
            rule: Some(self.text.clone()),
            comparison: c.title.clone(),
            job: job.to_string(),
            dir: Some(row.dir.clone()),
            metric: Some(row.metric),
            why,
            fix,
            rounds_needed,
        };
        let (Some(ci), Some(sd)) = (row.ci, row.log_sd) else {
            let why = if row.base_rounds < 2 || row.new_rounds < 2 {
                format!(
                    "{} vs {} rounds: no run-to-run spread to judge by",
                    row.base_rounds, row.new_rounds
                )
            } else {
                format!("not judged ({})", row.test)
            };
            return Some(item(
                why,
                "--rounds 2 or more (5 is a good start)".into(),
                None,
            ));
        };
        let thr = self.threshold_ratio(row)?;
        let reaches = if self.above { ci.hi > thr } else { ci.lo < thr };
        if !reaches {
            return None;
        }
        let ratio = row.ratio.unwrap_or(1.0);
        let distance = (thr.ln() - ratio.ln()).abs();
        let needed =
            crate::compare::stats::rounds_for_power(sd.base, sd.new, distance, level, POWER);
        let fix = match needed {
            Some(n) => format!("--rounds {n}"),
            None => format!(
                "more than {} rounds a side: quieter rounds or a wider threshold",
                crate::compare::stats::MAX_ROUNDS
            ),
        };
        Some(item(
            format!(
                "the interval [{:.3}, {:.3}] of new/base ({:.3}) reaches past the threshold ({:.3}): {} vs {} rounds cannot rule a crossing out",
                ci.lo, ci.hi, ratio, thr, row.base_rounds, row.new_rounds
            ),
            fix,
            needed,
        ))
    }

    fn covers(&self, row: &MetricRow) -> bool {
        row.metric == self.metric && self.dir.as_ref().is_none_or(|d| *d == row.dir)
    }
}

/// Apply the rules to every compared row: what crossed, what could not be
/// judged (jobs not compared, fleet hosts missing on a side, rows with too
/// few rounds or too wide an interval, metrics a side lacks), and the outcome
/// and exit status (ARCHITECTURE.md's exit-status policy: 0, 1, 3).
pub fn evaluate(
    rules: &[Rule],
    comparisons: &[Comparison],
    notes: &[String],
    level: f64,
    allow_inconclusive: bool,
) -> GateResult {
    let mut hits = Vec::new();
    let mut unjudged = Vec::new();
    for n in notes {
        // A fleet host with no results on a side, or only in one fleet.
        unjudged.push(Unjudged {
            rule: None,
            comparison: String::new(),
            job: String::new(),
            dir: None,
            metric: None,
            why: n.clone(),
            fix: "results from every host on both sides".into(),
            rounds_needed: None,
        });
    }
    let mut covered = vec![false; rules.len()];
    for c in comparisons {
        jobs_not_compared(c, &mut unjudged);
        for j in &c.jobs {
            for (ri, rule) in rules.iter().enumerate() {
                let rows: Vec<&MetricRow> = j.rows.iter().filter(|r| rule.covers(r)).collect();
                let has_dir = rule
                    .dir
                    .as_ref()
                    .is_none_or(|d| j.rows.iter().any(|r| r.dir == *d));
                if rows.is_empty() && has_dir {
                    unjudged.push(Unjudged {
                        rule: Some(rule.text.clone()),
                        comparison: c.title.clone(),
                        job: j.job.clone(),
                        dir: rule.dir.clone(),
                        metric: Some(rule.metric),
                        why: format!("{} is missing on a side", rule.metric.label()),
                        fix: "both sides reporting it (clat percentiles, usr_cpu/sys_cpu)".into(),
                        rounds_needed: None,
                    });
                }
                covered[ri] |= !rows.is_empty();
                for row in rows {
                    if rule.crossed_by(row) {
                        hits.push(GateHit {
                            rule: rule.text.clone(),
                            comparison: c.title.clone(),
                            job: j.job.clone(),
                            dir: row.dir.clone(),
                            metric: row.metric,
                            ratio: row.ratio,
                            diff: row.diff,
                        });
                    } else if let Some(u) = rule.unjudged(c, &j.job, row, level) {
                        unjudged.push(u);
                    }
                }
            }
        }
    }
    // A rule that covered no row of any compared job gated nothing: say so
    // (when no job was compared at all, the jobs' own items say why).
    let any_compared = comparisons.iter().any(|c| !c.jobs.is_empty());
    for (rule, _) in rules.iter().zip(&covered).filter(|(_, c)| !**c) {
        if !any_compared
            || unjudged
                .iter()
                .any(|u| u.rule.as_deref() == Some(&rule.text))
        {
            continue;
        }
        unjudged.push(Unjudged {
            rule: Some(rule.text.clone()),
            comparison: String::new(),
            job: String::new(),
            dir: rule.dir.clone(),
            metric: Some(rule.metric),
            why: format!(
                "no compared job has {}{}",
                rule.dir.as_ref().map_or(String::new(), |d| format!("{d} ")),
                rule.metric.name()
            ),
            fix: "a rule naming a direction and metric the jobs have".into(),
            rounds_needed: None,
        });
    }
    let outcome = if !hits.is_empty() {
        Outcome::Fail
    } else if !unjudged.is_empty() {
        Outcome::Inconclusive
    } else if rules.is_empty() {
        Outcome::Report
    } else {
        Outcome::Pass
    };
    let exit_code = match outcome {
        Outcome::Fail => 1,
        Outcome::Inconclusive if !allow_inconclusive => INCONCLUSIVE_STATUS,
        _ => 0,
    };
    GateResult {
        hits,
        unjudged,
        outcome,
        exit_code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_relative_and_absolute_rules() {
        let r = parse_rule("p99>+5%").unwrap();
        assert_eq!(
            (r.metric, r.above, r.threshold),
            (Metric::P99, true, Threshold::Relative(0.05))
        );
        let r = parse_rule("iops<-3%").unwrap();
        assert_eq!((r.above, r.threshold), (false, Threshold::Relative(-0.03)));
        let r = parse_rule("read.p99 > +20us").unwrap();
        assert_eq!(r.dir.as_deref(), Some("read"));
        assert_eq!(r.threshold, Threshold::Absolute(20_000.0));
        assert_eq!(
            parse_rule("iops<-1000").unwrap().threshold,
            Threshold::Absolute(-1000.0)
        );
        assert_eq!(
            parse_rule("bw<-1MiB/s").unwrap().threshold,
            Threshold::Absolute(-1048576.0)
        );
        assert_eq!(parse_rule("p99.9>+1ms").unwrap().metric, Metric::P999);
    }

    #[test]
    fn bad_rules_say_what_is_valid() {
        for (rule, why) in [
            ("p98>+5%", "unknown metric 'p98'"),
            ("p99=5%", "exactly one of > or <"),
            ("p99>+20", "needs its unit"),
            ("bw<-5furlongs", "not a bandwidth"),
            ("p99>", "threshold is missing"),
            ("p99>abc", "not a number"),
        ] {
            let e = parse_rule(rule).unwrap_err().to_string();
            assert!(e.contains(why), "{rule}: {e}");
            assert!(e.contains("Metrics: iops, bw"), "{e}");
        }
    }
}
