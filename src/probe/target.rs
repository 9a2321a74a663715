//! What `iolab probe TARGET` measures: the target resolved, refused, or (for a
//! directory) a temp file of our own laid out inside it.
//!
//! The probe reads; a block device is opened read-only and nothing on it is
//! touched unless `--write` was given and the safety check finds it free.

use std::ffi::CString;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::device::target::{TargetError, TargetSpec, open_target};
use crate::sys::safety::{self, Hazard};

/// Bytes of the temp file laid out in a directory target: large enough that
/// 4 KiB random reads rarely repeat within a run, small enough to lay out in a
/// second on a slow disk.
pub const TEMP_FILE_BYTES: u64 = 64 << 20;

/// Where the measured path came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetOrigin {
    /// An existing regular file, used as it is.
    File,
    BlockDevice,
    /// A temp file iolab created inside the given directory (removed afterwards).
    TempFileInDirectory,
}

/// A resolved probe target. Dropping it removes the temp file, if any.
#[derive(Debug)]
pub struct ProbeTarget {
    /// What the user named.
    pub given: PathBuf,
    /// What is opened and measured.
    pub path: PathBuf,
    pub origin: TargetOrigin,
    /// File system type of a file target (statfs), e.g. "ext4", "tmpfs".
    pub fs_type: Option<String>,
    /// Facts about the target worth telling before the numbers (mounted, ...).
    pub notes: Vec<String>,
    _temp: Option<tempfile::TempDir>,
}

/// Why a path cannot be probed; each message carries the way out.
// io::Errors are in the message and deliberately not a `source`: error chains
// printed with `{:#}` would say them twice.
#[derive(Debug, thiserror::Error)]
pub enum ProbeTargetError {
    #[error(
        "{shown}: no such file or directory; iolab probe needs an existing regular file, \
         block device, or directory (in a directory it creates a {mib} MiB temp file, \
         measures it and removes it)"
    )]
    NotFound { shown: String, mib: u64 },
    #[error(
        "{shown}: cannot stat: {err}; name a path this user may reach (check its spelling \
         and the permissions of its directories)"
    )]
    Stat { shown: String, err: std::io::Error },
    #[error(
        "{shown}: a {len}-byte file is too small for 4 KiB reads; probe a file of at \
         least 4096 bytes, or a directory (iolab lays out a temp file there)"
    )]
    TooSmall { shown: String, len: u64 },
    #[error(
        "{shown} is a character device (major {major}), not a block device; probe needs a \
         block device, a regular file or a directory{hint}"
    )]
    CharDevice {
        shown: String,
        major: u32,
        hint: &'static str,
    },
    #[error("{shown} is a {what}; probe needs a block device, a regular file or a directory")]
    Special { shown: String, what: &'static str },
    #[error(
        "{dir}: cannot create a temp directory to lay out a probe file: {err}; probe a \
         writable directory, or name an existing file or block device"
    )]
    TempDir { dir: String, err: std::io::Error },
    #[error(transparent)]
    Layout(#[from] TargetError),
    #[error(
        "{shown}: permission denied opening the block device for reading; run as \
         root (sudo iolab probe {shown}){group}; probe only reads"
    )]
    PermissionDenied { shown: String, group: String },
    #[error(
        "{shown}: cannot open for reading: {err}; probe a regular file or a directory on a \
         file system of that device instead"
    )]
    Open { shown: String, err: std::io::Error },
    #[error("probe --write on {shown}: {err}")]
    SafetyCheck {
        shown: String,
        err: safety::SafetyError,
    },
    #[error(
        "probe --write refused on {shown}: it {why}; writing would destroy that. Probe \
         without --write (reads only), or give a directory on it (probe writes a temp \
         file there)"
    )]
    WriteRefused { shown: String, why: String },
}

/// Resolve `given`, refusing what cannot be probed with a reason and a remedy.
pub fn resolve(given: &Path, write: bool) -> Result<ProbeTarget, ProbeTargetError> {
    let shown = given.display();
    let md = match std::fs::metadata(given) {
        Ok(md) => md,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ProbeTargetError::NotFound {
                shown: shown.to_string(),
                mib: TEMP_FILE_BYTES >> 20,
            });
        }
        Err(err) => {
            return Err(ProbeTargetError::Stat {
                shown: shown.to_string(),
                err,
            });
        }
    };
    let ft = md.file_type();
    if ft.is_dir() {
        return temp_file_in(given);
    }
    if ft.is_file() {
        if md.len() < 4096 {
            return Err(ProbeTargetError::TooSmall {
                shown: shown.to_string(),
                len: md.len(),
            });
        }
        let mut notes = Vec::new();
        if write {
            notes.push(format!(
                "--write: random 4 KiB writes overwrite data in {shown} (its size is kept)"
            ));
        }
        return Ok(ProbeTarget {
            given: given.to_path_buf(),
            path: given.to_path_buf(),
            origin: TargetOrigin::File,
            fs_type: fs_type_of(given),
            notes,
            _temp: None,
        });
    }
    if ft.is_block_device() {
        return block_device(given, write);
    }
    if ft.is_char_device() {
        let name = given.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let hint = if name.starts_with("ng") {
            "; NVMe generic nodes (/dev/ngXnY) take only passthrough commands, which iolab \
             does not issue: probe the block node /dev/nvmeXnY"
        } else {
            ""
        };
        return Err(ProbeTargetError::CharDevice {
            shown: shown.to_string(),
            major: libc::major(md.rdev()),
            hint,
        });
    }
    let what = if ft.is_fifo() {
        "FIFO"
    } else if ft.is_socket() {
        "socket"
    } else {
        "special file"
    };
    Err(ProbeTargetError::Special {
        shown: shown.to_string(),
        what,
    })
}

fn temp_file_in(dir: &Path) -> Result<ProbeTarget, ProbeTargetError> {
    let temp = tempfile::Builder::new()
        .prefix(".iolab-probe-")
        .tempdir_in(dir)
        .map_err(|err| ProbeTargetError::TempDir {
            dir: dir.display().to_string(),
            err,
        })?;
    let path = temp.path().join("probe.dat");
    let spec = TargetSpec {
        size: Some(TEMP_FILE_BYTES),
        writes: true,
        ..TargetSpec::new("probe", &path)
    };
    open_target(&spec)?;
    Ok(ProbeTarget {
        given: dir.to_path_buf(),
        fs_type: fs_type_of(&path),
        notes: vec![format!(
            "directory: measuring a {} MiB temp file laid out with random data ({}), removed afterwards",
            TEMP_FILE_BYTES >> 20,
            path.display()
        )],
        path,
        origin: TargetOrigin::TempFileInDirectory,
        _temp: Some(temp),
    })
}

fn block_device(path: &Path, write: bool) -> Result<ProbeTarget, ProbeTargetError> {
    let shown = path.display();
    // Open once here so a permission problem is reported as such, with the way out,
    // before anything else is tried.
    if let Err(e) = std::fs::File::open(path) {
        match e.raw_os_error() {
            Some(libc::EACCES) | Some(libc::EPERM) => {
                let md = std::fs::metadata(path).ok();
                let gid = md.as_ref().map_or(0, |m| m.gid());
                let group_readable = md.as_ref().is_some_and(|m| m.mode() & 0o040 != 0);
                let group = if group_readable && gid != 0 {
                    format!(
                        " or join the group that may read it ({}, gid {gid})",
                        group_name(gid).unwrap_or_else(|| "unnamed".into())
                    )
                } else {
                    String::new()
                };
                return Err(ProbeTargetError::PermissionDenied {
                    shown: shown.to_string(),
                    group,
                });
            }
            _ => {
                return Err(ProbeTargetError::Open {
                    shown: shown.to_string(),
                    err: e,
                });
            }
        }
    }
    let hazards = match safety::inspect(path) {
        Ok(h) => h,
        Err(err) if write => {
            return Err(ProbeTargetError::SafetyCheck {
                shown: shown.to_string(),
                err,
            });
        }
        Err(e) => {
            return Ok(ProbeTarget {
                given: path.to_path_buf(),
                path: path.to_path_buf(),
                origin: TargetOrigin::BlockDevice,
                fs_type: None,
                notes: vec![format!(
                    "could not check what {shown} holds ({e}); probe only reads"
                )],
                _temp: None,
            });
        }
    };
    if write {
        let left = safety::unaccepted(&hazards, false, false);
        if !left.is_empty() {
            let why: Vec<String> = left.iter().map(describe).collect();
            return Err(ProbeTargetError::WriteRefused {
                shown: shown.to_string(),
                why: why.join(", "),
            });
        }
    }
    let mut notes: Vec<String> = hazards
        .iter()
        .map(|h| match h {
            Hazard::Mounted { .. } | Hazard::Holders { .. } | Hazard::Swap { .. } => format!(
                "{shown} {}: probe only reads, which is safe; I/O from its other users may disturb the numbers",
                describe(h)
            ),
            Hazard::Signature(_) => {
                format!("{shown} {}: probe only reads, nothing is changed", describe(h))
            }
        })
        .collect();
    if write {
        notes.push(format!(
            "--write: random 4 KiB writes overwrite data on {shown} (the safety check found \
             nothing on it)"
        ));
    }
    Ok(ProbeTarget {
        given: path.to_path_buf(),
        path: path.to_path_buf(),
        origin: TargetOrigin::BlockDevice,
        fs_type: None,
        notes,
        _temp: None,
    })
}

fn describe(h: &Hazard) -> String {
    match h {
        Hazard::Mounted {
            dev,
            mountpoint,
            fstype,
        } => format!("has {dev} mounted on {mountpoint} ({fstype})"),
        Hazard::Holders { dev, holders } => {
            format!("has {dev} in use by {}", holders.join(", "))
        }
        Hazard::Swap { dev } => format!("has {dev} as active swap"),
        Hazard::Signature(s) => format!("holds {s}"),
    }
}

fn group_name(gid: u32) -> Option<String> {
    let text = std::fs::read_to_string("/etc/group").ok()?;
    text.lines().find_map(|l| {
        let mut f = l.split(':');
        let name = f.next()?;
        let id: u32 = f.nth(1)?.parse().ok()?;
        (id == gid).then(|| name.to_string())
    })
}

/// The file system under `path` by statfs magic; `None` when statfs fails.
pub fn fs_type_of(path: &Path) -> Option<String> {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: zeroed statfs is a valid out-parameter; c is NUL-terminated.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` outlives the call and is NUL-terminated; `st` is ours and
    // writable.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(fs_name(st.f_type as u64))
}

/// Names for the file systems a storage engineer meets; others by magic number.
pub fn fs_name(magic: u64) -> String {
    let name = match magic {
        0xEF53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x0102_1994 => "tmpfs",
        0x794C_7630 => "overlayfs",
        0xF2F5_2010 => "f2fs",
        0x6969 => "nfs",
        0xFE53_4D42 => "smb2",
        0x6573_5546 => "fuse",
        0x2FC1_2FC1 => "zfs",
        0x8584_58F6 => "ramfs",
        0x4d44 => "vfat",
        0x5346_544E => "ntfs",
        0x0102_1997 => "9p",
        0x6165_6673 => "virtiofs",
        _ => return format!("unknown (magic {magic:#x})"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_missing_small_and_char_targets_with_remedy() {
        let e = resolve(Path::new("/nonexistent/iolab-x"), false).unwrap_err();
        assert!(e.to_string().contains("no such file"), "{e}");
        let e = resolve(Path::new("/dev/null"), false).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        let f = tempfile::NamedTempFile::new().unwrap();
        let e = resolve(f.path(), false).unwrap_err();
        assert!(e.to_string().contains("too small"), "{e}");
    }

    #[test]
    fn fs_names() {
        assert_eq!(fs_name(0xEF53), "ext4");
        assert_eq!(fs_name(0x0102_1994), "tmpfs");
        assert!(fs_name(7).contains("0x7"));
    }
}
