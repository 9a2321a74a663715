//! Block devices as sysfs shows them: names from dev_t or path, the whole disk
//! behind a partition, queue attributes, the block queue an open file's I/O
//! reaches, and a scheduler switch that undoes itself.
//!
//! This module is the one owner of these facts: backends (polled I/O checks),
//! `iolab probe`, the studies and block tracing all read them here.

use std::fs;
use std::io;
use std::os::fd::RawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::cleanup::{self, CleanupId};

const SYS_CLASS_BLOCK: &str = "/sys/class/block";

/// A block device (whole disk or partition) identified through sysfs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockDev {
    /// Kernel name: `loop3`, `vda`, `sda1`.
    pub name: String,
    /// The whole disk that owns the request queue (`sda` for `sda1`; `name` itself for a disk).
    pub disk: String,
    pub major: u32,
    pub minor: u32,
    pub partition: bool,
}

/// Why a block device, one of its sysfs attributes or its elevator could not be
/// read or set. Causes are part of the message and deliberately not a `source`:
/// error chains printed with `{:#}` would say them twice.
#[derive(Debug, thiserror::Error)]
pub enum BlockDevError {
    #[error("stat {}: {err}", path.display())]
    Stat { path: PathBuf, err: io::Error },
    #[error(
        "cannot stat {}: {err}; name an existing block device node (e.g. /dev/vda)",
        path.display()
    )]
    CannotStat { path: PathBuf, err: io::Error },
    #[error("{} is not a block device", .0.display())]
    NotBlockDevice(PathBuf),
    /// A failure about the device behind a node, said with the node's name.
    #[error("{} ({major}:{minor}): {inner}", path.display())]
    Node {
        path: PathBuf,
        major: u32,
        minor: u32,
        inner: Box<BlockDevError>,
    },
    #[error("no block device {major}:{minor} in /sys/dev/block: {err}")]
    NoDevNumber {
        major: u32,
        minor: u32,
        err: io::Error,
    },
    #[error("no block device named {name} in {SYS_CLASS_BLOCK}: {err}")]
    NoName { name: String, err: io::Error },
    #[error("{}/dev: unexpected content {text:?}", dir.display())]
    DevContent { dir: PathBuf, text: String },
    #[error("{}: expected a number, found {text:?}", path.display())]
    NotANumber { path: PathBuf, text: String },
    #[error(
        "cannot list {}: {err}; iolab reads block devices from sysfs, so mount it at /sys \
         (mount -t sysfs sysfs /sys)",
        dir.display()
    )]
    List { dir: PathBuf, err: io::Error },
    #[error(
        "cannot read {}: {err}; check that the device still exists and sysfs is mounted at /sys",
        path.display()
    )]
    Read { path: PathBuf, err: io::Error },
    #[error(
        "cannot write {value:?} to {}: {err}; run iolab as root, with a value the attribute \
         accepts",
        path.display()
    )]
    Write {
        path: PathBuf,
        value: String,
        err: io::Error,
    },
    #[error("unexpected sysfs path {}", .0.display())]
    SysfsPath(PathBuf),
    #[error(
        "{disk} has no I/O scheduler to set ({asked:?} asked): it is a bio-based device whose \
         requests bypass blk-mq scheduling"
    )]
    NoElevator { disk: String, asked: String },
    #[error("{} shows no current scheduler ({available})", path.display())]
    NoCurrentElevator { path: PathBuf, available: String },
    #[error("scheduler {asked:?} is not available for {disk} (available: {available})")]
    ElevatorNotAvailable {
        asked: String,
        disk: String,
        available: String,
    },
    #[error(transparent)]
    NeedsRoot(#[from] super::NeedsRoot),
}

type Result<T, E = BlockDevError> = std::result::Result<T, E>;

/// `major:minor` of a dev_t.
pub fn dev_split(rdev: u64) -> (u32, u32) {
    (libc::major(rdev), libc::minor(rdev))
}

/// `major:minor` of a block device node (`/dev/loop3`).
pub fn block_dev_numbers(path: &Path) -> Result<(u32, u32)> {
    let md = fs::metadata(path).map_err(|err| BlockDevError::Stat {
        path: path.to_path_buf(),
        err,
    })?;
    if !md.file_type().is_block_device() {
        return Err(BlockDevError::NotBlockDevice(path.to_path_buf()));
    }
    Ok(dev_split(md.rdev()))
}

/// The kernel's `dev_t` encoding used in block tracepoints (major << 20 | minor).
pub fn kernel_dev(major: u32, minor: u32) -> u32 {
    (major << 20) | minor
}

impl BlockDev {
    /// The block device behind a device node such as `/dev/loop3`.
    pub fn from_path(path: &Path) -> Result<BlockDev> {
        let md = fs::metadata(path).map_err(|err| BlockDevError::CannotStat {
            path: path.to_path_buf(),
            err,
        })?;
        if !md.file_type().is_block_device() {
            return Err(BlockDevError::NotBlockDevice(path.to_path_buf()));
        }
        let (major, minor) = dev_split(md.rdev());
        Self::from_dev(major, minor).map_err(|e| BlockDevError::Node {
            path: path.to_path_buf(),
            major,
            minor,
            inner: Box::new(e),
        })
    }

    /// The block device with this major:minor, through `/sys/dev/block/M:m`.
    pub fn from_dev(major: u32, minor: u32) -> Result<BlockDev> {
        let link = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
        let real = fs::canonicalize(&link).map_err(|err| BlockDevError::NoDevNumber {
            major,
            minor,
            err,
        })?;
        Self::from_sysfs_dir(&real)
    }

    /// The block device with this kernel name (`loop3`).
    pub fn from_name(name: &str) -> Result<BlockDev> {
        let dir = Path::new(SYS_CLASS_BLOCK).join(name);
        let real = fs::canonicalize(&dir).map_err(|err| BlockDevError::NoName {
            name: name.to_string(),
            err,
        })?;
        Self::from_sysfs_dir(&real)
    }

    fn from_sysfs_dir(real: &Path) -> Result<BlockDev> {
        let name = file_name(real)?;
        let dev = read_trim(&real.join("dev"))?;
        let (major, minor) = parse_dev(&dev).ok_or_else(|| BlockDevError::DevContent {
            dir: real.to_path_buf(),
            text: dev.clone(),
        })?;
        let partition = real.join("partition").exists();
        let disk = if partition {
            file_name(real.parent().unwrap_or(real))?
        } else {
            name.clone()
        };
        Ok(BlockDev {
            name,
            disk,
            major,
            minor,
            partition,
        })
    }

    /// Whether the disk is request-based (blk-mq: a `mq` directory in sysfs).
    /// Bio-based drivers (zram, brd, most device-mapper targets) allocate no
    /// requests, so only some block events fire for them.
    pub fn request_based(&self) -> bool {
        Path::new(SYS_CLASS_BLOCK)
            .join(&self.disk)
            .join("mq")
            .is_dir()
    }

    /// Reads and writes completed by the device so far (`stat`'s fields 1 and 5).
    pub fn completed_ios(&self) -> Result<(u64, u64)> {
        let path = self.sysfs_dir().join("stat");
        let text = read_trim(&path)?;
        let f: Vec<u64> = text
            .split_whitespace()
            .map(|v| v.parse())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| BlockDevError::NotANumber {
                path: path.clone(),
                text: text.clone(),
            })?;
        match f.as_slice() {
            [reads, _, _, _, writes, ..] => Ok((*reads, *writes)),
            _ => Err(BlockDevError::NotANumber { path, text }),
        }
    }

    /// `/dev/NAME` (devtmpfs names nodes after the kernel name).
    pub fn dev_path(&self) -> PathBuf {
        PathBuf::from("/dev").join(&self.name)
    }

    /// This device's sysfs directory (`/sys/class/block/NAME`).
    pub fn sysfs_dir(&self) -> PathBuf {
        Path::new(SYS_CLASS_BLOCK).join(&self.name)
    }

    /// The request-queue directory, which lives on the whole disk.
    pub fn queue_dir(&self) -> PathBuf {
        Path::new("/sys/block").join(&self.disk).join("queue")
    }

    /// One queue attribute, trimmed (`/sys/block/DISK/queue/ATTR`).
    pub fn queue_attr(&self, attr: &str) -> Result<String> {
        read_trim(&self.queue_dir().join(attr))
    }

    fn queue_num<T: std::str::FromStr>(&self, attr: &str) -> Result<T> {
        let s = self.queue_attr(attr)?;
        s.parse().map_err(|_| BlockDevError::NotANumber {
            path: self.queue_dir().join(attr),
            text: s.clone(),
        })
    }

    pub fn logical_block_size(&self) -> Result<u32> {
        self.queue_num("logical_block_size")
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn physical_block_size(&self) -> Result<u32> {
        self.queue_num("physical_block_size")
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn rotational(&self) -> Result<bool> {
        Ok(self.queue_num::<u32>("rotational")? != 0)
    }

    /// Whether the queue has poll queues (`io_poll`); IOPOLL needs it.
    #[cfg(any(test, feature = "testing"))]
    pub fn io_poll(&self) -> Result<bool> {
        Ok(self.queue_num::<u32>("io_poll")? != 0)
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn nr_requests(&self) -> Result<u32> {
        self.queue_num("nr_requests")
    }

    /// Size in bytes (sysfs `size` counts 512-byte sectors whatever the block size).
    pub fn size_bytes(&self) -> Result<u64> {
        let p = self.sysfs_dir().join("size");
        let s = read_trim(&p)?;
        let sectors: u64 = s.parse().map_err(|_| BlockDevError::NotANumber {
            path: p.clone(),
            text: s.clone(),
        })?;
        Ok(sectors * 512)
    }

    /// The queue's kernel I/O schedulers (elevators); a bio-based device (zram) has no `scheduler`
    /// file at all and gets an empty list.
    pub fn scheduler(&self) -> Result<Elevators> {
        if !self.queue_dir().join("scheduler").exists() && self.queue_dir().exists() {
            return Ok(Elevators {
                current: None,
                available: Vec::new(),
            });
        }
        Ok(parse_scheduler(&self.queue_attr("scheduler")?))
    }

    /// The partitions of a whole disk (empty for a partition or an unpartitioned disk).
    pub fn partitions(&self) -> Result<Vec<BlockDev>> {
        if self.partition {
            return Ok(Vec::new());
        }
        let dir = Path::new("/sys/block").join(&self.name);
        let mut parts = Vec::new();
        let rd = fs::read_dir(&dir).map_err(|err| BlockDevError::List {
            dir: dir.clone(),
            err,
        })?;
        for e in rd.flatten() {
            let p = e.path();
            if p.join("partition").exists() {
                parts.push(Self::from_sysfs_dir(&p)?);
            }
        }
        parts.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(parts)
    }
}

/// What a queue's `scheduler` file says: the kernel I/O schedulers ("elevators":
/// mq-deadline, kyber, bfq, none) it offers and the one in effect. Not to be
/// confused with iolab's own host scheduler (the `sched` module).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Elevators {
    /// `None` when the file names none in effect (no file, or no bracketed name
    /// among several).
    pub current: Option<String>,
    pub available: Vec<String>,
}

impl Elevators {
    /// The elevator in effect with the offered ones, when the file names one.
    pub fn in_effect(&self) -> Option<Elevator> {
        Some(Elevator {
            current: self.current.clone()?,
            available: self.available.clone(),
        })
    }
}

/// The kernel I/O scheduler in effect on a block queue, and those it offers
/// (`iolab probe` reports this).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Elevator {
    pub current: String,
    pub available: Vec<String>,
}

/// Parse `/sys/block/X/queue/scheduler` ("[mq-deadline] kyber bfq none"): the
/// bracketed name is in effect. A queue that cannot take an elevator at all
/// prints a bare `none` (block/elevator.c, `elv_iosched_show`): none is then in
/// effect, and the only choice.
pub fn parse_scheduler(s: &str) -> Elevators {
    let mut current = None;
    let mut available = Vec::new();
    for w in s.split_whitespace() {
        match w.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
            Some(inner) => {
                current = Some(inner.to_string());
                available.push(inner.to_string());
            }
            None => available.push(w.to_string()),
        }
    }
    if current.is_none() && available.len() == 1 {
        current = Some(available[0].clone());
    }
    Elevators { current, available }
}

/// Switches a disk's kernel I/O scheduler (its elevator) and restores the previous one when dropped
/// (also on a second Ctrl-C, through the cleanup registry).
#[derive(Debug)]
pub struct ElevatorGuard {
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    dev: BlockDev,
    previous: String,
    id: Option<CleanupId>,
}

impl ElevatorGuard {
    /// Set `sched` on `dev`'s queue ("bfq", "mq-deadline", "kyber", "none").
    pub fn set(dev: &BlockDev, sched: &str) -> Result<ElevatorGuard> {
        let path = dev.queue_dir().join("scheduler");
        let s = dev.scheduler()?;
        if s.available.is_empty() {
            return Err(BlockDevError::NoElevator {
                disk: dev.disk.clone(),
                asked: sched.to_string(),
            });
        }
        let previous = s
            .current
            .clone()
            .ok_or_else(|| BlockDevError::NoCurrentElevator {
                path: path.clone(),
                available: s.available.join(" "),
            })?;
        if !s.available.iter().any(|a| a == sched) {
            return Err(BlockDevError::ElevatorNotAvailable {
                asked: sched.to_string(),
                disk: dev.disk.clone(),
                available: s.available.join(", "),
            });
        }
        if !super::is_root() {
            return Err(
                super::needs_root(&format!("changing the scheduler of {}", dev.disk)).into(),
            );
        }
        write_attr(&path, sched)?;
        let undo_path = path.clone();
        let undo_value = previous.clone();
        let id = cleanup::register(
            format!("restore scheduler {previous} on {}", dev.disk),
            move || write_attr(&undo_path, &undo_value),
        );
        Ok(ElevatorGuard {
            dev: dev.clone(),
            previous,
            id: Some(id),
        })
    }

    /// The scheduler that will be restored.
    pub fn previous(&self) -> &str {
        &self.previous
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn device(&self) -> &BlockDev {
        &self.dev
    }
}

impl Drop for ElevatorGuard {
    fn drop(&mut self) {
        if let Some(id) = self.id.take()
            && let Some(Err(f)) = cleanup::run(id)
        {
            eprintln!("iolab: warning: {f}");
        }
    }
}

/// The block device an open file's I/O reaches (the whole disk, not the partition).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BlockQueue {
    /// Disk name as in /sys/block (`vda`, `zram1`, `nvme0n1`).
    pub disk: String,
    /// Partition name when the target sits on one (`vda1`).
    pub partition: Option<String>,
    /// `/sys/block/<disk>`-equivalent directory (resolved).
    #[serde(skip)]
    pub sysfs: PathBuf,
}

impl BlockQueue {
    /// One queue attribute, trimmed; `None` where the driver has no such attribute.
    pub fn queue_attr(&self, name: &str) -> Option<String> {
        read_trim(&self.sysfs.join("queue").join(name)).ok()
    }

    /// A numeric queue attribute (`logical_block_size`, `nr_requests`, ...).
    pub fn queue_num(&self, name: &str) -> Option<u64> {
        self.queue_attr(name)?.parse().ok()
    }

    /// `queue/io_poll`: 1 when the driver has poll queues, so polled I/O is possible.
    pub fn io_poll(&self) -> Option<bool> {
        self.queue_num("io_poll").map(|v| v != 0)
    }

    /// `queue/scheduler`; `None` where the attribute is absent (bio-based devices).
    pub fn scheduler(&self) -> Option<Elevator> {
        parse_scheduler(&self.queue_attr("scheduler")?).in_effect()
    }
}

/// Why there is no block queue under a file or device number.
#[derive(Debug, thiserror::Error)]
pub enum NoBlockQueue {
    #[error(
        "device {major}:{minor} is an anonymous device (tmpfs, overlayfs, btrfs subvolume, ...), \
         not a block device"
    )]
    Anonymous { major: u32, minor: u32 },
    #[error("{}: {source}", link.display())]
    NotInSysfs {
        link: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: partition without a parent disk", .0.display())]
    PartitionWithoutDisk(PathBuf),
    #[error("fstat: {0}")]
    Fstat(#[source] std::io::Error),
    #[error("a character device has no block queue")]
    CharDevice,
    #[error("not a regular file or block device")]
    NotFileOrBlockDevice,
}

/// The block device for `major:minor`, via /sys/dev/block; a partition resolves
/// to its disk because queue attributes live on the disk.
pub fn block_queue_of_dev(major: u32, minor: u32) -> Result<BlockQueue, NoBlockQueue> {
    let link = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let dir = fs::canonicalize(&link).map_err(|source| {
        if major == 0 {
            NoBlockQueue::Anonymous { major, minor }
        } else {
            NoBlockQueue::NotInSysfs {
                link: link.clone(),
                source,
            }
        }
    })?;
    let name_of = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    if dir.join("partition").exists() {
        let disk_dir = dir
            .parent()
            .ok_or_else(|| NoBlockQueue::PartitionWithoutDisk(dir.clone()))?
            .to_path_buf();
        Ok(BlockQueue {
            disk: name_of(&disk_dir),
            partition: Some(name_of(&dir)),
            sysfs: disk_dir,
        })
    } else {
        Ok(BlockQueue {
            disk: name_of(&dir),
            partition: None,
            sysfs: dir,
        })
    }
}

/// `fstat(2)` of a descriptor.
pub fn fstat(fd: RawFd) -> std::io::Result<libc::stat> {
    // SAFETY: zeroed stat is a valid out-parameter; fd is only read.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is ours and writable for the call; fstat only reads `fd`.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

/// The block queue an open file's I/O reaches: the device itself for a block
/// device node, the device holding the file system for a regular file.
pub fn block_queue_of_fd(fd: RawFd) -> Result<BlockQueue, NoBlockQueue> {
    let st = fstat(fd).map_err(NoBlockQueue::Fstat)?;
    let dev = match st.st_mode & libc::S_IFMT {
        libc::S_IFBLK => st.st_rdev,
        libc::S_IFREG => st.st_dev,
        libc::S_IFCHR => return Err(NoBlockQueue::CharDevice),
        _ => return Err(NoBlockQueue::NotFileOrBlockDevice),
    };
    let (ma, mi) = dev_split(dev);
    block_queue_of_dev(ma, mi)
}

/// The message for a device without poll queues, shared by setup checks and the
/// run-time refusal (EOPNOTSUPP from the kernel).
pub fn iopoll_missing_message(q: &BlockQueue) -> String {
    format!(
        "{d}: /sys/block/{d}/queue/io_poll = 0; polled I/O needs a driver with poll queues \
         (NVMe with poll_queues=N)",
        d = q.disk
    )
}

/// Names in `SYSFS_CLASS_BLOCK/NAME/holders`.
pub fn holders_of(sys_class_block: &Path, name: &str) -> std::io::Result<Vec<String>> {
    let dir: PathBuf = sys_class_block.join(name).join("holders");
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut v: Vec<String> = rd
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    Ok(v)
}

pub(crate) fn write_attr(path: &Path, value: &str) -> Result<()> {
    fs::write(path, value).map_err(|err| BlockDevError::Write {
        path: path.to_path_buf(),
        value: value.to_string(),
        err,
    })
}

pub(crate) fn read_trim(path: &Path) -> Result<String> {
    let s = fs::read_to_string(path).map_err(|err| BlockDevError::Read {
        path: path.to_path_buf(),
        err,
    })?;
    Ok(s.trim().to_string())
}

fn file_name(p: &Path) -> Result<String> {
    p.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
        .ok_or_else(|| BlockDevError::SysfsPath(p.to_path_buf()))
}

/// Parse "M:m".
pub fn parse_dev(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_line_parses() {
        let s = parse_scheduler("[none] mq-deadline kyber bfq \n");
        assert_eq!(s.current.as_deref(), Some("none"));
        assert_eq!(s.available, ["none", "mq-deadline", "kyber", "bfq"]);
        let s = parse_scheduler("mq-deadline [bfq] none");
        assert_eq!(s.current.as_deref(), Some("bfq"));
        // A queue that cannot take an elevator prints a bare `none`: none is in
        // effect (this parse once said "unknown"; `iolab probe`'s said "none").
        let s = parse_scheduler("none");
        assert_eq!(s.current.as_deref(), Some("none"));
        assert_eq!(s.available, ["none"]);
        let s = parse_scheduler("a b");
        assert_eq!(s.current, None);
        assert!(s.in_effect().is_none());
    }

    #[test]
    fn elevator_in_effect_bracketed_and_single() {
        let s = parse_scheduler("none [mq-deadline] kyber bfq")
            .in_effect()
            .unwrap();
        assert_eq!(s.current, "mq-deadline");
        assert_eq!(s.available, ["none", "mq-deadline", "kyber", "bfq"]);
        let s = parse_scheduler("none").in_effect().unwrap();
        assert_eq!(s.current, "none");
        assert!(parse_scheduler("a b").in_effect().is_none());
    }

    #[test]
    fn holders_from_a_fake_sysfs() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("loop9/holders/dm-1")).unwrap();
        std::fs::create_dir_all(d.path().join("loop9/holders/dm-0")).unwrap();
        std::fs::create_dir_all(d.path().join("loop8/holders")).unwrap();
        assert_eq!(holders_of(d.path(), "loop9").unwrap(), ["dm-0", "dm-1"]);
        assert!(holders_of(d.path(), "loop8").unwrap().is_empty());
        assert!(holders_of(d.path(), "nvme0n1").unwrap().is_empty());
    }

    #[test]
    fn dev_numbers_parse() {
        assert_eq!(parse_dev("7:3\n"), Some((7, 3)));
        assert_eq!(parse_dev("253:0"), Some((253, 0)));
        assert_eq!(parse_dev("7"), None);
        assert_eq!(parse_dev("x:1"), None);
    }

    #[test]
    fn system_disk_is_found_by_path_and_number() {
        // Read-only look at sysfs: the root filesystem's device must resolve.
        let md = fs::metadata("/").unwrap();
        let (ma, mi) = dev_split(md.dev());
        if ma == 0 {
            eprintln!("skip: / is on a virtual device {ma}:{mi}");
            return;
        }
        let d = BlockDev::from_dev(ma, mi).unwrap();
        assert_eq!((d.major, d.minor), (ma, mi));
        assert!(d.logical_block_size().unwrap() >= 512);
        assert!(d.size_bytes().unwrap() > 0);
        let again = BlockDev::from_path(&d.dev_path()).unwrap();
        assert_eq!(again, d);
    }
}
