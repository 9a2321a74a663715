//! libaio backend: Linux kernel AIO (fio `libaio`) through the raw system calls
//! io_setup / io_submit / io_getevents / io_destroy; no C library.
//!
//! One AIO context per worker. `queue` fills a preallocated iocb (aio_data = the
//! request slot), `commit` hands the queued iocbs to io_submit (in chunks of
//! `batch_submit`, fio's `iodepth_batch_submit`), and completions come back two
//! ways:
//!
//! * **from the completion ring in user space** (fio's `userspace_reap=1`): the
//!   kernel maps its `struct aio_ring` at the address that *is* the context id,
//!   writes `io_event`s into it and advances `tail`; we read events from `head` to
//!   `tail` and advance `head` ourselves — no system call. This is `reap(Peek)`,
//!   the basis of `completion=poll` on AIO, and also the first look of every
//!   sleeping reap (a completion already there needs no io_getevents).
//!   With `ring_only` (fio's `userspace_reap=1`, which fio honours only when
//!   reaping a minimum of 0 events) a sleeping reap spins on the ring too, so a
//!   run makes no io_getevents call at all.
//! * **by io_getevents**, which sleeps until `min` events arrived (the interrupt
//!   model), or returns at once with a zero timeout where the ring cannot be read
//!   (its magic or layout is not the one this code knows).
//!
//! Buffered files: AIO on a file opened without O_DIRECT is not asynchronous —
//! the kernel copies the data inside io_submit and the event is in the ring
//! before io_submit returns. We count such requests ([`Libaio::completed_in_submit`]
//! and `BackendStats::completed_in_submit`), as the io_uring backend counts its
//! io-wq punts, so a report can say the "asynchronous" run was not.

pub mod options;

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, Ordering};

use super::psync;
use super::{BackendStats, Caps, Completion, DevResult, DeviceError, Queue, Queued, Wait};
use crate::request::{Flush, IoCmd, Op};

// include/uapi/linux/aio_abi.h
const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;
const IOCB_CMD_FSYNC: u16 = 2;
const IOCB_CMD_FDSYNC: u16 = 3;
/// An opcode io_submit refuses (EINVAL): what a trim's iocb would carry if one
/// were ever built, so it could only fail, never write (`Libaio::trim`).
const IOCB_CMD_NOOP: u16 = 6;
/// `aio_reqprio` carries an ioprio value (class << 13 | level), Linux 5.0+.
const IOCB_FLAG_IOPRIO: u32 = 1 << 1;
/// fs/aio.c: `struct aio_ring`'s magic while its layout is the one below.
const AIO_RING_MAGIC: u32 = 0xa10a_10a1;

/// `struct iocb`. `aio_key` and `aio_rw_flags` swap places on big-endian
/// machines (the kernel's PADDED macro), hence the two orders below.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Iocb {
    aio_data: u64,
    #[cfg(target_endian = "little")]
    aio_key: u32,
    aio_rw_flags: u32,
    #[cfg(target_endian = "big")]
    aio_key: u32,
    aio_lio_opcode: u16,
    aio_reqprio: i16,
    aio_fildes: u32,
    aio_buf: u64,
    aio_nbytes: u64,
    aio_offset: i64,
    aio_reserved2: u64,
    aio_flags: u32,
    aio_resfd: u32,
}

/// `struct io_event`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

/// The header of the kernel's completion ring (fs/aio.c `struct aio_ring`); the
/// `io_event`s follow it. `head` is ours to advance, `tail` the kernel's.
#[repr(C)]
struct AioRing {
    #[allow(dead_code)] // part of the kernel's layout; not needed here
    id: u32,
    nr: u32,
    head: AtomicU32,
    tail: AtomicU32,
    magic: u32,
    #[allow(dead_code)] // part of the kernel's layout; not needed here
    compat_features: u32,
    incompat_features: u32,
    header_length: u32,
}

const _: () = assert!(std::mem::size_of::<Iocb>() == 64);
const _: () = assert!(std::mem::size_of::<IoEvent>() == 32);
const _: () = assert!(std::mem::size_of::<AioRing>() == 32);

/// Context setup, from the job's options.
#[derive(Clone, Copy, Debug)]
pub struct LibaioOpts {
    /// Most requests in flight (`iodepth`); the context is made for this many.
    pub entries: u32,
    /// Read completions from the ring in user space where its layout is known
    /// (fio `userspace_reap`); false: every reap is an io_getevents call.
    pub userspace_reap: bool,
    /// Most iocbs per io_submit call (fio `iodepth_batch_submit`); 0 = all queued.
    pub batch_submit: u32,
    /// Most completions taken per reap (fio `iodepth_batch_complete_max`); 0 = as
    /// many as the caller has room for.
    pub batch_complete_max: u32,
    /// Every reap reads only the ring, a sleeping one spinning on it (fio's
    /// `userspace_reap=1`); needs `userspace_reap` and a ring of the known
    /// layout (else `new` fails).
    pub ring_only: bool,
    /// RWF_* flags every read and write carries (fio `nowait`: RWF_NOWAIT).
    pub rw_flags: u32,
    /// Writes also carry RWF_ATOMIC (fio `atomic`).
    pub atomic_writes: bool,
}

impl Default for LibaioOpts {
    fn default() -> Self {
        LibaioOpts {
            entries: 1,
            userspace_reap: true,
            batch_submit: 0,
            batch_complete_max: 0,
            ring_only: false,
            rw_flags: 0,
            atomic_writes: false,
        }
    }
}

/// How a context reaps (reported with the run: `backend_stats.aio_reap`).
#[derive(
    schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ReapPath {
    /// Only the ring in user space, spinning when waiting (`userspace_reap=1`).
    Ring,
    /// The ring first; io_getevents sleeps for what is not there (iolab's default).
    RingThenGetevents,
    /// Every reap is io_getevents (`userspace_reap=0`, or the ring's layout is
    /// not the one this code knows).
    Getevents,
}

impl ReapPath {
    pub fn describe(self) -> &'static str {
        match self {
            ReapPath::Ring => "AIO ring in user space only (userspace_reap=1), no io_getevents",
            ReapPath::RingThenGetevents => {
                "AIO ring in user space first, io_getevents to sleep (iolab's default)"
            }
            ReapPath::Getevents => "io_getevents for every reap (fio's default, userspace_reap=0)",
        }
    }
}

/// The reap path and its counts, for the run's result.
#[derive(
    schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize,
)]
pub struct AioReap {
    pub path: ReapPath,
    #[serde(flatten)]
    pub counts: ReapCounts,
}

impl AioReap {
    /// Sum over a job's workers (the path is the first's: one job, one setting).
    pub fn merge(a: Option<AioReap>, b: Option<AioReap>) -> Option<AioReap> {
        match (a, b) {
            (Some(mut a), Some(b)) => {
                a.counts.ring_events += b.counts.ring_events;
                a.counts.syscall_events += b.counts.syscall_events;
                a.counts.getevents_calls += b.counts.getevents_calls;
                a.counts.submit_errors += b.counts.submit_errors;
                Some(a)
            }
            (a, b) => a.or(b),
        }
    }
}

/// How completions were found, for tests and reports.
#[derive(
    schemars::JsonSchema,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct ReapCounts {
    /// Completions read from the ring in user space.
    pub ring_events: u64,
    /// Completions returned by io_getevents.
    pub syscall_events: u64,
    /// io_getevents calls (sleeping or not).
    pub getevents_calls: u64,
    /// Requests io_submit refused outright; they complete with its errno.
    pub submit_errors: u64,
}

/// One kernel AIO context on a file descriptor the engine owns.
pub struct Libaio {
    ctx: libc::c_ulong,
    files: super::files::FileTable,
    /// The completion ring, when its layout is the known one and reaping in user
    /// space was asked for.
    ring: Option<*const AioRing>,
    /// Waits spin on the ring instead of sleeping in io_getevents.
    ring_only: bool,
    /// RWF_* flags of reads and writes (`LibaioOpts::rw_flags`), and of writes.
    rw_flags: [u32; 2],
    limit: u32,
    batch_submit: u32,
    batch_complete_max: u32,
    /// iocbs queued and not yet accepted by io_submit: `iocbs[sent..queued]`.
    iocbs: Box<[Iocb]>,
    ptrs: Box<[*mut Iocb]>,
    sent: usize,
    queued: usize,
    events: Box<[IoEvent]>,
    /// Requests io_submit refused, delivered by the next reap.
    failed: Box<[Completion]>,
    nfailed: usize,
    /// Accepted (queued) and not yet reaped, refused ones included.
    in_flight: u32,
    /// Per slot: the commit that submitted it, to recognise completions that were
    /// already in the ring when io_submit returned.
    commit_of: Box<[u32]>,
    commits: u32,
    completed_in_submit: u64,
    counts: ReapCounts,
    stats: BackendStats,
}

// SAFETY: the context and its ring are used only by the thread that owns the
// queue; moving the whole queue to another thread before use is fine.
unsafe impl Send for Libaio {}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

impl Libaio {
    /// Set up an AIO context for `fd` (borrowed: it must stay open for the life
    /// of the queue).
    pub fn new(fd: RawFd, opts: &LibaioOpts) -> DevResult<Self> {
        if opts.entries == 0 {
            return Err(DeviceError::Unsupported(
                "libaio: iodepth must be at least 1".into(),
            ));
        }
        crate::device::files::check_open(fd, "libaio")?;
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: io_setup writes the new context id into `ctx`, which must be 0.
        let r = unsafe { libc::syscall(libc::SYS_io_setup, opts.entries, &mut ctx) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            let hint = match e.raw_os_error() {
                Some(libc::EAGAIN) => {
                    "; the system-wide AIO limit is reached: raise /proc/sys/fs/aio-max-nr \
                     or lower iodepth/numjobs"
                }
                Some(libc::ENOSYS) => {
                    "; this kernel has no AIO (CONFIG_AIO=n): use ioengine=io_uring"
                }
                _ => "",
            };
            return Err(DeviceError::Unsupported(format!(
                "libaio: io_setup({}): {e}{hint}",
                opts.entries
            )));
        }
        let ring = if opts.userspace_reap || opts.ring_only {
            // SAFETY: the context id is the address of the kernel's ring mapping,
            // readable for the life of the context; only the header is read here.
            unsafe { known_ring(ctx as *const AioRing) }
        } else {
            None
        };
        if opts.ring_only && ring.is_none() {
            // SAFETY: the context is ours and not used again.
            unsafe { libc::syscall(libc::SYS_io_destroy, ctx) };
            return Err(DeviceError::Unsupported(
                "libaio: userspace_reap=1, but this kernel's AIO completion ring is not the \
                 layout iolab reads (magic or header differ); drop userspace_reap to reap \
                 with io_getevents"
                    .into(),
            ));
        }
        let n = opts.entries as usize;
        Ok(Libaio {
            ctx,
            files: super::files::FileTable::one(fd),
            ring,
            ring_only: opts.ring_only,
            rw_flags: [
                opts.rw_flags,
                opts.rw_flags
                    | if opts.atomic_writes {
                        libc::RWF_ATOMIC as u32
                    } else {
                        0
                    },
            ],
            limit: opts.entries,
            batch_submit: opts.batch_submit,
            batch_complete_max: opts.batch_complete_max,
            iocbs: vec![Iocb::default(); n].into_boxed_slice(),
            ptrs: vec![std::ptr::null_mut(); n].into_boxed_slice(),
            sent: 0,
            queued: 0,
            events: vec![IoEvent::default(); n].into_boxed_slice(),
            failed: vec![Completion::default(); n].into_boxed_slice(),
            nfailed: 0,
            in_flight: 0,
            commit_of: vec![0; n].into_boxed_slice(),
            commits: 0,
            completed_in_submit: 0,
            counts: ReapCounts::default(),
            stats: BackendStats::default(),
        })
    }

    /// Whether completions are read from the ring in user space (the ring's
    /// layout is known and `userspace_reap` was asked for).
    #[cfg(any(test, feature = "testing"))]
    pub fn reaps_in_user_space(&self) -> bool {
        self.ring.is_some()
    }

    /// Which way this context reaps now (the ring can be given up mid-run
    /// if its indices ever look wrong).
    pub fn reap_path(&self) -> ReapPath {
        match (self.ring.is_some(), self.ring_only) {
            (false, _) => ReapPath::Getevents,
            (true, true) => ReapPath::Ring,
            (true, false) => ReapPath::RingThenGetevents,
        }
    }

    /// How completions were found so far.
    #[cfg(any(test, feature = "testing"))]
    pub fn reap_counts(&self) -> ReapCounts {
        self.counts
    }

    /// Requests whose completion was already in the ring when the io_submit that
    /// sent them returned — on a buffered file, all of them: the kernel did the
    /// I/O inside the call. `None` where the ring is not read (nothing to look at).
    #[cfg(any(test, feature = "testing"))]
    pub fn completed_in_submit(&self) -> Option<u64> {
        self.ring.map(|_| self.completed_in_submit)
    }

    /// Requests queued and not yet reaped.
    #[cfg(any(test, feature = "testing"))]
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// Kernel AIO has no discard command, nor a sync_file_range one: a trim
    /// or a ranged sync is done synchronously here, as fio's libaio engine
    /// does them. Like fio, only once what was queued
    /// before it has gone to the kernel (Busy until then: the engine commits,
    /// then retries), so a trim never overtakes an earlier request's submission.
    #[cold]
    fn trim(&mut self, cmd: &IoCmd) -> Queued {
        if self.queued_unsent() > 0 {
            return Queued::Busy;
        }
        Queued::Done(psync::SyncCall::inline(
            self.files.fd(cmd.file),
            self.files.trim_kind(cmd.file),
            cmd,
            &mut self.stats.submit_calls,
        ))
    }

    fn iocb(&self, cmd: &IoCmd) -> Iocb {
        let opcode = match (cmd.op, cmd.flush) {
            (Op::Read, _) => IOCB_CMD_PREAD,
            (Op::Write, _) => IOCB_CMD_PWRITE,
            // Not built: `queue` performs trims and sync_file_range itself
            // (`Libaio::trim`).
            (Op::Trim, _) | (Op::Fsync, Flush::Range { .. }) => IOCB_CMD_NOOP,
            (Op::Fsync, Flush::Full) => IOCB_CMD_FSYNC,
            (Op::Fsync, Flush::Data) => IOCB_CMD_FDSYNC,
        };
        let (aio_flags, aio_reqprio) = if cmd.ioprio != 0 {
            (IOCB_FLAG_IOPRIO, cmd.ioprio as i16)
        } else {
            (0, 0)
        };
        Iocb {
            aio_data: cmd.slot as u64,
            aio_lio_opcode: opcode,
            aio_reqprio,
            aio_fildes: self.files.fd(cmd.file) as u32,
            // The kernel refuses an fsync iocb that names a buffer or a range.
            aio_buf: if cmd.op == Op::Fsync {
                0
            } else {
                cmd.buf as u64
            },
            aio_nbytes: if cmd.op == Op::Fsync {
                0
            } else {
                cmd.len as u64
            },
            aio_offset: if cmd.op == Op::Fsync {
                0
            } else {
                cmd.offset as i64
            },
            aio_flags,
            aio_rw_flags: match cmd.op {
                Op::Read => self.rw_flags[0],
                Op::Write => self.rw_flags[1],
                _ => 0,
            },
            ..Iocb::default()
        }
    }

    /// io_submit `iocbs[sent..sent+n]`; returns how many the kernel took, or the
    /// errno it refused the first one with.
    fn submit(&mut self, n: usize) -> Result<usize, i32> {
        loop {
            self.stats.submit_calls += 1;
            // SAFETY: `ptrs[sent..sent+n]` point at filled iocbs in `self.iocbs`
            // (the kernel copies them during the call); the buffers they name stay
            // valid until reaped (Queue::queue contract).
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_submit,
                    self.ctx,
                    n as libc::c_long,
                    self.ptrs.as_mut_ptr().add(self.sent),
                )
            };
            if r >= 0 {
                return Ok(r as usize);
            }
            let e = errno();
            if e != libc::EINTR {
                return Err(e);
            }
        }
    }

    /// Count completions that appeared in the ring during the io_submit of commit
    /// `commit`, between ring tails `from` and `to`, for requests it sent.
    fn count_done_in_submit(&mut self, ring: *const AioRing, from: u32, to: u32) {
        // SAFETY: the ring header stays mapped for the life of the context.
        let nr = unsafe { (*ring).nr };
        let mut i = from;
        while i != to {
            // SAFETY: `i < nr` (kernel indices are kept below nr and checked at
            // setup); the events up to `to` were published by the acquire load of
            // tail that produced `to`.
            let ev = unsafe { events_of(ring).add(i as usize).read() };
            if self
                .commit_of
                .get(ev.data as usize)
                .is_some_and(|&c| c == self.commits)
            {
                self.completed_in_submit += 1;
            }
            i = if i + 1 >= nr { 0 } else { i + 1 };
        }
    }

    /// Deliver requests io_submit refused.
    fn take_failed(&mut self, out: &mut [Completion]) -> usize {
        let n = self.nfailed.min(out.len());
        out[..n].copy_from_slice(&self.failed[..n]);
        self.failed.copy_within(n..self.nfailed, 0);
        self.nfailed -= n;
        self.in_flight -= n as u32;
        n
    }

    /// Read up to `out.len()` completions from the ring in user space.
    fn ring_reap(&mut self, ring: *const AioRing, out: &mut [Completion]) -> usize {
        // SAFETY: the ring stays mapped for the life of the context; `head` is
        // written only by us (io_getevents also moves it, but only from this
        // thread), `tail` only by the kernel.
        let r = unsafe { &*ring };
        let nr = r.nr;
        let mut head = r.head.load(Ordering::Relaxed);
        // Acquire: the kernel writes an event, then publishes it with tail.
        let tail = r.tail.load(Ordering::Acquire);
        if head >= nr || tail >= nr {
            // Not the ring this code knows after all: stop reading it, and let
            // io_getevents (which the kernel keeps right) take over.
            self.ring = None;
            return 0;
        }
        let mut n = 0;
        while head != tail && n < out.len() {
            // SAFETY: head < nr, and the event at head was published by tail.
            let ev = unsafe { events_of(ring).add(head as usize).read() };
            out[n] = completion_of(&ev);
            n += 1;
            head = if head + 1 >= nr { 0 } else { head + 1 };
        }
        if n > 0 {
            // Release: our reads of the events happen before the kernel may reuse
            // their slots.
            r.head.store(head, Ordering::Release);
            self.counts.ring_events += n as u64;
            self.in_flight = self.in_flight.saturating_sub(n as u32);
        }
        n
    }

    /// io_getevents for at least `min` and at most `out.len()` completions; a
    /// `timeout` of `Some(0)` never sleeps. A signal or the timeout ends the wait
    /// with what is there.
    fn getevents(
        &mut self,
        min: u32,
        out: &mut [Completion],
        timeout_ns: Option<u64>,
    ) -> DevResult<usize> {
        let nr = out.len().min(self.events.len());
        if nr == 0 {
            return Ok(0);
        }
        let ts = timeout_ns.map(|ns| libc::timespec {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        });
        let tsp = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        self.counts.getevents_calls += 1;
        self.stats.wait_calls += 1;
        // SAFETY: `events` has room for `nr` events; `tsp` is null or points at a
        // timespec that outlives the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_getevents,
                self.ctx,
                min.min(nr as u32) as libc::c_long,
                nr as libc::c_long,
                self.events.as_mut_ptr(),
                tsp,
            )
        };
        if r < 0 {
            return match errno() {
                libc::EINTR => Ok(0),
                e => Err(DeviceError::io(
                    "io_getevents",
                    std::io::Error::from_raw_os_error(e),
                )),
            };
        }
        let n = r as usize;
        for (o, ev) in out.iter_mut().zip(&self.events[..n]) {
            *o = completion_of(ev);
        }
        self.counts.syscall_events += n as u64;
        self.in_flight = self.in_flight.saturating_sub(n as u32);
        Ok(n)
    }

    /// Submit what an earlier commit left queued (the kernel was out of
    /// resources then): waiting for completions of unsent requests would hang.
    fn resubmit(&mut self) -> DevResult<()> {
        if self.queued > self.sent {
            self.commit()?;
        }
        Ok(())
    }

    /// Reap without sleeping: the ring, or io_getevents with a zero timeout.
    fn peek(&mut self, out: &mut [Completion]) -> DevResult<usize> {
        self.resubmit()?;
        let mut n = self.take_failed(out);
        if n == out.len() || self.in_flight == 0 {
            return Ok(n);
        }
        if let Some(ring) = self.ring {
            n += self.ring_reap(ring, &mut out[n..]);
        }
        if self.ring.is_none() {
            n += self.getevents(0, &mut out[n..], Some(0))?;
        }
        Ok(n)
    }

    /// Reap at least `min` (bounded by what can arrive), sleeping in io_getevents
    /// for what the ring does not already hold, for at most `timeout_ns`.
    fn wait(
        &mut self,
        min: u32,
        out: &mut [Completion],
        timeout_ns: Option<u64>,
    ) -> DevResult<usize> {
        self.resubmit()?;
        let out = self.room(out);
        let mut n = self.take_failed(out);
        if let Some(ring) = self.ring {
            n += self.ring_reap(ring, &mut out[n..]);
        }
        // Only reaped-not-yet requests can complete, and `out` bounds one call.
        let can_arrive = self
            .in_flight
            .saturating_sub(self.queued_unsent() + self.nfailed as u32);
        let want = (min as usize).min(n + can_arrive as usize).min(out.len());
        if n < want && self.ring_only {
            return self.spin(want, n, out, timeout_ns);
        }
        if n < want {
            n += self.getevents((want - n) as u32, &mut out[n..], timeout_ns)?;
        }
        Ok(n)
    }

    /// fio's userspace_reap wait: read the ring until `want` completions are
    /// in `out` (holding `n` already) or `timeout_ns` has passed; no system call.
    fn spin(
        &mut self,
        want: usize,
        mut n: usize,
        out: &mut [Completion],
        timeout_ns: Option<u64>,
    ) -> DevResult<usize> {
        let deadline = timeout_ns.map(|t| crate::measure::clock::now_ns().saturating_add(t));
        while n < want {
            let Some(ring) = self.ring else {
                // The ring was given up (its indices looked wrong): sleep instead.
                n += self.getevents((want - n) as u32, &mut out[n..], timeout_ns)?;
                break;
            };
            let got = self.ring_reap(ring, &mut out[n..]);
            n += got;
            if got == 0 {
                if deadline.is_some_and(|d| crate::measure::clock::now_ns() >= d) {
                    break;
                }
                std::hint::spin_loop();
            }
        }
        Ok(n)
    }

    /// The part of `out` one reap may fill (fio `iodepth_batch_complete_max`).
    fn room<'a>(&self, out: &'a mut [Completion]) -> &'a mut [Completion] {
        let max = match self.batch_complete_max {
            0 => out.len(),
            m => out.len().min(m as usize),
        };
        &mut out[..max]
    }
}

/// The ring at `ring` if its header is the layout this code reads.
///
/// # Safety
/// `ring` must be an AIO context id returned by io_setup and not yet destroyed.
unsafe fn known_ring(ring: *const AioRing) -> Option<*const AioRing> {
    // SAFETY: per the contract the header is mapped and readable.
    let h = unsafe { &*ring };
    let ok = h.magic == AIO_RING_MAGIC
        && h.incompat_features == 0
        && h.header_length as usize == std::mem::size_of::<AioRing>()
        && h.nr > 0
        && h.head.load(Ordering::Relaxed) < h.nr
        && h.tail.load(Ordering::Acquire) < h.nr;
    ok.then_some(ring)
}

/// The ring's event array, right after its header.
///
/// # Safety
/// `ring` must be a known ring (see [`known_ring`]).
unsafe fn events_of(ring: *const AioRing) -> *const IoEvent {
    // SAFETY: the events follow the 32-byte header in the same mapping.
    unsafe { ring.add(1).cast() }
}

fn completion_of(ev: &IoEvent) -> Completion {
    Completion {
        slot: ev.data as u32,
        result: ev.res,
        dev_start: 0,
        dev_done: 0,
    }
}

impl Queue for Libaio {
    fn name(&self) -> &'static str {
        "libaio"
    }

    fn caps(&self) -> Caps {
        Caps {
            sync: false,
            // Without a readable ring a peek is io_getevents with a zero timeout:
            // still a wait that never sleeps, at the price of a system call.
            can_peek: true,
            can_sleep: true,
            device_poll: false,
            predicts_completion: false,
            inline: true,
        }
    }

    fn queue(&mut self, cmd: &IoCmd) -> DevResult<Queued> {
        // Kernel AIO has no command for these: done synchronously, as fio's
        // libaio engine does them.
        if cmd.op == Op::Trim || (cmd.op == Op::Fsync && matches!(cmd.flush, Flush::Range { .. })) {
            return Ok(self.trim(cmd));
        }
        if self.in_flight >= self.limit || self.queued >= self.iocbs.len() {
            return Ok(Queued::Busy);
        }
        let i = self.queued;
        self.iocbs[i] = self.iocb(cmd);
        self.ptrs[i] = &mut self.iocbs[i];
        self.queued += 1;
        self.in_flight += 1;
        Ok(Queued::Pending)
    }

    fn commit(&mut self) -> DevResult<u32> {
        let mut total = 0u32;
        self.commits = self.commits.wrapping_add(1);
        let commit = self.commits;
        for i in self.sent..self.queued {
            if let Some(c) = self.commit_of.get_mut(self.iocbs[i].aio_data as usize) {
                *c = commit;
            }
        }
        while self.sent < self.queued {
            let left = self.queued - self.sent;
            let n = match self.batch_submit {
                0 => left,
                b => left.min(b as usize),
            };
            // SAFETY: the ring stays mapped for the life of the context.
            let before = self
                .ring
                .map(|r| unsafe { (*r).tail.load(Ordering::Acquire) });
            match self.submit(n) {
                Ok(took) => {
                    if let (Some(ring), Some(from)) = (self.ring, before) {
                        // SAFETY: as above.
                        let to = unsafe { (*ring).tail.load(Ordering::Acquire) };
                        self.count_done_in_submit(ring, from, to);
                    }
                    // Fewer than asked: the kernel stopped at an iocb it refused
                    // or ran out of resources; going on finds out which (the
                    // next call reports that iocb's error first).
                    self.sent += took;
                    total += took as u32;
                }
                // Out of resources for now: retry after the caller has reaped.
                Err(libc::EAGAIN)
                    if self.in_flight > self.queued_unsent() + self.nfailed as u32 =>
                {
                    break;
                }
                // The first iocb was refused (bad descriptor, unsupported
                // operation, ...): it completes with that error, the rest go on.
                Err(e) => {
                    let slot = self.iocbs[self.sent].aio_data as u32;
                    self.failed[self.nfailed] = Completion {
                        slot,
                        result: -(e as i64),
                        dev_start: 0,
                        dev_done: 0,
                    };
                    self.nfailed += 1;
                    self.counts.submit_errors += 1;
                    self.sent += 1;
                }
            }
        }
        if self.sent == self.queued {
            self.sent = 0;
            self.queued = 0;
        } else if self.sent > 0 {
            // Keep the unsent iocbs at the front for the next commit.
            self.iocbs.copy_within(self.sent..self.queued, 0);
            self.queued -= self.sent;
            self.sent = 0;
            for i in 0..self.queued {
                self.ptrs[i] = &mut self.iocbs[i];
            }
        }
        Ok(total)
    }

    fn reap(&mut self, wait: Wait, out: &mut [Completion]) -> DevResult<usize> {
        match wait {
            Wait::Peek => {
                let out = self.room(out);
                self.peek(out)
            }
            Wait::Sleep { min } => self.wait(min, out, None),
        }
    }

    /// Sleep for completions, but wake at `deadline_ns` (engine clock): the
    /// timeout of io_getevents bounds the wait.
    fn sleep_until(
        &mut self,
        min: u32,
        deadline_ns: u64,
        out: &mut [Completion],
    ) -> DevResult<usize> {
        let now = crate::measure::clock::now_ns();
        let timeout = deadline_ns.saturating_sub(now);
        self.wait(min, out, Some(timeout))
    }

    /// pread/pwrite on the context's descriptor, for `adaptive`'s synchronous path.
    fn perform(&mut self, cmd: &IoCmd) -> DevResult<Completion> {
        Ok(psync::SyncCall::inline(
            self.files.fd(cmd.file),
            self.files.trim_kind(cmd.file),
            cmd,
            &mut self.stats.submit_calls,
        ))
    }

    fn stats(&self) -> BackendStats {
        BackendStats {
            completed_in_submit: self.completed_in_submit,
            own: super::OwnStats {
                aio_reap: Some(AioReap {
                    path: self.reap_path(),
                    counts: self.counts,
                }),
            },
            ..self.stats
        }
    }

    fn set_files(&mut self, fds: &[RawFd]) -> DevResult<()> {
        self.files.set(fds)
    }

    fn commands_in_flight(&self) -> Option<u32> {
        Some(self.in_flight)
    }
}

impl Libaio {
    /// Queued requests not yet accepted by the kernel.
    fn queued_unsent(&self) -> u32 {
        (self.queued - self.sent) as u32
    }
}

impl Drop for Libaio {
    /// io_destroy waits for requests still in flight, so the kernel never writes
    /// into buffers the engine frees right after dropping the queue.
    fn drop(&mut self) {
        // SAFETY: the context is ours and destroyed once; the ring mapping goes
        // with it and is not touched afterwards.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
    }
}
