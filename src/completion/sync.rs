//! `completion=sync`: the backend performed the I/O inside `queue` (pread),
//! so the completion is there to take; nothing to wait for.

use super::{CompletionStats, InFlight, Model, Needs};
use crate::device::{DevResult, Queue, Wait};
use crate::request::Completion;

/// Nothing to keep.
#[derive(Clone, Copy, Debug, Default)]
pub struct Synchronous;

impl Model for Synchronous {
    const NEEDS: Needs = Needs::Synchronous;

    fn start() -> Synchronous {
        Synchronous
    }

    #[inline]
    fn wait(
        &mut self,
        _s: &mut CompletionStats,
        q: &mut dyn Queue,
        out: &mut [Completion],
        _min: u32,
        _req: InFlight,
        _deadline_ns: u64,
    ) -> DevResult<usize> {
        q.reap(Wait::Peek, out)
    }
}
