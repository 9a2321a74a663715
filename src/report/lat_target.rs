//! The result of fio's latency-target depth search (`latency_target=`): the
//! depth the search ended at and how it got there. fio's own keys
//! (`latency_depth`, `latency_target`, `latency_window`, `latency_percentile`)
//! are filled from it; the rest goes under `iolab.engine.lat_target`.

/// What one job's queue-depth search found.
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize,
)]
pub struct LatTargetReport {
    /// `latency_target` in ns (fio's JSON unit for it).
    pub target_ns: u64,
    /// `latency_window` in us (fio's JSON unit for it).
    pub window_us: u64,
    pub percentile: f64,
    /// The depth the job ran at when it ended (fio's `latency_depth`).
    pub depth: u32,
    /// The job's `iodepth`: the search's ceiling.
    pub max_depth: u32,
    /// Windows judged (each one a step up, a step down or a stay).
    pub windows: u32,
    /// The search settled and the reported figures are from one final window
    /// at `depth` only (fio resets its statistics there).
    pub settled: bool,
    /// The last judged window, as the percentage of its I/Os within the target
    /// (None before any window was judged).
    pub last_met_pct: Option<f64>,
    /// `latency_run`: the search never ends by design (no "not settled" note).
    pub keep_running: bool,
    /// Depth 1 did not meet the target: the device is slower than the target
    /// even without queueing.
    pub unmet_at_depth_1: bool,
}

impl LatTargetReport {
    /// A sentence for the text report when the result needs one (the target
    /// was out of reach, or the runtime ended before the search settled).
    pub fn note(&self) -> Option<String> {
        let target = if self.target_ns.is_multiple_of(1000) {
            format!("{}us", self.target_ns / 1000)
        } else {
            format!("{}ns", self.target_ns)
        };
        if self.unmet_at_depth_1 {
            let share = self.last_met_pct.map_or(String::new(), |p| {
                format!(
                    " ({p:.2}% of the last window's I/Os within it, {:.2}% needed)",
                    self.percentile
                )
            });
            return Some(format!(
                "latency_target={target} is not met even at depth 1{share}: the device is \
                 slower than the target without any queueing; raise latency_target or lower \
                 latency_percentile"
            ));
        }
        if !self.settled && !self.keep_running {
            return Some(format!(
                "latency_target={target}: the depth search had not settled when the job \
                 ended (depth {} after {} windows; the figures cover the whole run): give it \
                 a longer runtime or a shorter latency_window",
                self.depth, self.windows
            ));
        }
        None
    }
}
