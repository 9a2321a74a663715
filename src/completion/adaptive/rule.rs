//! Adaptive's decision rule, per size class: which model waits for the
//! class's requests (and how long a nap is) from its latency percentiles and
//! the wakeup cost, and which submission path (queued or inline) serves it.
//! The module docs of [`super`] give the rule in words.

use super::hist::Hist;
use crate::job::CompletionModel;

/// Size classes: log2(len) from 2^9 (512 B) to 2^24 (16 MiB).
pub(super) const MIN_SHIFT: u32 = 9;
pub(super) const CLASSES: usize = 16;
/// Samples a class needs before it leaves calibration.
pub(super) const CALIBRATION_SAMPLES: u64 = 64;
/// While calibrating, look at the samples this often: a slow device stops
/// being polled from submit on after the first look (see `redecide`).
pub(super) const CALIBRATION_STEP: u64 = 8;
/// A calibrating class naps once its p10 is this many wakeup costs or more.
const CALIBRATION_NAP_WAKEUPS: f64 = 4.0;
/// Recompute a class's decision every this many samples.
pub(super) const REDECIDE: u64 = 32;
/// Re-sample the submission path not taken every this many requests of a class.
pub(super) const RECHECK: u64 = 16_384;
/// Requests per path when both paths are re-sampled.
pub(super) const PROBE: u32 = 32;
/// How much faster (fraction of p50) the other path must be to replace the one in force.
const SWITCH_MARGIN: f64 = 0.10;

/// What a probe sends where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Probe {
    /// Every request inline (the first look at the inline path).
    Inline,
    /// Alternate inline and queued (rechecks).
    Both,
}

pub(super) fn class_of(len: u32) -> usize {
    let shift = 32 - len.max(1).saturating_sub(1).leading_zeros();
    (shift.saturating_sub(MIN_SHIFT) as usize).min(CLASSES - 1)
}

/// Latency statistics and decisions of one size class.
#[derive(Clone, Debug)]
pub(super) struct ClassStats {
    /// Requests that went through the queue (the completion model's samples).
    pub(super) queued: Hist,
    /// Requests performed inline, in the caller's context.
    pub(super) inline: Hist,
    /// Cached decision: (model, nap ns), and the percentiles behind it.
    pub(super) model: CompletionModel,
    pub(super) nap: u64,
    /// Correction of `nap` learned from how each nap ended (see
    /// [`Adaptive::after_nap`](super::Adaptive::after_nap)), ns; kept within [-nap, p10 - nap].
    pub(super) nap_adj: i64,
    /// The same correction for naps taken while the CPU is contended, which
    /// start from half the p50 (see [`Adaptive::nap_ns`](super::Adaptive::nap_ns)).
    pub(super) contended_adj: i64,
    pub(super) p: [f64; 3],
    /// Submission path in force: inline (synchronous) rather than queued.
    pub(super) go_inline: bool,
    /// Requests still to send as the probe says (calibration or recheck).
    pub(super) probe: u32,
    pub(super) probe_kind: Probe,
    /// Samples of each path that complete the current probe.
    pub(super) probe_target: u64,
    /// Requests since the paths were last compared.
    pub(super) since: u64,
    /// p50s of (queued, inline) at the last comparison, ns.
    pub(super) compared: Option<(f64, f64)>,
}

impl Default for ClassStats {
    fn default() -> Self {
        ClassStats {
            queued: Hist::default(),
            inline: Hist::default(),
            // Poll while calibrating: it adds no wakeup noise to the samples.
            model: CompletionModel::Poll,
            nap: 0,
            nap_adj: 0,
            contended_adj: 0,
            p: [0.0; 3],
            go_inline: false,
            probe: 0,
            probe_kind: Probe::Inline,
            probe_target: 0,
            since: 0,
            compared: None,
        }
    }
}

impl ClassStats {
    /// Keep the submission path with the lower median latency. Once a path is in
    /// force the other must beat it by `SWITCH_MARGIN`, so noise does not flip it.
    pub(super) fn compare(&mut self) {
        let q = self.queued.percentiles()[1];
        let i = self.inline.percentiles()[1];
        if q > 0.0 && i > 0.0 {
            self.go_inline = match self.compared {
                None => i < q,
                Some(_) if self.go_inline => i <= q * (1.0 + SWITCH_MARGIN),
                Some(_) => i * (1.0 + SWITCH_MARGIN) < q,
            };
            self.compared = Some((q, i));
            self.since = 0;
        }
    }

    /// Decide the class's model and nap from its queued latencies.
    ///
    /// `crowded`: this process's adaptive threads outnumber their CPUs (see
    /// [`Contention::crowded`](super::contention::Contention::crowded)).
    /// There a wide spread is mostly the run queue's: a poller preempted by a
    /// sibling sees the device's time plus its wait for a CPU. Waiting for the interrupt does not narrow it (the woken
    /// thread queues for a CPU just the same), and it added a wakeup to every
    /// request of the threads that chose it: 20 us device, 4 threads on 2
    /// CPUs, 5-round runs in which some threads went to interrupt had p99
    /// 66.6 us against 46-56 in runs where none did, behind interrupt's own
    /// 60-65. So a crowded class with a wide spread naps (hybrid) instead.
    pub(super) fn redecide(&mut self, wakeup_ns: u64, crowded: bool) {
        self.p = self.queued.percentiles();
        let [p10, p50, p90] = self.p;
        let w = wakeup_ns as f64;
        (self.model, self.nap) = if self.queued.n < CALIBRATION_SAMPLES {
            // Calibration samples are found by polling, so no wakeup adds its
            // noise. On a slow device polling from submit costs the whole
            // latency in CPU per sample (64 ms for the 64 samples of a 1 ms
            // device; with a co-runner on the CPU each spin can also lose a
            // whole time slice, which put 5 ms into adaptive's p99 at 1 ms).
            // So once the first samples show even the fastest tenth far
            // beyond what polling is chosen for, the rest nap until 1.5
            // wakeups before that p10 and poll from there: still found by
            // polling, at a fraction of the CPU.
            if self.queued.n >= CALIBRATION_STEP && p10 >= CALIBRATION_NAP_WAKEUPS * w && w > 0.0 {
                (CompletionModel::Hybrid, (p10 - 1.5 * w) as u64)
            } else {
                (CompletionModel::Poll, 0)
            }
        } else if p50 < 2.0 * w {
            (CompletionModel::Poll, 0)
        } else if p90 - p10 > p50 / 2.0 && !crowded {
            (CompletionModel::Interrupt, 0)
        } else {
            (CompletionModel::Hybrid, (p10 - 1.5 * w).max(0.0) as u64)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_are_log2() {
        assert_eq!(class_of(512), 0);
        assert_eq!(class_of(513), 1);
        assert_eq!(class_of(4096), 3);
        assert_eq!(class_of(1 << 30), CLASSES - 1);
        assert_eq!(class_of(1), 0);
    }
}
