//! FIEMAP: where a file's data lies on its block device. The block trace joins
//! requests by device sector, so a traced file's offsets are mapped through its
//! extents (`engine::trace`).

use std::os::fd::AsRawFd;

/// One extent of a file: `len` bytes at file offset `logical` are stored at
/// device byte offset `physical`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub logical: u64,
    pub physical: u64,
    pub len: u64,
    /// Allocated but never written: reads return zeros without device I/O.
    pub unwritten: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum FiemapError {
    #[error("FS_IOC_FIEMAP: {0} (the filesystem does not report extents)")]
    Ioctl(std::io::Error),
    #[error(
        "extent at file offset {offset} has flags {flags:#x} (unknown location, delayed, \
         encoded, encrypted or inline data): no stable device sector"
    )]
    Unstable { offset: u64, flags: u32 },
    #[error("the file has no data extents (empty or all holes)")]
    NoExtents,
}

/// FIEMAP of a whole file: its extents in file order, after flushing delayed
/// allocation so every written block has its final place.
pub fn extents(f: &std::fs::File) -> Result<Vec<Extent>, FiemapError> {
    const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
    const FLAG_SYNC: u32 = 1;
    const LAST: u32 = 0x1;
    const UNKNOWN: u32 = 0x2;
    const DELALLOC: u32 = 0x4;
    const ENCODED: u32 = 0x8;
    const ENCRYPTED: u32 = 0x80;
    const NOT_ALIGNED: u32 = 0x100;
    const INLINE: u32 = 0x200;
    const UNWRITTEN: u32 = 0x800;
    const BATCH: usize = 256;
    // struct fiemap (32 bytes) followed by BATCH struct fiemap_extent (56 bytes),
    // as u64 words for alignment.
    const WORDS: usize = (32 + 56 * BATCH) / 8;
    let mut out: Vec<Extent> = Vec::new();
    let mut start = 0u64;
    loop {
        let mut buf = vec![0u64; WORDS];
        buf[0] = start;
        buf[1] = u64::MAX - start;
        // fm_flags (low half of word 2), fm_extent_count (low half of word 3).
        buf[2] = FLAG_SYNC as u64;
        buf[3] = BATCH as u64;
        // SAFETY: buf is a struct fiemap with room for BATCH extents, as
        // fm_extent_count says; the kernel writes only inside it.
        let rc = unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_FIEMAP, buf.as_mut_ptr()) };
        if rc != 0 {
            return Err(FiemapError::Ioctl(std::io::Error::last_os_error()));
        }
        let mapped = (buf[2] >> 32) as usize;
        if mapped == 0 {
            break;
        }
        let mut last = false;
        for k in 0..mapped.min(BATCH) {
            let w = 4 + k * 7;
            let flags = buf[w + 5] as u32;
            let e = Extent {
                logical: buf[w],
                physical: buf[w + 1],
                len: buf[w + 2],
                unwritten: flags & UNWRITTEN != 0,
            };
            if flags & (UNKNOWN | DELALLOC | ENCODED | ENCRYPTED | NOT_ALIGNED | INLINE) != 0 {
                return Err(FiemapError::Unstable {
                    offset: e.logical,
                    flags,
                });
            }
            start = e.logical + e.len;
            last |= flags & LAST != 0;
            out.push(e);
        }
        if last {
            break;
        }
    }
    if out.is_empty() {
        return Err(FiemapError::NoExtents);
    }
    Ok(out)
}
