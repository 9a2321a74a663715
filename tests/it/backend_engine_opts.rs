//! The engine-specific options of io_uring, libaio and pvsync2 (fio's
//! `--enghelp`): each on the engines fio gives it, each doing what fio's
//! does (or, for `uncached` and `atomic`, what fio's was meant to do, said
//! in a note), checked by running them.

use crate::backend_fio::sparse;
use crate::run_common::{iolab_run, run_json};
use crate::support::needs::is_root;
use iolab::job::plan::parse_run_args;

fn job_err(extra: &[&str]) -> String {
    let mut a = vec!["--name=e".to_string(), "--filename=/tmp/x".into()];
    a.extend(extra.iter().map(|s| s.to_string()));
    match parse_run_args(&a, &|_| None) {
        Ok(_) => panic!("{extra:?} must be refused"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn each_option_on_its_engines() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--ioengine=psync", "--nowait=1"],
            "nowait is an option of ioengine=io_uring, libaio or pvsync2",
        ),
        (
            &["--ioengine=libaio", "--uncached=1"],
            "uncached is an option of ioengine=io_uring or pvsync2",
        ),
        (
            &["--ioengine=libaio", "--force_async=2"],
            "force_async is an option of ioengine=io_uring",
        ),
        (
            &["--ioengine=psync", "--nonvectored=0"],
            "nonvectored is an option of ioengine=io_uring",
        ),
        (&["--ioengine=io_uring", "--cmd_type=scsi"], "nvme"),
        (
            &["--ioengine=psync", "--thp=1"],
            "thp is an option of ioengine=mmap",
        ),
        (
            &["--ioengine=psync", "--atomic=1"],
            "use pvsync2, libaio or io_uring",
        ),
    ];
    for (args, want) in cases {
        let e = job_err(args);
        assert!(e.contains(want), "{args:?}: {e}");
    }
    // Accepted where fio accepts them.
    let ok = |extra: &[&str]| {
        let mut a = vec!["--name=e".to_string(), "--filename=/tmp/x".into()];
        a.extend(extra.iter().map(|s| s.to_string()));
        parse_run_args(&a, &|_| None).unwrap_or_else(|e| panic!("{extra:?}: {e}"))
    };
    let p = ok(&[
        "--ioengine=io_uring",
        "--cmd_type=nvme",
        "--nowait",
        "--force_async=4",
    ]);
    assert!(p.jobs[0].backend.flags.nowait);
    assert_eq!(p.jobs[0].backend.uring.force_async, 4);
    // atomic implies O_DIRECT, as in fio.
    assert!(ok(&["--ioengine=pvsync2", "--atomic=1"]).jobs[0].direct);
}

fn file_job(dir: &std::path::Path, extra: &[&str]) -> Vec<String> {
    let f = sparse(dir, "f", 1 << 20);
    let mut a = vec![
        "--name=o".to_string(),
        format!("--filename={f}"),
        "--size=1m".into(),
        "--bs=4k".into(),
    ];
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

fn ok_json(args: &[String]) -> serde_json::Value {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    run_json(&a)
}

#[test]
fn flags_reach_the_kernel_and_data_survives() {
    let d = tempfile::tempdir().unwrap();
    // READV/WRITEV with one iovec, checked by reading back (verify).
    for extra in [
        &["--ioengine=io_uring", "--nonvectored=0", "--iodepth=8"][..],
        &["--ioengine=io_uring", "--nonvectored=1", "--iodepth=8"][..],
        // RWF_DONTCACHE on buffered I/O (ext4, Linux 6.14 and later).
        &["--ioengine=pvsync2", "--uncached=1"][..],
        &["--ioengine=io_uring", "--uncached=1", "--iodepth=4"][..],
    ] {
        let mut a = vec!["--rw=write", "--verify=crc32c", "--do_verify=1"];
        a.extend_from_slice(extra);
        let j = ok_json(&file_job(d.path(), &a));
        assert_eq!(j["jobs"][0]["error"], 0, "{extra:?}");
        assert_eq!(j["jobs"][0]["write"]["total_ios"], 256, "{extra:?}");
    }
    // RWF_NOWAIT: direct reads of a laid-out file do not block on the page
    // cache, so they complete.
    for engine in ["io_uring", "libaio", "pvsync2"] {
        let a = [
            format!("--ioengine={engine}"),
            "--rw=randread".into(),
            "--direct=1".into(),
            "--nowait=1".into(),
        ];
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let j = ok_json(&file_job(d.path(), &a));
        assert_eq!(j["jobs"][0]["read"]["total_ios"], 256, "{engine}");
    }
}

#[test]
fn force_async_sends_every_nth_to_io_wq() {
    if !is_root() {
        crate::support::needs::skip(
            "force_async_sends_every_nth_to_io_wq: counting punts needs root (tracefs); run as root",
        );
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let j = ok_json(&file_job(
        d.path(),
        &[
            "--ioengine=io_uring",
            "--rw=randread",
            "--direct=1",
            "--force_async=2",
            "--count_punts=1",
        ],
    ));
    let b = &j["jobs"][0]["iolab"]["engine"]["backend_stats"];
    match b["punted"].as_u64() {
        // Every second request carries IOSQE_ASYNC, which always punts.
        Some(n) => assert!(n >= 128, "{b}"),
        None => crate::support::needs::skip(format_args!(
            "force_async_sends_every_nth_to_io_wq: punts not counted here ({b})"
        )),
    }
}

#[test]
fn sqthread_poll_cpu_pins_the_sq_thread() {
    let d = tempfile::tempdir().unwrap();
    let a = file_job(
        d.path(),
        &[
            "--ioengine=io_uring",
            "--rw=randread",
            "--sqthread_poll=1",
            "--sqthread_poll_cpu=0",
        ],
    );
    let (code, out, err) = iolab_run(&a);
    assert_eq!(code, 0, "{err}\n{out}");
}

#[test]
fn atomic_is_checked_against_the_target() {
    let d = tempfile::tempdir().unwrap();
    let a = file_job(
        d.path(),
        &["--ioengine=pvsync2", "--rw=write", "--atomic=1"],
    );
    let (code, out, err) = iolab_run(&a);
    let unit = {
        use std::os::fd::AsRawFd;
        let f = std::fs::File::open(d.path().join("f")).unwrap();
        iolab::device::atomic::write_unit(f.as_raw_fd()).unwrap()
    };
    match unit {
        // The target can: the writes run, atomically.
        Some((lo, hi)) if (lo..=hi).contains(&4096) => assert_eq!(code, 0, "{err}"),
        _ => {
            assert_ne!(code, 0, "{out}");
            assert!(
                err.contains("atomic=1") && err.contains("atomic write unit"),
                "{err}"
            );
        }
    }
}

#[test]
fn options_fio_ignores_without_their_switch_are_noted_not_refused() {
    // fio 3.33 sets IORING_SETUP_SQ_AFF only with sqthread_poll, and draws
    // RWF_HIPRI only with hipri: alone, each does nothing, and it says so.
    for (args, note) in [
        (
            ["--ioengine=io_uring", "--sqthread_poll_cpu=0"],
            "sqthread_poll_cpu is accepted, but has no effect",
        ),
        (
            ["--ioengine=pvsync2", "--hipri_percentage=50"],
            "hipri_percentage is accepted, but has no effect",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        let (code, out, err) = crate::run_common::iolab_run(&[
            "--name=n",
            &format!("--filename={}", file.display()),
            "--size=64k",
            "--rw=read",
            "--notes",
            args[0],
            args[1],
        ]);
        assert_eq!(code, 0, "{args:?}: {err}\n{out}");
        assert!(err.contains(note), "{args:?}: {err}");
        assert!(out.contains("READ: bw="), "{args:?} ran no I/O: {out}");
    }
}
