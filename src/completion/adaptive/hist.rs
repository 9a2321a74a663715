//! Adaptive's decaying log-bucket latency histogram: percentiles that the
//! preemption outliers of a busy machine hardly move, and a decay that lets
//! them follow a changing device.

/// Buckets per octave of the latency histogram (12.5% wide: ~6% error).
const SUB: u32 = 8;
/// Octaves covered: 64 ns .. 64 ns * 2^24 (~1 s); outside values clamp.
const OCTAVES: u32 = 24;
const BUCKETS: usize = (SUB * OCTAVES) as usize;
const BASE_SHIFT: u32 = 6;
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

/// A decaying log-bucket latency histogram.
#[derive(Clone, Debug)]
pub(super) struct Hist {
    /// Samples ever recorded.
    pub(super) n: u64,
    counts: [u32; BUCKETS],
    /// Samples currently in `counts` (after decay).
    pub(super) held: u64,
}

impl Default for Hist {
    fn default() -> Self {
        Hist {
            n: 0,
            counts: [0; BUCKETS],
            held: 0,
        }
    }
}

impl Hist {
    #[inline]
    pub(super) fn record(&mut self, ns: u64) {
        self.n += 1;
        self.counts[bucket_of(ns)] += 1;
        self.held += 1;
        if self.n.is_multiple_of(DECAY) {
            self.held = 0;
            for h in self.counts.iter_mut() {
                *h /= 2;
                self.held += *h as u64;
            }
        }
    }

    /// Forget the shape (not the count): the next samples describe the path anew.
    pub(super) fn clear(&mut self) {
        self.counts = [0; BUCKETS];
        self.held = 0;
    }

    pub(super) fn percentiles(&self) -> [f64; 3] {
        let mut out = [0.0; 3];
        if self.held == 0 {
            return out;
        }
        let targets = [0.10, 0.50, 0.90].map(|q| (q * self.held as f64).ceil().max(1.0) as u64);
        let mut acc = 0u64;
        let mut k = 0;
        for (b, &c) in self.counts.iter().enumerate() {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
