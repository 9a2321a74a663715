//! `iolab compare` end to end: interleaved A/B rounds on the null device
//! (null_lat 4 us against 6 us is "slower" and trips the gate; the same
//! options on both sides are "no difference" and pass), fio's JSON against
//! iolab's for the same job file, mismatched options listed, bad input exit 2,
//! and the page in headless Chromium.
//!
//! The null device completes each command in virtual time, and with
//! completion=poll a worker sees it within tens of nanoseconds, so clat p50
//! is the device latency plus a constant however busy the machine is: a
//! preempted worker delays the few I/Os in flight across the preemption,
//! never the median. The A/A checks therefore use p50 (not IOPS, p99 or
//! p99.9, which a loaded machine moves), and the default minimum effect (1%,
//! 40 ns here) keeps a significant-by-chance sub-percent shift from being
//! called a difference.

use crate::support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::needs::{Need, chromium, ready};

use crate::browser_report::{check_png, faults, probe, run_chromium};

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

/// `iolab compare ARGS...`: (exit status, stdout, stderr).
fn compare(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(IOLAB)
        .arg("compare")
        .args(args)
        .output()
        .expect("run iolab compare");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn compare_json(args: &[&str]) -> (i32, Value, String) {
    let mut a = args.to_vec();
    a.push("--output-format=json");
    let (code, out, err) = compare(&a);
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}\n{err}"));
    (code, v, err)
}

/// A 200 ms random-read job on the null device, polled.
fn job_file(dir: &Path) -> String {
    let p = dir.join("null.fio");
    std::fs::write(
        &p,
        "[global]\nioengine=null\nsize=64m\nbs=4k\nruntime=200ms\ntime_based\ncompletion=poll\n[r]\nrw=randread\n",
    )
    .unwrap();
    p.display().to_string()
}

/// The row of `metric` in `dir` of the first job.
fn row<'a>(v: &'a Value, dir: &str, metric: &str) -> &'a Value {
    v["comparisons"][0]["jobs"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["dir"] == dir && r["metric"] == metric)
        .unwrap_or_else(|| panic!("no {dir} {metric} row in {v:#}"))
}

#[test]
fn slower_device_is_slower_and_trips_the_gate() {
    let _one = support::serial::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let job = job_file(d);
    let out = d.join("ab");
    let html = d.join("page");
    let (code, v, err) = compare_json(&[
        "--run",
        &job,
        "--a",
        "--null_lat=4us",
        "--b",
        "--null_lat=6us",
        "--rounds",
        "5",
        "--out",
        out.to_str().unwrap(),
        "--fail-if",
        "p50>+10%",
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{v:#}\n{err}");
    for side in ["a", "b"] {
        for n in 1..=5 {
            assert!(out.join(side).join(format!("round{n}.json")).is_file());
        }
    }
    let p50 = row(&v, "read", "p50");
    assert_eq!(p50["verdict"], "slower", "{p50:#}");
    let ratio = p50["ratio"].as_f64().unwrap();
    assert!((1.4..1.6).contains(&ratio), "6/4 us: {ratio}");
    assert!(p50["ci"]["lo"].as_f64().unwrap() > 1.0);
    assert!(
        p50["test"]
            .as_str()
            .unwrap()
            .contains("Mann-Whitney U over 5 vs 5 rounds"),
        "{p50:#}"
    );
    let hits = v["gate_hits"].as_array().unwrap();
    assert!(
        hits.iter()
            .any(|h| h["rule"] == "p50>+10%" && h["metric"] == "p50"),
        "{hits:?}"
    );
    let job = &v["comparisons"][0]["jobs"][0];
    assert_eq!(job["options_differ"][0]["option"], "null_lat", "{job:#}");
    // The text form of the same rounds, re-read from the directory.
    let (code, text, _) = compare(&[out.to_str().unwrap(), "--fail-if", "p50>+10%"]);
    assert_eq!(code, 1);
    let line = text
        .lines()
        .find(|l| l.contains("clat p50"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("slower") && line.contains("ratio=1."),
        "{line}"
    );
    assert!(text.contains("gate: FAIL"), "{text}");

    let page = std::fs::read_to_string(html.join("index.html")).unwrap();
    assert!(page.contains("completion latency CDF"));
    assert!(page.contains("slower"));
    if !ready(&[Need::Chromium]) {
        return;
    }
    let bin = chromium().expect("checked by ready");
    let p = probe(&bin, d, "compare", &page);
    // Per direction: latency bars (1-2 scale groups), IOPS, CPU, ratios, CDF.
    assert!(p["charts"].as_array().unwrap().len() >= 5, "{p:#}");
    let f = faults(&p, 3);
    assert!(f.is_empty(), "compare page faults:\n{}", f.join("\n"));
    let shot = d.join("compare.png");
    run_chromium(
        &bin,
        &d.join("shot.profile"),
        &html.join("index.html"),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2000".into(),
        ],
    );
    let size = check_png(&shot, 1280, 2000);
    assert!(size > 40_000, "screenshot only {size} bytes");
}

#[test]
fn same_options_show_no_difference_and_pass() {
    let _one = support::serial::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let job = job_file(d);
    let out = d.join("aa");
    let (code, v, err) = compare_json(&[
        "--run",
        &job,
        "--a",
        "--null_lat=4us",
        "--b",
        "--null_lat=4us",
        "--rounds",
        "5",
        "--out",
        out.to_str().unwrap(),
        "--fail-if",
        "p50>+10%",
    ]);
    assert_eq!(code, 0, "{v:#}\n{err}");
    let p50 = row(&v, "read", "p50");
    assert_eq!(p50["verdict"], "no_difference", "{p50:#}");
    assert!(v["gate_hits"].as_array().unwrap().is_empty());
}

#[test]
fn fio_json_against_iolab_json_for_one_job_file() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let job = d.join("same.fio");
    std::fs::write(
        &job,
        "[global]\nioengine=null\nsize=16m\nbs=4k\nruntime=100ms\ntime_based\n[r]\nrw=randread\n",
    )
    .unwrap();
    let fio_out = d.join("fio.json");
    let st = Command::new("fio")
        .arg(&job)
        .arg("--output-format=json+")
        .arg(format!("--output={}", fio_out.display()))
        .status()
        .unwrap();
    assert!(st.success());
    let iolab_out = d.join("iolab.json");
    let st = Command::new(IOLAB)
        .arg("run")
        .arg(&job)
        .arg("--output-format=json+")
        .arg(format!("--output={}", iolab_out.display()))
        .status()
        .unwrap();
    assert!(st.success());
    let (code, v, err) = compare_json(&[fio_out.to_str().unwrap(), iolab_out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let c = &v["comparisons"][0];
    assert!(c["mismatched"].as_array().unwrap().is_empty(), "{c:#}");
    assert_eq!(c["jobs"][0]["job"], "r");
    assert!(
        c["base"]["producers"][0]
            .as_str()
            .unwrap()
            .starts_with("fio-3")
    );
    assert!(
        c["new"]["producers"][0]
            .as_str()
            .unwrap()
            .starts_with("iolab-")
    );
    for m in ["iops", "bw", "mean", "p50", "p99", "p99.9", "cpu"] {
        let dir = if m == "cpu" { "job" } else { "read" };
        let r = row(&v, dir, m);
        assert!(r["base"]["median"].as_f64().unwrap() >= 0.0, "{r:#}");
        assert!(r["new"]["median"].as_f64().unwrap() > 0.0, "{r:#}");
    }
    // One round a side: latency from both json+ bins, IOPS not judged.
    let p50 = row(&v, "read", "p50");
    let test = p50["test"].as_str().unwrap();
    assert!(test.contains("json+ bins vs json+ bins"), "{test}");
    assert!(
        row(&v, "read", "iops")["test"]
            .as_str()
            .unwrap()
            .starts_with("none: 1 vs 1 rounds")
    );
    let cdf = &c["jobs"][0]["cdfs"][0];
    assert_eq!(cdf["from"], "json+ bins");
}

#[test]
fn mismatched_options_are_listed_not_compared() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |bs: &str, name: &str| {
        let p = d.join(name);
        let job = if name == "s.json" {
            "--name=s"
        } else {
            "--name=r"
        };
        let st = Command::new(IOLAB)
            .args([
                "run",
                job,
                "--ioengine=null",
                "--size=16m",
                "--rw=randread",
                &format!("--bs={bs}"),
                "--runtime=50ms",
                "--time_based",
                "--output-format=json",
            ])
            .arg(format!("--output={}", p.display()))
            .status()
            .unwrap();
        assert!(st.success());
        p.display().to_string()
    };
    let (a, b) = (run("4k", "a.json"), run("8k", "b.json"));
    let (code, text, err) = compare(&[&a, &b]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("r: NOT COMPARED, options differ (bs: 4k vs 8k)")
            && text.contains("--allow-diff bs"),
        "{text}"
    );
    let (_, v, _) = compare_json(&[&a, &b, "--allow-diff", "bs"]);
    let j = &v["comparisons"][0]["jobs"][0];
    assert_eq!(j["options_differ"][0]["option"], "bs", "{v:#}");
    // A job on one side only is named.
    let s = run("4k", "s.json");
    let (code, text, _) = compare(&[&a, &s]);
    assert_eq!(code, 0);
    assert!(
        text.contains("only in base (not compared): r")
            && text.contains("only in new (not compared): s"),
        "{text}"
    );
}

#[test]
fn bad_input_exits_2_and_says_what_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lab = d.join("results.json");
    std::fs::write(&lab, r#"{"studies": []}"#).unwrap();
    let notjson = d.join("x.json");
    std::fs::write(&notjson, "hello").unwrap();
    for (args, says) in [
        (
            vec![lab.to_str().unwrap(), lab.to_str().unwrap()],
            "no `jobs` array",
        ),
        (
            vec![notjson.to_str().unwrap(), notjson.to_str().unwrap()],
            "not JSON",
        ),
        (
            vec!["/nonexistent/a.json", "/nonexistent/b.json"],
            "/nonexistent/a.json",
        ),
        (
            vec![
                lab.to_str().unwrap(),
                lab.to_str().unwrap(),
                "--fail-if",
                "p98>+5%",
            ],
            "unknown metric 'p98'",
        ),
        (
            vec!["--run", lab.to_str().unwrap(), "--a", "--bs=4k"],
            "--run needs both",
        ),
        (vec![lab.to_str().unwrap()], "one side only"),
    ] {
        let (code, out, err) = compare(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // A failing variant names its round and iolab run's own message.
    let job = job_file(d);
    let (code, _, err) = compare(&[
        "--run",
        &job,
        "--a",
        "--null_lat=4us",
        "--b",
        "--null_lat=fast",
        "--rounds",
        "1",
        "--out",
        d.join("bad").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("variant b, round 1") && err.contains("null_lat"),
        "{err}"
    );
}
