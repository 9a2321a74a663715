//! fio's `write_iolog`: every I/O a job issues, in fio's iolog version 3, so
//! `read_iolog` (fio's or iolab's) can replay it.
//!
//! Named `trace_log` because fio calls this file "the iolog" while this
//! folder's other logs are fio's latency/bandwidth/IOPS logs (which fio's
//! code also keeps under "iolog"): this one is the I/O trace, the others are
//! measurements.
//!
//! The file is opened for appending, as fio opens it, and starts with fio's
//! header, an `add` and an `open` line per file (written before the clock
//! starts). Each I/O the worker hands the backend is a line `TIME FILE
//! read|write|trim|sync OFFSET LENGTH`, TIME in microseconds since the log was
//! opened; the run's end adds a `close` line per file.
//!
//! The worker's part is one store into the same preallocated ring as the
//! per-I/O latency logs ([`super::record`]), drained by a writer thread. A
//! latency log may drop rows when its writer falls behind if the job asks
//! (`log_drop_when_full=1`); a log that is to be replayed never may, or the
//! replay is not the workload. So when every
//! block of the ring is waiting for the writer, the worker waits for it
//! (sleeping in 50 us steps), and the run reports how often and how long: the
//! only case where the log costs the worker more than a store. The ring
//! holds 64 Ki I/Os and the writer drains it every millisecond.
//!
//! Clones of a job name the same file (fio does not number it); each clone's
//! writer appends whole lines with one `write` at a time, so their lines
//! interleave but never tear (fio's clones may tear them).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::IologError;
use super::record::{BLOCK_RECORDS, Kind, Producer, RING_BLOCKS, Record, Ring};
use crate::measure::clock;
use crate::request::{Flush, Op};

/// fio's version line.
pub const HEADER: &str = "fio version 3 iolog";

/// The writer's look at the ring: often enough that a worker issuing 60 M
/// I/Os a second would not fill it in between.
const POLL: Duration = Duration::from_millis(1);
/// Bytes of whole lines gathered before one append.
const CHUNK: usize = 64 * 1024;
/// `Record::ddir` of a file's `close` line (I/Os use `Op::dir`).
const CLOSE: u8 = 0xff;
/// `Record::ddir` of an fdatasync and a sync_file_range (an fsync is
/// `Op::Fsync.dir()`): fio names each sync kind in the log.
const DATASYNC: u8 = 4;
const SYNC_RANGE: u8 = 5;

/// One stream's trace log, decided before the clock starts.
#[derive(Clone, Debug)]
pub struct TracePlan {
    pub job: String,
    pub path: PathBuf,
    /// The stream's files, by the index its requests carry, as the log names
    /// them (fio writes the name the job gave).
    pub files: Vec<String>,
}

/// What a run's trace logs came to.
#[derive(Clone, Debug, Default)]
pub struct TraceOutcome {
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub ios: u64,
    /// Times the worker waited for the writer, and for how long in all.
    pub waits: u64,
    pub wait_ns: u64,
    pub files: Vec<PathBuf>,
}

/// A worker's trace logs.
pub struct TraceLog {
    producer: Producer,
    /// Per stream: whether it logs.
    logs: Vec<bool>,
    start_ns: u64,
    writer: Option<std::thread::JoinHandle<Result<(), IologError>>>,
    /// Per stream: how many files (for the close lines).
    nfiles: Vec<u16>,
    waits: u64,
    wait_ns: u64,
    files: Vec<PathBuf>,
    /// Files this log created: removed if the run never starts.
    created: Vec<PathBuf>,
    closed: bool,
}

impl std::fmt::Debug for TraceLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceLog")
            .field("files", &self.files)
            .field("ios", &self.producer.sent)
            .finish()
    }
}

struct Out {
    path: PathBuf,
    file: File,
    buf: Vec<u8>,
}

impl Out {
    fn append(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            self.file.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }
}

/// Per stream: its output and its file names.
type StreamOut = Option<(usize, Vec<String>)>;

impl TraceLog {
    /// Open every stream's log (`plans[i]` is the worker's stream i), write
    /// the header and file lines, and start the writer. None when no stream
    /// logs.
    pub fn open(plans: Vec<Option<TracePlan>>) -> Result<Option<TraceLog>, IologError> {
        if plans.iter().all(Option::is_none) {
            return Ok(None);
        }
        let start_ns = clock::now_ns();
        let mut outs: Vec<Out> = Vec::new();
        let mut created = Vec::new();
        let mut streams: Vec<StreamOut> = Vec::new();
        let fail = |created: &[PathBuf]| {
            for p in created {
                let _ = std::fs::remove_file(p);
            }
        };
        for p in &plans {
            let Some(p) = p else {
                streams.push(None);
                continue;
            };
            let i = match outs.iter().position(|o| o.path == p.path) {
                Some(i) => i,
                None => {
                    let existed = p.path.exists();
                    let file = match OpenOptions::new().create(true).append(true).open(&p.path) {
                        Ok(f) => f,
                        Err(err) => {
                            fail(&created);
                            return Err(IologError::Create {
                                job: p.job.clone(),
                                option: "write_iolog",
                                path: p.path.clone(),
                                err,
                            });
                        }
                    };
                    if !existed {
                        created.push(p.path.clone());
                    }
                    outs.push(Out {
                        path: p.path.clone(),
                        file,
                        buf: Vec::with_capacity(CHUNK + 4096),
                    });
                    outs.len() - 1
                }
            };
            // Each stream's lines begin as a clone's in fio: the header, then
            // its files added and opened.
            let o = &mut outs[i];
            let t = 0;
            let _ = writeln!(o.buf, "{HEADER}");
            for f in &p.files {
                let _ = writeln!(o.buf, "{t} {f} add");
            }
            for f in &p.files {
                let _ = writeln!(o.buf, "{t} {f} open");
            }
            if let Err(err) = o.append() {
                fail(&created);
                return Err(IologError::Write {
                    path: o.path.clone(),
                    err,
                });
            }
            streams.push(Some((i, p.files.clone())));
        }
        let ring = Arc::new(Ring::new(RING_BLOCKS, BLOCK_RECORDS));
        let producer = Producer::new(ring.clone());
        let logs = streams.iter().map(Option::is_some).collect();
        let nfiles = streams
            .iter()
            .map(|s| s.as_ref().map_or(0, |(_, f)| f.len() as u16))
            .collect();
        let files = outs.iter().map(|o| o.path.clone()).collect();
        let writer = Writer {
            ring,
            outs,
            streams,
            error: None,
        };
        let h = std::thread::Builder::new()
            .name("iolab-iolog".into())
            .spawn(move || writer.run())
            .map_err(|e| {
                fail(&created);
                IologError::Spawn(e)
            })?;
        Ok(Some(TraceLog {
            producer,
            logs,
            start_ns,
            writer: Some(h),
            nfiles,
            waits: 0,
            wait_ns: 0,
            files,
            created,
            closed: false,
        }))
    }

    /// The run starts now: I/O times count from here (the file lines
    /// written at [`TraceLog::open`] say 0, as fio's come microseconds before
    /// its first I/O).
    pub fn began(&mut self, now_ns: u64) {
        self.start_ns = now_ns;
    }

    /// Stream `stream` hands the backend an I/O on its file `file`. Hot
    /// path: a clock read and a store, unless the writer is a whole ring behind.
    #[inline]
    pub fn issued(&mut self, stream: u16, file: u16, op: Op, flush: Flush, offset: u64, len: u32) {
        if !self.logs.get(stream as usize).copied().unwrap_or(false) {
            return;
        }
        let ddir = match (op, flush) {
            (Op::Fsync, Flush::Data) => DATASYNC,
            (Op::Fsync, Flush::Range { .. }) => SYNC_RANGE,
            _ => op.dir() as u8,
        };
        if !self.producer.has_room() {
            self.wait_for_room();
        }
        self.producer.push(Record {
            kind: Kind::Io,
            ddir,
            stream,
            bs: len,
            t_ns: clock::now_ns().saturating_sub(self.start_ns),
            offset,
            v: [file as u64, 0, 0],
            ioprio: 0,
        });
    }

    #[cold]
    #[inline(never)]
    fn wait_for_room(&mut self) {
        let t0 = clock::now_ns();
        self.waits += 1;
        while !self.producer.has_room() {
            std::thread::sleep(Duration::from_micros(50));
        }
        self.wait_ns += clock::now_ns() - t0;
    }

    /// An end-of-job fsync (`end_fsync`, `fsync_on_close`) of file `file`:
    /// fio sends it through its I/O path, so its log has a `sync` line for
    /// each file of each job, before the close lines. Offset and length are
    /// 0, as iolab's other sync lines (fio's repeat a reused request's old
    /// offset).
    pub fn end_sync(&mut self, file: u16) {
        let t_ns = clock::now_ns().saturating_sub(self.start_ns);
        for s in 0..self.nfiles.len() {
            if !self.logs[s] || self.nfiles[s] <= file {
                continue;
            }
            if !self.producer.has_room() {
                self.wait_for_room();
            }
            self.producer.push(Record {
                kind: Kind::Io,
                ddir: Op::Fsync.dir() as u8,
                stream: s as u16,
                t_ns,
                v: [file as u64, 0, 0],
                ..Default::default()
            });
        }
    }

    /// End of the run: the close lines, then the writer finishes.
    pub fn close(&mut self) -> Result<TraceOutcome, IologError> {
        if !self.closed {
            let t_ns = clock::now_ns().saturating_sub(self.start_ns);
            for s in 0..self.nfiles.len() {
                let n = self.nfiles[s];
                if !self.logs[s] {
                    continue;
                }
                for f in 0..n {
                    if !self.producer.has_room() {
                        self.wait_for_room();
                    }
                    self.producer.push(Record {
                        kind: Kind::Io,
                        ddir: CLOSE,
                        stream: s as u16,
                        t_ns,
                        v: [f as u64, 0, 0],
                        ..Default::default()
                    });
                }
            }
            self.producer.close();
            self.closed = true;
        }
        if let Some(h) = self.writer.take() {
            h.join().map_err(|_| IologError::WriterPanicked)??;
        }
        let closes: u64 = self
            .nfiles
            .iter()
            .zip(&self.logs)
            .filter(|(_, l)| **l)
            .map(|(n, _)| *n as u64)
            .sum();
        Ok(TraceOutcome {
            ios: self.producer.sent.saturating_sub(closes),
            waits: self.waits,
            wait_ns: self.wait_ns,
            files: self.files.clone(),
        })
    }
}

impl Drop for TraceLog {
    /// Dropped without [`TraceLog::close`]: the run did not start; a file
    /// this log created goes (one that existed keeps its header lines, as an
    /// fio run that fails after opening its iolog leaves them).
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        self.producer.close();
        self.closed = true;
        if let Some(h) = self.writer.take() {
            let _ = h.join();
        }
        for p in &self.created {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// fio's name of a request's direction in the log.
fn action(ddir: u8) -> &'static str {
    match ddir {
        0 => "read",
        1 => "write",
        2 => "trim",
        DATASYNC => "datasync",
        SYNC_RANGE => "sync_file_range",
        CLOSE => "close",
        _ => "sync",
    }
}

struct Writer {
    ring: Arc<Ring>,
    outs: Vec<Out>,
    streams: Vec<StreamOut>,
    error: Option<IologError>,
}

impl Writer {
    fn run(mut self) -> Result<(), IologError> {
        loop {
            let closed = self.ring.is_closed();
            let ring = self.ring.clone();
            ring.drain(|block| {
                for r in block {
                    self.line(r);
                }
            });
            if closed {
                break;
            }
            std::thread::sleep(POLL);
        }
        for o in &mut self.outs {
            if let Err(err) = o.append().and_then(|_| o.file.flush())
                && self.error.is_none()
            {
                self.error = Some(IologError::Write {
                    path: o.path.clone(),
                    err,
                });
            }
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn line(&mut self, r: &Record) {
        if self.error.is_some() {
            return;
        }
        let Some(Some((i, names))) = self.streams.get(r.stream as usize) else {
            return;
        };
        let name = names.get(r.v[0] as usize).map_or("?", String::as_str);
        let o = &mut self.outs[*i];
        let t = r.t_ns / 1000;
        let _ = if r.ddir == CLOSE {
            writeln!(o.buf, "{t} {name} close")
        } else {
            writeln!(o.buf, "{t} {name} {} {} {}", action(r.ddir), r.offset, r.bs)
        };
        if o.buf.len() >= CHUNK
            && let Err(err) = o.append()
        {
            self.error = Some(IologError::Write {
                path: o.path.clone(),
                err,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_fios_and_nothing_is_dropped_when_the_writer_is_slow() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.log");
        std::fs::write(&path, "earlier run\n").unwrap();
        let plan = TracePlan {
            job: "j".into(),
            path: path.clone(),
            files: vec!["/x/a".into(), "/x/b".into()],
        };
        let mut t = TraceLog::open(vec![None, Some(plan)]).unwrap().unwrap();
        // More than the ring holds: the worker waits, nothing drops.
        let n = (RING_BLOCKS * BLOCK_RECORDS * 2) as u64;
        for i in 0..n {
            let op = [Op::Read, Op::Write, Op::Trim, Op::Fsync][(i % 4) as usize];
            t.issued(1, (i % 2) as u16, op, Flush::Full, i * 4096, 4096);
        }
        t.issued(0, 0, Op::Read, Flush::Full, 0, 1); // a stream that does not log
        t.issued(1, 0, Op::Fsync, Flush::Data, 0, 0);
        let range = Flush::Range {
            flags: 2,
            len: 8192,
        };
        t.issued(1, 0, Op::Fsync, range, 4096, 0);
        let o = t.close().unwrap();
        assert_eq!(o.ios, n + 2);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // Appended, as fio does.
        assert_eq!(lines[0], "earlier run");
        assert_eq!(lines[1], HEADER);
        assert!(lines[2].ends_with(" /x/a add") && lines[4].ends_with(" /x/a open"));
        let io: Vec<Vec<&str>> = lines[6..].iter().map(|l| l.split(' ').collect()).collect();
        assert_eq!(io.len() as u64, n + 4);
        assert_eq!(&io[0][1..], ["/x/a", "read", "0", "4096"]);
        assert_eq!(&io[3][1..], ["/x/b", "sync", "12288", "4096"]);
        assert_eq!(&io[n as usize][1..], ["/x/a", "datasync", "0", "0"]);
        assert_eq!(
            &io[n as usize + 1][1..],
            ["/x/a", "sync_file_range", "4096", "0"]
        );
        assert_eq!(&io[n as usize + 3][1..], ["/x/b", "close"]);
        let times: Vec<u64> = io.iter().map(|l| l[0].parse().unwrap()).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
    }
}
