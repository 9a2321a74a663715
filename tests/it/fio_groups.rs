//! Reporting groups against fio 3.33 itself: `group_reporting` over several
//! jobs, `new_group`, `stonewall`, `numjobs` beside another job, a second job
//! file, and `group_reporting` set on one job only. Each job file runs under
//! fio and under iolab (the null engine: no files, the same I/O counts every
//! run), and what is not timing must be equal: in JSON each report's name,
//! `groupid`, `job options` and I/O counts per direction; in the normal text
//! the start lines `(g=N)`, each report's `(groupid=N, jobs=K)` and `issued
//! rwts` lines and the "Run status group N" lines' directions and `io=`; in
//! terse each line's name, group and KiB per direction. json+ must hold, for
//! each report, as many latency-bin samples as I/Os (fio's and iolab's).
//! Beside them, without fio: `exit_what=group` stopping only its reporting
//! group, and what the `iolab` object of a report over different backends
//! holds.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::run_common::iolab_run;
use crate::support::needs::{Need, ready};

/// (what the case shows, its job files).
const CASES: &[(&str, &[&str])] = &[
    (
        "two jobs, group_reporting",
        &["[global]\nioengine=null\nsize=4m\ngroup_reporting\n\
           [a]\nrw=read\n[b]\nrw=write\nbs=8k\n"],
    ),
    (
        "new_group between them",
        &["[global]\nioengine=null\nsize=2m\ngroup_reporting\n\
           [a]\nrw=read\n[b]\nnew_group\nrw=write\n[c]\nrw=read\nbs=8k\n"],
    ),
    (
        "stonewall, numjobs=2 and another job",
        &["[global]\nioengine=null\nsize=2m\ngroup_reporting\n\
           [a]\nrw=read\nnumjobs=2\n[b]\nrw=write\n\
           [c]\nstonewall\nrw=randread\n[d]\nrw=randwrite\nbs=16k\n"],
    ),
    (
        "numjobs=2 and another job, no group_reporting",
        &["[global]\nioengine=null\nsize=2m\n\
           [a]\nrw=read\nnumjobs=2\n[b]\nnew_group\nrw=write\n[c]\nrw=trim\n"],
    ),
    (
        "group_reporting on the second job only",
        &["[global]\nioengine=null\nsize=2m\n\
           [a]\nrw=read\n[b]\nrw=write\ngroup_reporting\n[c]\nrw=read\n"],
    ),
    (
        "two job files (the second starts a group)",
        &[
            "[global]\nioengine=null\nsize=2m\ngroup_reporting\n\
             [a]\nrw=read\n[b]\nrw=write\n",
            "[global]\nioengine=null\nsize=1m\ngroup_reporting\n\
             [c]\nrw=read\nnumjobs=2\n[d]\nnew_group\nrw=write\n",
        ],
    ),
];

/// The case's job files written to `dir`.
fn job_files(dir: &Path, files: &[&str]) -> Vec<PathBuf> {
    files
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let p = dir.join(format!("job{i}.fio"));
            std::fs::write(&p, text).unwrap();
            p
        })
        .collect()
}

/// `fio --output-format=FMT FILES...`'s output (through `--output`: fio's
/// stdout may hold other lines).
fn fio_out(dir: &Path, fmt: &str, files: &[PathBuf]) -> String {
    let out = dir.join(format!("fio.{fmt}"));
    let run = Command::new("fio")
        .current_dir(dir)
        .arg(format!("--output-format={fmt}"))
        .arg(format!("--output={}", out.display()))
        .args(files)
        .output()
        .expect("run fio");
    assert!(run.status.success(), "fio {files:?}: {run:?}");
    std::fs::read_to_string(&out).unwrap()
}

fn iolab_out(dir: &Path, fmt: &str, files: &[PathBuf]) -> String {
    let mut args = vec![format!("--output-format={fmt}")];
    args.extend(files.iter().map(|f| f.display().to_string()));
    let (code, out, err) = iolab_run(&args);
    assert_eq!(
        code,
        0,
        "iolab run {args:?} in {}: {err}\n{out}",
        dir.display()
    );
    out
}

/// The JSON document in `text` (json+ and json alike).
fn json_of(text: &str) -> Value {
    let at = text.find('{').expect("a JSON document");
    serde_json::from_str(&text[at..]).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// fio 3.33 adds an empty entry (no name, groupid 2^32-1) when a job without
/// group_reporting is joined by one with it: a miscount in its stat.c, not a
/// report, which iolab does not copy.
fn reports(doc: &Value) -> Vec<&Value> {
    doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j.get("jobname").is_some())
        .collect()
}

/// What of a JSON report is not timing.
fn json_facts(j: &Value) -> Value {
    let dir = |d: &str| {
        let x = &j[d];
        serde_json::json!([
            x["total_ios"],
            x["io_bytes"],
            x["io_kbytes"],
            x["short_ios"],
            x["drop_ios"]
        ])
    };
    serde_json::json!({
        "jobname": j["jobname"],
        "groupid": j["groupid"],
        "job options": j["job options"],
        "read": dir("read"),
        "write": dir("write"),
        "trim": dir("trim"),
    })
}

/// The lines of the normal text that are not timing.
fn text_facts(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for l in text.lines() {
        let t = l.trim_start();
        if l.contains(": (g=") {
            out.push(l.to_string());
        } else if l.contains(": (groupid=") {
            // name: (groupid=N, jobs=K): err= 0: pid=..., date
            let end = l.find("): err=").expect("the report's first line");
            out.push(l[..end + 1].to_string());
        } else if t.starts_with("issued rwts:") || t.starts_with("Run status group ") {
            out.push(t.to_string());
        } else if let Some(dir) = ["READ:", "WRITE:", "TRIM:"]
            .iter()
            .find(|d| t.starts_with(*d))
        {
            // READ: bw=..., ..., io=64.0MiB (67.1MB), run=2-2msec
            let io = t.split(", ").find(|p| p.starts_with("io=")).expect("io=");
            out.push(format!("{dir} {io}"));
        }
    }
    out
}

/// Name, group and KiB read and written of each terse line (fio's empty
/// entry, as in [`reports`], has an empty name and group -1: left out).
fn terse_facts(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| l.starts_with("3;"))
        .map(|l| {
            let f: Vec<&str> = l.split(';').collect();
            // 41 fields per direction after `3;producer;name;group;error`.
            [2, 3, 5, 46]
                .iter()
                .map(|&i| f[i].to_string())
                .collect::<Vec<_>>()
        })
        .filter(|f| !(f[0].is_empty() && f[1] == "-1"))
        .collect()
}

/// Per report, the json+ bin counts summed per direction against its I/Os.
fn bins_match_ios(doc: &Value, who: &str) {
    for j in reports(doc) {
        for d in ["read", "write", "trim"] {
            let ios = j[d]["total_ios"].as_u64().unwrap();
            let bins: u64 = j[d]["clat_ns"]["bins"]
                .as_object()
                .map_or(0, |b| b.values().map(|v| v.as_u64().unwrap()).sum());
            assert_eq!(bins, ios, "{who}: {} {d}: bins against I/Os", j["jobname"]);
        }
    }
}

#[test]
fn reporting_groups_match_fios_in_every_format() {
    if !ready(&[Need::Fio]) {
        return;
    }
    for &(what, texts) in CASES {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let files = job_files(dir.path(), texts);

        let theirs = json_of(&fio_out(dir.path(), "json", &files));
        let ours = json_of(&iolab_out(dir.path(), "json", &files));
        let t: Vec<Value> = reports(&theirs).into_iter().map(json_facts).collect();
        let o: Vec<Value> = reports(&ours).into_iter().map(json_facts).collect();
        assert_eq!(o, t, "{what}: JSON reports (iolab left, fio right)");

        let t = text_facts(&fio_out(dir.path(), "normal", &files));
        let o = text_facts(&iolab_out(dir.path(), "normal", &files));
        assert!(t.iter().any(|l| l.contains("(groupid=")), "{what}: {t:?}");
        assert_eq!(o, t, "{what}: normal text (iolab left, fio right)");

        let t = terse_facts(&fio_out(dir.path(), "terse", &files));
        let o = terse_facts(&iolab_out(dir.path(), "terse", &files));
        assert_eq!(o, t, "{what}: terse (iolab left, fio right)");

        let theirs = json_of(&fio_out(dir.path(), "json+", &files));
        let ours = json_of(&iolab_out(dir.path(), "json+", &files));
        bins_match_ios(&theirs, "fio");
        bins_match_ios(&ours, "iolab");
        assert_eq!(
            reports(&ours).len(),
            reports(&theirs).len(),
            "{what}: json+"
        );
    }
}

fn job<'a>(doc: &'a Value, name: &str) -> &'a Value {
    reports(doc)
        .into_iter()
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no report {name} in {doc}"))
}

/// `exit_what=group` (the default) stops the jobs of the ending job's
/// reporting group; a `new_group` running beside them goes on to its own
/// end, and `exit_what=stonewall` stops it too. (fio does the same; the
/// bounds are wide, so a busy machine cannot fail it.)
#[test]
fn exit_what_group_stops_only_its_reporting_group() {
    let args = |exit_what: &str| -> Vec<String> {
        [
            "--output-format=json",
            "--name=short",
            "--ioengine=null",
            "--size=1m",
            "--null_lat=100us",
            "--number_ios=200",
            "--exitall",
            exit_what,
            "--name=beside",
            "--ioengine=null",
            "--size=1m",
            "--null_lat=100us",
            "--time_based",
            "--runtime=60s",
            "--name=other",
            "--new_group",
            "--ioengine=null",
            "--size=1m",
            "--null_lat=100us",
            "--time_based",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    // other runs 2 s of its own: exit_what=group leaves it to end then.
    let mut a = args("--exit_what=group");
    a.push("--runtime=2s".into());
    let (code, out, err) = iolab_run(&a);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let runtime = |name: &str| job(&doc, name)["read"]["runtime"].as_u64().unwrap();
    assert_eq!(job(&doc, "short")["read"]["total_ios"], 200);
    assert_eq!(job(&doc, "other")["groupid"], 1);
    assert!(runtime("beside") < 30_000, "beside was not stopped: {doc}");
    assert!(runtime("other") >= 2_000, "other was stopped: {doc}");
    // exit_what=stonewall: every running job stops (other's 60 s too).
    let mut a = args("--exit_what=stonewall");
    a.push("--runtime=60s".into());
    let (code, out, err) = iolab_run(&a);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let runtime = |name: &str| job(&doc, name)["read"]["runtime"].as_u64().unwrap();
    assert!(runtime("beside") < 30_000, "beside was not stopped: {doc}");
    assert!(runtime("other") < 30_000, "other was not stopped: {doc}");
}

/// A report merging jobs of different backends names both, lists each with
/// its jobs and completion counters, and counts a shared worker's counters
/// once (null-device jobs on one filename share a worker).
#[test]
fn a_report_over_different_backends_lists_each() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = dir.path().join("f").display().to_string();
    let doc = crate::run_common::run_json(&[
        "--group_reporting",
        "--size=1m",
        "--name=n1",
        "--ioengine=null",
        "--filename=dev0",
        "--numjobs=2",
        "--name=n2",
        "--ioengine=null",
        "--filename=dev0",
        "--rw=write",
        "--name=p",
        "--ioengine=psync",
        &format!("--filename={file}"),
        "--rw=write",
    ]);
    let all = reports(&doc);
    assert_eq!(all.len(), 1, "{doc}");
    let j = all[0];
    assert_eq!(j["jobname"], "n1");
    let e = &j["iolab"]["engine"];
    assert_eq!(e["backend"], "null,psync", "{e}");
    let stages = e["stages"].as_array().expect("stages");
    assert_eq!(stages.len(), 2, "{e}");
    assert_eq!(stages[0]["backend"], "null");
    assert_eq!(stages[0]["jobs"], serde_json::json!(["n1", "n2"]));
    assert_eq!(stages[1]["backend"], "psync");
    assert_eq!(stages[1]["jobs"], serde_json::json!(["p"]));
    // The null device's worker is shared by its three streams: its
    // completions are counted once, 256 reads twice and 256 writes.
    assert_eq!(stages[0]["completion"]["completions"], 768, "{e}");
    assert_eq!(
        e["completion"]["completions"].as_u64(),
        Some(768 + stages[1]["completion"]["completions"].as_u64().unwrap())
    );
    assert_eq!(j["read"]["total_ios"], 512);
    assert_eq!(j["write"]["total_ios"], 512);
    assert_eq!(e["accounting"]["ok"], 1024);
}

/// fio refuses a job file whose jobs of one reported group differ in
/// `lat_percentiles` (the report has one set of percentiles); so does iolab,
/// naming both jobs. With `new_group` between them they are two reports.
#[test]
fn lat_percentiles_differing_within_a_reported_group_is_refused() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let text = |between: &str| {
        format!(
            "[global]\nioengine=null\nsize=1m\ngroup_reporting\n\
             [a]\nrw=read\n[b]\n{between}lat_percentiles=1\nrw=write\n"
        )
    };
    let bad = job_files(dir.path(), &[&text("")]);
    let (code, out, err) = iolab_run(&bad);
    assert_ne!(code, 0, "{out}");
    assert!(
        err.contains("job 'b'") && err.contains("lat_percentiles differs from job 'a'"),
        "{err}"
    );
    // In a directory of its own: job_files names the files job0.fio, ...
    let apart = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let good = job_files(apart.path(), &[&text("new_group\n")]);
    let doc = json_of(&iolab_out(apart.path(), "json", &good));
    assert_eq!(reports(&doc).len(), 2, "{doc}");
    if !ready(&[Need::Fio]) {
        return;
    }
    let fio = Command::new("fio")
        .arg("--output=/dev/null")
        .args(&bad)
        .output()
        .expect("run fio");
    assert!(!fio.status.success(), "fio ran it: {fio:?}");
}
