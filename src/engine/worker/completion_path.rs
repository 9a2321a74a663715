//! The scheduler's completion path: a request a cap held goes to the device
//! when the event that released it happens, not when the worker next runs.
//!
//! In the kernel, an elevator's held requests are dispatched from the
//! completion handler (blk-mq restarts the hardware queue when a request
//! completes), so a channel a completion frees is refilled at once. The
//! worker here learns of a completion only when it wakes: under laq at
//! `ois_max` the device has no backlog, so every completion left a channel
//! idle for the wakeup (tens of microseconds, far more on a loaded machine),
//! and the window's end likewise. That idle time was what laq lost against
//! `sched::sim`, which dispatches at the completion (BENCHMARKS.md, LAQ).
//!
//! A backend that keeps device time (the null device: completions carry
//! `dev_done` on the engine clock, and `NullDevice::commit_at` can start a command
//! in the past) lets the worker act as that completion path: after each
//! completion it asks the scheduler what the completion released, as of the
//! completion's time, and commits it dated then. The date is never earlier
//! than anything the scheduler already saw ([`Scheduler::completion_time`]),
//! so no request starts before it arrived and no cap is judged with knowledge
//! from later. Backends without device time (io_uring, libaio) are real
//! kernels with their own completion path below iolab: for them iolab's
//! scheduler is a user-space one, and this path does nothing.
//!
//! [`Scheduler::completion_time`]: crate::sched::Scheduler::completion_time

use super::Worker;
use crate::device::DevResult;
use crate::measure::clock;

impl Worker {
    /// Dispatch what the event at `event_ns` (a completion's `dev_done`, or the
    /// deadline the wait ended at) released from laq's caps, dated then.
    #[inline]
    pub(super) fn completion_path(&mut self, event_ns: u64) -> DevResult<()> {
        if !self.sched.holds() || self.sync_backend || !self.queue.caps().predicts_completion {
            return Ok(());
        }
        let at = self.sched.completion_time(event_ns);
        let before = self.batch.len();
        self.dispatch(at)?;
        let released = self.batch.len().saturating_sub(before);
        self.commit_batch_at(at)?;
        self.sched.note_completion_path(released as u64);
        Ok(())
    }

    /// The wait ended with nothing complete: if it reached its deadline (the
    /// `ois_min` window's end, when that is what holds the head request), what
    /// the scheduler releases then goes out dated at the deadline.
    #[inline]
    pub(super) fn deadline_path(&mut self, deadline_ns: u64) -> DevResult<()> {
        if !self.sched.holds() || clock::now_ns() < deadline_ns {
            return Ok(());
        }
        self.completion_path(deadline_ns)
    }
}
