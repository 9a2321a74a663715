//! Charts of a job's fio logs (`write_lat_log`, `write_bw_log`,
//! `write_iops_log`) for the run report: latency, bandwidth and IOPS over
//! time, read back from the files the run wrote. A per-I/O log may hold
//! millions of rows; the charts bucket them into at most [`BUCKETS`] points.

use std::path::PathBuf;

use crate::measure::iolog::format::{self, Row};
use crate::measure::iolog::record::LogType;
use crate::measure::iolog::{file_name, job_index_from_position};
use crate::report::chart::{Chart, ChartKind, Series};
use crate::report::model::JobResult;

/// Points per series at most.
const BUCKETS: u64 = 400;

/// One log the job asked for: its file and what it holds.
struct Wanted {
    ty: LogType,
    path: PathBuf,
}

fn option<'a>(j: &'a JobResult, name: &str) -> Option<&'a str> {
    j.job_options
        .0
        .iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The logs job `position` (its place in the report, 0-based) wrote, from its
/// options: fio's names, with `.N` unless `per_job_logs=0`.
fn wanted(position: usize, j: &JobResult) -> Vec<Wanted> {
    let per_job = option(j, "per_job_logs").is_none_or(|v| !matches!(v, "0" | "false"));
    let index = per_job.then(|| job_index_from_position(position));
    let mut out = Vec::new();
    for (opt, ty) in [
        ("write_lat_log", LogType::Clat),
        ("write_bw_log", LogType::Bw),
        ("write_iops_log", LogType::Iops),
    ] {
        if let Some(prefix) = option(j, opt) {
            out.push(Wanted {
                ty,
                path: file_name(prefix, ty, index),
            });
        }
    }
    out
}

/// Rows bucketed in time, per direction: (bucket end in s, value).
fn over_time(rows: &[Row], ty: LogType) -> Vec<Series> {
    let end_ms = rows.iter().map(|r| r.t_ms).max().unwrap_or(0) + 1;
    let width = end_ms.div_ceil(BUCKETS).max(1);
    let mut series = Vec::new();
    for (ddir, name) in [(0u8, "read"), (1, "write"), (2, "trim")] {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.ddir == ddir).collect();
        if mine.is_empty() {
            continue;
        }
        // Averaged rows (bs 0) hold a rate or a mean already; per-I/O rows of a
        // bandwidth or IOPS log are summed into a rate over the bucket.
        let per_io = mine.iter().any(|r| r.bs != 0);
        let n = end_ms.div_ceil(width) as usize;
        let mut sum = vec![0f64; n];
        let mut count = vec![0u64; n];
        for r in &mine {
            let b = (r.t_ms / width) as usize;
            let v = match (ty, per_io) {
                (LogType::Bw, true) => r.bs as f64 / 1024.0,
                _ => r.value as f64,
            };
            sum[b] += v;
            count[b] += 1;
        }
        let secs = width as f64 / 1e3;
        let points = (0..n)
            .filter(|&b| count[b] > 0 || (per_io && ty != LogType::Clat))
            .map(|b| {
                let t = ((b as u64 + 1) * width) as f64 / 1e3;
                let v = match (ty, per_io) {
                    (LogType::Clat, _) => sum[b] / count[b] as f64 / 1e3,
                    (LogType::Bw, true) => sum[b] / secs / 1024.0,
                    (LogType::Iops, true) => sum[b] / secs,
                    (LogType::Bw, false) => sum[b] / count[b] as f64 / 1024.0,
                    _ => sum[b] / count[b] as f64,
                };
                (t, v)
            })
            .collect();
        series.push(Series {
            name: name.to_string(),
            points,
        });
    }
    series
}

/// The job's log charts, and notes for logs that could not be drawn.
pub fn charts(position: usize, j: &JobResult) -> (Vec<Chart>, Vec<String>) {
    let mut charts = Vec::new();
    let mut notes = Vec::new();
    for w in wanted(position, j) {
        let shown = w.path.display();
        let text = match std::fs::read_to_string(&w.path) {
            Ok(t) => t,
            Err(e) => {
                notes.push(format!("log {shown} not drawn: {e}"));
                continue;
            }
        };
        let rows = match format::parse_rows(&text) {
            Ok(r) => r,
            Err(e) => {
                notes.push(format!("log {shown} not drawn: {e}"));
                continue;
            }
        };
        if rows.is_empty() {
            continue;
        }
        let (what, unit) = match w.ty {
            LogType::Clat => ("completion latency", "clat (µs), mean per point"),
            LogType::Bw => ("bandwidth", "MiB/s"),
            _ => ("IOPS", "IOPS"),
        };
        charts.push(Chart {
            title: format!("{}: {what} over time (log {shown})", j.jobname),
            kind: ChartKind::Line,
            x_label: "time (s)".into(),
            y_label: unit.into(),
            categories: vec![],
            series: over_time(&rows, w.ty),
            log_x: false,
        });
    }
    (charts, notes)
}
