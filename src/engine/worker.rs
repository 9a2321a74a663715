//! One worker thread: one queue pair on its device, one scheduler, one or more job
//! streams, and the per-request loop:
//!
//! fill up to `iodepth` through the scheduler -> submit -> wait for completions
//! with the chosen completion model -> record -> repeat.
//!
//! Everything the loop touches is allocated in [`Worker::new`]: request slots,
//! buffers, the completion array, histograms. The loop itself does not allocate,
//! lock, or make system calls other than the backend's I/O calls and, for
//! sleeping models, the sleep itself.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::completion::{Completer, CompletionStats};
use crate::device::{DevResult, Queue, Queued};
use crate::engine::buffers::Buffers;
use crate::measure::clock;
use crate::measure::recorder::{Recorder, Sample};
use crate::request::{Class, Completion, IoCmd, Op};
use crate::sched::{SchedReq, Scheduler};
use crate::workload::{Generator, NextIo, Pacer};

/// A request slot: everything about one in-flight request that the loop needs
/// when its completion comes back.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    stream: u16,
    op: Option<Op>,
    class: Option<Class>,
    offset: u64,
    len: u32,
    t_issue: u64,
    t_submit: u64,
}

/// One job (clone) running on a worker.
pub struct Stream {
    pub generator: Generator,
    pub pacer: Pacer,
    pub iodepth: u32,
    pub ioprio: u16,
    pub rec: Recorder,
    /// Requests of this stream in the scheduler or the device.
    pub outstanding: u32,
    /// A request generated but not yet allowed to go (pacing, no free slot).
    pending: Option<NextIo>,
    /// The generator has nothing more (or the runtime is over).
    pub exhausted: bool,
    /// Clock time at which the stream must stop (runtime + ramp), or u64::MAX.
    pub end_ns: u64,
    /// Clock time at which measurement starts (after ramp_time).
    pub ramp_end_ns: u64,
    /// When the last request finished (the stream's measured runtime ends here).
    pub finished_ns: u64,
    /// First error: (offset, errno), which ends the stream like fio does.
    pub error: Option<(u64, i32)>,
    pub short_ios: u64,
    pub errors: u64,
    /// Past ramp_time: completions are recorded.
    measuring: bool,
    /// `runtime` (None: until the generator is done) and `ramp_time`, in ns.
    pub runtime_ns: Option<u64>,
    pub ramp_ns: u64,
}

impl Stream {
    pub fn new(
        generator: Generator,
        pacer: Pacer,
        iodepth: u32,
        ioprio: u16,
        rec: Recorder,
    ) -> Stream {
        Stream {
            generator,
            pacer,
            iodepth,
            ioprio,
            rec,
            outstanding: 0,
            pending: None,
            exhausted: false,
            end_ns: u64::MAX,
            ramp_end_ns: 0,
            finished_ns: 0,
            error: None,
            short_ios: 0,
            errors: 0,
            measuring: false,
            runtime_ns: None,
            ramp_ns: 0,
        }
    }

    fn done(&self) -> bool {
        self.exhausted && self.outstanding == 0 && self.pending.is_none()
    }
}

/// Live counters another thread (the progress line) may read.
#[derive(Debug, Default)]
pub struct LiveCounters {
    pub ios: AtomicU64,
    pub bytes: AtomicU64,
}

pub struct Worker {
    pub queue: Box<dyn Queue>,
    pub sched: Scheduler,
    pub completer: Completer,
    pub streams: Vec<Stream>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    bufs: Buffers,
    comps: Vec<Completion>,
    /// Slots queued to the backend since the last commit.
    batch: Vec<u32>,
    /// A request the device refused as busy, retried before anything else.
    retry: Option<SchedReq>,
    inflight: u32,
    /// Polls made by this worker, for the placement predictor.
    pub poll_signal: Option<std::sync::Arc<AtomicU64>>,
    pub live: std::sync::Arc<LiveCounters>,
}

/// What the loop reports besides the recorders.
#[derive(Debug, Default, Clone, Copy)]
pub struct LoopOutcome {
    pub started_ns: u64,
    pub ended_ns: u64,
    pub completion: CompletionStats,
    pub interrupted: bool,
}

impl Worker {
    /// `bufs` must hold at least one buffer per slot; `slots` = sum of iodepths.
    pub fn new(
        queue: Box<dyn Queue>,
        sched: Scheduler,
        completer: Completer,
        streams: Vec<Stream>,
        bufs: Buffers,
    ) -> Worker {
        let nslots: u32 = streams.iter().map(|s| s.iodepth).sum();
        assert!(
            bufs.count() >= nslots as usize,
            "one buffer per request slot"
        );
        Worker {
            queue,
            sched,
            completer,
            streams,
            slots: vec![Slot::default(); nslots as usize],
            free: (0..nslots).rev().collect(),
            bufs,
            comps: vec![Completion::default(); nslots.max(1) as usize],
            batch: Vec::with_capacity(nslots as usize),
            retry: None,
            inflight: 0,
            poll_signal: None,
            live: Default::default(),
        }
    }

    /// Run until every stream is done or a stop is requested (SIGINT). Returns per-run facts;
    /// per-stream results stay in `self.streams`.
    pub fn run(&mut self) -> DevResult<LoopOutcome> {
        let start = clock::now_ns();
        for s in &mut self.streams {
            s.ramp_end_ns = start + s.ramp_ns;
            s.end_ns = s.runtime_ns.map_or(u64::MAX, |r| s.ramp_end_ns + r);
            s.pacer.restart(start);
            s.rec.reset(start);
            s.measuring = s.ramp_ns == 0;
        }
        let mut out = LoopOutcome {
            started_ns: start,
            ..Default::default()
        };
        loop {
            if crate::sys::cleanup::stop_requested() {
                out.interrupted = true;
                break;
            }
            let now = clock::now_ns();
            let next_due = self.generate(now);
            self.dispatch(now)?;
            if !self.batch.is_empty() {
                self.queue.commit()?;
                let t = clock::now_ns();
                for &s in &self.batch {
                    self.slots[s as usize].t_submit = t;
                }
                self.batch.clear();
            }
            if self.inflight > 0 {
                let (oldest, len) = self.oldest_inflight();
                let n = self.completer.wait(
                    self.queue.as_mut(),
                    &mut self.comps,
                    oldest,
                    len,
                    next_due.unwrap_or(0),
                )?;
                if n > 0 {
                    let t_seen = clock::now_ns();
                    for i in 0..n {
                        let c = self.comps[i];
                        self.finish(c, t_seen);
                    }
                }
                if let Some(p) = &self.poll_signal {
                    bump(p);
                }
            } else if self.streams.iter().all(Stream::done) && self.retry.is_none() {
                break;
            } else if self.sched.pending() == 0 && self.retry.is_none() {
                // Nothing in flight and nothing allowed yet: wait for the next
                // paced request (or the scheduler's throttle window).
                let wake = match (next_due, self.sched.next_event_ns()) {
                    (Some(a), Some(b)) => a.min(b),
                    (a, b) => a.or(b).unwrap_or(now),
                };
                if wake > now {
                    clock::sleep_until(wake);
                }
            }
        }
        out.ended_ns = clock::now_ns();
        out.completion = self.completer.stats;
        Ok(out)
    }

    /// Move requests from the streams into the scheduler while they have depth
    /// left and are due. Returns the earliest time a paced stream falls due.
    #[inline]
    fn generate(&mut self, now: u64) -> Option<u64> {
        let mut next_due: Option<u64> = None;
        for (si, s) in self.streams.iter_mut().enumerate() {
            if !s.measuring && now >= s.ramp_end_ns {
                // End of ramp_time: start measuring from here (once per stream).
                s.rec.reset(now);
                s.measuring = true;
            }
            if !s.exhausted && now >= s.end_ns {
                s.exhausted = true;
                s.pending = None;
            }
            while !s.exhausted && s.outstanding < s.iodepth {
                let io = match s.pending.take().or_else(|| s.generator.next_io()) {
                    Some(io) => io,
                    None => {
                        s.exhausted = true;
                        break;
                    }
                };
                let due = s.pacer.due_at(io.op.dir());
                if due > now {
                    s.pending = Some(io);
                    next_due = Some(next_due.map_or(due, |d: u64| d.min(due)));
                    break;
                }
                let Some(slot) = self.free.pop() else {
                    s.pending = Some(io);
                    break;
                };
                s.pacer.issued(io.op.dir(), now);
                self.slots[slot as usize] = Slot {
                    stream: si as u16,
                    op: Some(io.op),
                    class: Some(io.class),
                    offset: io.offset,
                    len: io.len,
                    t_issue: 0,
                    t_submit: 0,
                };
                let r = SchedReq {
                    slot,
                    class: io.class,
                    bytes: io.len,
                    stream: si as u16,
                    arrival_ns: now,
                };
                // Capacity is the total iodepth, so the scheduler cannot be full.
                if self.sched.enqueue(r, now).is_err() {
                    self.free.push(slot);
                    s.pending = Some(io);
                    break;
                }
                s.outstanding += 1;
            }
        }
        next_due
    }

    /// Hand what the scheduler allows to the device.
    #[inline]
    fn dispatch(&mut self, now: u64) -> DevResult<()> {
        let mut t_issue = 0;
        loop {
            let r = match self.retry.take() {
                Some(r) => r,
                None => match self.sched.dispatch(now) {
                    Some(r) => r,
                    None => return Ok(()),
                },
            };
            if t_issue == 0 {
                t_issue = clock::now_ns();
            }
            let slot = self.slots[r.slot as usize];
            let cmd = IoCmd {
                op: slot.op.unwrap_or(Op::Read),
                offset: slot.offset,
                len: slot.len,
                slot: r.slot,
                buf: self.bufs.ptr(r.slot as usize),
                buf_index: r.slot as u16,
                ioprio: self.streams[slot.stream as usize].ioprio,
                class: r.class,
            };
            self.slots[r.slot as usize].t_issue = t_issue;
            match self.queue.queue(&cmd)? {
                Queued::Pending => {
                    self.inflight += 1;
                    self.batch.push(r.slot);
                }
                Queued::Done(c) => {
                    // Synchronous backend: the I/O happened inside queue().
                    let t = clock::now_ns();
                    self.slots[r.slot as usize].t_submit = t_issue;
                    self.inflight += 1;
                    self.finish(c, t);
                    t_issue = t;
                }
                Queued::Busy => {
                    self.retry = Some(r);
                    return Ok(());
                }
            }
        }
    }

    /// Submit time and size of the oldest in-flight request (hybrid times its nap
    /// from it). Exact at QD1; at higher depth the scan is over `iodepth` slots.
    #[inline]
    fn oldest_inflight(&self) -> (u64, u32) {
        use crate::job::CompletionModel::{Adaptive, Hybrid};
        if !matches!(self.completer.model(), Hybrid | Adaptive) {
            return (0, 0);
        }
        let mut best = (u64::MAX, 0);
        for s in &self.slots {
            if s.t_submit != 0 && s.t_submit < best.0 {
                best = (s.t_submit, s.len);
            }
        }
        best
    }

    #[inline]
    fn finish(&mut self, c: Completion, t_seen: u64) {
        let si = c.slot as usize;
        let slot = self.slots[si];
        self.slots[si].t_submit = 0;
        self.inflight -= 1;
        self.free.push(c.slot);
        let class = slot.class.unwrap_or(Class::Read);
        self.sched.complete(class, slot.len, t_seen);
        let s = &mut self.streams[slot.stream as usize];
        s.outstanding -= 1;
        s.pacer.completed(t_seen);
        s.finished_ns = t_seen;
        let op = slot.op.unwrap_or(Op::Read);
        let measuring = s.measuring;
        if c.result < 0 {
            s.errors += 1;
            if s.error.is_none() {
                s.error = Some((slot.offset, (-c.result) as i32));
            }
            if measuring {
                s.rec.record_error(op, (-c.result) as i32);
            }
            // fio stops a job at its first I/O error (continue_on_error=none).
            s.exhausted = true;
            s.pending = None;
            return;
        }
        let slat = slot.t_submit.saturating_sub(slot.t_issue);
        let clat = t_seen.saturating_sub(slot.t_submit);
        let lat = t_seen.saturating_sub(slot.t_issue);
        self.completer.observe(slot.len, clat);
        if measuring {
            if op != Op::Fsync && (c.result as u64) < slot.len as u64 {
                s.short_ios += 1;
                s.rec.record_short(op);
            }
            s.rec.record_sample(&Sample {
                op,
                class,
                bytes: c.result as u32,
                slat_ns: slat,
                clat_ns: clat,
                lat_ns: lat,
                done_ns: t_seen,
            });
            bump(&self.live.ios);
            self.live.bytes.store(
                self.live.bytes.load(Ordering::Relaxed) + c.result as u64,
                Ordering::Relaxed,
            );
        }
    }
}

/// Single-writer counter update: a plain load and store, no locked instruction
/// on the hot path; readers on other threads see a recent value.
#[inline(always)]
fn bump(c: &AtomicU64) {
    c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}
