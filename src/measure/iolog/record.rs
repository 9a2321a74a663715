//! What a worker hands the log writer: fixed-size [`Record`]s in blocks of a
//! ring allocated before the clock starts.
//!
//! The ring has one producer (the worker) and one consumer (the writer
//! thread). The worker fills the block it owns with plain stores and, when the
//! block is full, publishes it with one release store; the writer hands blocks
//! back the same way. No allocation, lock or system call on the worker's side.
//!
//! When every block is waiting for the writer, a stream that waits (the
//! default: fio logs every I/O) spins briefly, then yields its CPU until the
//! writer hands a block back, and the time it waited is counted per stream
//! and reported; a stream that drops (`log_drop_when_full=1`) counts the
//! record dropped instead and never waits. A writer that has not started or
//! has ended is never waited for.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};

use crate::measure::clock;

/// Looks at the ring before the waiting worker starts yielding its CPU: a
/// writer in the middle of a drain hands a block back within microseconds.
const SPINS: u32 = 2000;

/// The consumer's state, for a producer deciding whether to wait for it.
const CONSUMER_NOT_STARTED: u8 = 0;
const CONSUMER_RUNNING: u8 = 1;
const CONSUMER_GONE: u8 = 2;

/// Records per block: a block is published (one atomic store) this often.
pub const BLOCK_RECORDS: usize = 1024;
/// Blocks per ring: how far the writer may fall behind before records drop
/// (64 x 1024 records of 56 bytes: 3.5 MiB per worker).
pub const RING_BLOCKS: usize = 64;

/// What one record carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Empty (never published).
    #[default]
    None,
    /// One I/O: `v` = [lat, clat, slat] in ns.
    Io,
    /// One averaged row: `v[0]` = value, `v[1]` = the [`LogType`] it belongs to.
    Avg,
    /// A histogram row starts: `v[0]` = how many [`Kind::HistBin`] records follow.
    HistHead,
    /// One non-empty histogram bin: `v[0]` = bin index, `v[1]` = I/Os in it.
    HistBin,
}

/// The log files a job may write; `Avg` records name theirs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum LogType {
    Slat = 0,
    Clat = 1,
    Lat = 2,
    Bw = 3,
    Iops = 4,
    Hist = 5,
}

impl LogType {
    pub const ALL: [LogType; 6] = [
        LogType::Slat,
        LogType::Clat,
        LogType::Lat,
        LogType::Bw,
        LogType::Iops,
        LogType::Hist,
    ];

    /// The `_type` part of fio's file name.
    pub fn suffix(self) -> &'static str {
        match self {
            LogType::Slat => "slat",
            LogType::Clat => "clat",
            LogType::Lat => "lat",
            LogType::Bw => "bw",
            LogType::Iops => "iops",
            LogType::Hist => "clat_hist",
        }
    }

    pub fn from_code(c: u64) -> Option<LogType> {
        LogType::ALL.get(c as usize).copied()
    }
}

/// One record (56 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    pub kind: Kind,
    /// fio's data direction: 0 read, 1 write, 2 trim.
    pub ddir: u8,
    /// The stream (job clone) on its worker.
    pub stream: u16,
    /// Block size in bytes (0 for averaged rows, as fio writes).
    pub bs: u32,
    /// Time since the stream's measurement began, in ns.
    pub t_ns: u64,
    pub offset: u64,
    pub v: [u64; 3],
    /// The ioprio the I/O was issued with (`Kind::Io`; fio logs it per I/O).
    pub ioprio: u16,
}

/// The blocks and the two counters that pass them between the threads.
pub struct Ring {
    blocks: Box<[UnsafeCell<Box<[Record]>>]>,
    /// Records used in each published block.
    lens: Box<[AtomicUsize]>,
    /// Blocks published by the producer (monotonic).
    head: AtomicU64,
    /// Blocks handed back by the consumer (monotonic).
    tail: AtomicU64,
    /// The producer is done: everything it will publish is published.
    closed: AtomicBool,
    /// Whether a consumer drains the ring (`CONSUMER_*`).
    consumer: AtomicU8,
}

// SAFETY: a block is touched by one side at a time. The producer writes only
// block `head % RING_BLOCKS` while `head - tail < RING_BLOCKS`; it publishes
// with a release store of `head`, and the consumer reads blocks in
// `tail..head` (acquire) and returns them with a release store of `tail`,
// which the producer acquires before reusing a block.
unsafe impl Sync for Ring {}
// SAFETY: every field is owned plain data (records, atomics): nothing in it is
// tied to the thread that made it, so moving the ring moves it whole.
unsafe impl Send for Ring {}

impl Ring {
    /// A ring of `blocks` blocks of `per_block` records, every page written
    /// now so the worker's first pass takes no page faults.
    pub fn new(blocks: usize, per_block: usize) -> Ring {
        Ring {
            blocks: (0..blocks)
                .map(|_| UnsafeCell::new(vec![Record::default(); per_block].into_boxed_slice()))
                .collect(),
            lens: (0..blocks).map(|_| AtomicUsize::new(0)).collect(),
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            consumer: AtomicU8::new(CONSUMER_NOT_STARTED),
        }
    }

    /// A consumer drains the ring from now on (a producer may wait for it).
    pub fn consumer_started(&self) {
        self.consumer.store(CONSUMER_RUNNING, Ordering::Release);
    }

    /// The consumer drains no more (it ended, failed or never ran): a
    /// producer waiting for room stops waiting.
    pub fn consumer_gone(&self) {
        self.consumer.store(CONSUMER_GONE, Ordering::Release);
    }

    fn consumer_running(&self) -> bool {
        self.consumer.load(Ordering::Acquire) == CONSUMER_RUNNING
    }

    fn nblocks(&self) -> u64 {
        self.blocks.len() as u64
    }

    /// Consumer: hand every published block to `f`, oldest first, then give the
    /// blocks back. Returns the records seen.
    pub fn drain(&self, mut f: impl FnMut(&[Record])) -> usize {
        let head = self.head.load(Ordering::Acquire);
        let mut tail = self.tail.load(Ordering::Relaxed);
        let mut n = 0;
        while tail < head {
            let i = (tail % self.nblocks()) as usize;
            let len = self.lens[i].load(Ordering::Relaxed);
            // SAFETY: block i is published (tail < head, acquired above) and not
            // handed back yet, so the producer does not touch it.
            let block = unsafe { &*self.blocks[i].get() };
            f(&block[..len]);
            n += len;
            tail += 1;
            self.tail.store(tail, Ordering::Release);
        }
        n
    }

    /// Consumer: whether the producer has finished (then one more drain gets all).
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

/// What one stream's records came to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamCounts {
    /// Records handed over.
    pub sent: u64,
    /// Records dropped because the writer had every block.
    pub dropped: u64,
    /// Times the stream waited for the writer to hand a block back.
    pub waits: u64,
    /// Engine-clock ns spent in those waits.
    pub wait_ns: u64,
}

/// The worker's end of a ring.
pub struct Producer {
    ring: std::sync::Arc<Ring>,
    /// Blocks published so far (the producer's copy of `head`).
    head: u64,
    /// Records in the block being filled; `None` when no block is free.
    fill: Option<usize>,
    per_block: usize,
    /// Records dropped because the writer had every block (all streams).
    pub dropped: u64,
    /// Records handed over (all streams).
    pub sent: u64,
    /// Per stream (a record's `stream`): its counts, and whether it waits
    /// for room (true) or drops (false) when the ring is full. A stream
    /// beyond these is counted in the totals only and drops.
    streams: Box<[(StreamCounts, bool)]>,
}

impl Producer {
    pub fn new(ring: std::sync::Arc<Ring>) -> Producer {
        let per_block = ring.blocks.first().map_or(0, |b| {
            // SAFETY: nothing has been published; only the producer exists yet.
            unsafe { (&*b.get()).len() }
        });
        Producer {
            ring,
            head: 0,
            fill: None,
            per_block,
            dropped: 0,
            sent: 0,
            streams: Box::new([]),
        }
    }

    /// Per stream: whether it waits for room when the ring is full (true)
    /// or drops the record (false). Set before the first push.
    pub fn with_streams(mut self, waits: impl IntoIterator<Item = bool>) -> Producer {
        self.streams = waits
            .into_iter()
            .map(|w| (StreamCounts::default(), w))
            .collect();
        self
    }

    /// Stream `stream`'s counts so far.
    pub fn counts(&self, stream: usize) -> StreamCounts {
        self.streams.get(stream).map(|s| s.0).unwrap_or_default()
    }

    /// Whether [`Producer::push`] would keep the record now (a block is being
    /// filled, or the writer has handed one back).
    #[inline]
    pub fn has_room(&self) -> bool {
        self.fill.is_some()
            || (self.per_block > 0
                && self.head - self.ring.tail.load(Ordering::Acquire) < self.ring.nblocks())
    }

    /// Hand one record over: when the ring is full, wait for room if its
    /// stream waits and the writer runs, else count it dropped.
    #[inline]
    pub fn push(&mut self, r: Record) {
        let fill = match self.fill {
            Some(f) => f,
            None => {
                let tail = self.ring.tail.load(Ordering::Acquire);
                if self.per_block == 0
                    || (self.head - tail >= self.ring.nblocks() && !self.wait_for_room(r.stream))
                {
                    self.dropped += 1;
                    if let Some(s) = self.streams.get_mut(r.stream as usize) {
                        s.0.dropped += 1;
                    }
                    return;
                }
                0
            }
        };
        let i = (self.head % self.ring.nblocks()) as usize;
        // SAFETY: block i is the producer's (head - tail < nblocks, acquired).
        unsafe { (&mut *self.ring.blocks[i].get())[fill] = r };
        self.sent += 1;
        if let Some(s) = self.streams.get_mut(r.stream as usize) {
            s.0.sent += 1;
        }
        if fill + 1 == self.per_block {
            self.fill = Some(fill + 1);
            self.publish();
        } else {
            self.fill = Some(fill + 1);
        }
    }

    /// The ring is full: when `stream` waits and a writer drains the ring,
    /// wait until it hands a block back (spinning first, then yielding the
    /// CPU) and count the wait. Returns whether there is room now.
    #[cold]
    #[inline(never)]
    fn wait_for_room(&mut self, stream: u16) -> bool {
        let Some(s) = self.streams.get(stream as usize) else {
            return false;
        };
        if !s.1 || !self.ring.consumer_running() {
            return false;
        }
        let t0 = clock::now_ns();
        let full = |p: &Producer| p.head - p.ring.tail.load(Ordering::Acquire) >= p.ring.nblocks();
        let mut spins = 0u32;
        let room = loop {
            if !full(self) {
                break true;
            }
            if !self.ring.consumer_running() {
                // One last look: the writer may have drained before it left.
                break !full(self);
            }
            if spins < SPINS {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        };
        let waited = clock::now_ns().saturating_sub(t0);
        if let Some(s) = self.streams.get_mut(stream as usize) {
            s.0.waits += 1;
            s.0.wait_ns += waited;
        }
        room
    }

    /// Publish the block being filled (if it holds anything).
    pub fn publish(&mut self) {
        let Some(fill) = self.fill.take() else { return };
        if fill == 0 {
            self.fill = Some(0);
            return;
        }
        let i = (self.head % self.ring.nblocks()) as usize;
        self.ring.lens[i].store(fill, Ordering::Relaxed);
        self.head += 1;
        self.ring.head.store(self.head, Ordering::Release);
    }

    /// Publish what is left and tell the consumer nothing more comes.
    pub fn close(&mut self) {
        self.publish();
        self.ring.closed.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn rec(i: u64) -> Record {
        Record {
            kind: Kind::Io,
            t_ns: i,
            ..Default::default()
        }
    }

    #[test]
    fn records_arrive_in_order_and_overflow_is_counted() {
        let ring = Arc::new(Ring::new(2, 3));
        let mut p = Producer::new(ring.clone());
        for i in 0..8 {
            p.push(rec(i));
        }
        // Two blocks of three are full; the seventh and eighth had no block.
        assert_eq!((p.sent, p.dropped), (6, 2));
        let mut seen = Vec::new();
        ring.drain(|b| seen.extend(b.iter().map(|r| r.t_ns)));
        assert_eq!(seen, vec![0, 1, 2, 3, 4, 5]);
        // Blocks handed back are reused; a partial block is published on close.
        p.push(rec(100));
        p.close();
        assert!(ring.is_closed());
        seen.clear();
        ring.drain(|b| seen.extend(b.iter().map(|r| r.t_ns)));
        assert_eq!(seen, vec![100]);
    }

    #[test]
    fn a_waiting_stream_loses_nothing_and_counts_its_waits() {
        let ring = Arc::new(Ring::new(4, 16));
        ring.consumer_started();
        let r2 = ring.clone();
        // The consumer drains only a full ring: the producer is sure to
        // find it full, and to wait.
        let consumer = std::thread::spawn(move || {
            let mut got = Vec::new();
            loop {
                let closed = r2.is_closed();
                let full = r2.head.load(Ordering::Acquire) - r2.tail.load(Ordering::Acquire)
                    == r2.nblocks();
                if full || closed {
                    r2.drain(|b| got.extend(b.iter().map(|r| r.t_ns)));
                }
                if closed {
                    return got;
                }
                std::thread::yield_now();
            }
        });
        let mut p = Producer::new(ring.clone()).with_streams([true]);
        for i in 0..10_000 {
            p.push(rec(i));
        }
        p.close();
        let got = consumer.join().unwrap();
        ring.consumer_gone();
        assert_eq!(got, (0..10_000).collect::<Vec<_>>());
        let c = p.counts(0);
        assert_eq!((c.sent, c.dropped), (10_000, 0));
        assert!(c.waits > 0, "{c:?}");
    }

    #[test]
    fn a_dropping_stream_or_a_gone_writer_never_waits() {
        let ring = Arc::new(Ring::new(2, 3));
        ring.consumer_started();
        let mut p = Producer::new(ring.clone()).with_streams([false, true]);
        for i in 0..8 {
            p.push(rec(i));
        }
        assert_eq!(
            p.counts(0),
            StreamCounts {
                sent: 6,
                dropped: 2,
                waits: 0,
                wait_ns: 0
            }
        );
        // A waiting stream whose writer has gone drops too.
        ring.consumer_gone();
        p.push(Record {
            stream: 1,
            ..rec(9)
        });
        let c = p.counts(1);
        assert_eq!((c.sent, c.dropped, c.waits), (0, 1, 0));
    }

    #[test]
    fn a_consumer_thread_sees_every_record_it_was_not_told_was_dropped() {
        let ring = Arc::new(Ring::new(4, 16));
        let r2 = ring.clone();
        let consumer = std::thread::spawn(move || {
            let mut got = Vec::new();
            loop {
                let closed = r2.is_closed();
                r2.drain(|b| got.extend(b.iter().map(|r| r.t_ns)));
                if closed {
                    return got;
                }
                std::thread::yield_now();
            }
        });
        let mut p = Producer::new(ring);
        for i in 0..100_000 {
            p.push(rec(i));
        }
        p.close();
        let got = consumer.join().unwrap();
        assert_eq!(got.len() as u64 + p.dropped, 100_000);
        assert!(got.windows(2).all(|w| w[0] < w[1]), "in order");
    }
}
