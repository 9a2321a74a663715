//! `completion=hybrid-uring`: io_uring's hybrid IOPOLL rule (Linux 6.13,
//! `IORING_SETUP_HYBRID_IOPOLL`), run in user space with iolab's own sleeps.
//!
//! Source: Linux `io_uring/rw.c`, `io_hybrid_iopoll_delay` and
//! `io_uring_hybrid_poll`; patch series "io_uring: releasing CPU resources when
//! polling" (hexue, v9, 2024-11-01). The rule, as we read it there:
//!
//! * the ring keeps one number, `hybrid_poll_time`, the smallest "running time"
//!   seen so far: time from issue to the end of a poll pass, minus the time the
//!   request slept. It starts at "unknown" (`LLONG_MAX`);
//! * while it is unknown a request does not sleep at all (classic polling);
//! * otherwise each request sleeps once, for half of it, then polls;
//! * after polling, the observed running time replaces the stored one if it is
//!   smaller. It never grows again: the series' changelog (v6) says it keeps the
//!   minimum across drivers of different latencies on purpose.
//!
//! Ours differs only where user space must: the sleep is an hrtimer sleep of
//! this thread (`clock_nanosleep`, 1 ns slack) rather than the kernel's
//! `hrtimer_sleeper`, and the running time is sampled once per completion (when
//! the poll loop found it) rather than per kernel poll pass. The one-way
//! minimum is kept as published, so a device that slows down is napped for far
//! too short a time — that is part of what the study shows.

use super::nap::{self, Nap};
use super::{CompletionStats, InFlight, Model, Needs, wait};
use crate::device::{DevResult, Queue};
use crate::job::CompletionModel;
use crate::measure::clock;
use crate::request::Completion;

/// io_uring's hybrid IOPOLL state: one number per ring (per worker here).
#[derive(Clone, Copy, Debug)]
pub struct HybridUring {
    /// Smallest observed completion-minus-sleep time, ns; `u64::MAX` = none yet.
    min_runtime_ns: u64,
}

impl Default for HybridUring {
    fn default() -> Self {
        HybridUring {
            min_runtime_ns: u64::MAX,
        }
    }
}

impl HybridUring {
    /// The sleep before polling, relative to now: half the smallest running
    /// time, or 0 (poll at once) until one has been observed.
    #[inline]
    pub fn nap_ns(&self) -> u64 {
        if self.min_runtime_ns == u64::MAX {
            0
        } else {
            self.min_runtime_ns / 2
        }
    }

    /// One request completed `elapsed_ns` after issue, having asked for a sleep
    /// of `slept_ns` (the asked sleep, as the kernel subtracts: a late wakeup
    /// counts as running time): keep the smaller running time.
    #[inline]
    pub fn observe(&mut self, elapsed_ns: u64, slept_ns: u64) {
        let runtime = elapsed_ns.saturating_sub(slept_ns);
        self.min_runtime_ns = self.min_runtime_ns.min(runtime);
    }

    /// The stored running time (ns), `None` before the first observation.
    #[cfg(any(test, feature = "testing"))]
    pub fn min_runtime_ns(&self) -> Option<u64> {
        (self.min_runtime_ns != u64::MAX).then_some(self.min_runtime_ns)
    }
}

impl Model for HybridUring {
    const NEEDS: Needs = Needs::SleepAndPeek;

    fn start() -> HybridUring {
        HybridUring::default()
    }

    /// Sleep half the smallest running time from now, poll, and learn the
    /// request's running time.
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
        let (n, slept) = match nap::nap(s, q, out, self.nap_ns(), deadline_ns)? {
            Nap::Ready(n) => (n, 0),
            Nap::Slept(slept) => (
                nap::poll_after_nap(s, q, out, slept, deadline_ns)?.0,
                // The kernel subtracts the sleep it asked for, not the one it
                // got: a late wakeup counts as running time.
                if slept > 0 { self.nap_ns() } else { 0 },
            ),
        };
        if n > 0 && req.submit_ns != 0 {
            let elapsed = clock::now_ns().saturating_sub(req.submit_ns);
            HybridUring::observe(self, elapsed, slept);
        }
        Ok(n)
    }

    fn warnings(s: &CompletionStats, line: &mut String) {
        wait::warn_if_never_polled(s, line);
    }

    fn policy_line(s: &CompletionStats) -> Option<String> {
        Some(nap::policy_line(CompletionModel::HybridUring.name(), s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_until_it_has_seen_a_completion() {
        let h = HybridUring::default();
        assert_eq!(h.nap_ns(), 0);
        assert_eq!(h.min_runtime_ns(), None);
    }

    #[test]
    fn sleeps_half_the_smallest_runtime_and_never_grows() {
        let mut h = HybridUring::default();
        // No sleep: the whole 100 us is running time.
        h.observe(100_000, 0);
        assert_eq!(h.nap_ns(), 50_000);
        // Slept 50 us, completed at 90 us: 40 us of running time.
        h.observe(90_000, 50_000);
        assert_eq!(h.nap_ns(), 20_000);
        // A slower completion does not lengthen the sleep (one-way minimum).
        h.observe(500_000, 20_000);
        assert_eq!(h.nap_ns(), 20_000);
        // A sleep longer than the whole time counts as zero running time.
        h.observe(10_000, 20_000);
        assert_eq!(h.nap_ns(), 0);
    }
}
