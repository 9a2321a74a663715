//! `iolab run` with the libaio and sync-family engines, end to end, and the same
//! jobs under fio for sanity: both must issue the same number of I/Os (counts,
//! not speed — the machine is shared).

use std::process::Command;

use serde_json::Value;

use crate::run_common;
use crate::support::needs::{self, Need};

use run_common::{iolab_run, run_json};

fn fio_json(args: &[&str]) -> Option<Value> {
    let out = Command::new("fio")
        .args(args)
        .arg("--output-format=json")
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "fio {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // fio may print notes before the JSON object.
    let start = text.find('{').expect("fio printed JSON");
    Some(serde_json::from_str(&text[start..]).expect("fio JSON parses"))
}

fn total_ios(job: &Value) -> u64 {
    ["read", "write"]
        .iter()
        .map(|d| job[d]["total_ios"].as_u64().unwrap())
        .sum()
}

fn scratch() -> (tempfile::TempDir, String) {
    let dir = tempfile::Builder::new()
        .prefix("iolab-run-engines-")
        .tempdir_in(std::env::temp_dir())
        .unwrap();
    let f = dir.path().join("target").display().to_string();
    (dir, f)
}

/// 8 MiB in 4 KiB requests: 2048 I/Os, whatever the engine.
fn job(engine: &str, file: &str, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "--name=e",
        &format!("--ioengine={engine}"),
        &format!("--filename={file}"),
        "--size=8m",
        "--bs=4k",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

#[test]
fn same_io_counts_as_fio() {
    let (_d, file) = scratch();
    let cases: &[(&str, &[&str])] = &[
        ("libaio", &["--rw=randread", "--iodepth=32", "--direct=1"]),
        ("libaio", &["--rw=randrw", "--iodepth=1", "--direct=1"]),
        ("libaio", &["--rw=write", "--iodepth=8"]),
        ("sync", &["--rw=randread"]),
        ("pvsync", &["--rw=randwrite", "--direct=1"]),
        ("vsync", &["--rw=read"]),
    ];
    let have_fio = needs::has(Need::Fio, "the comparison with fio");
    for (engine, extra) in cases {
        let args = job(engine, &file, extra);
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let j = run_json(&a);
        let job = &j["jobs"][0];
        assert_eq!(total_ios(job), 2048, "iolab {engine} {extra:?}: {job}");
        assert_eq!(job["error"].as_i64(), Some(0), "{job}");
        assert_eq!(
            job["iolab"]["engine"]["backend"].as_str(),
            Some(*engine),
            "{job}"
        );
        if have_fio && let Some(f) = fio_json(&a) {
            assert_eq!(
                total_ios(&f["jobs"][0]),
                2048,
                "fio {engine} {extra:?} issued a different count"
            );
        }
    }
}

#[test]
fn libaio_poll_reaps_from_the_ring_without_waiting_syscalls() {
    let (_d, file) = scratch();
    let args = job(
        "libaio",
        &file,
        &[
            "--rw=randread",
            "--iodepth=4",
            "--direct=1",
            "--completion=poll",
        ],
    );
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let j = run_json(&a);
    let e = &j["jobs"][0]["iolab"]["engine"];
    assert_eq!(e["completion_model"].as_str(), Some("poll"), "{e}");
    assert_eq!(e["completion"]["completions"].as_u64(), Some(2048), "{e}");
    assert!(e["completion"]["polls_hit"].as_u64().unwrap() > 0, "{e}");
    assert_eq!(e["completion"]["sleeps"].as_u64(), Some(0), "{e}");
    // Every completion was read from the AIO ring in user space.
    assert_eq!(e["backend_stats"]["wait_calls"].as_u64(), Some(0), "{e}");
}

#[test]
fn buffered_libaio_reports_io_done_inside_io_submit() {
    let (_d, file) = scratch();
    let args = job("libaio", &file, &["--rw=randread", "--iodepth=8"]);
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let j = run_json(&a);
    let e = &j["jobs"][0]["iolab"]["engine"];
    assert_eq!(
        e["backend_stats"]["completed_in_submit"].as_u64(),
        Some(2048),
        "{e}"
    );
    let (code, out, err) = iolab_run(&a);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("2048 requests were already complete when io_submit returned"),
        "{out}"
    );
}

#[test]
fn unsupported_models_and_engines_are_refused() {
    let (_d, file) = scratch();
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "libaio",
            &["--completion=sync"],
            &["libaio", "completion=sync", "synchronous backend"],
        ),
        (
            "sync",
            &["--completion=poll"],
            &["sync", "use completion=sync"],
        ),
        (
            "pvsync",
            &["--completion=interrupt"],
            &["pvsync", "use completion=sync"],
        ),
        (
            "splice",
            &[],
            &["ioengine", "splice", "not implemented in iolab"],
        ),
        (
            "posixaio",
            &["--completion=sync"],
            &["posixaio", "completion=sync"],
        ),
        ("rbd", &[], &["ioengine", "rbd", "Ceph"]),
    ];
    for (engine, extra, want) in cases {
        let args = job(engine, &file, extra);
        let (code, out, err) = iolab_run(&args);
        assert_eq!(code, 1, "{engine} {extra:?} must be refused: {out}");
        for w in *want {
            assert!(
                err.contains(w),
                "{engine} {extra:?}: missing {w:?} in: {err}"
            );
        }
    }
}

#[test]
fn every_refused_engine_has_its_reason_in_the_error_and_the_docs() {
    use iolab::job::{ENGINE_NAMES, Engine, REFUSED_ENGINES};
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/fio-compat.md"))
        .unwrap();
    for (name, why) in REFUSED_ENGINES {
        let e = Engine::parse(name).unwrap_err().to_string();
        assert!(e.contains(why) && e.contains(ENGINE_NAMES), "{name}: {e}");
        assert!(
            docs.contains(&format!("| `{name}` | {why} |")),
            "docs/fio-compat.md lacks the row for ioengine={name}"
        );
    }
    for name in ENGINE_NAMES.split(", ") {
        assert_eq!(Engine::parse(name).unwrap().fio_name(), name);
    }
    let e = Engine::parse("/usr/lib/fio/foo.so")
        .unwrap_err()
        .to_string();
    assert!(e.contains("engine plugins"), "{e}");
}

#[test]
fn verify_reads_back_every_block_on_the_new_engines() {
    let (_d, file) = scratch();
    for engine in ["libaio", "sync", "vsync", "pvsync"] {
        for direct in ["--direct=0", "--direct=1"] {
            let args = job(
                engine,
                &file,
                &["--rw=randwrite", "--iodepth=8", "--verify=crc32c", direct],
            );
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            let j = run_json(&a);
            let job = &j["jobs"][0];
            assert_eq!(job["error"].as_i64(), Some(0), "{engine} {direct}: {job}");
            assert_eq!(job["write"]["total_ios"].as_u64(), Some(2048), "{job}");
            assert_eq!(job["read"]["total_ios"].as_u64(), Some(2048), "{job}");
        }
    }
}

/// Every engine named in the job files of Debian's fio-examples is either run or
/// refused with its own reason (never the generic "not a fio engine" message).
#[test]
fn every_engine_of_fios_examples_is_run_or_refused_with_a_reason() {
    use iolab::job::{Engine, REFUSED_ENGINES};
    let dir = std::path::Path::new("/usr/share/doc/fio/examples");
    let Ok(entries) = std::fs::read_dir(dir) else {
        crate::support::needs::skip(format_args!(
            "{} is missing (apt-get install fio-examples)",
            dir.display()
        ));
        return;
    };
    let mut seen = 0;
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().and_then(|x| x.to_str()) != Some("fio") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for line in text.lines() {
            let Some((k, v)) = line.split_once('=') else {
                continue;
            };
            if k.trim() != "ioengine" {
                continue;
            }
            let name = v.trim();
            seen += 1;
            if let Err(e) = Engine::parse(name) {
                assert!(
                    REFUSED_ENGINES
                        .iter()
                        .any(|(n, why)| *n == name && e.to_string().contains(why)),
                    "{}: ioengine={name} refused without its reason: {e}",
                    path.display()
                );
            }
        }
    }
    assert!(seen > 0, "no ioengine= line found in {}", dir.display());
}
