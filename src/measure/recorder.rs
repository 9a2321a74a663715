//! The recorder: per-worker latency histograms and counters, filled once per request.
//!
//! Everything is allocated in [`Recorder::new`]; [`Recorder::record_sample`] only
//! indexes into preallocated memory (no allocation, lock or system call), so the
//! worker loop can call it for every completion.
//!
//! Precision: latencies are kept in HDR histograms with [`SIGFIG`] = 3 significant
//! digits over [`LOWEST_NS`]..=[`HIGHEST_NS`] (1 ns .. 1 hour). Values below 2048 ns
//! are exact; above, a reported percentile `v'` for a true value `v` satisfies
//! `v <= v' <= v * (1 + RELATIVE_ERROR)` with `RELATIVE_ERROR = 2^-10` (< 0.1 %).
//! min, max, mean and stddev are computed exactly from integer sums, not from buckets.
//! Values above one hour are clamped to one hour and counted in `clamped`.

use hdrhistogram::Histogram;

use crate::measure::clock;
use crate::request::{Class, Op};

/// Significant decimal digits kept by every latency histogram.
pub const SIGFIG: u8 = 3;
/// Largest relative error of a reported percentile (see module docs).
pub const RELATIVE_ERROR: f64 = 1.0 / 1024.0;
/// Smallest distinguishable latency (ns).
pub const LOWEST_NS: u64 = 1;
/// Largest trackable latency: one hour in ns.
pub const HIGHEST_NS: u64 = 3_600 * 1_000_000_000;
/// Number of directions: read, write, trim, sync (fio's order, `Op::dir`).
pub const DIRS: usize = 4;

/// Upper bounds (exclusive, ns) of fio's latency distribution buckets: `latency_ns`
/// (10), `latency_us` (10), `latency_ms` (11 + the open ">=2000" bucket).
pub const LAT_BUCKET_BOUNDS_NS: [u64; 31] = {
    const STEPS: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
    let mut out = [0u64; 31];
    let mut i = 0;
    while i < 10 {
        out[i] = STEPS[i];
        out[10 + i] = STEPS[i] * 1_000;
        out[20 + i] = STEPS[i] * 1_000_000;
        i += 1;
    }
    out[30] = 2_000 * 1_000_000;
    out
};
/// Buckets of the latency distribution: 31 bounded ones and ">=2000 ms".
pub const LAT_BUCKETS: usize = 32;

/// fio's `IO depths` buckets: 1, 2, 4, 8, 16, 32, >=64.
pub const DEPTH_BUCKETS: usize = 7;

/// Recorder setup, decided before the clock starts.
#[derive(Clone, Copy, Debug)]
pub struct RecorderConfig {
    /// Whether the backend has a submission latency worth recording; fio reports
    /// none for synchronous engines (submit returns with the I/O done).
    pub slat: bool,
    /// Length of one interval of the IOPS/bandwidth log.
    pub interval_ns: u64,
    /// Intervals the log can hold: planned runtime plus slack. Completions past
    /// the last interval are counted in `IntervalLog::dropped`.
    pub intervals: usize,
    /// Keep per-class latency (request classes matter under a class-aware
    /// scheduler or when jobs share a device); off saves a histogram record per
    /// request.
    pub classes: bool,
}

/// fio's sampling of the reports' bw/iops lines: each sample averages a
/// window of `bwavgtime` / `iopsavgtime` (whole intervals of the log; 0 = one
/// interval); `disable_bw_measurement` takes no bandwidth samples.
#[derive(Clone, Copy, Debug, Default)]
pub struct SampleWindows {
    pub bw_ns: u64,
    pub iops_ns: u64,
    pub no_bw: bool,
}

impl SampleWindows {
    /// From fio's options (ms).
    pub fn fio(bw_ms: u32, iops_ms: u32, bw_samples: bool) -> SampleWindows {
        SampleWindows {
            bw_ns: u64::from(bw_ms.max(1)) * 1_000_000,
            iops_ns: u64::from(iops_ms.max(1)) * 1_000_000,
            no_bw: !bw_samples,
        }
    }
}

impl RecorderConfig {
    /// One-second intervals covering `planned_runtime_ns` plus 10 % and 10 s of
    /// slack (ramp, shutdown); one hour when the runtime is not known in advance.
    pub fn for_runtime(slat: bool, planned_runtime_ns: Option<u64>) -> RecorderConfig {
        let interval_ns = 1_000_000_000;
        let planned = planned_runtime_ns.unwrap_or(3_600 * interval_ns);
        let with_slack = planned + planned / 10 + 10 * interval_ns;
        RecorderConfig {
            slat,
            interval_ns,
            intervals: with_slack.div_ceil(interval_ns) as usize,
            classes: true,
        }
    }

    /// fio's sampling windows ([`SampleWindows`]): the log's interval
    /// becomes their greatest common divisor, so both are whole numbers of
    /// intervals, over the same span as before.
    pub fn with_windows(mut self, w: &SampleWindows) -> RecorderConfig {
        let gcd = |mut a: u64, mut b: u64| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        };
        let iv = gcd(w.bw_ns, w.iops_ns).max(1);
        let span = self.intervals as u64 * self.interval_ns;
        self.interval_ns = iv;
        self.intervals = span.div_ceil(iv) as usize;
        self
    }
}

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
fn bin_of(v: u64) -> usize {
    let bucket = LEADING_ZERO_BASE - (v | SUB_BUCKET_MASK).leading_zeros();
    ((bucket as usize) << HALF_SUB_BUCKET_BITS) + (v >> bucket) as usize
}

/// The lowest value of bin `i` and the number of values it holds.
fn bin_range(i: usize) -> (u64, u64) {
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
    counts: Box<[u64]>,
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

/// Counters and latencies of one direction.
#[derive(Clone, Debug, Default)]
pub struct DirStats {
    pub slat: LatHist,
    pub clat: LatHist,
    pub lat: LatHist,
    pub total_ios: u64,
    pub io_bytes: u64,
    pub errors: u64,
    /// Completed with fewer bytes than asked.
    pub short_ios: u64,
    /// Issued but never completed (e.g. dropped at shutdown).
    pub drop_ios: u64,
}

impl DirStats {
    fn reset(&mut self) {
        self.slat.reset();
        self.clat.reset();
        self.lat.reset();
        self.total_ios = 0;
        self.io_bytes = 0;
        self.errors = 0;
        self.short_ios = 0;
        self.drop_ios = 0;
    }
    fn merge(&mut self, o: &DirStats) {
        self.slat.merge(&o.slat);
        self.clat.merge(&o.clat);
        self.lat.merge(&o.lat);
        self.total_ios += o.total_ios;
        self.io_bytes += o.io_bytes;
        self.errors += o.errors;
        self.short_ios += o.short_ios;
        self.drop_ios += o.drop_ios;
    }
}

/// Per-class completion latency (study 003), like fio's per-priority `prios[]`.
#[derive(Clone, Debug, Default)]
pub struct ClassStats {
    pub clat: LatHist,
    pub ios: u64,
    pub bytes: u64,
}

/// Completions and bytes per direction in one interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IntervalSlot {
    pub ios: [u64; DIRS],
    pub bytes: [u64; DIRS],
}

/// IOPS and bandwidth over time: fixed-capacity array of intervals.
#[derive(Clone, Debug)]
pub struct IntervalLog {
    start_ns: u64,
    interval_ns: u64,
    slots: Box<[IntervalSlot]>,
    /// Highest slot written + 1.
    used: usize,
    /// Completions that fell past the last slot.
    pub dropped: u64,
    // Cached bounds of the slot last written, so the common case costs no division.
    cur: usize,
    cur_start: u64,
    cur_end: u64,
}

impl IntervalLog {
    fn new(start_ns: u64, interval_ns: u64, intervals: usize) -> IntervalLog {
        let interval_ns = interval_ns.max(1);
        IntervalLog {
            start_ns,
            interval_ns,
            slots: vec![IntervalSlot::default(); intervals.max(1)].into_boxed_slice(),
            used: 0,
            dropped: 0,
            cur: 0,
            cur_start: start_ns,
            cur_end: start_ns + interval_ns,
        }
    }

    #[inline]
    fn add(&mut self, t_ns: u64, dir: usize, bytes: u64) {
        if t_ns < self.cur_start || t_ns >= self.cur_end {
            let idx = (t_ns.saturating_sub(self.start_ns) / self.interval_ns) as usize;
            if idx >= self.slots.len() {
                self.dropped += 1;
                return;
            }
            self.cur = idx;
            self.cur_start = self.start_ns + idx as u64 * self.interval_ns;
            self.cur_end = self.cur_start + self.interval_ns;
        }
        let s = &mut self.slots[self.cur];
        s.ios[dir] += 1;
        s.bytes[dir] += bytes;
        if self.cur >= self.used {
            self.used = self.cur + 1;
        }
    }

    fn reset(&mut self, start_ns: u64) {
        self.slots.fill(IntervalSlot::default());
        self.start_ns = start_ns;
        self.used = 0;
        self.dropped = 0;
        self.cur = 0;
        self.cur_start = start_ns;
        self.cur_end = start_ns + self.interval_ns;
    }

    /// Add `other` slot by slot, aligned on absolute time (to within one interval
    /// when the two logs started at different times).
    fn merge(&mut self, other: &IntervalLog) {
        for (i, s) in other.slots[..other.used].iter().enumerate() {
            let t = other.start_ns + i as u64 * other.interval_ns;
            let idx = (t.saturating_sub(self.start_ns) / self.interval_ns) as usize;
            match self.slots.get_mut(idx) {
                Some(d) => {
                    for k in 0..DIRS {
                        d.ios[k] += s.ios[k];
                        d.bytes[k] += s.bytes[k];
                    }
                    self.used = self.used.max(idx + 1);
                }
                None => self.dropped += s.ios.iter().sum::<u64>(),
            }
        }
        self.dropped += other.dropped;
    }

    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }
    pub fn interval_ns(&self) -> u64 {
        self.interval_ns
    }
    /// The intervals written so far (the last one may be partial).
    pub fn slots(&self) -> &[IntervalSlot] {
        &self.slots[..self.used]
    }
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }
}

/// Everything one worker measures. Create before the clock starts; see module docs.
#[derive(Clone, Debug)]
pub struct Recorder {
    cfg: RecorderConfig,
    /// `[read, write, trim, sync]`, fio's order (`Op::dir`).
    pub dirs: [DirStats; DIRS],
    pub classes: [ClassStats; Class::COUNT],
    /// clat distribution of reads, writes and trims in fio's latency buckets
    /// (`LAT_BUCKET_BOUNDS_NS`), counted exactly.
    pub lat_buckets: [u64; LAT_BUCKETS],
    /// In-flight requests seen at each submission, fio's `IO depths` buckets.
    pub depth: [u64; DEPTH_BUCKETS],
    /// Requests per submit call: 0, 1-4, 5-8, 9-16, 17-32, 33-64, >64.
    pub submit: [u64; DEPTH_BUCKETS],
    /// Completions per reap call, same buckets as `submit`.
    pub complete: [u64; DEPTH_BUCKETS],
    /// First error seen (positive errno), 0 if none.
    pub first_error: i32,
    pub log: IntervalLog,
    /// How the reports sample `log` (`bwavgtime`, `iopsavgtime`).
    pub windows: SampleWindows,
    start_ns: u64,
}

/// One completed request, as the engine hands it over.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub op: Op,
    pub class: Class,
    pub bytes: u32,
    pub slat_ns: u64,
    pub clat_ns: u64,
    pub lat_ns: u64,
    /// When the completion was seen, on the engine clock (drives the interval log).
    pub done_ns: u64,
}

/// Per power of two `k` (values in `[2^k, 2^(k+1))`): how many bounds are at or
/// below `2^k`, and the at most two bounds strictly inside the range (u64::MAX
/// where there are fewer). fio's bounds are at least 4/3 apart, so no binary
/// range holds more than two of them (750 and 1000 share `[512, 1024)`).
const LAT_BUCKET_BY_POW2: [(u64, u64, u64); 64] = {
    let mut out = [(0u64, u64::MAX, u64::MAX); 64];
    let mut k = 0;
    while k < 64 {
        let lo = 1u64 << k;
        let mut below = 0u64;
        let mut inside = [u64::MAX; 2];
        let mut n_inside = 0;
        let mut i = 0;
        while i < LAT_BUCKET_BOUNDS_NS.len() {
            let b = LAT_BUCKET_BOUNDS_NS[i];
            if b <= lo {
                below += 1;
            } else if k == 63 || b < lo << 1 {
                assert!(n_inside < 2, "more than two bounds in one binary range");
                inside[n_inside] = b;
                n_inside += 1;
            }
            i += 1;
        }
        out[k] = (below, inside[0], inside[1]);
        k += 1;
    }
    out
};

/// fio's latency bucket of `ns`: the number of bounds at or below it. One
/// table row picked by the value's highest set bit and two compares, instead
/// of a binary search over 31 bounds on every completion (the search was a
/// third of `Worker::finish` at QD1 on the null device).
#[inline]
fn lat_bucket(ns: u64) -> usize {
    // u64::MAX marks an absent bound; no value may reach it (the top bucket
    // starts at 2 s, so clamping changes no answer).
    let ns = ns.min(u64::MAX - 1);
    let k = 63 - (ns | 1).leading_zeros() as usize;
    let (below, a, b) = LAT_BUCKET_BY_POW2[k];
    below as usize + (ns >= a) as usize + (ns >= b) as usize
}

#[inline]
fn depth_bucket(inflight: u32) -> usize {
    match inflight {
        0..=1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

#[inline]
fn batch_bucket(n: u32) -> usize {
    match n {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

impl Recorder {
    /// Allocate everything; the interval log starts now.
    pub fn new(cfg: RecorderConfig) -> Recorder {
        Recorder::new_at(cfg, clock::now_ns())
    }

    /// Allocate everything; the interval log starts at `start_ns` (engine clock).
    ///
    /// All memory is written once here, so no first touch (a page fault) can
    /// happen inside `record_sample`, whatever the allocator maps lazily;
    /// tests/report_record_cost.rs checks the fault count while recording.
    pub fn new_at(cfg: RecorderConfig, start_ns: u64) -> Recorder {
        let mut r = Recorder {
            cfg,
            dirs: Default::default(),
            classes: Default::default(),
            lat_buckets: [0; LAT_BUCKETS],
            depth: [0; DEPTH_BUCKETS],
            submit: [0; DEPTH_BUCKETS],
            complete: [0; DEPTH_BUCKETS],
            first_error: 0,
            log: IntervalLog::new(start_ns, cfg.interval_ns, cfg.intervals),
            windows: SampleWindows::default(),
            start_ns,
        };
        r.reset(start_ns);
        r
    }

    /// Bytes of memory this recorder holds (histograms and interval log).
    pub fn footprint_bytes(&self) -> usize {
        let hist = |h: &LatHist| h.footprint_bytes();
        let dirs: usize = self
            .dirs
            .iter()
            .map(|d| hist(&d.slat) + hist(&d.clat) + hist(&d.lat))
            .sum();
        let classes: usize = self.classes.iter().map(|c| hist(&c.clat)).sum();
        dirs + classes + self.log.capacity() * std::mem::size_of::<IntervalSlot>()
    }

    pub fn config(&self) -> &RecorderConfig {
        &self.cfg
    }

    /// fio's `unified_rw_reporting` sum: a copy whose read direction holds
    /// reads, writes and trims together (latencies, counts and the interval
    /// log), for the report's `mixed` direction.
    pub fn mixed(&self) -> Recorder {
        let mut m = self.clone();
        let (w, t) = (Op::Write.dir(), Op::Trim.dir());
        let (ws, ts) = (m.dirs[w].clone(), m.dirs[t].clone());
        m.dirs[0].merge(&ws);
        m.dirs[0].merge(&ts);
        for s in m.log.slots.iter_mut() {
            s.ios[0] += s.ios[w] + s.ios[t];
            s.bytes[0] += s.bytes[w] + s.bytes[t];
        }
        m
    }
    /// Start of measurement (after the last `reset`), engine clock.
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    /// Record one completed request: the engine's per-request call.
    #[inline]
    pub fn record_sample(&mut self, s: &Sample) {
        let dir = s.op.dir();
        let d = &mut self.dirs[dir];
        d.total_ios += 1;
        d.io_bytes += s.bytes as u64;
        if self.cfg.slat {
            d.slat.record(s.slat_ns);
        }
        d.clat.record(s.clat_ns);
        d.lat.record(s.lat_ns);
        if dir != Op::Fsync.dir() {
            self.lat_buckets[lat_bucket(s.clat_ns)] += 1;
        }
        if self.cfg.classes {
            let c = &mut self.classes[s.class.index()];
            c.clat.record(s.clat_ns);
            c.ios += 1;
            c.bytes += s.bytes as u64;
        }
        self.log.add(s.done_ns, dir, s.bytes as u64);
    }

    /// Record one completed request without class (no per-class stats) and
    /// timestamped now on the engine clock (a vDSO read, no system call).
    /// Prefer [`Recorder::record_sample`] where the completion time is known.
    #[inline]
    pub fn record(&mut self, op: Op, bytes: u32, slat_ns: u64, clat_ns: u64, lat_ns: u64) {
        let dir = op.dir();
        let d = &mut self.dirs[dir];
        d.total_ios += 1;
        d.io_bytes += bytes as u64;
        if self.cfg.slat {
            d.slat.record(slat_ns);
        }
        d.clat.record(clat_ns);
        d.lat.record(lat_ns);
        if dir != Op::Fsync.dir() {
            self.lat_buckets[lat_bucket(clat_ns)] += 1;
        }
        self.log.add(clock::now_ns(), dir, bytes as u64);
    }

    /// A request that failed with `errno` (positive). It counts in `total_ios`
    /// (it was issued) but not in latencies or bytes.
    #[inline]
    pub fn record_error(&mut self, op: Op, errno: i32) {
        let d = &mut self.dirs[op.dir()];
        d.errors += 1;
        d.total_ios += 1;
        if self.first_error == 0 {
            self.first_error = errno;
        }
    }

    /// A request that transferred fewer bytes than asked (record it as well).
    #[inline]
    pub fn record_short(&mut self, op: Op) {
        self.dirs[op.dir()].short_ios += 1;
    }

    /// Requests issued but abandoned (never completed).
    #[inline]
    pub fn record_dropped(&mut self, op: Op, n: u64) {
        self.dirs[op.dir()].drop_ios += n;
    }

    /// Requests in flight right after a submission (fio's `IO depths`).
    #[inline]
    pub fn note_depth(&mut self, inflight: u32) {
        self.depth[depth_bucket(inflight)] += 1;
    }
    /// `n` requests submitted at the same depth (one submit call's batch).
    #[inline]
    pub fn note_depths(&mut self, inflight: u32, n: u32) {
        self.depth[depth_bucket(inflight)] += n as u64;
    }
    /// Requests handed to the backend by one submit call.
    #[inline]
    pub fn note_submit(&mut self, n: u32) {
        self.submit[batch_bucket(n)] += 1;
    }
    /// Completions returned by one reap call.
    #[inline]
    pub fn note_complete(&mut self, n: u32) {
        self.complete[batch_bucket(n)] += 1;
    }

    /// Forget everything measured so far (end of `ramp_time`); the interval log
    /// restarts at `now_ns`. Touches all preallocated memory, so call it outside
    /// the timed path.
    pub fn reset(&mut self, now_ns: u64) {
        for d in &mut self.dirs {
            d.reset();
        }
        for c in &mut self.classes {
            c.clat.reset();
            c.ios = 0;
            c.bytes = 0;
        }
        self.lat_buckets = [0; LAT_BUCKETS];
        self.depth = [0; DEPTH_BUCKETS];
        self.submit = [0; DEPTH_BUCKETS];
        self.complete = [0; DEPTH_BUCKETS];
        self.first_error = 0;
        self.log.reset(now_ns);
        self.start_ns = now_ns;
    }

    /// Fold `other` in (numjobs, group_reporting): afterwards `self` is what one
    /// recorder would hold had it recorded both streams.
    pub fn merge(&mut self, other: &Recorder) {
        for (d, o) in self.dirs.iter_mut().zip(&other.dirs) {
            d.merge(o);
        }
        for (c, o) in self.classes.iter_mut().zip(&other.classes) {
            c.clat.merge(&o.clat);
            c.ios += o.ios;
            c.bytes += o.bytes;
        }
        for (a, b) in self.lat_buckets.iter_mut().zip(&other.lat_buckets) {
            *a += b;
        }
        for (a, b) in self.depth.iter_mut().zip(&other.depth) {
            *a += b;
        }
        for (a, b) in self.submit.iter_mut().zip(&other.submit) {
            *a += b;
        }
        for (a, b) in self.complete.iter_mut().zip(&other.complete) {
            *a += b;
        }
        if self.first_error == 0 {
            self.first_error = other.first_error;
        }
        self.cfg.slat |= other.cfg.slat;
        self.log.merge(&other.log);
    }

    /// Samples clamped to one hour, over all series.
    pub fn clamped(&self) -> u64 {
        self.dirs
            .iter()
            .map(|d| d.slat.clamped() + d.clat.clamped() + d.lat.clamped())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cfg() -> RecorderConfig {
        RecorderConfig {
            slat: true,
            interval_ns: 1_000,
            intervals: 100,
            classes: true,
        }
    }

    fn sample(op: Op, class: Class, v: u64, t: u64) -> Sample {
        Sample {
            op,
            class,
            bytes: 4096,
            slat_ns: v / 10,
            clat_ns: v,
            lat_ns: v + v / 10,
            done_ns: t,
        }
    }

    /// Exact percentile by fio's/HDR's rank rule: smallest value with at least
    /// ceil(p/100 * n) samples at or below it.
    fn exact(sorted: &[u64], p: f64) -> u64 {
        let rank = ((p / 100.0 * sorted.len() as f64).ceil() as usize).max(1);
        sorted[rank - 1]
    }

    #[test]
    fn histogram_never_resizes_and_clamps_beyond_an_hour() {
        let mut h = LatHist::new();
        assert!(!h.histogram().is_auto_resize());
        let len = h.histogram().distinct_values();
        let bytes = h.footprint_bytes();
        h.record(HIGHEST_NS * 5);
        h.record(0);
        assert_eq!(h.histogram().distinct_values(), len);
        assert_eq!(h.footprint_bytes(), bytes);
        assert_eq!(h.clamped(), 1);
        assert_eq!(h.max(), HIGHEST_NS);
        assert_eq!(h.min(), 0);
    }

    #[test]
    fn known_samples_give_exact_moments_and_bounded_percentiles() {
        let mut h = LatHist::new();
        let vals: Vec<u64> = (1..=10_000u64).map(|i| i * 997).collect();
        for &v in &vals {
            h.record(v);
        }
        assert_eq!(h.count(), 10_000);
        assert_eq!(h.min(), 997);
        assert_eq!(h.max(), 9_970_000);
        let mean = vals.iter().sum::<u64>() as f64 / vals.len() as f64;
        assert!((h.mean() - mean).abs() < 1e-6);
        let var = vals.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / 9_999.0;
        assert!((h.stddev() - var.sqrt()).abs() / var.sqrt() < 1e-9);
        // fio's default percentile list (job::spec::DEFAULT_PERCENTILES; written
        // out here: measure sits below job).
        let list = [
            1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9,
            99.95, 99.99,
        ];
        let got = h.percentiles(&list);
        for w in got.windows(2) {
            assert!(w[0] <= w[1], "percentiles must be ordered: {got:?}");
        }
        for (&p, &g) in list.iter().zip(&got) {
            let e = exact(&vals, p);
            assert!(g >= e, "p{p}: {g} < exact {e}");
            assert!(
                (g - e) as f64 <= e as f64 * RELATIVE_ERROR,
                "p{p}: {g} vs exact {e} beyond the stated bound"
            );
        }
    }

    #[test]
    fn small_values_are_exact() {
        let mut h = LatHist::new();
        for v in [3u64, 5, 7, 1999, 2047] {
            h.record(v);
        }
        assert_eq!(h.percentile(20.0), 3);
        assert_eq!(h.percentile(60.0), 7);
        assert_eq!(h.percentile(100.0), 2047);
    }

    #[test]
    fn stddev_matches_fio_definition() {
        let mut h = LatHist::new();
        for v in [2u64, 4, 4, 4, 5, 5, 7, 9] {
            h.record(v);
        }
        // sample variance: sum sq dev = 32, n-1 = 7
        assert!((h.stddev() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        let mut one = LatHist::new();
        one.record(5);
        assert_eq!(one.stddev(), 0.0);
    }

    #[test]
    fn record_counts_directions_classes_buckets_and_intervals() {
        let mut r = Recorder::new_at(cfg(), 10_000);
        r.record_sample(&sample(Op::Read, Class::Read, 1_500, 10_100));
        r.record_sample(&sample(Op::Read, Class::Readahead, 15, 11_100));
        r.record_sample(&sample(Op::Write, Class::AsyncWrite, 3_000_000, 12_999));
        r.record_sample(&sample(Op::Fsync, Class::SyncWrite, 700, 13_000));
        r.record_error(Op::Write, 5);
        r.record_error(Op::Read, 6);
        assert_eq!(r.dirs[0].total_ios, 3);
        assert_eq!(r.dirs[0].clat.count(), 2);
        assert_eq!(r.dirs[0].io_bytes, 8192);
        assert_eq!(r.dirs[1].errors, 1);
        assert_eq!(r.first_error, 5);
        assert_eq!(r.dirs[Op::Fsync.dir()].lat.count(), 1);
        assert_eq!(r.classes[Class::Readahead.index()].ios, 1);
        // 1500 ns -> "2" us bucket (index 10); 15 ns -> "20" ns (3); 3 ms -> "4" ms (21);
        // the fsync is not in the distribution, like fio.
        assert_eq!(r.lat_buckets[10], 1);
        assert_eq!(r.lat_buckets[3], 1);
        assert_eq!(r.lat_buckets[21], 1);
        assert_eq!(r.lat_buckets.iter().sum::<u64>(), 3);
        let slots = r.log.slots();
        assert_eq!(slots.len(), 4);
        // `[read, write, trim, sync]`: the fsync is the fourth direction.
        assert_eq!(slots[0].ios, [1, 0, 0, 0]);
        assert_eq!(slots[1].ios, [1, 0, 0, 0]);
        assert_eq!(slots[2].ios, [0, 1, 0, 0]);
        assert_eq!(slots[3].ios, [0, 0, 0, 1]);
        r.record_sample(&sample(Op::Read, Class::Read, 1, 10_000 + 1_000 * 100));
        assert_eq!(r.log.dropped, 1);
        r.reset(50_000);
        assert_eq!(r.dirs[0].total_ios, 0);
        assert_eq!(r.dirs[0].clat.count(), 0);
        assert!(r.log.slots().is_empty());
        assert_eq!(r.lat_buckets.iter().sum::<u64>(), 0);
    }

    #[test]
    fn slat_off_for_sync_backends() {
        let mut r = Recorder::new_at(
            RecorderConfig {
                slat: false,
                ..cfg()
            },
            0,
        );
        r.record(Op::Read, 512, 9, 10, 11);
        assert_eq!(r.dirs[0].slat.count(), 0);
        assert_eq!(r.dirs[0].clat.count(), 1);
    }

    #[test]
    fn lat_bucket_table_equals_a_search_over_the_bounds() {
        let search = |ns: u64| LAT_BUCKET_BOUNDS_NS.partition_point(|&b| b <= ns);
        let mut vals = vec![0u64, 1, u64::MAX, u64::MAX - 1, HIGHEST_NS];
        for b in LAT_BUCKET_BOUNDS_NS {
            vals.extend([b - 1, b, b + 1]);
        }
        for k in 0..64 {
            let p = 1u64 << k;
            vals.extend([p - 1, p, p + 1, p | (p >> 1)]);
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Spread over every magnitude, not only the large ones.
            vals.push(x >> (x % 64));
        }
        for v in vals {
            assert_eq!(lat_bucket(v), search(v), "value {v}");
        }
    }

    #[test]
    fn lat_bucket_edges_follow_fio() {
        assert_eq!(lat_bucket(0), 0);
        assert_eq!(lat_bucket(1), 0);
        assert_eq!(lat_bucket(2), 1);
        assert_eq!(lat_bucket(999), 9);
        assert_eq!(lat_bucket(1_000), 10);
        assert_eq!(lat_bucket(999_999), 19);
        assert_eq!(lat_bucket(1_999_999_999), 30);
        assert_eq!(lat_bucket(2_000_000_000), 31);
        assert_eq!(depth_bucket(1), 0);
        assert_eq!(depth_bucket(64), 6);
        assert_eq!(batch_bucket(4), 1);
        assert_eq!(batch_bucket(65), 6);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn merge_equals_recording_everything_in_one(
            a in proptest::collection::vec((0u8..3, 0u8..4, 0u64..5_000_000_000, 0u64..90_000), 0..200),
            b in proptest::collection::vec((0u8..3, 0u8..4, 0u64..5_000_000_000, 0u64..90_000), 0..200),
        ) {
            let ops = [Op::Read, Op::Write, Op::Fsync];
            let mk = |&(o, c, v, t): &(u8, u8, u64, u64)| sample(ops[o as usize], Class::ALL[c as usize], v, t);
            let mut ra = Recorder::new_at(cfg(), 0);
            let mut rb = Recorder::new_at(cfg(), 0);
            let mut all = Recorder::new_at(cfg(), 0);
            for s in a.iter().map(mk) { ra.record_sample(&s); all.record_sample(&s); }
            for s in b.iter().map(mk) { rb.record_sample(&s); all.record_sample(&s); }
            ra.merge(&rb);
            for d in 0..DIRS {
                let (m, e) = (&ra.dirs[d], &all.dirs[d]);
                prop_assert_eq!(m.total_ios, e.total_ios);
                prop_assert_eq!(m.io_bytes, e.io_bytes);
                for (x, y) in [(&m.slat, &e.slat), (&m.clat, &e.clat), (&m.lat, &e.lat)] {
                    prop_assert_eq!(x.count(), y.count());
                    prop_assert_eq!(x.min(), y.min());
                    prop_assert_eq!(x.max(), y.max());
                    prop_assert_eq!(x.mean(), y.mean());
                    prop_assert_eq!(x.stddev(), y.stddev());
                    prop_assert_eq!(x.histogram(), y.histogram());
                }
            }
            for c in 0..Class::COUNT {
                prop_assert_eq!(ra.classes[c].clat.histogram(), all.classes[c].clat.histogram());
            }
            prop_assert_eq!(ra.lat_buckets, all.lat_buckets);
            prop_assert_eq!(ra.log.slots(), all.log.slots());
            prop_assert_eq!(ra.log.dropped, all.log.dropped);
        }
    }

    /// Values over the whole range: every power of two and its neighbours (the
    /// bucket edges) and log-uniform random ones.
    fn spread_values() -> Vec<u64> {
        let mut v: Vec<u64> = (0..42)
            .flat_map(|b| {
                let p = 1u64 << b;
                [p - 1, p, p + 1]
            })
            .filter(|&x| (1..=HIGHEST_NS).contains(&x))
            .collect();
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..100_000 {
            let bits = rng.u32(1..=42);
            v.push(rng.u64(1..(1u64 << bits)).min(HIGHEST_NS));
        }
        v
    }

    #[test]
    fn bin_of_and_bin_range_are_hdrhistograms_index() {
        let hdr = Histogram::<u64>::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGFIG).unwrap();
        let edges = [
            0,
            1,
            2,
            1023,
            1024,
            2046,
            2047,
            2048,
            2049,
            2050,
            4094,
            4095,
            4096,
            4097,
            8191,
            8192,
            1_000_000,
            HIGHEST_NS - 1,
            HIGHEST_NS,
        ];
        let mut last = 0;
        for v in edges.into_iter().chain(spread_values()) {
            let i = bin_of(v);
            let (low, width) = bin_range(i);
            assert_eq!(low, hdr.lowest_equivalent(v), "lowest of {v}");
            assert_eq!(width, hdr.equivalent_range(v), "width of {v}");
            assert!((low..low + width).contains(&v), "{v} outside bin {i}");
            // hdrhistogram's own index of v: the bin its single count lands
            // in (a full scan each, so for the edges and a sample of the rest).
            if edges.contains(&v) || v % 499 == 0 {
                let mut one = Histogram::<u64>::new_from(&hdr);
                one.record(v).unwrap();
                let at: Vec<usize> = one
                    .iter_all()
                    .enumerate()
                    .filter(|(_, x)| x.count_since_last_iteration() > 0)
                    .map(|(k, _)| k)
                    .collect();
                assert_eq!(at, vec![i], "index of {v}");
            }
            if v >= last {
                assert!(i >= bin_of(last), "bins not monotone at {v}");
                last = v;
            }
        }
        assert!(bin_of(HIGHEST_NS) < hdr.distinct_values());
        assert_eq!(bin_range(bin_of(2047)), (2047, 1));
        assert_eq!(bin_range(bin_of(2048)), (2048, 2));
        assert_eq!(bin_range(bin_of(4095)), (4094, 2));
        assert_eq!(bin_range(bin_of(4096)), (4096, 4));
    }

    #[test]
    fn bins_are_hdrhistograms_bins() {
        let vals = spread_values();
        let mut own = LatHist::new();
        let mut hdr = Histogram::<u64>::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGFIG).unwrap();
        assert_eq!(own.counts.len(), hdr.distinct_values());
        for &v in &vals {
            own.record(v);
            hdr.record(v).unwrap();
        }
        // Same bins and counts, total, min and max.
        assert!(own.histogram() == hdr);
        for p in [
            0.0, 0.001, 1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.5, 99.9, 99.99, 100.0,
        ] {
            assert_eq!(
                own.percentile(p),
                hdr.value_at_percentile(p).min(own.max()),
                "p{p}"
            );
        }
        // One value, and one value many times: min and max in the same bin.
        for n in [1, 3] {
            let mut one = LatHist::new();
            let mut h1 = Histogram::<u64>::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGFIG).unwrap();
            for _ in 0..n {
                one.record(123_457);
                h1.record(123_457).unwrap();
            }
            assert!(one.histogram() == h1);
            assert_eq!(one.percentile(50.0), 123_457);
        }
        assert_eq!(LatHist::new().histogram().len(), 0);
    }

    #[test]
    fn merged_bins_are_the_bins_of_all_values() {
        let vals = spread_values();
        let (a, b) = vals.split_at(vals.len() / 3);
        let (mut ha, mut hb, mut all) = (LatHist::new(), LatHist::new(), LatHist::new());
        a.iter().for_each(|&v| ha.record(v));
        b.iter().for_each(|&v| hb.record(v));
        vals.iter().for_each(|&v| all.record(v));
        ha.merge(&hb);
        assert_eq!(ha.counts, all.counts);
        assert!(ha.histogram() == all.histogram());
        assert_eq!(
            ha.percentiles(&[50.0, 99.0]),
            all.percentiles(&[50.0, 99.0])
        );
    }
}
