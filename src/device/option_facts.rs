//! What every backend's option checks share: the job's facts they judge
//! against, their error and note, and the per-call flags several backends
//! carry. A leaf below each backend's options and `device::options`, which
//! gathers them.

use super::engine::Engine;

/// Per-call flags several backends carry, each under the fio option of its
/// name. One place, because one option means the same flag on each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CallFlags {
    /// `hipri`: polled completions (io_uring: IORING_SETUP_IOPOLL; pvsync2:
    /// RWF_HIPRI).
    pub hipri: bool,
    /// `nowait` (io_uring, libaio, pvsync2): RWF_NOWAIT on reads and writes.
    pub nowait: bool,
    /// `uncached` (io_uring, pvsync2): buffered reads and writes drop their
    /// pages once done (RWF_DONTCACHE).
    pub uncached: bool,
    /// `atomic` (io_uring, libaio, pvsync2): O_DIRECT, and writes carry
    /// RWF_ATOMIC.
    pub atomic: bool,
}

impl CallFlags {
    /// RWF_* flags every read and write of the job carries (`nowait`;
    /// `uncached` on buffered I/O, as RWF_DONTCACHE).
    pub fn rw_flags(&self, direct: bool) -> u32 {
        let mut f = 0;
        if self.nowait {
            f |= libc::RWF_NOWAIT as u32;
        }
        if self.uncached && !direct {
            f |= libc::RWF_DONTCACHE as u32;
        }
        f
    }
}

/// What the backends' checks need to know of the rest of the job.
#[derive(Clone, Copy, Debug)]
pub struct JobFacts<'a> {
    pub engine: Engine,
    /// The options the job set (canonical names), in the order set.
    pub set: &'a [&'static str],
    /// `iodepth_batch_complete_min` as set.
    pub complete_min: Option<u32>,
    /// `completion=` as set (the model's name).
    pub completion: Option<&'static str>,
}

impl JobFacts<'_> {
    pub fn is_set(&self, option: &str) -> bool {
        self.set.contains(&option)
    }

    /// "the job uses ioengine=X", the end of every "needs" message.
    pub fn uses(&self) -> String {
        format!("the job uses ioengine={}", self.engine.fio_name())
    }
}

/// A backend option the job's engine cannot honour, or two that conflict.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{problem}")]
pub struct OptionError {
    /// The option the problem is about (the job file points there).
    pub option: &'static str,
    pub problem: String,
}

/// An option accepted in a combination where it has no effect: the option and
/// what to say about it (the job's notes carry it to the report).
pub type OptionNote = (&'static str, &'static str);

impl OptionError {
    pub fn new(option: &'static str, problem: impl Into<String>) -> OptionError {
        OptionError {
            option,
            problem: problem.into(),
        }
    }
}
