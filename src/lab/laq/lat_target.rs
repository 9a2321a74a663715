//! Part (i)'s peer row: fio's `latency_target` on the background stream, the
//! offline cousin of LAQ. Where laq caps the background's outstanding bytes
//! from the host scheduler (and tightens the cap while a foreground read is
//! near), fio's depth search shrinks the background's own queue depth until
//! *its* latency meets a target: it never sees the periodic reader, so it can
//! only help it by keeping the device's queue short. Same device, same two
//! jobs, `noop` scheduler; the background searches for the whole run
//! (`latency_run`), from depth 1 after the ramp.

use std::time::Duration;

use anyhow::Result;

use super::pair::{PairResult, measure_pair, us};
use crate::job::JobSpec;
use crate::job::lat_target::LatTargetSpec;
use crate::report::study::{Cell, StudyResult, Table};

/// A 256 KiB read-ahead takes 0.72 ms on a free channel of the UFS-like
/// device and 1.44 ms queued behind another: 2 ms at the 90th percentile
/// passes four in flight (the four channels, 1 MiB outstanding: laq's default
/// `ois_max`) with room for host delays, and fails where most wait behind
/// two others (about 10 in flight). fio's search only ever narrows (a failed
/// depth stays the ceiling), so one window hit by a host stall lowers the
/// ceiling for good: the margin keeps that rare on a busy machine.
pub const BG_TARGET: Duration = Duration::from_millis(2);
const BG_PERCENTILE: f64 = 90.0;
const WINDOW: Duration = Duration::from_millis(25);

/// noop with the background under `latency_target`: `jobs` is part (i)'s
/// noop pair (periodic reader, background), made by the caller.
pub(super) fn point(mut jobs: Vec<JobSpec>) -> Result<PairResult> {
    jobs[1].lat_target = LatTargetSpec {
        target: Some(BG_TARGET),
        window: Some(WINDOW),
        percentile: BG_PERCENTILE,
        keep_running: true,
    };
    measure_pair("noop + bg latency_target", &jobs)
}

/// The row beside noop, prio and laq in part (i)'s table (no model columns:
/// `sched::sim` has no depth search; laq's throttle counters do not apply).
pub(super) fn push_row(r: &mut StudyResult, table: &mut Table, p: &PairResult) {
    r.setup.push((
        "latency_target row".into(),
        format!(
            "noop, with fio's depth search on the background (latency_target={} us at p{BG_PERCENTILE:.0}, \
             latency_run): LAQ's offline cousin, which shortens the device queue by the background's \
             own latency, blind to the periodic reader",
            BG_TARGET.as_micros()
        ),
    ));
    let none = || Cell::text("-");
    let label = match p.bg_depth {
        Some(d) => format!(
            "{} ({} us p{BG_PERCENTILE:.0}, bg depth {d})",
            p.label,
            BG_TARGET.as_micros()
        ),
        None => p.label.clone(),
    };
    table.rows.push(vec![
        Cell::text(&label),
        Cell::num(p.fg_reads as f64, 0),
        us(p.fg_p50_ns as f64),
        us(p.fg_p99_ns as f64),
        us(p.fg_mean_ns),
        Cell::num(p.bg_mb_s, 0),
        none(),
        none(),
        none(),
        none(),
        none(),
        none(),
    ]);
}
