//! Request generation: which I/O a job issues next (op, offset, length, class), and
//! when it may issue it (rate limits, think time, end conditions).
//!
//! A [`Generator`] is built once per worker from a [`JobSpec`] and then called per
//! request without allocating.

pub mod buffers;
pub mod dedupe;
pub mod distribution;
pub mod lfsr;
pub mod replay;
pub mod thinktime;
pub mod verify;
pub mod verify_block;
pub mod verify_digest;
pub mod verify_dump;
pub mod zones;

use std::time::Duration;

use crate::job::{BlockSizes, Direction, JobSpec, Pattern, RandomDist, RwSuffix};
use crate::request::{Class, Op};
use distribution::Picker;

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

    /// A size of at most `room` bytes, drawn as [`Self::pick`] draws but
    /// among the sizes that fit (fio draws again until one fits); `None` when
    /// none does. A fixed size is returned as it is: fio does not fit it.
    #[cold]
    fn pick_within(&self, room: u64, rng: &mut fastrand::Rng) -> Option<u32> {
        match self {
            BsPicker::Fixed(b) => Some(*b),
            BsPicker::Range { min, steps } => {
                let fit = (room / u64::from(*min)).min(u64::from(*steps)) as u32;
                (fit > 0).then(|| min * (1 + rng.u32(0..fit)))
            }
            BsPicker::Split { cum, sizes, n } => {
                // The percentages of the sizes that fit, drawn among themselves.
                let mut pct = [0u8; 16];
                let mut prev = 0;
                for i in 0..*n {
                    if u64::from(sizes[i]) <= room {
                        pct[i] = cum[i] - prev;
                    }
                    prev = cum[i];
                }
                let total: u32 = pct[..*n].iter().map(|&p| u32::from(p)).sum();
                if total == 0 {
                    // Only sizes listed at 0% (or none) fit: the smallest that does.
                    return sizes[..*n]
                        .iter()
                        .copied()
                        .filter(|&z| u64::from(z) <= room)
                        .min();
                }
                let mut r = rng.u32(0..total);
                for i in 0..*n {
                    if r < u32::from(pct[i]) {
                        return Some(sizes[i]);
                    }
                    r -= u32::from(pct[i]);
                }
                None
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
pub(crate) struct Coverage {
    n: u64,
    mask: u64,
    shift: u32,
    a: u64,
    c: u64,
    k: u64,
    x: u64,
}

impl Coverage {
    pub(crate) fn new(n: u64, rng: &mut fastrand::Rng) -> Coverage {
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

    #[inline(always)]
    pub(crate) fn next(&mut self) -> u64 {
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
    /// Random offsets are aligned to this per direction (fio's blockalign;
    /// by default the smallest block size).
    align: [u64; 2],
    /// `random_distribution` other than uniform, per direction, over blocks of
    /// `align` bytes.
    pick: [Option<Picker>; 2],
    /// `percentage_random` per direction; the rest continue sequentially
    /// from where the direction's last I/O ended (`last_end`).
    pct_random: [u32; 2],
    last_end: [u64; 2],
    /// fio's job loop: a job runs passes over its region (fio's `do_io`); a
    /// pass ends when its offsets run out, when it issued `pass_limit` bytes
    /// (`size`), or when the job issued `issue_limit` bytes in all
    /// (`io_size` or `size`, times `loops`). `loops` passes always start;
    /// more follow while fewer than `once_limit` bytes (`io_size` or `size`)
    /// are done (fio's `keep_running`). Counts are of bytes issued.
    pass: Passes,
    /// Where the file or device ends, from `start` (fio's `real_file_size`):
    /// sequential holes wrap there, not at the region's end.
    file_end: u64,
    /// End of the last sequential I/O, relative to `start`, per direction
    /// (fio's `last_pos`; 0 at the start of a pass).
    seq_pos: [u64; 2],
    rng: fastrand::Rng,
    /// A new pass over the region began with the last request (fio drops the
    /// page cache at each pass of a buffered job; the engine does the same).
    new_pass: bool,
    /// A new `loops` pass began with the last request (fio verifies what a
    /// write job wrote after every loop; `workload::verify`).
    new_loop: bool,
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
    /// `rw_sequencer=identical`: a run repeats its random offset instead.
    run_identical: bool,
    /// Random blocks still unvisited in this pass (fio's random map: the
    /// pass ends when it is full).
    bytes_left: u64,
    ios_left: u64,
    time_based: bool,
    /// fsync every N writes.
    fsync_every: u32,
    writes_since_fsync: u32,
    pending_fsync: bool,
    /// `rw=trimwrite`/`randtrimwrite`: the write of the range just trimmed,
    /// issued next (absolute offset, length).
    pending_write: Option<(u64, u32)>,
    class_override: Option<Class>,
    sync_writes: bool,
    readahead: bool,
    /// State before the last request, so [`Generator::redo_as`] can take it back.
    undo: Option<Undo>,
    /// fio's `zonemode`: the strided walk or emulated zones (`zones`).
    zones: zones::Zones,
    /// The random map of a strided job: each zone's blocks once per visit
    /// (`lfsr::ZoneMap`).
    zone_map: Option<lfsr::ZoneMap>,
}

/// fio's pass accounting (`Generator::pass`), in bytes issued.
#[derive(Clone, Copy, Debug)]
struct Passes {
    /// This pass's bytes, and fio's `total_bytes` for a pass.
    issued: u64,
    limit: u64,
    /// The job's bytes, and fio's limit on them (`io_size` or `size`, times `loops`).
    total: u64,
    total_limit: u64,
    /// `io_size` (or `size`): more passes follow while fewer bytes are done.
    once: u64,
    io_size_set: bool,
    /// Passes finished, and `loops`.
    done: u32,
    loops: u32,
    /// The largest block size: fio stops when less than one is left to do.
    max_bs: u64,
}

/// The generator's position before its last request (plain copies: taking a
/// snapshot per request allocates nothing).
#[derive(Clone, Copy, Debug)]
struct Undo {
    seq_pos: [u64; 2],
    last_end: [u64; 2],
    rand_run_left: u32,
    rand_run_pos: u64,
    bytes_left: u64,
    pass: Passes,
    ios_left: u64,
    new_pass: bool,
    writes_since_fsync: u32,
    pending_fsync: bool,
    coverage_x: Option<u64>,
    strided: Option<zones::StridedPos>,
}

impl Generator {
    /// `region_len` is the number of bytes the job may address (after `offset`),
    /// resolved by the engine against the real target.
    pub fn new(job: &JobSpec, region_start: u64, region_len: u64, seed: u64) -> Generator {
        let bs = [BsPicker::new(&job.bs[0]), BsPicker::new(&job.bs[1])];
        let min_bs = job.bs[0].min().min(job.bs[1].min()).max(1) as u64;
        let align = [0, 1].map(|d| match job.blockalign[d] {
            0 => min_bs,
            a => a as u64,
        });
        let time_based = job.time_based;
        let mut rng = fastrand::Rng::with_seed(seed);
        let fixed = match (&job.bs[0], &job.bs[1]) {
            (BlockSizes::Fixed(r), BlockSizes::Fixed(w)) if r == w => Some(*r as u64),
            _ => None,
        };
        // fio turns its random map off for a non-uniform distribution and for
        // blockalign (offsets then need not be whole blocks).
        // A strided job draws within one zone at a time (with replacement).
        let uniform = job.random_distribution == RandomDist::Random
            && job.zones.mode != crate::job::zones::ZoneMode::Strided;
        let coverage = match (job.rw.pattern, fixed) {
            (Pattern::Rand, Some(bs))
                if region_len >= bs
                    && (!job.norandommap || lfsr::visits_every_block(job))
                    && uniform
                    && job.blockalign == [0, 0] =>
            {
                Some(Coverage::new(region_len / bs, &mut rng))
            }
            _ => None,
        };
        let pick = [0, 1].map(|d| {
            Picker::new(
                &job.random_distribution,
                d,
                region_len / align[d],
                align[d],
                &mut rng,
            )
        });
        // fio's `total_bytes` (one pass) and its byte limits, over this
        // generator's region (fio's `size` for one file).
        let once = job.io_size.unwrap_or(region_len);
        let loops = job.loops.max(1);
        let mixed_seq = job.rw.dir == Direction::Mixed && job.rw.pattern == Pattern::Seq;
        let overwrite =
            job.rw.dir == Direction::Write && job.rw.pattern == Pattern::Rand && job.norandommap;
        let pass_limit = if (mixed_seq && job.verify.kind.is_none()) || overwrite {
            region_len.max(once)
        } else {
            region_len
        };
        let pass = Passes {
            issued: 0,
            limit: pass_limit,
            total: 0,
            total_limit: once.saturating_mul(u64::from(loops)),
            once,
            io_size_set: job.io_size.is_some(),
            done: 0,
            loops,
            max_bs: u64::from(job.bs[0].max().max(job.bs[1].max())),
        };
        Generator {
            pattern: job.rw.pattern,
            dir: job.rw.dir,
            rwmixread: job.rwmixread,
            bs,
            start: region_start,
            len: region_len,
            align,
            pick,
            pct_random: job.percentage_random,
            last_end: [0, 0],
            pass,
            file_end: region_len,
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
            run_identical: job.workload.seq_identical,
            new_pass: false,
            new_loop: false,
            bytes_left: region_len,
            ios_left: job.number_ios.unwrap_or(u64::MAX),
            time_based,
            fsync_every: job.fsync,
            writes_since_fsync: 0,
            pending_fsync: false,
            pending_write: None,
            class_override: job.ioclass,
            sync_writes: job.sync || job.fsync > 0,
            readahead: job.readahead > 0
                && job.rw.pattern == Pattern::Seq
                && job.rw.dir == Direction::Read,
            undo: None,
            zones: zones::Zones::new(job, region_len),
            zone_map: lfsr::ZoneMap::for_job(job, fixed),
        }
    }

    /// fio's strided walk wraps at the end of the file (`end` bytes from the
    /// region start), which may lie beyond the job's region.
    pub fn with_zone_end(mut self, end: Option<u64>) -> Generator {
        if let (zones::Zones::Strided(z), Some(e)) = (&mut self.zones, end) {
            z.set_end(e);
        }
        self
    }

    /// Where the target ends, in bytes from the region's start (fio's
    /// `real_file_size`: a file or device may reach beyond `offset + size`);
    /// `None` (the emulated device) is the region's end.
    pub fn with_file_end(mut self, end: Option<u64>) -> Generator {
        self.file_end = end.unwrap_or(self.len).max(self.len);
        self
    }

    /// Zone resets of a `zonemode=zbd` job so far (fio's "N zone resets").
    pub fn zone_resets(&self) -> u64 {
        match &self.zones {
            zones::Zones::Zbd(z) => z.resets(),
            _ => 0,
        }
    }

    /// The next request, or `None` when the job has issued all it should.
    #[inline]
    pub fn next_io(&mut self) -> Option<NextIo> {
        self.next_io_as(None)
    }

    /// Take back the request just generated and make one in direction `op`
    /// instead (a mixed job whose next direction must wait for its rate while
    /// the other may go now: fio switches direction then). `None` if the last
    /// request cannot be taken back (an fsync, or a job that is not mixed:
    /// only a mixed job keeps what it takes to take one back).
    pub fn redo_as(&mut self, op: Op) -> Option<NextIo> {
        let snap = self.undo.take()?;
        self.seq_pos = snap.seq_pos;
        self.last_end = snap.last_end;
        self.rand_run_left = snap.rand_run_left;
        self.rand_run_pos = snap.rand_run_pos;
        self.bytes_left = snap.bytes_left;
        self.pass = snap.pass;
        self.ios_left = snap.ios_left;
        self.new_pass = snap.new_pass;
        self.writes_since_fsync = snap.writes_since_fsync;
        self.pending_fsync = snap.pending_fsync;
        if let (Some(c), Some(x)) = (self.coverage.as_mut(), snap.coverage_x) {
            c.x = x;
        }
        if let (zones::Zones::Strided(z), Some(p)) = (&mut self.zones, snap.strided) {
            z.set_pos(p);
        }
        self.next_io_as(Some(op))
    }

    #[inline]
    fn next_io_as(&mut self, force: Option<Op>) -> Option<NextIo> {
        // Only a mixed job ever switches direction (`due_or_switch`): other jobs
        // skip the snapshot, a dozen stores on every request, and their `undo`
        // stays None (nothing else sets it), so they skip even that store.
        if self.dir == Direction::Mixed {
            self.undo = Some(Undo {
                seq_pos: self.seq_pos,
                last_end: self.last_end,
                rand_run_left: self.rand_run_left,
                rand_run_pos: self.rand_run_pos,
                bytes_left: self.bytes_left,
                pass: self.pass,
                ios_left: self.ios_left,
                new_pass: self.new_pass,
                writes_since_fsync: self.writes_since_fsync,
                pending_fsync: self.pending_fsync,
                coverage_x: self.coverage.as_ref().map(|c| c.x),
                strided: match &self.zones {
                    zones::Zones::Strided(z) => Some(z.pos()),
                    _ => None,
                },
            });
        }
        if self.pending_fsync {
            self.undo = None;
            self.pending_fsync = false;
            return Some(NextIo {
                op: Op::Fsync,
                offset: 0,
                len: 0,
                class: Class::SyncWrite,
            });
        }
        if let Some((offset, len)) = self.pending_write.take() {
            // trimwrite: the write of the range just trimmed. fio counts the
            // pair once against size/io_size and number_ios (it doubles
            // number_ios for trimwrite), so the write takes nothing from them.
            self.undo = None;
            self.count_write_for_fsync();
            return Some(NextIo {
                op: Op::Write,
                offset,
                len,
                class: self.class_of(Op::Write),
            });
        }
        if self.ios_left == 0 {
            return None;
        }
        // A full random map ends a pass, as fio's byte limits do.
        if !self.within_limits()
            || (self.coverage.is_some()
                && self.bytes_left == 0
                && !(self.next_pass(true) && self.within_limits()))
        {
            return None;
        }
        let op = match self.dir {
            _ if force.is_some() => force.unwrap_or(Op::Read),
            Direction::Read => Op::Read,
            Direction::Write => Op::Write,
            Direction::Trim | Direction::TrimWrite => Op::Trim,
            Direction::Mixed => {
                if self.rng.u32(0..100) < self.rwmixread {
                    Op::Read
                } else {
                    Op::Write
                }
            }
        };
        let op = match &self.zones {
            zones::Zones::Zbd(z) if op == Op::Read && !z.read_allowed(self.dir) => Op::Write,
            _ => op,
        };
        // Trims take the write direction's options (`Op::rw_slot`).
        let d = op.rw_slot().unwrap_or(1);
        let mut len = self.bs[d].pick(&mut self.rng) as u64;
        len = len.min(self.len.max(1));
        let plain_seq = self.pattern == Pattern::Seq && matches!(self.zones, zones::Zones::None);
        let rel = if plain_seq {
            match self.seq_offset(d, &mut len) {
                Some(o) => o,
                // The pass is over: the next one starts from the region's start.
                None if self.next_pass(true) && self.within_limits() => {
                    self.seq_offset(d, &mut len)?
                }
                None => return None,
            }
        } else {
            match (self.pattern, &mut self.zones) {
                (Pattern::Seq, zones::Zones::Strided(z)) => {
                    let o = z.seq(&mut self.seq_pos[d], len);
                    self.seq_pos[d] = o + len + self.seq_add.max(0) as u64;
                    o
                }
                // Emulated zones (zbd): its write pointers move the offset.
                (Pattern::Seq, _) => {
                    if self.seq_pos[d].saturating_add(len) > self.len {
                        // Wrap like fio does when a sequential job runs past the end
                        // (a backwards job wraps to the last whole block).
                        self.seq_pos[d] = if self.seq_add < 0 {
                            (self.len - len) / self.align[d] * self.align[d]
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
                (Pattern::Rand, zones::Zones::Strided(z)) => {
                    let rng = &mut self.rng;
                    match self.zone_map.as_mut() {
                        Some(m) => z.rand(len, self.align[d], |n, at| m.draw(at, n, rng)),
                        None => z.rand(len, self.align[d], |n, _| rng.u64(0..n)),
                    }
                }
                (Pattern::Rand, _)
                    if self.rand_run_left > 0 && self.rand_run_pos + len <= self.len =>
                {
                    self.rand_run_left -= 1;
                    let o = self.rand_run_pos;
                    if !self.run_identical {
                        self.rand_run_pos += len;
                    }
                    o
                }
                (Pattern::Rand, _)
                    if self.pct_random[d] < 100 && self.rng.u32(0..100) >= self.pct_random[d] =>
                {
                    // percentage_random: this one continues where the last I/O of
                    // its direction ended, wrapping at the end of the region.
                    if self.last_end[d] + len > self.len {
                        0
                    } else {
                        self.last_end[d]
                    }
                }
                (Pattern::Rand, _) => {
                    let a = self.align[d];
                    let o = match (&mut self.coverage, &self.pick[d]) {
                        (Some(c), _) => c.next() * len,
                        (None, Some(p)) => {
                            let o = p.block(self.len / a, &mut self.rng) * a;
                            // A block near the end may not fit a whole I/O.
                            o.min((self.len - len) / a * a)
                        }
                        (None, None) => {
                            let slots = (self.len - len) / a + 1;
                            self.rng.u64(0..slots) * a
                        }
                    };
                    self.rand_run_left = self.rand_every - 1;
                    self.rand_run_pos = if self.run_identical { o } else { o + len };
                    o
                }
            }
        };
        let (rel, len) = match &mut self.zones {
            zones::Zones::Zbd(z) => {
                // Zone state cannot be taken back cheaply: no redo after this.
                self.undo = None;
                let (o, l) = if op == Op::Write {
                    z.write(rel, len)
                } else {
                    z.read(rel, len)?
                };
                if self.pattern == Pattern::Seq {
                    self.seq_pos[d] = o + l;
                }
                (o, l)
            }
            _ => (rel, len),
        };
        self.last_end[d] = rel + len;
        self.bytes_left = self.bytes_left.saturating_sub(len);
        self.pass.issued += len;
        self.pass.total += len;
        self.ios_left -= 1;
        if op == Op::Write {
            self.count_write_for_fsync();
        }
        if op == Op::Trim && self.dir == Direction::TrimWrite {
            self.pending_write = Some((self.start + rel, len as u32));
        }
        Some(NextIo {
            op,
            offset: self.start + rel,
            len: len as u32,
            class: self.class_of(op),
        })
    }

    /// `fsync=N`: an fsync after every N writes.
    #[inline]
    fn count_write_for_fsync(&mut self) {
        if self.fsync_every > 0 {
            self.writes_since_fsync += 1;
            if self.writes_since_fsync == self.fsync_every {
                self.writes_since_fsync = 0;
                self.pending_fsync = true;
            }
        }
    }

    /// fio's next sequential offset (`get_next_seq_offset` and the checks of
    /// `get_next_offset` and `fill_io_u` after it), relative to `start`, or
    /// `None` when the pass is over. fio mixes positions relative to the
    /// region and absolute in the file here; so does this, to issue the same
    /// offsets: a hole (`rw=write:112k`) that passes the file's end wraps to
    /// the region's start (to `offset` itself, counted from the region) and
    /// the pass goes on until its bytes are done, while an I/O that ends
    /// exactly at the file's end ends the pass (so 1m read at bs=4k with 8k
    /// holes is 86 reads, 1m written at bs=16k with 112k holes is 64 writes).
    /// Backwards (`rw=read:-8k`) starts at the region's start, then wraps to
    /// below the region's end.
    ///
    /// With block sizes that vary, the block must also fit in what is left
    /// of the region (fio's `io_u_fits` in `get_next_buflen`): a size drawn
    /// too long is drawn again among those that fit, and when not even the
    /// smallest fits the pass is over, so the pass ends exactly at the
    /// region's end whatever the file's size. A fixed size is not checked
    /// against the region (fio's neither), only against the file's end.
    fn seq_offset(&mut self, d: usize, len: &mut u64) -> Option<u64> {
        let (s, i, add) = (self.start, self.len, self.seq_add);
        let r = s.saturating_add(self.file_end);
        if self.seq_pos[d] >= i && self.wrap_at_region() {
            self.seq_pos[d] = 0;
            self.new_pass = true;
        }
        let mut last = s + self.seq_pos[d];
        if last >= r {
            return None;
        }
        if add < 0 && last == s && s != 0 {
            last = i.min(r);
        }
        let mut pos = last.wrapping_sub(s);
        if pos != 0 && add != 0 {
            pos = pos.wrapping_add(add as u64);
            if pos >= r {
                pos = if add > 0 {
                    s
                } else {
                    i.min(r).wrapping_add(add as u64)
                };
            }
        }
        if pos >= i {
            return None;
        }
        if pos + *len > i {
            *len = self.bs[d].pick_within(i - pos, &mut self.rng)?.into();
        }
        if s.saturating_add(pos).saturating_add(*len) > r {
            return None;
        }
        self.seq_pos[d] = pos + *len;
        Some(pos)
    }

    /// fio starts a sequential pass over at the region's end, rather than
    /// ending it, for a time_based job and for a mixed one whose `io_size`
    /// is beyond its `size`.
    fn wrap_at_region(&self) -> bool {
        self.time_based || (self.dir == Direction::Mixed && self.pass.once > self.len)
    }

    /// fio's `do_io` loop condition: a pass ends once it has issued `size`
    /// bytes or the job its `io_size` (or `size`) times `loops` (a
    /// time_based job has neither limit). False when no pass may follow.
    #[inline]
    fn within_limits(&mut self) -> bool {
        while !self.time_based
            && (self.pass.total >= self.pass.total_limit || self.pass.issued >= self.pass.limit)
        {
            if !self.next_pass(false) {
                return false;
            }
        }
        true
    }

    /// fio's `keep_running` after a pass (`offsets_done`: it ended because
    /// its offsets ran out): `loops` passes always run; then more while
    /// fewer than `io_size` (or `size`) bytes are done and at least one
    /// block is left; without `io_size`, not once the offsets ran out. A
    /// pass that issued nothing ends the job. Returns whether one starts.
    fn next_pass(&mut self, offsets_done: bool) -> bool {
        let p = &mut self.pass;
        if p.issued == 0 {
            return false;
        }
        p.done += 1;
        let forced = p.done < p.loops;
        let left = p.once.saturating_sub(p.total);
        let more = self.time_based
            || forced
            || (left > 0 && left >= p.max_bs && (p.io_size_set || !offsets_done));
        if !more {
            return false;
        }
        p.issued = 0;
        self.bytes_left = self.len;
        self.new_pass = true;
        self.new_loop |= !self.time_based;
        match self.zones {
            // fio's strided walk goes on across passes; `loops` starts it over.
            zones::Zones::Strided(_) if !forced => {}
            _ => {
                self.seq_pos = [0, 0];
                self.restart_zones();
            }
        }
        true
    }

    fn restart_zones(&mut self) {
        if let zones::Zones::Strided(z) = &mut self.zones {
            z.restart();
        }
    }

    /// Whether a new pass over the region started since the last call.
    #[inline]
    pub fn take_new_pass(&mut self) -> bool {
        std::mem::take(&mut self.new_pass)
    }

    /// Did the last request start a new `loops` pass? (Once per pass.)
    pub fn take_new_loop(&mut self) -> bool {
        std::mem::take(&mut self.new_loop)
    }

    fn class_of(&self, op: Op) -> Class {
        if let Some(c) = self.class_override {
            return c;
        }
        match op {
            Op::Read if self.readahead => Class::Readahead,
            Op::Read => Class::Read,
            // A trim changes the target as a write does, and is classed so.
            Op::Write | Op::Trim if self.sync_writes => Class::SyncWrite,
            Op::Write | Op::Trim => Class::AsyncWrite,
            Op::Fsync => Class::SyncWrite,
        }
    }
}

/// When a job may issue its next request: `rate`, `rate_iops` (with
/// `rate_process`) and `thinktime`; and whether it keeps up with `rate_min` /
/// `rate_iops_min`.
#[derive(Debug, Clone)]
pub struct Pacer {
    /// `rate` per direction `[read, write, trim]` (`Op::dir`) in bytes/s (0:
    /// none): an I/O of `len` bytes takes `len * 1e9 / rate` ns of the
    /// schedule. Trims have the write's values on a schedule of their own, as
    /// fio's `rate=A,B` gives trims B.
    bps: [u64; PACED],
    /// `rate_iops`: fixed spacing per direction (ns); 0 = unpaced.
    interval_ns: [u64; PACED],
    next_ns: [u64; PACED],
    /// `rate_process=poisson`: gaps drawn from an exponential distribution with
    /// the paced mean, from this generator (seeded: reproducible).
    poisson: Option<fastrand::Rng>,
    /// `thinktime` and its family (`thinktime::Think`).
    think: thinktime::Think,
    /// `rate_ignore_thinktime`; otherwise the rate catches up on the think
    /// time (`think_credit` ns it may fall behind by, beyond one gap).
    think_ignored: bool,
    think_credit: u64,
    /// `rate_min` (bytes/s) and `rate_iops_min` per direction, 0 = none,
    /// checked over windows of `cycle_ns` from `check_from` on, for the
    /// directions the job issues.
    min_bps: [u64; PACED],
    min_iops: [u64; PACED],
    dirs: [bool; PACED],
    cycle_ns: u64,
    ramp_ns: u64,
    check_from: [u64; PACED],
    cycle_bytes: [u64; PACED],
    cycle_ios: [u64; PACED],
    /// The first window that fell short.
    missed: Option<MinRateMiss>,
    /// fio's inline submission (`io_submit_mode=inline`) of a paced job that
    /// may keep several I/Os in flight: ahead of its rate, it first lets them
    /// all complete, then waits out the gap it was ahead by ([`Pacer::inline_due`]).
    quiesce: bool,
    /// Draining: the gap to wait once the job's I/O in flight has completed.
    drain_gap: Option<u64>,
    /// Drained: the next request goes at this time (0 = not held).
    release_at: u64,
}

/// Paced directions: read, write, trim (`Op::dir`); fsyncs are not paced.
const PACED: usize = 3;

/// A job's `[read, write]` option pair as `[read, write, trim]`: trims take
/// the write value (`Op::rw_slot`).
fn with_trim(v: [u64; 2]) -> [u64; PACED] {
    [v[0], v[1], v[1]]
}

/// A `rate_min`/`rate_iops_min` window that fell short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinRateMiss {
    /// 0 = reads, 1 = writes, 2 = trims.
    pub dir: usize,
    /// Bytes/s (or IOPS when `iops`) reached in the window, and the minimum.
    pub got: u64,
    pub want: u64,
    pub iops: bool,
    pub cycle_ms: u64,
}

impl Pacer {
    pub fn new(job: &JobSpec, start_ns: u64) -> Pacer {
        let iv = |r: u64| 1_000_000_000u64.checked_div(r).unwrap_or(0);
        let paced = job.rate != [0, 0] || job.rate_iops != [0, 0];
        let dirs = job.rw.dir.issues();
        let ramp_ns = dur_ns(job.ramp_time);
        let cycle_ns = dur_ns(job.rate_cycle).max(1);
        Pacer {
            bps: with_trim(job.rate),
            interval_ns: with_trim(job.rate_iops).map(iv),
            next_ns: [start_ns; PACED],
            poisson: (job.rate_poisson && paced)
                .then(|| fastrand::Rng::with_seed(job.randseed ^ 0x9e37_79b9_7f4a_7c15)),
            think: thinktime::Think::new(job, start_ns),
            think_ignored: job.workload.rate_ignore_thinktime,
            think_credit: 0,
            min_bps: with_trim(job.rate_min),
            min_iops: with_trim(job.rate_iops_min),
            dirs,
            cycle_ns,
            ramp_ns,
            check_from: [start_ns + ramp_ns; PACED],
            cycle_bytes: [0; PACED],
            cycle_ios: [0; PACED],
            missed: None,
            quiesce: paced && !job.io_submit_offload && job.iodepth > 1,
            drain_gap: None,
            release_at: 0,
        }
    }

    /// Start pacing afresh at `start_ns` (when the worker's clock starts).
    pub fn restart(&mut self, start_ns: u64) {
        self.next_ns = [start_ns; PACED];
        self.think.restart(start_ns);
        self.think_credit = 0;
        self.check_from = [start_ns + self.ramp_ns; PACED];
        self.cycle_bytes = [0; PACED];
        self.cycle_ios = [0; PACED];
        self.drain_gap = None;
        self.release_at = 0;
    }

    /// Is pacing in effect at all? (Lets the engine skip the clock checks.)
    pub fn active(&self) -> bool {
        self.interval_ns != [0; PACED] || self.bps != [0; PACED] || self.think.active()
    }

    /// Does the job have a minimum rate (`rate_min`, `rate_iops_min`) that
    /// completions are checked against?
    pub fn checks_min_rate(&self) -> bool {
        self.min_bps != [0; PACED] || self.min_iops != [0; PACED]
    }

    /// Earliest time a request in direction `d` may be issued.
    #[inline]
    pub fn due_at(&self, d: usize) -> u64 {
        let rate = if d < PACED { self.next_ns[d] } else { 0 };
        rate.max(self.think.until)
    }

    /// Until when the worker should spin rather than sleep (`thinktime_spin`).
    #[inline]
    pub fn spin_until(&self) -> u64 {
        self.think.spin_until()
    }

    /// A pause of `ns` started: with `rate_ignore_thinktime` the rate's
    /// schedule moves past it (fio counts the bytes it would have done);
    /// otherwise the rate may catch up on it afterwards.
    #[inline]
    fn thought(&mut self, d: usize, ns: u64) {
        if ns == 0 || d >= PACED {
            return;
        }
        if self.think_ignored {
            let until = self.think.until;
            self.next_ns[d] = self.next_ns[d].max(until);
        } else {
            self.think_credit += ns;
        }
    }

    /// Record that a request of `len` bytes in direction `d` was issued at `now`.
    #[inline]
    pub fn issued(&mut self, d: usize, len: u32, now: u64) {
        if d >= PACED {
            return;
        }
        let ns = self.think.count(true, now);
        self.thought(d, ns);
        self.release_at = 0;
        let mean = (u64::from(len) * 1_000_000_000)
            .checked_div(self.bps[d])
            .unwrap_or(self.interval_ns[d]);
        if mean == 0 {
            return;
        }
        let gap = match &mut self.poisson {
            // Inverse transform: -ln(U) * mean is exponential with that mean.
            Some(rng) => (-(1.0 - rng.f64()).ln() * mean as f64) as u64,
            None => mean,
        };
        // Keep a fixed cadence (like fio's rate), but never bank more than one
        // mean gap of credit after a stall. fio's inline rule drains, then
        // catches up on its absolute schedule in a burst: that is how it keeps
        // its rate on a device slower than the gap, so it keeps all its credit.
        let next = self.next_ns[d] + gap;
        let floor = now.saturating_sub(mean + self.think_credit);
        if next >= now.saturating_sub(mean) {
            self.think_credit = 0; // caught up on the think time
        }
        self.next_ns[d] = if self.quiesce { next } else { next.max(floor) };
    }

    /// When a request of direction `d`, due at `due` by [`Pacer::due_at`], may go
    /// under fio's inline rule (`io_submit_mode=inline`, fio's `rate_ddir`): a
    /// job ahead of its rate with I/O in flight first waits for all of it to
    /// complete, then sleeps the gap it was ahead by when it stopped, so it
    /// issues in bursts that fall behind the schedule by the drain time.
    /// `u64::MAX` while it drains: no timed wake, the completions wake it.
    /// With offload (or one I/O in flight at most) this is `due`: the schedule
    /// holds whatever the I/O in flight does.
    #[inline]
    pub fn inline_due(&mut self, d: usize, due: u64, now: u64, in_flight: u32) -> u64 {
        if !self.quiesce || d >= 2 {
            return due;
        }
        if let Some(gap) = self.drain_gap {
            if in_flight > 0 {
                return u64::MAX;
            }
            self.drain_gap = None;
            self.release_at = now + gap;
        }
        if self.release_at != 0 {
            return due.max(self.release_at);
        }
        // Only the rate's schedule drains (fio quiesces in rate_ddir); think
        // time has its own rule.
        if self.next_ns[d] > now && in_flight > 0 {
            self.drain_gap = Some(due - now);
            return u64::MAX;
        }
        due
    }

    /// Held by the inline rule at `now` (draining, or waiting out the gap).
    #[inline]
    pub fn inline_held(&self, now: u64) -> bool {
        self.drain_gap.is_some() || self.release_at > now
    }

    /// Record a completion of `bytes` in direction `d` at `now`: fio's think
    /// time starts when an I/O completes. Returns true once, when a
    /// `rate_min`/`rate_iops_min` window ends short (the job must end).
    #[inline]
    pub fn completed(&mut self, now: u64, d: usize, bytes: u64) -> bool {
        let ns = self.think.count(false, now);
        self.thought(d, ns);
        if self.min_bps == [0; PACED] && self.min_iops == [0; PACED] {
            return false;
        }
        // Each direction keeps its own window and is checked when one of its
        // own I/Os completes (fio: `lastrate[ddir]`, checked for the
        // directions that completed something). A shared window would judge
        // the writes at a read's completion: after a stall longer than the
        // cycle, the first read to finish would find no write in the window.
        if d >= PACED || now < self.check_from[d] || !self.dirs[d] {
            // Ramp time: not held to the minimum, not counted.
            return false;
        }
        self.cycle_bytes[d] += bytes;
        self.cycle_ios[d] += 1;
        let spent = now - self.check_from[d];
        if spent < self.cycle_ns || self.missed.is_some() {
            return false;
        }
        let per_s = |n: u64| (n as u128 * 1_000_000_000 / spent as u128) as u64;
        let checks = [
            (per_s(self.cycle_bytes[d]), self.min_bps[d], false),
            (per_s(self.cycle_ios[d]), self.min_iops[d], true),
        ];
        for (got, want, iops) in checks {
            if want > 0 && got < want {
                self.missed = Some(MinRateMiss {
                    dir: d,
                    got,
                    want,
                    iops,
                    cycle_ms: self.cycle_ns / 1_000_000,
                });
                return true;
            }
        }
        self.check_from[d] = now;
        self.cycle_bytes[d] = 0;
        self.cycle_ios[d] = 0;
        false
    }

    /// The window that fell short, if one did.
    pub fn min_rate_missed(&self) -> Option<MinRateMiss> {
        self.missed
    }

    /// The job's error when it fell below its minimum rate, as fio words it.
    pub fn min_rate_message(&self, label: &str) -> Option<String> {
        let m = self.missed?;
        let dir = ["read", "write", "trim"][m.dir];
        Some(if m.iops {
            format!(
                "{label}: min rate not met: {dir} IOPS {} is below rate_iops_min={} over {} ms",
                m.got, m.want, m.cycle_ms
            )
        } else {
            format!(
                "{label}: min rate not met: {dir} bandwidth {} bytes/s is below rate_min={} over {} ms",
                m.got, m.want, m.cycle_ms
            )
        })
    }
}

/// When `io` may be issued under the job's rate. A mixed job whose `io` must
/// wait while the other direction may go now gets an I/O of that direction
/// instead, as fio's rate_ddir does: a cap on one direction does not slow the
/// other.
#[inline]
pub fn due_or_switch(pacer: &Pacer, generator: &mut Generator, io: &mut NextIo, now: u64) -> u64 {
    let d = io.op.dir();
    let due = pacer.due_at(d);
    if due <= now || d >= 2 || generator.dir != Direction::Mixed {
        return due;
    }
    let (other, op) = if d == 0 {
        (1, Op::Write)
    } else {
        (0, Op::Read)
    };
    let other_due = pacer.due_at(other);
    if other_due > now {
        return due;
    }
    match generator.redo_as(op) {
        Some(n) => {
            *io = n;
            other_due
        }
        None => due,
    }
}

/// Bytes from `start` to the end of the target's file or device, read once
/// at setup, for [`Generator::with_file_end`].
pub fn target_end(target: Option<&crate::device::target::Target>, start: u64) -> Option<u64> {
    use std::io::Seek;
    let t = target?;
    let len = match t.kind {
        crate::device::target::TargetKind::File => t.file.metadata().ok()?.len(),
        // A block device's size is where its end seeks to (the I/O itself
        // gives every offset, so the file position does not matter).
        crate::device::target::TargetKind::BlockDevice => {
            (&t.file).seek(std::io::SeekFrom::End(0)).ok()?
        }
    };
    Some(len.saturating_sub(start))
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
        // rw=read:-8k: each read starts 4k below the last; the first is at 0,
        // the next 8k below the region's end (fio 3.33: 0, 56k, 52k, ... 0).
        j.rw_suffix = RwSuffix::Add(-8192);
        let o = offsets(&j, 0, 64 * 1024);
        assert_eq!(o.len(), 16);
        assert_eq!(o[0], 0);
        assert_eq!(o[1], 56 * 1024);
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
    fn distributions_keep_offsets_inside_and_aligned() {
        use crate::job::RandomDist;
        let dists = [
            RandomDist::Zipf {
                theta: 1.2,
                center: None,
            },
            RandomDist::Zipf {
                theta: 0.5,
                center: Some(1.0),
            },
            RandomDist::Pareto {
                h: 0.2,
                center: Some(0.9),
            },
            RandomDist::Normal {
                dev: 50.0,
                center: Some(0.0),
            },
            RandomDist::Zoned([vec![(50, 5), (30, 15), (20, 80)], vec![(100, 100)]]),
            RandomDist::ZonedAbs([vec![(90, 4096), (10, 60 << 10)], vec![(100, 64 << 10)]]),
        ];
        for dist in dists {
            let mut j = job(Pattern::Rand, Direction::Mixed);
            j.random_distribution = dist.clone();
            j.bs = [
                BlockSizes::Range {
                    min: 4096,
                    max: 16384,
                },
                BlockSizes::Fixed(8192),
            ];
            j.blockalign = [2048, 8192];
            j.number_ios = Some(5000);
            j.time_based = true;
            let mut g = Generator::new(&j, 1 << 20, 64 << 10, 9);
            let mut n = 0;
            while let Some(io) = g.next_io() {
                let rel = io.offset - (1 << 20);
                let a = if io.op == Op::Read { 2048 } else { 8192 };
                assert_eq!(rel % a, 0, "{dist:?}: {io:?} not aligned to {a}");
                assert!(
                    rel + io.len as u64 <= 64 << 10,
                    "{dist:?}: {io:?} leaves the region"
                );
                n += 1;
            }
            assert_eq!(n, 5000);
        }
    }

    #[test]
    fn zipf_job_hits_its_hot_set() {
        // 256 blocks, theta 1.2: the hottest 10% of the blocks take the share
        // the zipf law gives (fixed seed: the count is the same every run).
        let mut j = job(Pattern::Rand, Direction::Read);
        j.random_distribution = crate::job::RandomDist::Zipf {
            theta: 1.2,
            center: None,
        };
        j.number_ios = Some(100_000);
        j.time_based = true;
        let mut g = Generator::new(&j, 0, 1 << 20, 4);
        let mut hits = vec![0u64; 256];
        while let Some(io) = g.next_io() {
            hits[(io.offset / 4096) as usize] += 1;
        }
        hits.sort_unstable_by(|a, b| b.cmp(a));
        let got = hits[..25].iter().sum::<u64>() as f64 / 1e5;
        let norm: f64 = (1..=256).map(|i| (i as f64).powf(-1.2)).sum();
        let want = (1..=25).map(|i| (i as f64).powf(-1.2)).sum::<f64>() / norm;
        assert!(
            (got - want).abs() < 0.01,
            "hot 10%: {got:.4}, zipf says {want:.4}"
        );
    }

    #[test]
    fn percentage_random_mixes_sequential_runs() {
        let mut j = job(Pattern::Rand, Direction::Read);
        j.percentage_random = [25, 100];
        j.number_ios = Some(20_000);
        j.time_based = true;
        let o = offsets(&j, 0, 64 << 20);
        let seq = o.windows(2).filter(|w| w[1] == w[0] + 4096).count();
        // 75% continue from the last I/O (a few wrap at the end).
        let share = seq as f64 / (o.len() - 1) as f64;
        assert!((0.73..0.77).contains(&share), "sequential share {share}");
        j.percentage_random = [0, 100];
        let o = offsets(&j, 0, 1 << 20);
        assert!(o.windows(2).all(|w| w[1] == (w[0] + 4096) % (1 << 20)));
    }

    #[test]
    fn io_size_counts_bytes_not_the_region() {
        let count = |io_size: u64, loops: u32, pattern: Pattern| {
            let mut j = job(pattern, Direction::Read);
            j.io_size = Some(io_size);
            j.loops = loops;
            let mut g = Generator::new(&j, 0, 1 << 20, 1);
            std::iter::from_fn(|| g.next_io())
                .map(|n| n.len as u64)
                .sum::<u64>()
        };
        // fio 3.33 over size=1m at bs=4k: io_size=2m does 2m, 512k does 512k,
        // 6k rounds up to two whole I/Os.
        assert_eq!(count(2 << 20, 1, Pattern::Seq), 2 << 20);
        assert_eq!(count(2 << 20, 1, Pattern::Rand), 2 << 20);
        assert_eq!(count(512 << 10, 1, Pattern::Seq), 512 << 10);
        assert_eq!(count(6 << 10, 1, Pattern::Seq), 8 << 10);
        assert_eq!(count(512 << 10, 2, Pattern::Seq), 1 << 20);
    }

    #[test]
    fn redo_as_takes_back_the_last_request() {
        let mut j = job(Pattern::Seq, Direction::Mixed);
        j.size = Some(1 << 20);
        let mut g = Generator::new(&j, 0, 1 << 20, 1);
        let mut a = Generator::new(&j, 0, 1 << 20, 1);
        let first = g.next_io().unwrap();
        let other = if first.op == Op::Read {
            Op::Write
        } else {
            Op::Read
        };
        let redone = g.redo_as(other).unwrap();
        assert_eq!(redone.op, other);
        assert_eq!(redone.offset, 0, "the other direction starts at its own 0");
        assert!(
            g.redo_as(other).is_some(),
            "the redone one can be taken back too"
        );
        // Taking back leaves no hole: the first direction starts at 0 again.
        let _ = a.next_io();
        let mut seen = 0;
        while let Some(io) = g.next_io() {
            if io.op == first.op {
                assert_eq!(io.offset, 0);
                seen += 1;
                break;
            }
        }
        assert_eq!(seen, 1);
    }

    #[test]
    fn rate_paces_bytes_and_poisson_keeps_the_mean() {
        let mut j = job(Pattern::Rand, Direction::Read);
        j.rate = [1 << 20, 0];
        let mut p = Pacer::new(&j, 0);
        p.issued(0, 4096, 0);
        // 4 KiB at 1 MiB/s: 3.90625 ms.
        assert_eq!(p.due_at(0), 3_906_250);
        p.issued(0, 8192, 3_906_250);
        assert_eq!(p.due_at(0), 3_906_250 * 3);
        assert_eq!(p.due_at(1), 0, "writes are not capped");
        j.rate_poisson = true;
        let mut p = Pacer::new(&j, 0);
        let mut t = 0;
        let mut gaps = Vec::new();
        for _ in 0..20_000 {
            p.issued(0, 4096, t);
            gaps.push(p.due_at(0) - t);
            t = p.due_at(0);
        }
        let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
        assert!((mean / 3_906_250.0 - 1.0).abs() < 0.03, "mean gap {mean}");
        // Exponential: the standard deviation equals the mean.
        let sd = (gaps.iter().map(|g| (*g as f64 - mean).powi(2)).sum::<f64>() / gaps.len() as f64)
            .sqrt();
        assert!((sd / mean - 1.0).abs() < 0.05, "sd/mean {}", sd / mean);
    }

    #[test]
    fn rate_min_ends_a_slow_window() {
        let mut j = job(Pattern::Rand, Direction::Read);
        j.rate_min = [1 << 20, 0];
        j.rate_cycle = Duration::from_millis(100);
        let mut p = Pacer::new(&j, 0);
        // 4 KiB per ms is 4 MB/s: above the minimum for the first window.
        let mut t = 0;
        for _ in 0..150 {
            t += 1_000_000;
            assert!(!p.completed(t, 0, 4096));
        }
        // Then one per 10 ms: 400 KB/s, below 1 MiB/s at the window's end.
        let mut missed = false;
        for _ in 0..20 {
            t += 10_000_000;
            missed |= p.completed(t, 0, 4096);
        }
        assert!(missed);
        let m = p.min_rate_missed().unwrap();
        assert_eq!((m.dir, m.want, m.iops), (0, 1 << 20, false));
        assert!(m.got < 1 << 20);
        assert!(
            p.min_rate_message("job 'x'")
                .unwrap()
                .contains("rate_min=1048576")
        );
    }

    #[test]
    fn pacer_spaces_issues_and_think_time() {
        let mut j = job(Pattern::Rand, Direction::Read);
        j.rate_iops = [1000, 0];
        let mut p = Pacer::new(&j, 0);
        assert_eq!(p.due_at(0), 0);
        p.issued(0, 4096, 0);
        assert_eq!(p.due_at(0), 1_000_000);
        j.rate_iops = [0, 0];
        j.thinktime = Duration::from_micros(50);
        let mut p = Pacer::new(&j, 0);
        p.completed(10, 0, 4096);
        assert_eq!(p.due_at(0), 50_010);
    }

    #[test]
    fn inline_drains_before_it_waits_offload_keeps_the_schedule() {
        let mut j = job(Pattern::Rand, Direction::Read);
        j.rate_iops = [1000, 0];
        j.iodepth = 8;
        let mut p = Pacer::new(&j, 0);
        p.issued(0, 4096, 0);
        assert_eq!(p.due_at(0), 1_000_000);
        // Ahead by 0.9 ms with a read in flight: no timed wake while it drains.
        assert_eq!(p.inline_due(0, p.due_at(0), 100_000, 1), u64::MAX);
        assert!(p.inline_held(100_000));
        assert_eq!(p.inline_due(0, p.due_at(0), 5_000_000, 1), u64::MAX);
        // Drained at 5 ms: it waits out the 0.9 ms it was ahead by, then goes.
        assert_eq!(p.inline_due(0, p.due_at(0), 5_000_000, 0), 5_900_000);
        p.issued(0, 4096, 5_900_000);
        assert!(!p.inline_held(5_900_000));
        // Nothing in flight: the schedule as it is.
        let due = p.due_at(0);
        assert_eq!(p.inline_due(0, due, 5_900_000, 0), due);
        // Offload, and depth 1, keep the schedule whatever is in flight.
        for (offload, depth) in [(true, 8), (false, 1)] {
            j.io_submit_offload = offload;
            j.iodepth = depth;
            let mut p = Pacer::new(&j, 0);
            p.issued(0, 4096, 0);
            assert_eq!(p.inline_due(0, p.due_at(0), 100_000, 1), 1_000_000);
        }
    }
}
