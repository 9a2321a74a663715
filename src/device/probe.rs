//! What a target (file or device) supports, read from the kernel rather than assumed.
//!
//! `probe_target` feeds `iolab probe` and the engine's validation (block size against
//! the logical block size with `direct=1`, sizes beyond a block device). The helpers
//! that map a file to the block device under it are shared with the backends, which
//! must refuse polled I/O (`hipri=1`) on a device without poll queues at setup.

use std::ffi::CString;
use std::fs;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use super::{DevResult, DeviceError};

/// What kind of object a target path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    RegularFile,
    BlockDevice,
    CharDevice,
    Other,
}

/// The block device a target lives on (the whole disk, not the partition).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BlockQueue {
    /// Disk name as in /sys/block (`vda`, `zram1`, `nvme0n1`).
    pub disk: String,
    /// Partition name when the target sits on one (`vda1`).
    pub partition: Option<String>,
    /// `/sys/block/<disk>`-equivalent directory (resolved).
    #[serde(skip)]
    pub sysfs: PathBuf,
}

impl BlockQueue {
    fn queue_attr(&self, name: &str) -> Option<String> {
        fs::read_to_string(self.sysfs.join("queue").join(name))
            .ok()
            .map(|s| s.trim().to_string())
    }

    fn queue_num(&self, name: &str) -> Option<u64> {
        self.queue_attr(name)?.parse().ok()
    }

    /// `queue/io_poll`: 1 when the driver has poll queues, so polled I/O is possible.
    pub fn io_poll(&self) -> Option<bool> {
        self.queue_num("io_poll").map(|v| v != 0)
    }

    /// `queue/scheduler`: the active one is the bracketed name.
    pub fn scheduler(&self) -> Option<Scheduler> {
        Scheduler::parse(&self.queue_attr("scheduler")?)
    }
}

/// The kernel I/O scheduler of a block queue.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Scheduler {
    pub current: String,
    pub available: Vec<String>,
}

impl Scheduler {
    /// Parse sysfs's `none [mq-deadline] kyber bfq`; bio-based devices show `none`
    /// alone, without brackets.
    pub fn parse(s: &str) -> Option<Scheduler> {
        let mut current = None;
        let mut available = Vec::new();
        for word in s.split_whitespace() {
            match word.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
                Some(active) => {
                    current = Some(active.to_string());
                    available.push(active.to_string());
                }
                None => available.push(word.to_string()),
            }
        }
        let current = match current {
            Some(c) => c,
            None if available.len() == 1 => available[0].clone(),
            None => return None,
        };
        Some(Scheduler { current, available })
    }
}

/// Major and minor of a device number, as the kernel splits `dev_t`.
fn dev_parts(dev: libc::dev_t) -> (u32, u32) {
    (libc::major(dev), libc::minor(dev))
}

/// The block device for `major:minor`, via /sys/dev/block; a partition resolves
/// to its disk because queue attributes live on the disk.
pub fn block_queue_of_dev(major: u32, minor: u32) -> Result<BlockQueue, String> {
    let link = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let dir = fs::canonicalize(&link).map_err(|e| {
        if major == 0 {
            format!(
                "device {major}:{minor} is an anonymous device (tmpfs, overlayfs, btrfs \
                 subvolume, ...), not a block device"
            )
        } else {
            format!("{}: {e}", link.display())
        }
    })?;
    let name_of = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    if dir.join("partition").exists() {
        let disk_dir = dir
            .parent()
            .ok_or_else(|| format!("{}: partition without a parent disk", dir.display()))?
            .to_path_buf();
        Ok(BlockQueue {
            disk: name_of(&disk_dir),
            partition: Some(name_of(&dir)),
            sysfs: disk_dir,
        })
    } else {
        Ok(BlockQueue {
            disk: name_of(&dir),
            partition: None,
            sysfs: dir,
        })
    }
}

fn fstat(fd: RawFd) -> std::io::Result<libc::stat> {
    // SAFETY: zeroed stat is a valid out-parameter; fd is only read.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

fn kind_of(mode: libc::mode_t) -> TargetKind {
    match mode & libc::S_IFMT {
        libc::S_IFREG => TargetKind::RegularFile,
        libc::S_IFBLK => TargetKind::BlockDevice,
        libc::S_IFCHR => TargetKind::CharDevice,
        _ => TargetKind::Other,
    }
}

/// The block queue an open file's I/O reaches: the device itself for a block
/// device node, the device holding the file system for a regular file.
pub fn block_queue_of_fd(fd: RawFd) -> Result<BlockQueue, String> {
    let st = fstat(fd).map_err(|e| format!("fstat: {e}"))?;
    match kind_of(st.st_mode) {
        TargetKind::BlockDevice => {
            let (ma, mi) = dev_parts(st.st_rdev);
            block_queue_of_dev(ma, mi)
        }
        TargetKind::RegularFile => {
            let (ma, mi) = dev_parts(st.st_dev);
            block_queue_of_dev(ma, mi)
        }
        TargetKind::CharDevice => Err("a character device has no block queue".into()),
        TargetKind::Other => Err("not a regular file or block device".into()),
    }
}

fn fd_flags(fd: RawFd) -> std::io::Result<libc::c_int> {
    // SAFETY: F_GETFL only reads the descriptor's status flags.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if fl < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fl)
}

/// Refuse polled I/O (`hipri=1`) where it cannot work, naming the reason: the file
/// must be open with O_DIRECT, and the block queue under it must have poll queues.
pub fn check_polled_io(fd: RawFd) -> DevResult<()> {
    let fl = fd_flags(fd).map_err(|e| DeviceError::io("hipri: fcntl(F_GETFL)", e))?;
    if fl & libc::O_DIRECT == 0 {
        return Err(DeviceError::Unsupported(
            "hipri=1: polled I/O needs direct=1 (O_DIRECT); buffered I/O is served from the \
             page cache and never reaches a device queue that could be polled"
                .into(),
        ));
    }
    let q = block_queue_of_fd(fd).map_err(|why| {
        DeviceError::Unsupported(format!(
            "hipri=1: cannot find the block device to poll: {why}; polled I/O needs a block \
             device with poll queues (NVMe with poll_queues=N)"
        ))
    })?;
    match q.io_poll() {
        Some(true) => Ok(()),
        Some(false) => Err(DeviceError::Unsupported(iopoll_missing_message(&q))),
        None => Err(DeviceError::Unsupported(format!(
            "{}: {}/queue/io_poll is missing; polled I/O needs a driver with poll queues \
             (NVMe with poll_queues=N)",
            q.disk,
            q.sysfs.display()
        ))),
    }
}

/// The message for a device without poll queues, shared by setup checks and the
/// run-time refusal (EOPNOTSUPP from the kernel).
pub fn iopoll_missing_message(q: &BlockQueue) -> String {
    format!(
        "{d}: /sys/block/{d}/queue/io_poll = 0; polled I/O needs a driver with poll queues \
         (NVMe with poll_queues=N)",
        d = q.disk
    )
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

/// What a target supports (`iolab probe`, engine validation).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TargetCaps {
    pub path: PathBuf,
    pub kind: TargetKind,
    /// Bytes: file size, or the block device's capacity.
    pub size: u64,
    /// The block device under the target, or why there is none.
    pub block_device: Result<BlockQueue, String>,
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
    pub nowait: NowaitCaps,
    /// `queue/scheduler`; `None` where the attribute is absent: bio-based devices
    /// (zram, brd) have no request queue and so no scheduler or `nr_requests`.
    pub scheduler: Option<Scheduler>,
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

/// An aligned scratch buffer for probing reads (O_DIRECT needs aligned memory).
struct AlignedBuf {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl AlignedBuf {
    fn new(len: usize) -> Option<AlignedBuf> {
        let layout = std::alloc::Layout::from_size_align(len.max(4096), 4096).ok()?;
        // SAFETY: non-zero size layout.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        (!ptr.is_null()).then_some(AlignedBuf { ptr, layout })
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

fn probe_rwf_nowait(fd: RawFd, len: usize) -> Outcome {
    let Some(buf) = AlignedBuf::new(len) else {
        return Outcome::Unknown("cannot allocate a probe buffer".into());
    };
    let iov = libc::iovec {
        iov_base: buf.ptr.cast(),
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
    use super::uring::{PuntCount, Uring, UringOpts};
    use super::{Queue, Wait};
    use crate::request::{Class, Completion, IoCmd, Op};
    let Some(buf) = AlignedBuf::new(len as usize) else {
        return Outcome::Unknown("cannot allocate a probe buffer".into());
    };
    let opts = UringOpts {
        entries: 2,
        ..UringOpts::default()
    };
    let mut q = match Uring::new(fd, &opts) {
        Ok(q) => q,
        Err(e) => return Outcome::Unknown(format!("io_uring setup: {e}")),
    };
    let cmd = IoCmd {
        op: Op::Read,
        offset: 0,
        len,
        slot: 0,
        buf: buf.ptr,
        buf_index: 0,
        ioprio: 0,
        class: Class::Read,
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
        TargetKind::BlockDevice => blockdev_size(fd.as_raw_fd()).map_err(|e| {
            DeviceError::io(format!("probe {}: lseek(SEEK_END)", path.display()), e)
        })?,
        _ => st.st_size as u64,
    };
    let block_device = block_queue_of_fd(fd.as_raw_fd());
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
    let nowait = if matches!(kind, TargetKind::RegularFile | TargetKind::BlockDevice) {
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
        nowait,
        scheduler: bq.and_then(|q| q.scheduler()),
        rotational: bq.and_then(|q| q.queue_num("rotational")).map(|v| v != 0),
        nr_requests: bq
            .and_then(|q| q.queue_num("nr_requests"))
            .map(|v| v as u32),
        block_device,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_parse_bracketed_and_single() {
        let s = Scheduler::parse("none [mq-deadline] kyber bfq").unwrap();
        assert_eq!(s.current, "mq-deadline");
        assert_eq!(s.available, ["none", "mq-deadline", "kyber", "bfq"]);
        let s = Scheduler::parse("none").unwrap();
        assert_eq!(s.current, "none");
        assert!(Scheduler::parse("a b").is_none());
    }
}
