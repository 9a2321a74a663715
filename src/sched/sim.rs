//! A deterministic discrete-event model of study 003's experiment, in virtual time.
//!
//! A periodic foreground reader (4 KiB, class `read`) and a sequential background
//! reader that keeps `bg_depth` read-ahead requests (256 KiB, class `readahead`)
//! in flight run through a [`Scheduler`] into a device with a command queue:
//! `qd` commands accepted, `channels` served in parallel, FIFO inside the device
//! (the device does not know the host's classes; both streams are reads, so a
//! read-first command queue would order them the same way). Service time is
//! `lat + bytes / bw` per channel.
//!
//! It shows the study's mechanism without hardware: under `noop` and `prio` the
//! device queue fills with read-ahead and the foreground read waits behind it
//! (host priority cannot reorder what the device already holds); `laq` keeps
//! OIS near the saturation point, so the foreground read waits for at most one
//! channel. The real-device study is in `lab`.

use std::collections::VecDeque;

use crate::job::spec::{LaqParams, SchedKind};
use crate::request::Class;

use super::{SchedError, SchedReq, SchedStats, Scheduler};

/// The emulated device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DeviceModel {
    pub channels: u32,
    /// Command-queue depth (commands held by the device, queued or in service).
    pub qd: u32,
    /// Fixed part of the service time.
    pub lat_ns: u64,
    /// Bytes per second per channel.
    pub bw_per_channel: u64,
}

impl DeviceModel {
    fn service_ns(&self, bytes: u32) -> u64 {
        self.lat_ns + (bytes as u128 * 1_000_000_000 / self.bw_per_channel as u128) as u64
    }
}

/// The experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SimConfig {
    pub device: DeviceModel,
    pub duration_ns: u64,
    /// Interval between foreground reads (each one arrives on time, open loop).
    pub fg_period_ns: u64,
    /// First foreground read: after the background reader has filled the device.
    pub fg_start_ns: u64,
    pub fg_bytes: u32,
    pub bg_bytes: u32,
    /// Background requests kept in flight (the read-ahead window / fio iodepth).
    pub bg_depth: u32,
}

impl Default for SimConfig {
    /// A UFS-like device: 4 channels of 100 MB/s, so four 256 KiB commands
    /// (1 MiB, `ois_max`'s default) saturate it, as in the study's calibration.
    fn default() -> Self {
        SimConfig {
            device: DeviceModel {
                channels: 4,
                qd: 32,
                lat_ns: 60_000,
                bw_per_channel: 100_000_000,
            },
            duration_ns: 2_000_000_000,
            fg_period_ns: 5_000_000,
            fg_start_ns: 10_000_000,
            fg_bytes: 4096,
            bg_bytes: 256 << 10,
            bg_depth: 16,
        }
    }
}

/// What one scheduler achieved.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SimResult {
    pub sched: &'static str,
    pub fg_reads: u64,
    pub fg_lat_mean_ns: u64,
    pub fg_lat_p50_ns: u64,
    pub fg_lat_p99_ns: u64,
    pub fg_lat_max_ns: u64,
    /// Background bytes completed per second of virtual time.
    pub bg_bytes_per_sec: u64,
    pub stats: SchedStats,
}

/// Invalid experiment parameters.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SimError {
    #[error("simulated device: {0} must be greater than 0")]
    Zero(&'static str),
    #[error("scheduler full: more requests pending than the model sized it for")]
    Full,
    #[error(transparent)]
    Sched(#[from] SchedError),
}

struct Device {
    model: DeviceModel,
    /// Per channel: the command in service and when it finishes.
    busy: Vec<Option<(u64, SchedReq)>>,
    waiting: VecDeque<SchedReq>,
}

impl Device {
    fn held(&self) -> usize {
        self.busy.iter().filter(|b| b.is_some()).count() + self.waiting.len()
    }

    fn has_room(&self) -> bool {
        self.held() < self.model.qd as usize
    }

    fn submit(&mut self, r: SchedReq, now: u64) {
        self.waiting.push_back(r);
        self.start_waiting(now);
    }

    fn start_waiting(&mut self, now: u64) {
        for ch in self.busy.iter_mut() {
            if ch.is_none() {
                match self.waiting.pop_front() {
                    Some(r) => *ch = Some((now + self.model.service_ns(r.bytes), r)),
                    None => return,
                }
            }
        }
    }

    fn next_done(&self) -> Option<u64> {
        self.busy.iter().flatten().map(|&(d, _)| d).min()
    }

    /// Take the commands finishing exactly at `now`.
    fn take_done(&mut self, now: u64, out: &mut Vec<SchedReq>) {
        for ch in self.busy.iter_mut() {
            if let Some((d, r)) = *ch
                && d == now
            {
                out.push(r);
                *ch = None;
            }
        }
    }
}

const FG_STREAM: u16 = 0;
const BG_STREAM: u16 = 1;

/// Run the experiment under one scheduler.
pub fn simulate(
    kind: SchedKind,
    params: LaqParams,
    cfg: &SimConfig,
) -> Result<SimResult, SimError> {
    for (name, v) in [
        ("channels", cfg.device.channels as u64),
        ("qd", cfg.device.qd as u64),
        ("bw_per_channel", cfg.device.bw_per_channel),
        ("fg_period_ns", cfg.fg_period_ns),
        ("duration_ns", cfg.duration_ns),
        ("bg_depth", cfg.bg_depth as u64),
    ] {
        if v == 0 {
            return Err(SimError::Zero(name));
        }
    }
    // Every foreground read of the run could be pending at once in the worst case.
    let capacity = cfg.bg_depth as usize + (cfg.duration_ns / cfg.fg_period_ns) as usize + 2;
    let mut sched = Scheduler::new(kind, params, capacity)?;
    let mut dev = Device {
        model: cfg.device,
        busy: vec![None; cfg.device.channels as usize],
        waiting: VecDeque::new(),
    };
    let mut slot = 0u32;
    let mut mk = |class, bytes, stream, now| {
        slot += 1;
        SchedReq {
            slot,
            class,
            bytes,
            stream,
            arrival_ns: now,
        }
    };
    let mut lats = Vec::new();
    let mut bg_done_bytes = 0u64;
    let mut done = Vec::new();
    for _ in 0..cfg.bg_depth {
        let r = mk(Class::Readahead, cfg.bg_bytes, BG_STREAM, 0);
        sched.enqueue(r, 0).map_err(|_| SimError::Full)?;
    }
    let full = |_| SimError::Full;
    let mut next_fg = cfg.fg_start_ns;
    let mut now = 0u64;
    loop {
        done.clear();
        dev.take_done(now, &mut done);
        for r in &done {
            sched.complete(r.class, r.bytes, now);
            if r.stream == FG_STREAM {
                lats.push(now - r.arrival_ns);
            } else {
                bg_done_bytes += r.bytes as u64;
                let next = mk(Class::Readahead, cfg.bg_bytes, BG_STREAM, now);
                sched.enqueue(next, now).map_err(full)?;
            }
        }
        dev.start_waiting(now);
        if next_fg == now {
            let r = mk(Class::Read, cfg.fg_bytes, FG_STREAM, now);
            sched.enqueue(r, now).map_err(full)?;
            next_fg += cfg.fg_period_ns;
        }
        while dev.has_room() {
            match sched.dispatch(now) {
                Some(r) => dev.submit(r, now),
                None => break,
            }
        }
        // Strictly later events only: everything due at `now` was handled above.
        let fg_due = (next_fg < cfg.duration_ns).then_some(next_fg);
        let next = [fg_due, dev.next_done(), sched.next_event_ns()]
            .into_iter()
            .flatten()
            .filter(|&t| t > now)
            .min();
        match next {
            Some(t) if t < cfg.duration_ns => now = t,
            _ => break,
        }
    }
    lats.sort_unstable();
    let pct = |p: f64| -> u64 {
        if lats.is_empty() {
            return 0;
        }
        let i = ((p / 100.0) * (lats.len() - 1) as f64).round() as usize;
        lats[i]
    };
    let mean = if lats.is_empty() {
        0
    } else {
        lats.iter().sum::<u64>() / lats.len() as u64
    };
    Ok(SimResult {
        sched: super::kind_name(kind),
        fg_reads: lats.len() as u64,
        fg_lat_mean_ns: mean,
        fg_lat_p50_ns: pct(50.0),
        fg_lat_p99_ns: pct(99.0),
        fg_lat_max_ns: lats.last().copied().unwrap_or(0),
        bg_bytes_per_sec: (bg_done_bytes as u128 * 1_000_000_000 / cfg.duration_ns as u128) as u64,
        stats: sched.stats(cfg.duration_ns),
    })
}
