//! Apply a placement with sched_setaffinity per thread, check it took, undo it.
//!
//! Every thread whose mask iolab changes gets its original mask recorded and an
//! undo registered in the process cleanup registry ([`crate::sys::cleanup`]), so
//! the mask comes back when the [`AffinityGuard`] drops, on the normal exit path,
//! and on a second Ctrl-C.

use std::collections::HashMap;
use std::io;

use crate::sys::cleanup::{self, CleanupId};

use super::topology::format_cpu_list;

/// Kernel thread id of the calling thread.
pub fn gettid() -> i32 {
    // SAFETY: gettid cannot fail.
    unsafe { libc::gettid() }
}

fn to_set(cpus: &[u32]) -> io::Result<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is plain bits; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    for &c in cpus {
        if c as usize >= max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cpu{c} is beyond the {max} CPUs a cpu_set_t holds"),
            ));
        }
        // SAFETY: index checked against the set's size above.
        unsafe { libc::CPU_SET(c as usize, &mut set) };
    }
    Ok(set)
}

/// The CPUs thread `tid` may run on (0 = the calling thread).
pub fn get_affinity(tid: i32) -> io::Result<Vec<u32>> {
    // SAFETY: as in to_set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer and size.
    let r = unsafe { libc::sched_getaffinity(tid, std::mem::size_of_val(&set), &mut set) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: index within the set's size.
    Ok((0..max)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .map(|c| c as u32)
        .collect())
}

/// Restrict thread `tid` (0 = the calling thread) to `cpus`.
pub fn set_affinity(tid: i32, cpus: &[u32]) -> io::Result<()> {
    if cpus.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "empty CPU set: a thread must be allowed at least one CPU",
        ));
    }
    let set = to_set(cpus)?;
    // SAFETY: valid pointer and size.
    let r = unsafe { libc::sched_setaffinity(tid, std::mem::size_of_val(&set), &set) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Logical CPU the calling thread runs on right now.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu has no arguments.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as u32)
}

/// Holds the original masks of every thread it changed and restores them on drop.
#[derive(Debug, Default)]
pub struct AffinityGuard {
    undo: HashMap<i32, CleanupId>,
}

/// Why pinning a thread, or putting its mask back, failed.
// The io::Error is in the message and deliberately not a `source`: error chains
// printed with `{:#}` would say it twice.
#[derive(Debug, thiserror::Error)]
pub enum AffinityError {
    #[error("affinity: thread id {0} is not a thread id (use gettid())")]
    NotATid(i32),
    #[error("reading affinity of thread {tid}: {err}")]
    Read { tid: i32, err: io::Error },
    #[error("setting affinity of thread {tid} to {cpus}: {err}")]
    Set {
        tid: i32,
        cpus: String,
        err: io::Error,
    },
    #[error("reading back affinity of thread {tid}: {err}")]
    ReadBack { tid: i32, err: io::Error },
    #[error(
        "affinity of thread {tid}: asked for {want}, the kernel kept {got} (offline CPUs or a \
         cpuset cgroup restricting this process?)"
    )]
    NotKept { tid: i32, want: String, got: String },
    #[error("restoring affinity of thread {tid} to {cpus}: {err}")]
    Restore {
        tid: i32,
        cpus: String,
        err: io::Error,
    },
    /// Every restore that failed, joined with `; `.
    #[error("{0}")]
    RestoreFailed(String),
}

fn restore(tid: i32, cpus: &[u32]) -> Result<(), AffinityError> {
    match set_affinity(tid, cpus) {
        Ok(()) => Ok(()),
        // The thread has exited: nothing left to restore.
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
        Err(err) => Err(AffinityError::Restore {
            tid,
            cpus: format_cpu_list(cpus),
            err,
        }),
    }
}

impl AffinityGuard {
    pub fn new() -> Self {
        Self::default()
    }

    /// Pin thread `tid` (a kernel thread id, not 0) to `cpus` and verify by reading
    /// the mask back. The first change of a thread records its original mask.
    pub fn apply(&mut self, tid: i32, cpus: &[u32]) -> Result<(), AffinityError> {
        if tid <= 0 {
            return Err(AffinityError::NotATid(tid));
        }
        if let std::collections::hash_map::Entry::Vacant(slot) = self.undo.entry(tid) {
            let orig = get_affinity(tid).map_err(|err| AffinityError::Read { tid, err })?;
            let id = cleanup::register(
                format!(
                    "restore CPU affinity of thread {tid} to {}",
                    format_cpu_list(&orig)
                ),
                move || restore(tid, &orig),
            );
            slot.insert(id);
        }
        set_affinity(tid, cpus).map_err(|err| AffinityError::Set {
            tid,
            cpus: format_cpu_list(cpus),
            err,
        })?;
        let mut want = cpus.to_vec();
        want.sort_unstable();
        want.dedup();
        let got = get_affinity(tid).map_err(|err| AffinityError::ReadBack { tid, err })?;
        if got != want {
            return Err(AffinityError::NotKept {
                tid,
                want: format_cpu_list(&want),
                got: format_cpu_list(&got),
            });
        }
        Ok(())
    }

    /// Threads whose masks are held.
    #[cfg(any(test, feature = "testing"))]
    pub fn threads(&self) -> Vec<i32> {
        let mut v: Vec<i32> = self.undo.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// Restore every original mask now and report failures.
    pub fn restore(mut self) -> Result<(), AffinityError> {
        self.restore_all()
    }

    fn restore_all(&mut self) -> Result<(), AffinityError> {
        let mut errors = Vec::new();
        for (_, id) in self.undo.drain() {
            if let Some(Err(f)) = cleanup::run(id) {
                errors.push(f.to_string());
            }
        }
        if !errors.is_empty() {
            return Err(AffinityError::RestoreFailed(errors.join("; ")));
        }
        Ok(())
    }
}

impl Drop for AffinityGuard {
    fn drop(&mut self) {
        if let Err(e) = self.restore_all() {
            eprintln!("iolab: warning: {e:#}");
        }
    }
}
