//! Trims (fio's `rw=trim`, `randtrim`, `trimwrite`, `randtrimwrite`): what
//! discarding a range means on each kind of target, decided once per
//! descriptor before the clock starts, and the synchronous call that does it.
//!
//! - A block device gets BLKDISCARD, as fio does: the device may drop the
//!   range's contents (zram frees its pages; an SSD unmaps the blocks).
//! - A regular file gets a hole punched (fallocate PUNCH_HOLE | KEEP_SIZE): the
//!   filesystem frees the range's blocks, the size stays, the range reads back
//!   as zeros. fio 3.33 issues BLKDISCARD on a file too, which fails with ENOTTY;
//!   punching a hole is what a trim means on a file (docs/fio-compat.md, Trims).
//!
//! Asynchronous backends do the same thing their own way where the kernel can
//! (io_uring: IORING_OP_FALLOCATE, and the block uring_cmd discard from Linux
//! 6.12); [`TrimKind`] tells them which.

use std::os::fd::RawFd;

/// BLKDISCARD, `_IO(0x12, 119)` in linux/fs.h (the libc crate has no constant
/// for it): discard the byte range `[u64 start, u64 len]` of a block device.
pub const BLKDISCARD: libc::c_ulong = 0x1277;

/// How a trim is done on one descriptor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TrimKind {
    /// A block device: discard (BLKDISCARD).
    Discard,
    /// Anything else: punch a hole (fallocate). A regular file supports it on
    /// most filesystems; elsewhere the kernel's error (EOPNOTSUPP, ENODEV) is
    /// the trim's result, as any failed I/O.
    #[default]
    PunchHole,
}

/// fallocate mode of a trim on a file: free the range, keep the file's size.
pub const PUNCH_HOLE: libc::c_int = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;

impl TrimKind {
    /// The kind for `fd`, from fstat (setup time, never per request). A
    /// descriptor fstat fails on gets [`TrimKind::PunchHole`]: its trims fail
    /// with the kernel's EBADF like its other I/O.
    pub fn of(fd: RawFd) -> TrimKind {
        match crate::sys::blockdev::fstat(fd) {
            Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFBLK => TrimKind::Discard,
            _ => TrimKind::PunchHole,
        }
    }

    /// What the trim does, in words (for `iolab.engine` notes and errors).
    #[cfg(any(test, feature = "testing"))]
    pub fn describe(self) -> &'static str {
        match self {
            TrimKind::Discard => "BLKDISCARD",
            TrimKind::PunchHole => "fallocate(PUNCH_HOLE|KEEP_SIZE)",
        }
    }
}

/// Trim `len` bytes at `offset` of `fd` in the caller's context. Returns `len`
/// on success (a trim "moves" its whole range, as fio counts it) or -1 with
/// errno set, like the read/write calls beside it.
#[inline]
pub fn perform(fd: RawFd, kind: TrimKind, offset: u64, len: u32) -> isize {
    let rc = match kind {
        TrimKind::Discard => {
            let range: [u64; 2] = [offset, u64::from(len)];
            // SAFETY: BLKDISCARD reads two u64s through the pointer, which
            // points at `range` for the duration of the call.
            unsafe { libc::ioctl(fd, BLKDISCARD as _, range.as_ptr()) }
        }
        // SAFETY: a plain call on a descriptor; a closed one gives EBADF.
        TrimKind::PunchHole => unsafe {
            libc::fallocate(
                fd,
                PUNCH_HOLE,
                offset as libc::off_t,
                libc::off_t::from(len),
            )
        },
    };
    if rc < 0 { -1 } else { len as isize }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_file_gets_a_hole_that_reads_back_as_zeros() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&vec![0xa5u8; 256 * 1024]).unwrap();
        f.sync_all().unwrap();
        let before = f.metadata().unwrap().blocks();
        let fd = f.as_raw_fd();
        assert_eq!(TrimKind::of(fd), TrimKind::PunchHole);
        let r = perform(fd, TrimKind::PunchHole, 64 * 1024, 128 * 1024);
        if r < 0 {
            let e = std::io::Error::last_os_error();
            // A filesystem without hole punching (rare) cannot show anything.
            assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP), "{e}");
            eprintln!("SKIPPED: hole punching: the temp directory's filesystem says {e}");
            return;
        }
        assert_eq!(r, 128 * 1024);
        let m = f.metadata().unwrap();
        assert_eq!(m.len(), 256 * 1024, "KEEP_SIZE: the size stays");
        assert!(m.blocks() < before, "blocks {} -> {}", before, m.blocks());
        let mut back = vec![0u8; 256 * 1024];
        f.seek(SeekFrom::Start(0)).unwrap();
        f.read_exact(&mut back).unwrap();
        assert!(back[..64 * 1024].iter().all(|&b| b == 0xa5));
        assert!(back[64 * 1024..192 * 1024].iter().all(|&b| b == 0));
        assert!(back[192 * 1024..].iter().all(|&b| b == 0xa5));
    }

    #[test]
    fn a_bad_descriptor_fails_with_the_kernels_errno() {
        assert_eq!(perform(-1, TrimKind::PunchHole, 0, 4096), -1);
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::EBADF)
        );
    }
}
