//! fio's verify checksums other than crc32c, computed with the crates that
//! implement them (RustCrypto's md-5, sha1, sha2, sha3; xxhash-rust; crc).
//! Each is fio's algorithm exactly — polynomial, initial value, reflection
//! and final xor — so the digest of the same bytes equals the one fio's
//! `verify=` stores (the tests check the CRCs against entries of fio's own
//! tables). [`fio_vhdr`] stores a checksum as fio's `verify=` stores it in
//! the checksum's header after fio's common header: CRCs little endian,
//! sha1's five words each little endian, and fio's own sha256 and sha512
//! quirks (see there).
//!
//! Nothing here allocates: a digest lands in a fixed 64-byte array.

use crc::{Algorithm, CRC_7_MMC, CRC_16_ARC, Crc};
use md5::Digest as _;

use crate::job::{Digest, VerifyKind};

/// fio's crc64: the Jones polynomial, reflected, initial value 0, no final
/// xor (the same parameters as Redis's CRC-64).
const FIO_CRC64: Algorithm<u64> = Algorithm {
    width: 64,
    poly: 0xad93_d235_94c9_35a9,
    init: 0,
    refin: true,
    refout: true,
    xorout: 0,
    check: 0xe9c6_d914_c4b8_d9ca,
    residue: 0,
};

/// fio's crc32: the POSIX `cksum` polynomial, not reflected, initial value 0,
/// and neither cksum's final xor nor its length suffix.
const FIO_CRC32: Algorithm<u32> = Algorithm {
    width: 32,
    poly: 0x04c1_1db7,
    init: 0,
    refin: false,
    refout: false,
    xorout: 0,
    check: 0x89a1_897f,
    residue: 0,
};

static CRC64: Crc<u64> = Crc::<u64>::new(&FIO_CRC64);
static CRC32: Crc<u32> = Crc::<u32>::new(&FIO_CRC32);
// fio's crc16 is CRC-16/ARC and its crc7 CRC-7/MMC (both initial value 0).
static CRC16: Crc<u16> = Crc::<u16>::new(&CRC_16_ARC);
static CRC7: Crc<u8> = Crc::<u8>::new(&CRC_7_MMC);

/// A digest's bytes (the first `len` of `bytes`).
#[derive(Clone, Copy)]
pub struct Sum {
    bytes: [u8; 64],
    len: usize,
}

impl Sum {
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// The digest's first (up to) 8 bytes read big-endian: what a mismatch
    /// reports as its expected and found values (a CRC's value itself; a
    /// long digest's leading hex digits).
    #[cfg(test)]
    pub fn head(&self) -> u64 {
        head_of(self.as_bytes())
    }
}

/// The first (up to) 8 bytes of `b`, big-endian.
pub fn head_of(b: &[u8]) -> u64 {
    b.iter().take(8).fold(0u64, |acc, &x| (acc << 8) | x as u64)
}

fn sum_of(b: &[u8]) -> Sum {
    let mut s = Sum {
        bytes: [0; 64],
        len: b.len(),
    };
    s.bytes[..b.len()].copy_from_slice(b);
    s
}

/// `d` of `data`. A CRC is stored big-endian, so every digest reads the same
/// way in a dump.
pub fn digest(d: Digest, data: &[u8]) -> Sum {
    match d {
        Digest::Md5 => sum_of(&md5::Md5::digest(data)),
        Digest::Sha1 => sum_of(&sha1::Sha1::digest(data)),
        Digest::Sha256 => sum_of(&sha2::Sha256::digest(data)),
        Digest::Sha512 => sum_of(&sha2::Sha512::digest(data)),
        Digest::Sha3_224 => sum_of(&sha3::Sha3_224::digest(data)),
        Digest::Sha3_256 => sum_of(&sha3::Sha3_256::digest(data)),
        Digest::Sha3_384 => sum_of(&sha3::Sha3_384::digest(data)),
        Digest::Sha3_512 => sum_of(&sha3::Sha3_512::digest(data)),
        // fio seeds XXH32 with 1.
        Digest::Xxhash => sum_of(&xxhash_rust::xxh32::xxh32(data, 1).to_be_bytes()),
        Digest::Crc64 => sum_of(&CRC64.checksum(data).to_be_bytes()),
        Digest::Crc32 => sum_of(&CRC32.checksum(data).to_be_bytes()),
        Digest::Crc16 => sum_of(&CRC16.checksum(data).to_be_bytes()),
        Digest::Crc7 => sum_of(&[CRC7.checksum(data)]),
    }
}

/// fio's crc32c: the Castagnoli CRC from all ones, without the final
/// inversion the usual crc32c applies.
#[inline]
pub fn fio_crc32c(data: &[u8]) -> u32 {
    !crc32c::crc32c(data)
}

/// SHA-256's initial state (FIPS 180-4).
const SHA256_IV: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// The checksum header (`out`, [`Digest::vhdr_len`] or 4 bytes for crc32c)
/// of `data` as fio 3.33 writes it for `kind`; a kind without a checksum
/// leaves `out` alone.
///
/// fio's sha256 pads the message with its bit length little endian (not
/// big endian as SHA-256 does) and leaves in its 64 bytes the last block it
/// hashed, over whose first 8 bytes it writes the low byte of each of the
/// 8 state words. fio's sha512 never finishes its hash: its 128 bytes are
/// its block buffer, the data's first 128 bytes with the data's last
/// `len % 128` bytes over their start. Both are reproduced byte for byte
/// (with the SHA-256 compression function of the sha2 crate), so fio checks
/// what iolab writes and the other way round.
pub fn fio_vhdr(kind: VerifyKind, data: &[u8], out: &mut [u8]) {
    let d = match kind {
        VerifyKind::Crc32c => {
            out[..4].copy_from_slice(&fio_crc32c(data).to_le_bytes());
            return;
        }
        VerifyKind::Digest(d) => d,
        _ => return,
    };
    match d {
        Digest::Crc64 => out[..8].copy_from_slice(&CRC64.checksum(data).to_le_bytes()),
        Digest::Crc32 => out[..4].copy_from_slice(&CRC32.checksum(data).to_le_bytes()),
        Digest::Crc16 => out[..2].copy_from_slice(&CRC16.checksum(data).to_le_bytes()),
        Digest::Crc7 => out[0] = CRC7.checksum(data),
        Digest::Xxhash => {
            out[..4].copy_from_slice(&xxhash_rust::xxh32::xxh32(data, 1).to_le_bytes())
        }
        Digest::Sha1 => {
            let sum = digest(d, data);
            for (o, w) in out[..20]
                .chunks_exact_mut(4)
                .zip(sum.as_bytes().chunks_exact(4))
            {
                o.copy_from_slice(&[w[3], w[2], w[1], w[0]]);
            }
        }
        Digest::Sha256 => fio_sha256(data, &mut out[..64]),
        Digest::Sha512 => {
            let n = data.len().min(128);
            out[..n].copy_from_slice(&data[..n]);
            if data.len() >= 128 {
                let tail = data.len() % 128;
                out[..tail].copy_from_slice(&data[data.len() - tail..]);
            }
        }
        _ => {
            let sum = digest(d, data);
            out[..d.size()].copy_from_slice(sum.as_bytes());
        }
    }
}

/// fio's sha256 of `data` into `out` (64 bytes): see [`fio_vhdr`].
fn fio_sha256(data: &[u8], out: &mut [u8]) {
    let mut state = SHA256_IV;
    let full = data.len() / 64 * 64;
    for block in data[..full].chunks_exact(64) {
        let b: [u8; 64] = block.try_into().expect("64 bytes");
        sha2::block_api::compress256(&mut state, &[b]);
    }
    // The tail, 0x80, zeroes to 56 mod 64, then the bit count (LE): one
    // block, or two when the tail leaves no room for the count.
    let tail = &data[full..];
    let mut last = [0u8; 128];
    last[..tail.len()].copy_from_slice(tail);
    last[tail.len()] = 0x80;
    let n = if tail.len() < 56 { 64 } else { 128 };
    last[n - 8..n].copy_from_slice(&((data.len() as u64) << 3).to_le_bytes());
    for block in last[..n].chunks_exact(64) {
        let b: [u8; 64] = block.try_into().expect("64 bytes");
        sha2::block_api::compress256(&mut state, &[b]);
    }
    out.copy_from_slice(&last[n - 64..n]);
    for (o, w) in out.iter_mut().zip(state) {
        *o = w as u8;
    }
}

/// A checksum header's value for a message: a CRC's own value (read little
/// endian, as stored), a hash's first 8 bytes read big endian.
pub fn vhdr_value(kind: VerifyKind, vh: &[u8]) -> u64 {
    let le = |n: usize| vh[..n].iter().rev().fold(0u64, |a, &x| (a << 8) | x as u64);
    match kind {
        VerifyKind::Crc32c => le(4),
        VerifyKind::Digest(d) if d.is_crc() || d == Digest::Xxhash => le(d.size()),
        _ => head_of(vh),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio's CRCs are table driven; with initial value 0, the CRC of the
    /// single byte 0x01 is entry 1 of its table. These are the entries in
    /// fio 3.33's crc/crc64.c, crc32.c, crc16.c and crc7.c.
    #[test]
    fn crcs_match_fio_tables() {
        assert_eq!(digest(Digest::Crc64, &[1]).head(), 0x7ad8_70c8_3035_8979);
        assert_eq!(digest(Digest::Crc32, &[1]).head(), 0x04c1_1db7);
        assert_eq!(digest(Digest::Crc16, &[1]).head(), 0xc0c1);
        assert_eq!(digest(Digest::Crc7, &[1]).head(), 0x09);
        // A second entry each, to pin the reflection.
        assert_eq!(digest(Digest::Crc64, &[2]).head(), 0xf5b0_e190_606b_12f2);
        assert_eq!(digest(Digest::Crc16, &[2]).head(), 0xc181);
        assert_eq!(digest(Digest::Crc7, &[2]).head(), 0x12);
    }

    /// Published test vectors of the hashes ("abc").
    #[test]
    fn hashes_match_published_vectors() {
        let hex = |d| {
            digest(d, b"abc")
                .as_bytes()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        assert_eq!(hex(Digest::Md5), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(
            hex(Digest::Sha1),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            hex(Digest::Sha256),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex(Digest::Sha3_256),
            "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532"
        );
    }

    #[test]
    fn every_digest_has_its_declared_length() {
        for d in Digest::ALL {
            assert_eq!(
                digest(d, b"block").as_bytes().len(),
                d.size(),
                "{}",
                d.name()
            );
        }
    }
}
