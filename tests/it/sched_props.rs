//! Invariants of the schedulers over random arrival, dispatch, completion and
//! time sequences, checked against an independent model of the rules
//! (docs/scheduler.md): which request goes next, which cap applies, when a
//! refusal is justified, and that everything drains once high-priority load stops.

use std::collections::HashSet;
use std::time::Duration;

use iolab::job::spec::{LaqParams, SchedKind};
use iolab::request::Class;
use iolab::sched::{SchedReq, Scheduler};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Step {
    Arrive(Class, u32),
    DispatchAll,
    Complete(prop::sample::Index),
    Advance(u64),
}

fn class() -> impl Strategy<Value = Class> {
    prop::sample::select(Class::ALL.to_vec())
}

fn bytes() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32),
        Just(4096),
        Just(64 << 10),
        Just(256 << 10),
        1u32..3_000_000,
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (class(), bytes()).prop_map(|(c, b)| Step::Arrive(c, b)),
        3 => Just(Step::DispatchAll),
        3 => any::<prop::sample::Index>().prop_map(Step::Complete),
        1 => (0u64..3_000_000).prop_map(Step::Advance),
    ]
}

fn kind() -> impl Strategy<Value = SchedKind> {
    prop_oneof![
        Just(SchedKind::Noop),
        Just(SchedKind::Prio),
        Just(SchedKind::Laq)
    ]
}

fn laq_params() -> impl Strategy<Value = LaqParams> {
    (4096u64..4 << 20, 0.0f64..=1.0, 0u64..2_000_000).prop_map(|(max, frac, t)| LaqParams {
        ois_max: max,
        ois_min: ((max as f64 * frac) as u64).clamp(1, max),
        t_wait: Duration::from_nanos(t),
    })
}

/// Priority group: read and syncwrite share the first, served FIFO.
fn group(c: Class) -> u8 {
    match c {
        Class::Read | Class::SyncWrite => 0,
        Class::Readahead => 1,
        Class::AsyncWrite => 2,
    }
}

/// The rules, written independently of the implementation.
struct Model {
    kind: SchedKind,
    p: LaqParams,
    now: u64,
    last_high: Option<u64>,
    /// In arrival order.
    pending: Vec<SchedReq>,
    inflight: Vec<SchedReq>,
    dispatched: HashSet<u32>,
    enqueued: u32,
    first_arrival: Option<u64>,
}

impl Model {
    fn ois(&self) -> u64 {
        self.inflight.iter().map(|r| r.bytes as u64).sum()
    }

    fn cap(&self, c: Class) -> u64 {
        if self.kind != SchedKind::Laq {
            return u64::MAX;
        }
        let t_wait = self.p.t_wait.as_nanos() as u64;
        let in_window = self
            .last_high
            .is_some_and(|h| t_wait > 0 && self.now < h + t_wait);
        if c.is_high() || !in_window {
            self.p.ois_max
        } else {
            self.p.ois_min
        }
    }

    /// Index in `pending` of the request the policy sends next, caps aside.
    fn candidate(&self) -> Option<usize> {
        match self.kind {
            SchedKind::Noop => (!self.pending.is_empty()).then_some(0),
            _ => {
                let g = self.pending.iter().map(|r| group(r.class)).min()?;
                self.pending.iter().position(|r| group(r.class) == g)
            }
        }
    }

    fn arrive(&mut self, s: &mut Scheduler, class: Class, bytes: u32) {
        let r = SchedReq {
            slot: self.enqueued,
            class,
            bytes,
            stream: group(class) as u16,
            arrival_ns: self.now,
        };
        s.enqueue(r, self.now)
            .expect("capacity covers every arrival");
        self.enqueued += 1;
        self.first_arrival.get_or_insert(self.now);
        self.pending.push(r);
        if class.is_high() {
            self.last_high = Some(self.now);
        }
    }

    /// Dispatch until the scheduler refuses, checking every decision.
    fn dispatch_all(&mut self, s: &mut Scheduler) -> Result<usize, TestCaseError> {
        let mut n = 0;
        loop {
            let ois_before = self.ois();
            let cand = self.candidate();
            match s.dispatch(self.now) {
                Some(r) => {
                    let i = cand.expect("dispatched with nothing pending");
                    let want = self.pending.remove(i);
                    prop_assert_eq!(r, want, "policy order (noop FIFO / class priority)");
                    if self.kind != SchedKind::Noop {
                        prop_assert!(
                            !self.pending.iter().any(|p| group(p.class) < group(r.class)),
                            "low class dispatched while a higher one waits"
                        );
                    }
                    let cap = self.cap(r.class);
                    let ois_after = ois_before + r.bytes as u64;
                    prop_assert!(
                        ois_after <= cap || ois_before == 0,
                        "OIS {} above cap {} (before {})",
                        ois_after,
                        cap,
                        ois_before
                    );
                    prop_assert!(self.dispatched.insert(r.slot), "slot dispatched twice");
                    self.inflight.push(r);
                    n += 1;
                }
                None => {
                    if let Some(i) = cand {
                        let head = self.pending[i];
                        prop_assert!(ois_before > 0, "refused with OIS 0: deadlock ({:?})", head);
                        prop_assert!(
                            ois_before + head.bytes as u64 > self.cap(head.class),
                            "refused a request that fits its cap: {:?}, OIS {}",
                            head,
                            ois_before
                        );
                    }
                    return Ok(n);
                }
            }
            prop_assert_eq!(s.ois(), self.ois());
        }
    }

    fn complete(&mut self, s: &mut Scheduler, i: usize) {
        let r = self.inflight.swap_remove(i);
        s.complete(r.class, r.bytes, self.now);
    }
}

fn run(kind: SchedKind, p: LaqParams, steps: Vec<Step>) -> Result<(), TestCaseError> {
    let mut s = Scheduler::new(kind, p, steps.len() + 1).unwrap();
    let mut m = Model {
        kind,
        p,
        now: 1_000,
        last_high: None,
        pending: Vec::new(),
        inflight: Vec::new(),
        dispatched: HashSet::new(),
        enqueued: 0,
        first_arrival: None,
    };
    for st in steps {
        match st {
            Step::Arrive(c, b) => m.arrive(&mut s, c, b),
            Step::DispatchAll => {
                m.dispatch_all(&mut s)?;
            }
            Step::Complete(ix) => {
                if !m.inflight.is_empty() {
                    let i = ix.index(m.inflight.len());
                    m.complete(&mut s, i);
                }
            }
            Step::Advance(dt) => m.now += dt,
        }
        prop_assert_eq!(s.ois(), m.ois());
        prop_assert_eq!(s.pending(), m.pending.len());
        if let Some(t) = s.next_event_ns() {
            prop_assert_eq!(kind, SchedKind::Laq);
            prop_assert_eq!(Some(t), m.last_high.map(|h| h + p.t_wait.as_nanos() as u64));
        }
    }

    // High-priority load stops. Once its window has passed, everything left
    // (low classes included) drains: each round dispatches what the caps allow,
    // then the device completes everything, so OIS returns to 0 and at least one
    // request goes per round.
    m.now = m
        .last_high
        .map_or(m.now, |h| h + p.t_wait.as_nanos() as u64)
        .max(m.now);
    let left = m.pending.len();
    let mut rounds = 0;
    while !m.pending.is_empty() || !m.inflight.is_empty() {
        rounds += 1;
        prop_assert!(
            rounds <= left + 2,
            "starved: {} left after {rounds} rounds",
            m.pending.len()
        );
        m.dispatch_all(&mut s)?;
        while !m.inflight.is_empty() {
            m.complete(&mut s, 0);
        }
        m.now += 1;
    }

    // Conservation.
    prop_assert_eq!(m.dispatched.len(), m.enqueued as usize);
    prop_assert_eq!(s.ois(), 0);
    prop_assert_eq!(s.pending(), 0);
    let st = s.stats(m.now);
    prop_assert_eq!(st.dispatched.total(), m.enqueued as u64);
    prop_assert_eq!(st.completed.total(), m.enqueued as u64);
    prop_assert_eq!(st.unmatched_completions, 0);
    prop_assert_eq!(st.rejected_full, 0);
    if kind == SchedKind::Laq {
        prop_assert_eq!(
            st.time_at_ois_min_ns + st.time_at_ois_max_ns,
            m.first_arrival.map_or(0, |f| m.now - f),
            "time split covers the run"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn scheduler_invariants(kind in kind(), p in laq_params(), steps in prop::collection::vec(step(), 1..200)) {
        run(kind, p, steps)?;
    }

    /// Dense high-priority traffic with small caps: the window is open most of
    /// the time, the case where starvation or deadlock would show.
    #[test]
    fn laq_under_tight_caps(
        max in 4096u64..300_000,
        steps in prop::collection::vec(step(), 50..300),
    ) {
        let p = LaqParams { ois_max: max, ois_min: (max / 2).max(1), t_wait: Duration::from_millis(1) };
        run(SchedKind::Laq, p, steps)?;
    }
}
