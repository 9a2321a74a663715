//! `--bandwidth-log`: fio's aggregate bandwidth logs, `agg-read_bw.log`,
//! `agg-write_bw.log` and `agg-trim_bw.log` in the current directory: the
//! bandwidth of every job together, one row per interval, in fio's log format
//! (`time ms, KiB/s, ddir, 0, 0`).
//!
//! fio samples these from its ETA thread (about every 500 ms, and only while
//! it draws the ETA); iolab writes them after the run from every worker's
//! interval log (1 s intervals, aligned on the engine clock), so the files
//! are there whether or not a terminal was watching.

use std::io::Write;
use std::path::Path;

use crate::measure::recorder::IntervalSlot;
use crate::report::raw::GroupRun;

/// fio's file names, in its direction order (read, write, trim).
pub const FILES: [&str; 3] = ["agg-read_bw.log", "agg-write_bw.log", "agg-trim_bw.log"];

/// The summed bytes of every worker per interval since the first worker
/// started: (interval end in ms since then, bytes per direction).
pub fn aggregate(groups: &[GroupRun]) -> (u64, Vec<[u64; 3]>) {
    let logs: Vec<_> = groups
        .iter()
        .flat_map(|g| &g.jobs)
        .map(|j| &j.rec.log)
        .collect();
    let Some(start) = logs.iter().map(|l| l.start_ns()).min() else {
        return (1_000, Vec::new());
    };
    let interval = logs
        .iter()
        .map(|l| l.interval_ns())
        .max()
        .unwrap_or(1)
        .max(1);
    let mut sums: Vec<[u64; 3]> = Vec::new();
    for l in &logs {
        for (i, s) in l.slots().iter().enumerate() {
            let t = l.start_ns() + i as u64 * l.interval_ns();
            let idx = ((t - start) / interval) as usize;
            if sums.len() <= idx {
                sums.resize(idx + 1, [0; 3]);
            }
            add(&mut sums[idx], s);
        }
    }
    (interval / 1_000_000, sums)
}

fn add(into: &mut [u64; 3], s: &IntervalSlot) {
    for (d, v) in into.iter_mut().enumerate() {
        *v += s.bytes[d];
    }
}

/// Write the three files into `dir`.
pub fn write(groups: &[GroupRun], dir: &Path) -> std::io::Result<()> {
    let (interval_ms, sums) = aggregate(groups);
    let secs = interval_ms.max(1) as f64 / 1000.0;
    for (d, name) in FILES.iter().enumerate() {
        let path = dir.join(name);
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
        for (i, row) in sums.iter().enumerate() {
            let kib_s = (row[d] as f64 / 1024.0 / secs).round() as u64;
            writeln!(f, "{}, {kib_s}, {d}, 0, 0", (i as u64 + 1) * interval_ms)?;
        }
        f.flush()?;
    }
    Ok(())
}
