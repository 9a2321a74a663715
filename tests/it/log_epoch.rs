//! `log_unix_epoch`, `log_alternate_epoch` and `log_alternate_epoch_clock_id`:
//! the logs' times are milliseconds on the chosen clock, inside the wall (or
//! monotonic) time the run took, as fio 3.33 writes them; bad clock ids and an
//! id without an epoch option are refused before the run.

use std::path::Path;

use crate::run_common::iolab_run;

fn now_ms(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec pointer and a clock Linux always has.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

fn job(dir: &Path, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "--name=e",
        "--size=2m",
        "--rw=randread",
        "--bs=4k",
        "--ioengine=psync",
        "--output=/dev/null",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.push(format!("--filename={}", dir.join("f").display()));
    a.push(format!("--write_lat_log={}", dir.join("e").display()));
    a.push(format!("--write_iops_log={}", dir.join("e").display()));
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

fn times(p: &Path) -> Vec<u64> {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(|l| l.split(',').next().unwrap().trim().parse().unwrap())
        .collect()
}

/// Run with `extra`; every row time of the clat and iops logs must lie within
/// the run on `clock`.
fn check(extra: &[&str], clock: libc::clockid_t) {
    let dir = tempfile::tempdir().unwrap();
    let a = job(dir.path(), extra);
    let before = now_ms(clock);
    let (code, _, err) = iolab_run(&a);
    let after = now_ms(clock);
    assert_eq!(code, 0, "{extra:?}: {err}");
    for log in ["e_clat.1.log", "e_iops.1.log"] {
        let t = times(&dir.path().join(log));
        assert_eq!(t.len(), 512, "{extra:?} {log}");
        assert!(
            t.iter().all(|&x| before <= x && x <= after),
            "{extra:?} {log}: rows {}..{} outside the run {before}..{after}",
            t[0],
            t[t.len() - 1]
        );
        assert!(
            t.windows(2).all(|w| w[0] <= w[1]),
            "{extra:?} {log}: in order"
        );
    }
}

#[test]
fn unix_epoch_times_are_the_wall_clock_of_the_run() {
    check(&["--log_unix_epoch=1"], libc::CLOCK_REALTIME);
    check(
        &[
            "--log_alternate_epoch=1",
            "--log_alternate_epoch_clock_id=0",
        ],
        libc::CLOCK_REALTIME,
    );
}

#[test]
fn alternate_epoch_uses_the_chosen_clock() {
    // CLOCK_MONOTONIC's epoch is boot: far from the Unix one, so a wrong
    // clock cannot pass.
    check(
        &[
            "--log_alternate_epoch=1",
            "--log_alternate_epoch_clock_id=1",
        ],
        libc::CLOCK_MONOTONIC,
    );
    // fio 3.33: the id also applies to log_unix_epoch.
    check(
        &["--log_unix_epoch=1", "--log_alternate_epoch_clock_id=1"],
        libc::CLOCK_MONOTONIC,
    );
}

#[test]
fn without_an_epoch_times_start_at_zero() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = iolab_run(&job(dir.path(), &[]));
    assert_eq!(code, 0, "{err}");
    let t = times(&dir.path().join("e_clat.1.log"));
    assert!(t[t.len() - 1] < 60_000, "ms since the start: {t:?}");
    // The clock id alone chooses no epoch's clock: fio ignores it, and iolab
    // too, with a note (CLOCK_MONOTONIC's epoch would be days back).
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = iolab_run(&job(
        dir.path(),
        &["--log_alternate_epoch_clock_id=1", "--notes"],
    ));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("log_alternate_epoch_clock_id is accepted, but has no effect"),
        "{err}"
    );
    let t = times(&dir.path().join("e_clat.1.log"));
    assert!(t[t.len() - 1] < 60_000, "ms since the start: {t:?}");
}

#[test]
fn bad_clock_ids_are_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 2] = [
        (
            &[
                "--log_alternate_epoch=1",
                "--log_alternate_epoch_clock_id=10",
            ],
            "clock_gettime",
        ),
        (
            &[
                "--log_alternate_epoch=1",
                "--log_alternate_epoch_clock_id=-1",
            ],
            "log_alternate_epoch_clock_id",
        ),
    ];
    for (extra, says) in cases {
        let (code, _, err) = iolab_run(&job(dir.path(), extra));
        assert_ne!(code, 0, "{extra:?} ran");
        assert!(err.contains(says), "{extra:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing left behind"
    );
}
