//! Aligned I/O buffers: one allocation, one buffer per request slot, made before
//! the clock starts (study 002's lesson: no per-I/O allocation).
//!
//! The one buffer type of the crate: the engine's workers, the studies' own I/O
//! loops, the P task and `iolab probe` all take their O_DIRECT memory from here.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::path::PathBuf;

/// Alignment that satisfies O_DIRECT on any logical block size up to a page.
pub const PAGE_ALIGN: usize = 4096;

/// Why a buffer pool could not be made.
#[derive(Debug, thiserror::Error)]
pub enum BufError {
    #[error("buffer pool of {count} x {size} bytes overflows; use a smaller iodepth or block size")]
    Overflow { count: usize, size: usize },
    #[error(
        "buffer pool of {total} bytes aligned to {align}: {why}; the alignment must be a power of two"
    )]
    Layout {
        total: usize,
        align: usize,
        why: std::alloc::LayoutError,
    },
    #[error("cannot allocate {0} bytes of I/O buffers; use a smaller iodepth or block size")]
    OutOfMemory(usize),
    #[error("mem={kind}: {what} of {total} bytes failed: {err}{remedy}")]
    Map {
        kind: &'static str,
        what: &'static str,
        total: usize,
        err: std::io::Error,
        remedy: &'static str,
    },
}

/// Where the I/O buffers come from (fio's `mem`/`iomem`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mem {
    /// The heap (fio's default).
    #[default]
    Malloc,
    /// An anonymous private mapping, or a shared mapping of a file.
    Mmap(Option<PathBuf>),
    /// An anonymous shared mapping.
    MmapShared,
    /// Huge pages: MAP_HUGETLB, or a shared mapping of a file on hugetlbfs.
    MmapHuge(Option<PathBuf>),
    /// A System V shared memory segment.
    Shm,
    /// A System V segment of huge pages (SHM_HUGETLB).
    ShmHuge,
}

/// Why a `mem=` value names no memory iolab can allocate; the message is
/// what is valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemNameError {
    #[error(
        "{} (cudamalloc is GPU memory through CUDA, which iolab does not link)",
        Mem::VALID
    )]
    Cuda,
    #[error("{}", Mem::VALID)]
    Unknown,
}

impl Mem {
    pub const VALID: &'static str = "malloc, mmap, mmap:FILE, mmapshared, mmaphuge, \
         mmaphuge:FILE (on hugetlbfs), shm or shmhuge";

    /// fio's `mem=` values; `cudamalloc` needs CUDA, which iolab does not link.
    pub fn parse(v: &str) -> Result<Mem, MemNameError> {
        let (kind, file) = match v.split_once(':') {
            Some((k, f)) if !f.is_empty() => (k, Some(PathBuf::from(f))),
            _ => (v, None),
        };
        Ok(match (kind.to_ascii_lowercase().as_str(), file) {
            ("malloc", None) => Mem::Malloc,
            ("mmap", f) => Mem::Mmap(f),
            ("mmapshared", None) => Mem::MmapShared,
            ("mmaphuge", f) => Mem::MmapHuge(f),
            ("shm", None) => Mem::Shm,
            ("shmhuge", None) => Mem::ShmHuge,
            ("cudamalloc", _) => return Err(MemNameError::Cuda),
            _ => return Err(MemNameError::Unknown),
        })
    }

    pub fn name(&self) -> &'static str {
        match self {
            Mem::Malloc => "malloc",
            Mem::Mmap(_) => "mmap",
            Mem::MmapShared => "mmapshared",
            Mem::MmapHuge(_) => "mmaphuge",
            Mem::Shm => "shm",
            Mem::ShmHuge => "shmhuge",
        }
    }

    fn huge(&self) -> bool {
        matches!(self, Mem::MmapHuge(_) | Mem::ShmHuge)
    }
}

/// How a pool's memory is to be released.
enum Backing {
    Heap(Layout),
    Map(usize),
    Shm,
}

const HUGE_REMEDY: &str = "; huge pages must be reserved first (echo N > \
     /proc/sys/vm/nr_hugepages, or hugepages= on the kernel command line), or use mem=mmap";

/// The system's default huge page size (`Hugepagesize` in /proc/meminfo),
/// or 2 MiB where it cannot be read.
pub fn system_huge_page() -> usize {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("Hugepagesize:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        })
        .map_or(2 << 20, |kb| kb * 1024)
}

/// Memory of `total` bytes (`total` a multiple of the page size) from `mem`;
/// huge pages come in units of `huge_page` bytes (0: the system's).
fn map_mem(mem: &Mem, total: usize, huge_page: usize) -> Result<(*mut u8, Backing), BufError> {
    let fail = |what, err, remedy| BufError::Map {
        kind: mem.name(),
        what,
        total,
        err,
        remedy,
    };
    let remedy = if mem.huge() { HUGE_REMEDY } else { "" };
    // Huge pages come in whole units (fio's hugepage-size): round the length
    // up so the call can succeed.
    let len = if mem.huge() {
        let unit = if huge_page == 0 {
            system_huge_page()
        } else {
            huge_page
        };
        total.next_multiple_of(unit.max(PAGE_ALIGN))
    } else {
        total
    };
    match mem {
        Mem::Shm | Mem::ShmHuge => {
            let mut flags = libc::IPC_CREAT | 0o600;
            if mem.huge() {
                flags |= libc::SHM_HUGETLB;
            }
            // SAFETY: a new private segment; its id is ours alone.
            let id = unsafe { libc::shmget(libc::IPC_PRIVATE, len, flags) };
            if id < 0 {
                return Err(fail("shmget", std::io::Error::last_os_error(), remedy));
            }
            // SAFETY: attach the segment we just made anywhere.
            let p = unsafe { libc::shmat(id, std::ptr::null(), 0) };
            let err = std::io::Error::last_os_error();
            // Marked for removal now: it goes when detached, even on a crash.
            // SAFETY: IPC_RMID on our own segment.
            unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
            if p as isize == -1 {
                return Err(fail("shmat", err, ""));
            }
            Ok((p.cast(), Backing::Shm))
        }
        _ => {
            let (flags, fd) = match mem {
                Mem::Mmap(Some(f)) | Mem::MmapHuge(Some(f)) => {
                    let file = std::fs::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .create(true)
                        .truncate(false)
                        .open(f)
                        .map_err(|e| fail("opening the file to map", e, ""))?;
                    file.set_len(len as u64)
                        .map_err(|e| fail("sizing the file to map", e, remedy))?;
                    (libc::MAP_SHARED, Some(file))
                }
                Mem::MmapShared => (libc::MAP_SHARED | libc::MAP_ANONYMOUS, None),
                Mem::MmapHuge(None) => (
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_HUGETLB,
                    None,
                ),
                _ => (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, None),
            };
            use std::os::fd::AsRawFd;
            let raw = fd.as_ref().map_or(-1, |f| f.as_raw_fd());
            // SAFETY: a new mapping; the descriptor (if any) may close after mmap.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    flags,
                    raw,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(fail("mmap", std::io::Error::last_os_error(), remedy));
            }
            Ok((p.cast(), Backing::Map(len)))
        }
    }
}

/// `count` buffers of `size` bytes each, every one aligned to `align` (4096 covers
/// O_DIRECT on any logical block size up to a page).
pub struct Buffers {
    base: *mut u8,
    layout: Layout,
    backing: Backing,
    size: usize,
    count: usize,
}

// SAFETY: the buffers are plain memory owned by one worker at a time.
unsafe impl Send for Buffers {}

impl Buffers {
    pub fn new(count: usize, size: usize, align: usize) -> Result<Buffers, BufError> {
        Self::with_mem(count, size, align, &Mem::Malloc, 0)
    }

    /// As [`new`](Self::new), the memory from `mem` (mappings and segments
    /// are page-aligned, so `align` up to a page holds for them too); huge
    /// page memory is rounded to whole pages of `huge_page` bytes (0: the
    /// system's size).
    pub fn with_mem(
        count: usize,
        size: usize,
        align: usize,
        mem: &Mem,
        huge_page: usize,
    ) -> Result<Buffers, BufError> {
        let size = size.max(1).next_multiple_of(align);
        let total = size
            .checked_mul(count.max(1))
            .ok_or(BufError::Overflow { count, size })?;
        let layout = Layout::from_size_align(total, align).map_err(|why| BufError::Layout {
            total,
            align,
            why,
        })?;
        let (base, backing) = if *mem == Mem::Malloc || align > PAGE_ALIGN {
            // SAFETY: layout has non-zero size.
            let base = unsafe { alloc_zeroed(layout) };
            if base.is_null() {
                return Err(BufError::OutOfMemory(total));
            }
            (base, Backing::Heap(layout))
        } else {
            // Mappings start zeroed, as alloc_zeroed's memory does.
            map_mem(mem, total.next_multiple_of(PAGE_ALIGN), huge_page)?
        };
        Ok(Buffers {
            base,
            layout,
            backing,
            size,
            count: count.max(1),
        })
    }

    /// Fill every buffer with pseudo-random bytes, as fio does, so writes do not
    /// send zero pages that a compressing device (zram) would store for free.
    #[cfg(any(test, feature = "testing"))]
    pub fn fill_random(&mut self, seed: u64) {
        let mut rng = fastrand::Rng::with_seed(seed);
        let all = self.as_mut_slice();
        for chunk in all.chunks_mut(8) {
            let v = rng.u64(..).to_ne_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }

    /// One page-aligned buffer of at least `len` bytes.
    pub fn one(len: usize) -> Result<Buffers, BufError> {
        Self::new(1, len, PAGE_ALIGN)
    }

    pub fn count(&self) -> usize {
        self.count
    }

    pub fn size(&self) -> usize {
        self.size
    }

    #[inline(always)]
    pub fn ptr(&self, i: usize) -> *mut u8 {
        debug_assert!(i < self.count);
        // SAFETY: i < count, so the offset stays inside the allocation.
        unsafe { self.base.add(i * self.size) }
    }

    /// (pointer, length) of every buffer, for registering them with io_uring.
    pub fn iovecs(&self) -> Vec<(*mut u8, usize)> {
        (0..self.count).map(|i| (self.ptr(i), self.size)).collect()
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: base points at layout.size() initialised (zeroed) bytes we own.
        unsafe { std::slice::from_raw_parts_mut(self.base, self.layout.size()) }
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        match self.backing {
            // SAFETY: allocated in with_mem() with this layout.
            Backing::Heap(layout) => unsafe { dealloc(self.base, layout) },
            // SAFETY: mapped in with_mem() with this length.
            Backing::Map(len) => unsafe {
                libc::munmap(self.base.cast(), len);
            },
            // SAFETY: attached in with_mem(); marked for removal there.
            Backing::Shm => unsafe {
                libc::shmdt(self.base.cast());
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_and_disjoint() {
        let mut b = Buffers::new(4, 5000, 4096).unwrap();
        assert_eq!(b.size(), 8192);
        for i in 0..4 {
            assert_eq!(b.ptr(i) as usize % 4096, 0);
        }
        assert_eq!(b.ptr(1) as usize - b.ptr(0) as usize, 8192);
        b.fill_random(1);
        assert!(b.as_mut_slice().iter().any(|&x| x != 0));
    }

    #[test]
    fn every_memory_kind_gives_aligned_zeroed_buffers() {
        for mem in [Mem::Malloc, Mem::Mmap(None), Mem::MmapShared, Mem::Shm] {
            let mut b = Buffers::with_mem(3, 4096, 4096, &mem, 0).unwrap();
            assert!(b.as_mut_slice().iter().all(|&x| x == 0), "{mem:?}");
            for i in 0..3 {
                assert_eq!(b.ptr(i) as usize % 4096, 0, "{mem:?}");
            }
            b.fill_random(2);
        }
        assert!(
            Mem::parse("cudamalloc")
                .unwrap_err()
                .to_string()
                .contains("CUDA")
        );
        assert_eq!(
            Mem::parse("mmaphuge:/mnt/huge/f").unwrap(),
            Mem::MmapHuge(Some("/mnt/huge/f".into()))
        );
    }
}
