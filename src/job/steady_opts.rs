//! The steady-state and latency-target options' rules across options: what
//! fio makes of the combinations it takes without complaint.

use std::time::Duration;

use super::steady::DEFAULT_CRITERION;

impl super::draft::Draft {
    /// What fio makes of the steady-state and latency-target options it
    /// takes without complaint: a criterion without a window of at least one
    /// second does nothing (noted); `ss_dur` alone uses fio's default
    /// criterion; `latency_target` without `latency_window` judges its depth
    /// at every pass of the job's loop (noted).
    pub(crate) fn check_steady_and_lat_target(&mut self) {
        let st = &mut self.spec.steady;
        st.duration = Duration::from_secs(st.duration.as_secs());
        if st.duration.is_zero() {
            if st.criterion.take().is_some() {
                self.note(
                    "steadystate",
                    "has no effect: without a steadystate_duration of a second or more there is \
                     no window to judge (fio ignores it too)",
                );
            }
        } else if st.criterion.is_none() {
            st.criterion = Some(DEFAULT_CRITERION);
        }
        let lt = &self.spec.lat_target;
        if lt.target.is_some() && lt.window.is_none() {
            self.note(
                "latency_target",
                "without latency_window each pass of the job's loop is a window, as in fio: \
                 the depth is judged on the few I/Os completed since the last pass, so the \
                 search follows their noise; give latency_window= for a steadier search",
            );
        }
    }
}
