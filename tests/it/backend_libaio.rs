//! libaio backend on real files (ext4 on vda) and a hot-added zram: data round
//! trips, completions found in the ring in user space versus by io_getevents,
//! per-request errors, batching, priorities, and the completion models.

use crate::backend_common;

use std::time::{Duration, Instant};

use backend_common::*;
use iolab::completion::resolve;
use iolab::device::libaio::{Libaio, LibaioOpts};
use iolab::device::{Queue, Queued, Wait};
use iolab::job::CompletionModel;
use iolab::request::{Completion, Flush, IoCmd, Op};

fn opts(entries: u32) -> LibaioOpts {
    LibaioOpts {
        entries,
        ..LibaioOpts::default()
    }
}

fn queue(q: &mut Libaio, c: &IoCmd) {
    assert_eq!(q.queue(c).unwrap(), Queued::Pending);
}

/// Reap until `n` completions arrived, spinning on `Wait::Peek` (bounded).
fn peek_all(q: &mut Libaio, n: usize) -> Vec<Completion> {
    let mut got = Vec::new();
    let mut out = [Completion::default(); 64];
    let start = Instant::now();
    while got.len() < n {
        let k = q.reap(Wait::Peek, &mut out).unwrap();
        got.extend_from_slice(&out[..k]);
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "only {} of {n} completions after 20 s",
            got.len()
        );
    }
    assert_eq!(got.len(), n, "more completions than requests");
    got
}

/// Reap until `n` completions arrived, sleeping in io_getevents.
fn sleep_all(q: &mut Libaio, n: usize) -> Vec<Completion> {
    let mut got = Vec::new();
    let mut out = [Completion::default(); 64];
    while got.len() < n {
        let k = q
            .reap(
                Wait::Sleep {
                    min: (n - got.len()) as u32,
                },
                &mut out,
            )
            .unwrap();
        assert!(
            k > 0,
            "a sleeping reap with requests in flight returned none"
        );
        got.extend_from_slice(&out[..k]);
    }
    assert_eq!(got.len(), n);
    got
}

/// Write `blocks` distinct blocks in one commit, read them back in one commit
/// in reverse order, and check every buffer by its slot (completions may come in
/// any order). Returns the queue for its counters.
fn round_trip(fd: i32, o: LibaioOpts, blocks: u64, sleep: bool) -> Libaio {
    let mut q = Libaio::new(fd, &o).unwrap();
    let mut wbufs: Vec<AlignedBuf> = (0..blocks).map(|_| AlignedBuf::new(4096)).collect();
    for (i, b) in wbufs.iter_mut().enumerate() {
        b.fill(100 + i as u64);
        queue(&mut q, &cmd(Op::Write, i as u64 * 4096, b, i as u32));
    }
    assert_eq!(q.commit().unwrap(), blocks as u32);
    let got = if sleep {
        sleep_all(&mut q, blocks as usize)
    } else {
        peek_all(&mut q, blocks as usize)
    };
    let mut slots: Vec<u32> = got.iter().map(|c| c.slot).collect();
    slots.sort();
    assert_eq!(slots, (0..blocks as u32).collect::<Vec<_>>());
    assert!(got.iter().all(|c| c.result == 4096), "{got:?}");

    let rbufs: Vec<AlignedBuf> = (0..blocks).map(|_| AlignedBuf::new(4096)).collect();
    for (i, b) in rbufs.iter().enumerate().rev() {
        queue(&mut q, &cmd(Op::Read, i as u64 * 4096, b, i as u32));
    }
    assert_eq!(q.commit().unwrap(), blocks as u32);
    let got = if sleep {
        sleep_all(&mut q, blocks as usize)
    } else {
        peek_all(&mut q, blocks as usize)
    };
    for c in &got {
        assert_eq!(c.result, 4096, "{c:?}");
        assert!(
            rbufs[c.slot as usize].check(100 + c.slot as u64),
            "slot {} read back wrong data",
            c.slot
        );
    }
    let order: Vec<u32> = got.iter().map(|c| c.slot).collect();
    eprintln!("read completion order: {order:?}");
    assert_eq!(q.in_flight(), 0);
    q
}

#[test]
fn buffered_round_trip_completes_inside_io_submit() {
    let t = TempTarget::new(1 << 20, false);
    let q = round_trip(t.fd(), opts(8), 8, true);
    // Buffered AIO is synchronous: the kernel copied every block inside
    // io_submit, so all 16 events were in the ring when it returned, and none
    // needed io_getevents.
    assert_eq!(q.completed_in_submit(), Some(16));
    assert_eq!(q.stats().completed_in_submit, 16);
    assert_eq!(q.reap_counts().ring_events, 16);
    assert_eq!(q.reap_counts().getevents_calls, 0);
    assert_eq!(q.stats().submit_calls, 2);
}

#[test]
fn direct_round_trip_qd16_poll_reads_the_ring_without_syscalls() {
    let t = TempTarget::new(1 << 20, true);
    let q = round_trip(t.fd(), opts(16), 16, false);
    assert!(
        q.reaps_in_user_space(),
        "the AIO ring's layout was not recognised"
    );
    let c = q.reap_counts();
    assert_eq!(c.ring_events, 32, "{c:?}");
    assert_eq!((c.syscall_events, c.getevents_calls), (0, 0), "{c:?}");
    assert_eq!(q.stats().wait_calls, 0);
}

#[test]
fn direct_round_trip_sleeping() {
    let t = TempTarget::new(1 << 20, true);
    let q = round_trip(t.fd(), opts(16), 16, true);
    let c = q.reap_counts();
    assert_eq!(c.ring_events + c.syscall_events, 32, "{c:?}");
}

#[test]
fn without_userspace_reap_every_reap_is_io_getevents() {
    let t = TempTarget::new(1 << 20, true);
    let o = LibaioOpts {
        userspace_reap: false,
        ..opts(8)
    };
    let q = round_trip(t.fd(), o, 8, false);
    assert!(!q.reaps_in_user_space());
    assert_eq!(q.completed_in_submit(), None);
    let c = q.reap_counts();
    assert_eq!((c.ring_events, c.syscall_events), (0, 16), "{c:?}");
    assert!(c.getevents_calls >= 2, "{c:?}");
    assert_eq!(q.stats().wait_calls, c.getevents_calls);
}

#[test]
fn zram_direct_round_trip() {
    // ZramGuard::new reports the skip.
    let Some(z) = ZramGuard::new(64 << 20) else {
        return;
    };
    let f = open(&z.path(), true, true);
    use std::os::fd::AsRawFd;
    round_trip(f.as_raw_fd(), opts(8), 8, true);
    round_trip(f.as_raw_fd(), opts(8), 8, false);
}

#[test]
fn fsync_and_fdatasync_go_through_aio() {
    let t = TempTarget::new(1 << 20, false);
    for flush in [Flush::Full, Flush::Data] {
        let mut q = Libaio::new(t.fd(), &opts(2)).unwrap();
        let mut b = AlignedBuf::new(4096);
        b.fill(1);
        queue(&mut q, &cmd(Op::Write, 0, &b, 0));
        let sync = cmd(Op::Fsync, 0, &b, 1).with_flush(flush);
        queue(&mut q, &sync);
        assert_eq!(q.commit().unwrap(), 2);
        let mut got = sleep_all(&mut q, 2);
        got.sort_by_key(|c| c.slot);
        assert_eq!((got[0].result, got[1].result), (4096, 0), "{flush:?}");
    }
}

#[test]
fn errors_are_per_request() {
    let t = TempTarget::new(8192 + 100, true);
    // A write on a read-only descriptor: io_submit refuses that iocb with EBADF;
    // the reads queued around it still run.
    let ro = open(&t.path, true, false);
    use std::os::fd::AsRawFd;
    let mut q = Libaio::new(ro.as_raw_fd(), &opts(4)).unwrap();
    let b: Vec<AlignedBuf> = (0..3).map(|_| AlignedBuf::new(4096)).collect();
    queue(&mut q, &cmd(Op::Read, 0, &b[0], 0));
    queue(&mut q, &cmd(Op::Write, 4096, &b[1], 1));
    queue(&mut q, &cmd(Op::Read, 4096, &b[2], 2));
    assert_eq!(
        q.commit().unwrap(),
        2,
        "two reads accepted, the write refused"
    );
    let mut got = sleep_all(&mut q, 3);
    got.sort_by_key(|c| c.slot);
    let results: Vec<i64> = got.iter().map(|c| c.result).collect();
    assert_eq!(results, vec![4096, -(libc::EBADF as i64), 4096]);
    assert_eq!(q.reap_counts().submit_errors, 1);

    // A read at end of file moves nothing, and one across it is short: results
    // as the kernel gives them. (ext4 here serves a misaligned O_DIRECT read
    // through the page cache instead of failing it: see the zram test.)
    let rw = open(&t.path, true, true);
    let mut q = Libaio::new(rw.as_raw_fd(), &opts(4)).unwrap();
    let eof = AlignedBuf::new(4096);
    queue(&mut q, &cmd(Op::Read, 12288, &eof, 1));
    let across = AlignedBuf::new(4096);
    queue(&mut q, &cmd(Op::Read, 8192, &across, 2));
    q.commit().unwrap();
    let mut got = sleep_all(&mut q, 2);
    got.sort_by_key(|c| c.slot);
    assert_eq!((got[0].result, got[1].result), (0, 100), "{got:?}");
}

#[test]
fn device_errors_arrive_in_the_event() {
    // ZramGuard::new reports the skip.
    let Some(z) = ZramGuard::new(16 << 20) else {
        return;
    };
    // zram's logical block is 4 KiB: an O_DIRECT read at offset 512 is refused
    // by the block layer after io_submit accepted the iocb, so the error comes
    // back in the completion event, beside a good read of the same batch.
    let f = open(&z.path(), true, true);
    use std::os::fd::AsRawFd;
    let mut q = Libaio::new(f.as_raw_fd(), &opts(2)).unwrap();
    let a = AlignedBuf::new(4096);
    let b = AlignedBuf::new(4096);
    queue(&mut q, &cmd(Op::Read, 512, &a, 0));
    queue(&mut q, &cmd(Op::Read, 4096, &b, 1));
    assert_eq!(q.commit().unwrap(), 2);
    let mut got = peek_all(&mut q, 2);
    got.sort_by_key(|c| c.slot);
    assert_eq!(got[0].result, -(libc::EINVAL as i64), "{got:?}");
    assert_eq!(got[1].result, 4096, "{got:?}");
    assert_eq!(q.reap_counts().submit_errors, 0);
    assert_eq!(q.reap_counts().ring_events, 2);
}

#[test]
fn ioprio_travels_with_each_request() {
    let t = TempTarget::new(1 << 20, true);
    let mut q = Libaio::new(t.fd(), &opts(2)).unwrap();
    let b = AlignedBuf::new(4096);
    let mut good = cmd(Op::Read, 0, &b, 0);
    good.ioprio = (2 << 13) | 3; // best-effort, level 3
    let b2 = AlignedBuf::new(4096);
    let mut bad = cmd(Op::Read, 4096, &b2, 1);
    bad.ioprio = 7 << 13; // no such class: the kernel must see it to refuse it
    queue(&mut q, &good);
    queue(&mut q, &bad);
    q.commit().unwrap();
    let mut got = sleep_all(&mut q, 2);
    got.sort_by_key(|c| c.slot);
    assert_eq!(got[0].result, 4096, "{got:?}");
    assert_eq!(got[1].result, -(libc::EINVAL as i64), "{got:?}");
}

#[test]
fn batch_submit_and_complete_max_bound_each_call() {
    let t = TempTarget::new(1 << 20, true);
    let o = LibaioOpts {
        batch_submit: 2,
        batch_complete_max: 2,
        ..opts(6)
    };
    let mut q = Libaio::new(t.fd(), &o).unwrap();
    let bufs: Vec<AlignedBuf> = (0..6).map(|_| AlignedBuf::new(4096)).collect();
    for (i, b) in bufs.iter().enumerate() {
        queue(&mut q, &cmd(Op::Read, i as u64 * 4096, b, i as u32));
    }
    // Full: the seventh request must wait for a reap.
    let extra = AlignedBuf::new(4096);
    assert_eq!(q.queue(&cmd(Op::Read, 0, &extra, 6)).unwrap(), Queued::Busy);
    assert_eq!(q.commit().unwrap(), 6);
    assert_eq!(q.stats().submit_calls, 3, "6 iocbs in batches of 2");
    let mut out = [Completion::default(); 16];
    let mut total = 0;
    while total < 6 {
        let k = q.reap(Wait::Sleep { min: 6 }, &mut out).unwrap();
        assert!((1..=2).contains(&k), "a reap returned {k}, more than 2");
        total += k;
    }
}

#[test]
fn sleep_until_returns_by_the_deadline() {
    // Nothing can complete (nothing was submitted): the wait must still end.
    let t = TempTarget::new(1 << 20, true);
    let mut q = Libaio::new(t.fd(), &opts(2)).unwrap();
    let mut out = [Completion::default(); 4];
    let deadline = iolab::measure::clock::now_ns() + 20_000_000;
    assert_eq!(q.sleep_until(1, deadline, &mut out).unwrap(), 0);
    // With one read in flight it comes back with it (long before a far deadline).
    let b = AlignedBuf::new(4096);
    queue(&mut q, &cmd(Op::Read, 0, &b, 0));
    q.commit().unwrap();
    let far = iolab::measure::clock::now_ns() + 20_000_000_000;
    let start = Instant::now();
    let mut n = 0;
    while n == 0 {
        n = q.sleep_until(1, far, &mut out).unwrap();
    }
    assert_eq!((n, out[0].result), (1, 4096));
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn completion_models() {
    let t = TempTarget::new(1 << 20, true);
    let q = Libaio::new(t.fd(), &opts(4)).unwrap();
    let caps = q.caps();
    for m in [
        CompletionModel::Interrupt,
        CompletionModel::Poll,
        CompletionModel::Hybrid,
        CompletionModel::Adaptive,
    ] {
        assert_eq!(resolve(Some(m), caps, q.name()), Ok(m));
    }
    assert_eq!(
        resolve(None, caps, q.name()),
        Ok(CompletionModel::Interrupt)
    );
    let e = resolve(Some(CompletionModel::Sync), caps, q.name())
        .unwrap_err()
        .to_string();
    assert!(e.contains("libaio") && e.contains("psync"), "{e}");
}

#[test]
fn perform_does_the_io_synchronously() {
    let t = TempTarget::new(1 << 20, true);
    let mut q = Libaio::new(t.fd(), &opts(1)).unwrap();
    assert!(q.caps().inline);
    let mut w = AlignedBuf::new(4096);
    w.fill(9);
    assert_eq!(
        q.perform(&cmd(Op::Write, 8192, &w, 3)).unwrap().result,
        4096
    );
    let r = AlignedBuf::new(4096);
    let c = q.perform(&cmd(Op::Read, 8192, &r, 4)).unwrap();
    assert_eq!((c.slot, c.result), (4, 4096));
    assert!(r.check(9));
}

#[test]
fn bad_setup_is_refused_with_reason() {
    let t = TempTarget::new(8192, true);
    let e = Libaio::new(t.fd(), &opts(0)).err().unwrap().to_string();
    assert!(e.contains("iodepth"), "{e}");
    assert!(Libaio::new(-1, &opts(1)).is_err());
}
