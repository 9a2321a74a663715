//! `--fail-if` rules: the CI gate. A rule names a metric (optionally one
//! direction), a way (`>` worse-if-up, `<` worse-if-down) and a threshold,
//! relative (`+5%`) or absolute in the metric's units (`+20us`, `-1000`). A
//! row crosses it only when its difference is significant.

use crate::compare::model::{Comparison, GateHit, Metric, MetricRow, Unit};

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

/// Every (rule, row) that crosses.
pub fn evaluate(rules: &[Rule], comparisons: &[Comparison]) -> Vec<GateHit> {
    let mut hits = Vec::new();
    for c in comparisons {
        for j in &c.jobs {
            for row in &j.rows {
                for rule in rules {
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
                    }
                }
            }
        }
    }
    hits
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
