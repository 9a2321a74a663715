//! An instance of our own (`instances/iolab-<pid>-<n>`): its creation and
//! removal, per-CPU readers of `trace_pipe_raw`, and the loss accounting.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use super::format::{EventFormat, FormatError};
use super::mount::{MountError, Tracefs, read_text};
use super::page::{PageError, PageLayout, RawEvent, page_header, parse_page};

/// Why an instance, one of its files or its ring buffers failed. Causes are part
/// of the message and deliberately not a `source` (`{:#}` would say them twice).
#[derive(Debug, thiserror::Error)]
pub enum TracefsError {
    #[error(transparent)]
    Mount(#[from] MountError),
    #[error(
        "{} is missing: this kernel's tracefs has no instances (needs Linux >= 3.10)",
        .0.display()
    )]
    NoInstances(PathBuf),
    #[error("creating tracefs instance {} (needs root): {err}", dir.display())]
    Create { dir: PathBuf, err: io::Error },
    #[error(
        "could not remove tracefs instance {}: {err} (remove it with `rmdir {}`)",
        dir.display(),
        dir.display()
    )]
    Remove { dir: PathBuf, err: String },
    #[error("writing {value:?} to {}: {err}", path.display())]
    Write {
        path: PathBuf,
        value: String,
        err: io::Error,
    },
    #[error("reading {}: {err}", path.display())]
    Read { path: PathBuf, err: io::Error },
    #[error("trace clock `{clock}` not offered by this kernel (available: {available})")]
    Clock { clock: String, available: String },
    #[error(
        "cannot tell the current trace clock from {0:?}; select one with Instance::set_clock \
         (e.g. mono)"
    )]
    CurrentClock(String),
    #[error("this kernel has no buffer_subbuf_size_kb (needs Linux >= 6.8)")]
    NoSubbuf,
    #[error("tracefs option `{0}` does not exist in this kernel")]
    NoOption(String),
    #[error(
        "event {system}:{name} is not available in this kernel ({} missing): {err}",
        path.display()
    )]
    NoEvent {
        system: String,
        name: String,
        path: PathBuf,
        err: io::Error,
    },
    #[error("parsing {}: {err}", path.display())]
    Format { path: PathBuf, err: FormatError },
    #[error("event system `{system}` is not available ({}): {err}", dir.display())]
    NoSystem {
        system: String,
        dir: PathBuf,
        err: io::Error,
    },
    #[error("tracefs rejected filter `{expr}` on {system}:{name}: {why}: {err}")]
    Filter {
        expr: String,
        system: String,
        name: String,
        why: String,
        err: Box<TracefsError>,
    },
    #[error("opening {}: {err}", path.display())]
    Open { path: PathBuf, err: io::Error },
    #[error("adding pids to {}: {err}", path.display())]
    AddPids { path: PathBuf, err: io::Error },
    #[error(transparent)]
    Page(#[from] PageError),
    #[error("listing {}/per_cpu: {err}", dir.display())]
    ListCpus { dir: PathBuf, err: io::Error },
    #[error("reading cpu{cpu} trace_pipe_raw: {err}")]
    ReadPipe { cpu: u32, err: io::Error },
    #[error("a cpu{cpu} ring-buffer page: {err}")]
    PageHeader { cpu: u32, err: PageError },
    #[error("parsing a cpu{cpu} ring-buffer page: {err}")]
    ParsePage { cpu: u32, err: PageError },
    #[error("per_cpu/cpu{cpu}/stats has no `{line}` line")]
    StatsLine { cpu: u32, line: &'static str },
    #[error("bad now ts {value:?}: {err}")]
    NowTs {
        value: String,
        err: std::num::ParseIntError,
    },
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The registered removal failed (its own error, with its causes).
    #[error("{0}")]
    Undo(crate::sys::cleanup::UndoError),
}

type Result<T, E = TracefsError> = std::result::Result<T, E>;

const INSTANCE_PREFIX: &str = "iolab-";

impl Tracefs {
    /// Create a fresh instance `iolab-<pid>-<n>` (after removing stale ones).
    pub fn new_instance(&self) -> Result<Instance> {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let instances = self.root().join("instances");
        if !instances.is_dir() {
            return Err(TracefsError::NoInstances(instances));
        }
        remove_stale_instances(&instances);
        let pid = std::process::id();
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let name = format!("{INSTANCE_PREFIX}{pid}-{n}");
        let dir = instances.join(&name);
        fs::create_dir(&dir).map_err(|err| TracefsError::Create {
            dir: dir.clone(),
            err,
        })?;
        let open_fds: Arc<Mutex<Vec<Arc<AtomicI32>>>> = Arc::default();
        let cleanup = {
            let dir = dir.clone();
            let fds = open_fds.clone();
            crate::sys::cleanup::register(format!("remove tracefs instance {name}"), move || {
                // Abort path: the owner still holds its readers open, and an open
                // trace_pipe_raw keeps the instance busy. The process exits right after.
                for fd in fds.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                    let fd = fd.swap(-1, Ordering::SeqCst);
                    if fd >= 0 {
                        // SAFETY: the fd was ours and is closed only once (swap).
                        unsafe { libc::close(fd) };
                    }
                }
                remove_instance_dir(&dir)
            })
        };
        let inst = Instance {
            root: self.root().to_path_buf(),
            dir,
            name,
            readers: Vec::new(),
            page_layout: None,
            missed_pages: 0,
            missed_events: 0,
            open_fds,
            cleanup: Some(cleanup),
        };
        // A fresh instance starts with tracing on and an empty event set; keep it
        // off until the caller has configured everything.
        inst.write("tracing_on", "0")?;
        Ok(inst)
    }
}

/// Remove `iolab-<pid>-*` instances whose process is gone (killed with SIGKILL).
fn remove_stale_instances(instances: &Path) {
    let Ok(rd) = fs::read_dir(instances) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name.strip_prefix(INSTANCE_PREFIX) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir(e.path());
        }
    }
}

/// Per-CPU counters from `per_cpu/cpuN/stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CpuStats {
    pub cpu: u32,
    pub entries: u64,
    /// Events overwritten (overwrite mode) before being read.
    pub overrun: u64,
    pub commit_overrun: u64,
    /// Events refused because the buffer was full (non-overwrite mode).
    pub dropped: u64,
    pub read: u64,
}

impl CpuStats {
    pub fn parse(cpu: u32, text: &str) -> CpuStats {
        let mut s = CpuStats {
            cpu,
            ..CpuStats::default()
        };
        for line in text.lines() {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let Ok(v) = v.trim().parse::<u64>() else {
                continue;
            };
            match k.trim() {
                "entries" => s.entries = v,
                "overrun" => s.overrun = v,
                "commit overrun" => s.commit_overrun = v,
                "dropped events" => s.dropped = v,
                "read events" => s.read = v,
                _ => {}
            }
        }
        s
    }

    pub fn lost(&self) -> u64 {
        self.overrun + self.commit_overrun + self.dropped
    }
}

/// Everything that says events were lost, in one place.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LossReport {
    pub per_cpu: Vec<CpuStats>,
    /// Pages whose header carried the kernel's "events missed before this page" flag.
    pub pages_flagged_missed: u64,
    /// Lost events the kernel counted in page headers.
    pub missed_in_pages: u64,
}

impl LossReport {
    pub fn lost_events(&self) -> u64 {
        self.per_cpu.iter().map(CpuStats::lost).sum::<u64>() + self.missed_in_pages
    }

    pub fn any_loss(&self) -> bool {
        self.lost_events() > 0 || self.pages_flagged_missed > 0
    }

    pub fn describe(&self) -> String {
        let mut s = format!(
            "{} events lost ({} pages flagged by the kernel)",
            self.lost_events(),
            self.pages_flagged_missed
        );
        for c in self.per_cpu.iter().filter(|c| c.lost() > 0) {
            s.push_str(&format!(
                "; cpu{}: overrun {} dropped {} commit-overrun {}",
                c.cpu, c.overrun, c.dropped, c.commit_overrun
            ));
        }
        s
    }
}

/// Non-blocking reader of one CPU's `trace_pipe_raw`.
struct CpuReader {
    cpu: u32,
    file: File,
    page: Vec<u8>,
    /// The raw fd as the cleanup registry sees it; -1 once someone closed it.
    fd: Arc<AtomicI32>,
}

impl Drop for CpuReader {
    fn drop(&mut self) {
        if self.fd.swap(-1, Ordering::SeqCst) < 0 {
            // The abort path closed it already: do not close a number that may
            // have been reused.
            let f = std::mem::replace(&mut self.file, dummy_file());
            std::mem::forget(f);
        }
    }
}

fn dummy_file() -> File {
    File::open("/dev/null").expect("/dev/null exists")
}

fn remove_instance_dir(dir: &Path) -> Result<()> {
    let _ = fs::write(dir.join("tracing_on"), "0");
    let _ = fs::write(dir.join("events/enable"), "0");
    let mut last = None;
    // Readers closing on other threads can keep the instance busy for a moment.
    for _ in 0..50 {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                last = Some(e);
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
    Err(TracefsError::Remove {
        dir: dir.to_path_buf(),
        err: last.map(|e| e.to_string()).unwrap_or_default(),
    })
}

/// Totals of one [`Instance::drain`] call.
#[derive(Clone, Copy, Debug, Default)]
pub struct DrainStats {
    pub pages: u64,
    pub events: u64,
}

/// A tracefs instance owned by this process; removed on drop.
pub struct Instance {
    root: PathBuf,
    dir: PathBuf,
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    name: String,
    readers: Vec<CpuReader>,
    page_layout: Option<PageLayout>,
    missed_pages: u64,
    missed_events: u64,
    open_fds: Arc<Mutex<Vec<Arc<AtomicI32>>>>,
    cleanup: Option<crate::sys::cleanup::CleanupId>,
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance").field("dir", &self.dir).finish()
    }
}

impl Instance {
    #[cfg(any(test, feature = "testing"))]
    pub fn name(&self) -> &str {
        &self.name
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn write(&self, rel: &str, value: &str) -> Result<()> {
        let p = self.dir.join(rel);
        fs::write(&p, value).map_err(|err| TracefsError::Write {
            path: p.clone(),
            value: value.to_string(),
            err,
        })
    }

    fn read(&self, rel: &str) -> Result<String> {
        let p = self.dir.join(rel);
        read_text(&p).map_err(|err| TracefsError::Read {
            path: p.clone(),
            err,
        })
    }

    /// Select the trace clock (`mono` makes timestamps CLOCK_MONOTONIC ns).
    pub fn set_clock(&self, clock: &str) -> Result<()> {
        let avail = self.read("trace_clock")?;
        let known: Vec<&str> = avail
            .split_whitespace()
            .map(|c| c.trim_matches(|c| c == '[' || c == ']'))
            .collect();
        if !known.contains(&clock) {
            return Err(TracefsError::Clock {
                clock: clock.to_string(),
                available: known.join(" "),
            });
        }
        self.write("trace_clock", clock)
    }

    /// The trace clocks this kernel offers (`trace_clock`).
    #[cfg(any(test, feature = "testing"))]
    pub fn clocks(&self) -> Result<Vec<String>> {
        Ok(self
            .read("trace_clock")?
            .split_whitespace()
            .map(|c| c.trim_matches(|c| c == '[' || c == ']').to_string())
            .collect())
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn clock(&self) -> Result<String> {
        let avail = self.read("trace_clock")?;
        avail
            .split_whitespace()
            .find(|c| c.starts_with('['))
            .map(|c| c.trim_matches(|c| c == '[' || c == ']').to_string())
            .ok_or_else(|| TracefsError::CurrentClock(avail.clone()))
    }

    /// Per-CPU buffer size in KiB.
    pub fn set_buffer_size_kb(&self, kb: u64) -> Result<()> {
        self.write("buffer_size_kb", &kb.to_string())
    }

    /// Size of one ring-buffer page (sub-buffer) in KiB, where the kernel allows it
    /// (Linux >= 6.8): larger pages mean fewer reads for the same events.
    pub fn set_subbuf_size_kb(&self, kb: u64) -> Result<()> {
        if !self.dir.join("buffer_subbuf_size_kb").exists() {
            return Err(TracefsError::NoSubbuf);
        }
        self.write("buffer_subbuf_size_kb", &kb.to_string())
    }

    /// Set one of `options/*` (e.g. `event-fork`, `overwrite`).
    pub fn set_option(&self, name: &str, on: bool) -> Result<()> {
        if !self.dir.join("options").join(name).exists() {
            return Err(TracefsError::NoOption(name.to_string()));
        }
        self.write(&format!("options/{name}"), if on { "1" } else { "0" })
    }

    pub fn format(&self, system: &str, name: &str) -> Result<EventFormat> {
        let p = self
            .dir
            .join("events")
            .join(system)
            .join(name)
            .join("format");
        let text = read_text(&p).map_err(|err| TracefsError::NoEvent {
            system: system.to_string(),
            name: name.to_string(),
            path: p.clone(),
            err,
        })?;
        EventFormat::parse(system, &text).map_err(|err| TracefsError::Format { path: p, err })
    }

    /// Enable `system:name` in this instance and return its format.
    pub fn enable_event(&self, system: &str, name: &str) -> Result<EventFormat> {
        let fmt = self.format(system, name)?;
        self.set_event_enabled(system, name, true)?;
        Ok(fmt)
    }

    /// Switch one event on or off. Off, and enabled nowhere else, its
    /// tracepoint is patched out of the kernel's code: no cost at all.
    pub fn set_event_enabled(&self, system: &str, name: &str, on: bool) -> Result<()> {
        self.write(
            &format!("events/{system}/{name}/enable"),
            if on { "1" } else { "0" },
        )
    }

    /// Enable every event of a system (e.g. `io_uring`).
    #[cfg(any(test, feature = "testing"))]
    pub fn enable_system(&self, system: &str) -> Result<Vec<EventFormat>> {
        let dir = self.dir.join("events").join(system);
        let rd = fs::read_dir(&dir).map_err(|err| TracefsError::NoSystem {
            system: system.to_string(),
            dir: dir.clone(),
            err,
        })?;
        let mut out = Vec::new();
        for e in rd.flatten() {
            if e.path().join("format").exists() {
                let name = e.file_name().to_string_lossy().into_owned();
                out.push(self.format(system, &name)?);
            }
        }
        self.write(&format!("events/{system}/enable"), "1")?;
        Ok(out)
    }

    /// Set a kernel-side filter on one event (`dev == 265289728`, `id == 110`).
    pub fn set_filter(&self, system: &str, name: &str, expr: &str) -> Result<()> {
        let rel = format!("events/{system}/{name}/filter");
        self.write(&rel, expr).map_err(|err| {
            let why = read_text(&self.dir.join(&rel)).unwrap_or_default();
            TracefsError::Filter {
                expr: expr.to_string(),
                system: system.to_string(),
                name: name.to_string(),
                why: why.trim().to_string(),
                err: Box::new(err),
            }
        })
    }

    /// Add threads to `set_event_pid` (events fire only for these, plus their
    /// children when the `event-fork` option is on).
    pub fn add_event_pids(&self, pids: &[i32]) -> Result<()> {
        if pids.is_empty() {
            return Ok(());
        }
        let p = self.dir.join("set_event_pid");
        let mut f = OpenOptions::new()
            .append(true)
            .open(&p)
            .map_err(|err| TracefsError::Open {
                path: p.clone(),
                err,
            })?;
        let mut line = String::new();
        for pid in pids {
            line.push_str(&pid.to_string());
            line.push(' ');
        }
        line.push('\n');
        f.write_all(line.as_bytes())
            .map_err(|err| TracefsError::AddPids { path: p, err })
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn event_pids(&self) -> Result<Vec<i32>> {
        Ok(self
            .read("set_event_pid")?
            .split_whitespace()
            .filter_map(|s| s.parse().ok())
            .collect())
    }

    pub fn set_tracing_on(&self, on: bool) -> Result<()> {
        self.write("tracing_on", if on { "1" } else { "0" })
    }

    fn layout(&mut self) -> Result<PageLayout> {
        if let Some(l) = self.page_layout {
            return Ok(l);
        }
        let p = self.root.join("events/header_page");
        let l = match read_text(&p) {
            Ok(t) => PageLayout::parse(&t)?,
            Err(_) => PageLayout::LP64,
        };
        self.page_layout = Some(l);
        Ok(l)
    }

    /// Open every CPU's `trace_pipe_raw` (non-blocking). Call before tracing on.
    pub fn open_readers(&mut self) -> Result<()> {
        self.layout()?;
        let sub_kb: usize = self
            .read("buffer_subbuf_size_kb")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        // SAFETY: sysconf has no preconditions.
        let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let read_size = if sub_kb > 0 { sub_kb * 1024 } else { page_size };
        let mut cpus: Vec<u32> = fs::read_dir(self.dir.join("per_cpu"))
            .map_err(|err| TracefsError::ListCpus {
                dir: self.dir.clone(),
                err,
            })?
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok())
            .collect();
        cpus.sort_unstable();
        self.readers.clear();
        for cpu in cpus {
            let p = self.dir.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
            let file = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&p)
                .map_err(|err| TracefsError::Open {
                    path: p.clone(),
                    err,
                })?;
            let fd = Arc::new(AtomicI32::new(file.as_raw_fd()));
            self.open_fds
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(fd.clone());
            self.readers.push(CpuReader {
                cpu,
                file,
                page: vec![0; read_size],
                fd,
            });
        }
        Ok(())
    }

    /// The ring-buffer page layout, for [`parse_page`] on pages kept from
    /// [`Instance::drain_pages`].
    pub fn page_layout(&mut self) -> Result<PageLayout> {
        self.layout()
    }

    /// Read every CPU's buffer until it is empty, handing `f(cpu, page)` each raw
    /// page undecoded: lets a collector keep pages during a run and decode them
    /// after it. Lost-event flags are still counted here, for [`Self::loss_report`].
    pub fn drain_pages(&mut self, f: impl FnMut(u32, &[u8])) -> Result<DrainStats> {
        self.drain_pages_of(|_| true, f)
    }

    /// [`Self::drain_pages`] for the CPUs `which` selects.
    pub fn drain_pages_of(
        &mut self,
        which: impl Fn(u32) -> bool,
        mut f: impl FnMut(u32, &[u8]),
    ) -> Result<DrainStats> {
        let layout = self.layout()?;
        let mut st = DrainStats::default();
        for r in self.readers.iter_mut().filter(|r| which(r.cpu)) {
            loop {
                let n = match r.file.read(&mut r.page) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(err) => return Err(TracefsError::ReadPipe { cpu: r.cpu, err }),
                };
                let (_, _, info) = page_header(&r.page[..n], layout)
                    .map_err(|err| TracefsError::PageHeader { cpu: r.cpu, err })?;
                st.pages += 1;
                if info.missed {
                    self.missed_pages += 1;
                    self.missed_events += info.missed_count;
                }
                f(r.cpu, &r.page[..n]);
            }
        }
        Ok(st)
    }

    /// Read every CPU's buffer until it is empty, calling `f` for each event.
    /// Events of one CPU come in time order; CPUs are not merged.
    pub fn drain(&mut self, mut f: impl FnMut(&RawEvent)) -> Result<DrainStats> {
        let layout = self.layout()?;
        let mut events = 0;
        let mut bad = None;
        let mut st = self.drain_pages(|cpu, page| {
            if bad.is_some() {
                return;
            }
            let parsed = parse_page(page, layout, |ts, rec| {
                if rec.len() < 8 {
                    return;
                }
                let id = u16::from_le_bytes([rec[0], rec[1]]);
                let pid = i32::from_le_bytes(rec[4..8].try_into().expect("4 bytes"));
                f(&RawEvent {
                    cpu,
                    ts,
                    id,
                    pid,
                    payload: rec,
                });
            });
            match parsed {
                Ok(info) => events += info.events,
                Err(err) => bad = Some(TracefsError::ParsePage { cpu, err }),
            }
        })?;
        if let Some(e) = bad {
            return Err(e);
        }
        st.events = events;
        Ok(st)
    }

    /// The current time on this instance's trace clock, in ns, from a CPU's `stats`
    /// ("now ts", microsecond resolution): lets clocks other than `mono` be compared
    /// with event stamps.
    pub fn clock_now_ns(&self) -> Result<u64> {
        let text = self.read("per_cpu/cpu0/stats")?;
        let v = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("now ts:"))
            .ok_or(TracefsError::StatsLine {
                cpu: 0,
                line: "now ts",
            })?;
        let (sec, frac) = v.trim().split_once('.').unwrap_or((v.trim(), "0"));
        let bad = |err| TracefsError::NowTs {
            value: v.to_string(),
            err,
        };
        let sec: u64 = sec.parse().map_err(bad)?;
        let mut ns: u64 = frac.parse().map_err(bad)?;
        for _ in frac.len()..9 {
            ns *= 10;
        }
        Ok(sec * 1_000_000_000 + ns)
    }

    /// Bytes of events waiting to be read in one CPU's buffer (`bytes:` of its
    /// stats): lets a collector leave a buffer alone until it is worth reading.
    pub fn unread_bytes(&self, cpu: u32) -> Result<u64> {
        let text = self.read(&format!("per_cpu/cpu{cpu}/stats"))?;
        text.lines()
            .find_map(|l| l.trim().strip_prefix("bytes:"))
            .and_then(|v| v.trim().parse().ok())
            .ok_or(TracefsError::StatsLine { cpu, line: "bytes" })
    }

    /// The CPUs whose buffers [`Self::open_readers`] opened.
    pub fn reader_cpus(&self) -> Vec<u32> {
        self.readers.iter().map(|r| r.cpu).collect()
    }

    /// Read `per_cpu/cpu*/stats` and the page flags seen so far.
    pub fn loss_report(&self) -> Result<LossReport> {
        let mut per_cpu = Vec::new();
        let mut cpus: Vec<u32> = fs::read_dir(self.dir.join("per_cpu"))?
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok())
            .collect();
        cpus.sort_unstable();
        for cpu in cpus {
            per_cpu.push(CpuStats::parse(
                cpu,
                &self.read(&format!("per_cpu/cpu{cpu}/stats"))?,
            ));
        }
        Ok(LossReport {
            per_cpu,
            pages_flagged_missed: self.missed_pages,
            missed_in_pages: self.missed_events,
        })
    }

    /// Stop tracing and remove the instance, reporting failure (Drop cannot).
    pub fn remove(mut self) -> Result<()> {
        // Drop runs teardown again, which is then a no-op.
        self.teardown()
    }

    fn teardown(&mut self) -> Result<()> {
        let _ = self.write("tracing_on", "0");
        // Open trace_pipe_raw files keep the instance busy (EBUSY on rmdir).
        self.readers.clear();
        self.open_fds
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        match self.cleanup.take() {
            Some(id) => match crate::sys::cleanup::run(id) {
                Some(r) => r.map_err(|f| TracefsError::Undo(f.error)),
                // The abort path already removed it.
                None => Ok(()),
            },
            None => Ok(()),
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Err(e) = self.teardown() {
            eprintln!("iolab: warning: {e:#}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stats_and_header_page() {
        let s = CpuStats::parse(
            1,
            "entries: 3\noverrun: 2\ncommit overrun: 0\nbytes: 9\n\
             oldest event ts:  1.0\nnow ts:  2.0\ndropped events: 5\nread events: 7\n",
        );
        assert_eq!(
            (s.entries, s.overrun, s.dropped, s.read, s.lost()),
            (3, 2, 5, 7, 7)
        );
        let l = PageLayout::parse(
            "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
             \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
             \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
             \tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n",
        )
        .unwrap();
        assert_eq!(l, PageLayout::LP64);
    }
}
