//! fio's flow control (`flow`, `flow_id`, `flow_sleep`) end to end: jobs of
//! one flow end with their I/O counts in the ratio of their weights, a job in
//! another flow is not held, and bad weights are one-line errors.

use serde_json::Value;

use crate::run_common::{iolab_run, run_json};

fn ios(doc: &Value, name: &str) -> (f64, f64) {
    let j = doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no job {name} in {doc}"));
    let r = &j["read"];
    (
        r["total_ios"].as_f64().unwrap(),
        r["runtime"].as_f64().unwrap(),
    )
}

/// Two null-device jobs on one emulated device share one worker thread, so
/// they start and end together: the weights alone decide their counts.
#[test]
fn jobs_of_one_flow_end_in_the_ratio_of_their_weights() {
    let common = [
        "--ioengine=null",
        "--filename=flowdev",
        "--size=1g",
        "--rw=randread",
        "--time_based",
        "--runtime=400ms",
        "--flow_sleep=50",
    ];
    let mut args = vec!["--name=light", "--flow=1"];
    args.extend(common);
    args.extend(["--name=heavy", "--flow=3"]);
    args.extend(common);
    // A job in a flow of its own beside them is held by no one.
    args.extend(["--name=alone", "--flow=1", "--flow_id=9"]);
    args.extend(common);
    let doc = run_json(&args);
    let (light, _) = ios(&doc, "light");
    let (heavy, _) = ios(&doc, "heavy");
    let (alone, _) = ios(&doc, "alone");
    let ratio = heavy / light;
    assert!(light > 100.0, "light issued {light}");
    assert!(
        (2.5..3.5).contains(&ratio),
        "heavy/light = {heavy}/{light} = {ratio}, expected 3"
    );
    // Its weight is all of its flow's: it keeps pace with the heaviest job of
    // the worker, far above light's share.
    assert!(
        alone > 2.0 * light,
        "alone ({alone}) held like light ({light})"
    );
}

/// Jobs on workers of their own: measured over the part of the run where both
/// run (ramp_time covers a late start on a busy machine; exitall ends both when
/// the first ends), their IOPS are in the ratio of their weights.
#[test]
fn flow_holds_jobs_on_separate_threads() {
    let common = [
        "--ioengine=null",
        "--size=1g",
        "--rw=randread",
        "--time_based",
        "--ramp_time=300ms",
        "--runtime=700ms",
        "--flow_sleep=100",
        "--exitall",
    ];
    let mut args = vec!["--name=one", "--filename=devA", "--flow=1"];
    args.extend(common);
    args.extend(["--name=four", "--filename=devB", "--flow=4"]);
    args.extend(common);
    let doc = run_json(&args);
    let (one, t1) = ios(&doc, "one");
    let (four, t4) = ios(&doc, "four");
    assert!(one > 10.0 && t1 > 0.0 && t4 > 0.0, "{doc}");
    let ratio = (four / t4) / (one / t1);
    assert!(
        (2.0..6.0).contains(&ratio),
        "IOPS ratio {ratio}, expected 4: {four}/{t4} vs {one}/{t1}"
    );
}

#[test]
fn bad_flow_values_are_one_line_errors() {
    for (arg, says) in [
        ("--flow=1001", "from 0 to 1000"),
        ("--flow=-1", "from 0 to 1000"),
        ("--flow_id=x", "from 0 to 4294967295"),
        ("--flow_sleep=abc", "microseconds"),
    ] {
        let (code, _, err) = iolab_run(&["--name=j", "--ioengine=null", "--size=1m", arg]);
        assert_ne!(code, 0, "{arg} accepted");
        let line = err.trim();
        assert_eq!(line.lines().count(), 1, "{arg}: {err}");
        let opt = arg.trim_start_matches("--").split('=').next().unwrap();
        assert!(line.contains(&format!("option '{opt}'")), "{arg}: {line}");
        assert!(line.contains(says), "{arg}: {line}");
    }
}
