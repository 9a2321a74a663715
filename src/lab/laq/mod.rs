//! Study 003 — LAQ, latency-aware queueing for command-queue mobile flash
//! (Han, Shin, SKKU): `iolab lab laq`.
//!
//! A device with its own command queue schedules a second time, knowing only
//! read vs write: once the host has handed it a pile of read-ahead, a
//! foreground read waits behind it whatever priority the host gave it. The
//! study reproduced here, in three parts:
//! (i)   on the null device set like a UFS command queue, a periodic 4 KiB read
//!       beside a 256 KiB sequential read-ahead stream, both on one worker, one
//!       device queue and one scheduler, under iolab's `noop`, `prio` and `laq`,
//!       each beside `sched::sim`'s exact model of the same device;
//! (ii)  a sweep of `ois_max`, `ois_min` and `t_wait`: the latency-bandwidth
//!       trade-off of LAT throttling;
//! (iii) as root, the kernel's peers: a loop device (direct I/O over a temp
//!       file on the root filesystem) under `none`, `mq-deadline`, `kyber` and
//!       `bfq` with ioprio RT for the periodic reader and BE/7 for the
//!       background one (each scheduler set with a guard that restores the
//!       previous one), then iolab's `noop` and `laq` over `none` on the same
//!       device through the engine.
//!
//! One file per part: [`emulated`] (i), [`sweep`] (ii), [`kernel`] (iii); the
//! two-reader experiment they share is [`pair`]. This file runs them in order.

pub mod emulated;
pub mod kernel;
pub mod lat_target;
pub mod pair;
pub mod sweep;

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::report::study::StudyResult;

pub use emulated::{NULL_PERIOD, ufs_like};
#[cfg(any(test, feature = "testing"))]
pub use emulated::{PUB_LATENCY_CUT_PCT, null_jobs};
#[cfg(any(test, feature = "testing"))]
pub use kernel::{KERNEL_SCHEDULERS, KernelPeerResult, run_kernel_peers};
#[cfg(any(test, feature = "testing"))]
pub use pair::{BG_IOPRIO, FG_IOPRIO, PairResult, measure_pair};

use emulated::{NULL_BG_DEPTH, RAMP, null_schedulers, verdict_null};

/// Options of `iolab lab laq`.
#[derive(Clone, Copy, Debug)]
pub struct LaqStudyOpts {
    /// About 15 s in all instead of about 60 s.
    pub quick: bool,
}

/// Reproduce study 003 (see the module docs).
pub fn run(opts: &LaqStudyOpts) -> Result<StudyResult> {
    let t0 = Instant::now();
    let rt = if opts.quick {
        Duration::from_millis(450)
    } else {
        Duration::from_millis(1500)
    };
    let dev = ufs_like();
    let mut r = StudyResult {
        id: "laq".into(),
        seed: "003".into(),
        title: "LAQ: latency-aware queueing for command-queue flash".into(),
        ..Default::default()
    };
    r.setup = vec![
        (
            "null device".into(),
            format!(
                "UFS-like command queue: qd {}, {} channels of {} MB/s, {} us per command, \
                 order readfirst (4 KiB = 70 us, 256 KiB = 0.72 ms; 1 MiB outstanding saturates it)",
                dev.qd,
                dev.channels,
                dev.bw / 1_000_000,
                dev.lat.as_micros()
            ),
        ),
        (
            "workload".into(),
            format!(
                "periodic 4 KiB random read (class read, QD1, one every {} ms) beside a sequential \
                 reader of 256 KiB read-ahead (class readahead, {NULL_BG_DEPTH} in flight); \
                 one worker, one device queue and one scheduler for both",
                NULL_PERIOD.as_secs_f64() * 1e3
            ),
        ),
        (
            "runtime per point".into(),
            format!("{} ms after {} ms ramp", rt.as_millis(), RAMP.as_millis()),
        ),
        (
            "periodic-read latency".into(),
            "fio's lat of that stream's reads, from the engine's recorder: timed from when the \
             workload issues the read, so time a read waits in iolab's scheduler (laq holding it \
             while OIS is at ois_max) is included. The model columns (sched::sim, the same device \
             in virtual time) also time from arrival"
                .into(),
        ),
    ];
    let main = null_schedulers(&mut r, rt)?;
    sweep::null_sweep(&mut r, rt, opts.quick, &main[2])?;
    verdict_null(&mut r, &main);
    kernel::kernel_section(&mut r, opts.quick);
    r.duration_s = t0.elapsed().as_secs_f64();
    Ok(r)
}
