//! The paper's effect, computed from observed counts: for the same work, a
//! faster device brought MySQL's threads ~3x more futex calls and ~28x more
//! context switches per second. For each server the study forms the same two
//! ratios, fast over slow, from the collector's counts, and says from them
//! whether the server shows the effect and, if not, what it waits in instead.

use super::bench::{Observed, Run};
use super::{Db, PUB_HDD_CTXT_PER_S, PUB_HDD_FUTEX_CALLS, PUB_SSD_CTXT_PER_S, PUB_SSD_FUTEX_CALLS};

/// Syscalls a task uses to wait for, or wake, another: the candidates for the
/// role futex plays in the paper's MySQL (threads + mutexes). PostgreSQL is
/// processes + semaphores and latches, so the data decides which one it is.
pub(super) const WAIT_WAKE_CALLS: [&str; 15] = [
    "futex",
    "semop",
    "semtimedop",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "kill",
    "tgkill",
    "nanosleep",
    "clock_nanosleep",
    "sched_yield",
];

/// The paper's futex ratio: 7.72 M vs 2.61 M calls for the same 160,000 requests.
pub(super) fn pub_futex_ratio() -> f64 {
    PUB_SSD_FUTEX_CALLS / PUB_HDD_FUTEX_CALLS
}

/// The paper's context-switch ratio: 201,448/s vs 7,174/s.
pub(super) fn pub_ctxt_ratio() -> f64 {
    PUB_SSD_CTXT_PER_S / PUB_HDD_CTXT_PER_S
}

pub(super) fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 && a.is_finite() && b.is_finite() {
        a / b
    } else {
        f64::NAN
    }
}

/// `n` per transaction of run `r`.
pub(super) fn per_txn(n: u64, r: &Run) -> f64 {
    if r.out.transactions > 0 {
        n as f64 / r.out.transactions as f64
    } else {
        f64::NAN
    }
}

/// One server's futex and context-switch figures, fast device against slow.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Effect {
    pub(super) db: Db,
    pub(super) futex_fast: f64,
    pub(super) futex_slow: f64,
    /// futex calls per transaction, fast / slow.
    pub(super) futex_ratio: f64,
    /// The server's own context switches (voluntary + involuntary) per second.
    pub(super) ctxt_fast: f64,
    pub(super) ctxt_slow: f64,
    pub(super) ctxt_ratio: f64,
    pub(super) ctxt_txn_fast: f64,
    pub(super) ctxt_txn_slow: f64,
    /// The wait/wake call the server made most on the fast device.
    pub(super) wait_call: Option<String>,
    /// futex's share of the server's wait/wake calls on the fast device, %.
    pub(super) futex_share_pct: f64,
}

impl Effect {
    /// The paper's effect: more futex calls for the same work on the faster device.
    pub(super) fn shows_futex(&self) -> bool {
        self.futex_ratio > 1.0
    }
    pub(super) fn shows_ctxt(&self) -> bool {
        self.ctxt_ratio > 1.0
    }
}

/// The most frequent wait/wake call of `o` and its count.
pub(super) fn top_wait_call(o: &Observed) -> Option<(&'static str, u64)> {
    WAIT_WAKE_CALLS
        .iter()
        .map(|n| (*n, o.calls(n)))
        .filter(|(_, c)| *c > 0)
        .max_by_key(|(_, c)| *c)
}

/// The effect from two observed runs; `None` when either run was not observed.
pub(super) fn effect(db: Db, fast: &Run, slow: &Run) -> Option<Effect> {
    let (fo, so) = (fast.obs.as_ref()?, slow.obs.as_ref()?);
    let futex_fast = per_txn(fo.calls("futex"), fast);
    let futex_slow = per_txn(so.calls("futex"), slow);
    let ctxt_fast = fo.switches() as f64 / fast.secs;
    let ctxt_slow = so.switches() as f64 / slow.secs;
    let waits: u64 = WAIT_WAKE_CALLS.iter().map(|n| fo.calls(n)).sum();
    Some(Effect {
        db,
        futex_fast,
        futex_slow,
        futex_ratio: ratio(futex_fast, futex_slow),
        ctxt_fast,
        ctxt_slow,
        ctxt_ratio: ratio(ctxt_fast, ctxt_slow),
        ctxt_txn_fast: per_txn(fo.switches(), fast),
        ctxt_txn_slow: per_txn(so.switches(), slow),
        wait_call: top_wait_call(fo).map(|(n, _)| n.to_string()),
        futex_share_pct: if waits > 0 {
            100.0 * fo.calls("futex") as f64 / waits as f64
        } else {
            f64::NAN
        },
    })
}

/// Why a server's futex calls did not rise, from its numbers.
fn why_not(e: &Effect) -> String {
    let wc = e.wait_call.as_deref().unwrap_or("(none)");
    if wc != "futex" {
        format!(
            "its tasks wait and wake mostly in {wc}, not futex (futex is {:.0}% of its \
             wait/wake calls on the fast device)",
            e.futex_share_pct
        )
    } else {
        format!(
            "futex is its main wait/wake call ({:.0}% of them on the fast device), but per \
             transaction it made fewer on the fast device ({:.2}) than on the slow one ({:.2})",
            e.futex_share_pct, e.futex_fast, e.futex_slow
        )
    }
}

/// The verdict's sentences on which server shows the paper's effect and why
/// the other does not, all from `effects`' numbers.
pub(super) fn verdict(effects: &[Effect]) -> Vec<String> {
    let pf = pub_futex_ratio();
    let pc = pub_ctxt_ratio();
    let mut v = Vec::new();
    for e in effects {
        v.push(format!(
            "{} ({}): futex calls per transaction {:.2} on the fast device vs {:.2} on the slow \
             one ({:.2}x; paper {pf:.2}x); its context switches {:.0}/s vs {:.0}/s ({:.1}x; \
             paper {pc:.1}x), {:.1} vs {:.1} per transaction; its most frequent wait/wake call \
             is {}.",
            e.db.name(),
            e.db.model(),
            e.futex_fast,
            e.futex_slow,
            e.futex_ratio,
            e.ctxt_fast,
            e.ctxt_slow,
            e.ctxt_ratio,
            e.ctxt_txn_fast,
            e.ctxt_txn_slow,
            e.wait_call.as_deref().unwrap_or("(none seen)")
        ));
    }
    let shows: Vec<&Effect> = effects.iter().filter(|e| e.shows_futex()).collect();
    let not: Vec<&Effect> = effects.iter().filter(|e| !e.shows_futex()).collect();
    let ctxt = |e: &Effect| {
        if e.shows_ctxt() {
            format!(
                "and its context switches per second rose {:.1}x with it",
                e.ctxt_ratio
            )
        } else {
            format!(
                "though its context switches per second did not rise ({:.2}x)",
                e.ctxt_ratio
            )
        }
    };
    for e in &shows {
        v.push(format!(
            "{} shows the paper's effect: for the same work it made {:.2}x the futex calls on \
             the faster device (paper {pf:.2}x), {}.",
            e.db.name(),
            e.futex_ratio,
            ctxt(e)
        ));
    }
    for e in &not {
        v.push(format!(
            "{} does not show the paper's futex effect ({:.2}x futex calls per transaction, \
             fast over slow; paper {pf:.2}x): {}.",
            e.db.name(),
            e.futex_ratio,
            why_not(e)
        ));
    }
    if effects.is_empty() {
        v.push(
            "No server was observed on both devices, so the paper's fast/slow futex and \
             context-switch ratios cannot be formed (see skipped)."
                .into(),
        );
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::observe::bench::recorded::run;

    #[test]
    fn ratios_come_from_the_observed_counts() {
        // Fast: 4000 txns in 4 s, 36000 futex, 60000+4000 switches.
        // Slow: 400 txns in 4 s, 1200 futex, 7000+200 switches.
        let fast = run(
            4000,
            4.0,
            &[("futex", 36_000), ("poll", 2000)],
            60_000,
            4000,
        );
        let slow = run(400, 4.0, &[("futex", 1200), ("poll", 300)], 7000, 200);
        let e = effect(Db::Mariadb, &fast, &slow).unwrap();
        assert_eq!(e.futex_fast, 9.0);
        assert_eq!(e.futex_slow, 3.0);
        assert_eq!(e.futex_ratio, 3.0);
        assert_eq!(e.ctxt_fast, 16_000.0);
        assert_eq!(e.ctxt_slow, 1800.0);
        assert!((e.ctxt_ratio - 16_000.0 / 1800.0).abs() < 1e-12);
        assert_eq!(e.ctxt_txn_fast, 16.0);
        assert_eq!(e.ctxt_txn_slow, 18.0);
        assert_eq!(e.wait_call.as_deref(), Some("futex"));
        assert!((e.futex_share_pct - 100.0 * 36_000.0 / 38_000.0).abs() < 1e-9);
        assert!(e.shows_futex() && e.shows_ctxt());
    }

    #[test]
    fn verdict_claims_the_effect_only_where_futex_rose() {
        // Recorded shape of the two servers: MariaDB's futex per transaction rose,
        // PostgreSQL's fell and its waits are epoll_wait.
        let m = effect(
            Db::Mariadb,
            &run(4000, 4.0, &[("futex", 36_000)], 60_000, 4000),
            &run(400, 4.0, &[("futex", 1200)], 7000, 200),
        )
        .unwrap();
        let p = effect(
            Db::Postgres,
            &run(
                4004,
                4.0,
                &[("epoll_wait", 40_783), ("futex", 5214)],
                43_274,
                4112,
            ),
            &run(382, 4.0, &[("epoll_wait", 5148), ("futex", 781)], 6279, 259),
        )
        .unwrap();
        assert!(p.futex_ratio < 1.0, "{p:?}");
        let v = verdict(&[m.clone(), p.clone()]).join("\n");
        assert!(v.contains("MariaDB shows the paper's effect"), "{v}");
        assert!(v.contains("PostgreSQL does not show"), "{v}");
        assert!(v.contains("mostly in epoll_wait, not futex"), "{v}");
        assert!(!v.contains("PostgreSQL shows"), "{v}");

        // The same words turn when the counts turn: a threaded server whose futex
        // calls per transaction fell is not said to show the effect.
        let m_flat = effect(
            Db::Mariadb,
            &run(4000, 4.0, &[("futex", 8000)], 60_000, 4000),
            &run(400, 4.0, &[("futex", 1200)], 7000, 200),
        )
        .unwrap();
        assert!(!m_flat.shows_futex());
        let v = verdict(&[m_flat, p]).join("\n");
        assert!(!v.contains("shows the paper's effect"), "{v}");
        assert!(v.contains("MariaDB does not show"), "{v}");
        assert!(v.contains("futex is its main wait/wake call"), "{v}");
    }

    #[test]
    fn an_unobserved_run_has_no_effect() {
        let mut fast = run(10, 1.0, &[("futex", 1)], 1, 1);
        let slow = run(10, 1.0, &[("futex", 1)], 1, 1);
        fast.obs = None;
        assert!(effect(Db::Mariadb, &fast, &slow).is_none());
        assert!(verdict(&[]).join(" ").contains("cannot be formed"));
    }
}
