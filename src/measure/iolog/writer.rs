//! The log writer: one thread per worker with logs, draining the worker's ring
//! into the log files as the run goes, so a log of every I/O needs no memory
//! proportional to the run and costs the worker a store per I/O.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::IologError;
use super::format::{self, Columns, PLAT_NR};
use super::record::{Kind, LogType, Record, Ring};

/// How often the writer looks at the ring. The ring holds 64 Ki records, so a
/// worker would need over 10 M logged I/Os per second to fill it in between.
const POLL: Duration = Duration::from_millis(5);

/// Where one stream's rows go.
pub(super) struct StreamOut {
    /// Index into the writer's files, per [`LogType`].
    pub files: [Option<usize>; 6],
    pub cols: Columns,
    /// Histogram bins summed per column (`2^log_hist_coarseness`).
    pub hist_stride: usize,
}

pub(super) struct Writer {
    pub ring: Arc<Ring>,
    pub files: Vec<(PathBuf, BufWriter<File>)>,
    pub streams: Vec<Option<StreamOut>>,
    /// The histogram row being assembled: (stream, ddir, bs, t_ms, bins still to come).
    hist_row: Option<(u16, u8, u32, u64, u64)>,
    bins: Vec<u64>,
    /// The first write error: later rows are dropped, the error is reported.
    error: Option<IologError>,
    /// Per stream: ns added to row times (log_unix_epoch and friends).
    epochs: Arc<[AtomicU64]>,
    /// Per file: compress it when done (`log_store_compressed`, chunk bytes).
    fz: Vec<Option<u64>>,
}

impl Writer {
    pub fn new(
        ring: Arc<Ring>,
        files: Vec<(PathBuf, BufWriter<File>)>,
        streams: Vec<Option<StreamOut>>,
        epochs: Arc<[AtomicU64]>,
    ) -> Writer {
        Writer {
            ring,
            files,
            streams,
            hist_row: None,
            bins: vec![0; PLAT_NR],
            error: None,
            epochs,
            fz: Vec::new(),
        }
    }

    /// Per file (in `files` order): keep it compressed (`super::compress`).
    pub fn store_compressed(&mut self, fz: Vec<Option<u64>>) {
        self.fz = fz;
    }

    /// Write no slat rows (the backend has no submission latency; the file
    /// stays, empty, as fio's does).
    pub fn no_slat(&mut self) {
        for s in self.streams.iter_mut().flatten() {
            s.files[LogType::Slat as usize] = None;
        }
    }

    /// Drain until the worker closes the ring, then flush the files.
    pub fn run(mut self) -> Result<(), IologError> {
        // However the writer ends (a panic included), a worker waiting for
        // room stops waiting.
        struct Gone(Arc<Ring>);
        impl Drop for Gone {
            fn drop(&mut self) {
                self.0.consumer_gone();
            }
        }
        let _gone = Gone(self.ring.clone());
        loop {
            let closed = self.ring.is_closed();
            let ring = self.ring.clone();
            let n = ring.drain(|block| {
                for r in block {
                    self.record(r);
                }
            });
            if closed {
                break;
            }
            // Sleep only when there was nothing to do: a writer behind a fast
            // worker keeps draining (the worker may be waiting for a block).
            if n == 0 {
                std::thread::sleep(POLL);
            }
        }
        self.end_hist_row();
        for (path, f) in &mut self.files {
            if let Err(e) = f.flush()
                && self.error.is_none()
            {
                self.error = Some(IologError::Write {
                    path: path.clone(),
                    err: e,
                });
            }
        }
        if self.error.is_none() {
            for (i, (path, _)) in self.files.iter().enumerate() {
                let Some(Some(chunk)) = self.fz.get(i) else {
                    continue;
                };
                if let Err(err) = super::compress::store(path, *chunk) {
                    self.error = Some(IologError::Write {
                        path: super::compress::fz_path(path),
                        err,
                    });
                    break;
                }
            }
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn record(&mut self, r: &Record) {
        if r.kind != Kind::HistBin {
            self.end_hist_row();
        }
        let Some(Some(s)) = self.streams.get(r.stream as usize) else {
            return;
        };
        let epoch = self
            .epochs
            .get(r.stream as usize)
            .map_or(0, |e| e.load(Ordering::Relaxed));
        let t_ms = (epoch + r.t_ns) / 1_000_000;
        let (cols, files) = (s.cols, s.files);
        match r.kind {
            Kind::None => {}
            Kind::Io => {
                let [lat, clat, slat] = r.v;
                // fio's per-I/O bandwidth: bytes over the completion latency,
                // in its units (bytes * 10^6 / ns).
                let bw = (r.bs as u64 * 1_000_000).checked_div(clat).unwrap_or(0);
                let rows = [
                    (LogType::Slat, slat),
                    (LogType::Clat, clat),
                    (LogType::Lat, lat),
                    (LogType::Bw, bw),
                    (LogType::Iops, 1),
                ];
                // The request's own priority (cmdprio picks it per request).
                let cols = Columns {
                    ioprio: r.ioprio,
                    ..cols
                };
                for (ty, value) in rows {
                    if let Some(f) = files[ty as usize] {
                        self.row(f, &cols, t_ms, value, r.ddir, r.bs, r.offset);
                    }
                }
            }
            Kind::Avg => {
                if let Some(f) = LogType::from_code(r.v[1]).and_then(|t| files[t as usize]) {
                    self.row(f, &cols, t_ms, r.v[0], r.ddir, 0, 0);
                }
            }
            Kind::HistHead => {
                if r.v[0] == 0 {
                    return;
                }
                self.bins.iter_mut().for_each(|b| *b = 0);
                self.hist_row = Some((r.stream, r.ddir, r.bs, t_ms, r.v[0]));
            }
            Kind::HistBin => {
                let Some(row) = self.hist_row.as_mut() else {
                    return;
                };
                if let Some(b) = self.bins.get_mut(r.v[0] as usize) {
                    *b += r.v[1];
                }
                row.4 = row.4.saturating_sub(1);
                if row.4 == 0 {
                    self.end_hist_row();
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn row(
        &mut self,
        f: usize,
        cols: &Columns,
        t_ms: u64,
        value: u64,
        ddir: u8,
        bs: u32,
        off: u64,
    ) {
        if self.error.is_some() {
            return;
        }
        let (path, w) = &mut self.files[f];
        if let Err(e) = format::write_row(w, cols, t_ms, value, ddir, bs, off) {
            self.error = Some(IologError::Write {
                path: path.clone(),
                err: e,
            });
        }
    }

    /// Write the histogram row being assembled (also when records of it were
    /// dropped: the drop is reported with the run).
    fn end_hist_row(&mut self) {
        let Some((stream, ddir, bs, t_ms, _)) = self.hist_row.take() else {
            return;
        };
        let Some(Some(s)) = self.streams.get(stream as usize) else {
            return;
        };
        let (Some(f), stride) = (s.files[LogType::Hist as usize], s.hist_stride.max(1)) else {
            return;
        };
        if self.error.is_some() {
            return;
        }
        let (path, w) = &mut self.files[f];
        let res = (|| {
            write!(w, "{t_ms}, {ddir}, {bs}")?;
            for chunk in self.bins.chunks(stride) {
                write!(w, ", {}", chunk.iter().sum::<u64>())?;
            }
            writeln!(w)
        })();
        if let Err(e) = res {
            self.error = Some(IologError::Write {
                path: path.clone(),
                err: e,
            });
        }
    }
}
