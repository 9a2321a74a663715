//! fio's per-job logs: `write_lat_log`, `write_bw_log`, `write_iops_log` and
//! `write_hist_log`, in fio's file names and columns so fio's own tools
//! (`fiologparser.py`, `fio2gnuplot`, `fiologparser_hist.py`) read them.
//!
//! The worker's part ([`Logger::completed`]) runs once per measured I/O: with
//! `log_avg_msec=0` it stores one [`Record`] into a preallocated ring
//! ([`record`]); with windows it adds to per-direction sums and sends one
//! record per window and log. Histogram rows (`log_hist_msec`) are counted on
//! the worker in fio's bins and sent as the non-empty bins of each window. A
//! writer thread ([`writer`]) turns records into text. When the writer falls
//! a whole ring behind, the worker waits for it (every I/O is in the log, as
//! in fio's) and the run reports how long it waited; with
//! `log_drop_when_full=1` the records are dropped and counted instead, never
//! waited for.
//!
//! fio's `write_iolog` (the I/O trace `read_iolog` replays) is [`trace_log`],
//! on the same ring.
//!
//! Files are created before the first I/O, so a directory that cannot be
//! written fails the run before it starts; a run that never starts removes
//! the files it created.

pub mod compress;
pub mod epoch;
pub mod format;
pub mod record;
pub mod trace_log;
mod writer;

use std::fs::{File, OpenOptions};
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::request::Op;
use format::{Columns, PLAT_NR, plat_index};
pub use record::StreamCounts;
use record::{BLOCK_RECORDS, Kind, LogType, Producer, RING_BLOCKS, Record, Ring};

/// Log errors: each names the file and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum IologError {
    #[error(
        "job '{job}': cannot create log file '{}' ({option}): {err}; point {option} at a directory that exists and can be written",
        .path.display()
    )]
    Create {
        job: String,
        option: &'static str,
        path: PathBuf,
        err: std::io::Error,
    },
    #[error("writing log file '{}': {err}; free space there or log less (log_avg_msec)", .path.display())]
    Write { path: PathBuf, err: std::io::Error },
    #[error("the log writer thread could not start: {0}; run without logs or with fewer jobs")]
    Spawn(std::io::Error),
    #[error("the log writer thread panicked; the logs are incomplete")]
    WriterPanicked,
}

/// One stream's logs, decided from its job before the clock starts (the
/// engine reads the job's options: `engine::joblogs`).
#[derive(Clone, Debug)]
pub struct StreamLogs {
    pub job: String,
    /// Per [`LogType`]: the file, the option that asked for it, and whether this
    /// stream is the first to write it (`per_job_logs=0` shares files).
    pub paths: [Option<(PathBuf, &'static str, bool)>; 6],
    pub cols: Columns,
    pub avg_msec: u32,
    pub hist_msec: u32,
    pub hist_coarseness: u8,
    pub max_value: bool,
    /// The backend has a submission latency (fio writes no slat rows
    /// otherwise); known once the backend is (see [`Logger::set_slat`]).
    pub slat: bool,
    /// The directions the job issues, `[read, write, trim]` (averaged
    /// bandwidth/IOPS rows are written for these, also in windows without I/O).
    pub dirs: [bool; LOG_DIRS],
    /// Timestamps on this clock's epoch (a clock_gettime id; see [`epoch`]),
    /// or None: from the stream's start.
    pub epoch_clock: Option<i32>,
    /// `log_store_compressed`: each file kept as `NAME.fz`, zlib streams of
    /// this many bytes of text each (`compress`; 0: one stream); None: text.
    pub store_fz: Option<u64>,
    /// `log_drop_when_full`: when the writer is a whole ring behind, drop
    /// this stream's records (counted) instead of waiting for the writer.
    pub drop_when_full: bool,
}

/// Directions a log row can have: fio's ddir column, 0 read, 1 write, 2 trim.
pub const LOG_DIRS: usize = 3;

/// fio's index of the job at `position` (0-based) in a run's report, where
/// every clone is a job of its own (no `group_reporting`).
pub fn job_index_from_position(position: usize) -> u32 {
    position as u32 + 1
}

/// fio's file name: `PREFIX_TYPE.N.log`, or `PREFIX_TYPE.log` with `per_job_logs=0`.
pub fn file_name(prefix: &str, ty: LogType, index: Option<u32>) -> PathBuf {
    PathBuf::from(match index {
        Some(n) => format!("{prefix}_{}.{n}.log", ty.suffix()),
        None => format!("{prefix}_{}.log", ty.suffix()),
    })
}

/// Sums of one direction over one window.
#[derive(Clone, Copy, Debug, Default)]
struct Acc {
    n: u64,
    /// lat, clat, slat.
    sum: [u64; 3],
    max: [u64; 3],
    bytes: u64,
}

/// One direction's histogram window.
#[derive(Debug)]
struct HistWin {
    counts: Box<[u32]>,
    /// Bins counted in this window, to send and clear only those.
    touched: Vec<u16>,
    start_ms: u64,
    last_bs: u32,
    last_t_ns: u64,
}

/// A stream's logging state on its worker.
#[derive(Debug)]
struct StreamState {
    cfg: StreamLogs,
    want: [bool; 6],
    window: u64,
    acc: [Acc; LOG_DIRS],
    last_t_ns: u64,
    seen: bool,
    hist: Option<Box<[HistWin; LOG_DIRS]>>,
}

/// What a run's logs came to.
#[derive(Clone, Debug, Default)]
pub struct LogOutcome {
    /// Records handed to the writer.
    pub sent: u64,
    /// Records dropped because the writer fell behind.
    pub dropped: u64,
    /// Per stream of the worker (in stream order; a stream without logs
    /// has zeros): its records, drops and waits for the writer.
    pub streams: Vec<StreamCounts>,
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub files: Vec<PathBuf>,
    /// The jobs whose records these are (for the message).
    pub jobs: Vec<String>,
}

/// A worker's logs: the streams' state, the ring's producer end, the writer.
pub struct Logger {
    streams: Vec<Option<StreamState>>,
    producer: Producer,
    /// The writer, until [`Logger::start`] runs it on its thread.
    pending: Option<writer::Writer>,
    writer: Option<std::thread::JoinHandle<Result<(), IologError>>>,
    created: Vec<PathBuf>,
    files: Vec<PathBuf>,
    closed: bool,
    /// Per stream: ns added to its rows' times (epoch timestamps), shared with
    /// the writer; 0 = times from the stream's start.
    epochs: Arc<[AtomicU64]>,
}

impl std::fmt::Debug for Logger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logger")
            .field("files", &self.files)
            .field("sent", &self.producer.sent)
            .field("dropped", &self.producer.dropped)
            .finish()
    }
}

impl Logger {
    /// Create every file; `streams[i]` is the worker's stream i. None when no
    /// stream logs anything. [`Logger::start`] starts the writer.
    pub fn open(streams: Vec<Option<StreamLogs>>) -> Result<Option<Logger>, IologError> {
        if streams.iter().all(Option::is_none) {
            return Ok(None);
        }
        let mut files: Vec<(PathBuf, BufWriter<File>)> = Vec::new();
        let mut fz: Vec<Option<u64>> = Vec::new();
        let mut created = Vec::new();
        let mut outs = Vec::new();
        let cleanup = |created: &[PathBuf]| {
            for p in created {
                let _ = std::fs::remove_file(p);
            }
        };
        for s in &streams {
            let Some(s) = s else {
                outs.push(None);
                continue;
            };
            let mut idx: [Option<usize>; 6] = [None; 6];
            for ty in LogType::ALL {
                let Some((path, option, first)) = &s.paths[ty as usize] else {
                    continue;
                };
                if let Some(i) = files.iter().position(|(p, _)| p == path) {
                    idx[ty as usize] = Some(i);
                    continue;
                }
                let existed = path.exists();
                let opened = OpenOptions::new()
                    .create(true)
                    .write(true)
                    .truncate(*first)
                    .append(!*first)
                    .open(path);
                let f = match opened {
                    Ok(f) => f,
                    Err(err) => {
                        cleanup(&created);
                        return Err(IologError::Create {
                            job: s.job.clone(),
                            option,
                            path: path.clone(),
                            err,
                        });
                    }
                };
                if !existed {
                    created.push(path.clone());
                }
                idx[ty as usize] = Some(files.len());
                files.push((path.clone(), BufWriter::with_capacity(64 * 1024, f)));
                fz.push(s.store_fz);
            }
            outs.push(Some(writer::StreamOut {
                files: idx,
                cols: s.cols,
                hist_stride: 1 << s.hist_coarseness,
            }));
        }
        let ring = Arc::new(Ring::new(RING_BLOCKS, BLOCK_RECORDS));
        let producer = Producer::new(ring.clone()).with_streams(
            streams
                .iter()
                .map(|s| s.as_ref().is_some_and(|s| !s.drop_when_full)),
        );
        let names: Vec<PathBuf> = files.iter().map(|(p, _)| p.clone()).collect();
        let epochs: Arc<[AtomicU64]> = streams.iter().map(|_| AtomicU64::new(0)).collect();
        let mut pending = writer::Writer::new(ring, files, outs, epochs.clone());
        pending.store_compressed(fz);
        let states = streams
            .into_iter()
            .map(|s| {
                s.map(|cfg| {
                    let mut want = [false; 6];
                    for ty in LogType::ALL {
                        want[ty as usize] = cfg.paths[ty as usize].is_some();
                    }
                    let hist = (want[LogType::Hist as usize] && cfg.hist_msec > 0).then(|| {
                        Box::new([0; LOG_DIRS].map(|_| HistWin {
                            counts: vec![0u32; PLAT_NR].into_boxed_slice(),
                            touched: Vec::with_capacity(PLAT_NR),
                            start_ms: 0,
                            last_bs: 0,
                            last_t_ns: 0,
                        }))
                    });
                    StreamState {
                        cfg,
                        want,
                        window: 0,
                        acc: [Acc::default(); LOG_DIRS],
                        last_t_ns: 0,
                        seen: false,
                        hist,
                    }
                })
            })
            .collect();
        Ok(Some(Logger {
            streams: states,
            producer,
            pending: Some(pending),
            writer: None,
            created,
            files: names,
            closed: false,
            epochs,
        }))
    }

    /// Start the writer thread, knowing whether the worker's backend has a
    /// submission latency: a synchronous one has none, and its slat log stays
    /// empty, as fio's does.
    pub fn start(&mut self, slat: bool) -> Result<(), IologError> {
        let Some(mut w) = self.pending.take() else {
            return Ok(());
        };
        for s in self.streams.iter_mut().flatten() {
            s.cfg.slat = slat;
            s.want[LogType::Slat as usize] = slat && s.cfg.paths[LogType::Slat as usize].is_some();
        }
        if !slat {
            w.no_slat();
        }
        let ring = w.ring.clone();
        ring.consumer_started();
        let h = std::thread::Builder::new()
            .name("iolab-log".into())
            .spawn(move || w.run())
            .map_err(|e| {
                ring.consumer_gone();
                IologError::Spawn(e)
            })?;
        self.writer = Some(h);
        Ok(())
    }

    /// The streams' measurements begin at these engine times (in stream
    /// order): streams logging on an epoch read their clock for that moment.
    /// Called once as the worker's run starts, before the first record.
    pub fn began(&mut self, began_ns: impl Iterator<Item = u64>) {
        for ((s, e), at) in self.streams.iter().zip(self.epochs.iter()).zip(began_ns) {
            if let Some(id) = s.as_ref().and_then(|s| s.cfg.epoch_clock) {
                // Relaxed: the ring's release/acquire orders it before the
                // records the writer reads it for.
                e.store(epoch::base_ns(id, at), Ordering::Relaxed);
            }
        }
    }

    /// A measured I/O of `stream` completed `t_ns` after its measurement began.
    /// Hot path: plain stores into preallocated memory.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn completed(
        &mut self,
        stream: u16,
        op: Op,
        t_ns: u64,
        lat: u64,
        clat: u64,
        slat: u64,
        offset: u64,
        bs: u32,
        ioprio: u16,
    ) {
        let ddir = match op {
            Op::Read => 0u8,
            Op::Write => 1,
            Op::Trim => 2,
            Op::Fsync => return,
        };
        let Some(Some(s)) = self.streams.get_mut(stream as usize) else {
            return;
        };
        s.seen = true;
        s.last_t_ns = t_ns;
        let p = &mut self.producer;
        if let Some(h) = s.hist.as_deref_mut() {
            let w = &mut h[ddir as usize];
            let bin = plat_index(clat);
            if w.counts[bin] == 0 {
                w.touched.push(bin as u16);
            }
            w.counts[bin] += 1;
            w.last_bs = bs;
            w.last_t_ns = t_ns;
            let t_ms = t_ns / 1_000_000;
            if t_ms.saturating_sub(w.start_ms) >= s.cfg.hist_msec as u64 {
                send_hist(p, stream, ddir, w);
                w.start_ms = t_ms;
            }
        }
        let logs_rows = s.want[..5].iter().any(|&w| w);
        if !logs_rows {
            return;
        }
        if s.cfg.avg_msec == 0 {
            p.push(Record {
                kind: Kind::Io,
                ddir,
                stream,
                bs,
                t_ns,
                offset,
                v: [lat, clat, slat],
                ioprio,
            });
            return;
        }
        let window = t_ns / (s.cfg.avg_msec as u64 * 1_000_000);
        if window > s.window {
            flush_windows(p, stream, s, window);
        }
        let a = &mut s.acc[ddir as usize];
        a.n += 1;
        a.bytes += bs as u64;
        for (i, v) in [lat, clat, slat].into_iter().enumerate() {
            a.sum[i] += v;
            a.max[i] = a.max[i].max(v);
        }
    }

    /// End of the run: send the last partial windows, let the writer finish,
    /// and say what the logs came to.
    pub fn close(&mut self) -> Result<LogOutcome, IologError> {
        if !self.closed {
            for (i, s) in self.streams.iter_mut().enumerate() {
                let Some(s) = s else { continue };
                let stream = i as u16;
                if s.cfg.avg_msec > 0 && s.seen {
                    send_window(&mut self.producer, stream, s, s.last_t_ns, true);
                }
                if let Some(h) = s.hist.as_deref_mut() {
                    for (d, w) in h.iter_mut().enumerate() {
                        send_hist(&mut self.producer, stream, d as u8, w);
                    }
                }
            }
            self.producer.close();
            self.closed = true;
        }
        let res = match self.writer.take() {
            Some(h) => h.join().map_err(|_| IologError::WriterPanicked)?,
            None => Ok(()),
        };
        res?;
        Ok(LogOutcome {
            sent: self.producer.sent,
            dropped: self.producer.dropped,
            streams: (0..self.streams.len())
                .map(|i| self.producer.counts(i))
                .collect(),
            files: self.files.clone(),
            jobs: self
                .streams
                .iter()
                .flatten()
                .map(|s| s.cfg.job.clone())
                .collect(),
        })
    }
}

impl Drop for Logger {
    /// A logger dropped without [`Logger::close`] belongs to a run that did not
    /// start (another worker failed to set up): leave nothing behind.
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

/// Send the non-empty bins of a histogram window and clear them.
fn send_hist(p: &mut Producer, stream: u16, ddir: u8, w: &mut HistWin) {
    if w.touched.is_empty() {
        return;
    }
    p.push(Record {
        kind: Kind::HistHead,
        ddir,
        stream,
        bs: w.last_bs,
        t_ns: w.last_t_ns,
        offset: 0,
        v: [w.touched.len() as u64, 0, 0],
        ioprio: 0,
    });
    for &b in &w.touched {
        let b = b as usize;
        p.push(Record {
            kind: Kind::HistBin,
            ddir,
            stream,
            bs: 0,
            t_ns: w.last_t_ns,
            offset: 0,
            v: [b as u64, w.counts[b] as u64, 0],
            ioprio: 0,
        });
        w.counts[b] = 0;
    }
    w.touched.clear();
}

/// Close the current window and any empty ones before `window`.
#[cold]
fn flush_windows(p: &mut Producer, stream: u16, s: &mut StreamState, window: u64) {
    let ms = s.cfg.avg_msec as u64 * 1_000_000;
    send_window(p, stream, s, (s.window + 1) * ms, false);
    // Windows without a completion: bandwidth and IOPS were zero there.
    for w in s.window + 1..window {
        send_window(p, stream, s, (w + 1) * ms, false);
    }
    s.window = window;
}

/// One window's rows at `end_ns`; `partial`: the run ended inside it.
fn send_window(p: &mut Producer, stream: u16, s: &mut StreamState, end_ns: u64, partial: bool) {
    let span_ns = if partial {
        end_ns.saturating_sub(s.window * s.cfg.avg_msec as u64 * 1_000_000)
    } else {
        s.cfg.avg_msec as u64 * 1_000_000
    };
    for d in 0..LOG_DIRS as u8 {
        let a = std::mem::take(&mut s.acc[d as usize]);
        let mut row = |ty: LogType, value: u64| {
            if s.want[ty as usize] {
                p.push(Record {
                    kind: Kind::Avg,
                    ddir: d,
                    stream,
                    bs: 0,
                    t_ns: end_ns,
                    offset: 0,
                    v: [value, ty as u64, 0],
                    ioprio: 0,
                });
            }
        };
        if a.n > 0 {
            for (i, ty) in [LogType::Lat, LogType::Clat, LogType::Slat]
                .into_iter()
                .enumerate()
            {
                let v = if s.cfg.max_value {
                    a.max[i]
                } else {
                    a.sum[i].checked_div(a.n).unwrap_or(0)
                };
                row(ty, v);
            }
        }
        if s.cfg.dirs[d as usize] && span_ns > 0 {
            // fio's units: KiB/s and I/Os per second over the window.
            row(
                LogType::Bw,
                (a.bytes as u128 * 1_000_000_000 / span_ns as u128 / 1024) as u64,
            );
            row(
                LogType::Iops,
                (a.n as u128 * 1_000_000_000 / span_ns as u128) as u64,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream writing latency and IOPS logs per I/O as `PREFIX_*.1.log`.
    fn stream(prefix: &str) -> StreamLogs {
        let path = |ty: LogType| Some((file_name(prefix, ty, Some(1)), "write_lat_log", true));
        StreamLogs {
            job: "j".into(),
            paths: [
                path(LogType::Slat),
                path(LogType::Clat),
                path(LogType::Lat),
                None,
                path(LogType::Iops),
                None,
            ],
            cols: Columns::default(),
            avg_msec: 0,
            hist_msec: 0,
            hist_coarseness: 0,
            max_value: false,
            slat: true,
            dirs: [true, false, false],
            epoch_clock: None,
            store_fz: None,
            drop_when_full: false,
        }
    }

    #[test]
    fn log_drop_when_full_costs_records_not_waiting_and_they_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("d").display().to_string();
        let mut s = stream(&prefix);
        s.drop_when_full = true;
        let mut l = Logger::open(vec![Some(s)]).unwrap().unwrap();
        // The writer has not started: the ring fills, then records drop.
        let n = (RING_BLOCKS * BLOCK_RECORDS + 1000) as u64;
        for i in 0..n {
            l.completed(0, Op::Read, i * 1000, 30, 20, 10, i * 4096, 4096, 0);
        }
        l.start(true).unwrap();
        let o = l.close().unwrap();
        assert_eq!(o.dropped, 1000);
        assert_eq!(o.sent, n - 1000);
        assert_eq!(o.streams[0].dropped, 1000);
        assert_eq!(o.streams[0].waits, 0);
        let clat = std::fs::read_to_string(dir.path().join("d_clat.1.log")).unwrap();
        let rows = format::parse_rows(&clat).unwrap();
        assert_eq!(rows.len() as u64, o.sent);
        assert_eq!(
            rows[1],
            format::Row {
                t_ms: 0,
                value: 20,
                ddir: 0,
                bs: 4096,
                offset: None
            }
        );
    }

    #[test]
    fn by_default_every_record_reaches_the_file_however_slow_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("w").display().to_string();
        let mut l = Logger::open(vec![Some(stream(&prefix))]).unwrap().unwrap();
        l.start(true).unwrap();
        // Several rings' worth: the worker must wait for the writer.
        let n = (3 * RING_BLOCKS * BLOCK_RECORDS) as u64;
        for i in 0..n {
            l.completed(0, Op::Read, i * 1000, 30, 20, 10, i * 4096, 4096, 0);
        }
        let o = l.close().unwrap();
        assert_eq!((o.sent, o.dropped), (n, 0));
        assert_eq!(o.streams[0].sent, n);
        let clat = std::fs::read_to_string(dir.path().join("w_clat.1.log")).unwrap();
        assert_eq!(format::parse_rows(&clat).unwrap().len() as u64, n);
    }

    #[test]
    fn epoch_rows_add_the_clock_at_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("e").display().to_string();
        let mut s = stream(&prefix);
        s.epoch_clock = Some(libc::CLOCK_REALTIME);
        let mut l = Logger::open(vec![Some(s)]).unwrap().unwrap();
        l.start(true).unwrap();
        let wall_ms = |_: ()| epoch::read_clock_ns(libc::CLOCK_REALTIME).unwrap() / 1_000_000;
        let before = wall_ms(());
        l.began(std::iter::once(crate::measure::clock::now_ns()));
        let after = wall_ms(());
        l.completed(0, Op::Read, 1_500_000_000, 30, 20, 10, 0, 4096, 0);
        l.close().unwrap();
        let clat = std::fs::read_to_string(dir.path().join("e_clat.1.log")).unwrap();
        let t = format::parse_rows(&clat).unwrap()[0].t_ms;
        assert!(
            t >= before + 1500 && t <= after + 1500,
            "{before} {t} {after}"
        );
    }

    #[test]
    fn a_logger_that_never_ran_removes_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("gone").display().to_string();
        let l = Logger::open(vec![None, Some(stream(&prefix))]).unwrap();
        assert!(dir.path().join("gone_iops.1.log").exists());
        drop(l);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
