//! The worker's latency stamps (docs/fio-compat.md, "Latency stamps"): issue,
//! submit and seen, each its own clock read, so that a request's slat and lat
//! never hold a sleep or a wait that came before its issue. On the null
//! device, through the library: every request's lat is its slat plus its
//! clat; a paced job, whose worker sleeps before each request, shows no sleep
//! in slat or lat; a job whose worker waits for each completion (interrupt, or
//! polling a slow device) shows the wait in clat only. Thresholds are a few
//! times apart from what a mistake would give, and medians, so a busy machine
//! does not fail them.

use iolab::engine::{EngineOptions, JobRun, run_jobs};
use iolab::job::plan::parse_run_args;
use iolab::measure::recorder::DirStats;

fn run(list: &[&str]) -> JobRun {
    let a: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    let plan = parse_run_args(&a, &|_| None).expect("job parses");
    let groups = run_jobs(&plan.jobs, &EngineOptions::default()).expect("job runs");
    groups
        .into_iter()
        .flat_map(|g| g.jobs)
        .next()
        .expect("one job")
}

/// lat = slat + clat for every request: so for the series' exact extremes and
/// sums, too.
fn assert_lat_is_slat_plus_clat(what: &str, d: &DirStats) {
    assert!(d.lat.count() > 0, "{what}: no requests measured");
    assert!(
        d.lat.min() >= d.slat.min() + d.clat.min(),
        "{what}: lat min {} < slat min {} + clat min {}",
        d.lat.min(),
        d.slat.min(),
        d.clat.min()
    );
    assert!(
        d.lat.max() <= d.slat.max() + d.clat.max(),
        "{what}: lat max {} > slat max {} + clat max {}",
        d.lat.max(),
        d.slat.max(),
        d.clat.max()
    );
    let parts = d.slat.mean() + d.clat.mean();
    assert!(
        (d.lat.mean() - parts).abs() <= 1e-9 * parts,
        "{what}: lat mean {} != slat mean + clat mean {parts}",
        d.lat.mean()
    );
}

#[test]
fn lat_is_slat_plus_clat_at_any_depth() {
    for depth in ["1", "4", "32"] {
        let j = run(&[
            "--name=stamps",
            "--ioengine=null",
            "--completion=poll",
            "--rw=randread",
            "--bs=4k",
            &format!("--iodepth={depth}"),
            "--size=64m",
        ]);
        let d = &j.rec.dirs[0];
        assert_eq!(d.total_ios, 16384, "QD{depth}");
        assert_lat_is_slat_plus_clat(&format!("QD{depth}"), d);
    }
}

#[test]
fn a_paced_sleep_is_in_no_latency() {
    // 1000 IOPS at QD1 on an instant device: the worker sleeps about 1 ms
    // before each request. A stamp reused across that sleep would put it in
    // every slat and lat.
    let j = run(&[
        "--name=paced",
        "--ioengine=null",
        "--completion=poll",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=1",
        "--rate_iops=1000",
        "--size=512k",
    ]);
    let d = &j.rec.dirs[0];
    assert_eq!(d.total_ios, 128);
    assert_lat_is_slat_plus_clat("paced", d);
    for (name, h) in [("slat", &d.slat), ("lat", &d.lat)] {
        let p50 = h.percentile(50.0);
        assert!(
            p50 < 250_000,
            "paced {name} p50 {p50} ns holds the ~1 ms sleep"
        );
    }
}

#[test]
fn a_wait_for_the_device_is_in_clat_only() {
    // 400 us of device time per request, waited for by sleeping (interrupt)
    // or by polling: clat holds it, slat must not.
    for model in ["interrupt", "poll"] {
        let j = run(&[
            "--name=waits",
            "--ioengine=null",
            &format!("--completion={model}"),
            "--null_lat=400",
            "--rw=randread",
            "--bs=4k",
            "--iodepth=1",
            "--size=256k",
        ]);
        let d = &j.rec.dirs[0];
        assert_eq!(d.total_ios, 64, "{model}");
        assert_lat_is_slat_plus_clat(model, d);
        assert!(
            d.clat.min() >= 400_000,
            "{model}: clat min {}",
            d.clat.min()
        );
        let p50 = d.slat.percentile(50.0);
        assert!(
            p50 < 200_000,
            "{model}: slat p50 {p50} ns holds the device wait"
        );
    }
}
