//! The on-device layout of a verified block: one header per block, or one per
//! `verify_interval` bytes of it (each interval then checks on its own, like
//! fio's), followed by data that is either `verify_pattern` or pseudo-random
//! from the interval's seed.
//!
//! Header (little endian), at the start of every interval:
//!
//! ```text
//!  0  magic     u32   "iolb"
//!  4  len       u32   interval length in bytes (the block's without verify_interval)
//!  8  offset    u64   where the interval was written (device/file offset)
//! 16  seed      u64   seed of the data bytes (when they are not the pattern)
//! 24  seq       u64   write sequence number within the job, from 1 (one per block)
//! 32  time      u64   wall-clock time of the write, ns since the Unix epoch
//! 40  job       u32   the writing job's index in its job file, from 0
//! 44  clone     u32   its clone number (numjobs), from 0
//! 48  data_crc  u32   checksum of the data, bytes [header, len): crc32c, or
//!                     another checksum of up to 4 bytes (crc32, crc16, crc7,
//!                     xxhash; big-endian, right-aligned); else 0
//! 52  hdr_crc   u32   crc32c of bytes [0, 52)
//! 56  digest          verify=md5, sha*, crc64 only: the digest of the data,
//!                     padded to a multiple of 8 bytes (the header is then
//!                     56 + that long; `VerifyKind::header_len`)
//! ```
//!
//! What each kind checks: every kind checks magic, length, offset, seq (write
//! jobs know which write they expect) and the header crc — fio's `meta`
//! fields. `crc32c` adds the data crc, `pattern` compares the data with the
//! pattern, and `meta` with a `verify_pattern` compares it too. The other
//! checksums (`verify_digest`) check the data like crc32c; `null` checks
//! nothing (fio's "pretend to verify"). `time`, `job`
//! and `clone` are recorded for whoever reads a dump, not checked: a later
//! read job is another job, writing at another time (fio does not check them
//! either).
//!
//! Nothing here allocates except [`Layout::expected`], which only a
//! `verify_dump` of a mismatch calls.

use std::fmt;

use super::verify_digest::{self, head_of};
use crate::job::{VerifyKind, VerifySpec};

pub const HEADER_LEN: usize = VerifySpec::HEADER_LEN;
pub const MAGIC: u32 = u32::from_le_bytes(*b"iolb");
const AT_LEN: usize = 4;
const AT_OFFSET: usize = 8;
const AT_SEED: usize = 16;
const AT_SEQ: usize = 24;
const AT_TIME: usize = 32;
const AT_JOB: usize = 40;
const AT_CLONE: usize = 44;
const AT_DATA_CRC: usize = 48;
const AT_HDR_CRC: usize = 52;

/// Which part of a block did not match.
#[derive(
    schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    Magic,
    Length,
    Offset,
    Seq,
    HeaderCrc,
    /// crc32c or another CRC of the data.
    DataCrc,
    /// md5, sha*, or xxhash of the data.
    DataDigest,
    Pattern,
    /// The read returned fewer bytes than the block holds.
    ShortRead,
}

impl Field {
    /// A field of the block's header (its magic, length, offset, seq or
    /// header crc): the block's origin is unknown, so nothing can be rebuilt.
    pub fn in_header(self) -> bool {
        matches!(
            self,
            Field::Magic | Field::Length | Field::Offset | Field::Seq | Field::HeaderCrc
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            Field::Magic => "magic",
            Field::Length => "length",
            Field::Offset => "offset",
            Field::Seq => "seq",
            Field::HeaderCrc => "header crc",
            Field::DataCrc => "data crc",
            Field::DataDigest => "data digest",
            Field::Pattern => "pattern",
            Field::ShortRead => "short read",
        }
    }
}

/// One mismatch: where, which field, and the two values.
#[derive(
    schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize,
)]
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

/// Who writes: recorded in every header (fio's meta thread number).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriterId {
    pub job: u32,
    pub clone: u32,
}

/// One write as its headers describe it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write {
    pub offset: u64,
    pub seq: u64,
    /// Seed of the block; interval k's data comes from [`interval_seed`].
    pub seed: u64,
    pub time_ns: u64,
    pub origin: WriterId,
}

/// The seed of interval `k` of a block whose seed is `seed`.
#[inline]
pub fn interval_seed(seed: u64, k: usize) -> u64 {
    seed.wrapping_add((k as u64).wrapping_mul(0xD1B5_4A32_D192_ED03))
}

/// How a job's blocks are laid out and checked.
#[derive(Clone, Copy, Debug)]
pub struct Layout<'a> {
    pub kind: VerifyKind,
    /// Empty: the data is pseudo-random from each interval's seed.
    pub pattern: &'a [u8],
    /// Bytes per header; 0 = one header per block.
    pub interval: u32,
    /// fio's `verify_offset`: where in each interval the header is stored on
    /// the device, swapped with the data there (0 = at the start). The job
    /// checks guarantee `swap_at >= HEADER_LEN` and room in every interval.
    pub swap_at: u32,
}

impl Layout<'_> {
    /// Bytes per interval of a block of `len` bytes.
    #[inline]
    pub fn step(&self, len: usize) -> usize {
        match self.interval as usize {
            0 => len,
            iv => iv.min(len).max(1),
        }
    }

    /// Fill every interval of `buf` (a whole block) for write `w`.
    #[inline]
    pub fn fill(&self, buf: &mut [u8], w: &Write) {
        let step = self.step(buf.len());
        for (k, chunk) in buf.chunks_mut(step).enumerate() {
            let at = k * step;
            self.fill_interval(chunk, at, w.offset + at as u64, interval_seed(w.seed, k), w);
        }
    }

    /// Fill one interval at block position `at` (the pattern runs on from the
    /// block's start, as fio's does).
    #[inline]
    fn fill_interval(&self, chunk: &mut [u8], at: usize, offset: u64, seed: u64, w: &Write) {
        let h = self.kind.header_len();
        if chunk.len() < h {
            return;
        }
        if !self.pattern.is_empty() {
            fill_pattern(chunk, at, h, self.pattern);
        } else {
            fill_random(&mut chunk[h..], seed);
        }
        let data_crc = match self.kind {
            VerifyKind::Crc32c => crc32c::crc32c(&chunk[h..]),
            VerifyKind::Pattern | VerifyKind::Meta | VerifyKind::Null => 0,
            VerifyKind::Digest(d) => {
                let sum = verify_digest::digest(d, &chunk[h..]);
                if d.extra_header() == 0 {
                    sum.head() as u32
                } else {
                    chunk[HEADER_LEN..HEADER_LEN + d.size()].copy_from_slice(sum.as_bytes());
                    chunk[HEADER_LEN + d.size()..h].fill(0);
                    0
                }
            }
        };
        let len = chunk.len() as u32;
        chunk[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        put32(chunk, AT_LEN, len);
        put64(chunk, AT_OFFSET, offset);
        put64(chunk, AT_SEED, seed);
        put64(chunk, AT_SEQ, w.seq);
        put64(chunk, AT_TIME, w.time_ns);
        put32(chunk, AT_JOB, w.origin.job);
        put32(chunk, AT_CLONE, w.origin.clone);
        put32(chunk, AT_DATA_CRC, data_crc);
        let hc = crc32c::crc32c(&chunk[..AT_HDR_CRC]);
        put32(chunk, AT_HDR_CRC, hc);
        self.swap(chunk);
    }

    /// Swap the header with the bytes at `swap_at` (its own inverse: the
    /// write stores the swapped interval, the check swaps it back).
    #[inline]
    fn swap(&self, chunk: &mut [u8]) {
        let at = self.swap_at as usize;
        let h = self.kind.header_len();
        if at >= h && at + h <= chunk.len() {
            let (head, rest) = chunk.split_at_mut(at);
            head[..h].swap_with_slice(&mut rest[..h]);
        }
    }

    /// Check a block read from `offset`: the first interval that fails.
    /// `expected_seq` is known to write jobs (the last write there). With
    /// `swap_at` each interval's header is first swapped back into place, in
    /// `buf` itself (as fio does in its buffer), so a dump shows the block as
    /// it was before the write swapped it.
    pub fn check(
        &self,
        buf: &mut [u8],
        offset: u64,
        expected_seq: Option<u64>,
    ) -> Option<VerifyFailure> {
        let step = self.step(buf.len());
        buf.chunks_mut(step).enumerate().find_map(|(k, chunk)| {
            let at = k * step;
            self.swap(chunk);
            self.check_interval(chunk, at, offset + at as u64, expected_seq)
        })
    }

    fn check_interval(
        &self,
        chunk: &[u8],
        at: usize,
        offset: u64,
        expected_seq: Option<u64>,
    ) -> Option<VerifyFailure> {
        let len = chunk.len() as u32;
        let f = |field, e: u64, g: u64| Some(failure(offset, len, field, e, g, None));
        if self.kind == VerifyKind::Null {
            return None;
        }
        let h = self.kind.header_len();
        if chunk.len() < h {
            return f(Field::Length, h as u64, chunk.len() as u64);
        }
        let magic = le32(chunk, 0);
        if magic != MAGIC {
            return f(Field::Magic, MAGIC as u64, magic as u64);
        }
        let hlen = le32(chunk, AT_LEN);
        if hlen != len {
            return f(Field::Length, len as u64, hlen as u64);
        }
        let hoff = le64(chunk, AT_OFFSET);
        if hoff != offset {
            return f(Field::Offset, offset, hoff);
        }
        let seq = le64(chunk, AT_SEQ);
        if let Some(e) = expected_seq
            && seq != e
        {
            return f(Field::Seq, e, seq);
        }
        let hc = le32(chunk, AT_HDR_CRC);
        let want_hc = crc32c::crc32c(&chunk[..AT_HDR_CRC]);
        if hc != want_hc {
            return f(Field::HeaderCrc, want_hc as u64, hc as u64);
        }
        if self.kind.checksums_data() {
            if let Some((stored, actual)) = self.data_mismatch(chunk, h) {
                let bad = if self.pattern.is_empty() {
                    first_random_mismatch(&chunk[h..], le64(chunk, AT_SEED))
                        .map(|(i, e, g)| ((i + h) as u32, e, g))
                } else {
                    first_pattern_mismatch(chunk, at, h, self.pattern)
                };
                let field = match self.kind {
                    VerifyKind::Digest(d) if !d.is_crc() => Field::DataDigest,
                    _ => Field::DataCrc,
                };
                return Some(failure(offset, len, field, stored, actual, bad));
            }
        } else if !self.pattern.is_empty()
            && let Some((i, e, g)) = first_pattern_mismatch(chunk, at, h, self.pattern)
        {
            return Some(failure(
                offset,
                len,
                Field::Pattern,
                e as u64,
                g as u64,
                Some((i, e, g)),
            ));
        }
        None
    }

    /// The stored and the recomputed checksum of an interval's data (header
    /// `h` bytes) when they differ: a CRC's value, or a long digest's leading
    /// 8 bytes (every byte is compared).
    fn data_mismatch(&self, chunk: &[u8], h: usize) -> Option<(u64, u64)> {
        let stored32 = le32(chunk, AT_DATA_CRC) as u64;
        match self.kind {
            VerifyKind::Crc32c => {
                let actual = crc32c::crc32c(&chunk[h..]) as u64;
                (stored32 != actual).then_some((stored32, actual))
            }
            VerifyKind::Digest(d) => {
                let actual = verify_digest::digest(d, &chunk[h..]);
                if d.extra_header() == 0 {
                    (stored32 != actual.head()).then_some((stored32, actual.head()))
                } else {
                    let stored = &chunk[HEADER_LEN..HEADER_LEN + d.size()];
                    (stored != actual.as_bytes()).then(|| (head_of(stored), actual.head()))
                }
            }
            VerifyKind::Pattern | VerifyKind::Meta | VerifyKind::Null => None,
        }
    }

    /// What interval `k` of a block should have held, for a dump: regenerated
    /// from what the job knows (its expected seq and seed for a write job) and
    /// otherwise from the received header (a read job knows no more; the
    /// write time is always the received one). Allocates: failures only.
    pub fn expected(
        &self,
        received: &[u8],
        at: usize,
        offset: u64,
        known: Option<Write>,
    ) -> Vec<u8> {
        let mut out = vec![0u8; received.len()];
        if received.len() < self.kind.header_len() {
            return out;
        }
        let from_header = Write {
            offset,
            seq: le64(received, AT_SEQ),
            seed: le64(received, AT_SEED),
            time_ns: le64(received, AT_TIME),
            origin: WriterId {
                job: le32(received, AT_JOB),
                clone: le32(received, AT_CLONE),
            },
        };
        let (w, seed) = match known {
            Some(k) => {
                let step = self.step(received.len()).max(1);
                let w = Write {
                    time_ns: from_header.time_ns,
                    ..k
                };
                (w, interval_seed(k.seed, at / step))
            }
            None => (from_header, from_header.seed),
        };
        self.fill_interval(&mut out, at, offset, seed, &w);
        out
    }
}

/// A mismatch, as both the block check and the pattern-only check report it.
pub(crate) fn failure(
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

#[inline]
fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

#[inline]
fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The data bytes of an interval: a fast PRNG stream from its seed.
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

/// The pattern, repeated from the block's start, over an interval's data
/// (`at` = the interval's position in its block).
#[inline]
fn fill_pattern(chunk: &mut [u8], at: usize, header: usize, pattern: &[u8]) {
    for (i, b) in chunk.iter_mut().enumerate().skip(header) {
        *b = pattern[(at + i) % pattern.len()];
    }
}

/// First data byte of an interval that is not the pattern: (position in the
/// interval, expected, found).
fn first_pattern_mismatch(
    chunk: &[u8],
    at: usize,
    header: usize,
    pattern: &[u8],
) -> Option<(u32, u8, u8)> {
    chunk.iter().enumerate().skip(header).find_map(|(i, &g)| {
        let e = pattern[(at + i) % pattern.len()];
        (g != e).then_some((i as u32, e, g))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(offset: u64) -> Write {
        Write {
            offset,
            seq: 3,
            seed: 99,
            time_ns: 1,
            origin: WriterId { job: 1, clone: 2 },
        }
    }

    #[test]
    fn each_interval_has_its_own_header_and_a_flip_in_the_second_is_named_there() {
        let pat = [0xaa, 0x55, 0x5a, 0xa5];
        for (kind, pattern) in [
            (VerifyKind::Crc32c, &[][..]),
            (VerifyKind::Crc32c, &pat[..]),
            (VerifyKind::Meta, &pat[..]),
            (VerifyKind::Pattern, &pat[..]),
        ] {
            let l = Layout {
                kind,
                pattern,
                interval: 512,
                swap_at: 0,
            };
            let mut buf = vec![0u8; 2048];
            l.fill(&mut buf, &w(8192));
            assert_eq!(l.check(&mut buf.clone(), 8192, Some(3)), None, "{kind:?}");
            assert_eq!(le64(&buf, 512 + AT_OFFSET), 8192 + 512);
            let mut bad = buf.clone();
            bad[512 + 300] ^= 0x01;
            let f = l.check(&mut bad.clone(), 8192, Some(3)).expect("caught");
            assert_eq!((f.offset, f.len), (8192 + 512, 512), "{kind:?} {f}");
            assert_eq!(f.bad_byte.map(|b| b.0), Some(300), "{kind:?} {f}");
            // The dump's expected interval is the one written.
            let exp = l.expected(&bad[512..1024], 512, 8192 + 512, Some(w(8192)));
            assert_eq!(exp, buf[512..1024], "{kind:?}");
        }
    }

    #[test]
    fn meta_without_pattern_checks_the_header_only() {
        let l = Layout {
            kind: VerifyKind::Meta,
            pattern: &[],
            interval: 0,
            swap_at: 0,
        };
        let mut buf = vec![0u8; 4096];
        l.fill(&mut buf, &w(0));
        let mut data = buf.clone();
        data[1000] ^= 0xff;
        assert_eq!(l.check(&mut data.clone(), 0, Some(3)), None);
        // A block written at another offset is caught by its header.
        let f = l.check(&mut buf.clone(), 4096, Some(3)).unwrap();
        assert_eq!((f.field, f.expected, f.found), (Field::Offset, 4096, 0));
        let f = l.check(&mut buf.clone(), 0, Some(4)).unwrap();
        assert_eq!(f.field, Field::Seq);
        for pos in [AT_TIME, AT_JOB + 1, AT_CLONE, AT_SEED + 3] {
            let mut h = buf.clone();
            h[pos] ^= 1;
            assert_eq!(
                l.check(&mut h.clone(), 0, Some(3)).unwrap().field,
                Field::HeaderCrc
            );
        }
    }

    #[test]
    fn verify_offset_moves_the_header_on_the_device_and_back_for_the_check() {
        let l = Layout {
            kind: VerifyKind::Crc32c,
            pattern: &[],
            interval: 1024,
            swap_at: 200,
        };
        let mut buf = vec![0u8; 2048];
        l.fill(&mut buf, &w(4096));
        // On the device the header of each interval sits 200 bytes in.
        let plain = Layout { swap_at: 0, ..l };
        let mut unswapped = vec![0u8; 2048];
        plain.fill(&mut unswapped, &w(4096));
        for k in [0, 1024] {
            assert_eq!(
                buf[k + 200..k + 200 + HEADER_LEN],
                unswapped[k..k + HEADER_LEN]
            );
            assert_eq!(
                buf[k..k + HEADER_LEN],
                unswapped[k + 200..k + 200 + HEADER_LEN]
            );
        }
        // Read back, the check swaps in place and passes; the buffer is the
        // block as it was before the write swapped it.
        let mut back = buf.clone();
        assert_eq!(l.check(&mut back, 4096, Some(3)), None);
        assert_eq!(back, unswapped);
        // A layout that forgets the swap finds no header at the start.
        assert!(plain.check(&mut buf.clone(), 4096, Some(3)).is_some());
        // A flip in the moved header is caught in the second interval.
        let mut bad = buf.clone();
        bad[1024 + 200 + 3] ^= 1;
        let f = l.check(&mut bad, 4096, Some(3)).expect("caught");
        assert_eq!(f.offset, 4096 + 1024);
    }
}
