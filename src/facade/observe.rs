//! Observing a command: `iolab observe -- CMD`'s total report, typed.

use crate::observe::collector::Backend;
use crate::observe::report::ObserveReport;
use crate::observe::watch::{Plan, observe};

use super::error::{Error, Result};

/// What `observe_command` found: the whole run's report and how the command
/// ended.
#[derive(Clone, Debug)]
#[non_exhaustive]
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
    // command's defaults. The same loop as `iolab observe -- CMD`, keeping
    // the total report only.
    let plan = Plan {
        backend,
        buffer_kb: 65536,
        time_sample: 1,
        pid: None,
        cmd: &cmd,
        interval: None,
        duration: None,
    };
    let mut total = None;
    let exit_status = observe(&plan, &mut |r: &ObserveReport| -> Result<()> {
        total = Some(r.clone());
        Ok(())
    })?;
    Ok(Observation {
        report: total.expect("the loop reports the total before it returns"),
        exit_status,
    })
}
