//! Study 004 — RDBMS interrupt overhead on HDD vs SSD (SKKU).
//!
//! The paper ran MySQL + LinkBench (16 threads) on an HDD and an SSD and read
//! /proc/stat, `strace -c` and context switches. Here PostgreSQL (the database
//! installed on this machine) runs `pgbench` with 16 clients on two devices the
//! study creates: a slow one (a loop device over a file on the root disk, held to
//! HDD-like IOPS by the blkio throttle of a cgroup holding the server) and a fast
//! one (zram). `iolab observe`'s tracer is attached to the server's process tree
//! in-process, so the syscall counts and times are exact (not sampled) and cost far
//! less than strace. A last part measures what that attachment costs pgbench.
//!
//! The server always runs as the unprivileged `postgres` user, in a cgroup of our
//! own, on a filesystem we made; every piece is undone by a guard (and by the
//! cleanup registry on Ctrl-C): server, cgroup, mount, device, temp dir.
//!
//! The pieces: `pg` finds the PostgreSQL install, runs the server and parses
//! pgbench's output; `device` builds the test devices and the filesystem on them;
//! `cgroup` holds the server's cgroup (throttle, CPU time); `cmd` finds and runs
//! setup tools; `tables` turns the runs into tables, charts and the
//! comparison with the published figures. This file holds the study's options,
//! one measured pgbench run and the loop over the devices.

mod cgroup;
mod cmd;
mod device;
mod pg;
mod tables;

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::measure::cpu::{ProcStat, ThreadUsage};
use crate::observe::collector::Collector;
use crate::observe::names::syscall_name;
use crate::observe::target::process_tree_threads;
use crate::report::study::{Skipped, StudyResult};
use crate::sys::cleanup;
use crate::sys::loopdev::LoopDev;
use crate::sys::zram::Zram;
use cgroup::{CgCpu, PgCgroup};
use cmd::{run_cmd, tool};
use device::{Device, Mounted, dev_ios};
use pg::{PgInstall, Server, find_postgres, pg_command};
pub use pg::{PgbenchOut, parse_pgbench};

/// Published figures (seeds/004, tables 3-6).
pub const PUB_HDD_RUNTIME_S: f64 = 3345.0;
pub const PUB_SSD_RUNTIME_S: f64 = 201.0;
pub const PUB_HDD_SYSTEM_S: f64 = 18.865;
pub const PUB_SSD_SYSTEM_S: f64 = 31.3175;
pub const PUB_HDD_FUTEX_CALLS: f64 = 2_606_076.0;
pub const PUB_SSD_FUTEX_CALLS: f64 = 7_722_446.0;
pub const PUB_HDD_CTXT_PER_S: f64 = 7_174.0;
pub const PUB_SSD_CTXT_PER_S: f64 = 201_448.0;

/// HDD-like random IOPS for the slow device (a 7200 rpm disk does 100-200).
pub const SLOW_IOPS: u32 = 200;
/// LinkBench's 16 threads in the paper.
const CLIENTS: u32 = 16;
/// What observe may cost pgbench's TPS (BENCHMARKS.md).
pub const OVERHEAD_GOAL_PCT: f64 = 3.0;
/// Per-CPU trace buffer: pgbench on zram writes a few MB/s of syscall events,
/// drained every 50 ms.
const TRACE_BUFFER_KB: u64 = 32 * 1024;

#[derive(Clone, Copy, Debug)]
pub struct ObserveStudyOpts {
    pub quick: bool,
}

/// Sizes and durations of one study run.
#[derive(Clone, Copy, Debug)]
struct Plan {
    scale: u32,
    run_s: u32,
    overhead_pairs: usize,
    overhead_run_s: u32,
    fs_bytes: u64,
}

impl Plan {
    fn new(quick: bool) -> Plan {
        if quick {
            Plan {
                scale: 1,
                run_s: 4,
                overhead_pairs: 2,
                overhead_run_s: 2,
                fs_bytes: 512 << 20,
            }
        } else {
            Plan {
                scale: 10,
                run_s: 15,
                overhead_pairs: 4,
                overhead_run_s: 4,
                fs_bytes: 1 << 30,
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DevKind {
    Slow,
    Fast,
}

impl DevKind {
    fn label(self) -> &'static str {
        match self {
            DevKind::Slow => "slow (HDD-like)",
            DevKind::Fast => "fast (zram)",
        }
    }
}

/// One syscall's totals over a run.
#[derive(Clone, Debug, PartialEq)]
struct Sc {
    name: String,
    calls: u64,
    timed: u64,
    total_ns: u64,
}

/// The tracer's view of one run.
#[derive(Clone, Debug, Default)]
struct Observed {
    syscalls: Vec<Sc>,
    voluntary: u64,
    involuntary: u64,
    threads: usize,
    events: u64,
    /// CPU time of the reader (this thread: drains, decodes, pairs) during the run.
    reader_cpu_ns: u64,
}

impl Observed {
    fn calls(&self, name: &str) -> u64 {
        self.syscalls
            .iter()
            .find(|s| s.name == name)
            .map_or(0, |s| s.calls)
    }
    fn total_calls(&self) -> u64 {
        self.syscalls.iter().map(|s| s.calls).sum()
    }
}

/// One pgbench run with the machine's deltas around it.
#[derive(Clone, Debug)]
struct Run {
    pgb: PgbenchOut,
    secs: f64,
    stat: ProcStat,
    dev_reads: u64,
    dev_writes: u64,
    /// CPU time of the PostgreSQL processes (cpuacct), when the hierarchy exists.
    pg_cpu: Option<CgCpu>,
    obs: Option<Observed>,
}

/// Kills a still-running pgbench on the error path.
struct Reap(Option<Child>);

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn pgbench_run(
    pg: &PgInstall,
    srv: &Server,
    cg: Option<&PgCgroup>,
    dev: &str,
    secs: u32,
    observe: bool,
) -> Result<Run> {
    let mut tracer = None;
    if observe {
        // iolab observe's backend choice: eBPF counters where they work, else
        // the tracefs tracer (said once on stderr).
        let mut t = Collector::open(None, TRACE_BUFFER_KB, 1)?;
        // An empty tracefs pid filter would trace everyone: fill it before
        // tracing starts, then re-list until no thread appeared in between (forks
        // after a parent is listed are followed in the kernel).
        let mut known = process_tree_threads(srv.pid)?;
        t.add_pids(&known)?;
        t.start()?;
        loop {
            let now = process_tree_threads(srv.pid)?;
            let new: Vec<i32> = now.into_iter().filter(|x| !known.contains(x)).collect();
            if new.is_empty() {
                break;
            }
            t.add_pids(&new)?;
            known.extend(new);
        }
        tracer = Some(t);
    }
    let (r0, w0) = dev_ios(dev)?;
    let u0 = ThreadUsage::now();
    let c0 = cg.map(PgCgroup::cpu).transpose()?.flatten();
    let s0 = ProcStat::read()?;
    let t0 = Instant::now();
    let child = Command::new(&pg.pgbench)
        .args(srv.conn_args())
        .args([
            "-n",
            "-c",
            &CLIENTS.to_string(),
            "-j",
            "2",
            "-T",
            &secs.to_string(),
        ])
        .arg("postgres")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting pgbench")?;
    let mut reap = Reap(Some(child));
    let limit = Duration::from_secs(secs as u64 + 60);
    loop {
        std::thread::sleep(Duration::from_millis(50));
        if let Some(t) = tracer.as_mut() {
            t.poll()?;
        }
        let c = reap.0.as_mut().expect("child present until taken");
        if c.try_wait()?.is_some() {
            break;
        }
        if cleanup::stop_requested() {
            bail!("interrupted");
        }
        if t0.elapsed() > limit {
            bail!(
                "pgbench -T {secs} still running after {} s",
                limit.as_secs()
            );
        }
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let s1 = ProcStat::read()?;
    let c1 = cg.map(PgCgroup::cpu).transpose()?.flatten();
    let (r1, w1) = dev_ios(dev)?;
    let obs = match tracer.take() {
        Some(mut t) => {
            t.stop()?;
            t.require_no_loss()?;
            let u = ThreadUsage::delta(&u0, &ThreadUsage::now());
            let p = t.total_period()?;
            let o = Observed {
                syscalls: p
                    .syscall_rows()
                    .into_iter()
                    .map(|(nr, s)| Sc {
                        name: syscall_name(nr),
                        calls: s.calls,
                        timed: s.timed,
                        total_ns: s.total_ns,
                    })
                    .collect(),
                voluntary: p.voluntary(),
                involuntary: p.involuntary(),
                threads: p.threads.len(),
                events: t.events(),
                reader_cpu_ns: u.user_ns + u.sys_ns,
            };
            t.remove()?;
            Some(o)
        }
        None => None,
    };
    let mut child = reap.0.take().expect("child present");
    let status = child.wait()?;
    let mut out = String::new();
    let mut err = String::new();
    if let Some(mut o) = child.stdout.take() {
        o.read_to_string(&mut out)?;
    }
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err)?;
    }
    if !status.success() {
        bail!("pgbench failed ({status}): {}", err.trim());
    }
    let pgb = parse_pgbench(&out).with_context(|| format!("pgbench stderr: {}", err.trim()))?;
    Ok(Run {
        pgb,
        secs: elapsed,
        stat: ProcStat::delta(&s0, &s1),
        dev_reads: r1.saturating_sub(r0),
        dev_writes: w1.saturating_sub(w0),
        pg_cpu: match (c0, c1) {
            (Some(a), Some(b)) => Some(CgCpu {
                user_ns: b.user_ns.saturating_sub(a.user_ns),
                sys_ns: b.sys_ns.saturating_sub(a.sys_ns),
            }),
            _ => None,
        },
        obs,
    })
}

/// One plain and one observed pgbench run, back to back.
#[derive(Clone, Copy, Debug)]
struct OverheadPair {
    plain_tps: f64,
    observed_tps: f64,
    events_per_s: f64,
    /// The reader's CPU in % of one CPU during the observed run.
    reader_pct: f64,
}

impl OverheadPair {
    fn cost_pct(&self) -> f64 {
        100.0 * (self.plain_tps - self.observed_tps) / self.plain_tps
    }
}

/// Everything measured on one device.
struct DeviceResult {
    kind: DevKind,
    dev_desc: String,
    throttle: String,
    run: Run,
    /// Alternating plain/observed runs; fast device only.
    overhead: Vec<OverheadPair>,
}

/// Build the device, filesystem, cluster and server; run pgbench observed (and the
/// overhead pairs on the fast device); tear everything down in reverse order.
fn run_device(pg: &PgInstall, plan: &Plan, kind: DevKind) -> Result<DeviceResult> {
    let tmp = tempfile::Builder::new()
        .prefix("iolab-observe-")
        .tempdir_in("/var/tmp")
        .context("creating a temp dir in /var/tmp")?;
    // The postgres user must reach the mount point inside it.
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755))?;
    let (device, dev_desc) = match kind {
        DevKind::Slow => {
            let img = tmp.path().join("disk.img");
            fs::File::create(&img)
                .and_then(|f| f.set_len(plan.fs_bytes))
                .with_context(|| format!("creating {}", img.display()))?;
            let l = LoopDev::attach(&img, true)?;
            let d = format!(
                "{} (direct I/O over {} on the root disk)",
                l.name(),
                img.display()
            );
            (Device::Loop(l), d)
        }
        DevKind::Fast => {
            let z = Zram::create(plan.fs_bytes)?;
            let d = format!("{} ({} MiB, RAM)", z.name(), plan.fs_bytes >> 20);
            (Device::Zram(z), d)
        }
    };
    let mnt_dir = tmp.path().join("mnt");
    let mount = Mounted::make(&device.path(), &mnt_dir)?;
    std::os::unix::fs::chown(&mount.dir, Some(pg.uid), Some(pg.gid))?;
    let cg = match PgCgroup::create(match kind {
        DevKind::Slow => "slow",
        DevKind::Fast => "fast",
    }) {
        Ok(c) => Some(c),
        Err(e) if kind == DevKind::Fast => {
            // The fast device needs no throttle; the server's pid is still stopped
            // by its own guard.
            eprintln!("iolab: note: {e:#}");
            None
        }
        Err(e) => return Err(e),
    };
    run_cmd(
        pg_command(pg, &pg.bindir.join("initdb"), &mount.dir, None)
            .arg("-D")
            .arg(mount.dir.join("data"))
            .args([
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ]),
        "initdb",
    )?;
    let srv = Server::start(
        pg,
        &mount.dir,
        &tmp.path().join("postgres.log"),
        cg.as_ref(),
    )?;
    run_cmd(
        Command::new(&pg.pgbench)
            .args(srv.conn_args())
            .args(["-i", "-q", "-s", &plan.scale.to_string()])
            .arg("postgres")
            .env("LC_ALL", "C"),
        "pgbench -i",
    )?;
    run_cmd(
        Command::new(pg.bindir.join("psql"))
            .args(srv.conn_args())
            .args(["-X", "-q", "-d", "postgres", "-c", "CHECKPOINT"])
            .env("LC_ALL", "C"),
        "psql CHECKPOINT",
    )?;
    // The throttle starts after loading, so only the measured runs see HDD speed.
    let dev_name = device.name();
    let throttle = match (kind, &cg) {
        (DevKind::Slow, Some(cg)) => {
            let bd = crate::sys::blockdev::BlockDev::from_name(&dev_name)?;
            cg.throttle(bd.major, bd.minor, SLOW_IOPS)?;
            format!(
                "{SLOW_IOPS} read + {SLOW_IOPS} write IOPS on {dev_name} (blkio throttle, cgroup v1, \
                 I/O issued by PostgreSQL processes)"
            )
        }
        _ => "none".to_string(),
    };
    let run = pgbench_run(pg, &srv, cg.as_ref(), &dev_name, plan.run_s, true)?;
    if let (DevKind::Slow, Some(cg)) = (kind, &cg)
        && cg.serviced()? == 0
    {
        bail!(
            "the blkio throttle of {} saw no I/O from PostgreSQL: the slow device was not slowed",
            cg.blkio.display()
        );
    }
    let mut overhead = Vec::new();
    if kind == DevKind::Fast {
        for i in 0..plan.overhead_pairs {
            // Alternate which goes first, so a drift in machine load hits both.
            let first_observed = i % 2 == 1;
            let a = pgbench_run(
                pg,
                &srv,
                cg.as_ref(),
                &dev_name,
                plan.overhead_run_s,
                first_observed,
            )?;
            let b = pgbench_run(
                pg,
                &srv,
                cg.as_ref(),
                &dev_name,
                plan.overhead_run_s,
                !first_observed,
            )?;
            let (plain, obs) = if first_observed { (b, a) } else { (a, b) };
            let o = obs.obs.as_ref().expect("observed run has tracer data");
            overhead.push(OverheadPair {
                plain_tps: plain.pgb.tps,
                observed_tps: obs.pgb.tps,
                events_per_s: o.events as f64 / obs.secs,
                reader_pct: 100.0 * o.reader_cpu_ns as f64 / 1e9 / obs.secs,
            });
        }
    }
    drop(srv);
    drop(cg);
    drop(mount);
    drop(device);
    tmp.close().context("removing the study's temp dir")?;
    Ok(DeviceResult {
        kind,
        dev_desc,
        throttle,
        run,
        overhead,
    })
}

/// Run study 004. Errors only when it cannot run at all (not root, no PostgreSQL,
/// no tracefs); a device that cannot be built is a skipped part.
pub fn run(opts: &ObserveStudyOpts) -> Result<StudyResult> {
    let t_start = Instant::now();
    if !crate::sys::is_root() {
        bail!(
            "study 004 needs root: it creates zram and loop devices, mounts filesystems, \
             a blkio cgroup and a tracefs instance"
        );
    }
    let pg = find_postgres()?;
    tool("mkfs.ext4")?;
    cleanup::install_signal_handlers()?;
    let plan = Plan::new(opts.quick);
    let mut r = StudyResult {
        id: "observe".into(),
        seed: "004".into(),
        title: "RDBMS interrupt and system-call overhead on a slow vs a fast device".into(),
        ..Default::default()
    };
    r.setup = vec![
        (
            "database".into(),
            format!(
                "PostgreSQL {} ({}), run as user postgres; fsync=on, synchronous_commit=on, \
                 shared_buffers=16MB, autovacuum=off, checkpoint_timeout=1h",
                pg.version,
                pg.bindir.display()
            ),
        ),
        (
            "benchmark".into(),
            format!(
                "pgbench TPC-B-like, scale {} ({} accounts), {CLIENTS} clients (the paper's \
                 16 LinkBench threads), 2 pgbench threads, {} s per device{}",
                plan.scale,
                plan.scale as u64 * 100_000,
                plan.run_s,
                if plan.scale < CLIENTS {
                    format!(
                        "; {} branch row(s) for {CLIENTS} clients, so clients also wait on row locks",
                        plan.scale
                    )
                } else {
                    String::new()
                }
            ),
        ),
        (
            "measurement".into(),
            "iolab observe's collector on the postmaster and every process it forks \
             (eBPF counters in the kernel, or tracefs raw_syscalls + sched_switch where BPF \
             is unavailable; exact counts, syscall time includes blocking like strace's); \
             /proc/stat and /sys/block/DEV/stat deltas around each run"
                .into(),
        ),
        (
            "paper".into(),
            "MySQL 5.6 + LinkBench, 16 threads x 10,000 requests, HDD vs SSD, strace -c".into(),
        ),
    ];
    let mut devs: Vec<DeviceResult> = Vec::new();
    for kind in [DevKind::Slow, DevKind::Fast] {
        if cleanup::stop_requested() {
            r.skipped.push(Skipped {
                part: kind.label().into(),
                reason: "interrupted".into(),
            });
            continue;
        }
        match run_device(&pg, &plan, kind) {
            Ok(d) => {
                r.setup
                    .push((format!("{} device", kind.label()), d.dev_desc.clone()));
                r.setup
                    .push((format!("{} throttle", kind.label()), d.throttle.clone()));
                devs.push(d);
            }
            Err(e) => r.skipped.push(Skipped {
                part: format!("{} device", kind.label()),
                reason: format!("{e:#}"),
            }),
        }
    }
    if devs.is_empty() {
        let why: Vec<String> = r
            .skipped
            .iter()
            .map(|s| format!("{}: {}", s.part, s.reason))
            .collect();
        bail!("no device could be measured: {}", why.join("; "));
    }
    tables::build(&mut r, &devs);
    r.duration_s = t_start.elapsed().as_secs_f64();
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_ratios() {
        assert!((PUB_HDD_RUNTIME_S / PUB_SSD_RUNTIME_S - 16.64).abs() < 0.01);
        assert!((PUB_SSD_SYSTEM_S / PUB_HDD_SYSTEM_S - 1.66).abs() < 0.01);
        assert!((PUB_SSD_CTXT_PER_S / PUB_HDD_CTXT_PER_S - 28.08).abs() < 0.01);
    }
}
