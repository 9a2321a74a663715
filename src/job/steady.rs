//! Steady-state options (`steadystate`/`ss`, `ss_dur`, `ss_ramp`): what the
//! job asks the engine's steady-state detector (`engine::steady`) to look for.
//!
//! fio's meaning: once a second the job's IOPS or bandwidth is sampled; when
//! the last `ss_dur` seconds of samples meet the criterion, the job ends. A
//! criterion is the largest deviation from the window's mean (`iops`, `bw`) or
//! the least-squares slope over the window (`iops_slope`, `bw_slope`), either
//! absolute (IOPS, bytes/s) or, with `%`, relative to the window's mean.

use std::time::Duration;

/// What is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum SteadyMetric {
    Iops,
    Bw,
}

/// One `steadystate=` criterion.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct SteadyCriterion {
    pub metric: SteadyMetric,
    /// Least-squares slope (`*_slope`) instead of the largest deviation.
    pub slope: bool,
    /// The limit is a percentage of the window's mean.
    pub percent: bool,
    pub limit: f64,
}

impl SteadyCriterion {
    /// fio's spelling of the criterion in its JSON (`"iops:5.000000%"`).
    pub fn fio_text(&self) -> String {
        format!(
            "{}{}:{:.6}{}",
            self.metric_name(),
            if self.slope { "_slope" } else { "" },
            self.limit,
            if self.percent { "%" } else { "" }
        )
    }

    pub fn metric_name(&self) -> &'static str {
        match self.metric {
            SteadyMetric::Iops => "iops",
            SteadyMetric::Bw => "bw",
        }
    }
}

/// A job's steady-state settings; `criterion: None` means no detection.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct SteadySpec {
    pub criterion: Option<SteadyCriterion>,
    /// `ss_dur`: the window the criterion must hold over (whole seconds; zero:
    /// no detection).
    pub duration: Duration,
    /// `ss_ramp`: time after the job's start before sampling begins.
    pub ramp: Duration,
}

impl Default for SteadySpec {
    fn default() -> Self {
        SteadySpec {
            criterion: None,
            duration: Duration::ZERO,
            ramp: Duration::ZERO,
        }
    }
}

pub(crate) const CRITERION_EXPECTED: &str = "iops:N, iops_slope:N, bw:N or bw_slope:N, where N is \
     a non-negative number (IOPS, or bytes/s for bw) or a percentage of the mean (e.g. iops:5%)";
pub(crate) const DUR_EXPECTED: &str = "a time of at most a day (e.g. 30, 30s or 2m): samples are \
     taken once a second, a fraction of a second is dropped, and 0 turns detection off";
/// The window is held in memory allocated before the job starts; one day of
/// one-second samples is far more than any steady-state test runs.
const MAX_DUR_S: u64 = 86_400;

/// `steadystate=iops:5%` and the others; `None` when it is not one
/// ([`CRITERION_EXPECTED`] says what is).
pub(crate) fn criterion(value: &str) -> Option<SteadyCriterion> {
    let (kind, limit) = value.split_once(':')?;
    let (metric, slope) = match kind.trim().to_ascii_lowercase().as_str() {
        "iops" => (SteadyMetric::Iops, false),
        "iops_slope" => (SteadyMetric::Iops, true),
        "bw" => (SteadyMetric::Bw, false),
        "bw_slope" => (SteadyMetric::Bw, true),
        _ => return None,
    };
    let limit = limit.trim();
    let (num, percent) = match limit.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (limit, false),
    };
    let limit: f64 = num.parse().ok()?;
    (limit.is_finite() && limit >= 0.0).then_some(SteadyCriterion {
        metric,
        slope,
        percent,
        limit,
    })
}

/// `ss_dur`: fio keeps whole seconds (2.5s is a window of two samples) and
/// takes 0, or anything below a second, as no window: detection off.
pub(crate) fn duration_ok(t: Duration) -> bool {
    t.as_secs() <= MAX_DUR_S
}

/// `ss_dur` with a fraction (`1.5`, `2.5s`, `0.5m`): fio reads the number
/// as a decimal and keeps whole seconds of it. None when it is not one.
pub(crate) fn fractional_duration(value: &str) -> Option<Duration> {
    let v = value.trim();
    let end = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (num, unit) = v.split_at(end);
    let n: f64 = num.parse().ok()?;
    let per_s = match unit.to_ascii_lowercase().as_str() {
        "" | "s" => 1.0,
        "ms" | "msec" => 1e-3,
        "us" | "usec" => 1e-6,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        _ => return None,
    };
    let secs = (n * per_s).floor();
    (secs.is_finite() && secs >= 0.0 && secs <= MAX_DUR_S as f64)
        .then(|| Duration::from_secs(secs as u64))
}

/// fio's default criterion, used when `ss_dur` is given alone.
pub(super) const DEFAULT_CRITERION: SteadyCriterion = SteadyCriterion {
    metric: SteadyMetric::Iops,
    slope: true,
    percent: true,
    limit: 0.01,
};
