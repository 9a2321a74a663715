//! What write requests carry: fio's buffer-contents options, with fio's
//! meaning, because compressing and deduplicating targets (zram, a
//! compressing SSD, a dedupe appliance) store and time real data differently.
//!
//! - `zero_buffers`: every buffer is zeros (fio's default is random data).
//! - `buffer_pattern`: buffers hold this byte pattern, repeated from the start
//!   of each buffer.
//! - `buffer_compress_percentage=P` with `buffer_compress_chunk=C` (default
//!   512; 0 = the whole request): every C-byte chunk is `(100-P)%` random bytes
//!   followed by fixed bytes (zeros, or `buffer_pattern`), so a compressor
//!   shrinks the data to about `(100-P)%` of its size.
//! - `dedupe_percentage=D`: D % of the writes repeat the content of the last
//!   unique write byte for byte (fio's default `dedupe_mode=repeat`); the
//!   others are new.
//! - `dedupe_mode=working_set`: the repeats carry a page drawn from a working
//!   set instead (`workload::dedupe`, with `dedupe_global`).
//! - `refill_buffers`: new content for every write instead of reusing what
//!   setup put there. Turned on by itself, as in fio, by
//!   `dedupe_percentage`, and by `buffer_compress_percentage` below 100, so
//!   neighbouring blocks do not compress together. `zero_buffers` and a
//!   plain `buffer_pattern` need no refill: their content never changes.
//! - `scramble_buffers` (fio's default: on): when buffers are not refilled,
//!   each write stamps 16 bytes that change per write into every 512-byte
//!   sector, so the same slot written twice is not a naive duplicate. It only
//!   touches random buffers: iolab does not scramble zeros, a pattern or
//!   compressible data, whose bytes on the device are what the user asked for.
//!
//! Setup fills every slot's buffer ([`BufferFill::prepare`]); per write the
//! worker calls [`BufferFill::before_write`], which writes into the slot's
//! preallocated buffer with a generator kept in the struct: no allocation, no
//! syscall, no lock. Content is a pure function of a 64-bit seed, which is how
//! a dedupe repeat reproduces an earlier write without keeping a copy.
//! With `verify`, the verifier writes the data instead (its own headers and
//! pattern), as fio's verify overrides the buffer options.

use crate::buf::Buffers;
pub use crate::job::buffers::BufferSpec;
use crate::workload::dedupe::{self, WorkingSet};

/// Bytes per sector that `scramble_buffers` stamps (fio's sector size).
const SCRAMBLE_SECTOR: usize = 512;

/// Small, fast generator (splitmix64): content is a pure function of its seed.
#[derive(Clone, Copy, Debug)]
struct Gen(u64);

impl Gen {
    #[inline]
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    #[inline]
    fn fill(&mut self, buf: &mut [u8]) {
        let mut words = buf.chunks_exact_mut(8);
        for w in &mut words {
            w.copy_from_slice(&self.next().to_ne_bytes());
        }
        let tail = words.into_remainder();
        let last = self.next().to_ne_bytes();
        tail.copy_from_slice(&last[..tail.len()]);
    }
}

/// One stream's buffer filler: the spec, its generator and the dedupe state.
#[derive(Clone, Debug)]
pub struct BufferFill {
    spec: BufferSpec,
    refills: bool,
    scrambles: bool,
    rng: Gen,
    /// Seed of the last unique write (dedupe repeats it).
    last_unique: Option<u64>,
    /// Writes stamped so far (`scramble_buffers`).
    stamps: u64,
    /// `dedupe_mode=working_set`: the pages repeats draw from, ...
    working_set: Option<WorkingSet>,
    /// ... the seed the unique pages derive from, and how many were written.
    own: u64,
    unique: u64,
}

impl BufferFill {
    pub fn new(spec: &BufferSpec, seed: u64) -> BufferFill {
        BufferFill {
            refills: spec.refills(),
            scrambles: spec.scrambles(),
            spec: spec.clone(),
            rng: Gen(seed ^ 0x0062_7566_6665_7273),
            last_unique: None,
            stamps: 0,
            working_set: None,
            own: seed,
            unique: 0,
        }
    }

    /// Repeats draw from `ws` (`dedupe_mode=working_set`); unique writes
    /// carry the pages of this filler's seed in order.
    pub fn with_working_set(mut self, ws: Option<WorkingSet>) -> BufferFill {
        self.working_set = ws;
        self
    }

    /// Whether writes need [`before_write`](Self::before_write) at all.
    pub fn per_write(&self) -> bool {
        self.refills || self.scrambles
    }

    /// Fill every slot's buffer before the clock starts.
    pub fn prepare(&mut self, bufs: &mut Buffers) {
        let size = bufs.size();
        for (i, buf) in bufs.as_mut_slice().chunks_exact_mut(size).enumerate() {
            let seed = self.rng.next() ^ i as u64;
            self.content(buf, seed);
        }
    }

    /// Make `buf` (the request's slice of its slot buffer) hold what this
    /// write should carry. Hot path: no allocation.
    #[inline]
    pub fn before_write(&mut self, buf: &mut [u8], offset: u64) {
        if let Some(ws) = &self.working_set {
            let seed = if Self::repeat(&mut self.rng, self.spec.dedupe_percentage) {
                ws.page(self.rng.next())
            } else {
                self.unique += 1;
                dedupe::page_seed(self.own, self.unique - 1)
            };
            self.content(buf, seed);
        } else if self.refills {
            let seed = match self.last_unique {
                Some(s) if Self::repeat(&mut self.rng, self.spec.dedupe_percentage) => s,
                _ => {
                    let s = self.rng.next();
                    self.last_unique = Some(s);
                    s
                }
            };
            self.content(buf, seed);
        } else if self.scrambles {
            self.stamp(buf, offset);
        }
    }

    /// This write repeats the last unique one (`dedupe_percentage`).
    #[inline]
    fn repeat(rng: &mut Gen, d: u32) -> bool {
        d >= 100 || (d > 0 && rng.next() % 100 < u64::from(d))
    }

    /// The content for `seed`, filling all of `buf`.
    fn content(&self, buf: &mut [u8], seed: u64) {
        let mut g = Gen(seed);
        if self.spec.zero {
            buf.fill(0);
        } else if let Some(p) = self.spec.compress_percentage {
            let chunk = match self.spec.compress_chunk as usize {
                0 => buf.len().max(1),
                c => c,
            };
            for c in buf.chunks_mut(chunk) {
                // Random head, fixed tail: the tail is what compresses away.
                let random = c.len() * (100 - p.min(100)) as usize / 100;
                let (head, tail) = c.split_at_mut(random);
                g.fill(head);
                fill_pattern(tail, &self.spec.pattern);
            }
        } else if !self.spec.pattern.is_empty() {
            fill_pattern(buf, &self.spec.pattern);
        } else {
            g.fill(buf);
        }
    }

    /// `scramble_buffers`: 16 bytes per 512-byte sector that differ per write,
    /// at a place that depends on the sector.
    #[inline]
    fn stamp(&mut self, buf: &mut [u8], offset: u64) {
        self.stamps += 1;
        let mark = (offset ^ self.stamps.rotate_left(32)).to_ne_bytes();
        let count = self.stamps.to_ne_bytes();
        for (i, sector) in buf.chunks_mut(SCRAMBLE_SECTOR).enumerate() {
            if sector.len() < 16 {
                break;
            }
            let slots = (sector.len() - 16) / 8 + 1;
            // A fixed place per sector: each write overwrites the last stamp,
            // so the buffer stays random apart from these 16 bytes (moving
            // stamps would pile up into compressible data).
            let at = ((i * 7) % slots) * 8;
            sector[at..at + 8].copy_from_slice(&mark);
            sector[at + 8..at + 16].copy_from_slice(&count);
        }
    }
}

/// `pattern` repeated from the start of `buf`; zeros when there is none.
fn fill_pattern(buf: &mut [u8], pattern: &[u8]) {
    if pattern.is_empty() {
        buf.fill(0);
        return;
    }
    for c in buf.chunks_mut(pattern.len()) {
        c.copy_from_slice(&pattern[..c.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> BufferSpec {
        BufferSpec::default()
    }

    fn zero_bytes(b: &[u8]) -> usize {
        b.iter().filter(|&&x| x == 0).count()
    }

    #[test]
    fn implied_refill_and_scramble_follow_fio() {
        assert!(!spec().refills() && spec().scrambles());
        let s = BufferSpec {
            dedupe_percentage: 10,
            ..spec()
        };
        assert!(s.refills() && !s.scrambles());
        let s = BufferSpec {
            compress_percentage: Some(50),
            ..spec()
        };
        assert!(s.refills());
        let s = BufferSpec {
            compress_percentage: Some(100),
            ..spec()
        };
        assert!(!s.refills() && !s.scrambles());
        let s = BufferSpec {
            zero: true,
            refill: true,
            ..spec()
        };
        assert!(!s.refills() && !s.scrambles(), "zeros stay zeros");
    }

    #[test]
    fn compress_percentage_sets_the_fixed_share_per_chunk() {
        let mut buf = vec![0xffu8; 4096];
        for (p, chunk) in [(0, 512), (25, 512), (50, 512), (75, 0), (100, 1024)] {
            let s = BufferSpec {
                compress_percentage: Some(p),
                compress_chunk: chunk,
                ..spec()
            };
            let mut f = BufferFill::new(&s, 1);
            // Setup's fill; per write only below 100 % (refill).
            f.content(&mut buf, 9);
            assert_eq!(f.per_write(), p < 100);
            f.before_write(&mut buf, 0);
            let zeros = zero_bytes(&buf) as f64 / buf.len() as f64;
            // Random bytes are zero 1/256 of the time.
            assert!(
                (zeros - p as f64 / 100.0).abs() < 0.02,
                "{p}% / chunk {chunk}: {zeros}"
            );
            let c = if chunk == 0 { 4096 } else { chunk as usize };
            let tail = c * p as usize / 100;
            assert!(
                buf[c - tail..c].iter().all(|&x| x == 0),
                "tail of each chunk is fixed"
            );
        }
    }

    #[test]
    fn pattern_repeats_from_each_buffer_start() {
        let s = BufferSpec {
            pattern: b"abc".to_vec(),
            ..spec()
        };
        let mut f = BufferFill::new(&s, 1);
        let mut bufs = Buffers::new(2, 4096, 4096).unwrap();
        f.prepare(&mut bufs);
        let all = bufs.as_mut_slice();
        assert_eq!(&all[..7], b"abcabca");
        assert_eq!(&all[4096..4099], b"abc");
        assert!(!f.per_write(), "a pattern never changes");
    }

    #[test]
    fn dedupe_repeats_the_last_unique_write() {
        let s = BufferSpec {
            dedupe_percentage: 40,
            ..spec()
        };
        let mut f = BufferFill::new(&s, 7);
        let (mut prev, mut buf) = (vec![0u8; 4096], vec![0u8; 4096]);
        let mut repeats = 0;
        for i in 0..2000u64 {
            f.before_write(&mut buf, i * 4096);
            if i > 0 && buf == prev {
                repeats += 1;
            }
            prev.copy_from_slice(&buf);
        }
        // A repeat equals the previous write when that one was unique or a
        // repeat of the same; so every repeat shows as equal to its predecessor.
        assert!((700..=900).contains(&repeats), "{repeats} of 2000 at 40%");
    }

    #[test]
    fn scramble_changes_every_sector_of_a_reused_buffer() {
        let mut bufs = Buffers::new(1, 4096, 4096).unwrap();
        let mut f = BufferFill::new(&spec(), 3);
        f.prepare(&mut bufs);
        let before = bufs.as_mut_slice().to_vec();
        f.before_write(bufs.as_mut_slice(), 0);
        let after = bufs.as_mut_slice().to_vec();
        for _ in 0..200 {
            f.before_write(bufs.as_mut_slice(), 0);
        }
        let later = bufs.as_mut_slice().to_vec();
        assert_ne!(after, later);
        for ((a, b), c) in before
            .chunks(512)
            .zip(after.chunks(512))
            .zip(later.chunks(512))
        {
            assert_ne!(a, b, "each sector differs");
            for x in [b, c] {
                let same = a.iter().zip(x).filter(|(p, q)| p == q).count();
                assert!(
                    same >= 512 - 16,
                    "only the stamp changes, even after many writes"
                );
            }
        }
        let mut zero = BufferFill::new(
            &BufferSpec {
                zero: true,
                ..spec()
            },
            3,
        );
        zero.prepare(&mut bufs);
        zero.before_write(bufs.as_mut_slice(), 0);
        assert_eq!(
            zero_bytes(bufs.as_mut_slice()),
            4096,
            "zero_buffers stays zero"
        );
    }
}
