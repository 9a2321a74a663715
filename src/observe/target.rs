//! The observed process: a command observe starts (held before its exec until
//! the collector is attached) or a running process and its tree, found in /proc;
//! and a pidfd to wake the moment it exits.

use std::ffi::{CString, OsStr};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use std::ffi::NulError;
use std::io;

/// Why the command to observe could not be started, or its process tree not
/// listed.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error("the program path must not contain NUL bytes: {0}")]
    NulInPath(NulError),
    #[error("command arguments must not contain NUL bytes: {0}")]
    NulInArgs(NulError),
    #[error("creating the start pipe: {0}")]
    Pipe(io::Error),
    #[error("fork: {0}")]
    Fork(io::Error),
    #[error(
        "the command's process {0} did not reach its start point within 10 s; \
         retry when the machine is less loaded"
    )]
    NotHeld(i32),
    #[error("listing /proc: {0}")]
    ListProc(io::Error),
    #[error("releasing the command: {0}")]
    Release(io::Error),
}

type Result<T, E = SpawnError> = std::result::Result<T, E>;

/// The observed process: a command we started, or an existing pid.
pub(crate) enum Target {
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

/// The file `execvp` would run for `name`: `name` itself if it has a slash,
/// else the first regular, executable file `DIR/name` for DIR in `path` (PATH;
/// an empty entry is the current directory). Resolved before the fork, as
/// strace does, so the child's one `execve` is the command's: no failed
/// attempts of a PATH search are counted as the command's calls.
pub(super) fn resolve_program(name: &str, path: Option<&OsStr>) -> Result<PathBuf, ResolveError> {
    if name.is_empty() {
        return Err(ResolveError::Empty);
    }
    if name.contains('/') {
        return Ok(PathBuf::from(name));
    }
    // glibc's execvp default when PATH is unset.
    let path = path.unwrap_or(OsStr::new("/bin:/usr/bin"));
    for dir in std::env::split_paths(path) {
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let cand = dir.join(name);
        if is_executable_file(&cand) {
            return Ok(cand);
        }
    }
    Err(ResolveError::NotFound {
        name: name.to_string(),
        path: path.to_string_lossy().into_owned(),
    })
}

fn is_executable_file(p: &Path) -> bool {
    if !fs::metadata(p).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let Ok(c) = CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: c is a valid NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

/// Why a command name did not resolve to a program.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("the command is empty: give a program to run after --")]
    Empty,
    #[error(
        "{name}: no executable file of that name in PATH ({path}); \
         give its path (e.g. ./{name}) or install it"
    )]
    NotFound { name: String, path: String },
}

/// fork a child that waits for one byte on a pipe before exec'ing `cmd`, so the
/// tracer can be set up on its pid before the command's first system call.
pub(crate) fn spawn_held(cmd: &[String]) -> Result<Target> {
    let prog = resolve_program(&cmd[0], std::env::var_os("PATH").as_deref())?;
    let prog = CString::new(prog.as_os_str().as_bytes()).map_err(SpawnError::NulInPath)?;
    let argv: Vec<CString> = cmd
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(SpawnError::NulInArgs)?;
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(SpawnError::Pipe(io::Error::last_os_error()));
    }
    let (rd, wr) = (fds[0], fds[1]);
    let msg = b"iolab observe: cannot execute the command; check that it is an executable \
                for this machine and that you may run it\n";
    // SAFETY: the child only calls async-signal-safe functions (signal, read,
    // close, execv, write, _exit) on memory prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(SpawnError::Fork(io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: see above.
        unsafe {
            // Rust's runtime ignores SIGPIPE, and an ignored signal stays
            // ignored across exec: the command gets the default back, as from
            // a shell (strace does the same). Done before counting starts.
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::close(wr);
            let mut b = 0u8;
            let n = libc::read(rd, (&mut b as *mut u8).cast(), 1);
            if n == 1 {
                libc::execv(prog.as_ptr(), ptrs.as_ptr());
                libc::write(2, msg.as_ptr().cast(), msg.len());
            }
            libc::_exit(127);
        }
    }
    // SAFETY: rd is ours; the parent keeps only the write end.
    unsafe { libc::close(rd) };
    // SAFETY: wr is an open descriptor we own from here on.
    let go = unsafe { <fs::File as std::os::fd::FromRawFd>::from_raw_fd(wr) };
    wait_held(pid)?;
    Ok(Target::Child { pid, go: Some(go) })
}

/// Wait until the held child sleeps in its read of the start pipe. Counting
/// starts after this, so what the child does before (closing the pipe's other
/// end, entering the read) is not counted: its first event is the read's
/// return, which counts as no call (its entry was not seen), then the execve.
fn wait_held(pid: i32) -> Result<()> {
    let read_nr = libc::SYS_read.to_string();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        // "NR args..." while blocked in a call, "running" otherwise.
        match fs::read_to_string(format!("/proc/{pid}/syscall")) {
            Ok(s) if s.split_whitespace().next() == Some(read_nr.as_str()) => return Ok(()),
            Ok(_) => {}
            // Without /proc/PID/syscall: the only sleep before the exec is the read.
            Err(_) if proc_state(pid) == Some('S') => return Ok(()),
            Err(_) => {}
        }
        if process_gone(pid) {
            // Killed before its start: the observing loop reports the status.
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(SpawnError::NotHeld(pid));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// The state letter of /proc/PID/stat (R, S, D, Z...).
fn proc_state(pid: i32) -> Option<char> {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s[s.rfind(')')? + 1..]
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// All threads of `pid` and of its descendant processes.
pub fn process_tree_threads(pid: i32) -> Result<Vec<i32>> {
    let mut parent_of: Vec<(i32, i32)> = Vec::new();
    for e in fs::read_dir("/proc")
        .map_err(SpawnError::ListProc)?
        .flatten()
    {
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
pub(crate) struct PidFd(std::os::fd::OwnedFd);

impl PidFd {
    /// None where pidfd_open is missing (Linux < 5.3); callers then sleep.
    pub(crate) fn open(pid: i32) -> Option<PidFd> {
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
    pub(crate) fn wait(&self, d: Duration) {
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
    fn resolves_like_execvp_without_trying_each_dir() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        fs::create_dir_all(&a).unwrap();
        fs::create_dir_all(&b).unwrap();
        // Not executable in a: skipped; executable in b: found.
        fs::write(a.join("prog"), "").unwrap();
        fs::write(b.join("prog"), "").unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(b.join("prog"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(a.join("prog"), fs::Permissions::from_mode(0o644)).unwrap();
        let path = std::env::join_paths([&a, &b]).unwrap();
        // Root may execute a file with any x bit only: 0o644 has none.
        assert_eq!(
            resolve_program("prog", Some(&path)).unwrap(),
            b.join("prog")
        );
        assert_eq!(
            resolve_program("./x/y", Some(&path)).unwrap(),
            PathBuf::from("./x/y"),
            "a name with a slash is used as given"
        );
        let e = resolve_program("nope", Some(&path))
            .unwrap_err()
            .to_string();
        assert!(e.contains("nope") && e.contains("PATH"), "{e}");
        assert!(resolve_program("", None).is_err());
    }

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
