//! Service-time model of the null device: `lat` (fixed or drawn) + bytes/bw.

use super::options::{LatDist, NullParams};

/// SplitMix64: tiny, fast, and good enough to draw service times and fault
/// decisions reproducibly from a seed (no crate needed for 10 lines).
#[derive(Clone, Debug)]
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    #[inline]
    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    #[inline]
    pub(super) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

pub(super) struct ServiceModel {
    lat_ns: u64,
    bw: u64,
    dist: LatDist,
    rng: Rng,
}

impl ServiceModel {
    pub(super) fn new(p: &NullParams, seed: u64) -> ServiceModel {
        ServiceModel {
            lat_ns: u64::try_from(p.lat.as_nanos()).unwrap_or(u64::MAX),
            bw: p.bw,
            dist: p.dist,
            rng: Rng::new(seed),
        }
    }

    /// Service time of one command of `len` bytes, in ns.
    #[inline]
    pub(super) fn draw(&mut self, len: u32) -> u64 {
        let base = match self.dist {
            LatDist::Fixed => self.lat_ns,
            LatDist::Exp => {
                // Inverse CDF; 1-u is in (0, 1] so ln never sees 0.
                let u = self.rng.next_f64();
                (-(1.0 - u).ln() * self.lat_ns as f64) as u64
            }
            LatDist::Uniform { jitter } => {
                let u = self.rng.next_f64();
                (self.lat_ns as f64 * (1.0 - jitter + 2.0 * jitter * u)) as u64
            }
        };
        base.saturating_add(transfer_ns(len, self.bw))
    }
}

/// Time to move `len` bytes at `bw` bytes/s (0 = infinitely fast), rounded down.
#[inline]
pub(super) fn transfer_ns(len: u32, bw: u64) -> u64 {
    if bw == 0 {
        0
    } else {
        (len as u128 * 1_000_000_000 / bw as u128) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn params(lat_us: u64, dist: LatDist) -> NullParams {
        NullParams {
            lat: Duration::from_micros(lat_us),
            dist,
            ..NullParams::default()
        }
    }

    #[test]
    fn fixed_is_exact_and_bw_adds_bytes_over_bw() {
        let mut m = ServiceModel::new(
            &NullParams {
                bw: 1_000_000_000,
                ..params(10, LatDist::Fixed)
            },
            1,
        );
        assert_eq!(m.draw(0), 10_000);
        assert_eq!(m.draw(4096), 10_000 + 4096);
        assert_eq!(transfer_ns(1 << 20, 2 << 30), 488_281);
    }

    #[test]
    fn exp_mean_and_uniform_bounds_hold() {
        let mut m = ServiceModel::new(&params(100, LatDist::Exp), 7);
        let n = 200_000u64;
        let mean = (0..n).map(|_| m.draw(0)).sum::<u64>() as f64 / n as f64;
        assert!((mean - 100_000.0).abs() < 1_500.0, "exp mean {mean}");

        let mut m = ServiceModel::new(&params(100, LatDist::Uniform { jitter: 0.2 }), 7);
        let v: Vec<u64> = (0..10_000).map(|_| m.draw(0)).collect();
        assert!(v.iter().all(|&x| (80_000..=120_000).contains(&x)));
        assert!(*v.iter().min().unwrap() < 81_000 && *v.iter().max().unwrap() > 119_000);
    }

    #[test]
    fn same_seed_same_draws_other_seed_other_draws() {
        let draws = |seed| {
            let mut m = ServiceModel::new(&params(50, LatDist::Exp), seed);
            (0..64).map(|_| m.draw(512)).collect::<Vec<_>>()
        };
        assert_eq!(draws(3), draws(3));
        assert_ne!(draws(3), draws(4));
    }
}
