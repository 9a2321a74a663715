//! Steady-state detection (fio's `steadystate`): once a second a stream's
//! IOPS and bandwidth are sampled into a window of `ss_dur` samples; when the
//! window is full and meets the criterion, the stream ends (fio's job ends
//! early, `steadystate.attained` = 1).
//!
//! The worker calls [`Detector::due`] from its refill step (one comparison)
//! and [`Detector::sample`] once a second with the stream's cumulative
//! counts, so nothing is added per request. The window is allocated when the
//! job is set up.

use crate::job::steady::{SteadyCriterion, SteadyMetric, SteadySpec};
use crate::report::steady::{Eval, SteadyData, SteadyReport, criterion_text, evaluate};

const SECOND_NS: u64 = 1_000_000_000;

/// One stream's detector.
#[derive(Debug)]
pub struct Detector {
    crit: SteadyCriterion,
    /// First sample is taken one second after this (start + ramps).
    ramp_ns: u64,
    next_ns: u64,
    /// Counts and time at the previous sample.
    prev: Option<(u64, u64, u64)>,
    /// Ring of (iops, bytes/s), `len` of them valid, `head` the oldest.
    iops: Vec<u64>,
    bw: Vec<u64>,
    head: usize,
    len: usize,
    attained: bool,
    /// The last evaluation (criterion value, max deviation, slope).
    last: Eval,
}

impl Detector {
    /// `None` when the job asks for no detection.
    pub fn new(spec: &SteadySpec, ramp_time_ns: u64) -> Option<Detector> {
        let crit = spec.criterion?;
        let n = spec.duration.as_secs().max(1) as usize;
        Some(Detector {
            crit,
            // Sampling during ramp_time would count the unmeasured ramp as
            // zeros: start after whichever ramp is longer.
            ramp_ns: (spec.ramp.as_nanos() as u64).max(ramp_time_ns),
            next_ns: u64::MAX,
            prev: None,
            iops: vec![0; n],
            bw: vec![0; n],
            head: 0,
            len: 0,
            attained: false,
            last: Eval::default(),
        })
    }

    /// The stream starts at `now`.
    pub fn start(&mut self, now: u64) {
        self.next_ns = now + self.ramp_ns;
        self.prev = None;
        self.len = 0;
        self.head = 0;
        self.attained = false;
    }

    /// Whether a sample is due: the only check made on every refill.
    #[inline]
    pub fn due(&self, now: u64) -> bool {
        now >= self.next_ns
    }

    /// Take a sample from the stream's cumulative `ios` and `bytes` (which may
    /// restart from zero when ramp_time ends). Returns true when the criterion
    /// is attained: the stream should end.
    pub fn sample(&mut self, now: u64, ios: u64, bytes: u64) -> bool {
        self.next_ns = now + SECOND_NS;
        let Some((pi, pb, pt)) = self.prev.replace((ios, bytes, now)) else {
            // The first call only sets the baseline (end of the ramps).
            return false;
        };
        let dt = now.saturating_sub(pt).max(1) as f64;
        // Counts restart at the end of ramp_time: then the delta is the count.
        let di = if ios >= pi { ios - pi } else { ios };
        let db = if bytes >= pb { bytes - pb } else { bytes };
        let cap = self.iops.len();
        let slot = (self.head + self.len) % cap;
        self.iops[slot] = (di as f64 * 1e9 / dt) as u64;
        self.bw[slot] = (db as f64 * 1e9 / dt) as u64;
        if self.len < cap {
            self.len += 1;
        } else {
            self.head = (self.head + 1) % cap;
        }
        self.last = self.evaluate();
        if self.len == cap && self.last.criterion.abs() < self.crit.limit {
            self.attained = true;
            self.next_ns = u64::MAX;
        }
        self.attained
    }

    fn values(&self, m: SteadyMetric) -> impl Iterator<Item = f64> + Clone + '_ {
        let v = match m {
            SteadyMetric::Iops => &self.iops,
            SteadyMetric::Bw => &self.bw,
        };
        (0..self.len).map(move |i| v[(self.head + i) % v.len()] as f64)
    }

    fn evaluate(&self) -> Eval {
        evaluate(
            self.values(self.crit.metric),
            self.crit.slope,
            self.crit.percent,
        )
    }

    pub fn report(&self) -> SteadyReport {
        // fio lists `ss_dur` samples whatever was taken, oldest first, with
        // zeros for the seconds not sampled (a job that ended in its ramp
        // has all zeros), and its means are over that whole list: scripts
        // (fio's steadystate_tests.py) divide by its length.
        let cap = self.iops.len();
        let list = |m| -> Vec<u64> {
            let mut v: Vec<u64> = self.values(m).map(|v| v as u64).collect();
            v.resize(cap, 0);
            v
        };
        let (iops, bw) = (list(SteadyMetric::Iops), list(SteadyMetric::Bw));
        let mean = |v: &[u64]| {
            if v.is_empty() {
                0
            } else {
                v.iter().sum::<u64>() / v.len() as u64
            }
        };
        SteadyReport {
            ss: self.crit.fio_text(),
            duration: cap as u64,
            attained: u32::from(self.attained),
            criterion: criterion_text(self.last.criterion, self.crit.percent),
            max_deviation: self.last.max_deviation,
            slope: self.last.slope,
            data: SteadyData {
                bw_mean: mean(&bw),
                iops_mean: mean(&iops),
                iops,
                bw,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn det(kind: &str, limit: f64, pct: bool, dur: u64) -> Detector {
        let (metric, slope) = match kind {
            "iops" => (SteadyMetric::Iops, false),
            "iops_slope" => (SteadyMetric::Iops, true),
            "bw" => (SteadyMetric::Bw, false),
            _ => (SteadyMetric::Bw, true),
        };
        let spec = SteadySpec {
            criterion: Some(SteadyCriterion {
                metric,
                slope,
                percent: pct,
                limit,
            }),
            duration: Duration::from_secs(dur),
            ramp: Duration::ZERO,
        };
        let mut d = Detector::new(&spec, 0).unwrap();
        d.start(0);
        d
    }

    /// Feed per-second IOPS (4 KiB each); returns at which sample it attained.
    fn feed(d: &mut Detector, per_s: &[u64]) -> Option<usize> {
        let (mut ios, mut t) = (0, 0);
        assert!(!d.sample(t, 0, 0), "baseline");
        for (i, &n) in per_s.iter().enumerate() {
            ios += n;
            t += SECOND_NS;
            assert!(d.due(t));
            if d.sample(t, ios, ios * 4096) {
                return Some(i);
            }
        }
        None
    }

    #[test]
    fn deviation_attains_once_the_window_is_full_and_flat() {
        let mut d = det("iops", 5.0, true, 3);
        // 1000 -> 2000 is far off; then three samples within 2% of their mean.
        assert_eq!(feed(&mut d, &[1000, 2000, 1000, 1010, 990, 1000]), Some(4));
        let r = d.report();
        assert_eq!(r.attained, 1);
        assert_eq!(r.data.iops, vec![1000, 1010, 990]);
        assert_eq!(r.data.iops_mean, 1000);
        assert_eq!(r.data.bw_mean, 1000 * 4096);
        assert!((r.max_deviation - 10.0).abs() < 1e-9);
        assert_eq!(r.criterion, "1.000000%");
        assert_eq!(r.ss, "iops:5.000000%");
        assert_eq!(r.criterion_label(), "iops mean dev=1.000%");
    }

    #[test]
    fn slope_needs_a_flat_trend_and_an_absolute_limit_is_in_units() {
        let mut d = det("iops_slope", 5.0, false, 3);
        // Rising by 100/s never attains a 5 IOPS/s slope limit.
        assert_eq!(feed(&mut d, &[100, 200, 300, 400, 500]), None);
        let r = d.report();
        assert_eq!(r.attained, 0);
        assert!((r.slope - 100.0).abs() < 1e-6, "{}", r.slope);
        assert_eq!(r.criterion, "100.000000");
        let mut d = det("bw_slope", 1.0, true, 2);
        assert_eq!(feed(&mut d, &[500, 500]), Some(1));
    }

    #[test]
    fn clones_merge_into_one_window() {
        let mut a = det("iops", 5.0, true, 2);
        let mut b = det("iops", 5.0, true, 2);
        assert_eq!(feed(&mut a, &[100, 100]), Some(1));
        assert_eq!(feed(&mut b, &[100, 300]), None);
        let (ra, rb) = (a.report(), b.report());
        let m = SteadyReport::merge(&[&ra, &rb]).unwrap();
        assert_eq!(m.attained, 0);
        assert_eq!(m.data.iops, vec![200, 400]);
        assert_eq!(m.data.iops_mean, 300);
        assert!((m.max_deviation - 100.0).abs() < 1e-9);
        assert_eq!(m.criterion, "33.333333%");
    }

    #[test]
    fn an_unfilled_window_is_listed_whole_with_zeros_as_fio_does() {
        // No sample at all (the job ended in its ramp): ss_dur zeros.
        let d = det("iops", 5.0, true, 4);
        let r = d.report();
        assert_eq!(r.data.iops, vec![0; 4]);
        assert_eq!(r.data.bw, vec![0; 4]);
        assert_eq!(r.data.iops_mean, 0);
        // Two of four seconds: the means are over all four, as fio's.
        let mut d = det("iops", 5.0, true, 4);
        assert_eq!(feed(&mut d, &[100, 300]), None);
        let r = d.report();
        assert_eq!(r.data.iops, vec![100, 300, 0, 0]);
        assert_eq!(r.data.iops_mean, 100);
    }

    #[test]
    fn a_job_that_did_no_io_is_not_steady_in_percent() {
        let mut d = det("bw", 50.0, true, 2);
        assert_eq!(feed(&mut d, &[0, 0, 0]), None);
        assert_eq!(d.report().criterion, "inf%");
    }
}
