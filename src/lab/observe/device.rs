//! The test devices and what study 004 builds on them: the loop or zram device
//! and the ext4 filesystem mounted on it, and the study's temp dir. Each is
//! undone by a guard and the cleanup registry.

use std::ffi::CString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::cmd::{run_cmd, tool};
use crate::sys::cleanup::{self, CleanupId};
use crate::sys::loopdev::LoopDev;
use crate::sys::zram::Zram;

/// The device under test, kept until the filesystem on it is unmounted.
pub(super) enum Device {
    Loop(LoopDev),
    Zram(Zram),
}

impl Device {
    pub(super) fn name(&self) -> String {
        match self {
            Device::Loop(l) => l.name(),
            Device::Zram(z) => z.name(),
        }
    }
    pub(super) fn path(&self) -> PathBuf {
        match self {
            Device::Loop(l) => l.path(),
            Device::Zram(z) => z.path(),
        }
    }
}

/// (reads, writes) completed by a block device, from /sys/block/NAME/stat.
pub(super) fn dev_ios(name: &str) -> Result<(u64, u64)> {
    Ok(crate::sys::blockdev::BlockDev::from_name(name)?.completed_ios()?)
}

/// An ext4 filesystem we made and mounted; unmounted when dropped.
pub(super) struct Mounted {
    pub(super) dir: PathBuf,
    cleanup: Option<CleanupId>,
}

impl Mounted {
    pub(super) fn make(dev: &Path, dir: &Path) -> Result<Mounted> {
        // Inode tables and journal written now, so no lazy-init thread writes to
        // the device while pgbench is measured.
        run_cmd(
            Command::new(tool("mkfs.ext4")?)
                .args([
                    "-q",
                    "-F",
                    "-E",
                    "lazy_itable_init=0,lazy_journal_init=0,nodiscard",
                ])
                .arg(dev),
            &format!("mkfs.ext4 {}", dev.display()),
        )?;
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let cdev = CString::new(dev.as_os_str().as_encoded_bytes())?;
        let cdir = CString::new(dir.as_os_str().as_encoded_bytes())?;
        // SAFETY: valid NUL-terminated strings; no mount data.
        let r = unsafe {
            libc::mount(
                cdev.as_ptr(),
                cdir.as_ptr(),
                c"ext4".as_ptr(),
                libc::MS_NOATIME,
                std::ptr::null(),
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("mounting {} on {}", dev.display(), dir.display()));
        }
        let d = dir.to_path_buf();
        let cleanup = cleanup::register(format!("unmount {}", dir.display()), move || unmount(&d));
        Ok(Mounted {
            dir: dir.to_path_buf(),
            cleanup: Some(cleanup),
        })
    }
}

fn unmount(dir: &Path) -> Result<()> {
    let c = CString::new(dir.as_os_str().as_encoded_bytes())?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        // SAFETY: c is a valid path string.
        if unsafe { libc::umount2(c.as_ptr(), 0) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINVAL) | Some(libc::ENOENT) => return Ok(()),
            Some(libc::EBUSY) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50))
            }
            _ => return Err(e).with_context(|| format!("unmounting {}", dir.display())),
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Some(id) = self.cleanup.take()
            && let Some(Err(f)) = cleanup::run(id)
        {
            eprintln!("iolab: warning: {f}");
        }
    }
}

/// The study's directory in /var/tmp (the loop device's image, the mount point,
/// the servers' logs); removed when dropped, and by the cleanup registry after a
/// second Ctrl-C, which ends the process without running destructors.
pub(super) struct StudyDir {
    pub(super) path: PathBuf,
    cleanup: Option<CleanupId>,
}

impl StudyDir {
    pub(super) fn create() -> Result<StudyDir> {
        let path = tempfile::Builder::new()
            .prefix("iolab-observe-")
            .tempdir_in("/var/tmp")
            .context("creating a temp dir in /var/tmp")?
            .keep();
        let p = path.clone();
        let cleanup = cleanup::register(format!("remove {}", path.display()), move || {
            fs::remove_dir_all(&p).or_else(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    Ok(())
                } else {
                    Err(e)
                }
            })
        });
        let d = StudyDir {
            path,
            cleanup: Some(cleanup),
        };
        // The servers' users must reach the mount point inside it.
        fs::set_permissions(&d.path, fs::Permissions::from_mode(0o755))
            .with_context(|| format!("chmod 755 {}", d.path.display()))?;
        Ok(d)
    }

    /// Remove it now, reporting a failure.
    pub(super) fn close(mut self) -> Result<()> {
        match self.cleanup.take().and_then(cleanup::run) {
            Some(Err(f)) => Err(anyhow::Error::new(f)),
            _ => Ok(()),
        }
    }
}

impl Drop for StudyDir {
    fn drop(&mut self) {
        if let Some(id) = self.cleanup.take()
            && let Some(Err(f)) = cleanup::run(id)
        {
            eprintln!("iolab: warning: {f}");
        }
    }
}
