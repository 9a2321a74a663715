//! Live progress: workers publish counters, a status line on a terminal reads
//! them (fio's `Jobs: 1 (f=1): [r(1)][40.0%][r=...][eta 00m:03s]` line).
//!
//! Workers register their [`LiveCounters`] when a group starts (not on the hot
//! path); the hot path only does single-writer stores into its own counters.
//! The status thread sums what is registered and redraws the line on stderr
//! every `--eta-interval` (twice a second for `iolab lab`): on a terminal only
//! unless `--eta=always` (then a line per update on a pipe) or `--eta=never`.
//!
//! `--status-interval=T` ([`StatusPrinter`]) reads the same counters every T
//! and prints the cumulative totals since the start, with the rate over the
//! last interval, on stdout whether or not it is a terminal (fio's periodic
//! status dump; fio's dump is its whole report, iolab's is the totals the
//! workers publish without locks: I/Os and bytes of every job together).

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::engine::worker::LiveCounters;
use crate::job::flags::Eta;

/// Every worker's counters since the process started. Held, not weakly
/// referenced: a worker that has finished still counts, so the totals never go
/// back (a status printed after the last worker ended showed 0 I/Os). A worker
/// costs a few words here, and a process runs at most thousands.
static LIVE: Mutex<Vec<Arc<LiveCounters>>> = Mutex::new(Vec::new());

/// Make a worker's counters visible to the status line.
pub fn register(c: &Arc<LiveCounters>) {
    let mut v = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    v.push(c.clone());
}

/// I/Os and bytes completed so far by every worker, finished or not.
pub fn totals() -> (u64, u64) {
    let v = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    v.iter().fold((0, 0), |(i, b), c| {
        (
            i + c.ios.load(Ordering::Relaxed),
            b + c.bytes.load(Ordering::Relaxed),
        )
    })
}

/// A named thread that runs until its owner is dropped: the drop raises the
/// thread's stop flag and waits for it to end, so nothing is printed after the
/// owner is gone. Both status printers are one of these.
struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    /// Starts `body` on a thread called `name`; `body` returns once the flag
    /// it is given is raised.
    fn spawn(
        name: &str,
        body: impl FnOnce(&AtomicBool) + Send + 'static,
    ) -> std::io::Result<Ticker> {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || body(&s))?;
        Ok(Ticker {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A status line redrawn on stderr until dropped. `label` names what runs,
/// `expected` is the planned duration (for the ETA), if known.
pub struct StatusLine {
    _ticker: Ticker,
}

/// When and how the status line is drawn (fio's `--eta`, `--eta-interval`,
/// `--eta-newline`).
#[derive(Clone, Copy, Debug)]
pub struct EtaOptions {
    pub when: Eta,
    /// Time between redraws.
    pub every: Duration,
    /// Keep the current line and start a new one every so often.
    pub newline: Option<Duration>,
}

impl Default for EtaOptions {
    fn default() -> Self {
        EtaOptions {
            when: Eta::Auto,
            every: Duration::from_millis(500),
            newline: None,
        }
    }
}

impl StatusLine {
    /// `None` when stderr is not a terminal: then nothing is printed at all.
    pub fn start(label: String, expected: Option<Duration>) -> Option<StatusLine> {
        Self::start_with(label, expected, EtaOptions::default())
    }

    /// As [`StatusLine::start`], drawn when `eta.when` says: on a terminal
    /// (auto), always (on a pipe or file each update is a line of its own),
    /// or never.
    pub fn start_with(
        label: String,
        expected: Option<Duration>,
        eta: EtaOptions,
    ) -> Option<StatusLine> {
        let terminal = std::io::stderr().is_terminal();
        match eta.when {
            Eta::Never => return None,
            Eta::Auto if !terminal => return None,
            Eta::Auto | Eta::Always => {}
        }
        Ticker::spawn("iolab-status", move |s| {
            let t0 = Instant::now();
            let (mut last_ios, mut last_t) = (totals().0, Instant::now());
            let mut last_newline = t0;
            while !s.load(Ordering::Relaxed) {
                // Short naps so the end of a run is not held up by a redraw period.
                let wake = Instant::now() + eta.every;
                while Instant::now() < wake && !s.load(Ordering::Relaxed) {
                    let left = wake.saturating_duration_since(Instant::now());
                    std::thread::sleep(left.min(Duration::from_millis(50)));
                }
                if s.load(Ordering::Relaxed) {
                    break;
                }
                let (ios, _) = totals();
                let now = Instant::now();
                let dt = now.duration_since(last_t).as_secs_f64().max(1e-3);
                let iops = ios.saturating_sub(last_ios) as f64 / dt;
                (last_ios, last_t) = (ios, now);
                let el = t0.elapsed().as_secs_f64();
                let eta_text = match expected {
                    Some(e) if e.as_secs_f64() > el => {
                        format!("eta {:.0}s", e.as_secs_f64() - el)
                    }
                    Some(_) => "eta soon".into(),
                    None => "eta ?".into(),
                };
                let text = format!("{label}: {el:.1}s elapsed, {eta_text}, {} IOPS", si(iops));
                let mut err = std::io::stderr().lock();
                if terminal {
                    let _ = write!(err, "\r\x1b[2K{text}");
                    if eta
                        .newline
                        .is_some_and(|n| now.duration_since(last_newline) >= n)
                    {
                        let _ = writeln!(err);
                        last_newline = now;
                    }
                } else {
                    let _ = writeln!(err, "{text}");
                }
                let _ = err.flush();
            }
            if terminal {
                let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
            }
        })
        .ok()
        .map(|t| StatusLine { _ticker: t })
    }
}

/// One `--status-interval` report: totals since the start and the rate over
/// the interval that just ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Status {
    pub elapsed: Duration,
    pub ios: u64,
    pub bytes: u64,
    pub interval: Duration,
    pub interval_ios: u64,
    pub interval_bytes: u64,
}

impl Status {
    fn rate(n: u64, d: Duration) -> f64 {
        n as f64 / d.as_secs_f64().max(1e-9)
    }

    /// The line printed for normal and terse output.
    pub fn text(&self) -> String {
        format!(
            "iolab status: {:.1}s: {} ios, {} since start (iops={}, bw={}B/s); last {:.1}s: iops={}, bw={}B/s",
            self.elapsed.as_secs_f64(),
            self.ios,
            crate::report::text::num2str(self.bytes, 4, true, "B"),
            si(Self::rate(self.ios, self.elapsed)),
            si(Self::rate(self.bytes, self.elapsed)),
            self.interval.as_secs_f64(),
            si(Self::rate(self.interval_ios, self.interval)),
            si(Self::rate(self.interval_bytes, self.interval)),
        )
    }

    /// The line printed when only json or json+ was asked for: one JSON
    /// object per line, so a reader can take lines apart before the report.
    pub fn json(&self) -> String {
        serde_json::json!({
            "iolab status": {
                "elapsed_ms": self.elapsed.as_millis() as u64,
                "total_ios": self.ios,
                "io_bytes": self.bytes,
                "iops": Self::rate(self.ios, self.elapsed),
                "bw_bytes": Self::rate(self.bytes, self.elapsed),
                "interval_ms": self.interval.as_millis() as u64,
                "interval_iops": Self::rate(self.interval_ios, self.interval),
                "interval_bw_bytes": Self::rate(self.interval_bytes, self.interval),
            }
        })
        .to_string()
    }
}

/// `--status-interval`: prints a [`Status`] on stdout every interval until
/// dropped.
pub struct StatusPrinter {
    _ticker: Ticker,
}

impl StatusPrinter {
    /// `json`: print [`Status::json`] lines instead of [`Status::text`].
    pub fn start(every: Duration, json: bool) -> std::io::Result<StatusPrinter> {
        Ticker::spawn("iolab-status-interval", move |s| {
            let t0 = Instant::now();
            let (mut last_ios, mut last_bytes, mut last_t) = (0, 0, t0);
            let mut next = t0 + every;
            loop {
                // Short naps so a finished run does not wait out an interval.
                while Instant::now() < next {
                    if s.load(Ordering::Relaxed) {
                        return;
                    }
                    let left = next.saturating_duration_since(Instant::now());
                    std::thread::sleep(left.min(Duration::from_millis(20)));
                }
                let (ios, bytes) = totals();
                let now = Instant::now();
                let st = Status {
                    elapsed: now - t0,
                    ios,
                    bytes,
                    interval: now - last_t,
                    interval_ios: ios.saturating_sub(last_ios),
                    interval_bytes: bytes.saturating_sub(last_bytes),
                };
                (last_ios, last_bytes, last_t) = (ios, bytes, now);
                let line = if json { st.json() } else { st.text() };
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
                next += every;
            }
        })
        .map(|t| StatusPrinter { _ticker: t })
    }
}

fn si(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_sum_registered_workers_finished_or_not() {
        let a = Arc::new(LiveCounters::default());
        let b = Arc::new(LiveCounters::default());
        register(&a);
        register(&b);
        a.ios.store(5, Ordering::Relaxed);
        b.ios.store(7, Ordering::Relaxed);
        let (ios, _) = totals();
        assert!(ios >= 12, "{ios}");
        // A worker that ended still counts: `--status-interval` prints totals
        // since the start, which must never go back.
        drop(b);
        let (after, _) = totals();
        assert!(
            after >= ios,
            "a finished worker still counts: {after} < {ios}"
        );
        assert_eq!(si(1_500_000.0), "1.50M");
        assert_eq!(si(2_500.0), "2.5k");
    }
}
