//! libaio's `userspace_reap` as a job option: with fio's companion option
//! (`iodepth_batch_complete_min=0`) a run reaps every completion from the AIO
//! ring in user space and makes no io_getevents call — counted by the backend
//! and, independently, by strace; `userspace_reap=0` reaps through
//! io_getevents; the option is refused where fio would ignore it.

use std::process::Command;

use serde_json::Value;

use crate::run_common::{iolab_run, run_json};
use crate::support::needs::{Need, ready};

fn job(dir: &std::path::Path, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "--name=r",
        "--size=4m",
        "--rw=randread",
        "--bs=4k",
        "--ioengine=libaio",
        "--iodepth=8",
        "--direct=1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.push(format!("--filename={}", dir.join("f").display()));
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

fn reap_of(json: &Value) -> &Value {
    &json["jobs"][0]["iolab"]["engine"]["backend_stats"]["aio_reap"]
}

fn ios(json: &Value) -> u64 {
    json["jobs"][0]["read"]["total_ios"].as_u64().unwrap()
}

#[test]
fn userspace_reap_reads_only_the_ring_and_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let a = job(
        dir.path(),
        &["--userspace_reap=1", "--iodepth_batch_complete_min=0"],
    );
    let args: Vec<&str> = a.iter().map(String::as_str).collect();
    let json = run_json(&args);
    let r = reap_of(&json);
    assert_eq!(r["path"], "ring", "{r}");
    assert_eq!(r["getevents_calls"], 0, "{r}");
    assert_eq!(r["ring_events"].as_u64().unwrap(), ios(&json), "{r}");
    assert_eq!(ios(&json), 1024);
    assert_eq!(
        json["jobs"][0]["iolab"]["engine"]["completion_model"], "poll",
        "userspace_reap=1 spins: the poll model"
    );

    let a = job(dir.path(), &["--userspace_reap=0"]);
    let args: Vec<&str> = a.iter().map(String::as_str).collect();
    let json = run_json(&args);
    let r = reap_of(&json);
    assert_eq!(r["path"], "getevents", "{r}");
    assert_eq!(r["ring_events"], 0, "{r}");
    assert_eq!(r["syscall_events"].as_u64().unwrap(), ios(&json), "{r}");
    assert!(r["getevents_calls"].as_u64().unwrap() > 0, "{r}");

    // Unset: iolab's default, unchanged (the ring first, io_getevents to sleep).
    let a = job(dir.path(), &[]);
    let args: Vec<&str> = a.iter().map(String::as_str).collect();
    let json = run_json(&args);
    assert_eq!(reap_of(&json)["path"], "ring_then_getevents");
}

#[test]
fn strace_sees_no_io_getevents_with_userspace_reap() {
    if !ready(&[Need::Strace]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let count = |extra: &[&str]| -> (u64, u64) {
        let summary = dir.path().join("strace.txt");
        let mut a = vec![
            "-f".to_string(),
            "-c".to_string(),
            "-e".to_string(),
            "trace=io_getevents,io_submit".to_string(),
            "-o".to_string(),
            summary.display().to_string(),
            env!("CARGO_BIN_EXE_iolab").to_string(),
            "run".to_string(),
        ];
        a.extend(job(dir.path(), extra));
        a.push("--output=/dev/null".into());
        let o = Command::new("strace").args(&a).output().expect("strace");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = std::fs::read_to_string(&summary).unwrap();
        // strace -c's table: "% time seconds usecs/call calls errors syscall".
        let calls = |name: &str| {
            text.lines()
                .find(|l| l.split_whitespace().last() == Some(name))
                .map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    f[3].parse::<u64>().unwrap_or_else(|_| panic!("{l}"))
                })
                .unwrap_or(0)
        };
        (calls("io_getevents"), calls("io_submit"))
    };
    let (getevents, submits) = count(&["--userspace_reap=1", "--iodepth_batch_complete_min=0"]);
    assert_eq!(getevents, 0, "userspace_reap=1 made io_getevents calls");
    assert!(submits > 0, "strace saw no io_submit: did the job run?");
    // Without a reap minimum of 0, fio reaps with io_getevents whatever
    // userspace_reap says; so does iolab (the option gets a note).
    let (getevents, _) = count(&["--userspace_reap=1"]);
    assert!(
        getevents > 0,
        "userspace_reap=1 without iodepth_batch_complete_min=0 should reap with io_getevents"
    );
    let (getevents, _) = count(&["--userspace_reap=0"]);
    assert!(
        getevents > 0,
        "userspace_reap=0 should reap with io_getevents"
    );
}

#[test]
fn userspace_reap_is_refused_where_it_cannot_mean_what_it_says() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 3] = [
        (
            &[
                "--userspace_reap=1",
                "--iodepth_batch_complete_min=0",
                "--completion=interrupt",
            ],
            "completion=interrupt",
        ),
        (
            &["--userspace_reap=1", "--ioengine=io_uring"],
            "ioengine=io_uring",
        ),
        (&["--userspace_reap=yes please"], "userspace_reap"),
    ];
    for (extra, says) in cases {
        let a = job(dir.path(), extra);
        let (code, _, err) = iolab_run(&a);
        assert_ne!(code, 0, "{extra:?} ran");
        assert!(err.contains(says), "{extra:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
    assert!(
        !dir.path().join("f").exists(),
        "refused before the target was made"
    );
}
