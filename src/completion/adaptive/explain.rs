//! Adaptive's account of itself: each size class's decision with the
//! numbers behind it and, in words, why.

use super::Adaptive;
use super::rule::{CALIBRATION_SAMPLES, CLASSES, MIN_SHIFT};
use crate::job::CompletionModel;

/// One decision, with the numbers behind it.
#[derive(schemars::JsonSchema, Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Decision {
    /// Requests of at most this many bytes (the class's upper bound).
    pub size_class: u64,
    pub model: CompletionModel,
    pub device_latency_ns: u64,
    pub latency_sd_ns: u64,
    pub wakeup_ns: u64,
    pub nap_ns: u64,
    pub samples: u64,
    /// p50 of requests performed inline (synchronously in the caller's context),
    /// where that path was measured.
    pub inline_latency_ns: Option<u64>,
    pub why: String,
}

impl Adaptive {
    /// The decisions for every size class that has seen requests, with reasons.
    pub fn decisions(&self) -> Vec<Decision> {
        (0..CLASSES)
            .filter(|&i| self.classes[i].queued.n + self.classes[i].inline.n > 0)
            .map(|i| {
                let c = &self.classes[i];
                let [p10, p50, p90] = c.queued.percentiles();
                let w = self.wakeup_ns as f64;
                let n = c.queued.n + c.inline.n;
                let path = match c.compared {
                    Some((q, i)) if c.go_inline => Some(format!(
                        "inline in the caller's context p50 {:.1} us < queued p50 {:.1} us: performing requests inline",
                        i / 1e3,
                        q / 1e3
                    )),
                    Some((q, i)) => Some(format!(
                        "queued p50 {:.1} us <= inline p50 {:.1} us: keeping the queue; ",
                        q / 1e3,
                        i / 1e3
                    )),
                    None => None,
                };
                let why = if c.queued.n < CALIBRATION_SAMPLES && c.nap > 0 {
                    format!(
                        "calibrating: {} of {CALIBRATION_SAMPLES} samples, napping {:.1} us (p10 - 1.5 x wakeup) then polling meanwhile",
                        c.queued.n,
                        c.nap as f64 / 1e3
                    )
                } else if c.queued.n < CALIBRATION_SAMPLES {
                    format!(
                        "calibrating: {} of {CALIBRATION_SAMPLES} samples, polling meanwhile",
                        c.queued.n
                    )
                } else if c.go_inline {
                    path.clone().unwrap_or_default()
                } else if self.inline_ok && c.compared.is_none() {
                    format!(
                        "calibrating the inline path: {} of {CALIBRATION_SAMPLES} samples",
                        c.inline.n
                    )
                } else {
                    match c.model {
                        CompletionModel::Poll => format!(
                            "device latency p50 {:.1} us < 2 x wakeup cost {:.1} us: sleeping costs about as much as waiting",
                            p50 / 1e3,
                            2.0 * w / 1e3
                        ),
                        CompletionModel::Interrupt => format!(
                            "latency p10-p90 spread {:.1} us > half the p50 {:.1} us: too unpredictable to time a nap",
                            (p90 - p10) / 1e3,
                            p50 / 1e3
                        ),
                        _ => {
                            let crowd = if p90 - p10 > p50 / 2.0 && self.contention.crowded() {
                                format!(
                                    " (its p10-p90 spread {:.1} us is our own threads queueing for CPUs, which waiting for the interrupt would not shorten)",
                                    (p90 - p10) / 1e3
                                )
                            } else {
                                String::new()
                            };
                            format!(
                                "device latency p50 {:.1} us >= 2 x wakeup cost {:.1} us: nap {:.1} us (p10 - 1.5 x wakeup) then poll{crowd}",
                                p50 / 1e3,
                                2.0 * w / 1e3,
                                c.nap as f64 / 1e3
                            )
                        }
                    }
                };
                let why = match (&path, c.go_inline) {
                    (Some(p), false) => format!("{p}{why}"),
                    _ => why,
                };
                let why = match self.contention.note() {
                    Some(n) if !c.go_inline && c.model == CompletionModel::Poll && p50 < self.block_ns as f64 => format!(
                        "{why}; {n}; but the p50 {:.1} us is under the shortest sleep that blocks here ({:.1} us): a nap could not give the CPU away, so it keeps polling",
                        p50 / 1e3,
                        self.block_ns as f64 / 1e3
                    ),
                    Some(n) if !c.go_inline => format!(
                        "{why}; {n}; each contended nap lasts at least {:.1} us, the shortest sleep that blocks here",
                        self.block_ns as f64 / 1e3
                    ),
                    _ => why,
                };
                let why = match self.contention.depth_note() {
                    Some(n) if !c.go_inline => format!("{why}; {n}"),
                    _ => why,
                };
                Decision {
                    size_class: 1u64 << (i as u32 + MIN_SHIFT),
                    model: if c.go_inline {
                        CompletionModel::Sync
                    } else {
                        c.model
                    },
                    device_latency_ns: p50 as u64,
                    latency_sd_ns: (p90 - p10).max(0.0) as u64,
                    wakeup_ns: self.wakeup_ns,
                    nap_ns: c.nap,
                    samples: n,
                    inline_latency_ns: (c.inline.held > 0)
                        .then(|| c.inline.percentiles()[1] as u64),
                    why,
                }
            })
            .collect()
    }
}
