//! Study 003 (LAQ), kernel peers: the study's experiment run through the
//! kernel's own I/O schedulers on a real blk-mq queue.
//!
//! A loop device (direct I/O over a temp file on the root filesystem) stands in
//! for the phone's UFS. A periodic 4 KiB random reader (ioprio RT, the study's
//! foreground read) runs beside a sequential reader of 256 KiB requests kept 16
//! deep (ioprio BE level 7, the read-ahead stream) under `none`, `mq-deadline`,
//! `kyber` and `bfq`, each set with a guard that restores the previous
//! scheduler. Both readers use io_uring with per-request ioprio, so schedulers
//! that honour priority classes (mq-deadline, bfq) see the difference the study
//! gives LAQ as request classes.

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

use crate::measure::clock::{now_ns, set_thread_timer_slack_ns, sleep_until};
use crate::sys::blockdev::{BlockDev, SchedulerGuard};
use crate::sys::loopdev::LoopDev;

/// The kernel schedulers compared, in the order they run.
pub const KERNEL_SCHEDULERS: [&str; 4] = ["none", "mq-deadline", "kyber", "bfq"];

const IOPRIO_CLASS_SHIFT: u16 = 13;
const IOPRIO_CLASS_RT: u16 = 1;
const IOPRIO_CLASS_BE: u16 = 2;
/// Foreground: real-time class, highest level.
pub const FG_IOPRIO: u16 = IOPRIO_CLASS_RT << IOPRIO_CLASS_SHIFT;
/// Background read-ahead: best-effort class, lowest level.
pub const BG_IOPRIO: u16 = (IOPRIO_CLASS_BE << IOPRIO_CLASS_SHIFT) | 7;

const FG_BYTES: usize = 4096;
const BG_BYTES: usize = 256 << 10;
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
    /// Periodic reads that were still running when the next period began.
    pub fg_overruns: u64,
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
    fn new(quick: bool) -> Plan {
        if quick {
            Plan {
                file_bytes: 256 << 20,
                warmup: Duration::from_millis(300),
                measure: Duration::from_secs(2),
                period: Duration::from_millis(5),
            }
        } else {
            Plan {
                file_bytes: 1 << 30,
                warmup: Duration::from_secs(1),
                measure: Duration::from_secs(10),
                period: Duration::from_millis(5),
            }
        }
    }
}

/// A page-aligned buffer for O_DIRECT.
struct AlignedBuf {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl AlignedBuf {
    fn new(len: usize) -> Result<AlignedBuf> {
        let layout =
            std::alloc::Layout::from_size_align(len, 4096).context("buffer layout for O_DIRECT")?;
        // SAFETY: layout has a non-zero size (callers pass > 0).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            bail!("cannot allocate {len} bytes of aligned I/O buffer");
        }
        Ok(AlignedBuf { ptr, layout })
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

// SAFETY: the buffer is owned by the one thread that does I/O into it.
unsafe impl Send for AlignedBuf {}

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
        let guard = SchedulerGuard::set(&dev, sched)?;
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
    drop(lo);
    Ok(out)
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
        fg_overruns: 0,
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
        fg_overruns: overruns,
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
    let bufs = (0..BG_DEPTH)
        .map(|_| AlignedBuf::new(BG_BYTES))
        .collect::<Result<Vec<_>>>()?;
    let fd = types::Fd(f.as_raw_fd());
    let span = size - size % BG_BYTES as u64;
    let mut next_off = 0u64;
    let issue = |ring: &mut IoUring, i: usize, off: &mut u64| -> Result<()> {
        let sqe = opcode::Read::new(fd, bufs[i].ptr, BG_BYTES as u32)
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
    let buf = AlignedBuf::new(FG_BYTES)?;
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
        let sqe = opcode::Read::new(fd, buf.ptr, FG_BYTES as u32)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioprio_values_match_the_kernel_encoding() {
        // IOPRIO_PRIO_VALUE(class, level) = class << 13 | level.
        assert_eq!(FG_IOPRIO, 0x2000);
        assert_eq!(BG_IOPRIO, 0x4007);
    }

    #[test]
    fn kernel_peers_run_and_restore_the_loop_scheduler() {
        if !crate::sys::is_root() {
            eprintln!("skipped: needs root for a loop device and scheduler switches");
            return;
        }
        let r = run_kernel_peers(true).expect("kernel peers");
        assert_eq!(r.len(), KERNEL_SCHEDULERS.len() + 1);
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
                        p.fg_overruns,
                        p.bg_bytes_per_sec / 1_000_000
                    ),
                }
            );
            if p.skipped.is_none() {
                assert!(p.fg_reads > 100, "{p:?}");
                assert_eq!(p.bg_bytes_per_sec > 0, p.background, "{p:?}");
                assert!(p.fg_lat_p50_ns > 0 && p.fg_lat_p50_ns <= p.fg_lat_max_ns);
            }
        }
    }
}
