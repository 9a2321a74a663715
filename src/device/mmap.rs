//! mmap backend (fio `mmap`): the target is mapped with mmap(2) and every read
//! or write is a memcpy between the request's buffer and the mapping.
//!
//! No system call moves the data: a read of a page not in memory is a page
//! fault that reads it (read-ahead as the madvise hint allows), and a write
//! dirties pages that write-back cleans later. What the latencies show is that
//! path: page faults and copies. As fio does it:
//! - the mapping is shared (MAP_SHARED), so writes reach the file; with
//!   `thp=1` fio maps privately and asks for transparent huge pages
//!   (MADV_HUGEPAGE), and so does iolab: such writes stay in this process;
//! - it is advised sequential or random by the job's pattern (fio's
//!   `fadvise_hint=1`);
//! - an `Op::Fsync` (fio `fsync=N`, `fdatasync=N`) is msync(MS_SYNC) of the whole mapping;
//! - with `direct=1` (which a mapping cannot honour) every read and write is
//!   followed by msync(MS_SYNC) of its range, fio's "not really direct";
//! - a trim is a punched hole or BLKDISCARD on the descriptor ([`super::trim`]).
//!
//! The whole region is mapped once, before the clock starts (fio maps the
//! file at its first request, then reuses the mapping): the request path is
//! the copy alone.

use std::os::fd::RawFd;

use super::perform::Perform;
use super::trim::{self, TrimKind};
use super::{BackendStats, DevResult, DeviceError};
use crate::request::{IoCmd, Op};

/// How the mapping is made and used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmapOpts {
    /// Writes happen: map PROT_WRITE too.
    pub write: bool,
    /// Reads happen (or verify reads back): map PROT_READ.
    pub read: bool,
    /// Random pattern: MADV_RANDOM instead of MADV_SEQUENTIAL.
    pub random: bool,
    /// fio's `thp=1`: MAP_PRIVATE and MADV_HUGEPAGE.
    pub thp: bool,
    /// `direct=1`: msync(MS_SYNC) each read and write's range after the copy.
    pub sync_each: bool,
}

/// The options of fio's mmap list a job may set only with mmap.
pub(crate) const OWNED: &[&str] = &["thp"];

/// mmap's own option, as a job sets it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MmapOptions {
    /// `thp`: private mapping with MADV_HUGEPAGE.
    pub thp: bool,
}

/// One file's mapping.
#[derive(Debug)]
struct Mapping {
    fd: RawFd,
    ptr: *mut u8,
    len: usize,
    trim: TrimKind,
}

/// One mmap queue over the job's files.
#[derive(Debug)]
pub struct Mmap {
    maps: Vec<Mapping>,
    opts: MmapOpts,
    stats: BackendStats,
}

// SAFETY: the mappings are used only by the thread that owns the queue; moving
// the queue (and its mappings) to another thread before use is fine.
unsafe impl Send for Mmap {}

/// The size of the file or block device behind `fd`.
fn size_of(fd: RawFd) -> DevResult<u64> {
    // SAFETY: lseek on an open descriptor; SEEK_END reports the size for a
    // regular file and a block device alike. The position is not used after.
    let end = unsafe { libc::lseek(fd, 0, libc::SEEK_END) };
    if end < 0 {
        return Err(DeviceError::last_os(format!("mmap: size of fd {fd}")));
    }
    Ok(end as u64)
}

impl Mapping {
    fn new(fd: RawFd, opts: &MmapOpts) -> DevResult<Mapping> {
        let len = size_of(fd)?;
        if len == 0 {
            return Err(DeviceError::Unsupported(
                "mmap: the file is empty; an empty file cannot be mapped (give it a size=)".into(),
            ));
        }
        let len = usize::try_from(len).map_err(|_| {
            DeviceError::Unsupported(format!("mmap: {len} bytes do not fit the address space"))
        })?;
        let mut prot = 0;
        if opts.read || !opts.write {
            prot |= libc::PROT_READ;
        }
        if opts.write {
            prot |= libc::PROT_WRITE;
        }
        let share = if opts.thp {
            libc::MAP_PRIVATE
        } else {
            libc::MAP_SHARED
        };
        // SAFETY: a fresh mapping of an open descriptor; the kernel picks the
        // address. Unmapped in Drop.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, share, fd, 0) };
        if ptr == libc::MAP_FAILED {
            return Err(DeviceError::last_os(format!(
                "mmap: mapping {len} bytes of fd {fd}"
            )));
        }
        let advice = if opts.random {
            libc::MADV_RANDOM
        } else {
            libc::MADV_SEQUENTIAL
        };
        // SAFETY: both calls advise on the mapping just made, `len` bytes at
        // `ptr`; advice does not change the memory's contents or validity, and
        // a failure changes nothing fio would not also ignore.
        unsafe {
            if opts.thp {
                libc::madvise(ptr, len, libc::MADV_HUGEPAGE);
            }
            libc::madvise(ptr, len, advice);
        }
        Ok(Mapping {
            fd,
            ptr: ptr.cast(),
            len,
            trim: TrimKind::of(fd),
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our mapping, of this length; nothing refers to it after the queue.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

impl Mmap {
    /// Map `fd` (borrowed: it must stay open for the life of the queue) whole.
    pub fn new(fd: RawFd, opts: MmapOpts) -> DevResult<Self> {
        Ok(Mmap {
            maps: vec![Mapping::new(fd, &opts)?],
            opts,
            stats: BackendStats::default(),
        })
    }

    /// Bytes mapped for file `i`.
    #[cfg(any(test, feature = "testing"))]
    pub fn mapped_len(&self, file: u16) -> usize {
        self.maps[file as usize].len
    }

    fn call(&mut self, cmd: &IoCmd) -> i64 {
        let Some(m) = self.maps.get(cmd.file as usize) else {
            return -(libc::EBADF as i64);
        };
        let len = cmd.len as usize;
        let off = cmd.offset as usize;
        match cmd.op {
            Op::Read | Op::Write => {
                if off.checked_add(len).is_none_or(|end| end > m.len) {
                    // Past the mapping is past the file: SIGBUS, not an error
                    // code, if touched.
                    return -(libc::EINVAL as i64);
                }
                // SAFETY: [off, off + len) lies inside the mapping (checked);
                // `cmd.buf` holds `cmd.len` bytes the engine lends us for the
                // request; the two never overlap (anonymous buffers vs a file
                // mapping).
                unsafe {
                    let at = m.ptr.add(off);
                    if cmd.op == Op::Read {
                        std::ptr::copy_nonoverlapping(at, cmd.buf, len);
                    } else {
                        std::ptr::copy_nonoverlapping(cmd.buf.cast_const(), at, len);
                    }
                }
                if self.opts.sync_each {
                    // msync wants a page-aligned start.
                    let page = off & !4095;
                    self.stats.submit_calls += 1;
                    // SAFETY: a range inside our mapping.
                    let rc = unsafe {
                        libc::msync(m.ptr.add(page).cast(), off + len - page, libc::MS_SYNC)
                    };
                    if rc < 0 {
                        return -(errno() as i64);
                    }
                }
                len as i64
            }
            Op::Fsync => {
                self.stats.submit_calls += 1;
                // SAFETY: our whole mapping.
                match unsafe { libc::msync(m.ptr.cast(), m.len, libc::MS_SYNC) } {
                    0 => 0,
                    _ => -(errno() as i64),
                }
            }
            Op::Trim => {
                let (fd, kind) = (m.fd, m.trim);
                super::psync::retry_eintr(&mut self.stats.submit_calls, || {
                    trim::perform(fd, kind, cmd.offset, cmd.len)
                })
            }
        }
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

impl Perform for Mmap {
    fn engine_name(&self) -> &'static str {
        "mmap"
    }

    #[inline]
    fn perform_one(&mut self, cmd: &IoCmd) -> i64 {
        self.call(cmd)
    }

    fn counters(&self) -> BackendStats {
        BackendStats {
            performed_by: Some(super::PerformedBy::PageCopy),
            ..self.stats
        }
    }

    fn address_files(&mut self, fds: &[RawFd]) -> DevResult<()> {
        let mut maps = Vec::with_capacity(fds.len());
        for &fd in fds {
            maps.push(Mapping::new(fd, &self.opts)?);
        }
        self.maps = maps;
        Ok(())
    }
}
