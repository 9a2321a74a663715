//! Data verification: every written block carries a header and a checksum (or a
//! known pattern), and is read back and checked — after the write phase
//! (`do_verify`), every `verify_backlog` writes, or by a later read job.
//!
//! The layout of a block on the device is fio's (a header per block or per
//! `verify_interval`, pattern or fio's pseudo-random data), and so are the
//! checks of each kind: [`crate::workload::verify_block`]. The seed of each
//! block's data is drawn as fio draws it (two outputs of its verify
//! generator, seeded as fio seeds it for the job clone), so a job writes
//! the bytes fio's does. Because the data can be regenerated from the
//! header, a checksum mismatch is reported with the first byte that
//! differs, not only with two checksums; `verify_dump` writes the received
//! and expected bytes to files ([`crate::workload::verify_dump`]).
//!
//! What was written where is kept in a [`BlockMap`] sized from size/unit before
//! the clock starts (the unit is the greatest common divisor of the job's block
//! sizes, so every block starts on a unit; one byte for a `bs_unaligned`
//! range). Writes and verify reads that overlap
//! an I/O still in flight are held back (fio's serialize_overlap), so the map is
//! always the truth about the device once no I/O is outstanding.
//!
//! Per request nothing here allocates: filling and checking walk the buffer in
//! place and a failure is a `Copy` value formatted only when the run ends.

#[cfg(any(test, feature = "testing"))]
use crate::job::VerifySpec;
use crate::job::{Direction, JobSpec, VerifyKind};
use crate::request::{Class, Op};
use crate::workload::NextIo;
use crate::workload::fio_rand::Taus88;
use crate::workload::verify_block::{Layout, Write, failure};
use crate::workload::verify_dump::Dumper;

pub use crate::workload::verify_block::{Field, VerifyFailure};
#[cfg(any(test, feature = "testing"))]
pub use crate::workload::verify_block::{HEADER_LEN, MAGIC};
/// Smallest block verification accepts: a header and some data to check.
#[cfg(any(test, feature = "testing"))]
pub const MIN_BLOCK: usize = VerifySpec::MIN_BLOCK;
/// Most units a block map may hold (12 bytes each: ~200 MiB).
pub const MAX_UNITS: u64 = 16 << 20;

/// What verification did in one job.
#[derive(
    schemars::JsonSchema,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct VerifyStats {
    /// Blocks written with a header.
    pub written: u64,
    /// Blocks read back and checked.
    pub checked: u64,
    pub failures: u64,
    /// Blocks queued for a check that were overwritten in part before it ran.
    pub skipped: u64,
    pub first_failure: Option<VerifyFailure>,
}

/// Why a job's verification cannot be set up.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The block map would need more than [`MAX_UNITS`] entries.
    #[error(
        "verify: remembering what was written needs one entry per {unit} bytes \
         (the common divisor of the block sizes) over {region_len} bytes = {entries} entries, \
         more than {MAX_UNITS}; use a smaller size= or block sizes with a larger common divisor"
    )]
    MapTooLarge {
        unit: u64,
        region_len: u64,
        entries: u64,
    },
}

/// Per-unit record of the last block written at each place of the region.
#[derive(Debug)]
pub struct BlockMap {
    base: u64,
    unit: u64,
    /// Seq of the block that starts at this unit, 0 if none does.
    seq: Box<[u64]>,
    /// Length of that block in bytes.
    len: Box<[u32]>,
    /// An I/O that covers this unit is in flight.
    busy: Box<[bool]>,
    /// Longest block in units: how far back a block covering a unit may start.
    max_units: u64,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

impl BlockMap {
    pub fn new(
        base: u64,
        region_len: u64,
        unit: u64,
        max_len: u64,
    ) -> Result<BlockMap, VerifyError> {
        let unit = unit.max(1);
        let entries = region_len.div_ceil(unit);
        if entries > MAX_UNITS {
            return Err(VerifyError::MapTooLarge {
                unit,
                region_len,
                entries,
            });
        }
        let n = entries as usize;
        Ok(BlockMap {
            base,
            unit,
            seq: vec![0; n].into_boxed_slice(),
            len: vec![0; n].into_boxed_slice(),
            busy: vec![false; n].into_boxed_slice(),
            max_units: max_len.div_ceil(unit).max(1),
        })
    }

    pub fn units(&self) -> usize {
        self.seq.len()
    }

    #[inline]
    fn range(&self, offset: u64, len: u32) -> (usize, usize) {
        let rel = offset.saturating_sub(self.base);
        let a = (rel / self.unit) as usize;
        let b = (rel + len as u64).div_ceil(self.unit) as usize;
        (a.min(self.seq.len()), b.min(self.seq.len()))
    }

    /// Is any part of [offset, offset+len) covered by an I/O in flight?
    #[inline]
    pub fn busy(&self, offset: u64, len: u32) -> bool {
        let (a, b) = self.range(offset, len);
        self.busy[a..b].iter().any(|&x| x)
    }

    #[inline]
    pub fn set_busy(&mut self, offset: u64, len: u32, on: bool) {
        let (a, b) = self.range(offset, len);
        self.busy[a..b].fill(on);
    }

    /// Forget every block that overlaps [offset, offset+len): its contents on
    /// the device are no longer what its header said.
    #[inline]
    pub fn invalidate(&mut self, offset: u64, len: u32) {
        let (a, b) = self.range(offset, len);
        let back = a.saturating_sub(self.max_units as usize - 1);
        for u in back..a {
            if self.seq[u] != 0 && u as u64 * self.unit + self.len[u] as u64 > a as u64 * self.unit
            {
                self.seq[u] = 0;
            }
        }
        self.seq[a..b].fill(0);
    }

    /// A block was written: it replaces whatever it overlaps.
    #[inline]
    pub fn written(&mut self, offset: u64, len: u32, seq: u64) {
        self.invalidate(offset, len);
        let (a, _) = self.range(offset, len);
        if a < self.seq.len() {
            self.seq[a] = seq;
            self.len[a] = len;
        }
    }

    /// The block that starts at `offset` now: (seq, len).
    #[inline]
    pub fn block_at(&self, offset: u64) -> Option<(u64, u32)> {
        let rel = offset.checked_sub(self.base)?;
        if !rel.is_multiple_of(self.unit) {
            return None;
        }
        let u = (rel / self.unit) as usize;
        match self.seq.get(u) {
            Some(&s) if s != 0 => Some((s, self.len[u])),
            _ => None,
        }
    }

    /// The first block starting at unit `from` or later: (unit, offset, len).
    #[inline]
    pub fn next_block(&self, from: usize) -> Option<(usize, u64, u32)> {
        (from..self.seq.len())
            .find(|&u| self.seq[u] != 0)
            .map(|u| (u, self.base + u as u64 * self.unit, self.len[u]))
    }
}

/// Where a write job's verification stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Running the workload (with backlog checks in between).
    Workload,
    /// Checking the last `verify_backlog` writes before writing on.
    Backlog,
    /// The workload is over: waiting for writes in flight, then reading back
    /// every block (`do_verify`).
    Final,
    /// A `loops` pass is over: reading back every block, as `Final`, then
    /// handing back the next pass's first request (fio verifies every loop).
    LoopEnd,
    Done,
}

/// What the stream should issue next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Issue this verify read.
    Read(NextIo),
    /// Issue this workload request, held while a loop's blocks were read back.
    Resume(NextIo),
    /// Take the next request from the workload generator.
    Workload,
    /// Nothing now; ask again after a completion.
    Wait,
    /// Verification is over (and so is the workload).
    Done,
}

/// One job stream's verification state.
pub struct Verifier {
    kind: VerifyKind,
    pattern: Box<[u8]>,
    /// `verify_interval` (0 = one header per block).
    interval: u32,
    /// `verify_offset` (0 = the header stays at the start).
    swap_at: u32,
    /// `bs_unaligned`: a header per block.
    unaligned: bool,
    /// `buffer_compress_percentage` and `buffer_pattern`, which shape the
    /// data of a verified block as fio fills it.
    compress: u32,
    buffer_pattern: Box<[u8]>,
    /// fio's thread number of the job clone, recorded in every header.
    thread: u16,
    /// fio's verify generator: two draws make each write's data seed.
    state: Taus88,
    /// Its seed when the job's generators repeat (fio re-seeds it at every
    /// loop), None when they do not.
    state_seed: Option<u32>,
    /// `verify_dump`: where mismatches are written.
    dump: Option<Dumper>,
    pub fatal: bool,
    do_verify: bool,
    /// Write job (headers with seq, a block map) or read job (check what an
    /// earlier job wrote: no expected seq).
    writes: bool,
    /// A mixed job: its reads of ranges it never wrote check nothing.
    mixed: bool,
    map: Option<BlockMap>,
    phase: Phase,
    next_seq: u64,
    backlog: u64,
    since_backlog: u64,
    /// Offsets of the last writes, for the backlog check (a ring).
    ring: Box<[u64]>,
    ring_head: usize,
    ring_len: usize,
    /// `verify_backlog_batch`: reads per backlog check, and those left in this one.
    batch: u64,
    batch_left: u64,
    /// A write fell out of the full ring unchecked: the read-back at the end
    /// (`do_verify`) must cover it. Otherwise the backlog checked every write
    /// and, as fio, there is nothing left to read back.
    ring_dropped: bool,
    cursor: usize,
    /// `verify_only`: workload requests are not issued; writes are entered
    /// into the map as if done, for the read-back to check.
    only: bool,
    /// The next pass's first request, held during a `LoopEnd` read-back.
    resume: Option<NextIo>,
    workload_over: bool,
    pub stats: VerifyStats,
}

impl Verifier {
    /// Build for a job over [region_start, region_start+region_len), or None when
    /// the job does not verify. Allocates the block map and backlog ring now.
    pub fn new(
        job: &JobSpec,
        region_start: u64,
        region_len: u64,
        seed: u64,
    ) -> Result<Option<Verifier>, VerifyError> {
        let Some(kind) = job.verify.kind else {
            return Ok(None);
        };
        // A mixed job (rw=randrw) writes too: its writes are tracked, read
        // back (verify_backlog, do_verify) and its own reads of blocks it
        // wrote are checked against them.
        let writes = matches!(job.rw.dir, Direction::Write | Direction::Mixed);
        let mixed = job.rw.dir == Direction::Mixed;
        let sizes = [&job.bs[0], &job.bs[1]];
        let mut unit = 0;
        let mut max_len = 0u64;
        for b in sizes {
            match b {
                crate::job::BlockSizes::Fixed(x) => unit = gcd(unit, *x as u64),
                // bs_unaligned: a range's sizes are any byte count (and a
                // sequential job's blocks start anywhere), so the map keeps
                // one entry per byte.
                crate::job::BlockSizes::Range { min, max }
                    if job.target.bs_unaligned && min != max =>
                {
                    unit = 1
                }
                crate::job::BlockSizes::Range { min, .. } => unit = gcd(unit, *min as u64),
                crate::job::BlockSizes::Split(v) => {
                    for (x, _) in v {
                        unit = gcd(unit, *x as u64);
                    }
                }
            }
            max_len = max_len.max(b.max() as u64);
        }
        let map = if writes {
            Some(BlockMap::new(region_start, region_len, unit, max_len)?)
        } else {
            None
        };
        // Writes already in flight when a backlog check starts still complete
        // into the ring: room for a full iodepth of them beyond the backlog. A
        // backlog larger than the map has entries is capped (the oldest are
        // dropped; do_verify's read-back still covers them).
        let ring_cap = if writes && job.verify.backlog > 0 {
            let units = map.as_ref().map_or(0, |m| m.units() as u64);
            (job.verify.backlog.min(units) + job.iodepth as u64) as usize
        } else {
            0
        };
        Ok(Some(Verifier {
            kind,
            pattern: job.verify.pattern.clone().into_boxed_slice(),
            interval: job.verify.interval,
            swap_at: job.verify.offset,
            unaligned: job.target.bs_unaligned,
            compress: job.buffers.compress_percentage.unwrap_or(0),
            buffer_pattern: job.buffers.pattern.clone().into_boxed_slice(),
            thread: 1,
            state: Taus88::new(seed as u32),
            state_seed: None,
            dump: None,
            fatal: job.verify.fatal,
            do_verify: job.verify.do_verify,
            writes,
            mixed,
            map,
            phase: Phase::Workload,
            next_seq: 1,
            backlog: job.verify.backlog,
            since_backlog: 0,
            ring: vec![0; ring_cap].into_boxed_slice(),
            ring_head: 0,
            ring_len: 0,
            // Unset, a check reads the whole ring: the backlog and the writes
            // that completed while it ran (fio reads `verify_backlog` of its
            // history then; the rest wait for the next check, which the
            // ring's room for a full iodepth would not always hold).
            batch: match job.workload.verify_backlog_batch {
                0 => u64::MAX,
                b => b,
            },
            batch_left: 0,
            ring_dropped: false,
            cursor: 0,
            only: job.verify.only && writes,
            resume: None,
            workload_over: false,
            stats: VerifyStats::default(),
        }))
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn kind(&self) -> VerifyKind {
        self.kind
    }

    /// fio's thread number of the job clone, for the headers, and the seed
    /// of its verify generator when the job's generators repeat (set once
    /// at setup).
    pub fn set_origin(&mut self, thread: u32, state_seed: Option<u32>) {
        self.thread = thread as u16;
        if let Some(s) = state_seed {
            self.state = Taus88::new(s);
        }
        self.state_seed = state_seed;
    }

    /// `verify_dump`: write mismatches with `dumper` (set once at setup).
    pub fn dump_to(&mut self, dumper: Dumper) {
        self.dump = Some(dumper);
    }

    fn layout(&self) -> Layout<'_> {
        Layout {
            kind: self.kind,
            pattern: &self.pattern,
            interval: self.interval,
            unaligned: self.unaligned,
            swap_at: self.swap_at,
            compress: self.compress,
            buffer_pattern: &self.buffer_pattern,
        }
    }

    /// fio's data seed of a verified write, and of a verify read: two draws
    /// of the verify generator multiplied (none with a pattern, whose
    /// headers record 0).
    #[inline]
    fn draw_seed(&mut self) -> u64 {
        if !self.pattern.is_empty() {
            return 0;
        }
        let a = self.state.next_u32() as u64;
        a.wrapping_mul(self.state.next_u32() as u64)
    }

    /// `verify_only`: take `io` from the workload without issuing it (true),
    /// entering a write into the map under the seq the write would have had,
    /// so the read-back expects what an earlier run of the job wrote. False
    /// when the job runs its workload.
    #[inline]
    pub fn pretend(&mut self, io: &NextIo) -> bool {
        if !self.only {
            return false;
        }
        if io.op == Op::Write
            && let Some(m) = self.map.as_mut()
        {
            m.written(io.offset, io.len, self.next_seq);
            self.next_seq += 1;
        }
        true
    }

    /// Must this request wait for an overlapping one in flight?
    #[inline]
    pub fn blocked(&self, io: &NextIo) -> bool {
        io.op != Op::Fsync && self.map.as_ref().is_some_and(|m| m.busy(io.offset, io.len))
    }

    /// A data request of `io` goes to the device: mark its range in flight.
    #[inline]
    pub fn issued(&mut self, io: &NextIo) {
        if io.op != Op::Fsync
            && let Some(m) = self.map.as_mut()
        {
            m.set_busy(io.offset, io.len, true);
        }
    }

    /// The workload generator has nothing more (or the runtime is over).
    pub fn workload_over(&mut self) {
        self.workload_over = true;
        if self.phase != Phase::Done {
            // Writes since the last backlog check are checked too (Backlog
            // moves on to the read-back, or ends, once they all are).
            self.phase = if self.backlog > 0 {
                Phase::Backlog
            } else if self.writes && self.do_verify {
                Phase::Final
            } else {
                Phase::Done
            };
        }
    }

    /// The workload generator started a new `loops` pass with `io`. A write
    /// job with `do_verify` (and no backlog, which checks as it goes) reads
    /// back what the last pass wrote first: returns true if it holds `io`
    /// for that, to hand it back as [`Step::Resume`].
    pub fn loop_ended(&mut self, io: NextIo) -> bool {
        // fio re-seeds its generators at every loop when they repeat: each
        // loop's writes draw the same data seeds.
        if let Some(s) = self.state_seed {
            self.state = Taus88::new(s);
        }
        if !(self.writes && self.do_verify && self.backlog == 0 && self.phase == Phase::Workload) {
            return false;
        }
        self.resume = Some(io);
        self.cursor = 0;
        self.phase = Phase::LoopEnd;
        true
    }

    /// Stop verifying at once (verify_fatal, a stopping error).
    pub fn stop(&mut self) {
        self.phase = Phase::Done;
        self.workload_over = true;
    }

    /// What to issue next; `writes_in_flight` = this stream's writes not yet
    /// completed (the final read-back starts once there are none).
    #[inline]
    pub fn step(&mut self, writes_in_flight: u32) -> Step {
        loop {
            match self.phase {
                Phase::Workload => return Step::Workload,
                Phase::Done => return Step::Done,
                Phase::Backlog => {
                    if self.ring_len == 0 && self.workload_over && writes_in_flight > 0 {
                        return Step::Wait;
                    }
                    if self.ring_len == 0 || (!self.workload_over && self.batch_left == 0) {
                        self.phase = if self.workload_over {
                            if self.do_verify && self.ring_dropped {
                                Phase::Final
                            } else {
                                Phase::Done
                            }
                        } else {
                            Phase::Workload
                        };
                        continue;
                    }
                    let off = self.ring[self.ring_head];
                    self.ring_head = (self.ring_head + 1) % self.ring.len();
                    self.ring_len -= 1;
                    self.batch_left = self.batch_left.saturating_sub(1);
                    let map = self.map.as_ref().expect("write jobs have a map");
                    match map.block_at(off) {
                        Some((_, len)) => {
                            // fio draws a seed for every verify read, which
                            // shifts the seeds of the writes after it.
                            self.draw_seed();
                            return Step::Read(read_io(off, len));
                        }
                        None => self.stats.skipped += 1,
                    }
                }
                // A read-back of every written block: after each loop
                // (then the workload resumes) and at the end.
                Phase::LoopEnd | Phase::Final => {
                    if writes_in_flight > 0 {
                        return Step::Wait;
                    }
                    let map = self.map.as_ref().expect("write jobs have a map");
                    if let Some((u, off, len)) = map.next_block(self.cursor) {
                        self.cursor = u + 1;
                        return Step::Read(read_io(off, len));
                    }
                    if self.phase == Phase::Final {
                        self.phase = Phase::Done;
                        continue;
                    }
                    self.cursor = 0;
                    self.phase = Phase::Workload;
                    if let Some(io) = self.resume.take() {
                        return Step::Resume(io);
                    }
                }
            }
        }
    }

    /// Fill the headers (and, by mode, the data) of a write about to be
    /// issued. Returns the block's seq, to be handed back to
    /// [`Verifier::write_done`].
    #[inline]
    pub fn fill(&mut self, buf: &mut [u8], offset: u64) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        if self.kind == VerifyKind::Null {
            return seq;
        }
        let (time_sec, time_nsec) = wall_time();
        let w = Write {
            offset,
            numberio: numberio(seq),
            seed: self.draw_seed(),
            time_sec,
            time_nsec,
            thread: self.thread,
        };
        self.layout().fill(buf, &w);
        seq
    }

    /// A write completed (`ok` = without error). A failed write leaves the
    /// blocks it covered undefined, so they are forgotten.
    #[inline]
    pub fn write_done(&mut self, offset: u64, len: u32, seq: u64, ok: bool) {
        let Some(m) = self.map.as_mut() else { return };
        m.set_busy(offset, len, false);
        if !ok {
            m.invalidate(offset, len);
            return;
        }
        m.written(offset, len, seq);
        self.stats.written += 1;
        if self.backlog > 0 && !self.ring.is_empty() {
            let cap = self.ring.len();
            let tail = (self.ring_head + self.ring_len) % cap;
            self.ring[tail] = offset;
            if self.ring_len == cap {
                self.ring_head = (self.ring_head + 1) % cap;
                self.ring_dropped = true;
            } else {
                self.ring_len += 1;
            }
            self.since_backlog += 1;
            if self.since_backlog >= self.backlog.min(cap as u64) && self.phase == Phase::Workload {
                self.since_backlog = 0;
                self.batch_left = self.batch;
                self.phase = Phase::Backlog;
            }
        }
    }

    /// A read failed (I/O error): its range is free again, nothing was checked.
    #[inline]
    pub fn read_failed(&mut self, offset: u64, len: u32) {
        if let Some(m) = self.map.as_mut() {
            m.set_busy(offset, len, false);
        }
    }

    /// A read completed with `result` bytes (negative: errno) into `buf` (the
    /// whole buffer the read asked for). Returns a failure if the block is bad.
    #[inline]
    pub fn read_done(&mut self, buf: &mut [u8], offset: u64, result: i64) -> Option<VerifyFailure> {
        let len = buf.len() as u32;
        if let Some(m) = self.map.as_mut() {
            m.set_busy(offset, len, false);
        }
        if result < 0 {
            return None;
        }
        let expected_seq = match self.map.as_ref() {
            Some(m) => match m.block_at(offset) {
                Some((seq, l)) if l == len => Some(seq),
                // A mixed job's own read of a range it has not written (as one
                // block): nothing to check it against, and no check skipped.
                _ if self.mixed => return None,
                // Overwritten in part since it was queued for checking.
                _ => {
                    self.stats.skipped += 1;
                    return None;
                }
            },
            None => None,
        };
        self.stats.checked += 1;
        let got = (result as u64).min(len as u64) as usize;
        let fail = if got < len as usize {
            Some(failure(
                offset,
                len,
                Field::ShortRead,
                len as u64,
                got as u64,
                None,
            ))
        } else {
            // verify_only: as fio, the numberio is not checked (the data
            // may come from another run, or another tool).
            let nio = expected_seq.filter(|_| !self.only).map(numberio);
            self.layout().check(buf, offset, nio)
        };
        if let Some(f) = fail {
            self.stats.failures += 1;
            if self.stats.first_failure.is_none() {
                self.stats.first_failure = Some(f);
            }
            if f.field != Field::ShortRead {
                self.dump_failure(buf, offset, expected_seq, &f);
            }
        }
        fail
    }

    /// `verify_dump`: the failing interval as received and as expected.
    #[cold]
    fn dump_failure(
        &mut self,
        buf: &[u8],
        offset: u64,
        expected_seq: Option<u64>,
        f: &VerifyFailure,
    ) {
        if self.dump.is_none() {
            return;
        }
        let at = (f.offset - offset) as usize;
        let received = &buf[at..at + f.len as usize];
        if f.field.in_header() {
            // As fio: a broken header is dumped as read (`.hdr_fail`); what
            // should have been there cannot be rebuilt from it.
            if let Some(d) = self.dump.as_ref() {
                d.dump_header(f.offset, received);
            }
            return;
        }
        let nio = expected_seq.filter(|_| !self.only).map(numberio);
        let expected = self.layout().expected(received, at, buf.len(), offset, nio);
        if let Some(d) = self.dump.as_ref() {
            d.dump(f.offset, received, &expected);
        }
    }
}

/// Wall-clock time for the header, seconds and nanoseconds (vDSO: no
/// system call).
#[inline]
fn wall_time() -> (u32, u32) {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or((0, 0), |d| (d.as_secs() as u32, d.subsec_nanos()))
}

/// fio's numberio of the job's write `seq` (from 1): the writes before it,
/// in 16 bits.
#[inline]
fn numberio(seq: u64) -> u16 {
    seq.wrapping_sub(1) as u16
}

fn read_io(offset: u64, len: u32) -> NextIo {
    NextIo {
        op: Op::Read,
        offset,
        len,
        class: Class::Read,
        flush: Default::default(),
    }
}

/// Check one block read from `offset` with one header per block (the unit
/// tests' shorthand for [`Layout::check`]).
#[cfg(test)]
fn check_block(
    buf: &[u8],
    offset: u64,
    expected_seq: Option<u64>,
    kind: VerifyKind,
    pattern: &[u8],
) -> Option<VerifyFailure> {
    let mut buf = buf.to_vec();
    let buf = &mut buf[..];
    Layout {
        kind,
        pattern,
        interval: 0,
        unaligned: false,
        swap_at: 0,
        compress: 0,
        buffer_pattern: &[],
    }
    .check(buf, offset, expected_seq.map(numberio))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Pattern, RwMode, VerifySpec};

    fn job(kind: VerifyKind, dir: Direction) -> JobSpec {
        JobSpec {
            rw: RwMode {
                pattern: Pattern::Rand,
                dir,
            },
            verify: VerifySpec {
                kind: Some(kind),
                pattern: vec![0xde, 0xad, 0xbe, 0xef, 0x01],
                ..VerifySpec::default()
            },
            ..JobSpec::default()
        }
    }

    #[test]
    fn a_filled_block_checks_clean_and_every_flipped_byte_is_caught() {
        for kind in [VerifyKind::Crc32c, VerifyKind::PatternHeader] {
            let mut v = Verifier::new(&job(kind, Direction::Write), 0, 1 << 20, 7)
                .unwrap()
                .unwrap();
            let mut buf = vec![0u8; 4096];
            let seq = v.fill(&mut buf, 8192);
            assert_eq!(check_block(&buf, 8192, Some(seq), kind, &v.pattern), None);
            for pos in [0usize, 5, 9, 17, 25, 33, 37, 40, 41, 2000, 4095] {
                let mut bad = buf.clone();
                bad[pos] ^= 0xFF;
                let f = check_block(&bad, 8192, Some(seq), kind, &v.pattern)
                    .unwrap_or_else(|| panic!("{kind:?}: flip at {pos} not caught"));
                if pos >= kind.header_len() {
                    assert_eq!(f.bad_byte.map(|b| b.0), Some(pos as u32), "{kind:?} {f}");
                }
            }
            // Another block's data (right header elsewhere) is caught by offset.
            let f = check_block(&buf, 0, Some(seq), kind, &v.pattern).unwrap();
            assert_eq!((f.field, f.expected, f.found), (Field::Offset, 0, 8192));
            // A stale block (older write) is caught by seq.
            let f = check_block(&buf, 8192, Some(seq + 1), kind, &v.pattern).unwrap();
            assert_eq!(f.field, Field::Seq);
            assert!(f.to_string().contains("numberio mismatch"), "{f}");
        }
    }

    #[test]
    fn map_tracks_overlaps_and_partial_overwrites() {
        let mut m = BlockMap::new(4096, 64 * 1024, 4096, 16384).unwrap();
        m.written(4096, 16384, 1);
        assert_eq!(m.block_at(4096), Some((1, 16384)));
        // A write into its middle kills it.
        m.written(4096 + 8192, 4096, 2);
        assert_eq!(m.block_at(4096), None);
        assert_eq!(m.block_at(4096 + 8192), Some((2, 4096)));
        m.set_busy(4096 + 8192, 4096, true);
        assert!(m.busy(4096, 16384) && !m.busy(4096, 8192));
        assert_eq!(m.next_block(0).map(|b| b.1), Some(4096 + 8192));
        assert!(BlockMap::new(0, 1 << 40, 1, 1).is_err());
    }

    #[test]
    fn backlog_checks_each_write_once_and_leaves_nothing_for_the_end() {
        // fio (t0008): a block the backlog read back leaves its history, so
        // do_verify at the end has nothing more to read.
        let mut j = job(VerifyKind::Crc32c, Direction::Write);
        j.verify.backlog = 2;
        let mut v = Verifier::new(&j, 0, 64 * 1024, 1).unwrap().unwrap();
        assert_eq!(v.step(0), Step::Workload);
        v.write_done(0, 4096, 1, true);
        assert_eq!(v.step(0), Step::Workload);
        v.write_done(8192, 4096, 2, true);
        assert_eq!(v.step(0), Step::Read(read_io(0, 4096)));
        assert_eq!(v.step(0), Step::Read(read_io(8192, 4096)));
        assert_eq!(v.step(0), Step::Workload);
        v.write_done(16384, 4096, 3, true);
        v.workload_over();
        assert_eq!(v.step(1), Step::Read(read_io(16384, 4096)));
        assert_eq!(v.step(1), Step::Wait);
        assert_eq!(v.step(0), Step::Done);
    }

    #[test]
    fn backlog_batch_reads_part_of_the_backlog_then_writes_on() {
        let mut j = job(VerifyKind::Crc32c, Direction::Write);
        j.verify.backlog = 2;
        j.workload.verify_backlog_batch = 1;
        let mut v = Verifier::new(&j, 0, 64 * 1024, 1).unwrap().unwrap();
        v.write_done(0, 4096, 1, true);
        v.write_done(8192, 4096, 2, true);
        assert_eq!(v.step(0), Step::Read(read_io(0, 4096)));
        assert_eq!(v.step(0), Step::Workload);
        v.workload_over();
        // The one left over is read at the end.
        assert_eq!(v.step(0), Step::Read(read_io(8192, 4096)));
        assert_eq!(v.step(0), Step::Done);
    }

    #[test]
    fn each_loop_is_read_back_before_the_next_one_writes() {
        let mut v = Verifier::new(&job(VerifyKind::Crc32c, Direction::Write), 0, 64 * 1024, 1)
            .unwrap()
            .unwrap();
        v.write_done(0, 4096, 1, true);
        let next = NextIo {
            op: Op::Write,
            offset: 0,
            len: 4096,
            class: Class::AsyncWrite,
            flush: Default::default(),
        };
        assert!(v.loop_ended(next));
        assert_eq!(v.step(1), Step::Wait);
        assert_eq!(v.step(0), Step::Read(read_io(0, 4096)));
        assert_eq!(v.step(0), Step::Resume(next));
        assert_eq!(v.step(0), Step::Workload);
        v.workload_over();
        assert_eq!(v.step(0), Step::Read(read_io(0, 4096)));
        assert_eq!(v.step(0), Step::Done);
    }

    #[test]
    fn pattern_parsing() {
        use crate::job::options::parse_verify_pattern as p;
        assert_eq!(p("0xdeadbeef").unwrap(), [0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(p("0xabc").unwrap(), [0x0a, 0xbc]);
        assert_eq!(p("255").unwrap(), [0xff]);
        assert_eq!(p("256").unwrap(), [0x00, 0x01]);
        assert_eq!(p("0xff\"ab\"").unwrap(), [0xff, b'a', b'b']);
        assert!(p("%o").is_err() && p("").is_err() && p("\"x").is_err() && p("zz").is_err());
        assert!(p("99999999999").is_err());
    }
}
