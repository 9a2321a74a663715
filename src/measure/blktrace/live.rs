//! Live capture: a tracefs instance with the block events on (optionally in
//! sampling windows), collected by a reader thread and stamped on the engine clock.

use super::decode::{Action, BlockDecoder, BlockEvent, EVENTS};
use super::matching::{BlockRequest, MatchStats, Window, match_windows};
use super::stats::{BttTable, btt_table};
#[cfg(any(test, feature = "testing"))]
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::Serialize;

use crate::measure::clock;
use crate::measure::tracefs::format::FormatError;
use crate::measure::tracefs::instance::TracefsError;
use crate::measure::tracefs::mount::MountError;
use crate::measure::tracefs::page::PageError;
use crate::measure::tracefs::{Instance, LossReport, RawEvent, Tracefs, parse_page};
#[cfg(any(test, feature = "testing"))]
use crate::sys::blockdev::block_dev_numbers;
use crate::sys::blockdev::{BlockDevError, kernel_dev};

/// Why a block trace could not be set up, run or collected. Causes are part of
/// the message, not a `source`, so a `{:#}` chain says each once.
#[derive(Debug, thiserror::Error)]
pub enum BlockTraceError {
    #[error("{0}% is out of range (1-99; without sampling --trace traces all the time)")]
    SamplePercent(u32),
    #[error("period {0:?} is too short (10ms or more: each switch patches the kernel's code)")]
    SamplePeriod(Duration),
    /// A failure while tracing the device node `dev`.
    #[error("block tracing of {}: {inner}", dev.display())]
    Of {
        dev: std::path::PathBuf,
        inner: Box<BlockTraceError>,
    },
    #[error(transparent)]
    Device(#[from] BlockDevError),
    #[error(
        "the engine clock reads the TSC but this kernel's trace_clock has no \
         x86-tsc, so kernel stamps cannot be put on it exactly; switch the engine \
         to CLOCK_MONOTONIC first (IOLAB_CLOCK=monotonic, or clock::use_monotonic)"
    )]
    NoTscClock,
    #[error(transparent)]
    Mount(#[from] MountError),
    /// Boxed: a tracefs error is large, and this type is returned on paths that
    /// succeed far more often than they fail.
    #[error(transparent)]
    Tracefs(Box<TracefsError>),
    #[error(transparent)]
    Format(#[from] FormatError),
    #[error("spawning the block-trace collector: {0}")]
    Spawn(std::io::Error),
    #[error("block-trace collector panicked")]
    Panicked,
    #[error("block trace lost events ({0}); raise the buffer (BlockTraceOptions::buffer_kb)")]
    Lost(String),
    #[error("parsing a cpu{cpu} ring-buffer page: {err}")]
    Page { cpu: u32, err: PageError },
}

impl From<TracefsError> for BlockTraceError {
    fn from(e: TracefsError) -> Self {
        BlockTraceError::Tracefs(Box::new(e))
    }
}

type Result<T, E = BlockTraceError> = std::result::Result<T, E>;

/// Everything a block trace produced.
#[derive(Clone, Debug, Serialize)]
pub struct BlockTraceResult {
    pub device: String,
    /// Event stamps are engine-clock ns; this names the trace clock they came
    /// from (`x86-tsc` converted with the engine's TSC scale, or `mono`).
    pub clock: &'static str,
    pub events: Vec<BlockEvent>,
    pub loss: LossReport,
    /// The sampling windows (empty: the events were on for the whole trace).
    pub windows: Vec<Window>,
    pub sampling: Option<Sampling>,
}

impl BlockTraceResult {
    pub fn analyse(&self) -> (Vec<BlockRequest>, MatchStats, BttTable) {
        let (reqs, st) = match_windows(&self.events, &self.windows);
        let t = btt_table(&reqs, &st);
        (reqs, st, t)
    }
}

type Collected = (Vec<BlockEvent>, LossReport, Vec<Window>);

/// How the instance stamps events, and so how a stamp becomes engine-clock ns.
#[derive(Clone, Copy, Debug)]
enum StampClock {
    /// CLOCK_MONOTONIC ns: already the engine clock when it is monotonic.
    Mono,
    /// Raw TSC ticks, scaled with the engine clock's own calibration: the engine
    /// keeps its cheaper TSC clock and both sides share one factor and anchor.
    Tsc(clock::TscScale),
}

impl StampClock {
    fn name(self) -> &'static str {
        match self {
            StampClock::Mono => "mono",
            StampClock::Tsc(_) => "x86-tsc",
        }
    }

    #[inline]
    fn to_engine_ns(self, ts: u64) -> u64 {
        match self {
            StampClock::Mono => ts,
            StampClock::Tsc(sc) => sc.to_ns(ts),
        }
    }
}

/// The trace clock that puts kernel stamps on the engine clock: `x86-tsc` when
/// the engine reads the TSC, else `mono`. None when the engine reads the TSC and
/// the kernel has no `x86-tsc` clock: then only switching the engine to
/// CLOCK_MONOTONIC (`clock::use_monotonic`, before any timestamp of the run) makes
/// the two comparable, since a calibrated rate drifts microseconds over a run.
pub fn joinable_trace_clock(tfs: &Tracefs) -> Option<&'static str> {
    match clock::tsc_scale() {
        None => Some("mono"),
        Some(_) if tfs.offers_clock("x86-tsc") => Some("x86-tsc"),
        Some(_) => None,
    }
}

/// The block events a device can produce. Bio-based drivers (zram, brd, most
/// device-mapper targets) have no blk-mq queue (`/sys/dev/block/M:m/mq`), so no
/// request is allocated, inserted, issued or merged: only Q and the bio's
/// completion fire. Request-based devices complete requests (C); their bios'
/// own completion event fires only for remapped or throttled bios, which the
/// matcher ignores anyway. An event left disabled costs nothing per I/O.
fn events_for(major: u32, minor: u32) -> Vec<(&'static str, Action)> {
    // A device that vanished is treated as bio-based: Q and the bio's
    // completion are the events every device has.
    let rq_based =
        crate::sys::blockdev::BlockDev::from_dev(major, minor).is_ok_and(|d| d.request_based());
    EVENTS
        .iter()
        .copied()
        .filter(|&(_, a)| {
            if rq_based {
                a != Action::Cb
            } else {
                matches!(a, Action::Q | Action::Cb)
            }
        })
        .collect()
}

/// Live block tracing of one device in a tracefs instance, drained by a collector
/// thread so the traced workload's threads are never involved.
pub struct BlockTrace {
    stop: Arc<AtomicBool>,
    worker: Option<JoinHandle<Result<Collected>>>,
    device: String,
    clock: &'static str,
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    events: Vec<&'static str>,
    sampling: Option<Sampling>,
}

/// Options for [`BlockTrace::start`].
#[derive(Clone, Copy, Debug)]
pub struct BlockTraceOptions {
    /// Per-CPU ring buffer in KiB.
    pub buffer_kb: u64,
    /// How often the collector looks at the buffers' fill; it reads a CPU's
    /// buffer only once that is half full, and every buffer at the end.
    pub drain_every: Duration,
    /// Trace only part of the time (None: all of it). See [`Sampling`].
    pub sampling: Option<Sampling>,
}

/// Time sampling: the events are enabled for `traced` at the start of every
/// `period` and disabled for the rest. A disabled tracepoint is patched out of
/// the kernel's code, so outside the windows tracing costs nothing per I/O; the
/// windows' requests are complete (Q to C), those cut by a window's edges are
/// counted and left out, as at the ends of a full trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Sampling {
    pub traced: Duration,
    pub period: Duration,
}

impl Sampling {
    /// Default window period: each switch patches the kernel's code on every
    /// CPU (~2% of a zram QD1 run at ten switches a second here), so switches
    /// are kept rare; a run of seconds still has several windows spread over it.
    pub const PERIOD: Duration = Duration::from_secs(1);

    /// `percent` (1-99) of every `period` (10 ms or more).
    pub fn new(percent: u32, period: Duration) -> Result<Sampling> {
        if !(1..=99).contains(&percent) {
            return Err(BlockTraceError::SamplePercent(percent));
        }
        if period < Duration::from_millis(10) {
            return Err(BlockTraceError::SamplePeriod(period));
        }
        Ok(Sampling {
            traced: period * percent / 100,
            period,
        })
    }

    pub fn traced_percent(&self) -> f64 {
        self.traced.as_secs_f64() / self.period.as_secs_f64() * 100.0
    }
}

impl Default for BlockTraceOptions {
    fn default() -> Self {
        BlockTraceOptions {
            buffer_kb: default_buffer_kb(),
            drain_every: Duration::from_millis(50),
            sampling: None,
        }
    }
}

/// Per-CPU buffer: big enough that a run of a few seconds at a few hundred
/// thousand I/Os per second on one CPU (~57 bytes per event, two events per I/O)
/// is read only after it ends, so the reader takes no CPU from the run; a 16th of
/// available memory at most, split across CPUs; never under 8 MiB.
fn default_buffer_kb() -> u64 {
    const MIN_KB: u64 = 8 << 10;
    const MAX_KB: u64 = 128 << 10;
    // SAFETY: sysconf has no preconditions.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as u64;
    let avail_kb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .unwrap_or(0);
    (avail_kb / 16 / cpus).clamp(MIN_KB, MAX_KB)
}

impl BlockTrace {
    /// Trace the block device node `dev_path` (e.g. /dev/zram0, /dev/loop3).
    #[cfg(any(test, feature = "testing"))]
    pub fn start(dev_path: &Path, opts: BlockTraceOptions) -> Result<BlockTrace> {
        let (major, minor) = block_dev_numbers(dev_path)?;
        Self::start_dev(major, minor, opts).map_err(|e| BlockTraceError::Of {
            dev: dev_path.to_path_buf(),
            inner: Box::new(e),
        })
    }

    /// Trace device `major:minor`. Event stamps come back on the engine clock
    /// (see [`joinable_trace_clock`]); fails when they cannot.
    pub fn start_dev(major: u32, minor: u32, opts: BlockTraceOptions) -> Result<BlockTrace> {
        let tfs = Tracefs::open()?;
        let stamp = match (joinable_trace_clock(&tfs), clock::tsc_scale()) {
            (Some("x86-tsc"), Some(sc)) => StampClock::Tsc(sc),
            (Some(_), _) => StampClock::Mono,
            (None, _) => return Err(BlockTraceError::NoTscClock),
        };
        let mut inst = tfs.new_instance()?;
        inst.set_clock(stamp.name())?;
        inst.set_buffer_size_kb(opts.buffer_kb)?;
        // Keep the oldest events when full, and count the refused ones: a breakdown
        // must not silently lose the start of a run.
        inst.set_option("overwrite", false)?;
        let kdev = kernel_dev(major, minor);
        let mut formats = Vec::new();
        let events = events_for(major, minor);
        for &(name, _) in &events {
            formats.push(inst.enable_event("block", name)?);
            inst.set_filter("block", name, &format!("dev == {kdev}"))?;
        }
        let decoder = BlockDecoder::new(&formats)?;
        inst.open_readers()?;
        inst.set_tracing_on(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let names: Vec<&'static str> = events.iter().map(|(n, _)| *n).collect();
        let worker = std::thread::Builder::new()
            .name("iolab-blktrace".into())
            .spawn({
                let names = names.clone();
                move || collect(inst, decoder, stamp, stop2, opts, &names)
            })
            .map_err(BlockTraceError::Spawn)?;
        Ok(BlockTrace {
            stop,
            worker: Some(worker),
            device: format!("{major}:{minor}"),
            clock: stamp.name(),
            events: names,
            sampling: opts.sampling,
        })
    }

    /// The `block:*` events enabled for this device (what its kind can fire).
    #[cfg(any(test, feature = "testing"))]
    pub fn events(&self) -> &[&'static str] {
        &self.events
    }

    /// The trace clock events are stamped with (`x86-tsc` or `mono`); either way
    /// [`BlockTraceResult::events`] carry engine-clock ns.
    #[cfg(any(test, feature = "testing"))]
    pub fn clock(&self) -> &'static str {
        self.clock
    }

    /// Stop tracing, drain what is left, remove the instance.
    pub fn stop(mut self) -> Result<BlockTraceResult> {
        self.stop.store(true, Ordering::Release);
        let w = self.worker.take().expect("stop is called once");
        let (events, loss, windows) = w.join().map_err(|_| BlockTraceError::Panicked)??;
        Ok(BlockTraceResult {
            device: self.device.clone(),
            clock: self.clock,
            events,
            loss,
            windows,
            sampling: self.sampling,
        })
    }
}

impl Drop for BlockTrace {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

/// Leave the ring buffers alone while they have room; read a CPU's raw pages
/// (a copy per page, no decoding) once its buffer is half full, and decode
/// everything after the run. With sampling, also switch the events on and off
/// on schedule and note each window's edges on the engine clock.
fn collect(
    mut inst: Instance,
    decoder: BlockDecoder,
    stamp: StampClock,
    stop: Arc<AtomicBool>,
    opts: BlockTraceOptions,
    events: &[&'static str],
) -> Result<Collected> {
    let mut pages: Vec<(u32, Vec<u8>)> = Vec::new();
    let mut keep = |cpu: u32, page: &[u8]| pages.push((cpu, page.to_vec()));
    let half = opts.buffer_kb * 1024 / 2;
    let cpus = inst.reader_cpus();
    let mut windows = Vec::new();
    // Switching takes the kernel a while per event (code patching), so a
    // window is the span when all events are on: the completion side is
    // switched on first and off last, and the window is stamped inside. The
    // few events fired while switching fall outside every window and are
    // counted, not matched.
    let switch = |inst: &Instance, on: bool| -> Result<()> {
        let order: Vec<&&str> = if on {
            events.iter().rev().collect()
        } else {
            events.iter().collect()
        };
        for e in order {
            inst.set_event_enabled("block", e, on)?;
        }
        Ok(())
    };
    // Events were enabled by start: the first window opens now.
    let mut window: Option<u64> = opts.sampling.map(|_| clock::now_ns());
    let mut next_switch =
        std::time::Instant::now() + opts.sampling.map_or(Duration::ZERO, |s| s.traced);
    let mut next_drain = std::time::Instant::now();
    while !stop.load(Ordering::Acquire) {
        let now = std::time::Instant::now();
        if let Some(sm) = opts.sampling
            && now >= next_switch
        {
            match window.take() {
                Some(start) => {
                    windows.push(Window {
                        start,
                        end: clock::now_ns(),
                    });
                    switch(&inst, false)?;
                    next_switch += sm.period - sm.traced;
                }
                None => {
                    switch(&inst, true)?;
                    window = Some(clock::now_ns());
                    next_switch += sm.traced;
                }
            }
        }
        if now >= next_drain {
            next_drain = now + opts.drain_every;
            // One small stats read per CPU instead of reading pages: while the run
            // fits in half the buffer, nothing else happens until it ends.
            let mut full = Vec::new();
            for &cpu in &cpus {
                if inst.unread_bytes(cpu)? >= half {
                    full.push(cpu);
                }
            }
            if !full.is_empty() {
                inst.drain_pages_of(|c| full.contains(&c), &mut keep)?;
            }
        }
        let wake = if opts.sampling.is_some() {
            next_drain.min(next_switch)
        } else {
            next_drain
        };
        std::thread::sleep(wake.saturating_duration_since(std::time::Instant::now()));
    }
    if let Some(start) = window {
        windows.push(Window {
            start,
            end: clock::now_ns(),
        });
        switch(&inst, false)?;
    }
    inst.set_tracing_on(false)?;
    inst.drain_pages(&mut keep)?;
    let loss = inst.loss_report()?;
    let layout = inst.page_layout()?;
    inst.remove()?;
    if loss.any_loss() {
        return Err(BlockTraceError::Lost(loss.describe()));
    }
    let mut events = Vec::new();
    for (cpu, page) in &pages {
        parse_page(page, layout, |ts, rec| {
            if rec.len() < 8 {
                return;
            }
            let ev = RawEvent {
                cpu: *cpu,
                ts: stamp.to_engine_ns(ts),
                id: u16::from_le_bytes([rec[0], rec[1]]),
                pid: i32::from_le_bytes(rec[4..8].try_into().expect("4 bytes")),
                payload: rec,
            };
            if let Some(b) = decoder.decode(&ev) {
                events.push(b);
            }
        })
        .map_err(|err| BlockTraceError::Page { cpu: *cpu, err })?;
    }
    Ok((events, loss, windows))
}
