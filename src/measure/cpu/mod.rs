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

mod disk;
mod idle;
mod interrupts;
mod rusage;
mod stat;

pub use disk::*;
pub use idle::*;
pub use interrupts::*;
pub use rusage::*;
pub use stat::*;

use crate::measure::clock;

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
