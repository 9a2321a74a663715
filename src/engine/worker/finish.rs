//! One completion, carried through to the stream it belongs to, in phases:
//! the slot is given back (`release`), the stream's counts follow (`settle`),
//! then either the error path (`failed`) or the data path (`succeeded`:
//! `fill_device` and verification), the completion model sees the latencies,
//! and, past `ramp_time`, the request is measured (`measure`).
//!
//! A stream's first error is recorded one way, `Stream::note_error` (the first
//! one wins, as fio's job error does); what ends the stream is said beside it.

use std::sync::atomic::Ordering;

use super::stream::{Slot, Stream};
use super::{Worker, bump};
use crate::completion::InFlight;
use crate::job::ContinueOnError;
use crate::measure::recorder::Sample;
use crate::request::{Class, Completion, Op};

/// A completed request's three latencies, fio's definitions (ns).
#[derive(Clone, Copy)]
struct Latencies {
    /// Issue to submission.
    slat: u64,
    /// Submission to completion seen.
    clat: u64,
    /// Issue to completion seen.
    lat: u64,
}

impl Latencies {
    #[inline(always)]
    fn of(slot: &Slot, t_seen: u64) -> Latencies {
        Latencies {
            slat: slot.t_submit.saturating_sub(slot.t_issue),
            clat: t_seen.saturating_sub(slot.t_submit),
            lat: t_seen.saturating_sub(slot.t_issue),
        }
    }
}

impl Worker {
    #[inline]
    pub(super) fn finish(&mut self, c: Completion, t_seen: u64) {
        let Some(slot) = self.release(c, t_seen) else {
            return;
        };
        let buf = self.bufs.ptr(c.slot as usize);
        let s = &mut self.streams[slot.stream as usize];
        s.settle(&slot, c.result, t_seen);
        let measuring = s.measuring;
        if c.result < 0 {
            s.failed(&slot, c.result, t_seen, measuring);
            return;
        }
        s.succeeded(&slot, c.result, t_seen, buf);
        let op = slot.op.unwrap_or(Op::Read);
        let t = Latencies::of(&slot, t_seen);
        let req = InFlight {
            submit_ns: slot.t_submit,
            len: slot.len,
            write: op == Op::Write,
        };
        self.completer.observe(req, t.lat, t.clat, slot.inline);
        if measuring {
            let t = if self.submit_in_clat {
                Latencies {
                    slat: 0,
                    clat: t.lat,
                    lat: t.lat,
                }
            } else {
                t
            };
            self.measure(&slot, c.result, t_seen, t);
        }
    }

    /// The slot back to the free list, the trace's and the scheduler's
    /// account of the request; `None` for a completion that is not ours
    /// (twice, or never issued), counted on its stream as spurious without
    /// freeing a slot or buffer that may be in use.
    #[inline(always)]
    fn release(&mut self, c: Completion, t_seen: u64) -> Option<Slot> {
        let si = c.slot as usize;
        let Some(&slot) = self.slots.get(si).filter(|s| s.in_flight) else {
            let owner = self.slots.get(si).map_or(0, |sl| sl.stream as usize);
            if let Some(s) = self.streams.get_mut(owner) {
                s.acct.spurious += 1;
            }
            return None;
        };
        self.slots[si].t_submit = 0;
        self.slots[si].in_flight = false;
        self.inflight -= 1;
        self.free.push(c.slot);
        // A synchronous call's submission starts at the call and ends with it.
        let (t_start, t_ret) = if self.sync_backend {
            (slot.t_submit, t_seen)
        } else {
            (slot.t_issue, slot.t_submit)
        };
        self.trace.finished(
            c.slot,
            slot.stream,
            slot.op.unwrap_or(Op::Read),
            slot.offset,
            slot.len,
            t_start,
            t_ret,
            t_seen,
        );
        let class = slot.class.unwrap_or(Class::Read);
        self.sched.complete(class, slot.len, t_seen);
        Some(slot)
    }

    /// A measured completion: the recorder's sample, `max_latency` and
    /// `latency_target`'s verdicts, the trace's per-request log and the live
    /// counters.
    #[inline(always)]
    fn measure(&mut self, slot: &Slot, result: i64, t_seen: u64, t: Latencies) {
        let op = slot.op.unwrap_or(Op::Read);
        let s = &mut self.streams[slot.stream as usize];
        if op != Op::Fsync && (result as u64) < slot.len as u64 {
            s.short_ios += 1;
            s.rec.record_short(op);
        }
        s.rec.record_sample(&Sample {
            op,
            class: slot.class.unwrap_or(Class::Read),
            bytes: result as u32,
            slat_ns: t.slat,
            clat_ns: t.clat,
            lat_ns: t.lat,
            done_ns: t_seen,
        });
        s.rec.record_prio(op, slot.ioprio, t.clat, t.lat);
        if s.max_lat.check(op, t.lat, slot.offset, slot.len) {
            s.stop(); // fio's max_latency: the job ends with ETIMEDOUT
            s.note_error(libc::ETIMEDOUT);
        }
        if s.lat_target.as_mut().is_some_and(|l| l.completed(t.lat)) {
            s.stop(); // 100% target missed at depth 1: fio's ETIMEDOUT
            s.note_error(libc::ETIMEDOUT);
        }
        let t_log = t_seen.saturating_sub(s.ramp_end_ns);
        self.trace.measured(
            slot.stream,
            op,
            t_log,
            t.lat,
            t.clat,
            t.slat,
            slot.offset,
            slot.len,
            slot.ioprio,
        );
        bump(&self.live.ios);
        self.live.bytes.store(
            self.live.bytes.load(Ordering::Relaxed) + result as u64,
            Ordering::Relaxed,
        );
    }
}

impl Stream {
    /// What every completion changes on its stream: the counts in flight,
    /// the pacer (below `rate_min` / `rate_iops_min` fio ends the job with
    /// EIO), and when the stream last finished a request.
    #[inline(always)]
    fn settle(&mut self, slot: &Slot, result: i64, t_seen: u64) {
        self.outstanding -= 1;
        self.in_device -= 1;
        if self
            .pacer
            .completed(t_seen, slot.op.map_or(0, Op::dir), result.max(0) as u64)
        {
            self.stop();
            self.note_error(libc::EIO);
        }
        self.finished_ns = t_seen;
        match slot.op {
            Some(Op::Write) => self.writes_in_flight -= 1,
            // fio clears the file's written range at every sync's
            // completion, whatever its kind or result.
            Some(Op::Fsync) => {
                if let Some(w) = self.written.get_mut(slot.file as usize) {
                    w.clear();
                }
            }
            _ => {}
        }
    }

    /// A request that failed (`result` a negative errno, or aborted by
    /// `io_timeout`): a full target ends a `fill_device` workload cleanly;
    /// anything else is counted, recorded while measuring, and ends the stream
    /// unless `continue_on_error` covers it.
    #[inline(always)]
    fn failed(&mut self, slot: &Slot, result: i64, t_seen: u64, measuring: bool) {
        let op = slot.op.unwrap_or(Op::Read);
        let errno = if slot.aborted {
            self.acct.timeouts += 1;
            libc::ETIMEDOUT
        } else {
            (-result) as i32
        };
        if op == Op::Write && crate::engine::verify_setup::is_full(self.fill_device, errno) {
            // The target is full: the workload ends here, without error.
            self.end_ns = t_seen;
            if let Some(v) = self.verify.as_mut() {
                v.write_done(slot.offset, slot.len, slot.seq, false);
            }
            return;
        }
        self.acct.errors += 1;
        self.errors += 1;
        if self.error.is_none() {
            self.error = Some((slot.offset, errno));
        }
        if measuring {
            // Counts the error in its direction and notes it as the first.
            self.rec.record_error(op, errno);
        }
        if let Some(v) = self.verify.as_mut() {
            match op {
                Op::Write => v.write_done(slot.offset, slot.len, slot.seq, false),
                Op::Read => v.read_failed(slot.offset, slot.len),
                Op::Trim | Op::Fsync => {}
            }
        }
        // fio stops a job at its first I/O error unless continue_on_error covers it.
        if !crate::engine::control::goes_on(self.continue_on_error, &self.ignore_error, op, errno) {
            self.stop();
        }
    }

    /// A request that completed: a short write ends a `fill_device` workload
    /// (the target is full), and verification sees the write or checks the
    /// read's data in `buf` (the slot's buffer).
    #[inline(always)]
    fn succeeded(&mut self, slot: &Slot, result: i64, t_seen: u64, buf: *mut u8) {
        self.acct.ok += 1;
        let op = slot.op.unwrap_or(Op::Read);
        let full = result as u64 >= slot.len as u64;
        if op == Op::Write {
            if !full && self.fill_device {
                self.end_ns = t_seen; // a short write: the target is full
            }
            if let Some(w) = self.written.get_mut(slot.file as usize) {
                w.wrote(slot.offset, result as u64);
            }
        }
        let Some(v) = self.verify.as_mut() else {
            return;
        };
        match op {
            // A short write left the block's tail as it was: not a block.
            Op::Write => v.write_done(slot.offset, slot.len, slot.seq, full),
            Op::Read => {
                // SAFETY: the read has completed into this slot's buffer,
                // which holds at least `len` bytes; nothing reuses the slot
                // before the completion is finished.
                // The check may swap a verify_offset header back in place.
                let data = unsafe { std::slice::from_raw_parts_mut(buf, slot.len as usize) };
                let bad = v.read_done(data, slot.offset, result).is_some();
                let fatal = v.fatal;
                if bad {
                    self.acct.verify_failures += 1;
                    // fio reports a verification failure as EILSEQ.
                    self.note_error(libc::EILSEQ);
                    let keep_going = matches!(
                        self.continue_on_error,
                        ContinueOnError::Verify | ContinueOnError::All
                    );
                    if fatal && !keep_going {
                        self.stop();
                    }
                }
            }
            Op::Trim | Op::Fsync => {}
        }
    }
}
