//! json+ bins for slat and lat: fio writes `bins` (and `percentile`) beside a
//! latency object exactly where its `*_percentiles` option is on and the
//! series has samples; iolab's json+ has the same keys as fio's for the same
//! job (compared with fio itself when installed), and fio's
//! `fio_jsonplus_clat2csv` reads the slat and lat bins too.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::run_common::iolab_run;
use crate::support::needs::{Need, ready};

const OBJS: [&str; 3] = ["slat_ns", "clat_ns", "lat_ns"];

fn job(dir: &Path, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "--name=b",
        "--size=2m",
        "--rw=randread",
        "--bs=4k",
        "--ioengine=libaio",
        "--iodepth=4",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.push(format!("--filename={}", dir.join("f").display()));
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

fn iolab_plus(dir: &Path, extra: &[&str]) -> Value {
    let mut a = job(dir, extra);
    a.push("--output-format=json+".into());
    let (code, out, err) = iolab_run(&a);
    assert_eq!(code, 0, "{extra:?}: {err}");
    serde_json::from_str(&out).unwrap()
}

/// Which of slat/clat/lat carry `bins` and `percentile` in the read direction.
fn shape(doc: &Value) -> Vec<(String, bool, bool)> {
    let r = &doc["jobs"][0]["read"];
    OBJS.iter()
        .map(|o| {
            (
                o.to_string(),
                r[o].get("bins").is_some(),
                r[o].get("percentile").is_some(),
            )
        })
        .collect()
}

const CASES: [&[&str]; 5] = [
    &[],
    &["--lat_percentiles=1"],
    &["--slat_percentiles=1"],
    &["--clat_percentiles=0"],
    &[
        "--clat_percentiles=0",
        "--lat_percentiles=1",
        "--slat_percentiles=1",
    ],
];

#[test]
fn bins_follow_the_percentile_options_and_hold_every_sample() {
    let dir = tempfile::tempdir().unwrap();
    for extra in CASES {
        let doc = iolab_plus(dir.path(), extra);
        let on = |name: &str, default: bool| {
            extra
                .iter()
                .find(|e| e.starts_with(&format!("--{name}=")))
                .map_or(default, |e| e.ends_with("=1"))
        };
        let want = [
            on("slat_percentiles", false),
            on("clat_percentiles", true),
            on("lat_percentiles", false),
        ];
        let r = &doc["jobs"][0]["read"];
        for (o, w) in OBJS.iter().zip(want) {
            assert_eq!(r[o].get("bins").is_some(), w, "{extra:?} {o}");
            assert_eq!(r[o].get("percentile").is_some(), w, "{extra:?} {o}");
            if let Some(b) = r[o]["bins"].as_object() {
                let total: u64 = b.values().map(|v| v.as_u64().unwrap()).sum();
                assert_eq!(
                    total,
                    r[o]["N"].as_u64().unwrap(),
                    "{extra:?} {o}: every sample"
                );
                assert_eq!(total, 512, "{extra:?} {o}");
            }
        }
        // Plain json: the same percentiles, no bins.
        let mut a = job(dir.path(), extra);
        a.push("--output-format=json".into());
        let (code, out, err) = iolab_run(&a);
        assert_eq!(code, 0, "{err}");
        let plain: Value = serde_json::from_str(&out).unwrap();
        for (o, w) in OBJS.iter().zip(want) {
            let p = &plain["jobs"][0]["read"][o];
            assert!(p.get("bins").is_none(), "{extra:?} {o}");
            assert_eq!(p.get("percentile").is_some(), w, "{extra:?} {o}");
        }
    }
}

#[test]
fn key_sets_match_fio_json_plus() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for extra in CASES {
        let ours = iolab_plus(dir.path(), extra);
        let mut a = job(dir.path(), extra);
        a.push("--output-format=json+".into());
        let o = Command::new("fio").args(&a).output().expect("run fio");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let theirs: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(shape(&ours), shape(&theirs), "{extra:?}");
    }
}

#[test]
fn clat2csv_reads_slat_and_lat_bins() {
    if !ready(&[Need::Tool {
        cmd: "fio_jsonplus_clat2csv",
        package: "fio",
    }]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let doc = iolab_plus(dir.path(), &["--lat_percentiles=1", "--slat_percentiles=1"]);
    let src = dir.path().join("plus.json");
    std::fs::write(&src, serde_json::to_string(&doc).unwrap()).unwrap();
    let o = Command::new("fio_jsonplus_clat2csv")
        .arg(&src)
        .arg(dir.path().join("lat.csv"))
        .output()
        .expect("fio_jsonplus_clat2csv runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(dir.path().join("lat_job0.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').map(str::trim).collect();
    let rows: Vec<Vec<&str>> = lines
        .map(|l| l.split(',').map(str::trim).collect())
        .collect();
    for o in OBJS {
        let col = header
            .iter()
            .position(|h| *h == format!("read_{o}_count"))
            .unwrap_or_else(|| panic!("no read_{o}_count in {header:?}"));
        let total: u64 = rows
            .iter()
            .filter_map(|r| r.get(col)?.parse::<u64>().ok())
            .sum();
        assert_eq!(total, 512, "{o}: clat2csv counted every sample");
    }
}
