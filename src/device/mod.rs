//! Device backends: one file per backend, all behind the [`Queue`] trait.
//!
//! A `Queue` is one queue pair on a device, owned by one worker thread (like an
//! NVMe per-core SQ/CQ). The contract follows fio's engine interface: `queue` a
//! command (which a synchronous backend performs on the spot), `commit` what was
//! queued, `reap` completions either without sleeping ([`Wait::Peek`], the basis of
//! polling) or by sleeping in the backend's interrupt mechanism ([`Wait::Sleep`]).

pub mod atomic;
pub mod cpuio;
pub mod engine;
pub mod fileops;
pub mod files;
pub mod libaio;
pub mod mmap;
pub mod null;
pub mod option_facts;
pub mod options;
pub mod perform;
pub mod polled;
pub mod posixaio;
pub mod psync;
pub mod space;
pub mod sync;
pub mod target;
pub mod trim;
pub mod uring;
pub mod worker_queue;

use crate::request::{Completion, IoCmd};

/// What a backend can do; completion models check this before a run starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Caps {
    /// `queue` performs the I/O and returns it completed (pread/pwrite).
    pub sync: bool,
    /// `reap(Wait::Peek)` finds completions without sleeping (CQ ring, null device).
    pub can_peek: bool,
    /// `reap(Wait::Sleep)` sleeps until a completion is signalled.
    pub can_sleep: bool,
    /// Completions are found by polling the device itself (IOPOLL), not by interrupt.
    pub device_poll: bool,
    /// The backend can predict when the next completion becomes visible (null device).
    pub predicts_completion: bool,
    /// An asynchronous backend that can also perform one command synchronously in
    /// the caller's context on request ([`Queue::perform`]): `adaptive` uses it
    /// where waiting for the asynchronous path costs more than doing the I/O.
    pub inline: bool,
}

impl Caps {
    /// Nothing: the start of a backend's statement of what it can do, built
    /// with the methods below (a flag added later does not break it).
    pub const NONE: Caps = Caps {
        sync: false,
        can_peek: false,
        can_sleep: false,
        device_poll: false,
        predicts_completion: false,
        inline: false,
    };
    /// [`Caps::sync`].
    pub const fn with_sync(mut self, on: bool) -> Caps {
        self.sync = on;
        self
    }
    /// [`Caps::can_peek`].
    pub const fn with_peek(mut self, on: bool) -> Caps {
        self.can_peek = on;
        self
    }
    /// [`Caps::can_sleep`].
    pub const fn with_sleep(mut self, on: bool) -> Caps {
        self.can_sleep = on;
        self
    }
    /// [`Caps::device_poll`].
    pub const fn with_device_poll(mut self, on: bool) -> Caps {
        self.device_poll = on;
        self
    }
    /// [`Caps::predicts_completion`].
    pub const fn with_predicts_completion(mut self, on: bool) -> Caps {
        self.predicts_completion = on;
        self
    }
    /// [`Caps::inline`].
    pub const fn with_inline(mut self, on: bool) -> Caps {
        self.inline = on;
        self
    }
}

/// How `reap` may wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Return what is complete now; never sleep.
    Peek,
    /// Sleep until at least `min` completions are available (interrupt model).
    Sleep {
        /// Completions to wait for.
        min: u32,
    },
}

/// Result of queueing one command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queued {
    /// Accepted; completes later.
    Pending,
    /// Performed synchronously; here is its completion.
    Done(Completion),
    /// Queue full: reap, then retry.
    Busy,
}

/// Counters a backend keeps about itself (reported in the `iolab` JSON object).
#[derive(
    schemars::JsonSchema,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
)]
#[non_exhaustive]
pub struct BackendStats {
    /// System calls made to submit (io_uring_enter with to_submit > 0, pread, ...).
    pub submit_calls: u64,
    /// System calls or sleeps made to wait for completions.
    pub wait_calls: u64,
    /// Requests the kernel handed to io-wq workers instead of completing inline
    /// or issuing non-blocking (counted, not assumed); `None` when not counted
    /// (io_uring without `count_punts=1`, or no tracefs) and for backends that
    /// never punt.
    pub punted: Option<u64>,
    /// Interrupts the backend delivered (null device) or observed.
    pub interrupts: u64,
    /// Requests already complete when the call that submitted them returned
    /// (libaio on a buffered file: the kernel did the I/O inside io_submit).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub completed_in_submit: u64,
    /// What one backend counts of its own, each under its own keys.
    #[serde(flatten)]
    pub own: OwnStats,
    /// Who or what moves the data, where that is not the submitting thread's
    /// own system call (a reader of the latencies needs to know).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub performed_by: Option<PerformedBy>,
}

/// Counters only one backend keeps: one field per such backend, its type in
/// the backend's file, flattened into [`BackendStats`] (the JSON keys stay
/// the backend's own).
#[derive(
    schemars::JsonSchema,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
)]
#[non_exhaustive]
pub struct OwnStats {
    /// libaio: how completions were reaped (ring / io_getevents) and counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aio_reap: Option<libaio::AioReap>,
}

impl OwnStats {
    /// Sum over a job's workers.
    pub fn merge(self, other: OwnStats) -> OwnStats {
        OwnStats {
            aio_reap: libaio::AioReap::merge(self.aio_reap, other.aio_reap),
        }
    }
}

/// Who performs a backend's requests, where it is not the worker's own call.
#[derive(
    schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum PerformedBy {
    /// posixaio: glibc hands each aio_read/aio_write to a helper thread of its
    /// own, which runs pread/pwrite; the latencies include that hand-off.
    GlibcHelperThreads,
    /// mmap: memcpy to or from a shared mapping; page faults read, write-back
    /// writes later.
    PageCopy,
}

impl PerformedBy {
    /// One line for the run output.
    pub fn describe(self) -> &'static str {
        match self {
            PerformedBy::GlibcHelperThreads => {
                "glibc's helper threads perform the I/O: aio_read/aio_write queue each \
                 request to a thread glibc starts, which runs pread/pwrite; latencies include \
                 that hand-off (libaio or io_uring submit to the kernel directly)"
            }
            PerformedBy::PageCopy => {
                "memcpy through a shared mapping: reads fault pages in, writes dirty pages \
                 that write-back cleans later (fsync=N runs msync)"
            }
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Errors a backend can raise outside of per-request results.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("{0}")]
    /// The backend cannot do what was asked; the message says what can.
    Unsupported(String),
    #[error("{what}: {source}")]
    /// A system call failed.
    Io {
        /// What was being done.
        what: String,
        #[source]
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl DeviceError {
    /// An [`DeviceError::Io`] for `what`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        DeviceError::Io {
            what: what.into(),
            source,
        }
    }
    /// An [`DeviceError::Io`] for `what` from `errno` (the last OS error).
    pub fn last_os(what: impl Into<String>) -> Self {
        Self::io(what, std::io::Error::last_os_error())
    }
}

/// What a backend's calls return.
pub type DevResult<T> = Result<T, DeviceError>;

/// Calls only a device that keeps device time of its own can answer (an
/// emulated device: completion times are computed, faults injected), reached
/// through [`Queue::device_time`].
pub trait DeviceTime {
    /// Commit what was queued as if at `at_ns` (engine clock), a time in the
    /// past: commands start when they would have.
    fn commit_at(&mut self, at_ns: u64) -> DevResult<u32>;
    /// Engine-clock time (ns) at which the earliest in-flight command
    /// completes; `None` with nothing in flight.
    fn next_completion_at(&self) -> Option<u64>;
    /// Faults the device injected, so a run can show that every one of them
    /// was seen by the engine.
    fn injected_faults(&self) -> null::FaultCounts;
}

/// One queue pair on a device. Not shared between threads. `Any` lets the
/// worker hold the null device by its own type (`device::worker_queue`).
pub trait Queue: Send + std::any::Any {
    /// The backend's name (fio's `ioengine` name).
    fn name(&self) -> &'static str;
    /// What the backend can do ([`Caps`]).
    fn caps(&self) -> Caps;
    /// Queue one command. `cmd.buf` must stay valid until its completion is reaped.
    fn queue(&mut self, cmd: &IoCmd) -> DevResult<Queued>;
    /// Submit what was queued since the last commit; returns how many went out.
    fn commit(&mut self) -> DevResult<u32>;
    /// Move completions into `out` (at most `out.len()`); returns how many.
    fn reap(&mut self, wait: Wait, out: &mut [Completion]) -> DevResult<usize>;
    /// Sleep like `reap(Wait::Sleep { min })`, but return by `deadline_ns` (engine
    /// clock) even with nothing complete. Backends that cannot bound the sleep
    /// wait as `reap` does (the null device predicts completions instead).
    fn sleep_until(
        &mut self,
        min: u32,
        _deadline_ns: u64,
        out: &mut [Completion],
    ) -> DevResult<usize> {
        self.reap(Wait::Sleep { min }, out)
    }
    /// What the backend counted, for the run's report.
    fn stats(&self) -> BackendStats {
        BackendStats::default()
    }
    /// The engine-clock time this backend read during its last `commit`, or its
    /// last `reap(Wait::Peek)` that returned completions; 0 if it read none (or
    /// slept since). The engine uses it as the submit / completion-seen stamp
    /// instead of reading the clock a second time for the same instant.
    fn clock_hint(&self) -> u64 {
        0
    }
    /// Abort an in-flight command that will not complete on its own (the
    /// engine's `io_timeout` expired): it then completes with a negative errno.
    /// False if the backend cannot, or the command is not stuck (just slow).
    fn abort(&mut self, _slot: u32) -> bool {
        false
    }
    /// Perform one command now, in the caller's context, bypassing the queue
    /// (only where [`Caps::inline`]); its completion is returned, not reaped.
    fn perform(&mut self, _cmd: &IoCmd) -> DevResult<Completion> {
        Err(DeviceError::Unsupported(format!(
            "backend {} cannot perform a command synchronously; use ioengine=io_uring or \
             libaio, which can",
            self.name()
        )))
    }
    /// The device's own clock ([`DeviceTime`]), where the backend keeps one
    /// (an emulated device, [`Caps::predicts_completion`]), for a completion
    /// model holding this queue as a `dyn Queue`; `None` where the device is
    /// real. The engine's per-request path reaches such a device by its type
    /// instead (`worker_queue`).
    fn device_time(&mut self) -> Option<&mut dyn DeviceTime> {
        None
    }
    /// Commands accepted and not yet reaped, where the backend counts them.
    fn commands_in_flight(&self) -> Option<u32> {
        None
    }
    /// Address several files: `IoCmd::file` = i goes to `fds[i]` (`fds[0]` is
    /// the descriptor the queue was made with). Called before the clock starts.
    fn set_files(&mut self, _fds: &[std::os::fd::RawFd]) -> DevResult<()> {
        Err(perform::one_file_only(self.name()))
    }
}
