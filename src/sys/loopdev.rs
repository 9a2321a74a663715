//! Loop devices over files, attached through the loop ioctls (no losetup), with
//! optional direct I/O to the backing file. Detached when the guard drops, or on
//! the abort path; AUTOCLEAR also detaches if the process dies without either.

use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};

use super::blockdev::{BlockDevError, read_trim};
use super::zram::NodeTimeout;

/// Why a loop device could not be attached, checked or detached. Causes are
/// part of the message and deliberately not a `source` (`{:#}` would say them
/// twice).
#[derive(Debug, thiserror::Error)]
pub enum LoopDevError {
    #[error(transparent)]
    NeedsRoot(#[from] super::NeedsRoot),
    #[error(
        "cannot open loop backing file {}: {err}; give an existing file this user may read \
         and write",
        path.display()
    )]
    Backing { path: PathBuf, err: std::io::Error },
    #[error("cannot open /dev/loop-control (loop driver missing? modprobe loop): {0}")]
    Control(std::io::Error),
    #[error("LOOP_CTL_GET_FREE: no free loop device: {0}")]
    NoFree(std::io::Error),
    #[error(transparent)]
    NoNode(#[from] NodeTimeout),
    #[error(
        "cannot open {}: {err}; run iolab as root, and leave the loop device to it while it \
         runs",
        path.display()
    )]
    Open { path: PathBuf, err: std::io::Error },
    #[error("attaching {} to {}: {err}", file.display(), dev.display())]
    Attach {
        file: PathBuf,
        dev: PathBuf,
        err: std::io::Error,
    },
    #[error("dup of loop fd: {0}")]
    Dup(std::io::Error),
    #[error("LOOP_CLR_FD on loop{n}: {err}")]
    Detach { n: u32, err: std::io::Error },
    #[error(
        "loop{n} over {} runs buffered: the backing filesystem does not support direct I/O \
         for it; use direct_io=false or a file on ext4/xfs",
        file.display()
    )]
    Buffered { n: u32, file: PathBuf },
    #[error("every free loop device was taken by another process before we could use it")]
    AllTaken,
    #[error(transparent)]
    Sysfs(#[from] BlockDevError),
}

type Result<T, E = LoopDevError> = std::result::Result<T, E>;
use super::cleanup::{self, CleanupId};

// <linux/loop.h>; the libc crate does not carry these.
const LOOP_SET_FD: libc::c_ulong = 0x4C00;
const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const LOOP_SET_STATUS64: libc::c_ulong = 0x4C04;
const LOOP_SET_DIRECT_IO: libc::c_ulong = 0x4C08;
const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
const LO_FLAGS_AUTOCLEAR: u32 = 4;
const LO_FLAGS_DIRECT_IO: u32 = 16;

#[repr(C)]
#[derive(Clone, Copy)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

#[repr(C)]
struct LoopConfig {
    fd: u32,
    block_size: u32,
    info: LoopInfo64,
    reserved: [u64; 8],
}

/// A loop device this process attached.
#[derive(Debug)]
pub struct LoopDev {
    number: u32,
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    backing: PathBuf,
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    direct_io: bool,
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(
            dead_code,
            reason = "held open for the loop device's lifetime; only iolab's tests read it"
        )
    )]
    dev: File,
    cleanup: Option<CleanupId>,
}

fn ioctl(fd: RawFd, req: libc::c_ulong, arg: libc::c_ulong) -> std::io::Result<libc::c_int> {
    // SAFETY: the loop ioctls used here take either an integer or a pointer to a
    // properly laid-out struct that outlives the call; the caller passes one of those.
    let r = unsafe { libc::ioctl(fd, req, arg) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl LoopDev {
    /// Attach `file` to a free loop device; with `direct_io` the loop driver reads
    /// and writes the file with O_DIRECT (no double caching), and attach fails if
    /// the backing filesystem cannot do that.
    pub fn attach(file: &Path, direct_io: bool) -> Result<LoopDev> {
        if !super::is_root() {
            return Err(super::needs_root("attaching a loop device").into());
        }
        let backing = OpenOptions::new()
            .read(true)
            .write(true)
            .open(file)
            .map_err(|err| LoopDevError::Backing {
                path: file.to_path_buf(),
                err,
            })?;
        let ctl = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/loop-control")
            .map_err(LoopDevError::Control)?;
        // Another process can take the device between GET_FREE and CONFIGURE (EBUSY);
        // asking again gives the next free one.
        for _ in 0..16 {
            let n =
                ioctl(ctl.as_raw_fd(), LOOP_CTL_GET_FREE, 0).map_err(LoopDevError::NoFree)? as u32;
            let path = PathBuf::from(format!("/dev/loop{n}"));
            super::zram::wait_for_node(&path)?;
            let dev = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map_err(|err| LoopDevError::Open {
                    path: path.clone(),
                    err,
                })?;
            match configure(&dev, &backing, direct_io) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => continue,
                Err(err) => {
                    return Err(LoopDevError::Attach {
                        file: file.to_path_buf(),
                        dev: path,
                        err,
                    });
                }
            }
            let undo_fd = dev.try_clone().map_err(LoopDevError::Dup)?;
            let cleanup = cleanup::register(format!("detach loop{n}"), move || {
                ioctl(undo_fd.as_raw_fd(), LOOP_CLR_FD, 0)
                    .map(|_| ())
                    .map_err(|err| LoopDevError::Detach { n, err })
            });
            let l = LoopDev {
                number: n,
                backing: file.to_path_buf(),
                direct_io,
                dev,
                cleanup: Some(cleanup),
            };
            if direct_io && !l.dio_active()? {
                return Err(LoopDevError::Buffered {
                    n,
                    file: file.to_path_buf(),
                });
            }
            return Ok(l);
        }
        Err(LoopDevError::AllTaken)
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn number(&self) -> u32 {
        self.number
    }

    pub fn name(&self) -> String {
        format!("loop{}", self.number)
    }

    /// `/dev/loopN`.
    pub fn path(&self) -> PathBuf {
        PathBuf::from(format!("/dev/loop{}", self.number))
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn backing_file(&self) -> &Path {
        &self.backing
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn direct_io_requested(&self) -> bool {
        self.direct_io
    }

    /// What the driver actually does (`/sys/block/loopN/loop/dio`).
    pub fn dio_active(&self) -> Result<bool> {
        Ok(read_trim(&PathBuf::from(format!(
            "/sys/block/loop{}/loop/dio",
            self.number
        )))? == "1")
    }

    /// The open device node, kept open for the device's lifetime.
    #[cfg(any(test, feature = "testing"))]
    pub fn file(&self) -> &File {
        &self.dev
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        if let Some(id) = self.cleanup.take()
            && let Some(Err(f)) = cleanup::run(id)
        {
            eprintln!("iolab: warning: {f}");
        }
    }
}

fn configure(dev: &File, backing: &File, direct_io: bool) -> std::io::Result<()> {
    let mut flags = LO_FLAGS_AUTOCLEAR;
    if direct_io {
        flags |= LO_FLAGS_DIRECT_IO;
    }
    // SAFETY: LoopInfo64 is plain old data; all-zero is its "nothing set" value.
    let mut info: LoopInfo64 = unsafe { std::mem::zeroed() };
    info.lo_flags = flags;
    let cfg = LoopConfig {
        fd: backing.as_raw_fd() as u32,
        block_size: 0,
        info,
        reserved: [0; 8],
    };
    match ioctl(
        dev.as_raw_fd(),
        LOOP_CONFIGURE,
        &cfg as *const LoopConfig as libc::c_ulong,
    ) {
        Ok(_) => Ok(()),
        // Kernels before 5.8 lack LOOP_CONFIGURE: the three-step way.
        Err(e) if e.raw_os_error() == Some(libc::ENOTTY) => {
            ioctl(
                dev.as_raw_fd(),
                LOOP_SET_FD,
                backing.as_raw_fd() as libc::c_ulong,
            )?;
            let mut info = info;
            info.lo_flags = LO_FLAGS_AUTOCLEAR;
            let r = ioctl(
                dev.as_raw_fd(),
                LOOP_SET_STATUS64,
                &info as *const LoopInfo64 as libc::c_ulong,
            )
            .and_then(|_| {
                if direct_io {
                    ioctl(dev.as_raw_fd(), LOOP_SET_DIRECT_IO, 1)?;
                }
                Ok(())
            });
            if r.is_err() {
                let _ = ioctl(dev.as_raw_fd(), LOOP_CLR_FD, 0);
            }
            r
        }
        Err(e) => Err(e),
    }
}
