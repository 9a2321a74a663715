//! CPU topology: packages, physical cores and their logical CPUs (SMT siblings).
//!
//! Read from sysfs (`/sys/devices/system/cpu`, or any root with the same shape so
//! tests can use fixture trees), or from a topology file for synthetic machines and
//! what-if runs. A physical core is identified by its set of sibling CPUs, not by
//! `core_id`: `core_id` repeats across packages (and dies), sibling lists do not.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Where sysfs keeps CPU topology on Linux.
pub const SYSFS_CPU_ROOT: &str = "/sys/devices/system/cpu";

/// One physical core and the logical CPUs (hardware threads) it runs.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Core {
    pub package: u32,
    /// `core_id` as the kernel (or the topology file) reports it; unique only within
    /// a package.
    pub core_id: u32,
    /// Online logical CPUs of this core, ascending.
    pub cpus: Vec<u32>,
}

/// The machine as placement sees it. Cores are ordered by their first CPU.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Topology {
    /// Where this came from (a sysfs root or a file), for reports.
    pub source: String,
    pub packages: u32,
    pub cores: Vec<Core>,
    /// Logical CPUs that exist but are offline (never placed on).
    #[serde(default)]
    pub offline: Vec<u32>,
}

#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    // The io::Error is in the message and deliberately not a `source`: error
    // chains printed with `{:#}` would say it twice.
    #[error("{path}: {err}")]
    Read { path: PathBuf, err: std::io::Error },
    #[error("{path}: {msg}")]
    Parse { path: PathBuf, msg: String },
    #[error("{file}:{line}: {msg}")]
    File {
        file: String,
        line: usize,
        msg: String,
    },
    #[error("{0}")]
    Invalid(String),
}

/// What is wrong with a kernel-style CPU list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuListError {
    #[error("`{item}` in CPU list `{list}` is not a CPU number")]
    NotANumber { item: String, list: String },
    #[error("range `{range}` in CPU list `{list}` runs backwards")]
    Backwards { range: String, list: String },
    #[error("range `{range}` in CPU list `{list}` is implausibly large")]
    TooLarge { range: String, list: String },
}

/// Parse a kernel CPU list such as `0-3,8,10-11` (empty = no CPUs).
pub fn parse_cpu_list(s: &str) -> Result<Vec<u32>, CpuListError> {
    let mut out = Vec::new();
    let s = s.trim();
    if s.is_empty() {
        return Ok(out);
    }
    for part in s.split(',') {
        let part = part.trim();
        let num = |t: &str| {
            t.trim()
                .parse::<u32>()
                .map_err(|_| CpuListError::NotANumber {
                    item: t.to_string(),
                    list: s.to_string(),
                })
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(CpuListError::Backwards {
                        range: part.to_string(),
                        list: s.to_string(),
                    });
                }
                if b - a > 65_535 {
                    return Err(CpuListError::TooLarge {
                        range: part.to_string(),
                        list: s.to_string(),
                    });
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// What is wrong with a `packages=P cores=C threads=T` shape line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ShapeError {
    #[error("`{0}` is not key=value")]
    NotKeyValue(String),
    #[error("{key}=`{value}`: expected a positive number")]
    NotPositive { key: String, value: String },
    #[error(
        "numbering=`{0}`: valid are spread (cpu i and i+cores*packages are siblings, Intel's \
         order) or adjacent (siblings numbered consecutively)"
    )]
    Numbering(String),
    #[error("unknown key `{0}` (valid: packages, cores, threads, numbering, offline)")]
    UnknownKey(String),
    #[error("missing cores=N (physical cores per package)")]
    MissingCores,
    #[error("{0} logical CPUs is more than iolab supports (4096)")]
    TooMany(u64),
    #[error(transparent)]
    CpuList(#[from] CpuListError),
}

/// Format CPUs the way the kernel does (`0-3,8`).
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        let mut end = start;
        while i + 1 < v.len() && v[i + 1] == end + 1 {
            i += 1;
            end = v[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if end == start {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
        i += 1;
    }
    out
}

fn read_trim(path: &Path) -> Result<String, TopologyError> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|err| TopologyError::Read {
            path: path.to_path_buf(),
            err,
        })
}

fn read_list(path: &Path) -> Result<Vec<u32>, TopologyError> {
    let s = read_trim(path)?;
    parse_cpu_list(&s).map_err(|e| TopologyError::Parse {
        path: path.to_path_buf(),
        msg: e.to_string(),
    })
}

impl Topology {
    /// This machine, from `/sys/devices/system/cpu`.
    pub fn from_system() -> Result<Topology, TopologyError> {
        Self::from_sysfs(Path::new(SYSFS_CPU_ROOT))
    }

    /// Read a sysfs-shaped tree rooted at `root` (the directory holding `online`
    /// and `cpuN/`).
    pub fn from_sysfs(root: &Path) -> Result<Topology, TopologyError> {
        let online = read_list(&root.join("online"))?;
        if online.is_empty() {
            return Err(TopologyError::Parse {
                path: root.join("online"),
                msg: "no online CPUs listed".into(),
            });
        }
        // `present` (or `possible`) minus online = offline; `offline` itself may be
        // missing in trimmed trees.
        let offline = if root.join("offline").exists() {
            read_list(&root.join("offline"))?
        } else if root.join("present").exists() {
            read_list(&root.join("present"))?
                .into_iter()
                .filter(|c| !online.contains(c))
                .collect()
        } else {
            Vec::new()
        };
        let mut by_siblings: BTreeMap<Vec<u32>, (u32, u32)> = BTreeMap::new();
        for &cpu in &online {
            let dir = root.join(format!("cpu{cpu}")).join("topology");
            let package = read_trim(&dir.join("physical_package_id"))?;
            // Some architectures report -1 when the firmware does not say.
            let package: u32 = match package.parse::<i64>() {
                Ok(p) if p < 0 => 0,
                Ok(p) => p as u32,
                Err(_) => {
                    return Err(TopologyError::Parse {
                        path: dir.join("physical_package_id"),
                        msg: format!("`{package}` is not a number"),
                    });
                }
            };
            let core_s = read_trim(&dir.join("core_id"))?;
            let core_id: u32 = core_s.parse().map_err(|_| TopologyError::Parse {
                path: dir.join("core_id"),
                msg: format!("`{core_s}` is not a number"),
            })?;
            // core_cpus_list is the current name; thread_siblings_list the old one.
            let sib_path = if dir.join("core_cpus_list").exists() {
                dir.join("core_cpus_list")
            } else {
                dir.join("thread_siblings_list")
            };
            let mut siblings: Vec<u32> = read_list(&sib_path)?
                .into_iter()
                .filter(|c| online.contains(c))
                .collect();
            if !siblings.contains(&cpu) {
                return Err(TopologyError::Parse {
                    path: sib_path,
                    msg: format!("sibling list does not contain cpu{cpu} itself"),
                });
            }
            siblings.sort_unstable();
            if let Some(&(p, c)) = by_siblings.get(&siblings)
                && (p != package || c != core_id)
            {
                return Err(TopologyError::Invalid(format!(
                    "{}: cpus {} are siblings but report different package/core ids",
                    root.display(),
                    format_cpu_list(&siblings)
                )));
            }
            by_siblings.insert(siblings, (package, core_id));
        }
        let cores = by_siblings
            .into_iter()
            .map(|(cpus, (package, core_id))| Core {
                package,
                core_id,
                cpus,
            })
            .collect();
        Self::build(root.display().to_string(), cores, offline)
    }

    /// Validate and order: every online CPU in exactly one core.
    fn build(
        source: String,
        mut cores: Vec<Core>,
        offline: Vec<u32>,
    ) -> Result<Topology, TopologyError> {
        let mut seen = BTreeMap::new();
        for (i, core) in cores.iter_mut().enumerate() {
            core.cpus.sort_unstable();
            if core.cpus.is_empty() {
                return Err(TopologyError::Invalid(format!(
                    "{source}: core {i} has no online CPUs"
                )));
            }
            for &c in &core.cpus {
                if seen.insert(c, i).is_some() {
                    return Err(TopologyError::Invalid(format!(
                        "{source}: cpu{c} belongs to two cores"
                    )));
                }
                if offline.contains(&c) {
                    return Err(TopologyError::Invalid(format!(
                        "{source}: cpu{c} is listed both online and offline"
                    )));
                }
            }
        }
        if cores.is_empty() {
            return Err(TopologyError::Invalid(format!("{source}: no online CPUs")));
        }
        cores.sort_by_key(|c| c.cpus[0]);
        let mut pk: Vec<u32> = cores.iter().map(|c| c.package).collect();
        pk.sort_unstable();
        pk.dedup();
        let mut offline = offline;
        offline.sort_unstable();
        offline.dedup();
        Ok(Topology {
            source,
            packages: pk.len() as u32,
            cores,
            offline,
        })
    }

    /// Read a topology file (format in docs/placement.md): a shape line
    /// `packages=P cores=C threads=T [numbering=spread|adjacent] [offline=LIST]`, or
    /// one `core LIST [package=P]` line per physical core, or the JSON that
    /// `iolab topology --json` prints.
    pub fn from_file(path: &Path) -> Result<Topology, TopologyError> {
        let text = std::fs::read_to_string(path).map_err(|err| TopologyError::Read {
            path: path.to_path_buf(),
            err,
        })?;
        Self::parse_text(&path.display().to_string(), &text)
    }

    /// Parse topology file content; `name` is used in error messages.
    pub fn parse_text(name: &str, text: &str) -> Result<Topology, TopologyError> {
        let err = |line: usize, msg: String| TopologyError::File {
            file: name.to_string(),
            line,
            msg,
        };
        // Validation errors name the file already; re-home them at the line.
        let prefix = format!("{name}: ");
        let at_line = |line: usize, e: TopologyError| match e {
            TopologyError::Invalid(m) => {
                err(line, m.strip_prefix(&prefix).unwrap_or(&m).to_string())
            }
            other => other,
        };
        if text.trim_start().starts_with('{') {
            let mut t: Topology = serde_json::from_str(text)
                .map_err(|e| err(e.line(), format!("not a topology JSON object: {e}")))?;
            t.source = name.to_string();
            return Self::build(t.source, t.cores, t.offline);
        }
        let mut shape: Option<(usize, Topology)> = None;
        let mut cores: Vec<Core> = Vec::new();
        let mut explicit_offline: Vec<u32> = Vec::new();
        let mut first_core_line = None;
        for (i, raw) in text.lines().enumerate() {
            let ln = i + 1;
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix("core ").or(line.strip_prefix("core\t")) {
                first_core_line.get_or_insert(ln);
                let mut words = rest.split_whitespace();
                let list = words
                    .next()
                    .ok_or_else(|| err(ln, "`core` needs a CPU list, e.g. `core 0,4`".into()))?;
                let cpus = parse_cpu_list(list).map_err(|m| err(ln, m.to_string()))?;
                if cpus.is_empty() {
                    return Err(err(ln, "`core` needs at least one CPU".into()));
                }
                let mut package = 0;
                for w in words {
                    match w.split_once('=') {
                        Some(("package", v)) => {
                            package = v
                                .parse()
                                .map_err(|_| err(ln, format!("package=`{v}` is not a number")))?;
                        }
                        _ => {
                            return Err(err(
                                ln,
                                format!("unknown word `{w}` (valid after the CPU list: package=N)"),
                            ));
                        }
                    }
                }
                let core_id = cores.iter().filter(|c| c.package == package).count() as u32;
                cores.push(Core {
                    package,
                    core_id,
                    cpus,
                });
            } else if let Some(rest) = line.strip_prefix("offline") {
                let list = rest.trim_start().trim_start_matches('=').trim();
                explicit_offline.extend(parse_cpu_list(list).map_err(|m| err(ln, m.to_string()))?);
            } else if line.contains('=') {
                if let Some((prev, _)) = shape {
                    return Err(err(
                        ln,
                        format!("second shape line (the first is line {prev})"),
                    ));
                }
                shape = Some((
                    ln,
                    Self::parse_shape(line).map_err(|m| err(ln, m.to_string()))?,
                ));
            } else {
                return Err(err(
                    ln,
                    format!(
                        "cannot read `{line}`: expected `packages=P cores=C threads=T`, \
                         `core LIST [package=P]` or `offline LIST`"
                    ),
                ));
            }
        }
        match (shape, first_core_line) {
            (Some((sl, _)), Some(cl)) => Err(err(
                cl,
                format!("`core` lines cannot be mixed with the shape line on line {sl}"),
            )),
            (Some((sl, mut t)), None) => {
                t.offline.extend(explicit_offline);
                let cores = t.cores.clone();
                let offline = t.offline.clone();
                // Offline CPUs leave their core; a core with none left is gone.
                let cores: Vec<Core> = cores
                    .into_iter()
                    .map(|mut c| {
                        c.cpus.retain(|x| !offline.contains(x));
                        c
                    })
                    .filter(|c| !c.cpus.is_empty())
                    .collect();
                Self::build(name.to_string(), cores, offline).map_err(|e| at_line(sl, e))
            }
            (None, Some(cl)) => {
                Self::build(name.to_string(), cores, explicit_offline).map_err(|e| at_line(cl, e))
            }
            (None, None) => Err(err(
                1,
                "empty topology file: expected `packages=P cores=C threads=T` or `core LIST` lines"
                    .into(),
            )),
        }
    }

    fn parse_shape(line: &str) -> Result<Topology, ShapeError> {
        let (mut packages, mut cores, mut threads) = (None, None, None);
        let mut adjacent = false;
        let mut offline = Vec::new();
        for w in line.split_whitespace() {
            let (k, v) = w
                .split_once('=')
                .ok_or_else(|| ShapeError::NotKeyValue(w.to_string()))?;
            let n = || {
                v.parse::<u32>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| ShapeError::NotPositive {
                        key: k.to_string(),
                        value: v.to_string(),
                    })
            };
            match k {
                "packages" => packages = Some(n()?),
                "cores" => cores = Some(n()?),
                "threads" => threads = Some(n()?),
                "numbering" => {
                    adjacent = match v {
                        "spread" => false,
                        "adjacent" => true,
                        _ => {
                            return Err(ShapeError::Numbering(v.to_string()));
                        }
                    }
                }
                "offline" => offline = parse_cpu_list(v)?,
                _ => {
                    return Err(ShapeError::UnknownKey(k.to_string()));
                }
            }
        }
        let packages = packages.unwrap_or(1);
        let cores_per = cores.ok_or(ShapeError::MissingCores)?;
        let threads = threads.unwrap_or(1);
        let total = packages as u64 * cores_per as u64 * threads as u64;
        if total > 4096 {
            return Err(ShapeError::TooMany(total));
        }
        let ncores = packages * cores_per;
        let mut list = Vec::new();
        for p in 0..packages {
            for c in 0..cores_per {
                let core_index = p * cores_per + c;
                let cpus = (0..threads)
                    .map(|t| {
                        if adjacent {
                            core_index * threads + t
                        } else {
                            t * ncores + core_index
                        }
                    })
                    .collect();
                list.push(Core {
                    package: p,
                    core_id: c,
                    cpus,
                });
            }
        }
        Ok(Topology {
            source: String::new(),
            packages,
            cores: list,
            offline,
        })
    }

    /// Online logical CPUs, ascending.
    pub fn cpus(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .cores
            .iter()
            .flat_map(|c| c.cpus.iter().copied())
            .collect();
        v.sort_unstable();
        v
    }

    pub fn num_cpus(&self) -> usize {
        self.cores.iter().map(|c| c.cpus.len()).sum()
    }

    /// True when at least one physical core runs more than one online logical CPU.
    pub fn has_smt(&self) -> bool {
        self.cores.iter().any(|c| c.cpus.len() > 1)
    }

    /// Index (into `cores`) of the physical core running `cpu`.
    pub fn core_of(&self, cpu: u32) -> Option<usize> {
        self.cores.iter().position(|c| c.cpus.contains(&cpu))
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let threads: Vec<usize> = self.cores.iter().map(|c| c.cpus.len()).collect();
        let tmax = threads.iter().copied().max().unwrap_or(0);
        writeln!(f, "source:         {}", self.source)?;
        writeln!(f, "packages:       {}", self.packages)?;
        writeln!(f, "physical cores: {}", self.cores.len())?;
        writeln!(
            f,
            "logical CPUs:   {} online ({}){}",
            self.num_cpus(),
            format_cpu_list(&self.cpus()),
            if self.offline.is_empty() {
                String::new()
            } else {
                format!(", offline {}", format_cpu_list(&self.offline))
            }
        )?;
        writeln!(
            f,
            "SMT:            {}",
            if self.has_smt() {
                format!("yes, up to {tmax} threads per core")
            } else {
                "no (one logical CPU per physical core): colocate/spread placements need SMT"
                    .to_string()
            }
        )?;
        writeln!(
            f,
            "{:<6} {:<8} {:<8} cpus (SMT siblings)",
            "core", "package", "core_id"
        )?;
        for (i, c) in self.cores.iter().enumerate() {
            writeln!(
                f,
                "{:<6} {:<8} {:<8} {}",
                i,
                c.package,
                c.core_id,
                format_cpu_list(&c.cpus)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_round_trip() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpu_list("").unwrap(), Vec::<u32>::new());
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
    }

    #[test]
    fn shape_spread_numbering_is_intel_order() {
        let t = Topology::parse_text("t", "packages=1 cores=4 threads=2").unwrap();
        assert_eq!(t.cores.len(), 4);
        assert_eq!(t.cores[0].cpus, vec![0, 4]);
        assert_eq!(t.cores[3].cpus, vec![3, 7]);
        assert!(t.has_smt());
        let a = Topology::parse_text("t", "cores=2 threads=2 numbering=adjacent").unwrap();
        assert_eq!(a.cores[1].cpus, vec![2, 3]);
    }
}
