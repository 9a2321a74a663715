//! `completion=interrupt`: sleep in the backend's interrupt mechanism until
//! a completion (the backend's `Wait::Sleep`), or on a timer to the engine's
//! deadline.

use super::{CompletionStats, InFlight, Model, Needs, wait};
use crate::device::{DevResult, Queue};
use crate::request::Completion;

/// Nothing to keep.
#[derive(Clone, Copy, Debug, Default)]
pub struct Interrupt;

impl Model for Interrupt {
    const NEEDS: Needs = Needs::Sleep;

    fn start() -> Interrupt {
        Interrupt
    }

    #[inline]
    fn wait(
        &mut self,
        s: &mut CompletionStats,
        q: &mut dyn Queue,
        out: &mut [Completion],
        min: u32,
        _req: InFlight,
        deadline_ns: u64,
    ) -> DevResult<usize> {
        wait::sleep(s, q, out, min, deadline_ns)
    }
}
