//! The JSON Schemas in docs/schema/: equal to what the serde types generate
//! today (`IOLAB_BLESS=1` rewrites them), and real documents validate against
//! them with Debian's python3-jsonschema, an implementation of the standard
//! that is not ours.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::run_common;
use crate::support::needs::{Need, ready, skip};

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/schema")
        .join(name)
}

fn check_current(name: &str, schema: &Value) {
    let path = shipped(name);
    let want = iolab::schema::to_text(schema);
    if std::env::var_os("IOLAB_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is not what the types generate today; if the change is meant, bless it with \
         IOLAB_BLESS=1 cargo test --release --test it json_schema, and raise the schema \
         version (docs/json.md)",
        path.display()
    );
}

#[test]
fn shipped_schemas_are_what_the_types_generate() {
    check_current("run.schema.json", &iolab::schema::run());
    check_current("lab-results.schema.json", &iolab::schema::lab_results());
}

/// Validate `doc` against the shipped schema `name` with python3-jsonschema;
/// false (after saying SKIPPED) when that is not installed.
fn validates(name: &str, doc: &Value) -> bool {
    if !ready(&[Need::Tool {
        cmd: "python3",
        package: "python3",
    }]) {
        return false;
    }
    let has = Command::new("python3")
        .args(["-c", "import jsonschema"])
        .status()
        .is_ok_and(|s| s.success());
    if !has {
        skip("python3-jsonschema is not installed (apt-get install python3-jsonschema)");
        return false;
    }
    let dir = tempfile::tempdir().unwrap();
    let doc_path = dir.path().join("doc.json");
    std::fs::write(&doc_path, serde_json::to_string(doc).unwrap()).unwrap();
    let script = "import json, sys, jsonschema\n\
schema = json.load(open(sys.argv[1]))\n\
doc = json.load(open(sys.argv[2]))\n\
v = jsonschema.Draft202012Validator(schema)\n\
errors = sorted(v.iter_errors(doc), key=lambda e: list(e.path))\n\
for e in errors[:20]:\n    print('/'.join(map(str, e.path)) + ': ' + e.message[:300])\n\
sys.exit(1 if errors else 0)\n";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(shipped(name))
        .arg(&doc_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the document does not validate against docs/schema/{name}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    true
}

#[test]
fn run_json_validates_and_carries_its_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    let lat = dir.path().join("lat");
    let lat = lat.to_str().unwrap();
    // json+ (the latency bins), three directions, per-class results and job
    // logs: as many optional keys as a null-device run can fill.
    let (code, out, err) = run_common::iolab_run(&[
        "--output-format=json+",
        "--name=a",
        "--ioengine=null",
        "--size=16m",
        "--rw=randrw",
        "--bs=4k",
        "--iodepth=4",
        "--number_ios=2000",
        &format!("--write_lat_log={lat}"),
        "--name=b",
        "--ioengine=null",
        "--size=16m",
        "--rw=randtrim",
        "--number_ios=500",
        "--completion=poll",
    ]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["iolab"]["schema_version"], "1.3.0");
    assert!(
        doc.get("schema_version").is_none(),
        "fio's top level stays fio's"
    );
    validates("run.schema.json", &doc);
}

#[test]
fn traced_run_json_validates() {
    if !ready(&[Need::Zram]) {
        return;
    }
    let z = iolab::sys::zram::Zram::create(32 << 20).unwrap();
    let dev = format!("/dev/{}", z.name());
    let _one = crate::support::serial::one_at_a_time();
    let (code, out, err) = run_common::iolab_run(&[
        "--output-format=json",
        "--trace",
        "--name=tr",
        "--direct=1",
        "--rw=randread",
        "--bs=4k",
        "--size=16m",
        "--runtime=300ms",
        "--time_based",
        &format!("--filename={dev}"),
    ]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert!(
        doc["jobs"][0]["iolab"]["engine"]["trace"].is_object(),
        "{out}"
    );
    validates("run.schema.json", &doc);
}

#[test]
fn lab_results_validate() {
    // The report tests' full results.json: every study's tables and charts.
    let r = crate::report_html_common::lab_results();
    let doc = serde_json::to_value(&r).unwrap();
    assert_eq!(doc["schema_version"], "1.0.0");
    validates("lab-results.schema.json", &doc);
}
