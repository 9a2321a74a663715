//! One latency series: counts in hdrhistogram's bin layout plus exact moments,
//! and the precision every latency histogram keeps.

use hdrhistogram::Histogram;

/// Significant decimal digits kept by every latency histogram.
pub const SIGFIG: u8 = 3;
/// Largest relative error of a reported percentile (see module docs).
pub const RELATIVE_ERROR: f64 = 1.0 / 1024.0;
/// Smallest distinguishable latency (ns).
pub const LOWEST_NS: u64 = 1;
/// Largest trackable latency: one hour in ns.
pub const HIGHEST_NS: u64 = 3_600 * 1_000_000_000;

/// Counts per bin, in hdrhistogram's layout for [`LOWEST_NS`] = 1 and [`SIGFIG`]
/// = 3: 2048 sub-buckets, so values below 2048 ns have a bin each, and every
/// power of two above splits into 1024 bins. [`LatHist`] counts into this
/// layout itself and builds a `Histogram` only when a report asks: recording
/// through hdrhistogram cost a call per value plus its own min/max/total
/// bookkeeping, which [`LatHist`]'s exact moments already keep (three records
/// per request were a tenth of a QD1 null-device request; BENCHMARKS.md).
/// Tests pin the layout to hdrhistogram's, bin for bin.
const HALF_SUB_BUCKET_BITS: u32 = 10;
const SUB_BUCKET_MASK: u64 = (1 << (HALF_SUB_BUCKET_BITS + 1)) - 1;
/// Leading zeros of the largest value of the first bucket's range, less one.
const LEADING_ZERO_BASE: u32 = 64 - (HALF_SUB_BUCKET_BITS + 1);

/// The bin of `v` (hdrhistogram's `index_for`).
#[inline(always)]
pub(super) fn bin_of(v: u64) -> usize {
    let bucket = LEADING_ZERO_BASE - (v | SUB_BUCKET_MASK).leading_zeros();
    ((bucket as usize) << HALF_SUB_BUCKET_BITS) + (v >> bucket) as usize
}

/// The lowest value of bin `i` and the number of values it holds.
pub(super) fn bin_range(i: usize) -> (u64, u64) {
    let half = 1usize << HALF_SUB_BUCKET_BITS;
    if i < 2 * half {
        return (i as u64, 1);
    }
    let bucket = (i >> HALF_SUB_BUCKET_BITS) - 1;
    ((((i & (half - 1)) + half) as u64) << bucket, 1 << bucket)
}

/// One latency series: counts in an HDR histogram's bins plus exact moments.
#[derive(Clone, Debug)]
pub struct LatHist {
    /// One count per bin (see [`bin_of`]), for values up to [`HIGHEST_NS`].
    pub(super) counts: Box<[u64]>,
    n: u64,
    min: u64,
    max: u64,
    sum: u128,
    sum_sq: u128,
    /// Samples above [`HIGHEST_NS`], recorded as `HIGHEST_NS`.
    clamped: u64,
}

impl LatHist {
    pub fn new() -> LatHist {
        LatHist {
            // Whole buckets up to the one of HIGHEST_NS, as hdrhistogram sizes it.
            counts: vec![
                0;
                ((bin_of(HIGHEST_NS) >> HALF_SUB_BUCKET_BITS) + 1) << HALF_SUB_BUCKET_BITS
            ]
            .into_boxed_slice(),
            n: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_sq: 0,
            clamped: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        let v = if ns > HIGHEST_NS {
            self.clamped += 1;
            HIGHEST_NS
        } else {
            ns
        };
        // In range: v <= HIGHEST_NS, whose bin is the last (no growth, no
        // allocation on this path).
        self.counts[bin_of(v)] += 1;
        self.n += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += v as u128;
        self.sum_sq += (v as u128) * (v as u128);
    }

    pub fn count(&self) -> u64 {
        self.n
    }
    pub fn clamped(&self) -> u64 {
        self.clamped
    }
    /// Exact minimum (0 when empty).
    pub fn min(&self) -> u64 {
        if self.n == 0 { 0 } else { self.min }
    }
    pub fn max(&self) -> u64 {
        self.max
    }
    /// Exact mean (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }
    /// Sample standard deviation (n-1 denominator, as fio), 0 for fewer than 2 samples.
    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        let n = self.n as f64;
        // sum_sq - sum^2/n in u128 where it fits keeps small spreads exact.
        let centered = match self.sum.checked_mul(self.sum) {
            Some(sq) => {
                let q = sq / self.n as u128;
                let r = sq % self.n as u128;
                (self.sum_sq.saturating_sub(q)) as f64 - r as f64 / n
            }
            None => self.sum_sq as f64 - (self.sum as f64) * (self.sum as f64) / n,
        };
        (centered.max(0.0) / (n - 1.0)).sqrt()
    }

    /// Value at percentile `p` (0..=100): the upper end of the histogram bucket
    /// holding the sample of that rank (the lower end for p = 0, as
    /// hdrhistogram's `value_at_percentile`), capped at the exact maximum.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        // Capped as hdrhistogram caps it (a NaN stays NaN: rank 1, as there).
        let q = if p / 100.0 > 1.0 { 1.0 } else { p / 100.0 };
        // The rank hdrhistogram takes: ceil(q * n), at least the first sample.
        let rank = ((q * self.n as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (low, width) = bin_range(i);
                let v = if q == 0.0 { low } else { low + (width - 1) };
                return v.min(self.max);
            }
        }
        self.max
    }

    /// Values at several percentiles (in the given order).
    pub fn percentiles(&self, list: &[f64]) -> Vec<u64> {
        list.iter().map(|&p| self.percentile(p)).collect()
    }

    /// The series as an hdrhistogram `Histogram` (for json+'s bins), built
    /// from the counts: the same bins and counts, total, min and max as one
    /// that had recorded every value itself.
    pub fn histogram(&self) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGFIG)
            .expect("constant histogram bounds are valid");
        if self.n == 0 {
            return h;
        }
        let (lo, hi) = (bin_of(self.min), bin_of(self.max));
        for (i, &c) in self.counts.iter().enumerate().filter(|(_, c)| **c > 0) {
            // A bin's values all count at one value of the bin: the exact min
            // (max) in theirs, so the histogram's own min and max are the true
            // ones; elsewhere the bin's lowest value.
            if i == lo && i == hi && c > 1 {
                let _ = h.record(self.min);
                let _ = h.record_n(self.max, c - 1);
                continue;
            }
            let v = match i {
                _ if i == lo => self.min,
                _ if i == hi => self.max,
                _ => bin_range(i).0,
            };
            let _ = h.record_n(v, c);
        }
        h
    }

    pub fn reset(&mut self) {
        self.counts.fill(0);
        self.n = 0;
        self.min = u64::MAX;
        self.max = 0;
        self.sum = 0;
        self.sum_sq = 0;
        self.clamped = 0;
    }

    pub fn merge(&mut self, other: &LatHist) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.n += other.n;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        self.clamped += other.clamped;
    }

    /// Bytes of the bin counts.
    pub fn footprint_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.counts)
    }
}

impl Default for LatHist {
    fn default() -> Self {
        LatHist::new()
    }
}
