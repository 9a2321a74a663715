//! io_uring's own options (fio's `--enghelp=io_uring` list and iolab's
//! `hybrid_iopoll`, `count_punts`), as a job sets them, and their checks.
//! `hipri`, `nowait`, `uncached` and `atomic` are per-call flags io_uring
//! shares with other backends (`device::options::CallFlags`).

use crate::device::engine::Engine;
use crate::device::option_facts::{JobFacts, OptionError, OptionNote};

/// The options of fio's io_uring list a job may set only with io_uring.
pub(crate) const OWNED: &[&str] = &[
    "sqthread_poll_cpu",
    "nowait",
    "uncached",
    "nonvectored",
    "force_async",
    "cmd_type",
];

/// io_uring's options (defaults are fio's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct UringOptions {
    /// `hybrid_iopoll`: IORING_SETUP_HYBRID_IOPOLL (Linux 6.13); implies `hipri`.
    pub hybrid_iopoll: bool,
    /// `sqthread_poll`: a kernel thread consumes the submission queue.
    pub sqthread_poll: bool,
    /// `sqthread_poll_cpu`: pin the SQ thread (IORING_SETUP_SQ_AFF).
    pub sqthread_poll_cpu: Option<u32>,
    /// `fixedbufs`: registered buffers.
    pub fixedbufs: bool,
    /// `registerfiles`: registered files.
    pub registerfiles: bool,
    /// iolab's `count_punts`: count requests handed to io-wq workers. Off by
    /// default: the kernel tracepoint that counts them costs each punted
    /// request about half a microsecond of CPU (BENCHMARKS.md).
    pub count_punts: bool,
    /// `nonvectored`: `Some(false)` sends IORING_OP_READV/WRITEV with one
    /// iovec; unset or true, IORING_OP_READ/WRITE (fio's choice wherever the
    /// kernel has them).
    pub nonvectored: Option<bool>,
    /// `force_async`: every N-th request carries IOSQE_ASYNC (0: none).
    pub force_async: u32,
}

impl UringOptions {
    /// IORING_OP_READV/WRITEV with one iovec instead of READ/WRITE: only
    /// with `nonvectored=0` (fio's choice otherwise, wherever the kernel has
    /// READ/WRITE).
    pub fn vectored(&self) -> bool {
        self.nonvectored == Some(false)
    }

    /// The switches that mean nothing without io_uring, refused (when on)
    /// with another engine.
    pub(crate) fn check_engine(&self, job: &JobFacts) -> Result<(), OptionError> {
        let only_here = [
            ("hybrid_iopoll", self.hybrid_iopoll),
            ("sqthread_poll", self.sqthread_poll),
            ("fixedbufs", self.fixedbufs),
            ("registerfiles", self.registerfiles),
            ("count_punts", self.count_punts),
        ];
        for (opt, on) in only_here {
            if on && job.engine != Engine::IoUring {
                return Err(OptionError::new(
                    opt,
                    format!("{opt} needs ioengine=io_uring, but {}", job.uses()),
                ));
            }
        }
        Ok(())
    }

    /// io_uring's own options against each other: `sqthread_poll_cpu` without
    /// an SQ thread pins nothing (fio sets IORING_SETUP_SQ_AFF only with
    /// `sqthread_poll`), so it is dropped with a note.
    pub(crate) fn check(&mut self, _job: &JobFacts, notes: &mut Vec<OptionNote>) {
        if self.sqthread_poll_cpu.is_some() && !self.sqthread_poll {
            self.sqthread_poll_cpu = None;
            notes.push((
                "sqthread_poll_cpu",
                "has no effect: it pins the SQ polling thread, which only sqthread_poll=1 \
                 starts (fio ignores it too)",
            ));
        }
    }
}
