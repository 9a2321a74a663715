//! SIGINT during `iolab run`: the first stops the run, prints what was measured
//! (valid text and JSON, marked interrupted) and exits 130 after cleanup; a run
//! on a zram device we hot-added stops cleanly and leaves the device free to
//! remove; a second SIGINT exits at once even when the engine cannot stop.

use crate::support;

use support::needs::{Need, ready};

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use iolab::sys::zram::Zram;

/// Kills the child if a test fails before it exits.
struct Reap(Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(args: &[&str]) -> Reap {
    Reap(
        Command::new(env!("CARGO_BIN_EXE_iolab"))
            .arg("run")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start iolab"),
    )
}

fn sigint(c: &Reap) {
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(c.0.id() as i32, libc::SIGINT) }, 0);
}

/// Wait for exit (at most `limit`); returns (status, stdout, stderr, time taken).
fn finish(mut c: Reap, limit: Duration) -> (i32, String, String, Duration) {
    let t0 = Instant::now();
    loop {
        if let Some(st) = c.0.try_wait().unwrap() {
            let mut out = String::new();
            let mut err = String::new();
            c.0.stdout.take().unwrap().read_to_string(&mut out).unwrap();
            c.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            return (st.code().unwrap_or(-1), out, err, t0.elapsed());
        }
        assert!(t0.elapsed() < limit, "iolab did not exit within {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Wait until the run is really under way: the SIGINT handler is installed
/// (bit 1 of /proc/PID/status SigCgt) and a worker thread (`iolab-w*`) exists,
/// then a little longer so some I/O is done. A fixed sleep was a bet on how
/// fast a busy machine starts the process; this is a condition.
fn wait_armed(c: &Reap) {
    let pid = c.0.id();
    let t0 = Instant::now();
    loop {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let caught = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            .is_some_and(|m| m & (1 << (libc::SIGINT - 1)) != 0);
        let worker = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.flatten().any(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|n| n.starts_with("iolab-w"))
                })
            })
            .unwrap_or(false);
        if caught && worker {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "iolab did not start its workers within 20 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(100));
}

const LONG_NULL: &[&str] = &[
    "--name=sig",
    "--ioengine=null",
    "--size=64m",
    "--rw=randread",
    "--bs=4k",
    "--null_lat=20us",
    "--iodepth=4",
    "--time_based",
    "--runtime=60",
];

#[test]
fn first_sigint_prints_partial_json_and_exits_130() {
    let _one = crate::support::serial::one_at_a_time();
    let mut a = LONG_NULL.to_vec();
    a.push("--output-format=json");
    let c = spawn(&a);
    wait_armed(&c);
    sigint(&c);
    let (code, out, err, took) = finish(c, Duration::from_secs(10));
    assert_eq!(code, 130, "{err}");
    assert!(took < Duration::from_secs(5), "stopping took {took:?}");
    let doc: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("invalid JSON ({e}): {out}"));
    let job = &doc["jobs"][0];
    assert_eq!(job["iolab"]["engine"]["interrupted"], true, "{job}");
    let ios = job["read"]["total_ios"].as_u64().unwrap();
    assert!(
        ios > 100,
        "partial results carry the I/O done so far: {ios}"
    );
    let acct = &job["iolab"]["engine"]["accounting"];
    assert!(acct["submitted"].as_u64().unwrap() >= ios, "{acct}");
    assert!(
        err.contains("interrupted: the results above are partial"),
        "{err}"
    );
}

#[test]
fn first_sigint_prints_partial_text() {
    let _one = crate::support::serial::one_at_a_time();
    let c = spawn(LONG_NULL);
    wait_armed(&c);
    sigint(&c);
    let (code, out, err, _) = finish(c, Duration::from_secs(10));
    assert_eq!(code, 130, "{err}");
    assert!(out.contains("sig: (groupid=0"), "{out}");
    assert!(out.contains("read: IOPS="), "{out}");
    assert!(err.contains("SIGINT received, stopping"), "{err}");
}

#[test]
fn second_sigint_exits_at_once() {
    let _one = crate::support::serial::one_at_a_time();
    // A 10 s device latency under the interrupt model: the worker sleeps in the
    // device and the first SIGINT cannot end the run before it wakes.
    let c = spawn(&[
        "--name=slow",
        "--ioengine=null",
        "--size=1m",
        "--rw=read",
        "--null_lat=10s",
        "--completion=interrupt",
        "--output-format=json",
    ]);
    wait_armed(&c);
    sigint(&c);
    std::thread::sleep(Duration::from_millis(300));
    let mut c = c;
    assert!(
        c.0.try_wait().unwrap().is_none(),
        "the first SIGINT must not abort"
    );
    sigint(&c);
    let (code, out, err, took) = finish(c, Duration::from_secs(5));
    assert_eq!(code, 130, "{err}");
    assert!(took < Duration::from_secs(2), "second SIGINT took {took:?}");
    assert!(out.is_empty(), "an abort prints no results: {out}");
}

#[test]
fn interrupted_run_on_zram_leaves_the_device_free() {
    let _one = crate::support::serial::one_at_a_time();
    if !ready(&[Need::Zram]) {
        return;
    }
    let z = Zram::create(64 << 20).expect("hot-add zram");
    let dev = z.path();
    let fname = format!("--filename={}", dev.display());
    let c = spawn(&[
        "--name=z",
        &fname,
        "--ioengine=psync",
        "--rw=randread",
        "--bs=4k",
        "--direct=1",
        "--time_based",
        "--runtime=60",
        "--output-format=json",
    ]);
    wait_armed(&c);
    sigint(&c);
    let (code, out, err, _) = finish(c, Duration::from_secs(10));
    assert_eq!(code, 130, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    assert!(doc["jobs"][0]["read"]["total_ios"].as_u64().unwrap() > 0);
    // Nobody holds it: an exclusive open succeeds (EBUSY otherwise) ...
    let held = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(&dev);
    assert!(
        held.is_ok(),
        "{} still in use: {:?}",
        dev.display(),
        held.err()
    );
    drop(held);
    let sys = format!("/sys/block/{}", z.name());
    // ... and it can be removed.
    drop(z);
    assert!(
        !std::path::Path::new(&sys).exists(),
        "{sys} was not removed"
    );
}
