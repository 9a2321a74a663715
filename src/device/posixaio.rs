//! posixaio backend (fio `posixaio`): POSIX AIO through glibc's
//! aio_read/aio_write/aio_fsync, waited for with aio_suspend or polled with
//! aio_error.
//!
//! glibc implements POSIX AIO in user space: each request is queued to a
//! helper thread glibc starts (one per file descriptor with work, up to its
//! limits), and that thread runs pread/pwrite. So the asynchrony is glibc's
//! thread pool, not the kernel's: submit costs a lock and a thread wake-up,
//! completion a wake-up back. The run output and the JSON `iolab` object say
//! so ([`super::PerformedBy::GlibcHelperThreads`]); use libaio or io_uring
//! for the kernel's asynchronous paths.
//!
//! As fio does: a trim waits until nothing is in flight, then is performed in
//! the caller's context ([`super::trim`]); an `Op::Fsync` is aio_fsync.
//! Completions are found by asking each in-flight control block (aio_error),
//! `reap(Wait::Sleep)` sleeps in aio_suspend until one of them is done.

use std::os::fd::RawFd;

use super::trim::{self, TrimKind};
use super::{BackendStats, Caps, Completion, DevResult, DeviceError, Queue, Queued, Wait};
use crate::measure::clock;
use crate::request::{Flush, IoCmd, Op};

/// One posixaio queue on the job's files.
pub struct Posixaio {
    files: super::files::FileTable,
    /// One control block per request slot; glibc holds a pointer to each
    /// while it is in flight, so the box never moves or shrinks.
    cbs: Box<[libc::aiocb]>,
    /// Slots in flight, in no order.
    in_flight: Vec<u32>,
    /// aio_suspend's list (pointers to the in-flight blocks), kept allocated.
    suspend: Vec<*const libc::aiocb>,
    /// Queued since the last commit (glibc took them at queue time).
    since_commit: u32,
    stats: BackendStats,
}

// SAFETY: the control blocks are touched by glibc's helper threads only
// between aio_read/aio_write and their completion, which glibc synchronises;
// the queue itself is used by one thread at a time.
unsafe impl Send for Posixaio {}

impl Posixaio {
    /// `fd` is borrowed: it must stay open for the life of the queue. `entries`
    /// bounds the slots (`IoCmd::slot` < entries).
    pub fn new(fd: RawFd, entries: u32) -> DevResult<Self> {
        super::files::check_open(fd, "posixaio")?;
        if entries == 0 {
            return Err(DeviceError::Unsupported(
                "posixaio: iodepth must be at least 1".into(),
            ));
        }
        // SAFETY: an all-zero aiocb is a valid, idle control block.
        let blank: libc::aiocb = unsafe { std::mem::zeroed() };
        Ok(Posixaio {
            files: super::files::FileTable::one(fd),
            cbs: vec![blank; entries as usize].into_boxed_slice(),
            in_flight: Vec::with_capacity(entries as usize),
            suspend: Vec::with_capacity(entries as usize),
            since_commit: 0,
            stats: BackendStats::default(),
        })
    }

    fn errno() -> i32 {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    }

    fn done(slot: u32, result: i64) -> Queued {
        Queued::Done(Completion {
            slot,
            result,
            dev_start: 0,
            dev_done: 0,
        })
    }

    /// Move finished requests into `out`; returns how many.
    fn scan(&mut self, out: &mut [Completion]) -> usize {
        let mut n = 0;
        let mut i = 0;
        while i < self.in_flight.len() && n < out.len() {
            let slot = self.in_flight[i];
            let cb = &mut self.cbs[slot as usize];
            // SAFETY: a control block glibc accepted and not yet returned.
            let err = unsafe { libc::aio_error(cb) };
            if err == libc::EINPROGRESS {
                i += 1;
                continue;
            }
            // SAFETY: as above; aio_return once per finished request.
            let ret = unsafe { libc::aio_return(cb) };
            let result = match err {
                0 => ret as i64,
                e if e > 0 => -(e as i64),
                _ => -(Self::errno() as i64),
            };
            out[n] = Completion {
                slot,
                result,
                dev_start: 0,
                dev_done: 0,
            };
            n += 1;
            self.in_flight.swap_remove(i);
        }
        n
    }

    /// aio_suspend on every in-flight block, for at most `timeout_ns`.
    fn suspend(&mut self, timeout_ns: Option<u64>) {
        self.suspend.clear();
        for &s in &self.in_flight {
            self.suspend.push(&self.cbs[s as usize]);
        }
        let ts = timeout_ns.map(|ns| libc::timespec {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        });
        let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const _);
        self.stats.wait_calls += 1;
        // SAFETY: the list points at live, in-flight control blocks; a
        // return on EINTR/EAGAIN (timeout) just means look again.
        unsafe { libc::aio_suspend(self.suspend.as_ptr(), self.suspend.len() as i32, tsp) };
    }

    /// Requests in flight.
    #[cfg(any(test, feature = "testing"))]
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }
}

impl Queue for Posixaio {
    fn name(&self) -> &'static str {
        "posixaio"
    }

    fn caps(&self) -> Caps {
        Caps {
            can_peek: true,
            can_sleep: true,
            ..Caps::default()
        }
    }

    fn queue(&mut self, cmd: &IoCmd) -> DevResult<Queued> {
        let fd = self.files.fd(cmd.file);
        if cmd.op == Op::Trim {
            // fio: a trim waits for an empty queue, then runs in place.
            if !self.in_flight.is_empty() {
                return Ok(Queued::Busy);
            }
            let kind: TrimKind = self.files.trim_kind(cmd.file);
            let r = super::psync::retry_eintr(&mut self.stats.submit_calls, || {
                trim::perform(fd, kind, cmd.offset, cmd.len)
            });
            return Ok(Self::done(cmd.slot, r));
        }
        let Some(cb) = self.cbs.get_mut(cmd.slot as usize) else {
            return Err(DeviceError::Unsupported(format!(
                "posixaio: request slot {} beyond the {} control blocks",
                cmd.slot,
                self.cbs.len()
            )));
        };
        cb.aio_fildes = fd;
        cb.aio_offset = cmd.offset as libc::off_t;
        cb.aio_buf = cmd.buf.cast();
        cb.aio_nbytes = cmd.len as usize;
        cb.aio_reqprio = 0;
        cb.aio_sigevent.sigev_notify = libc::SIGEV_NONE;
        self.stats.submit_calls += 1;
        // SAFETY: the block and the buffer it names stay valid until the
        // request is reaped (the engine keeps `cmd.buf`; the box is ours).
        let rc = unsafe {
            match cmd.op {
                Op::Read => libc::aio_read(cb),
                Op::Write => libc::aio_write(cb),
                // The command's kind: O_DSYNC for an fdatasync (fio's
                // posixaio passes O_SYNC for every kind).
                _ => libc::aio_fsync(
                    if cmd.flush == Flush::Data {
                        libc::O_DSYNC
                    } else {
                        libc::O_SYNC
                    },
                    cb,
                ),
            }
        };
        if rc < 0 {
            let e = Self::errno();
            // glibc is out of request slots: reap, then retry (fio does too).
            if e == libc::EAGAIN {
                return Ok(Queued::Busy);
            }
            return Ok(Self::done(cmd.slot, -(e as i64)));
        }
        self.in_flight.push(cmd.slot);
        self.since_commit += 1;
        Ok(Queued::Pending)
    }

    /// glibc took each request when it was queued.
    fn commit(&mut self) -> DevResult<u32> {
        Ok(std::mem::take(&mut self.since_commit))
    }

    fn reap(&mut self, wait: Wait, out: &mut [Completion]) -> DevResult<usize> {
        let mut n = self.scan(out);
        if let Wait::Sleep { min } = wait {
            let want = (min as usize).min(out.len());
            while n < want && !self.in_flight.is_empty() {
                self.suspend(None);
                n += self.scan(&mut out[n..]);
            }
        }
        Ok(n)
    }

    fn sleep_until(
        &mut self,
        min: u32,
        deadline_ns: u64,
        out: &mut [Completion],
    ) -> DevResult<usize> {
        let mut n = self.scan(out);
        let want = (min as usize).min(out.len());
        while n < want && !self.in_flight.is_empty() {
            let now = clock::now_ns();
            if now >= deadline_ns {
                break;
            }
            self.suspend(Some(deadline_ns - now));
            n += self.scan(&mut out[n..]);
        }
        Ok(n)
    }

    fn stats(&self) -> BackendStats {
        BackendStats {
            performed_by: Some(super::PerformedBy::GlibcHelperThreads),
            ..self.stats
        }
    }

    fn commands_in_flight(&self) -> Option<u32> {
        Some(self.in_flight.len() as u32)
    }

    fn set_files(&mut self, fds: &[RawFd]) -> DevResult<()> {
        self.files.set(fds)
    }
}

impl Drop for Posixaio {
    /// glibc's threads may still write into the buffers and blocks: cancel
    /// what has not started and wait for the rest before they are freed.
    fn drop(&mut self) {
        for &fd in self.files.all() {
            // SAFETY: cancels this process's requests on fd; harmless if none.
            unsafe { libc::aio_cancel(fd, std::ptr::null_mut()) };
        }
        let mut out = [Completion::default(); 16];
        while !self.in_flight.is_empty() {
            if self.scan(&mut out) == 0 {
                self.suspend(Some(10_000_000));
            }
        }
    }
}
