//! Value parsers of the option table: each turns one option's text into its
//! typed value, or a [`JobError`] naming the option, the value and what is valid.

use super::draft::{Ctx, Draft};
use super::error::JobError;
use super::spec::*;
use super::units::{self, SizeVal};

pub(crate) const VERIFY_VALID: &str = "crc32c (crc32c-intel), md5, crc64, crc32, crc16, crc7, sha1, sha256, sha512, \
     sha3-224, sha3-256, sha3-384, sha3-512, xxhash, meta, pattern, null, or 0/none";
pub(crate) const RW_VALID: &str = "read, write, randread, randwrite, rw (or readwrite), randrw, \
     trim, randtrim, trimwrite, randtrimwrite";
pub(crate) use crate::device::engine::ENGINES_EXPECTED;

pub(crate) fn size(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    let s = &mut d.spec;
    match units::parse_size(c.value, c.kb, true).map_err(|e| c.bad(e))? {
        // fio: size=0 is no size, the whole target.
        SizeVal::Bytes(0) | SizeVal::Percent(0) => {
            s.size = None;
            s.size_percent = None;
        }
        SizeVal::Bytes(b) => {
            s.size = Some(b);
            s.size_percent = None;
        }
        SizeVal::Percent(p) => {
            s.size = None;
            s.size_percent = Some(p as u32);
        }
    }
    Ok(())
}

pub(crate) fn offset(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    let s = &mut d.spec;
    match units::parse_size(c.value, c.kb, true).map_err(|e| c.bad(e))? {
        SizeVal::Bytes(b) => {
            s.offset = b;
            s.offset_percent = None;
        }
        SizeVal::Percent(p) => {
            s.offset = 0;
            s.offset_percent = Some(p as u32);
        }
    }
    Ok(())
}

/// `sync=`: (O_SYNC, O_DSYNC).
pub(crate) fn sync(c: &Ctx) -> Result<(bool, bool), JobError> {
    let v = c.value;
    Ok(match v.to_ascii_lowercase().as_str() {
        "sync" => (true, false),
        "dsync" => (false, true),
        "none" => (false, false),
        _ => (
            units::parse_bool(v).map_err(|_| c.bad("0, 1, none, sync or dsync"))?,
            false,
        ),
    })
}

pub(crate) fn engine(c: &Ctx) -> Result<Engine, JobError> {
    Engine::parse(c.value).map_err(|why| c.bad(why))
}

pub(crate) const COMPLETION_EXPECTED: &str =
    "one of sync, interrupt, poll, hybrid, hybrid-uring, pas, dpas, adaptive";

pub(crate) fn completion(c: &Ctx) -> Result<CompletionModel, JobError> {
    Ok(match c.value {
        "sync" => CompletionModel::Sync,
        "interrupt" => CompletionModel::Interrupt,
        "poll" => CompletionModel::Poll,
        "hybrid" => CompletionModel::Hybrid,
        "hybrid-uring" => CompletionModel::HybridUring,
        "pas" => CompletionModel::Pas,
        "dpas" => CompletionModel::Dpas,
        "adaptive" => CompletionModel::Adaptive,
        _ => return Err(c.bad(COMPLETION_EXPECTED)),
    })
}

pub(crate) fn verify(c: &Ctx) -> Result<Option<VerifyKind>, JobError> {
    let v = c.value;
    Ok(match v {
        "0" | "none" => None,
        // fio's crc32c-intel is crc32c (fio picks the instruction itself).
        "crc32c" | "crc32c-intel" => Some(VerifyKind::Crc32c),
        "pattern" => Some(VerifyKind::Pattern),
        "meta" => Some(VerifyKind::Meta),
        "null" => Some(VerifyKind::Null),
        _ => match Digest::ALL.iter().find(|d| d.name() == v) {
            Some(&d) => Some(VerifyKind::Digest(d)),
            None => return Err(c.bad(VERIFY_VALID)),
        },
    })
}

/// Why a `verify_pattern=` value is not one: the message says what would have
/// been valid and, where known, what was wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("{PATTERN_EXPECTED}")]
    Invalid,
    #[error("{PATTERN_EXPECTED}; a quote is not closed")]
    UnclosedQuote,
    #[error("{PATTERN_EXPECTED}; an empty string adds nothing")]
    EmptyString,
    #[error("{PATTERN_EXPECTED} (fio's %o offset format is not supported by iolab)")]
    OffsetFormat,
    #[error("{PATTERN_EXPECTED}, at most 4096 bytes")]
    TooLong,
}

const PATTERN_EXPECTED: &str = "a hex number (0xdeadbeef), a decimal number up to 4294967295, \
     a quoted string (\"abc\"), or a concatenation of those";

/// fio's `verify_pattern`: hex (`0x...`, bytes in written order), decimal (the
/// fewest little-endian bytes that hold it, at most 4), or quoted text, and any
/// concatenation of those.
pub fn verify_pattern(v: &str) -> Result<Vec<u8>, PatternError> {
    let mut out = Vec::new();
    let mut rest = v.trim();
    if rest.is_empty() {
        return Err(PatternError::Invalid);
    }
    while !rest.is_empty() {
        if let Some(hex) = rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X")) {
            let n = hex
                .find(|ch: char| !ch.is_ascii_hexdigit())
                .unwrap_or(hex.len());
            if n == 0 {
                return Err(PatternError::Invalid);
            }
            let digits = &hex[..n];
            // An odd digit count gets a leading zero nibble, as in 0xabc = 0a bc.
            let padded = if n % 2 == 1 {
                format!("0{digits}")
            } else {
                digits.to_string()
            };
            for i in (0..padded.len()).step_by(2) {
                out.push(
                    u8::from_str_radix(&padded[i..i + 2], 16).map_err(|_| PatternError::Invalid)?,
                );
            }
            rest = &hex[n..];
        } else if let Some(q) = rest.chars().next().filter(|ch| *ch == '"' || *ch == '\'') {
            let body = &rest[1..];
            let end = body.find(q).ok_or(PatternError::UnclosedQuote)?;
            if end == 0 {
                return Err(PatternError::EmptyString);
            }
            out.extend_from_slice(&body.as_bytes()[..end]);
            rest = &body[end + 1..];
        } else if rest.starts_with(|ch: char| ch.is_ascii_digit()) {
            let n = rest
                .find(|ch: char| !ch.is_ascii_digit())
                .unwrap_or(rest.len());
            let x: u32 = rest[..n].parse().map_err(|_| PatternError::Invalid)?;
            let width = (4 - x.leading_zeros() as usize / 8).max(1);
            out.extend_from_slice(&x.to_le_bytes()[..width]);
            rest = &rest[n..];
        } else if rest.starts_with('%') {
            return Err(PatternError::OffsetFormat);
        } else {
            return Err(PatternError::Invalid);
        }
        if out.len() > 4096 {
            return Err(PatternError::TooLong);
        }
    }
    Ok(out)
}

pub(crate) fn positive(c: &Ctx, v: u64) -> Result<u64, JobError> {
    if v == 0 {
        Err(c.bad(format!("{} greater than zero", units::SIZE_EXPECTED)))
    } else {
        Ok(v)
    }
}

/// `filesize=`: one size, or a range `LOW-HIGH` (or `LOW:HIGH`, fio splits
/// at either) each file's size is drawn from; a reversed range is swapped.
pub(crate) fn filesize_range(c: &Ctx) -> Result<(u64, u64), JobError> {
    let one = |v: &str| {
        units::parse_bytes(v, c.kb)
            .map_err(|e| c.bad(e))
            .and_then(|b| positive(c, b))
    };
    match c.value.split_once(['-', ':']) {
        None => one(c.value).map(|b| (b, b)),
        Some((lo, hi)) => {
            let (a, b) = (one(lo.trim())?, one(hi.trim())?);
            Ok((a.min(b), a.max(b)))
        }
    }
}

pub(crate) fn rw(c: &Ctx) -> Result<(RwMode, RwSuffix), JobError> {
    let (mode, suffix) = match c.value.split_once(':') {
        Some((m, s)) => (m, Some(s.trim())),
        None => (c.value, None),
    };
    let (pattern, dir) = match mode {
        "read" => (Pattern::Seq, Direction::Read),
        "write" => (Pattern::Seq, Direction::Write),
        "rw" | "readwrite" => (Pattern::Seq, Direction::Mixed),
        "randread" => (Pattern::Rand, Direction::Read),
        "randwrite" => (Pattern::Rand, Direction::Write),
        "randrw" => (Pattern::Rand, Direction::Mixed),
        // fio's trims: BLKDISCARD on a block device; on a file iolab punches a
        // hole (device::trim says why).
        "trim" => (Pattern::Seq, Direction::Trim),
        "randtrim" => (Pattern::Rand, Direction::Trim),
        "trimwrite" => (Pattern::Seq, Direction::TrimWrite),
        "randtrimwrite" => (Pattern::Rand, Direction::TrimWrite),
        _ => return Err(c.bad(RW_VALID)),
    };
    let suffix = match (suffix, pattern) {
        (None, _) => RwSuffix::None,
        (Some(n), Pattern::Seq) => {
            let (neg, mag) = match n.strip_prefix('-') {
                Some(m) => (true, m),
                None => (false, n),
            };
            let b = units::parse_bytes(mag, c.kb)
                .ok()
                .filter(|b| *b <= i64::MAX as u64)
                .ok_or_else(|| {
                    c.bad(format!(
                        "{mode}[:SIZE]: a hole after each I/O such as {mode}:8k, or a negative \
                         size to move backwards such as {mode}:-8k"
                    ))
                })? as i64;
            RwSuffix::Add(if neg { -b } else { b })
        }
        (Some(n), Pattern::Rand) => {
            let k = units::parse_int(n, c.kb, 1, u64::from(u32::MAX)).map_err(|_| {
                c.bad(format!(
                    "{mode}[:N]: a new random offset every N I/Os (N >= 1), sequential in \
                     between, such as {mode}:8"
                ))
            })?;
            RwSuffix::Every(k as u32)
        }
    };
    Ok((RwMode { pattern, dir }, suffix))
}

/// fio's `read,write[,trim]` form: one value sets both directions, an empty
/// part keeps that direction's current value. Trims take the write value, as
/// fio gives them when no third value is set; a third value is accepted when
/// it is the write value (e.g. fio's own tests' `bs=8k,8k,8k`), refused when
/// it differs.
pub(crate) fn split_dirs<'a>(c: &Ctx, v: &'a str) -> Result<[Option<&'a str>; 2], JobError> {
    refuse_all_empty(c, v)?;
    // fio drops one trailing comma.
    let v = v.strip_suffix(',').unwrap_or(v);
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    let opt = |p: &'a str| (!p.is_empty()).then_some(p);
    match parts.as_slice() {
        [one] => Ok([opt(one), opt(one)]),
        [r, w] => Ok([opt(r), opt(w)]),
        [r, w, ""] => Ok([opt(r), opt(w)]),
        [r, w, t] if t.eq_ignore_ascii_case(w) => Ok([opt(r), opt(w)]),
        [_, w, t] => Err(c.bad(format!(
            "'read,write,trim' with the trim value equal to the write value: iolab's \
             trims take the write value, so a trim value of {t} beside a write value of \
             {w} cannot be honoured (give both {t} with 'read,{t}')"
        ))),
        _ => Err(c.bad(
            "one value for all directions, or 'read,write' (trims take the write value, so no \
             third value: a separate trim value is not supported by iolab)",
        )),
    }
}

pub(crate) fn per_dir<T: Copy, E: std::fmt::Display>(
    c: &Ctx,
    current: [T; 2],
    parse: impl Fn(&str) -> Result<T, E>,
) -> Result<[T; 2], JobError> {
    let parts = split_dirs(c, c.value)?;
    let mut out = current;
    for (slot, part) in out.iter_mut().zip(parts) {
        if let Some(p) = part {
            *slot = parse(p).map_err(|e| c.bad(e))?;
        }
    }
    Ok(out)
}

/// fio parses each comma-separated part of a per-direction value and fails
/// the option when no part parses: `rate=,` (one trailing comma is dropped,
/// leaving nothing) or `rate=,,` set no direction, and fio refuses them with
/// "failed parsing". So does iolab, naming what would be valid.
pub(crate) fn refuse_all_empty(c: &Ctx, v: &str) -> Result<(), JobError> {
    if v.split(',').all(|p| p.trim().is_empty()) {
        return Err(c.bad(
            "a value for one or more directions: one value for all (such as 1m), or \
             'read,write' with either part left empty to keep that direction's value \
             (1m, or ,1m), but not every part empty",
        ));
    }
    Ok(())
}

/// What a block-size option (`bs`, `bsrange`, `bssplit`, `blockalign`) says
/// of trims, fio's third value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TrimPart<'a> {
    /// One value, or `read,write`: trims take the write value.
    Write,
    /// `read,write,` (or an empty third value): trims keep what they had.
    Keep,
    /// `read,write,trim`: trims have their own.
    Own(&'a str),
}

/// fio's `read,write,trim` form of the block-size options: `split_dirs` for
/// reads and writes, and what it leaves the trims.
pub(crate) fn split_dirs3<'a>(
    c: &Ctx,
    v: &'a str,
) -> Result<([Option<&'a str>; 2], TrimPart<'a>), JobError> {
    // fio's bssplit has its own parser, which takes `bssplit=,` as no change.
    if c.name != "bssplit" {
        refuse_all_empty(c, v)?;
    }
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    let opt = |p: &'a str| (!p.is_empty()).then_some(p);
    match parts.as_slice() {
        [one] => Ok(([opt(one), opt(one)], TrimPart::Write)),
        // fio: a value ending in a comma applies to its own direction only.
        [one, ""] => Ok(([opt(one), opt(one)], TrimPart::Write)),
        [r, w] => Ok(([opt(r), opt(w)], TrimPart::Write)),
        [r, w, t] | [r, w, t, ""] => Ok((
            [opt(r), opt(w)],
            opt(t).map_or(TrimPart::Keep, TrimPart::Own),
        )),
        _ => Err(c.bad("one value for all directions, or 'read,write' or 'read,write,trim'")),
    }
}

/// The trims' value after a block-size option: `None` follows the write
/// value; `old_write` is the write value before the option (what trims had
/// when they followed it).
pub(crate) fn trim_value<T: Clone>(
    part: TrimPart,
    current: Option<T>,
    old_write: &T,
    parse: impl Fn(&str) -> Result<T, JobError>,
) -> Result<Option<T>, JobError> {
    Ok(match part {
        TrimPart::Write => None,
        TrimPart::Keep => Some(current.unwrap_or_else(|| old_write.clone())),
        TrimPart::Own(t) => Some(parse(t)?),
    })
}

/// Block sizes for reads, writes and trims (`None`: trims take the write's).
pub(crate) type BsSet = ([BlockSizes; 2], Option<BlockSizes>);

/// A block-size option's value applied to `current`, each part read by `one`.
fn bs_option(
    c: &Ctx,
    current: BsSet,
    one: impl Fn(&str) -> Result<BlockSizes, JobError>,
) -> Result<BsSet, JobError> {
    let (parts, trim) = split_dirs3(c, c.value)?;
    let (mut out, old_trim) = current;
    let old_write = out[1].clone();
    for (slot, part) in out.iter_mut().zip(parts) {
        if let Some(p) = part {
            *slot = one(p)?;
        }
    }
    Ok((out, trim_value(trim, old_trim, &old_write, one)?))
}

fn block_size(c: &Ctx, s: &str) -> Result<u32, JobError> {
    let b = units::parse_bytes(s, c.kb).map_err(|e| c.bad(e))?;
    if b == 0 || b > u64::from(u32::MAX) {
        return Err(c.bad("a block size from 1 byte to 4g-1"));
    }
    Ok(b as u32)
}

pub(crate) fn bs(c: &Ctx, current: BsSet) -> Result<BsSet, JobError> {
    if c.value.contains('/') {
        // fio 3.33 reads bs=4k/50:8k/50 as bs=4k and runs 4k only.
        return Err(c.bad(
            "one block size, or 'read,write' such as 4k,64k (for a mix of sizes with \
             percentages use bssplit=4k/50:8k/50)",
        ));
    }
    if c.value.contains(['-', ':']) {
        // fio 3.33 reads bs=2k-8k as read=2k,write=8k: almost never what was meant.
        return Err(c.bad(
            "one block size, or 'read,write' such as 4k,64k (for a range of sizes use bsrange=2k-8k)",
        ));
    }
    bs_option(c, current, |p| Ok(BlockSizes::Fixed(block_size(c, p)?)))
}

pub(crate) fn bsrange(c: &Ctx, current: BsSet) -> Result<BsSet, JobError> {
    bs_option(c, current, |p| {
        let (lo, hi) = range_ends(p)
            .ok_or_else(|| c.bad("a range MIN-MAX such as 4k-64k, or 'read,write' ranges"))?;
        let (a, b) = (block_size(c, lo)?, block_size(c, hi)?);
        // fio swaps a reversed range.
        let (min, max) = (a.min(b), a.max(b));
        Ok(if min == max {
            BlockSizes::Fixed(min)
        } else {
            BlockSizes::Range { min, max }
        })
    })
}

/// A range's two ends. fio splits at the first `-` or `:` and reads the size
/// each side starts with, so a bssplit list under the bsrange name
/// (`512/25:1k:25:2k:25:4k/25`) is the range 512-1k; so does iolab, with a
/// note ([`bsrange_note`]).
fn range_ends(p: &str) -> Option<(&str, &str)> {
    let (lo, hi) = p.split_once(['-', ':'])?;
    if !lo.contains('/') && !hi.contains(['/', ':', '-']) {
        return Some((lo, hi));
    }
    fn size(s: &str) -> &str {
        s.find(['/', ':', '-']).map_or(s, |i| &s[..i])
    }
    Some((size(lo), size(hi)))
}

/// The note for a bsrange value that is a bssplit list: what fio (and iolab)
/// read it as, and the option meant.
pub(crate) fn bsrange_note(value: &str) -> Option<String> {
    if !value.contains('/') {
        return None;
    }
    let read: Vec<String> = value
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .filter_map(|p| range_ends(p.trim()).map(|(lo, hi)| format!("{lo}-{hi}")))
        .collect();
    Some(format!(
        "bsrange={value} is a bssplit list under the bsrange name: read as the range {} as \
         fio does (for these sizes in these shares use bssplit={value})",
        read.join(",")
    ))
}

pub(crate) fn bssplit(c: &Ctx, current: BsSet) -> Result<BsSet, JobError> {
    bs_option(c, current, |p| Ok(BlockSizes::Split(split_list(c, p)?)))
}

/// `4k/50:64k/` -> [(4096, 50), (65536, 50)]. Like fio, an entry without a
/// percentage (or with 0) shares what the others leave of 100.
fn split_list(c: &Ctx, list: &str) -> Result<Vec<(u32, u32)>, JobError> {
    const EXPECTED: &str = "size/percent pairs separated by ':' such as 4k/50:64k/50 \
         (percentages add up to 100; an entry without one gets a share of the rest)";
    let mut entries: Vec<(u32, Option<u32>)> = Vec::new();
    for e in list.split(':') {
        let (sz, pct) = match e.split_once('/') {
            Some((s, p)) => (s, p.trim()),
            None => (e, ""),
        };
        let size = block_size(c, sz.trim())?;
        let pct = if pct.is_empty() {
            None
        } else {
            match pct.parse::<u32>() {
                Ok(0) => None,
                Ok(p) if p <= 100 => Some(p),
                _ => return Err(c.bad(EXPECTED)),
            }
        };
        entries.push((size, pct));
    }
    let given: u32 = entries.iter().filter_map(|e| e.1).sum();
    let missing = entries.iter().filter(|e| e.1.is_none()).count() as u32;
    if given > 100 || (missing == 0 && given != 100) || (missing > 0 && given >= 100) {
        return Err(c.bad(format!("{EXPECTED}; these add up to {given}%")));
    }
    let mut left = 100 - given;
    let mut out = Vec::with_capacity(entries.len());
    let mut missing_seen = 0;
    for (size, pct) in entries {
        let p = match pct {
            Some(p) => p,
            None => {
                missing_seen += 1;
                // The last unspecified entry takes the rounding remainder.
                let share = if missing_seen == missing {
                    left
                } else {
                    (100 - given) / missing
                };
                left -= share;
                share
            }
        };
        out.push((size, p));
    }
    Ok(out)
}

/// fio's `cpus_allowed`: a CPU list such as `0,5,8-15`.
pub(crate) fn cpus_allowed(c: &Ctx) -> Result<Vec<u32>, JobError> {
    let cpus =
        crate::placement::topology::parse_cpu_list(c.value).map_err(|e| c.bad(e.to_string()))?;
    if cpus.is_empty() {
        return Err(c.bad("a CPU list such as 0,5,8-15"));
    }
    Ok(cpus)
}

/// fio's `cpumask`: a bit mask of allowed CPUs, decimal or `0x` hex (bit N = cpuN).
pub(crate) fn cpumask(c: &Ctx) -> Result<Vec<u32>, JobError> {
    let v = c.value;
    let expected = "a non-zero CPU bit mask, decimal or 0x hex (e.g. 34 or 0x22 = cpu1 and cpu5)";
    let mask = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse::<u64>(),
    }
    .map_err(|_| c.bad(expected))?;
    if mask == 0 {
        return Err(c.bad(expected));
    }
    Ok((0..64).filter(|b| mask & (1u64 << b) != 0).collect())
}

pub(crate) fn lat_dist(c: &Ctx) -> Result<LatDist, JobError> {
    const EXPECTED: &str = "fixed, exp, or uniform[:JITTER] with JITTER in [0, 1] (default 0.5)";
    match c.value.split_once(':') {
        None => match c.value {
            "fixed" => Ok(LatDist::Fixed),
            "exp" => Ok(LatDist::Exp),
            "uniform" => Ok(LatDist::Uniform { jitter: 0.5 }),
            _ => Err(c.bad(EXPECTED)),
        },
        Some(("uniform", j)) => {
            let jitter = units::parse_f64(j, 0.0, 1.0).map_err(|_| c.bad(EXPECTED))?;
            Ok(LatDist::Uniform { jitter })
        }
        Some(_) => Err(c.bad(EXPECTED)),
    }
}

pub(crate) fn fault_range(c: &Ctx) -> Result<(u64, u64), JobError> {
    const EXPECTED: &str = "START-END byte offsets with START < END, such as 0-1m";
    let (a, b) = c.value.split_once('-').ok_or_else(|| c.bad(EXPECTED))?;
    let a = units::parse_bytes(a, c.kb).map_err(|_| c.bad(EXPECTED))?;
    let b = units::parse_bytes(b, c.kb).map_err(|_| c.bad(EXPECTED))?;
    if a >= b {
        return Err(c.bad(EXPECTED));
    }
    Ok((a, b))
}
