//! Study 004 — RDBMS interrupt overhead on HDD vs SSD (SKKU).
//!
//! The paper ran MySQL + LinkBench (16 threads) on an HDD and an SSD and read
//! /proc/stat, `strace -c` and context switches. Here two database servers run
//! on two devices the study creates: a slow one (a loop device over a file on
//! the root disk, held to HDD-like IOPS by the blkio throttle of a cgroup holding
//! the server) and a fast one (zram). MariaDB (the MySQL family: a server of
//! threads waiting on mutexes and condition variables, like the paper's) runs
//! sysbench `oltp_read_write` with 16 threads; PostgreSQL (a server of processes
//! waiting in `epoll_wait` and on latches) runs `pgbench` with 16 clients.
//! Whichever of the two is installed runs. `iolab observe`'s collector is
//! attached to the server's process tree in-process, so the syscall counts and
//! times are exact (not sampled) and cost far less than strace. A last part
//! measures what that attachment costs each benchmark.
//!
//! Each server always runs as its own unprivileged user (`postgres`, `mysql`),
//! in a cgroup of our own, on a filesystem we made, with its socket there and no
//! network port; every piece is undone by a guard (and by the cleanup registry
//! on Ctrl-C): server, cgroup, mount, device, temp dir.
//!
//! The pieces: `pg` and `mariadb` find each install, make its data directory,
//! run the server and load the benchmark's tables; `sysbench` and `pg` read the
//! two clients' output; `bench` is one measured run and the overhead pairs;
//! `device` builds the test devices and the filesystem on them; `cgroup` holds
//! a server's cgroup (throttle, CPU time); `runas` starts a program as the
//! server's user in that cgroup; `cmd` finds and runs setup tools; `effect` forms
//! the paper's fast/slow comparisons from observed counts; `tables` turns the
//! runs into tables, charts and the verdict. This file holds the study's options
//! and the loop over the devices and servers.

mod bench;
mod cgroup;
mod cmd;
mod device;
mod effect;
mod mariadb;
mod pg;
mod runas;
mod server;
mod sysbench;
mod tables;

use std::fs;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::report::study::{Skipped, StudyResult};
use crate::sys::cleanup;
use crate::sys::loopdev::LoopDev;
use crate::sys::zram::Zram;
use bench::{Client, OverheadPair, Run, measured_run, overhead_pairs};
use cgroup::ServerCgroup;
use cmd::tool;
use device::{Device, Mounted, StudyDir};
use mariadb::{MariaInstall, find_mariadb};
use pg::{PgInstall, find_postgres};

#[cfg(any(test, feature = "testing"))]
pub use bench::BenchOut;
pub use pg::parse_pgbench;
pub use sysbench::parse_sysbench;

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
/// LinkBench's 16 threads in the paper: pgbench clients, sysbench threads.
const CLIENTS: u32 = 16;
/// What observe may cost a benchmark's TPS (BENCHMARKS.md).
pub const OVERHEAD_GOAL_PCT: f64 = 3.0;

#[derive(Clone, Copy, Debug)]
pub struct ObserveStudyOpts {
    pub quick: bool,
}

/// Sizes and durations of one study run.
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// pgbench's scale (100,000 accounts each).
    scale: u32,
    /// Rows of sysbench's one table.
    rows: u32,
    /// InnoDB's buffer pool, MiB: it holds the table, so reads come from memory
    /// as PostgreSQL's come from the page cache, and the device sees the commits
    /// and page writes. (A pool smaller than the table, tried at 6 MiB for 40,000
    /// rows, turns the slow device's run into buffer-pool thrashing: 331 futex
    /// calls per transaction against 30 on the fast device.)
    pool_mb: u32,
    /// Seconds of the observed run of each server on each device.
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
                rows: 10_000,
                pool_mb: 64,
                run_s: 4,
                overhead_pairs: 2,
                overhead_run_s: 2,
                fs_bytes: 512 << 20,
            }
        } else {
            Plan {
                scale: 10,
                rows: 100_000,
                pool_mb: 64,
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
    fn tag(self) -> &'static str {
        match self {
            DevKind::Slow => "slow",
            DevKind::Fast => "fast",
        }
    }
}

/// The two database servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Db {
    Postgres,
    Mariadb,
}

impl Db {
    fn name(self) -> &'static str {
        match self {
            Db::Postgres => "PostgreSQL",
            Db::Mariadb => "MariaDB",
        }
    }
    fn bench(self) -> &'static str {
        match self {
            Db::Postgres => "pgbench",
            Db::Mariadb => "sysbench oltp_read_write",
        }
    }
    /// Directory, log and cgroup names.
    fn tag(self) -> &'static str {
        match self {
            Db::Postgres => "pg",
            Db::Mariadb => "mariadb",
        }
    }
    /// What the collector follows, for table titles.
    fn tasks(self) -> &'static str {
        match self {
            Db::Postgres => "PostgreSQL processes",
            Db::Mariadb => "MariaDB server's threads",
        }
    }
    /// How the server's workers wait for each other.
    fn model(self) -> &'static str {
        match self {
            Db::Postgres => "processes with latches and semaphores",
            Db::Mariadb => "threads with mutexes and condition variables",
        }
    }
}

/// A server that is installed here.
enum Install {
    Pg(PgInstall),
    Maria(MariaInstall),
}

impl Install {
    fn db(&self) -> Db {
        match self {
            Install::Pg(_) => Db::Postgres,
            Install::Maria(_) => Db::Mariadb,
        }
    }
    fn user(&self) -> (u32, u32) {
        match self {
            Install::Pg(p) => (p.uid, p.gid),
            Install::Maria(m) => (m.uid, m.gid),
        }
    }
}

/// A running server, stopped when dropped.
enum Live {
    Pg(pg::Server),
    Maria(mariadb::Server),
}

impl Live {
    fn pid(&self) -> i32 {
        match self {
            Live::Pg(s) => s.process.pid,
            Live::Maria(s) => s.process.pid,
        }
    }
}

/// Everything measured of one server on one device.
struct DeviceResult {
    kind: DevKind,
    run: Run,
    /// Alternating plain/observed runs; fast device only.
    overhead: Vec<OverheadPair>,
}

/// One server's results, device by device.
struct ServerResult {
    db: Db,
    devs: Vec<DeviceResult>,
}

/// Which servers can run here: the installed ones, and a "not run" line for
/// each missing one.
fn pick_servers(
    pg: Result<PgInstall>,
    maria: Result<MariaInstall>,
) -> (Vec<Install>, Vec<Skipped>) {
    let mut have = Vec::new();
    let mut missing = Vec::new();
    // MariaDB first: the paper's server family, and the comparison's subject.
    match maria {
        Ok(m) => have.push(Install::Maria(m)),
        Err(e) => missing.push(Skipped {
            part: Db::Mariadb.name().into(),
            reason: format!("not run: {e:#}"),
        }),
    }
    match pg {
        Ok(p) => have.push(Install::Pg(p)),
        Err(e) => missing.push(Skipped {
            part: Db::Postgres.name().into(),
            reason: format!("not run: {e:#}"),
        }),
    }
    (have, missing)
}

/// Build the device and the filesystem on it, then run each server there in
/// turn; tear everything down in reverse order. An error of one server is that
/// server's skipped part; an error building the device skips the device.
fn run_device(
    servers: &[Install],
    plan: &Plan,
    kind: DevKind,
    r: &mut StudyResult,
) -> Result<Vec<(Db, DeviceResult)>> {
    let tmp = StudyDir::create()?;
    let (device, dev_desc) = match kind {
        DevKind::Slow => {
            let img = tmp.path.join("disk.img");
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
    let mount = Mounted::make(&device.path(), &tmp.path.join("mnt"))?;
    r.setup.push((format!("{} device", kind.label()), dev_desc));
    let dev_name = device.name();
    let mut out = Vec::new();
    for s in servers {
        let db = s.db();
        if cleanup::stop_requested() {
            r.skipped.push(Skipped {
                part: format!("{} on the {} device", db.name(), kind.label()),
                reason: "interrupted".into(),
            });
            continue;
        }
        match run_server(s, plan, kind, &mount.dir, &tmp.path, &dev_name) {
            Ok((d, throttle)) => {
                if kind == DevKind::Slow {
                    r.setup.push((
                        format!("{} throttle ({})", kind.label(), db.name()),
                        throttle,
                    ));
                }
                out.push((db, d));
            }
            Err(e) => r.skipped.push(Skipped {
                part: format!("{} on the {} device", db.name(), kind.label()),
                reason: format!("{e:#}"),
            }),
        }
    }
    drop(mount);
    drop(device);
    tmp.close().context("removing the study's temp dir")?;
    Ok(out)
}

/// One server on one mounted device: its directory, cgroup, data and server;
/// the observed run and (fast device) the overhead pairs. Returns the results
/// and the throttle's description. The server and its directory are gone when
/// this returns.
fn run_server(
    s: &Install,
    plan: &Plan,
    kind: DevKind,
    mnt: &Path,
    tmp: &Path,
    dev_name: &str,
) -> Result<(DeviceResult, String)> {
    let db = s.db();
    let dir = mnt.join(db.tag());
    fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let (uid, gid) = s.user();
    std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
        .with_context(|| format!("chown {}", dir.display()))?;
    let cg = match ServerCgroup::create(&format!("{}-{}", db.tag(), kind.tag())) {
        Ok(c) => Some(c),
        Err(e) if kind == DevKind::Fast => {
            // The fast device needs no throttle; the server's pid is still stopped
            // by its own guard.
            eprintln!("iolab: note: {e:#}");
            None
        }
        Err(e) => return Err(e),
    };
    let log = tmp.join(format!("{}.log", db.tag()));
    let live = match s {
        Install::Pg(p) => Live::Pg(pg::setup(p, &dir, &log, cg.as_ref(), plan.scale)?),
        Install::Maria(m) => Live::Maria(mariadb::setup(
            m,
            &dir,
            &log,
            cg.as_ref(),
            plan.rows,
            plan.pool_mb,
        )?),
    };
    let pid = live.pid();
    // The throttle starts after loading, so only the measured runs see HDD speed.
    let throttle = match (kind, &cg) {
        (DevKind::Slow, Some(cg)) => {
            let bd = crate::sys::blockdev::BlockDev::from_name(dev_name)?;
            cg.throttle(bd.major, bd.minor, SLOW_IOPS)?;
            format!(
                "{SLOW_IOPS} read + {SLOW_IOPS} write IOPS on {dev_name} (blkio throttle, cgroup \
                 v1, I/O issued by the {})",
                db.tasks()
            )
        }
        _ => "none".to_string(),
    };
    let command = |secs: u32| match (s, &live) {
        (Install::Pg(p), Live::Pg(srv)) => pg::pgbench_command(p, srv, CLIENTS, secs),
        (Install::Maria(m), Live::Maria(srv)) => sysbench::command(
            &m.sysbench,
            &srv.sock,
            plan.rows,
            sysbench::Phase::Run {
                secs,
                threads: CLIENTS,
            },
        ),
        _ => unreachable!("a server runs with its own install"),
    };
    let client = Client {
        what: match db {
            Db::Postgres => "pgbench",
            Db::Mariadb => "sysbench",
        },
        command: &command,
        parse: match db {
            Db::Postgres => parse_pgbench,
            Db::Mariadb => parse_sysbench,
        },
    };
    let run = measured_run(&client, pid, cg.as_ref(), dev_name, plan.run_s, true)?;
    if let (DevKind::Slow, Some(cg)) = (kind, &cg)
        && cg.serviced()? == 0
    {
        bail!(
            "the blkio throttle of {} saw no I/O from the {}: the slow device was not slowed",
            cg.blkio.display(),
            db.tasks()
        );
    }
    let overhead = if kind == DevKind::Fast {
        overhead_pairs(
            &client,
            pid,
            cg.as_ref(),
            dev_name,
            plan.overhead_run_s,
            plan.overhead_pairs,
        )?
    } else {
        Vec::new()
    };
    drop(live);
    drop(cg);
    // The next server gets the filesystem's room (and zram its memory).
    fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    Ok((
        DeviceResult {
            kind,
            run,
            overhead,
        },
        throttle,
    ))
}

/// Run study 004. Errors only when it cannot run at all (not root, neither
/// server installed, no mkfs); a device or server that cannot run is a skipped
/// part.
pub fn run(opts: &ObserveStudyOpts) -> Result<StudyResult> {
    let t_start = Instant::now();
    if !crate::sys::is_root() {
        bail!(
            "study 004 needs root: it creates zram and loop devices, mounts filesystems, \
             a blkio cgroup and a tracefs instance"
        );
    }
    let (servers, missing) = pick_servers(find_postgres(), find_mariadb());
    if servers.is_empty() {
        let why: Vec<String> = missing
            .iter()
            .map(|s| format!("{}: {}", s.part, s.reason))
            .collect();
        bail!("neither database server can run here: {}", why.join("; "));
    }
    tool("mkfs.ext4")?;
    cleanup::install_signal_handlers(crate::sys::cleanup::SecondSignal::UndoAndExit)?;
    let plan = Plan::new(opts.quick);
    let mut r = StudyResult {
        id: "observe".into(),
        seed: "004".into(),
        title: "RDBMS interrupt and system-call overhead on a slow vs a fast device".into(),
        skipped: missing,
        ..Default::default()
    };
    for s in &servers {
        r.setup.extend(setup_lines(s, &plan));
    }
    r.setup.push((
        "measurement".into(),
        "iolab observe's collector on the server and every process and thread it starts \
         (eBPF counters in the kernel, or tracefs raw_syscalls + sched_switch where BPF \
         is unavailable; exact counts, syscall time includes blocking like strace's); the \
         server's cgroup CPU (cpuacct); /proc/stat and /sys/block/DEV/stat deltas around \
         each run"
            .into(),
    ));
    r.setup.push((
        "paper".into(),
        "MySQL 5.6 + LinkBench, 16 threads x 10,000 requests, HDD vs SSD, strace -c".into(),
    ));
    let mut results: Vec<ServerResult> = servers
        .iter()
        .map(|s| ServerResult {
            db: s.db(),
            devs: Vec::new(),
        })
        .collect();
    for kind in [DevKind::Slow, DevKind::Fast] {
        if cleanup::stop_requested() {
            r.skipped.push(Skipped {
                part: format!("{} device", kind.label()),
                reason: "interrupted".into(),
            });
            continue;
        }
        match run_device(&servers, &plan, kind, &mut r) {
            Ok(v) => {
                for (db, d) in v {
                    if let Some(x) = results.iter_mut().find(|x| x.db == db) {
                        x.devs.push(d);
                    }
                }
            }
            Err(e) => r.skipped.push(Skipped {
                part: format!("{} device", kind.label()),
                reason: format!("{e:#}"),
            }),
        }
    }
    results.retain(|x| !x.devs.is_empty());
    if results.is_empty() {
        let why: Vec<String> = r
            .skipped
            .iter()
            .map(|s| format!("{}: {}", s.part, s.reason))
            .collect();
        bail!(
            "no server could be measured on any device: {}",
            why.join("; ")
        );
    }
    tables::build(&mut r, &results);
    r.duration_s = t_start.elapsed().as_secs_f64();
    Ok(r)
}

/// What the setup table says of one server and its benchmark.
fn setup_lines(s: &Install, plan: &Plan) -> Vec<(String, String)> {
    match s {
        Install::Pg(pg) => vec![
            (
                "PostgreSQL".into(),
                format!(
                    "PostgreSQL {} ({}), run as user postgres, Unix socket only; fsync=on, \
                     synchronous_commit=on, shared_buffers=16MB, autovacuum=off, \
                     checkpoint_timeout=1h",
                    pg.version,
                    pg.bindir.display()
                ),
            ),
            (
                "pgbench".into(),
                format!(
                    "TPC-B-like, scale {} ({} accounts), {CLIENTS} clients (the paper's 16 \
                     LinkBench threads), 2 pgbench threads, {} s per device{}",
                    plan.scale,
                    plan.scale as u64 * 100_000,
                    plan.run_s,
                    if plan.scale < CLIENTS {
                        format!(
                            "; {} branch row(s) for {CLIENTS} clients, so clients also wait \
                             on row locks",
                            plan.scale
                        )
                    } else {
                        String::new()
                    }
                ),
            ),
        ],
        Install::Maria(m) => vec![
            (
                "MariaDB".into(),
                format!(
                    "MariaDB {} ({}), run as user mysql, Unix socket only, own data directory \
                     from mariadb-install-db; binary log on; innodb-buffer-pool-size={}M (holds \
                     the table: reads come from memory, as PostgreSQL's from the page cache); {}",
                    m.version,
                    m.mariadbd.display(),
                    plan.pool_mb,
                    mariadb::SETTINGS
                        .iter()
                        .map(|x| x.trim_start_matches("--"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            (
                "sysbench".into(),
                format!(
                    "{} ({}), 1 table x {} rows, {CLIENTS} threads (the paper's 16 LinkBench \
                     threads), {} s per device; 'failed' counts sysbench's ignored errors \
                     (deadlocks rolled back and retried)",
                    sysbench::TEST,
                    m.sysbench.display(),
                    plan.rows,
                    plan.run_s
                ),
            ),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_pg() -> PgInstall {
        PgInstall {
            bindir: "/usr/lib/postgresql/15/bin".into(),
            pgbench: "/usr/bin/pgbench".into(),
            version: "15".into(),
            uid: 1,
            gid: 1,
        }
    }

    #[test]
    fn a_missing_server_is_a_not_run_line_and_the_other_runs() {
        let (have, missing) = pick_servers(
            Ok(fake_pg()),
            Err(anyhow::anyhow!(
                "install mariadb-server: no mariadbd in /usr/sbin"
            )),
        );
        assert_eq!(have.len(), 1);
        assert_eq!(have[0].db(), Db::Postgres);
        assert_eq!(missing.len(), 1);
        assert_eq!(missing[0].part, "MariaDB");
        assert!(
            missing[0]
                .reason
                .starts_with("not run: install mariadb-server"),
            "{:?}",
            missing[0]
        );
        let (have, missing) = pick_servers(
            Err(anyhow::anyhow!("install postgresql: PostgreSQL not found")),
            Err(anyhow::anyhow!("install mariadb-server: no mariadbd")),
        );
        assert!(have.is_empty());
        assert_eq!(missing.len(), 2);
        assert!(missing[1].reason.starts_with("not run: install postgresql"));
    }

    #[test]
    fn published_ratios() {
        assert!((PUB_HDD_RUNTIME_S / PUB_SSD_RUNTIME_S - 16.64).abs() < 0.01);
        assert!((PUB_SSD_SYSTEM_S / PUB_HDD_SYSTEM_S - 1.66).abs() < 0.01);
        assert!((PUB_SSD_CTXT_PER_S / PUB_HDD_CTXT_PER_S - 28.08).abs() < 0.01);
    }
}
