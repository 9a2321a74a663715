//! Where random offsets fall (fio's `random_distribution`): zipf, pareto,
//! normal, zoned and zoned_abs pickers over the blocks of a job's region.
//!
//! Everything a picker needs is computed when it is built; picking a block
//! costs a few floating-point operations and no allocation.
//!
//! Shapes, in blocks of the region (`n` of them):
//! - zipf:θ — the block of rank k (1-based) is drawn with probability
//!   k^-θ / Σ i^-θ, exactly for any `n` (rejection-inversion sampling, so no
//!   table of `n` entries is needed).
//! - pareto:h — the hottest fraction x of the blocks gets x^(ln(1-h)/ln h) of
//!   the accesses: h of the blocks take 1-h of them (pareto:0.2 is 80/20).
//! - For both, ranks are scattered over the region by a fixed permutation (so
//!   the hot set is not simply the region's start), unless a center is given:
//!   then rank 1 is the block at `center` and heat falls going up from there,
//!   wrapping at the end.
//! - normal:dev[:center] — Gaussian around `center` (default 0.5) with standard
//!   deviation n·√(1/144 + (dev/100)²): fio's base spread of n/12 (the mean of
//!   twelve uniform draws), widened by `dev`; draws outside the region are
//!   drawn again.
//! - zoned / zoned_abs — a zone is chosen by its access share, then a block
//!   uniformly inside it.

use crate::job::RandomDist;

/// A distribution that cannot be laid over this region.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DistError {
    #[error(
        "random_distribution=zoned_abs: the zones cover {zones} bytes but the job's region is \
         {region} bytes: shrink the zones or give the job a larger size="
    )]
    ZonesBeyondRegion { zones: u64, region: u64 },
}

/// Check that the job's distribution fits a region of `region_len` bytes.
pub fn check(dist: &RandomDist, region_len: u64) -> Result<(), DistError> {
    if let RandomDist::ZonedAbs(sets) = dist {
        for set in sets {
            let zones: u64 = set.iter().map(|z| z.1).sum();
            if zones > region_len {
                return Err(DistError::ZonesBeyondRegion {
                    zones,
                    region: region_len,
                });
            }
        }
    }
    Ok(())
}

/// A bijection of `[0, n)`: an invertible xorshift-multiply mix over the next
/// power of two, walked until it lands inside (fewer than two steps on
/// average, since the power of two is less than `2n`).
#[derive(Clone, Debug)]
pub(crate) struct Scatter {
    n: u64,
    mask: u64,
    shift: u32,
    k1: u64,
    k2: u64,
}

impl Scatter {
    pub(crate) fn new(n: u64, rng: &mut fastrand::Rng) -> Scatter {
        let n = n.max(1);
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let mask = if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        Scatter {
            n,
            mask,
            shift: (bits / 2).max(1),
            k1: rng.u64(..) | 1,
            k2: rng.u64(..) | 1,
        }
    }

    #[inline]
    fn mix(&self, mut y: u64) -> u64 {
        // Each step is invertible on [0, mask]: xor with a right shift, and
        // multiplication by an odd constant modulo a power of two.
        y ^= y >> self.shift;
        y = y.wrapping_mul(self.k1) & self.mask;
        y ^= y >> self.shift;
        y = y.wrapping_mul(self.k2) & self.mask;
        y ^ (y >> self.shift)
    }

    #[inline]
    pub(crate) fn map(&self, x: u64) -> u64 {
        if self.n <= 1 {
            return 0;
        }
        let mut y = self.mix(x);
        while y >= self.n {
            y = self.mix(y);
        }
        y
    }
}

/// Zipf over ranks 1..=n by rejection-inversion (Hörmann and Derflinger,
/// "Rejection-inversion to generate variates from monotone discrete
/// distributions", 1996): invert the integral of x^-θ, accept or retry.
#[derive(Clone, Debug)]
pub(crate) struct Zipf {
    n: f64,
    theta: f64,
    h_x1: f64,
    h_n: f64,
    s: f64,
}

impl Zipf {
    pub(crate) fn new(n: u64, theta: f64) -> Zipf {
        let mut z = Zipf {
            n: n.max(1) as f64,
            theta,
            h_x1: 0.0,
            h_n: 0.0,
            s: 0.0,
        };
        z.h_x1 = z.h_integral(1.5) - 1.0;
        z.h_n = z.h_integral(z.n + 0.5);
        z.s = 2.0 - z.h_integral_inv(z.h_integral(2.5) - z.h(2.0));
        z
    }

    /// x^-θ.
    fn h(&self, x: f64) -> f64 {
        (-self.theta * x.ln()).exp()
    }

    /// ∫ x^-θ: (x^(1-θ) - 1) / (1-θ), written to stay exact near θ = 1.
    fn h_integral(&self, x: f64) -> f64 {
        let lx = x.ln();
        expm1_over_x((1.0 - self.theta) * lx) * lx
    }

    fn h_integral_inv(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.theta)).max(-1.0);
        (log1p_over_x(t) * x).exp()
    }

    /// A rank in 1..=n.
    #[inline]
    pub(crate) fn sample(&self, rng: &mut fastrand::Rng) -> u64 {
        loop {
            let u = self.h_n + rng.f64() * (self.h_x1 - self.h_n);
            let x = self.h_integral_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.s || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0)
    }
}

fn log1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x / 3.0)
    }
}

/// How a rank becomes a block.
#[derive(Clone, Debug)]
pub(crate) enum Place {
    Scatter(Scatter),
    /// Rank 0 at this block, the next ranks above it, wrapping.
    From(u64),
}

impl Place {
    fn new(center: Option<f64>, n: u64, rng: &mut fastrand::Rng) -> Place {
        match center {
            Some(c) => Place::From(((c * n as f64) as u64).min(n.saturating_sub(1))),
            None => Place::Scatter(Scatter::new(n, rng)),
        }
    }

    #[inline]
    fn block(&self, rank: u64, n: u64) -> u64 {
        match self {
            Place::Scatter(s) => s.map(rank),
            Place::From(b) => (b + rank) % n,
        }
    }
}

/// Picks blocks of one direction.
#[derive(Clone, Debug)]
pub(crate) enum Picker {
    Zipf(Zipf, Place),
    Pareto {
        pow: f64,
        place: Place,
    },
    Normal {
        mean: f64,
        std: f64,
    },
    /// Zones as (cumulative access % upper bound, first block, blocks).
    Zoned(Vec<(u32, u64, u64)>),
}

impl Picker {
    /// The picker for direction `d` over `n` blocks of `unit` bytes; `None`
    /// for the uniform distribution (the generator's own).
    pub(crate) fn new(
        dist: &RandomDist,
        d: usize,
        n: u64,
        unit: u64,
        rng: &mut fastrand::Rng,
    ) -> Option<Picker> {
        let n = n.max(1);
        Some(match dist {
            RandomDist::Random => return None,
            RandomDist::Zoned(sets) if sets[d.min(1)].is_empty() => return None,
            RandomDist::ZonedAbs(sets) if sets[d.min(1)].is_empty() => return None,
            RandomDist::Zipf { theta, center } => {
                Picker::Zipf(Zipf::new(n, *theta), Place::new(*center, n, rng))
            }
            RandomDist::Pareto { h, center } => Picker::Pareto {
                pow: h.ln() / (1.0 - h).ln(),
                place: Place::new(*center, n, rng),
            },
            RandomDist::Normal { dev, center } => Picker::Normal {
                mean: center.unwrap_or(0.5) * n as f64,
                std: n as f64 * (1.0 / 144.0 + (dev / 100.0).powi(2)).sqrt(),
            },
            RandomDist::Zoned(sets) => {
                let mut cum_a = 0;
                let mut cum_r = 0u64;
                let zones = sets[d.min(1)]
                    .iter()
                    .map(|&(a, r)| {
                        let start = n * cum_r / 100;
                        cum_r += u64::from(r);
                        let end = n * cum_r / 100;
                        cum_a += a;
                        (cum_a, start.min(n - 1), end.saturating_sub(start).max(1))
                    })
                    .collect();
                Picker::Zoned(zones)
            }
            RandomDist::ZonedAbs(sets) => {
                let mut cum_a = 0;
                let mut cum_b = 0u64;
                let unit = unit.max(1);
                let zones = sets[d.min(1)]
                    .iter()
                    .map(|&(a, bytes)| {
                        let start = (cum_b / unit).min(n - 1);
                        cum_b += bytes;
                        cum_a += a;
                        (cum_a, start, (bytes / unit).clamp(1, n - start))
                    })
                    .collect();
                Picker::Zoned(zones)
            }
        })
    }

    /// A block in `[0, n)`.
    #[inline]
    pub(crate) fn block(&self, n: u64, rng: &mut fastrand::Rng) -> u64 {
        let n = n.max(1);
        match self {
            Picker::Zipf(z, place) => place.block(z.sample(rng) - 1, n),
            Picker::Pareto { pow, place } => {
                // u in (0, 1]: u^pow in (0, 1], rank = floor(n * u^pow).
                let u = 1.0 - rng.f64();
                let rank = ((n as f64) * u.powf(*pow)) as u64;
                place.block(rank.min(n - 1), n)
            }
            Picker::Normal { mean, std } => {
                for _ in 0..16 {
                    // Box-Muller: one standard normal from two uniforms.
                    let u1 = 1.0 - rng.f64();
                    let u2 = rng.f64();
                    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                    let x = mean + std * z;
                    if x >= 0.0 && x < n as f64 {
                        return x as u64;
                    }
                }
                // Sixteen misses in a row: only with a center at an edge and a
                // very wide spread; the nearest edge is where most of them fell.
                (*mean as u64).min(n - 1)
            }
            Picker::Zoned(zones) => {
                let r = rng.u32(0..100);
                let &(_, start, len) = zones
                    .iter()
                    .find(|z| r < z.0)
                    .unwrap_or(&zones[zones.len() - 1]);
                (start + rng.u64(0..len)).min(n - 1)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(p: &Picker, n: u64, draws: usize, seed: u64) -> Vec<u64> {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut c = vec![0u64; n as usize];
        for _ in 0..draws {
            let b = p.block(n, &mut rng);
            assert!(b < n, "block {b} outside [0, {n})");
            c[b as usize] += 1;
        }
        c
    }

    /// Share of the draws that hit the `k` most-hit blocks.
    fn top_share(mut c: Vec<u64>, k: usize) -> f64 {
        let total: u64 = c.iter().sum();
        c.sort_unstable_by(|a, b| b.cmp(a));
        c[..k].iter().sum::<u64>() as f64 / total as f64
    }

    #[test]
    fn scatter_is_a_permutation() {
        for n in [1u64, 2, 3, 5, 100, 1000, 4097] {
            let s = Scatter::new(n, &mut fastrand::Rng::with_seed(n));
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = s.map(x);
                assert!(y < n && !seen[y as usize], "n={n} x={x} y={y}");
                seen[y as usize] = true;
            }
        }
    }

    #[test]
    fn zipf_hot_set_matches_the_analytic_share() {
        let n = 1000u64;
        for theta in [0.5, 0.8, 1.2, 2.0] {
            let p = Picker::new(
                &RandomDist::Zipf {
                    theta,
                    center: None,
                },
                0,
                n,
                4096,
                &mut fastrand::Rng::with_seed(1),
            )
            .unwrap();
            let c = counts(&p, n, 200_000, 7);
            let norm: f64 = (1..=n).map(|i| (i as f64).powf(-theta)).sum();
            for k in [1usize, 10, 100] {
                let want: f64 = (1..=k).map(|i| (i as f64).powf(-theta)).sum::<f64>() / norm;
                let got = top_share(c.clone(), k);
                assert!(
                    (got - want).abs() < 0.01,
                    "theta={theta} top {k}: got {got:.4}, analytic {want:.4}"
                );
            }
        }
    }

    #[test]
    fn zipf_near_one_is_still_exact() {
        let z = Zipf::new(100, 1.0 + 1e-12);
        let mut rng = fastrand::Rng::with_seed(3);
        let ones = (0..100_000).filter(|_| z.sample(&mut rng) == 1).count() as f64 / 1e5;
        let norm: f64 = (1..=100).map(|i| 1.0 / i as f64).sum();
        assert!((ones - 1.0 / norm).abs() < 0.01, "{ones}");
    }

    #[test]
    fn pareto_h_of_blocks_take_one_minus_h() {
        let n = 1000u64;
        for h in [0.1, 0.2, 0.3] {
            let p = Picker::new(
                &RandomDist::Pareto { h, center: None },
                0,
                n,
                4096,
                &mut fastrand::Rng::with_seed(2),
            )
            .unwrap();
            let c = counts(&p, n, 200_000, 11);
            let got = top_share(c, (h * n as f64) as usize);
            assert!((got - (1.0 - h)).abs() < 0.015, "h={h}: top share {got:.4}");
        }
    }

    #[test]
    fn center_puts_the_hottest_block_there() {
        let n = 1000u64;
        let p = Picker::new(
            &RandomDist::Zipf {
                theta: 1.2,
                center: Some(0.25),
            },
            0,
            n,
            4096,
            &mut fastrand::Rng::with_seed(2),
        )
        .unwrap();
        let c = counts(&p, n, 50_000, 5);
        let hottest = (0..n as usize).max_by_key(|&i| c[i]).unwrap();
        assert_eq!(hottest, 250);
        assert!(
            c[251] > c[260] && c[249] < c[251],
            "heat rises from the center up"
        );
    }

    fn normal_draws(center: f64, n: u64) -> Vec<f64> {
        let p = Picker::new(
            &RandomDist::Normal {
                dev: 10.0,
                center: Some(center),
            },
            0,
            n,
            4096,
            &mut fastrand::Rng::with_seed(2),
        )
        .unwrap();
        let mut rng = fastrand::Rng::with_seed(13);
        (0..100_000).map(|_| p.block(n, &mut rng) as f64).collect()
    }

    #[test]
    fn normal_is_a_bell_around_the_center() {
        let n = 10_000u64;
        let want_sd = n as f64 * (1.0f64 / 144.0 + 0.01).sqrt();
        let xs = normal_draws(0.5, n);
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64).sqrt();
        assert!((mean - 5000.0).abs() < 30.0, "mean {mean}");
        assert!((sd / want_sd - 1.0).abs() < 0.03, "sd {sd}, want {want_sd}");
        // Within one sigma: 68.3%.
        let inside = xs.iter().filter(|x| (**x - 5000.0).abs() < want_sd).count();
        assert!((66_500..70_000).contains(&inside), "{inside}");
        // Off-center: the median sits at the center (the draws below block 0,
        // 1% of them, are drawn again, which moves it by under 20 blocks).
        let mut xs = normal_draws(0.3, n);
        xs.sort_unstable_by(|a, b| a.total_cmp(b));
        let median = xs[xs.len() / 2];
        assert!((median - 3000.0).abs() < 50.0, "median {median}");
    }

    #[test]
    fn zoned_shares_land_in_their_zones() {
        let n = 1000u64;
        let dist =
            RandomDist::Zoned([vec![(60, 10), (30, 20), (8, 30), (2, 40)], vec![(100, 100)]]);
        let p = Picker::new(&dist, 0, n, 4096, &mut fastrand::Rng::with_seed(1)).unwrap();
        let c = counts(&p, n, 100_000, 3);
        let sum = |a: usize, b: usize| c[a..b].iter().sum::<u64>() as f64 / 1e5;
        for (got, want) in [
            (sum(0, 100), 0.60),
            (sum(100, 300), 0.30),
            (sum(300, 600), 0.08),
            (sum(600, 1000), 0.02),
        ] {
            assert!((got - want).abs() < 0.01, "zone share {got}, want {want}");
        }
        // Writes have their own set: uniform over the region.
        let w = Picker::new(&dist, 1, n, 4096, &mut fastrand::Rng::with_seed(1)).unwrap();
        let c = counts(&w, n, 100_000, 3);
        let first = c[..100].iter().sum::<u64>() as f64 / 1e5;
        assert!((first - 0.1).abs() < 0.01, "{first}");
    }

    #[test]
    fn zoned_abs_zones_are_byte_ranges() {
        let n = 256u64; // 1 MiB of 4 KiB blocks
        let dist = RandomDist::ZonedAbs([vec![(90, 64 << 10), (10, 960 << 10)], vec![]]);
        let p = Picker::new(&dist, 0, n, 4096, &mut fastrand::Rng::with_seed(1)).unwrap();
        let c = counts(&p, n, 100_000, 3);
        let first = c[..16].iter().sum::<u64>() as f64 / 1e5;
        assert!((first - 0.9).abs() < 0.01, "{first}");
        assert!(check(&dist, 1 << 20).is_ok());
        assert_eq!(
            check(&dist, 512 << 10),
            Err(DistError::ZonesBeyondRegion {
                zones: 1 << 20,
                region: 512 << 10
            })
        );
    }
}
