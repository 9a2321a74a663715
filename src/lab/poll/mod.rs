//! Study 000 — "When Poll is Better than Interrupt" (Yang, Minturn, Hady, FAST '12).
//!
//! Reproduced on the null device set like the paper's DRAM prototype (4 KiB in
//! 4.1 us of device time, 512 B in proportion), then on this machine's real
//! devices:
//! (i)   QD1 latency of each completion model, split into device time and OS/user
//!       time, for 512 B and 4 KiB;
//! (ii)  Tu — CPU time left to a co-located low-priority task while an
//!       interrupt-mode thread waits;
//! (iii) IOPS as threads grow: poll one thread per CPU, interrupt up to 8 per CPU;
//! (iv)  hybrid and adaptive against poll and interrupt across device latencies:
//!       CPU per I/O vs latency, and where the break-even lies on this machine;
//! (v)   zram through psync vs io_uring, and a file on the root disk with
//!       interrupt vs CQ spinning;
//! (vi)  hybrid polling policies side by side (classic hybrid, io_uring 6.13's
//!       hybrid IOPOLL, PAS, DPAS, adaptive, with poll and interrupt as the
//!       ends): device latencies 5 us to 1 ms plus noisy devices, a thread
//!       alone, a thread with compute co-runners, and more polling threads
//!       than CPUs; CPU per I/O against p99 per point.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;

mod policies;

use super::runner::null_job;
use crate::engine::summary::{Measured, measure};
use crate::job::{
    BlockSizes, CompletionModel, Direction, Engine, IrqMode, JobSpec, NullParams, Pattern, RwMode,
};
use crate::measure::calibration;
use crate::report::chart::{Chart, ChartKind, Series};
use crate::report::study::{Cell, Comparison, Skipped, StudyResult, Table};
use crate::sys::is_root;

/// Published figures (FAST '12, as summarised in seeds/README.md).
pub const PUB_POLL_4K_US: f64 = 4.4;
pub const PUB_INTR_4K_US: f64 = 7.6;
#[cfg(any(test, feature = "testing"))]
pub const PUB_DEVICE_4K_US: f64 = 4.1;
pub const PUB_TU_US: f64 = 2.7;
pub const PUB_INTR_SHARE_OF_POLL_IOPS: f64 = 0.65;

/// The prototype's service time: 3.0 us fixed + bytes at 3.72 GB/s gives 4.1 us
/// for 4 KiB and 3.14 us for 512 B.
pub fn prototype() -> NullParams {
    NullParams {
        lat: Duration::from_nanos(3_000),
        bw: 3_723_636_364,
        channels: 64,
        ..NullParams::default()
    }
}

fn device_ns(p: &NullParams, bs: u32) -> f64 {
    p.lat.as_nanos() as f64
        + if p.bw > 0 {
            bs as f64 * 1e9 / p.bw as f64
        } else {
            0.0
        }
}

#[derive(Clone, Copy, Debug)]
pub struct PollStudyOpts {
    pub quick: bool,
}

struct Variant {
    label: &'static str,
    model: CompletionModel,
    irq: IrqMode,
}

const VARIANTS: [Variant; 5] = [
    Variant {
        label: "poll",
        model: CompletionModel::Poll,
        irq: IrqMode::Timer,
    },
    Variant {
        label: "interrupt (timer irq)",
        model: CompletionModel::Interrupt,
        irq: IrqMode::Timer,
    },
    Variant {
        label: "interrupt (thread irq)",
        model: CompletionModel::Interrupt,
        irq: IrqMode::Thread,
    },
    Variant {
        label: "hybrid",
        model: CompletionModel::Hybrid,
        irq: IrqMode::Timer,
    },
    Variant {
        label: "adaptive",
        model: CompletionModel::Adaptive,
        irq: IrqMode::Timer,
    },
];

pub fn run(opts: &PollStudyOpts) -> Result<StudyResult> {
    let t0 = Instant::now();
    let rt = if opts.quick {
        Duration::from_millis(250)
    } else {
        Duration::from_millis(1500)
    };
    let mut r = StudyResult {
        id: "poll".into(),
        seed: "000".into(),
        title: "When poll is better than interrupt".into(),
        ..Default::default()
    };
    let proto = prototype();
    let wake = calibration::wakeup_cost_ns();
    r.setup = vec![
        ("device".into(), "iolab null device: 3.0 us + bytes/3.72 GB/s (4 KiB = 4.1 us, 512 B = 3.14 us), 64 channels".into()),
        ("workload".into(), "random reads, QD1 per thread".into()),
        ("runtime per point".into(), format!("{} ms", rt.as_millis())),
        ("wakeup cost (measured)".into(), format!("{:.1} us", wake as f64 / 1e3)),
    ];

    latency_split(&mut r, &proto, rt)?;
    tu(&mut r, &proto, rt)?;
    scaling(&mut r, &proto, rt, opts.quick)?;
    sweep(&mut r, rt, wake)?;
    real_devices(&mut r, rt)?;
    policies::hybrid_policies(&mut r, opts.quick)?;
    r.duration_s = t0.elapsed().as_secs_f64();
    Ok(r)
}

/// (i) latency of each model, split into device and OS/user time.
fn latency_split(r: &mut StudyResult, proto: &NullParams, rt: Duration) -> Result<()> {
    let mut table = Table {
        title: "(i) QD1 read latency by completion model (null device like the paper's prototype)"
            .into(),
        columns: [
            "model",
            "size",
            "mean us",
            "p50 us",
            "device us",
            "OS+user us",
            "CPU/IO us",
            "sleeps/IO",
        ]
        .map(String::from)
        .to_vec(),
        rows: vec![],
    };
    let mut dev_series = Series {
        name: "device".into(),
        points: vec![],
    };
    let mut os_series = Series {
        name: "OS + user".into(),
        points: vec![],
    };
    let mut categories = vec![];
    let mut p50_4k = [f64::NAN; 5];
    for bs in [512u32, 4096] {
        for (vi, v) in VARIANTS.iter().enumerate() {
            let mut p = proto.clone();
            p.irqmode = v.irq;
            let m = measure(null_job("poll-split", p.clone(), bs, 1, v.model, rt))?;
            let dev = device_ns(&p, bs);
            let mean = m.lat_mean_ns;
            let os = (mean - dev).max(0.0);
            table.rows.push(vec![
                Cell::text(v.label),
                Cell::text(format!("{bs} B")),
                Cell::num(mean / 1e3, 2),
                Cell::num(m.lat_p50_ns as f64 / 1e3, 2),
                Cell::num(dev / 1e3, 2),
                Cell::num(os / 1e3, 2),
                Cell::num(m.cpu_ns_per_io / 1e3, 2),
                Cell::num(m.sleeps as f64 / m.ios.max(1) as f64, 2),
            ]);
            let x = categories.len() as f64;
            categories.push(format!(
                "{} {}",
                v.label,
                if bs == 512 { "512B" } else { "4K" }
            ));
            dev_series.points.push((x, dev / 1e3));
            os_series.points.push((x, os / 1e3));
            if bs == 4096 {
                p50_4k[vi] = m.lat_p50_ns as f64 / 1e3;
            }
        }
    }
    r.tables.push(table);
    r.charts.push(Chart {
        title: "QD1 read latency: device time and OS/user time (us)".into(),
        kind: ChartKind::Stacked,
        x_label: "completion model, size".into(),
        y_label: "us".into(),
        categories,
        series: vec![dev_series, os_series],
        log_x: false,
    });
    r.comparisons.push(Comparison {
        what: "4 KiB read latency, poll".into(),
        ours: p50_4k[0],
        published: Some(PUB_POLL_4K_US),
        unit: "us".into(),
        note: "ours p50 (a busy VM inflates means); FAST'12 DRAM prototype, mean".into(),
    });
    r.comparisons.push(Comparison {
        what: "4 KiB read latency, interrupt".into(),
        ours: p50_4k[1],
        published: Some(PUB_INTR_4K_US),
        unit: "us".into(),
        note: "ours p50, hrtimer interrupt; published mean, MSI-X".into(),
    });
    r.comparisons.push(Comparison {
        what: "interrupt / poll latency".into(),
        ours: p50_4k[1] / p50_4k[0],
        published: Some(PUB_INTR_4K_US / PUB_POLL_4K_US),
        unit: "x".into(),
        note: "how much waking up costs relative to spinning".into(),
    });
    let (poll, intr) = (p50_4k[0], p50_4k[1]);
    r.verdict.push(format!(
        "At 4 KiB on a 4.1 us device, polling completes in {poll:.1} us and interrupts in {intr:.1} us: poll is {:.0}% faster here (published: 42% faster).",
        (1.0 - poll / intr) * 100.0
    ));
    Ok(())
}

/// (ii) Tu: a SCHED_IDLE sponge on the same CPU as an interrupt-mode worker.
fn tu(r: &mut StudyResult, proto: &NullParams, rt: Duration) -> Result<()> {
    let cpus = crate::placement::affinity::get_affinity(0).unwrap_or_default();
    let Some(&cpu) = cpus.first() else {
        r.skipped.push(Skipped {
            part: "(ii) Tu".into(),
            reason: "cannot read this thread's CPU affinity".into(),
        });
        return Ok(());
    };
    let mut table = Table {
        title: format!(
            "(ii) Tu: CPU time a SCHED_IDLE task on CPU {cpu} gets while the I/O thread waits (4 KiB, QD1)"
        ),
        columns: [
            "model",
            "IOPS",
            "sponge CPU us per I/O",
            "I/O thread CPU us per I/O",
        ]
        .map(String::from)
        .to_vec(),
        rows: vec![],
    };
    let mut tu_intr = f64::NAN;
    for v in [&VARIANTS[0], &VARIANTS[1]] {
        let mut job = null_job("poll-tu", proto.clone(), 4096, 1, v.model, rt);
        job.cpus_allowed = vec![cpu];
        let stop = Arc::new(AtomicBool::new(false));
        let sponge = spawn_sponge(cpu, stop.clone())?;
        let m = measure(job);
        stop.store(true, Ordering::Relaxed);
        let sponge_ns = sponge.join().unwrap_or(0) as f64;
        let m = m?;
        let per_io = sponge_ns / m.ios.max(1) as f64;
        if v.model == CompletionModel::Interrupt {
            tu_intr = per_io / 1e3;
        }
        table.rows.push(vec![
            Cell::text(v.label),
            Cell::num(m.iops, 0),
            Cell::num(per_io / 1e3, 2),
            Cell::num(m.cpu_ns_per_io / 1e3, 2),
        ]);
    }
    r.tables.push(table);
    r.comparisons.push(Comparison {
        what: "Tu per 4 KiB I/O (interrupt)".into(),
        ours: tu_intr,
        published: Some(PUB_TU_US),
        unit: "us".into(),
        note: "CPU given to a co-located task while the I/O thread sleeps".into(),
    });
    r.verdict.push(format!(
        "While an interrupt-mode thread waits, a co-located task gets {tu_intr:.2} us of CPU per 4 KiB I/O (published 2.7 us); a polling thread leaves it nothing."
    ));
    Ok(())
}

/// A SCHED_IDLE thread pinned to `cpu` that spins until `stop`; returns its CPU ns.
fn spawn_sponge(cpu: u32, stop: Arc<AtomicBool>) -> Result<std::thread::JoinHandle<u64>> {
    Ok(std::thread::Builder::new()
        .name("iolab-sponge".into())
        .spawn(move || {
            let tid = crate::placement::affinity::gettid();
            let _ = crate::placement::affinity::set_affinity(tid, &[cpu]);
            // SAFETY: sched_param is plain data; SCHED_IDLE requires priority 0.
            unsafe {
                let p = libc::sched_param { sched_priority: 0 };
                libc::sched_setscheduler(0, libc::SCHED_IDLE, &p);
            }
            let before = crate::measure::cpu::ThreadUsage::now();
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
            let after = crate::measure::cpu::ThreadUsage::now();
            let d = crate::measure::cpu::ThreadUsage::delta(&before, &after);
            d.user_ns + d.sys_ns
        })?)
}

/// (iii) IOPS vs threads, 512 B.
fn scaling(r: &mut StudyResult, proto: &NullParams, rt: Duration, quick: bool) -> Result<()> {
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let mut table = Table {
        title: format!("(iii) 512 B random-read IOPS as threads grow ({ncpu} CPUs)"),
        columns: ["model", "threads", "IOPS", "CPU util", "us per I/O"]
            .map(String::from)
            .to_vec(),
        rows: vec![],
    };
    let mut best = [0.0f64; 2];
    let mut series = vec![];
    for (mi, (model, max_threads)) in [
        (CompletionModel::Poll, ncpu),
        (CompletionModel::Interrupt, 8 * ncpu),
    ]
    .into_iter()
    .enumerate()
    {
        let mut s = Series {
            name: model.name().into(),
            points: vec![],
        };
        let mut n = 1;
        while n <= max_threads {
            let mut job = null_job("poll-scale", proto.clone(), 512, 1, model, rt);
            job.numjobs = n;
            job.filename = None;
            if model == CompletionModel::Poll {
                // One poller per CPU, as in the paper.
                job.cpus_allowed = (0..ncpu).collect();
                job.cpus_allowed_split = true;
            }
            let m = measure(job)?;
            best[mi] = best[mi].max(m.iops);
            s.points.push((n as f64, m.iops));
            table.rows.push(vec![
                Cell::text(model.name()),
                Cell::num(n as f64, 0),
                Cell::num(m.iops, 0),
                Cell::num(m.cpu_util, 2),
                Cell::num(m.lat_mean_ns / 1e3, 2),
            ]);
            n *= 2;
            if quick && n > 4 * ncpu {
                break;
            }
        }
        series.push(s);
    }
    r.tables.push(table);
    r.charts.push(Chart {
        title: "512 B IOPS vs threads".into(),
        kind: ChartKind::Line,
        x_label: "threads".into(),
        y_label: "IOPS".into(),
        categories: vec![],
        series,
        log_x: true,
    });
    let share = best[1] / best[0];
    r.comparisons.push(Comparison {
        what: "interrupt peak IOPS / poll peak IOPS (512 B)".into(),
        ours: share,
        published: Some(PUB_INTR_SHARE_OF_POLL_IOPS),
        unit: "x".into(),
        note: "published: 60-70% (poll reached 2M IOPS on 8+ CPUs)".into(),
    });
    r.comparisons.push(Comparison {
        what: "poll peak IOPS per CPU (512 B)".into(),
        ours: best[0] / ncpu as f64,
        published: Some(2_000_000.0 / 8.0),
        unit: "IOPS".into(),
        note: "published 2M on the paper's machine, read per CPU assuming 8 CPUs".into(),
    });
    r.verdict.push(format!(
        "With enough threads, interrupt-driven I/O reaches {:.0}% of polling's peak IOPS on this machine (published 60-70%).",
        share * 100.0
    ));
    Ok(())
}

/// (iv) CPU vs latency across device latencies, and the break-even.
fn sweep(r: &mut StudyResult, rt: Duration, wake: u64) -> Result<()> {
    let lats_us = [2u64, 10, 50, 200];
    let models = [
        CompletionModel::Poll,
        CompletionModel::Interrupt,
        CompletionModel::Hybrid,
        CompletionModel::Adaptive,
    ];
    let mut table = Table {
        title: "(iv) Device-latency sweep, 4 KiB QD1: p50 latency and CPU per I/O".into(),
        columns: [
            "device us",
            "model",
            "p50 us",
            "CPU util",
            "CPU/IO us",
            "sleeps/IO",
            "adaptive chose",
        ]
        .map(String::from)
        .to_vec(),
        rows: vec![],
    };
    let mut cpu_series: Vec<Series> = models
        .iter()
        .map(|m| Series {
            name: m.name().into(),
            points: vec![],
        })
        .collect();
    let mut lat_series: Vec<Series> = cpu_series.clone();
    let mut break_even: Option<(u64, CompletionModel, f64, f64)> = None;
    for &l in &lats_us {
        let p = NullParams {
            lat: Duration::from_micros(l),
            channels: 64,
            ..NullParams::default()
        };
        let mut poll: Option<Measured> = None;
        for (mi, &model) in models.iter().enumerate() {
            // Adaptive needs calibration samples before it leaves polling; give it
            // the same runtime, its calibration counts in its figures.
            let m = measure(null_job("poll-sweep", p.clone(), 4096, 1, model, rt))?;
            cpu_series[mi].points.push((l as f64, m.cpu_util));
            lat_series[mi]
                .points
                .push((l as f64, m.lat_p50_ns as f64 / 1e3));
            table.rows.push(vec![
                Cell::num(l as f64, 0),
                Cell::text(model.name()),
                Cell::num(m.lat_p50_ns as f64 / 1e3, 2),
                Cell::num(m.cpu_util, 2),
                Cell::num(m.cpu_ns_per_io / 1e3, 2),
                Cell::num(m.sleeps as f64 / m.ios.max(1) as f64, 2),
                Cell::text(m.adaptive.first().cloned().unwrap_or_default()),
            ]);
            if let Some(pm) = &poll {
                let cpu_ok = m.cpu_util <= 0.5 * pm.cpu_util;
                let lat_ok = (m.lat_p50_ns as f64) <= 1.10 * pm.lat_p50_ns as f64;
                if matches!(model, CompletionModel::Hybrid | CompletionModel::Adaptive)
                    && cpu_ok
                    && lat_ok
                    && break_even.is_none()
                {
                    break_even = Some((
                        l,
                        model,
                        m.cpu_util / pm.cpu_util,
                        m.lat_p50_ns as f64 / pm.lat_p50_ns as f64,
                    ));
                }
            } else {
                poll = Some(m);
            }
        }
    }
    r.tables.push(table);
    r.charts.push(Chart {
        title: "CPU utilisation of the I/O thread vs device latency (4 KiB QD1)".into(),
        kind: ChartKind::Line,
        x_label: "device latency (us)".into(),
        y_label: "CPU (1 = one core)".into(),
        categories: vec![],
        series: cpu_series,
        log_x: true,
    });
    r.charts.push(Chart {
        title: "p50 latency vs device latency (4 KiB QD1)".into(),
        kind: ChartKind::Line,
        x_label: "device latency (us)".into(),
        y_label: "p50 latency (us)".into(),
        categories: vec![],
        series: lat_series,
        log_x: true,
    });
    if let Some((l, m, _, _)) = break_even {
        // A headline figure of its own (the fleet view puts it in a host row).
        r.comparisons.push(Comparison {
            what: "break-even device latency".into(),
            ours: l as f64,
            published: None,
            unit: "us".into(),
            note: format!(
                "smallest device latency at which {} uses at most half of poll's CPU within 10% of its p50; the study's own criterion, with no published figure to set beside it",
                m.name()
            ),
        });
    }
    match break_even {
        Some((l, m, cpu, lat)) => r.verdict.push(format!(
            "Break-even on this machine (wakeup cost {:.1} us): from a {l} us device on, {} uses {:.0}% of poll's CPU at {:.0}% of its p50 latency.",
            wake as f64 / 1e3,
            m.name(),
            cpu * 100.0,
            lat * 100.0
        )),
        None => r.verdict.push(format!(
            "No device latency up to 200 us let hybrid or adaptive halve poll's CPU within 10% of its p50 latency (wakeup cost {:.1} us).",
            wake as f64 / 1e3
        )),
    }
    Ok(())
}

/// (v) zram via psync vs io_uring; a file on the root disk with interrupt vs CQ spin.
fn real_devices(r: &mut StudyResult, rt: Duration) -> Result<()> {
    let mut table = Table {
        title: "(v) Real devices, 4 KiB random reads QD1".into(),
        columns: [
            "target",
            "path",
            "IOPS",
            "p50 us",
            "CPU/IO us",
            "ctx/IO",
            "io-wq punts",
        ]
        .map(String::from)
        .to_vec(),
        rows: vec![],
    };
    let push = |table: &mut Table, target: &str, path: &str, m: &Measured| {
        table.rows.push(vec![
            Cell::text(target),
            Cell::text(path),
            Cell::num(m.iops, 0),
            Cell::num(m.lat_p50_ns as f64 / 1e3, 2),
            Cell::num(m.cpu_ns_per_io / 1e3, 2),
            Cell::num(m.ctx_per_io, 2),
            match m.punted {
                Some(n) => Cell::num(n as f64, 0),
                None => Cell::text("-"),
            },
        ]);
    };
    if is_root() {
        match crate::sys::zram::Zram::create(256 << 20) {
            Ok(z) => {
                let dev = z.path().to_string_lossy().to_string();
                fill(&dev, 256 << 20)?;
                let psync = measure(file_job(&dev, Engine::Psync, None, false, rt))?;
                // The one run whose punts the verdict names counts them (a
                // tracepoint per punt: about 0.5 us of its CPU per I/O).
                let uring = measure(JobSpec {
                    backend: crate::job::BackendOptions {
                        uring: crate::device::uring::options::UringOptions {
                            count_punts: true,
                            ..Default::default()
                        },
                        ..Default::default()
                    },
                    ..file_job(
                        &dev,
                        Engine::IoUring,
                        Some(CompletionModel::Interrupt),
                        false,
                        rt,
                    )
                })?;
                let adaptive = measure(file_job(
                    &dev,
                    Engine::IoUring,
                    Some(CompletionModel::Adaptive),
                    false,
                    rt,
                ))?;
                push(&mut table, "zram", "psync (completes in caller)", &psync);
                push(&mut table, "zram", "io_uring interrupt", &uring);
                push(
                    &mut table,
                    "zram",
                    &format!("io_uring adaptive (chose {})", adaptive.adaptive_choice),
                    &adaptive,
                );
                r.verdict.push(format!(
                    "On zram, pread completes in the caller's context at {:.1} us while io_uring takes {:.1} us ({}): the asynchronous model's hand-off costs more than the device. Adaptive over io_uring measured both paths and chose {} ({:.1} us, {:.1}x io_uring interrupt's IOPS).",
                    psync.lat_p50_ns as f64 / 1e3,
                    uring.lat_p50_ns as f64 / 1e3,
                    match uring.punted {
                        Some(n) => format!("{n} requests punted to io-wq workers"),
                        None => "io-wq punts not counted: no tracefs".into(),
                    },
                    adaptive.adaptive_choice,
                    adaptive.lat_p50_ns as f64 / 1e3,
                    adaptive.iops / uring.iops
                ));
            }
            Err(e) => r.skipped.push(Skipped {
                part: "(v) zram".into(),
                reason: format!("{e:#}"),
            }),
        }
    } else {
        r.skipped.push(Skipped {
            part: "(v) zram".into(),
            reason: "creating a zram device needs root".into(),
        });
    }
    let dir = std::env::var("IOLAB_TMPDIR").unwrap_or_else(|_| "/var/tmp".into());
    let tmp = tempfile::Builder::new()
        .prefix("iolab-poll-")
        .tempdir_in(&dir)?;
    let path = tmp.path().join("data").to_string_lossy().to_string();
    let mut intr_job = file_job(
        &path,
        Engine::IoUring,
        Some(CompletionModel::Interrupt),
        true,
        rt,
    );
    intr_job.size = Some(64 << 20);
    let mut spin_job = intr_job.clone();
    spin_job.completion = Some(CompletionModel::Poll);
    let mut adaptive_job = intr_job.clone();
    adaptive_job.completion = Some(CompletionModel::Adaptive);
    match measure(intr_job) {
        Ok(intr) => {
            let spin = measure(spin_job)?;
            let adaptive = measure(adaptive_job)?;
            push(
                &mut table,
                "file on root disk (direct)",
                "io_uring interrupt",
                &intr,
            );
            push(
                &mut table,
                "file on root disk (direct)",
                "io_uring CQ spinning",
                &spin,
            );
            push(
                &mut table,
                "file on root disk (direct)",
                &format!("io_uring adaptive (chose {})", adaptive.adaptive_choice),
                &adaptive,
            );
            r.verdict.push(format!(
                "On the root disk ({:.0} us per read), spinning on the CQ changes p50 latency by {:+.1}% at {:.1}x the CPU per I/O.",
                intr.lat_p50_ns as f64 / 1e3,
                (spin.lat_p50_ns as f64 / intr.lat_p50_ns as f64 - 1.0) * 100.0,
                spin.cpu_ns_per_io / intr.cpu_ns_per_io
            ));
        }
        Err(e) => r.skipped.push(Skipped {
            part: "(v) file on root disk".into(),
            reason: format!("{e:#}"),
        }),
    }
    r.tables.push(table);
    Ok(())
}

fn file_job(
    path: &str,
    engine: Engine,
    model: Option<CompletionModel>,
    direct: bool,
    rt: Duration,
) -> JobSpec {
    JobSpec {
        name: "poll-real".into(),
        filename: Some(path.to_string()),
        ioengine: engine,
        rw: RwMode {
            pattern: Pattern::Rand,
            dir: Direction::Read,
        },
        bs: [BlockSizes::Fixed(4096), BlockSizes::Fixed(4096)],
        direct,
        completion: model,
        runtime: Some(rt),
        time_based: true,
        ..JobSpec::default()
    }
}

/// Write the device once so reads find stored data, as on a used disk.
fn fill(dev: &str, size: u64) -> Result<()> {
    let job = JobSpec {
        name: "fill".into(),
        filename: Some(dev.to_string()),
        ioengine: Engine::Psync,
        rw: RwMode {
            pattern: Pattern::Seq,
            dir: Direction::Write,
        },
        bs: [BlockSizes::Fixed(1 << 20), BlockSizes::Fixed(1 << 20)],
        size: Some(size),
        ..JobSpec::default()
    };
    crate::engine::summary::run(&[job])?;
    Ok(())
}
