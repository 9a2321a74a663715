//! Running a database's programs as its own unprivileged user (`postgres`,
//! `mysql`), moved into the study's cgroup first: setup tools and the server
//! alike, so every process of the server is counted and throttled.

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Result, bail};

use super::cgroup::ServerCgroup;

/// A system user's uid and gid; `hint` says which package creates it.
pub(super) fn user_ids(name: &str, hint: &str) -> Result<(u32, u32)> {
    let c = CString::new(name).expect("no NUL in a literal user name");
    // SAFETY: getpwnam reads the passwd database; the result is copied out at once
    // and only this thread calls it here.
    let pw = unsafe { libc::getpwnam(c.as_ptr()) };
    if pw.is_null() {
        bail!(
            "no '{name}' user: the study runs the server as '{name}', never as root \
             ({hint} creates it; or: useradd --system {name})"
        );
    }
    // SAFETY: pw is non-null and points to a valid passwd record.
    Ok(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

/// A command that runs as `uid`/`gid` in `cwd`, optionally inside the cgroup.
pub(super) fn as_user(
    prog: &Path,
    cwd: &Path,
    cg: Option<&ServerCgroup>,
    uid: u32,
    gid: u32,
) -> Command {
    let mut c = Command::new(prog);
    c.current_dir(cwd).env("LC_ALL", "C").stdin(Stdio::null());
    let procs: Vec<CString> = cg.map(|g| g.procs.clone()).unwrap_or_default();
    // The move into the cgroup needs root, so the identity change is done here,
    // after it, rather than by Command::uid (which std applies before pre_exec).
    // SAFETY: between fork and exec only open/write/close/setgroups/setgid/setuid
    // on memory prepared before the fork: async-signal-safe, no allocation.
    unsafe {
        c.pre_exec(move || {
            for path in &procs {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // "0" moves the writing task (cgroup v1).
                let n = libc::write(fd, b"0".as_ptr().cast(), 1);
                let e = std::io::Error::last_os_error();
                libc::close(fd);
                if n != 1 {
                    return Err(e);
                }
            }
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(gid) != 0
                || libc::setuid(uid) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    c
}
