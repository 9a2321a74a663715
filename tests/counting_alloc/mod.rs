//! A global allocator that counts allocation calls process-wide, shared by the
//! tests that prove a path allocates nothing. Each test binary installs it with
//! `#[global_allocator] static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;`
//! and reads [`allocations`] (all threads: for code that runs its own threads)
//! or [`thread_allocations`] (this thread only: for code that runs on the test's
//! thread, so the test harness's own threads cannot be mistaken for it) before
//! and after the code under test.

#![allow(dead_code)] // each test binary uses one of the two counters

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

pub struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // Const-initialised and without Drop: lives in static TLS, so reading it from
    // inside the allocator never allocates and never fails, even at thread exit.
    static THREAD_ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    ALLOCS.fetch_add(1, Ordering::Relaxed);
    THREAD_ALLOCS.with(|c| c.set(c.get() + 1));
}

/// Allocation calls (alloc, alloc_zeroed, realloc) so far, all threads.
pub fn allocations() -> u64 {
    ALLOCS.load(Ordering::SeqCst)
}

/// Allocation calls made so far by the calling thread.
pub fn thread_allocations() -> u64 {
    THREAD_ALLOCS.with(Cell::get)
}

// SAFETY: forwards every call to the system allocator; only counts them.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's. Forwarded (not the default
        // alloc + memset) so fresh pages stay lazily mapped, as in production.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(p, l, n) }
    }
}
