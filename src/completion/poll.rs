//! `completion=poll`: spin on the completion queue (`Wait::Peek`) and never
//! sleep. The completer calls [`super::wait`]'s poll directly for it, by the
//! queue's own type where it can: at QD1 the poll is most of a wait.

use super::{CompletionStats, InFlight, Model, Needs, wait};
use crate::device::{DevResult, Queue};
use crate::request::Completion;

/// Nothing to keep.
#[derive(Clone, Copy, Debug, Default)]
pub struct Poll;

impl Model for Poll {
    const NEEDS: Needs = Needs::Peek;

    fn start() -> Poll {
        Poll
    }

    #[inline]
    fn wait(
        &mut self,
        s: &mut CompletionStats,
        q: &mut dyn Queue,
        out: &mut [Completion],
        _min: u32,
        _req: InFlight,
        deadline_ns: u64,
    ) -> DevResult<usize> {
        wait::poll(s, q, out, deadline_ns)
    }

    /// A poll run that slept, or found nothing by polling, says so.
    fn warnings(s: &CompletionStats, line: &mut String) {
        if s.sleeps > 0 {
            line.push_str(" — WARNING: asked to poll but slept");
        }
        wait::warn_if_never_polled(s, line);
    }
}
