//! The observed process: a command observe starts (held before its exec until
//! the collector is attached) or a running process and its tree, found in /proc;
//! and a pidfd to wake the moment it exits.

use std::ffi::CString;
use std::fs;
use std::time::Duration;

use anyhow::{Context, Result};

/// The observed process: a command we started, or an existing pid.
pub(super) enum Target {
    Child { pid: i32, go: Option<fs::File> },
    Existing { pid: i32 },
}

impl Target {
    pub(super) fn pid(&self) -> i32 {
        match self {
            Target::Child { pid, .. } | Target::Existing { pid } => *pid,
        }
    }
}

/// fork a child that waits for one byte on a pipe before exec'ing `cmd`, so the
/// tracer can be set up on its pid before the command's first system call.
pub(super) fn spawn_held(cmd: &[String]) -> Result<Target> {
    let argv: Vec<CString> = cmd
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .context("command arguments must not contain NUL bytes")?;
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("creating the start pipe");
    }
    let (rd, wr) = (fds[0], fds[1]);
    let msg = b"iolab observe: cannot execute the command\n";
    // SAFETY: the child only calls async-signal-safe functions (read, close,
    // execvp, write, _exit) on memory prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error()).context("fork");
    }
    if pid == 0 {
        // SAFETY: see above.
        unsafe {
            libc::close(wr);
            let mut b = 0u8;
            let n = libc::read(rd, (&mut b as *mut u8).cast(), 1);
            if n == 1 {
                libc::execvp(ptrs[0], ptrs.as_ptr());
                libc::write(2, msg.as_ptr().cast(), msg.len());
            }
            libc::_exit(127);
        }
    }
    // SAFETY: rd is ours; the parent keeps only the write end.
    unsafe { libc::close(rd) };
    // SAFETY: wr is an open descriptor we own from here on.
    let go = unsafe { <fs::File as std::os::fd::FromRawFd>::from_raw_fd(wr) };
    Ok(Target::Child { pid, go: Some(go) })
}

/// All threads of `pid` and of its descendant processes.
pub fn process_tree_threads(pid: i32) -> Result<Vec<i32>> {
    let mut parent_of: Vec<(i32, i32)> = Vec::new();
    for e in fs::read_dir("/proc")?.flatten() {
        let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Ok(stat) = fs::read_to_string(format!("/proc/{p}/stat"))
            && let Some(ppid) = stat_ppid(&stat)
        {
            parent_of.push((p, ppid));
        }
    }
    let mut procs = vec![pid];
    let mut i = 0;
    while i < procs.len() {
        let p = procs[i];
        procs.extend(parent_of.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    let mut tids = Vec::new();
    for p in procs {
        if let Ok(rd) = fs::read_dir(format!("/proc/{p}/task")) {
            tids.extend(
                rd.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()),
            );
        }
    }
    tids.sort_unstable();
    tids.dedup();
    Ok(tids)
}

/// ppid from /proc/PID/stat (the comm field may contain spaces and parentheses).
fn stat_ppid(stat: &str) -> Option<i32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Whether a pid is gone or a zombie.
pub fn process_gone(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rfind(')')
            .and_then(|i| s[i + 1..].split_whitespace().next())
            .is_none_or(|st| st == "Z" || st == "X"),
        Err(_) => true,
    }
}

/// A pidfd: readable once the process has exited, so the observer wakes at once
/// instead of at its next poll.
pub(super) struct PidFd(std::os::fd::OwnedFd);

impl PidFd {
    /// None where pidfd_open is missing (Linux < 5.3); callers then sleep.
    pub(super) fn open(pid: i32) -> Option<PidFd> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return None;
        }
        // SAFETY: a fresh descriptor nothing else owns.
        Some(PidFd(unsafe {
            <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as i32)
        }))
    }

    /// Wait until the process exits, `d` passes, or a signal arrives.
    pub(super) fn wait(&self, d: Duration) {
        let mut p = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(&self.0),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = d.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd; EINTR (Ctrl-C) just ends the wait early.
        unsafe { libc::poll(&mut p, 1, ms) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ppid_from_stat_with_odd_comm() {
        assert_eq!(stat_ppid("42 (a) b) c) S 7 42 42 0"), Some(7));
        assert_eq!(stat_ppid("garbage"), None);
    }

    #[test]
    fn own_process_tree_contains_this_thread() {
        let me = std::process::id() as i32;
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let t = process_tree_threads(me).unwrap();
        assert!(t.contains(&me) && t.contains(&tid), "{t:?}");
        assert!(!process_gone(me));
    }
}
