//! Space backends: the file system's allocation calls as the I/O, as fio's
//! `falloc` and `ftruncate` engines make them. No data moves; what is timed
//! is the file system allocating, reserving or freeing blocks.
//!
//! - `falloc`: a write is fallocate(2) mode 0 over its range (allocates, and
//!   extends the file past its end); a read is fallocate with
//!   FALLOC_FL_KEEP_SIZE (allocates without changing the size); a trim punches
//!   a hole (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE). A request that
//!   succeeds counts its length as done, as fio counts it.
//! - `ftruncate`: a write is ftruncate(2) to the request's offset (fio's
//!   meaning: the offset, not offset + length, so a sequential job grows the
//!   file block by block and a random one jumps its size about); a read or a
//!   trim fails with EINVAL, as fio fails it.
//!
//! `Op::Fsync` (fio `fsync=N`) is fsync/fdatasync in both. Synchronous: the
//! call is made inside `queue`.

use std::os::fd::RawFd;

use super::perform::Perform;
use super::psync::{flush, retry_eintr};
use super::{BackendStats, DevResult};
use crate::request::{IoCmd, Op};

/// Which allocation call a [`Space`] queue makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpaceKind {
    /// fio `falloc`.
    Falloc,
    /// fio `ftruncate`.
    Ftruncate,
}

impl SpaceKind {
    pub fn fio_name(self) -> &'static str {
        match self {
            SpaceKind::Falloc => "falloc",
            SpaceKind::Ftruncate => "ftruncate",
        }
    }
}

/// One falloc / ftruncate queue on the job's files.
#[derive(Debug)]
pub struct Space {
    files: super::files::FileTable,
    kind: SpaceKind,
    stats: BackendStats,
}

impl Space {
    /// `fd` is borrowed: it must stay open for the life of the queue.
    pub fn new(fd: RawFd, kind: SpaceKind) -> DevResult<Self> {
        super::files::check_open(fd, kind.fio_name())?;
        Ok(Space {
            files: super::files::FileTable::one(fd),
            kind,
            stats: BackendStats::default(),
        })
    }

    fn call(&mut self, cmd: &IoCmd) -> i64 {
        let fd = self.files.fd(cmd.file);
        let calls = &mut self.stats.submit_calls;
        let off = cmd.offset as libc::off_t;
        let len = cmd.len as libc::off_t;
        if cmd.op == Op::Fsync {
            return retry_eintr(calls, || flush(fd, cmd));
        }
        let r = match (self.kind, cmd.op) {
            (SpaceKind::Falloc, op) => {
                let mode = match op {
                    Op::Read => libc::FALLOC_FL_KEEP_SIZE,
                    Op::Trim => libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    _ => 0,
                };
                // SAFETY: a plain call on a descriptor.
                retry_eintr(calls, || unsafe {
                    libc::fallocate(fd, mode, off, len) as isize
                })
            }
            (SpaceKind::Ftruncate, Op::Write) => {
                // SAFETY: a plain call on a descriptor.
                retry_eintr(calls, || unsafe { libc::ftruncate(fd, off) as isize })
            }
            (SpaceKind::Ftruncate, _) => return -(libc::EINVAL as i64),
        };
        // The calls answer 0; the request's bytes are what it did.
        if r < 0 { r } else { i64::from(cmd.len) }
    }
}

impl Perform for Space {
    fn engine_name(&self) -> &'static str {
        self.kind.fio_name()
    }

    #[inline]
    fn perform_one(&mut self, cmd: &IoCmd) -> i64 {
        self.call(cmd)
    }

    fn counters(&self) -> BackendStats {
        self.stats
    }

    fn address_files(&mut self, fds: &[RawFd]) -> DevResult<()> {
        self.files.set(fds)
    }
}
