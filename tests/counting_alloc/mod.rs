//! A global allocator that counts allocation calls, shared by the tests that
//! prove a path allocates nothing. Each test binary installs it with
//! `#[global_allocator] static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;`
//! and measures with one of two counters:
//!
//! * [`allocations_during`]: the calling thread and every thread started while
//!   it runs (for code that runs its own threads, such as the engine);
//! * [`thread_allocations`]: this thread only (for code that runs on the test's
//!   own thread).
//!
//! Why not simply every thread of the process: the test harness's threads are
//! not the code under test, yet they allocate while a test measures. When a
//! test finishes, libtest's main thread reports it and starts the next one, and
//! the finished test's thread sends its result before it exits; on a loaded
//! machine those six allocations once fell inside `engine_noalloc`'s 20k-I/O
//! run and failed it. So a measuring test runs [`alone`]: in a
//! process of its own where libtest runs that one test and nothing else, and
//! there threads are told apart by their first allocation: one whose first
//! allocation comes while a measurement is open was started by the code under
//! test and counts (also in later measurements, should it live on); one that
//! had allocated before (libtest's main thread) never counts.

#![allow(dead_code)] // each test binary uses one of the two counters

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub struct Counting;

/// A measurement is open ([`allocations_during`] is running).
static OPEN: AtomicBool = AtomicBool::new(false);
/// Allocations by measured threads while a measurement is open.
static MEASURED: AtomicU64 = AtomicU64::new(0);

/// What a thread is to the measurement, decided at its first allocation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Has not allocated yet.
    Unseen,
    /// Allocated before any measurement opened: not code under test.
    Bystander,
    /// Started by code under test (first allocation inside a measurement), or
    /// the thread running [`allocations_during`] while it does.
    Measured,
}

thread_local! {
    // Const-initialised and without Drop: these live in static TLS, so reading
    // them from inside the allocator never allocates and never fails, even at
    // thread exit.
    static THREAD_ALLOCS: Cell<u64> = const { Cell::new(0) };
    static ROLE: Cell<Role> = const { Cell::new(Role::Unseen) };
}

fn count() {
    THREAD_ALLOCS.with(|c| c.set(c.get() + 1));
    let open = OPEN.load(Ordering::SeqCst);
    let role = ROLE.with(|r| {
        if r.get() == Role::Unseen {
            r.set(if open {
                Role::Measured
            } else {
                Role::Bystander
            });
        }
        r.get()
    });
    if open && role == Role::Measured {
        MEASURED.fetch_add(1, Ordering::SeqCst);
    }
}

/// Set in the process [`alone`] starts: the one test it runs.
const ALONE: &str = "IOLAB_TEST_ALONE";

/// Whether the caller, the test named `test` (its libtest name), runs alone in
/// its process and should measure now. Otherwise runs this test binary again
/// with only `test` selected, shows its output, fails if it failed or did not
/// run, and returns false: the caller then returns, its work done by the child.
pub fn alone(test: &str) -> bool {
    if std::env::var(ALONE).as_deref() == Ok(test) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary knows its path");
    let out = Command::new(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(ALONE, test)
        .output()
        .expect("the test binary runs again");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(out.status.success(), "{test} failed in its own process");
    // A name that selects nothing would pass without measuring anything.
    assert!(
        stdout.contains("test result: ok. 1 passed"),
        "{test} did not run in its own process"
    );
    false
}

/// Runs `f` and returns its result with the allocation calls (alloc,
/// alloc_zeroed, realloc) made meanwhile by this thread and by the threads `f`
/// starts. Call it only where [`alone`] said so.
pub fn allocations_during<R>(f: impl FnOnce() -> R) -> (R, u64) {
    ROLE.with(|r| r.set(Role::Measured));
    let before = MEASURED.load(Ordering::SeqCst);
    OPEN.store(true, Ordering::SeqCst);
    let r = f();
    OPEN.store(false, Ordering::SeqCst);
    let n = MEASURED.load(Ordering::SeqCst) - before;
    // Back to a test's thread: once its test is over, its exit
    // (sending the result) must not count in another test's measurement.
    ROLE.with(|r| r.set(Role::Bystander));
    (r, n)
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
