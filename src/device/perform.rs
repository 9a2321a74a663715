//! The synchronous backends' one shape: a request is performed by one system
//! call (sometimes two: `sync`'s lseek) inside `queue`, and returned
//! completed. Each such backend implements [`Perform`], the call itself;
//! the [`Queue`] around it (caps, the completion, nothing in flight, nothing
//! to commit or reap) is written once here, for every `Perform`, and
//! monomorphised for each: the per-request path is the backend's call and
//! nothing more (no allocation, no further system call, no indirect call
//! inside `queue`).

use std::os::fd::RawFd;

use super::{BackendStats, Caps, Completion, DevResult, DeviceError, Queue, Queued, Wait};
use crate::request::IoCmd;

/// A backend that performs each request with its own system call, in the
/// caller's context (psync, pvsync2, sync, vsync, pvsync, falloc, ftruncate,
/// mmap, filecreate, filestat, filedelete, cpuio). Its [`Queue`] comes from
/// this module.
pub trait Perform: Send + 'static {
    /// The engine's fio name ([`Queue::name`]).
    fn engine_name(&self) -> &'static str;
    /// Perform `cmd` now: the bytes it moved, or a negative errno.
    fn perform_one(&mut self, cmd: &IoCmd) -> i64;
    /// The backend's counters ([`Queue::stats`]).
    fn counters(&self) -> BackendStats;
    /// [`Queue::set_files`]: address several files, `IoCmd::file` = i going
    /// to `fds[i]`. A backend that addresses one file keeps the default.
    fn address_files(&mut self, _fds: &[RawFd]) -> DevResult<()> {
        Err(one_file_only(self.engine_name()))
    }
}

/// The error of a backend asked to address several files that addresses one.
pub(crate) fn one_file_only(name: &str) -> DeviceError {
    DeviceError::Unsupported(format!(
        "backend {name} addresses one file; use a file engine (psync, sync, libaio, io_uring) \
         for nrfiles > 1"
    ))
}

impl<P: Perform> Queue for P {
    fn name(&self) -> &'static str {
        self.engine_name()
    }

    fn caps(&self) -> Caps {
        Caps {
            sync: true,
            ..Caps::default()
        }
    }

    #[inline]
    fn queue(&mut self, cmd: &IoCmd) -> DevResult<Queued> {
        let result = self.perform_one(cmd);
        Ok(Queued::Done(Completion {
            slot: cmd.slot,
            result,
            dev_start: 0,
            dev_done: 0,
        }))
    }

    fn commit(&mut self) -> DevResult<u32> {
        Ok(0)
    }

    /// Nothing is ever in flight: every command completed inside `queue`.
    fn reap(&mut self, _wait: Wait, _out: &mut [Completion]) -> DevResult<usize> {
        Ok(0)
    }

    fn stats(&self) -> BackendStats {
        self.counters()
    }

    fn set_files(&mut self, fds: &[RawFd]) -> DevResult<()> {
        self.address_files(fds)
    }
}
