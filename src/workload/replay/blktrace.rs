//! blktrace binary files as replay input (fio's `read_iolog` on the output of
//! `blkparse -d FILE`, or of `blktrace -o -`), and fio's merge of several
//! (`merge_blktrace_file`).
//!
//! The file is a sequence of `struct blk_io_trace` records (48 bytes, the
//! capturing machine's byte order; `magic` tells which) each followed by
//! `pdu_len` bytes of payload. As fio does, only queue events (Q) are
//! replayed: a discard is a trim, a flush a sync, anything else a read or
//! write of `bytes` at `sector * 512`; the device is found by its
//! major:minor among this machine's block devices, or is `replay_redirect`.
//! This is the binary format blktrace writes; `measure::blktrace` reads the
//! same events from tracefs pages, a different encoding.

use std::path::{Path, PathBuf};

use super::{Builder, ReplayError};
use crate::request::Op;

/// `BLK_IO_TRACE_MAGIC`, with the version in the low byte.
pub const MAGIC: u32 = 0x6561_7400;
pub const VERSION: u32 = 0x07;
/// Size of one `struct blk_io_trace`.
pub const RECORD: usize = 48;

/// Trace categories (the action's upper 16 bits).
pub const TC_READ: u32 = 1 << 0;
pub const TC_WRITE: u32 = 1 << 1;
pub const TC_FLUSH: u32 = 1 << 2;
#[cfg(any(test, feature = "testing"))]
pub const TC_QUEUE: u32 = 1 << 4;
pub const TC_NOTIFY: u32 = 1 << 10;
pub const TC_DISCARD: u32 = 1 << 13;
/// `__BLK_TA_QUEUE`, the action's lower 16 bits.
pub const TA_QUEUE: u32 = 1;

const fn act(tc: u32) -> u32 {
    tc << 16
}

/// One record's fields that replay reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BlkIoTrace {
    pub magic: u32,
    pub sequence: u32,
    /// ns since the trace began.
    pub time: u64,
    pub sector: u64,
    pub bytes: u32,
    pub action: u32,
    pub pid: u32,
    /// Kernel dev_t: major << 20 | minor.
    pub device: u32,
    pub cpu: u32,
    pub error: u16,
    pub pdu_len: u16,
}

impl BlkIoTrace {
    /// Decode 48 bytes in little-endian (`swap`: big-endian) order.
    pub fn decode(b: &[u8], swap: bool) -> BlkIoTrace {
        let u32_at = |o: usize| {
            let a = [b[o], b[o + 1], b[o + 2], b[o + 3]];
            if swap {
                u32::from_be_bytes(a)
            } else {
                u32::from_le_bytes(a)
            }
        };
        let u64_at = |o: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[o..o + 8]);
            if swap {
                u64::from_be_bytes(a)
            } else {
                u64::from_le_bytes(a)
            }
        };
        let u16_at = |o: usize| {
            let a = [b[o], b[o + 1]];
            if swap {
                u16::from_be_bytes(a)
            } else {
                u16::from_le_bytes(a)
            }
        };
        BlkIoTrace {
            magic: u32_at(0),
            sequence: u32_at(4),
            time: u64_at(8),
            sector: u64_at(16),
            bytes: u32_at(24),
            action: u32_at(28),
            pid: u32_at(32),
            device: u32_at(36),
            cpu: u32_at(40),
            error: u16_at(44),
            pdu_len: u16_at(46),
        }
    }

    /// The 48 bytes, little-endian (what blktrace writes on x86 and arm64).
    pub fn encode(&self) -> [u8; RECORD] {
        let mut b = [0u8; RECORD];
        b[0..4].copy_from_slice(&self.magic.to_le_bytes());
        b[4..8].copy_from_slice(&self.sequence.to_le_bytes());
        b[8..16].copy_from_slice(&self.time.to_le_bytes());
        b[16..24].copy_from_slice(&self.sector.to_le_bytes());
        b[24..28].copy_from_slice(&self.bytes.to_le_bytes());
        b[28..32].copy_from_slice(&self.action.to_le_bytes());
        b[32..36].copy_from_slice(&self.pid.to_le_bytes());
        b[36..40].copy_from_slice(&self.device.to_le_bytes());
        b[40..44].copy_from_slice(&self.cpu.to_le_bytes());
        b[44..46].copy_from_slice(&self.error.to_le_bytes());
        b[46..48].copy_from_slice(&self.pdu_len.to_le_bytes());
        b
    }

    fn is_queue(&self) -> bool {
        self.action & 0xffff == TA_QUEUE
    }

    fn has(&self, tc: u32) -> bool {
        self.action & act(tc) != 0
    }

    /// fio's `t_get_ddir`: read, write or trim, or none (a flush, a notify).
    fn data_dir(&self) -> Option<Op> {
        if self.has(TC_READ) {
            Some(Op::Read)
        } else if self.has(TC_WRITE) {
            Some(Op::Write)
        } else if self.has(TC_DISCARD) {
            Some(Op::Trim)
        } else {
            None
        }
    }
}

/// Whether `bytes` start like a blktrace file, and in which byte order
/// (Some(true): swapped). fio's `is_blktrace`.
pub fn magic(bytes: &[u8]) -> Option<bool> {
    if bytes.len() < RECORD {
        return None;
    }
    let le = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    if le & 0xffff_ff00 == MAGIC {
        return Some(false);
    }
    (le.swap_bytes() & 0xffff_ff00 == MAGIC).then_some(true)
}

/// Every record with its offset in the file, checked.
fn records(path: &Path, bytes: &[u8], swap: bool) -> Result<Vec<BlkIoTrace>, ReplayError> {
    let err = |problem: String| ReplayError::Blktrace {
        path: path.to_path_buf(),
        problem,
    };
    let mut out = Vec::with_capacity(bytes.len() / RECORD);
    let mut at = 0usize;
    while at < bytes.len() {
        if bytes.len() - at < RECORD {
            return Err(err(format!(
                "{} bytes at offset {at} are a cut-off record (a record is {RECORD} bytes): the \
                 file is truncated",
                bytes.len() - at
            )));
        }
        let t = BlkIoTrace::decode(&bytes[at..at + RECORD], swap);
        if t.magic & 0xffff_ff00 != MAGIC {
            return Err(err(format!(
                "bad magic {:#010x} in the record at offset {at}: the file is not a blktrace \
                 (or is damaged there)",
                t.magic
            )));
        }
        if t.magic & 0xff != VERSION {
            return Err(err(format!(
                "record at offset {at} is blktrace version {}, fio and iolab read version {VERSION}",
                t.magic & 0xff
            )));
        }
        at += RECORD + t.pdu_len as usize;
        out.push(t);
    }
    Ok(out)
}

/// The device path of a kernel dev_t, as fio finds it (a block device node
/// with that major:minor).
fn device_path(dev: u32) -> Option<PathBuf> {
    let (major, minor) = (dev >> 20, dev & ((1 << 20) - 1));
    crate::sys::blockdev::BlockDev::from_dev(major, minor)
        .ok()
        .map(|d| d.dev_path())
        .filter(|p| p.exists())
}

/// Read a blktrace's queue events into `b` (fio's `read_blktrace`).
pub(super) fn parse(
    path: &Path,
    bytes: &[u8],
    swap: bool,
    b: &mut Builder,
) -> Result<(), ReplayError> {
    let mut zero_bytes = 0u64;
    for t in records(path, bytes, swap)? {
        if !t.is_queue() || t.has(TC_NOTIFY) {
            continue;
        }
        let delay = b.delay_ns(Some(t.time));
        let name = match b.opts.redirect.clone() {
            Some(r) => r,
            None => device_path(t.device)
                .ok_or_else(|| ReplayError::Blktrace {
                    path: path.to_path_buf(),
                    problem: format!(
                        "the trace's device {}:{} is not a block device on this machine: give \
                         replay_redirect=/dev/... to replay it on another",
                        t.device >> 20,
                        t.device & ((1 << 20) - 1)
                    ),
                })?
                .display()
                .to_string(),
        };
        let file = match b.index(&name) {
            Some(f) => f,
            None => {
                b.files.push(name);
                (b.files.len() - 1) as u16
            }
        };
        // fio rounds a blktrace's lengths up to replay_align (and its
        // offsets down, as for any log).
        let mut len = t.bytes;
        if b.opts.align > 1 {
            let a = b.opts.align;
            len = ((u64::from(len) + a - 1) & !(a - 1)).min(u64::from(u32::MAX)) as u32;
        }
        let op = if t.has(TC_DISCARD) {
            Op::Trim
        } else if t.has(TC_FLUSH) {
            Op::Fsync
        } else if t.has(TC_WRITE) {
            Op::Write
        } else {
            Op::Read
        };
        if matches!(op, Op::Read | Op::Write) && t.bytes == 0 {
            // fio: "ignoring zero byte trace".
            zero_bytes += 1;
            continue;
        }
        b.push(file, op, t.sector.saturating_mul(512), len, delay);
    }
    if zero_bytes > 0 {
        eprintln!(
            "iolab: read_iolog: {}: {zero_bytes} zero-byte read/write queue events left out, as fio \
             does",
            path.display()
        );
    }
    Ok(())
}

/// fio's blktrace merge: the queue events of `inputs` (read, write or trim),
/// input i's times scaled by `scalars[i]` percent and repeated `iters[i]`
/// times (each repeat shifted by the trace's length), in time order, into
/// `out` as a blktrace without payloads.
pub fn merge(
    inputs: &[PathBuf],
    scalars: &[f64],
    iters: &[f64],
    out: &Path,
) -> Result<usize, ReplayError> {
    let merge_err = |problem: String| ReplayError::Merge { problem };
    let mut all: Vec<(u64, usize, BlkIoTrace)> = Vec::new();
    for (i, p) in inputs.iter().enumerate() {
        let bytes = std::fs::read(p).map_err(|err| ReplayError::Open {
            path: p.clone(),
            err,
        })?;
        let swap = magic(&bytes).ok_or_else(|| {
            merge_err(format!(
                "'{}' is not a blktrace binary file (merge_blktrace_file merges blktraces only)",
                p.display()
            ))
        })?;
        // fio casts both to whole numbers.
        let scalar = scalars.get(i).map_or(100, |v| *v as u64).max(1);
        let iter = iters.get(i).map_or(1, |v| *v as u64).max(1);
        let events: Vec<BlkIoTrace> = records(p, &bytes, swap)?
            .into_iter()
            .filter(|t| t.is_queue() && !t.has(TC_NOTIFY) && t.data_dir().is_some())
            .collect();
        let length = events.last().map_or(0, |t| t.time);
        for k in 0..iter {
            for t in &events {
                let time = (t.time + k * length).saturating_mul(scalar) / 100;
                all.push((
                    time,
                    i,
                    BlkIoTrace {
                        time,
                        pdu_len: 0,
                        ..*t
                    },
                ));
            }
        }
    }
    // Stable: equal times keep the inputs' order, as fio's earliest-first pick.
    all.sort_by_key(|(t, i, _)| (*t, *i));
    let mut bytes = Vec::with_capacity(all.len() * RECORD);
    for (_, _, t) in &all {
        bytes.extend_from_slice(&t.encode());
    }
    std::fs::write(out, &bytes).map_err(|e| {
        merge_err(format!(
            "cannot write '{}': {e}; name a file in a directory that can be written",
            out.display()
        ))
    })?;
    Ok(all.len())
}
