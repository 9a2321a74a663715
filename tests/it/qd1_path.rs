//! The worker's QD1 polling path (`engine/worker/qd1.rs`) against the general
//! loop (`IOLAB_QD1_PATH=0`): the same jobs give the same I/Os in the same
//! order, the same counts and distributions, the same scheduler and device
//! accounting. Only timing may differ.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// `iolab run ARGS --output-format=json`, with the QD1 path on or off; the
/// JSON and the I/Os of its per-I/O log (write?, offset, length) in order.
fn run(dir: &Path, qd1: bool, args: &[&str]) -> (Value, Vec<(u64, u64, u64)>) {
    let prefix = dir.join(if qd1 { "on" } else { "off" });
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_iolab"));
    cmd.arg("run")
        .args(args)
        .arg(format!("--write_lat_log={}", prefix.display()))
        .arg("--log_offset=1")
        .arg("--output-format=json");
    if !qd1 {
        cmd.env("IOLAB_QD1_PATH", "0");
    }
    let out = cmd.output().expect("run iolab");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // A job that ends in an I/O error exits non-zero, as fio does; its JSON
    // report is written all the same.
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "iolab run {args:?} (qd1 path {qd1}): no JSON ({e}): {}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let failed = v["jobs"][0]["error"] != 0;
    assert_eq!(
        out.status.success(),
        !failed,
        "exit status against the job's error: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = dir.join(format!("{}_lat.1.log", prefix.display()));
    let ios = std::fs::read_to_string(&log)
        .expect("lat log")
        .lines()
        .map(|l| {
            let c: Vec<u64> = l.split(',').map(|x| x.trim().parse().unwrap()).collect();
            (c[2], c[4], c[3])
        })
        .collect();
    (v, ios)
}

/// Everything about a run that does not depend on timing.
fn facts(v: &Value) -> Value {
    let j = &v["jobs"][0];
    let e = &j["iolab"]["engine"];
    let c = &e["completion"];
    let dir = |d: &str| {
        serde_json::json!({
            "total_ios": j[d]["total_ios"],
            "io_bytes": j[d]["io_bytes"],
            "short_ios": j[d]["short_ios"],
            "drop_ios": j[d]["drop_ios"],
        })
    };
    let log_sum = |k: &str| -> Vec<u64> {
        let mut sum = vec![0u64; 4];
        for row in j["iolab"]["iops_log"][k].as_array().unwrap() {
            for (i, x) in row.as_array().unwrap().iter().enumerate() {
                sum[i] += x.as_u64().unwrap();
            }
        }
        sum
    };
    serde_json::json!({
        "read": dir("read"),
        "write": dir("write"),
        "trim": dir("trim"),
        "error": j["error"],
        "iodepth_level": j["iodepth_level"],
        "iodepth_submit": j["iodepth_submit"],
        "iodepth_complete": j["iodepth_complete"],
        "completions": c["completions"],
        "polls_hit": c["polls_hit"],
        "sleeps": c["sleeps"],
        "waits": c["waits"],
        "most_per_wait": c["most_per_wait"],
        "waits_with_room": c["waits_with_room"],
        "scheduler_stats": e["scheduler_stats"],
        "backend_stats": e["backend_stats"],
        "accounting": e["accounting"],
        "faults_injected": e["faults_injected"],
        "total_err": e["total_err"],
        "first_error": e["first_error"],
        "errors": j["iolab"]["errors"],
        "iops_log_ios": log_sum("ios"),
        "iops_log_bytes": log_sum("bytes"),
    })
}

/// Requests one job's QD1 path carried.
fn qd1_requests(job: &Value) -> u64 {
    job["iolab"]["engine"]["completion"]["qd1_path"]
        .as_u64()
        .unwrap()
}

fn same_both_ways(args: &[&str]) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let (on, ios_on) = run(dir.path(), true, args);
    let (off, ios_off) = run(dir.path(), false, args);
    assert_eq!(
        qd1_requests(&off["jobs"][0]),
        0,
        "IOLAB_QD1_PATH=0 turns the path off"
    );
    assert!(!ios_on.is_empty());
    assert_eq!(ios_on, ios_off, "{args:?}: the same I/Os in the same order");
    assert_eq!(facts(&on), facts(&off), "{args:?}");
    qd1_requests(&on["jobs"][0])
}

const BASE: [&str; 4] = [
    "--name=q",
    "--ioengine=null",
    "--completion=poll",
    "--iodepth=1",
];

#[test]
fn random_reads_take_the_qd1_path_with_the_general_loops_results() {
    let mut a = BASE.to_vec();
    a.extend(["--rw=randread", "--bs=4k", "--size=8m"]);
    // Every request: 2048 reads of 4 KiB.
    assert_eq!(same_both_ways(&a), 2048);
}

#[test]
fn mixed_sizes_and_directions_with_data_take_the_qd1_path() {
    let mut a = BASE.to_vec();
    a.extend([
        "--rw=randrw",
        "--rwmixread=70",
        "--bsrange=4k-16k",
        "--size=8m",
        "--null_backing=mem",
        "--null_lat=1us",
    ]);
    assert!(same_both_ways(&a) > 0);
}

#[test]
fn every_completion_model_takes_the_qd1_path_with_the_general_loops_results() {
    // At zero device latency every wait finds its completion done, so the
    // counts of every model are exact both ways.
    for model in crate::support::QUEUED_MODELS {
        let completion = format!("--completion={model}");
        let a = [
            "--name=q",
            "--ioengine=null",
            "--iodepth=1",
            "--rw=randrw",
            "--bs=4k",
            "--size=4m",
            completion.as_str(),
        ];
        assert_eq!(same_both_ways(&a), 1024, "{model}");
    }
}

#[test]
fn an_error_ends_the_path_and_the_job_as_the_general_loop_ends_it() {
    let mut a = BASE.to_vec();
    // The device's fault draws are seeded: the same request fails both ways,
    // and the job stops there (no continue_on_error).
    a.extend([
        "--rw=randread",
        "--bs=4k",
        "--size=8m",
        "--null_err_rate=0.01",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (on, _) = run(dir.path(), true, &a);
    assert_ne!(on["jobs"][0]["error"], 0, "a failed request ends the job");
    same_both_ways(&a);
}

#[test]
fn jobs_the_path_does_not_serve_take_the_general_loop() {
    let dir = tempfile::tempdir().unwrap();
    for extra in [
        "--iodepth=2",
        "--iosched=prio",
        "--rate_iops=100000",
        "--rate_iops_min=1",
    ] {
        let mut a = BASE.to_vec();
        a.extend(["--rw=randread", "--bs=4k", "--size=1m", extra]);
        let (v, _) = run(dir.path(), true, &a);
        assert_eq!(qd1_requests(&v["jobs"][0]), 0, "{extra}");
    }
}

#[test]
fn a_time_based_run_ends_on_time_through_the_path() {
    let mut a = BASE.to_vec();
    a.extend([
        "--rw=randread",
        "--bs=4k",
        "--size=1g",
        "--runtime=200ms",
        "--time_based",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (v, _) = run(dir.path(), true, &a);
    let j = &v["jobs"][0];
    let total = j["read"]["total_ios"].as_u64().unwrap();
    assert!(total > 0);
    assert_eq!(qd1_requests(j), total, "every request by the QD1 path");
    let runtime = j["read"]["runtime"].as_u64().unwrap();
    // The span ends with the last completion before the 200 ms deadline; a
    // worker preempted just before it ends the span early by that much (on a
    // loaded 2-CPU machine, 199 ms was seen), so only a run cut far short or
    // one that overran fails.
    assert!((150..1000).contains(&runtime), "runtime {runtime} ms");
}
