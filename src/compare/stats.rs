//! The statistics behind a verdict: order statistics of a few rounds,
//! Welch's t-test on the logarithm of per-round values (with the rounds
//! needed for a given power), bootstrap intervals with a fixed-seed RNG, and
//! the bootstrap of a quantile drawn from a latency histogram.
//!
//! Why these: a user has a handful of rounds per side (2 to 10), and a CI
//! gate has to decide from them. Welch's test decides from as few as 2 rounds
//! a side when the rounds agree, and keeps its false-alarm rate when they do
//! not; the latency distributions inside each round give a floor under the
//! spread, so a few rounds that agree by luck do not make it over-confident.
//! With one round a side only the distributions are left: the bootstrap of a
//! quantile over them, which says nothing about run-to-run variation.

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Beta, Distribution, StandardNormal};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Resamples per bootstrap interval: enough for a stable 2.5th percentile
/// (the interval's ends move by well under 1% of their width between seeds).
pub const RESAMPLES: usize = 4000;

/// The quantile `p` (0..=1) of sorted data, interpolated between order
/// statistics (type 7, the default of R and numpy).
pub fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let h = (n - 1) as f64 * p.clamp(0.0, 1.0);
            let lo = h.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
        }
    }
}

pub fn sorted(v: &[f64]) -> Vec<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s
}

pub fn median(v: &[f64]) -> f64 {
    quantile_sorted(&sorted(v), 0.5)
}

/// Five numbers of a side's rounds: its median and spread.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Spread {
    pub min: f64,
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub max: f64,
}

pub fn spread(v: &[f64]) -> Spread {
    let s = sorted(v);
    Spread {
        min: s.first().copied().unwrap_or(f64::NAN),
        q1: quantile_sorted(&s, 0.25),
        median: quantile_sorted(&s, 0.5),
        q3: quantile_sorted(&s, 0.75),
        max: s.last().copied().unwrap_or(f64::NAN),
    }
}

/// Welch's t-test on the logarithm of per-round values, NEW against BASE.
///
/// Why this test: with 2 or 3 rounds a side a rank test cannot reach p < 0.05
/// at all (3 vs 3: its smallest p is 0.1), however far apart the rounds are;
/// the t-test can, because it weighs how far the sides are apart against how
/// much the rounds of each side spread. Why the logarithm: run-to-run noise is
/// multiplicative (a busy neighbour slows a round by a fraction, not by a fixed
/// number of microseconds), the ratio NEW/BASE becomes a difference, and its
/// interval is the interval of the ratio of geometric means. With heavy-tailed
/// noise and outlying rounds the test gets conservative (an outlier inflates
/// the spread more than the difference), which keeps the false-alarm rate at
/// or below alpha; the A/A simulations in `analyze`'s tests check that.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Welch {
    /// exp(mean ln NEW - mean ln BASE): the ratio of geometric means.
    pub ratio: f64,
    /// Its confidence interval.
    pub ci: Interval,
    /// Two-sided p-value.
    pub p: f64,
    /// Welch-Satterthwaite degrees of freedom (NaN when there is no spread).
    pub df: f64,
    /// Standard deviation of ln(value) of each side, at least its floor.
    pub sd_base: f64,
    pub sd_new: f64,
}

/// Mean and sample variance.
fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, var)
}

/// Welch-Satterthwaite degrees of freedom of the difference of two means
/// with variances `va`, `vb` over `na`, `nb` values.
fn welch_df(va: f64, na: f64, vb: f64, nb: f64) -> f64 {
    let (a, b) = (va / na, vb / nb);
    (a + b) * (a + b) / (a * a / (na - 1.0) + b * b / (nb - 1.0))
}

/// The t distribution's quantile `q` at `df` degrees of freedom.
fn t_quantile(df: f64, q: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df).map_or(f64::NAN, |t| t.inverse_cdf(q))
}

/// Welch's test of ln(new) against ln(base), two or more values a side, all
/// positive (else None). `floor_base` and `floor_new` are variances of
/// ln(value) a side's rounds cannot be below (the sampling error of each
/// round's own figure, known from its latency distribution): two or three
/// rounds that happen to agree closely must not make the test over-confident.
pub fn welch_log(
    base: &[f64],
    new: &[f64],
    floor_base: f64,
    floor_new: f64,
    level: f64,
) -> Option<Welch> {
    if base.len() < 2 || new.len() < 2 || base.iter().chain(new).any(|&x| x.is_nan() || x <= 0.0) {
        return None;
    }
    let lb: Vec<f64> = base.iter().map(|x| x.ln()).collect();
    let ln: Vec<f64> = new.iter().map(|x| x.ln()).collect();
    let ((mb, vb), (mn, vn)) = (mean_var(&lb), mean_var(&ln));
    let (vb, vn) = (vb.max(floor_base), vn.max(floor_new));
    let (nb, nn) = (base.len() as f64, new.len() as f64);
    let d = mn - mb;
    let se = (vb / nb + vn / nn).sqrt();
    let (sd_base, sd_new) = (vb.sqrt(), vn.sqrt());
    if se == 0.0 {
        // Every round of each side gave the same value (and no floor is
        // known): the sides differ exactly by d, or not at all.
        return Some(Welch {
            ratio: d.exp(),
            ci: Interval {
                lo: d.exp(),
                hi: d.exp(),
            },
            p: if d == 0.0 { 1.0 } else { 0.0 },
            df: f64::NAN,
            sd_base,
            sd_new,
        });
    }
    let df = welch_df(vb, nb, vn, nn);
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    let p = (2.0 * t.sf(d.abs() / se)).min(1.0);
    let half = t.inverse_cdf(1.0 - (1.0 - level) / 2.0) * se;
    Some(Welch {
        ratio: d.exp(),
        ci: Interval {
            lo: (d - half).exp(),
            hi: (d + half).exp(),
        },
        p,
        df,
        sd_base,
        sd_new,
    })
}

/// Up to this many rounds a side, [`rounds_for_power`] searches.
pub const MAX_ROUNDS: usize = 1000;

/// Rounds a side that Welch's test at `level` needs to show a change of
/// `effect` (in ln units, e.g. ln 1.05 for 5%) with probability `power`, for
/// sides whose ln(value) spread by `sd_base` and `sd_new` per round: the
/// smallest n with effect / se(n) >= t(1 - alpha/2) + t(power). The same n
/// makes an interval around a zero change narrow enough to stay inside
/// +-effect with that probability: what a gate needs to rule a change of that
/// size out. None beyond [`MAX_ROUNDS`] (or for a zero effect).
pub fn rounds_for_power(
    sd_base: f64,
    sd_new: f64,
    effect: f64,
    level: f64,
    power: f64,
) -> Option<usize> {
    let effect = effect.abs();
    if effect.is_nan() || effect <= 0.0 || !sd_base.is_finite() || !sd_new.is_finite() {
        return None;
    }
    let (vb, vn) = (sd_base * sd_base, sd_new * sd_new);
    if vb + vn == 0.0 {
        return Some(2);
    }
    (2..=MAX_ROUNDS).find(|&n| {
        let nf = n as f64;
        let se = ((vb + vn) / nf).sqrt();
        let df = welch_df(vb, nf, vn, nf);
        effect / se >= t_quantile(df, 1.0 - (1.0 - level) / 2.0) + t_quantile(df, power)
    })
}

/// An interval of a ratio NEW / BASE.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    pub fn excludes_one(&self) -> bool {
        self.lo > 1.0 || self.hi < 1.0
    }
}

fn percentile_interval(mut draws: Vec<f64>, level: f64) -> Option<Interval> {
    draws.retain(|r| r.is_finite());
    if draws.len() < RESAMPLES / 2 {
        return None; // mostly division by zero: no ratio to speak of
    }
    draws.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    Some(Interval {
        lo: quantile_sorted(&draws, tail),
        hi: quantile_sorted(&draws, 1.0 - tail),
    })
}

/// A latency distribution of one side: fio's / iolab's json+ bins (value in
/// ns, count), or the percentile list with the sample count.
#[derive(Clone, Debug, PartialEq)]
pub enum LatDist {
    /// (value ns, count), sorted by value.
    Bins(Vec<(f64, u64)>),
    /// (fraction 0..=1, value ns), sorted, with the samples behind them and
    /// the minimum and maximum as the ends.
    Percentiles {
        points: Vec<(f64, f64)>,
        n: u64,
        min: f64,
        max: f64,
    },
}

impl LatDist {
    pub fn n(&self) -> u64 {
        match self {
            LatDist::Bins(b) => b.iter().map(|x| x.1).sum(),
            LatDist::Percentiles { n, .. } => *n,
        }
    }

    /// The value below which a fraction `u` of the samples lie.
    pub fn inv_cdf(&self, u: f64) -> f64 {
        let u = u.clamp(0.0, 1.0);
        match self {
            LatDist::Bins(bins) => {
                let n = self.n() as f64;
                let want = (u * n).ceil().max(1.0);
                let mut cum = 0.0;
                for &(v, c) in bins {
                    cum += c as f64;
                    if cum >= want {
                        return v;
                    }
                }
                bins.last().map_or(f64::NAN, |b| b.0)
            }
            LatDist::Percentiles {
                points, min, max, ..
            } => {
                // Piecewise linear through (0, min), the listed points, (1, max).
                let mut prev = (0.0, *min);
                for &(p, v) in points.iter().chain(std::iter::once(&(1.0, *max))) {
                    if u <= p {
                        if p <= prev.0 {
                            return v;
                        }
                        return prev.1 + (v - prev.1) * (u - prev.0) / (p - prev.0);
                    }
                    prev = (p, v);
                }
                *max
            }
        }
    }

    /// The sampling variance of ln(quantile `p`) estimated from these
    /// samples: the order statistic's rank varies by sqrt(p(1-p)/N) in
    /// fraction, mapped through the distribution's inverse. The floor under a
    /// side's round-to-round spread of a percentile (0 when unknown).
    pub fn quantile_log_var(&self, p: f64) -> f64 {
        let n = self.n() as f64;
        if n < 1.0 {
            return 0.0;
        }
        let su = (p * (1.0 - p) / n).sqrt();
        let (lo, hi) = (self.inv_cdf(p - su), self.inv_cdf(p + su));
        if lo > 0.0 && hi >= lo {
            let half = (hi.ln() - lo.ln()) / 2.0;
            half * half
        } else {
            0.0
        }
    }

    /// The cumulative distribution as (value, fraction) points for a CDF chart.
    pub fn cdf_points(&self) -> Vec<(f64, f64)> {
        match self {
            LatDist::Bins(bins) => {
                let n = self.n() as f64;
                let mut cum = 0.0;
                bins.iter()
                    .map(|&(v, c)| {
                        cum += c as f64;
                        (v, cum / n)
                    })
                    .collect()
            }
            LatDist::Percentiles {
                points, min, max, ..
            } => std::iter::once((*min, 0.0))
                .chain(points.iter().map(|&(p, v)| (v, p)))
                .chain(std::iter::once((*max, 1.0)))
                .collect(),
        }
    }
}

/// Bootstrap interval of quantile_p(b) / quantile_p(a) from two latency
/// distributions. A resample of N values from a distribution has as its
/// quantile the k-th order statistic, k = ceil(pN), which is the distribution's
/// inverse CDF at a Beta(k, N+1-k) draw: so each resample costs one Beta draw
/// per side instead of N.
pub fn bootstrap_quantile_ratio(
    a: &LatDist,
    b: &LatDist,
    p: f64,
    level: f64,
    seed: u64,
) -> Option<Interval> {
    let beta = |d: &LatDist| {
        let n = d.n().max(1) as f64;
        let k = (p * n).ceil().clamp(1.0, n);
        Beta::new(k, n + 1.0 - k).ok()
    };
    let (ba, bb) = (beta(a)?, beta(b)?);
    let mut rng = StdRng::seed_from_u64(seed);
    let draws = (0..RESAMPLES)
        .map(|_| {
            let ua: f64 = ba.sample(&mut rng);
            let ub: f64 = bb.sample(&mut rng);
            b.inv_cdf(ub) / a.inv_cdf(ua)
        })
        .collect();
    percentile_interval(draws, level)
}

/// Interval of mean(b) / mean(a) from each side's mean, standard deviation
/// and sample count (the central limit theorem: with thousands of I/Os a
/// run's mean is normal to a good approximation), drawn with the same seeded
/// generator as the bootstraps.
pub fn mean_ratio_interval(
    a: (f64, f64, u64),
    b: (f64, f64, u64),
    level: f64,
    seed: u64,
) -> Option<Interval> {
    if a.2 == 0 || b.2 == 0 {
        return None;
    }
    let se = |s: (f64, f64, u64)| s.1 / (s.2 as f64).sqrt();
    let (sa, sb) = (se(a), se(b));
    let mut rng = StdRng::seed_from_u64(seed);
    let draws = (0..RESAMPLES)
        .map(|_| {
            let za: f64 = StandardNormal.sample(&mut rng);
            let zb: f64 = StandardNormal.sample(&mut rng);
            (b.0 + zb * sb) / (a.0 + za * sa)
        })
        .collect();
    percentile_interval(draws, level)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate() {
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&s, 0.5), 2.5);
        assert_eq!(quantile_sorted(&s, 0.0), 1.0);
        assert_eq!(quantile_sorted(&s, 1.0), 4.0);
        let sp = spread(&[5.0, 1.0, 3.0]);
        assert_eq!((sp.min, sp.median, sp.max), (1.0, 3.0, 5.0));
    }

    #[test]
    fn t_distribution_matches_tables() {
        // Two-sided 95% critical values of Student's t (any statistics table).
        for (df, crit) in [(1.0, 12.706), (2.0, 4.303), (4.0, 2.776), (10.0, 2.228)] {
            assert!((t_quantile(df, 0.975) - crit).abs() < 1e-3, "df {df}");
        }
        assert!((t_quantile(30.0, 0.8) - 0.854).abs() < 1e-3);
    }

    #[test]
    fn welch_matches_a_hand_computation() {
        // ln values 0, 0.1, 0.2 against 0.3, 0.4, 0.5: d = 0.3, both variances
        // 0.01, se = sqrt(0.02/3) = 0.08165, t = 3.674, df = 4, p = 0.0213.
        let base: Vec<f64> = [0.0f64, 0.1, 0.2].iter().map(|x| x.exp()).collect();
        let new: Vec<f64> = [0.3f64, 0.4, 0.5].iter().map(|x| x.exp()).collect();
        let w = welch_log(&base, &new, 0.0, 0.0, 0.95).unwrap();
        assert!((w.df - 4.0).abs() < 1e-9, "{w:?}");
        assert!((w.p - 0.0213).abs() < 5e-4, "{w:?}");
        assert!((w.ratio - 0.3f64.exp()).abs() < 1e-12);
        // Interval: 0.3 +- 2.776 * 0.08165 = [0.0733, 0.5267] in ln.
        assert!((w.ci.lo - 0.0733f64.exp()).abs() < 1e-3, "{w:?}");
        assert!((w.ci.hi - 0.5267f64.exp()).abs() < 1e-3, "{w:?}");
        // A floor above the rounds' own spread widens the interval.
        let f = welch_log(&base, &new, 0.04, 0.04, 0.95).unwrap();
        assert!(f.p > w.p && f.ci.hi > w.ci.hi, "{f:?}");
        // No spread at all: exactly apart, or exactly the same.
        // (The logarithms' mean may be off by an ulp: a spread of 1e-16.)
        let x = welch_log(&[4.0, 4.0, 4.0], &[6.0, 6.0, 6.0], 0.0, 0.0, 0.95).unwrap();
        assert!(x.p < 1e-20, "{x:?}");
        assert!(
            (x.ci.lo - 1.5).abs() < 1e-9 && (x.ci.hi - 1.5).abs() < 1e-9,
            "{x:?}"
        );
        let same = welch_log(&[4.0, 4.0], &[4.0, 4.0], 0.0, 0.0, 0.95).unwrap();
        assert_eq!(same.p, 1.0);
        // One round, or a zero, is not for this test.
        assert!(welch_log(&[4.0], &[6.0, 6.0], 0.0, 0.0, 0.95).is_none());
        assert!(welch_log(&[0.0, 4.0], &[6.0, 6.0], 0.0, 0.0, 0.95).is_none());
    }

    #[test]
    fn rounds_for_power_grows_with_the_spread() {
        // sd 5% a side, a 10% change: the textbook normal answer is
        // 2 * (1.96 + 0.84)^2 * (0.05/0.0953)^2 = 4.3, the t correction adds a
        // little: 6.
        let n = rounds_for_power(0.05, 0.05, 1.1f64.ln(), 0.95, 0.8).unwrap();
        assert_eq!(n, 6);
        let n2 = rounds_for_power(0.10, 0.10, 1.1f64.ln(), 0.95, 0.8).unwrap();
        assert!(n2 > 3 * n, "{n2}");
        assert_eq!(rounds_for_power(0.0, 0.0, 0.1, 0.95, 0.8), Some(2));
        assert_eq!(rounds_for_power(0.05, 0.05, 0.0, 0.95, 0.8), None);
        assert_eq!(rounds_for_power(2.0, 2.0, 0.001, 0.95, 0.8), None);
    }

    #[test]
    fn quantile_bootstrap_from_bins_and_percentiles() {
        // 10000 samples uniform over 100..=199 ns vs the same shifted by 50%.
        let a = LatDist::Bins((100..200).map(|v| (v as f64, 100)).collect());
        let b = LatDist::Bins((100..200).map(|v| (v as f64 * 1.5, 100)).collect());
        let i = bootstrap_quantile_ratio(&a, &b, 0.5, 0.95, 1).unwrap();
        assert!(i.lo > 1.45 && i.hi < 1.55, "{i:?}");
        let same = bootstrap_quantile_ratio(&a, &a, 0.5, 0.95, 1).unwrap();
        assert!(!same.excludes_one(), "{same:?}");
        let p = LatDist::Percentiles {
            points: vec![(0.5, 150.0), (0.99, 199.0)],
            n: 10_000,
            min: 100.0,
            max: 200.0,
        };
        assert_eq!(p.inv_cdf(0.5), 150.0);
        assert_eq!(p.inv_cdf(0.25), 125.0);
        assert_eq!(a.inv_cdf(0.5), 149.0);
    }
}
