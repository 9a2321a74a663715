//! Conservation under faults: on the null device with errors, hangs (aborted by
//! io_timeout), latency spikes and corrupted reads all switched on, under every
//! completion model, every request the engine submitted comes back exactly once
//! (ok or error), every slot and buffer is free at the end, the device holds
//! nothing, every injected fault is accounted for by kind, and every corrupted
//! read is caught by verification.

use iolab::engine::{EngineOptions, JobRun, run_jobs};
use iolab::job::plan::parse_run_args;

use crate::support;

use support::faults::faulty_job;

/// One faulty run at a time: a hang is told from a slow request by
/// io_timeout (2 ms), so these runs must not compete with each other for CPU.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    support::serial::one_at_a_time()
}

fn run(args: &[String]) -> Vec<JobRun> {
    let plan = parse_run_args(args, &|_| None).expect("job parses");
    let groups = run_jobs(&plan.jobs, &EngineOptions::default()).expect("job runs");
    groups.into_iter().flat_map(|g| g.jobs).collect()
}

fn check(r: &JobRun, what: &str) {
    let a = r.acct;
    let f = r.injected.expect("the null device reports injected faults");
    let v = r.verify.expect("the job verifies");
    assert!(!r.interrupted, "{what}");
    assert_eq!(
        a.submitted,
        a.ok + a.errors,
        "{what}: submitted = ok + error: {a:?}"
    );
    assert_eq!(
        a.spurious, 0,
        "{what}: a completion came for a slot not in flight"
    );
    assert_eq!(r.slots_free.0, r.slots_free.1, "{what}: slots left in use");
    assert_eq!(
        r.device_in_flight,
        Some(0),
        "{what}: the device still holds commands"
    );
    assert_eq!(
        a.timeouts, f.hangs,
        "{what}: every hang aborted by io_timeout: {a:?} {f:?}"
    );
    assert_eq!(
        a.errors - a.timeouts,
        f.errors,
        "{what}: every injected error seen: {a:?} {f:?}"
    );
    assert_eq!(
        v.failures, f.corruptions,
        "{what}: every corrupted read caught by verify: {v:?} {f:?}"
    );
    assert_eq!(a.verify_failures, v.failures, "{what}");
    // With one fixed bs a block is only ever lost to a failed rewrite of it
    // (its contents are then undefined), never half-overwritten.
    assert!(v.skipped <= a.errors, "{what}: {v:?} {a:?}");
    // Something of each kind happened, or the test proves nothing.
    assert!(
        f.errors > 0 && f.hangs > 0 && f.spikes > 0 && f.corruptions > 0,
        "{what}: {f:?}"
    );
    assert!(v.checked > 500, "{what}: {v:?}");
    // A job with failed I/O or bad data reports an error (exit status 1).
    let e = r.error.as_deref().expect("the job must fail");
    assert!(
        e.contains("I/O errors (continue_on_error=all)"),
        "{what}: {e}"
    );
    assert!(e.contains("failed verification"), "{what}: {e}");
}

#[test]
fn every_model_conserves_requests_under_faults() {
    let _serial = serial();
    let cases = [
        ("poll", "timer"),
        ("interrupt", "timer"),
        ("interrupt", "thread"),
        ("hybrid", "timer"),
        ("adaptive", "timer"),
    ];
    for (i, (model, irq)) in cases.iter().enumerate() {
        for rw in ["write", "randwrite"] {
            for seed in 0..3u64 {
                let what = format!("{model}/{irq}/{rw}/seed {seed}");
                let runs = run(&faulty_job(model, irq, rw, 100 * i as u64 + seed));
                assert_eq!(runs.len(), 1);
                check(&runs[0], &what);
            }
        }
    }
}

#[test]
fn first_error_stops_the_job_by_default_and_slots_still_come_back() {
    let _serial = serial();
    let mut args = faulty_job("poll", "timer", "randwrite", 7);
    args.retain(|a| !a.starts_with("--continue_on_error"));
    let r = &run(&args)[0];
    let a = r.acct;
    assert_eq!(a.submitted, a.ok + a.errors, "{a:?}");
    assert!(a.errors >= 1, "{a:?}");
    assert_eq!(r.slots_free.0, r.slots_free.1);
    assert_eq!(r.device_in_flight, Some(0));
    // Stopped early: far fewer requests than the 1024 writes of two loops.
    assert!(a.submitted < 1024, "{a:?}");
    let e = r.error.as_deref().unwrap();
    assert!(e.contains("I/O error at offset"), "{e}");
}

#[test]
fn continue_on_error_read_does_not_cover_writes() {
    let _serial = serial();
    let mut args = faulty_job("interrupt", "timer", "write", 3);
    for a in args.iter_mut() {
        if a.starts_with("--continue_on_error") {
            *a = "--continue_on_error=read".into();
        }
        if a.starts_with("--null_err_rate") {
            *a = "--null_err_rate=0.2".into();
        }
    }
    let r = &run(&args)[0];
    // The first write error ends the job: writes are not covered.
    assert!(r.acct.errors >= 1);
    assert!(r.acct.submitted < 100, "{:?}", r.acct);
}

#[test]
fn verify_fatal_stops_at_the_first_mismatch() {
    let _serial = serial();
    let args: Vec<String> = [
        "--name=f",
        "--ioengine=null",
        "--size=1m",
        "--null_backing=mem",
        "--rw=write",
        "--bs=4k",
        "--verify=crc32c",
        "--verify_fatal=1",
        "--null_corrupt_rate=0.5",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let r = &run(&args)[0];
    let v = r.verify.unwrap();
    assert_eq!(v.failures, 1, "{v:?}");
    assert!(v.checked < 256, "{v:?}");
    assert_eq!(r.rec.first_error, libc::EILSEQ);
    assert_eq!(r.slots_free.0, r.slots_free.1);
}
