//! fio's job-control and sync options end to end: `fdatasync`, `end_fsync`,
//! `fsync_on_close` counted as system calls (strace), `startdelay` delaying a
//! job, `exitall`/`exit_what`/`exitall_on_error` stopping the others,
//! `ignore_error` letting a job go on past a chosen errno (the null device's
//! fault injection), and the one-line errors for bad values.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::run_common::{iolab_run, run_json};
use crate::support::needs::{Need, ready};

fn job<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no job {name} in {doc}"))
}

/// Calls of each named syscall made by `iolab run ARGS` and its threads.
fn strace_counts(args: &[&str], calls: &[&str]) -> Vec<u64> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("strace.txt");
    let status = Command::new("strace")
        .arg("-f")
        .arg("-c")
        .arg("-o")
        .arg(&out)
        .arg(format!("--trace={}", calls.join(",")))
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .arg("run")
        .args(args)
        .output()
        .expect("run strace");
    assert!(status.status.success(), "{status:?}");
    let text = std::fs::read_to_string(&out).unwrap();
    calls
        .iter()
        .map(|c| {
            text.lines()
                .find(|l| l.split_whitespace().last() == Some(c))
                .map_or(0, |l| {
                    // % time, seconds, usecs/call, calls, [errors,] syscall
                    l.split_whitespace().nth(3).unwrap().parse().unwrap()
                })
        })
        .collect()
}

#[test]
fn fdatasync_end_fsync_and_fsync_on_close_are_issued() {
    if !ready(&[Need::Strace]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    let file = format!("--filename={}", f.display());
    // Lay the file out first so its own flush is not counted.
    let (code, _, err) = iolab_run(&[
        "--name=lay",
        &file,
        "--size=1m",
        "--rw=read",
        "--number_ios=1",
    ]);
    assert_eq!(code, 0, "{err}");
    // 256 writes, an fdatasync after every 8th but the last (fio issues a
    // sync before the next request, and none follows the job's last
    // write): 31; one fsync for end_fsync and one for fsync_on_close.
    let n = strace_counts(
        &[
            "--name=w",
            &file,
            "--size=1m",
            "--bs=4k",
            "--rw=write",
            "--fdatasync=8",
            "--end_fsync=1",
            "--fsync_on_close=1",
        ],
        &["fdatasync", "fsync"],
    );
    assert_eq!(n, vec![31, 2], "fdatasync, fsync calls");
    // sync_file_range every 64 writes: 3 calls, and no fsync.
    let n = strace_counts(
        &[
            "--name=w",
            &file,
            "--size=1m",
            "--bs=4k",
            "--rw=write",
            "--sync_file_range=wait_before,write:64",
        ],
        &["sync_file_range", "fsync"],
    );
    assert_eq!(n, vec![3, 0], "sync_file_range, fsync calls");
    // Without them: none.
    let n = strace_counts(
        &["--name=w", &file, "--size=1m", "--bs=4k", "--rw=write"],
        &["fdatasync", "fsync"],
    );
    assert_eq!(n, vec![0, 0]);
}

#[test]
fn fdatasync_syncs_are_reported_as_syncs() {
    let dir = tempfile::tempdir().unwrap();
    let file = format!("--filename={}", dir.path().join("f").display());
    for engine in ["psync", "io_uring", "libaio", "sync"] {
        let doc = run_json(&[
            "--name=w",
            &file,
            "--size=256k",
            "--bs=4k",
            "--rw=write",
            "--fdatasync=16",
            &format!("--ioengine={engine}"),
        ]);
        let j = job(&doc, "w");
        assert_eq!(j["write"]["total_ios"].as_u64(), Some(64), "{engine}");
        // After writes 16, 32 and 48; none after the last.
        assert_eq!(j["sync"]["total_ios"].as_u64(), Some(3), "{engine}: {j}");
    }
    // sync_file_range through io_uring (IORING_OP_SYNC_FILE_RANGE), psync
    // and libaio (a synchronous call there, as fio's).
    for engine in ["io_uring", "psync", "libaio"] {
        let doc = run_json(&[
            "--name=w",
            &file,
            "--size=256k",
            "--bs=4k",
            "--rw=write",
            "--sync_file_range=write:32",
            &format!("--ioengine={engine}"),
        ]);
        let j = job(&doc, "w");
        assert_eq!(j["sync"]["total_ios"].as_u64(), Some(1), "{engine}: {j}");
        assert_eq!(j["error"].as_i64(), Some(0), "{engine}: {j}");
    }
}

#[test]
fn startdelay_delays_a_job() {
    let t = Instant::now();
    let doc = run_json(&[
        "--name=now",
        "--ioengine=null",
        "--size=1m",
        "--name=later",
        "--ioengine=null",
        "--size=1m",
        "--startdelay=1500ms",
    ]);
    let wall = t.elapsed();
    assert!(wall >= Duration::from_millis(1500), "ran in {wall:?}");
    assert!(wall < Duration::from_secs(30), "ran in {wall:?}");
    // The delay is not the job's run time.
    for name in ["now", "later"] {
        let j = job(&doc, name);
        assert_eq!(j["read"]["total_ios"].as_u64(), Some(256), "{name}");
        assert!(j["job_runtime"].as_u64().unwrap() < 1500, "{name}: {j}");
    }
    // A range draws a delay within it.
    let t = Instant::now();
    run_json(&[
        "--name=r",
        "--ioengine=null",
        "--size=1m",
        "--startdelay=1s-2s",
    ]);
    let wall = t.elapsed();
    assert!(wall >= Duration::from_secs(1), "ran in {wall:?}");
}

#[test]
fn exitall_stops_the_other_jobs() {
    let t = Instant::now();
    let doc = run_json(&[
        "--name=short",
        "--ioengine=null",
        "--size=1m",
        "--null_lat=100us",
        "--number_ios=200",
        "--exitall",
        "--name=long",
        "--ioengine=null",
        "--size=1m",
        "--null_lat=100us",
        "--time_based",
        "--runtime=60s",
    ]);
    let wall = t.elapsed();
    assert!(
        wall < Duration::from_secs(30),
        "exitall did not stop 'long': {wall:?}"
    );
    assert_eq!(job(&doc, "short")["read"]["total_ios"].as_u64(), Some(200));
    let long = job(&doc, "long");
    assert!(long["job_runtime"].as_u64().unwrap() < 30_000, "{long}");
}

#[test]
fn exit_what_all_and_exitall_on_error_skip_later_groups() {
    let later = [
        "--name=later",
        "--ioengine=null",
        "--size=1m",
        "--stonewall",
    ];
    // exitall with the default exit_what=group: the next group still runs.
    let mut args = vec!["--name=first", "--ioengine=null", "--size=1m", "--exitall"];
    args.extend(later);
    let doc = run_json(&args);
    assert_eq!(doc["jobs"].as_array().unwrap().len(), 2, "{doc}");
    // exit_what=all: it does not.
    args.insert(4, "--exit_what=all");
    let doc = run_json(&args);
    let names: Vec<&str> = doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["jobname"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["first"], "{doc}");
    // exitall_on_error: a job stopping on an I/O error ends the run.
    let mut args = vec![
        "--name=failing",
        "--ioengine=null",
        "--size=1m",
        "--rw=write",
        "--null_err_rate=0.2",
        "--exitall_on_error",
        "--output-format=json",
    ];
    args.extend(later);
    let (code, out, _) = iolab_run(&args);
    assert_eq!(code, 1, "the failed job fails the run");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["jobs"].as_array().unwrap().len(), 1, "{doc}");
}

#[test]
fn ignore_error_goes_on_past_the_listed_errno_only() {
    let base = [
        "--name=w",
        "--ioengine=null",
        "--size=1m",
        "--rw=randwrite",
        "--null_err_rate=0.05",
        "--continue_on_error=write",
        "--output-format=json",
    ];
    let run = |extra: &str| {
        let mut a = base.to_vec();
        a.push(extra);
        let (code, out, err) = iolab_run(&a);
        assert_eq!(code, 1, "errors fail the job: {err}");
        let doc: Value = serde_json::from_str(&out).unwrap();
        doc["jobs"][0]["write"]["total_ios"].as_u64().unwrap()
    };
    // EIO (5) is what the null device injects: listed, the job writes everything.
    assert_eq!(run("--ignore_error=,EIO"), 256);
    assert_eq!(run("--ignore_error=,ENOSPC:5"), 256);
    // Not listed: the first injected error stops it.
    assert!(run("--ignore_error=,ENOSPC") < 256);
    // A write list where continue_on_error covers only reads does nothing
    // (fio ignores it too): the first write error stops the job, and a note
    // says why.
    let mut a = base.to_vec();
    a.retain(|o| !o.starts_with("--continue_on_error"));
    a.extend(["--continue_on_error=read", "--ignore_error=,EIO", "--notes"]);
    let (code, out, err) = iolab_run(&a);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("ignore_error is accepted, but its write list has no effect"),
        "{err}"
    );
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert!(doc["jobs"][0]["write"]["total_ios"].as_u64().unwrap() < 256);
}

#[test]
fn bad_values_name_the_line_option_and_what_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("ignore_error=,ENOTHING", "'ENOTHING' is not an errno name"),
        ("ignore_error=EIO,EIO,EILSEQ", "no VERIFY list"),
        ("startdelay=soon", "option 'startdelay'"),
        ("exit_what=some", "group, stonewall or all"),
        ("cmdprio_percentage=101", "option 'cmdprio_percentage'"),
        ("cmdprio_class=4", "option 'cmdprio_class'"),
        ("fdatasync=-1", "option 'fdatasync'"),
        ("sync_file_range=flush:8", "wait_before, write"),
        ("sync_file_range=write", "FLAGS:N"),
    ];
    for (line, want) in cases {
        let f = dir.path().join("bad.fio");
        std::fs::write(
            &f,
            format!("[j]\nioengine=io_uring\nfilename=/tmp/x\ncontinue_on_error=all\n{line}\n"),
        )
        .unwrap();
        let (code, _, err) = iolab_run(&[f.to_str().unwrap()]);
        assert_eq!(code, 1, "{line}");
        assert!(err.contains("bad.fio:5"), "{line}: {err}");
        assert!(err.contains(want), "{line}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{line}: {err}");
    }
    let conflicts = [
        (
            "[j]\nfilename=/tmp/x\ncmdprio_percentage=20\n",
            "only io_uring and libaio",
        ),
        (
            "[j]\nioengine=io_uring\nfilename=/tmp/x\ncmdprio_class=3\n",
            "set cmdprio_percentage",
        ),
        ("[j]\nfilename=/tmp/x\nexit_what=all\n", "add exitall=1"),
        (
            "[j]\nioengine=posixaio\nfilename=/tmp/x\nsync_file_range=write:4\n",
            "no ioengine=posixaio command",
        ),
        (
            "[j]\nioengine=null\nsize=1m\nend_fsync=1\n",
            "ioengine=null has none",
        ),
    ];
    for (text, want) in conflicts {
        let f = dir.path().join("conflict.fio");
        std::fs::write(&f, text).unwrap();
        let (code, _, err) = iolab_run(&[f.to_str().unwrap()]);
        assert_eq!(code, 1, "{text}");
        assert!(err.contains("conflict.fio:"), "{text}: {err}");
        assert!(err.contains(want), "{text}: {err}");
    }
}
