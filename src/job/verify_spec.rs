//! Data verification as a job asks for it, typed: the kind of check (fio's
//! `verify=`, with its digests' algorithms) and the options around it.

/// How written blocks are checked (fio's `verify=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VerifyKind {
    /// Header plus a crc32c of the block's data.
    Crc32c,
    /// Header plus the data filled with `verify_pattern`, compared byte by byte.
    Pattern,
    /// fio's `meta`: only the header is checked (where the block was written,
    /// which write it was, its header crc); with `verify_pattern` also the data.
    Meta,
    /// fio's `null`: blocks are written with headers and read back, and the
    /// check always passes (fio: "only pretend to verify"; it measures the
    /// verify phase's I/O without its CPU).
    Null,
    /// The other checksums fio offers; each digests the block's data after
    /// the header ([`Digest`]).
    Digest(Digest),
}

/// fio's verify checksums other than crc32c, each with fio's algorithm: the
/// same polynomial, initial value and output, so a digest of the same bytes
/// equals fio's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Digest {
    Md5,
    /// fio's crc64: the Jones polynomial, reflected, initial value 0.
    Crc64,
    /// zlib's crc32.
    Crc32,
    /// CRC-16/ARC (polynomial 0x8005, reflected).
    Crc16,
    /// CRC-7/MMC (polynomial 0x09).
    Crc7,
    Sha1,
    Sha256,
    Sha512,
    Sha3_224,
    Sha3_256,
    Sha3_384,
    Sha3_512,
    /// fio's xxhash: XXH32 with seed 1.
    Xxhash,
}

impl Digest {
    pub const ALL: [Digest; 13] = [
        Digest::Md5,
        Digest::Crc64,
        Digest::Crc32,
        Digest::Crc16,
        Digest::Crc7,
        Digest::Sha1,
        Digest::Sha256,
        Digest::Sha512,
        Digest::Sha3_224,
        Digest::Sha3_256,
        Digest::Sha3_384,
        Digest::Sha3_512,
        Digest::Xxhash,
    ];

    /// fio's name for it (`verify=` value).
    pub fn name(self) -> &'static str {
        match self {
            Digest::Md5 => "md5",
            Digest::Crc64 => "crc64",
            Digest::Crc32 => "crc32",
            Digest::Crc16 => "crc16",
            Digest::Crc7 => "crc7",
            Digest::Sha1 => "sha1",
            Digest::Sha256 => "sha256",
            Digest::Sha512 => "sha512",
            Digest::Sha3_224 => "sha3-224",
            Digest::Sha3_256 => "sha3-256",
            Digest::Sha3_384 => "sha3-384",
            Digest::Sha3_512 => "sha3-512",
            Digest::Xxhash => "xxhash",
        }
    }

    /// Bytes of the digest.
    pub fn size(self) -> usize {
        match self {
            Digest::Crc7 => 1,
            Digest::Crc16 => 2,
            Digest::Crc32 | Digest::Xxhash => 4,
            Digest::Crc64 => 8,
            Digest::Md5 => 16,
            Digest::Sha1 => 20,
            Digest::Sha3_224 => 28,
            Digest::Sha256 | Digest::Sha3_256 => 32,
            Digest::Sha3_384 => 48,
            Digest::Sha512 | Digest::Sha3_512 => 64,
        }
    }

    /// Whether it is a CRC (a mismatch is then a "data crc" one).
    pub fn is_crc(self) -> bool {
        matches!(
            self,
            Digest::Crc64 | Digest::Crc32 | Digest::Crc16 | Digest::Crc7
        )
    }

    /// Bytes the digest adds to the header: a digest of up to four bytes
    /// lives in the header's data-checksum field; a longer one follows the
    /// header, padded to 8 bytes so the data stays 8-byte aligned.
    pub fn extra_header(self) -> usize {
        match self.size() {
            0..=4 => 0,
            n => n.next_multiple_of(8),
        }
    }
}

impl VerifyKind {
    pub fn name(self) -> &'static str {
        match self {
            VerifyKind::Crc32c => "crc32c",
            VerifyKind::Pattern => "pattern",
            VerifyKind::Meta => "meta",
            VerifyKind::Null => "null",
            VerifyKind::Digest(d) => d.name(),
        }
    }

    /// Bytes of the header at the start of every verified block or interval
    /// with this kind: the fixed header, plus a long digest.
    pub fn header_len(self) -> usize {
        VerifySpec::HEADER_LEN
            + match self {
                VerifyKind::Digest(d) => d.extra_header(),
                _ => 0,
            }
    }

    /// Whether the kind stores a checksum of the data (crc32c and the
    /// digests), as opposed to checking the header or a pattern.
    pub fn checksums_data(self) -> bool {
        matches!(self, VerifyKind::Crc32c | VerifyKind::Digest(_))
    }

    /// Smallest block (or verify_interval) this kind accepts: its header and
    /// at least 8 bytes of data to check.
    pub fn min_block(self) -> usize {
        VerifySpec::MIN_BLOCK.max(self.header_len() + 8)
    }
}

/// Data verification options (`verify`, `verify_pattern`, `do_verify`,
/// `verify_fatal`, `verify_backlog`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct VerifySpec {
    /// `None` = no verification.
    pub kind: Option<VerifyKind>,
    /// Bytes repeated over each block's data (verify=pattern).
    pub pattern: Vec<u8>,
    /// Read every written block back after the write phase (fio's default 1).
    pub do_verify: bool,
    /// Stop the job at the first mismatch instead of checking everything.
    pub fatal: bool,
    /// Verify the last N written blocks after every N writes (0 = off).
    pub backlog: u64,
    /// fio's `verify_interval`: a header every this many bytes of a block, each
    /// chunk checked on its own (0 = one header per block).
    pub interval: u32,
    /// fio's `verify_offset`: the header is swapped with the bytes this far
    /// into each interval before the write and swapped back before the
    /// check (0 = the header stays at the start).
    pub offset: u32,
    /// fio's `verify_dump`: write the received and expected bytes of a
    /// mismatch to files (`workload::verify_dump`).
    pub dump: bool,
    /// fio's `verify_only`: a write job does not write; it walks its
    /// workload to learn what it would have written, then reads that back
    /// and checks it (data an earlier run of the same job wrote).
    pub only: bool,
}

impl VerifySpec {
    /// Bytes of the fixed header at the start of every verified block (its
    /// layout is `workload::verify`'s; the size lives here so the option
    /// checks and the verifier share one value without the job layer
    /// depending on it). A long digest adds to it ([`VerifyKind::header_len`]).
    pub const HEADER_LEN: usize = 56;
    /// Smallest block verification accepts: a header and some data to check.
    pub const MIN_BLOCK: usize = 64;
}

impl VerifySpec {
    /// Bytes of the header of this job's blocks (the fixed header when the
    /// job does not verify).
    pub fn header_len(&self) -> usize {
        self.kind.map_or(Self::HEADER_LEN, VerifyKind::header_len)
    }

    /// Smallest block (or verify_interval) this job's verification accepts.
    pub fn min_block(&self) -> usize {
        self.kind.map_or(Self::MIN_BLOCK, VerifyKind::min_block)
    }
}

impl Default for VerifySpec {
    fn default() -> Self {
        VerifySpec {
            kind: None,
            pattern: Vec::new(),
            do_verify: true,
            fatal: false,
            backlog: 0,
            interval: 0,
            offset: 0,
            dump: false,
            only: false,
        }
    }
}
