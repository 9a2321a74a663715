//! Two small fio options with cross-option rules of their own:
//!
//! * `log_unix_epoch`, `log_alternate_epoch`, `log_alternate_epoch_clock_id`:
//!   log timestamps on a clock's epoch (ms) instead of from the job's start.
//!   The clock id is checked with clock_gettime(2) while the job is parsed, so
//!   a clock this kernel lacks fails before the run (fio logs garbage times).
//! * libaio's `userspace_reap` (fio: the AIO ring is read in user space only
//!   when reaping a minimum of 0 events, i.e. `iodepth_batch_complete_min=0`,
//!   and then it spins on the ring): iolab asks for the same options and runs
//!   the job with `completion=poll`, whose reaps never sleep.

use super::draft::{Ctx, Draft};
use super::error::JobError;
use super::spec::{CompletionModel, Engine};
use crate::measure::iolog::epoch::read_clock_ns;

/// `log_alternate_epoch_clock_id`: a clock id this kernel's clock_gettime(2)
/// accepts (negative ids are per-process CPU and fd clocks: refused).
pub(crate) fn clock_id(c: &Ctx) -> Result<i32, JobError> {
    let id = c.int(0, i32::MAX as u64)? as i32;
    if read_clock_ns(id).is_none() {
        return Err(c.bad(format!(
            "a clock id clock_gettime(2) accepts; it refused {id} here (0 CLOCK_REALTIME, 1 \
             CLOCK_MONOTONIC, 4 CLOCK_MONOTONIC_RAW, 7 CLOCK_BOOTTIME, 11 CLOCK_TAI)"
        )));
    }
    Ok(id)
}

impl Draft {
    fn opt_at(&self, name: &str) -> Option<&str> {
        self.set
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, at)| at.as_str())
    }

    /// The rules of `userspace_reap` and the log epoch options.
    pub(crate) fn check_reap_and_epoch(&mut self, section_at: &str) -> Result<(), JobError> {
        let conflict = |at: Option<&str>, job: &str, problem: String| JobError::Conflict {
            at: at.unwrap_or(section_at).to_string(),
            job: job.to_string(),
            problem,
        };
        let s = &self.spec;
        let l = &s.logs;
        if !l.unix_epoch
            && !l.alternate_epoch
            && self.opt_at("log_alternate_epoch_clock_id").is_some()
        {
            self.note(
                "log_alternate_epoch_clock_id",
                "has no effect: it only chooses the clock of log_unix_epoch=1 or \
                 log_alternate_epoch=1, and the job sets neither (fio ignores it too)",
            );
        }
        let s = &self.spec;
        let at = self.opt_at("userspace_reap");
        if s.userspace_reap.is_some() && s.ioengine != Engine::Libaio {
            return Err(conflict(
                at,
                &s.name,
                format!(
                    "userspace_reap reads kernel AIO's completion ring and needs \
                     ioengine=libaio, but the job uses ioengine={}; drop it (io_uring's \
                     completions are always read in user space)",
                    s.ioengine.fio_name()
                ),
            ));
        }
        if s.userspace_reap != Some(true) {
            return Ok(());
        }
        if s.depth_batch.complete_min != Some(0) {
            return Err(conflict(
                at,
                &s.name,
                "userspace_reap=1 reads the AIO ring only when reaping a minimum of 0 \
                 completions (fio keeps calling io_getevents otherwise): add \
                 iodepth_batch_complete_min=0, or drop userspace_reap"
                    .into(),
            ));
        }
        if let Some(m) = s.completion.filter(|&m| m != CompletionModel::Poll) {
            return Err(conflict(
                at,
                &s.name,
                format!(
                    "userspace_reap=1 reaps by spinning on the AIO ring (completion=poll), but \
                     completion={} would sleep in io_getevents: drop one of them",
                    m.name()
                ),
            ));
        }
        Ok(())
    }
}
