//! Part (ii): the LAT knobs (`ois_max`, `ois_min`, `t_wait`) one at a time around
//! the study's defaults on the null device: the latency-bandwidth trade-off.

use std::time::Duration;

use anyhow::Result;

use super::emulated::null_point;
use super::pair::{PairResult, us};
use crate::job::{LaqParams, SchedKind};
use crate::report::chart::{Chart, ChartKind, Series};
use crate::report::study::{Cell, StudyResult, Table};

/// (ii) LAT parameters, one at a time around the study's defaults.
pub(super) fn null_sweep(
    r: &mut StudyResult,
    rt: Duration,
    quick: bool,
    default: &PairResult,
) -> Result<()> {
    let d = LaqParams::default();
    let kib = |k: u64| k << 10;
    let mut points: Vec<(String, LaqParams)> = vec![];
    let max_vals: &[u64] = if quick {
        &[512, 2048]
    } else {
        &[256, 512, 2048, 4096]
    };
    for &m in max_vals {
        points.push((
            format!("ois_max {}", size_name(kib(m))),
            LaqParams {
                ois_max: kib(m),
                ois_min: kib(m) / 2,
                ..d
            },
        ));
    }
    let min_vals: &[u64] = if quick {
        &[256, 768]
    } else {
        &[256, 768, 1024]
    };
    for &m in min_vals {
        points.push((
            format!("ois_min {}", size_name(kib(m))),
            LaqParams {
                ois_min: kib(m),
                ..d
            },
        ));
    }
    let waits: &[u64] = if quick {
        &[0, 500]
    } else {
        &[0, 250, 500, 2000]
    };
    for &w in waits {
        points.push((
            format!("t_wait {} us", w),
            LaqParams {
                t_wait: Duration::from_micros(w),
                ..d
            },
        ));
    }
    // The default point is the laq run of table (i).
    let mut rs = vec![(
        d,
        PairResult {
            label: "default".into(),
            ..default.clone()
        },
    )];
    for (label, p) in &points {
        rs.push((*p, null_point(label, SchedKind::Laq, *p, rt)?));
    }
    let mut table = Table {
        title: "(ii) LAT sweep on the null device (laq; one parameter at a time, ois_max sweep keeps ois_min = ois_max/2)".into(),
        columns: [
            "point",
            "ois_max",
            "ois_min",
            "t_wait us",
            "p50 us",
            "p99 us",
            "background MB/s",
            "model p50 us",
            "model MB/s",
        ]
        .map(String::from)
        .to_vec(),
        rows: vec![],
    };
    for (p, m) in &rs {
        table.rows.push(vec![
            Cell::text(&m.label),
            Cell::text(size_name(p.ois_max)),
            Cell::text(size_name(p.ois_min)),
            Cell::num(p.t_wait.as_micros() as f64, 0),
            us(m.fg_p50_ns as f64),
            us(m.fg_p99_ns as f64),
            Cell::num(m.bg_mb_s, 0),
            us(m.model_p50_ns as f64),
            Cell::num(m.model_mb_s, 0),
        ]);
    }
    r.tables.push(table);
    // The trade-off itself: each point's latency against the bandwidth it kept.
    r.charts.push(Chart {
        title: "LAT trade-off: periodic-read p50 vs background bandwidth (one point per setting)"
            .into(),
        kind: ChartKind::Line,
        x_label: "background MB/s".into(),
        y_label: "periodic-read p50 us".into(),
        categories: vec![],
        series: ["ois_max", "ois_min", "t_wait"]
            .iter()
            .map(|knob| {
                let mut pts: Vec<(f64, f64)> = rs
                    .iter()
                    .filter(|(_, m)| m.label.starts_with(knob) || m.label == "default")
                    .map(|(_, m)| (m.bg_mb_s, m.fg_p50_ns as f64 / 1e3))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series {
                    name: format!("{knob} sweep"),
                    points: pts,
                }
            })
            .collect(),
        log_x: false,
    });
    Ok(())
}

fn size_name(b: u64) -> String {
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{} MiB", b >> 20)
    } else {
        format!("{} KiB", b >> 10)
    }
}
