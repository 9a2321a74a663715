//! Kernel tracepoints through tracefs, in an instance of our own.
//!
//! An [`Instance`] is a private ring buffer under `tracefs/instances/iolab-<pid>-<n>`:
//! enabling events there leaves the global buffer (and other tools) alone. Its owner
//! picks the clock: `mono` stamps CLOCK_MONOTONIC ns, `x86-tsc` the raw TSC (which
//! [`crate::measure::clock::tsc_scale`] puts on the engine clock). Events are read in binary from
//! the per-CPU `trace_pipe_raw` files: the kernel copies ring-buffer pages out without
//! formatting text, which keeps the reader cheap enough for exact syscall counts.
//!
//! Lost events are never silent: the per-CPU `stats` (overrun, dropped) and the
//! "missed events" flag of every page are collected into [`LossReport`].
//!
//! Removal: `Drop` stops tracing, closes the readers and removes the directory. The
//! removal is also registered in [`crate::sys::cleanup`], so the abort path (a second
//! Ctrl-C) removes the instance even while its owner is still running. Instances left
//! behind by a killed iolab (SIGKILL: its pid no longer alive) are removed the next
//! time an instance is created.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, anyhow, bail};

// Device numbers are block-device facts, owned by `sys::blockdev`; re-exported
// here for the block tracer, which names them next to the events.
pub use crate::sys::blockdev::{block_dev_numbers, kernel_dev};

const DEFAULT_ROOT: &str = "/sys/kernel/tracing";
const INSTANCE_PREFIX: &str = "iolab-";

/// A mounted tracefs.
#[derive(Clone, Debug)]
pub struct Tracefs {
    root: PathBuf,
    /// True when this process mounted it (it is left mounted, as perf does).
    pub mounted_by_us: bool,
}

impl Tracefs {
    /// Find tracefs in /proc/mounts, or mount it at /sys/kernel/tracing.
    pub fn open() -> Result<Tracefs> {
        let mounts = fs::read_to_string("/proc/mounts").context("reading /proc/mounts")?;
        if let Some(root) = tracefs_mount_point(&mounts) {
            return Ok(Tracefs {
                root,
                mounted_by_us: false,
            });
        }
        let target = Path::new(DEFAULT_ROOT);
        if !target.is_dir() {
            bail!(
                "tracefs is not mounted and {DEFAULT_ROOT} does not exist: this kernel \
                 lacks CONFIG_TRACING (tracepoints are needed for this measurement)"
            );
        }
        let src = c"nodev";
        let fstype = c"tracefs";
        let dst = std::ffi::CString::new(DEFAULT_ROOT).expect("no NUL in constant");
        // SAFETY: all pointers are valid NUL-terminated strings; data is unused.
        let rc = unsafe {
            libc::mount(
                src.as_ptr(),
                dst.as_ptr(),
                fstype.as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            bail!(
                "tracefs is not mounted and mounting it at {DEFAULT_ROOT} failed: {e} \
                 (needs root/CAP_SYS_ADMIN; or run `mount -t tracefs nodev {DEFAULT_ROOT}`)"
            );
        }
        Ok(Tracefs {
            root: target.to_path_buf(),
            mounted_by_us: true,
        })
    }

    /// Use a tracefs at a given path (tests, unusual mounts).
    pub fn at(root: impl Into<PathBuf>) -> Tracefs {
        Tracefs {
            root: root.into(),
            mounted_by_us: false,
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether `system:name` exists in this kernel.
    pub fn has_event(&self, system: &str, name: &str) -> bool {
        self.root
            .join("events")
            .join(system)
            .join(name)
            .join("format")
            .exists()
    }

    /// Whether this kernel offers trace clock `name` (e.g. `x86-tsc`).
    pub fn offers_clock(&self, name: &str) -> bool {
        read_text(&self.root.join("trace_clock")).is_ok_and(|t| {
            t.split_whitespace()
                .any(|c| c.trim_matches(|c| c == '[' || c == ']') == name)
        })
    }

    /// Create a fresh instance `iolab-<pid>-<n>` (after removing stale ones).
    pub fn new_instance(&self) -> Result<Instance> {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let instances = self.root.join("instances");
        if !instances.is_dir() {
            bail!(
                "{} is missing: this kernel's tracefs has no instances \
                 (needs Linux >= 3.10)",
                instances.display()
            );
        }
        remove_stale_instances(&instances);
        let pid = std::process::id();
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let name = format!("{INSTANCE_PREFIX}{pid}-{n}");
        let dir = instances.join(&name);
        fs::create_dir(&dir)
            .with_context(|| format!("creating tracefs instance {} (needs root)", dir.display()))?;
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
            root: self.root.clone(),
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

fn tracefs_mount_point(mounts: &str) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = mounts
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let _src = it.next()?;
            let dst = it.next()?;
            let ty = it.next()?;
            (ty == "tracefs").then(|| PathBuf::from(dst.replace("\\040", " ")))
        })
        .collect();
    // Prefer the canonical mount point when tracefs is mounted twice.
    found.sort_by_key(|p| p != Path::new(DEFAULT_ROOT));
    found.into_iter().next()
}

/// Read a tracefs file with one large first read: some (e.g. `header_page`) return
/// nothing to a read at a non-zero offset, so std's small probing read truncates them.
pub fn read_text(path: &Path) -> io::Result<String> {
    let mut f = File::open(path)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match f.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
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

/// One field of an event record, from `events/<system>/<name>/format`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    /// `__data_loc`: the field holds (len << 16 | offset) of a dynamic string.
    pub data_loc: bool,
    /// Fixed-size array (e.g. `char comm[16]`).
    pub array: bool,
}

/// An event's id and record layout.
#[derive(Clone, Debug)]
pub struct EventFormat {
    pub system: String,
    pub name: String,
    pub id: u16,
    pub fields: Vec<Field>,
}

impl EventFormat {
    /// Parse the text of a `format` file.
    pub fn parse(system: &str, text: &str) -> Result<EventFormat> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if let Some(v) = line.strip_prefix("name:") {
                name = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("ID:") {
                id = Some(
                    v.trim()
                        .parse::<u16>()
                        .map_err(|e| anyhow!("format line {}: bad ID {v:?}: {e}", i + 1))?,
                );
            } else if line.starts_with("field:") {
                fields.push(
                    parse_field(line)
                        .with_context(|| format!("format line {}: {line:?}", i + 1))?,
                );
            }
        }
        Ok(EventFormat {
            system: system.to_string(),
            name: name.ok_or_else(|| anyhow!("format has no `name:` line"))?,
            id: id.ok_or_else(|| anyhow!("format has no `ID:` line"))?,
            fields,
        })
    }

    pub fn field(&self, name: &str) -> Result<&Field> {
        self.fields.iter().find(|f| f.name == name).ok_or_else(|| {
            anyhow!(
                "event {}:{} has no field `{name}` (fields: {})",
                self.system,
                self.name,
                self.fields
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }
}

fn parse_field(line: &str) -> Result<Field> {
    // field:<decl>;\toffset:N;\tsize:N;\tsigned:N;
    let mut decl = None;
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for part in line.split(';') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("field:") {
            decl = Some(v.trim());
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = Some(v.trim().parse::<usize>()?);
        } else if let Some(v) = part.strip_prefix("size:") {
            size = Some(v.trim().parse::<usize>()?);
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let decl = decl.ok_or_else(|| anyhow!("no field declaration"))?;
    let data_loc = decl.starts_with("__data_loc");
    // The name is the last identifier; strip an array suffix like `comm[16]`.
    let last = decl
        .split_whitespace()
        .last()
        .ok_or_else(|| anyhow!("empty field declaration"))?;
    let (name, array) = match last.find('[') {
        Some(i) if !data_loc => (&last[..i], true),
        Some(i) => (&last[..i], false),
        None => (last, false),
    };
    let name = name.trim_start_matches('*');
    Ok(Field {
        name: name.to_string(),
        offset: offset.ok_or_else(|| anyhow!("no offset"))?,
        size: size.ok_or_else(|| anyhow!("no size"))?,
        signed,
        data_loc,
        array,
    })
}

/// Read an unsigned integer field (1, 2, 4 or 8 bytes, little endian).
#[inline]
pub fn field_u64(payload: &[u8], f: &Field) -> Option<u64> {
    let b = payload.get(f.offset..f.offset + f.size)?;
    Some(match f.size {
        1 => b[0] as u64,
        2 => u16::from_le_bytes([b[0], b[1]]) as u64,
        4 => u32::from_le_bytes(b.try_into().ok()?) as u64,
        8 => u64::from_le_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

/// Read a signed integer field, sign-extended.
#[inline]
pub fn field_i64(payload: &[u8], f: &Field) -> Option<i64> {
    let v = field_u64(payload, f)?;
    Some(match f.size {
        1 => v as u8 as i8 as i64,
        2 => v as u16 as i16 as i64,
        4 => v as u32 as i32 as i64,
        _ => v as i64,
    })
}

/// Read a string field: a fixed `char[]` or a `__data_loc char[]`.
pub fn field_str<'a>(payload: &'a [u8], f: &Field) -> Option<&'a str> {
    let bytes = if f.data_loc {
        let loc = field_u64(payload, f)? as u32;
        let off = (loc & 0xffff) as usize;
        let len = (loc >> 16) as usize;
        payload.get(off..off + len)?
    } else {
        payload.get(f.offset..f.offset + f.size)?
    };
    let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
    std::str::from_utf8(&bytes[..end]).ok()
}

/// One event read from the ring buffer.
#[derive(Clone, Copy, Debug)]
pub struct RawEvent<'a> {
    pub cpu: u32,
    /// Timestamp on the instance's trace clock (CLOCK_MONOTONIC ns with `mono`).
    pub ts: u64,
    /// The event id (`common_type`).
    pub id: u16,
    /// `common_pid`: the thread that was current when the event fired.
    pub pid: i32,
    /// The whole record, common fields included, so `Field::offset` applies.
    pub payload: &'a [u8],
}

/// Layout of a ring-buffer page header (`events/header_page`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLayout {
    pub commit_offset: usize,
    pub commit_size: usize,
    pub data_offset: usize,
}

impl PageLayout {
    /// The 64-bit kernel layout: u64 timestamp, local_t commit, data at 16.
    pub const LP64: PageLayout = PageLayout {
        commit_offset: 8,
        commit_size: 8,
        data_offset: 16,
    };

    pub fn parse(header_page: &str) -> Result<PageLayout> {
        let mut commit = None;
        let mut data = None;
        for line in header_page.lines() {
            let line = line.trim();
            if !line.starts_with("field:") {
                continue;
            }
            let f = parse_field(line).with_context(|| format!("header_page: {line:?}"))?;
            match f.name.as_str() {
                "commit" => commit = Some((f.offset, f.size)),
                "data" => data = Some(f.offset),
                _ => {}
            }
        }
        let (commit_offset, commit_size) =
            commit.ok_or_else(|| anyhow!("header_page has no `commit` field"))?;
        Ok(PageLayout {
            commit_offset,
            commit_size,
            data_offset: data.ok_or_else(|| anyhow!("header_page has no `data` field"))?,
        })
    }
}

/// What one page said about itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageInfo {
    pub events: u64,
    /// The kernel flagged lost events before this page.
    pub missed: bool,
    /// Number of lost events when the kernel stored it (else 0 with `missed`).
    pub missed_count: u64,
}

// Ring-buffer event header: 5-bit type_len, 27-bit time delta (kernel/trace/ring_buffer.c).
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
const TS_SHIFT: u32 = 27;
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;

/// A page's base timestamp, the end of its data, and its lost-events flags,
/// without walking its events.
fn page_header(page: &[u8], layout: PageLayout) -> Result<(u64, usize, PageInfo)> {
    if page.len() < layout.data_offset || page.len() < 8 {
        bail!(
            "ring-buffer page of {} bytes is shorter than its header",
            page.len()
        );
    }
    let ts = u64::from_le_bytes(page[0..8].try_into().expect("8 bytes"));
    let commit = match layout.commit_size {
        8 | 4 => {
            let b = page
                .get(layout.commit_offset..layout.commit_offset + layout.commit_size)
                .ok_or_else(|| anyhow!("ring-buffer page header truncated"))?;
            let mut w = [0u8; 8];
            w[..b.len()].copy_from_slice(b);
            u64::from_le_bytes(w)
        }
        n => bail!("unsupported ring-buffer commit field size {n}"),
    };
    let len = (commit & !(MISSED_EVENTS | MISSED_STORED) & 0xffff_ffff) as usize;
    let mut info = PageInfo {
        missed: commit & MISSED_EVENTS != 0,
        ..PageInfo::default()
    };
    let end = layout.data_offset + len;
    if end > page.len() {
        bail!(
            "ring-buffer page says {len} bytes of data but only {} were read",
            page.len() - layout.data_offset
        );
    }
    if commit & MISSED_STORED != 0 {
        // The count of lost events sits right after the data.
        if let Some(b) = page.get(end..end + 8) {
            info.missed_count = u64::from_le_bytes(b.try_into().expect("8 bytes"));
        }
    }
    Ok((ts, end, info))
}

/// Walk the events of one ring-buffer page (as read from `trace_pipe_raw`), calling
/// `f(ts, record)` for each data event. Malformed pages give an error naming the
/// byte offset rather than a panic.
pub fn parse_page(
    page: &[u8],
    layout: PageLayout,
    mut f: impl FnMut(u64, &[u8]),
) -> Result<PageInfo> {
    let rd_u32 = |off: usize| -> Result<u32> {
        page.get(off..off + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
            .ok_or_else(|| anyhow!("ring-buffer page truncated at byte {off}"))
    };
    let (mut ts, end, mut info) = page_header(page, layout)?;
    let data = layout.data_offset;
    let mut off = data;
    while off + 4 <= end {
        let hdr = rd_u32(off)?;
        let type_len = hdr & 0x1f;
        let delta = (hdr >> 5) as u64;
        match type_len {
            TYPE_PADDING => {
                if delta == 0 {
                    break; // rest of the page is padding
                }
                // A discarded event: skip it, but its time delta still counts.
                ts += delta;
                let l = rd_u32(off + 4)? as usize;
                off += 4 + ((l + 3) & !3);
            }
            TYPE_TIME_EXTEND => {
                ts += delta | ((rd_u32(off + 4)? as u64) << TS_SHIFT);
                off += 8;
            }
            TYPE_TIME_STAMP => {
                let abs = delta | ((rd_u32(off + 4)? as u64) << TS_SHIFT);
                // Absolute stamps carry the low 59 bits; keep the top bits we had.
                ts = (ts & !((1u64 << 59) - 1)) | abs;
                off += 8;
            }
            0 => {
                ts += delta;
                let l = rd_u32(off + 4)? as usize;
                if l < 4 {
                    bail!("ring-buffer event at byte {off} has length {l}");
                }
                let rec = page
                    .get(off + 8..off + 4 + l)
                    .ok_or_else(|| anyhow!("ring-buffer event at byte {off} overruns page"))?;
                f(ts, rec);
                info.events += 1;
                off += 4 + ((l + 3) & !3);
            }
            n => {
                ts += delta;
                let l = n as usize * 4;
                let rec = page
                    .get(off + 4..off + 4 + l)
                    .ok_or_else(|| anyhow!("ring-buffer event at byte {off} overruns page"))?;
                f(ts, rec);
                info.events += 1;
                off += 4 + l;
            }
        }
    }
    Ok(info)
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
    Err(anyhow!(
        "could not remove tracefs instance {}: {} (remove it with `rmdir {}`)",
        dir.display(),
        last.map(|e| e.to_string()).unwrap_or_default(),
        dir.display()
    ))
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
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn write(&self, rel: &str, value: &str) -> Result<()> {
        let p = self.dir.join(rel);
        fs::write(&p, value).with_context(|| format!("writing {value:?} to {}", p.display()))
    }

    fn read(&self, rel: &str) -> Result<String> {
        let p = self.dir.join(rel);
        read_text(&p).with_context(|| format!("reading {}", p.display()))
    }

    /// Select the trace clock (`mono` makes timestamps CLOCK_MONOTONIC ns).
    pub fn set_clock(&self, clock: &str) -> Result<()> {
        let avail = self.read("trace_clock")?;
        let known: Vec<&str> = avail
            .split_whitespace()
            .map(|c| c.trim_matches(|c| c == '[' || c == ']'))
            .collect();
        if !known.contains(&clock) {
            bail!(
                "trace clock `{clock}` not offered by this kernel (available: {})",
                known.join(" ")
            );
        }
        self.write("trace_clock", clock)
    }

    /// The trace clocks this kernel offers (`trace_clock`).
    pub fn clocks(&self) -> Result<Vec<String>> {
        Ok(self
            .read("trace_clock")?
            .split_whitespace()
            .map(|c| c.trim_matches(|c| c == '[' || c == ']').to_string())
            .collect())
    }

    pub fn clock(&self) -> Result<String> {
        let avail = self.read("trace_clock")?;
        avail
            .split_whitespace()
            .find(|c| c.starts_with('['))
            .map(|c| c.trim_matches(|c| c == '[' || c == ']').to_string())
            .ok_or_else(|| anyhow!("cannot tell the current trace clock from {avail:?}"))
    }

    /// Per-CPU buffer size in KiB.
    pub fn set_buffer_size_kb(&self, kb: u64) -> Result<()> {
        self.write("buffer_size_kb", &kb.to_string())
    }

    /// Size of one ring-buffer page (sub-buffer) in KiB, where the kernel allows it
    /// (Linux >= 6.8): larger pages mean fewer reads for the same events.
    pub fn set_subbuf_size_kb(&self, kb: u64) -> Result<()> {
        if !self.dir.join("buffer_subbuf_size_kb").exists() {
            bail!("this kernel has no buffer_subbuf_size_kb (needs Linux >= 6.8)");
        }
        self.write("buffer_subbuf_size_kb", &kb.to_string())
    }

    /// Set one of `options/*` (e.g. `event-fork`, `overwrite`).
    pub fn set_option(&self, name: &str, on: bool) -> Result<()> {
        if !self.dir.join("options").join(name).exists() {
            bail!("tracefs option `{name}` does not exist in this kernel");
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
        let text = read_text(&p).with_context(|| {
            format!(
                "event {system}:{name} is not available in this kernel ({} missing)",
                p.display()
            )
        })?;
        EventFormat::parse(system, &text).with_context(|| format!("parsing {}", p.display()))
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
    pub fn enable_system(&self, system: &str) -> Result<Vec<EventFormat>> {
        let dir = self.dir.join("events").join(system);
        let rd = fs::read_dir(&dir).with_context(|| {
            format!(
                "event system `{system}` is not available ({})",
                dir.display()
            )
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
        self.write(&rel, expr).with_context(|| {
            let why = read_text(&self.dir.join(&rel)).unwrap_or_default();
            format!(
                "tracefs rejected filter `{expr}` on {system}:{name}: {}",
                why.trim()
            )
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
            .with_context(|| format!("opening {}", p.display()))?;
        let mut line = String::new();
        for pid in pids {
            line.push_str(&pid.to_string());
            line.push(' ');
        }
        line.push('\n');
        f.write_all(line.as_bytes())
            .with_context(|| format!("adding pids to {}", p.display()))
    }

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
            .with_context(|| format!("listing {}/per_cpu", self.dir.display()))?
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
                .with_context(|| format!("opening {}", p.display()))?;
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
                    Err(e) => {
                        return Err(e)
                            .with_context(|| format!("reading cpu{} trace_pipe_raw", r.cpu));
                    }
                };
                let (_, _, info) = page_header(&r.page[..n], layout)
                    .with_context(|| format!("a cpu{} ring-buffer page", r.cpu))?;
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
                Err(e) => bad = Some(e.context(format!("parsing a cpu{cpu} ring-buffer page"))),
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
            .ok_or_else(|| anyhow!("per_cpu/cpu0/stats has no `now ts` line"))?;
        let (sec, frac) = v.trim().split_once('.').unwrap_or((v.trim(), "0"));
        let sec: u64 = sec.parse().with_context(|| format!("bad now ts {v:?}"))?;
        let mut ns: u64 = frac.parse().with_context(|| format!("bad now ts {v:?}"))?;
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
            .ok_or_else(|| anyhow!("per_cpu/cpu{cpu}/stats has no `bytes` line"))
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
                Some(r) => r.map_err(|f| f.error),
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

/// Event ids of an instance's enabled events, by `system:name`.
pub fn ids_by_name(formats: &[EventFormat]) -> HashMap<String, u16> {
    formats
        .iter()
        .map(|f| (format!("{}:{}", f.system, f.name), f.id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYS_EXIT_FMT: &str = "name: sys_exit\nID: 442\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield:long ret;\toffset:16;\tsize:8;\tsigned:1;\n\n\
print fmt: \"NR %ld = %ld\", REC->id, REC->ret\n";

    #[test]
    fn parses_event_format() {
        let f = EventFormat::parse("raw_syscalls", SYS_EXIT_FMT).unwrap();
        assert_eq!(f.name, "sys_exit");
        assert_eq!(f.id, 442);
        let ret = f.field("ret").unwrap();
        assert_eq!((ret.offset, ret.size, ret.signed), (16, 8, true));
        assert!(f.field("nope").is_err());
    }

    #[test]
    fn parses_array_and_data_loc_fields() {
        let a = parse_field("field:char comm[16];\toffset:38;\tsize:16;\tsigned:0;").unwrap();
        assert_eq!(
            (a.name.as_str(), a.array, a.data_loc),
            ("comm", true, false)
        );
        let d =
            parse_field("field:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;").unwrap();
        assert_eq!((d.name.as_str(), d.data_loc), ("cmd", true));
        let mut rec = vec![0u8; 70];
        rec[60..64].copy_from_slice(&((3u32 << 16) | 64).to_le_bytes());
        rec[64..67].copy_from_slice(b"ab\0");
        assert_eq!(field_str(&rec, &d), Some("ab"));
    }

    fn push_small(page: &mut Vec<u8>, delta: u32, rec: &[u8]) {
        assert!(rec.len().is_multiple_of(4) && rec.len() <= 112);
        let hdr = (delta << 5) | (rec.len() as u32 / 4);
        page.extend_from_slice(&hdr.to_le_bytes());
        page.extend_from_slice(rec);
    }

    fn finish(mut page: Vec<u8>, base_ts: u64, flags: u64) -> Vec<u8> {
        let len = (page.len() - 16) as u64;
        page[0..8].copy_from_slice(&base_ts.to_le_bytes());
        page[8..16].copy_from_slice(&(len | flags).to_le_bytes());
        page.resize(4096, 0xee);
        page
    }

    #[test]
    fn walks_page_with_extends_and_long_events() {
        let mut page = vec![0u8; 16];
        push_small(&mut page, 5, &[1, 0, 0, 0, 7, 0, 0, 0]);
        // time extend: delta = (2 << 27) | 3
        page.extend_from_slice(&((3u32 << 5) | TYPE_TIME_EXTEND).to_le_bytes());
        page.extend_from_slice(&2u32.to_le_bytes());
        // long event (type_len 0): array[0] = payload + 4
        let long = vec![9u8; 120];
        page.extend_from_slice(&(1u32 << 5).to_le_bytes());
        page.extend_from_slice(&(124u32).to_le_bytes());
        page.extend_from_slice(&long);
        // discarded event (padding with a delta), then a normal one
        page.extend_from_slice(&((1u32 << 5) | TYPE_PADDING).to_le_bytes());
        page.extend_from_slice(&12u32.to_le_bytes());
        page.extend_from_slice(&[0; 8]);
        push_small(&mut page, 10, &[2, 0, 0, 0, 8, 0, 0, 0]);
        let page = finish(page, 1000, 0);
        let mut seen = Vec::new();
        let info = parse_page(&page, PageLayout::LP64, |ts, rec| {
            seen.push((ts, rec.len()))
        })
        .unwrap();
        assert_eq!(info.events, 3);
        assert!(!info.missed);
        let ext = (2u64 << 27) | 3;
        assert_eq!(seen[0], (1005, 8));
        assert_eq!(seen[1], (1005 + ext + 1, 120));
        assert_eq!(seen[2], (1005 + ext + 1 + 1 + 10, 8));
    }

    #[test]
    fn reports_missed_events_flag_and_count() {
        let mut page = vec![0u8; 16];
        push_small(&mut page, 1, &[1, 0, 0, 0, 7, 0, 0, 0]);
        let mut page = finish(page, 0, MISSED_EVENTS | MISSED_STORED);
        let end = 16 + 12;
        page[end..end + 8].copy_from_slice(&42u64.to_le_bytes());
        let info = parse_page(&page, PageLayout::LP64, |_, _| {}).unwrap();
        assert!(info.missed);
        assert_eq!(info.missed_count, 42);
    }

    #[test]
    fn corrupt_page_is_an_error_not_a_panic() {
        let mut page = vec![0u8; 16];
        page.extend_from_slice(&0u32.to_le_bytes());
        page.extend_from_slice(&5000u32.to_le_bytes());
        let page = finish(page, 0, 0);
        assert!(parse_page(&page, PageLayout::LP64, |_, _| {}).is_err());
        assert!(parse_page(&page[..10], PageLayout::LP64, |_, _| {}).is_err());
    }

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

    #[test]
    fn finds_mount_point() {
        let m = "proc /proc proc rw 0 0\nnodev /mnt/t tracefs rw 0 0\n\
                 nodev /sys/kernel/tracing tracefs rw 0 0\n";
        assert_eq!(
            tracefs_mount_point(m),
            Some(PathBuf::from("/sys/kernel/tracing"))
        );
        assert_eq!(tracefs_mount_point("proc /proc proc rw 0 0\n"), None);
    }
}
