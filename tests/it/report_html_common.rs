//! Synthetic results for the HTML report tests: every chart kind, hostile
//! names, values that cannot be drawn, skipped parts and studies not run.
#![allow(dead_code)] // each test crate uses part of it

use iolab::measure::cpu::ThreadUsage;
use iolab::measure::recorder::{Recorder, RecorderConfig, Sample};
use iolab::report::chart::{Chart, ChartKind, Series};
use iolab::report::model::{JobMeta, JobResult, RunExtras, RunResult};
use iolab::report::study::{Cell, Comparison, LabResults, Machine, Skipped, StudyResult, Table};
use iolab::request::{Class, Op};

/// A name that breaks the page if anything is left unescaped.
pub const HOSTILE: &str = "<script>alert('x')</script> & \"quoted\"";

fn series(name: &str, pts: &[(f64, f64)]) -> Series {
    Series {
        name: name.into(),
        points: pts.to_vec(),
    }
}

pub fn lab_results() -> LabResults {
    let split = Chart {
        title: "QD1 read latency: device time and OS/user time (us)".into(),
        kind: ChartKind::Stacked,
        x_label: "completion model, size".into(),
        y_label: "us".into(),
        categories: [
            "poll 512B",
            "interrupt 512B",
            "hybrid 512B",
            "poll 4K",
            "interrupt 4K",
            "hybrid 4K",
        ]
        .map(String::from)
        .to_vec(),
        series: vec![
            series(
                "device",
                &[
                    (0.0, 2.0),
                    (1.0, 2.0),
                    (2.0, 2.0),
                    (3.0, 4.0),
                    (4.0, 4.0),
                    (5.0, 4.0),
                ],
            ),
            series(
                "OS + user",
                &[
                    (0.0, 0.9),
                    (1.0, 6.1),
                    (2.0, 2.2),
                    (3.0, 0.9),
                    (4.0, 6.3),
                    (5.0, 2.4),
                ],
            ),
        ],
        log_x: false,
    };
    let iops = Chart {
        title: "512 B IOPS vs threads".into(),
        kind: ChartKind::Line,
        x_label: "threads".into(),
        y_label: "IOPS".into(),
        categories: vec![],
        series: vec![
            series(
                "poll",
                &[
                    (1.0, 410_000.0),
                    (2.0, 780_000.0),
                    (4.0, 790_000.0),
                    (8.0, 640_000.0),
                ],
            ),
            series(
                "interrupt",
                &[
                    (1.0, 120_000.0),
                    (2.0, 230_000.0),
                    (4.0, 450_000.0),
                    (8.0, 610_000.0),
                ],
            ),
        ],
        log_x: true,
    };
    let bars = Chart {
        title: "C task throughput relative to running alone".into(),
        kind: ChartKind::Bar,
        x_label: "placement".into(),
        y_label: "throughput / alone".into(),
        categories: ["free", "bunch", "scatter", "colocate", HOSTILE]
            .map(String::from)
            .to_vec(),
        series: vec![
            series(
                "C task",
                &[
                    (0.0, 0.71),
                    (1.0, 0.52),
                    (2.0, 0.98),
                    (3.0, 0.49),
                    (4.0, 0.9),
                ],
            ),
            series(
                HOSTILE,
                &[
                    (0.0, 0.8),
                    (1.0, 0.6),
                    (2.0, f64::NAN),
                    (3.0, 0.5),
                    (4.0, 1.0),
                ],
            ),
        ],
        log_x: false,
    };
    let cdf = Chart {
        title: "Foreground read latency CDF".into(),
        kind: ChartKind::Cdf,
        x_label: "latency (us)".into(),
        y_label: "fraction".into(),
        categories: vec![],
        series: vec![
            series(
                "noop",
                &(0..50)
                    .map(|i| (20.0 * 1.15f64.powi(i), i as f64 / 49.0))
                    .collect::<Vec<_>>(),
            ),
            series(
                "laq",
                &(0..50)
                    .map(|i| (15.0 * 1.08f64.powi(i), i as f64 / 49.0))
                    .collect::<Vec<_>>(),
            ),
        ],
        log_x: true,
    };
    let empty = Chart {
        title: "A chart whose runs all failed".into(),
        kind: ChartKind::Line,
        x_label: "x".into(),
        y_label: "y".into(),
        categories: vec![],
        series: vec![series("nothing", &[])],
        log_x: false,
    };
    let breakdown = Chart {
        title: "Where a 4 KiB read's time goes (Fig. 7)".into(),
        kind: ChartKind::Stacked,
        x_label: "stack".into(),
        y_label: "us".into(),
        categories: ["io_uring irq", "io_uring poll", "psync"]
            .map(String::from)
            .to_vec(),
        series: vec![
            series("user", &[(0.0, 0.8), (1.0, 0.7), (2.0, 0.6)]),
            series("block layer", &[(0.0, 1.1), (1.0, 1.0), (2.0, 1.2)]),
            series("driver + device", &[(0.0, 9.0), (1.0, 8.8), (2.0, 9.1)]),
            series("completion", &[(0.0, 5.2), (1.0, 0.4), (2.0, 4.9)]),
        ],
        log_x: false,
    };
    let poll = StudyResult {
        id: "poll".into(),
        seed: "000".into(),
        title: "When poll is better than interrupt".into(),
        setup: vec![
            ("device".into(), "null, 4 us + 1 GB/s, irqmode=timer".into()),
            ("runtime".into(), "0.5 s per point".into()),
            (HOSTILE.into(), HOSTILE.into()),
        ],
        tables: vec![Table {
            title: "QD1 latency by completion model".into(),
            columns: ["model", "size", "mean us", "p50 us", "CPU us/IO"]
                .map(String::from)
                .to_vec(),
            rows: vec![
                vec![
                    Cell::text("poll"),
                    Cell::text("4 KiB"),
                    Cell::num(4.93, 2),
                    Cell::num(4.88, 2),
                    Cell::num(4.9, 2),
                ],
                vec![
                    Cell::text("interrupt"),
                    Cell::text("4 KiB"),
                    Cell::num(10.31, 2),
                    Cell::num(10.1, 2),
                    Cell::num(f64::NAN, 2),
                ],
                vec![Cell::text(HOSTILE)],
            ],
        }],
        comparisons: vec![
            Comparison {
                what: "4 KiB read latency, poll".into(),
                ours: 4.93,
                published: Some(4.4),
                unit: "us".into(),
                note: "FAST'12 Fig. 1".into(),
            },
            Comparison {
                what: "interrupt overhead".into(),
                ours: 6.3,
                published: Some(1.4),
                unit: "us".into(),
                note: "timer wakeups in a VM cost more".into(),
            },
            Comparison {
                what: "no published figure".into(),
                ours: 3.0,
                published: None,
                unit: "".into(),
                note: "not in the paper".into(),
            },
        ],
        charts: vec![split, iops, empty],
        verdict: vec!["Poll beats interrupt below a 12 us device on this machine.".into()],
        skipped: vec![Skipped {
            part: "IOPOLL on vda".into(),
            reason: "/sys/block/vda/queue/io_poll = 0".into(),
        }],
        duration_s: 12.5,
    };
    let other = StudyResult {
        id: "placement".into(),
        seed: "001".into(),
        title: format!("Placement of P and C tasks {HOSTILE}"),
        setup: vec![("cpus".into(), "2".into())],
        tables: vec![],
        comparisons: vec![],
        charts: vec![bars, cdf, breakdown],
        verdict: vec![],
        skipped: vec![Skipped {
            part: "SMT policies".into(),
            reason: "no SMT siblings on this machine".into(),
        }],
        duration_s: 3.0,
    };
    LabResults {
        schema_version: iolab::report::study::LAB_SCHEMA_VERSION.into(),
        iolab_version: "0.1.0".into(),
        machine: Machine {
            hostname: "testhost".into(),
            kernel: "6.18.0".into(),
            cpu_model: "Synthetic CPU @ 3.0GHz".into(),
            cpus: 2,
            memory_gib: 24.0,
            root: true,
            clock_cost_ns: 21.4,
            wakeup_cost_ns: 17_300,
            date: "Mon Jan  5 07:00:00 2026".into(),
        },
        quick: true,
        studies: vec![poll, other],
        not_run: vec![Skipped {
            part: "observe".into(),
            reason: format!("pgbench not found {HOSTILE}"),
        }],
    }
}

/// Number of charts in [`lab_results`].
pub fn chart_count(r: &LabResults) -> usize {
    r.studies.iter().map(|s| s.charts.len()).sum()
}

/// A run with reads (two speeds: a bimodal latency), writes, fsyncs and an IOPS
/// log over 2 s of 100 ms intervals.
pub fn run_result() -> RunResult {
    let cfg = RecorderConfig {
        slat: true,
        interval_ns: 100_000_000,
        intervals: 40,
        classes: true,
    };
    let mut r = Recorder::new_at(cfg, 0);
    let n = 20_000u64;
    for i in 0..n {
        let t = i * 2_000_000_000 / n + 1;
        let (op, class) = if i % 4 == 3 {
            (Op::Write, Class::AsyncWrite)
        } else {
            (Op::Read, Class::Read)
        };
        let clat = if i % 10 == 0 {
            80_000 + i % 997 * 40
        } else {
            5_000 + i % 613 * 7
        };
        r.note_depth(1);
        r.note_submit(1);
        r.note_complete(1);
        r.record_sample(&Sample {
            op,
            class,
            bytes: 4096,
            slat_ns: 700,
            clat_ns: clat,
            lat_ns: clat + 700,
            done_ns: t,
        });
        if i % 100 == 99 {
            r.record_sample(&Sample {
                op: Op::Fsync,
                class: Class::SyncWrite,
                bytes: 0,
                slat_ns: 0,
                clat_ns: 300_000,
                lat_ns: 300_000,
                done_ns: t,
            });
        }
    }
    let meta = JobMeta {
        name: format!("randrw {HOSTILE}"),
        groupid: 0,
        jobnum: 0,
        workers: 1,
        pid: 1,
        options: vec![
            ("rw".into(), "randrw".into()),
            ("bs".into(), "4k".into()),
            ("ioengine".into(), "null".into()),
        ],
        iodepth: 1,
        percentile_list: iolab::job::spec::DEFAULT_PERCENTILES.to_vec(),
        runtime_ns: 2_000_000_000,
        job_runtime_ns: 2_000_000_000,
        elapsed_ns: 2_000_000_000,
    };
    let mut job = JobResult::from_recorder(&meta, &r, &ThreadUsage::default());
    // Built field by field: JobEngine is non_exhaustive outside the crate.
    let mut engine = iolab::report::model::JobEngine::default();
    engine.completion_summary = "poll: 15000 hits, 0 sleeps".into();
    job.iolab.engine = Some(engine);
    RunResult::new(vec![job], vec![], RunExtras::default())
}

/// Every `<svg ...>...</svg>` in a document.
pub fn svgs(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find("<svg") {
        let end = rest[i..].find("</svg>").expect("svg closed") + i + 6;
        out.push(&rest[i..end]);
        rest = &rest[end..];
    }
    out
}

/// (width, height) attributes of an svg's root element.
pub fn svg_size(svg: &str) -> (f64, f64) {
    let head = &svg[..svg.find('>').unwrap()];
    let attr = |k: &str| -> f64 {
        let i = head
            .find(&format!(" {k}=\""))
            .unwrap_or_else(|| panic!("{k} in {head}"))
            + k.len()
            + 3;
        head[i..i + head[i..].find('"').unwrap()].parse().unwrap()
    };
    (attr("width"), attr("height"))
}
