//! /proc/interrupts: per-source, per-CPU interrupt counts.

use super::{CpuSourceError, Result, read_proc};

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
