//! CPU accounting: per-thread rusage, and system-wide deltas of /proc/stat,
//! /proc/interrupts, cpuidle states and /proc/diskstats (fio's disk_util).
//!
//! Each source has a snapshot type with a `parse` (fixture-testable), a `read`
//! (the live file) and a `delta(&before, &after)`. The /proc formats are plain
//! whitespace tables, so they are parsed by hand: one pass, no allocation beyond
//! the result, errors that name the line and field, and the same code reads
//! fixtures in tests. The `procfs` crate was weighed and does not fit: its
//! /proc/stat (`KernelStats`) keeps neither the `intr` and `softirq` totals nor
//! the CPU numbers (a CPU that goes offline must drop out of a delta, not shift
//! the others), and for /proc/interrupts and /proc/diskstats alone it would not
//! be worth a dependency.

use std::fs;
use std::path::Path;

/// Why a system-wide CPU or disk source could not be read or parsed. Causes are
/// part of the message and deliberately not a `source` (`{:#}` would say them
/// twice).
#[derive(Debug, thiserror::Error)]
pub enum CpuSourceError {
    #[error("reading {file}: {err}")]
    Read {
        file: &'static str,
        err: std::io::Error,
    },
    #[error("parsing {file}: {err}")]
    Parse {
        file: &'static str,
        err: Box<CpuSourceError>,
    },
    #[error("line {line}: bad number {value:?}: {err}")]
    BadNumber {
        line: usize,
        value: String,
        err: std::num::ParseIntError,
    },
    #[error("line {line}: {key} has {n} fields, need at least 4")]
    FewCpuFields { line: usize, key: String, n: usize },
    #[error("line {line}: bad cpu name {key:?}: {err}")]
    BadCpuName {
        line: usize,
        key: String,
        err: std::num::ParseIntError,
    },
    #[error("line {line}: {key} without a value")]
    NoValue { line: usize, key: String },
    #[error("no aggregate `cpu` line")]
    NoTotal,
    #[error("empty file")]
    Empty,
    #[error("line 1: expected CPUn column, got {0:?}")]
    CpuColumn(String),
    #[error("line 1: no CPU columns")]
    NoCpuColumns,
    #[error("line {line}: row {irq:?} has no counts")]
    NoCounts { line: usize, irq: String },
    #[error("listing {}: {err}", path.display())]
    List {
        path: std::path::PathBuf,
        err: std::io::Error,
    },
    #[error("reading {}: {err}", path.display())]
    ReadFile {
        path: std::path::PathBuf,
        err: std::io::Error,
    },
    #[error("{}: not a number: {text:?}: {err}", path.display())]
    NotANumber {
        path: std::path::PathBuf,
        text: String,
        err: std::num::ParseIntError,
    },
    #[error("line {line}: {n} fields, need at least 14")]
    FewDiskFields { line: usize, n: usize },
    #[error("line {line}: field {field}: bad number {value:?}: {err}")]
    DiskNumber {
        line: usize,
        field: usize,
        value: String,
        err: std::num::ParseIntError,
    },
}

type Result<T, E = CpuSourceError> = std::result::Result<T, E>;

/// Read a /proc file and parse it, naming the file in either error.
fn read_proc<T>(file: &'static str, parse: impl FnOnce(&str) -> Result<T>) -> Result<T> {
    let text = fs::read_to_string(file).map_err(|err| CpuSourceError::Read { file, err })?;
    parse(&text).map_err(|err| CpuSourceError::Parse {
        file,
        err: Box::new(err),
    })
}

use crate::measure::clock;

/// Per-thread CPU use and scheduling counters (getrusage(RUSAGE_THREAD)).
#[derive(
    schemars::JsonSchema,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct ThreadUsage {
    pub user_ns: u64,
    pub sys_ns: u64,
    /// Voluntary context switches (the thread slept: I/O wait, timer, futex).
    pub nvcsw: u64,
    /// Involuntary context switches (preempted).
    pub nivcsw: u64,
    pub minflt: u64,
    pub majflt: u64,
}

/// Whose usage [`rusage`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsageOf {
    /// The calling thread (`RUSAGE_THREAD`, Linux 2.6.26 and later).
    Thread,
    /// The whole process, every thread of it (`RUSAGE_SELF`).
    Process,
}

/// getrusage(2): the one call of it in iolab, so every reader converts and
/// fails alike. `None` when it fails, which with these arguments it cannot
/// (only EFAULT and EINVAL are possible).
pub fn rusage(of: UsageOf) -> Option<libc::rusage> {
    let who = match of {
        UsageOf::Thread => libc::RUSAGE_THREAD,
        UsageOf::Process => libc::RUSAGE_SELF,
    };
    // SAFETY: rusage is plain integers and timevals: all zeroes is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a live, writable rusage that getrusage fills and keeps
    // no pointer to.
    let rc = unsafe { libc::getrusage(who, &mut ru) };
    (rc == 0).then_some(ru)
}

/// User plus system CPU time of the whole process (all threads, io-wq
/// workers included: they are threads of the process that submitted), ns.
pub fn process_cpu_ns() -> Option<u64> {
    rusage(UsageOf::Process).map(|ru| ThreadUsage::from_rusage(&ru).cpu_ns())
}

impl ThreadUsage {
    /// The calling thread's usage so far (all zeroes if getrusage failed).
    /// Call at worker start and end.
    pub fn now() -> ThreadUsage {
        ThreadUsage::try_now().unwrap_or_default()
    }

    /// The calling thread's usage so far, `None` if getrusage failed.
    pub fn try_now() -> Option<ThreadUsage> {
        rusage(UsageOf::Thread).map(|ru| ThreadUsage::from_rusage(&ru))
    }

    fn from_rusage(ru: &libc::rusage) -> ThreadUsage {
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
        ThreadUsage {
            user_ns: tv(ru.ru_utime),
            sys_ns: tv(ru.ru_stime),
            nvcsw: ru.ru_nvcsw as u64,
            nivcsw: ru.ru_nivcsw as u64,
            minflt: ru.ru_minflt as u64,
            majflt: ru.ru_majflt as u64,
        }
    }

    /// User plus system CPU time, ns.
    pub fn cpu_ns(&self) -> u64 {
        self.user_ns + self.sys_ns
    }

    pub fn delta(before: &ThreadUsage, after: &ThreadUsage) -> ThreadUsage {
        ThreadUsage {
            user_ns: after.user_ns.saturating_sub(before.user_ns),
            sys_ns: after.sys_ns.saturating_sub(before.sys_ns),
            nvcsw: after.nvcsw.saturating_sub(before.nvcsw),
            nivcsw: after.nivcsw.saturating_sub(before.nivcsw),
            minflt: after.minflt.saturating_sub(before.minflt),
            majflt: after.majflt.saturating_sub(before.majflt),
        }
    }

    /// Sum of workers (numjobs, group_reporting).
    pub fn add(&mut self, o: &ThreadUsage) {
        self.user_ns += o.user_ns;
        self.sys_ns += o.sys_ns;
        self.nvcsw += o.nvcsw;
        self.nivcsw += o.nivcsw;
        self.minflt += o.minflt;
        self.majflt += o.majflt;
    }

    /// fio's `ctx`: all context switches.
    pub fn ctx(&self) -> u64 {
        self.nvcsw + self.nivcsw
    }
}

/// One `cpu` line of /proc/stat, in USER_HZ ticks.
#[derive(
    schemars::JsonSchema,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }

    fn delta(b: &CpuTimes, a: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: a.user.saturating_sub(b.user),
            nice: a.nice.saturating_sub(b.nice),
            system: a.system.saturating_sub(b.system),
            idle: a.idle.saturating_sub(b.idle),
            iowait: a.iowait.saturating_sub(b.iowait),
            irq: a.irq.saturating_sub(b.irq),
            softirq: a.softirq.saturating_sub(b.softirq),
            steal: a.steal.saturating_sub(b.steal),
        }
    }

    /// Share of each field in percent of the total (all 0 when the total is 0).
    pub fn percent(&self) -> CpuPercent {
        let t = self.total();
        let p = |v: u64| {
            if t == 0 {
                0.0
            } else {
                100.0 * v as f64 / t as f64
            }
        };
        CpuPercent {
            user: p(self.user),
            nice: p(self.nice),
            system: p(self.system),
            idle: p(self.idle),
            iowait: p(self.iowait),
            irq: p(self.irq),
            softirq: p(self.softirq),
            steal: p(self.steal),
        }
    }
}

/// [`CpuTimes`] as percentages of their total.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct CpuPercent {
    pub user: f64,
    pub nice: f64,
    pub system: f64,
    pub idle: f64,
    pub iowait: f64,
    pub irq: f64,
    pub softirq: f64,
    pub steal: f64,
}

/// /proc/stat: all-CPU and per-CPU times, context switches, interrupts.
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize,
)]
pub struct ProcStat {
    pub total: CpuTimes,
    /// (cpu number, times), in file order.
    pub cpus: Vec<(u32, CpuTimes)>,
    pub ctxt: u64,
    /// Total interrupts serviced (first field of the `intr` line).
    pub intr: u64,
    pub softirq: u64,
}

impl ProcStat {
    pub fn read() -> Result<ProcStat> {
        read_proc("/proc/stat", ProcStat::parse)
    }

    pub fn parse(text: &str) -> Result<ProcStat> {
        let mut out = ProcStat::default();
        let mut saw_total = false;
        for (lineno, line) in text.lines().enumerate() {
            let mut f = line.split_ascii_whitespace();
            let Some(key) = f.next() else { continue };
            let nums = |f: std::str::SplitAsciiWhitespace<'_>| -> Result<Vec<u64>> {
                f.map(|v| {
                    v.parse::<u64>().map_err(|err| CpuSourceError::BadNumber {
                        line: lineno + 1,
                        value: v.to_string(),
                        err,
                    })
                })
                .collect()
            };
            if let Some(cpu) = key.strip_prefix("cpu") {
                let v = nums(f)?;
                if v.len() < 4 {
                    return Err(CpuSourceError::FewCpuFields {
                        line: lineno + 1,
                        key: key.to_string(),
                        n: v.len(),
                    });
                }
                let g = |i: usize| v.get(i).copied().unwrap_or(0);
                let t = CpuTimes {
                    user: g(0),
                    nice: g(1),
                    system: g(2),
                    idle: g(3),
                    iowait: g(4),
                    irq: g(5),
                    softirq: g(6),
                    steal: g(7),
                };
                if cpu.is_empty() {
                    out.total = t;
                    saw_total = true;
                } else {
                    let n = cpu
                        .parse::<u32>()
                        .map_err(|err| CpuSourceError::BadCpuName {
                            line: lineno + 1,
                            key: key.to_string(),
                            err,
                        })?;
                    out.cpus.push((n, t));
                }
            } else if key == "ctxt" || key == "intr" || key == "softirq" {
                let first = f.next().ok_or_else(|| CpuSourceError::NoValue {
                    line: lineno + 1,
                    key: key.to_string(),
                })?;
                let v = first
                    .parse::<u64>()
                    .map_err(|err| CpuSourceError::BadNumber {
                        line: lineno + 1,
                        value: first.to_string(),
                        err,
                    })?;
                match key {
                    "ctxt" => out.ctxt = v,
                    "intr" => out.intr = v,
                    _ => out.softirq = v,
                }
            }
        }
        if !saw_total {
            return Err(CpuSourceError::NoTotal);
        }
        Ok(out)
    }

    /// Per-CPU entries are matched by CPU number (a CPU that went offline drops out).
    pub fn delta(before: &ProcStat, after: &ProcStat) -> ProcStat {
        ProcStat {
            total: CpuTimes::delta(&before.total, &after.total),
            cpus: after
                .cpus
                .iter()
                .filter_map(|(n, a)| {
                    let b = before.cpus.iter().find(|(m, _)| m == n)?;
                    Some((*n, CpuTimes::delta(&b.1, a)))
                })
                .collect(),
            ctxt: after.ctxt.saturating_sub(before.ctxt),
            intr: after.intr.saturating_sub(before.intr),
            softirq: after.softirq.saturating_sub(before.softirq),
        }
    }
}

/// One row of /proc/interrupts.
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize,
)]
pub struct IrqSource {
    /// The row label without its colon: an IRQ number or a name like `LOC`.
    pub irq: String,
    /// Count per CPU column, in the header's order.
    pub per_cpu: Vec<u64>,
    pub total: u64,
    /// Controller, hardware IRQ and device names, as printed.
    pub desc: String,
}

/// /proc/interrupts.
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize,
)]
pub struct Interrupts {
    /// CPU numbers of the columns.
    pub cpus: Vec<u32>,
    pub sources: Vec<IrqSource>,
}

impl Interrupts {
    pub fn read() -> Result<Interrupts> {
        read_proc("/proc/interrupts", Interrupts::parse)
    }

    pub fn parse(text: &str) -> Result<Interrupts> {
        let mut lines = text.lines();
        let header = lines.next().ok_or(CpuSourceError::Empty)?;
        let cpus = header
            .split_ascii_whitespace()
            .map(|c| {
                c.strip_prefix("CPU")
                    .and_then(|n| n.parse::<u32>().ok())
                    .ok_or_else(|| CpuSourceError::CpuColumn(c.to_string()))
            })
            .collect::<Result<Vec<u32>>>()?;
        if cpus.is_empty() {
            return Err(CpuSourceError::NoCpuColumns);
        }
        let mut sources = Vec::new();
        for (i, line) in lines.enumerate() {
            let Some((label, rest)) = line.split_once(':') else {
                continue;
            };
            let irq = label.trim().to_string();
            let mut per_cpu = Vec::with_capacity(cpus.len());
            let mut rest = rest.trim_start();
            // Rows like ERR and MIS carry one number, not one per CPU.
            while per_cpu.len() < cpus.len() {
                let end = rest
                    .find(|c: char| c.is_ascii_whitespace())
                    .unwrap_or(rest.len());
                let (tok, tail) = rest.split_at(end);
                match tok.parse::<u64>() {
                    Ok(v) => per_cpu.push(v),
                    Err(_) if per_cpu.is_empty() && !tok.is_empty() => {
                        return Err(CpuSourceError::NoCounts { line: i + 2, irq });
                    }
                    Err(_) => break,
                }
                rest = tail.trim_start();
            }
            let total = per_cpu.iter().sum();
            sources.push(IrqSource {
                irq,
                per_cpu,
                total,
                desc: rest
                    .trim()
                    .split_ascii_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
            });
        }
        Ok(Interrupts { cpus, sources })
    }

    /// Rows are matched by label; rows that appeared during the run count from 0.
    /// Rows without interrupts in the interval are left out (most rows, most runs).
    pub fn delta(before: &Interrupts, after: &Interrupts) -> Interrupts {
        let sources = after
            .sources
            .iter()
            .map(|a| {
                let b = before.sources.iter().find(|b| b.irq == a.irq);
                let per_cpu: Vec<u64> = a
                    .per_cpu
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        v.saturating_sub(b.and_then(|b| b.per_cpu.get(i).copied()).unwrap_or(0))
                    })
                    .collect();
                IrqSource {
                    irq: a.irq.clone(),
                    total: per_cpu.iter().sum(),
                    per_cpu,
                    desc: a.desc.clone(),
                }
            })
            .filter(|s| s.total > 0)
            .collect();
        Interrupts {
            cpus: after.cpus.clone(),
            sources,
        }
    }

    /// Rows with a non-zero total, largest first (for reports).
    pub fn active(&self) -> Vec<&IrqSource> {
        let mut v: Vec<&IrqSource> = self.sources.iter().filter(|s| s.total > 0).collect();
        v.sort_by_key(|s| std::cmp::Reverse(s.total));
        v
    }
}

/// One cpuidle state of one CPU.
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize,
)]
pub struct IdleState {
    pub cpu: u32,
    /// Directory name: `state0`, `state1`, ...
    pub state: String,
    /// The state's `name` file (e.g. `POLL`, `C1`).
    pub name: String,
    /// Times entered.
    pub usage: u64,
    /// Time spent in the state, microseconds.
    pub time_us: u64,
}

/// cpuidle usage from /sys/devices/system/cpu/cpu*/cpuidle/state*.
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize,
)]
pub struct CpuIdle {
    /// False when the kernel exposes no cpuidle states (e.g. a VM without a
    /// cpuidle driver): then `states` is empty and reports say so.
    pub available: bool,
    pub states: Vec<IdleState>,
}

impl CpuIdle {
    pub fn read() -> Result<CpuIdle> {
        CpuIdle::read_from(Path::new("/sys/devices/system/cpu"))
    }

    /// Read from a sysfs-like tree rooted at `root` (tests use a temp dir).
    pub fn read_from(root: &Path) -> Result<CpuIdle> {
        let mut states = Vec::new();
        let entries = fs::read_dir(root).map_err(|err| CpuSourceError::List {
            path: root.to_path_buf(),
            err,
        })?;
        let mut cpus: Vec<u32> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                e.file_name()
                    .to_str()?
                    .strip_prefix("cpu")?
                    .parse::<u32>()
                    .ok()
            })
            .collect();
        cpus.sort_unstable();
        for cpu in cpus {
            let dir = root.join(format!("cpu{cpu}/cpuidle"));
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            let mut names: Vec<(u32, String)> = entries
                .filter_map(|e| e.ok())
                .filter_map(|e| {
                    let n = e.file_name().to_str()?.to_string();
                    let idx = n.strip_prefix("state")?.parse::<u32>().ok()?;
                    Some((idx, n))
                })
                .collect();
            names.sort_unstable();
            for (_, state) in names {
                let sdir = dir.join(&state);
                let num = |f: &str| -> Result<u64> {
                    let p = sdir.join(f);
                    let t = fs::read_to_string(&p).map_err(|err| CpuSourceError::ReadFile {
                        path: p.clone(),
                        err,
                    })?;
                    t.trim()
                        .parse::<u64>()
                        .map_err(|err| CpuSourceError::NotANumber {
                            path: p.clone(),
                            text: t.trim().to_string(),
                            err,
                        })
                };
                states.push(IdleState {
                    cpu,
                    name: fs::read_to_string(sdir.join("name"))
                        .map(|s| s.trim().to_string())
                        .unwrap_or_default(),
                    usage: num("usage")?,
                    time_us: num("time")?,
                    state,
                });
            }
        }
        Ok(CpuIdle {
            available: !states.is_empty(),
            states,
        })
    }

    pub fn delta(before: &CpuIdle, after: &CpuIdle) -> CpuIdle {
        CpuIdle {
            available: before.available && after.available,
            states: after
                .states
                .iter()
                .filter_map(|a| {
                    let b = before
                        .states
                        .iter()
                        .find(|b| b.cpu == a.cpu && b.state == a.state)?;
                    Some(IdleState {
                        usage: a.usage.saturating_sub(b.usage),
                        time_us: a.time_us.saturating_sub(b.time_us),
                        ..a.clone()
                    })
                })
                .collect(),
        }
    }
}

/// One line of /proc/diskstats (the fields fio's disk_util uses).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DiskStat {
    pub major: u32,
    pub minor: u32,
    pub name: String,
    pub read_ios: u64,
    pub read_merges: u64,
    pub read_sectors: u64,
    pub read_ticks: u64,
    pub write_ios: u64,
    pub write_merges: u64,
    pub write_sectors: u64,
    pub write_ticks: u64,
    pub in_flight: u64,
    /// Milliseconds with at least one request in flight.
    pub io_ticks: u64,
    /// Weighted milliseconds in queue (sum over requests).
    pub in_queue: u64,
}

/// /proc/diskstats at one instant.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DiskStats {
    /// Engine-clock time of the reading (for util%).
    pub t_ns: u64,
    pub disks: Vec<DiskStat>,
}

impl DiskStats {
    pub fn read() -> Result<DiskStats> {
        read_proc("/proc/diskstats", |text| {
            DiskStats::parse(text, clock::now_ns())
        })
    }

    pub fn parse(text: &str, t_ns: u64) -> Result<DiskStats> {
        let mut disks = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let f: Vec<&str> = line.split_ascii_whitespace().collect();
            if f.is_empty() {
                continue;
            }
            if f.len() < 14 {
                return Err(CpuSourceError::FewDiskFields {
                    line: i + 1,
                    n: f.len(),
                });
            }
            let n = |k: usize| -> Result<u64> {
                f[k].parse::<u64>()
                    .map_err(|err| CpuSourceError::DiskNumber {
                        line: i + 1,
                        field: k + 1,
                        value: f[k].to_string(),
                        err,
                    })
            };
            disks.push(DiskStat {
                major: n(0)? as u32,
                minor: n(1)? as u32,
                name: f[2].to_string(),
                read_ios: n(3)?,
                read_merges: n(4)?,
                read_sectors: n(5)?,
                read_ticks: n(6)?,
                write_ios: n(7)?,
                write_merges: n(8)?,
                write_sectors: n(9)?,
                write_ticks: n(10)?,
                in_flight: n(11)?,
                io_ticks: n(12)?,
                in_queue: n(13)?,
            });
        }
        Ok(DiskStats { t_ns, disks })
    }

    pub fn get(&self, name: &str) -> Option<&DiskStat> {
        self.disks.iter().find(|d| d.name == name)
    }

    /// fio's disk_util for the named devices (those present in both readings).
    pub fn util(before: &DiskStats, after: &DiskStats, names: &[&str]) -> Vec<DiskUtil> {
        let elapsed_ms = after.t_ns.saturating_sub(before.t_ns) as f64 / 1e6;
        names
            .iter()
            .filter_map(|n| {
                let (b, a) = (before.get(n)?, after.get(n)?);
                let d = |x: u64, y: u64| y.saturating_sub(x);
                let io_ticks = d(b.io_ticks, a.io_ticks);
                let util = if elapsed_ms > 0.0 {
                    (100.0 * io_ticks as f64 / elapsed_ms).min(100.0)
                } else {
                    0.0
                };
                Some(DiskUtil {
                    name: a.name.clone(),
                    read_ios: d(b.read_ios, a.read_ios),
                    write_ios: d(b.write_ios, a.write_ios),
                    read_merges: d(b.read_merges, a.read_merges),
                    write_merges: d(b.write_merges, a.write_merges),
                    read_ticks: d(b.read_ticks, a.read_ticks),
                    write_ticks: d(b.write_ticks, a.write_ticks),
                    in_queue: d(b.in_queue, a.in_queue),
                    util,
                })
            })
            .collect()
    }
}

/// fio's `disk_util[]` entry (same keys and meaning).
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize,
)]
pub struct DiskUtil {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub read_ticks: u64,
    pub write_ticks: u64,
    pub in_queue: u64,
    /// Percent of the elapsed time the device had I/O in flight.
    pub util: f64,
}

/// The block device (whole disk) holding `path`, by name as in /proc/diskstats,
/// so a job on a file can report its disk like fio does. `None` for files on
/// filesystems without a block device (tmpfs, overlay without one).
pub fn disk_of_path(path: &Path) -> Option<String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let md = fs::metadata(path).ok()?;
    let (maj, min) = if md.file_type().is_block_device() {
        (libc::major(md.rdev()), libc::minor(md.rdev()))
    } else {
        (libc::major(md.dev()), libc::minor(md.dev()))
    };
    if maj == 0 {
        return None;
    }
    let disk = crate::sys::blockdev::block_queue_of_dev(maj, min)
        .ok()?
        .disk;
    (!disk.is_empty()).then_some(disk)
}

/// All system-wide sources at one instant. Sources that cannot be read are
/// `None` with the reason kept in `missing`, so reports can say what is absent.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct SystemSnapshot {
    pub t_ns: u64,
    pub stat: Option<ProcStat>,
    pub interrupts: Option<Interrupts>,
    pub cpuidle: Option<CpuIdle>,
    pub disks: Option<DiskStats>,
    pub missing: Vec<String>,
}

impl SystemSnapshot {
    pub fn take() -> SystemSnapshot {
        fn keep<T>(r: Result<T>, missing: &mut Vec<String>) -> Option<T> {
            r.map_err(|e| missing.push(e.to_string())).ok()
        }
        let mut missing = Vec::new();
        let stat = keep(ProcStat::read(), &mut missing);
        let interrupts = keep(Interrupts::read(), &mut missing);
        let cpuidle = keep(CpuIdle::read(), &mut missing);
        let disks = keep(DiskStats::read(), &mut missing);
        SystemSnapshot {
            t_ns: clock::now_ns(),
            stat,
            interrupts,
            cpuidle,
            disks,
            missing,
        }
    }
}

/// What changed system-wide between two snapshots.
#[derive(schemars::JsonSchema, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct SystemDelta {
    pub elapsed_ns: u64,
    /// USER_HZ: ticks per second of the /proc/stat times.
    pub user_hz: u64,
    pub stat: Option<ProcStat>,
    pub interrupts: Option<Interrupts>,
    pub cpuidle: Option<CpuIdle>,
    pub missing: Vec<String>,
}

impl SystemDelta {
    pub fn between(before: &SystemSnapshot, after: &SystemSnapshot) -> SystemDelta {
        let mut missing = before.missing.clone();
        for m in &after.missing {
            if !missing.contains(m) {
                missing.push(m.clone());
            }
        }
        SystemDelta {
            elapsed_ns: after.t_ns.saturating_sub(before.t_ns),
            user_hz: user_hz(),
            stat: Option::zip(before.stat.as_ref(), after.stat.as_ref())
                .map(|(b, a)| ProcStat::delta(b, a)),
            interrupts: Option::zip(before.interrupts.as_ref(), after.interrupts.as_ref())
                .map(|(b, a)| Interrupts::delta(b, a)),
            cpuidle: Option::zip(before.cpuidle.as_ref(), after.cpuidle.as_ref())
                .map(|(b, a)| CpuIdle::delta(b, a)),
            missing,
        }
    }
}

/// Ticks per second of /proc/stat (sysconf(_SC_CLK_TCK), 100 on Linux).
pub fn user_hz() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 { v as u64 } else { 100 }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT_A: &str = "cpu  100 5 50 1000 10 2 3 0 0 0
cpu0 60 5 30 500 6 1 2 0 0 0
cpu1 40 0 20 500 4 1 1 0 0 0
intr 12345 0 9 0
ctxt 5000
btime 1700000000
processes 300
softirq 777 1 2 3
";
    const STAT_B: &str = "cpu  150 5 80 1100 12 4 6 1 0 0
cpu0 90 5 45 550 7 2 4 1 0 0
cpu1 60 0 35 550 5 2 2 0 0 0
intr 13345 0 9 0
ctxt 5600
softirq 800 1 2 3
";

    #[test]
    fn proc_stat_parses_and_deltas() {
        let a = ProcStat::parse(STAT_A).unwrap();
        assert_eq!(a.cpus.len(), 2);
        assert_eq!(a.total.user, 100);
        assert_eq!(a.cpus[1].1.iowait, 4);
        assert_eq!(a.ctxt, 5000);
        assert_eq!(a.intr, 12345);
        let b = ProcStat::parse(STAT_B).unwrap();
        let d = ProcStat::delta(&a, &b);
        assert_eq!(d.total.user, 50);
        assert_eq!(d.total.system, 30);
        assert_eq!(d.total.steal, 1);
        assert_eq!(d.cpus[0].1.user, 30);
        assert_eq!(d.ctxt, 600);
        assert_eq!(d.intr, 1000);
        let p = d.total.percent();
        let sum = p.user + p.nice + p.system + p.idle + p.iowait + p.irq + p.softirq + p.steal;
        assert!((sum - 100.0).abs() < 1e-9);
    }

    #[test]
    fn proc_stat_rejects_garbage_with_line_number() {
        let e = ProcStat::parse("cpu  1 2 x 4\n").unwrap_err();
        assert!(format!("{e:#}").contains("line 1"), "{e:#}");
        assert!(ProcStat::parse("ctxt 5\n").is_err());
    }

    const IRQ_A: &str = "           CPU0       CPU1       
  1:          9          0   IO-APIC   1-edge      i8042
 24:        100        200   PCI-MSI 49152-edge      virtio0-config
 25:       1000          5   PCI-MSI 49153-edge      virtio0-requests
NMI:          0          0   Non-maskable interrupts
LOC:      50000      40000   Local timer interrupts
ERR:          0
MIS:          0
";
    const IRQ_B: &str = "           CPU0       CPU1       
  1:          9          0   IO-APIC   1-edge      i8042
 24:        100        200   PCI-MSI 49152-edge      virtio0-config
 25:       1500          7   PCI-MSI 49153-edge      virtio0-requests
NMI:          0          0   Non-maskable interrupts
LOC:      51000      40500   Local timer interrupts
ERR:          0
MIS:          0
";

    #[test]
    fn interrupts_parse_and_delta() {
        let a = Interrupts::parse(IRQ_A).unwrap();
        assert_eq!(a.cpus, vec![0, 1]);
        let r25 = a.sources.iter().find(|s| s.irq == "25").unwrap();
        assert_eq!(r25.per_cpu, vec![1000, 5]);
        assert_eq!(r25.desc, "PCI-MSI 49153-edge virtio0-requests");
        let err = a.sources.iter().find(|s| s.irq == "ERR").unwrap();
        assert_eq!(err.per_cpu, vec![0]);
        let b = Interrupts::parse(IRQ_B).unwrap();
        let d = Interrupts::delta(&a, &b);
        assert_eq!(d.sources.len(), 2, "idle rows are dropped from a delta");
        let act = d.active();
        assert_eq!(act.len(), 2);
        assert_eq!(act[0].irq, "LOC");
        assert_eq!(act[0].total, 1500);
        assert_eq!(act[1].irq, "25");
        assert_eq!(act[1].per_cpu, vec![500, 2]);
    }

    #[test]
    fn diskstats_util() {
        let a = " 253       0 vda 100 1 800 50 200 2 1600 80 0 120 130 0 0 0 0\n   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0\n";
        let b = " 253       0 vda 150 1 1200 70 260 5 2000 100 1 620 630 0 0 0 0\n   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0\n";
        let a = DiskStats::parse(a, 0).unwrap();
        let b = DiskStats::parse(b, 1_000_000_000).unwrap();
        let u = DiskStats::util(&a, &b, &["vda", "nope"]);
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].read_ios, 50);
        assert_eq!(u[0].write_ios, 60);
        assert_eq!(u[0].write_merges, 3);
        assert_eq!(u[0].read_ticks, 20);
        assert_eq!(u[0].in_queue, 500);
        assert!((u[0].util - 50.0).abs() < 1e-9);
        assert!(DiskStats::parse("1 2 short\n", 0).is_err());
    }

    #[test]
    fn cpuidle_from_tree() {
        let dir = tempfile::tempdir().unwrap();
        for (cpu, st, name, usage, time) in [
            (0, 0, "POLL", 10, 5),
            (0, 1, "C1", 100, 5000),
            (1, 0, "POLL", 3, 1),
        ] {
            let d = dir.path().join(format!("cpu{cpu}/cpuidle/state{st}"));
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("name"), format!("{name}\n")).unwrap();
            fs::write(d.join("usage"), format!("{usage}\n")).unwrap();
            fs::write(d.join("time"), format!("{time}\n")).unwrap();
        }
        fs::create_dir_all(dir.path().join("cpufreq")).unwrap();
        let a = CpuIdle::read_from(dir.path()).unwrap();
        assert!(a.available);
        assert_eq!(a.states.len(), 3);
        assert_eq!(a.states[1].name, "C1");
        let mut b = a.clone();
        b.states[1].usage += 7;
        b.states[1].time_us += 70;
        let d = CpuIdle::delta(&a, &b);
        assert_eq!(d.states[1].usage, 7);
        assert_eq!(d.states[1].time_us, 70);
        assert_eq!(d.states[0].usage, 0);

        let empty = tempfile::tempdir().unwrap();
        assert!(!CpuIdle::read_from(empty.path()).unwrap().available);
    }

    #[test]
    fn thread_usage_counts_this_threads_cpu() {
        // Spin for 20 ms of this thread's own CPU time (the kernel's thread CPU
        // clock), not of wall time: under a parallel test run the thread may get
        // only part of a CPU, and a wall-time spin then proves nothing (a CI run
        // saw 5.6 ms of CPU in 20 ms of wall time).
        fn thread_cpu_ns() -> u64 {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: valid pointer; this clock exists on every Linux.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
        }
        let a = ThreadUsage::now();
        let c0 = thread_cpu_ns();
        let t0 = clock::now_ns();
        let mut x = 0u64;
        while thread_cpu_ns() - c0 < 20_000_000 && clock::now_ns() - t0 < 10_000_000_000 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let d = ThreadUsage::delta(&a, &ThreadUsage::now());
        assert!(
            d.user_ns + d.sys_ns >= 10_000_000,
            "20 ms of this thread's CPU time should show >= 10 ms in getrusage: {d:?}"
        );
    }

    #[test]
    fn live_snapshot_reads_proc() {
        let a = SystemSnapshot::take();
        let b = SystemSnapshot::take();
        let d = SystemDelta::between(&a, &b);
        assert!(d.stat.is_some(), "{:?}", d.missing);
        assert!(d.interrupts.is_some(), "{:?}", d.missing);
        assert!(a.disks.as_ref().is_some_and(|s| !s.disks.is_empty()));
    }
}
