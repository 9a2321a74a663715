//! fio's `wait_for=NAME`: a job of a group starts only once every clone of the
//! named earlier job has finished. (The parser has checked that the name is an
//! earlier job's; a waitee in an earlier stonewall group has already ended.)
//!
//! One counter of finished clones per job of the group. A worker's
//! [`StartGate`] holds the counters it waits on (with the clone count that
//! opens it) and those it bumps when it ends; the bump is a drop guard, so a
//! worker that fails or stops early never leaves its waiters waiting.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::job::JobSpec;

/// When a worker may start, and whom its end releases.
#[derive(Clone, Debug, Default)]
pub struct StartGate {
    /// (finished clones of a waitee, its clone count).
    waits: Vec<(Arc<AtomicU32>, u32)>,
    /// One per job clone the worker runs: its job's counter.
    ends: Vec<Arc<AtomicU32>>,
}

impl StartGate {
    /// Every waitee has finished.
    pub fn open(&self) -> bool {
        self.waits
            .iter()
            .all(|(done, all)| done.load(Ordering::Acquire) >= *all)
    }

    /// Whether the worker waits for another job at all.
    #[cfg(any(test, feature = "testing"))]
    pub fn waits(&self) -> bool {
        !self.waits.is_empty()
    }

    /// A guard that counts the worker's clones as finished when dropped.
    pub fn ender(&self) -> Ender {
        Ender(self.ends.clone())
    }
}

/// Counts a worker's job clones as finished when dropped.
#[derive(Debug)]
pub struct Ender(Vec<Arc<AtomicU32>>);

impl Drop for Ender {
    fn drop(&mut self) {
        for c in &self.0 {
            c.fetch_add(1, Ordering::Release);
        }
    }
}

/// One counter of finished clones per job of a group.
pub struct Gates<'a> {
    group: &'a [usize],
    counters: Vec<Arc<AtomicU32>>,
}

impl<'a> Gates<'a> {
    pub fn new(group: &'a [usize]) -> Gates<'a> {
        Gates {
            group,
            counters: group.iter().map(|_| Arc::default()).collect(),
        }
    }

    fn counter(&self, job: usize) -> Option<&Arc<AtomicU32>> {
        let i = self.group.iter().position(|&g| g == job)?;
        Some(&self.counters[i])
    }

    /// The gate of a worker running clones of `worker_jobs` (job indices, one
    /// per clone). Jobs sharing a worker agree on `wait_for` (setup refuses
    /// them otherwise), so the first job's is the worker's.
    pub fn gate(&self, jobs: &[JobSpec], worker_jobs: &[usize]) -> StartGate {
        let first = worker_jobs[0];
        let waits = match &jobs[first].control.wait_for {
            Some(name) => (0..first)
                .filter(|&j| jobs[j].name == *name)
                .filter_map(|j| self.counter(j).map(|c| (c.clone(), jobs[j].numjobs)))
                .collect(),
            None => Vec::new(),
        };
        let ends = (worker_jobs.iter())
            .filter_map(|&j| self.counter(j).cloned())
            .collect();
        StartGate { waits, ends }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_opens_when_every_clone_of_the_waitee_has_ended() {
        let done = Arc::new(AtomicU32::new(0));
        let waiter = StartGate {
            waits: vec![(done.clone(), 2)],
            ends: Vec::new(),
        };
        let waitee = StartGate {
            waits: Vec::new(),
            ends: vec![done.clone()],
        };
        assert!(!waiter.open() && waiter.waits() && waitee.open());
        drop(waitee.ender());
        assert!(!waiter.open(), "one of two clones ended");
        drop(waitee.ender());
        assert!(waiter.open());
    }
}
