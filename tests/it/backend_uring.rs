//! io_uring backend on real files (ext4 on vda) and a hot-added zram.

use crate::support;

use crate::backend_common;

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use backend_common::*;
use iolab::device::uring::options::UringOptions;
use iolab::device::uring::{PuntCount, Uring, UringOpts};
use iolab::device::{Queue, Queued, Wait};
use iolab::request::{Completion, IoCmd, Op};
use support::needs::is_root;

/// A ring of `entries` that counts punts (`count_punts=1`).
fn opts(entries: u32) -> UringOpts<'static> {
    UringOpts {
        entries,
        options: UringOptions {
            count_punts: true,
            ..UringOptions::default()
        },
        ..UringOpts::default()
    }
}

/// Queue `cmds`, commit, and sleep until all are reaped; completions by slot.
fn run_all(q: &mut Uring, cmds: &[IoCmd]) -> Vec<Completion> {
    for c in cmds {
        assert_eq!(q.queue(c).unwrap(), Queued::Pending);
    }
    assert_eq!(q.commit().unwrap() as usize, cmds.len());
    let mut got = Vec::new();
    let mut out = [Completion::default(); 64];
    while got.len() < cmds.len() {
        let n = q.reap(Wait::Sleep { min: 1 }, &mut out).unwrap();
        got.extend_from_slice(&out[..n]);
    }
    got.sort_by_key(|c| c.slot);
    got
}

fn round_trip(q: &mut Uring, blocks: u64) {
    let mut bufs: Vec<AlignedBuf> = (0..blocks).map(|_| AlignedBuf::new(4096)).collect();
    round_trip_in(q, &mut bufs);
}

/// Write one distinct block per buffer, read them back crosswise, compare.
fn round_trip_in(q: &mut Uring, bufs: &mut [AlignedBuf]) {
    let blocks = bufs.len() as u64;
    for (i, b) in bufs.iter_mut().enumerate() {
        b.fill(i as u64 + 100);
    }
    let writes: Vec<IoCmd> = bufs
        .iter()
        .enumerate()
        .map(|(i, b)| cmd(Op::Write, i as u64 * 4096, b, i as u32))
        .collect();
    for (i, c) in run_all(q, &writes).iter().enumerate() {
        assert_eq!((c.slot, c.result), (i as u32, 4096));
    }
    for b in bufs.iter_mut() {
        b.as_mut_slice().fill(0);
    }
    // Read back in reverse order so slot, offset and buffer must all match up.
    let reads: Vec<IoCmd> = bufs
        .iter()
        .enumerate()
        .map(|(i, b)| cmd(Op::Read, (blocks - 1 - i as u64) * 4096, b, i as u32))
        .collect();
    for c in run_all(q, &reads) {
        assert_eq!(c.result, 4096);
        let i = c.slot as u64;
        assert!(
            bufs[i as usize].check(blocks - 1 - i + 100),
            "slot {i}: wrong data"
        );
    }
    assert_eq!(q.in_flight(), 0);
}

#[test]
fn buffered_and_direct_round_trip() {
    for direct in [false, true] {
        let t = TempTarget::new(1 << 20, direct);
        let mut q = Uring::new(t.fd(), &opts(1)).unwrap();
        round_trip(&mut q, 1);
        round_trip(&mut q, 1);
        let fs = run_all(&mut q, &[cmd(Op::Fsync, 0, &AlignedBuf::new(4096), 0)]);
        assert_eq!(fs[0].result, 0);
    }
}

#[test]
fn many_in_flight_and_busy_at_the_limit() {
    let t = TempTarget::new(4 << 20, true);
    let mut q = Uring::new(t.fd(), &opts(32)).unwrap();
    round_trip(&mut q, 32);
    let bufs: Vec<AlignedBuf> = (0..33).map(|_| AlignedBuf::new(4096)).collect();
    for (i, b) in bufs.iter().take(32).enumerate() {
        assert_eq!(
            q.queue(&cmd(Op::Read, 0, b, i as u32)).unwrap(),
            Queued::Pending
        );
    }
    assert_eq!(
        q.queue(&cmd(Op::Read, 0, &bufs[32], 32)).unwrap(),
        Queued::Busy
    );
    q.commit().unwrap();
    let mut out = [Completion::default(); 8];
    let mut seen = 0;
    while seen < 32 {
        // `out` bounds each call, so a small array drains a deep queue in turns.
        let n = q.reap(Wait::Sleep { min: 8 }, &mut out).unwrap();
        assert!(n <= 8);
        seen += n;
    }
    assert_eq!(q.in_flight(), 0);
}

#[test]
fn cq_spinning_needs_no_wait_calls() {
    let t = TempTarget::new(1 << 20, true);
    let mut q = Uring::new(t.fd(), &opts(4)).unwrap();
    let mut out = [Completion::default(); 4];
    // Nothing in flight: neither wait may block.
    let t0 = Instant::now();
    assert_eq!(q.reap(Wait::Peek, &mut out).unwrap(), 0);
    assert_eq!(q.reap(Wait::Sleep { min: 1 }, &mut out).unwrap(), 0);
    // A wait that blocked with nothing in flight would never return; the
    // bound only catches that, not speed (a busy machine may preempt us).
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert_eq!(q.stats().wait_calls, 0);

    // Written data, so reads reach the disk (a hole reads as zeros inline).
    let mut b = AlignedBuf::new(4096);
    b.fill(1);
    assert_eq!(run_all(&mut q, &[cmd(Op::Write, 0, &b, 0)])[0].result, 4096);
    let base = q.stats();
    for round in 0..20 {
        q.queue(&cmd(Op::Read, 0, &b, round)).unwrap();
        q.commit().unwrap();
        let mut spins = 0u64;
        let n = loop {
            let n = q.reap(Wait::Peek, &mut out).unwrap();
            if n > 0 {
                break n;
            }
            spins += 1;
            assert!(
                spins < 1_000_000_000,
                "completion never showed up in the CQ ring"
            );
        };
        assert_eq!((n, out[0].slot, out[0].result), (1, round, 4096));
    }
    // CQ spinning never sleeps. Without deferred task work the kernel posts
    // each completion itself (interrupting the spinner), so no wait call is
    // made at all; with it (Linux 6.1+), a spin that finds the kernel's
    // IORING_SQ_TASKRUN flag makes one non-blocking enter to post it: at most
    // one per completion.
    let waits = q.stats().wait_calls - base.wait_calls;
    if q.deferred() {
        assert!(waits <= 20, "{waits} wait calls for 20 completions");
    } else {
        assert_eq!(waits, 0);
    }
    assert_eq!(q.stats().submit_calls, base.submit_calls + 20);

    for round in 0..5 {
        q.queue(&cmd(Op::Read, 0, &b, round)).unwrap();
        q.commit().unwrap();
        let n = q.reap(Wait::Sleep { min: 1 }, &mut out).unwrap();
        assert_eq!(
            (n, out[0].result),
            (1, 4096),
            "Sleep returned without its completion"
        );
    }
}

/// A read from an empty pipe completes only when someone writes: a request whose
/// completion time the test controls.
#[test]
fn peek_returns_at_once_and_sleep_sleeps_until_the_completion() {
    let mut fds = [0; 2];
    // SAFETY: valid out-array for two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (rd, wr) = (fds[0], fds[1]);
    let mut q = Uring::new(rd, &opts(2)).unwrap();
    let b = AlignedBuf::new(4096);
    let mut c = cmd(Op::Read, 0, &b, 42);
    c.len = 3;
    q.queue(&c).unwrap();
    q.commit().unwrap();
    let mut out = [Completion::default(); 2];
    let t0 = Instant::now();
    for _ in 0..1000 {
        assert_eq!(q.reap(Wait::Peek, &mut out).unwrap(), 0);
    }
    // No wait call is the proof that Peek never blocks; the wall-clock bound
    // is far above any preemption and below the never-ending block it catches.
    assert!(t0.elapsed() < Duration::from_secs(10), "Peek blocked");
    assert_eq!(q.stats().wait_calls, 0);
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        // SAFETY: writing 3 bytes from a static buffer to our pipe.
        assert_eq!(unsafe { libc::write(wr, b"abc".as_ptr().cast(), 3) }, 3);
        wr
    });
    let t0 = Instant::now();
    let n = q.reap(Wait::Sleep { min: 1 }, &mut out).unwrap();
    let slept = t0.elapsed();
    assert_eq!((n, out[0].slot, out[0].result), (1, 42, 3));
    assert_eq!(&b.as_slice()[..3], b"abc");
    assert!(
        slept >= Duration::from_millis(20),
        "Sleep returned after {slept:?}"
    );
    assert_eq!(q.stats().wait_calls, 1);
    let wr = writer.join().unwrap();
    drop(q);
    // SAFETY: closing the pipe we opened.
    unsafe {
        libc::close(rd);
        libc::close(wr);
    }
}

#[test]
fn registered_files_and_fixed_buffers() {
    let t = TempTarget::new(1 << 20, true);
    let mut bufs: Vec<AlignedBuf> = (0..8).map(|_| AlignedBuf::new(4096)).collect();
    let table: Vec<(*mut u8, usize)> = bufs.iter().map(|b| (b.ptr(), b.len())).collect();
    for (files, fixed) in [(true, false), (false, true), (true, true)] {
        let o = UringOpts {
            entries: 8,
            options: UringOptions {
                registerfiles: files,
                fixedbufs: fixed,
                ..UringOptions::default()
            },
            bufs: Some(&table[..]),
            ..UringOpts::default()
        };
        let mut q = Uring::new(t.fd(), &o).unwrap();
        round_trip_in(&mut q, &mut bufs);
    }
    // A fixed-buffer request outside its registered buffer is refused per request.
    let o = UringOpts {
        entries: 2,
        options: UringOptions {
            fixedbufs: true,
            ..UringOptions::default()
        },
        bufs: Some(&table[..1]),
        ..UringOpts::default()
    };
    let mut q = Uring::new(t.fd(), &o).unwrap();
    let mut c = cmd(Op::Read, 0, &bufs[1], 0);
    c.buf_index = 0;
    assert_eq!(run_all(&mut q, &[c])[0].result, -(libc::EFAULT as i64));
}

#[test]
fn sqpoll_submits_without_system_calls() {
    let t = TempTarget::new(1 << 20, true);
    let o = UringOpts {
        entries: 8,
        options: UringOptions {
            sqthread_poll: true,
            ..UringOptions::default()
        },
        sq_thread_idle_ms: 2000,
        ..UringOpts::default()
    };
    let mut q = match Uring::new(t.fd(), &o) {
        Ok(q) => q,
        Err(e) => panic!("SQPOLL setup failed (root on 6.18 should allow it): {e}"),
    };
    round_trip(&mut q, 8);
    let base = q.stats();
    // The SQ thread is awake (idle 2 s), so these go out with no io_uring_enter.
    let b = AlignedBuf::new(4096);
    let mut out = [Completion::default(); 1];
    for i in 0..50 {
        q.queue(&cmd(Op::Read, 0, &b, i)).unwrap();
        q.commit().unwrap();
        while q.reap(Wait::Peek, &mut out).unwrap() == 0 {}
        assert_eq!(out[0].result, 4096);
    }
    let s = q.stats();
    assert!(
        s.submit_calls - base.submit_calls <= 2,
        "SQPOLL entered the kernel to submit: {s:?}"
    );
    assert_eq!(s.wait_calls, base.wait_calls);
}

#[test]
fn sqpoll_pinned_to_a_missing_cpu_is_refused() {
    let t = TempTarget::new(1 << 20, true);
    let o = UringOpts {
        options: UringOptions {
            sqthread_poll: true,
            sqthread_poll_cpu: Some(4095),
            ..UringOptions::default()
        },
        ..UringOpts::default()
    };
    let e = Uring::new(t.fd(), &o)
        .err()
        .expect("CPU 4095 cannot exist here")
        .to_string();
    assert!(e.contains("SQPOLL") && e.contains("CPU"), "{e}");
}

#[test]
fn iopoll_on_vda_names_io_poll() {
    let t = TempTarget::new(1 << 20, true);
    let o = UringOpts {
        iopoll: true,
        ..opts(4)
    };
    let e = Uring::new(t.fd(), &o)
        .err()
        .expect("vda has no poll queues")
        .to_string();
    assert!(e.contains("/queue/io_poll = 0"), "{e}");
    assert!(e.contains("poll_queues"), "{e}");
    let buffered = TempTarget::new(1 << 20, false);
    let e = Uring::new(buffered.fd(), &o).err().unwrap().to_string();
    assert!(e.contains("O_DIRECT"), "{e}");
}

#[test]
fn per_request_errors_come_back_as_negative_errno() {
    let t = TempTarget::new(8192, false);
    let ro = open(&t.path, false, false);
    let mut q = Uring::new(ro.as_raw_fd(), &opts(2)).unwrap();
    let b = AlignedBuf::new(4096);
    let r = run_all(
        &mut q,
        &[cmd(Op::Write, 0, &b, 1), cmd(Op::Read, 4096, &b, 2)],
    );
    assert_eq!(r[0].result, -(libc::EBADF as i64));
    assert_eq!(r[1].result, 4096);
    // Short read at end of file.
    let r = run_all(&mut q, &[cmd(Op::Read, 6000, &b, 3)]);
    assert_eq!(r[0].result, 8192 - 6000);
}

#[test]
fn zram_round_trip_is_punted_to_io_wq() {
    let Some(z) = ZramGuard::new(64 << 20) else {
        return;
    };
    {
        let f = open(&z.path(), true, true);
        let mut q = Uring::new(f.as_raw_fd(), &opts(8)).unwrap();
        round_trip(&mut q, 8);
        let punts = q.punt_count();
        eprintln!(
            "zram: punt count {punts:?}, io-wq workers alive {:?}",
            q.io_wq_workers()
        );
        match punts {
            // zram is bio-based without NOWAIT: every read and write goes to io-wq.
            PuntCount::Counted(n) => {
                assert_eq!(n, 16);
                assert_eq!(q.stats().punted, Some(16));
            }
            PuntCount::Unavailable(why) => {
                assert!(!is_root(), "root has tracefs here, yet: {why}");
                assert_eq!(q.stats().punted, None, "not counted is not zero");
            }
        }
        assert!(q.io_wq_workers().unwrap() >= 1);

        // Set up on one thread, run on another (as an engine may): punts are
        // counted for the thread that submits.
        let mut q = Uring::new(f.as_raw_fd(), &opts(8)).unwrap();
        let q = std::thread::spawn(move || {
            round_trip(&mut q, 4);
            q
        })
        .join()
        .unwrap();
        if is_root() {
            assert_eq!(q.punt_count(), PuntCount::Counted(8));
        }
    }
    drop(z);
}

#[test]
fn dropping_with_requests_in_flight_waits_for_them() {
    let t = TempTarget::new(4 << 20, true);
    let mut bufs: Vec<AlignedBuf> = (0..16).map(|_| AlignedBuf::new(4096)).collect();
    for (i, b) in bufs.iter_mut().enumerate() {
        b.fill(i as u64);
    }
    {
        let mut q = Uring::new(t.fd(), &opts(16)).unwrap();
        for (i, b) in bufs.iter().enumerate() {
            q.queue(&cmd(Op::Write, i as u64 * 4096, b, i as u32))
                .unwrap();
        }
        q.commit().unwrap();
        assert_eq!(q.in_flight(), 16);
    }
    // Drop returned, so the kernel is done with the buffers: the data is on disk.
    drop(bufs);
    let mut q = Uring::new(t.fd(), &opts(1)).unwrap();
    let r = AlignedBuf::new(4096);
    for i in 0..16u64 {
        assert_eq!(
            run_all(&mut q, &[cmd(Op::Read, i * 4096, &r, 0)])[0].result,
            4096
        );
        assert!(r.check(i), "block {i}");
    }
}

#[test]
fn direct_file_on_vda_punts_only_allocating_writes() {
    let t = TempTarget::new(1 << 20, true);
    let mut q = Uring::new(t.fd(), &opts(8)).unwrap();
    // First pass: the file is sparse, so each write allocates blocks, which ext4
    // cannot do without blocking: those writes go to io-wq. Reads do not.
    round_trip(&mut q, 8);
    let first = q.punt_count();
    // Second pass: overwrites of allocated, written blocks are issued inline.
    round_trip(&mut q, 8);
    let second = q.punt_count();
    eprintln!(
        "ext4 O_DIRECT on vda: punts after pass 1 {first:?}, after pass 2 {second:?}, \
         io-wq workers alive {:?}",
        q.io_wq_workers()
    );
    if is_root() {
        assert_eq!(first, PuntCount::Counted(8));
        assert_eq!(second, PuntCount::Counted(8));
    }
}

/// A sleep with a deadline returns at the deadline even though nothing completes
/// (a read on an empty pipe never does by itself), then the request still
/// completes normally: paced streams under completion=interrupt rely on this.
#[test]
fn sleep_until_returns_at_the_deadline() {
    let mut fds = [0; 2];
    // SAFETY: plain pipe(2) into a two-element array.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (rd, wr) = (fds[0], fds[1]);
    let (tx, rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    // The ring lives on one thread (it may have a single issuer); running the
    // wait there also makes a wait that ignores the deadline fail the test
    // instead of hanging it.
    let h = std::thread::spawn(move || {
        let buf = AlignedBuf::new(4096);
        let mut q = Uring::new(rd, &opts(4)).unwrap();
        let mut c = cmd(Op::Read, 0, &buf, 0);
        c.len = 8;
        // A pipe has no offset: -1 means "current position" to io_uring.
        c.offset = u64::MAX;
        assert_eq!(q.queue(&c).unwrap(), Queued::Pending);
        assert_eq!(q.commit().unwrap(), 1);
        let mut out = [Completion::default(); 4];
        let t0 = Instant::now();
        let deadline = iolab::measure::clock::now_ns() + 20_000_000;
        let n = q.sleep_until(1, deadline, &mut out).unwrap();
        tx.send((n, t0.elapsed())).unwrap();
        // Then the request still completes normally once data arrives.
        go_rx.recv().unwrap();
        assert_eq!(q.reap(Wait::Sleep { min: 1 }, &mut out).unwrap(), 1);
        out[0].result
    });
    let (n, waited) = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("sleep_until ignored its deadline");
    assert_eq!(n, 0);
    assert!(
        waited >= Duration::from_millis(19),
        "woke early: {waited:?}"
    );
    // SAFETY: writing 8 bytes from a valid array to our own pipe.
    assert_eq!(unsafe { libc::write(wr, [7u8; 8].as_ptr().cast(), 8) }, 8);
    go_tx.send(()).unwrap();
    assert_eq!(h.join().unwrap(), 8);
    // SAFETY: closing the pipe we opened.
    unsafe {
        libc::close(rd);
        libc::close(wr);
    }
}

/// `perform` (adaptive's inline path) moves the same bytes as the queued path,
/// on the ring's own descriptor, and reports errors as completions do.
#[test]
fn perform_is_a_synchronous_request_on_the_same_fd() {
    let f = tempfile::NamedTempFile::new_in(std::env::temp_dir()).unwrap();
    f.as_file().set_len(1 << 20).unwrap();
    let mut q = Uring::new(f.as_file().as_raw_fd(), &opts(4)).unwrap();
    assert!(q.caps().inline);
    let mut w = AlignedBuf::new(4096);
    w.fill(42);
    let c = q.perform(&cmd(Op::Write, 8192, &w, 3)).unwrap();
    assert_eq!((c.slot, c.result), (3, 4096));
    let r = AlignedBuf::new(4096);
    let got = run_all(&mut q, &[cmd(Op::Read, 8192, &r, 1)]);
    assert_eq!(got[0].result, 4096);
    assert_eq!(r.as_slice(), w.as_slice());
    // Past the end of a read-only descriptor: an error result, not a panic.
    let ro = std::fs::File::open(f.path()).unwrap();
    let mut q = Uring::new(ro.as_raw_fd(), &opts(4)).unwrap();
    let c = q.perform(&cmd(Op::Write, 0, &w, 0)).unwrap();
    assert_eq!(c.result, -(libc::EBADF as i64));
}
