//! The worker's I/O buffers: one aligned allocation, one buffer per request slot,
//! made before the clock starts (study 002's lesson: no per-I/O allocation).

use std::alloc::{Layout, alloc_zeroed, dealloc};

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
    pub fn new(count: usize, size: usize, align: usize) -> Result<Buffers, String> {
        let size = size.max(1).next_multiple_of(align);
        let total = size
            .checked_mul(count.max(1))
            .ok_or_else(|| format!("buffer pool of {count} x {size} bytes overflows"))?;
        let layout = Layout::from_size_align(total, align)
            .map_err(|e| format!("buffer pool of {total} bytes aligned to {align}: {e}"))?;
        // SAFETY: layout has non-zero size.
        let base = unsafe { alloc_zeroed(layout) };
        if base.is_null() {
            return Err(format!("cannot allocate {total} bytes of I/O buffers"));
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
