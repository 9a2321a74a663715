//! Keeping the queue full: how many requests the worker hands the backend per
//! submit call, how many completions it waits for and takes per wait, and when
//! it refills — fio's `iodepth_batch_submit`, `iodepth_batch_complete_min`,
//! `iodepth_batch_complete_max` and `iodepth_low`, resolved once per worker.
//!
//! Why it matters: a worker that takes every completion there is, then submits
//! them all in one call, lets the device's queue run dry while it works (the
//! kernel only starts a plugged batch when the call ends). Taking a few, refilling
//! and submitting at once keeps the device busy. fio does that by default with
//! one request per call (submit 1, complete 1); the kernel backends here default
//! to an eighth of the depth per call ([`Fill::chunk`]): the device keeps at
//! least seven eighths of the queue while one system call serves several
//! requests.

use crate::job::{DepthBatch, Engine};

/// The queue-filling rule of one worker, every value resolved against its
/// depth (the sum of its streams' `iodepth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fill {
    /// Most requests per submit call, 1..=depth.
    pub submit: u32,
    /// Completions to wait for at least, 0..=depth (0: peek, never sleep).
    pub complete_min: u32,
    /// Most completions taken per wait, max(1, complete_min)..=depth.
    pub complete_max: u32,
    /// Once the queue is full, refill only when in-flight drops to this.
    pub low: u32,
    depth: u32,
    /// The queue filled up and is draining down to `low`.
    draining: bool,
}

impl Fill {
    /// Submit everything released, take everything ready: the loop's rule
    /// where a job sets none of the options and the backend has no per-call
    /// cost to spread (the null device, synchronous backends).
    pub fn whole_batches(depth: u32) -> Fill {
        let depth = depth.max(1);
        Fill {
            submit: depth,
            complete_min: 1,
            complete_max: depth,
            low: depth,
            depth,
            draining: false,
        }
    }

    /// The kernel backends' default batch: an eighth of the depth (1 up to
    /// QD15, 4 at QD32, at most 16), submitted per call and taken per wait.
    pub fn chunk(depth: u32) -> u32 {
        (depth / 8).clamp(1, 16)
    }

    /// Resolve a job's options against the worker's `depth`, with fio's rules:
    /// 0 or above `depth` means `depth` (submit, low); `complete_max` defaults
    /// to and is at least `complete_min`. Unset options on the kernel's
    /// asynchronous engines (io_uring, libaio) take [`Fill::chunk`] for submit
    /// and complete_max (complete_min 1, refill at once); other backends keep
    /// whole batches unless asked.
    pub fn resolve(b: &DepthBatch, engine: Engine, depth: u32) -> Fill {
        let depth = depth.max(1);
        let kernel = matches!(engine, Engine::IoUring | Engine::Libaio);
        let whole = Fill::whole_batches(depth);
        let clamp = |v: u32| if v == 0 || v > depth { depth } else { v };
        let submit = match b.submit {
            Some(v) => clamp(v),
            None if kernel => Fill::chunk(depth),
            None => whole.submit,
        };
        let complete_min = b.complete_min.unwrap_or(1).min(depth);
        let complete_max = match b.complete_max {
            Some(v) => v.min(depth),
            // fio: the max follows the min the job set.
            None if b.complete_min.is_some() => complete_min,
            None if kernel => Fill::chunk(depth),
            None => whole.complete_max,
        }
        .max(complete_min)
        .max(1);
        let low = b.low.map_or(depth, clamp);
        Fill {
            submit,
            complete_min,
            complete_max,
            low,
            depth,
            draining: false,
        }
    }

    /// Whether the loop may move new requests into the queue now: not while a
    /// full queue drains to `low` (fio's `iodepth_low`).
    #[inline]
    pub fn may_refill(&mut self, inflight: u32) -> bool {
        if self.draining && inflight > self.low {
            return false;
        }
        self.draining = false;
        true
    }

    /// After a submission: a full queue starts draining when `low` asks for it.
    #[inline]
    pub fn submitted(&mut self, inflight: u32) {
        if inflight >= self.depth && self.low < self.depth {
            self.draining = true;
        }
    }

    /// Whether the current wait was asked for by `iodepth_low` (free slots left
    /// idle on purpose).
    #[inline]
    pub fn draining(&self) -> bool {
        self.draining
    }

    /// Completions to wait for with `inflight` requests out and `room` free
    /// slots: at least one when the queue is full (fio: a full queue must
    /// reap), never more than can arrive.
    #[inline]
    pub fn wait_min(&self, inflight: u32, room: bool) -> u32 {
        let min = if room {
            self.complete_min
        } else {
            self.complete_min.max(1)
        };
        min.min(inflight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(s: Option<u32>, mn: Option<u32>, mx: Option<u32>, low: Option<u32>) -> DepthBatch {
        DepthBatch {
            submit: s,
            complete_min: mn,
            complete_max: mx,
            low,
        }
    }

    #[test]
    fn kernel_engines_take_an_eighth_of_the_depth_others_whole_batches() {
        let f = Fill::resolve(&DepthBatch::default(), Engine::IoUring, 32);
        assert_eq!(
            (f.submit, f.complete_min, f.complete_max, f.low),
            (4, 1, 4, 32)
        );
        let f = Fill::resolve(&DepthBatch::default(), Engine::Libaio, 4);
        assert_eq!((f.submit, f.complete_max), (1, 1));
        let f = Fill::resolve(&DepthBatch::default(), Engine::Libaio, 1024);
        assert_eq!((f.submit, f.complete_max), (16, 16));
        // Asking for fio's defaults gets them.
        let f = Fill::resolve(&batch(Some(1), Some(1), None, None), Engine::IoUring, 32);
        assert_eq!((f.submit, f.complete_min, f.complete_max), (1, 1, 1));
        let f = Fill::resolve(&DepthBatch::default(), Engine::Null, 32);
        assert_eq!(f, Fill::whole_batches(32));
    }

    #[test]
    fn fio_rules_for_zero_large_and_crossed_values() {
        let f = Fill::resolve(&batch(Some(0), None, None, Some(0)), Engine::Null, 16);
        assert_eq!((f.submit, f.low), (16, 16));
        let f = Fill::resolve(&batch(Some(99), None, None, Some(99)), Engine::IoUring, 16);
        assert_eq!((f.submit, f.low), (16, 16));
        // complete_max follows complete_min when unset, and never falls below it.
        let f = Fill::resolve(&batch(None, Some(4), None, None), Engine::Null, 16);
        assert_eq!((f.complete_min, f.complete_max), (4, 4));
        let f = Fill::resolve(&batch(None, Some(8), Some(2), None), Engine::IoUring, 16);
        assert_eq!((f.complete_min, f.complete_max), (8, 8));
        let f = Fill::resolve(&batch(None, Some(0), Some(0), None), Engine::IoUring, 16);
        assert_eq!((f.complete_min, f.complete_max), (0, 1));
    }

    #[test]
    fn iodepth_low_drains_a_full_queue_before_refilling() {
        let mut f = Fill::resolve(&batch(None, None, None, Some(4)), Engine::IoUring, 16);
        assert!(f.may_refill(0));
        f.submitted(10);
        assert!(!f.draining(), "not full yet");
        f.submitted(16);
        assert!(f.draining());
        assert!(!f.may_refill(9));
        assert!(!f.may_refill(5));
        assert!(f.may_refill(4));
        assert!(!f.draining());
    }

    #[test]
    fn a_full_queue_always_waits_for_one() {
        let f = Fill::resolve(&batch(None, Some(0), Some(8), None), Engine::IoUring, 16);
        assert_eq!(f.wait_min(16, false), 1);
        assert_eq!(f.wait_min(5, true), 0);
        let f = Fill::resolve(&batch(None, Some(8), None, None), Engine::IoUring, 16);
        assert_eq!(f.wait_min(3, false), 3, "never more than can arrive");
    }
}
