//! The log epoch options, `log_unix_epoch`, `log_alternate_epoch`,
//! `log_alternate_epoch_clock_id`: log timestamps on a clock's epoch (ms)
//! instead of from the job's start. The clock id is checked with
//! clock_gettime(2) while the job is parsed, so a clock this kernel lacks
//! fails before the run (fio logs garbage times). (libaio's `userspace_reap`,
//! once checked here, is libaio's: `device::libaio::options`.)

use super::draft::{Ctx, Draft};
use super::error::JobError;
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

    /// The rules of the log epoch options.
    pub(crate) fn check_log_epoch(&mut self) {
        let l = &self.spec.logs;
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
    }
}
