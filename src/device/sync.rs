//! sync-family backends that position the file themselves or pass an iovec:
//! fio's `sync` (lseek + read/write), `vsync` (lseek + readv/writev) and
//! `pvsync` (preadv/pwritev, no per-call flags; `pvsync2` with flags is in
//! [`psync`](super::psync)).
//!
//! The same synchronous model as psync: `queue` performs the I/O in the caller's
//! context and returns it completed. What differs is the call the kernel sees,
//! which is the point of choosing one of these engines: `sync` pays an lseek(2)
//! whenever a request does not start where the previous one ended (like fio, it
//! skips the lseek when the file position is already right, so a sequential job
//! makes one system call per request and a random one makes two).

use std::os::fd::RawFd;

use super::perform::Perform;
use super::psync::{flush, retry_eintr};
use super::{BackendStats, DevResult};
use crate::request::{IoCmd, Op};

/// Which system calls a [`SyncIo`] queue makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncKind {
    /// fio `sync`: lseek(2) to the offset when needed, then read(2)/write(2).
    Lseek,
    /// fio `vsync`: lseek(2) when needed, then readv(2)/writev(2) with one iovec.
    /// (fio's vsync also merges adjacent queued requests into one call; iolab's
    /// synchronous model has one request per call, so nothing is merged.)
    LseekVectored,
    /// fio `pvsync`: preadv(2)/pwritev(2) with one iovec.
    Vectored,
}

impl SyncKind {
    pub fn fio_name(self) -> &'static str {
        match self {
            SyncKind::Lseek => "sync",
            SyncKind::LseekVectored => "vsync",
            SyncKind::Vectored => "pvsync",
        }
    }
}

/// One sync / vsync / pvsync queue on a file descriptor the engine owns.
#[derive(Debug)]
pub struct SyncIo {
    files: super::files::FileTable,
    /// The file `pos` is about.
    pos_file: u16,
    kind: SyncKind,
    /// The descriptor's file position as this queue last left it; `None` when
    /// unknown (at start, and after an error), which forces an lseek.
    pos: Option<u64>,
    /// lseek(2) calls made (also counted in `stats.submit_calls`).
    seeks: u64,
    stats: BackendStats,
}

impl SyncIo {
    /// `fd` is borrowed: it must stay open for the life of this queue, and nothing
    /// else may move its file position (the queue remembers where it left it).
    /// An `Op::Fsync` runs the sync its command names (`IoCmd::flush`).
    pub fn new(fd: RawFd, kind: SyncKind) -> DevResult<Self> {
        super::files::check_open(fd, kind.fio_name())?;
        Ok(SyncIo {
            files: super::files::FileTable::one(fd),
            pos_file: 0,
            kind,
            pos: None,
            seeks: 0,
            stats: BackendStats::default(),
        })
    }

    /// lseek(2) calls made so far: a sequential job needs one, a random job one
    /// per request that does not follow its predecessor.
    #[cfg(any(test, feature = "testing"))]
    pub fn seeks(&self) -> u64 {
        self.seeks
    }

    fn call(&mut self, cmd: &IoCmd) -> i64 {
        let fd = self.files.fd(cmd.file);
        if cmd.file != self.pos_file {
            // Each file has its own position; this queue knows only the last.
            self.pos_file = cmd.file;
            self.pos = None;
        }
        let len = cmd.len as usize;
        let iov = libc::iovec {
            iov_base: cmd.buf.cast(),
            iov_len: len,
        };
        let calls = &mut self.stats.submit_calls;
        if cmd.op == Op::Trim {
            // A trim names its range itself: the file position neither matters
            // nor moves.
            let kind = self.files.trim_kind(cmd.file);
            return retry_eintr(calls, || {
                super::trim::perform(fd, kind, cmd.offset, cmd.len)
            });
        }
        if cmd.op == Op::Fsync {
            return retry_eintr(calls, || flush(fd, cmd));
        }
        if self.kind == SyncKind::Vectored {
            let off = cmd.offset as libc::off_t;
            // The engine guarantees `cmd.buf` points to at least `cmd.len`
            // bytes that stay valid and unaliased for the call; `iov` covers them.
            return match cmd.op {
                // SAFETY: one live iovec over `cmd.buf`'s writable bytes (above).
                Op::Read => retry_eintr(calls, || unsafe { libc::preadv(fd, &iov, 1, off) }),
                // SAFETY: one live iovec over `cmd.buf`'s readable bytes (above).
                _ => retry_eintr(calls, || unsafe { libc::pwritev(fd, &iov, 1, off) }),
            };
        }
        if self.pos != Some(cmd.offset) {
            self.seeks += 1;
            let off = cmd.offset as libc::off_t;
            // SAFETY: lseek on an open descriptor; SEEK_SET to a non-negative offset.
            let r = retry_eintr(calls, || unsafe {
                libc::lseek(fd, off, libc::SEEK_SET) as isize
            });
            if r < 0 {
                self.pos = None;
                return r;
            }
        }
        let vectored = self.kind == SyncKind::LseekVectored;
        // As above, `cmd.buf` holds `cmd.len` bytes for the call, and `iov`
        // covers them.
        let r = match (cmd.op, vectored) {
            (Op::Read, false) => {
                // SAFETY: `cmd.buf` holds `len` writable bytes (above).
                retry_eintr(calls, || unsafe { libc::read(fd, cmd.buf.cast(), len) })
            }
            // SAFETY: one live iovec over `cmd.buf`'s writable bytes (above).
            (Op::Read, true) => retry_eintr(calls, || unsafe { libc::readv(fd, &iov, 1) }),
            // SAFETY: `cmd.buf` holds `len` readable bytes (above).
            (_, false) => retry_eintr(calls, || unsafe { libc::write(fd, cmd.buf.cast(), len) }),
            // SAFETY: one live iovec over `cmd.buf`'s readable bytes (above).
            (_, true) => retry_eintr(calls, || unsafe { libc::writev(fd, &iov, 1) }),
        };
        // The kernel advanced the position by what moved; after an error it is
        // not known for certain, so the next request seeks.
        self.pos = (r >= 0).then(|| cmd.offset + r as u64);
        r
    }
}

impl Perform for SyncIo {
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
        self.pos = None;
        self.files.set(fds)
    }
}
