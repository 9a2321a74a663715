//! `iolab run`'s output formats beside fio's: json+ read by fio's own
//! `fio_jsonplus_clat2csv`, `normal,json` together, terse v3 parsed field by
//! field against real fio's, and `--status-interval`.

use std::process::Command;

use serde_json::Value;

use crate::run_common::iolab_run;
use crate::support::needs::{Need, ready};

/// A null-device job with latencies spread over many fio bins (exponential
/// service times around 20 µs), short enough for a busy machine.
const JOB: &[&str] = &[
    "--name=spread",
    "--ioengine=null",
    "--size=64m",
    "--rw=randread",
    "--bs=4k",
    "--null_lat=20us",
    "--null_dist=exp",
    "--number_ios=4000",
];

fn run_ok(extra: &[&str]) -> String {
    let mut a: Vec<&str> = JOB.to_vec();
    a.extend_from_slice(extra);
    let (code, out, err) = iolab_run(&a);
    assert_eq!(code, 0, "iolab run {a:?}: {err}\n{out}");
    out
}

/// Percentile `p` (0-100) read from clat2csv's cumulative fraction column:
/// the first bin whose cumulative share reaches p (fio's own rule).
fn csv_percentile(rows: &[(u64, f64)], p: f64) -> u64 {
    rows.iter()
        .find(|(_, cum)| *cum * 100.0 >= p - 1e-9)
        .map(|(ns, _)| *ns)
        .expect("percentile inside the bins")
}

#[test]
fn json_plus_is_read_by_fios_clat2csv() {
    if !ready(&[Need::Tool {
        cmd: "fio_jsonplus_clat2csv",
        package: "fio",
    }]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("plus.json");
    run_ok(&[
        "--output-format=json+",
        &format!("--output={}", src.display()),
    ]);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&src).unwrap()).unwrap();
    let read = &doc["jobs"][0]["read"];
    let bins = read["clat_ns"]["bins"].as_object().expect("read clat bins");
    let total: u64 = bins.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(total, 4000, "every completion is in a bin");
    assert!(bins.len() > 50, "spread latencies, {} bins", bins.len());
    assert!(
        doc["jobs"][0]["write"]["clat_ns"].get("bins").is_none(),
        "no bins for a direction without I/O (fio's consumers need one bin if the key is there)"
    );

    // fio's script, unchanged, on iolab's document; then its own check.
    let dest = dir.path().join("lat.csv");
    for extra in [None, Some("--validate")] {
        let out = Command::new("fio_jsonplus_clat2csv")
            .arg(&src)
            .arg(&dest)
            .args(extra)
            .output()
            .expect("fio_jsonplus_clat2csv runs");
        assert!(
            out.status.success(),
            "fio_jsonplus_clat2csv {extra:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if extra.is_some() {
            assert!(String::from_utf8_lossy(&out.stdout).contains("validated"));
        }
    }
    let csv = std::fs::read_to_string(dir.path().join("lat_job0.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').map(str::trim).collect();
    let col = header
        .iter()
        .position(|h| *h == "read_clat_ns_percentile")
        .expect("clat percentile column");
    let rows: Vec<(u64, f64)> = lines
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            let cum = f.get(col)?.parse::<f64>().ok()?;
            Some((f[0].parse().unwrap(), cum))
        })
        .collect();
    assert!(rows.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    assert!((rows.last().unwrap().1 - 1.0).abs() < 1e-9);
    // The script's percentiles are read from the same bins as iolab's
    // (fio's rule); allow one bin (1/64 of the value) for the script's
    // cumulative fractions, which it rounds.
    let ours = read["clat_ns"]["percentile"].as_object().unwrap();
    for p in ["50.000000", "90.000000", "99.000000"] {
        let mine = ours[p].as_u64().unwrap() as f64;
        let theirs = csv_percentile(&rows, p.parse().unwrap()) as f64;
        let rel = (mine - theirs).abs() / mine;
        assert!(
            rel <= 1.0 / 64.0,
            "p{p}: iolab {mine} ns, clat2csv {theirs} ns ({:.2} %)",
            rel * 100.0
        );
    }
    // Plain json keeps fio's json shape: no bins.
    let plain = crate::run_common::run_json(JOB);
    assert!(plain["jobs"][0]["read"]["clat_ns"].get("bins").is_none());
}

#[test]
fn normal_and_json_together_in_fios_order() {
    let out = run_ok(&["--output-format=normal,json"]);
    // fio's start-up lines come first (normal output), then the JSON
    // document, then the normal report.
    let start = out.find("\n{\n").expect("a JSON document") + 1;
    assert!(
        out[..start].starts_with("spread: (g=0): rw=randread")
            && out[..start].contains("Starting 1 thread"),
        "start-up lines first, as fio: {out}"
    );
    let out = &out[start..];
    let end = out.find("\n}\n").expect("end of the JSON document") + 3;
    let doc: Value = serde_json::from_str(&out[..end]).unwrap();
    assert_eq!(doc["jobs"][0]["read"]["total_ios"], 4000);
    let text = &out[end..];
    assert!(text.contains("spread: (groupid=0"), "{text}");
    assert!(text.contains("Run status group 0"), "{text}");

    // json and json+ together are one json+ document; terse comes first.
    let out = run_ok(&["--output-format=json,terse,json+"]);
    let (terse, json) = out.split_once('\n').unwrap();
    assert!(terse.starts_with("3;iolab-"), "{terse}");
    let doc: Value = serde_json::from_str(json).unwrap();
    assert!(doc["jobs"][0]["read"]["clat_ns"]["bins"].is_object());
}

/// What a terse field looks like, to compare fio's line with iolab's.
fn shape(f: &str) -> &'static str {
    if let Some((p, v)) = f.split_once("%=") {
        assert!(p.parse::<f64>().is_ok() && v.parse::<u64>().is_ok(), "{f}");
        "pct=us"
    } else if let Some(p) = f.strip_suffix('%') {
        assert!(p.parse::<f64>().is_ok(), "{f}");
        "share%"
    } else if f.parse::<u64>().is_ok() {
        "int"
    } else if f.parse::<f64>().is_ok() {
        "float"
    } else {
        "text"
    }
}

#[test]
fn terse_has_fios_fields_in_fios_order() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fio = Command::new("fio")
        .current_dir(dir.path())
        .args([
            "--output-format=terse",
            "--name=spread",
            "--ioengine=null",
            "--size=16m",
            "--rw=randrw",
            "--bs=4k",
        ])
        .output()
        .expect("fio runs");
    assert!(fio.status.success());
    let fio = String::from_utf8(fio.stdout).unwrap();
    let ours = run_ok(&["--output-format=terse", "--rw=randrw"]);
    let (fio_line, our_line) = (fio.trim_end(), ours.trim_end());
    assert_eq!(our_line.lines().count(), 1, "one line per job: {ours}");
    let f: Vec<&str> = fio_line.split(';').collect();
    let o: Vec<&str> = our_line.split(';').collect();
    assert_eq!(f.len(), 121, "fio's v3 line without disks: {fio_line}");
    assert_eq!(o.len(), f.len(), "iolab: {our_line}");
    for (i, (a, b)) in f.iter().zip(&o).enumerate() {
        let (sa, sb) = (shape(a), shape(b));
        // fio's integer-valued floats print as "0.000000"; 1 is the version.
        let same = sa == sb || (i > 1 && matches!((sa, sb), ("int", "float") | ("float", "int")));
        assert!(
            same,
            "field {}: fio {a:?} ({sa}), iolab {b:?} ({sb})",
            i + 1
        );
    }
    assert_eq!(o[0], "3");
    assert_eq!(o[2], "spread");
    // Read and write KiB (fields 6 and 47) add up to the I/Os done.
    let kib: u64 = o[5].parse::<u64>().unwrap() + o[46].parse::<u64>().unwrap();
    assert_eq!(kib, 4000 * 4);
    // Read clat percentiles (fields 18-37) rise, as fio's do.
    let pct: Vec<u64> = o[17..34]
        .iter()
        .map(|x| x.split_once("%=").unwrap().1.parse().unwrap())
        .collect();
    assert!(pct.windows(2).all(|w| w[0] <= w[1]), "{pct:?}");
    assert!(*pct.last().unwrap() > 0);
}

#[test]
fn status_interval_prints_cumulative_status() {
    let args = [
        "--name=st",
        "--ioengine=null",
        "--size=64m",
        "--rw=randread",
        "--bs=4k",
        "--null_lat=50us",
        "--time_based",
        "--runtime=1200ms",
        "--status-interval=250ms",
    ];
    let (code, out, err) = iolab_run(&args);
    assert_eq!(code, 0, "{err}");
    let status: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("iolab status: "))
        .collect();
    assert!(status.len() >= 2, "a status every 250ms over 1.2s: {out}");
    assert!(out.contains("Run status group 0"), "the report follows");
    let ios = |l: &str| -> u64 {
        l.split(": ")
            .nth(2)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let counts: Vec<u64> = status.iter().map(|l| ios(l)).collect();
    assert!(
        counts.windows(2).all(|w| w[0] <= w[1]),
        "cumulative: {counts:?}"
    );
    assert!(*counts.last().unwrap() > 0, "{status:?}");

    // With json only, each status is a JSON object on its own line.
    let mut a = args.to_vec();
    a.push("--output-format=json");
    let (code, out, err) = iolab_run(&a);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Value> = out
        .lines()
        .take_while(|l| l.starts_with("{\"iolab status\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() >= 2, "{out}");
    assert!(
        lines
            .iter()
            .all(|v| v["iolab status"]["total_ios"].is_u64())
    );
    let rest: String = out.lines().skip(lines.len()).collect::<Vec<_>>().join("\n");
    let doc: Value = serde_json::from_str(&rest).unwrap();
    assert!(doc["jobs"][0]["read"]["total_ios"].as_u64().unwrap() > 0);

    // Bad values stop before any I/O, naming the option and what is valid.
    let (code, _, err) = iolab_run(&["--name=j", "--ioengine=null", "--status-interval=0"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("status-interval") && err.contains("at least 100ms"),
        "{err}"
    );
}
