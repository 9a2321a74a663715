//! Opening a job's target (fio's `filename=`): a regular file, created and laid out
//! when missing or short, or a block device used as it is after the safety check.
//!
//! Everything a run needs to know about the target is settled here, before the
//! clock starts: the owned descriptor with the job's open flags, how many bytes
//! the job may address, and the alignment direct I/O requires.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::PathBuf;

use crate::sys::safety::{self, SafetyError};

/// fio's `fallocate`: how a file's space is reserved before it is laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Fallocate {
    /// Nothing before the layout writes (iolab's default: the layout writes
    /// every block anyway).
    #[default]
    None,
    /// fallocate(2), mode 0.
    Native,
    /// posix_fallocate(3).
    Posix,
    /// fallocate(2) with FALLOC_FL_KEEP_SIZE.
    Keep,
    /// ftruncate(2) to the file's size.
    Truncate,
}

impl Fallocate {
    pub const VALID: &'static str = "none, native, posix, keep, truncate, 0 (none) or 1 (posix)";
}

/// What a job wants from its target.
#[derive(Clone, Debug)]
pub struct TargetSpec {
    /// Job name, for messages.
    pub job: String,
    pub path: PathBuf,
    /// Bytes the job addresses from `offset` (fio `size=`); `None` = to the end.
    pub size: Option<u64>,
    pub offset: u64,
    /// The job writes (opens read-write; block devices get the safety check).
    pub writes: bool,
    /// O_DIRECT (`direct=1`).
    pub direct: bool,
    /// O_SYNC (`sync=1`).
    pub sync: bool,
    /// O_DSYNC (`sync=dsync`).
    pub dsync: bool,
    /// Smallest and largest block size the job issues (bs, bsrange, bssplit).
    pub min_bs: u32,
    pub max_bs: u32,
    pub allow_destructive: bool,
    pub allow_mounted_write: bool,
    /// Data written when laying out a file.
    pub layout: Layout,
    /// fio's `fallocate`: how a new or short file's space is reserved before
    /// the layout writes it.
    pub prealloc: Fallocate,
    /// fio's `allow_file_create`: false = a missing or short file is an
    /// error instead of being created or extended.
    pub allow_create: bool,
}

impl TargetSpec {
    /// A read job over `path` with 4 KiB blocks and fio's defaults otherwise.
    pub fn new(job: impl Into<String>, path: impl Into<PathBuf>) -> TargetSpec {
        TargetSpec {
            job: job.into(),
            path: path.into(),
            size: None,
            offset: 0,
            writes: false,
            direct: false,
            sync: false,
            dsync: false,
            min_bs: 4096,
            max_bs: 4096,
            allow_destructive: false,
            allow_mounted_write: false,
            layout: Layout::Random,
            prealloc: Fallocate::None,
            allow_create: true,
        }
    }
}

/// What a laid-out file is filled with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// Pseudo-random bytes (fio's default buffer contents): compressing or
    /// deduplicating storage cannot shortcut reads of it.
    #[default]
    Random,
    /// Zeroes (fio `zero_buffers=1`).
    Zero,
    /// Nothing: the file is created and the job's own writes grow it
    /// (`fill_device`, whose writes run until the size or ENOSPC).
    Grow,
}

/// What a job's target is once opened: a file iolab lays out, or a block device
/// (`probe::caps::NodeKind` is the wider question of what any path names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    File,
    BlockDevice,
}

/// An opened target.
#[derive(Debug)]
pub struct Target {
    /// Opened with the job's flags (read-only or read-write, O_DIRECT, O_SYNC;
    /// O_NOATIME on a block device where this user may set it, as fio does).
    pub file: File,
    pub kind: TargetKind,
    pub path: PathBuf,
    /// First byte the job may address.
    pub offset: u64,
    /// Bytes the job may address from `offset`.
    pub size: u64,
    /// Offset and length alignment direct I/O needs (the device's logical block
    /// size; for a file, what the filesystem reports through statx DIOALIGN).
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub logical_block_size: u32,
    /// Buffer address alignment direct I/O needs.
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub mem_align: u32,
    /// Bytes written while laying out the file (0 when it was already there).
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub laid_out: u64,
}

/// Why a target could not be opened; names the job and the file.
#[derive(Debug, thiserror::Error)]
#[error("job {job}: {path}: {kind}")]
pub struct TargetError {
    pub job: String,
    pub path: String,
    pub kind: TargetErrorKind,
}

#[derive(Debug, thiserror::Error)]
pub enum TargetErrorKind {
    #[error(
        "{}, and allow_file_create=0 forbids {}; create it first (e.g. truncate -s {need}) \
         or drop allow_file_create=0",
        match have { None => "does not exist".to_string(), Some(h) => format!("is {h} bytes, short of the {need} the job addresses") },
        if have.is_none() { "creating it" } else { "extending it" }
    )]
    CreateDisallowed { have: Option<u64>, need: u64 },
    #[error(
        "does not exist and the job gives no size; set size= so it can be created \
         and laid out, or point filename= at an existing file or device"
    )]
    NeedSize,
    #[error(
        "offset={offset} is at or beyond the end of the {len}-byte file, leaving \
         nothing to address; set size= to extend it or use an offset below {len}"
    )]
    NothingToAddress { offset: u64, len: u64 },
    #[error(
        "offset+size = {want} bytes ({}) is beyond the device's {dev} bytes ({}); \
         use size<={} with offset={offset}",
        human(*want), human(*dev), dev.saturating_sub(*offset)
    )]
    BeyondDevice { want: u64, dev: u64, offset: u64 },
    #[error(
        "direct=1 needs {what} to be a multiple of the logical block size {lbs}, \
         but {what}={value}; use a multiple of {lbs} or direct=0"
    )]
    Misaligned {
        what: &'static str,
        value: u64,
        lbs: u32,
    },
    #[error(
        "its filesystem does not support O_DIRECT (direct=1): {detail}; use direct=0 \
         or put the file on a disk filesystem such as ext4 or xfs"
    )]
    DirectUnsupported { detail: String },
    #[error("is a {0}; filename= must name a regular file or a block device")]
    NotFileOrDevice(&'static str),
    #[error(transparent)]
    Unsafe(Box<SafetyError>),
    /// `remedy` is said after the cause where `what` says something "cannot" be
    /// done ("; point filename= at ..."), empty otherwise.
    #[error("{what}: {source}{remedy}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
        remedy: &'static str,
    },
}

/// Bytes in binary units for messages (`512 B`, `1.5 GiB`).
pub fn human(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < U.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

/// Open a job's target, creating and laying out a regular file where needed and
/// refusing unsafe writes to block devices.
pub fn open_target(spec: &TargetSpec) -> Result<Target, TargetError> {
    let err = |kind: TargetErrorKind| TargetError {
        job: spec.job.clone(),
        path: spec.path.display().to_string(),
        kind,
    };
    let io_err = |what: &str, source: io::Error, remedy: &'static str| {
        err(TargetErrorKind::Io {
            what: what.to_string(),
            source,
            remedy,
        })
    };
    match std::fs::metadata(&spec.path) {
        Ok(md) if md.file_type().is_block_device() => open_block_device(spec).map_err(err),
        Ok(md) if md.is_file() => open_file(spec, Some(md.len())).map_err(err),
        Ok(md) => {
            let ft = md.file_type();
            let what = if ft.is_dir() {
                "directory"
            } else if ft.is_char_device() {
                "character device"
            } else if ft.is_fifo() {
                "FIFO"
            } else if ft.is_socket() {
                "socket"
            } else {
                "special file"
            };
            Err(err(TargetErrorKind::NotFileOrDevice(what)))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => open_file(spec, None).map_err(err),
        Err(e) => Err(io_err(
            "cannot stat",
            e,
            "; point filename= at a path this user may reach (check the permissions of its \
             directories)",
        )),
    }
}

fn open_flags(spec: &TargetSpec, noatime: bool) -> OpenOptions {
    let mut o = OpenOptions::new();
    o.read(true).write(spec.writes);
    let mut flags = libc::O_CLOEXEC;
    if spec.direct {
        flags |= libc::O_DIRECT;
    }
    if spec.sync {
        flags |= libc::O_SYNC;
    } else if spec.dsync {
        flags |= libc::O_DSYNC;
    }
    if noatime {
        flags |= libc::O_NOATIME;
    }
    o.custom_flags(flags);
    o
}

/// Open the target. A block device is opened with O_NOATIME, as fio opens
/// every target that is not a regular file: otherwise each read updates the
/// device node's access time (`touch_atime` on every completion, 1.5% of an
/// io-wq worker's time per read on zram), which fio's reads do not pay.
/// O_NOATIME needs the node's owner or CAP_FOWNER; without either the open
/// is retried without it, as fio does.
fn open_main(spec: &TargetSpec, block_device: bool) -> Result<File, TargetErrorKind> {
    let opened = match open_flags(spec, block_device).open(&spec.path) {
        Err(e) if block_device && e.raw_os_error() == Some(libc::EPERM) => {
            open_flags(spec, false).open(&spec.path)
        }
        r => r,
    };
    opened.map_err(|e| {
        if spec.direct && e.raw_os_error() == Some(libc::EINVAL) {
            TargetErrorKind::DirectUnsupported {
                detail: "open with O_DIRECT returned EINVAL".into(),
            }
        } else {
            TargetErrorKind::Io {
                what: format!(
                    "cannot open {}",
                    if spec.writes {
                        "read-write"
                    } else {
                        "read-only"
                    }
                ),
                source: e,
                remedy: "; point filename= at a file or device this user may open (block \
                         devices usually need root)",
            }
        }
    })
}

/// Logical block size of the block device holding `path`'s directory, if any.
fn parent_logical_block_size(path: &std::path::Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    let dev = std::fs::metadata(dir).ok()?.dev();
    let (major, minor) = crate::sys::blockdev::dev_split(dev);
    let q = crate::sys::blockdev::block_queue_of_dev(major, minor).ok()?;
    q.queue_num("logical_block_size")?.try_into().ok()
}

fn check_alignment(spec: &TargetSpec, lbs: u32) -> Result<(), TargetErrorKind> {
    if !spec.direct || lbs <= 1 {
        return Ok(());
    }
    let l = lbs as u64;
    for (what, value) in [
        ("bs", spec.min_bs as u64),
        ("bs", spec.max_bs as u64),
        ("offset", spec.offset),
    ] {
        if value % l != 0 {
            return Err(TargetErrorKind::Misaligned { what, value, lbs });
        }
    }
    Ok(())
}

fn open_block_device(spec: &TargetSpec) -> Result<Target, TargetErrorKind> {
    // Checked before the device is even opened for writing.
    if spec.writes {
        safety::check_block_write(&spec.path, spec.allow_destructive, spec.allow_mounted_write)
            .map_err(|e| TargetErrorKind::Unsafe(Box::new(e)))?;
    }
    let file = open_main(spec, true)?;
    let io = |what: &str, remedy: &'static str| {
        let source = io::Error::last_os_error();
        TargetErrorKind::Io {
            what: what.to_string(),
            source,
            remedy,
        }
    };
    let mut lbs: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int through the pointer.
    if unsafe { libc::ioctl(file.as_raw_fd(), libc::BLKSSZGET, &mut lbs) } != 0 {
        return Err(io("BLKSSZGET (logical block size)", ""));
    }
    // SAFETY: lseek on our own descriptor; SEEK_END of a block device is its size.
    let dev_size = unsafe { libc::lseek(file.as_raw_fd(), 0, libc::SEEK_END) };
    if dev_size < 0 {
        return Err(io(
            "cannot find the device size",
            "; point filename= at a block device whose size the kernel reports, or at a file",
        ));
    }
    let dev_size = dev_size as u64;
    let want = spec.offset.saturating_add(spec.size.unwrap_or(0));
    if spec.offset >= dev_size || want > dev_size {
        return Err(TargetErrorKind::BeyondDevice {
            want: want.max(spec.offset),
            dev: dev_size,
            offset: spec.offset,
        });
    }
    check_alignment(spec, lbs as u32)?;
    Ok(Target {
        file,
        kind: TargetKind::BlockDevice,
        path: spec.path.clone(),
        offset: spec.offset,
        size: spec.size.unwrap_or(dev_size - spec.offset),
        logical_block_size: lbs as u32,
        mem_align: lbs as u32,
        laid_out: 0,
    })
}

fn open_file(spec: &TargetSpec, len: Option<u64>) -> Result<Target, TargetErrorKind> {
    let need = match (spec.size, len) {
        (None, None) => return Err(TargetErrorKind::NeedSize),
        (None, Some(len)) if spec.offset >= len => {
            return Err(TargetErrorKind::NothingToAddress {
                offset: spec.offset,
                len,
            });
        }
        (None, Some(len)) => len,
        (Some(s), _) => spec.offset.saturating_add(s),
    };
    if spec.size == Some(0) {
        return Err(TargetErrorKind::NothingToAddress {
            offset: spec.offset,
            len: len.unwrap_or(0),
        });
    }
    let have = len.unwrap_or(0);
    if !spec.allow_create && (have < need || len.is_none()) {
        return Err(TargetErrorKind::CreateDisallowed { have: len, need });
    }
    if spec.direct && (have < need || len.is_none()) {
        // Refuse a misaligned direct job before creating or growing anything:
        // the filesystem's device gives the alignment the file will have.
        if let Some(lbs) = parent_logical_block_size(&spec.path) {
            check_alignment(spec, lbs)?;
        }
    }
    let laid_out = if have < need || len.is_none() {
        lay_out(spec, have, need)?
    } else {
        0
    };
    let file = open_main(spec, false)?;
    let (lbs, mem_align) = dio_alignment(&file)?;
    if spec.direct && lbs == 0 {
        return Err(TargetErrorKind::DirectUnsupported {
            detail: "statx reports no direct I/O alignment for this file".into(),
        });
    }
    check_alignment(spec, lbs)?;
    Ok(Target {
        file,
        kind: TargetKind::File,
        path: spec.path.clone(),
        offset: spec.offset,
        size: need - spec.offset,
        logical_block_size: lbs,
        mem_align,
        laid_out,
    })
}

/// Write [from, to) of the file with real data so reads hit allocated blocks,
/// then flush it and drop it from the page cache so the run starts cold (fio
/// lays out and invalidates the same way).
fn lay_out(spec: &TargetSpec, from: u64, to: u64) -> Result<u64, TargetErrorKind> {
    let io = |what: &str, source: io::Error, remedy: &'static str| TargetErrorKind::Io {
        what: what.to_string(),
        source,
        remedy,
    };
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(&spec.path)
        .map_err(|e| {
            io(
                "cannot create",
                e,
                "; point filename= into a directory this user may write",
            )
        })?;
    if spec.layout == Layout::Grow {
        return Ok(0);
    }
    preallocate(&f, spec.prealloc, from, to).map_err(|e| {
        io(
            "cannot preallocate (fallocate=)",
            e,
            "; use fallocate=none, or a filesystem that supports it",
        )
    })?;
    const CHUNK: usize = 1 << 20;
    let mut buf = vec![0u8; CHUNK];
    let mut x = 0x2545_F491_4F6C_DD1Du64 ^ from;
    // No progress lines here: fio prints none on stderr while laying out (a
    // long layout shows on the status line, which counts no I/O yet).
    let mut off = from;
    while off < to {
        let n = ((to - off) as usize).min(CHUNK);
        if spec.layout == Layout::Random {
            // xorshift64: ~1 GB/s, far faster than any disk it feeds.
            for w in buf[..n].chunks_exact_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                w.copy_from_slice(&x.to_le_bytes());
            }
        }
        f.write_all_at(&buf[..n], off)
            .map_err(|e| io(&format!("laying out at byte {off}"), e, ""))?;
        off += n as u64;
    }
    f.sync_data()
        .map_err(|e| io("flushing the laid-out file", e, ""))?;
    // SAFETY: advisory call on our own descriptor.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    Ok(to - from)
}

/// Reserve [from, to) of a file being laid out, as fio's `fallocate=` does.
fn preallocate(f: &File, mode: Fallocate, from: u64, to: u64) -> io::Result<()> {
    let fd = f.as_raw_fd();
    let (off, len) = (from as libc::off_t, (to - from) as libc::off_t);
    // Every call below takes our own open descriptor and numbers, and touches
    // no memory of ours.
    let rc = match mode {
        Fallocate::None => return Ok(()),
        // SAFETY: descriptor and numbers only (above).
        Fallocate::Native => unsafe { libc::fallocate(fd, 0, off, len) },
        // SAFETY: descriptor and numbers only (above).
        Fallocate::Keep => unsafe { libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, off, len) },
        // SAFETY: descriptor and a length only (above).
        Fallocate::Truncate => unsafe { libc::ftruncate(fd, to as libc::off_t) },
        Fallocate::Posix => {
            // posix_fallocate returns the error instead of setting errno.
            // SAFETY: descriptor and numbers only (above).
            let e = unsafe { libc::posix_fallocate(fd, off, len) };
            return if e == 0 {
                Ok(())
            } else {
                Err(io::Error::from_raw_os_error(e))
            };
        }
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// (offset alignment, memory alignment) for direct I/O on this file from statx
/// DIOALIGN; (0, 0) means the file does not support direct I/O. Kernels before
/// 6.1 lack DIOALIGN: fall back to the backing device's logical block size.
fn dio_alignment(f: &File) -> Result<(u32, u32), TargetErrorKind> {
    // SAFETY: zeroed statx is a valid out-buffer; the empty path with AT_EMPTY_PATH
    // makes statx describe the descriptor itself.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `stx` is ours and writable for the call; the path is a static
    // NUL-terminated empty string, and AT_EMPTY_PATH makes it the descriptor.
    let r = unsafe {
        libc::statx(
            f.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if r == 0 && stx.stx_mask & libc::STATX_DIOALIGN != 0 {
        return Ok((stx.stx_dio_offset_align, stx.stx_dio_mem_align));
    }
    let md = f.metadata().map_err(|e| TargetErrorKind::Io {
        what: "cannot stat the opened file".into(),
        source: e,
        remedy: "; point filename= at a regular file or a block device",
    })?;
    let (ma, mi) = crate::sys::blockdev::dev_split(std::os::unix::fs::MetadataExt::dev(&md));
    let lbs = crate::sys::blockdev::BlockDev::from_dev(ma, mi)
        .and_then(|d| d.logical_block_size())
        .unwrap_or(512);
    Ok((lbs, lbs))
}
