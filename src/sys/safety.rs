//! Refuse to write to a block device that holds something: a mounted filesystem,
//! a holder (dm, md, bcache stacked on it), active swap, or any on-disk signature
//! (filesystem, partition table, RAID/LVM/LUKS label).
//!
//! Overrides: `allow_destructive` accepts everything. `allow_mounted_write` (fio's
//! `allow_mounted_write=1`) accepts the mounted case only: a device that is
//! mounted (itself or one of its partitions), together with the signatures that
//! come with being mounted (its filesystem, the disk's partition table). It never
//! accepts a holder or swap, nor an unmounted device that carries a signature.

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use super::blockdev::{BlockDev, dev_split, holders_of, parse_dev};
use super::signature::{self, Signature};

/// One reason a block device is not free to be overwritten.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hazard {
    /// `dev` (the target or one of its partitions) is mounted.
    Mounted {
        dev: String,
        mountpoint: String,
        fstype: String,
    },
    /// Other block devices are stacked on `dev` (`/sys/class/block/DEV/holders`).
    Holders { dev: String, holders: Vec<String> },
    /// `dev` is active swap (`/proc/swaps`).
    Swap { dev: String },
    /// The target carries an on-disk signature.
    Signature(Signature),
}

impl Hazard {
    fn describe(&self, target: &str) -> String {
        match self {
            Hazard::Mounted {
                dev,
                mountpoint,
                fstype,
            } if dev == target => format!("is mounted on {mountpoint} ({fstype})"),
            Hazard::Mounted {
                dev,
                mountpoint,
                fstype,
            } => format!("has partition {dev} mounted on {mountpoint} ({fstype})"),
            Hazard::Holders { dev, holders } if dev == target => {
                format!("is in use by {} (sysfs holders)", holders.join(", "))
            }
            Hazard::Holders { dev, holders } => format!(
                "has partition {dev} in use by {} (sysfs holders)",
                holders.join(", ")
            ),
            Hazard::Swap { dev } if dev == target => "is active swap (/proc/swaps)".to_string(),
            Hazard::Swap { dev } => format!("has partition {dev} as active swap (/proc/swaps)"),
            Hazard::Signature(s) => format!("holds {s}"),
        }
    }
}

/// Why a write to a block device was refused (or could not be checked).
#[derive(Debug, thiserror::Error)]
pub enum SafetyError {
    #[error("{device} {reasons}; pass {remedy} to write anyway")]
    Refused {
        device: String,
        reasons: String,
        remedy: &'static str,
        hazards: Vec<Hazard>,
    },
    #[error(
        "cannot check whether {device} is safe to write ({why}); \
         pass --allow-destructive to write without the check"
    )]
    Uncheckable { device: String, why: String },
}

/// Everything that makes `path` (a block device node) unsafe to overwrite.
pub fn inspect(path: &Path) -> Result<Vec<Hazard>, SafetyError> {
    let unc = |why: String| SafetyError::Uncheckable {
        device: path.display().to_string(),
        why,
    };
    let dev = BlockDev::from_path(path).map_err(|e| unc(e.to_string()))?;
    let mut devs = vec![dev.clone()];
    devs.extend(dev.partitions().map_err(|e| unc(e.to_string()))?);
    let nums: Vec<(u32, u32)> = devs.iter().map(|d| (d.major, d.minor)).collect();
    let name_of = |n: (u32, u32)| {
        devs.iter()
            .find(|d| (d.major, d.minor) == n)
            .map(|d| d.name.clone())
            .unwrap_or_default()
    };

    let mut hazards = Vec::new();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| unc(format!("cannot read /proc/self/mountinfo: {e}")))?;
    for m in mounts_of(&mountinfo, &nums, stat_rdev) {
        hazards.push(Hazard::Mounted {
            dev: name_of(m.dev),
            mountpoint: m.mountpoint,
            fstype: m.fstype,
        });
    }
    for d in &devs {
        let holders = holders_of(Path::new("/sys/class/block"), &d.name)
            .map_err(|e| unc(format!("cannot list holders of {}: {e}", d.name)))?;
        if !holders.is_empty() {
            hazards.push(Hazard::Holders {
                dev: d.name.clone(),
                holders,
            });
        }
    }
    match std::fs::read_to_string("/proc/swaps") {
        Ok(swaps) => {
            for n in swap_devices(&swaps, &nums, stat_rdev) {
                hazards.push(Hazard::Swap { dev: name_of(n) });
            }
        }
        // A kernel without swap support has no /proc/swaps, hence no active swap.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(unc(format!("cannot read /proc/swaps: {e}"))),
    }
    let f = File::open(path).map_err(|e| unc(format!("cannot open it to read: {e}")))?;
    let size = dev.size_bytes().map_err(|e| unc(e.to_string()))?;
    let sigs = signature::scan(&f, size)
        .map_err(|e| unc(format!("reading its first blocks failed: {e}")))?;
    hazards.extend(sigs.into_iter().map(Hazard::Signature));
    Ok(hazards)
}

/// The hazards that remain after applying the overrides (empty: write allowed).
pub fn unaccepted(
    hazards: &[Hazard],
    allow_destructive: bool,
    allow_mounted_write: bool,
) -> Vec<Hazard> {
    if allow_destructive {
        return Vec::new();
    }
    let mounted = hazards.iter().any(|h| matches!(h, Hazard::Mounted { .. }));
    hazards
        .iter()
        .filter(|h| match h {
            Hazard::Mounted { .. } | Hazard::Signature(_) => !(mounted && allow_mounted_write),
            Hazard::Holders { .. } | Hazard::Swap { .. } => true,
        })
        .cloned()
        .collect()
}

/// Check before writing to the block device at `path`; Ok when nothing is there
/// or the overrides accept what is.
pub fn check_block_write(
    path: &Path,
    allow_destructive: bool,
    allow_mounted_write: bool,
) -> Result<(), SafetyError> {
    if allow_destructive {
        return Ok(());
    }
    let hazards = inspect(path)?;
    let left = unaccepted(&hazards, allow_destructive, allow_mounted_write);
    if left.is_empty() {
        return Ok(());
    }
    let target = BlockDev::from_path(path)
        .map(|d| d.name)
        .unwrap_or_default();
    let reasons: Vec<String> = left.iter().map(|h| h.describe(&target)).collect();
    let only_mount = left
        .iter()
        .all(|h| matches!(h, Hazard::Mounted { .. } | Hazard::Signature(_)))
        && left.iter().any(|h| matches!(h, Hazard::Mounted { .. }));
    Err(SafetyError::Refused {
        device: path.display().to_string(),
        reasons: reasons.join(", "),
        remedy: if only_mount {
            "--allow-mounted-write (fio: allow_mounted_write=1) or --allow-destructive"
        } else {
            "--allow-destructive"
        },
        hazards: left,
    })
}

fn stat_rdev(path: &str) -> Option<(u32, u32)> {
    let md = std::fs::metadata(path).ok()?;
    md.file_type()
        .is_block_device()
        .then(|| dev_split(md.rdev()))
}

/// A mount of one of the devices we look for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountOf {
    pub dev: (u32, u32),
    pub mountpoint: String,
    pub fstype: String,
}

/// Mounts of any of `devs` in mountinfo text: matched by the `major:minor` field,
/// and by the mount source's device node, which catches filesystems (btrfs) whose
/// `major:minor` is an anonymous device rather than the disk (the /proc/mounts
/// view of the same mount).
pub fn mounts_of(
    mountinfo: &str,
    devs: &[(u32, u32)],
    rdev_of: impl Fn(&str) -> Option<(u32, u32)>,
) -> Vec<MountOf> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let Some(sep) = f.iter().position(|w| *w == "-") else {
            continue;
        };
        if f.len() < 5 || f.len() < sep + 3 {
            continue;
        }
        let fstype = unescape(f[sep + 1]);
        let source = unescape(f[sep + 2]);
        let by_num = parse_dev(f[2]).filter(|n| devs.contains(n));
        let by_src = if by_num.is_none() && source.starts_with('/') {
            rdev_of(&source).filter(|n| devs.contains(n))
        } else {
            None
        };
        if let Some(dev) = by_num.or(by_src) {
            out.push(MountOf {
                dev,
                mountpoint: unescape(f[4]),
                fstype,
            });
        }
    }
    out
}

/// Devices among `devs` that /proc/swaps lists as active.
pub fn swap_devices(
    swaps: &str,
    devs: &[(u32, u32)],
    rdev_of: impl Fn(&str) -> Option<(u32, u32)>,
) -> Vec<(u32, u32)> {
    swaps
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|name| rdev_of(&unescape(name)))
        .filter(|n| devs.contains(n))
        .collect()
}

/// The kernel escapes space, tab, newline and backslash in mount fields as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
40 22 7:3 / /mnt/my\\040disk rw,relatime shared:20 - ext4 /dev/loop3 rw
41 22 0:45 / /mnt/b rw,relatime shared:21 - btrfs /dev/loop5 rw,space_cache=v2
42 22 0:22 / /proc rw - proc proc rw
";

    fn fake_rdev(p: &str) -> Option<(u32, u32)> {
        match p {
            "/dev/loop3" => Some((7, 3)),
            "/dev/loop5" => Some((7, 5)),
            "/dev/loop6" => Some((7, 6)),
            "/dev/vda" => Some((254, 0)),
            _ => None,
        }
    }

    #[test]
    fn mount_found_by_number_with_escaped_mountpoint() {
        let m = mounts_of(MOUNTINFO, &[(7, 3)], fake_rdev);
        assert_eq!(
            m,
            [MountOf {
                dev: (7, 3),
                mountpoint: "/mnt/my disk".into(),
                fstype: "ext4".into()
            }]
        );
    }

    #[test]
    fn btrfs_mount_found_by_source_path() {
        let m = mounts_of(MOUNTINFO, &[(7, 5)], fake_rdev);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].mountpoint, "/mnt/b");
        assert!(mounts_of(MOUNTINFO, &[(7, 4)], fake_rdev).is_empty());
    }

    #[test]
    fn swaps_by_device() {
        let swaps = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                     /dev/loop6                              partition\t1020\t\t0\t\t-2\n\
                     /swapfile                               file\t\t1020\t\t0\t\t-3\n";
        assert_eq!(swap_devices(swaps, &[(7, 6), (7, 3)], fake_rdev), [(7, 6)]);
        assert!(swap_devices(swaps, &[(7, 3)], fake_rdev).is_empty());
    }

    fn ext4_sig() -> Hazard {
        Hazard::Signature(Signature {
            kind: "ext4",
            what: "an ext4 filesystem",
            offset: 1080,
            magic: "superblock magic",
        })
    }

    #[test]
    fn overrides() {
        let mounted = Hazard::Mounted {
            dev: "loop3".into(),
            mountpoint: "/mnt".into(),
            fstype: "ext4".into(),
        };
        let swap = Hazard::Swap {
            dev: "loop3".into(),
        };
        let holders = Hazard::Holders {
            dev: "loop3".into(),
            holders: vec!["dm-0".into()],
        };
        let mounted_fs = [mounted.clone(), ext4_sig()];
        assert_eq!(unaccepted(&mounted_fs, false, false).len(), 2);
        assert!(unaccepted(&mounted_fs, false, true).is_empty());
        assert!(unaccepted(&mounted_fs, true, false).is_empty());
        // Unmounted filesystem: allow_mounted_write does not apply.
        assert_eq!(unaccepted(&[ext4_sig()], false, true), [ext4_sig()]);
        let only_swap = std::slice::from_ref(&swap);
        assert_eq!(unaccepted(only_swap, false, true), only_swap);
        assert_eq!(
            unaccepted(&[mounted, holders.clone()], false, true),
            std::slice::from_ref(&holders)
        );
        assert!(unaccepted(&[swap, holders], true, false).is_empty());
    }

    #[test]
    fn descriptions_name_what_was_found() {
        assert_eq!(
            ext4_sig().describe("loop3"),
            "holds an ext4 filesystem (superblock magic at byte 1080)"
        );
        let m = Hazard::Mounted {
            dev: "sdb1".into(),
            mountpoint: "/data".into(),
            fstype: "xfs".into(),
        };
        assert_eq!(
            m.describe("sdb"),
            "has partition sdb1 mounted on /data (xfs)"
        );
        assert_eq!(m.describe("sdb1"), "is mounted on /data (xfs)");
    }

    #[test]
    fn unescape_octal() {
        assert_eq!(unescape("/a\\040b\\011c\\134d"), "/a b\tc\\d");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape("/trailing\\04"), "/trailing\\04");
    }
}
