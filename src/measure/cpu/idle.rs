//! cpuidle: time and entries per idle state and CPU, from sysfs.

use std::fs;
use std::path::Path;

use super::{CpuSourceError, Result};

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
