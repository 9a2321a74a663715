//! Part (i): iolab's `noop`, `prio` and `laq` on the null device set like a UFS
//! command queue, each beside `sched::sim`'s exact model of the same device.

use std::time::Duration;

use anyhow::Result;

use super::pair::{
    BG_BYTES, FG_BYTES, PairResult, cut_pct, measure_pair, pair, two_metric_chart, us,
};
use crate::job::{CompletionModel, Engine, JobSpec, LaqParams, NullOrder, NullParams, SchedKind};
use crate::report::study::{Cell, Comparison, StudyResult, Table};
use crate::sched::sim::{DeviceModel, SimConfig, simulate};

/// Published: LAQ cuts periodic-read latency by 60% against CFQ (§3.2, Fig. 3a).
pub const PUB_LATENCY_CUT_PCT: f64 = 60.0;

/// The periodic reader's period on the null device: longer than `t_wait`, the
/// study's main case, so the throttle window closes between reads.
pub const NULL_PERIOD: Duration = Duration::from_millis(2);

pub(super) const NULL_BG_DEPTH: u32 = 16;

const NULL_DEV: &str = "laq-ufs";

pub(super) const RAMP: Duration = Duration::from_millis(50);

/// The null device set like a UFS command queue. UFS accepts 32 commands and
/// serves them on a few internal channels (dies); 4 channels of 400 MB/s with
/// 60 us of command overhead give a 4 KiB read 70 us and a 256 KiB read-ahead
/// 0.72 ms, and four 256 KiB commands (1 MiB, `ois_max`'s default, the study's
/// Th_OIS_Max) saturate it, as the study's calibration found on its phone.
/// `readfirst` is what a UFS/NCQ queue does; every command here is a read, so
/// it cannot help the foreground read: only the host scheduler can.
pub fn ufs_like() -> NullParams {
    NullParams {
        lat: Duration::from_micros(60),
        bw: 400_000_000,
        channels: 4,
        qd: 32,
        order: NullOrder::ReadFirst,
        ..NullParams::default()
    }
}

/// The two jobs of the experiment on one emulated device: the same `filename`
/// gives them one worker, one device queue and one scheduler.
pub fn null_jobs(
    sched: SchedKind,
    laq: LaqParams,
    period: Duration,
    runtime: Duration,
) -> Vec<JobSpec> {
    let common = JobSpec {
        filename: Some(NULL_DEV.into()),
        ioengine: Engine::Null,
        size: Some(1 << 30),
        runtime: Some(runtime),
        time_based: true,
        ramp_time: RAMP,
        completion: Some(CompletionModel::Interrupt),
        scheduler: sched,
        laq,
        backend: crate::job::BackendOptions {
            null: ufs_like(),
            ..Default::default()
        },
        ..JobSpec::default()
    };
    pair(common, period, NULL_BG_DEPTH)
}

const SCHEDS: [(SchedKind, &str); 3] = [
    (SchedKind::Noop, "noop"),
    (SchedKind::Prio, "prio"),
    (SchedKind::Laq, "laq"),
];

/// `sched::sim` on the device of [`ufs_like`]: the model column beside each
/// engine measurement.
fn model(kind: SchedKind, laq: LaqParams, period: Duration) -> Result<(u64, u64, f64)> {
    let dev = ufs_like();
    let cfg = SimConfig {
        device: DeviceModel {
            channels: dev.channels,
            qd: dev.qd,
            lat_ns: dev.lat.as_nanos() as u64,
            bw_per_channel: dev.bw,
        },
        duration_ns: 2_000_000_000,
        fg_period_ns: period.as_nanos() as u64,
        fg_start_ns: RAMP.as_nanos() as u64,
        fg_bytes: FG_BYTES as u32,
        bg_bytes: BG_BYTES as u32,
        bg_depth: NULL_BG_DEPTH,
    };
    let m = simulate(kind, laq, &cfg).map_err(|e| anyhow::anyhow!("sched::sim: {e}"))?;
    Ok((
        m.fg_lat_p50_ns,
        m.fg_lat_p99_ns,
        m.bg_bytes_per_sec as f64 / 1e6,
    ))
}

/// Engine measurement plus its model column.
pub(super) fn null_point(
    label: &str,
    kind: SchedKind,
    laq: LaqParams,
    rt: Duration,
) -> Result<PairResult> {
    let mut m = measure_pair(label, &null_jobs(kind, laq, NULL_PERIOD, rt))?;
    (m.model_p50_ns, m.model_p99_ns, m.model_mb_s) = model(kind, laq, NULL_PERIOD)?;
    Ok(m)
}

/// (i) noop, prio and laq on the UFS-like null device.
pub(super) fn null_schedulers(r: &mut StudyResult, rt: Duration) -> Result<Vec<PairResult>> {
    let mut out = Vec::new();
    for (kind, name) in SCHEDS {
        out.push(null_point(name, kind, LaqParams::default(), rt)?);
    }
    let mut table = Table {
        title: format!(
            "(i) Null device: periodic read every {} ms beside 256 KiB read-ahead (laq: ois_max 1 MiB, ois_min 512 KiB, t_wait 1 ms)",
            NULL_PERIOD.as_secs_f64() * 1e3
        ),
        columns: [
            "scheduler",
            "reads",
            "p50 us",
            "p99 us",
            "mean us",
            "background MB/s",
            "model p50 us",
            "model p99 us",
            "model MB/s",
            "windows",
            "held by ois_max",
            "held by ois_min",
        ]
        .map(String::from)
        .to_vec(),
        rows: vec![],
    };
    for p in &out {
        table.rows.push(vec![
            Cell::text(&p.label),
            Cell::num(p.fg_reads as f64, 0),
            us(p.fg_p50_ns as f64),
            us(p.fg_p99_ns as f64),
            us(p.fg_mean_ns),
            Cell::num(p.bg_mb_s, 0),
            us(p.model_p50_ns as f64),
            us(p.model_p99_ns as f64),
            Cell::num(p.model_mb_s, 0),
            Cell::num(p.windows as f64, 0),
            Cell::num(p.held_by_ois_max as f64, 0),
            Cell::num(p.held_by_ois_min as f64, 0),
        ]);
    }
    // The offline cousin: fio's depth search on the background (lat_target.rs).
    let noop = null_jobs(SchedKind::Noop, LaqParams::default(), NULL_PERIOD, rt);
    super::lat_target::push_row(r, &mut table, &super::lat_target::point(noop)?);
    r.tables.push(table);
    r.charts.push(two_metric_chart(
        "Null device: periodic-read latency and background bandwidth by scheduler",
        "scheduler",
        &out,
    ));
    Ok(out)
}

pub(super) fn verdict_null(r: &mut StudyResult, main: &[PairResult]) {
    let [noop, prio, laq] = main else {
        return;
    };
    let cut = cut_pct(noop.fg_p50_ns as f64, laq.fg_p50_ns as f64);
    let cut99 = cut_pct(noop.fg_p99_ns as f64, laq.fg_p99_ns as f64);
    let kept = laq.bg_mb_s / noop.bg_mb_s * 100.0;
    r.comparisons.push(Comparison {
        what: "periodic-read latency cut, laq vs noop (null device, p50)".into(),
        ours: cut,
        published: Some(PUB_LATENCY_CUT_PCT),
        unit: "%".into(),
        note: "published: LAQ vs CFQ on a Galaxy S6 UFS (mean); noop stands in for CFQ, \
               which also hands all read-ahead to the command queue"
            .into(),
    });
    let model_cut = cut_pct(noop.model_p50_ns as f64, laq.model_p50_ns as f64);
    r.comparisons.push(Comparison {
        what: "periodic-read latency cut, laq vs noop (model, p50 from arrival)".into(),
        ours: model_cut,
        published: Some(PUB_LATENCY_CUT_PCT),
        unit: "%".into(),
        note: "sched::sim on the same device: counts the wait laq imposes in the host".into(),
    });
    r.comparisons.push(Comparison {
        what: "background bandwidth kept, laq / noop".into(),
        ours: kept,
        published: None,
        unit: "%".into(),
        note: "published only as an order: below CFQ and FlashFQ, above BFQ".into(),
    });
    r.verdict.push(format!(
        "On the UFS-like null device laq cuts periodic-read p50 by {cut:.0}% vs noop ({} -> {} us; p99 by {cut99:.0}%) \
         while keeping {kept:.0}% of noop's background bandwidth ({:.0} of {:.0} MB/s); published: 60% vs CFQ, \
         with background bandwidth below CFQ's.",
        noop.fg_p50_ns / 1000,
        laq.fg_p50_ns / 1000,
        laq.bg_mb_s,
        noop.bg_mb_s
    ));
    r.verdict.push(format!(
        "Timed from arrival, so that the wait laq imposes in the host counts, the model of the same device \
         gives {model_cut:.0}% ({} -> {} us) with {:.0}% of the bandwidth kept.",
        noop.model_p50_ns / 1000,
        laq.model_p50_ns / 1000,
        laq.model_mb_s / noop.model_mb_s * 100.0
    ));
    r.verdict.push(format!(
        "Host priority alone (prio) leaves p50 at {} us ({:.0}% cut): the read-ahead already sits in the device's \
         command queue, which serves it first; only limiting what is outstanding (LAT) helps.",
        prio.fg_p50_ns / 1000,
        cut_pct(noop.fg_p50_ns as f64, prio.fg_p50_ns as f64)
    ));
}
