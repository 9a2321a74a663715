//! Hot-added zram devices: RAM-backed, bio-based block devices for tests, studies
//! and the lab. Each one is ours alone (hot-added, never a pre-existing zramN) and
//! is reset and removed when its guard drops, or on the abort path.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::blockdev::{BlockDevError, read_trim, write_attr};
use super::cleanup::{self, CleanupId};

const CONTROL: &str = "/sys/class/zram-control";

/// Why a zram device could not be made or removed. Causes are part of the
/// message and deliberately not a `source` (`{:#}` would say them twice).
#[derive(Debug, thiserror::Error)]
pub enum ZramError {
    #[error("zram size must be > 0 bytes")]
    ZeroSize,
    #[error(transparent)]
    NeedsRoot(#[from] super::NeedsRoot),
    #[error(
        "zram module not available: {0}; load it with `modprobe zram` (kernel needs CONFIG_ZRAM)"
    )]
    NoModule(String),
    #[error("zram hot_add failed: {0}")]
    HotAdd(BlockDevError),
    #[error("{}: expected a device number, got {text:?}", path.display())]
    HotAddContent { path: PathBuf, text: String },
    #[error("setting zram{id} to {size} bytes: {err}")]
    DiskSize {
        id: u32,
        size: u64,
        err: BlockDevError,
    },
    #[error("resetting zram{id}: {err}")]
    Reset { id: u32, err: BlockDevError },
    #[error("removing zram{id}: {err}")]
    Remove { id: u32, err: BlockDevError },
    #[error(transparent)]
    NoNode(#[from] NodeTimeout),
}

/// A device node devtmpfs did not create in time.
#[derive(Debug, thiserror::Error)]
#[error("{} did not appear within 2 s (is devtmpfs mounted on /dev?)", .0.display())]
pub struct NodeTimeout(pub PathBuf);

type Result<T, E = ZramError> = std::result::Result<T, E>;

/// A zram device this process hot-added.
#[derive(Debug)]
pub struct Zram {
    id: u32,
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    size: u64,
    cleanup: Option<CleanupId>,
}

impl Zram {
    /// Hot-add a zram device of `size_bytes` (rounded up by the kernel to pages).
    pub fn create(size_bytes: u64) -> Result<Zram> {
        if size_bytes == 0 {
            return Err(ZramError::ZeroSize);
        }
        if !super::is_root() {
            return Err(super::needs_root("creating a zram device").into());
        }
        ensure_control()?;
        let hot_add = Path::new(CONTROL).join("hot_add");
        let s = read_trim(&hot_add).map_err(ZramError::HotAdd)?;
        let id: u32 = s.parse().map_err(|_| ZramError::HotAddContent {
            path: hot_add.clone(),
            text: s.clone(),
        })?;
        // Registered before anything else can fail so a half-made device is removed too.
        let cleanup = cleanup::register(format!("remove zram{id}"), move || remove(id));
        let z = Zram {
            id,
            size: size_bytes,
            cleanup: Some(cleanup),
        };
        write_attr(&z.sysfs().join("disksize"), &size_bytes.to_string()).map_err(|err| {
            ZramError::DiskSize {
                id,
                size: size_bytes,
                err,
            }
        })?;
        wait_for_node(&z.path())?;
        Ok(z)
    }

    /// The kernel's number N of zramN.
    #[cfg(any(test, feature = "testing"))]
    pub fn id(&self) -> u32 {
        self.id
    }

    pub fn name(&self) -> String {
        format!("zram{}", self.id)
    }

    /// `/dev/zramN`.
    pub fn path(&self) -> PathBuf {
        PathBuf::from(format!("/dev/zram{}", self.id))
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn size(&self) -> u64 {
        self.size
    }

    fn sysfs(&self) -> PathBuf {
        PathBuf::from(format!("/sys/block/zram{}", self.id))
    }
}

impl Drop for Zram {
    fn drop(&mut self) {
        if let Some(id) = self.cleanup.take()
            && let Some(Err(f)) = cleanup::run(id)
        {
            eprintln!("iolab: warning: {f}");
        }
    }
}

fn ensure_control() -> Result<()> {
    if Path::new(CONTROL).is_dir() {
        return Ok(());
    }
    let out = std::process::Command::new("modprobe").arg("zram").output();
    if Path::new(CONTROL).is_dir() {
        return Ok(());
    }
    let why = match out {
        Ok(o) if !o.status.success() => String::from_utf8_lossy(&o.stderr).trim().to_string(),
        Ok(_) => format!("modprobe succeeded but {CONTROL} is still missing"),
        Err(e) => format!("cannot run modprobe: {e}"),
    };
    Err(ZramError::NoModule(why))
}

/// Retried briefly because udev or a just-closed opener can hold the device for a
/// moment after our last close (EBUSY).
fn remove(id: u32) -> Result<()> {
    let sys = PathBuf::from(format!("/sys/block/zram{id}"));
    if !sys.exists() {
        return Ok(());
    }
    retry_busy(|| write_attr(&sys.join("reset"), "1"))
        .map_err(|err| ZramError::Reset { id, err })?;
    retry_busy(|| write_attr(&Path::new(CONTROL).join("hot_remove"), &id.to_string()))
        .map_err(|err| ZramError::Remove { id, err })
}

fn retry_busy(mut f: impl FnMut() -> Result<(), BlockDevError>) -> Result<(), BlockDevError> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match f() {
            Ok(()) => return Ok(()),
            Err(e) => {
                let busy = matches!(&e, BlockDevError::Write { err, .. }
                    if err.raw_os_error() == Some(libc::EBUSY));
                if !busy || Instant::now() >= deadline {
                    return Err(e);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// devtmpfs creates the node asynchronously to the sysfs write.
pub(crate) fn wait_for_node(path: &Path) -> Result<(), NodeTimeout> {
    let deadline = Instant::now() + Duration::from_secs(2);
    while !path.exists() {
        if Instant::now() >= deadline {
            return Err(NodeTimeout(path.to_path_buf()));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}
