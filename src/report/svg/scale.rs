//! Axis scales: 1-2-5 steps, linear and log ticks, and SI-prefixed labels.

/// The smallest 1, 2 or 5 x 10^k that is >= `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if !raw.is_finite() || raw <= 0.0 {
        return 1.0;
    }
    let exp = raw.log10().floor();
    let base = 10f64.powf(exp);
    let f = raw / base;
    // Tolerance: 2.0000000001 from float noise is still a 2.
    let nf = if f <= 1.0 + 1e-9 {
        1.0
    } else if f <= 2.0 + 1e-9 {
        2.0
    } else if f <= 5.0 + 1e-9 {
        5.0
    } else {
        10.0
    };
    nf * base
}

/// An axis range and where its tick marks go.
#[derive(Clone, Debug, PartialEq)]
pub struct Ticks {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
    /// Linear step (0 for log axes).
    pub step: f64,
    pub values: Vec<f64>,
}

impl Ticks {
    /// Position of `v` as a fraction of the axis (0 at `lo`, 1 at `hi`).
    pub fn frac(&self, v: f64) -> f64 {
        let (a, b, x) = if self.log {
            (self.lo.log10(), self.hi.log10(), v.log10())
        } else {
            (self.lo, self.hi, v)
        };
        let t = if b > a { (x - a) / (b - a) } else { 0.5 };
        if t.is_finite() { t } else { 0.0 }
    }

    /// Tick labels, with one SI prefix and one precision for the whole axis
    /// on linear axes, and per tick on log axes (decades differ in prefix).
    pub fn labels(&self) -> Vec<String> {
        if self.log {
            return self.values.iter().map(|&v| fmt_si_single(v)).collect();
        }
        let max_abs = self.values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let f = SiFmt::new(max_abs, self.step);
        self.values.iter().map(|&v| f.fmt(v)).collect()
    }
}

/// Linear ticks covering [lo, hi] with about `target` 1-2-5 steps; the range
/// is widened to whole steps. Degenerate ranges (one value, non-finite) get a
/// sensible range around the value instead of a zero-width axis.
pub fn linear_ticks(lo: f64, hi: f64, target: usize) -> Ticks {
    let (mut lo, mut hi) = if lo.is_finite() && hi.is_finite() {
        (lo.min(hi), lo.max(hi))
    } else {
        (0.0, 1.0)
    };
    let span = hi - lo;
    if span <= hi.abs().max(lo.abs()) * 1e-12 || span == 0.0 {
        if lo == 0.0 {
            hi = 1.0;
        } else {
            let d = lo.abs() * 0.5;
            lo -= d;
            hi += d;
        }
    }
    let step = nice_step((hi - lo) / target.max(2).saturating_sub(1) as f64);
    let nlo = (lo / step + 1e-9).floor() * step;
    let nhi = (hi / step - 1e-9).ceil() * step;
    let n = ((nhi - nlo) / step).round().max(1.0) as usize;
    let values = (0..=n)
        .map(|i| {
            let v = nlo + i as f64 * step;
            if v.abs() < step * 1e-9 { 0.0 } else { v }
        })
        .collect::<Vec<_>>();
    Ticks {
        lo: nlo,
        hi: nlo + n as f64 * step,
        log: false,
        step,
        values,
    }
}

/// Log ticks over whole decades covering [lo, hi] (both > 0); 2 and 5 marks
/// are added when the axis spans two decades or less, so it never has only two
/// labels.
pub fn log_ticks(lo: f64, hi: f64) -> Ticks {
    let valid = |v: f64| v.is_finite() && v > 0.0;
    let (lo, hi) = match (valid(lo), valid(hi)) {
        (true, true) => (lo.min(hi), lo.max(hi)),
        (true, false) => (lo, lo),
        (false, true) => (hi, hi),
        (false, false) => (1.0, 10.0),
    };
    let dlo = (lo.log10() + 1e-9).floor() as i32;
    let mut dhi = (hi.log10() - 1e-9).ceil() as i32;
    if dhi <= dlo {
        dhi = dlo + 1;
    }
    let mut values = Vec::new();
    for d in dlo..=dhi {
        let base = 10f64.powi(d);
        values.push(base);
        if dhi - dlo <= 2 && d < dhi {
            values.push(2.0 * base);
            values.push(5.0 * base);
        }
    }
    Ticks {
        lo: 10f64.powi(dlo),
        hi: 10f64.powi(dhi),
        log: true,
        step: 0.0,
        values,
    }
}

/// One SI prefix and decimal count for a set of numbers.
struct SiFmt {
    div: f64,
    suffix: &'static str,
    decimals: usize,
}

const PREFIXES: [(f64, &str); 7] = [
    (1e12, "T"),
    (1e9, "G"),
    (1e6, "M"),
    (1e3, "k"),
    (1.0, ""),
    (1e-6, "µ"),
    (1e-9, "n"),
];

fn prefix_for(max_abs: f64) -> (f64, &'static str) {
    // Plain decimals between 0.001 and 1000: "0.25" reads better than "250m"
    // on fraction axes, and "m" would clash with "ms" in axis labels.
    if max_abs == 0.0 || (1e-3..1e3).contains(&max_abs) {
        return (1.0, "");
    }
    for (div, s) in PREFIXES {
        if max_abs >= div {
            return (div, s);
        }
    }
    (1e-9, "n")
}

impl SiFmt {
    fn new(max_abs: f64, step: f64) -> SiFmt {
        let (div, suffix) = prefix_for(max_abs);
        let s = step / div;
        let decimals = if s > 0.0 && s.is_finite() {
            (-(s.log10() + 1e-9).floor()).clamp(0.0, 9.0) as usize
        } else {
            0
        };
        SiFmt {
            div,
            suffix,
            decimals,
        }
    }

    fn fmt(&self, v: f64) -> String {
        if !v.is_finite() {
            return "-".into();
        }
        let s = format!("{:.*}", self.decimals, v / self.div);
        let s = if s
            .trim_start_matches('-')
            .chars()
            .all(|c| c == '0' || c == '.')
        {
            s.trim_start_matches('-').to_string()
        } else {
            s
        };
        if v == 0.0 {
            "0".into()
        } else {
            s + self.suffix
        }
    }
}

/// A single number with an SI prefix and at most 3 significant digits.
pub fn fmt_si_single(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let (div, suffix) = prefix_for(v.abs());
    let x = v / div;
    let decimals = (2 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let mut s = format!("{x:.decimals$}");
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    s + suffix
}
