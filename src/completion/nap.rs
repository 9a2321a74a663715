//! The sleep-then-poll policies' nap (hybrid-uring, pas, dpas): sleep for a
//! duration the policy chose, relative to the start of the wait, then poll;
//! whether the first poll found the completion tells the policy whether the
//! sleep was too long. Their shared counters and report line.

use super::CompletionStats;
use super::wait::{self, by_deadline};
use crate::device::{DevResult, Queue};
use crate::measure::clock;
use crate::request::Completion;

/// How the policies' naps ended (JSON keys as named).
#[derive(
    schemars::JsonSchema,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct Counters {
    /// Sleeps after which the completion was already there on the first
    /// poll: the thread woke late.
    pub oversleeps: u64,
    /// Sleeps after which the thread still had to poll: it woke early.
    pub undersleeps: u64,
    /// The policy's last chosen sleep, ns.
    pub last_nap_ns: u64,
}

merge_fields!(Counters {
    add: oversleeps, undersleeps;
    max: last_nap_ns;
});

/// What a policy's sleep came to.
pub(super) enum Nap {
    /// Completions were already there: no sleep.
    Ready(usize),
    /// Slept this long, ns (0: no sleep was due).
    Slept(u64),
}

/// Sleep `nap_ns` from now (ending at the deadline if that comes first),
/// unless completions are already there.
#[inline]
pub(super) fn nap(
    s: &mut CompletionStats,
    q: &mut dyn Queue,
    out: &mut [Completion],
    nap_ns: u64,
    deadline_ns: u64,
) -> DevResult<Nap> {
    let n = wait::peek(s, q, out)?;
    if n > 0 {
        return Ok(Nap::Ready(n));
    }
    s.nap.last_nap_ns = nap_ns;
    if nap_ns == 0 {
        return Ok(Nap::Slept(0));
    }
    let t0 = clock::now_ns();
    Ok(Nap::Slept(wait::sleep_counted(
        s,
        t0,
        by_deadline(t0 + nap_ns, deadline_ns),
    )))
}

/// Poll after a nap; also says whether the first peek found a completion
/// (the sleep overslept) and counts the outcome if there was a sleep.
#[inline]
pub(super) fn poll_after_nap(
    s: &mut CompletionStats,
    q: &mut dyn Queue,
    out: &mut [Completion],
    slept_ns: u64,
    deadline_ns: u64,
) -> DevResult<(usize, bool)> {
    let empty_before = s.polls_empty;
    let n = wait::poll(s, q, out, deadline_ns)?;
    let overslept = s.polls_empty == empty_before;
    if n > 0 && slept_ns > 0 {
        if overslept {
            s.nap.oversleeps += 1;
        } else {
            s.nap.undersleeps += 1;
        }
    }
    Ok((n, overslept))
}

/// What a sleep-then-poll policy did, in one line.
pub(super) fn policy_line(name: &str, s: &CompletionStats) -> String {
    format!(
        "{}: {} sleeps ({} woke late: completion already there, {} woke early: polled on), {} polls hit, {} empty polls, last sleep {:.1} us",
        name,
        s.sleeps,
        s.nap.oversleeps,
        s.nap.undersleeps,
        s.polls_hit,
        s.polls_empty,
        s.nap.last_nap_ns as f64 / 1e3
    )
}
