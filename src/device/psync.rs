//! psync backend: pread/pwrite (fio `psync`) or preadv2/pwritev2 (fio `pvsync2`).
//!
//! The synchronous model: `queue` performs the I/O in the caller's context and
//! returns it completed, so there is nothing to commit or reap. On a bio-based
//! device such as zram the whole I/O, device work included, runs inside the call.
//! A trim is BLKDISCARD or a punched hole, synchronous too ([`super::trim`]).

use std::os::fd::RawFd;

use super::perform::Perform;
use super::trim::{self, TrimKind};
use super::{BackendStats, Completion, DevResult, DeviceError};
use crate::request::{Flush, IoCmd, Op};

/// The options of fio's pvsync2 list a job may set only with pvsync2 (or
/// another engine that has them).
pub(crate) const PVSYNC2_OWNED: &[&str] = &["hipri_percentage", "nowait", "uncached"];

/// pvsync2's own option (its per-call flags are `device::options::CallFlags`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Pvsync2Options {
    /// `hipri_percentage`: share of requests (0-100) sent with RWF_HIPRI when
    /// `hipri=1`.
    pub hipri_percentage: u32,
}

impl Default for Pvsync2Options {
    fn default() -> Self {
        Pvsync2Options {
            hipri_percentage: 100,
        }
    }
}

impl Pvsync2Options {
    /// `hipri_percentage` without `hipri` sends nothing polled (fio ignores
    /// it too): a note, not an error.
    pub(crate) fn check(
        &self,
        job: &super::option_facts::JobFacts,
        flags: &super::option_facts::CallFlags,
        notes: &mut Vec<super::option_facts::OptionNote>,
    ) {
        if flags.hipri {
            notes.push((
                "hipri",
                "polls only where the I/O is direct and the file's device has poll queues \
                 (queue/io_poll=1): elsewhere the kernel completes each RWF_HIPRI call by \
                 interrupt, as it does under fio",
            ));
        }
        if job.is_set("hipri_percentage") && !flags.hipri {
            notes.push((
                "hipri_percentage",
                "has no effect: it is the share of requests sent with RWF_HIPRI when hipri=1, \
                 and no request is polled without it (fio ignores it too)",
            ));
        }
    }
}

/// Per-queue options of the psync backend.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PsyncFlags {
    /// RWF_HIPRI (fio `hipri`): poll for completion in the kernel. Needs pvsync2;
    /// without O_DIRECT or poll queues the kernel completes by interrupt.
    pub hipri: bool,
    /// RWF_NOWAIT: fail with EAGAIN instead of blocking (only when asked; a
    /// benchmark normally wants every I/O done).
    pub nowait: bool,
    /// RWF_DONTCACHE on buffered reads and writes (fio `uncached`).
    pub uncached: bool,
    /// With `hipri`: the share of requests (0-100) that carry RWF_HIPRI
    /// (fio `hipri_percentage`); `None`: all of them.
    pub hipri_percentage: Option<u32>,
    /// Writes carry RWF_ATOMIC (fio `atomic`).
    pub atomic: bool,
}

/// One psync queue on a file descriptor the engine owns.
#[derive(Debug)]
pub struct Psync {
    files: super::files::FileTable,
    vectored: bool,
    /// RWF_* flags of reads and of writes.
    rwf: libc::c_int,
    rwf_write: libc::c_int,
    /// `hipri_percentage` from 1 to 99: RWF_HIPRI is drawn per request with
    /// this share, from `rng` (xorshift; no system call). 0: never drawn.
    hipri_share: u32,
    rng: u64,
    stats: BackendStats,
}

impl Psync {
    /// `fd` is borrowed: it must stay open for the life of this queue.
    /// `vectored` selects preadv2/pwritev2 (pvsync2), required for any RWF flag.
    pub fn new(fd: RawFd, vectored: bool, flags: PsyncFlags) -> DevResult<Self> {
        super::files::check_open(fd, "psync")?;
        if !vectored && (flags.hipri || flags.nowait || flags.uncached || flags.atomic) {
            let which = if flags.hipri {
                "hipri"
            } else if flags.nowait {
                "nowait"
            } else if flags.uncached {
                "uncached"
            } else {
                "atomic"
            };
            return Err(DeviceError::Unsupported(format!(
                "psync: {which} needs per-call flags, which only preadv2/pwritev2 carry; \
                 use ioengine=pvsync2"
            )));
        }
        // No poll-queue check here, unlike io_uring's IOPOLL: preadv2 with
        // RWF_HIPRI on a queue that cannot poll (or on the page cache) is
        // completed by interrupt, and fio runs such a job; a note says so.
        let share = flags.hipri_percentage.unwrap_or(100).min(100);
        let mut rwf = 0;
        if flags.hipri && share == 100 {
            rwf |= libc::RWF_HIPRI;
        }
        if flags.nowait {
            rwf |= libc::RWF_NOWAIT;
        }
        if flags.uncached {
            rwf |= libc::RWF_DONTCACHE;
        }
        Ok(Psync {
            files: super::files::FileTable::one(fd),
            vectored,
            rwf,
            rwf_write: rwf | if flags.atomic { libc::RWF_ATOMIC } else { 0 },
            hipri_share: if flags.hipri && share < 100 { share } else { 0 },
            rng: 0x9E37_79B9_7F4A_7C15,
            stats: BackendStats::default(),
        })
    }

    /// RWF_HIPRI for this request, drawn with `hipri_share` percent.
    #[inline]
    fn hipri_draw(&mut self) -> libc::c_int {
        if self.hipri_share == 0 {
            return 0;
        }
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        if (x % 100) < u64::from(self.hipri_share) {
            libc::RWF_HIPRI
        } else {
            0
        }
    }

    fn call(&mut self, file: u16) -> SyncCall {
        let hipri = self.hipri_draw();
        SyncCall {
            fd: self.files.fd(file),
            vectored: self.vectored,
            rwf: self.rwf | hipri,
            rwf_write: self.rwf_write | hipri,
            trim: self.files.trim_kind(file),
        }
    }
}

/// One synchronous I/O call on a descriptor: what psync does for every request,
/// and what io_uring does for a request `adaptive` sends down the synchronous
/// path (see [`Queue::perform`](super::Queue::perform)).
#[derive(Clone, Copy, Debug)]
pub struct SyncCall {
    pub fd: RawFd,
    /// preadv2/pwritev2 with `rwf` instead of pread/pwrite.
    pub vectored: bool,
    /// RWF_* flags of reads, and of writes.
    pub rwf: libc::c_int,
    pub rwf_write: libc::c_int,
    /// How `Op::Trim` is done on `fd`.
    pub trim: TrimKind,
}

impl SyncCall {
    fn once(&self, cmd: &IoCmd) -> isize {
        let fd = self.fd;
        let off = cmd.offset as libc::off_t;
        let len = cmd.len as usize;
        // In every arm the engine guarantees `cmd.buf` points to at least
        // `cmd.len` bytes that stay valid and unaliased for the call.
        match (cmd.op, self.vectored) {
            // SAFETY: `cmd.buf` holds `len` writable bytes for the call (above).
            (Op::Read, false) => unsafe { libc::pread(fd, cmd.buf.cast(), len, off) },
            // SAFETY: `cmd.buf` holds `len` readable bytes for the call (above).
            (Op::Write, false) => unsafe { libc::pwrite(fd, cmd.buf.cast(), len, off) },
            (Op::Read, true) => {
                let iov = libc::iovec {
                    iov_base: cmd.buf.cast(),
                    iov_len: len,
                };
                // SAFETY: one iovec, on the stack for the call, over `cmd.buf`'s
                // `len` writable bytes (above).
                unsafe { libc::preadv2(fd, &iov, 1, off, self.rwf) }
            }
            (Op::Write, true) => {
                let iov = libc::iovec {
                    iov_base: cmd.buf.cast(),
                    iov_len: len,
                };
                // SAFETY: one iovec, on the stack for the call, over `cmd.buf`'s
                // `len` readable bytes (above).
                unsafe { libc::pwritev2(fd, &iov, 1, off, self.rwf_write) }
            }
            (Op::Trim, _) => trim::perform(fd, self.trim, cmd.offset, cmd.len),
            (Op::Fsync, _) => flush(fd, cmd),
        }
    }

    /// Perform `cmd` in the caller's context; `calls` counts the system calls made.
    /// Returns bytes moved or a negative errno, like a completion's result.
    #[inline]
    pub fn perform(&self, cmd: &IoCmd, calls: &mut u64) -> i64 {
        retry_eintr(calls, || self.once(cmd))
    }

    /// pread/pwrite of `cmd` on `fd`, done in the caller's context: the inline
    /// path `adaptive` takes on a queue whose own path detours (io_uring's
    /// io-wq punts, buffered AIO). No device timestamps: there is no device
    /// queue between submit and completion.
    pub fn inline(fd: RawFd, trim: TrimKind, cmd: &IoCmd, calls: &mut u64) -> Completion {
        let call = SyncCall {
            fd,
            vectored: false,
            rwf: 0,
            rwf_write: 0,
            trim,
        };
        Completion {
            slot: cmd.slot,
            result: call.perform(cmd, calls),
            dev_start: 0,
            dev_done: 0,
        }
    }
}

/// The sync an `Op::Fsync` command asks for ([`Flush`]): fsync, fdatasync,
/// or sync_file_range over the command's range; returns 0 or -1 like the
/// calls.
pub(crate) fn flush(fd: RawFd, cmd: &IoCmd) -> isize {
    let rc = match cmd.flush {
        // SAFETY: takes only a descriptor number and touches no memory of
        // ours; a closed one gives EBADF.
        Flush::Full => unsafe { libc::fsync(fd) },
        // SAFETY: as fsync.
        Flush::Data => unsafe { libc::fdatasync(fd) },
        // SAFETY: a descriptor and integers, as fsync.
        Flush::Range { flags, len } => unsafe {
            libc::sync_file_range(fd, cmd.offset as libc::off64_t, len as libc::off64_t, flags)
        },
    };
    rc as isize
}

/// Run one system call (returning bytes or -1 with errno) until a signal does not
/// interrupt it; `calls` counts every attempt. Returns bytes or a negative errno.
#[inline]
pub(crate) fn retry_eintr(calls: &mut u64, mut call: impl FnMut() -> isize) -> i64 {
    loop {
        *calls += 1;
        let rc = call();
        if rc >= 0 {
            return rc as i64;
        }
        let errno = std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        // A signal before any byte moved is not the I/O's fault: issue it again.
        if errno != libc::EINTR {
            return -(errno as i64);
        }
    }
}

impl Perform for Psync {
    fn engine_name(&self) -> &'static str {
        if self.vectored { "pvsync2" } else { "psync" }
    }

    #[inline]
    fn perform_one(&mut self, cmd: &IoCmd) -> i64 {
        self.call(cmd.file)
            .perform(cmd, &mut self.stats.submit_calls)
    }

    fn counters(&self) -> BackendStats {
        self.stats
    }

    fn address_files(&mut self, fds: &[RawFd]) -> DevResult<()> {
        self.files.set(fds)
    }
}
