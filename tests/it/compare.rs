//! `iolab compare` end to end: interleaved A/B rounds on the null device
//! (null_lat 4 us against 6 us, three rounds a side, is "slower" and trips
//! the gate; the same rounds without --allow-diff are inconclusive, exit 3;
//! the same options on both sides are "no difference" and pass), A/A
//! false alarms over 20 repetitions on the null device and on a file, fio's
//! JSON against iolab's (the same outcomes), mismatched options listed, bad
//! input exit 2, and the page in headless Chromium.
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

/// A random-read job on the null device, polled, size-bound: 8192 I/Os (some
/// 30-50 ms of I/O at 4-6 us each on an idle machine).
fn job_file(dir: &Path) -> String {
    let p = dir.join("null.fio");
    std::fs::write(
        &p,
        "[global]\nioengine=null\nsize=32m\nbs=4k\ncompletion=poll\n[r]\nrw=randread\n",
    )
    .unwrap();
    p.display().to_string()
}

/// The last line of a text report.
fn last_line(text: &str) -> &str {
    text.lines().last().unwrap_or("")
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

/// The null device at 4 us against 6 us, three rounds a side.
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
        "3",
        "--out",
        out.to_str().unwrap(),
        "--fail-if",
        "p50>+10%",
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{v:#}\n{err}");
    assert_eq!(v["outcome"], "fail");
    for side in ["a", "b"] {
        for n in 1..=3 {
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
            .starts_with("Welch's t-test on ln(p50) over 3 vs 3 rounds"),
        "{p50:#}"
    );
    // The mean carries what the machine did to the polling thread: a worker
    // preempted for a fraction f of a round stretches that round's mean by
    // 1/(1-f), so on a busy machine the rounds' means can spread by more than
    // the 50% shift, and then "no difference this data can show" is the
    // honest answer. It is never "faster", and it is "slower" whenever each
    // side's rounds agree within 15%.
    let mean = row(&v, "read", "mean");
    assert_ne!(mean["verdict"], "faster", "{mean:#}");
    let tight = |s: &Value| s["max"].as_f64().unwrap() / s["min"].as_f64().unwrap() < 1.15;
    if tight(&mean["base"]) && tight(&mean["new"]) {
        assert_eq!(mean["verdict"], "slower", "{mean:#}");
    }
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
    assert!(
        last_line(&text).starts_with("gate: FAIL (exit 1): crossed p50>+10%"),
        "{text}"
    );

    // The same rounds as two sides, without --allow-diff: the job is not
    // compared, so the gate cannot pass: inconclusive, exit 3, the job and
    // the flag that would judge it named on the last line.
    let (a, b) = (out.join("a"), out.join("b"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let (code, text, _) = compare(&[a, b, "--fail-if", "p50>+10%"]);
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("r: NOT COMPARED, options differ"), "{text}");
    assert_eq!(
        last_line(&text),
        "gate: INCONCLUSIVE (exit 3): not judged: r (--allow-diff null_lat)",
        "{text}"
    );
    let (code, v, _) = compare_json(&[a, b, "--fail-if", "p50>+10%"]);
    assert_eq!((code, &v["outcome"]), (3, &Value::from("inconclusive")));
    let u = &v["unjudged"][0];
    assert_eq!(
        (&u["job"], &u["fix"]),
        (&Value::from("r"), &Value::from("--allow-diff null_lat"))
    );
    // --allow-inconclusive lets it pass, still saying what was not judged.
    let (code, text, _) = compare(&[a, b, "--fail-if", "p50>+10%", "--allow-inconclusive"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        last_line(&text).starts_with("gate: INCONCLUSIVE (exit 0, --allow-inconclusive)"),
        "{text}"
    );
    // With --allow-diff: judged, and failed.
    let (code, _, _) = compare(&[a, b, "--fail-if", "p50>+10%", "--allow-diff", "null_lat"]);
    assert_eq!(code, 1);
    // A comparison without rules is a report: exit 0 when every job was
    // compared, 3 when one was not.
    assert_eq!(compare(&[a, b, "--allow-diff", "null_lat"]).0, 0);
    let (code, text, _) = compare(&[a, b]);
    assert_eq!(code, 3);
    assert_eq!(
        last_line(&text),
        "compare: INCONCLUSIVE (exit 3): not judged: r (--allow-diff null_lat)"
    );

    let page = std::fs::read_to_string(html.join("index.html")).unwrap();
    assert!(page.contains("completion latency CDF"));
    assert!(page.contains("slower"));
    assert!(
        page.contains("gate FAIL"),
        "the page shows the gate's outcome"
    );
    // The inconclusive gate on the page: the same item and fix as the text.
    let html2 = d.join("page2");
    let (code, _, _) = compare(&[
        a,
        b,
        "--fail-if",
        "p50>+10%",
        "--html",
        html2.to_str().unwrap(),
    ]);
    assert_eq!(code, 3);
    let page2 = std::fs::read_to_string(html2.join("index.html")).unwrap();
    assert!(
        page2.contains("gate INCONCLUSIVE")
            && page2.contains("not judged: <b>r</b>")
            && page2.contains("<code>--allow-diff null_lat</code>")
            && page2.contains("gate: INCONCLUSIVE (exit 3): not judged: r (--allow-diff null_lat)"),
        "{page2}"
    );
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
        "3",
        "--out",
        out.to_str().unwrap(),
        "--fail-if",
        "p50>+10%",
    ]);
    assert_eq!(code, 0, "{v:#}\n{err}");
    assert_eq!(v["outcome"], "pass", "{v:#}");
    let p50 = row(&v, "read", "p50");
    assert_eq!(p50["verdict"], "no_difference", "{p50:#}");
    assert!(v["gate_hits"].as_array().unwrap().is_empty());
    assert!(v["unjudged"].as_array().unwrap().is_empty());
}

/// A/A on this machine: 20 repetitions of 3 rounds against 3 with the same
/// options, on the null device and on a file, interleaved as --run does.
/// The test's false-alarm rate is at most 5% per metric (the simulations in
/// `compare::analyze` check that over 2000 seeded draws per case); 20
/// repetitions at 5% give 6 or more alarms of one metric with probability
/// 0.0003, so the bound here is 5 of 20: it holds the guarantee to account
/// (a test twice as liberal fails it one run in four) without failing one run
/// in ten itself.
#[test]
fn a_a_repetitions_rarely_call_a_difference() {
    let _one = support::serial::one_at_a_time();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = dir.path();
    let null = d.join("null.fio");
    std::fs::write(
        &null,
        "[global]\nioengine=null\nnull_lat=4us\nsize=8m\nbs=4k\ncompletion=poll\n[r]\nrw=randread\n",
    )
    .unwrap();
    let file = d.join("file.fio");
    std::fs::write(
        &file,
        format!(
            "[global]\nioengine=psync\nfilename={}\nsize=8m\nbs=4k\n[f]\nrw=randread\n",
            d.join("aa.dat").display()
        ),
    )
    .unwrap();
    for job in [&null, &file] {
        let mut alarms: std::collections::BTreeMap<String, usize> = Default::default();
        for rep in 0..20 {
            let out = d.join(format!("rep{rep}"));
            let (code, v, err) = compare_json(&[
                "--run",
                job.to_str().unwrap(),
                "--a",
                "",
                "--b",
                "",
                "--rounds",
                "3",
                "--out",
                out.to_str().unwrap(),
            ]);
            assert_eq!(code, 0, "{v:#}\n{err}");
            for r in v["comparisons"][0]["jobs"][0]["rows"].as_array().unwrap() {
                assert!(r["test"].as_str().unwrap().starts_with("Welch"), "{r:#}");
                let n = alarms
                    .entry(r["metric"].as_str().unwrap().to_string())
                    .or_default();
                if r["verdict"] != "no_difference" {
                    *n += 1;
                }
            }
            std::fs::remove_dir_all(&out).unwrap();
        }
        eprintln!(
            "A/A {}: alarms per metric over 20 repetitions: {alarms:?}",
            job.display()
        );
        assert_eq!(alarms.len(), 7, "{alarms:?}");
        for (m, n) in &alarms {
            assert!(
                *n <= 5,
                "{}: {m} called a difference in {n} of 20 A/A repetitions",
                job.display()
            );
        }
    }
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
    // Not compared: the report is incomplete, exit 3.
    let (code, text, err) = compare(&[&a, &b]);
    assert_eq!(code, 3, "{err}");
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
    assert_eq!(code, 3);
    assert!(
        text.contains("only in base (not compared): r")
            && text.contains("only in new (not compared): s"),
        "{text}"
    );
    assert_eq!(
        last_line(&text),
        "compare: INCONCLUSIVE (exit 3): not judged: r (run it on both sides); s (run it on both sides)",
        "{text}"
    );
}

/// `rounds` rounds of `job` by fio (`fio`) or iolab into `dir/roundN.json`,
/// json+, with `extra` options.
fn rounds_of(tool: &str, job: &Path, extra: &[&str], rounds: usize, dir: &Path) -> String {
    std::fs::create_dir_all(dir).unwrap();
    for n in 1..=rounds {
        let mut cmd = if tool == "fio" {
            Command::new("fio")
        } else {
            let mut c = Command::new(IOLAB);
            c.arg("run");
            c
        };
        let st = cmd
            .arg(job)
            .args(extra)
            .arg("--output-format=json+")
            .arg(format!(
                "--output={}",
                dir.join(format!("round{n}.json")).display()
            ))
            .status()
            .unwrap();
        assert!(st.success(), "{tool} {}", job.display());
    }
    dir.display().to_string()
}

/// A fio side and an iolab side reach the gate's outcomes as two iolab sides
/// do: fail on a shift every round shows, inconclusive for a job on one side
/// only, for options that differ and for one round a side.
#[test]
fn fio_and_iolab_sides_reach_the_same_outcomes() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let _one = support::serial::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let job = d.join("same.fio");
    std::fs::write(
        &job,
        "[global]\nioengine=null\nsize=4m\nbs=4k\n[r]\nrw=randread\n",
    )
    .unwrap();
    let two = d.join("two.fio");
    std::fs::write(
        &two,
        "[global]\nioengine=null\nsize=4m\nbs=4k\n[r]\nrw=randread\n[extra]\nrw=randread\n",
    )
    .unwrap();
    let fio = rounds_of("fio", &job, &[], 3, &d.join("fio"));
    // fio's null engine completes at once; iolab's null device takes 100 us.
    let slow = rounds_of("iolab", &job, &["--null_lat=100us"], 3, &d.join("slow"));
    let extra = rounds_of("iolab", &two, &[], 3, &d.join("extra"));
    let fio1 = d.join("fio/round1.json");
    let slow1 = d.join("slow/round1.json");
    let rule = ["--fail-if", "p50>+10%"];
    // fio base, iolab new 100 us slower: fail; and the other way round a
    // rule on a drop fails alike.
    for (base, new, r) in [(&fio, &slow, "p50>+10%"), (&slow, &fio, "p50<-10%")] {
        let (code, v, err) = compare_json(&[base, new, "--allow-diff", "null_lat", "--fail-if", r]);
        assert_eq!(
            (code, &v["outcome"]),
            (1, &Value::from("fail")),
            "{v:#}\n{err}"
        );
        assert_eq!(row(&v, "read", "p50")["base_rounds"], 3);
    }
    // Without --allow-diff: inconclusive, the option named.
    let (code, text, _) = compare(&[&fio, &slow, rule[0], rule[1]]);
    assert_eq!(code, 3, "{text}");
    assert_eq!(
        last_line(&text),
        "gate: INCONCLUSIVE (exit 3): not judged: r (--allow-diff null_lat)"
    );
    // A job on the iolab side only: inconclusive, named. (The job both have
    // differs at nanoseconds: fio's null engine against iolab's null device,
    // p50 20-30 ns against 40-60 ns; a rule it cannot cross isolates the
    // missing job.)
    let (code, text, _) = compare(&[&fio, &extra, "--fail-if", "p50>+10000%"]);
    assert_eq!(code, 3, "{text}");
    assert!(
        last_line(&text).contains("extra (run it on both sides)"),
        "{text}"
    );
    // One round a side: p50 is judged from the bins for the report, but the
    // gate cannot rule on run-to-run variation from one round.
    let (code, v, _) = compare_json(&[
        fio1.to_str().unwrap(),
        fio1.to_str().unwrap(),
        rule[0],
        rule[1],
    ]);
    assert_eq!(
        (code, &v["outcome"]),
        (3, &Value::from("inconclusive")),
        "{v:#}"
    );
    assert_eq!(
        v["unjudged"][0]["fix"],
        "--rounds 2 or more (5 is a good start)"
    );
    let (code, v, _) = compare_json(&[
        fio1.to_str().unwrap(),
        slow1.to_str().unwrap(),
        "--allow-diff",
        "null_lat",
        rule[0],
        rule[1],
    ]);
    // ...though a single round that crosses it by far still fails the gate.
    assert_eq!((code, &v["outcome"]), (1, &Value::from("fail")), "{v:#}");
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
