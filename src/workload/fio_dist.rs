//! fio 3.33's own `random_distribution` draws for zipf, pareto and normal
//! (gauss): the same blocks, in the same order, as fio gives a job's file.
//!
//! fio keeps one such state per file, shared by the file's reads and writes,
//! over `nranges` blocks of the job's smallest block size, with its own
//! 32-bit Tausworthe generator ([`Taus88`]). Its seed ([`seed`]) is, under
//! fio's default `randrepeat=1`, a hash of the file's name times the job's
//! thread number; otherwise the job's offset seed. A draw is a rank from the
//! distribution's law, scattered by multiplying it with a 64-bit golden-ratio
//! constant, then moved by an offset drawn once at the start (or set by the
//! distribution's center) and folded into the file's blocks.
//!
//! The arithmetic follows fio's step for step in doubles and 64-bit words
//! (the same libm `pow`/`log` calls, the same order of operations, the same
//! wrapping), since a block that differs by one is a different offset. zipf
//! sums its normalising constant over at most ten million ranks, as fio caps
//! it. Everything is computed when the state is built: a draw is a few
//! floating-point operations, no allocation.

use super::fio_rand::{SLOT_BLOCK, SLOTS, Taus88, offsets_repeat};
use crate::job::{JobSpec, RandomDist};

/// fio caps the terms of zipf's normalising sum here (its cost at start).
const ZIPF_MAX_TERMS: u64 = 10_000_000;

/// The multiplier fio scatters ranks with (the golden ratio's 64-bit form).
const GOLDEN_64: u64 = 0x61C8_8646_80B5_83EB;

/// fio divides a 32-bit draw by this (its `FRAND32_MAX`) for zipf and
/// pareto: the largest output, not one more.
const U32_MAX_F: f64 = 4_294_967_295.0;

/// fio's twelve uniform draws averaged for the normal shape.
const GAUSS_TERMS: u64 = 12;

#[derive(Clone, Debug)]
enum Law {
    Zipf {
        zetan: f64,
        /// 1 + 0.5^θ: below it (times zetan) the rank is 2.
        two_below: f64,
        alpha: f64,
        eta: f64,
    },
    Pareto {
        pow: f64,
    },
    Gauss {
        stddev: u32,
    },
}

/// One file's distribution state (fio's `zipf_state` / `gauss_state`).
#[derive(Clone, Debug)]
pub struct FioDist {
    law: Law,
    nranges: u64,
    rng: Taus88,
    rand_off: u64,
    center: Option<f64>,
}

impl FioDist {
    /// The state for `dist` over a region of `region_len` bytes of a job
    /// whose smallest block size is `min_bs`, seeded with `seed`; `None` for
    /// the distributions fio draws otherwise (uniform, zoned).
    pub fn new(dist: &RandomDist, region_len: u64, min_bs: u64, seed: u32) -> Option<FioDist> {
        let nranges = region_len.div_ceil(min_bs.max(1)).max(1);
        let n = nranges as f64;
        let (law, center) = match *dist {
            RandomDist::Zipf { theta, center } => {
                let zeta2 = 1.0f64.powf(theta) + 0.5f64.powf(theta);
                let mut zetan = 0.0f64;
                for i in 0..nranges.min(ZIPF_MAX_TERMS) {
                    zetan += (1.0 / (i + 1) as f64).powf(theta);
                }
                let law = Law::Zipf {
                    zetan,
                    two_below: 1.0 + 0.5f64.powf(theta),
                    alpha: 1.0 / (1.0 - theta),
                    eta: (1.0 - (2.0 / n).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
                };
                (law, center)
            }
            RandomDist::Pareto { h, center } => (
                Law::Pareto {
                    pow: h.ln() / (1.0 - h).ln(),
                },
                center,
            ),
            RandomDist::Normal { dev, center } => {
                let mut stddev = 0u32;
                if dev != 0.0 {
                    // fio keeps the spread in an unsigned int, at most half
                    // the blocks.
                    stddev = c_to_u64((n * dev / 100.0).ceil()) as u32;
                    if u64::from(stddev) > nranges / 2 {
                        stddev = (nranges / 2) as u32;
                    }
                }
                (Law::Gauss { stddev }, center)
            }
            _ => return None,
        };
        let mut d = FioDist {
            law,
            nranges,
            rng: Taus88::new(seed),
            rand_off: 0,
            center,
        };
        d.reseed(seed);
        Some(d)
    }

    /// Start the draws from `seed` (fio seeds once, when the file is set up).
    pub fn reseed(&mut self, seed: u32) {
        self.rng = Taus88::new(seed);
        let n = self.nranges as f64;
        self.rand_off = match (&self.law, self.center) {
            // normal: a shift from the middle, kept in an unsigned int
            // (a center below the middle wraps, as fio's conversion does).
            (Law::Gauss { .. }, None) => 0,
            (Law::Gauss { .. }, Some(c)) => u64::from(c_to_u64(n * (c - 0.5)) as u32),
            // zipf and pareto draw their shift first, whatever the center.
            (_, c) => {
                let drawn = u64::from(self.rng.next_u32());
                c.map_or(drawn, |c| c_to_u64(n * c))
            }
        };
    }

    /// The next block, in `[0, nranges)` (blocks of the job's smallest size).
    #[inline]
    pub fn next_block(&mut self) -> u64 {
        let n = self.nranges;
        let rank = match self.law {
            Law::Zipf {
                zetan,
                two_below,
                alpha,
                eta,
            } => {
                let u = f64::from(self.rng.next_u32()) / U32_MAX_F;
                let z = u * zetan;
                let rank1 = if z < 1.0 {
                    1
                } else if z < two_below {
                    2
                } else {
                    1 + c_to_u64(n as f64 * (eta * u - eta + 1.0).powf(alpha))
                };
                rank1.wrapping_sub(1)
            }
            Law::Pareto { pow } => {
                let u = f64::from(self.rng.next_u32()) / U32_MAX_F;
                c_to_u64((n - 1) as f64 * u.powf(pow))
            }
            Law::Gauss { stddev } => self.gauss_rank(stddev),
        };
        rank.wrapping_mul(GOLDEN_64).wrapping_add(self.rand_off) % n
    }

    /// fio's normal shape: the mean of twelve uniform draws over
    /// `0..=nranges`, rounded up, then moved by a uniform spread of
    /// `stddev` around it (halved until it stays below the end).
    #[inline]
    fn gauss_rank(&mut self, stddev: u32) -> u64 {
        let n = self.nranges;
        let mut sum = 0u64;
        for _ in 0..GAUSS_TERMS {
            sum = sum.wrapping_add(u64::from(self.rng.next_u32()) % n.wrapping_add(1));
        }
        sum = sum.div_ceil(GAUSS_TERMS);
        if stddev != 0 {
            let r = f64::from(self.rng.next_u32());
            let vr = (f64::from(stddev) * (r / 4_294_967_296.0)) as i32;
            // fio subtracts in unsigned int and keeps the result as an int.
            let mut dev = (vr as u32).wrapping_sub(stddev / 2) as i32;
            // (fio would halve forever with the sum at the end and no
            // spread left; the fold below takes it to block 0 instead.)
            while dev != 0 && (dev as i64 as u64).wrapping_add(sum) >= n {
                dev /= 2;
            }
            sum = sum.wrapping_add(dev as i64 as u64);
        }
        sum
    }
}

/// C's double to unsigned 64-bit conversion as x86-64 compilers emit it:
/// values below 2^63 through the signed conversion (a negative value wraps
/// around), larger ones offset by 2^63.
#[inline]
fn c_to_u64(x: f64) -> u64 {
    if x < 9_223_372_036_854_775_808.0 {
        x as i64 as u64
    } else {
        x as u64
    }
}

/// The seed fio gives a file's distribution state: under `randrepeat=1`
/// without `randseed=` the hash of the file's name as fio names it times the
/// job's thread number; otherwise the job's offset seed (its low 32 bits:
/// with `randseed=` under randrepeat=1 that is fio's fixed per-thread one,
/// since fio drops randrepeat only after filling the seeds).
pub fn seed(job: &JobSpec, thread_number: u32, file_name: &[u8], seeds: &[u64; SLOTS]) -> u32 {
    if offsets_repeat(job) && !job.workload.randseed_given {
        jhash(file_name).wrapping_mul(thread_number)
    } else {
        seeds[SLOT_BLOCK] as u32
    }
}

/// Bob Jenkins' hash as fio 3.33 computes it over a name, with an initial
/// value of 0. fio's loop over whole 12-byte blocks adds one byte per word
/// (not four), which this keeps, since the seed depends on it.
pub fn jhash(key: &[u8]) -> u32 {
    let init = 0x61C8_8647u32.wrapping_add(key.len() as u32);
    let (mut a, mut b, mut c) = (init, init, init);
    let mut k = key;
    while k.len() > 12 {
        a = a.wrapping_add(u32::from(k[0]));
        b = b.wrapping_add(u32::from(k[4]));
        c = c.wrapping_add(u32::from(k[8]));
        mix(&mut a, &mut b, &mut c);
        k = &k[12..];
    }
    if k.is_empty() {
        return c;
    }
    let byte = |i: usize, shift: u32| k.get(i).map_or(0, |&v| u32::from(v) << shift);
    c = c
        .wrapping_add(byte(11, 24))
        .wrapping_add(byte(10, 16))
        .wrapping_add(byte(9, 8))
        .wrapping_add(byte(8, 0));
    b = b
        .wrapping_add(byte(7, 24))
        .wrapping_add(byte(6, 16))
        .wrapping_add(byte(5, 8))
        .wrapping_add(byte(4, 0));
    a = a
        .wrapping_add(byte(3, 24))
        .wrapping_add(byte(2, 16))
        .wrapping_add(byte(1, 8))
        .wrapping_add(byte(0, 0));
    finish(&mut a, &mut b, &mut c);
    c
}

fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    for (x, y, z, r) in [
        (0, 2, 1, 4),
        (1, 0, 2, 6),
        (2, 1, 0, 8),
        (0, 2, 1, 16),
        (1, 0, 2, 19),
        (2, 1, 0, 4),
    ] {
        let mut v = [*a, *b, *c];
        // v[x] -= v[y]; v[x] ^= rol(v[y], r); v[y] += v[z]
        v[x] = v[x].wrapping_sub(v[y]) ^ v[y].rotate_left(r);
        v[y] = v[y].wrapping_add(v[z]);
        [*a, *b, *c] = v;
    }
}

fn finish(a: &mut u32, b: &mut u32, c: &mut u32) {
    for (x, y, r) in [
        (2, 1, 14),
        (0, 2, 11),
        (1, 0, 25),
        (2, 1, 16),
        (0, 2, 4),
        (1, 0, 14),
        (2, 1, 24),
    ] {
        let mut v = [*a, *b, *c];
        // v[x] ^= v[y]; v[x] -= rol(v[y], r)
        v[x] = (v[x] ^ v[y]).wrapping_sub(v[y].rotate_left(r));
        [*a, *b, *c] = v;
    }
}

/// `random_distribution=zoned`/`zoned_abs` as fio draws a direction's
/// offsets: a number from 1 to 100 from the job's zone generator picks the
/// zone (by cumulative access share), then fio's uniform offset draw picks a
/// block inside it.
#[derive(Clone, Debug)]
pub struct FioZones {
    /// (cumulative access %, zone start, zone end): percent of the region for
    /// `zoned`, bytes for `zoned_abs`.
    zones: Vec<(u32, u64, u64)>,
    bytes: bool,
}

impl FioZones {
    /// Direction `d`'s zones; `None` for other distributions and for a
    /// direction without zones (fio draws those uniformly).
    pub fn new(dist: &RandomDist, d: usize) -> Option<FioZones> {
        let mut cum = (0u32, 0u64);
        let mut table = |set: &mut dyn Iterator<Item = (u32, u64)>| -> Vec<(u32, u64, u64)> {
            set.map(|(a, size)| {
                let start = cum.1;
                cum = (cum.0 + a, cum.1 + size);
                (cum.0, start, cum.1)
            })
            .collect()
        };
        let (zones, bytes) = match dist {
            RandomDist::Zoned(sets) => (
                table(&mut sets[d.min(1)].iter().map(|&(a, r)| (a, u64::from(r)))),
                false,
            ),
            RandomDist::ZonedAbs(sets) => (table(&mut sets[d.min(1)].iter().copied()), true),
            _ => return None,
        };
        (!zones.is_empty()).then_some(FioZones { zones, bytes })
    }

    /// The next block (of `align` bytes) of a region of `lastb` blocks (fio's
    /// last block), with `v` from 1 to 100 and `draw(n)` fio's uniform draw
    /// of a block of `0..n`.
    #[inline]
    pub fn block(&self, v: u32, lastb: u64, align: u64, draw: impl FnOnce(u64) -> u64) -> u64 {
        let &(_, start, end) = self
            .zones
            .iter()
            .find(|z| v <= z.0)
            .unwrap_or(&self.zones[self.zones.len() - 1]);
        if self.bytes {
            let (first, last) = (start / align.max(1), end / align.max(1));
            first + draw(last.saturating_sub(first))
        } else {
            let first = start * lastb / 100;
            first + draw(lastb * (end - start) / 100)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio 3.33's `jhash(name, strlen(name), 0)` for these names (its
    /// hash.h compiled and run): the empty name, the tail alone, one and
    /// three whole 12-byte blocks before the tail.
    #[test]
    fn name_hash_is_fios() {
        for (name, want) in [
            ("", 1_640_531_527u32),
            ("f", 1_628_577_351),
            ("/tmp/x/file", 3_627_256_907),
            ("/tmp/dt/d/r.0.0", 3_574_637_408),
            ("a-much-longer-file-name-over-24/bytes.0.0", 1_775_387_539),
        ] {
            assert_eq!(jhash(name.as_bytes()), want, "{name:?}");
        }
    }

    fn draws(dist: RandomDist, n: u64) -> Vec<u64> {
        let mut d = FioDist::new(&dist, n * 4096, 4096, 0x1234).unwrap();
        (0..20_000).map(|_| d.next_block()).collect()
    }

    #[test]
    fn blocks_stay_in_the_region_and_repeat() {
        for dist in [
            RandomDist::Zipf {
                theta: 1.2,
                center: None,
            },
            RandomDist::Zipf {
                theta: 0.8,
                center: Some(0.9),
            },
            RandomDist::Pareto {
                h: 0.2,
                center: None,
            },
            RandomDist::Normal {
                dev: 30.0,
                center: Some(0.1),
            },
            RandomDist::Normal {
                dev: 0.0,
                center: None,
            },
        ] {
            let b = draws(dist.clone(), 1000);
            assert!(b.iter().all(|&x| x < 1000), "{dist:?}");
            let mut u = b.clone();
            u.sort_unstable();
            u.dedup();
            // A hot spot: far fewer distinct blocks than draws.
            assert!(u.len() < 1000, "{dist:?}: {}", u.len());
        }
        // One block: every draw is it.
        let b = draws(
            RandomDist::Pareto {
                h: 0.5,
                center: None,
            },
            1,
        );
        assert!(b.iter().all(|&x| x == 0));
    }

    #[test]
    fn uniform_and_zoned_are_not_drawn_here() {
        assert!(FioDist::new(&RandomDist::Random, 1 << 20, 4096, 1).is_none());
    }
}
