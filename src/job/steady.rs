//! Steady-state options (`steadystate`/`ss`, `ss_dur`, `ss_ramp`): what the
//! job asks the engine's steady-state detector (`engine::steady`) to look for.
//!
//! fio's meaning: once a second the job's IOPS or bandwidth is sampled; when
//! the last `ss_dur` seconds of samples meet the criterion, the job ends. A
//! criterion is the largest deviation from the window's mean (`iops`, `bw`) or
//! the least-squares slope over the window (`iops_slope`, `bw_slope`), either
//! absolute (IOPS, bytes/s) or, with `%`, relative to the window's mean.

use std::time::Duration;

use super::error::JobError;

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
    /// `ss_dur`: the window the criterion must hold over (whole seconds).
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
pub(crate) const DUR_EXPECTED: &str =
    "a whole number of seconds, 1 or more (e.g. 30, 30s or 2m): samples are taken once a second";
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

/// `ss_dur`: whole seconds, at least one sample.
pub(crate) fn duration_ok(t: Duration) -> bool {
    !t.is_zero() && t.subsec_nanos() == 0 && t.as_secs() <= MAX_DUR_S
}

/// Cross-option check: a criterion needs a window (fio silently does nothing
/// without `ss_dur`; iolab says so).
pub(crate) fn check(s: &SteadySpec, at: &str) -> Result<(), JobError> {
    if s.criterion.is_some() && s.duration.is_zero() {
        return Err(JobError::BadValue {
            at: at.to_string(),
            option: "steadystate_duration".into(),
            value: "(not set)".into(),
            expected: format!("{DUR_EXPECTED}; steadystate= needs ss_dur= to say over how long"),
        });
    }
    Ok(())
}
