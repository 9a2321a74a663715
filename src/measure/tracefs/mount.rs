//! Finding (or mounting) tracefs, and reading its files.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Why tracefs could not be found or mounted.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    #[error("reading /proc/mounts: {0}")]
    Mounts(io::Error),
    #[error(
        "tracefs is not mounted and {DEFAULT_ROOT} does not exist: this kernel lacks \
         CONFIG_TRACING (tracepoints are needed for this measurement)"
    )]
    NoTracing,
    #[error(
        "tracefs is not mounted and mounting it at {DEFAULT_ROOT} failed: {0} (needs \
         root/CAP_SYS_ADMIN; or run `mount -t tracefs nodev {DEFAULT_ROOT}`)"
    )]
    Mount(io::Error),
}

const DEFAULT_ROOT: &str = "/sys/kernel/tracing";

/// A mounted tracefs.
#[derive(Clone, Debug)]
pub struct Tracefs {
    root: PathBuf,
    /// True when this process mounted it (it is left mounted, as perf does).
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub mounted_by_us: bool,
}

impl Tracefs {
    /// Find tracefs in /proc/mounts, or mount it at /sys/kernel/tracing.
    pub fn open() -> Result<Tracefs, MountError> {
        let mounts = fs::read_to_string("/proc/mounts").map_err(MountError::Mounts)?;
        if let Some(root) = tracefs_mount_point(&mounts) {
            return Ok(Tracefs {
                root,
                mounted_by_us: false,
            });
        }
        let target = Path::new(DEFAULT_ROOT);
        if !target.is_dir() {
            return Err(MountError::NoTracing);
        }
        let src = c"nodev";
        let fstype = c"tracefs";
        let dst = std::ffi::CString::new(DEFAULT_ROOT).expect("no NUL in constant");
        // SAFETY: all pointers are valid NUL-terminated strings; data is unused.
        let rc = unsafe {
            libc::mount(
                src.as_ptr(),
                dst.as_ptr(),
                fstype.as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        if rc != 0 {
            return Err(MountError::Mount(io::Error::last_os_error()));
        }
        Ok(Tracefs {
            root: target.to_path_buf(),
            mounted_by_us: true,
        })
    }

    /// Use a tracefs at a given path (tests, unusual mounts).
    #[cfg(any(test, feature = "testing"))]
    pub fn at(root: impl Into<PathBuf>) -> Tracefs {
        Tracefs {
            root: root.into(),
            mounted_by_us: false,
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether `system:name` exists in this kernel.
    #[cfg(any(test, feature = "testing"))]
    pub fn has_event(&self, system: &str, name: &str) -> bool {
        self.root
            .join("events")
            .join(system)
            .join(name)
            .join("format")
            .exists()
    }

    /// Whether this kernel offers trace clock `name` (e.g. `x86-tsc`).
    pub fn offers_clock(&self, name: &str) -> bool {
        read_text(&self.root.join("trace_clock")).is_ok_and(|t| {
            t.split_whitespace()
                .any(|c| c.trim_matches(|c| c == '[' || c == ']') == name)
        })
    }
}

fn tracefs_mount_point(mounts: &str) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = mounts
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let _src = it.next()?;
            let dst = it.next()?;
            let ty = it.next()?;
            (ty == "tracefs").then(|| PathBuf::from(dst.replace("\\040", " ")))
        })
        .collect();
    // Prefer the canonical mount point when tracefs is mounted twice.
    found.sort_by_key(|p| p != Path::new(DEFAULT_ROOT));
    found.into_iter().next()
}

/// Read a tracefs file with one large first read: some (e.g. `header_page`) return
/// nothing to a read at a non-zero offset, so std's small probing read truncates them.
pub fn read_text(path: &Path) -> io::Result<String> {
    let mut f = File::open(path)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match f.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_mount_point() {
        let m = "proc /proc proc rw 0 0\nnodev /mnt/t tracefs rw 0 0\n\
                 nodev /sys/kernel/tracing tracefs rw 0 0\n";
        assert_eq!(
            tracefs_mount_point(m),
            Some(PathBuf::from("/sys/kernel/tracing"))
        );
        assert_eq!(tracefs_mount_point("proc /proc proc rw 0 0\n"), None);
    }
}
