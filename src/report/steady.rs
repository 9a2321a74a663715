//! fio's `steadystate` object (what `engine::steady`'s detector reports) and
//! the window criterion it is judged by, which the detector applies live and
//! the report applies again to the summed windows of clones reported together.

/// The criterion's value over a window, with the statistic behind it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Eval {
    pub criterion: f64,
    pub max_deviation: f64,
    pub slope: f64,
}

/// What the report shows: fio's `steadystate` object.
#[derive(schemars::JsonSchema, Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
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

#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize,
)]
pub struct SteadyData {
    /// Bytes/s, mean of the window.
    pub bw_mean: u64,
    pub iops_mean: u64,
    /// The window's samples, oldest first.
    pub iops: Vec<u64>,
    /// Bytes/s.
    pub bw: Vec<u64>,
}

/// The criterion over a window (fio's: the largest deviation from the mean,
/// or the least-squares slope per second; relative to the mean with `%`).
pub fn evaluate(values: impl Iterator<Item = f64> + Clone, slope: bool, percent: bool) -> Eval {
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

pub fn criterion_text(c: f64, percent: bool) -> String {
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
