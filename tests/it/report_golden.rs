//! Golden test: iolab's fio-JSON and text output against real fio 3.33.
//!
//! For a null-engine job and a psync job (writes + fsync on a temp file), run fio
//! and compare the KEY STRUCTURE of its JSON (every key path, recursively, arrays
//! as `[]`, values ignored) with iolab's JSON for a result built from a recorder
//! fed with synthetic samples of the same shape. The only differences allowed are
//! in [`ALLOWED_EXTRA`] (iolab's own objects). The text output is compared by
//! the order of its line labels. Without fio the test says why and passes (CI
//! installs fio).

use crate::support;

use support::needs::{Need, ready};

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use iolab::measure::cpu::{DiskStats, ThreadUsage, disk_of_path};
use iolab::measure::recorder::{Recorder, RecorderConfig, Sample};
use iolab::report::model::{JobMeta, JobResult, RunExtras, RunResult, apply_group_aggregates};
use iolab::report::{json, text};
use iolab::request::{Class, Op};
use serde_json::Value;

/// Key-path prefixes iolab adds on purpose; everything else must match fio.
const ALLOWED_EXTRA: [&str; 2] = ["iolab", "jobs[].iolab"];

fn fio_version() -> Option<String> {
    let out = Command::new("fio").arg("--version").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn key_paths(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                out.insert(p.clone());
                key_paths(v, &p, out);
            }
        }
        Value::Array(a) => {
            let p = format!("{prefix}[]");
            for v in a {
                key_paths(v, &p, out);
            }
        }
        _ => {}
    }
}

fn paths(v: &Value) -> BTreeSet<String> {
    let mut s = BTreeSet::new();
    key_paths(v, "", &mut s);
    s
}

fn allowed(p: &str) -> bool {
    ALLOWED_EXTRA
        .iter()
        .any(|a| p == *a || p.starts_with(&format!("{a}.")) || p.starts_with(&format!("{a}[")))
}

fn run_fio(dir: &Path, args: &[&str], json: bool) -> String {
    let mut cmd = Command::new("fio");
    cmd.current_dir(dir).args(args);
    if json {
        cmd.arg("--output-format=json");
    }
    let out = cmd.output().expect("fio runs");
    assert!(
        out.status.success(),
        "fio {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("fio prints UTF-8")
}

/// Deterministic pseudo-random latencies (no RNG dependency needed).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, lo: u64, span: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (self.0 >> 33) % span
    }
}

/// A recorder holding `n` synthetic requests of `op` (plus an fsync every
/// `fsync_every`), as a worker on a sync backend would record them.
fn synthetic(op: Op, n: u64, fsync_every: u64, lat_lo: u64) -> Recorder {
    let mut r = Recorder::new_at(RecorderConfig::for_runtime(false, Some(1_000_000_000)), 0);
    let mut g = Lcg(7);
    let mut t = 0;
    for i in 1..=n {
        let clat = g.next(lat_lo, lat_lo * 3);
        t += clat + 50;
        r.note_depth(1);
        r.note_submit(1);
        r.note_complete(1);
        r.record_sample(&Sample {
            op,
            class: if op == Op::Read {
                Class::Read
            } else {
                Class::AsyncWrite
            },
            bytes: 4096,
            slat_ns: 0,
            clat_ns: clat,
            lat_ns: clat + 40,
            done_ns: t,
        });
        if fsync_every > 0 && i.is_multiple_of(fsync_every) {
            let l = g.next(200_000, 400_000);
            t += l;
            r.record_sample(&Sample {
                op: Op::Fsync,
                class: Class::SyncWrite,
                bytes: 0,
                slat_ns: 0,
                clat_ns: l,
                lat_ns: l,
                done_ns: t,
            });
        }
    }
    r
}

fn iolab_run(
    name: &str,
    options: &[(&str, &str)],
    rec: &Recorder,
    disks: Vec<iolab::measure::cpu::DiskUtil>,
) -> RunResult {
    let meta = JobMeta {
        name: name.to_string(),
        groupid: 0,
        jobnum: 0,
        workers: 1,
        pid: std::process::id(),
        options: options
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        iodepth: 1,
        percentile_list: iolab::job::spec::DEFAULT_PERCENTILES.to_vec(),
        runtime_ns: 40_000_000,
        job_runtime_ns: 40_000_000,
        elapsed_ns: 50_000_000,
    };
    let mut jobs = vec![JobResult::from_recorder(
        &meta,
        rec,
        &ThreadUsage {
            user_ns: 1_000_000,
            sys_ns: 9_000_000,
            nvcsw: 3,
            nivcsw: 1,
            minflt: 10,
            majflt: 0,
        },
    )];
    apply_group_aggregates(&mut jobs);
    RunResult::new(jobs, disks, RunExtras::default())
}

fn compare(label: &str, fio: &Value, ours: &Value) {
    let (f, o) = (paths(fio), paths(ours));
    let missing: Vec<&String> = f.difference(&o).collect();
    let extra: Vec<&String> = o.difference(&f).filter(|p| !allowed(p)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{label}: key structure differs from fio\n  missing in iolab: {missing:#?}\n  extra in iolab (not allowlisted): {extra:#?}"
    );
    assert!(
        o.iter().any(|p| p == "jobs[].iolab"),
        "{label}: iolab's per-job object is expected"
    );
}

/// Labels of fio's result lines (text before the first ':', units in parentheses
/// dropped since they follow the values), in order, consecutive repeats merged,
/// from the job's result header on; percentile rows and blank lines carry none.
fn labels(text: &str, first: &str) -> Vec<String> {
    let start = text
        .lines()
        .position(|l| l.starts_with(&format!("{first}: (groupid=")))
        .expect("job result header present");
    text.lines()
        .skip(start)
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('|'))
        // iolab's own trailing lines (system, clock), allowlisted like `iolab` in JSON.
        .filter(|l| !l.starts_with("iolab "))
        .filter_map(|l| l.split_once(':').map(|(a, _)| strip_units(a)))
        .fold(Vec::new(), |mut v: Vec<String>, l| {
            if v.last() != Some(&l) {
                v.push(l);
            }
            v
        })
}

fn strip_units(label: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for c in label.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn json_and_text_structure_match_fio() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let version = fio_version().expect("checked by ready");
    eprintln!("comparing with {version}");
    let dir = tempfile::tempdir().expect("temp dir");

    // 1. null engine: reads, no slat (fio's null engine is synchronous), no disk.
    let null_args = ["--name=x", "--ioengine=null", "--size=16m"];
    let fio_null: Value = serde_json::from_str(&run_fio(dir.path(), &null_args, true)).unwrap();
    let rec = synthetic(Op::Read, 4096, 0, 20);
    let ours = json::to_value(&iolab_run(
        "x",
        &[("name", "x"), ("ioengine", "null"), ("size", "16m")],
        &rec,
        Vec::new(),
    ));
    compare("null job", &fio_null, &ours);

    // 2. psync writes with fsync on a temp file: sync percentiles and disk_util.
    let file = dir.path().join("golden.dat");
    let fname = file.to_str().unwrap().to_string();
    let fopt = format!("--filename={fname}");
    let psync_args = [
        "--name=g",
        "--ioengine=psync",
        fopt.as_str(),
        "--size=4m",
        "--bs=4k",
        "--rw=randwrite",
        "--fsync=16",
    ];
    let before = DiskStats::read().expect("/proc/diskstats readable");
    let fio_psync_text = run_fio(dir.path(), &psync_args, true);
    let after = DiskStats::read().expect("/proc/diskstats readable");
    let fio_psync: Value = serde_json::from_str(&fio_psync_text).unwrap();
    let disks = match disk_of_path(&file) {
        Some(d) => DiskStats::util(&before, &after, &[d.as_str()]),
        None => Vec::new(),
    };
    let rec = synthetic(Op::Write, 1024, 16, 2_000);
    let opts = [
        ("name", "g"),
        ("ioengine", "psync"),
        ("filename", fname.as_str()),
        ("size", "4m"),
        ("bs", "4k"),
        ("rw", "randwrite"),
        ("fsync", "16"),
    ];
    let run = iolab_run("g", &opts, &rec, disks);
    compare("psync job", &fio_psync, &json::to_value(&run));
    assert_eq!(
        json::to_value(&run)["fio version"],
        Value::String(format!("iolab-{}", env!("CARGO_PKG_VERSION")))
    );

    // 3. text: same line labels in the same order as fio's normal output.
    let fio_text = run_fio(dir.path(), &psync_args, false);
    let our_text = text::render(&run, &iolab::job::spec::DEFAULT_PERCENTILES);
    let (fl, ol) = (labels(&fio_text, "g"), labels(&our_text, "g"));
    // iolab's per-class lines (allowlisted, like the JSON `iolab` objects).
    let ol: Vec<String> = ol
        .into_iter()
        .filter(|l| !l.starts_with("class "))
        .collect();
    // fio prints bw/iops sample lines only for jobs long enough to sample (a
    // busy disk stretches fio's run past its first sample; iolab's synthetic
    // run is 40 ms). Labels have their units stripped: "bw (  KiB/s)" is "bw".
    let fl: Vec<String> = fl
        .into_iter()
        .filter(|l| l != "bw" && l != "iops")
        .collect();
    assert_eq!(
        fl, ol,
        "text line labels differ\n--- fio ---\n{fio_text}\n--- iolab ---\n{our_text}"
    );
}

/// fio's `global options` and `job options`: options before the first
/// `--name` on the command line are global, listed beside a job file's
/// [global], and a command-line job lists its name among its options.
#[test]
fn global_and_job_options_are_listed_as_fio_lists_them() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("g.fio");
    std::fs::write(&file, "[global]\nioengine=null\nsize=1m\n[a]\nrw=read\n").unwrap();
    let file = file.to_str().unwrap();
    let cases: [&[&str]; 4] = [
        &["--ioengine=null", "--size=1m", "--name=a", "--rw=read"],
        &[file, "--bs=8k"],
        &["--name=a", "--ioengine=null", "--size=1m", "--rw=read"],
        &[
            "--ioengine=null",
            "--size=1m",
            "--name=a",
            "--rw=read",
            "--name=b",
            "--rw=write",
        ],
    ];
    let options = |prog: &str, args: &[&str]| {
        let out = Command::new(prog)
            .args(
                ["run", "--output-format=json"]
                    .iter()
                    .skip(usize::from(prog == "fio")),
            )
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{prog} {args:?}: {out:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let jobs: Vec<Value> = v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["job options"].clone())
            .collect();
        (v.get("global options").cloned(), jobs)
    };
    for args in cases {
        let fio = options("fio", args);
        let ours = options(env!("CARGO_BIN_EXE_iolab"), args);
        assert_eq!(ours, fio, "{args:?}");
    }
}
