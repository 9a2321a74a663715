//! Data verification: every written block carries a header and a checksum (or a
//! known pattern), and is read back and checked — after the write phase
//! (`do_verify`), every `verify_backlog` writes, or by a later read job.
//!
//! Block layout (little endian), at the start of every block a write job issues:
//!
//! ```text
//!  0  magic     u32   "iolb"
//!  4  len       u32   block length in bytes
//!  8  offset    u64   where the block was written (device/file offset)
//! 16  seed      u64   seed of the data bytes (crc32c mode)
//! 24  seq       u64   write sequence number within the job, from 1
//! 32  data_crc  u32   crc32c of bytes [HEADER_LEN, len) (0 in pattern mode)
//! 36  hdr_crc   u32   crc32c of bytes [0, 36)
//! ```
//!
//! The data after the header is either pseudo-random from `seed` (crc32c) or
//! `verify_pattern` repeated from the block start (pattern). Because the data can
//! be regenerated from the header, a checksum mismatch is reported with the first
//! byte that differs, not only with two checksums.
//!
//! What was written where is kept in a [`BlockMap`] sized from size/unit before
//! the clock starts (the unit is the greatest common divisor of the job's block
//! sizes, so every block starts on a unit). Writes and verify reads that overlap
//! an I/O still in flight are held back (fio's serialize_overlap), so the map is
//! always the truth about the device once no I/O is outstanding.
//!
//! Per request nothing here allocates: filling and checking walk the buffer in
//! place and a failure is a `Copy` value formatted only when the run ends.

use std::fmt;

use crate::job::{Direction, JobSpec, VerifyKind, VerifySpec};
use crate::request::{Class, Op};
use crate::workload::NextIo;

pub const HEADER_LEN: usize = VerifySpec::HEADER_LEN;
/// Smallest block verification accepts: a header and some data to check.
pub const MIN_BLOCK: usize = VerifySpec::MIN_BLOCK;
pub const MAGIC: u32 = u32::from_le_bytes(*b"iolb");
/// Most units a block map may hold (12 bytes each: ~200 MiB).
pub const MAX_UNITS: u64 = 16 << 20;

/// Which part of a block did not match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    Magic,
    Length,
    Offset,
    Seq,
    HeaderCrc,
    DataCrc,
    Pattern,
    /// The read returned fewer bytes than the block holds.
    ShortRead,
}

impl Field {
    pub fn name(self) -> &'static str {
        match self {
            Field::Magic => "magic",
            Field::Length => "length",
            Field::Offset => "offset",
            Field::Seq => "seq",
            Field::HeaderCrc => "header crc",
            Field::DataCrc => "data crc",
            Field::Pattern => "pattern",
            Field::ShortRead => "short read",
        }
    }
}

/// One mismatch: where, which field, and the two values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VerifyFailure {
    /// Offset of the block on the target.
    pub offset: u64,
    pub len: u32,
    pub field: Field,
    pub expected: u64,
    pub found: u64,
    /// First differing byte within the block, with its expected and found
    /// values, when the data could be compared byte by byte.
    pub bad_byte: Option<(u32, u8, u8)>,
}

impl fmt::Display for VerifyFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "verify: block at offset {} ({} bytes): {} mismatch: expected {:#x}, found {:#x}",
            self.offset,
            self.len,
            self.field.name(),
            self.expected,
            self.found
        )?;
        if let Some((at, e, g)) = self.bad_byte {
            write!(
                f,
                "; first bad byte at block offset {at} (device offset {}): expected {e:#04x}, found {g:#04x}",
                self.offset + at as u64
            )?;
        }
        Ok(())
    }
}

/// What verification did in one job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    Done,
}

/// What the stream should issue next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Issue this verify read.
    Read(NextIo),
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
    pub fatal: bool,
    do_verify: bool,
    /// Write job (headers with seq, a block map) or read job (check what an
    /// earlier job wrote: no expected seq).
    writes: bool,
    map: Option<BlockMap>,
    phase: Phase,
    next_seq: u64,
    seed: u64,
    backlog: u64,
    since_backlog: u64,
    /// Offsets of the last writes, for the backlog check (a ring).
    ring: Box<[u64]>,
    ring_head: usize,
    ring_len: usize,
    cursor: usize,
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
        let writes = job.rw.dir == Direction::Write;
        let sizes = [&job.bs[0], &job.bs[1]];
        let mut unit = 0;
        let mut max_len = 0u64;
        for b in sizes {
            match b {
                crate::job::BlockSizes::Fixed(x) => unit = gcd(unit, *x as u64),
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
            fatal: job.verify.fatal,
            do_verify: job.verify.do_verify,
            writes,
            map,
            phase: Phase::Workload,
            next_seq: 1,
            seed: seed ^ 0x05EE_D0FB_10C0,
            backlog: job.verify.backlog,
            since_backlog: 0,
            ring: vec![0; ring_cap].into_boxed_slice(),
            ring_head: 0,
            ring_len: 0,
            cursor: 0,
            workload_over: false,
            stats: VerifyStats::default(),
        }))
    }

    pub fn kind(&self) -> VerifyKind {
        self.kind
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
                    if self.ring_len == 0 {
                        self.phase = if self.workload_over {
                            if self.do_verify {
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
                    let map = self.map.as_ref().expect("write jobs have a map");
                    match map.block_at(off) {
                        Some((_, len)) => return Step::Read(read_io(off, len)),
                        None => self.stats.skipped += 1,
                    }
                }
                Phase::Final => {
                    if writes_in_flight > 0 {
                        return Step::Wait;
                    }
                    let map = self.map.as_ref().expect("write jobs have a map");
                    match map.next_block(self.cursor) {
                        Some((u, off, len)) => {
                            self.cursor = u + 1;
                            return Step::Read(read_io(off, len));
                        }
                        None => self.phase = Phase::Done,
                    }
                }
            }
        }
    }

    /// Fill the header (and, by mode, the data) of a write about to be issued.
    /// Returns the block's seq, to be handed back to [`Verifier::write_done`].
    #[inline]
    pub fn fill(&mut self, buf: &mut [u8], offset: u64) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let seed = self.seed ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let data_crc = match self.kind {
            VerifyKind::Crc32c => {
                fill_random(&mut buf[HEADER_LEN..], seed);
                crc32c::crc32c(&buf[HEADER_LEN..])
            }
            VerifyKind::Pattern => {
                fill_pattern(buf, &self.pattern);
                0
            }
        };
        let len = buf.len() as u32;
        buf[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        buf[4..8].copy_from_slice(&len.to_le_bytes());
        buf[8..16].copy_from_slice(&offset.to_le_bytes());
        buf[16..24].copy_from_slice(&seed.to_le_bytes());
        buf[24..32].copy_from_slice(&seq.to_le_bytes());
        buf[32..36].copy_from_slice(&data_crc.to_le_bytes());
        let hc = crc32c::crc32c(&buf[..36]);
        buf[36..40].copy_from_slice(&hc.to_le_bytes());
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
            } else {
                self.ring_len += 1;
            }
            self.since_backlog += 1;
            if self.since_backlog >= self.backlog.min(cap as u64) && self.phase == Phase::Workload {
                self.since_backlog = 0;
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
    pub fn read_done(&mut self, buf: &[u8], offset: u64, result: i64) -> Option<VerifyFailure> {
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
            check_block(buf, offset, expected_seq, self.kind, &self.pattern)
        };
        if let Some(f) = fail {
            self.stats.failures += 1;
            if self.stats.first_failure.is_none() {
                self.stats.first_failure = Some(f);
            }
        }
        fail
    }
}

fn read_io(offset: u64, len: u32) -> NextIo {
    NextIo {
        op: Op::Read,
        offset,
        len,
        class: Class::Read,
    }
}

fn failure(
    offset: u64,
    len: u32,
    field: Field,
    expected: u64,
    found: u64,
    bad_byte: Option<(u32, u8, u8)>,
) -> VerifyFailure {
    VerifyFailure {
        offset,
        len,
        field,
        expected,
        found,
        bad_byte,
    }
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Check one block read from `offset`. `expected_seq` is known to write jobs
/// (the last write there); a read job checks everything else.
pub fn check_block(
    buf: &[u8],
    offset: u64,
    expected_seq: Option<u64>,
    kind: VerifyKind,
    pattern: &[u8],
) -> Option<VerifyFailure> {
    let len = buf.len() as u32;
    let f = |field, e: u64, g: u64| Some(failure(offset, len, field, e, g, None));
    if buf.len() < HEADER_LEN {
        return f(Field::Length, HEADER_LEN as u64, buf.len() as u64);
    }
    let magic = le32(buf, 0);
    if magic != MAGIC {
        return f(Field::Magic, MAGIC as u64, magic as u64);
    }
    let hlen = le32(buf, 4);
    if hlen != len {
        return f(Field::Length, len as u64, hlen as u64);
    }
    let hoff = le64(buf, 8);
    if hoff != offset {
        return f(Field::Offset, offset, hoff);
    }
    let seq = le64(buf, 24);
    if let Some(e) = expected_seq
        && seq != e
    {
        return f(Field::Seq, e, seq);
    }
    let hc = le32(buf, 36);
    let want_hc = crc32c::crc32c(&buf[..36]);
    if hc != want_hc {
        return f(Field::HeaderCrc, want_hc as u64, hc as u64);
    }
    match kind {
        VerifyKind::Crc32c => {
            let stored = le32(buf, 32);
            let actual = crc32c::crc32c(&buf[HEADER_LEN..]);
            if stored != actual {
                let seed = le64(buf, 16);
                let bad = first_random_mismatch(&buf[HEADER_LEN..], seed)
                    .map(|(i, e, g)| ((i + HEADER_LEN) as u32, e, g));
                return Some(failure(
                    offset,
                    len,
                    Field::DataCrc,
                    stored as u64,
                    actual as u64,
                    bad,
                ));
            }
        }
        VerifyKind::Pattern => {
            if pattern.is_empty() {
                return None;
            }
            for (i, &g) in buf.iter().enumerate().skip(HEADER_LEN) {
                let e = pattern[i % pattern.len()];
                if g != e {
                    return Some(failure(
                        offset,
                        len,
                        Field::Pattern,
                        e as u64,
                        g as u64,
                        Some((i as u32, e, g)),
                    ));
                }
            }
        }
    }
    None
}

/// The data bytes of a crc32c block: a fast PRNG stream from the header's seed.
#[inline]
fn fill_random(data: &mut [u8], seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut chunks = data.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&rng.u64(..).to_le_bytes());
    }
    let rest = chunks.into_remainder();
    let last = rng.u64(..).to_le_bytes();
    let n = rest.len();
    rest.copy_from_slice(&last[..n]);
}

/// Regenerate the data from `seed` and find the first byte that differs.
fn first_random_mismatch(data: &[u8], seed: u64) -> Option<(usize, u8, u8)> {
    let mut rng = fastrand::Rng::with_seed(seed);
    for (k, c) in data.chunks(8).enumerate() {
        let want = rng.u64(..).to_le_bytes();
        for (j, &g) in c.iter().enumerate() {
            if g != want[j] {
                return Some((k * 8 + j, want[j], g));
            }
        }
    }
    None
}

/// Repeat the pattern from the block start (the header then overwrites its part).
#[inline]
fn fill_pattern(buf: &mut [u8], pattern: &[u8]) {
    if pattern.is_empty() {
        return;
    }
    for (i, b) in buf.iter_mut().enumerate().skip(HEADER_LEN) {
        *b = pattern[i % pattern.len()];
    }
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
        for kind in [VerifyKind::Crc32c, VerifyKind::Pattern] {
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
                if pos >= HEADER_LEN {
                    assert_eq!(f.bad_byte.map(|b| b.0), Some(pos as u32), "{kind:?} {f}");
                }
            }
            // Another block's data (right header elsewhere) is caught by offset.
            let f = check_block(&buf, 0, Some(seq), kind, &v.pattern).unwrap();
            assert_eq!((f.field, f.expected, f.found), (Field::Offset, 0, 8192));
            // A stale block (older write) is caught by seq.
            let f = check_block(&buf, 8192, Some(seq + 1), kind, &v.pattern).unwrap();
            assert_eq!(f.field, Field::Seq);
            assert!(f.to_string().contains("seq mismatch"), "{f}");
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
    fn backlog_then_final_pass_read_back_what_was_written() {
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
        v.workload_over();
        assert_eq!(v.step(1), Step::Wait);
        assert_eq!(v.step(0), Step::Read(read_io(0, 4096)));
        assert_eq!(v.step(0), Step::Read(read_io(8192, 4096)));
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
