//! sync / vsync / pvsync backends on real files (ext4 on vda) and a hot-added
//! zram: round trips, when `sync` seeks, errors, and the completion models.

use crate::backend_common;

use std::os::fd::AsRawFd;

use backend_common::*;
use iolab::completion::resolve;
use iolab::device::sync::{SyncIo, SyncKind};
use iolab::device::{Queue, Queued, Wait};
use iolab::job::CompletionModel;
use iolab::request::{Completion, IoCmd, Op};

const KINDS: [SyncKind; 3] = [SyncKind::Lseek, SyncKind::LseekVectored, SyncKind::Vectored];

fn done(q: &mut SyncIo, c: &IoCmd) -> Completion {
    match q.queue(c).unwrap() {
        Queued::Done(c) => c,
        other => panic!("{} must complete inline, got {other:?}", q.name()),
    }
}

/// Sequential writes of 8 blocks, then reads in reverse order, checked by data.
fn round_trip(fd: i32, kind: SyncKind) -> SyncIo {
    let mut q = SyncIo::new(fd, kind).unwrap();
    assert!(q.caps().sync);
    assert_eq!(q.name(), kind.fio_name());
    let mut w = AlignedBuf::new(4096);
    for blk in 0..8u64 {
        w.fill(blk + 50);
        let c = done(&mut q, &cmd(Op::Write, blk * 4096, &w, blk as u32));
        assert_eq!((c.slot, c.result), (blk as u32, 4096));
    }
    let r = AlignedBuf::new(4096);
    for blk in (0..8u64).rev() {
        let c = done(&mut q, &cmd(Op::Read, blk * 4096, &r, 7));
        assert_eq!((c.slot, c.result), (7, 4096));
        assert!(
            r.check(blk + 50),
            "{kind:?}: block {blk} read back wrong data"
        );
    }
    assert_eq!(done(&mut q, &cmd(Op::Fsync, 0, &r, 9)).result, 0);
    assert_eq!(q.commit().unwrap(), 0);
    let mut out = [Completion::default(); 4];
    assert_eq!(q.reap(Wait::Sleep { min: 1 }, &mut out).unwrap(), 0);
    // Seeks: one before the sequential writes, one per backwards read (the first
    // read at block 7 follows the write that ended at block 8: it seeks too).
    let seeks = match kind {
        SyncKind::Vectored => 0,
        _ => 1 + 8,
    };
    assert_eq!(q.seeks(), seeks, "{kind:?}");
    assert_eq!(q.stats().submit_calls, 17 + seeks, "{kind:?}");
    q
}

#[test]
fn buffered_round_trips() {
    for kind in KINDS {
        let t = TempTarget::new(1 << 20, false);
        round_trip(t.fd(), kind);
    }
}

#[test]
fn direct_round_trips() {
    for kind in KINDS {
        let t = TempTarget::new(1 << 20, true);
        round_trip(t.fd(), kind);
    }
}

#[test]
fn zram_direct_round_trips() {
    // ZramGuard::new reports the skip.
    let Some(z) = ZramGuard::new(16 << 20) else {
        return;
    };
    let f = open(&z.path(), true, true);
    for kind in KINDS {
        round_trip(f.as_raw_fd(), kind);
    }
}

#[test]
fn sync_seeks_only_when_the_position_is_wrong() {
    let t = TempTarget::new(1 << 20, false);
    let mut q = SyncIo::new(t.fd(), SyncKind::Lseek).unwrap();
    let b = AlignedBuf::new(4096);
    for blk in 0..16u64 {
        assert_eq!(done(&mut q, &cmd(Op::Read, blk * 4096, &b, 0)).result, 4096);
    }
    assert_eq!(q.seeks(), 1, "a sequential reader seeks once");
    // The kernel's position is where the queue believes it is.
    // SAFETY: lseek(SEEK_CUR, 0) only reads the position.
    let pos = unsafe { libc::lseek(t.fd(), 0, libc::SEEK_CUR) };
    assert_eq!(pos, 16 * 4096);
}

#[test]
fn short_read_and_errors() {
    let t = TempTarget::new(4096 + 100, false);
    for kind in KINDS {
        let mut q = SyncIo::new(t.fd(), kind).unwrap();
        let b = AlignedBuf::new(4096);
        assert_eq!(done(&mut q, &cmd(Op::Read, 4096, &b, 0)).result, 100);
        assert_eq!(done(&mut q, &cmd(Op::Read, 8192, &b, 0)).result, 0);
    }
    let ro = open(&t.path, false, false);
    for kind in KINDS {
        let mut q = SyncIo::new(ro.as_raw_fd(), kind).unwrap();
        let b = AlignedBuf::new(4096);
        assert_eq!(
            done(&mut q, &cmd(Op::Write, 0, &b, 3)).result,
            -(libc::EBADF as i64),
            "{kind:?}"
        );
        // After an error the position is not trusted: the next request seeks.
        let before = q.seeks();
        assert_eq!(done(&mut q, &cmd(Op::Read, 0, &b, 4)).result, 4096);
        if kind != SyncKind::Vectored {
            assert_eq!(q.seeks(), before + 1, "{kind:?}");
        }
    }
    assert!(SyncIo::new(-1, SyncKind::Lseek).is_err());
}

#[test]
fn only_the_sync_completion_model() {
    let t = TempTarget::new(8192, false);
    for kind in KINDS {
        let q = SyncIo::new(t.fd(), kind).unwrap();
        assert_eq!(resolve(None, q.caps(), q.name()), Ok(CompletionModel::Sync));
        for m in [
            CompletionModel::Interrupt,
            CompletionModel::Poll,
            CompletionModel::Hybrid,
            CompletionModel::Adaptive,
        ] {
            let e = resolve(Some(m), q.caps(), q.name())
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(kind.fio_name())
                    && e.contains("completion=sync")
                    && e.contains("libaio"),
                "{e}"
            );
        }
    }
}
