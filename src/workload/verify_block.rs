//! fio's on-device layout of a verified block (fio 3.33's `verify.c`), so
//! that fio checks what iolab wrote and iolab checks what fio wrote.
//!
//! A block is split into intervals (`verify_interval`; the whole block when
//! the block is shorter or `bs_unaligned` is set). The whole block is first
//! filled with data: `verify_pattern` repeated from the block's start, or
//! fio's pseudo-random bytes from the write's seed ([`fill_random`]). Then
//! every interval gets, at its start, fio's common header (little endian):
//!
//! ```text
//!  0  magic        u16  0xacca
//!  2  verify_type  u16  fio's number of the kind (VerifyKind::fio_type)
//!  4  len          u32  interval length in bytes
//!  8  rand_seed    u64  seed of the block's random data (0 with a pattern)
//! 16  offset       u64  where the interval was written
//! 24  time_sec     u32  when (wall clock)
//! 28  time_nsec    u32
//! 32  thread       u16  the writing job clone's fio thread number, from 1
//! 34  numberio     u16  the job's write count before this write
//! 36  crc32        u32  fio's crc32c of bytes [0, 36)
//! 40  the checksum's own header: the checksum of bytes [header_len, len)
//!     of the interval (`verify_digest::fio_vhdr`)
//! ```
//!
//! `verify_offset` then swaps the header with the bytes that far in.
//! `verify=pattern` writes no header at all; `verify=null` writes nothing of
//! its own (the buffer keeps its ordinary contents) and checks nothing.
//!
//! The checks are fio's: magic, length, offset, numberio (write jobs, which
//! know which write they expect) and the header crc, then the checksum or
//! the pattern. The seed is not compared (fio compares it only for mixed
//! jobs, from a replay of its generator; the checksum covers the data it
//! made), nor are time, type and thread.
//!
//! Nothing here allocates on the way of a block that checks clean; a
//! mismatch rebuilds the expected block to name the first bad byte.

use std::fmt;

use super::verify_digest::{fio_crc32c, fio_vhdr, vhdr_value};
use crate::job::{VerifyKind, VerifySpec};

pub const HEADER_LEN: usize = VerifySpec::HEADER_LEN;
pub const MAGIC: u16 = 0xacca;
const AT_TYPE: usize = 2;
const AT_LEN: usize = 4;
const AT_SEED: usize = 8;
const AT_OFFSET: usize = 16;
const AT_SEC: usize = 24;
const AT_NSEC: usize = 28;
const AT_THREAD: usize = 32;
const AT_NUMBERIO: usize = 34;
const AT_HDR_CRC: usize = 36;
/// Most bytes a checksum header holds (fio's sha512 one).
const MAX_VHDR: usize = 128;

/// Which part of a block did not match.
#[derive(
    schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    Magic,
    Length,
    Offset,
    /// fio's numberio: which write of the job the block is.
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
    /// A field of the block's header (its magic, length, offset, numberio
    /// or header crc): the block's origin is unknown, so nothing can be
    /// rebuilt.
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
            Field::Seq => "numberio",
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
    /// Offset of the interval (the block without verify_interval) on the
    /// target: the offset fio's message names.
    pub offset: u64,
    pub len: u32,
    pub field: Field,
    pub expected: u64,
    pub found: u64,
    /// First differing byte within the interval, with its expected and
    /// found values, when the data could be compared byte by byte.
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

/// One write as its headers describe it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write {
    pub offset: u64,
    /// The job's writes issued before this one (fio keeps 16 bits).
    pub numberio: u16,
    /// Seed of the block's random data (fio's `rand_seed`).
    pub seed: u64,
    pub time_sec: u32,
    pub time_nsec: u32,
    /// fio's thread number of the writing job clone.
    pub thread: u16,
}

/// How a job's blocks are laid out and checked.
#[derive(Clone, Copy, Debug)]
pub struct Layout<'a> {
    pub kind: VerifyKind,
    /// Empty: the data is pseudo-random from the block's seed.
    pub pattern: &'a [u8],
    /// Bytes per header (fio's `verify_interval`, as the job checks left it).
    pub interval: u32,
    /// `bs_unaligned`: one header per block, whatever the interval.
    pub unaligned: bool,
    /// fio's `verify_offset`: where in each interval the header is stored on
    /// the device, swapped with the data there (0 = at the start).
    pub swap_at: u32,
    /// `buffer_compress_percentage` and `buffer_pattern`: fio fills the part
    /// of a verified block that is not random as it fills any buffer.
    pub compress: u32,
    pub buffer_pattern: &'a [u8],
}

impl Layout<'_> {
    /// Bytes per interval of a block of `len` bytes (fio's `get_hdr_inc`).
    #[inline]
    pub fn step(&self, len: usize) -> usize {
        let iv = self.interval as usize;
        if iv != 0 && iv <= len && !self.unaligned {
            iv
        } else {
            len.max(1)
        }
    }

    fn header_len(&self) -> usize {
        self.kind.header_len()
    }

    /// Fill `buf` (a whole block) for write `w`: the data, then every
    /// interval's header and checksum.
    #[inline]
    pub fn fill(&self, buf: &mut [u8], w: &Write) {
        if self.kind == VerifyKind::Null {
            return;
        }
        self.fill_data(buf, w.seed);
        let step = self.step(buf.len());
        for (k, chunk) in buf.chunks_mut(step).enumerate() {
            self.seal(chunk, w.offset + (k * step) as u64, w);
        }
    }

    /// The block's data before the headers: the pattern from the block's
    /// start, or fio's random bytes from `seed`.
    #[inline]
    fn fill_data(&self, buf: &mut [u8], seed: u64) {
        if self.pattern.is_empty() {
            fill_random_percentage(buf, seed, self.compress, self.buffer_pattern);
        } else {
            fill_pattern(buf, 0, self.pattern);
        }
    }

    /// Write the header and checksum of one interval (already holding its
    /// data) written at `offset`, then swap it to `verify_offset`.
    #[inline]
    fn seal(&self, chunk: &mut [u8], offset: u64, w: &Write) {
        let h = self.header_len();
        if h == 0 || chunk.len() <= h {
            return;
        }
        chunk[0..2].copy_from_slice(&MAGIC.to_le_bytes());
        chunk[AT_TYPE..AT_TYPE + 2].copy_from_slice(&self.kind.fio_type().to_le_bytes());
        put32(chunk, AT_LEN, chunk.len() as u32);
        put64(chunk, AT_SEED, w.seed);
        put64(chunk, AT_OFFSET, offset);
        put32(chunk, AT_SEC, w.time_sec);
        put32(chunk, AT_NSEC, w.time_nsec);
        chunk[AT_THREAD..AT_THREAD + 2].copy_from_slice(&w.thread.to_le_bytes());
        chunk[AT_NUMBERIO..AT_NUMBERIO + 2].copy_from_slice(&w.numberio.to_le_bytes());
        let hc = fio_crc32c(&chunk[..AT_HDR_CRC]);
        put32(chunk, AT_HDR_CRC, hc);
        let (head, data) = chunk.split_at_mut(h);
        fio_vhdr(self.kind, data, &mut head[HEADER_LEN..]);
        self.swap(chunk);
    }

    /// Swap the header with the bytes at `swap_at` (its own inverse: the
    /// write stores the swapped interval, the check swaps it back).
    #[inline]
    fn swap(&self, chunk: &mut [u8]) {
        let at = self.swap_at as usize;
        let h = self.header_len();
        if h > 0 && at >= h && at + h <= chunk.len() {
            let (head, rest) = chunk.split_at_mut(at);
            head[..h].swap_with_slice(&mut rest[..h]);
        }
    }

    /// Check a block read from `offset`: the first interval that fails.
    /// `numberio` is known to write jobs (the last write there). With
    /// `verify_offset` each interval's header is first swapped back into
    /// place, in `buf` itself (as fio does in its buffer), so a dump shows
    /// the block as it was before the write swapped it.
    pub fn check(
        &self,
        buf: &mut [u8],
        offset: u64,
        numberio: Option<u16>,
    ) -> Option<VerifyFailure> {
        if self.kind == VerifyKind::Null {
            return None;
        }
        let step = self.step(buf.len());
        let block_len = buf.len();
        let mut found = None;
        for (k, chunk) in buf.chunks_mut(step).enumerate() {
            self.swap(chunk);
            found = self.check_interval(chunk, k * step, block_len, offset, numberio);
            if found.is_some() {
                break;
            }
        }
        found
    }

    fn check_interval(
        &self,
        chunk: &[u8],
        at: usize,
        block_len: usize,
        block_offset: u64,
        numberio: Option<u16>,
    ) -> Option<VerifyFailure> {
        let offset = block_offset + at as u64;
        let len = chunk.len() as u32;
        let f = |field, e: u64, g: u64| Some(failure(offset, len, field, e, g, None));
        let h = self.header_len();
        if chunk.len() <= h {
            return f(Field::Length, h as u64 + 1, chunk.len() as u64);
        }
        if h > 0 {
            let magic = le16(chunk, 0);
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
            let nio = le16(chunk, AT_NUMBERIO);
            if let Some(e) = numberio
                && nio != e
            {
                return f(Field::Seq, e as u64, nio as u64);
            }
            let hc = le32(chunk, AT_HDR_CRC);
            let want_hc = fio_crc32c(&chunk[..AT_HDR_CRC]);
            if hc != want_hc {
                return f(Field::HeaderCrc, want_hc as u64, hc as u64);
            }
        }
        if self.kind.checksums_data() {
            let mut actual = [0u8; MAX_VHDR];
            let vlen = h - HEADER_LEN;
            fio_vhdr(self.kind, &chunk[h..], &mut actual[..vlen]);
            let stored = &chunk[HEADER_LEN..h];
            if stored != &actual[..vlen] {
                let field = match self.kind {
                    VerifyKind::Digest(d) if !d.is_crc() => Field::DataDigest,
                    _ => Field::DataCrc,
                };
                let bad = self.first_bad_data_byte(chunk, at, block_len);
                return Some(failure(
                    offset,
                    len,
                    field,
                    vhdr_value(self.kind, stored),
                    vhdr_value(self.kind, &actual[..vlen]),
                    bad,
                ));
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

    /// The first data byte of a failed interval that differs from what the
    /// header's seed (or the pattern) makes: position in the interval,
    /// expected, found. Cold: rebuilds the block's data.
    #[cold]
    fn first_bad_data_byte(
        &self,
        chunk: &[u8],
        at: usize,
        block_len: usize,
    ) -> Option<(u32, u8, u8)> {
        let h = self.header_len();
        if !self.pattern.is_empty() {
            return first_pattern_mismatch(chunk, at, h, self.pattern);
        }
        // The expected bytes are made as a stream, not in a buffer: a
        // failure, like any request, allocates nothing.
        let want = expected_bytes(
            block_len,
            le64(chunk, AT_SEED),
            self.compress,
            self.buffer_pattern,
        );
        chunk
            .iter()
            .zip(want.skip(at))
            .enumerate()
            .skip(h)
            .find(|(_, (g, e))| **g != *e)
            .map(|(i, (&g, e))| (i as u32, e, g))
    }

    /// What interval `at` of a block should have held, for a dump, in the
    /// layout before any `verify_offset` swap (as the check leaves the
    /// received bytes): rebuilt from the received header (its seed, time
    /// and thread), with the numberio the job expected if it knows one.
    /// Allocates: failures only.
    pub fn expected(
        &self,
        received: &[u8],
        at: usize,
        block_len: usize,
        block_offset: u64,
        numberio: Option<u16>,
    ) -> Vec<u8> {
        let mut block = vec![0u8; block_len];
        let h = self.header_len();
        let w = if h > 0 && received.len() > h {
            Write {
                offset: block_offset,
                numberio: numberio.unwrap_or(le16(received, AT_NUMBERIO)),
                seed: le64(received, AT_SEED),
                time_sec: le32(received, AT_SEC),
                time_nsec: le32(received, AT_NSEC),
                thread: le16(received, AT_THREAD),
            }
        } else {
            Write {
                offset: block_offset,
                numberio: 0,
                seed: 0,
                time_sec: 0,
                time_nsec: 0,
                thread: 0,
            }
        };
        self.fill_data(&mut block, w.seed);
        let mut out = block[at..at + received.len()].to_vec();
        let unswapped = Layout {
            swap_at: 0,
            ..*self
        };
        unswapped.seal(&mut out, block_offset + at as u64, &w);
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

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The multiplier of fio's buffer hash (`__hash_u64`).
const GOLDEN_RATIO_64: u64 = 0x61c8_8646_80b5_83eb;
/// fio's seed buckets (its build's default, 4: Debian's fio uses it).
const SEED_BUCKETS: usize = 4;
const PRIMES: [u64; SEED_BUCKETS] = [1, 2, 3, 5];

/// fio's random buffer bytes from `seed` (`__fill_random_buf`): 8-byte
/// words in groups of [`SEED_BUCKETS`], word `p` of every group following its
/// own stream `seed * prime[p]`, each word the previous one times the golden
/// ratio; what is left after the last whole group continues bucket 0's
/// stream, its last partial word cut short.
#[inline]
pub fn fill_random(data: &mut [u8], seed: u64) {
    let mut s: [u64; SEED_BUCKETS] = PRIMES.map(|p| seed.wrapping_mul(p));
    let group = 8 * SEED_BUCKETS;
    let whole = data.len() / group * group;
    let (groups, rest) = data.split_at_mut(whole);
    for g in groups.chunks_exact_mut(group) {
        for (w, sp) in g.chunks_exact_mut(8).zip(s.iter_mut()) {
            w.copy_from_slice(&sp.to_le_bytes());
            *sp = sp.wrapping_mul(GOLDEN_RATIO_64);
        }
    }
    let mut s0 = s[0];
    let mut words = rest.chunks_exact_mut(8);
    for w in &mut words {
        w.copy_from_slice(&s0.to_le_bytes());
        s0 = s0.wrapping_mul(GOLDEN_RATIO_64);
    }
    let tail = words.into_remainder();
    let n = tail.len();
    tail.copy_from_slice(&s0.to_le_bytes()[..n]);
}

/// fio's verify buffer fill (`__fill_random_buf_percentage` with the block
/// as one segment): the first `100 - compress`% of the block random, the
/// rest `buffer_pattern` (or zeroes); all of it pattern at 100%.
#[inline]
fn fill_random_percentage(buf: &mut [u8], seed: u64, compress: u32, buffer_pattern: &[u8]) {
    let fill_rest = |b: &mut [u8]| {
        if buffer_pattern.is_empty() {
            b.fill(0);
        } else {
            fill_pattern(b, 0, buffer_pattern);
        }
    };
    if compress >= 100 {
        fill_rest(buf);
        return;
    }
    let random = (buf.len() as u64 * (100 - compress as u64) / 100) as usize;
    let (r, rest) = buf.split_at_mut(random.min(buf.len()));
    fill_random(r, seed);
    fill_rest(rest);
}

/// The bytes [`fill_random_percentage`] writes into a block of `len`, one by
/// one, without a buffer (for the first differing byte of a failure).
fn expected_bytes<'a>(
    len: usize,
    seed: u64,
    compress: u32,
    buffer_pattern: &'a [u8],
) -> impl Iterator<Item = u8> + 'a {
    let random = if compress >= 100 {
        0
    } else {
        (len as u64 * (100 - compress as u64) / 100) as usize
    }
    .min(len);
    let group = 8 * SEED_BUCKETS;
    // fill_random over the first `random` bytes: whole groups of words,
    // then the rest from the first word's stream.
    let whole = random / group * group;
    let mut s: [u64; SEED_BUCKETS] = PRIMES.map(|p| seed.wrapping_mul(p));
    (0..len).map(move |i| {
        if i >= random {
            return if buffer_pattern.is_empty() {
                0
            } else {
                buffer_pattern[(i - random) % buffer_pattern.len()]
            };
        }
        let (k, byte) = if i < whole {
            ((i % group) / 8, (i % group) % 8)
        } else {
            (0, (i - whole) % 8)
        };
        let b = s[k].to_le_bytes()[byte];
        if byte == 7 {
            s[k] = s[k].wrapping_mul(GOLDEN_RATIO_64);
        }
        b
    })
}

/// The pattern, repeated from position `at` of it, over `buf`.
#[inline]
fn fill_pattern(buf: &mut [u8], at: usize, pattern: &[u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern[(at + i) % pattern.len()];
    }
}

/// First data byte of an interval that is not the pattern: (position in the
/// interval, expected, found). The pattern runs from the block's start
/// (`at` = the interval's position in its block).
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
    use crate::job::Digest;

    #[test]
    fn the_expected_byte_stream_is_the_fill() {
        for len in [0usize, 1, 7, 8, 31, 32, 33, 100, 512, 4096, 4099] {
            for compress in [0u32, 1, 37, 50, 99, 100] {
                for pattern in [&[][..], &[0xab, 0xcd, 0xef][..]] {
                    let mut buf = vec![0x55u8; len];
                    fill_random_percentage(&mut buf, 0x1234_5678_9abc, compress, pattern);
                    let got: Vec<u8> =
                        expected_bytes(len, 0x1234_5678_9abc, compress, pattern).collect();
                    assert_eq!(
                        got, buf,
                        "len {len} compress {compress} pattern {pattern:?}"
                    );
                }
            }
        }
    }

    fn w(offset: u64) -> Write {
        Write {
            offset,
            numberio: 3,
            seed: 99,
            time_sec: 1,
            time_nsec: 2,
            thread: 1,
        }
    }

    fn layout(kind: VerifyKind, pattern: &[u8], interval: u32, swap_at: u32) -> Layout<'_> {
        Layout {
            kind,
            pattern,
            interval,
            unaligned: false,
            swap_at,
            compress: 0,
            buffer_pattern: &[],
        }
    }

    #[test]
    fn random_data_is_fios_bucketed_golden_ratio_stream() {
        let mut b = [0u8; 44];
        fill_random(&mut b, 7);
        let word = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!(word(0), 7);
        assert_eq!(word(1), 14);
        assert_eq!(word(3), 35);
        // After one group of four, the rest continue bucket 0's stream.
        assert_eq!(word(4), 7u64.wrapping_mul(GOLDEN_RATIO_64));
        assert_eq!(
            b[40..44],
            7u64.wrapping_mul(GOLDEN_RATIO_64)
                .wrapping_mul(GOLDEN_RATIO_64)
                .to_le_bytes()[..4]
        );
    }

    #[test]
    fn each_interval_has_its_own_header_and_a_flip_in_the_second_is_named_there() {
        let pat = [0xaa, 0x55, 0x5a, 0xa5];
        for (kind, pattern) in [
            (VerifyKind::Crc32c, &[][..]),
            (VerifyKind::Crc32c, &pat[..]),
            (VerifyKind::Meta, &pat[..]),
            (VerifyKind::Pattern, &pat[..]),
            (VerifyKind::PatternHeader, &pat[..]),
            (VerifyKind::Digest(Digest::Sha256), &[][..]),
        ] {
            let l = layout(kind, pattern, 512, 0);
            let mut buf = vec![0u8; 2048];
            l.fill(&mut buf, &w(8192));
            assert_eq!(l.check(&mut buf.clone(), 8192, Some(3)), None, "{kind:?}");
            if kind != VerifyKind::Pattern {
                assert_eq!(le64(&buf, 512 + AT_OFFSET), 8192 + 512);
            }
            let mut bad = buf.clone();
            bad[512 + 300] ^= 0x01;
            let f = l.check(&mut bad.clone(), 8192, Some(3)).expect("caught");
            assert_eq!((f.offset, f.len), (8192 + 512, 512), "{kind:?} {f}");
            assert_eq!(f.bad_byte.map(|b| b.0), Some(300), "{kind:?} {f}");
            // The dump's expected interval is the one written.
            let exp = l.expected(&bad[512..1024], 512, 2048, 8192, Some(3));
            assert_eq!(exp, buf[512..1024], "{kind:?}");
        }
    }

    #[test]
    fn meta_without_pattern_checks_the_header_only() {
        let l = layout(VerifyKind::Meta, &[], 0, 0);
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
        for pos in [AT_SEC, AT_THREAD + 1, AT_NSEC, AT_SEED + 3, AT_TYPE] {
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
        let l = layout(VerifyKind::Crc32c, &[], 1024, 200);
        let h = l.header_len();
        let mut buf = vec![0u8; 2048];
        l.fill(&mut buf, &w(4096));
        // On the device the header of each interval sits 200 bytes in.
        let plain = Layout { swap_at: 0, ..l };
        let mut unswapped = vec![0u8; 2048];
        plain.fill(&mut unswapped, &w(4096));
        for k in [0, 1024] {
            assert_eq!(buf[k + 200..k + 200 + h], unswapped[k..k + h]);
            assert_eq!(buf[k..k + h], unswapped[k + 200..k + 200 + h]);
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

    #[test]
    fn strict_pattern_has_no_header_and_null_nothing() {
        let pat = [1u8, 2, 3];
        let l = layout(VerifyKind::Pattern, &pat, 0, 0);
        let mut buf = vec![0u8; 512];
        l.fill(&mut buf, &w(0));
        assert!(buf.iter().enumerate().all(|(i, &b)| b == pat[i % 3]));
        let n = layout(VerifyKind::Null, &[], 0, 0);
        let mut z = vec![9u8; 512];
        n.fill(&mut z, &w(0));
        assert!(z.iter().all(|&b| b == 9));
        assert_eq!(n.check(&mut z, 0, Some(1)), None);
    }
}
