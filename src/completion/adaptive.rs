//! The adaptive completion model: measure, then choose per request size.
//!
//! Two measurements drive it:
//! * this machine's wakeup cost — how late a thread that sleeps on an hrtimer
//!   actually runs again (the price of any sleep-based model), measured once;
//! * the device's latency per size class (log2 of the request length), learned
//!   from completions while polling (polling adds no wakeup noise to the sample).
//!
//! Rule, per size class with mean latency `L`, spread `sd` and wakeup cost `W`:
//! * `L < 2W`: poll — a sleep would cost about as much as the whole wait.
//! * `sd > L/2`: interrupt — latency too unpredictable to time a nap against.
//! * otherwise: hybrid — sleep until `L - 1.5W` after submit, then poll: most of
//!   the wait is given back to other tasks, and the thread is awake before the
//!   completion arrives.
//!
//! Every decision is kept with its numbers so a run can say why.

use std::sync::OnceLock;

use crate::job::CompletionModel;
use crate::measure::clock;

/// Size classes: log2(len) from 2^9 (512 B) to 2^24 (16 MiB).
const MIN_SHIFT: u32 = 9;
const CLASSES: usize = 16;
/// Samples a class needs before it leaves calibration.
const CALIBRATION_SAMPLES: u64 = 64;

/// Latency statistics of one size class.
#[derive(Clone, Copy, Debug, Default)]
struct ClassStats {
    n: u64,
    mean: f64,
    /// Exponentially weighted variance.
    var: f64,
}

/// One decision, with the numbers behind it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Decision {
    /// Requests of at most this many bytes (the class's upper bound).
    pub size_class: u64,
    pub model: CompletionModel,
    pub device_latency_ns: u64,
    pub latency_sd_ns: u64,
    pub wakeup_ns: u64,
    pub nap_ns: u64,
    pub samples: u64,
    pub why: String,
}

#[derive(Clone, Debug)]
pub struct Adaptive {
    wakeup_ns: u64,
    classes: [ClassStats; CLASSES],
}

/// This machine's wakeup cost (ns): median lateness of a 20 us hrtimer sleep,
/// measured once per process with timer slack set to 1 ns.
pub fn wakeup_cost_ns() -> u64 {
    static COST: OnceLock<u64> = OnceLock::new();
    *COST.get_or_init(|| measure_wakeup_cost(41))
}

/// Measure wakeup lateness: sleep until a deadline `samples` times and take the
/// median of (time seen awake - deadline) plus the sleep's entry cost.
pub fn measure_wakeup_cost(samples: usize) -> u64 {
    clock::set_thread_timer_slack_ns(1);
    let mut late: Vec<u64> = (0..samples)
        .map(|_| {
            let start = clock::now_ns();
            let deadline = start + 20_000;
            clock::sleep_until(deadline);
            clock::now_ns().saturating_sub(deadline)
        })
        .collect();
    late.sort_unstable();
    late[late.len() / 2].max(1)
}

fn class_of(len: u32) -> usize {
    let shift = 32 - len.max(1).saturating_sub(1).leading_zeros();
    (shift.saturating_sub(MIN_SHIFT) as usize).min(CLASSES - 1)
}

impl Adaptive {
    pub fn new(wakeup_ns: u64) -> Adaptive {
        Adaptive {
            wakeup_ns,
            classes: [ClassStats::default(); CLASSES],
        }
    }

    /// Seed a class with a known latency (synthetic calibrations, tests, `probe`).
    pub fn calibrate(&mut self, len: u32, mean_ns: u64, sd_ns: u64, samples: u64) {
        self.classes[class_of(len)] = ClassStats {
            n: samples,
            mean: mean_ns as f64,
            var: (sd_ns as f64).powi(2),
        };
    }

    #[inline]
    pub fn observe(&mut self, len: u32, clat_ns: u64) {
        let c = &mut self.classes[class_of(len)];
        c.n += 1;
        let w = if c.n < 32 {
            1.0 / c.n as f64
        } else {
            1.0 / 32.0
        };
        let d = clat_ns as f64 - c.mean;
        c.mean += d * w;
        c.var = (1.0 - w) * (c.var + w * d * d);
    }

    /// The model for a request of `len` bytes.
    #[inline]
    pub fn choose(&self, len: u32) -> CompletionModel {
        self.decide(class_of(len)).0
    }

    /// How long hybrid sleeps after submit for a request of `len` bytes.
    #[inline]
    pub fn nap_ns(&self, len: u32) -> u64 {
        self.decide(class_of(len)).1
    }

    #[inline]
    fn decide(&self, class: usize) -> (CompletionModel, u64) {
        let c = &self.classes[class];
        if c.n < CALIBRATION_SAMPLES {
            return (CompletionModel::Poll, 0);
        }
        let w = self.wakeup_ns as f64;
        if c.mean < 2.0 * w {
            (CompletionModel::Poll, 0)
        } else if c.var.sqrt() > c.mean / 2.0 {
            (CompletionModel::Interrupt, 0)
        } else {
            (CompletionModel::Hybrid, (c.mean - 1.5 * w).max(0.0) as u64)
        }
    }

    /// The decisions for every size class that has seen requests, with reasons.
    pub fn decisions(&self) -> Vec<Decision> {
        (0..CLASSES)
            .filter(|&i| self.classes[i].n > 0)
            .map(|i| {
                let c = &self.classes[i];
                let (model, nap) = self.decide(i);
                let (l, sd, w) = (c.mean, c.var.sqrt(), self.wakeup_ns as f64);
                let why = if c.n < CALIBRATION_SAMPLES {
                    format!("calibrating: {} of {CALIBRATION_SAMPLES} samples, polling meanwhile", c.n)
                } else {
                    match model {
                        CompletionModel::Poll => format!(
                            "device latency {:.1} us < 2 x wakeup cost {:.1} us: sleeping costs about as much as waiting",
                            l / 1e3,
                            w / 1e3
                        ),
                        CompletionModel::Interrupt => format!(
                            "latency spread {:.1} us > half the mean {:.1} us: too unpredictable to time a nap",
                            sd / 1e3,
                            l / 1e3
                        ),
                        _ => format!(
                            "device latency {:.1} us >= 2 x wakeup cost {:.1} us: nap {:.1} us then poll",
                            l / 1e3,
                            w / 1e3,
                            nap as f64 / 1e3
                        ),
                    }
                };
                Decision {
                    size_class: 1u64 << (i as u32 + MIN_SHIFT),
                    model,
                    device_latency_ns: l as u64,
                    latency_sd_ns: sd as u64,
                    wakeup_ns: self.wakeup_ns,
                    nap_ns: nap,
                    samples: c.n,
                    why,
                }
            })
            .collect()
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

    #[test]
    fn polls_while_calibrating_then_decides_by_numbers() {
        let mut a = Adaptive::new(15_000);
        assert_eq!(a.choose(4096), CompletionModel::Poll);
        // Fast device: 4 us << 2 x 15 us wakeup.
        a.calibrate(4096, 4_000, 200, 100);
        assert_eq!(a.choose(4096), CompletionModel::Poll);
        // Slow, steady device: 200 us, nap until 200 - 22.5 us.
        a.calibrate(65536, 200_000, 10_000, 100);
        assert_eq!(a.choose(65536), CompletionModel::Hybrid);
        assert_eq!(a.nap_ns(65536), 177_500);
        // Slow, erratic device: interrupt.
        a.calibrate(1 << 20, 200_000, 150_000, 100);
        assert_eq!(a.choose(1 << 20), CompletionModel::Interrupt);
        let d = a.decisions();
        assert_eq!(d.len(), 3);
        assert!(d[1].why.contains("nap"), "{:?}", d[1]);
    }

    #[test]
    fn learning_from_observations_converges() {
        let mut a = Adaptive::new(10_000);
        for _ in 0..200 {
            a.observe(4096, 100_000);
        }
        assert_eq!(a.choose(4096), CompletionModel::Hybrid);
        let d = &a.decisions()[0];
        assert!((d.device_latency_ns as i64 - 100_000).abs() < 100);
    }

    #[test]
    fn wakeup_cost_is_measured_not_assumed() {
        let w = measure_wakeup_cost(5);
        assert!(w > 0);
    }
}
