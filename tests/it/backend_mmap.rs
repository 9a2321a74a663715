//! mmap backend: the copy goes through a shared mapping that the page cache
//! and pread/pwrite see too, msync on fsync, range checks; and against fio
//! 3.33's mmap engine, the same I/Os for the same job.

use std::os::unix::fs::FileExt;

use crate::backend_common::*;
use crate::backend_fio::{counts, fio_ios, iolab_ios, sparse};
use crate::run_common::iolab_run;
use crate::support::needs::{Need, ready};
use iolab::device::mmap::{Mmap, MmapOpts};
use iolab::device::{PerformedBy, Queue, Queued};
use iolab::request::{Completion, IoCmd, Op};

fn done(q: &mut Mmap, c: &IoCmd) -> Completion {
    match q.queue(c).unwrap() {
        Queued::Done(c) => c,
        other => panic!("mmap must complete inline, got {other:?}"),
    }
}

#[test]
fn copies_through_a_mapping_the_file_shares() {
    let t = TempTarget::new(1 << 20, false);
    let opts = MmapOpts {
        write: true,
        read: true,
        ..Default::default()
    };
    let mut q = Mmap::new(t.fd(), opts).unwrap();
    assert!(q.caps().sync);
    assert_eq!(q.mapped_len(0), 1 << 20);
    let mut w = AlignedBuf::new(4096);
    for blk in 0..8u64 {
        w.fill(blk + 3);
        let c = done(&mut q, &cmd(Op::Write, blk * 4096, &w, blk as u32));
        assert_eq!((c.slot, c.result), (blk as u32, 4096));
    }
    // msync of the whole mapping: one call, success.
    assert_eq!(done(&mut q, &cmd(Op::Fsync, 0, &w, 9)).result, 0);
    assert_eq!(q.stats().submit_calls, 1);
    // What the mapping wrote, pread sees (one page cache).
    let mut back = vec![0u8; 4096];
    for blk in 0..8u64 {
        t.file.read_exact_at(&mut back, blk * 4096).unwrap();
        let mut want = AlignedBuf::new(4096);
        want.fill(blk + 3);
        assert_eq!(back, want.as_slice(), "block {blk} after mmap write");
    }
    // And what pwrite wrote, the mapping reads.
    let mut p = AlignedBuf::new(4096);
    p.fill(77);
    t.file.write_all_at(p.as_slice(), 64 * 4096).unwrap();
    let r = AlignedBuf::new(4096);
    assert_eq!(done(&mut q, &cmd(Op::Read, 64 * 4096, &r, 1)).result, 4096);
    assert!(r.check(77));
    // Past the file's end is an error, not SIGBUS.
    let c = done(&mut q, &cmd(Op::Read, (1 << 20) - 2048, &r, 2));
    assert_eq!(c.result, -(libc::EINVAL as i64));
    assert_eq!(q.stats().performed_by, Some(PerformedBy::PageCopy));
}

#[test]
fn direct_means_msync_after_each_copy() {
    let t = TempTarget::new(256 << 10, false);
    let opts = MmapOpts {
        write: true,
        read: true,
        sync_each: true,
        ..Default::default()
    };
    let mut q = Mmap::new(t.fd(), opts).unwrap();
    let w = AlignedBuf::new(4096);
    for blk in 0..4u64 {
        assert_eq!(
            done(&mut q, &cmd(Op::Write, blk * 4096, &w, 0)).result,
            4096
        );
    }
    assert_eq!(q.stats().submit_calls, 4, "one msync per write");
}

#[test]
fn run_says_who_moves_the_data() {
    let d = tempfile::tempdir().unwrap();
    let f = sparse(d.path(), "m", 256 << 10);
    let (code, out, err) = iolab_run(&[
        "--name=m",
        &format!("--filename={f}"),
        "--ioengine=mmap",
        "--rw=randrw",
        "--size=256k",
        "--fsync=8",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("iolab backend   : mmap"), "{out}");
    assert!(out.contains("memcpy through a shared mapping"), "{out}");
}

#[test]
fn issues_what_fio_issues() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    for (opts, same_order) in [
        (&["--rw=write", "--bs=4k", "--size=256k"][..], true),
        (&["--rw=read", "--bs=8k", "--size=256k"][..], true),
        (&["--rw=randrw", "--bs=4k", "--size=256k"][..], false),
    ] {
        let f = sparse(d.path(), "f", 256 << 10);
        let file = format!("--filename={f}");
        let all = [&["--ioengine=mmap", file.as_str()][..], opts].concat();
        let fio = fio_ios(d.path(), &all);
        let f = sparse(d.path(), "f", 256 << 10);
        assert!(f.ends_with("/f"));
        let ours = iolab_ios(d.path(), &all);
        assert!(!ours.is_empty());
        if same_order {
            assert_eq!(ours, fio, "{opts:?}");
        } else {
            assert_eq!(counts(&ours).0 + counts(&ours).1, fio.len(), "{opts:?}");
        }
    }
}
