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

use std::ffi::CString;
use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

use super::model::{Cell, Chart, ChartKind, Comparison, Series, Skipped, StudyResult, Table};
use crate::measure::cpu::{CpuTimes, ProcStat, ThreadUsage};
use crate::measure::observe::collector::Collector;
use crate::measure::observe::tracer::syscall_name;
use crate::sys::cleanup::{self, CleanupId};
use crate::sys::loopdev::LoopDev;
use crate::sys::zram::Zram;

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
const BLKIO_ROOT: &str = "/sys/fs/cgroup/blkio";
const CPUACCT_ROOT: &str = "/sys/fs/cgroup/cpuacct";
/// Per-CPU trace buffer: pgbench on zram writes a few MB/s of syscall events,
/// drained every 50 ms.
const TRACE_BUFFER_KB: u64 = 32 * 1024;

/// Syscalls a process uses to wait for, or wake, another: the candidates for the
/// role futex plays in the paper's MySQL (threads + mutexes). PostgreSQL is
/// processes + semaphores and latches, so the data decides which one it is.
const WAIT_WAKE_CALLS: [&str; 15] = [
    "futex",
    "semop",
    "semtimedop",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "kill",
    "tgkill",
    "nanosleep",
    "clock_nanosleep",
    "sched_yield",
];

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

/// The PostgreSQL installation and the user it runs as.
#[derive(Clone, Debug)]
struct PgInstall {
    bindir: PathBuf,
    pgbench: PathBuf,
    version: String,
    uid: u32,
    gid: u32,
}

/// Newest `/usr/lib/postgresql/N/bin` with initdb, postgres, psql and pgbench.
fn find_postgres() -> Result<PgInstall> {
    let root = Path::new("/usr/lib/postgresql");
    let mut found: Vec<(u32, PathBuf)> = fs::read_dir(root)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let v: u32 = e.file_name().to_str()?.parse().ok()?;
                    let bin = e.path().join("bin");
                    ["initdb", "postgres", "psql"]
                        .iter()
                        .all(|b| bin.join(b).is_file())
                        .then_some((v, bin))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    let Some((v, bindir)) = found.pop() else {
        bail!(
            "PostgreSQL not found: no {}/N/bin with initdb, postgres and psql; \
             install it (Debian/Ubuntu: apt-get install postgresql postgresql-contrib)",
            root.display()
        );
    };
    let pgbench = [bindir.join("pgbench"), PathBuf::from("/usr/bin/pgbench")]
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| {
            anyhow!(
                "pgbench not found in {} or /usr/bin (Debian: apt-get install postgresql-contrib)",
                bindir.display()
            )
        })?;
    let (uid, gid) = user_ids("postgres")?;
    Ok(PgInstall {
        bindir,
        pgbench,
        version: v.to_string(),
        uid,
        gid,
    })
}

fn user_ids(name: &str) -> Result<(u32, u32)> {
    let c = CString::new(name).expect("no NUL in a literal user name");
    // SAFETY: getpwnam reads the passwd database; the result is copied out at once
    // and only this thread calls it here.
    let pw = unsafe { libc::getpwnam(c.as_ptr()) };
    if pw.is_null() {
        bail!(
            "no '{name}' user: PostgreSQL refuses to run as root and the study runs it \
             as '{name}' (the Debian package creates it; or: useradd --system {name})"
        );
    }
    // SAFETY: pw is non-null and points to a valid passwd record.
    Ok(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

fn tool(name: &str) -> Result<PathBuf> {
    for dir in ["/usr/sbin", "/sbin", "/usr/bin", "/bin"] {
        let p = Path::new(dir).join(name);
        if p.is_file() {
            return Ok(p);
        }
    }
    bail!(
        "{name} not found in /usr/sbin, /sbin, /usr/bin, /bin (Debian: apt-get install e2fsprogs)"
    )
}

/// Run a setup command to completion; its output goes into the error if it fails.
fn run_cmd(cmd: &mut Command, what: &str) -> Result<String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("{what}: cannot start {:?}", cmd.get_program()))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            String::from_utf8_lossy(&out.stdout).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The device under test, kept until the filesystem on it is unmounted.
enum Device {
    Loop(LoopDev),
    Zram(Zram),
}

impl Device {
    fn name(&self) -> String {
        match self {
            Device::Loop(l) => l.name(),
            Device::Zram(z) => z.name(),
        }
    }
    fn path(&self) -> PathBuf {
        match self {
            Device::Loop(l) => l.path(),
            Device::Zram(z) => z.path(),
        }
    }
}

/// (reads, writes) completed by a block device, from /sys/block/NAME/stat.
fn dev_ios(name: &str) -> Result<(u64, u64)> {
    let p = format!("/sys/block/{name}/stat");
    let s = fs::read_to_string(&p).with_context(|| format!("reading {p}"))?;
    let f: Vec<u64> = s
        .split_whitespace()
        .map(|v| v.parse().with_context(|| format!("{p}: bad number {v:?}")))
        .collect::<Result<_>>()?;
    if f.len() < 5 {
        bail!("{p}: expected at least 5 fields, got {}", f.len());
    }
    Ok((f[0], f[4]))
}

/// An ext4 filesystem we made and mounted; unmounted when dropped.
struct Mounted {
    dir: PathBuf,
    cleanup: Option<CleanupId>,
}

impl Mounted {
    fn make(dev: &Path, dir: &Path) -> Result<Mounted> {
        // Inode tables and journal written now, so no lazy-init thread writes to
        // the device while pgbench is measured.
        run_cmd(
            Command::new(tool("mkfs.ext4")?)
                .args([
                    "-q",
                    "-F",
                    "-E",
                    "lazy_itable_init=0,lazy_journal_init=0,nodiscard",
                ])
                .arg(dev),
            &format!("mkfs.ext4 {}", dev.display()),
        )?;
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let cdev = CString::new(dev.as_os_str().as_encoded_bytes())?;
        let cdir = CString::new(dir.as_os_str().as_encoded_bytes())?;
        // SAFETY: valid NUL-terminated strings; no mount data.
        let r = unsafe {
            libc::mount(
                cdev.as_ptr(),
                cdir.as_ptr(),
                c"ext4".as_ptr(),
                libc::MS_NOATIME,
                std::ptr::null(),
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("mounting {} on {}", dev.display(), dir.display()));
        }
        let d = dir.to_path_buf();
        let cleanup = cleanup::register(format!("unmount {}", dir.display()), move || unmount(&d));
        Ok(Mounted {
            dir: dir.to_path_buf(),
            cleanup: Some(cleanup),
        })
    }
}

fn unmount(dir: &Path) -> Result<()> {
    let c = CString::new(dir.as_os_str().as_encoded_bytes())?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        // SAFETY: c is a valid path string.
        if unsafe { libc::umount2(c.as_ptr(), 0) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINVAL) | Some(libc::ENOENT) => return Ok(()),
            Some(libc::EBUSY) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50))
            }
            _ => return Err(e).with_context(|| format!("unmounting {}", dir.display())),
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Some(id) = self.cleanup.take()
            && let Some(Err(f)) = cleanup::run(id)
        {
            eprintln!("iolab: warning: {f}");
        }
    }
}

/// The server's cgroup (v1): a blkio group for the throttle and, where the
/// hierarchy exists, a cpuacct group for the exact CPU time of every PostgreSQL
/// process, also of backends that exited. Whatever is still in them when dropped
/// is killed, so no PostgreSQL process outlives the study.
struct PgCgroup {
    blkio: PathBuf,
    cpuacct: Option<PathBuf>,
    /// cgroup.procs of each group, prepared before fork: the child moves itself in
    /// without allocating.
    procs: Vec<CString>,
    cleanup: Vec<CleanupId>,
}

/// CPU time of a cgroup's tasks, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct CgCpu {
    user_ns: u64,
    sys_ns: u64,
}

impl PgCgroup {
    fn create(tag: &str) -> Result<PgCgroup> {
        let f = Path::new(BLKIO_ROOT).join("blkio.throttle.write_iops_device");
        if !f.exists() {
            bail!(
                "{} missing: this kernel has no cgroup v1 blkio hierarchy with throttling \
                 (needs CONFIG_BLK_DEV_THROTTLING and blkio mounted at {BLKIO_ROOT})",
                f.display()
            );
        }
        // Unique per study run, so two studies in one process never share a group.
        static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("iolab-observe-{}-{n}-{tag}", std::process::id());
        let mut g = PgCgroup {
            blkio: Path::new(BLKIO_ROOT).join(&name),
            cpuacct: None,
            procs: Vec::new(),
            cleanup: Vec::new(),
        };
        g.add_dir(&g.blkio.clone())?;
        let acct = Path::new(CPUACCT_ROOT);
        // blkio and cpuacct may share one hierarchy; then the blkio group counts.
        if acct.join("cpuacct.usage_sys").exists() {
            let d = acct.join(&name);
            if d != g.blkio {
                g.add_dir(&d)?;
            }
            g.cpuacct = Some(d);
        }
        Ok(g)
    }

    fn add_dir(&mut self, dir: &Path) -> Result<()> {
        fs::create_dir(dir).with_context(|| format!("creating cgroup {}", dir.display()))?;
        let d = dir.to_path_buf();
        self.cleanup.push(cleanup::register(
            format!("remove cgroup {}", dir.display()),
            move || empty_and_remove(&d),
        ));
        self.procs.push(CString::new(
            dir.join("cgroup.procs").as_os_str().as_encoded_bytes(),
        )?);
        Ok(())
    }

    fn throttle(&self, major: u32, minor: u32, iops: u32) -> Result<()> {
        for f in [
            "blkio.throttle.read_iops_device",
            "blkio.throttle.write_iops_device",
        ] {
            let p = self.blkio.join(f);
            fs::write(&p, format!("{major}:{minor} {iops}"))
                .with_context(|| format!("writing {}", p.display()))?;
        }
        Ok(())
    }

    /// I/Os the throttle saw from this group (all devices).
    fn serviced(&self) -> Result<u64> {
        let p = self.blkio.join("blkio.throttle.io_serviced");
        let s = fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        Ok(s.lines()
            .find_map(|l| l.strip_prefix("Total "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0))
    }

    fn cpu(&self) -> Result<Option<CgCpu>> {
        let Some(d) = &self.cpuacct else {
            return Ok(None);
        };
        let read = |f: &str| -> Result<u64> {
            let p = d.join(f);
            let s = fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
            s.trim()
                .parse()
                .with_context(|| format!("{}: not a number: {s:?}", p.display()))
        };
        Ok(Some(CgCpu {
            user_ns: read("cpuacct.usage_user")?,
            sys_ns: read("cpuacct.usage_sys")?,
        }))
    }
}

fn cgroup_pids(dir: &Path) -> Vec<i32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn empty_and_remove(dir: &Path) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let pids = cgroup_pids(dir);
        if pids.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            bail!(
                "processes {pids:?} still in {} after SIGKILL",
                dir.display()
            );
        }
        for p in pids {
            // SAFETY: sending a signal; the pids are members of our own cgroup.
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // rmdir can see EBUSY for a moment while the last member is being released.
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => return Err(e).with_context(|| format!("removing cgroup {}", dir.display())),
        }
    }
}

impl Drop for PgCgroup {
    fn drop(&mut self) {
        for id in self.cleanup.drain(..).rev() {
            if let Some(Err(f)) = cleanup::run(id) {
                eprintln!("iolab: warning: {f}");
            }
        }
    }
}

/// A command that runs as the postgres user, optionally inside the cgroup.
fn pg_command(pg: &PgInstall, prog: &Path, cwd: &Path, cg: Option<&PgCgroup>) -> Command {
    let mut c = Command::new(prog);
    c.current_dir(cwd)
        .env("LC_ALL", "C")
        .env_remove("PGDATA")
        .stdin(Stdio::null());
    let procs: Vec<CString> = cg.map(|g| g.procs.clone()).unwrap_or_default();
    let (uid, gid) = (pg.uid, pg.gid);
    // The move into the cgroup needs root, so the identity change is done here,
    // after it, rather than by Command::uid (which std applies before pre_exec).
    // SAFETY: between fork and exec only open/write/close/setgroups/setgid/setuid
    // on memory prepared before the fork: async-signal-safe, no allocation.
    unsafe {
        c.pre_exec(move || {
            for path in &procs {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // "0" moves the writing task (cgroup v1).
                let n = libc::write(fd, b"0".as_ptr().cast(), 1);
                let e = std::io::Error::last_os_error();
                libc::close(fd);
                if n != 1 {
                    return Err(e);
                }
            }
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(gid) != 0
                || libc::setuid(uid) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    c
}

/// A running postmaster; shut down (immediate mode) when dropped.
struct Server {
    child: Child,
    pid: i32,
    sock: PathBuf,
    log: PathBuf,
    cleanup: Option<CleanupId>,
}

impl Server {
    fn start(pg: &PgInstall, mnt: &Path, log: &Path, cg: Option<&PgCgroup>) -> Result<Server> {
        let data = mnt.join("data");
        let logf = fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let child = pg_command(pg, &pg.bindir.join("postgres"), mnt, cg)
            .arg("-D")
            .arg(&data)
            .args([
                "-c",
                "listen_addresses=",
                "-c",
                "port=5432",
                "-c",
                "fsync=on",
                "-c",
                "synchronous_commit=on",
                // Small, so pages leave the server for the kernel and the device.
                "-c",
                "shared_buffers=16MB",
                "-c",
                "max_connections=40",
                // No background vacuum or timed checkpoint inside a measured run.
                "-c",
                "autovacuum=off",
                "-c",
                "checkpoint_timeout=1h",
                "-c",
                "max_wal_size=2GB",
            ])
            .arg("-c")
            .arg(format!("unix_socket_directories={}", mnt.display()))
            .stdout(Stdio::null())
            .stderr(logf)
            .spawn()
            .context("starting postgres")?;
        let pid = child.id() as i32;
        // SIGQUIT = immediate shutdown: no shutdown checkpoint through a throttled
        // device; the cluster is thrown away anyway.
        let cleanup = cleanup::register(format!("stop postgres pid {pid}"), move || stop_pid(pid));
        let mut s = Server {
            child,
            pid,
            sock: mnt.to_path_buf(),
            log: log.to_path_buf(),
            cleanup: Some(cleanup),
        };
        s.wait_ready(&data.join("postmaster.pid"))?;
        Ok(s)
    }

    /// postmaster.pid's 8th line turns "ready" when connections are accepted.
    fn wait_ready(&mut self, pidfile: &Path) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(st) = self.child.try_wait()? {
                bail!("postgres exited during startup ({st}): {}", self.log_tail());
            }
            if fs::read_to_string(pidfile)
                .ok()
                .and_then(|s| s.lines().nth(7).map(|l| l.trim() == "ready"))
                .unwrap_or(false)
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!("postgres not ready after 30 s: {}", self.log_tail());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn log_tail(&self) -> String {
        let s = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = s.lines().collect();
        let tail = lines[lines.len().saturating_sub(5)..].join(" | ");
        format!("log {}: {tail}", self.log.display())
    }

    fn conn_args(&self) -> Vec<String> {
        vec![
            "-h".into(),
            self.sock.display().to_string(),
            "-p".into(),
            "5432".into(),
            "-U".into(),
            "postgres".into(),
        ]
    }
}

fn stop_pid(pid: i32) -> Result<()> {
    if process_gone(pid) {
        return Ok(());
    }
    // SAFETY: pid is our unreaped child, so the number cannot have been reused.
    unsafe { libc::kill(pid, libc::SIGQUIT) };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !process_gone(pid) {
        if Instant::now() >= deadline {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            bail!("postgres pid {pid} ignored SIGQUIT for 10 s; killed");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(id) = self.cleanup.take()
            && let Some(Err(f)) = cleanup::run(id)
        {
            eprintln!("iolab: warning: {f}");
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn process_gone(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rfind(')')
            .and_then(|i| s[i + 1..].split_whitespace().next())
            .is_none_or(|st| st == "Z" || st == "X"),
        Err(_) => true,
    }
}

/// All threads of `pid` and its descendants (postmaster + backends + helpers).
fn tree_threads(pid: i32) -> Result<Vec<i32>> {
    crate::measure::observe::process_tree_threads(pid)
}

/// What pgbench printed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PgbenchOut {
    pub tps: f64,
    pub latency_ms: f64,
    pub transactions: u64,
    pub failed: u64,
}

/// Parse pgbench's summary (PostgreSQL 10-17 wording).
pub fn parse_pgbench(out: &str) -> Result<PgbenchOut> {
    let after = |key: &str| -> Option<&str> {
        out.lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .map(str::trim)
    };
    let first_num = |s: &str| -> Option<f64> { s.split_whitespace().next()?.parse().ok() };
    let tps = after("tps =")
        .and_then(first_num)
        .ok_or_else(|| anyhow!("pgbench output has no 'tps = N' line: {}", out.trim()))?;
    let latency_ms = after("latency average =")
        .and_then(first_num)
        .ok_or_else(|| anyhow!("pgbench output has no 'latency average = N ms' line"))?;
    let transactions = after("number of transactions actually processed:")
        .and_then(|s| s.split(['/', ' ']).next()?.parse().ok())
        .ok_or_else(|| {
            anyhow!("pgbench output has no 'number of transactions actually processed' line")
        })?;
    let failed = after("number of failed transactions:")
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    Ok(PgbenchOut {
        tps,
        latency_ms,
        transactions,
        failed,
    })
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
        let mut known = tree_threads(srv.pid)?;
        t.add_pids(&known)?;
        t.start()?;
        loop {
            let now = tree_threads(srv.pid)?;
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

/// Clock ticks per second of /proc/stat.
fn clk_tck() -> f64 {
    // SAFETY: sysconf has no side effects.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

fn ncpus() -> f64 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
}

/// The /proc/stat fields the paper's table 3 lists, in seconds per CPU.
fn split_secs(t: &CpuTimes) -> [(&'static str, f64); 6] {
    let k = clk_tck() * ncpus();
    [
        ("user", (t.user + t.nice) as f64 / k),
        ("system", t.system as f64 / k),
        ("idle", t.idle as f64 / k),
        ("iowait", t.iowait as f64 / k),
        ("irq", t.irq as f64 / k),
        ("softirq", t.softirq as f64 / k),
    ]
}

fn per_txn(n: u64, r: &Run) -> f64 {
    if r.pgb.transactions > 0 {
        n as f64 / r.pgb.transactions as f64
    } else {
        f64::NAN
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 && a.is_finite() && b.is_finite() {
        a / b
    } else {
        f64::NAN
    }
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
    build(&mut r, &devs);
    r.duration_s = t_start.elapsed().as_secs_f64();
    Ok(r)
}

fn build(r: &mut StudyResult, devs: &[DeviceResult]) {
    let names: Vec<String> = devs.iter().map(|d| d.kind.label().to_string()).collect();
    // (i) pgbench.
    r.tables.push(Table {
        title: "(i) pgbench on each device (observed)".into(),
        columns: [
            "device",
            "TPS",
            "latency avg ms",
            "transactions",
            "failed",
            "run s",
            "device reads/s",
            "device writes/s",
        ]
        .map(String::from)
        .to_vec(),
        rows: devs
            .iter()
            .map(|d| {
                let x = &d.run;
                vec![
                    Cell::text(d.kind.label()),
                    Cell::num(x.pgb.tps, 1),
                    Cell::num(x.pgb.latency_ms, 2),
                    Cell::num(x.pgb.transactions as f64, 0),
                    Cell::num(x.pgb.failed as f64, 0),
                    Cell::num(x.secs, 1),
                    Cell::num(x.dev_reads as f64 / x.secs, 0),
                    Cell::num(x.dev_writes as f64 / x.secs, 0),
                ]
            })
            .collect(),
    });
    // (ii) /proc/stat like the paper's table 3.
    let mut cols = vec!["field".to_string()];
    for n in &names {
        cols.push(format!("{n} s/CPU"));
        cols.push(format!("{n} %"));
    }
    let splits: Vec<[(&str, f64); 6]> =
        devs.iter().map(|d| split_secs(&d.run.stat.total)).collect();
    let mut rows = Vec::new();
    for i in 0..6 {
        let mut row = vec![Cell::text(splits[0][i].0)];
        for s in &splits {
            let tot: f64 = s.iter().map(|x| x.1).sum();
            row.push(Cell::num(s[i].1, 2));
            row.push(Cell::num(100.0 * s[i].1 / tot.max(1e-9), 1));
        }
        rows.push(row);
    }
    let mut row = vec![Cell::text("total")];
    for s in &splits {
        row.push(Cell::num(s.iter().map(|x| x.1).sum(), 2));
        row.push(Cell::num(100.0, 1));
    }
    rows.push(row);
    r.tables.push(Table {
        title: "(ii) /proc/stat over the run, all CPUs (paper's table 3)".into(),
        columns: cols,
        rows,
    });
    if devs.iter().any(|d| d.run.pg_cpu.is_some()) {
        r.tables.push(Table {
            title: "(ii-b) CPU time of the PostgreSQL processes only (cpuacct cgroup; \
                    /proc/stat above also holds everything else this machine ran)"
                .into(),
            columns: [
                "device",
                "user s",
                "system s",
                "CPUs busy",
                "system % of their CPU",
                "system ms / 1000 transactions",
                "system us / syscall",
            ]
            .map(String::from)
            .to_vec(),
            rows: devs
                .iter()
                .filter_map(|d| {
                    let c = d.run.pg_cpu?;
                    let (u, sy) = (c.user_ns as f64 / 1e9, c.sys_ns as f64 / 1e9);
                    let calls = d.run.obs.as_ref().map_or(0, Observed::total_calls);
                    Some(vec![
                        Cell::text(d.kind.label()),
                        Cell::num(u, 2),
                        Cell::num(sy, 2),
                        Cell::num((u + sy) / d.run.secs, 2),
                        Cell::num(100.0 * sy / (u + sy).max(1e-9), 1),
                        Cell::num(sys_ms_per_ktxn(&d.run).0, 1),
                        Cell::num(
                            if calls > 0 {
                                sy * 1e6 / calls as f64
                            } else {
                                f64::NAN
                            },
                            2,
                        ),
                    ])
                })
                .collect(),
        });
    }
    // (iii) syscalls per device, like strace -c (tables 4, 5).
    for d in devs {
        let Some(o) = &d.run.obs else { continue };
        let total_ns: u64 = o.syscalls.iter().map(|s| s.total_ns).sum();
        let mut top = o.syscalls.clone();
        top.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(b.calls.cmp(&a.calls)));
        r.tables.push(Table {
            title: format!(
                "(iii) system calls of the PostgreSQL processes, {} ({} calls, {} threads, \
                 {} trace events; paper's tables 4-5)",
                d.kind.label(),
                o.total_calls(),
                o.threads,
                o.events
            ),
            columns: [
                "syscall",
                "% time",
                "seconds",
                "usec/call",
                "calls",
                "calls/transaction",
            ]
            .map(String::from)
            .to_vec(),
            rows: top
                .iter()
                .take(12)
                .map(|s| {
                    vec![
                        Cell::text(s.name.clone()),
                        Cell::num(100.0 * s.total_ns as f64 / total_ns.max(1) as f64, 2),
                        Cell::num(s.total_ns as f64 / 1e9, 3),
                        Cell::num(
                            if s.timed > 0 {
                                s.total_ns as f64 / s.timed as f64 / 1e3
                            } else {
                                f64::NAN
                            },
                            1,
                        ),
                        Cell::num(s.calls as f64, 0),
                        Cell::num(per_txn(s.calls, &d.run), 2),
                    ]
                })
                .collect(),
        });
    }
    // (iv) context switches (table 6).
    r.tables.push(Table {
        title: "(iv) context switches and interrupts (paper's table 6)".into(),
        columns: [
            "device",
            "system ctxt",
            "system ctxt/s",
            "postgres voluntary",
            "postgres involuntary",
            "postgres ctxt/s",
            "postgres ctxt/transaction",
            "interrupts/s",
        ]
        .map(String::from)
        .to_vec(),
        rows: devs
            .iter()
            .map(|d| {
                let x = &d.run;
                let (v, i) = x
                    .obs
                    .as_ref()
                    .map_or((0, 0), |o| (o.voluntary, o.involuntary));
                vec![
                    Cell::text(d.kind.label()),
                    Cell::num(x.stat.ctxt as f64, 0),
                    Cell::num(x.stat.ctxt as f64 / x.secs, 0),
                    Cell::num(v as f64, 0),
                    Cell::num(i as f64, 0),
                    Cell::num((v + i) as f64 / x.secs, 0),
                    Cell::num(per_txn(v + i, x), 2),
                    Cell::num(x.stat.intr as f64 / x.secs, 0),
                ]
            })
            .collect(),
    });
    // (v) observe's overhead.
    let fast = devs.iter().find(|d| d.kind == DevKind::Fast);
    let slow = devs.iter().find(|d| d.kind == DevKind::Slow);
    let mut overhead_pct = None;
    if let Some(f) = fast
        && !f.overhead.is_empty()
    {
        let med = |g: fn(&OverheadPair) -> f64| median_mid(f.overhead.iter().map(g).collect());
        // The cost is taken per pair, so a change in machine load between pairs
        // cancels out.
        let pct = med(OverheadPair::cost_pct);
        overhead_pct = Some(pct);
        let row = |label: String, p: &OverheadPair, cost: f64| {
            vec![
                Cell::text(label),
                Cell::num(p.plain_tps, 1),
                Cell::num(p.observed_tps, 1),
                Cell::num(cost, 1),
                Cell::num(p.events_per_s, 0),
                Cell::num(p.reader_pct, 1),
            ]
        };
        let mut rows: Vec<Vec<Cell>> = f
            .overhead
            .iter()
            .enumerate()
            .map(|(i, p)| row(format!("pair {}", i + 1), p, p.cost_pct()))
            .collect();
        let m = OverheadPair {
            plain_tps: med(|p| p.plain_tps),
            observed_tps: med(|p| p.observed_tps),
            events_per_s: med(|p| p.events_per_s),
            reader_pct: med(|p| p.reader_pct),
        };
        rows.push(row("median".into(), &m, pct));
        r.tables.push(Table {
            title: format!(
                "(v) cost of observing: pgbench TPS on {} without and with observe attached \
                 (alternating runs)",
                f.kind.label()
            ),
            columns: [
                "run",
                "plain TPS",
                "observed TPS",
                "TPS cost %",
                "trace events/s",
                "reader CPU % of one CPU",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        });
    }
    // Charts.
    r.charts.push(Chart {
        title: "pgbench throughput".into(),
        kind: ChartKind::Bar,
        x_label: "device".into(),
        y_label: "transactions/s".into(),
        categories: names.clone(),
        series: vec![Series {
            name: "TPS".into(),
            points: devs
                .iter()
                .enumerate()
                .map(|(i, d)| (i as f64, d.run.pgb.tps))
                .collect(),
        }],
        log_x: false,
    });
    r.charts.push(Chart {
        title: "Where the CPUs' time went (/proc/stat)".into(),
        kind: ChartKind::Stacked,
        x_label: "device".into(),
        y_label: "% of CPU time".into(),
        categories: names.clone(),
        series: (0..6)
            .map(|k| Series {
                name: splits[0][k].0.to_string(),
                points: splits
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let tot: f64 = s.iter().map(|x| x.1).sum();
                        (i as f64, 100.0 * s[k].1 / tot.max(1e-9))
                    })
                    .collect(),
            })
            .collect(),
        log_x: false,
    });
    let top_names: Vec<String> = fast
        .or(slow)
        .and_then(|d| d.run.obs.as_ref())
        .map(|o| o.syscalls.iter().take(8).map(|s| s.name.clone()).collect())
        .unwrap_or_default();
    if !top_names.is_empty() {
        r.charts.push(Chart {
            title: "System calls per transaction (PostgreSQL processes)".into(),
            kind: ChartKind::Bar,
            x_label: "syscall".into(),
            y_label: "calls per transaction".into(),
            categories: top_names.clone(),
            series: devs
                .iter()
                .filter_map(|d| {
                    let o = d.run.obs.as_ref()?;
                    Some(Series {
                        name: d.kind.label().into(),
                        points: top_names
                            .iter()
                            .enumerate()
                            .map(|(i, n)| (i as f64, per_txn(o.calls(n), &d.run)))
                            .collect(),
                    })
                })
                .collect(),
            log_x: false,
        });
    }
    r.charts.push(Chart {
        title: "Context switches per second (all CPUs)".into(),
        kind: ChartKind::Bar,
        x_label: "device".into(),
        y_label: "switches/s".into(),
        categories: names,
        series: vec![Series {
            name: "ctxt/s".into(),
            points: devs
                .iter()
                .enumerate()
                .map(|(i, d)| (i as f64, d.run.stat.ctxt as f64 / d.run.secs))
                .collect(),
        }],
        log_x: false,
    });
    // Comparisons and verdict need both devices.
    let (Some(f), Some(s)) = (fast, slow) else {
        r.verdict.push(
            "only one device was measured, so the fast/slow ratios the paper reports cannot be \
             formed (see skipped)"
                .into(),
        );
        if let Some(p) = overhead_pct {
            r.verdict.push(overhead_sentence(p));
        }
        return;
    };
    let (fr, sr) = (&f.run, &s.run);
    let tput = ratio(fr.pgb.tps, sr.pgb.tps);
    let pub_tput = PUB_HDD_RUNTIME_S / PUB_SSD_RUNTIME_S;
    let ((sys_f, src), (sys_s, _)) = (sys_ms_per_ktxn(fr), sys_ms_per_ktxn(sr));
    let sys = ratio(sys_f, sys_s);
    let pub_sys = PUB_SSD_SYSTEM_S / PUB_HDD_SYSTEM_S;
    let empty = Observed::default();
    let (fo, so) = (
        fr.obs.as_ref().unwrap_or(&empty),
        sr.obs.as_ref().unwrap_or(&empty),
    );
    let sw = |o: &Observed, x: &Run| (o.voluntary + o.involuntary) as f64 / x.secs;
    let ctxt = ratio(sw(fo, fr), sw(so, sr));
    let sys_ctxt = ratio(fr.stat.ctxt as f64 / fr.secs, sr.stat.ctxt as f64 / sr.secs);
    let pub_ctxt = PUB_SSD_CTXT_PER_S / PUB_HDD_CTXT_PER_S;
    let pub_futex = PUB_SSD_FUTEX_CALLS / PUB_HDD_FUTEX_CALLS;
    // The wait/wake call the fast device's processes make most plays futex's part.
    let sync_call = WAIT_WAKE_CALLS
        .iter()
        .map(|n| (*n, fo.calls(n)))
        .filter(|(_, c)| *c > 0)
        .max_by_key(|(_, c)| *c)
        .map(|(n, _)| n.to_string());
    let call_ratio = |n: &str| {
        let (a, b) = (per_txn(fo.calls(n), fr), per_txn(so.calls(n), sr));
        (a, b, ratio(a, b))
    };
    r.comparisons.push(Comparison {
        what: "throughput fast/slow".into(),
        ours: tput,
        published: Some(pub_tput),
        unit: "x".into(),
        note: format!(
            "pgbench TPS {:.0} vs {:.0}; paper: 160,000 requests in 201 s (SSD) vs 3345 s (HDD)",
            fr.pgb.tps, sr.pgb.tps
        ),
    });
    r.comparisons.push(Comparison {
        what: "system time fast/slow, same work".into(),
        ours: sys,
        published: Some(pub_sys),
        unit: "x".into(),
        note: format!(
            "kernel CPU ms per 1000 transactions {sys_f:.1} vs {sys_s:.1} ({src}); paper: 31.3 s \
             vs 18.9 s for the same 160,000 requests (table 3)"
        ),
    });
    r.comparisons.push(Comparison {
        what: "context switches/s fast/slow".into(),
        ours: ctxt,
        published: Some(pub_ctxt),
        unit: "x".into(),
        note: format!(
            "PostgreSQL processes {:.0}/s vs {:.0}/s (all CPUs: {sys_ctxt:.1}x); paper: \
             201,448/s vs 7,174/s (table 6)",
            sw(fo, fr),
            sw(so, sr)
        ),
    });
    let mut calls_cmp: Vec<&str> = Vec::new();
    if let Some(sc) = &sync_call {
        calls_cmp.push(sc);
    }
    if sync_call.as_deref() != Some("futex") {
        calls_cmp.push("futex");
    }
    for n in calls_cmp {
        let (a, b, q) = call_ratio(n);
        r.comparisons.push(Comparison {
            what: format!("{n} calls fast/slow, same work"),
            ours: q,
            published: Some(pub_futex),
            unit: "x".into(),
            note: format!(
                "{a:.2} vs {b:.2} per transaction{}; paper: futex 7.72 M vs 2.61 M for the \
                 same work (tables 4-5)",
                if Some(n) == sync_call.as_deref() {
                    " (PostgreSQL's most frequent wait/wake call)"
                } else {
                    ""
                }
            ),
        });
    }
    if let Some(p) = overhead_pct {
        r.comparisons.push(Comparison {
            what: "observe's cost to pgbench TPS".into(),
            ours: p,
            published: None,
            unit: "%".into(),
            note: format!(
                "goal <= {OVERHEAD_GOAL_PCT}%; the paper used strace, which slows the traced \
                 program far more and (as the paper notes) counts blocked time"
            ),
        });
    }
    // Verdict.
    let busy = |x: &Run| {
        x.pg_cpu
            .map(|c| format!("{:.2}", (c.user_ns + c.sys_ns) as f64 / 1e9 / x.secs))
            .unwrap_or_else(|| "-".into())
    };
    r.verdict.push(format!(
        "The fast device ran {tput:.1}x the slow one's transactions per second (paper: SSD \
         {pub_tput:.1}x faster than HDD). PostgreSQL kept {} CPUs busy on the fast device and {} \
         on the slow one, where its processes mostly waited; machine-wide idle+iowait was {:.0}% \
         vs {:.0}% (this shared machine's other load fills the idle time the paper saw).",
        busy(fr),
        busy(sr),
        idle_wait_pct(&fr.stat.total),
        idle_wait_pct(&sr.stat.total)
    ));
    r.verdict.push(format!(
        "For the same work the fast device spent {sys:.2}x the kernel time of the slow one \
         (paper: 1.66x more on the SSD): {sys_f:.1} vs {sys_s:.1} ms per 1000 transactions \
         ({src}). {}",
        if sys > 1.0 {
            "Like the paper, the faster device costs more kernel time per unit of work."
        } else {
            "Unlike the paper, the faster device costs less kernel time per unit of work: on \
             the slow device every commit sleeps, wakes and reschedules more processes."
        }
    ));
    r.verdict.push(format!(
        "PostgreSQL's context switches per second rose {ctxt:.1}x on the fast device (paper \
         ~28x; all CPUs {sys_ctxt:.1}x); per transaction they switched {:.1} times on the fast \
         device and {:.1} on the slow one, so the rate follows throughput.",
        per_txn(fo.voluntary + fo.involuntary, fr),
        per_txn(so.voluntary + so.involuntary, sr)
    ));
    if let Some(sc) = &sync_call {
        let (a, b, q) = call_ratio(sc);
        let (fa, fb, fq) = call_ratio("futex");
        r.verdict.push(format!(
            "PostgreSQL is processes with latches and semaphores, not threads with mutexes. The \
             wait/wake call it makes most, so the one in futex's place, is {sc}: {a:.2} per \
             transaction fast vs {b:.2} slow ({q:.2}x; the paper's futex rose 2.96x). futex \
             itself (LWLock waits on POSIX semaphores) went {fa:.2} vs {fb:.2} ({fq:.2}x){}.",
            match fo.syscalls.first() {
                Some(t) if t.name != *sc =>
                    format!("; the most frequent call overall is {}", t.name),
                _ => String::new(),
            }
        ));
    }
    if let Some(p) = overhead_pct {
        r.verdict.push(overhead_sentence(p));
    }
}

/// Median; for an even count the mean of the two middle values.
fn median_mid(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn overhead_sentence(p: f64) -> String {
    format!(
        "Attaching observe cost pgbench {p:.1}% of its TPS on the fast device (median of \
         alternating plain/observed pairs; goal <= {OVERHEAD_GOAL_PCT}%: {}).",
        if p <= OVERHEAD_GOAL_PCT {
            "met"
        } else {
            "not met"
        }
    )
}

/// Kernel CPU per 1000 transactions: of the PostgreSQL processes when cpuacct
/// is there, else machine-wide (which includes pgbench and everything else).
fn sys_ms_per_ktxn(r: &Run) -> (f64, &'static str) {
    let (sys_s, src) = match r.pg_cpu {
        Some(c) => (c.sys_ns as f64 / 1e9, "PostgreSQL processes, cpuacct"),
        None => (
            r.stat.total.system as f64 / clk_tck(),
            "all CPUs, /proc/stat: includes other load",
        ),
    };
    let v = if r.pgb.transactions > 0 {
        sys_s * 1e3 / (r.pgb.transactions as f64 / 1000.0)
    } else {
        f64::NAN
    };
    (v, src)
}

fn idle_wait_pct(t: &CpuTimes) -> f64 {
    100.0 * (t.idle + t.iowait) as f64 / t.total().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    const PG15: &str = "pgbench (15.8 (Debian 15.8-0+deb12u1))
transaction type: <builtin: TPC-B (sort of)>
scaling factor: 1
query mode: simple
number of clients: 16
number of threads: 2
maximum number of tries: 1
duration: 4 s
number of transactions actually processed: 5123
number of failed transactions: 0 (0.000%)
latency average = 12.345 ms
initial connection time = 20.5 ms
tps = 1296.1234 (without initial connection time)
";

    #[test]
    fn parses_pgbench_summary() {
        let p = parse_pgbench(PG15).unwrap();
        assert_eq!(p.transactions, 5123);
        assert_eq!(p.failed, 0);
        assert!((p.tps - 1296.1234).abs() < 1e-9);
        assert!((p.latency_ms - 12.345).abs() < 1e-9);
    }

    #[test]
    fn pgbench_without_tps_is_an_error_naming_the_line() {
        let e = parse_pgbench("number of transactions actually processed: 3\n").unwrap_err();
        assert!(e.to_string().contains("tps = N"), "{e}");
    }

    #[test]
    fn pgbench_count_with_limit_suffix() {
        // With -t, pgbench prints "N/M".
        let s = PG15.replace("processed: 5123", "processed: 160/160");
        assert_eq!(parse_pgbench(&s).unwrap().transactions, 160);
    }

    #[test]
    fn own_tree_contains_this_thread() {
        let me = std::process::id() as i32;
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        assert!(tree_threads(me).unwrap().contains(&tid));
        assert!(!process_gone(me));
    }

    #[test]
    fn median_of_even_count_is_the_middle_mean() {
        assert_eq!(median_mid(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median_mid(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median_mid(vec![]).is_nan());
    }

    #[test]
    fn published_ratios() {
        assert!((PUB_HDD_RUNTIME_S / PUB_SSD_RUNTIME_S - 16.64).abs() < 0.01);
        assert!((PUB_SSD_SYSTEM_S / PUB_HDD_SYSTEM_S - 1.66).abs() < 0.01);
        assert!((PUB_SSD_CTXT_PER_S / PUB_HDD_CTXT_PER_S - 28.08).abs() < 0.01);
    }
}
