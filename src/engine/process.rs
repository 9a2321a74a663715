//! What fio's process options do around a worker (parsed in
//! `job::process_opts`): before the clock, on the worker thread itself, its
//! control group, nice value and credentials, then `exec_prerun`; after its
//! I/O, `exec_postrun`; and, held for the worker's life by the main thread,
//! the device's elevator (`ioscheduler`) and locked memory (`lockmem`).
//!
//! Credentials are the thread's own: iolab's jobs are threads of one process,
//! and glibc's setuid(3) changes every thread of it. The raw setresuid(2) and
//! setresgid(2) system calls change only the calling thread (the kernel keeps
//! credentials per task), so a job's `uid`/`gid` apply to its worker, to the
//! files it opens from then on, and to the commands it runs, while the other
//! jobs keep theirs. One difference from fio, which switches before it opens
//! anything: iolab opens and lays out the job's files before the clock, on
//! the main thread, with its own credentials (the table's note says so).

use std::process::Command;

use crate::device::target::{Target, TargetKind};
use crate::job::JobSpec;
use crate::sys::blockdev::{BlockDev, BlockDevError, ElevatorGuard};
use crate::sys::cgroup::{Cgroup, CgroupError};

/// Why a job's process options could not be honoured.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error(
        "exec_prerun '{cmd}' exited with {status} (its output is in {out}); fio runs no I/O \
         for such a job and reports nothing, iolab stops: fix the command"
    )]
    Prerun {
        cmd: String,
        status: String,
        out: String,
    },
    #[error("exec_{mode} '{cmd}': cannot start /bin/sh: {err}")]
    Spawn {
        mode: &'static str,
        cmd: String,
        err: std::io::Error,
    },
    #[error("cgroup={name}: {err}")]
    Cgroup { name: String, err: CgroupError },
    #[error("nice={nice}: {err}; a negative nice needs root (CAP_SYS_NICE)")]
    Nice { nice: i32, err: std::io::Error },
    #[error("{what}={id}: {err}; changing a thread's {what} needs root (CAP_SETUID/CAP_SETGID)")]
    Credentials {
        what: &'static str,
        id: u32,
        err: std::io::Error,
    },
    #[error("ioscheduler={asked}: {err}")]
    Elevator { asked: String, err: BlockDevError },
    #[error(
        "ioscheduler={asked}: {path} is not on a block device with a queue of its own (tmpfs, \
         overlay, ...): put the job's file on a disk, or drop ioscheduler"
    )]
    NoDevice { asked: String, path: String },
    #[error(
        "lockmem={bytes}: {err}; raise the memlock limit (ulimit -l) or run as root, or lock less"
    )]
    Lockmem { bytes: u64, err: std::io::Error },
    #[error(
        "write_hint: fcntl(F_SET_RW_HINT) on {path}: {err}; drop write_hint for this filesystem"
    )]
    WriteHint { path: String, err: std::io::Error },
}

/// What runs on the worker thread before its first I/O and after its last.
#[derive(Debug, Default)]
pub struct ThreadSetup {
    nice: i32,
    uid: Option<u32>,
    gid: Option<u32>,
    cgroup: Option<Cgroup>,
    /// (job name, command) per job of the worker that has one.
    prerun: Vec<(String, String)>,
    postrun: Vec<(String, String)>,
    /// `create_only`: the files are set up; the worker issues nothing.
    pub create_only: bool,
}

/// What the main thread holds while the worker runs, undone when dropped.
#[derive(Debug, Default)]
pub struct Held {
    _elevator: Option<ElevatorGuard>,
    _locked: Option<Locked>,
}

/// Memory mlock()ed for `lockmem`.
#[derive(Debug)]
struct Locked {
    base: *mut libc::c_void,
    len: usize,
}

// SAFETY: a mapping nobody reads or writes; only unmapped on drop.
unsafe impl Send for Locked {}

impl Drop for Locked {
    fn drop(&mut self) {
        // SAFETY: mapped in `lock_memory` with this length; munmap unlocks too.
        unsafe { libc::munmap(self.base, self.len) };
    }
}

fn lock_memory(bytes: u64) -> Result<Locked, ProcessError> {
    let err = |err| ProcessError::Lockmem { bytes, err };
    let len =
        usize::try_from(bytes).map_err(|_| err(std::io::Error::from_raw_os_error(libc::E2BIG)))?;
    // SAFETY: a new anonymous mapping.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(err(std::io::Error::last_os_error()));
    }
    let locked = Locked { base, len };
    // SAFETY: the range is our mapping.
    if unsafe { libc::mlock(base, len) } != 0 {
        return Err(err(std::io::Error::last_os_error()));
    }
    Ok(locked)
}

/// The whole disk under a target: the device itself, or the one holding a file.
fn disk_of(t: &Target) -> Option<BlockDev> {
    use std::os::unix::fs::MetadataExt;
    let md = t.file.metadata().ok()?;
    let (major, minor) = match t.kind {
        TargetKind::BlockDevice => crate::sys::blockdev::dev_split(md.rdev()),
        TargetKind::File => crate::sys::blockdev::dev_split(md.dev()),
    };
    BlockDev::from_dev(major, minor).ok()
}

/// Before the clock, on the main thread: the elevator and locked memory of
/// `job` (the first job of a worker), and what its thread will do.
pub fn prepare(
    job: &JobSpec,
    jobs_of_worker: &[&JobSpec],
    target: Option<&Target>,
) -> Result<(ThreadSetup, Held), ProcessError> {
    let p = &job.process;
    let mut held = Held::default();
    if let Some(asked) = &p.ioscheduler
        && let Some(t) = target
    {
        let dev = disk_of(t).ok_or_else(|| ProcessError::NoDevice {
            asked: asked.clone(),
            path: t.path.display().to_string(),
        })?;
        let elevator_err = |err| ProcessError::Elevator {
            asked: asked.clone(),
            err,
        };
        let now = dev.scheduler().map_err(elevator_err)?;
        // Already in effect (another job switched it): nothing to restore.
        if now.current.as_deref() != Some(asked.as_str()) {
            held._elevator = Some(ElevatorGuard::set(&dev, asked).map_err(elevator_err)?);
        }
    }
    if p.lockmem > 0 {
        held._locked = Some(lock_memory(p.lockmem)?);
    }
    let cgroup = match &p.cgroup {
        Some(name) => Some(
            Cgroup::open(name, p.cgroup_weight, p.cgroup_nodelete).map_err(|err| {
                ProcessError::Cgroup {
                    name: name.clone(),
                    err,
                }
            })?,
        ),
        None => None,
    };
    let cmds = |f: fn(&JobSpec) -> &Option<String>| {
        jobs_of_worker
            .iter()
            .filter_map(|j| f(j).clone().map(|c| (j.name.clone(), c)))
            .collect()
    };
    Ok((
        ThreadSetup {
            nice: p.nice,
            uid: p.uid,
            gid: p.gid,
            cgroup,
            prerun: cmds(|j| &j.process.exec_prerun),
            postrun: cmds(|j| &j.process.exec_postrun),
            create_only: job.files.create_only,
        },
        held,
    ))
}

/// `write_hint`: the expected lifetime of the data written to each file.
pub fn set_write_hint(hint: u64, t: &Target) -> Result<(), ProcessError> {
    use std::os::fd::AsRawFd;
    // linux/fcntl.h: F_LINUX_SPECIFIC_BASE + 12.
    const F_SET_RW_HINT: libc::c_int = 1036;
    let v: u64 = hint;
    // SAFETY: the call reads one u64 through the pointer.
    if unsafe { libc::fcntl(t.file.as_raw_fd(), F_SET_RW_HINT, &v as *const u64) } != 0 {
        return Err(ProcessError::WriteHint {
            path: t.path.display().to_string(),
            err: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// fio's `exec_prerun`/`exec_postrun`: the command through the shell, its
/// output (as fio appends `> NAME.MODE.txt 2>&1` to the command line) in
/// NAME.MODE.txt in the working directory. Returns the file and the status.
fn exec(
    name: &str,
    cmd: &str,
    mode: &'static str,
) -> Result<(String, std::process::ExitStatus), ProcessError> {
    let out = format!("{name}.{mode}.txt");
    eprintln!("iolab: {name}: saving the output of {mode} in {out}");
    let status = Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("{cmd} > {out} 2>&1"))
        .status()
        .map_err(|err| ProcessError::Spawn {
            mode,
            cmd: cmd.to_string(),
            err,
        })?;
    Ok((out, status))
}

impl ThreadSetup {
    /// On the worker thread, before the start barrier: its control group,
    /// nice value, credentials, then the prerun commands (which inherit all
    /// three, as fio's do).
    pub fn enter(&self) -> Result<(), ProcessError> {
        let tid = crate::placement::affinity::gettid();
        if let Some(cg) = &self.cgroup {
            cg.attach(tid).map_err(|err| ProcessError::Cgroup {
                name: cg.dir.display().to_string(),
                err,
            })?;
        }
        if self.nice != 0 {
            // fio calls nice(3): an increment over what the thread has.
            // SAFETY: plain calls about this thread.
            let now = unsafe {
                *libc::__errno_location() = 0;
                libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t)
            };
            let want = (now + self.nice).clamp(-20, 19);
            // SAFETY: as above.
            if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, want) } != 0 {
                return Err(ProcessError::Nice {
                    nice: self.nice,
                    err: std::io::Error::last_os_error(),
                });
            }
        }
        // The group first: without root (after uid) it could not change.
        if let Some(gid) = self.gid {
            // SAFETY: the raw system call changes this thread only.
            let rc = unsafe { libc::syscall(libc::SYS_setresgid, gid, gid, gid) };
            if rc != 0 {
                return Err(ProcessError::Credentials {
                    what: "gid",
                    id: gid,
                    err: std::io::Error::last_os_error(),
                });
            }
        }
        if let Some(uid) = self.uid {
            // SAFETY: as above.
            let rc = unsafe { libc::syscall(libc::SYS_setresuid, uid, uid, uid) };
            if rc != 0 {
                return Err(ProcessError::Credentials {
                    what: "uid",
                    id: uid,
                    err: std::io::Error::last_os_error(),
                });
            }
        }
        for (name, cmd) in &self.prerun {
            let (out, status) = exec(name, cmd, "prerun")?;
            if !status.success() {
                return Err(ProcessError::Prerun {
                    cmd: cmd.clone(),
                    status: status.to_string(),
                    out,
                });
            }
        }
        Ok(())
    }

    /// On the worker thread, after its last I/O: the postrun commands. fio
    /// ignores their status; iolab says when one failed.
    pub fn after(&self) {
        for (name, cmd) in &self.postrun {
            match exec(name, cmd, "postrun") {
                Ok((out, status)) if !status.success() => {
                    eprintln!(
                        "iolab: {name}: exec_postrun '{cmd}' exited with {status} (see {out})"
                    )
                }
                Ok(_) => {}
                Err(e) => eprintln!("iolab: {name}: {e}"),
            }
        }
    }
}
