//! The waits every model is built from: a peek, a poll loop, a sleep in the
//! backend's interrupt path, a nap timed from a request's submit. Each keeps
//! the common counts of [`CompletionStats`].

use super::CompletionStats;
use crate::device::{DevResult, Queue, Wait};
use crate::measure::clock;
use crate::request::Completion;

/// `t`, or the engine's deadline if that comes first (0: no deadline).
#[inline(always)]
pub(super) fn by_deadline(t: u64, deadline_ns: u64) -> u64 {
    if deadline_ns != 0 {
        t.min(deadline_ns)
    } else {
        t
    }
}

/// One look at the completion queue, counted only when it finds something
/// (a model that looks before it naps: never nap for something done).
#[inline]
pub(super) fn peek(
    s: &mut CompletionStats,
    q: &mut dyn Queue,
    out: &mut [Completion],
) -> DevResult<usize> {
    let n = q.reap(Wait::Peek, out)?;
    if n > 0 {
        s.polls_hit += 1;
    }
    Ok(n)
}

/// Spin on the completion queue until something completes or the deadline
/// (0: none) passes. Generic over the queue so that a queue held by its own
/// type has its `reap` inlined.
#[inline]
pub(super) fn poll<Q: Queue + ?Sized>(
    s: &mut CompletionStats,
    q: &mut Q,
    out: &mut [Completion],
    deadline_ns: u64,
) -> DevResult<usize> {
    let n = q.reap(Wait::Peek, out)?;
    if n > 0 {
        s.polls_hit += 1;
        return Ok(n);
    }
    // Only time the spin when there is a spin: a hit on the first peek costs
    // no clock read.
    let t0 = clock::now_ns();
    let mut empty = 1u64;
    let n = loop {
        let n = q.reap(Wait::Peek, out)?;
        if n > 0 {
            s.polls_hit += 1;
            break n;
        }
        empty += 1;
        // Check the deadline only every 64 spins: a clock read per spin would
        // double the cost of an empty poll.
        if deadline_ns != 0 && empty.is_multiple_of(64) && clock::now_ns() >= deadline_ns {
            break 0;
        }
        std::hint::spin_loop();
    };
    s.polls_empty += empty;
    s.spin_ns += clock::now_ns() - t0;
    Ok(n)
}

/// Sleep in the backend's interrupt path for at least `min` completions, or
/// until the deadline (0: none).
#[inline]
pub(super) fn sleep(
    s: &mut CompletionStats,
    q: &mut dyn Queue,
    out: &mut [Completion],
    min: u32,
    deadline_ns: u64,
) -> DevResult<usize> {
    // Completions may already be there (a fast device, or a batch): taking
    // them costs no sleep, as an interrupt handler finding work would.
    let n = q.reap(Wait::Peek, out)?;
    if n > 0 {
        return Ok(n);
    }
    let min = min.max(1);
    let t0 = clock::now_ns();
    let n = if deadline_ns != 0
        && q.caps().predicts_completion
        && q.device_time()
            .and_then(|h| h.next_completion_at())
            .is_none_or(|t| t > deadline_ns)
    {
        // The device will not finish before the engine must act: sleep on a
        // timer to the deadline instead of in the device's interrupt path.
        clock::sleep_until(deadline_ns);
        q.reap(Wait::Peek, out)?
    } else if deadline_ns != 0 {
        // Bounded: a paced stream falls due at the deadline.
        q.sleep_until(min, deadline_ns, out)?
    } else {
        q.reap(Wait::Sleep { min }, out)?
    };
    s.sleeps += 1;
    s.sleep_ns += clock::now_ns() - t0;
    Ok(n)
}

/// Sleep until `submit_ns + nap_ns` (hybrid's nap, timed from the submit),
/// and at least `floor_ns` from now when that is not 0 (a shorter sleep
/// would not give the CPU away), ending at the deadline if that comes first.
/// No sleep when neither is due. Returns whether it slept.
#[inline]
pub(super) fn nap_from_submit(
    s: &mut CompletionStats,
    submit_ns: u64,
    nap_ns: u64,
    floor_ns: u64,
    deadline_ns: u64,
) -> bool {
    let mut wake = submit_ns + nap_ns;
    if floor_ns > 0 {
        wake = wake.max(clock::now_ns() + floor_ns);
    }
    let wake = by_deadline(wake, deadline_ns);
    if (nap_ns > 0 || floor_ns > 0) && clock::now_ns() < wake {
        sleep_counted(s, clock::now_ns(), wake);
        return true;
    }
    false
}

/// Sleep from `t0_ns` (now) until `wake_ns` and count the sleep; returns how
/// long it lasted, ns. The one place a nap is timed and counted.
#[inline]
pub(super) fn sleep_counted(s: &mut CompletionStats, t0_ns: u64, wake_ns: u64) -> u64 {
    clock::sleep_until(wake_ns);
    let slept = clock::now_ns() - t0_ns;
    s.sleeps += 1;
    s.sleep_ns += slept;
    slept
}

/// The warning of a model that polls, when no completion was found by
/// polling.
pub(super) fn warn_if_never_polled(s: &CompletionStats, line: &mut String) {
    if s.completions > 0 && s.polls_hit == 0 {
        line.push_str(" — WARNING: asked to poll but no completion was found by polling");
    }
}
