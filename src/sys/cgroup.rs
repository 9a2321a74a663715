//! Control groups for fio's `cgroup=NAME`: find the hierarchy fio would use,
//! create the group, set its block I/O weight, move a thread in, and remove
//! the group afterwards.
//!
//! fio takes the first mount in /proc/mounts that is either a cgroup v1
//! hierarchy with the blkio controller or the cgroup v2 hierarchy. In v1 a
//! thread id written to `tasks` moves that one thread, so each of iolab's
//! worker threads goes into its job's group. In v2 the I/O controller is a
//! domain controller (not threaded): a group holds whole processes, so, as fio
//! does when it runs jobs as threads, the id written to `cgroup.procs` moves
//! the whole iolab process; jobs running at once must then name the same group
//! (the engine checks).

use std::io;
use std::path::{Path, PathBuf};

/// Why a job's control group could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error(
        "no cgroup hierarchy to use: /proc/mounts has neither a cgroup v1 mount with the blkio \
         controller nor cgroup2; mount one (mount -t cgroup2 none /sys/fs/cgroup) or drop cgroup="
    )]
    NotMounted,
    #[error("reading /proc/mounts: {0}")]
    Mounts(io::Error),
    #[error("{what} {}: {err}; cgroup= needs root (or a delegated hierarchy)", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        err: io::Error,
    },
    #[error(
        "cgroup_weight: {} has no {file} (the {controller} controller is not enabled for it); \
         enable it in the parent's cgroup.subtree_control, or drop cgroup_weight",
        dir.display()
    )]
    NoWeight {
        dir: PathBuf,
        file: &'static str,
        controller: &'static str,
    },
}

/// The hierarchy fio would use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hierarchy {
    pub root: PathBuf,
    pub v2: bool,
}

/// The first cgroup v1 mount with `blkio` or the cgroup2 mount, as fio picks.
pub fn find_hierarchy(mounts: &str) -> Option<Hierarchy> {
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        match f[2] {
            "cgroup" if f[3].split(',').any(|o| o == "blkio") => {
                return Some(Hierarchy {
                    root: PathBuf::from(f[1]),
                    v2: false,
                });
            }
            "cgroup2" => {
                return Some(Hierarchy {
                    root: PathBuf::from(f[1]),
                    v2: true,
                });
            }
            _ => {}
        }
    }
    None
}

/// A job's group: created (or found) before the job, removed when dropped
/// unless it existed before or `nodelete` was asked.
#[derive(Debug)]
pub struct Cgroup {
    pub hierarchy: Hierarchy,
    pub dir: PathBuf,
    created: bool,
    nodelete: bool,
    /// v2: the group the process was in, to move it back before removal.
    home: Option<PathBuf>,
}

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> CgroupError + 'a {
    move |err| CgroupError::Io {
        what,
        path: path.to_path_buf(),
        err,
    }
}

impl Cgroup {
    /// Create (or reuse) `name` in the hierarchy fio would use and set its
    /// weight (`weight` 0 = leave it).
    pub fn open(name: &str, weight: u32, nodelete: bool) -> Result<Cgroup, CgroupError> {
        let mounts = std::fs::read_to_string("/proc/mounts").map_err(CgroupError::Mounts)?;
        let hierarchy = find_hierarchy(&mounts).ok_or(CgroupError::NotMounted)?;
        let dir = hierarchy.root.join(name);
        let created = match std::fs::create_dir(&dir) {
            Ok(()) => true,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => false,
            Err(e) => return Err(io_err("creating", &dir)(e)),
        };
        let home = if hierarchy.v2 {
            std::fs::read_to_string("/proc/self/cgroup")
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find_map(|l| l.strip_prefix("0::").map(|p| p.trim().to_string()))
                })
                .map(|p| hierarchy.root.join(p.trim_start_matches('/')))
        } else {
            None
        };
        let cg = Cgroup {
            hierarchy,
            dir,
            created,
            nodelete,
            home,
        };
        if weight > 0 {
            cg.set_weight(weight)?;
        }
        Ok(cg)
    }

    /// v1: `blkio.weight` (CFQ's, gone from current kernels) or BFQ's
    /// `blkio.bfq.weight`, both 1-1000; v2: `io.weight` (1-10000, default 100).
    fn set_weight(&self, weight: u32) -> Result<(), CgroupError> {
        let candidates: &[&'static str] = if self.hierarchy.v2 {
            &["io.weight", "io.bfq.weight"]
        } else {
            &["blkio.weight", "blkio.bfq.weight"]
        };
        let Some(file) = candidates.iter().find(|f| self.dir.join(f).exists()) else {
            return Err(CgroupError::NoWeight {
                dir: self.dir.clone(),
                file: candidates[0],
                controller: if self.hierarchy.v2 { "io" } else { "blkio" },
            });
        };
        let path = self.dir.join(file);
        std::fs::write(&path, weight.to_string()).map_err(io_err("writing", &path))
    }

    /// Move thread `tid` into the group (v2: its whole process).
    pub fn attach(&self, tid: i32) -> Result<(), CgroupError> {
        let file = if self.hierarchy.v2 {
            "cgroup.procs"
        } else {
            "tasks"
        };
        let path = self.dir.join(file);
        std::fs::write(&path, tid.to_string()).map_err(io_err("writing", &path))
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        if let Some(home) = &self.home {
            // v2: bring the process back before the group can go.
            let _ = std::fs::write(home.join("cgroup.procs"), std::process::id().to_string());
        }
        if !self.created || self.nodelete {
            return;
        }
        // A thread that just exited may still be listed for a moment.
        for _ in 0..50 {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(2))
                }
                Err(e) => {
                    eprintln!("iolab: removing cgroup {}: {e}", self.dir.display());
                    return;
                }
            }
        }
        eprintln!(
            "iolab: cgroup {} is still busy; remove it with rmdir once its tasks are gone",
            self.dir.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_first_blkio_or_cgroup2_mount_as_fio() {
        let m = "tmpfs /sys/fs/cgroup tmpfs rw 0 0\n\
                 cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n\
                 cgroup /sys/fs/cgroup/blkio cgroup rw,relatime,blkio 0 0\n\
                 cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n";
        assert_eq!(
            find_hierarchy(m),
            Some(Hierarchy {
                root: "/sys/fs/cgroup/blkio".into(),
                v2: false
            })
        );
        let m2 = "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n";
        assert!(find_hierarchy(m2).unwrap().v2);
        assert_eq!(find_hierarchy("proc /proc proc rw 0 0\n"), None);
    }
}
