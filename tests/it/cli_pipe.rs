//! A reader that leaves early (`iolab topology | head -1`) is not an error:
//! iolab stops quietly with SIGPIPE's status, as `cat` would, and prints no
//! panic or error message.

use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};

/// A pipe whose read end is already closed: the first write fails with EPIPE.
fn widowed_pipe() -> OwnedFd {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two fresh descriptors, each owned exactly once below.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: fds[0] and fds[1] are open and owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    write
}

fn run_into_closed_pipe(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(args)
        .stdout(Stdio::from(widowed_pipe()))
        .stderr(Stdio::piped())
        .output()
        .expect("start iolab");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn println_into_a_closed_pipe_exits_quietly() {
    // topology prints with println!, which panics on EPIPE unless caught.
    let (code, err) = run_into_closed_pipe(&["topology"]);
    assert_eq!(code, Some(141), "stderr: {err}");
    assert!(err.is_empty(), "expected no message, got: {err}");
}

#[test]
fn a_write_error_into_a_closed_pipe_exits_quietly() {
    // observe writes its report with `?`, so EPIPE arrives as an error value.
    // The report goes to stderr unless -o names a file: here, stdout's pipe.
    let (code, err) = run_into_closed_pipe(&["observe", "-o", "/dev/stdout", "--", "true"]);
    if err.contains("needs root") || err.contains("CAP_") {
        crate::support::needs::skip(format_args!("observe cannot run here: {err}"));
        return;
    }
    assert_eq!(code, Some(141), "stderr: {err}");
    assert!(err.is_empty(), "expected no message, got: {err}");
}
