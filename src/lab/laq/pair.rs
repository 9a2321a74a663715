//! The experiment every part shares: a periodic 4 KiB reader beside a 256 KiB
//! read-ahead stream, as two jobs; their ioprio encoding; one run reduced to a
//! [`PairResult`]; and the cells and chart the parts' tables are made of.

use std::time::Duration;

use anyhow::{Result, bail};

use crate::job::{BlockSizes, Direction, JobSpec, Pattern, RwMode};
use crate::report::chart::{Chart, ChartKind, Series};
use crate::report::study::Cell;
use crate::request::Class;

const IOPRIO_CLASS_SHIFT: u16 = 13;

const IOPRIO_CLASS_RT: u16 = 1;

const IOPRIO_CLASS_BE: u16 = 2;

/// Foreground: real-time class, highest level.
pub const FG_IOPRIO: u16 = IOPRIO_CLASS_RT << IOPRIO_CLASS_SHIFT;

/// Background read-ahead: best-effort class, lowest level.
pub const BG_IOPRIO: u16 = (IOPRIO_CLASS_BE << IOPRIO_CLASS_SHIFT) | 7;

pub(super) const FG_BYTES: usize = 4096;

pub(super) const BG_BYTES: usize = 256 << 10;

/// Periodic reader (job 0) and background reader (job 1) over `common`.
pub(super) fn pair(common: JobSpec, period: Duration, bg_depth: u32) -> Vec<JobSpec> {
    let periodic = JobSpec {
        name: "periodic".into(),
        rw: RwMode {
            pattern: Pattern::Rand,
            dir: Direction::Read,
        },
        bs: [
            BlockSizes::Fixed(FG_BYTES as u32),
            BlockSizes::Fixed(FG_BYTES as u32),
        ],
        iodepth: 1,
        rate_iops: [1_000_000_000 / (period.as_nanos() as u64).max(1), 0],
        ioclass: Some(Class::Read),
        ioprio: FG_IOPRIO,
        ..common.clone()
    };
    let background = JobSpec {
        name: "background".into(),
        rw: RwMode {
            pattern: Pattern::Seq,
            dir: Direction::Read,
        },
        bs: [
            BlockSizes::Fixed(BG_BYTES as u32),
            BlockSizes::Fixed(BG_BYTES as u32),
        ],
        iodepth: bg_depth,
        readahead: BG_BYTES as u64,
        ioclass: Some(Class::Readahead),
        ioprio: BG_IOPRIO,
        ..common
    };
    vec![periodic, background]
}

/// One run of the pair, reduced.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct PairResult {
    pub label: String,
    pub fg_reads: u64,
    pub fg_p50_ns: u64,
    pub fg_p99_ns: u64,
    pub fg_mean_ns: f64,
    pub fg_max_ns: u64,
    pub bg_mb_s: f64,
    /// Throttle windows opened and requests held by each cap (laq only).
    pub windows: u64,
    pub held_by_ois_max: u64,
    pub held_by_ois_min: u64,
    /// The same experiment in `sched::sim` (virtual time, exact): periodic-read
    /// p50/p99 timed from arrival, so a wait in the host scheduler counts.
    pub model_p50_ns: u64,
    pub model_p99_ns: u64,
    pub model_mb_s: f64,
    /// The background's depth at the end, when it ran under `latency_target`.
    pub bg_depth: Option<u32>,
}

/// Run the two jobs (periodic = job 0, background = job 1) and reduce them.
pub fn measure_pair(label: &str, jobs: &[JobSpec]) -> Result<PairResult> {
    let runs = crate::engine::summary::run(jobs)?;
    let mut out = PairResult {
        label: label.into(),
        ..Default::default()
    };
    for (job, r) in &runs {
        if *job == 0 {
            let d = &r.rec.dirs[0];
            out.fg_reads += d.total_ios;
            out.fg_p50_ns = d.lat.percentile(50.0);
            out.fg_p99_ns = d.lat.percentile(99.0);
            out.fg_mean_ns = d.lat.mean();
            out.fg_max_ns = d.lat.max();
            out.windows = r.sched.windows;
            out.held_by_ois_max = r.sched.held_by_ois_max;
            out.held_by_ois_min = r.sched.held_by_ois_min;
        } else {
            out.bg_depth = r.lat_target.as_ref().map(|l| l.depth);
            let secs = r.runtime_ns as f64 / 1e9;
            if secs > 0.0 {
                out.bg_mb_s += r.rec.dirs[0].io_bytes as f64 / secs / 1e6;
            }
        }
    }
    if out.fg_reads == 0 {
        bail!("{label}: the periodic reader completed no read");
    }
    Ok(out)
}

pub(super) fn us(ns: f64) -> Cell {
    Cell::num(ns / 1e3, 0)
}

pub(super) fn cut_pct(base: f64, new: f64) -> f64 {
    (1.0 - new / base) * 100.0
}

/// Bars of p50, p99 (us) and background MB/s for each labelled result.
pub(super) fn two_metric_chart(title: &str, x_label: &str, rs: &[PairResult]) -> Chart {
    let series = |name: &str, f: &dyn Fn(&PairResult) -> f64| Series {
        name: name.into(),
        points: rs
            .iter()
            .enumerate()
            .map(|(i, p)| (i as f64, f(p)))
            .collect(),
    };
    Chart {
        title: title.into(),
        kind: ChartKind::Bar,
        x_label: x_label.into(),
        y_label: "us / MB/s".into(),
        categories: rs.iter().map(|p| p.label.clone()).collect(),
        series: vec![
            series("periodic p50 us", &|p| p.fg_p50_ns as f64 / 1e3),
            series("periodic p99 us", &|p| p.fg_p99_ns as f64 / 1e3),
            series("background MB/s", &|p| p.bg_mb_s),
        ],
        log_x: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioprio_values_match_the_kernel_encoding() {
        // IOPRIO_PRIO_VALUE(class, level) = class << 13 | level.
        assert_eq!(FG_IOPRIO, 0x2000);
        assert_eq!(BG_IOPRIO, 0x4007);
    }
}
