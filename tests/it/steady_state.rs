//! `steadystate` / `ss_dur` / `ss_ramp` end to end on the null device: a
//! lenient criterion ends a long time-based job early with fio's
//! `steadystate` object (same keys as fio's own, when fio is installed), a
//! criterion nothing can meet runs to the runtime, and bad values are
//! one-line errors.

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::Value;

use crate::run_common::{iolab_run, run_json};

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

fn steady_of(v: &Value) -> &Value {
    let ss = &v["jobs"][0]["steadystate"];
    assert!(ss.is_object(), "no steadystate object: {v}");
    ss
}

#[test]
fn a_lenient_criterion_ends_the_job_early_with_fios_object() {
    // Two one-second samples of the null device within 90% of their mean:
    // only a stall of one whole second against the other would miss it.
    let args = [
        "--name=s",
        "--ioengine=null",
        "--size=1g",
        "--time_based",
        "--runtime=30",
        "--ss=iops:90%",
        "--ss_dur=2",
    ];
    let v = run_json(&args);
    let job = &v["jobs"][0];
    let ss = steady_of(&v);
    assert_eq!(ss["attained"], 1, "{ss}");
    assert_eq!(ss["ss"], "iops:90.000000%");
    assert_eq!(ss["duration"], 2);
    let runtime = job["job_runtime"].as_u64().unwrap();
    assert!(
        (1_900..15_000).contains(&runtime),
        "ended at {runtime} ms: two samples take about 2 s, the runtime was 30 s"
    );
    let iops = ss["data"]["iops"].as_array().unwrap();
    let bw = ss["data"]["bw"].as_array().unwrap();
    assert_eq!((iops.len(), bw.len()), (2, 2), "{ss}");
    let mean = ss["data"]["iops_mean"].as_u64().unwrap();
    assert!(mean > 0);
    // The criterion is the largest deviation from the window's mean.
    let (a, b) = (iops[0].as_f64().unwrap(), iops[1].as_f64().unwrap());
    let dev = ss["max_deviation"].as_f64().unwrap();
    assert!((dev - (a - b).abs() / 2.0).abs() <= 1.0, "{dev} vs {a} {b}");
    let crit: f64 = ss["criterion"]
        .as_str()
        .unwrap()
        .trim_end_matches('%')
        .parse()
        .unwrap();
    assert!(crit < 90.0, "{crit}");
    // 4 KiB requests: bandwidth is 4096 bytes per I/O (each rate and each
    // mean is rounded down to a whole number: two I/Os' worth of slack).
    let bw_mean = ss["data"]["bw_mean"].as_u64().unwrap();
    assert!(
        bw_mean.abs_diff(mean * 4096) < 2 * 4096,
        "{bw_mean} vs {mean}"
    );

    if !crate::support::needs::has(
        crate::support::needs::Need::Fio,
        "the key comparison with fio",
    ) {
        return;
    }
    match fio_steadystate() {
        None => panic!("fio could not run the steady-state job"),
        Some(fio) => {
            assert_eq!(keys(ss), keys(&fio), "steadystate keys differ from fio's");
            assert_eq!(keys(&ss["data"]), keys(&fio["data"]), "data keys differ");
        }
    }
}

/// fio's own `steadystate` object for the same kind of job.
fn fio_steadystate() -> Option<Value> {
    let dir = std::env::temp_dir().join(format!("iolab-ss-fio-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let out = Command::new("fio")
        .current_dir(&dir)
        .args([
            "--name=s",
            "--ioengine=null",
            "--size=1g",
            "--time_based",
            "--runtime=3",
            "--ss=iops:90%",
            "--ss_dur=2",
            "--output-format=json",
        ])
        .output();
    let _ = std::fs::remove_dir_all(&dir);
    let out = out.ok()?;
    assert!(out.status.success(), "fio failed: {out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("fio's JSON");
    Some(v["jobs"][0]["steadystate"].clone())
}

#[test]
fn a_criterion_nothing_meets_runs_to_the_runtime() {
    // No window deviates by less than 0 IOPS: never attained.
    let args = [
        "--name=s",
        "--ioengine=null",
        "--size=1g",
        "--time_based",
        "--runtime=3",
        "--ss=iops:0",
        "--ss_dur=2",
    ];
    let v = run_json(&args);
    let ss = steady_of(&v);
    assert_eq!(ss["attained"], 0, "{ss}");
    assert_eq!(ss["ss"], "iops:0.000000");
    assert!(!ss["criterion"].as_str().unwrap().ends_with('%'));
    let runtime = v["jobs"][0]["job_runtime"].as_u64().unwrap();
    assert!(
        runtime >= 2_900,
        "stopped at {runtime} ms before the runtime"
    );
    assert_eq!(ss["data"]["iops"].as_array().unwrap().len(), 2);

    // The text report carries fio's line.
    let (code, out, err) = iolab_run(&args);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("steadystate  :"))
        .unwrap_or_else(|| panic!("no steadystate line:\n{out}"));
    assert!(
        line.contains("attained=no,") && line.contains("iops mean dev="),
        "{line}"
    );
}

#[test]
fn a_slope_criterion_with_a_ramp_is_reported_as_a_slope() {
    let v = run_json(&[
        "--name=s",
        "--ioengine=null",
        "--size=1g",
        "--time_based",
        "--runtime=2",
        "--ss=bw_slope:0",
        "--ss_dur=1",
        "--ss_ramp=500ms",
    ]);
    let ss = steady_of(&v);
    assert_eq!(ss["ss"], "bw_slope:0.000000");
    assert_eq!(ss["attained"], 0, "{ss}");
    assert_eq!(ss["max_deviation"], 0.0);
    // After a 0.5 s ramp, a 2 s job has room for one full sample.
    assert_eq!(ss["data"]["bw"].as_array().unwrap().len(), 1, "{ss}");
}

#[test]
fn bad_values_are_one_line_errors() {
    for (args, option, value, valid) in [
        (
            &["--ss=iops:-1", "--ss_dur=2"][..],
            "steadystate",
            "iops:-1",
            "non-negative",
        ),
        (
            &["--ss=foo:1", "--ss_dur=2"],
            "steadystate",
            "foo:1",
            "iops_slope:N",
        ),
        (&["--ss=iops"], "steadystate", "iops", "bw_slope:N"),
        (
            &["--ss=iops:5%", "--ss_ramp=soon"],
            "steadystate_ramp_time",
            "soon",
            "a time",
        ),
    ] {
        let mut a = vec!["--name=s", "--ioengine=null", "--size=1m"];
        a.extend_from_slice(args);
        let (code, out, err) = iolab_run(&a);
        assert_ne!(code, 0, "{args:?} was accepted: {out}");
        let err = err.trim();
        assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
        assert!(
            err.contains(&format!("'{option}'"))
                && err.contains(&format!("'{value}'"))
                && err.contains(valid),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn group_reporting_sums_the_clones_windows() {
    let v = run_json(&[
        "--name=s",
        "--ioengine=null",
        "--size=1g",
        "--time_based",
        "--runtime=30",
        "--numjobs=2",
        "--group_reporting",
        "--ss=iops:90%",
        "--ss_dur=2",
    ]);
    assert_eq!(v["jobs"].as_array().unwrap().len(), 1, "{v}");
    let ss = steady_of(&v);
    assert_eq!(ss["attained"], 1, "both clones end steady: {ss}");
    let iops: Vec<u64> = ss["data"]["iops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert_eq!(iops.len(), 2, "{ss}");
    let mean = ss["data"]["iops_mean"].as_u64().unwrap();
    // The sum of the clones' means, each rounded down.
    assert!(mean.abs_diff((iops[0] + iops[1]) / 2) <= 2, "{ss}");
    let runtime = v["jobs"][0]["job_runtime"].as_u64().unwrap();
    assert!(runtime < 15_000, "ended at {runtime} ms");
}

#[test]
fn ss_dur_keeps_whole_seconds_and_below_one_turns_detection_off_as_fio() {
    // fio 3.33 with ss=iops:50%: ss_dur=1.5 and 1500ms are a window of one
    // sample, 2.5s of two; 0.5 and 0 are no window (no steadystate object,
    // the job runs its runtime). ss_dur alone uses fio's default criterion.
    let run = |extra: &[&str]| {
        let mut a = vec![
            "--name=s",
            "--ioengine=null",
            "--size=1g",
            "--time_based",
            "--runtime=2",
        ];
        a.extend_from_slice(extra);
        run_json(&a)
    };
    for (dur, window) in [("1.5", 1), ("1500ms", 1), ("2.5s", 2)] {
        let v = run(&["--ss=iops:50%", &format!("--ss_dur={dur}")]);
        assert_eq!(steady_of(&v)["duration"], window, "ss_dur={dur}: {v}");
    }
    for dur in ["0.5", "0"] {
        let v = run(&["--ss=iops:50%", &format!("--ss_dur={dur}")]);
        assert!(
            v["jobs"][0]["steadystate"].is_null(),
            "ss_dur={dur}: {}",
            v["jobs"][0]["steadystate"]
        );
    }
    let v = run(&["--ss_dur=1"]);
    assert_eq!(steady_of(&v)["ss"], "iops_slope:0.010000%");
    // A criterion without a window does nothing in fio; iolab notes it.
    let (code, out, err) = iolab_run(&[
        "--name=s",
        "--ioengine=null",
        "--size=1m",
        "--ss=iops:5%",
        "--notes",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("steadystate is accepted, but has no effect"),
        "{err}"
    );
    assert!(out.contains("READ: bw="), "{out}");
}
