//! The QD1 path: one request at a time on the null device.
//!
//! At QD1 on the null device a request costs the three engine-clock reads
//! fio's slat/clat/lat need and three histogram records, about 36 ns on this
//! machine with the device's own queue, commit and reap inlined (measured with
//! those pieces alone); the general loop around them cost another 45 ns. That
//! loop serves every job: several streams, batches, pacing, flows, held
//! requests, verification, latency targets, schedulers that hold requests.
//! For a job that uses none of them each request still walked the stream list,
//! went through the scheduler's ring and back, through the submit batch, and
//! through checks that all said no.
//!
//! [`Worker::qd1_eligible`] says, once per run, whether the job is of that
//! kind. Then [`Worker::run_qd1`] takes requests one at a time, doing for each
//! exactly what the general loop does for such a job, in the same order, with
//! the same stamps and counters: the scheduler's accounting through
//! [`Scheduler::pass_through`](crate::sched::Scheduler::pass_through), fio's
//! depth/submit/complete distributions, the completion model's wait
//! ([`Completer::poll_one`](crate::completion::Completer::poll_one) and
//! [`Completer::interrupt_one`](crate::completion::Completer::interrupt_one)
//! with their first look inlined,
//! [`Completer::wait_for`](crate::completion::Completer::wait_for) for the
//! other models) and the general [`Worker::finish`]. It hands back to the general loop, with nothing
//! in flight, at anything it does not handle: the runtime's or ramp's end, a
//! stop or halt, the generator's end, a busy device, a stream stopped by an
//! error. The text report says how many requests it carried ("N by the QD1
//! path"; JSON `iolab.engine.completion.qd1_path`); `IOLAB_QD1_PATH=0` turns
//! it off, and `tests/it/qd1_path.rs` holds the two paths to the same counts,
//! offsets and distributions (and `job_control::exitall_stops_the_other_jobs`
//! runs both of its jobs on this path).

use super::{Slot, Worker};
use crate::completion::InFlight;
use crate::device::worker_queue::WorkerQueue;
use crate::device::{DevResult, Queue, Queued};
use crate::job::CompletionModel;
use crate::job::spec::SchedKind;
use crate::measure::clock;
use crate::request::{IoCmd, Op};
use crate::sched::SchedReq;

impl Worker {
    /// Whether this worker's job can take the QD1 path (module docs): one
    /// stream of depth 1 on the null device, through noop, with no pacing,
    /// flow, verification, latency target, steady state, io_timeout,
    /// placement signal or synchronous backend; any completion model.
    pub(super) fn qd1_eligible(&self) -> bool {
        let [s] = self.streams.as_slice() else {
            return false;
        };
        if std::env::var_os("IOLAB_QD1_PATH").is_some_and(|v| v == "0") {
            // The general loop for everything: for A/B runs of the two paths
            // (BENCHMARKS.md) and the test that holds them to the same counts.
            return false;
        }
        matches!(self.queue, WorkerQueue::Null(_))
            && self.slots.len() == 1
            // Adaptive's inline path needs a backend that can perform a
            // request in the caller's context: the null device cannot, so
            // `take_inline` would say no without touching anything.
            && !self.queue.caps().inline
            && self.sched.kind() == SchedKind::Noop
            && !self.sync_backend
            && self.io_timeout_ns == 0
            && self.poll_signal.is_none()
            && !s.pacer.active()
            && !s.pacer.checks_min_rate()
            && !s.flow.active()
            && s.verify.is_none()
            && s.lat_target.is_none()
            && !s.max_lat.active()
            && s.steady.is_none()
            && s.invalidate.is_none()
            // write_iolog logs at dispatch, read_iolog times its requests.
            && self.trace.tracelog.is_none()
            && !s.generator.is_replay()
    }

    /// Run requests one at a time until something the general loop must
    /// handle comes up; return with nothing in flight (module docs).
    pub(super) fn run_qd1(&mut self) -> DevResult<()> {
        loop {
            // Borrowed afresh each request: `finish` below takes the whole worker.
            let WorkerQueue::Null(dev) = &mut self.queue else {
                return Ok(());
            };
            let s = &mut self.streams[0];
            // The general loop acts on both (`fired` is one-shot: only look).
            if crate::sys::cleanup::stop_requested() || self.halt.pending() {
                return Ok(());
            }
            if s.exhausted || s.pending.is_some() || self.retry.is_some() || self.inflight > 0 {
                return Ok(());
            }
            let now = clock::now_ns();
            // The runtime's end and the ramp's end are the general loop's.
            if now >= s.end_ns || (!s.measuring && now >= s.ramp_end_ns) {
                return Ok(());
            }
            let Some(io) = s.generator.next_io() else {
                // As `generate` does at the generator's end.
                s.exhausted = true;
                s.pending = None;
                return Ok(());
            };
            let Some(slot) = self.free.pop() else {
                s.pending = Some(io);
                return Ok(());
            };
            self.slots[slot as usize] = Slot::issued(0, s.generator.file(), &io, now);
            let r = SchedReq {
                slot,
                class: io.class,
                bytes: io.len,
                stream: 0,
                arrival_ns: now,
            };
            self.sched.pass_through(r, now);
            s.outstanding += 1;
            if io.op == Op::Write {
                s.issue_write(&self.bufs, slot, &io);
            }
            let ioprio = s.cmdprio.pick(io.op.dir(), io.len, s.ioprio);
            let cmd = IoCmd {
                op: io.op,
                offset: io.offset,
                len: io.len,
                slot,
                buf: self.bufs.ptr(slot as usize),
                buf_index: slot as u16,
                file: self.slots[slot as usize].file,
                ioprio,
                class: io.class,
                flush: io.flush,
            };
            self.slots[slot as usize].ioprio = ioprio;
            self.trace.dispatched(slot);
            match dev.queue(&cmd)? {
                Queued::Pending => {}
                // The device's queue is full (null_qd): the general loop retries.
                Queued::Busy => {
                    self.retry = Some(r);
                    return Ok(());
                }
                // The null device never completes inside `queue`.
                Queued::Done(_) => unreachable!("the null device completes asynchronously"),
            }
            s.acct.submitted += 1;
            s.in_device += 1;
            self.inflight += 1;
            dev.commit()?;
            let t_submit = clock::hint_or_now(dev.clock_hint());
            self.slots[slot as usize].t_submit = t_submit;
            s.rec.note_submit(1);
            s.rec.note_depths(s.in_device, 1);
            let comps = &mut self.comps[..1];
            // The oldest request in flight is this one (what the general
            // loop's `oldest_inflight` finds for the napping models).
            let req = InFlight {
                submit_ns: t_submit,
                len: io.len,
                write: io.op == Op::Write,
            };
            let n = match self.completer.model() {
                CompletionModel::Poll => self.completer.poll_one(&mut **dev, comps)?,
                CompletionModel::Interrupt => {
                    self.completer.interrupt_one(&mut **dev, comps, req)?
                }
                _ => self.completer.wait_for(&mut **dev, comps, 1, req, 0)?,
            };
            if n == 0 {
                // A wait without a deadline ends with a completion; should one
                // not, the general loop takes it from here (it waits again).
                return Ok(());
            }
            if (comps[0].slot as usize) < self.slots.len() {
                s.rec.note_complete(1);
            }
            let t_seen = clock::hint_or_now(dev.clock_hint());
            let c = comps[0];
            self.finish(c, t_seen);
            self.completer.stats.qd1_path += 1;
        }
    }
}
