//! Aligned I/O buffers: one allocation, one buffer per request slot, made before
//! the clock starts (study 002's lesson: no per-I/O allocation).
//!
//! The one buffer type of the crate: the engine's workers, the studies' own I/O
//! loops, the P task and `iolab probe` all take their O_DIRECT memory from here.

use std::alloc::{Layout, alloc_zeroed, dealloc};

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
}

/// `count` buffers of `size` bytes each, every one aligned to `align` (4096 covers
/// O_DIRECT on any logical block size up to a page).
pub struct Buffers {
    base: *mut u8,
    layout: Layout,
    size: usize,
    count: usize,
}

// SAFETY: the buffers are plain memory owned by one worker at a time.
unsafe impl Send for Buffers {}

impl Buffers {
    pub fn new(count: usize, size: usize, align: usize) -> Result<Buffers, BufError> {
        let size = size.max(1).next_multiple_of(align);
        let total = size
            .checked_mul(count.max(1))
            .ok_or(BufError::Overflow { count, size })?;
        let layout = Layout::from_size_align(total, align).map_err(|why| BufError::Layout {
            total,
            align,
            why,
        })?;
        // SAFETY: layout has non-zero size.
        let base = unsafe { alloc_zeroed(layout) };
        if base.is_null() {
            return Err(BufError::OutOfMemory(total));
        }
        Ok(Buffers {
            base,
            layout,
            size,
            count: count.max(1),
        })
    }

    /// Fill every buffer with pseudo-random bytes, as fio does, so writes do not
    /// send zero pages that a compressing device (zram) would store for free.
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
        // SAFETY: allocated in new() with this layout.
        unsafe { dealloc(self.base, self.layout) };
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
}
