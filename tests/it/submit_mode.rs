//! `io_submit_mode`: with `offload` a paced job keeps its schedule whatever
//! its I/O in flight does; with `inline` (fio's default) a job ahead of its
//! rate first lets its I/O in flight complete, then waits out the gap and
//! catches up on its schedule in a burst, as fio 3.33's `rate_ddir` does. On
//! a device slower than the rate's interval (the emulated one: 20 ms per
//! read, 64 in parallel; 1000 reads/s asked, 32 deep) both keep about the
//! rate, but offload submits the reads one by one as each falls due, while
//! inline submits them ~20 at a time after each drain. Counted, not timed:
//! the bounds are I/O counts and fio's submit distribution, with wide
//! margins for a busy machine. A synchronous engine cannot offload at depth
//! above 1 (iolab performs its I/O on the worker thread): refused with why.

use crate::run_common::{iolab_run, run_json};

/// (reads completed, % of submit calls with 1-4 requests, % with 9 or more).
fn paced(mode: &str) -> (u64, f64, f64) {
    let j = run_json(&[
        "--name=p",
        "--ioengine=null",
        "--size=64m",
        "--rw=randread",
        "--iodepth=32",
        "--rate_iops=1000",
        "--null_lat=20ms",
        "--null_channels=64",
        "--runtime=1",
        "--time_based",
        &format!("--io_submit_mode={mode}"),
    ]);
    let job = &j["jobs"][0];
    let share = |keys: &[&str]| -> f64 {
        keys.iter()
            .map(|k| job["iodepth_submit"][*k].as_f64().unwrap_or(0.0))
            .sum()
    };
    (
        job["read"]["total_ios"].as_u64().unwrap(),
        share(&["4"]),
        share(&["16", "32", "64", ">=64"]),
    )
}

#[test]
fn offload_keeps_the_schedule_inline_drains_then_bursts() {
    let _serial = crate::support::serial::one_at_a_time();
    let (off_ios, off_one, off_burst) = paced("offload");
    let (in_ios, in_one, in_burst) = paced("inline");
    eprintln!(
        "offload: {off_ios} reads, submits of 1-4: {off_one:.1}%, of 9+: {off_burst:.1}%; \
         inline: {in_ios} reads, submits of 1-4: {in_one:.1}%, of 9+: {in_burst:.1}%"
    );
    // About 1000 are due; 20 ms each leaves ~980 complete within the second.
    for (mode, ios) in [("offload", off_ios), ("inline", in_ios)] {
        assert!(
            (600..=1100).contains(&ios),
            "{mode} completed {ios} of ~980 due reads: it did not keep the rate"
        );
    }
    assert!(
        off_one >= 60.0 && off_burst <= 20.0,
        "offload submitted in bursts ({off_one}% of submits of 1-4, {off_burst}% of 9+): \
         it did not issue each read as it fell due"
    );
    assert!(
        in_burst >= 50.0,
        "inline: {in_burst}% of submits of 9+ (1-4: {in_one}%): it did not drain before \
         waiting and catch up after"
    );
}

#[test]
fn synchronous_engines_refuse_offload_above_depth_one() {
    let (code, _, err) = iolab_run(&[
        "--name=s",
        "--ioengine=psync",
        "--filename=/dev/null",
        "--size=1m",
        "--iodepth=4",
        "--io_submit_mode=offload",
    ]);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("io_submit_mode=offload with ioengine=psync at iodepth=4")
            && err.contains("ioengine=libaio or io_uring at iodepth=4"),
        "{err}"
    );
    // At depth 1 there is nothing to offload: it runs.
    let j = run_json(&[
        "--name=s",
        "--ioengine=null",
        "--size=64k",
        "--io_submit_mode=offload",
    ]);
    assert_eq!(j["jobs"][0]["read"]["total_ios"], 16);
    let (code, _, err) = iolab_run(&["--name=s", "--ioengine=null", "--io_submit_mode=later"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("io_submit_mode") && err.contains("inline or offload"),
        "{err}"
    );
}
