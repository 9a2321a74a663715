//! fio's per-priority latencies (`prios` in each direction's JSON): a job
//! whose requests carry two priorities (`cmdprio_percentage`) reports each
//! priority's latency, and together they are the direction's — counts sum,
//! extremes bracket, json+ bins add up — as fio 3.33's
//! `t/latency_percentiles.py` checks. A job without command priorities has
//! no `prios`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::run_common::iolab_run;

/// `iolab run` of a randrw io_uring job on a file in `dir` with `extra`, json+.
fn run(dir: &std::path::Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "--name=p".to_string(),
        format!("--filename={}", dir.join("f").display()),
        "--ioengine=io_uring".into(),
        "--size=8m".into(),
        "--rw=randrw".into(),
        "--iodepth=4".into(),
        "--number_ios=4000".into(),
        "--output-format=json+".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let (code, out, err) = iolab_run(&args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The `prios` of `dir` agree with its `key` series (`clat_ns` or `lat_ns`).
fn check_prios(dir: &Value, key: &str) {
    let prios = dir["prios"].as_array().expect("prios");
    assert_eq!(prios.len(), 2, "{prios:?}");
    let whole = &dir[key];
    let of = |k: &'static str| prios.iter().map(move |p| p[key][k].as_u64().unwrap());
    assert_eq!(of("N").sum::<u64>(), whole["N"].as_u64().unwrap());
    assert_eq!(of("min").min(), whole["min"].as_u64());
    assert_eq!(of("max").max(), whole["max"].as_u64());
    let mean: f64 = prios
        .iter()
        .map(|p| p[key]["mean"].as_f64().unwrap() * p[key]["N"].as_f64().unwrap())
        .sum::<f64>()
        / whole["N"].as_f64().unwrap();
    let m = whole["mean"].as_f64().unwrap();
    assert!((mean - m).abs() <= 1e-6 * m, "{mean} vs {m}");
    let classes: Vec<(u64, u64)> = prios
        .iter()
        .map(|p| {
            (
                p["prioclass"].as_u64().unwrap(),
                p["prio"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(classes, vec![(0, 0), (2, 3)], "the job's own, then BE/3");
    // json+: the priorities' bins add up to the direction's, bin for bin.
    let mut sum: BTreeMap<String, u64> = BTreeMap::new();
    for p in prios {
        for (b, c) in p[key]["bins"].as_object().expect("bins") {
            *sum.entry(b.clone()).or_default() += c.as_u64().unwrap();
        }
    }
    let whole_bins: BTreeMap<String, u64> = whole["bins"]
        .as_object()
        .expect("bins")
        .iter()
        .map(|(b, c)| (b.clone(), c.as_u64().unwrap()))
        .collect();
    assert_eq!(sum, whole_bins);
}

#[test]
fn per_priority_latencies_add_up_to_the_direction() {
    let dir = tempfile::tempdir().unwrap();
    let prio = [
        "--cmdprio_percentage=50",
        "--cmdprio_class=2",
        "--cmdprio=3",
    ];
    let json = run(dir.path(), &prio);
    let job = &json["jobs"][0];
    for d in ["read", "write"] {
        check_prios(&job[d], "clat_ns");
        assert!(job[d]["prios"][0].get("lat_ns").is_none());
    }
    assert!(job["trim"].get("prios").is_none(), "no trims, no prios");
    // lat_percentiles=1: the priorities hold total latency.
    let json = run(dir.path(), &[&prio[..], &["--lat_percentiles=1"]].concat());
    check_prios(&json["jobs"][0]["read"], "lat_ns");
    // unified_rw_reporting: the mixed direction's priorities.
    let json = run(
        dir.path(),
        &[&prio[..], &["--unified_rw_reporting=1"]].concat(),
    );
    check_prios(&json["jobs"][0]["mixed"], "clat_ns");
}

#[test]
fn without_command_priorities_there_are_no_prios() {
    let dir = tempfile::tempdir().unwrap();
    let json = run(dir.path(), &[]);
    for d in ["read", "write", "trim"] {
        assert!(json["jobs"][0][d].get("prios").is_none(), "{d}");
    }
}
