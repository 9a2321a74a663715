//! The vocabulary of one I/O: operation, class, and the command a backend receives.

use std::fmt;

/// What a request does to the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Read from the target.
    Read,
    /// Write to the target.
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

/// What an [`Op::Fsync`] request flushes: fio's three sync directions
/// (`fsync=N`, `fdatasync=N`, `sync_file_range=FLAGS:N`), chosen per request
/// because a job may ask for all three, each on its own count of writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Flush {
    /// fsync(2): the file's data and metadata.
    #[default]
    Full,
    /// fdatasync(2): the data and only the metadata needed to read it back.
    Data,
    /// sync_file_range(2) with these SYNC_FILE_RANGE_* `flags` over `len`
    /// bytes from the command's `offset` (what the job wrote to the file since
    /// its last sync, as fio tracks it).
    Range {
        /// SYNC_FILE_RANGE_WAIT_BEFORE / _WRITE / _WAIT_AFTER.
        flags: u32,
        /// Bytes from `IoCmd::offset`; the engine never sends 0 (to the
        /// file's end), it completes an empty range itself as fio does.
        len: u64,
    },
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
    /// Every class, most urgent first.
    pub const ALL: [Class; 4] = [
        Class::Read,
        Class::SyncWrite,
        Class::Readahead,
        Class::AsyncWrite,
    ];
    /// How many classes there are.
    pub const COUNT: usize = 4;

    /// The class's index into per-class arrays (its priority order).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// High-priority classes trigger LAT throttling of the others.
    pub const fn is_high(self) -> bool {
        matches!(self, Class::Read | Class::SyncWrite)
    }

    /// The class's name as the reports print it.
    pub fn name(self) -> &'static str {
        match self {
            Class::Read => "read",
            Class::SyncWrite => "syncwrite",
            Class::Readahead => "readahead",
            Class::AsyncWrite => "asyncwrite",
        }
    }

    /// The class named `s`, if any (the names of [`Class::name`]).
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
#[non_exhaustive]
pub struct IoCmd {
    /// What to do.
    pub op: Op,
    /// Byte offset on the target.
    pub offset: u64,
    /// Bytes to transfer.
    pub len: u32,
    /// The issuer's request slot, echoed in the completion.
    pub slot: u32,
    /// The data buffer (`len` bytes); see the type's notes on its lifetime.
    pub buf: *mut u8,
    /// Index of `buf` in the registered buffer table (for fixed buffers).
    pub buf_index: u16,
    /// Which of the queue's files (`device::files::FileTable`); 0 unless the
    /// job has `nrfiles` > 1.
    pub file: u16,
    /// Linux ioprio value (class << 13 | level); 0 = none.
    pub ioprio: u16,
    /// The request's class (the host scheduler orders by it).
    pub class: Class,
    /// What an `Op::Fsync` flushes ([`Flush::Full`] for every other op).
    pub flush: Flush,
}

// SAFETY: an IoCmd only carries a pointer into a buffer owned by the worker thread
// that also owns the queue the command goes to.
unsafe impl Send for IoCmd {}

impl IoCmd {
    /// A command moving `len` bytes at `offset` through `buf`, echoed back as
    /// `slot`: class `read`, file 0, no ioprio, unregistered buffer 0, a full
    /// flush for `Op::Fsync`. The builder methods below set the rest, so a
    /// field added later does not break a caller.
    pub const fn new(op: Op, offset: u64, len: u32, slot: u32, buf: *mut u8) -> IoCmd {
        IoCmd {
            op,
            offset,
            len,
            slot,
            buf,
            buf_index: 0,
            file: 0,
            ioprio: 0,
            class: Class::Read,
            flush: Flush::Full,
        }
    }
    /// With index `i` in the registered buffer table.
    pub const fn with_buf_index(mut self, i: u16) -> IoCmd {
        self.buf_index = i;
        self
    }
    /// For file `i` of the queue's files.
    pub const fn with_file(mut self, i: u16) -> IoCmd {
        self.file = i;
        self
    }
    /// With Linux ioprio value `prio`.
    pub const fn with_ioprio(mut self, prio: u16) -> IoCmd {
        self.ioprio = prio;
        self
    }
    /// Of class `class`.
    pub const fn with_class(mut self, class: Class) -> IoCmd {
        self.class = class;
        self
    }
    /// An `Op::Fsync` that flushes as `flush` says.
    pub const fn with_flush(mut self, flush: Flush) -> IoCmd {
        self.flush = flush;
        self
    }
}

/// A finished command as a backend reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Completion {
    /// The slot of the command that finished ([`IoCmd::slot`]).
    pub slot: u32,
    /// Bytes transferred, or a negative errno.
    pub result: i64,
    /// Device-side service start and finish on the engine clock (ns), where the
    /// backend knows them (the null device does); 0 when unknown.
    pub dev_start: u64,
    /// See `dev_start`.
    pub dev_done: u64,
}

impl Completion {
    /// The completion of command `slot`: `result` bytes moved, or a negative
    /// errno; no device times.
    pub const fn new(slot: u32, result: i64) -> Completion {
        Completion {
            slot,
            result,
            dev_start: 0,
            dev_done: 0,
        }
    }
    /// With the device's service start and finish (engine clock, ns).
    pub const fn with_device_times(mut self, start: u64, done: u64) -> Completion {
        self.dev_start = start;
        self.dev_done = done;
        self
    }
    /// The command failed (`result` is a negative errno).
    pub fn is_err(&self) -> bool {
        self.result < 0
    }
}
