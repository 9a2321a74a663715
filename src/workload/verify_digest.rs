//! fio's verify checksums other than crc32c, computed with the crates that
//! implement them (RustCrypto's md-5, sha1, sha2, sha3; xxhash-rust; crc).
//! Each is fio's algorithm exactly — polynomial, initial value, reflection
//! and final xor — so the digest of the same bytes equals the one fio's
//! `verify=` stores (the tests check the CRCs against entries of fio's own
//! tables). The block layout that holds a digest is iolab's
//! (`verify_block`), not fio's.
//!
//! Nothing here allocates: a digest lands in a fixed 64-byte array.

use crc::{Algorithm, CRC_7_MMC, CRC_16_ARC, Crc};
use md5::Digest as _;

use crate::job::Digest;

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
