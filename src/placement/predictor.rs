//! Study 001's 2-bit polling predictor, and the signals that feed it.
//!
//! Each task carries a saturating counter in 0..=3 that starts at 1 when the task
//! is created, goes up by one after an interval in which the task polled and down by
//! one after an interval without polling; the task is a P task while the counter is
//! 2 or 3. A new task becomes a P task after one polling interval; a task that has
//! polled steadily (counter 3) needs two quiet intervals to become a C task again, so
//! one odd interval does not move a settled poller around.
//!
//! The study hooked `blk_mq_poll()` in the kernel. iolab's own workers report polls
//! through a [`PollSignal`]; for other processes [`super::procsignal`] infers polling
//! from /proc.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a task is to the placement policies.
#[derive(
    schemars::JsonSchema,
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
pub enum TaskKind {
    /// Polls for I/O completions: busy on the CPU, light on its execution units.
    #[serde(rename = "P")]
    Poll,
    /// Compute-bound.
    #[serde(rename = "C")]
    Compute,
}

impl TaskKind {
    pub fn letter(self) -> char {
        match self {
            TaskKind::Poll => 'P',
            TaskKind::Compute => 'C',
        }
    }
}

/// The 2-bit saturating counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Predictor {
    counter: u8,
}

impl Default for Predictor {
    fn default() -> Self {
        Self::new()
    }
}

impl Predictor {
    pub const MAX: u8 = 3;
    /// Counter value at which a task counts as a P task.
    pub const POLL_THRESHOLD: u8 = 2;

    /// A newly created task: weakly not polling.
    pub const fn new() -> Self {
        Predictor { counter: 1 }
    }

    pub const fn value(&self) -> u8 {
        self.counter
    }

    /// Account one interval; returns true when the task's kind changed.
    pub fn observe(&mut self, polled: bool) -> bool {
        let before = self.kind();
        self.counter = if polled {
            (self.counter + 1).min(Self::MAX)
        } else {
            self.counter.saturating_sub(1)
        };
        before != self.kind()
    }

    pub const fn is_poller(&self) -> bool {
        self.counter >= Self::POLL_THRESHOLD
    }

    pub const fn kind(&self) -> TaskKind {
        if self.is_poller() {
            TaskKind::Poll
        } else {
            TaskKind::Compute
        }
    }
}

/// A poll counter an iolab worker bumps once per poll batch (one pass over its
/// completion queue that found it must keep spinning), read by the placement side.
///
/// Cloning shares the counter. Only the owning worker writes, so `bump` is a plain
/// load and store, not a locked read-modify-write: no bus lock on the hot path.
#[derive(Clone, Debug, Default)]
pub struct PollSignal(Arc<AtomicU64>);

impl PollSignal {
    pub fn new() -> Self {
        Self::default()
    }

    /// Record one poll batch. Call from the single thread that owns this signal.
    #[inline(always)]
    pub fn bump(&self) {
        let v = self.0.load(Ordering::Relaxed);
        self.0.store(v.wrapping_add(1), Ordering::Relaxed);
    }

    /// Record `n` poll batches at once (a worker that counts locally and publishes
    /// at its own pace).
    #[inline]
    #[cfg(any(test, feature = "testing"))]
    pub fn add(&self, n: u64) {
        let v = self.0.load(Ordering::Relaxed);
        self.0.store(v.wrapping_add(n), Ordering::Relaxed);
    }

    /// Publish a running total kept elsewhere (the engine's completion stats):
    /// one plain store, so a worker can signal without counting twice.
    #[inline(always)]
    pub fn publish(&self, total: u64) {
        self.0.store(total, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Turns a [`PollSignal`] into one polled/not-polled verdict per interval.
#[derive(Debug)]
pub struct SignalSampler {
    signal: PollSignal,
    last: u64,
}

impl SignalSampler {
    pub fn new(signal: PollSignal) -> Self {
        let last = signal.count();
        SignalSampler { signal, last }
    }

    /// Did the worker poll since the previous call?
    pub fn polled(&mut self) -> bool {
        let now = self.signal.count();
        let polled = now != self.last;
        self.last = now;
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_weakly_compute_and_needs_one_poll_interval_to_flip() {
        let mut p = Predictor::new();
        assert_eq!(p.value(), 1);
        assert_eq!(p.kind(), TaskKind::Compute);
        assert!(p.observe(true));
        assert_eq!((p.value(), p.kind()), (2, TaskKind::Poll));
        assert!(!p.observe(true));
        assert!(!p.observe(true));
        assert_eq!(p.value(), 3, "saturates at 3");
        assert!(!p.observe(false));
        assert_eq!((p.value(), p.kind()), (2, TaskKind::Poll));
        assert!(p.observe(false));
        assert_eq!((p.value(), p.kind()), (1, TaskKind::Compute));
        p.observe(false);
        p.observe(false);
        assert_eq!(p.value(), 0, "saturates at 0");
    }

    #[test]
    fn sampler_sees_bumps_once() {
        let s = PollSignal::new();
        let mut sm = SignalSampler::new(s.clone());
        assert!(!sm.polled());
        s.bump();
        assert!(sm.polled());
        assert!(!sm.polled());
        s.add(5);
        assert_eq!(s.count(), 6);
        assert!(sm.polled());
    }
}
