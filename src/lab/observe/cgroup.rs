//! A database server's cgroup v1 groups in study 004: the blkio throttle that
//! makes a fast device HDD-like, and cpuacct's exact CPU time of every server
//! process and thread. Undone by a guard and the cleanup registry.

use std::ffi::CString;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::sys::cleanup::{self, CleanupId};

const BLKIO_ROOT: &str = "/sys/fs/cgroup/blkio";
const CPUACCT_ROOT: &str = "/sys/fs/cgroup/cpuacct";

/// The server's cgroup (v1): a blkio group for the throttle and, where the
/// hierarchy exists, a cpuacct group for the exact CPU time of every server
/// process, also of backends that exited. Whatever is still in them when dropped
/// is killed, so no server process outlives the study.
pub(super) struct ServerCgroup {
    pub(super) blkio: PathBuf,
    cpuacct: Option<PathBuf>,
    /// cgroup.procs of each group, prepared before fork: the child moves itself in
    /// without allocating.
    pub(super) procs: Vec<CString>,
    cleanup: Vec<CleanupId>,
}

/// CPU time of a cgroup's tasks, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct CgCpu {
    pub(super) user_ns: u64,
    pub(super) sys_ns: u64,
}

impl ServerCgroup {
    pub(super) fn create(tag: &str) -> Result<ServerCgroup> {
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
        let mut g = ServerCgroup {
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

    pub(super) fn throttle(&self, major: u32, minor: u32, iops: u32) -> Result<()> {
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
    pub(super) fn serviced(&self) -> Result<u64> {
        let p = self.blkio.join("blkio.throttle.io_serviced");
        let s = fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        Ok(s.lines()
            .find_map(|l| l.strip_prefix("Total "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0))
    }

    pub(super) fn cpu(&self) -> Result<Option<CgCpu>> {
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

impl Drop for ServerCgroup {
    fn drop(&mut self) {
        for id in self.cleanup.drain(..).rev() {
            if let Some(Err(f)) = cleanup::run(id) {
                eprintln!("iolab: warning: {f}");
            }
        }
    }
}
