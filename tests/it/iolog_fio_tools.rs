//! fio's own log tools read iolab's job logs unchanged: `fio2gnuplot` (the fio
//! package's command), and `fiologparser.py` and `fiologparser_hist.py` (which
//! Debian ships gzipped under /usr/share/doc/fio). Each test skips, saying
//! why, when a tool or the Python modules it imports are missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::run_common::run_json;
use crate::support::needs::{Need, ready, skip};

/// A fio helper script from the fio package's documentation, decompressed
/// into `dir` (Debian gzips it), or why it is not there.
fn fio_script(name: &str, dir: &Path) -> Result<PathBuf, String> {
    let doc = Path::new("/usr/share/doc/fio");
    let out = dir.join(name);
    if doc.join(name).exists() {
        std::fs::copy(doc.join(name), &out).map_err(|e| e.to_string())?;
        return Ok(out);
    }
    let gz = doc.join(format!("{name}.gz"));
    if !gz.exists() {
        return Err(format!(
            "fio's {name} is not installed (apt-get install fio puts it in /usr/share/doc/fio)"
        ));
    }
    let o = Command::new("gzip")
        .arg("-dc")
        .arg(&gz)
        .output()
        .map_err(|e| format!("gzip: {e}"))?;
    if !o.status.success() {
        return Err(format!("gzip -dc {}: failed", gz.display()));
    }
    std::fs::write(&out, o.stdout).map_err(|e| e.to_string())?;
    Ok(out)
}

/// A Python 3 that can import `modules`, or why there is none.
fn python_with(modules: &str) -> Result<&'static str, String> {
    for py in ["python3", "/usr/bin/python3"] {
        let ok = Command::new(py)
            .args(["-c", &format!("import {modules}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Ok(py);
        }
    }
    Err(format!(
        "no python3 here imports {modules} (apt-get install python3-numpy python3-pandas)"
    ))
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Numbers of a log's column `col` (0-based).
fn column(text: &str, col: usize) -> Vec<u64> {
    text.lines()
        .map(|l| {
            l.split(',')
                .nth(col)
                .unwrap()
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("{l}"))
        })
        .collect()
}

fn pct(v: &Value, p: &str) -> f64 {
    v["clat_ns"]["percentile"][p].as_u64().expect("percentile") as f64
}

#[test]
fn fio2gnuplot_reads_bandwidth_and_iops_logs() {
    if !ready(&[Need::Tool {
        cmd: "fio2gnuplot",
        package: "fio",
    }]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("g");
    let target = dir.path().join("f");
    run_json(&[
        "--name=g",
        &format!("--filename={}", target.display()),
        "--size=4m",
        "--rw=randread",
        "--time_based",
        "--runtime=1",
        "--log_avg_msec=100",
        &format!("--write_bw_log={}", prefix.display()),
        &format!("--write_iops_log={}", prefix.display()),
    ]);
    for (flag, ty) in [("-b", "bw"), ("-i", "iops")] {
        let log = read(&dir.path().join(format!("g_{ty}.1.log")));
        let values = column(&log, 1);
        assert!(values.len() >= 9, "{ty}: one row per 100 ms window: {log}");
        let out = dir.path().join(format!("out_{ty}"));
        std::fs::create_dir(&out).unwrap();
        let o = Command::new("fio2gnuplot")
            .arg(flag)
            .arg("-d")
            .arg(&out)
            .current_dir(dir.path())
            .output()
            .expect("run fio2gnuplot");
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "fio2gnuplot {flag}: {stdout}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(stdout.contains(&format!("g_{ty}.1.log")), "{stdout}");
        // Its summary of the file is the file's own: count, max, mean.
        let global = read(&out.join("result.global"));
        let field = |k: &str| -> f64 {
            global
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{k}=")))
                .unwrap_or_else(|| panic!("{k} in {global}"))
                .parse()
                .unwrap()
        };
        assert_eq!(field("values_count") as usize, values.len(), "{global}");
        assert_eq!(field("max"), *values.iter().max().unwrap() as f64);
        let mean = values.iter().sum::<u64>() as f64 / values.len() as f64;
        assert!((field("avg") - mean).abs() < 0.01, "{global} vs {mean}");
        assert!(mean > 0.0, "a running job has nonzero {ty}");
    }
}

#[test]
fn fiologparser_reads_latency_logs_as_it_reads_fios_own() {
    let dir = tempfile::tempdir().unwrap();
    let parser = match fio_script("fiologparser.py", dir.path()) {
        Ok(p) => p,
        Err(why) => return skip(why),
    };
    let py = match python_with("argparse") {
        Ok(p) => p,
        Err(why) => return skip(why),
    };
    let target = dir.path().join("f");
    run_json(&[
        "--name=p",
        &format!("--filename={}", target.display()),
        "--size=4m",
        "--rw=randread",
        "--time_based",
        "--runtime=1",
        "--log_avg_msec=100",
        &format!("--write_lat_log={}", dir.path().join("p").display()),
    ]);
    let parse = |log: &Path| {
        Command::new(py)
            .arg(&parser)
            .args(["-i", "100", "-A"])
            .arg(log)
            .output()
            .expect("run fiologparser.py")
    };
    let ours = parse(&dir.path().join("p_clat.1.log"));
    // The same verdict as on a log fio itself wrote, when fio is here: fio
    // 3.33's fiologparser.py expects 4 columns and fio 3.33 writes 5.
    if ready(&[Need::Fio]) {
        let fio = Command::new("fio")
            .args([
                "--name=q",
                "--size=1m",
                "--rw=randread",
                "--output=/dev/null",
            ])
            .arg(format!("--filename={}", target.display()))
            .arg(format!(
                "--write_lat_log={}",
                dir.path().join("q").display()
            ))
            .status()
            .expect("run fio");
        assert!(fio.success());
        let theirs = parse(&dir.path().join("q_clat.1.log"));
        assert_eq!(
            ours.status.success(),
            theirs.status.success(),
            "fiologparser.py treats iolab's log unlike fio's: {}\n{}",
            String::from_utf8_lossy(&ours.stderr),
            String::from_utf8_lossy(&theirs.stderr)
        );
        if !theirs.status.success() {
            // Compared and equal: the tool fails on both logs alike. Its
            // statistics cannot be checked with this fio's tool (fio 3.33's
            // fiologparser.py expects 4 columns and fio 3.33 writes 5).
            println!(
                "fiologparser.py fails on fio's log as on iolab's: {}",
                String::from_utf8_lossy(&theirs.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            );
            return;
        }
    }
    let stdout = String::from_utf8_lossy(&ours.stdout);
    assert!(
        ours.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&ours.stderr)
    );
    assert!(
        stdout.lines().any(|l| l.split(',').count() > 2),
        "per-interval statistics: {stdout}"
    );
}

#[test]
fn fiologparser_hist_reads_histogram_logs() {
    let dir = tempfile::tempdir().unwrap();
    let parser = match fio_script("fiologparser_hist.py", dir.path()) {
        Ok(p) => p,
        Err(why) => return skip(why),
    };
    let py = match python_with("numpy, pandas") {
        Ok(p) => p,
        Err(why) => return skip(why),
    };
    let target = dir.path().join("f");
    let json = run_json(&[
        "--name=h",
        &format!("--filename={}", target.display()),
        "--size=4m",
        "--rw=randread",
        "--time_based",
        "--runtime=1",
        "--log_hist_msec=100",
        &format!("--write_hist_log={}", dir.path().join("h").display()),
    ]);
    let read_dir = &json["jobs"][0]["read"];
    let log = dir.path().join("h_clat_hist.1.log");
    let text = read(&log);
    for l in text.lines() {
        // time, ddir, bs and fio's 1856 bins.
        assert_eq!(l.split(',').count(), 3 + 1856, "{}", &l[..60.min(l.len())]);
    }
    let binned: u64 = text
        .lines()
        .flat_map(|l| {
            l.split(',')
                .skip(3)
                .map(|v| v.trim().parse::<u64>().unwrap())
        })
        .sum();
    let total = read_dir["total_ios"].as_u64().unwrap();
    assert_eq!(binned, total, "every measured I/O is in one histogram row");
    assert!(text.lines().count() >= 5, "a row per 100 ms of a 1 s run");

    // fiologparser_hist.py weighs each row by the share of its assumed span
    // (half the output interval before the row's end) inside the output
    // interval, so with many rows later rows weigh more and its median is not
    // the run's: on a busy machine, where latency drifts over the second, that
    // differed from the JSON's p50 by 5-9%. A log of one row (a window longer
    // than the run: the row is written when the job ends) weighs every I/O
    // alike, so its statistics are the run's.
    let json = run_json(&[
        "--name=h",
        &format!("--filename={}", target.display()),
        "--size=4m",
        "--rw=randread",
        "--time_based",
        "--runtime=1",
        "--log_hist_msec=5000",
        &format!("--write_hist_log={}", dir.path().join("one").display()),
    ]);
    let read_dir = &json["jobs"][0]["read"];
    let total = read_dir["total_ios"].as_u64().unwrap();
    let log = dir.path().join("one_clat_hist.1.log");
    assert_eq!(read(&log).lines().count(), 1, "one row for the whole run");
    let o = Command::new(py)
        .arg(&parser)
        .args(["--interval", "100000"])
        .arg(&log)
        .output()
        .expect("run fiologparser_hist.py");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut lines = stdout.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').map(str::trim).collect();
    assert_eq!(header[1], "samples", "{stdout}");
    let row: Vec<f64> = lines
        .next()
        .unwrap()
        .split(',')
        .map(|v| v.trim().parse().unwrap())
        .collect();
    assert_eq!(row[1] as u64, total, "{stdout}");
    // Its percentiles come from fio's bins (1/64 of a power of two wide) and
    // interpolation: a few percent from the JSON's.
    let median = row[header.iter().position(|h| *h == "median").unwrap()];
    let p50 = pct(read_dir, "50.000000");
    assert!(
        (median - p50).abs() / p50 < 0.05,
        "median {median} vs p50 {p50}"
    );
    let max = row[header.iter().position(|h| *h == "max").unwrap()];
    let jmax = read_dir["clat_ns"]["max"].as_u64().unwrap() as f64;
    assert!((max - jmax).abs() / jmax < 0.05, "max {max} vs {jmax}");
}
