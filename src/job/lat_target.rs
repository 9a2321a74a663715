//! Latency-target options (`latency_target`, `latency_window`,
//! `latency_percentile`, `latency_run`): what the job asks the engine's
//! queue-depth search (`engine::lat_target`) to find.
//!
//! fio's meaning: the job starts at depth 1 and, after every window, moves its
//! depth: up (doubling until a window fails, then bisecting) when at least
//! `latency_percentile` percent of the window's I/Os completed within
//! `latency_target`, down (bisecting) when fewer did. When a step lands on the
//! depth it came from, the search is over: the job runs one more window at that
//! depth, reports only that window, and ends (with `latency_run`, it keeps
//! adjusting until the runtime ends instead).

use std::time::Duration;

/// A job's latency target; `target: None` means no search (full `iodepth`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct LatTargetSpec {
    /// `latency_target`: the completion latency (fio's `lat`, issue to
    /// completion) an I/O must not exceed.
    pub target: Option<Duration>,
    /// `latency_window`: how long each depth runs before it is judged.
    pub window: Option<Duration>,
    /// `latency_percentile`: the share of a window's I/Os, in percent, that
    /// must meet the target (100: every one; one miss steps down at once).
    pub percentile: f64,
    /// `latency_run`: keep adjusting the depth for the whole runtime.
    pub keep_running: bool,
}

impl Default for LatTargetSpec {
    fn default() -> Self {
        LatTargetSpec {
            target: None,
            window: None,
            percentile: 100.0,
            keep_running: false,
        }
    }
}

pub(crate) const TARGET_EXPECTED: &str = "a latency above 0, e.g. 500 (microseconds), 2ms or 800ns";
pub(crate) const WINDOW_EXPECTED: &str = "a time above 0, e.g. 5s or 500ms (microseconds if bare)";
pub(crate) const PERCENTILE_EXPECTED: &str = "a percentage above 0 and at most 100, e.g. 99.9 (the share of I/Os that must meet latency_target)";

/// `latency_percentile`: a number in (0, 100]; fio's `%` suffix is accepted.
pub(crate) fn percentile(v: &str) -> Option<f64> {
    let p: f64 = v.trim().trim_end_matches('%').parse().ok()?;
    (p.is_finite() && p > 0.0 && p <= 100.0).then_some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_range() {
        assert_eq!(percentile("99.9"), Some(99.9));
        assert_eq!(percentile("100"), Some(100.0));
        assert_eq!(percentile("50%"), Some(50.0));
        assert_eq!(percentile("0"), None);
        assert_eq!(percentile("100.1"), None);
        assert_eq!(percentile("-1"), None);
        assert_eq!(percentile("nan"), None);
        assert_eq!(percentile("x"), None);
    }
}
