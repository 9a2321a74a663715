//! /proc/stat: per-CPU times, interrupt and context-switch totals.

use super::{CpuSourceError, Result, read_proc};

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
