//! `completion=pas`: PAS, the sleep-duration rule of DPAS (FAST '26), run in
//! user space with iolab's own sleeps.
//!
//! Source: the paper's artifact, repository `DongDongJu/DPAS_FAST26`,
//! `kernel/block/blk-mq.c`: `blk_mq_poll_pas_nsecs` (the rule),
//! `blk_mq_poll_classic` (the feedback), `blk_mq_init_allocated_queue` (the
//! constants). The rule, as we read it there:
//!
//! * per size class, a sleep duration `dur` (relative to the moment the waiter
//!   starts waiting), a multiplier `adj`, and steps `up` and `dn`;
//! * each sleep ends in one of two outcomes: **overslept** (the completion was
//!   already there on the first poll after waking) or **underslept** (the
//!   waiter had to poll at least once more);
//! * only the first completion that used a given `dur` feeds back (a version
//!   number, `dur_cnt` in the artifact), and the next request recomputes `dur`
//!   from the last two outcomes (penultimate, last):
//!   - over, over: `adj -= dn` (keep shrinking, faster);
//!   - over, under: `adj = 1 + up` (the target was crossed: grow gently);
//!   - under, over: `adj = 1 - dn` (crossed the other way: shrink);
//!   - under, under: `adj += up` (keep growing, faster);
//!
//!   then `adj <= 0` resets to 1, `dur *= adj`, and `dur` is floored at
//!   `d_init` (a floor hit is what DPAS counts as a timer failure);
//! * constants (artifact defaults): `d_init` = 100 ns (also the first
//!   duration), `up` = 0.01, `dn` = 0.1; the first outcome pair is
//!   (over, under).
//!
//! With adaptive steps (what DPAS uses; the artifact's `pas_adaptive_enabled`
//! = 1, "DPAS1"), after each update: when the two outcomes agree, `dn` grows by
//! 5% (capped at 0.1) and `up = dn / 10`; when they differ, `up` shrinks by 10%
//! (floored at 0.001) and `dn = up * 10`.
//!
//! Ours: the artifact keeps one table per CPU and per (direction, log2 sectors)
//! bucket; we keep one per worker thread and log2 request size (the completer
//! does not see the direction). Arithmetic is in `f64` rather than the
//! artifact's fixed point (1e6 = 1.0).

use super::nap::{self, Nap};
use super::{CompletionStats, InFlight, Model, Needs, wait};
use crate::device::{DevResult, Queue};
use crate::job::CompletionModel;
use crate::request::Completion;

/// Size classes: log2(len) from 2^9 (512 B) to 2^24 (16 MiB), as `adaptive`.
const MIN_SHIFT: u32 = 9;
const CLASSES: usize = 16;

/// First duration and floor, ns (artifact `q->d_init`).
pub const D_INIT_NS: f64 = 100.0;
/// Initial growth step (artifact `q->up_init` = 0.01).
pub const UP_INIT: f64 = 0.01;
/// Initial shrink step (artifact `q->dn_init` = 0.1).
pub const DN_INIT: f64 = 0.1;
/// Adaptive steps: growth of `dn` when outcomes agree (`q->heat_up`).
const HEAT_UP: f64 = 0.05;
/// Adaptive steps: decay of `up` when outcomes differ (`q->cool_dn`).
const COOL_DN: f64 = 0.1;
/// Adaptive steps: bounds of `dn` (`q->min_dn`, `q->max_dn`).
const MIN_DN: f64 = 0.01;
const MAX_DN: f64 = 0.1;
/// Adaptive steps: `dn / up` (`q->updn_ratio`).
const UPDN_RATIO: f64 = 10.0;

fn class_of(len: u32) -> usize {
    let shift = 31 - len.max(1).leading_zeros();
    (shift.saturating_sub(MIN_SHIFT) as usize).min(CLASSES - 1)
}

/// One size class's PAS state.
#[derive(Clone, Copy, Debug)]
struct Class {
    dur_ns: f64,
    adj: f64,
    up: f64,
    dn: f64,
    /// Outcome of the penultimate and the last fed-back sleep (true = underslept).
    pnlt_under: bool,
    last_under: bool,
    /// Version of `dur` (bumped at each update) and the last version fed back.
    version: u32,
    checked: u32,
    /// A new outcome arrived: the next request recomputes `dur`.
    update: bool,
}

impl Class {
    const fn new() -> Class {
        Class {
            dur_ns: D_INIT_NS,
            adj: 1.0,
            up: UP_INIT,
            dn: DN_INIT,
            pnlt_under: false,
            last_under: true,
            version: 1,
            checked: 0,
            update: false,
        }
    }
}

/// What PAS decided for one request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PasNap {
    /// Sleep before polling, ns, relative to the start of the wait.
    pub dur_ns: u64,
    /// Version of the duration, to hand back with the outcome.
    pub version: u32,
    /// The update hit the `d_init` floor (DPAS: a timer failure).
    pub floor_hit: bool,
}

/// PAS state for all size classes (fixed size: no allocation per request).
#[derive(Clone, Debug)]
pub struct Pas {
    classes: [Class; CLASSES],
    adaptive_steps: bool,
}

impl Pas {
    /// `adaptive_steps`: DPAS's self-tuning `up`/`dn` (false = plain PAS).
    pub fn new(adaptive_steps: bool) -> Pas {
        Pas {
            classes: [Class::new(); CLASSES],
            adaptive_steps,
        }
    }

    /// The sleep for the next request of `len` bytes, recomputed first if an
    /// outcome arrived since the last update.
    pub fn nap(&mut self, len: u32) -> PasNap {
        let adaptive = self.adaptive_steps;
        let c = &mut self.classes[class_of(len)];
        let mut floor_hit = false;
        if c.update {
            c.update = false;
            let agree = c.pnlt_under == c.last_under;
            c.adj = match (c.pnlt_under, c.last_under) {
                (false, false) => c.adj - c.dn,
                (false, true) => 1.0 + c.up,
                (true, false) => 1.0 - c.dn,
                (true, true) => c.adj + c.up,
            };
            if c.adj <= 0.0 {
                c.adj = 1.0;
            }
            c.dur_ns *= c.adj;
            if c.dur_ns < D_INIT_NS {
                c.dur_ns = D_INIT_NS;
                floor_hit = true;
            }
            c.version = c.version.wrapping_add(1);
            if adaptive {
                if agree {
                    c.dn = (c.dn * (1.0 + HEAT_UP)).min(MAX_DN);
                    c.up = c.dn / UPDN_RATIO;
                } else {
                    c.up = (c.up * (1.0 - COOL_DN)).max(MIN_DN / UPDN_RATIO);
                    c.dn = c.up * UPDN_RATIO;
                }
            }
        }
        PasNap {
            dur_ns: c.dur_ns as u64,
            version: c.version,
            floor_hit,
        }
    }

    /// The outcome of a sleep of version `version`: `overslept` when the
    /// completion was found on the first poll after waking. Only the first
    /// outcome per version counts; returns whether this one did.
    pub fn feedback(&mut self, len: u32, version: u32, overslept: bool) -> bool {
        let c = &mut self.classes[class_of(len)];
        if version != c.version || c.checked == version {
            return false;
        }
        c.checked = version;
        c.pnlt_under = c.last_under;
        c.last_under = !overslept;
        c.update = true;
        true
    }

    /// Recompute the class's duration at its next request even without a new
    /// outcome (DPAS does this when it returns from classic polling to PAS).
    pub fn request_update(&mut self, len: u32) {
        self.classes[class_of(len)].update = true;
    }

    /// Current duration of the class of `len`, ns.
    #[cfg(any(test, feature = "testing"))]
    pub fn dur_ns(&self, len: u32) -> u64 {
        self.classes[class_of(len)].dur_ns as u64
    }

    /// Current (up, dn) steps of the class of `len`.
    #[cfg(any(test, feature = "testing"))]
    pub fn steps(&self, len: u32) -> (f64, f64) {
        let c = &self.classes[class_of(len)];
        (c.up, c.dn)
    }
}

impl Pas {
    /// The rest of a wait after PAS's sleep `p` came to `napped`: poll if it
    /// slept, and feed the outcome back.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn after_nap(
        &mut self,
        s: &mut CompletionStats,
        q: &mut dyn Queue,
        out: &mut [Completion],
        len: u32,
        p: PasNap,
        napped: Nap,
        deadline_ns: u64,
    ) -> DevResult<usize> {
        match napped {
            // Done before the sleep began: as the artifact, a sleep this long
            // would have overslept.
            Nap::Ready(n) => {
                self.feedback(len, p.version, true);
                Ok(n)
            }
            Nap::Slept(slept) => {
                let (n, overslept) = nap::poll_after_nap(s, q, out, slept, deadline_ns)?;
                if n > 0 && slept > 0 {
                    self.feedback(len, p.version, overslept);
                }
                Ok(n)
            }
        }
    }
}

impl Model for Pas {
    const NEEDS: Needs = Needs::SleepAndPeek;

    /// Plain PAS: fixed steps.
    fn start() -> Pas {
        Pas::new(false)
    }

    /// PAS's sleep for the request's size class, then poll.
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
        let p = self.nap(req.len);
        let napped = nap::nap(s, q, out, p.dur_ns, deadline_ns)?;
        self.after_nap(s, q, out, req.len, p, napped, deadline_ns)
    }

    fn warnings(s: &CompletionStats, line: &mut String) {
        wait::warn_if_never_polled(s, line);
    }

    fn policy_line(s: &CompletionStats) -> Option<String> {
        Some(nap::policy_line(CompletionModel::Pas.name(), s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed one outcome and return the next duration.
    fn step(p: &mut Pas, overslept: bool) -> u64 {
        let v = p.nap(4096).version;
        assert!(p.feedback(4096, v, overslept));
        p.nap(4096).dur_ns
    }

    #[test]
    fn starts_at_d_init_and_grows_while_it_wakes_early() {
        let mut p = Pas::new(false);
        assert_eq!(p.nap(4096).dur_ns, 100);
        // The first outcome shifts the initial (over, under) pair to
        // (under, under): adj = 1 + up.
        let d1 = step(&mut p, false);
        assert_eq!(d1, 101);
        // (under, under) repeatedly: adj grows by `up` each time.
        let mut prev = d1;
        for _ in 0..50 {
            let d = step(&mut p, false);
            assert!(
                d > prev,
                "an early wake lengthens the next sleep: {d} <= {prev}"
            );
            prev = d;
        }
    }

    #[test]
    fn an_oversleep_shortens_the_next_sleep() {
        let mut p = Pas::new(false);
        for _ in 0..80 {
            step(&mut p, false);
        }
        let before = p.dur_ns(4096);
        // (under, over): adj = 1 - dn = 0.9.
        let after = step(&mut p, true);
        let want = before as f64 * 0.9;
        assert!((after as f64 - want).abs() <= 1.0, "{before} -> {after}");
        // (over, over): adj = 0.9 - 0.1 = 0.8: shrinking accelerates.
        let again = step(&mut p, true);
        assert!(again < after);
        // (over, under): adj = 1 + up: grows gently again.
        let up = step(&mut p, false);
        assert!(up > again && (up as f64) < again as f64 * 1.02);
    }

    #[test]
    fn repeated_oversleeps_hit_the_floor() {
        let mut p = Pas::new(false);
        let v = p.nap(4096).version;
        p.feedback(4096, v, true);
        // (under, over) from the initial pair -> shrink below 100 ns: floor.
        let n = p.nap(4096);
        assert!(n.floor_hit);
        assert_eq!(n.dur_ns, 100);
    }

    #[test]
    fn only_the_first_outcome_of_a_version_counts() {
        let mut p = Pas::new(false);
        let v = p.nap(4096).version;
        assert!(p.feedback(4096, v, false));
        assert!(
            !p.feedback(4096, v, true),
            "a second outcome of v is ignored"
        );
        let n = p.nap(4096);
        assert_ne!(n.version, v);
        assert!(!p.feedback(4096, v, true), "a stale version is ignored");
    }

    #[test]
    fn size_classes_are_separate() {
        let mut p = Pas::new(false);
        for _ in 0..30 {
            step(&mut p, false);
        }
        assert!(p.dur_ns(4096) > 100);
        assert_eq!(p.nap(128 << 10).dur_ns, 100);
    }

    #[test]
    fn adaptive_steps_heat_up_and_cool_down() {
        let mut p = Pas::new(true);
        // (under, under) agree: dn heats by 5% but is capped at 0.1.
        step(&mut p, false);
        assert_eq!(p.steps(4096), (0.01, 0.1));
        // (under, over) differ: up cools by 10%, dn = 10 up.
        step(&mut p, true);
        let (up, dn) = p.steps(4096);
        assert!(
            (up - 0.009).abs() < 1e-12 && (dn - 0.09).abs() < 1e-12,
            "{up} {dn}"
        );
        // (over, under) differ again, then (under, under) agree: dn heats by 5%.
        step(&mut p, false);
        let (_, dn1) = p.steps(4096);
        step(&mut p, false);
        let (up2, dn2) = p.steps(4096);
        assert!((dn2 - dn1 * 1.05).abs() < 1e-12, "{dn1} -> {dn2}");
        assert!((up2 - dn2 / 10.0).abs() < 1e-12);
        // Plain PAS keeps its steps.
        let mut q = Pas::new(false);
        step(&mut q, false);
        step(&mut q, true);
        assert_eq!(q.steps(4096), (UP_INIT, DN_INIT));
    }
}
