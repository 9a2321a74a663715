//! fio's workload and reporting options of `job::workload_opts` and
//! `job::report_opts`, end to end: offsets through a per-I/O bandwidth log
//! with `log_offset` (as fio's t0021 and strided.py read them), the JSON and
//! terse shapes of `unified_rw_reporting` beside fio's own, `stats`,
//! `max_latency`, the sample windows, and compressed logs that fio inflates.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::run_common::{iolab_run, run_json};
use crate::support::needs::{Need, ready};

/// Offsets (and directions) of every row of a per-I/O log with `log_offset`.
fn logged_offsets(path: &Path) -> Vec<u64> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(',').nth(4).unwrap().trim().parse().unwrap())
        .collect()
}

fn random_read_offsets(dir: &Path, extra: &[&str]) -> Vec<u64> {
    let log = dir.join("o");
    let prefix = format!("--write_bw_log={}", log.display());
    let mut args = vec![
        "--name=t",
        "--ioengine=null",
        "--filesize=1M",
        "--rw=randread",
        "--per_job_logs=0",
        "--log_offset=1",
        prefix.as_str(),
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = iolab_run(&args);
    assert_eq!(code, 0, "{err}\n{out}");
    logged_offsets(&dir.join("o_bw.log"))
}

#[test]
fn lfsr_with_norandommap_touches_every_block_once() {
    // fio's t0021: 256 blocks of 4 KiB, all touched, none twice.
    let dir = tempfile::tempdir().unwrap();
    let offs = random_read_offsets(dir.path(), &["--norandommap=1", "--random_generator=lfsr"]);
    assert_eq!(offs.len(), 256);
    let distinct: BTreeSet<u64> = offs.iter().copied().collect();
    assert_eq!(distinct.len(), 256, "every block once");
    assert!(
        offs.windows(2).any(|w| w[1] != w[0] + 4096),
        "not a sequential walk"
    );
    // tausworthe (fio's default) with norandommap draws with replacement.
    let dir = tempfile::tempdir().unwrap();
    let offs = random_read_offsets(dir.path(), &["--norandommap=1"]);
    let distinct: BTreeSet<u64> = offs.iter().copied().collect();
    assert!(distinct.len() < 256, "{} distinct", distinct.len());
}

#[test]
fn rw_sequencer_identical_repeats_each_random_offset() {
    let dir = tempfile::tempdir().unwrap();
    let offs = random_read_offsets(dir.path(), &["--rw=randread:4", "--rw_sequencer=identical"]);
    assert!(offs.len() >= 8);
    for run in offs.chunks(4).filter(|c| c.len() == 4) {
        assert!(run.iter().all(|&o| o == run[0]), "{run:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let offs = random_read_offsets(dir.path(), &["--rw=randread:4"]);
    // Sequential by default: runs of 4 from each random offset (fio's own
    // first 64 reads of this job are 16 whole runs; later a run that meets
    // the region's end is cut short and shifts the runs after it, and there
    // iolab's runs still part from fio's: docs/fio-compat.md).
    for run in offs.chunks(4).take(16) {
        assert!(
            run.windows(2).all(|w| w[1] == w[0] + 4096),
            "sequential by default: {run:?}"
        );
    }
}

#[test]
fn strided_random_jobs_visit_each_zone_block_once() {
    // fio's strided.py: in each 64 KiB zone, 16 reads take its 16 blocks.
    let dir = tempfile::tempdir().unwrap();
    let offs = random_read_offsets(
        dir.path(),
        &[
            "--zonemode=strided",
            "--zonerange=64k",
            "--zonesize=64k",
            "--filesize=1M",
            "--size=1M",
        ],
    );
    assert_eq!(offs.len(), 256);
    for (i, zone) in offs.chunks(16).enumerate() {
        let start = (i as u64 % 16) * 65536;
        let blocks: BTreeSet<u64> = zone.iter().map(|o| (o - start) / 4096).collect();
        assert_eq!(blocks.len(), 16, "zone {i}: {zone:?}");
        assert!(blocks.iter().all(|&b| b < 16), "zone {i} strays: {zone:?}");
    }
}

fn keys(job: &Value) -> Vec<String> {
    job.as_object().unwrap().keys().cloned().collect()
}

fn unified_job(tool: &str, mode: &str, format: &str) -> String {
    let args = [
        "--name=t",
        "--ioengine=null",
        "--size=16m",
        "--rw=randrw",
        &format!("--unified_rw_reporting={mode}"),
        &format!("--output-format={format}"),
    ];
    let out = if tool == "fio" {
        Command::new("fio").args(args).output().unwrap()
    } else {
        Command::new(env!("CARGO_BIN_EXE_iolab"))
            .arg("run")
            .args(args)
            .output()
            .unwrap()
    };
    assert!(
        out.status.success(),
        "{tool}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn unified_rw_reporting_sums_directions_as_fio_shapes_them() {
    for (mode, dirs, mixed) in [
        ("none", true, false),
        ("mixed", false, true),
        ("1", false, true),
        ("both", true, true),
    ] {
        let v: Value = serde_json::from_str(&unified_job("iolab", mode, "json")).unwrap();
        let j = &v["jobs"][0];
        assert_eq!(j.get("read").is_some(), dirs, "{mode}: {:?}", keys(j));
        assert_eq!(j.get("sync").is_some(), dirs, "{mode}");
        assert_eq!(j.get("mixed").is_some(), mixed, "{mode}");
        if mixed {
            let m = &j["mixed"];
            assert_eq!(m["io_bytes"].as_u64(), Some(16 << 20), "{mode}");
            assert_eq!(m["total_ios"].as_u64(), Some(4096), "{mode}");
        }
    }
    if !ready(&[Need::Fio]) {
        return;
    }
    // The same keys in the same order as fio's, and terse lines of the same length.
    for mode in ["none", "mixed", "both"] {
        let ours: Value = serde_json::from_str(&unified_job("iolab", mode, "json")).unwrap();
        let fio: Value = serde_json::from_str(&unified_job("fio", mode, "json")).unwrap();
        let shape = |v: &Value| {
            let k = keys(&v["jobs"][0]);
            k.into_iter()
                .filter(|k| k != "iolab" && k != "steadystate")
                .collect::<Vec<_>>()
        };
        assert_eq!(shape(&ours), shape(&fio), "{mode}");
        let fields = |s: String| s.lines().next().unwrap().split(';').count();
        assert_eq!(
            fields(unified_job("iolab", mode, "terse")),
            fields(unified_job("fio", mode, "terse")),
            "terse fields, {mode}"
        );
    }
    let text = unified_job("iolab", "both", "normal");
    assert!(text.contains("  mixed: IOPS="), "{text}");
    assert!(text.contains("  MIXED: bw="), "{text}");
}

#[test]
fn stats_0_leaves_the_job_out_of_the_report() {
    let v = run_json(&[
        "--ioengine=null",
        "--size=1m",
        "--name=quiet",
        "--stats=0",
        "--name=shown",
    ]);
    let names: Vec<&str> = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["jobname"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["shown"]);
}

#[test]
fn max_latency_fails_the_job_with_etimedout() {
    let (code, out, err) = iolab_run(&[
        "--name=t",
        "--ioengine=null",
        "--size=1m",
        "--max_latency=1ns",
        "--output-format=json",
    ]);
    assert_eq!(code, 1, "{err}\n{out}");
    assert!(err.contains("exceeds specified max (1 nsec)"), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["jobs"][0]["error"].as_i64(),
        Some(i64::from(libc::ETIMEDOUT))
    );
    // One read completed and none after it: the job stopped there.
    assert_eq!(v["jobs"][0]["read"]["total_ios"].as_u64(), Some(1), "{out}");
    // A limit no completion reaches changes nothing.
    let v = run_json(&[
        "--name=t",
        "--ioengine=null",
        "--size=1m",
        "--max_latency=10s",
    ]);
    assert_eq!(v["jobs"][0]["read"]["total_ios"].as_u64(), Some(256));
}

#[test]
fn bwavgtime_and_iopsavgtime_set_the_sample_windows() {
    let dir = |d: &Value, k: &str| d["jobs"][0]["read"][k].as_u64().unwrap();
    let v = run_json(&[
        "--name=t",
        "--ioengine=null",
        "--size=1m",
        "--rw=read",
        "--rate_iops=1000",
        "--runtime=2",
        "--time_based",
        "--bwavgtime=250",
        "--iopsavgtime=1000",
    ]);
    // Full windows of a 2 s run: 8 of 250 ms, 2 of 1 s (one fewer if the
    // measured time ends a hair short of 2 s).
    assert!((7..=8).contains(&dir(&v, "bw_samples")), "{v}");
    assert!((1..=2).contains(&dir(&v, "iops_samples")), "{v}");
    let v = run_json(&[
        "--name=t",
        "--ioengine=null",
        "--size=1m",
        "--rw=read",
        "--rate_iops=1000",
        "--runtime=1",
        "--time_based",
        "--disable_bw_measurement=1",
    ]);
    assert_eq!(dir(&v, "bw_samples"), 0);
    assert!(dir(&v, "iops_samples") >= 1, "{v}");
}

#[test]
fn compressed_logs_hold_the_rows_and_fio_inflates_them() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("c");
    let prefix = format!("--write_bw_log={}", log.display());
    let (code, out, err) = iolab_run(&[
        "--name=t",
        "--ioengine=null",
        "--size=4m",
        "--bs=16k",
        "--rw=write",
        "--per_job_logs=0",
        "--log_offset=1",
        "--log_compression=1k",
        "--log_store_compressed=1",
        prefix.as_str(),
    ]);
    assert_eq!(code, 0, "{err}\n{out}");
    let fz = dir.path().join("c_bw.log.fz");
    assert!(fz.exists() && !dir.path().join("c_bw.log").exists());
    let inflate = |cmd: &str| -> String {
        let mut c = Command::new(cmd);
        if cmd != "fio" {
            c.arg("run");
        }
        let o = c
            .arg(format!("--inflate-log={}", fz.display()))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    };
    let ours = inflate(env!("CARGO_BIN_EXE_iolab"));
    let offsets: Vec<u64> = ours
        .lines()
        .map(|l| l.split(',').nth(4).unwrap().trim().parse().unwrap())
        .collect();
    assert_eq!(offsets, (0..256).map(|i| i * 16384).collect::<Vec<_>>());
    if ready(&[Need::Fio]) {
        assert_eq!(inflate("fio"), ours, "fio reads the same rows");
    }
}

#[test]
fn thinktime_family_paces_the_job() {
    // 20 reads with a 2 ms pause after every 5 issued: at least 3 pauses
    // (6 ms) before the last read; without the option no pause at all.
    let run = |extra: &[&str]| -> u64 {
        let mut a = vec!["--name=t", "--ioengine=null", "--size=80k", "--rw=read"];
        a.extend_from_slice(extra);
        let v = run_json(&a);
        v["jobs"][0]["read"]["runtime"].as_u64().unwrap()
    };
    let paused = run(&[
        "--thinktime=2ms",
        "--thinktime_blocks=5",
        "--thinktime_blocks_type=issue",
        "--thinktime_spin=500us",
    ]);
    assert!(paused >= 6, "{paused} ms");
}

/// (offset, length) of every write in a version 3 iolog.
fn iolog_writes(path: &Path) -> Vec<(u64, u64)> {
    crate::run_common::iolog_rows(path, "write")
        .into_iter()
        .map(|(_, off, len)| (off, len))
        .collect()
}

#[test]
fn bs_unaligned_draws_any_byte_count_of_the_range_as_fio() {
    // fio 3.33, rw=write bsrange=1k-8k bs_unaligned=1 over 256 KiB: sizes of
    // any byte count in [1k, 8k], each write where the last ended, until
    // fewer than 1k bytes are left.
    let dir = tempfile::tempdir().unwrap();
    let check = |log: &Path, who: &str| {
        let w = iolog_writes(log);
        assert!(w.len() > 20, "{who}: {w:?}");
        assert!(
            w.iter().all(|&(_, l)| (1024..=8192).contains(&l)),
            "{who}: {w:?}"
        );
        let odd = w.iter().filter(|&&(_, l)| l % 1024 != 0).count();
        assert!(odd * 2 > w.len(), "{who}: mostly unaligned sizes: {w:?}");
        assert!(
            w.windows(2).all(|p| p[1].0 == p[0].0 + p[0].1),
            "{who}: {w:?}"
        );
        let end = w.last().map(|&(o, l)| o + l).unwrap();
        assert!(
            end <= 256 << 10 && end > (256 << 10) - 1024,
            "{who}: ends at {end}"
        );
    };
    let job = |file: &Path, log: &Path| {
        vec![
            "--name=u".to_string(),
            format!("--filename={}", file.display()),
            "--size=256k".into(),
            "--rw=write".into(),
            "--bsrange=1k-8k".into(),
            "--bs_unaligned=1".into(),
            format!("--write_iolog={}", log.display()),
        ]
    };
    let ours = dir.path().join("iolab.iolog");
    let (code, out, err) = iolab_run(&job(&dir.path().join("a"), &ours));
    assert_eq!(code, 0, "{err}\n{out}");
    check(&ours, "iolab");
    if ready(&[Need::Fio]) {
        let theirs = dir.path().join("fio.iolog");
        let st = Command::new("fio")
            .args(job(&dir.path().join("b"), &theirs))
            .arg("--output=/dev/null")
            .status()
            .expect("run fio");
        assert!(st.success());
        check(&theirs, "fio");
    }
    // Random blocks of any byte count overlap earlier ones, which the
    // verifier would skip: refused with verify, naming why.
    let mut args = job(&dir.path().join("c"), &dir.path().join("c.iolog"));
    args.push("--verify=crc32c".into());
    args.push("--rw=randwrite".into());
    let (code, _, err) = iolab_run(&args);
    assert_ne!(code, 0);
    assert!(
        err.contains("bs_unaligned") && err.contains("random offsets"),
        "{err}"
    );
}

/// bs_unaligned with a bsrange and verify: every block of a sequential
/// job, of whatever byte count and at whatever offset, is written and read
/// back once and checks (fio 3.33 on the same jobs: as many verify reads
/// as writes, the same bytes).
#[test]
fn bs_unaligned_blocks_are_verified_at_their_own_offsets() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = dir.path().join("v");
    let rw = "--rw=write";
    let _ = std::fs::remove_file(&file);
    let doc = run_json(&[
        "--name=v",
        &format!("--filename={}", file.display()),
        "--size=256k",
        rw,
        "--bsrange=1k-8k",
        "--bs_unaligned=1",
        "--verify=crc32c",
    ]);
    let j = &doc["jobs"][0];
    let (w, r) = (&j["write"], &j["read"]);
    assert!(w["total_ios"].as_u64().unwrap() > 20, "{rw}: {j}");
    assert_eq!(
        w["total_ios"], r["total_ios"],
        "{rw}: a read per write: {j}"
    );
    assert_eq!(w["io_bytes"], r["io_bytes"], "{rw}: {j}");
    assert!(
        w["io_bytes"].as_u64().unwrap() % 1024 != 0,
        "{rw}: unaligned sizes expected: {j}"
    );
}
