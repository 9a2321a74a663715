//! The kernel's hybrid IOPOLL (`hybrid_iopoll=1`, IORING_SETUP_HYBRID_IOPOLL,
//! Linux 6.13): set up where the device has poll queues, refused with the device
//! and the remedy where it has none (vda here), and what `probe` says of it.

use crate::backend_common::*;
use crate::run_common::iolab_run;

use iolab::device::uring::{Uring, UringOpts, hybrid_iopoll_kernel};
use iolab::device::{Queue, Wait};
use iolab::probe::caps::{Outcome, probe_target};
use iolab::request::{Class, Completion, IoCmd, Op};
use iolab::sys::blockdev::block_queue_of_fd;

fn hybrid(entries: u32) -> UringOpts<'static> {
    UringOpts {
        entries,
        options: iolab::device::uring::options::UringOptions {
            hybrid_iopoll: true,
            count_punts: true,
            ..Default::default()
        },
        ..UringOpts::default()
    }
}

#[test]
fn refused_naming_the_device_and_the_remedy_or_reads_where_polled() {
    let t = TempTarget::new(1 << 20, true);
    let q = block_queue_of_fd(t.fd()).expect("the temp dir has a block device under it");
    let polled = q.io_poll() == Some(true);
    match Uring::new(t.fd(), &hybrid(4)) {
        Err(e) => {
            let e = e.to_string();
            assert!(!polled || hybrid_iopoll_kernel().is_err(), "{e}");
            assert!(e.contains("hybrid_iopoll=1"), "{e}");
            if !polled {
                assert!(e.contains(&format!("{}: ", q.disk)), "{e}");
                assert!(e.contains("io_poll = 0") || e.contains("io_poll"), "{e}");
                assert!(e.contains("nvme.poll_queues=N"), "{e}");
                crate::support::needs::skip_lacking(
                    crate::support::needs::Lack::PollQueues,
                    format_args!(
                        "the polled read needs a device with poll queues; {} has none \
                         (io_poll=0), so only the refusal is tested",
                        q.disk
                    ),
                );
            }
        }
        Ok(mut ring) => {
            assert!(
                polled,
                "hybrid IOPOLL set up on {} without poll queues",
                q.disk
            );
            let b = AlignedBuf::new(4096);
            let cmd = IoCmd::new(Op::Read, 0, 4096, 0, b.ptr()).with_class(Class::Read);
            ring.queue(&cmd).unwrap();
            ring.commit().unwrap();
            let mut out = [Completion::default(); 1];
            while ring.reap(Wait::Sleep { min: 1 }, &mut out).unwrap() == 0 {}
            assert_eq!(out[0].result, 4096);
        }
    }
    // Buffered I/O never reaches a queue that could be polled.
    let buffered = TempTarget::new(1 << 20, false);
    let e = Uring::new(buffered.fd(), &hybrid(4))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("hybrid_iopoll=1") && e.contains("O_DIRECT"),
        "{e}"
    );
}

#[test]
fn run_refuses_it_off_io_uring_and_on_vda() {
    let t = TempTarget::new(1 << 20, true);
    let file = format!("--filename={}", t.path.display());
    let (code, _, err) = iolab_run(&[
        "--name=h",
        "--ioengine=psync",
        &file,
        "--size=1m",
        "--hybrid_iopoll=1",
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains("hybrid_iopoll needs ioengine=io_uring"),
        "{err}"
    );
    let q = block_queue_of_fd(t.fd()).unwrap();
    if q.io_poll() == Some(true) {
        crate::support::needs::skip(format_args!(
            "{} has poll queues; the refusal is not reachable",
            q.disk
        ));
        return;
    }
    let (code, _, err) = iolab_run(&[
        "--name=h",
        "--ioengine=io_uring",
        "--direct=1",
        &file,
        "--size=1m",
        "--hybrid_iopoll=1",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("IORING_SETUP_HYBRID_IOPOLL"), "{err}");
    assert!(
        err.contains(&q.disk) && err.contains("nvme.poll_queues=N"),
        "{err}"
    );
}

#[test]
fn probe_says_whether_and_why_not() {
    let t = TempTarget::new(1 << 20, true);
    let q = block_queue_of_fd(t.fd()).unwrap();
    let caps = probe_target(&t.path).unwrap();
    match (&caps.hybrid_iopoll, q.io_poll(), hybrid_iopoll_kernel()) {
        (Outcome::Yes, Some(true), Ok(())) => {}
        (Outcome::No(why), Some(true), Err(k)) => assert!(why.contains(&k.to_string()), "{why}"),
        (Outcome::No(why), _, _) => {
            assert!(why.contains(&q.disk), "{why}");
            assert!(why.contains("poll queues"), "{why}");
        }
        (o, p, k) => panic!("probe says {o:?} with io_poll {p:?}, kernel {k:?}"),
    }
}
