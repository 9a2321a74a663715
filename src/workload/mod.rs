//! Request generation: which I/O a job issues next (op, offset, length, class), and
//! when it may issue it (rate limits, think time, end conditions).
//!
//! A [`Generator`] is built once per worker from a [`JobSpec`] and then called per
//! request without allocating.

pub mod buffers;
pub mod verify;

use std::time::Duration;

use crate::job::{BlockSizes, Direction, JobSpec, Pattern, RwSuffix};
use crate::request::{Class, Op};

/// The next I/O a job wants to issue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextIo {
    pub op: Op,
    pub offset: u64,
    pub len: u32,
    pub class: Class,
}

/// Picks block sizes for one direction.
#[derive(Clone, Debug)]
enum BsPicker {
    Fixed(u32),
    /// Uniform multiple of `min` in [min, max].
    Range {
        min: u32,
        steps: u32,
    },
    /// Cumulative percent thresholds (0..100) and sizes.
    Split {
        cum: [u8; 16],
        sizes: [u32; 16],
        n: usize,
    },
}

impl BsPicker {
    fn new(bs: &BlockSizes) -> BsPicker {
        match bs {
            BlockSizes::Fixed(b) => BsPicker::Fixed(*b),
            BlockSizes::Range { min, max } => BsPicker::Range {
                min: *min,
                steps: (max / min).max(1),
            },
            BlockSizes::Split(parts) => {
                let mut cum = [0u8; 16];
                let mut sizes = [0u32; 16];
                let mut acc = 0u32;
                let n = parts.len().min(16);
                for (i, (size, pct)) in parts.iter().take(n).enumerate() {
                    acc += pct;
                    cum[i] = acc.min(100) as u8;
                    sizes[i] = *size;
                }
                // Rounding in the job file must not leave a gap at the top.
                if n > 0 {
                    cum[n - 1] = 100;
                }
                BsPicker::Split { cum, sizes, n }
            }
        }
    }

    #[inline]
    fn pick(&self, rng: &mut fastrand::Rng) -> u32 {
        match self {
            BsPicker::Fixed(b) => *b,
            BsPicker::Range { min, steps } => min * (1 + rng.u32(0..*steps)),
            BsPicker::Split { cum, sizes, n } => {
                let r = rng.u8(0..100);
                let i = cum[..*n].iter().position(|c| r < *c).unwrap_or(n - 1);
                sizes[i]
            }
        }
    }
}

/// A random permutation of `[0, n)` drawn one value at a time without memory:
/// fio's random map (every block once per pass) at O(1) space. A full-period
/// LCG over the next power of two walks every value of `[0, m)` once per period;
/// a bijective xorshift-multiply scramble on top hides the LCG's regular low
/// bits; values `>= n` are skipped (fewer than half, since `m < 2n`).
#[derive(Clone, Debug)]
struct Coverage {
    n: u64,
    mask: u64,
    shift: u32,
    a: u64,
    c: u64,
    k: u64,
    x: u64,
}

impl Coverage {
    fn new(n: u64, rng: &mut fastrand::Rng) -> Coverage {
        let bits = 64 - n.max(2).saturating_sub(1).leading_zeros();
        let mask = if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        Coverage {
            n: n.max(1),
            mask,
            shift: (bits / 2).max(1),
            // Hull-Dobell for a power-of-two modulus: c odd, a = 1 (mod 4).
            a: (rng.u64(..) << 2) | 1,
            c: rng.u64(..) | 1,
            k: rng.u64(..) | 1,
            x: rng.u64(..) & mask,
        }
    }

    #[inline]
    fn next(&mut self) -> u64 {
        loop {
            self.x = self.a.wrapping_mul(self.x).wrapping_add(self.c) & self.mask;
            let mut y = self.x;
            y ^= y >> self.shift;
            y = y.wrapping_mul(self.k) & self.mask;
            y ^= y >> self.shift;
            if y < self.n {
                return y;
            }
        }
    }
}

/// Generates a job's requests. Deterministic for a given seed.
#[derive(Debug)]
pub struct Generator {
    pattern: Pattern,
    dir: Direction,
    rwmixread: u32,
    bs: [BsPicker; 2],
    /// Addressable region [start, start + len) of the target.
    start: u64,
    len: u64,
    /// Random offsets are aligned to this (fio's blockalign = smallest bs).
    align: u64,
    /// Next sequential offset, relative to `start`, per direction (fio keeps one
    /// position per direction too).
    seq_pos: [u64; 2],
    rng: fastrand::Rng,
    /// A new pass over the region began with the last request (fio drops the
    /// page cache at each pass of a buffered job; the engine does the same).
    new_pass: bool,
    /// fio's random map: with one block size, random offsets visit every block
    /// once per pass. `None` with variable sizes (offsets drawn with replacement).
    coverage: Option<Coverage>,
    /// `rw=...:N`: bytes added after each sequential I/O (negative: backwards).
    seq_add: i64,
    /// `rw=rand...:N`: a new random offset every N I/Os (1 = every I/O), and
    /// how many sequential ones are left before the next.
    rand_every: u32,
    rand_run_left: u32,
    /// Where the current random run's next sequential I/O starts (relative).
    rand_run_pos: u64,
    /// Bytes still to issue in this pass (`size`), and passes left (`loops`).
    bytes_left: u64,
    loops_left: u32,
    ios_left: u64,
    time_based: bool,
    /// fsync every N writes.
    fsync_every: u32,
    writes_since_fsync: u32,
    pending_fsync: bool,
    class_override: Option<Class>,
    sync_writes: bool,
    readahead: bool,
}

impl Generator {
    /// `region_len` is the number of bytes the job may address (after `offset`),
    /// resolved by the engine against the real target.
    pub fn new(job: &JobSpec, region_start: u64, region_len: u64, seed: u64) -> Generator {
        let bs = [BsPicker::new(&job.bs[0]), BsPicker::new(&job.bs[1])];
        let align = job.bs[0].min().min(job.bs[1].min()).max(1) as u64;
        let time_based = job.time_based;
        let mut rng = fastrand::Rng::with_seed(seed);
        let fixed = match (&job.bs[0], &job.bs[1]) {
            (BlockSizes::Fixed(r), BlockSizes::Fixed(w)) if r == w => Some(*r as u64),
            _ => None,
        };
        let coverage = match (job.rw.pattern, fixed) {
            (Pattern::Rand, Some(bs)) if region_len >= bs && !job.norandommap => {
                Some(Coverage::new(region_len / bs, &mut rng))
            }
            _ => None,
        };
        Generator {
            pattern: job.rw.pattern,
            dir: job.rw.dir,
            rwmixread: job.rwmixread,
            bs,
            start: region_start,
            len: region_len,
            align,
            seq_pos: [0, 0],
            rng,
            coverage,
            seq_add: match job.rw_suffix {
                RwSuffix::Add(n) => n,
                _ => 0,
            },
            rand_every: match job.rw_suffix {
                RwSuffix::Every(n) => n.max(1),
                _ => 1,
            },
            rand_run_left: 0,
            rand_run_pos: 0,
            new_pass: false,
            bytes_left: region_len,
            loops_left: job.loops.max(1) - 1,
            ios_left: job.number_ios.unwrap_or(u64::MAX),
            time_based,
            fsync_every: job.fsync,
            writes_since_fsync: 0,
            pending_fsync: false,
            class_override: job.ioclass,
            sync_writes: job.sync || job.fsync > 0,
            readahead: job.readahead > 0
                && job.rw.pattern == Pattern::Seq
                && job.rw.dir == Direction::Read,
        }
    }

    /// The next request, or `None` when the job has issued all it should.
    #[inline]
    pub fn next_io(&mut self) -> Option<NextIo> {
        if self.pending_fsync {
            self.pending_fsync = false;
            return Some(NextIo {
                op: Op::Fsync,
                offset: 0,
                len: 0,
                class: Class::SyncWrite,
            });
        }
        if self.ios_left == 0 {
            return None;
        }
        if self.bytes_left == 0 {
            if self.time_based {
                self.bytes_left = self.len;
            } else if self.loops_left > 0 {
                self.loops_left -= 1;
                self.bytes_left = self.len;
                self.seq_pos = [0, 0];
            } else {
                return None;
            }
            self.new_pass = true;
        }
        let op = match self.dir {
            Direction::Read => Op::Read,
            Direction::Write => Op::Write,
            Direction::Mixed => {
                if self.rng.u32(0..100) < self.rwmixread {
                    Op::Read
                } else {
                    Op::Write
                }
            }
        };
        let d = op.dir();
        let mut len = self.bs[d].pick(&mut self.rng) as u64;
        len = len.min(self.len.max(1));
        let rel = match self.pattern {
            Pattern::Seq => {
                if self.seq_pos[d].saturating_add(len) > self.len {
                    // Wrap like fio does when a sequential job runs past the end
                    // (a backwards job wraps to the last whole block).
                    self.seq_pos[d] = if self.seq_add < 0 {
                        (self.len - len) / self.align * self.align
                    } else {
                        0
                    };
                }
                let o = self.seq_pos[d];
                // The next one starts after this one plus the hole (`rw=read:8k`),
                // or before it (`rw=read:-8k`); before the start wraps to the end.
                let next = o as i128 + len as i128 + self.seq_add as i128;
                self.seq_pos[d] = if next < 0 { u64::MAX } else { next as u64 };
                o
            }
            Pattern::Rand if self.rand_run_left > 0 && self.rand_run_pos + len <= self.len => {
                self.rand_run_left -= 1;
                let o = self.rand_run_pos;
                self.rand_run_pos += len;
                o
            }
            Pattern::Rand => {
                let o = match &mut self.coverage {
                    Some(c) => c.next() * len,
                    None => {
                        let slots = (self.len - len) / self.align + 1;
                        self.rng.u64(0..slots) * self.align
                    }
                };
                self.rand_run_left = self.rand_every - 1;
                self.rand_run_pos = o + len;
                o
            }
        };
        // A hole (`rw=read:8k`) uses up the region as an I/O does: a pass ends
        // when the offsets reach the end, as in fio (1m at bs=4k with 8k holes is
        // 86 reads, not 256).
        let hole = if self.pattern == Pattern::Seq {
            self.seq_add.max(0) as u64
        } else {
            0
        };
        self.bytes_left = self.bytes_left.saturating_sub(len + hole);
        self.ios_left -= 1;
        if op == Op::Write && self.fsync_every > 0 {
            self.writes_since_fsync += 1;
            if self.writes_since_fsync == self.fsync_every {
                self.writes_since_fsync = 0;
                self.pending_fsync = true;
            }
        }
        Some(NextIo {
            op,
            offset: self.start + rel,
            len: len as u32,
            class: self.class_of(op),
        })
    }

    /// Whether a new pass over the region started since the last call.
    #[inline]
    pub fn take_new_pass(&mut self) -> bool {
        std::mem::take(&mut self.new_pass)
    }

    fn class_of(&self, op: Op) -> Class {
        if let Some(c) = self.class_override {
            return c;
        }
        match op {
            Op::Read if self.readahead => Class::Readahead,
            Op::Read => Class::Read,
            Op::Write if self.sync_writes => Class::SyncWrite,
            Op::Write => Class::AsyncWrite,
            Op::Fsync => Class::SyncWrite,
        }
    }
}

/// When a job may issue its next request: `rate_iops` and `thinktime`.
#[derive(Debug, Clone)]
pub struct Pacer {
    /// Minimum spacing between issues per direction (ns); 0 = unpaced.
    interval_ns: [u64; 2],
    next_ns: [u64; 2],
    think_ns: u64,
    think_blocks: u32,
    since_think: u32,
    /// Earliest time the next request may go after think time.
    think_until: u64,
}

impl Pacer {
    pub fn new(job: &JobSpec, start_ns: u64) -> Pacer {
        let iv = |r: u64| 1_000_000_000u64.checked_div(r).unwrap_or(0);
        Pacer {
            interval_ns: [iv(job.rate_iops[0]), iv(job.rate_iops[1])],
            next_ns: [start_ns, start_ns],
            think_ns: dur_ns(job.thinktime),
            think_blocks: job.thinktime_blocks.max(1),
            since_think: 0,
            think_until: 0,
        }
    }

    /// Start pacing afresh at `start_ns` (when the worker's clock starts).
    pub fn restart(&mut self, start_ns: u64) {
        self.next_ns = [start_ns, start_ns];
        self.since_think = 0;
        self.think_until = 0;
    }

    /// Is pacing in effect at all? (Lets the engine skip the clock checks.)
    pub fn active(&self) -> bool {
        self.interval_ns != [0, 0] || self.think_ns != 0
    }

    /// Earliest time a request in direction `d` may be issued.
    #[inline]
    pub fn due_at(&self, d: usize) -> u64 {
        let rate = if d < 2 { self.next_ns[d] } else { 0 };
        rate.max(self.think_until)
    }

    /// Record that a request in direction `d` was issued at `now`.
    #[inline]
    pub fn issued(&mut self, d: usize, now: u64) {
        if d < 2 && self.interval_ns[d] != 0 {
            // Keep a fixed cadence (like fio's rate), but never bank more than one
            // interval of credit after a stall.
            let next = self.next_ns[d] + self.interval_ns[d];
            self.next_ns[d] = next.max(now.saturating_sub(self.interval_ns[d]));
        }
    }

    /// Record a completion at `now`: fio's think time starts when an I/O completes.
    #[inline]
    pub fn completed(&mut self, now: u64) {
        if self.think_ns == 0 {
            return;
        }
        self.since_think += 1;
        if self.since_think >= self.think_blocks {
            self.since_think = 0;
            self.think_until = now + self.think_ns;
        }
    }
}

pub fn dur_ns(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::RwMode;

    fn job(pattern: Pattern, dir: Direction) -> JobSpec {
        JobSpec {
            rw: RwMode { pattern, dir },
            ..JobSpec::default()
        }
    }

    #[test]
    fn sequential_read_covers_region_once_then_stops() {
        let j = job(Pattern::Seq, Direction::Read);
        let mut g = Generator::new(&j, 8192, 64 * 1024, 1);
        let offs: Vec<u64> = std::iter::from_fn(|| g.next_io())
            .map(|n| n.offset)
            .collect();
        assert_eq!(offs.len(), 16);
        assert_eq!(offs[0], 8192);
        assert_eq!(offs[15], 8192 + 15 * 4096);
    }

    #[test]
    fn random_offsets_stay_aligned_and_inside() {
        let mut j = job(Pattern::Rand, Direction::Read);
        j.bs = [
            BlockSizes::Range {
                min: 512,
                max: 8192,
            },
            BlockSizes::Fixed(4096),
        ];
        let mut g = Generator::new(&j, 4096, 1 << 20, 7);
        let mut n = 0;
        while let Some(io) = g.next_io() {
            assert_eq!(io.offset % 512, 0);
            assert!(io.offset >= 4096 && io.offset + io.len as u64 <= 4096 + (1 << 20));
            assert!(io.len >= 512 && io.len <= 8192 && io.len % 512 == 0);
            n += 1;
        }
        assert!(n > 100);
    }

    fn offsets(j: &JobSpec, start: u64, len: u64) -> Vec<u64> {
        let mut g = Generator::new(j, start, len, 3);
        std::iter::from_fn(|| g.next_io())
            .map(|n| n.offset)
            .collect()
    }

    #[test]
    fn rw_suffix_leaves_holes_or_goes_backwards() {
        // rw=read:8k with bs=4k: 4k read, 8k hole, ...; 64k of I/O over a 1m region.
        let mut j = job(Pattern::Seq, Direction::Read);
        j.rw_suffix = RwSuffix::Add(8192);
        j.size = Some(64 * 1024);
        let o = offsets(&j, 4096, 1 << 20);
        assert_eq!(&o[..4], &[4096, 4096 + 12288, 4096 + 24576, 4096 + 36864]);
        // The holes use up the region: one pass over 1m is 86 reads (fio 3.33's
        // count for the same job), each inside the region.
        let o = offsets(&j, 0, 1 << 20);
        assert_eq!(o.len(), 86);
        assert!(o.iter().all(|&x| x + 4096 <= 1 << 20), "{o:?}");
        // rw=read:-8k: each read starts 4k below the last; the first wraps from 0
        // to the region's last block, then walks down.
        j.rw_suffix = RwSuffix::Add(-8192);
        let o = offsets(&j, 0, 64 * 1024);
        assert_eq!(o.len(), 16);
        assert_eq!(o[0], 0);
        assert_eq!(o[1], 60 * 1024);
        for w in o[1..].windows(2) {
            assert_eq!(w[0] - w[1], 4096, "backwards by one block: {o:?}");
        }
    }

    #[test]
    fn random_suffix_runs_sequentially_between_random_offsets() {
        let mut j = job(Pattern::Rand, Direction::Read);
        j.rw_suffix = RwSuffix::Every(4);
        let o = offsets(&j, 0, 1 << 20);
        let runs = o
            .chunks(4)
            .filter(|c| c.len() == 4 && c.windows(2).all(|w| w[1] == w[0] + 4096))
            .count();
        // A run is cut short only where it would leave the region.
        assert!(
            runs * 4 >= o.len() * 9 / 10,
            "{runs} runs of 4 in {} I/Os",
            o.len()
        );
        assert!(
            o.windows(2).any(|w| w[1] != w[0] + 4096),
            "still random between runs"
        );
    }

    #[test]
    fn norandommap_draws_with_replacement() {
        let mut j = job(Pattern::Rand, Direction::Read);
        let mut o = offsets(&j, 0, 1 << 20);
        o.sort_unstable();
        o.dedup();
        assert_eq!(o.len(), 256, "the random map visits every block once");
        j.norandommap = true;
        let mut o = offsets(&j, 0, 1 << 20);
        assert_eq!(o.len(), 256);
        o.sort_unstable();
        o.dedup();
        // 256 draws from 256 blocks leave about 256/e blocks unvisited.
        assert!(o.len() < 200, "{} distinct blocks of 256 draws", o.len());
    }

    #[test]
    fn random_map_visits_every_block_once_per_pass() {
        for blocks in [1u64, 2, 3, 7, 64, 1000, 4097] {
            let j = job(Pattern::Rand, Direction::Read);
            let mut g = Generator::new(&j, 0, blocks * 4096, blocks);
            let mut seen = vec![false; blocks as usize];
            let mut n = 0;
            while let Some(io) = g.next_io() {
                let b = (io.offset / 4096) as usize;
                assert!(!seen[b], "block {b} of {blocks} visited twice");
                seen[b] = true;
                n += 1;
            }
            assert_eq!(n, blocks);
        }
        // Not the identity: a permutation that looks random.
        let j = job(Pattern::Rand, Direction::Read);
        let mut g = Generator::new(&j, 0, 1000 * 4096, 5);
        let first: Vec<u64> = (0..10)
            .map(|_| g.next_io().unwrap().offset / 4096)
            .collect();
        assert_ne!(first, (0..10).collect::<Vec<_>>());
        assert!(
            first.windows(2).any(|w| w[0] % 2 == w[1] % 2),
            "parity must not simply alternate: {first:?}"
        );
    }

    #[test]
    fn same_seed_same_sequence() {
        let j = job(Pattern::Rand, Direction::Mixed);
        let a: Vec<_> = {
            let mut g = Generator::new(&j, 0, 1 << 20, 42);
            std::iter::from_fn(|| g.next_io()).collect()
        };
        let b: Vec<_> = {
            let mut g = Generator::new(&j, 0, 1 << 20, 42);
            std::iter::from_fn(|| g.next_io()).collect()
        };
        assert_eq!(a, b);
    }

    #[test]
    fn rwmix_is_respected_roughly() {
        let mut j = job(Pattern::Rand, Direction::Mixed);
        j.rwmixread = 70;
        j.number_ios = Some(10_000);
        j.time_based = true;
        let mut g = Generator::new(&j, 0, 1 << 20, 3);
        let reads = std::iter::from_fn(|| g.next_io())
            .filter(|n| n.op == Op::Read)
            .count();
        assert!((6500..7500).contains(&reads), "reads={reads}");
    }

    #[test]
    fn fsync_every_n_writes_and_classes() {
        let mut j = job(Pattern::Seq, Direction::Write);
        j.fsync = 2;
        let mut g = Generator::new(&j, 0, 4 * 4096, 1);
        let ops: Vec<_> = std::iter::from_fn(|| g.next_io()).collect();
        let kinds: Vec<Op> = ops.iter().map(|n| n.op).collect();
        assert_eq!(
            kinds,
            [
                Op::Write,
                Op::Write,
                Op::Fsync,
                Op::Write,
                Op::Write,
                Op::Fsync
            ]
        );
        assert!(ops.iter().all(|n| n.class == Class::SyncWrite));
        let j = job(Pattern::Seq, Direction::Write);
        let mut g = Generator::new(&j, 0, 4096, 1);
        assert_eq!(g.next_io().unwrap().class, Class::AsyncWrite);
    }

    #[test]
    fn readahead_marks_sequential_reads() {
        let mut j = job(Pattern::Seq, Direction::Read);
        j.readahead = 256 << 10;
        let mut g = Generator::new(&j, 0, 1 << 20, 1);
        assert_eq!(g.next_io().unwrap().class, Class::Readahead);
    }

    #[test]
    fn loops_and_number_ios_bound_the_job() {
        let mut j = job(Pattern::Seq, Direction::Read);
        j.loops = 3;
        let mut g = Generator::new(&j, 0, 4 * 4096, 1);
        assert_eq!(std::iter::from_fn(|| g.next_io()).count(), 12);
        j.number_ios = Some(5);
        let mut g = Generator::new(&j, 0, 4 * 4096, 1);
        assert_eq!(std::iter::from_fn(|| g.next_io()).count(), 5);
    }

    #[test]
    fn bssplit_picks_only_listed_sizes_in_proportion() {
        let mut j = job(Pattern::Rand, Direction::Read);
        j.bs[0] = BlockSizes::Split(vec![(4096, 75), (65536, 25)]);
        j.number_ios = Some(8000);
        j.time_based = true;
        let mut g = Generator::new(&j, 0, 1 << 24, 9);
        let small = std::iter::from_fn(|| g.next_io())
            .filter(|n| {
                assert!(n.len == 4096 || n.len == 65536);
                n.len == 4096
            })
            .count();
        assert!((5600..6400).contains(&small), "small={small}");
    }

    #[test]
    fn pacer_spaces_issues_and_think_time() {
        let mut j = job(Pattern::Rand, Direction::Read);
        j.rate_iops = [1000, 0];
        let mut p = Pacer::new(&j, 0);
        assert_eq!(p.due_at(0), 0);
        p.issued(0, 0);
        assert_eq!(p.due_at(0), 1_000_000);
        j.rate_iops = [0, 0];
        j.thinktime = Duration::from_micros(50);
        let mut p = Pacer::new(&j, 0);
        p.completed(10);
        assert_eq!(p.due_at(0), 50_010);
    }
}
