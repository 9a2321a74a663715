//! Linux's classic hybrid polling (blk-mq, Linux 4.10 to 6.3; removed in 6.4).
//!
//! The published rule (`block/blk-mq.c`: `blk_mq_poll_stats_bkt`,
//! `blk_mq_poll_nsecs`): completion times are kept per *bucket* of request —
//! direction (read, write) times power-of-two size from 512 B, `ddir + 2 *
//! ilog2(sectors)`, 16 buckets, larger requests sharing the last pair — and the
//! poller sleeps half its bucket's mean (`(mean + 1) / 2`) before it spins. A
//! bucket with no samples yet means no sleep: pure polling until there is data.
//!
//! Why per bucket matters: with one mean over every size, a 4 KiB read beside
//! 256 KiB read-ahead naps for the read-ahead's time and is seen ten times
//! late (a laq run under `completion=hybrid` kept half of its bandwidth and
//! its periodic reads' p50 rose from 90 us to 1 ms before this was per bucket).
//!
//! Where iolab differs, and why: the kernel publishes each bucket's mean over
//! 100 ms windows; iolab keeps an exponentially weighted mean per bucket
//! (weight 1/16 after the first 16 samples, a sample clamped at 4x the mean),
//! which follows drift without holding the first window's requests at zero
//! sleep — the lab's quick points last less than a window. With several
//! requests in flight the kernel sleeps for the one it polls; iolab's worker
//! waits for whichever completes first, so it sleeps until the earliest
//! "submit + half its bucket's mean" among them ([`ClassicHybrid::wake_ns`]).

use super::{CompletionStats, InFlight, Model, Needs, wait};
use crate::device::{DevResult, Queue};
use crate::request::Completion;

/// Buckets, as in the kernel (`BLK_MQ_POLL_STATS_BKTS`).
pub const BUCKETS: usize = 16;

/// The kernel's bucket of a request: `None` below one sector (the kernel does
/// not sleep for those).
#[inline]
pub fn bucket(len: u32, write: bool) -> Option<usize> {
    let sectors = len >> 9;
    if sectors == 0 {
        return None;
    }
    let ddir = usize::from(write);
    let b = ddir + 2 * sectors.ilog2() as usize;
    Some(if b >= BUCKETS { ddir + BUCKETS - 2 } else { b })
}

#[derive(Clone, Copy, Debug, Default)]
struct Mean {
    mean_ns: f64,
    samples: u64,
}

impl Mean {
    #[inline]
    fn add(&mut self, ns: u64) {
        self.samples += 1;
        // A preempted request can take milliseconds on a busy machine; clamping
        // it keeps the nap tied to the device rather than to the scheduler.
        let ns = if self.samples > 16 {
            ns.min((4.0 * self.mean_ns) as u64)
        } else {
            ns
        };
        let w = if self.samples < 16 {
            1.0 / self.samples as f64
        } else {
            1.0 / 16.0
        };
        self.mean_ns += (ns as f64 - self.mean_ns) * w;
    }
}

/// Per-bucket completion-time means and the nap they give.
#[derive(Clone, Debug, Default)]
pub struct ClassicHybrid {
    buckets: [Mean; BUCKETS],
}

impl ClassicHybrid {
    /// One request's device time: submit to completion (the nap is timed from
    /// the submit, so time a request spent held before it is not counted).
    #[inline]
    pub fn observe(&mut self, len: u32, write: bool, clat_ns: u64) {
        if let Some(b) = bucket(len, write) {
            self.buckets[b].add(clat_ns);
        }
    }

    /// Half the bucket's mean, rounded up as the kernel does; 0 without samples.
    #[inline]
    pub fn nap_ns(&self, len: u32, write: bool) -> u64 {
        match bucket(len, write) {
            Some(b) if self.buckets[b].samples > 0 => (self.buckets[b].mean_ns as u64).div_ceil(2),
            _ => 0,
        }
    }

    /// When a request submitted at `submit_ns` should stop sleeping.
    #[inline]
    pub fn wake_ns(&self, submit_ns: u64, len: u32, write: bool) -> u64 {
        submit_ns.saturating_add(self.nap_ns(len, write))
    }

    /// The bucket's current mean, ns (for reports and tests).
    #[cfg(any(test, feature = "testing"))]
    pub fn mean_ns(&self, len: u32, write: bool) -> Option<u64> {
        let b = bucket(len, write)?;
        let m = self.buckets[b];
        (m.samples > 0).then_some(m.mean_ns as u64)
    }
}

impl Model for ClassicHybrid {
    const NEEDS: Needs = Needs::SleepAndPeek;

    fn start() -> ClassicHybrid {
        ClassicHybrid::default()
    }

    /// Nap until half the bucket's mean after the request's submit, then poll.
    #[inline]
    fn wait(
        &mut self,
        s: &mut CompletionStats,
        q: &mut dyn Queue,
        out: &mut [Completion],
        _min: u32,
        req: InFlight,
        deadline_ns: u64,
    ) -> DevResult<usize> {
        // The I/O may have completed inside the submit call (io-wq, inline
        // completion): never nap for something already done.
        let n = wait::peek(s, q, out)?;
        if n > 0 {
            return Ok(n);
        }
        let nap = self.nap_ns(req.len, req.write);
        wait::nap_from_submit(s, req.submit_ns, nap, 0, deadline_ns);
        wait::poll(s, q, out, deadline_ns)
    }

    /// Learns from submit-to-completion, the device time the kernel's rule
    /// averages, since its nap is timed from the submit (time a scheduler
    /// held the request must not lengthen the nap).
    #[inline]
    fn observe(&mut self, req: InFlight, _lat_ns: u64, clat_ns: u64, _inline: bool) {
        ClassicHybrid::observe(self, req.len, req.write, clat_ns);
    }

    /// Each size naps its own bucket's time: the earliest wake goes first.
    #[inline]
    fn wait_key(&self, req: InFlight) -> u64 {
        self.wake_ns(req.submit_ns, req.len, req.write)
    }

    fn warnings(s: &CompletionStats, line: &mut String) {
        wait::warn_if_never_polled(s, line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_the_kernel_formula() {
        assert_eq!(bucket(511, false), None);
        assert_eq!(bucket(512, false), Some(0));
        assert_eq!(bucket(512, true), Some(1));
        assert_eq!(bucket(4096, false), Some(6)); // 8 sectors: 2 * 3
        assert_eq!(bucket(4096, true), Some(7));
        assert_eq!(bucket(65536, false), Some(14)); // 128 sectors: 2 * 7
        // Larger requests share the last pair.
        assert_eq!(bucket(256 << 10, false), Some(14));
        assert_eq!(bucket(1 << 20, true), Some(15));
    }

    #[test]
    fn each_size_naps_half_its_own_mean() {
        let mut h = ClassicHybrid::default();
        assert_eq!(h.nap_ns(4096, false), 0, "no samples: no sleep");
        for _ in 0..50 {
            h.observe(4096, false, 70_000);
            h.observe(32768, false, 700_000);
        }
        assert_eq!(h.nap_ns(4096, false), 35_000);
        assert_eq!(h.nap_ns(32768, false), 350_000);
        // A write of the same size has its own bucket, still empty.
        assert_eq!(h.nap_ns(4096, true), 0);
        assert_eq!(h.wake_ns(1_000, 4096, false), 36_000);
    }

    #[test]
    fn an_outlier_moves_the_mean_by_at_most_its_clamped_share() {
        let mut h = ClassicHybrid::default();
        for _ in 0..32 {
            h.observe(4096, false, 10_000);
        }
        h.observe(4096, false, 10_000_000);
        // Clamped at 4x the mean, weighted 1/16: 10 us + 30 us / 16.
        let m = h.mean_ns(4096, false).unwrap();
        assert!((11_800..=11_900).contains(&m), "mean {m}");
    }
}
