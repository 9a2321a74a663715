//! What a comparison found, as one serialisable value: the text, JSON and
//! HTML renderings all read it.

use serde::Serialize;

use crate::compare::stats::{Interval, Spread};

/// A compared figure of a job's direction (or of the whole job, for CPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Metric {
    #[serde(rename = "iops")]
    Iops,
    #[serde(rename = "bw")]
    Bw,
    #[serde(rename = "mean")]
    ClatMean,
    #[serde(rename = "p50")]
    P50,
    #[serde(rename = "p99")]
    P99,
    #[serde(rename = "p99.9")]
    P999,
    #[serde(rename = "cpu")]
    CpuPerIo,
}

/// How a metric's values read: what they count, and which way is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// I/Os per second.
    PerSecond,
    BytesPerSecond,
    /// Nanoseconds (latency, CPU time per I/O).
    Nanoseconds,
}

impl Metric {
    pub const ALL: [Metric; 7] = [
        Metric::Iops,
        Metric::Bw,
        Metric::ClatMean,
        Metric::P50,
        Metric::P99,
        Metric::P999,
        Metric::CpuPerIo,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Metric::Iops => "iops",
            Metric::Bw => "bw",
            Metric::ClatMean => "mean",
            Metric::P50 => "p50",
            Metric::P99 => "p99",
            Metric::P999 => "p99.9",
            Metric::CpuPerIo => "cpu",
        }
    }

    /// What the text and the page call it.
    pub fn label(self) -> &'static str {
        match self {
            Metric::Iops => "IOPS",
            Metric::Bw => "bandwidth",
            Metric::ClatMean => "clat mean",
            Metric::P50 => "clat p50",
            Metric::P99 => "clat p99",
            Metric::P999 => "clat p99.9",
            Metric::CpuPerIo => "CPU per I/O",
        }
    }

    pub fn unit(self) -> Unit {
        match self {
            Metric::Iops => Unit::PerSecond,
            Metric::Bw => Unit::BytesPerSecond,
            _ => Unit::Nanoseconds,
        }
    }

    /// IOPS and bandwidth are better higher; latency and CPU per I/O lower.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Iops | Metric::Bw)
    }

    /// The quantile a latency metric reads, if it is one.
    pub fn quantile(self) -> Option<f64> {
        match self {
            Metric::P50 => Some(0.5),
            Metric::P99 => Some(0.99),
            Metric::P999 => Some(0.999),
            _ => None,
        }
    }

    pub fn is_latency(self) -> bool {
        matches!(
            self,
            Metric::ClatMean | Metric::P50 | Metric::P99 | Metric::P999
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// NEW is better than BASE (higher IOPS, lower latency or CPU per I/O).
    Faster,
    /// NEW is worse.
    Slower,
    /// No difference this data can show (or one below the minimum effect).
    NoDifference,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoDifference => "no difference",
        }
    }
}

/// One line of the comparison: a metric of a job's direction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricRow {
    /// `read`, `write`, `trim`, or `job` (CPU per I/O covers all directions).
    pub dir: String,
    pub metric: Metric,
    /// Values per round (round mode), or the one value of each side.
    pub base: Spread,
    pub new: Spread,
    /// Rounds behind each side's figure.
    pub base_rounds: usize,
    pub new_rounds: usize,
    /// NEW / BASE of the medians (None when BASE is 0).
    pub ratio: Option<f64>,
    /// NEW - BASE of the medians, in the metric's unit.
    pub diff: f64,
    /// The confidence interval of `ratio`.
    pub ci: Option<Interval>,
    /// The test's two-sided p-value, where the test gives one.
    pub p: Option<f64>,
    /// Whether the data shows a difference at the chosen level (the CI excludes
    /// 1 and, with rounds, the test's p is below alpha): what `--fail-if` counts.
    pub significant: bool,
    pub verdict: Verdict,
    /// The test, named: "bootstrap 95% CI of the median ratio + exact
    /// Mann-Whitney U over 5 vs 5 rounds".
    pub test: String,
    /// Why "no difference", or what limits this verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Per-round standard deviation of ln(value) of each side (at least its
    /// within-round floor), where Welch's test judged the row: what the
    /// rounds a gate needs are estimated from.
    pub log_sd: Option<LogSd>,
}

/// Standard deviations of ln(value) per round, BASE and NEW.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LogSd {
    pub base: f64,
    pub new: f64,
}

/// An option that differs between the sides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OptionDiff {
    pub option: String,
    pub base: Option<String>,
    pub new: Option<String>,
}

impl OptionDiff {
    /// The differences as `option: base ARROW new` (an unset side says so),
    /// comma-separated: `arrow` is " -> " in text, " → " in HTML and " vs "
    /// where the two sides were not compared.
    pub fn describe_all(diffs: &[OptionDiff], arrow: &str) -> String {
        diffs
            .iter()
            .map(|d| {
                format!(
                    "{}: {}{arrow}{}",
                    d.option,
                    d.base.as_deref().unwrap_or("(unset)"),
                    d.new.as_deref().unwrap_or("(unset)")
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A latency distribution for the page's overlaid CDFs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cdf {
    pub dir: String,
    /// "json+ bins" or "percentiles".
    pub from: String,
    /// (ns, fraction) points of BASE and NEW.
    pub base: Vec<(f64, f64)>,
    pub new: Vec<(f64, f64)>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobComparison {
    pub job: String,
    /// Options that differ and were allowed to (`--allow-diff`, or the
    /// variants of `--run`): shown, compared.
    pub options_differ: Vec<OptionDiff>,
    pub rows: Vec<MetricRow>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cdfs: Vec<Cdf>,
}

/// A job present on both sides whose options differ in ways not allowed:
/// listed, not compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mismatch {
    pub job: String,
    pub options: Vec<OptionDiff>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SideInfo {
    pub label: String,
    pub path: String,
    pub rounds: usize,
    /// `fio version` values of its documents.
    pub producers: Vec<String>,
}

/// BASE against NEW: one pair of sides (one host, one fleet overall, or two
/// runs).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub title: String,
    pub base: SideInfo,
    pub new: SideInfo,
    pub jobs: Vec<JobComparison>,
    pub mismatched: Vec<Mismatch>,
    pub only_base: Vec<String>,
    pub only_new: Vec<String>,
}

/// A `--fail-if` rule that a significant difference crossed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GateHit {
    pub rule: String,
    pub comparison: String,
    pub job: String,
    pub dir: String,
    pub metric: Metric,
    pub ratio: Option<f64>,
    pub diff: f64,
}

/// What the gate concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every rule judged on every compared job, none crossed (exit 0).
    Pass,
    /// A rule crossed by a significant change (exit 1).
    Fail,
    /// Not fail, but something a rule covers could not be judged, or (no
    /// rules) a job was not compared: exit 3, or 0 with --allow-inconclusive.
    Inconclusive,
    /// No rules, every job compared: a report (exit 0).
    Report,
}

impl Outcome {
    pub fn text(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Fail => "FAIL",
            Outcome::Inconclusive => "INCONCLUSIVE",
            Outcome::Report => "REPORT",
        }
    }
}

/// Something the gate could not judge, and what would make it judgeable.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Unjudged {
    /// The rule; None for a job not compared at all (every rule, or the
    /// report without rules).
    pub rule: Option<String>,
    pub comparison: String,
    /// The job; empty for a fleet host with no results on a side.
    pub job: String,
    pub dir: Option<String>,
    pub metric: Option<Metric>,
    /// Why it could not be judged.
    pub why: String,
    /// What would make it judgeable: `--allow-diff null_lat`, `--rounds 7`.
    pub fix: String,
    /// Rounds a side that the observed spread needs to tell the change from
    /// the threshold (80% power at alpha), where that could be estimated.
    pub rounds_needed: Option<usize>,
}

/// Everything one `iolab compare` found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// Confidence level of the intervals (0.95).
    pub level: f64,
    /// Significance level of the tests (1 - level).
    pub alpha: f64,
    /// Smallest |NEW/BASE - 1| called a difference.
    pub min_effect: f64,
    pub comparisons: Vec<Comparison>,
    /// What could not be compared at all (a fleet host on one side only, a
    /// failed host).
    pub notes: Vec<String>,
    pub fail_if: Vec<String>,
    pub gate_hits: Vec<GateHit>,
    pub outcome: Outcome,
    /// What was not judged (inconclusive), each with what would judge it.
    pub unjudged: Vec<Unjudged>,
    /// --allow-inconclusive: an inconclusive gate exits 0.
    pub allow_inconclusive: bool,
    /// 0 pass or report, 1 a --fail-if rule crossed, 3 inconclusive (0 with
    /// --allow-inconclusive).
    pub exit_code: u8,
}
