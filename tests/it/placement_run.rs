//! `iolab run` placing its threads: fio's cpus_allowed/cpumask/cpus_allowed_policy,
//! iolab's placement= over a group's workers (P tasks) and co-runners (C tasks),
//! checked from the JSON report against the kernel's view of each thread (the CPU
//! it was last on must lie in the set it was pinned to).

use crate::support;

use support::needs::skip;

use serde_json::Value;

use crate::run_common;

/// One run at a time (shared with every test of `it` that must run alone): each spins pollers and co-runners on every CPU, and the
/// live balancer's predictor must see its pollers get CPU time every tick.
fn iolab(args: &[&str]) -> (i32, String, String) {
    let _one = crate::support::serial::one_at_a_time();
    run_common::iolab_run(args)
}

fn run_json(args: &[&str]) -> Value {
    let _one = crate::support::serial::one_at_a_time();
    run_common::run_json(args)
}

/// Online CPUs, or None (with the reason printed) when a test needs more.
fn cpus_at_least(n: usize) -> Option<Vec<u32>> {
    let t = iolab::placement::Topology::from_system().expect("topology");
    let cpus = t.cpus();
    if cpus.len() < n {
        skip(format_args!(
            "needs {n} online CPUs to place threads apart, this machine has {}",
            cpus.len()
        ));
        return None;
    }
    Some(cpus)
}

const POLLER: &[&str] = &[
    "--name=p",
    "--ioengine=null",
    "--size=16m",
    "--rw=randread",
    "--completion=poll",
    "--null_lat=5",
    "--runtime=300ms",
    "--time_based",
];

fn with(extra: &[&'static str]) -> Vec<&'static str> {
    POLLER.iter().chain(extra).copied().collect()
}

/// (kind, allowed CPUs as a list, last CPU) per task of group 0.
fn tasks(v: &Value) -> Vec<(String, Vec<u32>, u32, Value)> {
    let p = &v["iolab"]["placement"][0];
    assert_eq!(p["groupid"], 0, "{p}");
    p["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("no placement tasks in {p}"))
        .iter()
        .map(|t| {
            let cpus = iolab::placement::topology::parse_cpu_list(t["cpus"].as_str().unwrap())
                .expect("cpu list");
            let last = t["last_cpu"].as_u64().expect("last_cpu") as u32;
            assert!(
                cpus.contains(&last),
                "a pinned thread was last seen outside its CPUs: {t}"
            );
            (
                t["kind"].as_str().unwrap().to_string(),
                cpus,
                last,
                t.clone(),
            )
        })
        .collect()
}

#[test]
fn scatter_and_bunch_place_pollers_and_corunners_as_the_study_does() {
    let Some(cpus) = cpus_at_least(2) else { return };
    // Two pollers and (one per clone) two co-runners on this machine's cores.
    let v = run_json(&with(&[
        "--numjobs=2",
        "--placement=scatter",
        "--corunners=1",
    ]));
    assert_eq!(v["iolab"]["placement"][0]["policy"], "scatter");
    let t = tasks(&v);
    let p: Vec<&Vec<u32>> = t.iter().filter(|x| x.0 == "P").map(|x| &x.1).collect();
    let c: Vec<&Vec<u32>> = t.iter().filter(|x| x.0 == "C").map(|x| &x.1).collect();
    assert_eq!((p.len(), c.len()), (2, 2), "{t:?}");
    // Scatter: every core gets a share of both kinds, so the two pollers are on
    // different cores and so are the two co-runners.
    assert_ne!(p[0], p[1], "scatter put both pollers together: {t:?}");
    assert_ne!(c[0], c[1], "scatter put both co-runners together: {t:?}");
    for x in t.iter().filter(|x| x.0 == "C") {
        assert!(x.3["units_per_s"].as_f64().unwrap() > 0.0, "{}", x.3);
        assert_eq!(x.3["kernel"], "int");
    }
    // The pollers still did their I/O.
    for j in v["jobs"].as_array().unwrap() {
        assert!(j["read"]["total_ios"].as_u64().unwrap() > 0, "{j}");
    }

    // Bunch packs tasks of a kind together: with 4 tasks on 2 cores, both
    // co-runners share one core and both pollers the other.
    if cpus.len() == 2 {
        let v = run_json(&with(&[
            "--numjobs=2",
            "--placement=bunch",
            "--corunners=1",
            "--corunner_kernel=float",
        ]));
        let t = tasks(&v);
        let p: Vec<&Vec<u32>> = t.iter().filter(|x| x.0 == "P").map(|x| &x.1).collect();
        let c: Vec<&Vec<u32>> = t.iter().filter(|x| x.0 == "C").map(|x| &x.1).collect();
        assert_eq!(p[0], p[1], "{t:?}");
        assert_eq!(c[0], c[1], "{t:?}");
        assert_ne!(p[0], c[0], "{t:?}");
        assert!(
            t.iter()
                .filter(|x| x.0 == "C")
                .all(|x| x.3["kernel"] == "float")
        );
    }
}

#[test]
fn cpus_allowed_split_gives_each_clone_its_own_cpu() {
    let Some(cpus) = cpus_at_least(2) else { return };
    let list = format!("--cpus_allowed={},{}", cpus[0], cpus[1]);
    let mut args = with(&["--numjobs=2", "--cpus_allowed_policy=split"]);
    args.push(&list);
    let v = run_json(&args);
    let p = &v["iolab"]["placement"][0];
    assert!(p["policy"].is_null(), "{p}");
    let t = tasks(&v);
    let got: Vec<Vec<u32>> = t.iter().map(|x| x.1.clone()).collect();
    assert_eq!(got, vec![vec![cpus[0]], vec![cpus[1]]], "{t:?}");

    // cpumask (shared): both clones may use both CPUs.
    let mask = format!("--cpumask={}", (1u64 << cpus[0]) | (1u64 << cpus[1]));
    let mut args = with(&["--numjobs=2"]);
    args.push(&mask);
    let t = tasks(&run_json(&args));
    assert!(t.iter().all(|x| x.1 == vec![cpus[0], cpus[1]]), "{t:?}");
}

#[test]
fn unplaced_runs_report_no_placement_and_free_corunners_run_anywhere() {
    let v = run_json(POLLER);
    assert!(v["iolab"].get("placement").is_none(), "{}", v["iolab"]);
    // Co-runners without a policy: the kernel places them; still reported.
    let v = run_json(&with(&["--corunners=1"]));
    let p = &v["iolab"]["placement"][0];
    assert!(p["policy"].is_null() && p["topology"].is_null(), "{p}");
    let t = p["tasks"].as_array().unwrap();
    assert_eq!(t.len(), 2, "{p}");
    assert!(t.iter().all(|x| x["cpus"] == "any"), "{p}");
}

#[test]
fn text_and_html_output_list_every_task() {
    let Some(_) = cpus_at_least(2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let report = format!("--report={}", dir.path().display());
    let mut args = with(&["--placement=scatter", "--corunners=1"]);
    args.push(&report);
    let (code, out, err) = iolab(&args);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    assert!(
        html.contains("Placement, group 0: scatter") && html.contains("C (co-runner)"),
        "no placement table in the HTML report"
    );
    let block = out
        .split("iolab placement (group 0): scatter, on ")
        .nth(1)
        .unwrap_or_else(|| panic!("no placement block in:\n{out}"));
    let lines: Vec<&str> = block.lines().skip(1).take(2).collect();
    assert!(lines[0].trim_start().starts_with("P p.0"), "{block}");
    assert!(
        lines[1].trim_start().starts_with("C p.0 corunner") && lines[1].contains("units/s"),
        "{block}"
    );
}

#[test]
fn bad_placements_are_refused_with_the_job_named() {
    // Two jobs of one group asking for different policies.
    let (code, _, err) = iolab(&[
        "--ioengine=null",
        "--size=1m",
        "--name=a",
        "--placement=scatter",
        "--name=b",
        "--placement=bunch",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("job 'b'")
            && err.contains("job 'a'")
            && err.contains("same group")
            && err.contains("stonewall"),
        "{err}"
    );
    // A CPU that is not online.
    let (code, _, err) = iolab(&[
        "--name=x",
        "--ioengine=null",
        "--size=1m",
        "--cpus_allowed=4000",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("job 'x'") && err.contains("cpu4000") && err.contains("not online"),
        "{err}"
    );
    // In-core policies on a machine without SMT.
    let smt = iolab::placement::Topology::from_system().unwrap().has_smt();
    if !smt {
        let (code, _, err) = iolab(&[
            "--name=x",
            "--ioengine=null",
            "--size=1m",
            "--placement=spread",
        ]);
        assert_eq!(code, 1, "{err}");
        assert!(
            err.contains("placement=spread") && err.contains("SMT"),
            "{err}"
        );
    }
}

/// placement=balance runs study 001's balancer live: it tells a polling worker
/// from an interrupt-driven one by what they do (not by their options), and
/// moves the pollers apart when round-robin start put them on one CPU.
#[test]
fn live_balancer_classifies_workers_by_behaviour_and_spreads_pollers() {
    let Some(cpus) = cpus_at_least(2) else { return };
    if cpus.len() != 2 {
        skip("the start placement checked here is the one on exactly 2 CPUs");
        return;
    }
    // Round-robin start over 2 CPUs: pa -> cpu0, ia -> cpu1, pb -> cpu0, ib -> cpu1,
    // so both pollers start on one CPU.
    let mut args = Vec::new();
    for (name, model, lat) in [
        ("pa", "poll", "10"),
        ("ia", "interrupt", "200"),
        ("pb", "poll", "10"),
        ("ib", "interrupt", "200"),
    ] {
        for a in [
            format!("--name={name}"),
            "--ioengine=null".into(),
            "--size=16m".into(),
            "--rw=randread".into(),
            format!("--completion={model}"),
            format!("--null_lat={lat}"),
            "--runtime=800ms".into(),
            "--time_based".into(),
            "--placement=balance".into(),
            "--balance_interval=40ms".into(),
        ] {
            args.push(a);
        }
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let v = run_json(&refs);
    let p = &v["iolab"]["placement"][0];
    assert_eq!(p["policy"], "balance", "{p}");
    let b = &p["balancer"];
    assert_eq!(b["interval_ms"].as_f64(), Some(40.0), "{b}");
    assert!(b["ticks"].as_u64().unwrap() >= 5, "{b}");
    assert!(b["migrations"].as_u64().unwrap() >= 1, "nothing moved: {p}");
    assert_eq!(b["reached_best"], true, "{p}");
    let t = tasks(&v);
    let predicted: Vec<&str> = t
        .iter()
        .map(|x| x.3["predicted"].as_str().unwrap())
        .collect();
    assert_eq!(predicted, ["P", "C", "P", "C"], "{p}");
    let poller_cpus: Vec<&Vec<u32>> = vec![&t[0].1, &t[2].1];
    assert_ne!(poller_cpus[0], poller_cpus[1], "pollers left together: {p}");
}
