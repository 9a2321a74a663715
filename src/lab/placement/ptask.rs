//! P tasks: a thread that keeps one I/O in flight (QD1) on a device queue and polls
//! for its completion without ever sleeping, as study 001's fio pollers did.
//!
//! Works with any [`Queue`] that can be peeked; the placement study uses the null
//! device. Everything is allocated before the clock starts; the loop itself only
//! queues, commits, peeks, records and bumps the task's [`PollSignal`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::thread::JoinHandle;

use hdrhistogram::Histogram;

use crate::buf::Buffers;
use crate::device::{Queue, Queued, Wait};
use crate::measure::clock::now_ns;
use crate::request::{Class, Completion, IoCmd, Op};

use crate::placement::affinity::gettid;
use crate::placement::corunner::thread_usage;
use crate::placement::predictor::PollSignal;

/// What one P task did.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct PTaskReport {
    pub ios: u64,
    pub errors: u64,
    pub elapsed_ns: u64,
    pub iops: f64,
    /// Submit to completion seen, ns.
    pub lat_mean_ns: f64,
    pub lat_p50_ns: u64,
    pub lat_p99_ns: u64,
    pub lat_max_ns: u64,
    /// Peeks that found nothing: the spinning the study's P tasks do.
    pub empty_polls: u64,
    pub cpu_ns: u64,
    /// Times the task gave up its CPU (slept): 0 for a true poller.
    pub voluntary_switches: u64,
    /// Times the scheduler took the CPU away (time-sharing with co-runners).
    pub involuntary_switches: u64,
}

/// Shape of the I/O a P task issues.
#[derive(Clone, Copy, Debug)]
pub struct PTaskIo {
    pub block_size: u32,
    /// Offsets cycle through this many bytes.
    pub span: u64,
    pub max_ns: u64,
}

/// Run the QD1 poll loop on the calling thread until `stop` or `io.max_ns`.
pub fn run_ptask(
    queue: &mut dyn Queue,
    io: PTaskIo,
    signal: &PollSignal,
    stop: &AtomicBool,
) -> anyhow::Result<PTaskReport> {
    anyhow::ensure!(
        queue.caps().can_peek || queue.caps().sync,
        "P task: backend `{}` cannot be polled (no non-sleeping reap)",
        queue.name()
    );
    anyhow::ensure!(io.block_size > 0, "P task: block size must be > 0");
    let buf = Buffers::one(io.block_size as usize).map_err(|e| anyhow::anyhow!("P task: {e}"))?;
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)?;
    let blocks = (io.span / io.block_size as u64).max(1);
    let mut out = [Completion::default(); 1];
    let (mut ios, mut errors, mut empty) = (0u64, 0u64, 0u64);
    let (cpu0, vol0, invol0) = thread_usage();
    let t0 = now_ns();
    let mut block = 0u64;
    while !stop.load(Ordering::Relaxed) && now_ns() - t0 < io.max_ns {
        let cmd = IoCmd {
            op: Op::Read,
            offset: block * io.block_size as u64,
            len: io.block_size,
            slot: 0,
            buf: buf.ptr(0),
            buf_index: 0,
            file: 0,
            ioprio: 0,
            class: Class::Read,
            flush: Default::default(),
        };
        block = (block + 1) % blocks;
        let start = now_ns();
        let done = match queue.queue(&cmd)? {
            Queued::Done(c) => c,
            Queued::Busy => anyhow::bail!(
                "P task: backend `{}` reports busy with nothing in flight",
                queue.name()
            ),
            Queued::Pending => {
                queue.commit()?;
                loop {
                    if queue.reap(Wait::Peek, &mut out)? == 1 {
                        break out[0];
                    }
                    empty += 1;
                }
            }
        };
        let end = now_ns();
        signal.bump();
        if done.is_err() {
            errors += 1;
        }
        ios += 1;
        // Saturating record: a value beyond the bounds is clamped, never an error.
        hist.saturating_record((end - start).max(1));
    }
    let elapsed_ns = now_ns() - t0;
    let (cpu1, vol1, invol1) = thread_usage();
    Ok(PTaskReport {
        ios,
        errors,
        elapsed_ns,
        iops: ios as f64 * 1e9 / elapsed_ns.max(1) as f64,
        lat_mean_ns: hist.mean(),
        lat_p50_ns: hist.value_at_quantile(0.5),
        lat_p99_ns: hist.value_at_quantile(0.99),
        lat_max_ns: hist.max(),
        empty_polls: empty,
        cpu_ns: cpu1 - cpu0,
        voluntary_switches: vol1 - vol0,
        involuntary_switches: invol1 - invol0,
    })
}

/// A P task on its own thread; like [`crate::placement::corunner::CoRunner`] it publishes its
/// thread id, waits at `go`, and runs until `stop`.
pub struct PTask {
    tid: i32,
    signal: PollSignal,
    handle: JoinHandle<anyhow::Result<PTaskReport>>,
}

impl PTask {
    pub fn spawn(
        mut queue: Box<dyn Queue>,
        io: PTaskIo,
        go: Arc<Barrier>,
        stop: Arc<AtomicBool>,
    ) -> anyhow::Result<PTask> {
        let signal = PollSignal::new();
        let sig = signal.clone();
        let (tx, rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("iolab-p".into())
            .spawn(move || {
                let _ = tx.send(gettid());
                go.wait();
                run_ptask(queue.as_mut(), io, &sig, &stop)
            })?;
        let tid = rx
            .recv()
            .map_err(|_| anyhow::anyhow!("P task thread died before starting"))?;
        Ok(PTask {
            tid,
            signal,
            handle,
        })
    }

    pub fn tid(&self) -> i32 {
        self.tid
    }

    /// The task's poll counter, for the predictor.
    pub fn signal(&self) -> &PollSignal {
        &self.signal
    }

    pub fn join(self) -> anyhow::Result<PTaskReport> {
        self.handle
            .join()
            .map_err(|_| anyhow::anyhow!("P task thread panicked"))?
    }
}
