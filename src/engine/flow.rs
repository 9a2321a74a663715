//! fio's flow control (`flow`, `flow_id`, `flow_sleep`): jobs sharing a flow
//! id keep their issued I/O counts in the ratio of their weights. A job whose
//! share of the flow's I/Os is above its share of the flow's weight holds its
//! next request for `flow_sleep` and tries again.
//!
//! Shared state is one [`Flow`] per flow id (two atomics: I/Os issued by every
//! job in the flow, and the weights of the jobs running in it), made before the
//! workers start. Per request a [`FlowGate`] does two relaxed loads and, when
//! the request goes, one relaxed add: no lock, no allocation, no system call.
//! A job joins its flow when its worker starts its loop and leaves it when its
//! stream ends, taking its count and weight with it (as fio does), so jobs that
//! start late (`startdelay`, `wait_for`) or end early hold back no one.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::job::JobSpec;
use crate::job::control::FlowSpec;

/// One flow id's shared counters.
#[derive(Debug)]
pub struct Flow {
    /// I/Os issued by the jobs in the flow, plus one (fio starts it at one, so
    /// the first job's share is never a division by zero).
    issued: AtomicU64,
    /// Sum of the weights of the jobs running in the flow.
    weight: AtomicU64,
}

/// The flows of one group, by id. Jobs of different stonewall groups never run
/// together, and a job leaving its flow takes its count with it, so a group's
/// flows are the run's.
#[derive(Debug, Default)]
pub struct Flows {
    flows: Vec<(u32, Arc<Flow>)>,
}

impl Flows {
    /// The gate of a job with `spec` (an open one when its weight is 0).
    pub fn gate(&mut self, spec: &FlowSpec) -> FlowGate {
        if spec.weight == 0 {
            return FlowGate::default();
        }
        let flow = match self.flows.iter().find(|f| f.0 == spec.id) {
            Some(f) => f.1.clone(),
            None => {
                let f = Arc::new(Flow {
                    issued: AtomicU64::new(1),
                    weight: AtomicU64::new(0),
                });
                self.flows.push((spec.id, f.clone()));
                f
            }
        };
        FlowGate {
            flow: Some(flow),
            weight: u64::from(spec.weight),
            own: 0,
            sleep_ns: spec.sleep.as_nanos().min(u128::from(u64::MAX / 2)) as u64,
            joined: false,
        }
    }
}

/// Give each stream its job's gate (`streams`: the group's streams with their
/// jobs). Jobs that start with the group join now, before any worker runs (fio
/// registers a job's weight before releasing its threads): whichever thread
/// the kernel runs first is held to its share from its first I/O. Jobs that
/// start later (`startdelay`, `wait_for`) join when they start. Every worker
/// leaves on its way out (`Worker::leave_flows`), whatever the path.
pub fn attach<'a>(streams: impl Iterator<Item = (&'a mut FlowGate, &'a JobSpec)>) {
    let mut flows = Flows::default();
    for (gate, job) in streams {
        *gate = flows.gate(&job.control.flow);
        if job.control.startdelay[1].is_zero() && job.control.wait_for.is_none() {
            gate.join();
        }
    }
}

/// One stream's view of its flow.
#[derive(Debug, Default)]
pub struct FlowGate {
    flow: Option<Arc<Flow>>,
    weight: u64,
    /// I/Os this stream issued while in the flow.
    own: u64,
    sleep_ns: u64,
    joined: bool,
}

impl FlowGate {
    /// Whether the stream is in a flow at all (`flow=` with a weight).
    pub fn active(&self) -> bool {
        self.flow.is_some()
    }

    /// The stream starts issuing: its weight counts from now.
    pub fn join(&mut self) {
        if let Some(f) = &self.flow
            && !self.joined
        {
            f.weight.fetch_add(self.weight, Ordering::Relaxed);
            self.joined = true;
        }
    }

    /// The stream ends: its weight and its I/Os leave the flow, so the others'
    /// shares are counted among themselves. Idempotent.
    pub fn leave(&mut self) {
        if let Some(f) = &self.flow
            && self.joined
        {
            f.issued.fetch_sub(self.own, Ordering::Relaxed);
            f.weight.fetch_sub(self.weight, Ordering::Relaxed);
            self.joined = false;
            self.own = 0;
        }
    }

    /// `Some(when to try again)` while the stream is ahead of its share:
    /// own / issued > weight / total weight. The counts are read without
    /// synchronisation; a share a few I/Os off is fio's tolerance too.
    #[inline]
    pub fn hold(&self, now: u64) -> Option<u64> {
        let f = self.flow.as_ref()?;
        let issued = u128::from(f.issued.load(Ordering::Relaxed));
        let total = u128::from(f.weight.load(Ordering::Relaxed));
        (u128::from(self.own) * total > u128::from(self.weight) * issued)
            .then_some(now + self.sleep_ns)
    }

    /// The stream issued one request.
    #[inline]
    pub fn issued(&mut self) {
        if let Some(f) = &self.flow {
            f.issued.fetch_add(1, Ordering::Relaxed);
            self.own += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn spec(weight: u32, id: u32) -> FlowSpec {
        FlowSpec {
            weight,
            id,
            sleep: Duration::from_micros(5),
        }
    }

    /// Two gates taking turns whenever they are not held end in their ratio.
    #[test]
    fn gates_keep_the_ratio_of_their_weights() {
        let mut flows = Flows::default();
        let mut a = flows.gate(&spec(1, 3));
        let mut b = flows.gate(&spec(8, 3));
        let mut other = flows.gate(&spec(1, 4));
        a.join();
        b.join();
        other.join();
        for _ in 0..9000 {
            for g in [&mut a, &mut b, &mut other] {
                if g.hold(100).is_none() {
                    g.issued();
                }
            }
        }
        let ratio = b.own as f64 / a.own as f64;
        assert!((7.5..8.5).contains(&ratio), "ratio {ratio}");
        // Alone in its flow, a job is never held.
        assert_eq!(other.own, 9000);
    }

    #[test]
    fn a_job_that_leaves_holds_no_one_back() {
        let mut flows = Flows::default();
        let mut a = flows.gate(&spec(1, 0));
        let mut b = flows.gate(&spec(1, 0));
        a.join();
        b.join();
        for _ in 0..10 {
            if a.hold(0).is_none() {
                a.issued();
            }
        }
        assert_eq!(
            a.hold(7),
            Some(7 + 5000),
            "a is ahead of b: it waits flow_sleep"
        );
        b.leave();
        b.leave();
        assert!(a.hold(0).is_none(), "b left: a runs alone");
        a.leave();
        let f = a.flow.as_ref().unwrap();
        assert_eq!(f.issued.load(Ordering::Relaxed), 1);
        assert_eq!(f.weight.load(Ordering::Relaxed), 0);
        assert!(FlowGate::default().hold(0).is_none());
    }
}
