//! Data verification as a job asks for it, typed: the kind of check (fio's
//! `verify=`, with its digests' algorithms) and the options around it.

/// How written blocks are checked (fio's `verify=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VerifyKind {
    /// Header plus a crc32c of the block's data.
    Crc32c,
    /// `verify=pattern`: the whole block is `verify_pattern`, without a
    /// header (fio's strict pattern), compared byte by byte.
    Pattern,
    /// A `verify_pattern` without `verify=`: a header, then the pattern
    /// (fio's header-plus-pattern mode).
    PatternHeader,
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
    /// fio's crc32: polynomial 0x04c11db7, not reflected, initial value 0.
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

    /// Bytes fio reserves for it after the common header (its `vhdr_*`
    /// structures: sha256 and sha512 reserve more than their digest).
    pub fn vhdr_len(self) -> usize {
        match self {
            Digest::Sha256 => 64,
            Digest::Sha512 => 128,
            d => d.size(),
        }
    }

    /// Whether it is a CRC (a mismatch is then a "data crc" one).
    pub fn is_crc(self) -> bool {
        matches!(
            self,
            Digest::Crc64 | Digest::Crc32 | Digest::Crc16 | Digest::Crc7
        )
    }
}

impl VerifyKind {
    pub fn name(self) -> &'static str {
        match self {
            VerifyKind::Crc32c => "crc32c",
            VerifyKind::Pattern | VerifyKind::PatternHeader => "pattern",
            VerifyKind::Meta => "meta",
            VerifyKind::Null => "null",
            VerifyKind::Digest(d) => d.name(),
        }
    }

    /// Bytes of the header at the start of every verified block or interval
    /// with this kind (fio's `hdr_size`): the common header plus the
    /// checksum's own, none for a strict pattern.
    pub fn header_len(self) -> usize {
        match self {
            VerifyKind::Pattern => 0,
            VerifyKind::Crc32c => VerifySpec::HEADER_LEN + 4,
            VerifyKind::Digest(d) => VerifySpec::HEADER_LEN + d.vhdr_len(),
            VerifyKind::PatternHeader | VerifyKind::Meta | VerifyKind::Null => {
                VerifySpec::HEADER_LEN
            }
        }
    }

    /// fio's number for the kind, recorded in every header (`verify_type`).
    pub fn fio_type(self) -> u16 {
        match self {
            VerifyKind::Meta => 1,
            VerifyKind::Digest(Digest::Md5) => 2,
            VerifyKind::Digest(Digest::Crc64) => 3,
            VerifyKind::Digest(Digest::Crc32) => 4,
            VerifyKind::Crc32c => 5,
            VerifyKind::Digest(Digest::Crc16) => 7,
            VerifyKind::Digest(Digest::Crc7) => 8,
            VerifyKind::Digest(Digest::Sha256) => 9,
            VerifyKind::Digest(Digest::Sha512) => 10,
            VerifyKind::Digest(Digest::Sha3_224) => 11,
            VerifyKind::Digest(Digest::Sha3_256) => 12,
            VerifyKind::Digest(Digest::Sha3_384) => 13,
            VerifyKind::Digest(Digest::Sha3_512) => 14,
            VerifyKind::Digest(Digest::Xxhash) => 15,
            VerifyKind::Digest(Digest::Sha1) => 16,
            VerifyKind::PatternHeader => 17,
            VerifyKind::Pattern => 18,
            VerifyKind::Null => 19,
        }
    }

    /// Whether the kind stores a checksum of the data (crc32c and the
    /// digests), as opposed to checking the header or a pattern.
    pub fn checksums_data(self) -> bool {
        matches!(self, VerifyKind::Crc32c | VerifyKind::Digest(_))
    }

    /// Smallest block (or verify_interval) this kind accepts: its header and
    /// at least 8 bytes of data to check (fio's sha512 keeps a copy of the
    /// data's first 128 bytes, so it needs that many).
    pub fn min_block(self) -> usize {
        let data = match self {
            VerifyKind::Digest(Digest::Sha512) => 128,
            _ => 8,
        };
        VerifySpec::MIN_BLOCK.max(self.header_len() + data)
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
    /// Bytes of fio's common header at the start of every verified block
    /// (its layout is `workload::verify_block`'s; the size lives here so the
    /// option checks and the verifier share one value without the job layer
    /// depending on it). The checksum's own header follows it
    /// ([`VerifyKind::header_len`]).
    pub const HEADER_LEN: usize = 40;
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
