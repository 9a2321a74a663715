//! OS mechanics kept apart from the I/O path: safe target checks, the block
//! devices iolab creates for tests and studies (zram, loop), sysfs queue
//! attributes, and the undo registry with its signal policy.

pub mod blockdev;
pub mod cgroup;
pub mod cleanup;
pub mod fiemap;
pub mod loopdev;
pub mod numa;
pub mod safety;
pub mod signature;
pub mod zram;

/// Whether the process runs with root's effective uid (zram, loop, schedulers,
/// tracefs all need it).
pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// An operation that needs root, asked for without it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} needs root (running as uid {uid}); run iolab as root")]
pub struct NeedsRoot {
    pub what: String,
    pub uid: u32,
}

/// The error for `what`, naming the uid we run as.
pub fn needs_root(what: &str) -> NeedsRoot {
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    NeedsRoot {
        what: what.to_string(),
        uid,
    }
}
