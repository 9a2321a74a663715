//! A database server process the study started (PostgreSQL or MariaDB): its
//! log, and the stop registered with the cleanup registry, which runs when the
//! server is dropped or when the lab is interrupted.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::sys::cleanup::{self, CleanupId};

/// How a server is asked to stop: its program's name (for messages) and the
/// signal that ends it without work the study does not want (PostgreSQL's
/// SIGQUIT skips the shutdown checkpoint; mariadbd's SIGTERM is clean).
#[derive(Clone, Copy)]
pub(super) struct StopWith {
    pub(super) program: &'static str,
    pub(super) signal: i32,
    pub(super) signal_name: &'static str,
}

/// A running server; stopped when dropped (or by the cleanup registry).
pub(super) struct ServerProcess {
    child: Child,
    pub(super) pid: i32,
    log: PathBuf,
    cleanup: Option<CleanupId>,
}

impl ServerProcess {
    /// Take charge of a just-spawned server writing its log to `log`.
    pub(super) fn adopt(child: Child, log: &Path, stop: StopWith) -> ServerProcess {
        let pid = child.id() as i32;
        let cleanup = cleanup::register(format!("stop {} pid {pid}", stop.program), move || {
            stop_pid(pid, stop)
        });
        ServerProcess {
            child,
            pid,
            log: log.to_path_buf(),
            cleanup: Some(cleanup),
        }
    }

    /// The server's exit status, if it has exited.
    pub(super) fn exited(&mut self) -> Result<Option<ExitStatus>> {
        Ok(self.child.try_wait()?)
    }

    /// The server's log so far.
    pub(super) fn log(&self) -> Option<String> {
        fs::read_to_string(&self.log).ok()
    }

    /// The log's last five lines, for an error message.
    pub(super) fn log_tail(&self) -> String {
        let s = self.log().unwrap_or_default();
        let lines: Vec<&str> = s.lines().collect();
        let tail = lines[lines.len().saturating_sub(5)..].join(" | ");
        format!("log {}: {tail}", self.log.display())
    }
}

/// The stop signal, then SIGKILL after 10 s.
fn stop_pid(pid: i32, stop: StopWith) -> Result<()> {
    if crate::observe::target::process_gone(pid) {
        return Ok(());
    }
    // SAFETY: pid is our unreaped child, so the number cannot have been reused.
    unsafe { libc::kill(pid, stop.signal) };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !crate::observe::target::process_gone(pid) {
        if Instant::now() >= deadline {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            bail!(
                "{} pid {pid} ignored {} for 10 s; killed",
                stop.program,
                stop.signal_name
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Some(id) = self.cleanup.take()
            && let Some(Err(f)) = cleanup::run(id)
        {
            eprintln!("iolab: warning: {f}");
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
