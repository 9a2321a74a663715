//! Trace replay (fio's `read_iolog`): a workload whose requests come from a
//! log instead of a pattern.
//!
//! [`load`] reads the whole log before the clock starts: fio's text iologs
//! (versions 2 and 3, [`text`]) or a blktrace binary file ([`blktrace`], told
//! apart by its magic), with `replay_scale`, `replay_align`, `replay_skip`,
//! `replay_redirect`, `replay_time_scale` and `replay_no_stall` applied as
//! fio applies them, into a [`Trace`]: the files the log names and its I/Os
//! in order, each with the gap to wait after the one before. A [`Replay`]
//! then hands them out one by one without allocating; the worker asks it when
//! each may go ([`Replay::due`]) and tells it when it went ([`Replay::issued`]).
//!
//! Timing follows fio's: an I/O waits its logged gap after the previous one
//! was issued. When the previous one had to wait for its time, the gap
//! counts from that time, so a wait that ran long is not carried on (fio
//! takes the overshoot off the next gap: its `time_offset`); when it was
//! already due when the worker came to it (the queue was full), the gap
//! counts from when it went, and the ones after it move with it (fio
//! measures each gap from the last issue).

pub mod blktrace;
mod text;

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::job::iolog::{IologSpec, ReplaySkip};
use crate::request::{Class, Flush, Op};

use super::NextIo;

/// What went wrong reading a log; each names the file (and line) and what
/// would be valid.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("read_iolog: cannot read '{}': {err}; name an iolog or blktrace file that exists", .path.display())]
    Open { path: PathBuf, err: std::io::Error },
    #[error(
        "read_iolog: '{}' is neither an fio iolog (its first line would be 'fio version 2 iolog' or 'fio version 3 iolog'; fio no longer reads version 1) nor a blktrace binary file; it starts '{first}'",
        .path.display()
    )]
    NotALog { path: PathBuf, first: String },
    #[error("read_iolog: {}:{line}: {problem}", .path.display())]
    Line {
        path: PathBuf,
        line: usize,
        problem: String,
    },
    #[error("read_iolog: blktrace '{}': {problem}", .path.display())]
    Blktrace { path: PathBuf, problem: String },
    #[error(
        "read_iolog: '{}' has no I/O to replay{}",
        .path.display(),
        if *.skipped > 0 { format!(" ({} left out by replay_skip)", .skipped) } else { String::new() }
    )]
    Empty { path: PathBuf, skipped: u64 },
    #[error("merge_blktrace_file: {problem}")]
    Merge { problem: String },
}

/// How a log is replayed (the job's `replay_*` options).
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    pub no_stall: bool,
    /// Percent of the log's rate.
    pub time_scale: u32,
    pub scale: u64,
    pub align: u64,
    pub redirect: Option<String>,
    pub skip: ReplaySkip,
}

impl ReplayOptions {
    pub fn from_spec(s: &IologSpec) -> ReplayOptions {
        ReplayOptions {
            no_stall: s.no_stall,
            time_scale: s.time_scale.max(1),
            scale: s.scale.max(1),
            align: s.align,
            redirect: s.redirect.clone(),
            skip: s.skip,
        }
    }

    fn skips(&self, op: Op) -> bool {
        match op {
            Op::Read => self.skip.read,
            Op::Write => self.skip.write,
            Op::Trim => self.skip.trim,
            Op::Fsync => self.skip.sync,
        }
    }

    /// fio's offset rules: divided by `replay_scale`, then rounded down to
    /// `replay_align`.
    pub fn map_offset(&self, offset: u64) -> u64 {
        let o = offset / self.scale;
        if self.align > 1 {
            o & !(self.align - 1)
        } else {
            o
        }
    }
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions::from_spec(&IologSpec::default())
    }
}

/// One logged I/O, as it will be replayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Index into [`Trace::files`].
    pub file: u16,
    pub op: Op,
    pub offset: u64,
    pub len: u32,
    /// Time to wait after the previous I/O was issued (already scaled; 0
    /// with `replay_no_stall`).
    pub gap_ns: u64,
    /// A sync's kind: a `datasync` line is an fdatasync.
    pub flush: Flush,
}

/// A whole log, read.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The log it came from.
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub source: PathBuf,
    /// The files (or devices) its I/Os go to, in the order the log named them.
    pub files: Vec<PathBuf>,
    pub entries: Vec<Entry>,
    /// Read from a blktrace binary file.
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub blktrace: bool,
    /// I/Os `replay_skip` left out.
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub skipped: u64,
}

impl Trace {
    /// The largest I/O (buffers must hold it).
    pub fn max_len(&self) -> u32 {
        self.entries.iter().map(|e| e.len).max().unwrap_or(0)
    }

    /// Whether it changes its files (they open read-write).
    pub fn writes(&self) -> bool {
        self.entries
            .iter()
            .any(|e| matches!(e.op, Op::Write | Op::Trim))
    }

    /// The sum of its gaps: at least this long to replay it with stalls.
    #[cfg(any(test, feature = "testing"))]
    pub fn span_ns(&self) -> u64 {
        self.entries.iter().map(|e| e.gap_ns).sum()
    }

    /// Per file, where its last byte is (to lay out a file that is missing).
    pub fn file_ends(&self) -> Vec<u64> {
        let mut ends = vec![0u64; self.files.len()];
        for e in &self.entries {
            let end = e.offset + u64::from(e.len);
            if let Some(x) = ends.get_mut(e.file as usize) {
                *x = (*x).max(end);
            }
        }
        ends
    }
}

/// What a line of a log does to the file set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Want {
    Add,
    Open,
    Close,
}

/// A log being read: fio's rules for files, gaps and offsets, shared by the
/// text and blktrace readers.
pub(crate) struct Builder<'a> {
    opts: &'a ReplayOptions,
    files: Vec<String>,
    entries: Vec<Entry>,
    /// The previous line's time (ns; 0: none yet, as fio).
    last_t: u64,
    /// Gaps of lines that issue nothing (file actions, v2 waits): fio waits
    /// them out, so the next I/O waits them too.
    pending_ns: u64,
    skipped: u64,
    /// The kind of the sync the next I/O is (`datasync` lines).
    next_flush: Flush,
}

impl<'a> Builder<'a> {
    pub(crate) fn new(opts: &'a ReplayOptions) -> Builder<'a> {
        Builder {
            opts,
            files: Vec::new(),
            entries: Vec::new(),
            last_t: 0,
            pending_ns: 0,
            skipped: 0,
            next_flush: Flush::Full,
        }
    }

    /// fio's `delay_since_ttime`: the time since the previous line, scaled;
    /// 0 for the first line, for a time earlier than the previous line's
    /// (clones' lines interleaved), and with `replay_no_stall`.
    fn delay_ns(&mut self, t_ns: Option<u64>) -> u64 {
        let Some(t) = t_ns else { return 0 };
        let d = if self.last_t == 0 || self.opts.no_stall || t < self.last_t {
            0
        } else {
            ((t - self.last_t) as u128 * 100 / self.opts.time_scale as u128) as u64
        };
        self.last_t = t;
        d
    }

    fn name<'b>(&'b self, logged: &'b str) -> &'b str {
        self.opts.redirect.as_deref().unwrap_or(logged)
    }

    fn index(&self, name: &str) -> Option<u16> {
        self.files.iter().position(|f| f == name).map(|i| i as u16)
    }

    /// An `add`, `open` or `close` line at `t_us` (v3).
    pub(crate) fn file_action(
        &mut self,
        logged: &str,
        want: Want,
        t_us: Option<u64>,
    ) -> Result<(), String> {
        self.pending_ns += self.delay_ns(t_us.map(|t| t.saturating_mul(1000)));
        let name = self.name(logged).to_string();
        match (want, self.index(&name)) {
            // With replay_redirect every file is the one target: added once.
            (Want::Add, Some(_)) => {}
            (Want::Add, None) => {
                if self.files.len() >= u16::MAX as usize {
                    return Err("more than 65535 files in one log".into());
                }
                self.files.push(name);
            }
            // iolab keeps every file open for the whole run (no open or close
            // on the I/O path): these only have to name a file the log added.
            (Want::Open | Want::Close, Some(_)) => {}
            (Want::Open | Want::Close, None) => {
                return Err(format!(
                    "'{logged}' is opened or closed before an add line names it"
                ));
            }
        }
        Ok(())
    }

    /// A version 2 `wait`: stall this many microseconds before what follows.
    pub(crate) fn wait_us(&mut self, us: u64) {
        if !self.opts.no_stall {
            self.pending_ns += us.saturating_mul(1000);
        }
    }

    /// An I/O line of a text log (`t_us`: its v3 timestamp).
    pub(crate) fn io(
        &mut self,
        logged: &str,
        op: Op,
        offset: u64,
        len: u32,
        t_us: Option<u64>,
    ) -> Result<(), String> {
        let d = self.delay_ns(t_us.map(|t| t.saturating_mul(1000)));
        let name = self.name(logged).to_string();
        let file = self
            .index(&name)
            .ok_or_else(|| format!("an I/O on '{logged}', which no add line named before"))?;
        self.push(file, op, offset, len, d);
        Ok(())
    }

    /// One I/O with the delay its line carries.
    fn push(&mut self, file: u16, op: Op, offset: u64, len: u32, delay_ns: u64) {
        let flush = std::mem::take(&mut self.next_flush);
        if self.opts.skips(op) {
            // As fio's blktrace reader: the gap of a skipped I/O is not waited.
            self.skipped += 1;
            return;
        }
        let gap_ns = std::mem::take(&mut self.pending_ns) + delay_ns;
        // A sync keeps its logged offset and length too, as fio's replay
        // does (fio logs the offset its I/O unit held before): the sync
        // ignores them, a log written while replaying shows them again.
        self.entries.push(Entry {
            file,
            op,
            offset: self.opts.map_offset(offset),
            len,
            gap_ns,
            flush,
        });
    }

    /// The next I/O is an fdatasync (a `datasync` line).
    pub(crate) fn next_is_datasync(&mut self) {
        self.next_flush = Flush::Data;
    }

    fn finish(self, source: &Path, blktrace: bool) -> Result<Trace, ReplayError> {
        if self.entries.is_empty() {
            return Err(ReplayError::Empty {
                path: source.to_path_buf(),
                skipped: self.skipped,
            });
        }
        Ok(Trace {
            source: source.to_path_buf(),
            files: self.files.into_iter().map(PathBuf::from).collect(),
            entries: self.entries,
            blktrace,
            skipped: self.skipped,
        })
    }
}

/// Read the log at `path` (`-`: standard input) whole.
pub fn load(path: &Path, opts: &ReplayOptions) -> Result<Trace, ReplayError> {
    let open_err = |err| ReplayError::Open {
        path: path.to_path_buf(),
        err,
    };
    let mut bytes = Vec::new();
    if path == Path::new("-") {
        std::io::stdin().read_to_end(&mut bytes).map_err(open_err)?;
    } else {
        bytes = std::fs::read(path).map_err(open_err)?;
    }
    parse(path, &bytes, opts)
}

/// Parse a log already read (`path` names it in messages).
pub fn parse(path: &Path, bytes: &[u8], opts: &ReplayOptions) -> Result<Trace, ReplayError> {
    let mut b = Builder::new(opts);
    if let Some(swap) = blktrace::magic(bytes) {
        blktrace::parse(path, bytes, swap, &mut b)?;
        return b.finish(path, true);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| ReplayError::NotALog {
        path: path.to_path_buf(),
        first: String::from_utf8_lossy(&bytes[..bytes.len().min(60)])
            .lines()
            .next()
            .unwrap_or("")
            .to_string(),
    })?;
    text::parse(path, text, &mut b)?;
    b.finish(path, false)
}

/// A trace handed out one I/O at a time (one per job clone).
#[derive(Debug)]
pub struct Replay {
    entries: Box<[Entry]>,
    next: usize,
    /// The file of the I/O handed out last.
    file: u16,
    gap_ns: u64,
    /// When the I/O handed out last may go (None: not asked yet).
    due_ns: Option<u64>,
    /// When the previous I/O went, as the base of the next gap (0: none yet;
    /// the first I/O's gap counts from the first time it is asked about).
    base_ns: u64,
    /// The I/O handed out last had to wait for its time.
    waited: bool,
}

impl Replay {
    pub fn new(trace: &Trace) -> Replay {
        Replay {
            entries: trace.entries.clone().into_boxed_slice(),
            next: 0,
            file: 0,
            gap_ns: 0,
            due_ns: None,
            base_ns: 0,
            waited: false,
        }
    }

    /// The next logged I/O, or None at the log's end.
    #[inline]
    pub fn next_io(&mut self) -> Option<NextIo> {
        let e = *self.entries.get(self.next)?;
        self.next += 1;
        self.file = e.file;
        self.gap_ns = e.gap_ns;
        self.due_ns = None;
        self.waited = false;
        Some(NextIo {
            op: e.op,
            offset: e.offset,
            len: e.len,
            class: match e.op {
                Op::Read => Class::Read,
                Op::Write | Op::Trim => Class::AsyncWrite,
                Op::Fsync => Class::SyncWrite,
            },
            flush: e.flush,
        })
    }

    /// The file of the I/O [`Replay::next_io`] returned last.
    #[inline]
    pub fn file(&self) -> u16 {
        self.file
    }

    /// When the I/O handed out last may go.
    #[inline]
    pub fn due(&mut self, now: u64) -> u64 {
        let due = match self.due_ns {
            Some(d) => d,
            None => {
                if self.base_ns == 0 {
                    self.base_ns = now;
                }
                let d = self.base_ns + self.gap_ns;
                self.due_ns = Some(d);
                d
            }
        };
        if due > now {
            self.waited = true;
        }
        due
    }

    /// The I/O handed out last went at `now`. The next gap counts from its
    /// time when it had to wait for it (oversleeping is not carried on, as
    /// fio's `time_offset` is not), else from `now` (it went late: the rest
    /// move with it, as in fio).
    #[inline]
    pub fn issued(&mut self, now: u64) {
        self.base_ns = match (self.waited, self.due_ns) {
            (true, Some(d)) => d.max(1),
            _ => now.max(1),
        };
    }

    /// I/Os handed out so far.
    #[cfg(any(test, feature = "testing"))]
    pub fn position(&self) -> usize {
        self.next
    }
}

#[cfg(test)]
mod tests;
