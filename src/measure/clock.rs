//! The engine clock: CLOCK_MONOTONIC in nanoseconds, read through the vDSO.
//!
//! Every timestamp in iolab (request issue, submit, device start/finish on the null
//! device, completion seen) is on this clock, so differences between stages are
//! exact. `self_check` measures what one reading costs so reports can state it.

/// Nanoseconds on CLOCK_MONOTONIC.
#[inline(always)]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Cost of one clock reading, measured.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct ClockCheck {
    /// Median over batches of the cost of one `now_ns()` call, in ns.
    pub cost_ns: f64,
    /// Smallest non-zero step seen between consecutive readings, in ns.
    pub resolution_ns: u64,
    pub source: &'static str,
}

/// Measure the clock: 9 batches of 20k readings; the median batch gives the cost.
pub fn self_check() -> ClockCheck {
    const N: u64 = 20_000;
    let mut per_call = Vec::with_capacity(9);
    let mut resolution = u64::MAX;
    for _ in 0..9 {
        let start = now_ns();
        let mut prev = start;
        for _ in 0..N {
            let t = now_ns();
            if t > prev {
                resolution = resolution.min(t - prev);
            }
            prev = t;
        }
        per_call.push((prev - start) as f64 / N as f64);
    }
    per_call.sort_by(|a, b| a.total_cmp(b));
    ClockCheck {
        cost_ns: per_call[per_call.len() / 2],
        resolution_ns: if resolution == u64::MAX { 0 } else { resolution },
        source: "clock_gettime(CLOCK_MONOTONIC)",
    }
}

/// Sleep until the absolute engine-clock time `deadline_ns` (hrtimer based).
pub fn sleep_until(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: valid timespec; EINTR simply returns early, which callers tolerate
    // because they re-check the clock.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

/// Make hrtimer sleeps of this thread expire on time: the default 50 us slack
/// would swamp microsecond-scale device latencies.
pub fn set_thread_timer_slack_ns(ns: u64) {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic_and_cheap_enough_to_report() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a);
        let c = self_check();
        assert!(c.cost_ns > 0.0, "a clock read cannot be free: {c:?}");
        assert!(c.resolution_ns > 0);
    }

    #[test]
    fn sleep_until_waits_at_least_until_deadline() {
        set_thread_timer_slack_ns(1);
        let deadline = now_ns() + 200_000;
        sleep_until(deadline);
        assert!(now_ns() >= deadline);
    }
}
