//! Part (iii), as root: the kernel's peers. A loop device (direct I/O over a temp
//! file on the root filesystem) under `none`, `mq-deadline`, `kyber` and `bfq`,
//! with ioprio RT for the periodic reader and BE/7 for the background one (each
//! elevator set with a guard that restores the previous one), then iolab's
//! `noop` and `laq` over `none` on the same device through the engine.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use io_uring::{IoUring, opcode, types};

use super::emulated::NULL_PERIOD;
use super::pair::{
    BG_BYTES, BG_IOPRIO, FG_BYTES, FG_IOPRIO, PairResult, cut_pct, measure_pair, pair,
    two_metric_chart, us,
};
use crate::buf::{Buffers, PAGE_ALIGN};
use crate::job::{CompletionModel, Engine, JobSpec, SchedKind};
use crate::measure::clock::{now_ns, set_thread_timer_slack_ns, sleep_until};
use crate::report::study::{Cell, Skipped, StudyResult, Table};
use crate::sys::blockdev::{BlockDev, ElevatorGuard};
use crate::sys::loopdev::LoopDev;

/// The kernel schedulers compared, in the order they run.
pub const KERNEL_SCHEDULERS: [&str; 4] = ["none", "mq-deadline", "kyber", "bfq"];

const BG_DEPTH: usize = 16;

/// One kernel scheduler's result.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct KernelPeerResult {
    pub scheduler: String,
    /// Whether the background reader ran (the first result is a baseline
    /// without it, under the loop device's default scheduler).
    pub background: bool,
    /// Why this scheduler was not run (not offered by the kernel, ...).
    pub skipped: Option<String>,
    pub fg_reads: u64,
    pub fg_period_ns: u64,
    pub fg_lat_mean_ns: u64,
    pub fg_lat_p50_ns: u64,
    pub fg_lat_p99_ns: u64,
    pub fg_lat_max_ns: u64,
    /// Periodic reads that were still running when the next period began
    /// (`None` for the iolab rows: the engine's pacer does not count them).
    pub fg_overruns: Option<u64>,
    /// Who scheduled: `kernel` (the loop device's scheduler) or `iolab` (the
    /// engine's scheduler, over the kernel's `none`).
    pub stack: String,
    pub bg_bytes_per_sec: u64,
    pub fg_ioprio: u16,
    pub bg_ioprio: u16,
    pub device: String,
}

/// Durations and sizes of one run.
#[derive(Clone, Copy, Debug)]
struct Plan {
    file_bytes: u64,
    warmup: Duration,
    measure: Duration,
    period: Duration,
}

impl Plan {
    // Quick: 7 runs of 0.15 + 0.7 s; full: 7 runs of 0.4 + 3 s (DESIGN: quick
    // study <= 15 s, full <= 60 s, with the null-device part).
    fn new(quick: bool) -> Plan {
        if quick {
            Plan {
                file_bytes: 128 << 20,
                warmup: Duration::from_millis(150),
                measure: Duration::from_millis(700),
                period: NULL_PERIOD,
            }
        } else {
            Plan {
                file_bytes: 256 << 20,
                warmup: Duration::from_millis(400),
                measure: Duration::from_secs(3),
                period: NULL_PERIOD,
            }
        }
    }
}

/// Run the experiment under each kernel scheduler on a fresh loop device.
/// Needs root; everything created (temp file, loop device, scheduler setting)
/// is undone on return, error or not.
pub fn run_kernel_peers(quick: bool) -> Result<Vec<KernelPeerResult>> {
    if !crate::sys::is_root() {
        bail!("study 003 kernel peers need root (loop device, scheduler switch, RT ioprio)");
    }
    let plan = Plan::new(quick);
    // On the root filesystem (vda), which supports O_DIRECT; /tmp may be tmpfs
    // elsewhere, which does not.
    let dir = Path::new("/var/tmp");
    let tmp = tempfile::Builder::new()
        .prefix("iolab-laq-")
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temp file in {}", dir.display()))?;
    fill_backing_file(tmp.as_file(), plan.file_bytes)?;
    let lo = LoopDev::attach(tmp.path(), true)?;
    let dev = BlockDev::from_name(&lo.name())?;
    let current = dev.scheduler()?.current.unwrap_or_else(|| "none".into());
    // The periodic reader alone: what the interference is measured against.
    let mut out = vec![run_one(&lo.path(), plan, &current, &lo.name(), false)?];
    for sched in KERNEL_SCHEDULERS {
        let available = dev.scheduler()?.available;
        if !available.iter().any(|a| a == sched) {
            out.push(skipped(
                sched,
                &lo.name(),
                format!(
                    "not offered by this kernel for {} (available: {}); \
                     try `modprobe {}`",
                    lo.name(),
                    available.join(", "),
                    module_name(sched)
                ),
            ));
            continue;
        }
        let guard = ElevatorGuard::set(&dev, sched)?;
        let previous = guard.previous().to_string();
        let r = run_one(&lo.path(), plan, sched, &lo.name(), true);
        drop(guard);
        let now = dev.scheduler()?.current;
        if now.as_deref() != Some(previous.as_str()) {
            bail!(
                "{}: scheduler not restored after {sched}: {now:?}, expected {previous}",
                lo.name()
            );
        }
        out.push(r?);
    }
    // iolab's schedulers on the same device, the kernel's out of the way.
    if dev.scheduler()?.available.iter().any(|a| a == "none") {
        // An early return drops the guard, which restores the scheduler.
        let guard = ElevatorGuard::set(&dev, "none")?;
        for kind in [SchedKind::Noop, SchedKind::Laq] {
            out.push(run_iolab(&lo.path(), plan, kind, &lo.name())?);
        }
        drop(guard);
    } else {
        for kind in [SchedKind::Noop, SchedKind::Laq] {
            let mut s = skipped(
                &format!("iolab {}", crate::sched::kind_name(kind)),
                &lo.name(),
                format!(
                    "{} offers no `none` scheduler to run iolab's over",
                    lo.name()
                ),
            );
            s.stack = "iolab".into();
            out.push(s);
        }
    }
    drop(lo);
    Ok(out)
}

/// The same two readers through the engine (io_uring, O_DIRECT, per-request
/// ioprio) with iolab's scheduler `kind` over the kernel's `none`. With `laq`
/// the two jobs share one worker and one scheduler (same filename + iosched).
fn run_iolab(
    dev_path: &Path,
    plan: Plan,
    kind: SchedKind,
    dev_name: &str,
) -> Result<KernelPeerResult> {
    let name = format!("iolab {}", crate::sched::kind_name(kind));
    let common = JobSpec {
        filename: Some(dev_path.display().to_string()),
        ioengine: Engine::IoUring,
        direct: true,
        size: Some(plan.file_bytes),
        runtime: Some(plan.measure),
        time_based: true,
        ramp_time: plan.warmup,
        completion: Some(CompletionModel::Interrupt),
        scheduler: kind,
        ..JobSpec::default()
    };
    let mut jobs = pair(common, plan.period, BG_DEPTH as u32);
    // noop schedules nothing, so its row carries the kernel rows' ioprio (RT
    // periodic, BE/7 background): the loop driver forwards it to vda, whose
    // mq-deadline otherwise sorts the periodic read behind the sequential
    // stream (without it: 46 of 1500 reads, p50 53 ms; with it: 1293, 2.5 ms).
    // laq orders the requests itself (classes read/readahead) and holds the
    // read-ahead in the host; the same ioprio would make vda's mq-deadline
    // schedule a second time (RT before BE/7 cut laq's background from ~1300
    // to ~150 MB/s), so its row carries none.
    let ioprio = kind == SchedKind::Noop;
    if !ioprio {
        for j in &mut jobs {
            j.ioprio = 0;
        }
    }
    let m = measure_pair(&name, &jobs)?;
    Ok(KernelPeerResult {
        scheduler: name,
        background: true,
        skipped: None,
        fg_reads: m.fg_reads,
        fg_period_ns: plan.period.as_nanos() as u64,
        fg_lat_mean_ns: m.fg_mean_ns as u64,
        fg_lat_p50_ns: m.fg_p50_ns,
        fg_lat_p99_ns: m.fg_p99_ns,
        fg_lat_max_ns: m.fg_max_ns,
        fg_overruns: None,
        stack: "iolab".into(),
        bg_bytes_per_sec: (m.bg_mb_s * 1e6) as u64,
        fg_ioprio: if ioprio { FG_IOPRIO } else { 0 },
        bg_ioprio: if ioprio { BG_IOPRIO } else { 0 },
        device: dev_name.to_string(),
    })
}

fn module_name(sched: &str) -> &'static str {
    match sched {
        "bfq" => "bfq",
        "kyber" => "kyber-iosched",
        _ => "mq-deadline",
    }
}

fn skipped(sched: &str, dev_name: &str, why: String) -> KernelPeerResult {
    KernelPeerResult {
        scheduler: sched.to_string(),
        background: true,
        skipped: Some(why),
        fg_reads: 0,
        fg_period_ns: 0,
        fg_lat_mean_ns: 0,
        fg_lat_p50_ns: 0,
        fg_lat_p99_ns: 0,
        fg_lat_max_ns: 0,
        fg_overruns: None,
        stack: "kernel".into(),
        bg_bytes_per_sec: 0,
        fg_ioprio: FG_IOPRIO,
        bg_ioprio: BG_IOPRIO,
        device: dev_name.to_string(),
    }
}

/// Real data, not fallocate: ext4 answers reads of unwritten extents without
/// touching the disk, which would make the reads free.
fn fill_backing_file(f: &File, bytes: u64) -> Result<()> {
    let chunk = vec![0x5au8; 1 << 20];
    let mut w = f;
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        w.write_all(&chunk[..n])
            .context("writing the loop backing file")?;
        left -= n as u64;
    }
    f.sync_all().context("fsync of the loop backing file")?;
    Ok(())
}

fn open_direct(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .with_context(|| format!("cannot open {} with O_DIRECT", path.display()))
}

fn run_one(
    dev_path: &Path,
    plan: Plan,
    sched: &str,
    dev_name: &str,
    background: bool,
) -> Result<KernelPeerResult> {
    let size = plan.file_bytes;
    let stop = Arc::new(AtomicBool::new(false));
    let bg = if background {
        let bg_file = open_direct(dev_path)?;
        let bg_stop = Arc::clone(&stop);
        Some(
            std::thread::Builder::new()
                .name("laq-bg".into())
                .spawn(move || background_reader(&bg_file, size, &bg_stop))
                .context("spawning the background reader")?,
        )
    } else {
        None
    };
    let fg = foreground_reader(dev_path, size, plan);
    stop.store(true, Ordering::Relaxed);
    let (bg_bytes, bg_ns) = match bg {
        Some(h) => h
            .join()
            .map_err(|_| anyhow::anyhow!("background reader panicked"))??,
        None => (0, 0),
    };
    let (lats, overruns) = fg?;
    let mut lats = lats;
    if lats.is_empty() {
        bail!("no periodic read completed under {sched}");
    }
    lats.sort_unstable();
    let pct = |p: f64| lats[((p / 100.0) * (lats.len() - 1) as f64).round() as usize];
    Ok(KernelPeerResult {
        scheduler: sched.to_string(),
        background,
        skipped: None,
        fg_reads: lats.len() as u64,
        fg_period_ns: plan.period.as_nanos() as u64,
        fg_lat_mean_ns: lats.iter().sum::<u64>() / lats.len() as u64,
        fg_lat_p50_ns: pct(50.0),
        fg_lat_p99_ns: pct(99.0),
        fg_lat_max_ns: *lats.last().unwrap_or(&0),
        fg_overruns: Some(overruns),
        stack: "kernel".into(),
        bg_bytes_per_sec: (bg_bytes as u128 * 1_000_000_000 / bg_ns.max(1) as u128) as u64,
        fg_ioprio: FG_IOPRIO,
        bg_ioprio: BG_IOPRIO,
        device: dev_name.to_string(),
    })
}

/// Keeps `BG_DEPTH` sequential 256 KiB reads in flight until `stop`; returns
/// (bytes read, ns elapsed) over the whole run including warm-up.
fn background_reader(f: &File, size: u64, stop: &AtomicBool) -> Result<(u64, u64)> {
    let mut ring = IoUring::new(BG_DEPTH as u32 * 2).context("io_uring setup (background)")?;
    let bufs = Buffers::new(BG_DEPTH, BG_BYTES, PAGE_ALIGN)?;
    let fd = types::Fd(f.as_raw_fd());
    let span = size - size % BG_BYTES as u64;
    let mut next_off = 0u64;
    let issue = |ring: &mut IoUring, i: usize, off: &mut u64| -> Result<()> {
        let sqe = opcode::Read::new(fd, bufs.ptr(i), BG_BYTES as u32)
            .offset(*off)
            .ioprio(BG_IOPRIO)
            .build()
            .user_data(i as u64);
        *off = (*off + BG_BYTES as u64) % span;
        // SAFETY: the buffer stays allocated and untouched until its completion
        // is reaped below (every in-flight read is reaped before return).
        unsafe { ring.submission().push(&sqe) }.context("background SQ full")?;
        Ok(())
    };
    for i in 0..BG_DEPTH {
        issue(&mut ring, i, &mut next_off)?;
    }
    let start = now_ns();
    let mut bytes = 0u64;
    let mut inflight = BG_DEPTH;
    let mut first_err = None;
    while inflight > 0 {
        ring.submit_and_wait(1)
            .context("io_uring_enter (background)")?;
        // One completion at a time, so the SQ can be refilled between them.
        loop {
            let Some(c) = ring.completion().next() else {
                break;
            };
            let (i, res) = (c.user_data() as usize, c.result());
            inflight -= 1;
            if res < 0 {
                first_err.get_or_insert(std::io::Error::from_raw_os_error(-res));
            } else {
                bytes += res as u64;
            }
            if !stop.load(Ordering::Relaxed) && first_err.is_none() {
                issue(&mut ring, i, &mut next_off)?;
                inflight += 1;
            }
        }
    }
    let elapsed = now_ns() - start;
    if let Some(e) = first_err {
        return Err(anyhow::Error::from(e).context("background 256 KiB read failed"));
    }
    Ok((bytes, elapsed))
}

/// One 4 KiB random read per period, QD1; returns latencies (submit to
/// completion seen) and how many reads overran their period.
fn foreground_reader(path: &Path, size: u64, plan: Plan) -> Result<(Vec<u64>, u64)> {
    set_thread_timer_slack_ns(1);
    let f = open_direct(path)?;
    let mut ring = IoUring::new(4).context("io_uring setup (foreground)")?;
    let buf = Buffers::one(FG_BYTES)?;
    let fd = types::Fd(f.as_raw_fd());
    let blocks = size / FG_BYTES as u64;
    let period = plan.period.as_nanos() as u64;
    let n = (plan.measure.as_nanos() as u64 / period) as usize;
    let mut lats = Vec::with_capacity(n);
    let mut overruns = 0u64;
    // A fixed seed: every scheduler sees the same offsets.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = now_ns() + plan.warmup.as_nanos() as u64;
    for _ in 0..n {
        sleep_until(next);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let off = (x % blocks) * FG_BYTES as u64;
        let sqe = opcode::Read::new(fd, buf.ptr(0), FG_BYTES as u32)
            .offset(off)
            .ioprio(FG_IOPRIO)
            .build();
        let t0 = now_ns();
        // SAFETY: `buf` outlives the read, which is reaped before the next one.
        unsafe { ring.submission().push(&sqe) }.context("foreground SQ full")?;
        ring.submit_and_wait(1)
            .context("io_uring_enter (foreground)")?;
        let t1 = now_ns();
        let Some(cqe) = ring.completion().next() else {
            bail!("io_uring returned from wait without a completion");
        };
        if cqe.result() < 0 {
            return Err(
                anyhow::Error::from(std::io::Error::from_raw_os_error(-cqe.result()))
                    .context(format!("foreground 4 KiB read at offset {off}")),
            );
        }
        lats.push(t1 - t0);
        next += period;
        if t1 > next {
            overruns += 1;
            next = t1;
        }
    }
    Ok((lats, overruns))
}

/// (iii) The kernel's schedulers and iolab's over `none` on a loop device.
pub(super) fn kernel_section(r: &mut StudyResult, quick: bool) {
    if !crate::sys::is_root() {
        r.skipped.push(Skipped {
            part: "(iii) kernel peers".into(),
            reason: "needs root: it creates a loop device, switches its I/O scheduler and \
                     issues ioprio RT reads; run `sudo iolab lab laq`"
                .into(),
        });
        return;
    }
    let peers = match run_kernel_peers(quick) {
        Ok(p) => p,
        Err(e) => {
            r.skipped.push(Skipped {
                part: "(iii) kernel peers".into(),
                reason: format!("{e:#}"),
            });
            return;
        }
    };
    for p in peers.iter().filter(|p| p.skipped.is_some()) {
        r.skipped.push(Skipped {
            part: format!("(iii) {}", p.scheduler),
            reason: p.skipped.clone().unwrap_or_default(),
        });
    }
    let ran: Vec<&KernelPeerResult> = peers.iter().filter(|p| p.skipped.is_none()).collect();
    let Some(first) = ran.first() else {
        return;
    };
    let label = |p: &KernelPeerResult| {
        if p.background {
            p.scheduler.clone()
        } else {
            format!("{} (periodic alone)", p.scheduler)
        }
    };
    let mut table = Table {
        title: format!(
            "(iii) Loop device {} (direct I/O over a file on the root disk): periodic 4 KiB read every {} ms \
             (kernel rows and iolab noop: ioprio RT) beside 256 KiB sequential reads {BG_DEPTH} deep (kernel rows and iolab noop: ioprio BE/7; iolab laq: no ioprio, \
             classes read/readahead), io_uring O_DIRECT",
            first.device,
            first.fg_period_ns as f64 / 1e6
        ),
        columns: [
            "scheduler",
            "stack",
            "reads",
            "p50 us",
            "p99 us",
            "mean us",
            "max us",
            "background MB/s",
        ]
        .map(String::from)
        .to_vec(),
        rows: vec![],
    };
    for p in &ran {
        table.rows.push(vec![
            Cell::text(label(p)),
            Cell::text(&p.stack),
            Cell::num(p.fg_reads as f64, 0),
            us(p.fg_lat_p50_ns as f64),
            us(p.fg_lat_p99_ns as f64),
            us(p.fg_lat_mean_ns as f64),
            us(p.fg_lat_max_ns as f64),
            if p.background {
                Cell::num(p.bg_bytes_per_sec as f64 / 1e6, 0)
            } else {
                Cell::text("-")
            },
        ]);
    }
    r.tables.push(table);
    let with_bg: Vec<PairResult> = ran
        .iter()
        .filter(|p| p.background)
        .map(|p| PairResult {
            label: p.scheduler.clone(),
            fg_reads: p.fg_reads,
            fg_p50_ns: p.fg_lat_p50_ns,
            fg_p99_ns: p.fg_lat_p99_ns,
            bg_mb_s: p.bg_bytes_per_sec as f64 / 1e6,
            ..Default::default()
        })
        .collect();
    r.charts.push(two_metric_chart(
        "Loop device: periodic-read latency and background bandwidth by scheduler",
        "scheduler",
        &with_bg,
    ));
    verdict_kernel(r, &with_bg);
}

fn verdict_kernel(r: &mut StudyResult, rs: &[PairResult]) {
    let find = |n: &str| rs.iter().find(|p| p.label == n);
    let Some(none) = find("none") else {
        return;
    };
    let describe = |p: &PairResult| {
        format!(
            "{}: p50 {} us ({:+.0}% vs none), {:.0}% of none's background bandwidth",
            p.label,
            p.fg_p50_ns / 1000,
            -cut_pct(none.fg_p50_ns as f64, p.fg_p50_ns as f64),
            p.bg_mb_s / none.bg_mb_s * 100.0
        )
    };
    let kernel: Vec<&PairResult> = KERNEL_SCHEDULERS[1..]
        .iter()
        .filter_map(|n| find(n))
        .collect();
    if let Some(best) = kernel.iter().min_by_key(|p| p.fg_p50_ns) {
        r.verdict.push(format!(
            "On the loop device the kernel scheduler with the shortest periodic read is {}; the others: {}.",
            describe(best),
            kernel
                .iter()
                .filter(|p| p.label != best.label)
                .map(|p| describe(p))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    if let Some(laq) = find("iolab laq") {
        // Closest = smallest distance in (p50 relative to none, bandwidth share).
        let point = |p: &PairResult| {
            (
                p.fg_p50_ns as f64 / none.fg_p50_ns.max(1) as f64,
                p.bg_mb_s / none.bg_mb_s,
            )
        };
        let (lx, ly) = point(laq);
        let closest = kernel.iter().min_by(|a, b| {
            let d = |p: &PairResult| {
                let (x, y) = point(p);
                (x - lx).powi(2) + (y - ly).powi(2)
            };
            d(a).total_cmp(&d(b))
        });
        r.verdict.push(format!(
            "iolab laq over none: {}{}. On this virtio-backed disk the host's own queueing and CPU \
             contention weigh as much as the scheduler: treat single runs as indicative.",
            describe(laq),
            closest.map_or(String::new(), |c| format!(
                "; the kernel scheduler closest to it is {}",
                c.label
            ))
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_peers_run_and_restore_the_loop_scheduler() {
        if !crate::sys::is_root() {
            eprintln!("skipped: needs root for a loop device and scheduler switches");
            return;
        }
        let r = run_kernel_peers(true).expect("kernel peers");
        assert_eq!(r.len(), KERNEL_SCHEDULERS.len() + 3);
        assert_eq!(
            r.iter().filter(|p| p.stack == "iolab").count(),
            2,
            "iolab noop and laq rows"
        );
        assert!(!r[0].background && r[0].bg_bytes_per_sec == 0);
        for p in &r {
            eprintln!(
                "{:>12}{}: {}",
                p.scheduler,
                if p.background { "" } else { " (alone)" },
                match &p.skipped {
                    Some(why) => format!("skipped: {why}"),
                    None => format!(
                        "fg {} reads mean {} us p99 {} us max {} us overruns {} | bg {} MB/s",
                        p.fg_reads,
                        p.fg_lat_mean_ns / 1000,
                        p.fg_lat_p99_ns / 1000,
                        p.fg_lat_max_ns / 1000,
                        p.fg_overruns.unwrap_or(0),
                        p.bg_bytes_per_sec / 1_000_000
                    ),
                }
            );
            if p.skipped.is_none() {
                // The kernel harness's reader is open-loop (one read per period);
                // the engine's is QD1 closed-loop, so a starved read lowers the count.
                let min_reads = if p.stack == "kernel" { 100 } else { 1 };
                assert!(p.fg_reads >= min_reads, "{p:?}");
                assert_eq!(p.bg_bytes_per_sec > 0, p.background, "{p:?}");
                assert!(p.fg_lat_p50_ns > 0 && p.fg_lat_p50_ns <= p.fg_lat_max_ns);
            }
        }
    }
}
