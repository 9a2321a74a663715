//! `iolab run --trace` end to end on devices the test creates: a hot-added zram
//! (bio-based: only Q and C events) and a loop device over a temp file (request
//! based: Q G I D C). Checks the JSON btt table and split, and the text view.
//! Root only (zram, loop, tracefs); otherwise each test prints why it skipped.

use crate::support;

use support::needs::{Need, ready};

use iolab::sys::loopdev::LoopDev;
use iolab::sys::zram::Zram;
use serde_json::Value;

use crate::run_common;

/// One traced run at a time. In a CI run the sampled test's collector missed
/// every switch of its windows (one 681 ms window in a 600 ms run) while another
/// test ran its own traced run beside it (now: any test of `it` that traces). Not reproduced since;
/// the likely cause is that two runs contend for the kernel's tracing locks
/// (instance set-up and removal hold them through RCU grace periods) and for two
/// CPUs, which this test is not about.
fn iolab<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (i32, String, String) {
    let _one = crate::support::serial::one_at_a_time();
    run_common::iolab_run(args)
}

/// --trace needs root: zram and loop devices, tracefs.
fn root() -> bool {
    ready(&[Need::Zram, Need::Loop])
}

fn job(dev: &str, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "--trace",
        "--name=tr",
        "--direct=1",
        "--rw=randrw",
        "--bs=4k",
        "--size=32m",
        "--runtime=300ms",
        "--time_based",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.push(format!("--filename={dev}"));
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

fn trace_json(args: &[String]) -> Value {
    let mut a = args.to_vec();
    a.push("--output-format=json".into());
    let (code, out, err) = iolab(&a);
    assert_eq!(code, 0, "iolab run {a:?} failed: {err}\n{out}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("bad JSON {e}: {out}"));
    v["jobs"][0]["iolab"]["engine"]["trace"].clone()
}

fn n(v: &Value) -> u64 {
    v["n"].as_u64().unwrap_or_else(|| panic!("no n in {v}"))
}

/// user + Q->C + completion is the total for each request, so the means add up.
fn check_split_sums(t: &Value, op: &str) {
    let s = &t["split"][op];
    assert!(n(&s["total"]) > 0, "{op}: nothing joined: {t}");
    let avg = |k: &str| s[k]["avg_ns"].as_f64().unwrap();
    let sum = avg("user") + avg("q2c") + avg("completion");
    let total = avg("total");
    assert!(
        (sum - total).abs() <= 0.01 * total + 1.0,
        "{op}: parts {sum} vs total {total}"
    );
    if n(&s["block"]) > 0 {
        let kernel = avg("block") + avg("device");
        assert!(
            (kernel - avg("q2c")).abs() <= 0.01 * avg("q2c") + 1.0,
            "{op}: Q->D + D->C {kernel} vs Q->C {}",
            avg("q2c")
        );
    }
}

#[test]
fn trace_on_zram_reports_q2c_and_the_split() {
    if !root() {
        return;
    }
    let z = Zram::create(64 << 20).expect("zram");
    let dev = z.path().display().to_string();
    let t = trace_json(&job(&dev, &["--ioengine=psync"]));
    assert_eq!(t["device"], Value::from(dev.clone()));
    let btt = &t["btt"];
    assert!(n(&btt["q2c"]) > 0, "{btt}");
    // zram is bio-based: no request, so no G/I/D and no D2C — said, not zeroed.
    assert_eq!(n(&btt["d2c"]), 0);
    assert!(
        btt["notes"].to_string().contains("bio-based"),
        "{}",
        btt["notes"]
    );
    assert_eq!(t["events"]["lost"], 0);
    assert!(t["joined"].as_u64().unwrap() > 100, "{t}");
    check_split_sums(&t, "read");
    check_split_sums(&t, "write");
    assert_eq!(n(&t["split"]["all"]["block"]), 0);

    let (code, out, err) = iolab(&job(&dev, &["--ioengine=psync"]));
    assert_eq!(code, 0, "{err}");
    for s in [
        "Q2C",
        "D2C",
        "usecs",
        "where the time went",
        "user (submit -> Q)",
    ] {
        assert!(out.contains(s), "text lacks {s:?}:\n{out}");
    }
}

#[test]
fn sampled_trace_joins_requests_inside_its_windows_only() {
    if !root() {
        return;
    }
    let z = Zram::create(64 << 20).expect("zram");
    let dev = z.path().display().to_string();
    let mut a = job(&dev, &["--ioengine=psync", "--trace-sample=30/100ms"]);
    a.retain(|s| s != "--trace" && !s.starts_with("--runtime"));
    a.push("--runtime=600ms".into());
    let t = trace_json(&a);
    let sm = &t["sampling"];
    assert_eq!(sm["percent"].as_f64(), Some(30.0), "{sm}");
    let windows = sm["windows"].as_u64().unwrap();
    assert!((4..=8).contains(&windows), "600 ms in 100 ms periods: {sm}");
    // Windows are stamped as they really were: 30 ms each as scheduled, longer
    // when the collector thread wakes late (the other tests of this binary keep
    // both CPUs busy), but never the whole run.
    let traced = sm["traced_ms"].as_f64().unwrap();
    assert!(traced > 0.0 && traced <= 0.75 * 600.0, "{sm}");
    assert!(sm["ios_outside_windows"].as_u64().unwrap() > 0, "{sm}");
    assert!(t["joined"].as_u64().unwrap() > 100, "{t}");
    check_split_sums(&t, "read");
    check_split_sums(&t, "write");
    // A request cut by a gap is never stretched over it into one long Q2C.
    let max_us = t["btt"]["q2c"]["max_ns"].as_f64().unwrap() / 1e3;
    assert!(max_us < 20_000.0, "Q2C max {max_us} us spans a gap");

    let (code, out, err) = iolab(&a);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("sampled: 30% of every 100 ms"), "{out}");

    let mut bad = job(&dev, &["--ioengine=psync", "--trace-sample=100"]);
    bad.retain(|s| s != "--trace");
    let (code, _, err) = iolab(&bad);
    assert_ne!(code, 0);
    assert!(
        err.contains("--trace-sample") && err.contains("1-99"),
        "{err}"
    );
}

#[test]
fn trace_on_loop_device_has_every_stage() {
    if !root() {
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let file = dir.path().join("backing");
    std::fs::File::create(&file)
        .and_then(|f| f.set_len(64 << 20))
        .unwrap();
    let l = LoopDev::attach(&file, true).expect("loop device");
    let dev = l.path().display().to_string();
    let t = trace_json(&job(&dev, &["--ioengine=io_uring", "--iodepth=4"]));
    let btt = &t["btt"];
    for k in ["q2g", "d2c", "q2c"] {
        assert!(n(&btt[k]) > 0, "{k} empty: {btt}");
    }
    assert!(n(&btt["q2c"]) >= n(&btt["d2c"]));
    let hist: u64 = btt["d2c_hist_log2_us"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(hist, n(&btt["d2c"]), "histogram counts every D2C");
    check_split_sums(&t, "read");
    check_split_sums(&t, "write");
    assert!(n(&t["split"]["read"]["block"]) > 0);
    drop(l);
}

#[test]
fn trace_refuses_the_null_device_with_the_reason() {
    let (code, _out, err) = iolab(&[
        "--trace",
        "--name=n",
        "--ioengine=null",
        "--size=1m",
        "--number_ios=10",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("--trace") && err.contains("null"), "{err}");
}
