//! `iolab run` end to end: real jobs on the null device, a temp file (psync and
//! io_uring, buffered and O_DIRECT) and a hot-added zram device; JSON checked for
//! byte counts, IOPS, ordered percentiles; bad input rejected with exit status 1.

use crate::support;

use support::needs::{Need, ready};

use std::path::Path;

use serde_json::Value;

use crate::run_common;

use run_common::{iolab_run as iolab, run_json};

/// Checks every job: bytes as expected, IOPS > 0, percentiles in order.
fn check_dir(job: &Value, dir: &str, ios: u64, bs: u64) {
    let d = &job[dir];
    assert_eq!(
        d["total_ios"].as_u64(),
        Some(ios),
        "{dir} total_ios in {job}"
    );
    assert_eq!(d["io_bytes"].as_u64(), Some(ios * bs), "{dir} io_bytes");
    assert!(d["iops"].as_f64().unwrap() > 0.0, "{dir} iops");
    for key in ["clat_ns", "lat_ns"] {
        let lat = &d[key];
        assert_eq!(lat["N"].as_u64(), Some(ios), "{key} N");
        let min = lat["min"].as_u64().unwrap();
        let max = lat["max"].as_u64().unwrap();
        assert!(min <= max);
        if let Some(p) = lat["percentile"].as_object() {
            let mut v: Vec<(f64, u64)> = p
                .iter()
                .map(|(k, v)| (k.parse::<f64>().unwrap(), v.as_u64().unwrap()))
                .collect();
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            assert!(v.len() >= 10, "percentile list {p:?}");
            for w in v.windows(2) {
                assert!(w[0].1 <= w[1].1, "{key} percentiles out of order: {v:?}");
            }
            // Within the histogram's relative error of the extremes.
            assert!(
                v[0].1 as f64 >= min as f64 * 0.99 && v[v.len() - 1].1 as f64 <= max as f64 * 1.01
            );
        }
    }
}

#[test]
fn null_device_counts_every_io_and_polls() {
    let doc = run_json(&[
        "--name=null",
        "--ioengine=null",
        "--size=64m",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=8",
        "--number_ios=5000",
        "--completion=poll",
    ]);
    let job = &doc["jobs"][0];
    check_dir(job, "read", 5000, 4096);
    assert_eq!(job["write"]["total_ios"].as_u64(), Some(0));
    let e = &job["iolab"]["engine"];
    assert_eq!(e["completion_model"], "poll");
    assert_eq!(
        e["completion"]["sleeps"].as_u64(),
        Some(0),
        "poll must not sleep: {e}"
    );
    assert!(doc["iolab"]["clock"]["cost_ns"].as_f64().unwrap() > 0.0);
}

#[test]
fn null_device_latency_is_at_least_device_time() {
    for model in ["poll", "interrupt", "hybrid"] {
        let doc = run_json(&[
            "--name=lat",
            "--ioengine=null",
            "--size=16m",
            "--rw=randread",
            "--bs=4k",
            "--number_ios=300",
            "--null_lat=20us",
            &format!("--completion={model}"),
        ]);
        let r = &doc["jobs"][0]["read"];
        // lat spans issue to completion seen, which contains the whole device
        // time; clat starts after submit returns, when the device already runs.
        let min = r["lat_ns"]["min"].as_u64().unwrap();
        assert!(
            min >= 20_000,
            "{model}: lat min {min} ns below the 20 us device time"
        );
        let sleeps = doc["jobs"][0]["iolab"]["engine"]["completion"]["sleeps"]
            .as_u64()
            .unwrap();
        match model {
            "poll" => assert_eq!(sleeps, 0),
            _ => assert!(sleeps > 0, "{model} never slept"),
        }
    }
}

#[test]
fn mixed_workload_with_numjobs_and_group_reporting() {
    let doc = run_json(&[
        "--name=mix",
        "--ioengine=null",
        "--size=32m",
        "--rw=randrw",
        "--rwmixread=70",
        "--bs=4k",
        "--numjobs=3",
        "--number_ios=2000",
        "--group_reporting",
    ]);
    let jobs = doc["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "group_reporting folds clones");
    let r = jobs[0]["read"]["total_ios"].as_u64().unwrap();
    let w = jobs[0]["write"]["total_ios"].as_u64().unwrap();
    assert_eq!(r + w, 6000);
    assert!(r > w, "70% reads: {r} reads vs {w} writes");
}

#[test]
fn group_reporting_sums_job_runtime_as_fio_does() {
    // fio adds its threads' run times under group_reporting, so `usr_cpu`
    // (the average per thread) times `job_runtime` is the group's CPU time;
    // iolab's `runtime_ms` keeps the wall span the logs cover.
    let doc = run_json(&[
        "--name=g",
        "--ioengine=null",
        "--size=32m",
        "--rw=randread",
        "--bs=4k",
        "--numjobs=3",
        "--runtime=300ms",
        "--time_based",
        "--group_reporting",
    ]);
    let j = &doc["jobs"][0];
    let summed = j["job_runtime"].as_u64().unwrap();
    let wall = j["iolab"]["runtime_ms"].as_u64().unwrap();
    assert_eq!(j["iolab"]["workers"], 3);
    // The span ends with the last completion, which comes before the 300 ms
    // deadline, truncated to whole ms; a worker preempted just before the
    // deadline (three workers on two CPUs) ends its span early by that much.
    assert!((250..1000).contains(&wall), "wall {wall} ms");
    // Each worker ran about 300 ms (its measured span ends with its last
    // completion, before the deadline) and at most the longest's: well over
    // one worker's time, which is what an unsummed runtime would show.
    assert!(
        (750..=3 * wall + 2).contains(&summed),
        "job_runtime {summed} ms is not three workers' times (longest {wall} ms)"
    );
    // The per-direction runtime stays the wall span (rounded up), as fio's.
    let rt = j["read"]["runtime"].as_u64().unwrap();
    assert!(rt == wall || rt == wall + 1, "read runtime {rt} vs {wall}");
}

#[test]
fn stonewall_groups_and_job_files() {
    let dir = tempfile::tempdir().unwrap();
    let jf = dir.path().join("two.fio");
    std::fs::write(
        &jf,
        "[global]\nioengine=null\nsize=8m\nbs=4k\n\n[first]\nrw=read\n\n[second]\nstonewall\nrw=write\nnumber_ios=100\n",
    )
    .unwrap();
    let doc = run_json(&[jf.to_str().unwrap()]);
    let jobs = doc["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0]["groupid"], 0);
    assert_eq!(jobs[1]["groupid"], 1);
    check_dir(&jobs[0], "read", 2048, 4096);
    check_dir(&jobs[1], "write", 100, 4096);
}

fn file_jobs(dir: &Path, engine: &str, direct: bool) {
    let f = dir.join(format!("data-{engine}-{direct}"));
    let f = f.to_str().unwrap();
    let direct = format!("--direct={}", direct as u8);
    let engine = format!("--ioengine={engine}");
    // Write the file sequentially, then read it back at random.
    let doc = run_json(&[
        "--name=w",
        &format!("--filename={f}"),
        "--size=4m",
        "--rw=write",
        "--bs=64k",
        &engine,
        &direct,
    ]);
    check_dir(&doc["jobs"][0], "write", 64, 65536);
    let doc = run_json(&[
        "--name=r",
        &format!("--filename={f}"),
        "--size=4m",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=16",
        // number_ios only ever stops a job early (fio): 800 < 1024 blocks.
        "--number_ios=800",
        &engine,
        &direct,
    ]);
    check_dir(&doc["jobs"][0], "read", 800, 4096);
}

#[test]
fn psync_and_io_uring_on_a_temp_file_buffered_and_direct() {
    // /var/tmp is on the root disk (O_DIRECT capable), unlike a tmpfs /tmp.
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    for engine in ["psync", "pvsync2", "io_uring"] {
        for direct in [false, true] {
            file_jobs(dir.path(), engine, direct);
        }
    }
}

#[test]
fn io_uring_cq_spinning_and_registered_resources() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = dir.path().join("d");
    let f = f.to_str().unwrap();
    let doc = run_json(&[
        "--name=spin",
        &format!("--filename={f}"),
        "--size=2m",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=4",
        "--number_ios=500",
        "--ioengine=io_uring",
        "--completion=poll",
        "--fixedbufs",
        "--registerfiles",
        "--direct=1",
    ]);
    check_dir(&doc["jobs"][0], "read", 500, 4096);
    assert_eq!(
        doc["jobs"][0]["iolab"]["engine"]["completion"]["sleeps"].as_u64(),
        Some(0)
    );
}

#[test]
fn zram_device_psync_and_io_uring() {
    if !ready(&[Need::Zram]) {
        return;
    }
    let z = iolab::sys::zram::Zram::create(32 << 20).expect("hot-add zram");
    let dev = z.path().to_str().unwrap().to_string();
    let doc = run_json(&[
        "--name=fill",
        &format!("--filename={dev}"),
        "--rw=write",
        "--bs=1m",
        "--direct=1",
    ]);
    check_dir(&doc["jobs"][0], "write", 32, 1 << 20);
    assert!(
        !doc["disk_util"].as_array().unwrap().is_empty(),
        "disk_util for a block device"
    );
    for engine in ["psync", "io_uring"] {
        let doc = run_json(&[
            "--name=zr",
            &format!("--filename={dev}"),
            "--rw=randread",
            "--bs=4k",
            "--number_ios=3000",
            &format!("--ioengine={engine}"),
        ]);
        check_dir(&doc["jobs"][0], "read", 3000, 4096);
        // Punts are counted only when asked for (the tracepoint costs each
        // one CPU), and "not counted" is null, never 0.
        let punted = &doc["jobs"][0]["iolab"]["engine"]["backend_stats"]["punted"];
        assert!(
            punted.is_null(),
            "{engine}: punted={punted} without count_punts"
        );
    }
    let doc = run_json(&[
        "--name=zp",
        &format!("--filename={dev}"),
        "--rw=randread",
        "--bs=4k",
        "--direct=1",
        "--number_ios=500",
        "--ioengine=io_uring",
        "--count_punts=1",
    ]);
    // zram has no NOWAIT: each of the 500 reads was punted, and counted.
    assert_eq!(
        doc["jobs"][0]["iolab"]["engine"]["backend_stats"]["punted"].as_u64(),
        Some(500)
    );
    // zram has no NOWAIT: every queued io_uring read detours through an io-wq
    // worker, so at depth 1 adaptive must measure the inline path faster (a
    // 3-4x gap here) and take it, and say so with its numbers.
    let doc = run_json(&[
        "--name=ad",
        &format!("--filename={dev}"),
        "--rw=randread",
        "--bs=4k",
        "--direct=1",
        "--number_ios=8000",
        "--ioengine=io_uring",
        "--completion=adaptive",
    ]);
    let job = &doc["jobs"][0];
    check_dir(job, "read", 8000, 4096);
    let engine = &job["iolab"]["engine"];
    let d = &engine["adaptive_decisions"][0];
    assert_eq!(d["model"], "sync", "{d}");
    assert!(d["why"].as_str().unwrap().contains("inline"), "{d}");
    let inline = engine["completion"]["adaptive_sync"].as_u64().unwrap();
    assert!(inline > 6_000, "only {inline} of 8000 performed inline");
    // At depth > 1 inline submission would serialise the queue: never tried.
    let doc = run_json(&[
        "--name=ad4",
        &format!("--filename={dev}"),
        "--rw=randread",
        "--bs=4k",
        "--direct=1",
        "--iodepth=4",
        "--number_ios=4000",
        "--ioengine=io_uring",
        "--completion=adaptive",
    ]);
    let engine = &doc["jobs"][0]["iolab"]["engine"];
    assert_eq!(engine["completion"]["adaptive_sync"], 0);
}

#[test]
fn text_output_looks_like_fio() {
    let (code, out, err) = iolab(&[
        "--name=t",
        "--ioengine=null",
        "--size=4m",
        "--rw=randread",
        "--number_ios=100",
    ]);
    assert_eq!(code, 0, "{err}");
    for landmark in [
        "t: (groupid=0, jobs=1)",
        "read: IOPS=",
        "clat percentiles (nsec)",
        "Run status group 0",
    ] {
        assert!(out.contains(landmark), "missing '{landmark}' in:\n{out}");
    }
}

/// Bad input: exit status 1, a message naming what and where, and nothing written.
#[test]
fn bad_input_is_refused_clearly() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let missing = dir.path().join("nope");
    let missing = missing.to_str().unwrap();
    let jf = dir.path().join("bad.fio");
    std::fs::write(&jf, "[j]\nioengine=null\nsize=1m\niodpeth=4\n").unwrap();
    let jf = jf.to_str().unwrap();
    let cases: Vec<(Vec<String>, &[&str])> = vec![
        (
            vec![
                "--name=r".into(),
                format!("--filename={missing}"),
                "--rw=read".into(),
            ],
            &["nope", "size"],
        ),
        (
            vec![
                "--name=z".into(),
                "--iodepth=0".into(),
                "--ioengine=null".into(),
                "--size=1m".into(),
            ],
            &["iodepth"],
        ),
        (
            vec!["--name=e".into(), "--ioengine=rdma".into()],
            &["ioengine", "rdma", "RDMA"],
        ),
        (
            vec!["--name=u".into(), "--bogus_option=1".into()],
            &["bogus_option"],
        ),
        (
            vec![
                "--name=m".into(),
                "--ioengine=null".into(),
                "--size=12q".into(),
            ],
            &["size", "12q"],
        ),
        (vec![jf.to_string()], &["iodpeth", "bad.fio:4"]),
        (
            vec![
                "--name=d".into(),
                format!("--filename={missing}"),
                "--size=1m".into(),
                "--bs=1000".into(),
                "--direct=1".into(),
                "--rw=write".into(),
            ],
            &["1000"],
        ),
    ];
    for (args, needles) in cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = iolab(&a);
        assert_eq!(code, 1, "{args:?} should fail with status 1; stdout: {out}");
        for n in needles {
            assert!(
                err.contains(n),
                "{args:?}: error should mention '{n}': {err}"
            );
        }
        assert!(
            !Path::new(missing).exists(),
            "{args:?} wrote the file despite the error"
        );
    }
}

#[test]
fn size_beyond_a_block_device_is_refused() {
    if !ready(&[Need::Zram]) {
        return;
    }
    let z = iolab::sys::zram::Zram::create(8 << 20).expect("hot-add zram");
    let dev = z.path().to_str().unwrap().to_string();
    let (code, _, err) = iolab(&[
        "--name=big",
        &format!("--filename={dev}"),
        "--size=1g",
        "--rw=read",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("size"), "{err}");
    let (code, _, err) = iolab(&[
        "--name=odd",
        &format!("--filename={dev}"),
        "--bs=512",
        "--direct=1",
        "--rw=read",
    ]);
    assert_eq!(code, 1, "bs below the logical block size with direct=1");
    assert!(err.contains("512"), "{err}");
}
