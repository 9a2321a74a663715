//! What a target (file or device) supports, read from the kernel rather than assumed.
//!
//! `probe_target` feeds `iolab probe`: the kind of object the path names, its
//! sizes, the block device under it and that queue's attributes (read through
//! `sys::blockdev`, their one owner), whether O_DIRECT works and whether
//! non-blocking issue does (one read at offset 0 through psync and io_uring).

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use crate::buf::Buffers;
use crate::device::uring::HybridIopollUnsupported;
use crate::device::{DevResult, DeviceError};
use crate::sys::blockdev::{BlockQueue, Elevator, block_queue_of_fd, fstat};

/// What kind of file-system object a probed path names (its `st_mode` type);
/// `device::target::TargetKind` is the other question, what iolab opened to run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    RegularFile,
    BlockDevice,
    CharDevice,
    Other,
}

fn kind_of(mode: libc::mode_t) -> NodeKind {
    match mode & libc::S_IFMT {
        libc::S_IFREG => NodeKind::RegularFile,
        libc::S_IFBLK => NodeKind::BlockDevice,
        libc::S_IFCHR => NodeKind::CharDevice,
        _ => NodeKind::Other,
    }
}

/// Outcome of one probing attempt.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Yes,
    No(String),
    /// Could not be determined; says why.
    Unknown(String),
}

impl Outcome {
    pub fn is_yes(&self) -> bool {
        matches!(self, Outcome::Yes)
    }
}

/// Non-blocking issue: can the submitter's context start the I/O without sleeping?
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NowaitCaps {
    /// A one-block `preadv2(RWF_NOWAIT)` at offset 0 succeeded (with O_DIRECT when
    /// the target allows it, so the answer is about the device path, not the cache).
    pub rwf_nowait: Outcome,
    /// A one-block io_uring read at offset 0 was handed to an io-wq worker
    /// (`Yes` = punted, i.e. the device path cannot be issued without blocking).
    pub uring_punted: Outcome,
}

/// Why no block device is under a target, as the report states it. The reason is
/// kept as its text so the capabilities stay `Clone`/`Eq` and serialize as before
/// (a plain string under `block_device.Err`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, thiserror::Error)]
#[serde(transparent)]
#[error("{0}")]
pub struct NoBlockDevice(pub String);

/// What a target supports (`iolab probe`, engine validation).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TargetCaps {
    pub path: PathBuf,
    pub kind: NodeKind,
    /// Bytes: file size, or the block device's capacity.
    pub size: u64,
    /// The block device under the target, or why there is none.
    pub block_device: Result<BlockQueue, NoBlockDevice>,
    /// Smallest direct I/O unit of the block device (sysfs `logical_block_size`).
    pub logical_block_size: Option<u32>,
    pub physical_block_size: Option<u32>,
    /// statx STATX_DIOALIGN: required alignment of O_DIRECT offsets/lengths and of
    /// buffer addresses, as the file system reports it (0 = O_DIRECT unsupported).
    pub dio_offset_align: Option<u32>,
    pub dio_mem_align: Option<u32>,
    /// Opening with O_DIRECT works (`No` carries the errno text).
    pub o_direct_ok: Outcome,
    /// sysfs `queue/io_poll`: the driver has poll queues (IOPOLL / hipri possible).
    pub io_poll: Option<bool>,
    /// io_uring hybrid IOPOLL (`hybrid_iopoll=1`, Linux 6.13) can run here, or why not.
    pub hybrid_iopoll: Outcome,
    pub nowait: NowaitCaps,
    /// `queue/scheduler`; `None` where the attribute is absent: bio-based devices
    /// (zram, brd) have no request queue and so no scheduler or `nr_requests`.
    pub scheduler: Option<Elevator>,
    pub rotational: Option<bool>,
    pub nr_requests: Option<u32>,
}

fn open_path(path: &Path, flags: libc::c_int) -> std::io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: valid NUL-terminated path; the returned fd is owned below.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn statx_dio(fd: RawFd) -> Option<(u32, u32)> {
    // SAFETY: zeroed statx is a valid out-parameter; empty path + AT_EMPTY_PATH
    // makes statx describe `fd` itself.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `stx` is ours and writable for the call; the path is a static
    // NUL-terminated empty string, and AT_EMPTY_PATH makes it `fd`.
    let rc = unsafe {
        libc::statx(
            fd,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if rc != 0 || stx.stx_mask & libc::STATX_DIOALIGN == 0 {
        return None;
    }
    Some((stx.stx_dio_offset_align, stx.stx_dio_mem_align))
}

fn blockdev_size(fd: RawFd) -> std::io::Result<u64> {
    // A block device's end offset is its capacity; this fd is private to the
    // probe, so moving its offset is harmless.
    // SAFETY: lseek only moves the file offset of our own descriptor.
    let end = unsafe { libc::lseek(fd, 0, libc::SEEK_END) };
    if end < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(end as u64)
}

fn probe_rwf_nowait(fd: RawFd, len: usize) -> Outcome {
    // O_DIRECT needs aligned memory.
    let buf = match Buffers::one(len) {
        Ok(b) => b,
        Err(e) => return Outcome::Unknown(format!("probe buffer: {e}")),
    };
    let iov = libc::iovec {
        iov_base: buf.ptr(0).cast(),
        iov_len: len,
    };
    // SAFETY: one iovec over our own buffer of `len` bytes.
    let rc = unsafe { libc::preadv2(fd, &iov, 1, 0, libc::RWF_NOWAIT) };
    if rc >= 0 {
        return Outcome::Yes;
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN) => {
            Outcome::No("preadv2(RWF_NOWAIT) returned EAGAIN (would block)".into())
        }
        Some(libc::EOPNOTSUPP) => {
            Outcome::No("preadv2(RWF_NOWAIT) returned EOPNOTSUPP (not supported here)".into())
        }
        _ => Outcome::Unknown(format!("preadv2(RWF_NOWAIT): {e}")),
    }
}

fn probe_uring_punt(fd: RawFd, len: u32) -> Outcome {
    use crate::device::uring::{PuntCount, Uring, UringOpts};
    use crate::device::{Queue, Wait};
    use crate::request::{Class, Completion, IoCmd, Op};
    let buf = match Buffers::one(len as usize) {
        Ok(b) => b,
        Err(e) => return Outcome::Unknown(format!("probe buffer: {e}")),
    };
    let mut opts = UringOpts {
        entries: 2,
        ..UringOpts::default()
    };
    opts.options.count_punts = true;
    let mut q = match Uring::new(fd, &opts) {
        Ok(q) => q,
        Err(e) => return Outcome::Unknown(format!("io_uring setup: {e}")),
    };
    let cmd = IoCmd {
        op: Op::Read,
        offset: 0,
        len,
        slot: 0,
        buf: buf.ptr(0),
        buf_index: 0,
        file: 0,
        ioprio: 0,
        class: Class::Read,
        flush: Default::default(),
    };
    let mut out = [Completion::default(); 1];
    let run = (|| -> DevResult<()> {
        q.queue(&cmd)?;
        q.commit()?;
        while q.reap(Wait::Sleep { min: 1 }, &mut out)? == 0 {}
        Ok(())
    })();
    if let Err(e) = run {
        return Outcome::Unknown(format!("io_uring read: {e}"));
    }
    match q.punt_count() {
        PuntCount::Counted(0) => Outcome::No("issued without io-wq".into()),
        PuntCount::Counted(_) => Outcome::Yes,
        PuntCount::Unavailable(why) => match q.io_wq_workers() {
            Some(n) if n > 0 => Outcome::Yes,
            _ => Outcome::Unknown(format!(
                "cannot count punts ({why}); no io-wq worker of this thread is alive"
            )),
        },
    }
}

/// Whether `hybrid_iopoll=1` can work on a target: IOPOLL needs poll queues
/// (`io_poll=1`, a block device under the target) and the flag needs Linux 6.13.
pub fn hybrid_iopoll_outcome(
    block_device: &Result<BlockQueue, NoBlockDevice>,
    io_poll: Option<bool>,
    kernel: Result<(), HybridIopollUnsupported>,
) -> Outcome {
    let queue = match (block_device, io_poll) {
        (Err(why), _) => Err(format!("no block device under the target ({why})")),
        (Ok(q), Some(false)) => Err(format!(
            "{} has no poll queues (io_poll=0); for NVMe load the driver with \
             nvme.poll_queues=N",
            q.disk
        )),
        (Ok(q), None) => Err(format!(
            "{} has no io_poll attribute (bio-based driver): no poll queues",
            q.disk
        )),
        (Ok(_), Some(true)) => Ok(()),
    };
    match (queue, kernel) {
        (Ok(()), Ok(())) => Outcome::Yes,
        (Err(q), Ok(())) => Outcome::No(q),
        (Ok(()), Err(k)) => Outcome::No(k.to_string()),
        (Err(q), Err(k)) => Outcome::No(format!("{q}; and {k}")),
    }
}

/// Probe `path`: kind, sizes, the block device under it and its queue attributes,
/// whether O_DIRECT and non-blocking issue work. Only reads (one block at offset 0).
pub fn probe_target(path: impl AsRef<Path>) -> DevResult<TargetCaps> {
    let path = path.as_ref();
    let fd = open_path(path, libc::O_RDONLY)
        .map_err(|e| DeviceError::io(format!("probe {}: open", path.display()), e))?;
    let st = fstat(fd.as_raw_fd())
        .map_err(|e| DeviceError::io(format!("probe {}: fstat", path.display()), e))?;
    let kind = kind_of(st.st_mode);
    let size = match kind {
        NodeKind::BlockDevice => blockdev_size(fd.as_raw_fd()).map_err(|e| {
            DeviceError::io(format!("probe {}: lseek(SEEK_END)", path.display()), e)
        })?,
        _ => st.st_size as u64,
    };
    // Kept as text: the report shows why there is no block device.
    let block_device = block_queue_of_fd(fd.as_raw_fd()).map_err(|e| NoBlockDevice(e.to_string()));
    let bq = block_device.as_ref().ok();
    let lbs = bq.and_then(|q| q.queue_num("logical_block_size"));
    let pbs = bq.and_then(|q| q.queue_num("physical_block_size"));
    let (dio_offset_align, dio_mem_align) = match statx_dio(fd.as_raw_fd()) {
        Some((o, m)) => (Some(o), Some(m)),
        None => (None, None),
    };
    let direct = open_path(path, libc::O_RDONLY | libc::O_DIRECT);
    let o_direct_ok = match &direct {
        Ok(_) => Outcome::Yes,
        Err(e) => Outcome::No(format!("open(O_DIRECT): {e}")),
    };
    let probe_fd = direct
        .as_ref()
        .map(|f| f.as_raw_fd())
        .unwrap_or(fd.as_raw_fd());
    let probe_len = [dio_offset_align, lbs.map(|v| v as u32)]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(512)
        .max(512);
    let nowait = if matches!(kind, NodeKind::RegularFile | NodeKind::BlockDevice) {
        NowaitCaps {
            rwf_nowait: probe_rwf_nowait(probe_fd, probe_len as usize),
            uring_punted: probe_uring_punt(probe_fd, probe_len),
        }
    } else {
        let why = || Outcome::Unknown("not a regular file or block device".into());
        NowaitCaps {
            rwf_nowait: why(),
            uring_punted: why(),
        }
    };
    Ok(TargetCaps {
        path: path.to_path_buf(),
        kind,
        size,
        logical_block_size: lbs.map(|v| v as u32),
        physical_block_size: pbs.map(|v| v as u32),
        dio_offset_align,
        dio_mem_align,
        o_direct_ok,
        io_poll: bq.and_then(|q| q.io_poll()),
        hybrid_iopoll: hybrid_iopoll_outcome(
            &block_device,
            bq.and_then(|q| q.io_poll()),
            crate::device::uring::hybrid_iopoll_kernel(),
        ),
        nowait,
        scheduler: bq.and_then(|q| q.scheduler()),
        rotational: bq.and_then(|q| q.queue_num("rotational")).map(|v| v != 0),
        nr_requests: bq
            .and_then(|q| q.queue_num("nr_requests"))
            .map(|v| v as u32),
        block_device,
    })
}
