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

use crate::buf::Buffers;
use crate::completion::{Completer, CompletionStats, InFlight};
use crate::device::worker_queue::WorkerQueue;
use crate::device::{DevResult, Queue, Queued};
use crate::engine::fill::Fill;
use crate::measure::clock;
use crate::request::{Completion, Flush, IoCmd, Op};
use crate::sched::{SchedReq, Scheduler};

mod completion_path;
mod finish;
mod qd1;
mod stream;

// The stream's request accounting is a reported fact: its type lives with
// the engine's raw results in `report::raw`.
#[cfg(any(test, feature = "testing"))]
pub use crate::report::raw::Accounting;

pub use stream::Stream;
use stream::{Next, Slot, overlaps_in_flight};

/// The longest the worker sleeps at once with nothing in flight: how soon it
/// sees another job's exitall or a signal while a slow rate holds it.
const IDLE_SLICE_NS: u64 = 100_000_000;

/// Live counters another thread (the progress line) may read.
#[derive(Debug, Default)]
pub struct LiveCounters {
    pub ios: AtomicU64,
    pub bytes: AtomicU64,
}

pub struct Worker {
    /// The null device by its own type, any other backend as a trait object.
    pub queue: WorkerQueue,
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
    /// Smallest io_timeout of the streams in ns (0 = none).
    pub io_timeout_ns: u64,
    /// The backend completes I/O inside `queue` (pread): time each call.
    sync_backend: bool,
    /// Report each request as fio's synchronous engines do: no slat, the
    /// submission counted in clat (fio's null engine at iodepth=1). Only the
    /// measurement changes; the completion model still sees the queue's split.
    pub submit_in_clat: bool,
    /// Polls made by this worker (peeks of a polling wait; interrupt-mode
    /// waits make none), for the live balancer's predictor (`placement=balance`).
    pub poll_signal: Option<crate::placement::PollSignal>,
    pub live: std::sync::Arc<LiveCounters>,
    /// `--trace` timestamp log and the study-only per-request allocation.
    pub trace: crate::engine::hooks::Hooks,
    /// Submit batch, completions per wait, refill point (fio's iodepth_batch_*
    /// and iodepth_low); setup sets the job's, the default takes whole batches.
    pub fill: Fill,
    /// The group's stop flag (`exitall`, `exitall_on_error`).
    pub halt: crate::engine::control::Halt,
}

/// What the loop reports besides the recorders.
#[derive(Debug, Default, Clone, Copy)]
pub struct LoopOutcome {
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
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
        let sync_backend = queue.caps().sync;
        assert!(
            bufs.count() >= nslots as usize,
            "one buffer per request slot"
        );
        Worker {
            queue: WorkerQueue::new(queue),
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
            io_timeout_ns: 0,
            sync_backend,
            submit_in_clat: false,
            poll_signal: None,
            live: Default::default(),
            trace: Default::default(),
            fill: Fill::whole_batches(nslots),
            halt: Default::default(),
        }
    }

    /// The worker is done (or never ran): its streams leave their flows.
    pub fn leave_flows(&mut self) {
        self.streams.iter_mut().for_each(|s| s.flow.leave());
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
            if let Some(d) = s.steady.as_mut() {
                d.start(start);
            }
            s.lat_target.iter_mut().for_each(|l| l.start(start));
            s.flow.join(); // jobs that start late (startdelay, wait_for) join now
        }
        self.trace
            .logs_began(self.streams.iter().map(|s| s.ramp_end_ns));
        let mut out = LoopOutcome {
            started_ns: start,
            ..Default::default()
        };
        let qd1 = self.qd1_eligible();
        loop {
            if qd1 {
                // The QD1 polling path runs until something needs this loop
                // (worker/qd1.rs); it returns with nothing in flight.
                self.run_qd1()?;
            }
            if crate::sys::cleanup::stop_requested() {
                out.interrupted = true;
                break;
            }
            if self.halt.fired() {
                // Another job's exitall: issue nothing more, finish what is in flight.
                self.streams.iter_mut().for_each(Stream::stop);
            }
            let now = clock::now_ns();
            // Refill before waiting, so the device never runs dry while the
            // worker sleeps; only iodepth_low may hold a full queue back.
            let next_due = if self.fill.may_refill(self.inflight) {
                self.generate(now)
            } else {
                None
            };
            // Commits every `fill.submit` requests as it goes, then the rest.
            self.dispatch(now)?;
            self.commit_batch()?;
            if self.inflight > 0 {
                let oldest = self.oldest_inflight();
                // A paced stream falling due, or laq's window closing, must not
                // wait for the next completion (sched::Scheduler::wake_deadline).
                let mut deadline = self.sched.wake_deadline(next_due);
                if self.io_timeout_ns > 0 {
                    let expiry = self.expire_timeouts(clock::now_ns());
                    if expiry != 0 && (deadline == 0 || expiry < deadline) {
                        deadline = expiry;
                    }
                }
                let room = !self.free.is_empty();
                if room && !self.fill.draining() && self.streams.iter().any(|s| s.could_issue(now))
                {
                    self.completer.stats.waits_with_room += 1;
                }
                // Wait for few and take few (iodepth_batch_complete_min/max), so
                // the loop comes back to refill while the device still works.
                let min = self.fill.wait_min(self.inflight, room);
                let max = (self.fill.complete_max as usize).min(self.comps.len());
                let comps = &mut self.comps[..max];
                let n = match &mut self.queue {
                    // The null device by its own type: its reap inlines into the poll.
                    WorkerQueue::Null(d) => self
                        .completer
                        .wait_for(&mut **d, comps, min, oldest, deadline)?,
                    WorkerQueue::Other(q) => self
                        .completer
                        .wait_for(&mut **q, comps, min, oldest, deadline)?,
                };
                if n > 0 || min == 0 {
                    self.note_reap(n);
                }
                if n > 0 {
                    let t_seen = clock::hint_or_now(self.queue.clock_hint());
                    for i in 0..n {
                        let c = self.comps[i];
                        self.finish(c, t_seen);
                        self.completion_path(c.dev_done)?;
                    }
                } else if deadline != 0 {
                    self.deadline_path(deadline)?;
                }
                if let Some(p) = &self.poll_signal {
                    let st = &self.completer.stats;
                    p.publish(st.polls_hit + st.polls_empty);
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
                // A slow rate (one block every few seconds) may fall due long
                // after the runtime ends, or after another job's exitall or a
                // signal: wake for the runtime's end, and at least every
                // IDLE_SLICE_NS to look at the halt and the signal flag.
                let end = self
                    .streams
                    .iter()
                    .map(|s| s.end_ns)
                    .filter(|e| *e > now)
                    .min();
                let wake = wake
                    .min(end.unwrap_or(u64::MAX))
                    .min(now.saturating_add(IDLE_SLICE_NS));
                if wake > now {
                    // thinktime_spin: the start of a pause is spent spinning.
                    let spin = self.streams.iter().map(|s| s.pacer.spin_until()).max();
                    clock::spin_until(spin.unwrap_or(0).min(wake));
                    clock::sleep_until(wake);
                } else if self.streams.iter().any(|s| s.flow.active()) {
                    // Held by its flow with no flow_sleep: the jobs it waits
                    // for may need this CPU (two spinning jobs of one flow on
                    // a busy machine take turns per time slice: t0011 ran its
                    // paced job at 50 IOPS so). fio spins here; giving the
                    // CPU away keeps the flow's turns short.
                    std::thread::yield_now();
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
            s.held = false;
            if !s.measuring && now >= s.ramp_end_ns {
                // End of ramp_time: start measuring from here (once per stream).
                s.rec.reset(now);
                s.measuring = true;
                s.lat_target.iter_mut().for_each(|l| l.start(now));
            }
            if let Some(d) = s.steady.as_mut().filter(|d| d.due(now)) {
                let [r, w, t, _] = &s.rec.dirs;
                let (ios, bytes) = (r.total_ios + w.total_ios, r.io_bytes + w.io_bytes);
                if d.sample(now, ios + t.total_ios, bytes + t.io_bytes) {
                    s.end_ns = now; // steady: the runtime ends here
                }
            }
            if let Some(l) = s.lat_target.as_mut() {
                apply_lat_verdict(l.check(now, s.outstanding), s, now);
            }
            if !s.workload_over && now >= s.end_ns {
                // The workload ends; a write job's read-back still runs.
                s.workload_over = true;
                match s.verify.as_mut() {
                    Some(v) => {
                        v.workload_over();
                        if s.pending.is_some_and(|p| p.op != Op::Read) {
                            s.pending = None;
                        }
                    }
                    None => {
                        s.exhausted = true;
                        s.pending = None;
                    }
                }
            }
            while !s.exhausted && s.outstanding < s.depth() {
                let mut io = match s.pending.take() {
                    Some(io) => io,
                    None => match s.next_request() {
                        Next::Io(io) => {
                            if let Some((fd, off, len)) = s.invalidate
                                && s.generator.take_new_pass()
                            {
                                // Once per pass, not per request: like fio, later
                                // passes of a buffered job start from a cold cache.
                                // SAFETY: advisory call on the target's open fd.
                                unsafe {
                                    libc::posix_fadvise(
                                        fd,
                                        off as i64,
                                        len as i64,
                                        libc::POSIX_FADV_DONTNEED,
                                    )
                                };
                            }
                            io
                        }
                        Next::Wait => {
                            s.held = true;
                            break;
                        }
                        Next::Done => {
                            s.exhausted = true;
                            break;
                        }
                    },
                };
                // unlink_each_loop: a new pass starts on fresh files, made
                // once the last pass's requests are all complete.
                if let Some(r) = s.relayout.as_deref_mut()
                    && (r.due || s.generator.take_new_loop())
                {
                    if s.outstanding > 0 {
                        r.due = true;
                        s.pending = Some(io);
                        break;
                    }
                    r.due = false;
                    if let Err(e) = r.run() {
                        relayout_failed(s, &e);
                        break;
                    }
                }
                if s.verify.as_ref().is_some_and(|v| v.blocked(&io))
                    || (s.serialize_overlap
                        && overlaps_in_flight(&self.slots, si as u16, s.generator.file(), &io))
                {
                    // Overlaps an I/O in flight: wait for it so the device's
                    // order of the two cannot matter.
                    s.pending = Some(io);
                    break;
                }
                let due = match s.generator.single_mut() {
                    Some(g) => crate::workload::due_or_switch(&s.pacer, g, &mut io, now),
                    // A file set's request keeps its direction: a redraw would
                    // also have to pick its file again.
                    None => s.pacer.due_at(io.op.dir()),
                };
                // io_submit_mode=inline: ahead of the rate, drain first (MAX).
                let due = s.pacer.inline_due(io.op.dir(), due, now, s.outstanding);
                // read_iolog: not before the log's time for it.
                let due = due.max(s.generator.replay_due(now));
                if due > now {
                    s.pending = Some(io);
                    if due != u64::MAX {
                        next_due = Some(next_due.map_or(due, |d: u64| d.min(due)));
                    }
                    break;
                }
                if let Some(retry) = s.flow.hold(now) {
                    // Ahead of its flow's share: try again after flow_sleep.
                    s.pending = Some(io);
                    next_due = Some(next_due.map_or(retry, |d: u64| d.min(retry)));
                    break;
                }
                let Some(slot) = self.free.pop() else {
                    s.pending = Some(io);
                    break;
                };
                s.pacer.issued(io.op.dir(), io.len, now);
                s.generator.replay_issued(now);
                s.flow.issued();
                self.slots[slot as usize] = Slot::issued(si as u16, s.generator.file(), &io, now);
                let r = SchedReq {
                    slot,
                    class: io.class,
                    bytes: io.len,
                    stream: si as u16,
                    arrival_ns: now,
                };
                // Capacity is the total iodepth, so the scheduler cannot be full.
                if self.sched.enqueue(r, now).is_err() {
                    self.slots[slot as usize].in_flight = false;
                    self.free.push(slot);
                    s.pending = Some(io);
                    break;
                }
                s.outstanding += 1;
                if io.op == Op::Write {
                    s.issue_write(&self.bufs, slot, &io);
                }
                if let Some(v) = s.verify.as_mut() {
                    v.issued(&io);
                    if io.op == Op::Write {
                        // SAFETY: the slot's buffer holds at least max bs bytes
                        // and belongs to this request until it completes.
                        let buf = unsafe {
                            std::slice::from_raw_parts_mut(
                                self.bufs.ptr(slot as usize),
                                io.len as usize,
                            )
                        };
                        self.slots[slot as usize].seq = v.fill(buf, io.offset);
                    }
                }
            }
            if s.exhausted {
                s.flow.leave(); // an ended job holds no flow back
            }
        }
        next_due
    }

    /// Hand what the scheduler allows to the device.
    #[inline]
    fn dispatch(&mut self, now: u64) -> DevResult<()> {
        // Start of a synchronous backend's call (its clat starts there).
        let mut t_call = 0;
        loop {
            let r = match self.retry.take() {
                Some(r) => r,
                None => match self.sched.dispatch(now) {
                    Some(r) => r,
                    None => return Ok(()),
                },
            };
            let slot = self.slots[r.slot as usize];
            let (offset, flush) = match slot.flush {
                // sync_file_range: over what the stream wrote to the file
                // since its last sync, as fio's range is.
                Flush::Range { flags, .. } => {
                    let s = &self.streams[slot.stream as usize];
                    match s.written.get(slot.file as usize).and_then(|w| w.range()) {
                        Some((o, len)) => (o, Flush::Range { flags, len }),
                        None => (0, Flush::Range { flags, len: 0 }),
                    }
                }
                f => (slot.offset, f),
            };
            let cmd = IoCmd {
                op: slot.op.unwrap_or(Op::Read),
                offset,
                len: slot.len,
                slot: r.slot,
                buf: self.bufs.ptr(r.slot as usize),
                buf_index: r.slot as u16,
                file: slot.file,
                ioprio: {
                    let s = &mut self.streams[slot.stream as usize];
                    s.cmdprio
                        .pick(slot.op.unwrap_or(Op::Read).dir(), slot.len, s.ioprio)
                },
                class: r.class,
                flush,
            };
            self.slots[r.slot as usize].ioprio = cmd.ioprio;
            let inline = self.completer.take_inline(cmd.len);
            self.slots[r.slot as usize].inline = inline;
            if (self.sync_backend || inline) && t_call == 0 {
                t_call = clock::now_ns();
            }
            self.trace.dispatched(r.slot);
            self.trace.issued(
                slot.stream,
                slot.file,
                cmd.op,
                cmd.flush,
                cmd.offset,
                cmd.len,
            );
            let queued = if matches!(flush, Flush::Range { len: 0, .. }) {
                // Nothing written since the last sync: fio makes no call
                // (a length of 0 would sync to the file's end) and
                // completes the sync as done.
                Queued::Done(Completion {
                    slot: r.slot,
                    ..Completion::default()
                })
            } else if inline {
                Queued::Done(self.queue.perform(&cmd)?)
            } else {
                self.queue.queue(&cmd)?
            };
            match queued {
                Queued::Pending => {
                    let s = &mut self.streams[slot.stream as usize];
                    s.acct.submitted += 1;
                    s.in_device += 1;
                    self.inflight += 1;
                    self.batch.push(r.slot);
                    if self.batch.len() as u32 >= self.fill.submit {
                        self.commit_batch()?;
                    }
                }
                Queued::Done(c) => {
                    // Synchronous backend: the I/O happened inside queue().
                    let t = clock::now_ns();
                    self.slots[r.slot as usize].t_submit = t_call;
                    let s = &mut self.streams[slot.stream as usize];
                    s.acct.submitted += 1;
                    s.in_device += 1;
                    // One request per call, submitted and completed (fio marks a
                    // synchronous engine's I/O the same way).
                    s.rec.note_depth(s.in_device);
                    s.rec.note_submit(1);
                    s.rec.note_complete(1);
                    self.inflight += 1;
                    self.finish(c, t);
                    t_call = t;
                }
                Queued::Busy => {
                    self.retry = Some(r);
                    return Ok(());
                }
            }
        }
    }

    /// Submit what `dispatch` queued since the last commit: one backend commit,
    /// the submit stamp, and fio's submit and depth distributions per stream.
    #[inline]
    fn commit_batch(&mut self) -> DevResult<()> {
        self.commit_batch_at(0)
    }

    /// [`commit_batch`](Self::commit_batch) dated `at_ns` (0: now), for the
    /// completion path.
    #[inline]
    fn commit_batch_at(&mut self, at_ns: u64) -> DevResult<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        if at_ns == 0 {
            self.queue.commit()?;
        } else {
            self.queue.commit_at(at_ns)?;
        }
        let t = clock::hint_or_now(self.queue.clock_hint());
        if let [s] = self.streams.as_mut_slice() {
            // One stream (most jobs): the whole batch is its, no tally per slot.
            for &i in &self.batch {
                self.slots[i as usize].t_submit = t;
            }
            s.batch_n = self.batch.len() as u32;
        } else {
            for &s in &self.batch {
                let sl = &mut self.slots[s as usize];
                sl.t_submit = t;
                self.streams[sl.stream as usize].batch_n += 1;
            }
        }
        self.batch.clear();
        for s in &mut self.streams {
            if s.batch_n > 0 {
                s.rec.note_submit(s.batch_n);
                // fio weighs the depth by the requests submitted at it.
                s.rec.note_depths(s.in_device, s.batch_n);
                s.batch_n = 0;
            }
        }
        self.fill.submitted(self.inflight);
        Ok(())
    }

    /// fio's complete distribution: completions of each stream in this reap
    /// (a reap that found none counts for every stream, as fio's polling one does).
    #[inline]
    fn note_reap(&mut self, n: usize) {
        if let [s] = self.streams.as_mut_slice() {
            // One stream: every completion for a real slot is its.
            let nslots = self.slots.len();
            let k = self.comps[..n]
                .iter()
                .filter(|c| (c.slot as usize) < nslots)
                .count();
            if k > 0 || n == 0 {
                s.rec.note_complete(k as u32);
            }
            return;
        }
        for c in &self.comps[..n] {
            if let Some(sl) = self.slots.get(c.slot as usize)
                && let Some(s) = self.streams.get_mut(sl.stream as usize)
            {
                s.batch_n += 1;
            }
        }
        for s in &mut self.streams {
            if s.batch_n > 0 || n == 0 {
                s.rec.note_complete(s.batch_n);
                s.batch_n = 0;
            }
        }
    }

    /// Submit time and size of the oldest in-flight request (hybrid times its nap
    /// from it). Exact at QD1; at higher depth the scan is over `iodepth` slots.
    #[inline]
    fn oldest_inflight(&self) -> InFlight {
        if !self.completer.model().naps() {
            return InFlight::default();
        }
        let (mut best, mut key) = (InFlight::default(), u64::MAX);
        for s in &self.slots {
            if s.t_submit != 0 {
                let r = InFlight {
                    submit_ns: s.t_submit,
                    len: s.len,
                    write: s.op == Some(Op::Write),
                };
                let k = self.completer.wait_key(r);
                if k < key {
                    (best, key) = (r, k);
                }
            }
        }
        best
    }

    /// Abort requests past io_timeout; returns when the next one expires (0 = none).
    fn expire_timeouts(&mut self, now: u64) -> u64 {
        let mut next = 0u64;
        for (i, sl) in self.slots.iter_mut().enumerate() {
            if !sl.in_flight || sl.t_submit == 0 || sl.abort_tried {
                continue;
            }
            let due = sl.t_submit + self.io_timeout_ns;
            if now >= due {
                // A command that is merely slow is not aborted: it completes
                // by itself and is not checked again.
                sl.abort_tried = true;
                sl.aborted = self.queue.abort(i as u32);
            } else if next == 0 || due < next {
                next = due;
            }
        }
        next
    }

    /// Slots free now and in all; equal when no request is outstanding.
    pub fn slots_free(&self) -> (usize, usize) {
        (self.free.len(), self.slots.len())
    }
}

/// Single-writer counter update: a plain load and store, no locked instruction
/// on the hot path; readers on other threads see a recent value.
#[inline(always)]
fn bump(c: &AtomicU64) {
    c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// Carry out a latency_target window check's verdict on its stream: the final
/// window restarts the statistics (and the measured runtime: fio reports that
/// window alone); the end of it ends the stream's runtime.
#[inline]
fn apply_lat_verdict(v: crate::engine::lat_target::Verdict, s: &mut Stream, now: u64) {
    use crate::engine::lat_target::Verdict;
    match v {
        Verdict::Go => {}
        Verdict::FinalRun => {
            s.rec.reset(now);
            s.ramp_end_ns = now;
        }
        Verdict::Done => s.end_ns = now,
    }
}

/// `unlink_each_loop` could not make the files again: the job stops with
/// the error, as fio's does when its next loop cannot open them.
#[cold]
fn relayout_failed(s: &mut Stream, e: &std::io::Error) {
    eprintln!("iolab: unlink_each_loop: {e}");
    s.note_error(e.raw_os_error().unwrap_or(libc::EIO));
    s.stop();
}
