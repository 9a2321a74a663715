//! Affinity is applied, read back, and restored; co-runners and P tasks run pinned.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, mpsc};

use iolab::device::{Caps, DevResult, Queue, Queued, Wait};
use iolab::lab::placement::ptask::{PTask, PTaskIo};
use iolab::measure::clock::now_ns;
use iolab::placement::affinity::{AffinityGuard, current_cpu, get_affinity, gettid};
use iolab::placement::corunner::{CoRunner, Kernel};
use iolab::request::{Completion, IoCmd};
use iolab::sys::cleanup;

/// A thread that reports its tid, then (on request) the CPU it runs on.
fn helper() -> (
    i32,
    mpsc::Sender<bool>,
    mpsc::Receiver<Option<u32>>,
    std::thread::JoinHandle<()>,
) {
    let (tid_tx, tid_rx) = mpsc::channel();
    let (ask_tx, ask_rx) = mpsc::channel::<bool>();
    let (ans_tx, ans_rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        tid_tx.send(gettid()).unwrap();
        while let Ok(true) = ask_rx.recv() {
            // Spin a little so the scheduler has moved us if the mask requires it.
            let t = now_ns();
            while now_ns() - t < 2_000_000 {}
            ans_tx.send(current_cpu()).unwrap();
        }
    });
    (tid_rx.recv().unwrap(), ask_tx, ans_rx, h)
}

#[test]
fn applied_read_back_and_restored() {
    let (tid, ask, ans, h) = helper();
    let orig = get_affinity(tid).unwrap();
    let target = *orig.last().unwrap();
    {
        let mut g = AffinityGuard::new();
        g.apply(tid, &[target]).unwrap();
        assert_eq!(get_affinity(tid).unwrap(), vec![target]);
        ask.send(true).unwrap();
        assert_eq!(
            ans.recv().unwrap(),
            Some(target),
            "thread runs where it was pinned"
        );
        assert!(
            cleanup::pending()
                .iter()
                .any(|w| w.contains(&format!("thread {tid}"))),
            "undo registered while the guard lives: {:?}",
            cleanup::pending()
        );
        // A second apply keeps the first original.
        g.apply(tid, &[orig[0]]).unwrap();
        assert_eq!(g.threads(), vec![tid]);
    }
    assert_eq!(
        get_affinity(tid).unwrap(),
        orig,
        "original mask restored on drop"
    );
    assert!(
        !cleanup::pending()
            .iter()
            .any(|w| w.contains(&format!("thread {tid} ")))
    );
    ask.send(false).unwrap();
    h.join().unwrap();
}

#[test]
fn explicit_restore_and_errors() {
    let (tid, ask, _ans, h) = helper();
    let orig = get_affinity(tid).unwrap();
    let mut g = AffinityGuard::new();
    let e = g.apply(tid, &[]).unwrap_err().to_string();
    assert!(e.contains("empty CPU set"), "{e}");
    let e = g.apply(tid, &[100_000]).unwrap_err().to_string();
    assert!(e.contains("cpu100000"), "{e}");
    let e = g.apply(0, &[0]).unwrap_err().to_string();
    assert!(e.contains("gettid"), "{e}");
    g.apply(tid, &[orig[0]]).unwrap();
    g.restore().unwrap();
    assert_eq!(get_affinity(tid).unwrap(), orig);
    ask.send(false).unwrap();
    h.join().unwrap();
}

#[test]
fn pinned_co_runners_report_work() {
    let go = Arc::new(Barrier::new(3));
    let stop = Arc::new(AtomicBool::new(false));
    let a = CoRunner::spawn(Kernel::Int, go.clone(), stop.clone(), 5_000_000_000).unwrap();
    let b = CoRunner::spawn(Kernel::Float, go.clone(), stop.clone(), 5_000_000_000).unwrap();
    let mut g = AffinityGuard::new();
    let cpu = get_affinity(0).unwrap()[0];
    g.apply(a.tid(), &[cpu]).unwrap();
    g.apply(b.tid(), &[cpu]).unwrap();
    go.wait();
    std::thread::sleep(std::time::Duration::from_millis(100));
    stop.store(true, Ordering::Relaxed);
    let (ra, rb) = (a.join().unwrap(), b.join().unwrap());
    for r in [ra, rb] {
        assert!(r.units > 0 && r.units_per_s > 0.0, "{r:?}");
        assert!(
            r.cpu_ns > 0 && r.cpu_ns <= r.elapsed_ns + 20_000_000,
            "{r:?}"
        );
    }
    // Sharing one CPU, neither can have had much more than all of it.
    assert!(ra.cpu_ns + rb.cpu_ns <= ra.elapsed_ns.max(rb.elapsed_ns) + 30_000_000);
}

/// A device whose commands complete `lat_ns` after commit, seen by peeking.
struct FakeQueue {
    lat_ns: u64,
    pending: Option<(u32, u64)>,
    staged: Option<u32>,
}

impl Queue for FakeQueue {
    fn name(&self) -> &'static str {
        "fake"
    }
    fn caps(&self) -> Caps {
        Caps::NONE.with_peek(true)
    }
    fn queue(&mut self, cmd: &IoCmd) -> DevResult<Queued> {
        if self.pending.is_some() || self.staged.is_some() {
            return Ok(Queued::Busy);
        }
        self.staged = Some(cmd.slot);
        Ok(Queued::Pending)
    }
    fn commit(&mut self) -> DevResult<u32> {
        Ok(match self.staged.take() {
            Some(s) => {
                self.pending = Some((s, now_ns() + self.lat_ns));
                1
            }
            None => 0,
        })
    }
    fn reap(&mut self, _w: Wait, out: &mut [Completion]) -> DevResult<usize> {
        match self.pending {
            Some((slot, at)) if now_ns() >= at => {
                self.pending = None;
                out[0] = Completion::new(slot, 4096).with_device_times(at - self.lat_ns, at);
                Ok(1)
            }
            _ => Ok(0),
        }
    }
}

#[test]
fn p_task_polls_a_queue_and_bumps_its_signal() {
    let go = Arc::new(Barrier::new(2));
    let stop = Arc::new(AtomicBool::new(false));
    let q = Box::new(FakeQueue {
        lat_ns: 20_000,
        pending: None,
        staged: None,
    });
    let io = PTaskIo {
        block_size: 4096,
        span: 1 << 20,
        max_ns: 100_000_000,
    };
    let p = PTask::spawn(q, io, go.clone(), stop).unwrap();
    let mut g = AffinityGuard::new();
    g.apply(p.tid(), &[get_affinity(0).unwrap()[0]]).unwrap();
    let signal = p.signal().clone();
    go.wait();
    let r = p.join().unwrap();
    assert!(r.ios > 100, "{r:?}");
    assert_eq!(signal.count(), r.ios, "one poll batch per I/O");
    assert!(
        r.lat_p50_ns >= 20_000,
        "never sees a completion before the device time: {r:?}"
    );
    assert!(r.empty_polls > r.ios, "it spun while waiting: {r:?}");
    // It may be preempted (tests share CPUs) but it never sleeps by itself.
    assert!(r.voluntary_switches <= 2, "a poller does not sleep: {r:?}");
    assert!(r.cpu_ns > 0, "{r:?}");
}
