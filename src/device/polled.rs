//! Polled I/O (`hipri=1`) at setup: refused, with the reason, where it cannot
//! work. Backends call this when they open a queue; the facts it checks (the
//! block queue under the file, its `io_poll`) belong to `sys::blockdev`.

use std::os::fd::RawFd;

use super::{DevResult, DeviceError};
use crate::sys::blockdev::{block_queue_of_fd, iopoll_missing_message};

fn fd_flags(fd: RawFd) -> std::io::Result<libc::c_int> {
    // SAFETY: F_GETFL only reads the descriptor's status flags.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if fl < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fl)
}

/// Refuse polled I/O (`hipri=1`) where it cannot work, naming the reason: the file
/// must be open with O_DIRECT, and the block queue under it must have poll queues.
pub fn check_polled_io(fd: RawFd) -> DevResult<()> {
    let fl = fd_flags(fd).map_err(|e| DeviceError::io("hipri: fcntl(F_GETFL)", e))?;
    if fl & libc::O_DIRECT == 0 {
        return Err(DeviceError::Unsupported(
            "hipri=1: polled I/O needs direct=1 (O_DIRECT); buffered I/O is served from the \
             page cache and never reaches a device queue that could be polled"
                .into(),
        ));
    }
    let q = block_queue_of_fd(fd).map_err(|why| {
        DeviceError::Unsupported(format!(
            "hipri=1: cannot find the block device to poll: {why}; polled I/O needs a block \
             device with poll queues (NVMe with poll_queues=N)"
        ))
    })?;
    match q.io_poll() {
        Some(true) => Ok(()),
        Some(false) => Err(DeviceError::Unsupported(iopoll_missing_message(&q))),
        None => Err(DeviceError::Unsupported(format!(
            "{}: {}/queue/io_poll is missing; polled I/O needs a driver with poll queues \
             (NVMe with poll_queues=N)",
            q.disk,
            q.sysfs.display()
        ))),
    }
}
