//! fio's `random_generator=lfsr`: random offsets from fio 3.33's linear
//! feedback shift register over the region's blocks ([`FioLfsr`]), the same
//! blocks in the same order as fio. The register's states below the block
//! count are the blocks, so every block is visited exactly once per pass
//! without a map of what was visited; fio keeps no random map for lfsr, so
//! `norandommap` changes nothing. Each file has its own register, seeded
//! from the job's offset seed (`fio_rand::SLOT_BLOCK`).

use crate::job::JobSpec;
use crate::job::workload_opts::RandomGenerator;

/// Feedback taps of a maximal-length register of each width (3 to 63
/// bits; bit positions counted from 1), the table fio uses.
const TAPS: [&[u8]; 64] = [
    &[],
    &[],
    &[],
    &[3, 2],
    &[4, 3],
    &[5, 3],
    &[6, 5],
    &[7, 6],
    &[8, 6, 5, 4],
    &[9, 5],
    &[10, 7],
    &[11, 9],
    &[12, 6, 4, 1],
    &[13, 4, 3, 1],
    &[14, 5, 3, 1],
    &[15, 14],
    &[16, 15, 13, 4],
    &[17, 14],
    &[18, 11],
    &[19, 6, 2, 1],
    &[20, 17],
    &[21, 19],
    &[22, 21],
    &[23, 18],
    &[24, 23, 22, 17],
    &[25, 22],
    &[26, 6, 2, 1],
    &[27, 5, 2, 1],
    &[28, 25],
    &[29, 27],
    &[30, 6, 4, 1],
    &[31, 28],
    &[32, 31, 29, 1],
    &[33, 20],
    &[34, 27, 2, 1],
    &[35, 33],
    &[36, 25],
    &[37, 5, 4, 3, 2, 1],
    &[38, 6, 5, 1],
    &[39, 35],
    &[40, 38, 21, 19],
    &[41, 38],
    &[42, 41, 20, 19],
    &[43, 42, 38, 37],
    &[44, 43, 18, 17],
    &[45, 44, 42, 41],
    &[46, 45, 26, 25],
    &[47, 42],
    &[48, 47, 21, 20],
    &[49, 40],
    &[50, 49, 24, 23],
    &[51, 50, 36, 35],
    &[52, 49],
    &[53, 52, 38, 37],
    &[54, 53, 18, 17],
    &[55, 31],
    &[56, 55, 35, 34],
    &[57, 50],
    &[58, 39],
    &[59, 58, 38, 37],
    &[60, 59],
    &[61, 60, 46, 45],
    &[62, 61, 6, 5],
    &[63, 62],
];

/// Why a job's lfsr cannot be set up (fio: "failed initializing LFSR").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LfsrError {
    #[error(
        "random_generator=lfsr: {blocks} blocks need a register wider than 63 bits; \
         use a larger bs or random_generator=tausworthe64"
    )]
    TooManyBlocks { blocks: u64 },
    #[error(
        "random_generator=lfsr: seed {seed:#x} puts the {bits}-bit register in its \
         all-ones state, which never changes (fio fails the same job); \
         change the block count (size, bs), the seed (randseed= with \
         randrepeat=0) or random_generator"
    )]
    StuckSeed { seed: u64, bits: u32 },
}

/// fio 3.33's LFSR over `[0, blocks)` (`lib/lfsr.c`): the narrowest register
/// of the tap table wider than the block count, stepped `spin + 1` times per
/// value, states beyond the last block skipped. Plain words: copying it is
/// the generator's undo snapshot; a value costs a few shifts and xors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FioLfsr {
    xormask: u64,
    state: u64,
    /// The register's top bit, set in every state it shifts in.
    top: u64,
    /// The last block.
    max: u64,
    /// Values handed out since the last reset (fio counts a refused call too).
    drawn: u64,
    /// Calls left before a spin that would repeat a sub-cycle takes one extra
    /// step, and the period of that; 0: no such spin. fio sets the count one
    /// higher at creation only, so the first value after creation (not after
    /// a reset) takes one step more.
    cycle_left: u64,
    cycle: u64,
    spin: u32,
    seed: u64,
}

impl FioLfsr {
    /// The register for `blocks` values, seeded with `seed`, stepping
    /// `spin + 1` times per value (fio's jobs use spin 0; at most 15).
    pub fn new(blocks: u64, seed: u64, spin: u32) -> Result<FioLfsr, LfsrError> {
        let bits = (3..64)
            .find(|&i| (1u64 << i) > blocks)
            .ok_or(LfsrError::TooManyBlocks { blocks })?;
        let taps = TAPS[bits as usize];
        let xormask = taps.iter().fold(0u64, |m, &t| m | 1 << (t - 1));
        let top = 1u64 << (taps[0] - 1);
        let spin = spin.min(15);
        // A spin of s takes s + 1 steps per value; when s + 1 shares a factor
        // with the period 2^n - 1, the values would cycle early, so every
        // `cycle` values one more step is taken. The period is split as
        // x * (s + 1) + y to find the first multiple without overflow.
        let period = (top << 1) - 1;
        let k = u64::from(spin) + 1;
        let (x, y) = (period / k, period % k);
        let cycle = (1..k)
            .find(|i| (y * i) % k == 0)
            .map_or(0, |i| x * i + (y * i) / k);
        let mut l = FioLfsr {
            xormask,
            state: 0,
            top,
            max: blocks.wrapping_sub(1),
            drawn: 0,
            cycle_left: cycle + 1,
            cycle,
            spin,
            seed,
        };
        l.reseed(seed)?;
        Ok(l)
    }

    /// Start over from `seed` (fio resets the register whenever it opens the
    /// file: each `loops` pass, and when a time_based job has used every
    /// block). The early-cycle count is left as it stands, as fio leaves it.
    pub fn reseed(&mut self, seed: u64) -> Result<(), LfsrError> {
        let mask = (self.top << 1) - 1;
        if seed & mask == mask {
            return Err(LfsrError::StuckSeed {
                seed,
                bits: mask.count_ones(),
            });
        }
        self.seed = seed;
        self.reset();
        Ok(())
    }

    /// Start over from the seed it has.
    #[inline]
    pub fn reset(&mut self) {
        self.drawn = 0;
        self.state = self.seed & ((self.top << 1) - 1);
    }

    /// Whether every block of this pass has been handed out.
    #[inline]
    pub fn exhausted(&self) -> bool {
        self.drawn > self.max
    }

    /// The next block, or `None` once every block has been handed out.
    #[inline]
    pub fn next_block(&mut self) -> Option<u64> {
        let over = self.exhausted();
        self.drawn += 1;
        if over {
            return None;
        }
        loop {
            let steps = if self.cycle_left != 0 {
                self.cycle_left -= 1;
                if self.cycle_left == 0 {
                    self.cycle_left = self.cycle;
                    // fio's unrolled stepping has no case for 17 steps: a
                    // spin of 15 takes none here.
                    if self.spin >= 15 { 0 } else { self.spin + 2 }
                } else {
                    self.spin + 1
                }
            } else {
                self.spin + 1
            };
            for _ in 0..steps {
                self.step();
            }
            if self.state <= self.max {
                return Some(self.state);
            }
        }
    }

    /// One shift: the low bit leaves, the top bit comes in set, and the taps
    /// flip when the bit that left was 0.
    #[inline(always)]
    fn step(&mut self) {
        let v = self.state;
        let flip = (v & 1).wrapping_sub(1) & self.xormask;
        self.state = ((v >> 1) | self.top) ^ flip;
    }
}

/// The block count of the job's lfsr over a region of `region_len` bytes,
/// `None` where iolab does not take fio's lfsr: any other generator, a
/// distribution other than uniform, zones, `blockalign`, or block sizes
/// other than one size for every direction (fio counts blocks of the
/// smallest size of any direction and places them at the direction's
/// alignment).
pub fn blocks(job: &JobSpec, region_len: u64) -> Option<u64> {
    use crate::job::Direction;
    use crate::job::{BlockSizes, Pattern, RandomDist};
    let trims = matches!(job.rw.dir, Direction::Trim | Direction::TrimWrite);
    let bs = match (&job.bs[0], &job.bs[1], job.trim_bs()) {
        // fio's block count takes the trims' smallest size even where the
        // job does not trim.
        (BlockSizes::Fixed(r), BlockSizes::Fixed(w), t)
            if r == w && t.min() >= *r && (!trims || t == &job.bs[1]) =>
        {
            u64::from(*r)
        }
        _ => return None,
    };
    let on = visits_every_block(job)
        && job.rw.pattern == Pattern::Rand
        && job.random_distribution == RandomDist::Random
        && job.zones.mode == crate::job::zones::ZoneMode::None
        && job.blockalign == [0, 0]
        && job.blockalign_trim.is_none()
        && bs > 0
        && region_len >= bs;
    on.then_some(region_len / bs)
}

/// The job's lfsr over each of `regions` (bytes) can be seeded with
/// `seed` (fio's offset seed of the job): an error naming the option rather
/// than a register that never moves.
pub fn check(job: &JobSpec, regions: &[u64], seed: u64) -> Result<(), LfsrError> {
    for &len in regions {
        if let Some(n) = blocks(job, len) {
            FioLfsr::new(n, seed, 0)?;
        }
    }
    Ok(())
}

/// Whether the job takes fio's lfsr for its random offsets.
pub fn visits_every_block(job: &JobSpec) -> bool {
    job.workload.random_generator == RandomGenerator::Lfsr
}

/// The random map of a `zonemode=strided` job, as fio keeps it: within each
/// visit to a zone, random offsets take every block of the zone's range once
/// before any repeats (a new permutation per visit, and whenever the range
/// has been covered). O(1) space; a draw is one [`super::coverage::Coverage`] step.
#[derive(Clone, Debug)]
pub struct ZoneMap {
    zone: u64,
    n: u64,
    left: u64,
    cover: Option<super::coverage::Coverage>,
}

impl ZoneMap {
    /// For a strided random job with one block size and its random map on
    /// (or lfsr), as the unzoned random map is chosen.
    pub fn for_job(job: &JobSpec, fixed_bs: Option<u64>) -> Option<ZoneMap> {
        use crate::job::zones::ZoneMode;
        let on = job.zones.mode == ZoneMode::Strided
            && job.rw.pattern == crate::job::Pattern::Rand
            && fixed_bs.is_some()
            && (!job.norandommap || visits_every_block(job))
            && job.random_distribution == crate::job::RandomDist::Random
            && job.blockalign == [0, 0];
        on.then_some(ZoneMap {
            zone: u64::MAX,
            n: 0,
            left: 0,
            cover: None,
        })
    }

    /// One of the `n` slots of the zone starting at `zone`.
    #[inline]
    pub fn draw(&mut self, zone: u64, n: u64, rng: &mut fastrand::Rng) -> u64 {
        if zone != self.zone || n != self.n || self.left == 0 || self.cover.is_none() {
            self.zone = zone;
            self.n = n;
            self.left = n;
            self.cover = Some(super::coverage::Coverage::new(n, rng));
        }
        self.left -= 1;
        self.cover
            .as_mut()
            .map_or(0, super::coverage::Coverage::next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every block once per pass, for widths with two and four taps and
    /// counts just below, at and above a power of two.
    #[test]
    fn lfsr_hands_out_every_block_once_per_pass() {
        for n in [7u64, 8, 9, 250, 256, 1000, 4095, 4096, 70_000] {
            let mut l = FioLfsr::new(n, 0xb189_9bed, 0).unwrap();
            for _ in 0..2 {
                let mut seen = vec![false; n as usize];
                while let Some(b) = l.next_block() {
                    assert!(
                        !std::mem::replace(&mut seen[b as usize], true),
                        "{n}: {b} twice"
                    );
                }
                assert!(seen.iter().all(|&s| s), "{n}: a block missed");
                assert!(l.exhausted());
                l.reset();
            }
        }
    }

    /// fio's first value after creation takes one step more than the first
    /// after a reset: the second pass starts one state earlier.
    #[test]
    fn lfsr_first_pass_skips_one_state() {
        let mut l = FioLfsr::new(62, 0xb189_9bed, 0).unwrap();
        let first: Vec<u64> = std::iter::from_fn(|| l.next_block()).collect();
        l.reset();
        let second: Vec<u64> = std::iter::from_fn(|| l.next_block()).collect();
        assert_eq!(first.len(), 62);
        assert_eq!(second.len(), 62);
        assert_eq!(&second[1..], &first[..61]);
        // fio 3.33's first offsets of a 62-block file (bs=16k, thread 1).
        assert_eq!(&first[..3], &[11, 37, 50]);
    }

    #[test]
    fn lfsr_refuses_the_stuck_state_and_too_many_blocks() {
        // 7 blocks take a 3-bit register: a seed ending in 0b111 is stuck.
        assert!(matches!(
            FioLfsr::new(7, 0xf, 0),
            Err(LfsrError::StuckSeed { bits: 3, .. })
        ));
        assert!(FioLfsr::new(7, 0xe, 0).is_ok());
        assert!(matches!(
            FioLfsr::new(u64::MAX, 1, 0),
            Err(LfsrError::TooManyBlocks { .. })
        ));
    }
}
