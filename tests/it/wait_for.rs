//! fio's `wait_for=NAME` end to end: the waiter starts once the named job has
//! finished (its own runtime counted from its start, not from the group's),
//! fio's `waitfor.fio` chain runs, and a name that is not an earlier job is a
//! one-line error naming file:line and the names that are.

use std::time::Instant;

use serde_json::Value;

use crate::run_common::{iolab_run, run_json};

fn job<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no job {name} in {doc}"))
}

#[test]
fn a_waiter_starts_when_its_waitee_has_finished() {
    let common = [
        "--ioengine=null",
        "--size=1g",
        "--rw=randread",
        "--time_based",
        "--runtime=400ms",
    ];
    let mut args = vec!["--name=first", "--numjobs=2"];
    args.extend(common);
    args.extend(["--name=beside"]);
    args.extend(common);
    args.extend(["--name=second", "--wait_for=first"]);
    args.extend(common);
    let t0 = Instant::now();
    let doc = run_json(&args);
    let wall = t0.elapsed().as_millis();
    // first (both clones) ran 400 ms, then second ran 400 ms: run one after
    // the other, never beside each other (beside runs with first).
    assert!(
        wall >= 800,
        "the run took {wall} ms: second did not wait for first"
    );
    let ms = |n: &str| job(&doc, n)["job_runtime"].as_u64().unwrap();
    // The wait is not part of the waiter's runtime.
    assert!(
        (390..700).contains(&ms("second")),
        "second's runtime {} ms",
        ms("second")
    );
    for n in ["first", "beside", "second"] {
        assert!(
            job(&doc, n)["read"]["total_ios"].as_u64().unwrap() > 0,
            "{n} did no I/O"
        );
    }
}

#[test]
fn a_name_that_is_no_earlier_job_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("w.fio");
    std::fs::write(
        &f,
        "[global]\nioengine=null\nsize=1m\n\n[a]\n\n[b]\n\n[c]\nwait_for=d\n\n[d]\n",
    )
    .unwrap();
    let (code, _, err) = iolab_run(&[f.to_str().unwrap()]);
    assert_ne!(code, 0);
    let line = err.trim();
    assert_eq!(line.lines().count(), 1, "{err}");
    assert!(line.contains(&format!("{}:10", f.display())), "{line}");
    assert!(
        line.contains("option 'wait_for'") && line.contains("'d'"),
        "{line}"
    );
    assert!(line.contains("valid: a, b"), "{line}");

    let (code, _, err) = iolab_run(&["--name=x", "--ioengine=null", "--size=1m", "--wait_for=x"]);
    assert_ne!(code, 0);
    assert!(err.contains("cannot wait for itself"), "{err}");
}

/// A waiter may not share a worker with its waitee (null-device jobs on one
/// filename share one): it would wait for itself.
#[test]
fn a_waiter_on_its_waitees_worker_is_refused() {
    let (code, _, err) = iolab_run(&[
        "--name=a",
        "--ioengine=null",
        "--filename=dev",
        "--size=1m",
        "--name=b",
        "--ioengine=null",
        "--filename=dev",
        "--size=1m",
        "--wait_for=a",
    ]);
    assert_ne!(code, 0);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("wait_for"), "{err}");
}
