//! A job (clone) on a worker: its generator, pacing, recorder, verification and
//! the per-stream limits; and the request slot that carries one request from
//! issue to completion.

use crate::buf::Buffers;
use crate::job::ContinueOnError;
use crate::measure::recorder::Recorder;
use crate::report::raw::Accounting;
use crate::request::{Class, Flush, Op};
use crate::workload::verify::{Step, Verifier};
use crate::workload::{NextIo, Pacer};

/// A request slot: everything about one in-flight request that the loop needs
/// when its completion comes back.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Slot {
    pub(super) stream: u16,
    /// Which of the stream's files (`nrfiles`), the queue's file index.
    pub(super) file: u16,
    pub(super) op: Option<Op>,
    pub(super) class: Option<Class>,
    pub(super) offset: u64,
    pub(super) len: u32,
    pub(super) t_issue: u64,
    pub(super) t_submit: u64,
    /// Verify sequence number of a write (0 when the job does not verify).
    pub(super) seq: u64,
    /// Handed out and not yet completed: a completion for a slot that is not
    /// in flight is counted as spurious, never processed twice.
    pub(super) in_flight: bool,
    /// Performed inline by adaptive (synchronously, in this thread).
    pub(super) inline: bool,
    /// io_timeout expired and the backend was asked to abort it.
    pub(super) abort_tried: bool,
    pub(super) aborted: bool,
    /// The ioprio it was issued with (fio's per-I/O log column).
    pub(super) ioprio: u16,
    /// What an `Op::Fsync` flushes (a range's offset and length are filled
    /// in at dispatch, from `Stream::written`).
    pub(super) flush: Flush,
}

impl Slot {
    /// The slot of a request the workload issues at `now`.
    #[inline(always)]
    pub(super) fn issued(stream: u16, file: u16, io: &NextIo, now: u64) -> Slot {
        Slot {
            stream,
            file,
            op: Some(io.op),
            class: Some(io.class),
            offset: io.offset,
            len: io.len,
            // Latency starts when the workload issues the request: time held
            // in iolab's scheduler is part of what the job waits.
            t_issue: now,
            t_submit: 0,
            seq: 0,
            in_flight: true,
            inline: false,
            abort_tried: false,
            aborted: false,
            ioprio: 0,
            flush: io.flush,
        }
    }
}

/// fio's `serialize_overlap`: does `io` of stream `stream` (on its file
/// `file`) overlap a request of the same stream and file still in flight? A
/// scan of the worker's slots (its iodepth), only for jobs that ask.
#[inline]
pub(super) fn overlaps_in_flight(slots: &[Slot], stream: u16, file: u16, io: &NextIo) -> bool {
    if io.op == Op::Fsync {
        return false;
    }
    let (a, b) = (io.offset, io.offset + u64::from(io.len));
    slots.iter().any(|sl| {
        sl.in_flight
            && sl.stream == stream
            && sl.file == file
            && sl.op != Some(Op::Fsync)
            && sl.offset < b
            && a < sl.offset + u64::from(sl.len)
    })
}

/// What the stream issues next.
pub(super) enum Next {
    Io(NextIo),
    /// Nothing now (verification waits for writes in flight).
    Wait,
    Done,
}

/// One job (clone) running on a worker.
pub struct Stream {
    /// One generator, or one per file (`nrfiles`; `engine::files`).
    pub generator: crate::engine::files::Source,
    pub pacer: Pacer,
    pub iodepth: u32,
    pub ioprio: u16,
    pub rec: Recorder,
    /// Requests of this stream in the scheduler or the device.
    pub outstanding: u32,
    /// A request generated but not yet allowed to go (pacing, no free slot).
    pub(super) pending: Option<NextIo>,
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
    /// Buffered file target: (fd, offset, length) to drop from the page cache
    /// at every new pass over the region.
    pub invalidate: Option<(i32, u64, u64)>,
    /// Past ramp_time: completions are recorded.
    pub(super) measuring: bool,
    /// `runtime` (None: until the generator is done) and `ramp_time`, in ns.
    pub runtime_ns: Option<u64>,
    pub ramp_ns: u64,
    /// Data verification, when the job asks for it.
    pub verify: Option<Verifier>,
    /// Per-write buffer content (refill, scramble, dedupe); `None` when the
    /// buffers prepared at setup serve every write as they are.
    pub fill: Option<crate::workload::buffers::BufferFill>,
    pub continue_on_error: ContinueOnError,
    /// `ignore_error`: the errnos continue_on_error goes on after.
    pub ignore_error: crate::job::control::IgnoreError,
    /// `cmdprio_percentage`: the requests issued with the command priority.
    pub cmdprio: crate::engine::control::CmdPrio,
    pub acct: Accounting,
    /// This stream's writes generated and not yet completed.
    pub(super) writes_in_flight: u32,
    /// The runtime is over: no more workload requests (verification may go on).
    pub(super) workload_over: bool,
    /// Verification holds the next request until writes in flight complete.
    pub(super) held: bool,
    /// This stream's requests in the submit call or reap being counted (fio's
    /// submit/complete distributions are per job).
    pub(super) batch_n: u32,
    /// Requests handed to the backend and not yet complete (fio's depth: not
    /// counting those still in iolab's scheduler).
    pub(super) in_device: u32,
    /// `steadystate`: ends the stream once its rate is steady (`engine::steady`).
    pub steady: Option<crate::engine::steady::Detector>,
    /// `latency_target`: the depth search that caps `iodepth` (`engine::lat_target`).
    pub lat_target: Option<crate::engine::lat_target::LatTarget>,
    /// `fill_device`: a write failing with ENOSPC ends the workload cleanly.
    pub fill_device: bool,
    /// `flow`: holds requests while the job is ahead of its share (`engine::flow`).
    pub flow: crate::engine::flow::FlowGate,
    /// `max_latency`: a completion over it fails the job with ETIMEDOUT.
    pub max_lat: crate::measure::max_latency::MaxLatency,
    /// `serialize_overlap`: a request overlapping one in flight waits for it.
    pub serialize_overlap: bool,
    /// `unlink_each_loop` over several passes: the files made again between
    /// them (`engine::files::Relayout`).
    pub relayout: Option<Box<crate::engine::files::Relayout>>,
    /// Per file (the slot's file index): the bytes written since the file's
    /// last sync, (first byte, end), as fio's `first_write`/`last_write`;
    /// `sync_file_range` syncs that range. Sized at setup.
    pub(super) written: Vec<WrittenRange>,
}

/// The range of a file a stream wrote since that file's last sync: the
/// lowest offset and the highest end of the writes completed since (fio
/// widens it at each write's completion and clears it at each sync's).
/// Before the file's first sync the range starts at the file's start, as
/// fio's does (its file starts with both ends at 0, not cleared).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct WrittenRange {
    first: u64,
    end: u64,
}

impl WrittenRange {
    /// A write of `bytes` at `offset` completed.
    #[inline]
    pub(super) fn wrote(&mut self, offset: u64, bytes: u64) {
        self.first = self.first.min(offset);
        self.end = self.end.max(offset + bytes);
    }

    /// The file was synced: nothing written since.
    #[inline]
    pub(super) fn clear(&mut self) {
        *self = WrittenRange {
            first: u64::MAX,
            end: 0,
        };
    }

    /// (offset, length) written since the last sync; None when nothing was.
    #[inline]
    pub(super) fn range(&self) -> Option<(u64, u64)> {
        (self.end > self.first).then(|| (self.first, self.end - self.first))
    }
}

impl Stream {
    /// A write this stream issues into `slot`: counted in flight, and its
    /// buffer filled as the job's buffer options ask, before it is queued.
    #[inline]
    pub(super) fn issue_write(&mut self, bufs: &Buffers, slot: u32, io: &NextIo) {
        self.writes_in_flight += 1;
        if let Some(f) = self.fill.as_mut() {
            // SAFETY: the slot's buffer holds at least max bs bytes and
            // belongs to this request until it completes.
            let b =
                unsafe { std::slice::from_raw_parts_mut(bufs.ptr(slot as usize), io.len as usize) };
            f.before_write(b, io.offset);
        }
    }

    pub fn new(
        generator: impl Into<crate::engine::files::Source>,
        pacer: Pacer,
        iodepth: u32,
        ioprio: u16,
        rec: Recorder,
    ) -> Stream {
        Stream {
            generator: generator.into(),
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
            invalidate: None,
            measuring: false,
            runtime_ns: None,
            ramp_ns: 0,
            verify: None,
            fill: None,
            continue_on_error: ContinueOnError::None,
            ignore_error: Default::default(),
            cmdprio: Default::default(),
            acct: Accounting::default(),
            writes_in_flight: 0,
            workload_over: false,
            held: false,
            batch_n: 0,
            in_device: 0,
            steady: None,
            lat_target: None,
            fill_device: false,
            flow: Default::default(),
            max_lat: Default::default(),
            serialize_overlap: false,
            relayout: None,
            written: vec![WrittenRange::default()],
        }
    }

    /// Track the written range of `files` files (`sync_file_range`).
    pub fn track_files(&mut self, files: usize) {
        self.written = vec![WrittenRange::default(); files.max(1)];
    }

    /// Requests the stream may keep in flight: `iodepth`, or less while a
    /// latency target searches.
    #[inline]
    pub(super) fn depth(&self) -> u32 {
        self.lat_target.as_ref().map_or(self.iodepth, |l| l.depth())
    }

    #[inline]
    pub(super) fn next_request(&mut self) -> Next {
        let Some(v) = self.verify.as_mut() else {
            if self.workload_over {
                return Next::Done;
            }
            return self.generator.next_io().map_or(Next::Done, Next::Io);
        };
        loop {
            match v.step(self.writes_in_flight) {
                Step::Read(io) | Step::Resume(io) => return Next::Io(io),
                Step::Wait => return Next::Wait,
                Step::Done => return Next::Done,
                Step::Workload => {}
            }
            if !self.workload_over
                && let Some(io) = self.generator.next_io()
            {
                if self.generator.take_new_loop() && v.loop_ended(io) {
                    continue; // read back the last loop's blocks first
                }
                if v.pretend(&io) {
                    continue; // verify_only: walked, not issued
                }
                return Next::Io(io);
            }
            self.workload_over = true;
            v.workload_over();
        }
    }

    /// Note `errno` as the stream's first error, unless one came before: the
    /// job reports its first error, as fio's does.
    #[inline]
    pub(super) fn note_error(&mut self, errno: i32) {
        if self.rec.first_error == 0 {
            self.rec.first_error = errno;
        }
    }

    /// End the stream now (an error it may not continue after, or exitall).
    pub(super) fn stop(&mut self) {
        self.exhausted = true;
        self.pending = None;
        if let Some(v) = self.verify.as_mut() {
            v.stop();
        }
    }

    pub(super) fn done(&self) -> bool {
        self.exhausted && self.outstanding == 0 && self.pending.is_none()
    }

    /// Whether the stream has a request it could issue at `now` if a slot were
    /// free (not paced, not held by verification, depth left).
    pub(super) fn could_issue(&self, now: u64) -> bool {
        if self.exhausted || self.held || self.outstanding >= self.depth() {
            return false;
        }
        match &self.pending {
            Some(io) => {
                self.pacer.due_at(io.op.dir()) <= now
                    && !self.pacer.inline_held(now)
                    && !self.verify.as_ref().is_some_and(|v| v.blocked(io))
            }
            None => true,
        }
    }
}
