//! Observing a command: `iolab observe -- CMD`'s total report, typed.

use std::io::Write;
use std::time::Duration;

use crate::observe::collector::{Backend, Collector};
use crate::observe::names::syscall_name;
use crate::observe::report::{InFlight, ObserveReport, Snapshot, build_report};
use crate::observe::target::{PidFd, Target, spawn_held};

use super::error::{Error, Result};

/// What `observe_command` found: the whole run's report and how the command
/// ended.
#[derive(Clone, Debug)]
pub struct Observation {
    /// System calls (exact counts; time per call), context switches of the
    /// command's threads, and system-wide CPU split and interrupts over the run.
    pub report: ObserveReport,
    /// The command's exit status as a shell reports it (128 + signal when a
    /// signal ended it; 127 when it could not be executed).
    pub exit_status: u8,
}

/// Start `cmd` (program and arguments; the program looked up in `PATH`),
/// count what it asks of the kernel until it exits, and return the report.
/// The command is held before its `execve` until counting has started, so its
/// first counted call is its own `execve`. Needs root (eBPF or tracefs): an
/// unprivileged caller gets [`Error::NeedsRoot`]. `backend` chooses the
/// collector (`None`: eBPF where it works, else tracefs).
///
/// ```no_run
/// let seen = iolab::observe_command(&["true"], None)?;
/// println!("{} system calls", seen.report.syscalls_total);
/// # Ok::<(), iolab::Error>(())
/// ```
pub fn observe_command<S: AsRef<str>>(cmd: &[S], backend: Option<Backend>) -> Result<Observation> {
    let cmd: Vec<String> = cmd.iter().map(|a| a.as_ref().to_string()).collect();
    if cmd.is_empty() {
        return Err(Error::Usage(
            "observe_command: no command given; pass the program and its arguments".into(),
        ));
    }
    if !crate::sys::is_root() {
        return Err(crate::sys::needs_root("observe (tracefs instances and tracepoints)").into());
    }
    // 64 MiB per CPU of trace buffer (tracefs) and every call timed: the
    // command's defaults.
    let mut collector = Collector::open(backend, 65536, 1)?;
    let mut target = match spawn_held(&cmd) {
        Ok(t) => t,
        Err(e) => {
            let _ = collector.remove();
            return Err(e.into());
        }
    };
    let result = watch(&mut collector, &mut target, &cmd.join(" "));
    // Whatever happened, a held child must not wait forever: closing the pipe
    // without a byte makes it exit 127.
    if let Target::Child { go, .. } = &mut target {
        go.take();
    }
    let removed = collector.remove();
    let seen = result?;
    removed?;
    Ok(seen)
}

fn watch(collector: &mut Collector, target: &mut Target, label: &str) -> Result<Observation> {
    let Target::Child { pid, go } = target else {
        unreachable!("observe_command starts its own command");
    };
    let pid = *pid;
    collector.add_pids(&[pid])?;
    collector.start()?;
    let start = Snapshot::take()?;
    let mut g = go.take().expect("the child is held until now");
    g.write_all(b"g").map_err(|err| Error::Io {
        what: "releasing the command".into(),
        err,
    })?;
    drop(g);
    let exited = PidFd::open(pid);
    let exit_status = loop {
        match &exited {
            Some(fd) => fd.wait(Duration::from_millis(50)),
            None => std::thread::sleep(Duration::from_millis(50)),
        }
        collector.poll()?;
        let mut status = 0;
        // SAFETY: waiting for our own child without blocking.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status) as u8
            } else {
                128u8.wrapping_add(libc::WTERMSIG(status) as u8)
            };
        }
        if r < 0 {
            return Err(Error::Io {
                what: format!("waiting for process {pid}"),
                err: std::io::Error::last_os_error(),
            });
        }
    };
    collector.stop()?;
    let end = Snapshot::take()?;
    let p = collector.total_period()?;
    let lost = collector.lost_events()?;
    let mut report = build_report(
        collector,
        "total",
        0,
        &format!("`{label}`"),
        &p,
        &start,
        &end,
        (collector.events(), lost),
    );
    report.in_flight = collector
        .in_flight()
        .into_iter()
        .map(|(tid, nr)| InFlight {
            tid,
            syscall: syscall_name(nr),
        })
        .collect();
    // Exact counts are the promise: a dropped event fails the observation.
    collector.require_no_loss()?;
    Ok(Observation {
        report,
        exit_status,
    })
}
