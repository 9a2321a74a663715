//! fio's buffer-contents options of a job (`zero_buffers`, `buffer_pattern`,
//! `buffer_compress_percentage`, `dedupe_percentage`, ...) as parsed, and the
//! rules that tie them together (which imply `refill_buffers`, which allow
//! `scramble_buffers`; the checks of `dedupe_mode=working_set` are
//! `job::buffers_opts`). What the bytes become is `workload::buffers`.

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
