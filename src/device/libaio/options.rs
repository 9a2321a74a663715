//! libaio's own options (`userspace_reap`), as a job sets them, and their
//! checks. `nowait` and `atomic` are per-call flags libaio shares with other
//! backends (`device::options::CallFlags`).

use crate::device::engine::Engine;
use crate::device::option_facts::{JobFacts, OptionError, OptionNote};

/// The options of fio's libaio list a job may set only with libaio (or
/// another engine that has them).
pub(crate) const OWNED: &[&str] = &["nowait"];

/// libaio's options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LibaioOptions {
    /// fio's `userspace_reap`: `None` = iolab's default (the AIO ring first,
    /// io_getevents to sleep), `Some(true)` = only the ring, spinning (fio's
    /// meaning, with `iodepth_batch_complete_min=0`), `Some(false)` = every
    /// reap is io_getevents (fio's default).
    pub userspace_reap: Option<bool>,
}

impl LibaioOptions {
    /// Read completions from the ring in user space where it can be read.
    pub fn reaps_in_user_space(&self) -> bool {
        self.userspace_reap != Some(false)
    }

    /// Every reap reads only the ring, spinning (`userspace_reap=1`).
    pub fn ring_only(&self) -> bool {
        self.userspace_reap == Some(true)
    }

    pub(crate) fn check(
        &mut self,
        job: &JobFacts,
        notes: &mut Vec<OptionNote>,
    ) -> Result<(), OptionError> {
        const AT: &str = "userspace_reap";
        if self.userspace_reap.is_some() && job.engine != Engine::Libaio {
            return Err(OptionError::new(
                AT,
                format!(
                    "userspace_reap reads kernel AIO's completion ring and needs \
                     ioengine=libaio, but {}; drop it (io_uring's \
                     completions are always read in user space)",
                    job.uses()
                ),
            ));
        }
        if !self.ring_only() {
            return Ok(());
        }
        if job.complete_min != Some(0) {
            // fio reads the ring only for reaps that may return nothing; with
            // a minimum above 0 every reap is io_getevents, which is what runs.
            self.userspace_reap = Some(false);
            notes.push((
                AT,
                "has no effect: fio reads the AIO ring only when a reap may return no \
                 completions (iodepth_batch_complete_min=0); with a larger minimum every \
                 reap is io_getevents, and so it is here (fio does the same)",
            ));
            return Ok(());
        }
        if let Some(m) = job.completion.filter(|&m| m != "poll") {
            return Err(OptionError::new(
                AT,
                format!(
                    "userspace_reap=1 reaps by spinning on the AIO ring (completion=poll), but \
                     completion={m} would sleep in io_getevents: drop one of them"
                ),
            ));
        }
        Ok(())
    }
}
