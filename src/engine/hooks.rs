//! The trace hooks a worker calls on the hot path: the per-request
//! user-timestamp log (`--trace`), the per-request allocation toggle
//! (`EngineOptions::alloc_per_request`) and fio's per-job logs
//! (`write_lat_log` and friends, see `measure::iolog`).
//!
//! Both cost one predictable branch when off. When on, logging is a store into a
//! log preallocated (and pre-touched) before the clock starts; the allocation
//! toggle allocates on purpose, since that is what it measures.

use crate::measure::blktrace::UserIo;
use crate::measure::iolog::trace_log::TraceLog;
use crate::measure::iolog::{IologError, Logger, StreamCounts};
use crate::request::Op;

/// Requests each worker can log: the join covers the first this many completions
/// of a worker (about 100 MiB of log); later ones are counted as not logged.
pub const LOG_CAPACITY: usize = 1 << 21;

#[derive(Clone, Copy, Debug)]
struct Logged {
    stream: u16,
    io: UserIo,
}

const EMPTY: Logged = Logged {
    stream: 0,
    io: UserIo {
        offset: 0,
        len: 0,
        op: Op::Read,
        t_submit_start: 0,
        t_submit_end: 0,
        t_complete_seen: 0,
    },
};

/// A worker's trace hooks: off by default.
#[derive(Debug, Default)]
pub struct Hooks {
    /// Either hook is on: the only test on the hot path when both are off.
    armed: bool,
    log_on: bool,
    log: Vec<Logged>,
    /// Completions per stream that did not fit in the log.
    dropped: Vec<u64>,
    pdu_bytes: usize,
    pdus: Vec<Option<Box<[u8]>>>,
    /// fio's per-job logs of this worker's streams (None: no job logs).
    pub iolog: Option<Box<Logger>>,
    /// fio's `write_iolog` of this worker's streams (None: none writes one).
    pub tracelog: Option<Box<TraceLog>>,
}

/// One stream's share of its worker's log.
#[derive(Clone, Debug, Default)]
pub struct StreamLog {
    pub ios: Vec<UserIo>,
    /// Completions not logged because the log was full.
    pub dropped: u64,
}

impl Hooks {
    /// Log every completion of `streams` streams, up to `capacity`. The memory is
    /// written here so the first pass over it takes no page faults in the loop.
    pub fn enable_log(&mut self, streams: usize, capacity: usize) {
        let mut log = vec![EMPTY; capacity];
        log.clear();
        self.log = log;
        self.dropped = vec![0; streams.max(1)];
        self.log_on = true;
        self.armed = true;
    }

    /// Allocate (zeroed, like kzalloc) and free `bytes` per request on the hot path.
    pub fn enable_alloc(&mut self, slots: usize, bytes: usize) {
        if bytes == 0 {
            return;
        }
        self.pdus = vec![None; slots];
        self.pdu_bytes = bytes;
        self.armed = true;
    }

    /// A request is about to be handed to the backend.
    #[inline(always)]
    pub fn dispatched(&mut self, slot: u32) {
        if self.armed && self.pdu_bytes != 0 {
            self.alloc_pdu(slot);
        }
    }

    #[inline(never)]
    fn alloc_pdu(&mut self, slot: u32) {
        let mut pdu = vec![0u8; self.pdu_bytes].into_boxed_slice();
        // A driver writes its per-request state; the store (and black_box) keep
        // the compiler from proving the allocation useless.
        pdu[0] = slot as u8;
        let pdu = std::hint::black_box(pdu);
        if let Some(p) = self.pdus.get_mut(slot as usize) {
            *p = Some(pdu);
        }
    }

    /// A request is handed to the backend: `write_iolog`'s line, when a job
    /// asks for one (one branch when none does).
    #[inline(always)]
    pub fn issued(
        &mut self,
        stream: u16,
        file: u16,
        op: Op,
        flush: crate::request::Flush,
        offset: u64,
        len: u32,
    ) {
        if let Some(t) = self.tracelog.as_deref_mut() {
            t.issued(stream, file, op, flush, offset, len);
        }
    }

    /// A request completed. `t_start` is when the request's submission began
    /// (issue, or the start of a synchronous call), `t_submit_end` when the
    /// submit call returned, `t_seen` when the worker saw the completion.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn finished(
        &mut self,
        slot: u32,
        stream: u16,
        op: Op,
        offset: u64,
        len: u32,
        t_start: u64,
        t_submit_end: u64,
        t_seen: u64,
    ) {
        if !self.armed {
            return;
        }
        if self.pdu_bytes != 0
            && let Some(p) = self.pdus.get_mut(slot as usize)
        {
            drop(std::hint::black_box(p.take()));
        }
        if self.log_on && op != Op::Fsync {
            if self.log.len() < self.log.capacity() {
                self.log.push(Logged {
                    stream,
                    io: UserIo {
                        offset,
                        len,
                        op,
                        t_submit_start: t_start,
                        t_submit_end,
                        t_complete_seen: t_seen,
                    },
                });
            } else if let Some(d) = self.dropped.get_mut(stream as usize) {
                *d += 1;
            }
        }
    }

    /// A measured request completed: fio's logs, when a job asks for them.
    /// `t_ns` is the time since the stream's measurement began.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn measured(
        &mut self,
        stream: u16,
        op: Op,
        t_ns: u64,
        lat: u64,
        clat: u64,
        slat: u64,
        offset: u64,
        len: u32,
        ioprio: u16,
    ) {
        if let Some(l) = self.iolog.as_deref_mut() {
            l.completed(stream, op, t_ns, lat, clat, slat, offset, len, ioprio);
        }
    }

    /// The streams' measurements begin at these engine times (job logs on an
    /// epoch read their clock for them).
    pub fn logs_began(&mut self, began_ns: impl Iterator<Item = u64>) {
        if let Some(t) = self.tracelog.as_deref_mut() {
            t.began(crate::measure::clock::now_ns());
        }
        if let Some(l) = self.iolog.as_deref_mut() {
            l.began(began_ns);
        }
    }

    /// After the run: finish the job logs. Returns a warning when the writer
    /// fell behind and records were dropped, and per stream what its logs
    /// came to (empty when the worker writes none).
    pub fn close_logs(&mut self) -> Result<(Option<String>, Vec<StreamCounts>), IologError> {
        let mut waited = None;
        if let Some(t) = self.tracelog.as_deref_mut() {
            let o = t.close()?;
            waited = (o.waits > 0).then(|| {
                format!(
                    "write_iolog {}: the worker waited {} times ({:.1} ms in all) for the iolog \
                     writer to catch up, so that the log misses no I/O; the run's times include \
                     those waits",
                    o.files
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    o.waits,
                    o.wait_ns as f64 / 1e6
                )
            });
        }
        let Some(l) = self.iolog.as_deref_mut() else {
            return Ok((waited, Vec::new()));
        };
        let o = l.close()?;
        let dropped = (o.dropped > 0).then(|| {
            format!(
                "job logs of {}: {} of {} log records dropped because the log writer fell \
                 behind (log_drop_when_full=1); the logs miss those I/Os (without it the \
                 worker waits for the writer; log_avg_msec=N logs one row per N ms)",
                o.jobs.join(", "),
                o.dropped,
                o.sent + o.dropped
            )
        });
        let warning = match (waited, dropped) {
            (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
            (a, b) => a.or(b),
        };
        Ok((warning, o.streams))
    }

    /// The log split by stream, in stream order (after the run).
    pub fn split_by_stream(&self, streams: usize) -> Vec<StreamLog> {
        let mut out = vec![StreamLog::default(); streams];
        if !self.log_on {
            return out;
        }
        for l in &self.log {
            if let Some(s) = out.get_mut(l.stream as usize) {
                s.ios.push(l.io);
            }
        }
        for (s, d) in out.iter_mut().zip(&self.dropped) {
            s.dropped = *d;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_is_bounded_and_split_by_stream() {
        let mut h = Hooks::default();
        h.finished(0, 0, Op::Read, 0, 4096, 1, 2, 3);
        assert!(
            h.split_by_stream(1)[0].ios.is_empty(),
            "off: nothing logged"
        );
        h.enable_log(2, 3);
        for i in 0..5u16 {
            h.finished(0, i % 2, Op::Write, i as u64 * 4096, 4096, 10, 20, 30);
        }
        h.finished(0, 1, Op::Fsync, 0, 0, 10, 20, 30);
        let s = h.split_by_stream(2);
        assert_eq!(s[0].ios.len(), 2);
        assert_eq!(s[1].ios.len(), 1);
        assert_eq!(s[0].ios[1].offset, 8192);
        assert_eq!((s[0].dropped, s[1].dropped), (1, 1));
    }

    #[test]
    fn alloc_hook_holds_one_pdu_per_slot_in_flight() {
        let mut h = Hooks::default();
        h.enable_alloc(2, 512);
        h.dispatched(1);
        assert!(h.pdus[1].as_ref().is_some_and(|p| p.len() == 512));
        h.finished(1, 0, Op::Read, 0, 4096, 1, 2, 3);
        assert!(h.pdus[1].is_none());
        // Out-of-range slots are ignored rather than panicking.
        h.dispatched(7);
        h.finished(7, 0, Op::Read, 0, 4096, 1, 2, 3);
    }
}
