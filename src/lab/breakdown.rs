//! Study 002 (`iolab lab breakdown`): where a request's time goes in the kernel
//! I/O path — user / block layer / driver+device / completion delivery — from
//! block tracepoints joined with iolab's own per-request timestamps, under the
//! study's Low (QD1, 4 KiB) and Normal (4-64 KiB, 4 jobs, QD4) loads, on zram, a
//! loop device and a file on the system disk; and the study's lesson, per-request
//! allocation versus preallocated request state, measured with the engine's
//! allocation toggle.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::device::engine::Engine;
use crate::engine::{EngineOptions, JobRun, run_jobs};
use crate::lab::runner::median;
use crate::measure::blktrace::LayerSplit;
use crate::measure::blktrace::StageStats;
use crate::report::chart::{Chart, ChartKind, Series};
use crate::report::study::{Cell, Comparison, Skipped, StudyResult, Table};
use crate::sys::is_root;
use crate::sys::loopdev::LoopDev;
use crate::sys::zram::Zram;

#[derive(Clone, Copy, Debug, Default)]
pub struct BreakdownStudyOpts {
    pub quick: bool,
}

/// Size of the per-request object in the allocation comparison: a driver's
/// per-command state with its scatter list, at the upper end of study 002's PDUs.
pub const PDU_BYTES: usize = 4096;

const DEV_BYTES: u64 = 128 << 20;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Load {
    Low,
    Normal,
}

impl Load {
    fn name(self) -> &'static str {
        match self {
            Load::Low => "Low",
            Load::Normal => "Normal",
        }
    }

    fn args(self) -> &'static [&'static str] {
        match self {
            Load::Low => &["--bs=4k", "--iodepth=1", "--numjobs=1"],
            Load::Normal => &["--bsrange=4k-64k", "--iodepth=4", "--numjobs=4"],
        }
    }
}

/// One device under study, kept alive (and removed on drop) for its runs.
struct Dev {
    label: &'static str,
    /// zram lacks NOWAIT, so io_uring would punt every request to io-wq workers
    /// and the split would mostly show that queueing: zram runs psync, where the
    /// bio completes in the caller's context (4 jobs keep 4 in flight).
    engine: &'static str,
    path: PathBuf,
    _keep: Keep,
}

#[allow(dead_code)]
enum Keep {
    Zram(Zram),
    Loop(LoopDev, tempfile::TempDir),
    File(tempfile::TempDir),
}

fn job_args(dev: &Dev, load: Load, rt: Duration, name: &str) -> Vec<String> {
    let mut a: Vec<String> = [
        format!("--name={name}"),
        format!("--filename={}", dev.path.display()),
        format!("--ioengine={}", dev.engine),
        "--direct=1".into(),
        "--rw=randrw".into(),
        "--rwmixread=50".into(),
        format!("--size={}", DEV_BYTES / 2),
        format!("--runtime={}ms", rt.as_millis()),
        "--time_based".into(),
    ]
    .into();
    a.extend(load.args().iter().map(|s| s.to_string()));
    a
}

fn run_load(
    dev: &Dev,
    load: Load,
    rt: Duration,
    opts: &EngineOptions,
    name: &str,
) -> Result<Vec<JobRun>> {
    let plan = crate::job::plan::parse_run_args(&job_args(dev, load, rt, name), &|_| None)
        .with_context(|| format!("{} {} job", dev.label, load.name()))?;
    let mut out = Vec::new();
    for g in run_jobs(&plan.jobs, opts)? {
        for j in g.jobs {
            if let Some(e) = &j.error {
                bail!("{} {}: {e}", dev.label, load.name());
            }
            out.push(j);
        }
    }
    if crate::sys::cleanup::stop_requested() {
        bail!("interrupted");
    }
    Ok(out)
}

/// Write the whole device once so reads find data (zram would otherwise answer
/// reads of never-written pages without decompressing anything).
fn fill(path: &Path) -> Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .with_context(|| format!("open {}", path.display()))?;
    let mut chunk = vec![0u8; 1 << 20];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for b in chunk.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    for _ in 0..DEV_BYTES >> 20 {
        f.write_all(&chunk)
            .with_context(|| format!("filling {}", path.display()))?;
    }
    f.sync_all()
        .with_context(|| format!("fsync {}", path.display()))?;
    Ok(())
}

fn make_zram() -> Result<Dev> {
    let z = Zram::create(DEV_BYTES)?;
    let path = z.path();
    fill(&path)?;
    Ok(Dev {
        label: "zram",
        engine: Engine::Psync.fio_name(),
        path,
        _keep: Keep::Zram(z),
    })
}

fn make_loop() -> Result<Dev> {
    let dir = tempfile::tempdir_in("/var/tmp").context("temp dir in /var/tmp")?;
    let file = dir.path().join("loop-backing");
    std::fs::File::create(&file)
        .and_then(|f| f.set_len(DEV_BYTES))
        .with_context(|| format!("creating {}", file.display()))?;
    let l = LoopDev::attach(&file, true)?;
    let path = l.path();
    fill(&path)?;
    Ok(Dev {
        label: "loop (dio on vda)",
        engine: Engine::IoUring.fio_name(),
        path,
        _keep: Keep::Loop(l, dir),
    })
}

fn make_file() -> Result<Dev> {
    let dir = tempfile::tempdir_in("/var/tmp").context("temp dir in /var/tmp")?;
    let path = dir.path().join("breakdown-file");
    fill_file(&path)?;
    // Refuse up front, with the reason, when the filesystem cannot map the file.
    crate::engine::trace::device_offset(&path, 0)?
        .context("the file's first block has no device location")?;
    Ok(Dev {
        label: "file on vda",
        engine: Engine::IoUring.fio_name(),
        path,
        _keep: Keep::File(dir),
    })
}

fn fill_file(path: &Path) -> Result<()> {
    std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    fill(path)
}

/// Mean per layer (us) of one op from a job's `iolab.engine.trace`.
#[derive(Clone, Copy, Debug, Default)]
struct Split {
    n: u64,
    user: f64,
    /// Q -> D; NaN on bio-based devices.
    block: f64,
    /// D -> C; NaN on bio-based devices.
    device: f64,
    q2c: f64,
    completion: f64,
    total: f64,
}

fn split_of(l: &LayerSplit) -> Split {
    let avg = |s: &StageStats| {
        if s.n == 0 { f64::NAN } else { s.avg_ns / 1e3 }
    };
    Split {
        n: l.total.n,
        user: avg(&l.user),
        block: avg(&l.block),
        device: avg(&l.device),
        q2c: avg(&l.q2c),
        completion: avg(&l.completion),
        total: avg(&l.total),
    }
}

/// Latency (us, mean over clones) per op and CPU per I/O of untraced runs.
#[derive(Clone, Copy, Debug, Default)]
struct Cost {
    read_us: f64,
    write_us: f64,
    cpu_ns_per_io: f64,
    iops: f64,
}

fn cost_of(runs: &[JobRun]) -> Cost {
    let mut lat = [(0.0f64, 0u64); 2];
    let mut cpu = 0u64;
    let mut ios = 0u64;
    let mut iops = 0.0;
    for r in runs {
        let mut n = 0;
        for (d, acc) in lat.iter_mut().enumerate() {
            let h = &r.rec.dirs[d];
            if h.total_ios > 0 {
                acc.0 += h.lat.mean() * h.total_ios as f64;
                acc.1 += h.total_ios;
                n += h.total_ios;
            }
        }
        ios += n;
        cpu += r.cpu.user_ns + r.cpu.sys_ns;
        if r.runtime_ns > 0 {
            iops += n as f64 / (r.runtime_ns as f64 / 1e9);
        }
    }
    let mean = |(s, n): (f64, u64)| if n > 0 { s / n as f64 / 1e3 } else { f64::NAN };
    Cost {
        read_us: mean(lat[0]),
        write_us: mean(lat[1]),
        cpu_ns_per_io: if ios > 0 {
            cpu as f64 / ios as f64
        } else {
            f64::NAN
        },
        iops,
    }
}

pub fn run(opts: &BreakdownStudyOpts) -> Result<StudyResult> {
    let t0 = Instant::now();
    let (rt, alloc_rt, reps) = if opts.quick {
        (Duration::from_millis(400), Duration::from_millis(200), 3)
    } else {
        (Duration::from_millis(1500), Duration::from_millis(800), 5)
    };
    let mut r = StudyResult {
        id: "breakdown".into(),
        seed: "002".into(),
        title: "Kernel-path latency breakdown (user / block layer / driver+device / completion)"
            .into(),
        ..Default::default()
    };
    r.setup = setup_rows(rt);
    if !is_root() {
        for part in ["zram", "loop", "file on vda", "allocation comparison"] {
            r.skipped.push(Skipped {
                part: part.into(),
                reason: "needs root: creating zram/loop devices and tracing through tracefs \
                         (run `sudo iolab lab breakdown`)"
                    .into(),
            });
        }
        r.duration_s = t0.elapsed().as_secs_f64();
        return Ok(r);
    }

    let mut view = LayerView::new();
    let mut zram_dev: Option<Dev> = None;

    type Maker = fn() -> Result<Dev>;
    let makers: [(&str, Maker); 3] = [
        ("zram", make_zram),
        ("loop", make_loop),
        ("file on vda", make_file),
    ];
    let trace_opts = EngineOptions {
        trace: true,
        ..Default::default()
    };
    for (part, make) in makers {
        let dev = match make() {
            Ok(d) => d,
            Err(e) => {
                r.skipped.push(Skipped {
                    part: part.into(),
                    reason: format!("{e:#}"),
                });
                continue;
            }
        };
        for load in [Load::Low, Load::Normal] {
            let runs = match run_load(&dev, load, rt, &trace_opts, "bd") {
                Ok(v) => v,
                Err(e) => {
                    r.skipped.push(Skipped {
                        part: format!("{part} {}", load.name()),
                        reason: format!("{e:#}"),
                    });
                    continue;
                }
            };
            let Some(t) = runs.first().and_then(|j| j.trace.clone()) else {
                bail!("{part} {}: traced run returned no trace", load.name());
            };
            for (op, l) in [("read", &t.split.read), ("write", &t.split.write)] {
                view.add(&mut r.verdict, dev.label, load, op, &split_of(l));
            }
        }
        if part == "zram" {
            zram_dev = Some(dev);
        }
    }
    view.finish(&mut r);

    match &zram_dev {
        Some(dev) => allocation(&mut r, dev, alloc_rt, reps)?,
        None => r.skipped.push(Skipped {
            part: "allocation comparison".into(),
            reason: "runs on zram, which could not be set up (see above)".into(),
        }),
    }
    r.duration_s = t0.elapsed().as_secs_f64();
    Ok(r)
}

/// Study 002's lesson measured: the same load with and without a per-request
/// allocation, alternating, medians of `reps` pairs.
fn allocation(r: &mut StudyResult, dev: &Dev, rt: Duration, reps: usize) -> Result<()> {
    let mut table = Table {
        title: format!(
            "Per-request allocation ({PDU_BYTES} B) vs preallocated, zram, untraced (median of {reps})"
        ),
        columns: [
            "load",
            "state",
            "read lat (us)",
            "write lat (us)",
            "CPU per I/O (ns)",
            "IOPS",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    let mut deltas = Vec::new();
    for load in [Load::Low, Load::Normal] {
        let mut pre = Vec::new();
        let mut per = Vec::new();
        for _ in 0..reps {
            pre.push(cost_of(&run_load(
                dev,
                load,
                rt,
                &EngineOptions::default(),
                "prealloc",
            )?));
            per.push(cost_of(&run_load(
                dev,
                load,
                rt,
                &EngineOptions {
                    alloc_per_request: PDU_BYTES,
                    ..Default::default()
                },
                "alloc",
            )?));
        }
        let med = |v: &[Cost]| Cost {
            read_us: median(v.iter().map(|c| c.read_us).collect()),
            write_us: median(v.iter().map(|c| c.write_us).collect()),
            cpu_ns_per_io: median(v.iter().map(|c| c.cpu_ns_per_io).collect()),
            iops: median(v.iter().map(|c| c.iops).collect()),
        };
        let (a, b) = (med(&pre), med(&per));
        for (state, c) in [("preallocated", a), ("allocated per request", b)] {
            table.rows.push(vec![
                Cell::text(load.name()),
                Cell::text(state),
                Cell::num(c.read_us, 2),
                Cell::num(c.write_us, 2),
                Cell::num(c.cpu_ns_per_io, 0),
                Cell::num(c.iops, 0),
            ]);
        }
        deltas.push((load, a, b));
    }
    r.tables.push(table);
    for (load, a, b) in &deltas {
        let (pr, pw, note) = match load {
            Load::Normal => (
                Some(19.0),
                Some(8.0),
                "seed 002: blk-mq preallocation cut Normal-load kernel time ~44% \
                 (read ~19 us, write ~8 us)",
            ),
            Load::Low => (
                Some(2.0),
                Some(2.0),
                "seed 002: under Low load driver versions differ by < 2 us (upper bound)",
            ),
        };
        r.comparisons.push(Comparison {
            what: format!("{} read: latency saved by preallocation", load.name()),
            ours: b.read_us - a.read_us,
            published: pr,
            unit: "us".into(),
            note: note.into(),
        });
        r.comparisons.push(Comparison {
            what: format!("{} write: latency saved by preallocation", load.name()),
            ours: b.write_us - a.write_us,
            published: pw,
            unit: "us".into(),
            note: note.into(),
        });
    }
    if let Some((_, a, b)) = deltas.iter().find(|d| d.0 == Load::Normal) {
        let mean = |c: &Cost| (c.read_us + c.write_us) / 2.0;
        r.comparisons.push(Comparison {
            what: "Normal: share of latency cut by preallocation".into(),
            ours: 100.0 * (mean(b) - mean(a)) / mean(b),
            published: Some(44.0),
            unit: "%".into(),
            note: "published figure is the share of kernel time (driver allocation with \
                   kmalloc/mempool and DMA mapping); ours is one heap object in user space"
                .into(),
        });
    }
    for (load, a, b) in &deltas {
        r.verdict.push(format!(
            "{}: allocating {PDU_BYTES} B per request changed read latency by {:+.2} us, \
             write by {:+.2} us and CPU per I/O by {:+.0} ns ({:.0} -> {:.0} IOPS)",
            load.name(),
            b.read_us - a.read_us,
            b.write_us - a.write_us,
            b.cpu_ns_per_io - a.cpu_ns_per_io,
            a.iops,
            b.iops
        ));
    }
    Ok(())
}

/// The study's setup lines: the two loads, engines, tracing and the allocation toggle.
fn setup_rows(rt: Duration) -> Vec<(String, String)> {
    vec![
        (
            "Low".into(),
            "randrw 50/50, 4 KiB, QD1, 1 job, direct=1".into(),
        ),
        (
            "Normal".into(),
            "randrw 50/50, 4-64 KiB (bsrange), QD4, 4 jobs, direct=1".into(),
        ),
        (
            "engines".into(),
            "zram: psync (no NOWAIT: io_uring would punt to io-wq; psync iodepth is 1 per \
             job); loop and file: io_uring"
                .into(),
        ),
        ("runtime per run".into(), format!("{} ms", rt.as_millis())),
        (
            "tracing".into(),
            "tracefs instance, block_bio_queue/getrq/rq_insert/rq_issue/rq_complete/bio_complete, \
             mono clock; engine clock switched to CLOCK_MONOTONIC"
                .into(),
        ),
        (
            "allocation toggle".into(),
            format!(
                "{PDU_BYTES} B zeroed heap object allocated before each submit and freed at its \
                 completion (alloc_per_request), vs none (iolab's preallocated slots)"
            ),
        ),
    ]
}

/// The traced runs' per-layer means: a table row, a verdict line and a stacked
/// bar per device, load and direction.
struct LayerView {
    table: Table,
    chart: Chart,
    series: Vec<Series>,
}

impl LayerView {
    fn new() -> LayerView {
        let table = Table {
            title: "Mean time per layer (us), traced runs".into(),
            columns: [
                "device",
                "load",
                "op",
                "user (submit->Q)",
                "block (Q->D)",
                "driver+device (D->C)",
                "Q->C",
                "completion (C->seen)",
                "total",
                "N",
            ]
            .map(String::from)
            .to_vec(),
            rows: Vec::new(),
        };
        let chart = Chart {
            title: "Where the time goes (mean us per layer; zram: Q->C not separable)".into(),
            kind: ChartKind::Stacked,
            x_label: "device / load / op".into(),
            y_label: "us".into(),
            ..Default::default()
        };
        let names = [
            "user",
            "block layer",
            "driver+device",
            "block+driver+device (bio-based)",
            "completion delivery",
        ];
        let series: Vec<Series> = names
            .iter()
            .map(|n| Series {
                name: n.to_string(),
                points: Vec::new(),
            })
            .collect();
        LayerView {
            table,
            chart,
            series,
        }
    }

    fn add(&mut self, verdict: &mut Vec<String>, label: &str, load: Load, op: &str, s: &Split) {
        let c = |v: f64| Cell::num(v, 2);
        self.table.rows.push(vec![
            Cell::text(label),
            Cell::text(load.name()),
            Cell::text(op),
            c(s.user),
            c(s.block),
            c(s.device),
            c(s.q2c),
            c(s.completion),
            c(s.total),
            Cell::num(s.n as f64, 0),
        ]);
        let kernel = if s.block.is_nan() {
            s.q2c
        } else {
            s.block + s.device
        };
        if s.n > 0 {
            verdict.push(format!(
                "{} {} {op}: block layer + driver + device {:.1} of {:.1} us ({:.0}%), \
                 user submission {:.1} us, completion delivery {:.1} us",
                label,
                load.name(),
                kernel,
                s.total,
                100.0 * kernel / s.total,
                s.user,
                s.completion
            ));
        }
        let x = self.chart.categories.len() as f64;
        self.chart
            .categories
            .push(format!("{} {} {op}", label, load.name()));
        let bio = s.block.is_nan();
        let vals = [
            s.user,
            if bio { 0.0 } else { s.block },
            if bio { 0.0 } else { s.device },
            if bio { s.q2c } else { 0.0 },
            s.completion,
        ];
        for (se, v) in self.series.iter_mut().zip(vals) {
            se.points.push((x, if v.is_finite() { v } else { 0.0 }));
        }
    }

    fn finish(mut self, r: &mut StudyResult) {
        self.chart.series = self.series;
        r.tables.push(self.table);
        r.charts.push(self.chart);
    }
}
