//! The statistics behind a verdict: order statistics of a few rounds, the
//! exact Mann-Whitney U test, bootstrap intervals with a fixed-seed RNG, and
//! the bootstrap of a quantile drawn from a latency histogram.
//!
//! Why these: a user has a handful of rounds per side (5 is common), which is
//! too few for anything that assumes normal data. The Mann-Whitney U test is
//! exact at any size (its null distribution is enumerated, ties included), so
//! its false-alarm rate is at most alpha whatever the noise looks like; the
//! percentile bootstrap gives the interval a reader wants (a ratio and its
//! range) but is too narrow with few rounds, so a verdict needs both.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Beta, Distribution, StandardNormal};

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

/// A two-sided Mann-Whitney U test of `a` against `b`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct MannWhitney {
    /// U of `b`: how many (a, b) pairs have b above a (ties count one half).
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// Whether `p` is exact (the permutation distribution enumerated) or the
    /// normal approximation with the tie correction (large samples).
    pub exact: bool,
}

/// Up to this many values in all, the null distribution is enumerated.
const EXACT_MAX: usize = 80;

/// Midranks (1-based, ties share their mean rank) of `a` then `b`, doubled so
/// they are integers.
fn doubled_midranks(a: &[f64], b: &[f64]) -> Vec<u64> {
    let mut all: Vec<(f64, usize)> = a.iter().chain(b).copied().zip(0..).collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut ranks = vec![0u64; all.len()];
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        // Ranks i+1 ..= j+1 share their mean; doubled: (i+1)+(j+1).
        let r2 = (i + j + 2) as u64;
        for item in &all[i..=j] {
            ranks[item.1] = r2;
        }
        i = j + 1;
    }
    ranks
}

pub fn mann_whitney(a: &[f64], b: &[f64]) -> MannWhitney {
    let (n, m) = (a.len(), b.len());
    if n == 0 || m == 0 {
        return MannWhitney {
            u: f64::NAN,
            p: 1.0,
            exact: true,
        };
    }
    let ranks = doubled_midranks(a, b);
    let w2: u64 = ranks[n..].iter().sum(); // doubled rank sum of b
    let u = w2 as f64 / 2.0 - (m * (m + 1)) as f64 / 2.0;
    let total = n + m;
    if total <= EXACT_MAX {
        // Count the subsets of m ranks by their (doubled) sum: the
        // permutation distribution of b's rank sum, ties included.
        let smax: u64 = ranks.iter().sum();
        let width = smax as usize + 1;
        let mut ways = vec![0f64; (m + 1) * width];
        ways[0] = 1.0;
        for (i, &r) in ranks.iter().enumerate() {
            let r = r as usize;
            for k in (1..=m.min(i + 1)).rev() {
                let (lo, hi) = ways.split_at_mut(k * width);
                let prev = &lo[(k - 1) * width..];
                let cur = &mut hi[..width];
                for s in (r..width).rev() {
                    cur[s] += prev[s - r];
                }
            }
        }
        let row = &ways[m * width..];
        let all: f64 = row.iter().sum();
        let mean2 = m as f64 * (total + 1) as f64; // E[2W] = m (N+1)
        let obs = (w2 as f64 - mean2).abs();
        let tail: f64 = row
            .iter()
            .enumerate()
            .filter(|&(s, &c)| c > 0.0 && (s as f64 - mean2).abs() >= obs - 1e-9)
            .map(|(_, &c)| c)
            .sum();
        return MannWhitney {
            u,
            p: (tail / all).min(1.0),
            exact: true,
        };
    }
    // Normal approximation with the tie correction and a continuity correction.
    let (nf, mf, tf) = (n as f64, m as f64, total as f64);
    let mut ties = 0.0;
    {
        let all = sorted(&a.iter().chain(b).copied().collect::<Vec<_>>());
        let mut i = 0;
        while i < all.len() {
            let mut j = i;
            while j + 1 < all.len() && all[j + 1] == all[i] {
                j += 1;
            }
            let t = (j - i + 1) as f64;
            ties += t * t * t - t;
            i = j + 1;
        }
    }
    let var = nf * mf / 12.0 * ((tf + 1.0) - ties / (tf * (tf - 1.0)));
    let z = if var > 0.0 {
        ((u - nf * mf / 2.0).abs() - 0.5).max(0.0) / var.sqrt()
    } else {
        0.0
    };
    MannWhitney {
        u,
        p: (2.0 * normal_sf(z)).min(1.0),
        exact: false,
    }
}

/// The smallest two-sided p-value an exact Mann-Whitney test can give with
/// `n` against `m` distinct values: 2 / C(n+m, n). Below alpha, no number of
/// repetitions of this test can show a difference (3 vs 3 rounds: 0.1).
pub fn mann_whitney_min_p(n: usize, m: usize) -> f64 {
    if n == 0 || m == 0 {
        return 1.0;
    }
    let mut c = 1.0f64;
    for i in 0..n.min(m) {
        c = c * (n + m - i) as f64 / (i + 1) as f64;
    }
    (2.0 / c).min(1.0)
}

/// Upper tail of the standard normal (Abramowitz-Stegun 7.1.26 via erfc;
/// absolute error below 1.5e-7, plenty for a p-value).
fn normal_sf(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-x * x).exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    erfc / 2.0
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

/// Percentile-bootstrap interval of median(b) / median(a), each side resampled
/// with replacement, from a generator seeded with `seed` (same data, same
/// interval).
pub fn bootstrap_median_ratio(a: &[f64], b: &[f64], level: f64, seed: u64) -> Option<Interval> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut ra = vec![0.0; a.len()];
    let mut rb = vec![0.0; b.len()];
    let draws = (0..RESAMPLES)
        .map(|_| {
            for x in ra.iter_mut() {
                *x = a[rng.random_range(0..a.len())];
            }
            for x in rb.iter_mut() {
                *x = b[rng.random_range(0..b.len())];
            }
            ra.sort_by(f64::total_cmp);
            rb.sort_by(f64::total_cmp);
            quantile_sorted(&rb, 0.5) / quantile_sorted(&ra, 0.5)
        })
        .collect();
    percentile_interval(draws, level)
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
    fn mann_whitney_exact_matches_known_values() {
        // Complete separation, 5 vs 5: p = 2 / C(10,5) = 2/252.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [6.0, 7.0, 8.0, 9.0, 10.0];
        let t = mann_whitney(&a, &b);
        assert!(t.exact);
        assert!((t.p - 2.0 / 252.0).abs() < 1e-12, "{t:?}");
        assert_eq!(t.u, 25.0);
        assert!((mann_whitney_min_p(5, 5) - 2.0 / 252.0).abs() < 1e-12);
        // One swap at the boundary: U = 24, P(U >= 24 or <= 1) = 4/252.
        let b2 = [5.5, 7.0, 8.0, 9.0, 10.0];
        let a2 = [1.0, 2.0, 3.0, 4.0, 6.0];
        assert!((mann_whitney(&a2, &b2).p - 4.0 / 252.0).abs() < 1e-12);
        // All tied: no evidence at all.
        assert_eq!(mann_whitney(&[3.0; 4], &[3.0; 4]).p, 1.0);
        // 3 vs 3 can never reach 0.05.
        assert!(mann_whitney_min_p(3, 3) > 0.05);
    }

    #[test]
    fn mann_whitney_normal_approximation_agrees_with_exact() {
        // 45 vs 45 (beyond EXACT_MAX): shifted by about one spread.
        let a: Vec<f64> = (0..45).map(|i| (i * 7 % 45) as f64).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 10.0).collect();
        let t = mann_whitney(&a, &b);
        assert!(!t.exact);
        assert!(t.p < 0.05 && t.p > 1e-6, "{t:?}");
        let t0 = mann_whitney(&a, &a);
        assert!(t0.p > 0.9, "{t0:?}");
    }

    #[test]
    fn bootstrap_is_reproducible_and_brackets_the_ratio() {
        let a = [10.0, 10.2, 9.9, 10.1, 10.0];
        let b = [12.0, 12.1, 11.9, 12.2, 12.0];
        let i1 = bootstrap_median_ratio(&a, &b, 0.95, 7).unwrap();
        let i2 = bootstrap_median_ratio(&a, &b, 0.95, 7).unwrap();
        assert_eq!(i1, i2);
        assert!(i1.lo > 1.15 && i1.hi < 1.25, "{i1:?}");
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
