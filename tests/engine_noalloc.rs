// Own binary: installs a counting global allocator, and each test re-runs it alone.
//! The hot path allocates nothing: a job of 20x more I/Os makes exactly as many
//! heap allocations as a small one (everything is allocated before the clock
//! starts). Counted by a global allocator over the test's thread and the
//! threads the engine starts, each test in a process of its own (see
//! `counting_alloc` for why).

use iolab::engine::{EngineOptions, JobRun, run_jobs};
use iolab::job::plan::parse_run_args;

mod counting_alloc;
mod support;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

/// This test's libtest name (its thread's name).
fn current_test() -> &'static str {
    let name = std::thread::current()
        .name()
        .expect("libtest names test threads")
        .to_string();
    name.leak()
}

/// Allocations made by running the job given as fio options.
fn allocations_of(args: &[String]) -> u64 {
    let plan = parse_run_args(args, &|_| None).expect("job parses");
    let (groups, n) = counting_alloc::allocations_during(|| {
        run_jobs(&plan.jobs, &EngineOptions::default()).expect("job runs")
    });
    assert!(groups[0].jobs.iter().all(|j| j.error.is_none()));
    drop(groups);
    n
}

fn check(base: &[&str]) {
    let with = |n: u64| {
        let mut a: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        a.push(format!("--number_ios={n}"));
        a
    };
    // Warm up once: lazily initialised process state (wakeup calibration,
    // tracefs discovery) must not be mistaken for per-request allocation.
    allocations_of(&with(100));
    let small = allocations_of(&with(1_000));
    let large = allocations_of(&with(20_000));
    // Thread start-up in std varies by an allocation or two between runs; one
    // allocation even per thousand requests would add 19 here.
    assert!(
        large <= small + 2,
        "{base:?}: 1k I/Os made {small} allocations, 20k made {large}"
    );
}

#[test]
fn null_device_every_model_allocates_nothing_per_request() {
    if !counting_alloc::alone(current_test()) {
        return;
    }
    for model in std::iter::once("poll").chain(support::QUEUED_MODELS) {
        check(&[
            "--name=n",
            "--ioengine=null",
            "--size=256m",
            "--rw=randrw",
            "--bs=4k",
            "--iodepth=8",
            &format!("--completion={model}"),
        ]);
    }
    check(&[
        "--name=s",
        "--ioengine=null",
        "--size=256m",
        "--rw=randread",
        "--bs=4k",
        "--iosched=laq",
        "--iodepth=8",
    ]);
    // The worker's QD1 polling path (engine/worker/qd1.rs).
    check(&[
        "--name=q",
        "--ioengine=null",
        "--size=256m",
        "--rw=randrw",
        "--bs=4k",
        "--iodepth=1",
        "--completion=poll",
    ]);
}

#[test]
fn psync_and_io_uring_allocate_nothing_per_request() {
    if !counting_alloc::alone(current_test()) {
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = format!("--filename={}", dir.path().join("f").display());
    for engine in ["psync", "io_uring"] {
        check(&[
            "--name=f",
            &f,
            "--size=8m",
            "--rw=randread",
            "--bs=4k",
            "--iodepth=4",
            &format!("--ioengine={engine}"),
            "--time_based",
            "--runtime=60",
        ]);
    }
}

#[test]
fn libaio_and_sync_family_allocate_nothing_per_request() {
    if !counting_alloc::alone(current_test()) {
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = format!("--filename={}", dir.path().join("f").display());
    let cases: &[&[&str]] = &[
        &["--ioengine=libaio", "--direct=1", "--completion=interrupt"],
        &["--ioengine=libaio", "--direct=1", "--completion=poll"],
        // Buffered AIO (done inside io_submit); writes, so the page cache
        // keeps it quick.
        &["--ioengine=libaio", "--rw=randwrite"],
        &["--ioengine=sync", "--direct=1"],
        &["--ioengine=vsync", "--direct=1"],
        &["--ioengine=pvsync", "--direct=1"],
    ];
    for extra in cases {
        let mut a = vec![
            "--name=f",
            &f,
            "--size=8m",
            "--bs=4k",
            "--iodepth=4",
            "--time_based",
            "--runtime=60",
        ];
        a.extend_from_slice(extra);
        if !a.iter().any(|s| s.starts_with("--rw=")) {
            a.push("--rw=randread");
        }
        check(&a);
    }
}

fn run(args: &[String]) -> Vec<JobRun> {
    let plan = parse_run_args(args, &|_| None).expect("job parses");
    let groups = run_jobs(&plan.jobs, &EngineOptions::default()).expect("job runs");
    groups.into_iter().flat_map(|g| g.jobs).collect()
}

#[test]
fn verify_and_fault_handling_allocate_nothing_per_request() {
    if !counting_alloc::alone(current_test()) {
        return;
    }
    let allocs = |loops: u32| {
        let mut a = support::faults::faulty_job("poll", "timer", "randwrite", 11);
        a.push(format!("--loops={loops}"));
        let (r, n) = counting_alloc::allocations_during(|| run(&a));
        assert!(r[0].acct.submitted > 500 * loops as u64, "{:?}", r[0].acct);
        n
    };
    allocs(1);
    let small = allocs(2);
    let large = allocs(20);
    // Ten times the requests (with their headers, checks, errors, aborts and
    // retries) and no more allocations than run-to-run noise of thread start-up
    // and the IOPS log.
    assert!(
        large <= small + 8,
        "2 loops: {small} allocations, 20 loops: {large}"
    );
}

#[test]
fn random_distributions_and_rates_allocate_nothing_per_request() {
    if !counting_alloc::alone(current_test()) {
        return;
    }
    for dist in [
        "zipf:1.2",
        "pareto:0.3:0.5",
        "normal:10",
        "zoned:60/10:30/20:10/",
        "zoned_abs:50/1m:50/100m",
    ] {
        check(&[
            "--name=d",
            "--ioengine=null",
            "--size=256m",
            "--rw=randrw",
            "--bs=4k",
            "--iodepth=8",
            &format!("--random_distribution={dist}"),
            "--percentage_random=50",
            "--blockalign=512",
        ]);
    }
    // Paced both ways (a mixed job switching direction under its caps),
    // Poisson gaps and a minimum-rate check on every completion.
    check(&[
        "--name=r",
        "--ioengine=null",
        "--size=256m",
        "--rw=randrw",
        "--bs=4k",
        "--iodepth=8",
        "--rate=2g,1g",
        "--rate_process=poisson",
        "--rate_min=1k",
        "--rate_cycle=1",
        "--io_size=1g",
    ]);
}

#[test]
fn job_logs_allocate_nothing_per_request() {
    if !counting_alloc::alone(current_test()) {
        return;
    }
    // Every record goes through the preallocated ring to the writer thread,
    // which formats into its buffers: neither thread allocates per I/O.
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let p = dir.path().join("l").display().to_string();
    let logs = [
        format!("--write_lat_log={p}"),
        format!("--write_bw_log={p}"),
        format!("--write_iops_log={p}"),
        format!("--write_hist_log={p}"),
    ];
    for extra in [
        &["--log_hist_msec=1"][..],
        &["--log_avg_msec=1", "--log_offset=1"],
    ] {
        let mut a = vec![
            "--name=l",
            "--ioengine=null",
            "--size=256m",
            "--rw=randrw",
            "--bs=4k",
            "--iodepth=8",
        ];
        a.extend(logs.iter().map(String::as_str));
        a.extend_from_slice(extra);
        check(&a);
    }
}

#[test]
fn posixaio_and_mmap_allocate_nothing_per_request() {
    if !counting_alloc::alone(current_test()) {
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = format!("--filename={}", dir.path().join("f").display());
    // What glibc's AIO does inside aio_read (its request pool, its helper
    // threads) is glibc's malloc, not counted here: what is held to nothing
    // is iolab's side of each request.
    let cases: &[&[&str]] = &[
        &["--ioengine=posixaio", "--completion=interrupt"],
        &["--ioengine=posixaio", "--completion=poll"],
        &["--ioengine=mmap"],
        &["--ioengine=mmap", "--rw=randwrite"],
    ];
    for extra in cases {
        let mut a = vec![
            "--name=f",
            &f,
            "--size=8m",
            "--bs=4k",
            "--iodepth=4",
            "--time_based",
            "--runtime=60",
        ];
        a.extend_from_slice(extra);
        if !a.iter().any(|s| s.starts_with("--rw=")) {
            a.push("--rw=randread");
        }
        check(&a);
    }
}
