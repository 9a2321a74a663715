//! `latency_target` / `latency_window` / `latency_percentile` end to end on the
//! null device, whose one channel serves requests one after another: at depth
//! d every request waits for the d - 1 ahead of it, so its latency is at least
//! d times the service time. The search's answer is then known: the deepest d
//! with d x service time within the target. Host delays only ever add latency,
//! so a depth above the answer can never pass; the margin below the target
//! (1.9 ms) is what a busy machine may add before the answer itself fails.

use serde_json::Value;

use crate::run_common::{iolab_run, run_json};

/// 2 ms per request on one channel: depth 3 = 6 ms, depth 4 = 8 ms.
const DEVICE: [&str; 7] = [
    "--name=lt",
    "--ioengine=null",
    "--null_lat=2ms",
    "--rw=randread",
    "--bs=4k",
    "--size=64m",
    "--time_based",
];

fn search(extra: &[&str]) -> Value {
    let mut a = DEVICE.to_vec();
    a.extend_from_slice(extra);
    run_json(&a)
}

#[test]
fn the_search_settles_at_the_deepest_depth_that_meets_the_target() {
    let args = [
        "--iodepth=32",
        "--latency_target=7900us",
        "--latency_window=200ms",
        "--latency_percentile=90",
        "--runtime=30",
    ];
    // Depth 3 is the answer; a window at 3 fails only when the host adds
    // 1.9 ms to a tenth of its requests. That may happen on a loaded machine,
    // so the answer must be reached in one of three searches, and no search may
    // ever end deeper (depth 4 cannot pass whatever the machine does).
    let mut depths = Vec::new();
    for _ in 0..3 {
        let v = search(&args);
        let job = &v["jobs"][0];
        let depth = job["latency_depth"].as_u64().unwrap();
        assert!((1..=3).contains(&depth), "ended at depth {depth}: {job}");
        // fio's keys and units: target in ns, window in us.
        assert_eq!(job["latency_target"], 7_900_000);
        assert_eq!(job["latency_window"], 200_000);
        assert_eq!(job["latency_percentile"].as_f64(), Some(90.0));
        let lt = &job["iolab"]["engine"]["lat_target"];
        assert_eq!(lt["settled"], true, "{lt}");
        assert_eq!(lt["max_depth"], 32);
        // Only the final window at the found depth is reported: its run time
        // is about one window, not the seconds the search took.
        let runtime = job["job_runtime"].as_u64().unwrap();
        assert!(
            (190..5_000).contains(&runtime),
            "final window ran {runtime} ms (window 200 ms)"
        );
        // At depth 3 that window met the target: its 90th percentile of
        // completion latency (bounded by the total's) is within it, histogram
        // bins being within 1%. (A search that ended shallower may have failed
        // its final window and stepped down inside it, as fio does: its
        // figures mix two depths.)
        let p90 = job["read"]["clat_ns"]["percentile"]["90.000000"]
            .as_u64()
            .unwrap();
        if depth == 3 {
            assert!(p90 as f64 <= 7_900_000.0 * 1.01, "p90 {p90} ns");
        }
        // And every request of it waited behind depth - 1 others.
        let min = job["read"]["lat_ns"]["min"].as_u64().unwrap();
        assert!(min >= 2_000_000, "min {min} ns below one service time");
        depths.push(depth);
        if depth == 3 {
            break;
        }
    }
    assert_eq!(depths.last(), Some(&3), "never reached depth 3: {depths:?}");
}

#[test]
fn the_ceiling_is_iodepth() {
    // Every depth up to 4 (8 ms) meets 100 ms at the median: the search
    // doubles to iodepth and stays. (At the 100th percentile one stall of a
    // loaded machine would fail a window: seen here, 100 ms once.)
    let v = search(&[
        "--iodepth=4",
        "--latency_target=100ms",
        "--latency_window=100ms",
        "--latency_percentile=50",
        "--runtime=30",
    ]);
    let job = &v["jobs"][0];
    assert_eq!(job["latency_depth"], 4, "{job}");
    assert_eq!(job["latency_percentile"].as_f64(), Some(50.0));
    assert_eq!(job["iolab"]["engine"]["lat_target"]["settled"], true);
}

#[test]
fn a_target_below_depth_1_latency_ends_at_depth_1_with_a_note() {
    let mut a = DEVICE.to_vec();
    a.extend_from_slice(&[
        "--iodepth=16",
        "--latency_target=1ms",
        "--latency_window=100ms",
        "--latency_percentile=99",
        "--runtime=1",
    ]);
    let (code, out, err) = iolab_run(&a);
    assert_eq!(code, 0, "{err}\n{out}");
    assert!(
        out.contains("latency   : target=1000000, window=100000, percentile=99.00%, depth=1"),
        "{out}"
    );
    let note = out
        .lines()
        .find(|l| l.contains("note      : latency_target=1000us is not met even at depth 1"))
        .unwrap_or_else(|| panic!("no note: {out}"));
    assert!(note.contains("0.00% of the last window's I/Os"), "{note}");

    a.push("--output-format=json");
    let (code, out, err) = iolab_run(&a);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let job = &v["jobs"][0];
    assert_eq!(job["latency_depth"], 1);
    assert_eq!(
        job["iolab"]["engine"]["lat_target"]["unmet_at_depth_1"],
        true
    );
    // Depth 1 all along: fio's depth distribution has nothing deeper.
    assert_eq!(job["iodepth_level"]["1"].as_f64(), Some(100.0), "{job}");
}

#[test]
fn a_full_percentile_miss_at_depth_1_is_fios_error() {
    let mut a = DEVICE.to_vec();
    a.extend_from_slice(&[
        "--iodepth=16",
        "--latency_target=1ms",
        "--latency_window=100ms",
        "--runtime=5",
    ]);
    let (code, out, err) = iolab_run(&a);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("err=110"), "{out}");
    assert!(
        err.contains("exceeds specified max (1000000 nsec)") && err.contains("depth 1"),
        "{err}"
    );
}

#[test]
fn bad_values_are_one_line_errors() {
    for (opt, says) in [
        ("--latency_percentile=0", "above 0 and at most 100"),
        ("--latency_percentile=100.5", "above 0 and at most 100"),
        ("--latency_window=0", "a time above 0"),
        ("--latency_target=0", "a latency above 0"),
    ] {
        let (code, _, err) = iolab_run(&[
            "--name=b",
            "--ioengine=null",
            "--size=1m",
            "--latency_target=1ms",
            "--latency_window=10ms",
            opt,
        ]);
        let name = opt.trim_start_matches("--").split('=').next().unwrap();
        assert_ne!(code, 0, "{opt} accepted");
        assert_eq!(err.trim().lines().count(), 1, "{opt}: {err}");
        assert!(
            err.contains(&format!("option '{name}'")) && err.contains(says),
            "{opt}: {err}"
        );
    }
    // Without latency_window fio judges the depth at every pass of its loop;
    // so does iolab, with a note saying so.
    let (code, out, err) = iolab_run(&[
        "--name=b",
        "--ioengine=null",
        "--size=1m",
        "--latency_target=1ms",
        "--notes",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("latency_target is accepted, but without latency_window each pass"),
        "{err}"
    );
    assert!(out.contains("READ: bw="), "{out}");
}
