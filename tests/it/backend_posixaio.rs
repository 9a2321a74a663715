//! posixaio backend: requests go to glibc's helper threads and come back
//! through aio_suspend (interrupt) or aio_error (poll); trims wait for an
//! empty queue; the run says who does the I/O; and fio 3.33's posixaio
//! issues the same I/Os for the same job.

use crate::backend_common::*;
use crate::backend_fio::{fio_ios, iolab_ios, sparse};
use crate::run_common::{iolab_run, run_json};
use crate::support::needs::{Need, ready};
use iolab::completion::resolve;
use iolab::device::posixaio::Posixaio;
use iolab::device::{PerformedBy, Queue, Queued, Wait};
use iolab::job::CompletionModel;
use iolab::request::{Completion, Op};

#[test]
fn round_trip_through_glibc() {
    let t = TempTarget::new(1 << 20, false);
    let mut q = Posixaio::new(t.fd(), 8).unwrap();
    let caps = q.caps();
    assert!(caps.can_sleep && caps.can_peek && !caps.sync);
    // Interrupt by default; poll and the hybrids may be asked for; sync not.
    assert_eq!(
        resolve(None, caps, "posixaio").unwrap(),
        CompletionModel::Interrupt
    );
    assert!(resolve(Some(CompletionModel::Poll), caps, "posixaio").is_ok());
    assert!(resolve(Some(CompletionModel::Sync), caps, "posixaio").is_err());
    let mut bufs: Vec<AlignedBuf> = (0..8).map(|_| AlignedBuf::new(4096)).collect();
    for (i, b) in bufs.iter_mut().enumerate() {
        b.fill(i as u64 + 11);
        let c = cmd(Op::Write, i as u64 * 4096, b, i as u32);
        assert_eq!(q.queue(&c).unwrap(), Queued::Pending);
    }
    assert_eq!(q.commit().unwrap(), 8);
    // A trim waits for an empty queue.
    assert_eq!(
        q.queue(&cmd(Op::Trim, 0, &bufs[0], 0)).unwrap(),
        Queued::Busy
    );
    let mut out = [Completion::default(); 8];
    let mut got = 0;
    while got < 8 {
        got += q.reap(Wait::Sleep { min: 8 }, &mut out[got..]).unwrap();
    }
    assert!(out.iter().all(|c| c.result == 4096), "{out:?}");
    assert!(q.stats().wait_calls > 0 || got == 8);
    // Read back, polling with aio_error.
    let reads: Vec<AlignedBuf> = (0..8).map(|_| AlignedBuf::new(4096)).collect();
    for (i, b) in reads.iter().enumerate() {
        q.queue(&cmd(Op::Read, i as u64 * 4096, b, i as u32))
            .unwrap();
    }
    let mut got = 0;
    while got < 8 {
        got += q.reap(Wait::Peek, &mut out[got..]).unwrap();
    }
    for (i, b) in reads.iter().enumerate() {
        assert!(b.check(i as u64 + 11), "block {i} read back wrong");
    }
    // aio_fsync.
    q.queue(&cmd(Op::Fsync, 0, &reads[0], 0)).unwrap();
    assert_eq!(q.reap(Wait::Sleep { min: 1 }, &mut out).unwrap(), 1);
    assert_eq!(out[0].result, 0);
    assert_eq!(q.in_flight(), 0);
    assert_eq!(
        q.stats().performed_by,
        Some(PerformedBy::GlibcHelperThreads)
    );
}

#[test]
fn output_names_glibcs_helper_threads() {
    let d = tempfile::tempdir().unwrap();
    let f = sparse(d.path(), "p", 256 << 10);
    let file = format!("--filename={f}");
    let base = [
        "--name=p",
        file.as_str(),
        "--ioengine=posixaio",
        "--rw=randread",
        "--iodepth=8",
        "--size=256k",
    ];
    let (code, out, err) = iolab_run(&base);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("glibc's helper threads perform the I/O"),
        "{out}"
    );
    let j = run_json(&base);
    let job = &j["jobs"][0];
    assert_eq!(job["read"]["total_ios"], 64);
    assert_eq!(
        job["iolab"]["engine"]["backend_stats"]["performed_by"], "glibc_helper_threads",
        "{job}"
    );
    // Polling with aio_error works too.
    let mut poll = base.to_vec();
    poll.push("--completion=poll");
    let j = run_json(&poll);
    assert_eq!(j["jobs"][0]["read"]["total_ios"], 64);
}

#[test]
fn issues_what_fio_issues() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    for opts in [
        &["--rw=write", "--bs=4k", "--size=256k", "--fsync=16"][..],
        &["--rw=read", "--bs=16k", "--size=256k"][..],
    ] {
        let f = sparse(d.path(), "f", 256 << 10);
        let file = format!("--filename={f}");
        let all = [&["--ioengine=posixaio", file.as_str()][..], opts].concat();
        let fio = fio_ios(d.path(), &all);
        sparse(d.path(), "f", 256 << 10);
        let ours = iolab_ios(d.path(), &all);
        assert_eq!(ours, fio, "{opts:?}");
    }
}
