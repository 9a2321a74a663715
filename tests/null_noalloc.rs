// Own binary: installs its own counting global allocator.
//! The null device's per-request path (queue, commit, reap by peek and by sleep,
//! with faults, backing memory and both interrupt modes) never touches the heap:
//! a counting global allocator sees zero allocations by the host thread once the
//! device is built.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use iolab::device::null::NullDevice;
use iolab::device::{Queue, Queued, Wait};
use iolab::job::spec::{IrqMode, LatDist, NullFaults, NullOrder, NullParams};
use iolab::request::{Class, Completion, IoCmd, Op};

struct Counting;

// Per thread: the test harness's own threads allocate while the test runs.
thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    // try_with: the allocator may run while this thread's locals are torn down.
    let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as ours.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as ours.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn per_request_path_does_not_allocate() {
    for irqmode in [IrqMode::Timer, IrqMode::Thread] {
        let p = NullParams {
            lat: Duration::from_micros(20),
            bw: 2_000_000_000,
            dist: LatDist::Exp,
            channels: 2,
            qd: 8,
            order: NullOrder::ReadFirst,
            backing_mem: true,
            irqmode,
            irq_coalesce_count: 2,
            irq_coalesce_time: Duration::from_micros(30),
            faults: NullFaults {
                error_rate: 0.05,
                corrupt_rate: 0.05,
                spike_rate: 0.05,
                spike_lat: Duration::from_micros(10),
                ..Default::default()
            },
        };
        let mut d = NullDevice::new(&p, 1 << 20, 8, 9).unwrap();
        let mut bufs = vec![0u8; 8 * 4096];
        let base = bufs.as_mut_ptr();
        let mut out = [Completion::default(); 8];
        let mut free: [u32; 8] = [0, 1, 2, 3, 4, 5, 6, 7];
        let mut nfree = 8usize;
        let mut got = 0u64;

        let before = ALLOCS.get();
        for round in 0..300u64 {
            while nfree > 0 {
                let slot = free[nfree - 1];
                let op = if (round + slot as u64).is_multiple_of(3) {
                    Op::Write
                } else {
                    Op::Read
                };
                let offset = (round * 8 + slot as u64) % 256 * 4096;
                // SAFETY: slot < 8, inside the 8-buffer pool.
                let buf = unsafe { base.add(slot as usize * 4096) };
                let c = IoCmd::new(op, offset, 4096, slot, buf).with_class(Class::Read);
                match d.queue(&c).unwrap() {
                    Queued::Pending => nfree -= 1,
                    Queued::Busy => break,
                    Queued::Done(_) => unreachable!(),
                }
            }
            d.commit().unwrap();
            let wait = if round % 2 == 0 {
                Wait::Peek
            } else {
                Wait::Sleep { min: 2 }
            };
            let n = d.reap(wait, &mut out).unwrap();
            for c in &out[..n] {
                free[nfree] = c.slot;
                nfree += 1;
            }
            got += n as u64;
            let _ = d.next_completion_at();
        }
        let allocs = ALLOCS.get() - before;
        assert_eq!(
            allocs, 0,
            "irqmode={irqmode:?}: {allocs} allocations on the per-request path"
        );
        assert!(got > 300, "the loop must actually complete I/O ({got})");
        assert!(d.stats().wait_calls > 0 && d.fault_counts().total() > 0);
    }
}
