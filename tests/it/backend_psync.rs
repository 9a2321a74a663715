//! psync / pvsync2 backend on real files (ext4 on vda) and a hot-added zram.

use crate::backend_common;

use backend_common::*;
use iolab::device::psync::{Psync, PsyncFlags};
use iolab::device::{Queue, Queued, Wait};
use iolab::request::{Completion, Op};

fn done(q: &mut Psync, c: &iolab::request::IoCmd) -> Completion {
    match q.queue(c).unwrap() {
        Queued::Done(c) => c,
        other => panic!("psync must complete inline, got {other:?}"),
    }
}

fn round_trip(fd: i32, vectored: bool) {
    let mut q = Psync::new(fd, vectored, PsyncFlags::default()).unwrap();
    assert!(q.caps().sync);
    let mut w = AlignedBuf::new(4096);
    for blk in 0..8u64 {
        w.fill(blk);
        let c = done(&mut q, &cmd(Op::Write, blk * 4096, &w, blk as u32));
        assert_eq!((c.slot, c.result), (blk as u32, 4096));
    }
    let r = AlignedBuf::new(4096);
    for blk in (0..8u64).rev() {
        let c = done(&mut q, &cmd(Op::Read, blk * 4096, &r, 7));
        assert_eq!((c.slot, c.result), (7, 4096));
        assert!(r.check(blk), "block {blk} read back wrong data");
    }
    let c = done(&mut q, &cmd(Op::Fsync, 0, &r, 9));
    assert_eq!(c.result, 0);
    assert_eq!(q.stats().submit_calls, 17);
    assert_eq!(q.commit().unwrap(), 0);
    let mut out = [Completion::default(); 4];
    assert_eq!(q.reap(Wait::Sleep { min: 1 }, &mut out).unwrap(), 0);
}

#[test]
fn buffered_round_trip_psync_and_pvsync2() {
    let t = TempTarget::new(1 << 20, false);
    round_trip(t.fd(), false);
    round_trip(t.fd(), true);
    assert_eq!(
        Psync::new(t.fd(), true, PsyncFlags::default())
            .unwrap()
            .name(),
        "pvsync2"
    );
}

#[test]
fn direct_round_trip() {
    let t = TempTarget::new(1 << 20, true);
    round_trip(t.fd(), false);
    round_trip(t.fd(), true);
}

#[test]
fn short_read_at_eof_is_reported_as_is() {
    let t = TempTarget::new(4096 + 100, false);
    let mut q = Psync::new(t.fd(), false, PsyncFlags::default()).unwrap();
    let b = AlignedBuf::new(4096);
    assert_eq!(done(&mut q, &cmd(Op::Read, 4096, &b, 0)).result, 100);
    assert_eq!(done(&mut q, &cmd(Op::Read, 8192, &b, 0)).result, 0);
}

#[test]
fn errors_are_negative_errno() {
    let t = TempTarget::new(8192, false);
    let ro = open(&t.path, false, false);
    use std::os::fd::AsRawFd;
    let mut q = Psync::new(ro.as_raw_fd(), false, PsyncFlags::default()).unwrap();
    let b = AlignedBuf::new(4096);
    assert_eq!(
        done(&mut q, &cmd(Op::Write, 0, &b, 3)).result,
        -(libc::EBADF as i64)
    );
    let wo = std::fs::OpenOptions::new()
        .write(true)
        .open(&t.path)
        .unwrap();
    let mut q = Psync::new(wo.as_raw_fd(), true, PsyncFlags::default()).unwrap();
    assert_eq!(
        done(&mut q, &cmd(Op::Read, 0, &b, 3)).result,
        -(libc::EBADF as i64)
    );
}

#[test]
fn bad_setup_is_refused_with_reason() {
    let t = TempTarget::new(8192, true);
    let hipri = PsyncFlags {
        hipri: true,
        ..PsyncFlags::default()
    };
    let e = Psync::new(t.fd(), false, hipri).unwrap_err().to_string();
    assert!(e.contains("pvsync2"), "{e}");
    assert!(Psync::new(-1, false, PsyncFlags::default()).is_err());
}

/// pvsync2 with hipri=1 where nothing can be polled (a queue without poll
/// queues, or buffered I/O): fio runs it and the kernel completes each
/// RWF_HIPRI call by interrupt, so iolab runs it too.
#[test]
fn hipri_without_poll_queues_completes_by_interrupt() {
    let hipri = PsyncFlags {
        hipri: true,
        ..PsyncFlags::default()
    };
    for direct in [true, false] {
        let t = TempTarget::new(8192, direct);
        let mut q = Psync::new(t.fd(), true, hipri).unwrap();
        let mut b = AlignedBuf::new(4096);
        b.fill(7);
        assert_eq!(
            done(&mut q, &cmd(Op::Write, 4096, &b, 0)).result,
            4096,
            "direct={direct}"
        );
        let r = AlignedBuf::new(4096);
        assert_eq!(
            done(&mut q, &cmd(Op::Read, 4096, &r, 0)).result,
            4096,
            "direct={direct}"
        );
        assert_eq!(r.as_slice(), b.as_slice(), "direct={direct}");
    }
}

#[test]
fn nowait_flag_is_passed_to_the_kernel() {
    // A buffered read of a page not in the cache must not wait for the disk:
    // with RWF_NOWAIT it returns EAGAIN instead. Fresh blocks past a hole are
    // zero-filled without I/O, so write, drop the cache for this file, then read.
    let t = TempTarget::new(1 << 20, false);
    let mut w = Psync::new(t.fd(), false, PsyncFlags::default()).unwrap();
    let mut b = AlignedBuf::new(4096);
    b.fill(5);
    assert_eq!(done(&mut w, &cmd(Op::Write, 0, &b, 0)).result, 4096);
    assert_eq!(done(&mut w, &cmd(Op::Fsync, 0, &b, 0)).result, 0);
    let nowait = PsyncFlags {
        nowait: true,
        ..PsyncFlags::default()
    };
    let mut q = Psync::new(t.fd(), true, nowait).unwrap();
    // Dropping the page is advice the kernel may not take at once on a busy
    // machine (a folio still in another CPU's LRU batch, or read back by the
    // readahead a missed RWF_NOWAIT read starts): drop and try again until the
    // read finds the page gone. The flag is proven by the first EAGAIN; a read
    // that never gets one in many tries means RWF_NOWAIT did not reach the kernel.
    let mut results = Vec::new();
    for _ in 0..40 {
        // SAFETY: advisory call on our own fd.
        let rc = unsafe { libc::posix_fadvise(t.fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(rc, 0);
        let r = done(&mut q, &cmd(Op::Read, 0, &b, 0)).result;
        if r == -(libc::EAGAIN as i64) {
            break;
        }
        results.push(r);
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert!(
        results.len() < 40,
        "an uncached RWF_NOWAIT read never returned EAGAIN: {results:?}"
    );
    let mut q = Psync::new(t.fd(), true, PsyncFlags::default()).unwrap();
    assert_eq!(done(&mut q, &cmd(Op::Read, 0, &b, 0)).result, 4096);
    assert!(b.check(5));
}

#[test]
fn zram_round_trip() {
    let Some(z) = ZramGuard::new(64 << 20) else {
        return;
    };
    {
        let f = open(&z.path(), true, true);
        use std::os::fd::AsRawFd;
        round_trip(f.as_raw_fd(), true);
        // A block device takes O_DIRECT only at logical-block-aligned offsets.
        let mut q = Psync::new(f.as_raw_fd(), false, PsyncFlags::default()).unwrap();
        let b = AlignedBuf::new(4096);
        assert_eq!(
            done(&mut q, &cmd(Op::Read, 1, &b, 0)).result,
            -(libc::EINVAL as i64)
        );
    }
    drop(z);
}
