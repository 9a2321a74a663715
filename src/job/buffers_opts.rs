//! Cross-option checks of the buffer-contents options (their types:
//! `job::buffers`).

use super::draft::Draft;
use super::error::JobError;

impl Draft {
    /// fio's rules for `dedupe_mode=working_set`: the working set is a share
    /// of an explicit `size` of one file, and its pages are unique, so they
    /// and the repeats cannot together exceed 100 %.
    pub(crate) fn check_dedupe(&self, section_at: &str) -> Result<(), JobError> {
        let b = &self.spec.buffers;
        if !b.working_set() {
            return Ok(());
        }
        let at = |opt: &str| {
            self.set
                .iter()
                .find(|(n, _)| *n == opt)
                .map_or(section_at, |(_, at)| at.as_str())
                .to_string()
        };
        let conflict = |problem: String| JobError::Conflict {
            at: at("dedupe_mode"),
            job: self.spec.name.clone(),
            problem,
        };
        if self.spec.size.is_none() {
            return Err(conflict(
                "dedupe_mode=working_set sizes its working set from size= (fio's rule): set \
                 size= explicitly"
                    .into(),
            ));
        }
        if self.spec.files.nrfiles != 1 {
            return Err(conflict(format!(
                "dedupe_mode=working_set works on one file per job (fio's rule), and nrfiles={}: \
                 use nrfiles=1, or dedupe_mode=repeat",
                self.spec.files.nrfiles
            )));
        }
        let (d, w) = (b.dedupe_percentage, b.dedupe_working_set_percentage);
        if d + w > 100 {
            return Err(conflict(format!(
                "dedupe_percentage={d} cannot be reached: dedupe_working_set_percentage={w} of \
                 size is unique pages (fio's rule: the two add up to at most 100); lower one"
            )));
        }
        Ok(())
    }
}
