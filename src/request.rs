//! The vocabulary of one I/O: operation, class, and the command a backend receives.

use std::fmt;

/// What a request does to the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Read,
    Write,
    /// Discard the range (fio's `rw=trim` family): BLKDISCARD on a block
    /// device, a punched hole in a file (`device::trim`).
    Trim,
    /// Flush written data to stable storage (fio's `fsync=N`).
    Fsync,
}

impl Op {
    /// Index into per-direction arrays (`[read, write, trim, sync]`), fio's
    /// order (fio's DDIR_READ, DDIR_WRITE, DDIR_TRIM, DDIR_SYNC).
    pub const fn dir(self) -> usize {
        match self {
            Op::Read => 0,
            Op::Write => 1,
            Op::Trim => 2,
            Op::Fsync => 3,
        }
    }

    /// Index into a job's `[read, write]` option pairs (`bs`, `rate`,
    /// `blockalign`, ...): a trim takes the write's value, as fio's
    /// `read,write,trim` options give trims the write value when no third one
    /// is set (iolab refuses a third one). None for an fsync.
    #[inline]
    pub const fn rw_slot(self) -> Option<usize> {
        match self {
            Op::Read => Some(0),
            Op::Write | Op::Trim => Some(1),
            Op::Fsync => None,
        }
    }
}

/// Request class (study 003). Order is priority: lower value = more urgent.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// Synchronous (foreground) read: someone is waiting for it.
    Read = 0,
    /// Synchronous write (`sync=1`, O_SYNC, fsync-bound): also waited for.
    SyncWrite = 1,
    /// Read-ahead issued on behalf of a sequential reader: useful, not yet awaited.
    Readahead = 2,
    /// Buffered write-back: nobody waits for it.
    AsyncWrite = 3,
}

impl Class {
    pub const ALL: [Class; 4] = [
        Class::Read,
        Class::SyncWrite,
        Class::Readahead,
        Class::AsyncWrite,
    ];
    pub const COUNT: usize = 4;

    pub const fn index(self) -> usize {
        self as usize
    }

    /// High-priority classes trigger LAT throttling of the others.
    pub const fn is_high(self) -> bool {
        matches!(self, Class::Read | Class::SyncWrite)
    }

    pub fn name(self) -> &'static str {
        match self {
            Class::Read => "read",
            Class::SyncWrite => "syncwrite",
            Class::Readahead => "readahead",
            Class::AsyncWrite => "asyncwrite",
        }
    }

    pub fn parse(s: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.name() == s)
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One command handed to a backend queue.
///
/// `buf` points into the worker's preallocated buffer pool (aligned for O_DIRECT);
/// the worker guarantees it stays valid and untouched until the command's
/// completion has been reaped. `slot` is echoed back in the completion.
#[derive(Clone, Copy, Debug)]
pub struct IoCmd {
    pub op: Op,
    pub offset: u64,
    pub len: u32,
    pub slot: u32,
    pub buf: *mut u8,
    /// Index of `buf` in the registered buffer table (for fixed buffers).
    pub buf_index: u16,
    /// Which of the queue's files (`device::files::FileTable`); 0 unless the
    /// job has `nrfiles` > 1.
    pub file: u16,
    /// Linux ioprio value (class << 13 | level); 0 = none.
    pub ioprio: u16,
    pub class: Class,
}

// SAFETY: an IoCmd only carries a pointer into a buffer owned by the worker thread
// that also owns the queue the command goes to.
unsafe impl Send for IoCmd {}

/// A finished command as a backend reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    pub slot: u32,
    /// Bytes transferred, or a negative errno.
    pub result: i64,
    /// Device-side service start and finish on the engine clock (ns), where the
    /// backend knows them (the null device does); 0 when unknown.
    pub dev_start: u64,
    pub dev_done: u64,
}

impl Completion {
    pub fn is_err(&self) -> bool {
        self.result < 0
    }
}
