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

#[derive(Clone, Copy, Debug, Default)]
struct Eval {
    criterion: f64,
    max_deviation: f64,
    slope: f64,
}

/// What the report shows: fio's `steadystate` object.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SteadyReport {
    /// The criterion as fio prints it (`"iops:5.000000%"`).
    pub ss: String,
    /// `ss_dur` in seconds.
    pub duration: u64,
    /// 1 when the criterion was met (and the job ended on it), else 0.
    pub attained: u32,
    /// The criterion's last value (with `%` when relative), as fio prints it.
    pub criterion: String,
    pub max_deviation: f64,
    pub slope: f64,
    pub data: SteadyData,
}

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SteadyData {
    /// Bytes/s, mean of the window.
    pub bw_mean: u64,
    pub iops_mean: u64,
    /// The window's samples, oldest first.
    pub iops: Vec<u64>,
    /// Bytes/s.
    pub bw: Vec<u64>,
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
        let mean = |m| {
            if self.len == 0 {
                0
            } else {
                (self.values(m).sum::<f64>() / self.len as f64) as u64
            }
        };
        SteadyReport {
            ss: self.crit.fio_text(),
            duration: self.iops.len() as u64,
            attained: u32::from(self.attained),
            criterion: criterion_text(self.last.criterion, self.crit.percent),
            max_deviation: self.last.max_deviation,
            slope: self.last.slope,
            data: SteadyData {
                bw_mean: mean(SteadyMetric::Bw),
                iops_mean: mean(SteadyMetric::Iops),
                iops: self.values(SteadyMetric::Iops).map(|v| v as u64).collect(),
                bw: self.values(SteadyMetric::Bw).map(|v| v as u64).collect(),
            },
        }
    }
}

/// The criterion over a window (fio's: the largest deviation from the mean,
/// or the least-squares slope per second; relative to the mean with `%`).
fn evaluate(values: impl Iterator<Item = f64> + Clone, slope: bool, percent: bool) -> Eval {
    let n = values.clone().count() as f64;
    if n == 0.0 {
        return Eval::default();
    }
    let mean = values.clone().sum::<f64>() / n;
    let mut e = Eval::default();
    let raw = if slope {
        let (mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0);
        for (x, y) in values.enumerate() {
            let x = x as f64;
            sx += x;
            sy += y;
            sxx += x * x;
            sxy += x * y;
        }
        let den = n * sxx - sx * sx;
        e.slope = if den == 0.0 {
            0.0
        } else {
            (n * sxy - sx * sy) / den
        };
        e.slope
    } else {
        e.max_deviation = values.map(|y| (y - mean).abs()).fold(0.0, f64::max);
        e.max_deviation
    };
    e.criterion = if percent {
        if mean > 0.0 {
            100.0 * raw / mean
        } else {
            // No I/O at all: nothing is steady yet.
            f64::INFINITY
        }
    } else {
        raw
    };
    e
}

fn criterion_text(c: f64, percent: bool) -> String {
    // A window without I/O has no relative criterion: printed as inf.
    format!("{c:.6}{}", if percent { "%" } else { "" })
}

impl SteadyReport {
    /// fio's text line (`steadystate  : attained=yes, bw=..., iops=..., iops
    /// mean dev=...`), given the bandwidth already formatted by the caller.
    pub fn criterion_label(&self) -> String {
        let (metric, slope) = match self.ss.split_once(':').map(|(k, _)| k) {
            Some(k) => match k.strip_suffix("_slope") {
                Some(m) => (m, true),
                None => (k, false),
            },
            None => ("iops", false),
        };
        let v = self.criterion.trim_end_matches('%');
        let v: f64 = v.parse().unwrap_or(0.0);
        format!(
            "{metric} {}={v:.3}{}",
            if slope { "slope" } else { "mean dev" },
            if self.criterion.ends_with('%') {
                "%"
            } else {
                ""
            }
        )
    }

    /// Several clones of one job reported together (group_reporting): the
    /// windows summed sample by sample and the criterion evaluated on the
    /// sums; attained only when every clone was (each clone ended on its own).
    pub fn merge(reports: &[&SteadyReport]) -> Option<SteadyReport> {
        let first = *reports.first()?;
        let mut out = first.clone();
        if reports.len() == 1 {
            return Some(out);
        }
        for r in &reports[1..] {
            out.attained &= r.attained;
            for (a, b) in out.data.iops.iter_mut().zip(&r.data.iops) {
                *a += b;
            }
            for (a, b) in out.data.bw.iter_mut().zip(&r.data.bw) {
                *a += b;
            }
            out.data.iops_mean += r.data.iops_mean;
            out.data.bw_mean += r.data.bw_mean;
        }
        let kind = out.ss.split_once(':').map_or("", |(k, _)| k);
        let percent = out.ss.ends_with('%');
        let v = if kind.starts_with("bw") {
            &out.data.bw
        } else {
            &out.data.iops
        };
        let e = evaluate(
            v.iter().map(|&x| x as f64),
            kind.ends_with("_slope"),
            percent,
        );
        out.criterion = criterion_text(e.criterion, percent);
        out.max_deviation = e.max_deviation;
        out.slope = e.slope;
        Some(out)
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
    fn a_job_that_did_no_io_is_not_steady_in_percent() {
        let mut d = det("bw", 50.0, true, 2);
        assert_eq!(feed(&mut d, &[0, 0, 0]), None);
        assert_eq!(d.report().criterion, "inf%");
    }
}
