//! Keeping the queue full: at QD32 on a file the worker reaps a few
//! completions, refills and submits before it waits again, instead of taking
//! the whole queue back and submitting it in one call. What is checked is what
//! the engine counted (how many completions each wait handed back, waits made
//! while a request could have gone out) and fio's depth/submit/complete
//! distributions it reports — counts, never speed, so the machine may be busy.

use serde_json::Value;

use crate::run_common::{iolab_run, run_json};

fn scratch() -> (tempfile::TempDir, String) {
    // A file on the root filesystem (vda here), as the benchmark's row.
    let dir = tempfile::Builder::new()
        .prefix("iolab-queue-full-")
        .tempdir_in(std::env::temp_dir())
        .unwrap();
    let f = dir.path().join("target").display().to_string();
    (dir, f)
}

/// 16 MiB of 4 KiB random direct reads at `iodepth`: 4096 I/Os.
fn job(engine: &str, file: &str, iodepth: u32, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "--name=qf".into(),
        format!("--ioengine={engine}"),
        format!("--filename={file}"),
        "--size=16m".into(),
        "--bs=4k".into(),
        "--rw=randread".into(),
        "--direct=1".into(),
        format!("--iodepth={iodepth}"),
    ];
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn run(args: &[String]) -> Value {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    run_json(&a)
}

/// fio's distribution object as (label, percent) in its order.
fn dist(job: &Value, key: &str) -> Vec<(String, f64)> {
    let m = job[key]
        .as_object()
        .unwrap_or_else(|| panic!("{key} missing: {job}"));
    m.iter()
        .map(|(k, v)| (k.clone(), v.as_f64().unwrap()))
        .collect()
}

/// Present, and summing to 100% (each entry is rounded by the report).
fn assert_sums_to_100(job: &Value, key: &str) -> Vec<(String, f64)> {
    let d = dist(job, key);
    let sum: f64 = d.iter().map(|(_, p)| p).sum();
    assert!((sum - 100.0).abs() < 0.5, "{key} sums to {sum}: {d:?}");
    d
}

/// The share of a batch distribution above `n` per call (its buckets are
/// "0", "4" = 1-4, "8" = 5-8, ... ">=64").
fn share_above(d: &[(String, f64)], n: u32) -> f64 {
    d.iter()
        .filter(|(l, _)| {
            l.parse::<u32>()
                .map_or(true, |top| top > n.next_power_of_two().max(4))
        })
        .map(|(_, p)| p)
        .sum()
}

/// What the engine counted about its waits, and the job, after checking that
/// every request completed.
fn engine_counts(j: &Value, max: u32) -> (&Value, &Value) {
    let job = &j["jobs"][0];
    let e = &job["iolab"]["engine"];
    let c = &e["completion"];
    assert_eq!(job["read"]["total_ios"].as_u64(), Some(4096), "{job}");
    assert_eq!(c["completions"].as_u64(), Some(4096), "{e}");
    // Never more than iodepth_batch_complete_max taken back before refilling.
    let most = c["most_per_wait"].as_u64().unwrap();
    assert!(
        (1..=max as u64).contains(&most),
        "a wait took {most} completions, iodepth_batch_complete_max={max}: {e}"
    );
    // Never waited while a slot was free and a request was ready to go.
    assert_eq!(c["waits_with_room"].as_u64(), Some(0), "{e}");
    // At least one wait per `max` completions: none were taken in bulk.
    assert!(c["waits"].as_u64().unwrap() >= 4096 / max as u64, "{e}");
    (job, e)
}

#[test]
fn uring_qd32_reaps_few_and_refills_by_default() {
    let (_d, file) = scratch();
    let j = run(&job("io_uring", &file, 32, &[]));
    // The default at QD32: 4 per submit call and at most 4 per wait.
    let (job, e) = engine_counts(&j, 4);
    assert!(
        e["backend_stats"]["submit_calls"].as_u64().unwrap() >= 4096 / 4,
        "{e}"
    );
    let depth = assert_sums_to_100(job, "iodepth_level");
    let submit = assert_sums_to_100(job, "iodepth_submit");
    let complete = assert_sums_to_100(job, "iodepth_complete");
    assert_eq!(share_above(&submit, 4), 0.0, "{submit:?}");
    assert_eq!(share_above(&complete, 4), 0.0, "{complete:?}");
    // Refilled at once: requests went out with the queue (nearly) full.
    let at32 = depth.iter().find(|(l, _)| l == "32").unwrap().1;
    assert!(at32 > 80.0, "{depth:?}");
}

#[test]
fn fios_defaults_submit_and_reap_one_at_a_time() {
    let (_d, file) = scratch();
    let j = run(&job(
        "io_uring",
        &file,
        32,
        &["--iodepth_batch_submit=1", "--iodepth_batch_complete_min=1"],
    ));
    // complete_max follows complete_min, as in fio.
    let (job, e) = engine_counts(&j, 1);
    assert_eq!(
        e["backend_stats"]["submit_calls"].as_u64(),
        Some(4096),
        "{e}"
    );
    let complete = assert_sums_to_100(job, "iodepth_complete");
    assert_eq!(share_above(&complete, 1), 0.0, "{complete:?}");
}

#[test]
fn batch_options_bound_each_call_on_uring_and_libaio() {
    let (_d, file) = scratch();
    for engine in ["io_uring", "libaio"] {
        let j = run(&job(
            engine,
            &file,
            32,
            &[
                "--iodepth_batch_submit=8",
                "--iodepth_batch_complete_min=2",
                "--iodepth_batch_complete_max=8",
            ],
        ));
        let (job, e) = engine_counts(&j, 8);
        let backend = if engine == "io_uring" {
            "uring"
        } else {
            engine
        };
        assert_eq!(e["backend"].as_str(), Some(backend), "{e}");
        let submit = assert_sums_to_100(job, "iodepth_submit");
        let complete = assert_sums_to_100(job, "iodepth_complete");
        assert_eq!(share_above(&submit, 8), 0.0, "{engine}: {submit:?}");
        assert_eq!(share_above(&complete, 8), 0.0, "{engine}: {complete:?}");
        assert_sums_to_100(job, "iodepth_level");
    }
}

#[test]
fn iodepth_low_lets_a_full_queue_drain_before_refilling() {
    let (_d, file) = scratch();
    let j = run(&job("io_uring", &file, 16, &["--iodepth_low=4"]));
    // QD16's default: at most 2 per wait.
    let (job, _) = engine_counts(&j, 2);
    let depth = assert_sums_to_100(job, "iodepth_level");
    // Refills start from 4 in flight: requests go out at depths 5..16, so the
    // 4-7 and 8-15 buckets fill, which a queue kept full never does.
    for bucket in ["4", "8"] {
        let p = depth.iter().find(|(l, _)| l == bucket).unwrap().1;
        assert!(p > 5.0, "bucket {bucket}: {depth:?}");
    }
}

#[test]
fn text_output_has_fios_depth_lines() {
    let (_d, file) = scratch();
    let args = job("io_uring", &file, 32, &[]);
    let (code, out, err) = iolab_run(&args);
    assert_eq!(code, 0, "{err}\n{out}");
    let line = |prefix: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(prefix))
            .unwrap_or_else(|| panic!("no '{prefix}' line:\n{out}"))
            .to_string()
    };
    assert!(line("IO depths").contains(", 32="), "{out}");
    assert!(line("submit").contains("4=100.0%"), "{out}");
    assert!(line("complete").contains("4=100.0%"), "{out}");
}

#[test]
fn bad_batch_values_name_the_option_and_the_range() {
    for (opt, v) in [
        ("iodepth_batch_submit", "-1"),
        ("iodepth_batch", "lots"),
        ("iodepth_batch_complete_min", "70000"),
        ("iodepth_batch_complete", "1.5"),
        ("iodepth_batch_complete_max", "x"),
        ("iodepth_low", "-4"),
    ] {
        let (code, out, err) = iolab_run(&[
            "--name=bad",
            "--ioengine=null",
            "--size=1m",
            &format!("--{opt}={v}"),
        ]);
        assert_ne!(code, 0, "{opt}={v} accepted: {out}");
        let first = err.lines().next().unwrap_or_default();
        assert!(
            first.contains(opt) && first.contains(v) && first.contains("0 to 65535"),
            "{opt}={v}: {err}"
        );
    }
}
