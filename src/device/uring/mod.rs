//! uring backend: io_uring through the `io-uring` crate.
//!
//! One ring per worker. `queue` writes an SQE (user_data = request slot), `commit`
//! makes them visible to the kernel, entering it only when that is needed (with
//! SQPOLL only to wake a sleeping SQ thread). Rings are set up as fio 3.33 sets
//! them up, with deferred task work (COOP_TASKRUN, TASKRUN_FLAG, SINGLE_ISSUER,
//! DEFER_TASKRUN; not with SQPOLL): a completion is posted to the CQ when the
//! worker enters the kernel for events, never by interrupting it. `reap(Peek)`
//! reads the CQ ring from user space and enters the kernel (without blocking)
//! only when it is empty and the kernel flags completions waiting as task work;
//! IOPOLL without SQPOLL always enters, because there the kernel finds
//! completions by polling the device on our behalf. `reap(Sleep)` enters the
//! kernel and sleeps for completions.
//!
//! Trims go through the ring too: IORING_OP_FALLOCATE punches the hole in a
//! file, and on a block device the block layer's uring_cmd discard (Linux 6.12,
//! BLOCK_URING_CMD_DISCARD) replaces BLKDISCARD. Where the ring cannot carry
//! one (an older kernel's block device, an IOPOLL ring, which takes only
//! commands a device can poll), the trim is done synchronously in `queue`.

pub mod options;
mod punt;
mod setup;

use std::os::fd::{AsRawFd, RawFd};

use io_uring::{IoUring, opcode, squeue, types};

pub use punt::PuntCount;
use punt::{PuntError, PuntTrace};
pub use setup::{HybridIopollUnsupported, hybrid_iopoll_kernel};

use super::polled::check_polled_io;
use super::psync;
use super::trim::{self, TrimKind};
use super::{BackendStats, Caps, Completion, DevResult, DeviceError, Queue, Queued, Wait};
use crate::request::{Flush, IoCmd, Op};
use crate::sys::blockdev::{BlockQueue, block_queue_of_fd, iopoll_missing_message};
use options::UringOptions;

/// BLOCK_URING_CMD_DISCARD, `_IO(0x12, 0)` in linux/blkdev.h (Linux 6.12): the
/// block device's uring_cmd that discards `[sqe.addr, sqe.addr + sqe.addr3)`.
const BLOCK_URING_CMD_DISCARD: u32 = 0x1200;

/// A trim's user_data carries its length above the slot: the kernel answers a
/// fallocate or a discard with 0, the engine counts a trim's bytes as moved.
const TRIM_LEN_SHIFT: u32 = 32;

// io_uring_enter(2) flags (include/uapi/linux/io_uring.h); the crate keeps its own
// copies private.
const ENTER_GETEVENTS: u32 = 1 << 0;
const ENTER_SQ_WAKEUP: u32 = 1 << 1;
const ENTER_EXT_ARG: u32 = 1 << 3;

/// Ring setup: the job's io_uring options as the job set them
/// ([`UringOptions`], fio's names and defaults, stated there once) and what
/// the engine adds to them (depth, buffers, per-call flags).
#[derive(Clone, Copy, Debug)]
pub struct UringOpts<'a> {
    /// SQ entries, and the most requests this queue keeps in flight (`iodepth`).
    pub entries: u32,
    /// The job's io_uring options: SQPOLL and its CPU, registered files and
    /// buffers, hybrid IOPOLL, punt counting, vectored requests, force_async.
    pub options: UringOptions,
    /// IORING_SETUP_IOPOLL (fio `hipri`): completions found by polling the
    /// device. `options.hybrid_iopoll` implies it.
    pub iopoll: bool,
    /// How long the SQ thread spins without work before it sleeps (ms).
    pub sq_thread_idle_ms: u32,
    /// The engine's buffer pool, `(address, length)` per buffer, registered
    /// when `options.fixedbufs`; requests then name theirs by
    /// `IoCmd::buf_index`. The memory must outlive the queue.
    pub bufs: Option<&'a [(*mut u8, usize)]>,
    /// RWF_* flags every read and write carries (fio `nowait`: RWF_NOWAIT;
    /// `uncached`: RWF_DONTCACHE).
    pub rw_flags: u32,
    /// Writes also carry RWF_ATOMIC (fio `atomic`).
    pub atomic_writes: bool,
}

impl Default for UringOpts<'_> {
    fn default() -> Self {
        UringOpts {
            entries: 1,
            options: UringOptions::default(),
            iopoll: false,
            sq_thread_idle_ms: 1000,
            bufs: None,
            rw_flags: 0,
            atomic_writes: false,
        }
    }
}

impl<'a> UringOpts<'a> {
    /// The buffers to register: the pool, where `fixedbufs` asks for it.
    fn fixed_bufs(&self) -> DevResult<Option<&'a [(*mut u8, usize)]>> {
        match (self.options.fixedbufs, self.bufs) {
            (false, _) => Ok(None),
            (true, Some(b)) => Ok(Some(b)),
            (true, None) => Err(DeviceError::Unsupported(
                "io_uring fixedbufs: no buffers were given to register".into(),
            )),
        }
    }
}

/// One io_uring queue on a file descriptor the engine owns.
pub struct Uring {
    ring: IoUring,
    files: crate::device::files::FileTable,
    fixed_file: bool,
    fixed_bufs: bool,
    iopoll: bool,
    sqpoll: bool,
    /// Most requests in flight; the CQ has room for twice this, so it never overflows.
    limit: u32,
    /// Queued since the last commit.
    pending: u32,
    /// Queued and not yet reaped.
    in_flight: u32,
    stats: BackendStats,
    /// The polled device, for the message if the kernel refuses IOPOLL at run time.
    polled: Option<BlockQueue>,
    punts: Result<PuntTrace, PuntError>,
    /// Thread whose io-wq serves this ring: the one that submits (or the SQ thread).
    submitter_tid: i32,
    submitter_checked: bool,
    /// The kernel takes a timeout on io_uring_enter (IORING_FEAT_EXT_ARG).
    ext_arg: bool,
    /// Set up with DEFER_TASKRUN (and R_DISABLED until the first commit):
    /// completions reach the CQ only when this thread enters for events.
    deferred: bool,
    /// The kernel has the block uring_cmd discard (Linux 6.12).
    uring_discard: bool,
    /// Trims queued and not yet reaped: a write queued meanwhile waits for
    /// them (IO_DRAIN), so trimwrite's write never overtakes its trim.
    trims_in_flight: u32,
    /// RWF_* flags of reads, and of writes (`UringOpts::rw_flags`).
    rw_flags: [u32; 2],
    /// One iovec per request slot for READV/WRITEV (empty: not vectored);
    /// the kernel reads it when the request is issued.
    iovecs: Box<[libc::iovec]>,
    /// `force_async`, and requests since the last IOSQE_ASYNC.
    force_async: u32,
    since_async: u32,
}

// SAFETY: the ring and the registered buffers are used only by the thread that owns
// the queue; moving the whole queue to another thread before use is fine.
unsafe impl Send for Uring {}

fn setup_error(what: &str, e: std::io::Error) -> DeviceError {
    let hint = match e.raw_os_error() {
        Some(libc::ENOMEM) if what.contains("buffers") => {
            "; registered buffers are pinned memory: raise RLIMIT_MEMLOCK (ulimit -l) or run \
             as root"
        }
        Some(libc::EPERM) if what.contains("SQPOLL") => {
            "; SQPOLL needs CAP_SYS_NICE on this kernel"
        }
        Some(libc::EINVAL) if what.contains("CPU") => {
            "; the CPU must be online and in this process's affinity mask"
        }
        Some(libc::ENOSYS) => "; this kernel has no io_uring",
        Some(libc::EPERM) => "; io_uring may be disabled (sysctl kernel.io_uring_disabled)",
        _ => "",
    };
    DeviceError::Unsupported(format!("io_uring {what}: {e}{hint}"))
}

/// Name hybrid IOPOLL in a refusal of polled I/O, and the remedy.
fn hybrid_refused(opts: &UringOpts<'_>, e: DeviceError) -> DeviceError {
    match e {
        DeviceError::Unsupported(why) if opts.options.hybrid_iopoll => {
            let remedy = if why.contains("poll_queues") {
                "; for NVMe load the driver with nvme.poll_queues=N (kernel command line, or \
                 `modprobe nvme poll_queues=N`); on a device without poll queues \
                 completion=hybrid-uring runs the same rule in user space"
            } else {
                ""
            };
            DeviceError::Unsupported(format!(
                "hybrid_iopoll=1 (IORING_SETUP_HYBRID_IOPOLL) polls the device and so needs \
                 polled I/O: {why}{remedy}"
            ))
        }
        e => e,
    }
}

/// A ring with IORING_SETUP_HYBRID_IOPOLL, which the crate's builder cannot set.
fn hybrid_iopoll_ring(opts: &UringOpts<'_>) -> DevResult<IoUring> {
    let mut flags = setup::SETUP_IOPOLL | setup::SETUP_HYBRID_IOPOLL;
    if opts.options.sqthread_poll {
        flags |= setup::SETUP_SQPOLL;
    }
    let raw = setup::RawSetup {
        entries: opts.entries,
        cq_entries: opts.entries.saturating_mul(2),
        flags,
        sq_thread_idle_ms: opts.sq_thread_idle_ms,
        sq_thread_cpu: if opts.options.sqthread_poll {
            opts.options.sqthread_poll_cpu
        } else {
            None
        },
    };
    setup::build(&raw).map_err(|e| match e.raw_os_error() {
        // An unknown setup flag is EINVAL: say which kernel it needs.
        Some(libc::EINVAL) if hybrid_iopoll_kernel().is_err() => DeviceError::Unsupported(format!(
            "io_uring setup (hybrid_iopoll=1): {e}: {}; use hipri=1 (plain IOPOLL) or \
             completion=hybrid-uring (the same rule in user space)",
            hybrid_iopoll_kernel().unwrap_err()
        )),
        _ => setup_error("setup (hybrid IOPOLL)", e),
    })
}

impl Uring {
    /// Set up a ring for `fd` (borrowed: it must stay open for the life of the queue).
    pub fn new(fd: RawFd, opts: &UringOpts<'_>) -> DevResult<Self> {
        if opts.entries == 0 {
            return Err(DeviceError::Unsupported(
                "io_uring: iodepth must be at least 1".into(),
            ));
        }
        crate::device::files::check_open(fd, "io_uring")?;
        let o = &opts.options;
        let iopoll = opts.iopoll || o.hybrid_iopoll;
        let polled = if iopoll {
            check_polled_io(fd).map_err(|e| hybrid_refused(opts, e))?;
            block_queue_of_fd(fd).ok()
        } else {
            None
        };
        let mut b = IoUring::builder();
        b.setup_cqsize(opts.entries.saturating_mul(2));
        if opts.iopoll {
            b.setup_iopoll();
        }
        if o.sqthread_poll {
            b.setup_sqpoll(opts.sq_thread_idle_ms);
            if let Some(cpu) = o.sqthread_poll_cpu {
                b.setup_sqpoll_cpu(cpu);
            }
        }
        let what = match (o.sqthread_poll, o.sqthread_poll_cpu) {
            (true, Some(_)) => "setup (SQPOLL pinned to a CPU)",
            (true, None) => "setup (SQPOLL)",
            _ => "setup",
        };
        // Deferred task work, as fio 3.33 sets it up: a request's completion is
        // task work for the submitting thread; by default the kernel interrupts
        // that thread (an IPI when it runs in user space) to post it. With
        // DEFER_TASKRUN the work waits until the thread enters the kernel for
        // events, which it does anyway. On zram, where every read completes on
        // an io-wq worker, the IPIs cost iolab 40% of its IOPS against fio.
        // SQPOLL cannot have it (the SQ thread is the issuer). R_DISABLED lets
        // another thread create the ring: the worker enables it at its first
        // commit and so becomes the single issuer.
        let deferred = !o.sqthread_poll && !o.hybrid_iopoll;
        let ring = if o.hybrid_iopoll {
            hybrid_iopoll_ring(opts)?
        } else if deferred {
            let mut d = b.clone();
            d.setup_coop_taskrun()
                .setup_taskrun_flag()
                .setup_single_issuer()
                .setup_defer_taskrun()
                .setup_r_disabled();
            match d.build(opts.entries) {
                Ok(r) => r,
                // Before Linux 6.1 the flags are unknown: set up as before.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    return Self::finish(
                        b.build(opts.entries).map_err(|e| setup_error(what, e))?,
                        fd,
                        opts,
                        iopoll,
                        polled,
                        false,
                    );
                }
                Err(e) => return Err(setup_error(what, e)),
            }
        } else {
            b.build(opts.entries).map_err(|e| setup_error(what, e))?
        };
        Self::finish(ring, fd, opts, iopoll, polled, deferred)
    }

    /// Registrations and bookkeeping once the ring exists.
    fn finish(
        ring: IoUring,
        fd: RawFd,
        opts: &UringOpts<'_>,
        iopoll: bool,
        polled: Option<BlockQueue>,
        deferred: bool,
    ) -> DevResult<Self> {
        let o = &opts.options;
        let fixed_bufs = opts.fixed_bufs()?;
        if o.registerfiles {
            ring.submitter()
                .register_files(&[fd])
                .map_err(|e| setup_error("register files", e))?;
        }
        if let Some(bufs) = fixed_bufs {
            if bufs.is_empty() || bufs.len() > u16::MAX as usize + 1 {
                return Err(DeviceError::Unsupported(format!(
                    "io_uring fixedbufs: {} buffers given; between 1 and 65536 can be registered",
                    bufs.len()
                )));
            }
            let iovecs: Vec<libc::iovec> = bufs
                .iter()
                .map(|&(p, len)| libc::iovec {
                    iov_base: p.cast(),
                    iov_len: len,
                })
                .collect();
            // SAFETY: the caller guarantees the buffers outlive the queue (see
            // UringOpts::bufs); the kernel pins them while registered.
            unsafe { ring.submitter().register_buffers(&iovecs) }
                .map_err(|e| setup_error("register buffers", e))?;
        }
        let owner = punt::gettid();
        let mut tids = vec![owner];
        if o.sqthread_poll {
            tids.extend(punt::threads_named(&sq_thread_name(owner)));
        }
        let punts = if o.count_punts {
            PuntTrace::start(&tids)
        } else {
            Err(PuntError::NotAsked)
        };
        let ext_arg = ring.params().is_feature_ext_arg();
        Ok(Uring {
            ring,
            files: crate::device::files::FileTable::one(fd),
            fixed_file: o.registerfiles,
            fixed_bufs: fixed_bufs.is_some(),
            iopoll,
            sqpoll: o.sqthread_poll,
            limit: opts.entries,
            pending: 0,
            in_flight: 0,
            stats: BackendStats::default(),
            polled,
            punts,
            submitter_tid: owner,
            submitter_checked: false,
            ext_arg,
            deferred,
            uring_discard: setup::kernel_version().is_some_and(|v| v >= (6, 12)),
            trims_in_flight: 0,
            rw_flags: [
                opts.rw_flags,
                opts.rw_flags
                    | if opts.atomic_writes {
                        libc::RWF_ATOMIC as u32
                    } else {
                        0
                    },
            ],
            iovecs: if o.vectored() && fixed_bufs.is_none() {
                vec![
                    libc::iovec {
                        iov_base: std::ptr::null_mut(),
                        iov_len: 0
                    };
                    opts.entries as usize
                ]
                .into_boxed_slice()
            } else {
                Box::default()
            },
            force_async: o.force_async,
            since_async: 0,
        })
    }

    /// Whether the ring carries this trim, or `queue` does it synchronously.
    fn trims_on_ring(&self, kind: TrimKind) -> bool {
        !self.iopoll && (kind == TrimKind::PunchHole || self.uring_discard)
    }

    /// A trim's SQE (see [`TRIM_LEN_SHIFT`] for its user_data).
    fn trim_entry(&self, cmd: &IoCmd, kind: TrimKind) -> squeue::Entry {
        macro_rules! trim {
            ($target:expr) => {
                match kind {
                    TrimKind::PunchHole => opcode::Fallocate::new($target, u64::from(cmd.len))
                        .offset(cmd.offset)
                        .mode(trim::PUNCH_HOLE)
                        .build(),
                    TrimKind::Discard => {
                        // addr = start; addr3 (the first 8 bytes of the command
                        // area) = length; ioprio, len and rw_flags must stay 0.
                        let mut c = [0u8; 16];
                        c[..8].copy_from_slice(&u64::from(cmd.len).to_ne_bytes());
                        // Issued from an io-wq worker (IOSQE_ASYNC): tried
                        // inline, the kernel marks the discard REQ_NOWAIT, and a
                        // queue without NOWAIT support (zram, loop) fails it
                        // with EOPNOTSUPP instead of EAGAIN, so the ring would
                        // never retry it where it may block.
                        opcode::UringCmd16::new($target, BLOCK_URING_CMD_DISCARD)
                            .addr(Some(cmd.offset))
                            .cmd(c)
                            .build()
                            .flags(squeue::Flags::ASYNC)
                    }
                }
            };
        }
        let e = if self.fixed_file {
            trim!(types::Fixed(u32::from(cmd.file)))
        } else {
            trim!(types::Fd(self.files.fd(cmd.file)))
        };
        e.user_data(u64::from(cmd.slot) | (u64::from(cmd.len) << TRIM_LEN_SHIFT))
    }

    /// Requests punted to io-wq workers so far, or why they cannot be counted here
    /// (tracefs missing, not root). Counted per submitting thread (the thread that
    /// first commits, or the SQ thread): a second ring driven by the same thread
    /// would add its punts to this count.
    pub fn punt_count(&self) -> PuntCount {
        match &self.punts {
            Ok(t) => match t.count() {
                Ok(n) => PuntCount::Counted(n),
                Err(e) => PuntCount::Unavailable(e.to_string()),
            },
            Err(why) => PuntCount::Unavailable(why.to_string()),
        }
    }

    /// io-wq worker threads serving this ring that are alive now (they exit after
    /// a few seconds idle): a yes/no sign of punting that needs no tracefs.
    pub fn io_wq_workers(&self) -> Option<usize> {
        let owner = if self.sqpoll {
            *punt::threads_named(&sq_thread_name(self.submitter_tid)).first()?
        } else {
            self.submitter_tid
        };
        Some(punt::threads_named(&format!("iou-wrk-{owner}")).len())
    }

    /// Set up with deferred task work (IORING_SETUP_DEFER_TASKRUN): a
    /// completion reaches the CQ ring only when the issuer enters the kernel
    /// for events, so CQ spinning makes a non-blocking enter when the kernel
    /// flags pending work (IORING_SQ_TASKRUN).
    #[cfg(any(test, feature = "testing"))]
    pub fn deferred(&self) -> bool {
        self.deferred
    }

    /// Requests queued and not yet reaped.
    #[cfg(any(test, feature = "testing"))]
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    fn entry(&self, cmd: &IoCmd) -> squeue::Entry {
        macro_rules! rw {
            ($target:expr) => {
                match (cmd.op, self.fixed_bufs) {
                    (Op::Read, false) => match self.iovecs.get(cmd.slot as usize) {
                        Some(iov) => opcode::Readv::new($target, iov, 1)
                            .offset(cmd.offset)
                            .ioprio(cmd.ioprio)
                            .rw_flags(self.rw_flags[0] as i32)
                            .build(),
                        None => opcode::Read::new($target, cmd.buf, cmd.len)
                            .offset(cmd.offset)
                            .ioprio(cmd.ioprio)
                            .rw_flags(self.rw_flags[0] as i32)
                            .build(),
                    },
                    (Op::Write, false) => match self.iovecs.get(cmd.slot as usize) {
                        Some(iov) => opcode::Writev::new($target, iov, 1)
                            .offset(cmd.offset)
                            .ioprio(cmd.ioprio)
                            .rw_flags(self.rw_flags[1] as i32)
                            .build(),
                        None => opcode::Write::new($target, cmd.buf, cmd.len)
                            .offset(cmd.offset)
                            .ioprio(cmd.ioprio)
                            .rw_flags(self.rw_flags[1] as i32)
                            .build(),
                    },
                    (Op::Read, true) => {
                        opcode::ReadFixed::new($target, cmd.buf, cmd.len, cmd.buf_index)
                            .offset(cmd.offset)
                            .ioprio(cmd.ioprio)
                            .rw_flags(self.rw_flags[0] as i32)
                            .build()
                    }
                    (Op::Write, true) => {
                        opcode::WriteFixed::new($target, cmd.buf, cmd.len, cmd.buf_index)
                            .offset(cmd.offset)
                            .ioprio(cmd.ioprio)
                            .rw_flags(self.rw_flags[1] as i32)
                            .build()
                    }
                    // `queue` builds trims with `trim_entry`; were one built
                    // here it would complete as a 0-byte (short) I/O, touching
                    // no data.
                    (Op::Trim, _) => opcode::Nop::new().build(),
                    (Op::Fsync, _) => match cmd.flush {
                        Flush::Range { flags, len } => {
                            // The SQE's length is 32 bits: a longer range
                            // (over 4 GiB written since the last sync) goes
                            // to the file's end (length 0), which holds it.
                            let len = u32::try_from(len).unwrap_or(0);
                            opcode::SyncFileRange::new($target, len)
                                .offset(cmd.offset)
                                .flags(flags)
                                .build()
                        }
                        Flush::Data => opcode::Fsync::new($target)
                            .flags(types::FsyncFlags::DATASYNC)
                            .build(),
                        Flush::Full => opcode::Fsync::new($target).build(),
                    },
                }
            };
        }
        let e = if self.fixed_file {
            rw!(types::Fixed(u32::from(cmd.file)))
        } else {
            rw!(types::Fd(self.files.fd(cmd.file)))
        };
        e.user_data(cmd.slot as u64)
    }

    /// Enter the kernel to wait for at least `min` completions (bounded by what
    /// can arrive and by `room` in the caller's array), for at most `timeout_ns`.
    fn sleep(&mut self, min: u32, room: usize, timeout_ns: Option<u64>) -> DevResult<()> {
        let ready = self.ring.completion().len() as u32;
        // Never wait for more than can arrive: only reaped-not-yet requests
        // can complete, and `out` bounds what one call may take.
        let want = min
            .min(self.in_flight)
            .min(room.min(u32::MAX as usize) as u32);
        if ready >= want {
            return Ok(());
        }
        self.stats.wait_calls += 1;
        let mut flags = ENTER_GETEVENTS;
        if self.sqpoll && self.pending > 0 && self.ring.submission().need_wakeup() {
            flags |= ENTER_SQ_WAKEUP;
        }
        let r = match timeout_ns {
            None => self.enter(0, want, flags),
            Some(ns) => {
                let ts = types::Timespec::new()
                    .sec(ns / 1_000_000_000)
                    .nsec((ns % 1_000_000_000) as u32);
                let args = types::SubmitArgs::new().timespec(&ts);
                // SAFETY: `args` (and the timespec it points to) outlive the call;
                // SubmitArgs is the kernel's io_uring_getevents_arg, as EXT_ARG wants.
                let r = unsafe {
                    self.ring
                        .submitter()
                        .enter(0, want, flags | ENTER_EXT_ARG, Some(&args))
                };
                match r {
                    // The deadline came first, or a signal: either way the caller
                    // takes what is there and decides.
                    Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR)) => Ok(0),
                    r => r,
                }
            }
        };
        r.map_err(|e| DeviceError::io("io_uring_enter(wait)", e))?;
        Ok(())
    }

    /// io_uring_enter, retried on EINTR (a signal is not an I/O error).
    fn enter(&self, to_submit: u32, min_complete: u32, flags: u32) -> std::io::Result<usize> {
        loop {
            // SAFETY: plain io_uring_enter without an extended argument.
            let r = unsafe {
                self.ring
                    .submitter()
                    .enter::<libc::sigset_t>(to_submit, min_complete, flags, None)
            };
            match r {
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) if self.deferred && e.raw_os_error() == Some(libc::EEXIST) => {
                    return Err(std::io::Error::other(
                        "the ring has a single issuer (IORING_SETUP_SINGLE_ISSUER, set for \
                         deferred task work) and was first used on another thread; use a \
                         queue on one thread only",
                    ));
                }
                r => return r,
            }
        }
    }

    /// The first commit runs on the worker thread for good; if that is not the
    /// thread that created the queue, count punts of the new submitter instead.
    #[cold]
    fn adopt_submitter(&mut self) -> DevResult<()> {
        self.submitter_checked = true;
        if self.deferred {
            // This thread becomes the ring's single issuer.
            self.ring
                .submitter()
                .register_enable_rings()
                .map_err(|e| setup_error("enable (deferred task work)", e))?;
        }
        let tid = punt::gettid();
        if tid == self.submitter_tid || self.sqpoll {
            return Ok(());
        }
        self.submitter_tid = tid;
        if let Ok(t) = &self.punts
            && let Err(e) = t.set_tids(&[tid])
        {
            self.punts = Err(e);
        }
        Ok(())
    }

    fn drain(&mut self, out: &mut [Completion]) -> DevResult<usize> {
        let mut n = 0;
        let mut refused = false;
        for cqe in self.ring.completion().take(out.len()) {
            let result = cqe.result();
            refused |= self.iopoll && result == -libc::EOPNOTSUPP;
            let data = cqe.user_data();
            let trim_len = data >> TRIM_LEN_SHIFT;
            if trim_len != 0 {
                self.trims_in_flight -= 1;
            }
            out[n] = Completion {
                slot: data as u32,
                result: if trim_len != 0 && result >= 0 {
                    trim_len as i64
                } else {
                    result as i64
                },
                dev_start: 0,
                dev_done: 0,
            };
            n += 1;
        }
        self.in_flight -= n as u32;
        if refused {
            return Err(DeviceError::Unsupported(self.iopoll_refused_message()));
        }
        Ok(n)
    }

    #[cold]
    fn iopoll_refused_message(&self) -> String {
        match &self.polled {
            Some(q) => format!(
                "the kernel refused polled I/O (EOPNOTSUPP): {}",
                iopoll_missing_message(q)
                    .replace("io_poll = 0", &format!("io_poll = {}", poll_value(q)))
            ),
            None => "the kernel refused polled I/O (EOPNOTSUPP): the target's block device \
                     has no poll queues (NVMe with poll_queues=N)"
                .into(),
        }
    }
}

fn poll_value(q: &BlockQueue) -> &'static str {
    match q.io_poll() {
        Some(true) => {
            "1 but the request could not be polled (e.g. a stacked or partition \
                       path without poll support)"
        }
        Some(false) => "0",
        None => "unknown",
    }
}

fn sq_thread_name(owner: i32) -> String {
    format!("iou-sqp-{owner}")
}

impl Queue for Uring {
    fn set_files(&mut self, fds: &[RawFd]) -> DevResult<()> {
        if self.fixed_file {
            // registerfiles: the registered table becomes every file's; a
            // request names its file by index (IOSQE_FIXED_FILE).
            let s = self.ring.submitter();
            s.unregister_files()
                .map_err(|e| setup_error("unregister files", e))?;
            s.register_files(fds)
                .map_err(|e| setup_error("register files", e))?;
        }
        self.files.set(fds)
    }

    fn name(&self) -> &'static str {
        "uring"
    }

    fn caps(&self) -> Caps {
        Caps {
            sync: false,
            can_peek: true,
            // With IOPOLL nothing raises an interrupt: a "sleeping" wait polls the
            // device in the kernel instead.
            can_sleep: !self.iopoll,
            device_poll: self.iopoll,
            predicts_completion: false,
            inline: true,
        }
    }

    /// pread/pwrite on the ring's own descriptor: for targets where the ring's
    /// path is slow (zram has no NOWAIT, so every request detours through an
    /// io-wq worker), `adaptive` does the I/O here instead.
    fn perform(&mut self, cmd: &IoCmd) -> DevResult<Completion> {
        Ok(psync::SyncCall::inline(
            self.files.fd(cmd.file),
            self.files.trim_kind(cmd.file),
            cmd,
            &mut self.stats.submit_calls,
        ))
    }

    fn queue(&mut self, cmd: &IoCmd) -> DevResult<Queued> {
        if self.in_flight >= self.limit {
            return Ok(Queued::Busy);
        }
        if let Some(iov) = self.iovecs.get_mut(cmd.slot as usize) {
            // READV/WRITEV: the slot's iovec names the request's buffer.
            *iov = libc::iovec {
                iov_base: cmd.buf.cast(),
                iov_len: cmd.len as usize,
            };
        }
        let mut entry = match cmd.op {
            Op::Trim => {
                let kind = self.files.trim_kind(cmd.file);
                if !self.trims_on_ring(kind) {
                    return self.perform(cmd).map(Queued::Done);
                }
                self.trim_entry(cmd, kind)
            }
            // After a trim still in flight (trimwrite): not before it is done.
            Op::Write if self.trims_in_flight > 0 => self.entry(cmd).flags(squeue::Flags::IO_DRAIN),
            _ => self.entry(cmd),
        };
        if self.force_async > 0 {
            // fio's force_async=N: every N-th request goes to io-wq directly.
            self.since_async += 1;
            if self.since_async == self.force_async {
                self.since_async = 0;
                entry = entry.flags(squeue::Flags::ASYNC);
            }
        }
        // SAFETY: the engine keeps `cmd.buf` valid until the completion is reaped
        // (Queue::queue contract); the fd outlives the queue (Uring::new contract).
        if unsafe { self.ring.submission().push(&entry) }.is_err() {
            return Ok(Queued::Busy);
        }
        self.in_flight += 1;
        self.pending += 1;
        if cmd.op == Op::Trim {
            self.trims_in_flight += 1;
        }
        Ok(Queued::Pending)
    }

    fn commit(&mut self) -> DevResult<u32> {
        if !self.submitter_checked {
            self.adopt_submitter()?;
        }
        if self.pending == 0 {
            return Ok(0);
        }
        if self.sqpoll {
            // The SQ tail is already published; the SQ thread picks entries up by
            // itself unless it went to sleep after `sq_thread_idle`.
            if self.ring.submission().need_wakeup() {
                self.stats.submit_calls += 1;
                self.enter(0, 0, ENTER_SQ_WAKEUP)
                    .map_err(|e| DeviceError::io("io_uring_enter(SQ_WAKEUP)", e))?;
            }
            let n = self.pending;
            self.pending = 0;
            return Ok(n);
        }
        self.stats.submit_calls += 1;
        // With deferred task work, GETEVENTS (min 0) posts what has completed
        // in the same call, as fio's commit does; it never waits.
        let flags = if self.deferred { ENTER_GETEVENTS } else { 0 };
        match self.enter(self.pending, 0, flags) {
            Ok(n) => {
                self.pending -= n as u32;
                Ok(n as u32)
            }
            // The kernel is short of resources for now: the SQEs stay queued and go
            // out with the next commit, after the caller has reaped.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EBUSY)) => Ok(0),
            Err(e) => Err(DeviceError::io("io_uring_enter(submit)", e)),
        }
    }

    fn reap(&mut self, wait: Wait, out: &mut [Completion]) -> DevResult<usize> {
        match wait {
            Wait::Peek => {
                if self.iopoll && !self.sqpoll && self.in_flight > 0 {
                    self.stats.wait_calls += 1;
                    self.enter(0, 0, ENTER_GETEVENTS)
                        .map_err(|e| DeviceError::io("io_uring_enter(IOPOLL getevents)", e))?;
                } else if self.deferred
                    && self.ring.completion().is_empty()
                    && self.ring.submission().taskrun()
                {
                    // Completions are waiting as task work (the kernel set
                    // IORING_SQ_TASKRUN): one non-blocking enter posts them.
                    self.stats.wait_calls += 1;
                    self.enter(0, 0, ENTER_GETEVENTS)
                        .map_err(|e| DeviceError::io("io_uring_enter(task work)", e))?;
                }
            }
            Wait::Sleep { min } => self.sleep(min, out.len(), None)?,
        }
        self.drain(out)
    }

    /// Sleep for completions, but wake at `deadline_ns` (engine clock) whatever
    /// happened: a paced stream falling due must not wait for the device. Uses
    /// io_uring_enter's extended argument (a timeout, Linux 5.11+); without it
    /// the wait cannot be bounded and is plain.
    fn sleep_until(
        &mut self,
        min: u32,
        deadline_ns: u64,
        out: &mut [Completion],
    ) -> DevResult<usize> {
        let now = crate::measure::clock::now_ns();
        if now >= deadline_ns {
            return self.drain(out);
        }
        let timeout = self.ext_arg.then_some(deadline_ns - now);
        self.sleep(min, out.len(), timeout)?;
        self.drain(out)
    }

    /// `punted`: requests this ring handed to io-wq workers, counted exactly by
    /// the `io_uring_queue_async_work` tracepoint for the submitting thread (see
    /// [`Uring::punt_count`]); `None` when they were not counted, which
    /// `punt_count` says why.
    fn stats(&self) -> BackendStats {
        let mut s = self.stats;
        s.punted = match self.punt_count() {
            PuntCount::Counted(n) => Some(n),
            PuntCount::Unavailable(_) => None,
        };
        s
    }
}

impl Drop for Uring {
    /// Wait (bounded) for requests still in flight: the kernel would otherwise keep
    /// writing into buffers the engine frees right after dropping the queue.
    ///
    /// With deferred task work only the issuer thread can wait: dropped on
    /// another thread, the enters fail at once and closing the ring leaves the
    /// kernel to cancel what is left (O_DIRECT pages stay pinned until then).
    /// The engine's workers reap everything before they return their queue.
    ///
    /// The bound is time, not a number of waits: completions that arrive one
    /// at a time (a busy disk) must not end the wait after a few of them
    /// with the rest still writing into the buffers.
    fn drop(&mut self) {
        let ts = types::Timespec::new().sec(1);
        let args = types::SubmitArgs::new().timespec(&ts);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let done = self.ring.completion().count() as u32;
            self.in_flight = self.in_flight.saturating_sub(done);
            if self.in_flight == 0 || std::time::Instant::now() >= deadline {
                return;
            }
            let want = self.in_flight as usize;
            match self.ring.submitter().submit_with_args(want, &args) {
                // A timeout (ETIME) or a signal (EINTR): look again.
                Ok(_) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR)) => {}
                // This thread cannot wait on the ring (deferred task work
                // owned by another thread): leave the rest to the kernel.
                Err(_) => return,
            }
        }
    }
}

impl AsRawFd for Uring {
    fn as_raw_fd(&self) -> RawFd {
        self.ring.as_raw_fd()
    }
}
