//! File-operation backends (fio's `filecreate`, `filestat`, `filedelete`):
//! the timed operation is on a whole file, named by its path, and no data
//! moves. One request per file: the engine gives each file a region of one
//! block, so the n-th request is file n's operation (fio times the open, stat
//! or unlink of each file once, and its further requests to that file do
//! nothing).
//!
//! - `filecreate`: open(2) with O_CREAT|O_RDWR, mode 0600, then close(2) (fio
//!   closes later, untimed; closing a new, empty file that nothing else holds
//!   adds about a microsecond). The file is created empty.
//! - `filestat`: stat(2), lstat(2) or statx(2) with every field
//!   (`stat_type`); the files are laid out before the clock starts, as fio
//!   lays them out.
//! - `filedelete`: unlink(2); the files are laid out first, as fio does.
//!
//! A request that succeeds counts its length as done (fio counts its
//! block). Synchronous: the call is made inside `queue`.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::perform::Perform;
use super::{BackendStats, DevResult, DeviceError};
use crate::request::IoCmd;

/// The options of fio's filestat list a job may set only with filestat.
pub(crate) const OWNED: &[&str] = &["stat_type"];

/// fio's `stat_type` (filestat): which call is timed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StatType {
    #[default]
    Stat,
    Lstat,
    Statx,
}

impl StatType {
    pub const VALID: &'static str = "stat, lstat or statx";
}

/// filestat's own option, as a job sets it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FileStatOptions {
    /// `stat_type`.
    pub stat_type: StatType,
}

/// Which operation a [`FileOps`] queue times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileOp {
    Create,
    Stat(StatType),
    Delete,
}

impl FileOp {
    pub fn fio_name(self) -> &'static str {
        match self {
            FileOp::Create => "filecreate",
            FileOp::Stat(_) => "filestat",
            FileOp::Delete => "filedelete",
        }
    }
}

/// One file-operation queue over the job's files, by path.
pub struct FileOps {
    op: FileOp,
    paths: Vec<CString>,
    /// Where stat and statx write (kept here: the request path allocates nothing).
    st: libc::stat,
    stx: libc::statx,
    stats: BackendStats,
}

impl std::fmt::Debug for FileOps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileOps")
            .field("op", &self.op)
            .field("files", &self.paths.len())
            .finish()
    }
}

impl FileOps {
    /// `paths[i]` is file i (`IoCmd::file`).
    pub fn new(op: FileOp, paths: &[PathBuf]) -> DevResult<Self> {
        if paths.is_empty() || paths.len() > usize::from(u16::MAX) + 1 {
            return Err(DeviceError::Unsupported(format!(
                "{}: {} files; between 1 and 65536 can be addressed",
                op.fio_name(),
                paths.len()
            )));
        }
        let paths = paths
            .iter()
            .map(|p| {
                CString::new(p.as_os_str().as_bytes()).map_err(|_| {
                    DeviceError::Unsupported(format!(
                        "{}: file name {} holds a NUL byte",
                        op.fio_name(),
                        p.display()
                    ))
                })
            })
            .collect::<DevResult<Vec<_>>>()?;
        Ok(FileOps {
            op,
            paths,
            // SAFETY: stat is plain integers: all zeroes is a valid value,
            // and the buffer is only ever an out-parameter.
            st: unsafe { std::mem::zeroed() },
            // SAFETY: as `st`, for statx.
            stx: unsafe { std::mem::zeroed() },
            stats: BackendStats::default(),
        })
    }

    fn call(&mut self, path: *const libc::c_char) -> isize {
        // SAFETY: in every arm `path` is a NUL-terminated name the caller
        // owns for the call, the stat buffers are ours and writable, and a
        // descriptor opened here is closed here, once.
        unsafe {
            match self.op {
                FileOp::Create => {
                    let fd =
                        libc::open(path, libc::O_CREAT | libc::O_RDWR | libc::O_CLOEXEC, 0o600);
                    if fd < 0 {
                        return -1;
                    }
                    libc::close(fd);
                    0
                }
                FileOp::Stat(StatType::Stat) => libc::stat(path, &mut self.st) as isize,
                FileOp::Stat(StatType::Lstat) => libc::lstat(path, &mut self.st) as isize,
                FileOp::Stat(StatType::Statx) => libc::statx(
                    libc::AT_FDCWD,
                    path,
                    0,
                    libc::STATX_BASIC_STATS | libc::STATX_BTIME,
                    &mut self.stx,
                ) as isize,
                FileOp::Delete => libc::unlink(path) as isize,
            }
        }
    }
}

impl Perform for FileOps {
    fn engine_name(&self) -> &'static str {
        self.op.fio_name()
    }

    #[inline]
    fn perform_one(&mut self, cmd: &IoCmd) -> i64 {
        match self.paths.get(usize::from(cmd.file)) {
            None => -(libc::EBADF as i64),
            Some(p) => {
                let p = p.as_ptr();
                let mut calls = self.stats.submit_calls;
                let r = super::psync::retry_eintr(&mut calls, || self.call(p));
                self.stats.submit_calls = calls;
                if r < 0 { r } else { i64::from(cmd.len) }
            }
        }
    }

    fn counters(&self) -> BackendStats {
        self.stats
    }
}
