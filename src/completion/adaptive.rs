//! The adaptive completion model: measure, then choose per request size.
//!
//! Two measurements drive it:
//! * this machine's wakeup cost — how late a thread that sleeps on an hrtimer
//!   actually runs again (the price of any sleep-based model), measured once;
//! * the device's latency per size class (log2 of the request length), learned
//!   from completions while polling (polling adds no wakeup noise to the sample).
//!
//! Rule, per size class, from the class's latency percentiles (p10, p50, p90 of
//! a decaying log-bucket histogram: robust against the preemption outliers a
//! busy machine adds, which would drag a mean far off) and wakeup cost `W`:
//! * `p50 < 2W`: poll — a sleep would cost about as much as the whole wait.
//! * `p90 - p10 > p50/2`: interrupt — latency too unpredictable to time a nap.
//! * otherwise: hybrid — sleep until `p10 - 1.5W` after submit, then poll: the
//!   thread wakes before almost every completion and gives most of the wait
//!   back to other tasks.
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

/// Buckets per octave of the latency histogram (12.5% wide: ~6% error).
const SUB: u32 = 8;
/// Octaves covered: 64 ns .. 64 ns * 2^24 (~1 s); outside values clamp.
const OCTAVES: u32 = 24;
const BUCKETS: usize = (SUB * OCTAVES) as usize;
const BASE_SHIFT: u32 = 6;
/// Recompute a class's decision every this many samples.
const REDECIDE: u64 = 32;
/// Halve the histogram every this many samples so it follows a changing device.
const DECAY: u64 = 4096;

fn bucket_of(ns: u64) -> usize {
    let v = ns.max(1 << BASE_SHIFT);
    let oct = 63 - v.leading_zeros();
    // The three bits below the leading one pick the eighth of the octave.
    let sub = ((v >> (oct - 3)) & (SUB as u64 - 1)) as u32;
    (((oct - BASE_SHIFT) * SUB + sub) as usize).min(BUCKETS - 1)
}

fn bucket_value(b: usize) -> f64 {
    let oct = b as u32 / SUB + BASE_SHIFT;
    let sub = b as u32 % SUB;
    // Middle of the bucket.
    2f64.powi(oct as i32) * (1.0 + (sub as f64 + 0.5) / SUB as f64)
}

/// Latency statistics of one size class.
#[derive(Clone, Debug)]
struct ClassStats {
    n: u64,
    hist: [u32; BUCKETS],
    in_hist: u64,
    /// Cached decision: (model, nap ns), and the percentiles behind it.
    model: CompletionModel,
    nap: u64,
    p: [f64; 3],
}

impl Default for ClassStats {
    fn default() -> Self {
        ClassStats {
            n: 0,
            hist: [0; BUCKETS],
            in_hist: 0,
            model: CompletionModel::Poll,
            nap: 0,
            p: [0.0; 3],
        }
    }
}

impl ClassStats {
    fn percentiles(&self) -> [f64; 3] {
        let mut out = [0.0; 3];
        if self.in_hist == 0 {
            return out;
        }
        let targets = [0.10, 0.50, 0.90].map(|q| (q * self.in_hist as f64).ceil().max(1.0) as u64);
        let mut acc = 0u64;
        let mut k = 0;
        for (b, &c) in self.hist.iter().enumerate() {
            acc += c as u64;
            while k < 3 && acc >= targets[k] {
                out[k] = bucket_value(b);
                k += 1;
            }
            if k == 3 {
                break;
            }
        }
        out
    }
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
    /// One entry per size class, allocated once.
    classes: Vec<ClassStats>,
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
            classes: vec![ClassStats::default(); CLASSES],
        }
    }

    /// Seed a class with a known latency distribution (synthetic calibrations,
    /// tests, `probe`): `samples` values spread evenly over p50 +- spread.
    pub fn calibrate(&mut self, len: u32, p50_ns: u64, spread_ns: u64, samples: u64) {
        let c = &mut self.classes[class_of(len)];
        *c = ClassStats::default();
        for i in 0..samples {
            let f = if samples > 1 {
                i as f64 / (samples - 1) as f64 * 2.0 - 1.0
            } else {
                0.0
            };
            let v = (p50_ns as f64 + f * spread_ns as f64).max(1.0) as u64;
            c.hist[bucket_of(v)] += 1;
            c.in_hist += 1;
        }
        c.n = samples;
        Self::redecide(c, self.wakeup_ns);
    }

    #[inline]
    pub fn observe(&mut self, len: u32, clat_ns: u64) {
        let w = self.wakeup_ns;
        let c = &mut self.classes[class_of(len)];
        c.n += 1;
        c.hist[bucket_of(clat_ns)] += 1;
        c.in_hist += 1;
        if c.n.is_multiple_of(DECAY) {
            c.in_hist = 0;
            for h in c.hist.iter_mut() {
                *h /= 2;
                c.in_hist += *h as u64;
            }
        }
        if c.n.is_multiple_of(REDECIDE) {
            Self::redecide(c, w);
        }
    }

    /// The model for a request of `len` bytes (a cached decision: no work here).
    #[inline]
    pub fn choose(&self, len: u32) -> CompletionModel {
        self.classes[class_of(len)].model
    }

    /// How long hybrid sleeps after submit for a request of `len` bytes.
    #[inline]
    pub fn nap_ns(&self, len: u32) -> u64 {
        self.classes[class_of(len)].nap
    }

    fn redecide(c: &mut ClassStats, wakeup_ns: u64) {
        c.p = c.percentiles();
        let [p10, p50, p90] = c.p;
        let w = wakeup_ns as f64;
        (c.model, c.nap) = if c.n < CALIBRATION_SAMPLES || p50 < 2.0 * w {
            (CompletionModel::Poll, 0)
        } else if p90 - p10 > p50 / 2.0 {
            (CompletionModel::Interrupt, 0)
        } else {
            (CompletionModel::Hybrid, (p10 - 1.5 * w).max(0.0) as u64)
        };
    }

    /// The decisions for every size class that has seen requests, with reasons.
    pub fn decisions(&self) -> Vec<Decision> {
        (0..CLASSES)
            .filter(|&i| self.classes[i].n > 0)
            .map(|i| {
                let c = &self.classes[i];
                let [p10, p50, p90] = c.percentiles();
                let w = self.wakeup_ns as f64;
                let why = if c.n < CALIBRATION_SAMPLES {
                    format!("calibrating: {} of {CALIBRATION_SAMPLES} samples, polling meanwhile", c.n)
                } else {
                    match c.model {
                        CompletionModel::Poll => format!(
                            "device latency p50 {:.1} us < 2 x wakeup cost {:.1} us: sleeping costs about as much as waiting",
                            p50 / 1e3,
                            w / 1e3
                        ),
                        CompletionModel::Interrupt => format!(
                            "latency p10-p90 spread {:.1} us > half the p50 {:.1} us: too unpredictable to time a nap",
                            (p90 - p10) / 1e3,
                            p50 / 1e3
                        ),
                        _ => format!(
                            "device latency p50 {:.1} us >= 2 x wakeup cost {:.1} us: nap {:.1} us (p10 - 1.5 x wakeup) then poll",
                            p50 / 1e3,
                            w / 1e3,
                            c.nap as f64 / 1e3
                        ),
                    }
                };
                Decision {
                    size_class: 1u64 << (i as u32 + MIN_SHIFT),
                    model: c.model,
                    device_latency_ns: p50 as u64,
                    latency_sd_ns: (p90 - p10).max(0.0) as u64,
                    wakeup_ns: self.wakeup_ns,
                    nap_ns: c.nap,
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
    fn buckets_are_monotonic_and_within_error() {
        let mut prev = 0;
        for ns in [64u64, 100, 1_000, 4_100, 50_000, 200_000, 1_000_000] {
            let b = bucket_of(ns);
            assert!(b >= prev);
            prev = b;
            let v = bucket_value(b);
            assert!((v - ns as f64).abs() / (ns as f64) < 0.13, "{ns} -> {v}");
        }
    }

    #[test]
    fn polls_while_calibrating_then_decides_by_numbers() {
        let mut a = Adaptive::new(15_000);
        assert_eq!(a.choose(4096), CompletionModel::Poll);
        // Fast device: 4 us << 2 x 15 us wakeup.
        a.calibrate(4096, 4_000, 200, 100);
        assert_eq!(a.choose(4096), CompletionModel::Poll);
        // Slow, steady device: 200 us +- 10 us, nap until ~190 - 22.5 us.
        a.calibrate(65536, 200_000, 10_000, 100);
        assert_eq!(a.choose(65536), CompletionModel::Hybrid);
        let nap = a.nap_ns(65536) as f64;
        assert!((nap - 170_000.0).abs() < 15_000.0, "nap {nap}");
        // Slow, erratic device: interrupt.
        a.calibrate(1 << 20, 200_000, 150_000, 100);
        assert_eq!(a.choose(1 << 20), CompletionModel::Interrupt);
        let d = a.decisions();
        assert_eq!(d.len(), 3);
        assert!(d[1].why.contains("nap"), "{:?}", d[1]);
    }

    #[test]
    fn outliers_do_not_move_the_decision() {
        // A steady 100 us device with 3% of samples hit by 5 ms preemptions: a
        // mean-based rule would call it erratic; the percentiles do not.
        let mut a = Adaptive::new(10_000);
        for i in 0..2000 {
            a.observe(4096, if i % 33 == 0 { 5_000_000 } else { 100_000 });
        }
        assert_eq!(a.choose(4096), CompletionModel::Hybrid);
        let d = &a.decisions()[0];
        assert!(
            (d.device_latency_ns as f64 - 100_000.0).abs() < 7_000.0,
            "{d:?}"
        );
    }

    #[test]
    fn wakeup_cost_is_measured_not_assumed() {
        let w = measure_wakeup_cost(5);
        assert!(w > 0);
    }
}
