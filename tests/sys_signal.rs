// Own binary: sets the process's signal disposition and owns the cleanup registry.
//! The signal policy and the cleanup registry, process-wide: each test here owns
//! process state (signal disposition, the whole registry), hence its own binary.
//! The abort path runs in a child process (this same test binary, re-executed).

mod support;

use support::needs::{Need, ready};

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use iolab::sys::cleanup;
use iolab::sys::zram::Zram;

const CHILD_ENV: &str = "IOLAB_SIGNAL_TEST_CHILD";

#[test]
fn first_sigint_only_sets_the_stop_flag() {
    cleanup::install_signal_handlers(cleanup::SecondSignal::UndoAndExit).unwrap();
    cleanup::install_signal_handlers(cleanup::SecondSignal::UndoAndExit).unwrap(); // idempotent
    assert!(!cleanup::stop_requested());
    // SAFETY: raise delivers to this thread; our handler is installed.
    assert_eq!(unsafe { libc::raise(libc::SIGINT) }, 0);
    assert!(cleanup::stop_requested());
    // Still alive: the first signal must not exit.
}

#[test]
fn run_cleanups_undoes_newest_first_and_reports_failures() {
    let order = Arc::new(Mutex::new(Vec::new()));
    let ids: Vec<_> = (0..3)
        .map(|i| {
            let o = order.clone();
            cleanup::register(format!("step {i}"), move || {
                o.lock().unwrap().push(i);
                if i == 1 {
                    anyhow::bail!("cannot undo step 1")
                }
                Ok(())
            })
        })
        .collect();
    let failures = cleanup::run_cleanups();
    assert_eq!(*order.lock().unwrap(), [2, 1, 0]);
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].what, "step 1");
    // Guards dropping afterwards find their undo already done.
    for id in ids {
        assert!(cleanup::run(id).is_none());
    }
    assert!(cleanup::pending().is_empty());
}

/// Runs only when re-executed by `second_sigint_removes_zram_and_exits_130`.
#[test]
fn child_holds_zram_until_signalled() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    cleanup::install_signal_handlers(cleanup::SecondSignal::UndoAndExit).unwrap();
    let z = Zram::create(8 << 20).unwrap();
    println!("ZRAM {}", z.name());
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut said_stop = false;
    while Instant::now() < deadline {
        if cleanup::stop_requested() && !said_stop {
            println!("STOP");
            said_stop = true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("child was not aborted by the second SIGINT within 30 s");
}

#[test]
fn second_sigint_removes_zram_and_exits_130() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    if !ready(&[Need::Zram]) {
        return;
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_holds_zram_until_signalled", "--nocapture"])
        .env(CHILD_ENV, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill the child if an assertion below fails, so its zram is not left behind
    // waiting 30 s (AUTOCLEAR does not exist for zram).
    struct Reap(std::process::Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut child = Reap(child);
    let name = loop {
        let l = out
            .next()
            .expect("child ended before creating zram")
            .unwrap();
        if let Some(n) = l.strip_prefix("ZRAM ") {
            break n.to_string();
        }
    };
    let sys = format!("/sys/block/{name}");
    assert!(Path::new(&sys).exists());
    let pid = child.0.id() as libc::pid_t;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGINT) };
    loop {
        let l = out
            .next()
            .expect("child ended after the first SIGINT")
            .unwrap();
        if l == "STOP" {
            break;
        }
    }
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "first SIGINT must not exit"
    );
    assert!(
        Path::new(&sys).exists(),
        "first SIGINT must not undo anything"
    );
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let status = child.0.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.0.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "status {status:?}, stderr: {err}");
    assert!(status.signal().is_none());
    assert!(
        !Path::new(&sys).exists(),
        "{sys} left behind; child stderr: {err}"
    );
    assert!(err.contains(&format!("remove {name}")), "{err}");
}
