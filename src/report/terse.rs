//! fio's terse output, version 3 (`--output-format=terse`): one line of
//! semicolon-separated fields per job, in the order of fio's HOWTO ("Terse
//! output") and as fio 3.33 prints it stand-alone, checked field by field
//! against real fio by tests/it/report_formats.rs.
//!
//! Per job: `3;<producer>;jobname;groupid;error`, then read and write, each
//! `KiB;KiB/s;IOPS;runtime ms`, slat and clat `min;max;mean;stdev` in µs,
//! 20 percentiles `P%=µs` (clat, or lat with lat_percentiles, as fio; a
//! shorter list padded with `0%=0`), total
//! latency `min;max;mean;stdev` µs and bandwidth `min;max;agg%;mean;stdev` KiB/s;
//! then cpu `usr%;sys%;ctx;majf;minf`, the 7 I/O depth shares, 10 µs and 12 ms
//! latency shares, and one `name;rios;wios;rmerge;wmerge;rticks;wticks;
//! in_queue;util%` group per disk. Version 3 has no trim fields. The producer
//! field names iolab (as the JSON's `"fio version"` does).

use std::fmt::Write as _;

use crate::report::model::{DirResult, Dist, JobResult, LatStats, RunResult};

/// fio's terse version this module writes.
pub const TERSE_VERSION: u32 = 3;
/// Percentile fields per direction.
const PCT_FIELDS: usize = 20;

/// One line per job, newline-terminated.
pub fn render(run: &RunResult) -> String {
    let mut out = String::new();
    for j in &run.jobs {
        job_line(&mut out, run, j);
        out.push('\n');
    }
    out
}

fn job_line(o: &mut String, run: &RunResult, j: &JobResult) {
    let _ = write!(
        o,
        "{TERSE_VERSION};{};{};{};{}",
        run.fio_version,
        field(&j.jobname),
        j.groupid,
        j.error
    );
    // unified_rw_reporting (fio's terse): mixed alone takes the read
    // fields' place; both appends it after the directions.
    match (&j.mixed, j.read.hidden) {
        (Some(m), true) => dir_fields(o, m),
        (m, _) => {
            dir_fields(o, &j.read);
            dir_fields(o, &j.write);
            if let Some(m) = m {
                dir_fields(o, m);
            }
        }
    }
    let _ = write!(
        o,
        ";{:.6}%;{:.6}%;{};{};{}",
        j.usr_cpu, j.sys_cpu, j.ctx, j.majf, j.minf
    );
    shares(o, &j.iodepth_level, 1);
    shares(o, &j.latency_us, 2);
    shares(o, &j.latency_ms, 2);
    for d in &run.disk_util {
        let _ = write!(
            o,
            ";{};{};{};{};{};{};{};{};{:.2}%",
            field(&d.name),
            d.read_ios,
            d.write_ios,
            d.read_merges,
            d.write_merges,
            d.read_ticks,
            d.write_ticks,
            d.in_queue,
            d.util
        );
    }
}

fn dir_fields(o: &mut String, d: &DirResult) {
    let _ = write!(
        o,
        ";{};{};{};{}",
        d.io_kbytes,
        d.bw,
        d.iops.round() as u64,
        d.runtime
    );
    lat_fields(o, &d.slat_ns);
    lat_fields(o, &d.clat_ns);
    // fio writes the total latency's percentiles in these fields when
    // lat_percentiles is on, else the completion latency's.
    let pcts = d
        .lat_ns
        .percentile
        .as_ref()
        .or(d.clat_ns.percentile.as_ref())
        .map(|p| p.0.as_slice())
        .unwrap_or(&[]);
    for i in 0..PCT_FIELDS {
        match pcts.get(i) {
            Some((p, ns)) => {
                let _ = write!(o, ";{p:.6}%={}", ns / 1000);
            }
            None => o.push_str(";0%=0"),
        }
    }
    lat_fields(o, &d.lat_ns);
    let _ = write!(
        o,
        ";{};{};{:.6}%;{:.6};{:.6}",
        d.bw_min, d.bw_max, d.bw_agg, d.bw_mean, d.bw_dev
    );
}

/// `min;max;mean;stdev` in µs (fio: integer min/max, 6 decimals otherwise).
fn lat_fields(o: &mut String, l: &LatStats) {
    let _ = write!(
        o,
        ";{};{};{:.6};{:.6}",
        l.min / 1000,
        l.max / 1000,
        l.mean / 1000.0,
        l.stddev / 1000.0
    );
}

fn shares(o: &mut String, d: &Dist, decimals: usize) {
    for (_, v) in &d.0 {
        let _ = write!(o, ";{v:.decimals$}%");
    }
}

/// A name inside a `;`-separated line: fio writes names as they are, which
/// would shift every later field if one held a `;`; iolab writes `_` instead.
fn field(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains([';', '\n']) {
        s.replace([';', '\n'], "_").into()
    } else {
        s.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::recorder::{Recorder, RecorderConfig};
    use crate::report::model::{JobMeta, RunExtras};

    #[test]
    fn one_line_of_fios_121_fields_per_job() {
        let mut rec = Recorder::new(RecorderConfig::for_runtime(true, Some(1_000_000_000)));
        for i in 0..1000u64 {
            rec.record(
                crate::request::Op::Read,
                4096,
                1_000,
                20_000 + i,
                21_000 + i,
            );
        }
        let meta = JobMeta {
            name: "a;b".into(),
            groupid: 0,
            jobnum: 0,
            workers: 1,
            pid: 1,
            options: vec![],
            iodepth: 1,
            percentile_list: crate::job::spec::DEFAULT_PERCENTILES.to_vec(),
            runtime_ns: 1_000_000_000,
            job_runtime_ns: 1_000_000_000,
            elapsed_ns: 1_000_000_000,
        };
        let j = JobResult::from_recorder(&meta, &rec, &Default::default());
        let run = RunResult::new(vec![j.clone(), j], vec![], RunExtras::default());
        let out = render(&run);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2);
        let f: Vec<&str> = lines[0].split(';').collect();
        assert_eq!(f.len(), 121, "{}", lines[0]);
        assert_eq!(f[0], "3");
        assert_eq!(f[2], "a_b");
        assert_eq!(f[5], "4000", "KiB read");
        assert_eq!(f[13], "20", "clat min µs");
        assert_eq!(f[17], "1.000000%=20");
        assert_eq!(f[34], "0%=0", "17 default percentiles, then padding");
    }
}
