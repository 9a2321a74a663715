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

//!
//! `hist` holds one latency series, `buckets` fio's fixed distributions,
//! `interval` the log over time; this file is the recorder that fills them.

mod buckets;
mod hist;
mod interval;
mod prio;

use crate::measure::clock;
use crate::request::{Class, Op};

pub use buckets::{DEPTH_BUCKETS, LAT_BUCKET_BOUNDS_NS, LAT_BUCKETS};
pub use hist::{HIGHEST_NS, LOWEST_NS, LatHist, RELATIVE_ERROR, SIGFIG};
pub use interval::{IntervalLog, IntervalSlot};
pub use prio::PrioStats;

use buckets::{batch_bucket, depth_bucket, lat_bucket};

/// Number of directions: read, write, trim, sync (fio's order, `Op::dir`).
pub const DIRS: usize = 4;

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
    /// Latency per I/O priority (jobs with command priorities only).
    pub prios: Option<Box<PrioStats>>,
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
            prios: None,
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
        if let Some(p) = m.prios.as_deref_mut() {
            p.mixed();
        }
        m
    }

    /// One measured request's latency under the priority it was issued
    /// with (one branch when the job keeps no per-priority latencies).
    #[inline]
    pub fn record_prio(&mut self, op: Op, ioprio: u16, clat_ns: u64, lat_ns: u64) {
        if let Some(p) = self.prios.as_deref_mut() {
            p.record(op, ioprio, clat_ns, lat_ns);
        }
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
        if let Some(p) = self.prios.as_deref_mut() {
            p.reset();
        }
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
        match (self.prios.as_deref_mut(), other.prios.as_deref()) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.prios = Some(Box::new(b.clone())),
            _ => {}
        }
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
mod tests;
