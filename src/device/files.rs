//! The descriptors a queue addresses: `IoCmd::file` indexes this table (index
//! 0 is the descriptor the queue was made with). A job with `nrfiles` > 1 hands
//! its queue every file's descriptor before the clock starts
//! ([`super::Queue::set_files`]); the lookup per request is one bounds-checked
//! load.

use std::os::fd::RawFd;

use super::trim::TrimKind;
use super::{DevResult, DeviceError};

/// Refuse a descriptor that is not open, before a backend builds a queue on
/// it: the error names the backend and the descriptor.
pub fn check_open(fd: RawFd, backend: &str) -> DevResult<()> {
    // SAFETY: F_GETFD only checks that the descriptor is open.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(DeviceError::last_os(format!("{backend}: fd {fd}")));
    }
    Ok(())
}

#[derive(Clone, Debug)]
pub struct FileTable {
    fds: Vec<RawFd>,
    /// How each file is trimmed (block device or file), found when the table
    /// is made so a trim costs no fstat.
    trims: Vec<TrimKind>,
}

impl FileTable {
    pub fn one(fd: RawFd) -> FileTable {
        FileTable {
            fds: vec![fd],
            trims: vec![TrimKind::of(fd)],
        }
    }

    /// The descriptor of file `i`; -1 (the call fails with EBADF, never a
    /// wrong file) for an index the table does not hold.
    #[inline]
    pub fn fd(&self, i: u16) -> RawFd {
        self.fds.get(usize::from(i)).copied().unwrap_or(-1)
    }

    pub fn all(&self) -> &[RawFd] {
        &self.fds
    }

    /// How file `i` is trimmed (an index the table does not hold gets the
    /// default, whose call then fails with EBADF on descriptor -1).
    #[inline]
    pub fn trim_kind(&self, i: u16) -> TrimKind {
        self.trims.get(usize::from(i)).copied().unwrap_or_default()
    }

    /// Replace the table; `fds` must not be empty.
    pub fn set(&mut self, fds: &[RawFd]) -> super::DevResult<()> {
        if fds.is_empty() || fds.len() > usize::from(u16::MAX) + 1 {
            return Err(super::DeviceError::Unsupported(format!(
                "{} files given to one queue; between 1 and 65536 can be addressed",
                fds.len()
            )));
        }
        self.fds = fds.to_vec();
        self.trims = fds.iter().map(|&fd| TrimKind::of(fd)).collect();
        Ok(())
    }
}
