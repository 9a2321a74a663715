//! Interrupt delivery of the null device: the coalescing rule, and the device
//! thread of `irqmode=thread` that wakes a sleeping host across CPUs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::thread::JoinHandle;

use super::super::{DevResult, DeviceError};
use crate::measure::clock::{now_ns, set_thread_timer_slack_ns};

/// NVMe-style interrupt coalescing: fire once `count` completions are pending or
/// the oldest pending one is `time_ns` old, whichever comes first.
#[derive(Clone, Copy, Debug)]
pub(super) struct Coalescer {
    count: u32,
    /// 0 = no time trigger (only allowed with count 1, checked in `NullDevice::new`).
    time_ns: u64,
    pending: u32,
    oldest: u64,
}

impl Coalescer {
    pub(super) fn new(count: u32, time_ns: u64) -> Coalescer {
        Coalescer {
            count: count.max(1),
            time_ns,
            pending: 0,
            oldest: 0,
        }
    }

    /// Forget pending completions (the coalescer is armed anew for each sleep).
    pub(super) fn reset(&mut self) {
        self.pending = 0;
    }

    /// When the time trigger fires, or u64::MAX if nothing is pending.
    #[inline]
    pub(super) fn deadline(&self) -> u64 {
        if self.pending == 0 || self.time_ns == 0 {
            u64::MAX
        } else {
            self.oldest.saturating_add(self.time_ns)
        }
    }

    /// A completion posted at `t`. Returns how many completions the interrupt it
    /// triggers signals, or 0 when it does not trigger one.
    #[inline]
    pub(super) fn post(&mut self, t: u64) -> u32 {
        if self.pending == 0 {
            self.oldest = t;
        }
        self.pending += 1;
        if self.pending >= self.count {
            self.fire()
        } else {
            0
        }
    }

    /// The time trigger fired: signal everything pending.
    #[inline]
    pub(super) fn fire(&mut self) -> u32 {
        std::mem::take(&mut self.pending)
    }
}

struct Shared {
    /// Futex word the device thread sleeps on; bumped on every arm and on stop.
    doorbell: AtomicU32,
    /// Futex word the host sleeps on; bumped by every interrupt.
    fired: AtomicU32,
    /// Engine-clock time the next interrupt is due; 0 = none armed.
    arm: AtomicU64,
    stop: AtomicBool,
    tid: AtomicI32,
}

/// The device thread of `irqmode=thread`.
pub(super) struct IrqThread {
    sh: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
}

impl IrqThread {
    pub(super) fn spawn() -> DevResult<IrqThread> {
        let sh = Arc::new(Shared {
            doorbell: AtomicU32::new(0),
            fired: AtomicU32::new(0),
            arm: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            tid: AtomicI32::new(0),
        });
        let (tx, rx) = std::sync::mpsc::channel();
        let thread_sh = Arc::clone(&sh);
        let handle = std::thread::Builder::new()
            .name("null-irq".into())
            .spawn(move || {
                // SAFETY: gettid has no arguments and cannot fail.
                let tid = unsafe { libc::gettid() };
                thread_sh.tid.store(tid, Ordering::Release);
                // Its timed futex waits are the device's timer: they must expire on time.
                set_thread_timer_slack_ns(1);
                let _ = tx.send(());
                device_loop(&thread_sh);
            })
            .map_err(|e| DeviceError::io("null irqmode=thread: starting the device thread", e))?;
        // Wait until it runs, so `tid()` is meaningful and the first sleep is not
        // charged with thread start-up.
        let _ = rx.recv();
        Ok(IrqThread {
            sh,
            handle: Some(handle),
        })
    }

    /// Kernel thread id of the device thread, so placement can pin it.
    #[cfg(any(test, feature = "testing"))]
    pub(super) fn tid(&self) -> i32 {
        self.sh.tid.load(Ordering::Acquire)
    }

    /// Block in the kernel until the device thread raises the interrupt due at `at`.
    pub(super) fn wait_for_irq(&self, at: u64) {
        let sh = &*self.sh;
        let seen = sh.fired.load(Ordering::Acquire);
        sh.arm.store(at, Ordering::Release);
        sh.doorbell.fetch_add(1, Ordering::AcqRel);
        futex_wake(&sh.doorbell);
        while sh.fired.load(Ordering::Acquire) == seen {
            futex_wait(&sh.fired, seen, None);
        }
    }
}

impl Drop for IrqThread {
    fn drop(&mut self) {
        self.sh.stop.store(true, Ordering::Release);
        self.sh.doorbell.fetch_add(1, Ordering::AcqRel);
        futex_wake(&self.sh.doorbell);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn device_loop(sh: &Shared) {
    loop {
        let g = sh.doorbell.load(Ordering::Acquire);
        if sh.stop.load(Ordering::Acquire) {
            return;
        }
        let at = sh.arm.load(Ordering::Acquire);
        if at == 0 {
            futex_wait(&sh.doorbell, g, None);
            continue;
        }
        if now_ns() < at {
            // Returns at `at` (the timer), or early if re-armed or stopped.
            futex_wait(&sh.doorbell, g, Some(at));
            continue;
        }
        if sh
            .arm
            .compare_exchange(at, 0, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            sh.fired.fetch_add(1, Ordering::AcqRel);
            futex_wake(&sh.fired);
        }
    }
}

/// Sleep while `*word == expected`, until `deadline` (absolute, engine clock) if given.
fn futex_wait(word: &AtomicU32, expected: u32, deadline: Option<u64>) {
    let ts;
    let tsp = match deadline {
        Some(d) => {
            ts = libc::timespec {
                tv_sec: (d / 1_000_000_000) as libc::time_t,
                tv_nsec: (d % 1_000_000_000) as libc::c_long,
            };
            &ts as *const libc::timespec
        }
        None => std::ptr::null(),
    };
    // SAFETY: `word` is a live, aligned u32 for the duration of the call. With
    // FUTEX_WAIT_BITSET the timeout is absolute on CLOCK_MONOTONIC, the engine
    // clock. EAGAIN/EINTR/ETIMEDOUT are all handled by the callers' re-checks.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG,
            expected,
            tsp,
            std::ptr::null::<u32>(),
            libc::FUTEX_BITSET_MATCH_ANY,
        )
    };
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: waking waiters on a live u32 has no memory effects.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalescer_fires_on_count_or_age() {
        let mut c = Coalescer::new(4, 0);
        assert_eq!([c.post(10), c.post(11), c.post(12)], [0, 0, 0]);
        assert_eq!(c.deadline(), u64::MAX, "no time trigger configured");
        assert_eq!(c.post(13), 4);

        let mut c = Coalescer::new(4, 100);
        assert_eq!(c.deadline(), u64::MAX);
        c.post(1_000);
        c.post(1_050);
        assert_eq!(c.deadline(), 1_100, "oldest + time");
        assert_eq!(c.fire(), 2);
        assert_eq!(c.deadline(), u64::MAX);
    }

    #[test]
    fn device_thread_wakes_host_not_before_the_interrupt_time() {
        let t = IrqThread::spawn().unwrap();
        assert!(t.tid() > 0);
        for _ in 0..3 {
            let at = now_ns() + 300_000;
            t.wait_for_irq(at);
            assert!(now_ns() >= at);
        }
    }
}
