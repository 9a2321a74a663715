//! Study 004 end to end: the quick study runs PostgreSQL + pgbench on a slow
//! (throttled loop) and a fast (zram) device under observe's tracer, reports both
//! devices with transactions and system calls, and leaves nothing behind: no
//! mount, loop device, zram device, cgroup or postgres process.

use crate::support;

use support::needs::{Need, ready};

use iolab::lab::observe::{ObserveStudyOpts, run};
use iolab::report::study::{Cell, StudyResult};

fn num(c: &Cell) -> f64 {
    match c {
        Cell::Num { v, .. } => *v,
        Cell::Text(t) => panic!("expected a number, got {t:?}"),
    }
}

fn root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn setup<'a>(r: &'a StudyResult, key: &str) -> &'a str {
    r.setup
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no setup entry {key:?}: {:?}", r.setup))
}

/// `loop3 (direct I/O over /var/tmp/iolab-observe-X/disk.img ...)` -> (loop3, img path).
fn device_and_dir(desc: &str) -> (String, Option<String>) {
    let name = desc.split_whitespace().next().unwrap().to_string();
    let dir = desc
        .split_whitespace()
        .find(|w| w.starts_with("/var/tmp/iolab-observe-"))
        .map(|w| w.trim_end_matches("/disk.img").to_string());
    (name, dir)
}

#[test]
fn quick_study_measures_both_devices_and_cleans_up() {
    // The studies load both CPUs and their numbers mean nothing side by side.
    let _one = support::serial::one_at_a_time();
    if !root() {
        let e = run(&ObserveStudyOpts { quick: true }).unwrap_err();
        assert!(e.to_string().contains("root"), "{e}");
        return;
    }
    if !ready(&[Need::Postgres]) {
        return;
    }
    let r = run(&ObserveStudyOpts { quick: true }).expect("study 004 runs as root");
    println!("{}", r.render_text());
    assert_eq!((r.id.as_str(), r.seed.as_str()), ("observe", "004"));
    assert!(r.skipped.is_empty(), "skipped: {:?}", r.skipped);
    assert!(
        r.duration_s < 45.0,
        "quick study took {:.1} s",
        r.duration_s
    );

    let t = &r.tables[0];
    let tps = t.columns.iter().position(|c| c == "TPS").unwrap();
    for dev in ["slow (HDD-like)", "fast (zram)"] {
        let row = t
            .rows
            .iter()
            .find(|row| matches!(&row[0], Cell::Text(x) if x == dev))
            .unwrap_or_else(|| panic!("no pgbench row for {dev}"));
        assert!(num(&row[tps]) > 0.0, "{dev}: TPS");
        let sc = r
            .tables
            .iter()
            .find(|t| t.title.starts_with("(iii)") && t.title.contains(dev))
            .unwrap_or_else(|| panic!("no syscall table for {dev}"));
        let calls = sc.columns.iter().position(|c| c == "calls").unwrap();
        let total: f64 = sc.rows.iter().map(|row| num(&row[calls])).sum();
        assert!(total > 0.0, "{dev}: no system calls counted");
    }
    // The throttle must make the loop device the slower one.
    let tps_of = |i: usize| num(&t.rows[i][tps]);
    assert!(
        tps_of(1) > tps_of(0),
        "zram ({:.0} TPS) should beat the throttled loop device ({:.0} TPS)",
        tps_of(1),
        tps_of(0)
    );
    assert!(
        r.comparisons
            .iter()
            .any(|c| c.what.starts_with("throughput")),
        "{:?}",
        r.comparisons
    );
    assert!(r.verdict.len() >= 4, "{:?}", r.verdict);

    // Nothing left behind.
    let (loopdev, dir) = device_and_dir(setup(&r, "slow (HDD-like) device"));
    let (zram, _) = device_and_dir(setup(&r, "fast (zram) device"));
    let dir = dir.expect("slow device names its temp dir");
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(
        !mounts.contains("iolab-observe-"),
        "a study mount is left:\n{mounts}"
    );
    assert!(!std::path::Path::new(&dir).exists(), "{dir} left behind");
    let losetup = std::process::Command::new("losetup")
        .arg("-a")
        .output()
        .unwrap();
    let losetup = String::from_utf8_lossy(&losetup.stdout);
    assert!(
        !losetup.contains(&dir),
        "{loopdev} still attached to a file in {dir}:\n{losetup}"
    );
    // The zram number may be reused by a concurrent test; ours held an ext4 at
    // our mount point, which is gone (checked above), so only absence is checked.
    assert!(
        !std::path::Path::new(&format!("/sys/block/{zram}")).exists()
            || std::fs::read_to_string(format!("/sys/block/{zram}/disksize"))
                .is_ok_and(|s| s.trim() != (512u64 << 20).to_string()),
        "{zram} left behind"
    );
    let cgroups: Vec<String> = std::fs::read_dir("/sys/fs/cgroup/blkio")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("iolab-observe-{}-", std::process::id())))
                .collect()
        })
        .unwrap_or_default();
    assert!(cgroups.is_empty(), "cgroups left: {cgroups:?}");
    let pg = std::process::Command::new("pgrep")
        .args(["-u", "postgres", "-a"])
        .output()
        .unwrap();
    let pg = String::from_utf8_lossy(&pg.stdout);
    assert!(
        !pg.contains("iolab-observe-") && !pg.lines().any(|l| l.contains("postgres:")),
        "postgres processes left:\n{pg}"
    );
}
