//! fio's buffer-contents options of a job (`zero_buffers`, `buffer_pattern`,
//! `buffer_compress_percentage`, `dedupe_percentage`, ...) as parsed, and the
//! rules that tie them together (which imply `refill_buffers`, which allow
//! `scramble_buffers`). What the bytes become is `workload::buffers`.

use super::draft::Draft;
use super::error::JobError;

/// fio's `dedupe_mode`: where `dedupe_percentage`'s repeated writes take
/// their content from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DedupeMode {
    /// The last unique write, byte for byte (fio's default).
    #[default]
    Repeat,
    /// A page drawn uniformly from a working set of
    /// `dedupe_working_set_percentage` of `size` (`workload::dedupe`).
    WorkingSet,
}

/// fio's buffer-contents options of one job, as parsed.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BufferSpec {
    pub zero: bool,
    pub refill: bool,
    pub scramble: bool,
    /// `buffer_pattern`; empty when unset.
    pub pattern: Vec<u8>,
    /// `buffer_compress_percentage` (0-100), `None` when unset.
    pub compress_percentage: Option<u32>,
    /// `buffer_compress_chunk` in bytes; 0 = the request's length.
    pub compress_chunk: u32,
    /// `dedupe_percentage` (0-100).
    pub dedupe_percentage: u32,
    pub dedupe_mode: DedupeMode,
    /// `dedupe_working_set_percentage`: the working set's share of `size`
    /// (fio's default 5).
    pub dedupe_working_set_percentage: u32,
    /// `dedupe_global`: the working set is shared by every job that sets it.
    pub dedupe_global: bool,
}

impl Default for BufferSpec {
    fn default() -> Self {
        BufferSpec {
            zero: false,
            refill: false,
            scramble: true,
            pattern: Vec::new(),
            compress_percentage: None,
            compress_chunk: 512,
            dedupe_percentage: 0,
            dedupe_mode: DedupeMode::Repeat,
            dedupe_working_set_percentage: 5,
            dedupe_global: false,
        }
    }
}

impl BufferSpec {
    /// New content on every write (fio's `refill_buffers`, asked for or implied).
    pub fn refills(&self) -> bool {
        !self.zero
            && (self.refill
                || self.dedupe_percentage > 0
                || self.compress_percentage.is_some_and(|p| p < 100))
    }

    /// `dedupe_mode=working_set` is in effect (it needs repeats to draw).
    pub fn working_set(&self) -> bool {
        self.dedupe_mode == DedupeMode::WorkingSet && self.dedupe_percentage > 0 && !self.zero
    }

    /// Stamp every write (`scramble_buffers`): only random, reused buffers.
    pub fn scrambles(&self) -> bool {
        self.scramble
            && !self.refills()
            && !self.zero
            && self.pattern.is_empty()
            && self.compress_percentage.is_none()
    }
}

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
