//! The fleet: what `iolab probe`, `iolab topology` and `iolab lab` produced on
//! several hosts, gathered in one directory (by `deploy/ansible`, or by hand),
//! read back for `iolab report --fleet DIR`.
//!
//! Layout: one subdirectory per host, named as the inventory names the host
//! (two hosts may share a machine, so the hostname inside the results is not
//! the key):
//!
//! ```text
//! DIR/HOST/host.json       what the playbook asked for and how it ended (HostRecord)
//! DIR/HOST/results.json    iolab lab's results
//! DIR/HOST/topology.json   iolab topology --json
//! DIR/HOST/probe-*.json    iolab probe --json, one per target
//! ```
//!
//! Every file is optional: a host that failed half-way is shown with what it
//! left. Whatever cannot be read is a [`HostProblem`] on that host, shown in
//! the report: a host is never silently dropped. Results of another iolab
//! version or schema are read as far as they go (machine, then study by study).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::report::load::{LoadError, load_results};
use crate::report::study::{LabResults, Machine, StudyResult};

/// Files the playbook writes into a host's directory.
pub const RECORD_FILE: &str = "host.json";
pub const RESULTS_FILE: &str = "results.json";
pub const TOPOLOGY_FILE: &str = "topology.json";
/// Probe outputs are `probe-<anything>.json`.
pub const PROBE_PREFIX: &str = "probe-";

/// Why the fleet directory as a whole could not be read (problems of one host
/// are [`HostProblem`]s instead, and do not stop the report).
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error(
        "cannot read the fleet directory {}: {err}; pass the directory the playbook fetched results into (iolab_fleet_dir)",
        dir.display()
    )]
    ReadDir { dir: PathBuf, err: std::io::Error },
    #[error(
        "{} holds no host: expected one subdirectory per host with host.json, results.json, topology.json or probe-*.json (as deploy/ansible writes them)",
        .0.display()
    )]
    NoHosts(PathBuf),
}

/// What could not be read for one host; shown on that host's row.
#[derive(Debug, thiserror::Error)]
pub enum HostProblem {
    #[error("{0}")]
    Results(#[from] LoadError),
    #[error(
        "{} is from another iolab schema ({err}); shown as far as it could be read",
        file.display()
    )]
    Schema {
        file: PathBuf,
        err: serde_json::Error,
    },
    #[error(
        "{}: study #{index} ({id}) does not match this iolab's format ({err}); not shown",
        file.display()
    )]
    Study {
        file: PathBuf,
        index: usize,
        id: String,
        err: serde_json::Error,
    },
    #[error("cannot read {}: {err}", file.display())]
    Read { file: PathBuf, err: std::io::Error },
    #[error(
        "{} is not what `{command}` writes ({err}); rerun it with this iolab",
        file.display()
    )]
    Format {
        file: PathBuf,
        command: &'static str,
        err: serde_json::Error,
    },
}

/// How the playbook's run ended on a host.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RecordStatus {
    Ok,
    Failed,
    /// The host could not be reached (or never wrote a record).
    Unreachable,
}

/// `host.json`: what was asked of the host and how it ended.
#[derive(Clone, Debug, Deserialize)]
pub struct HostRecord {
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub host: String,
    pub status: RecordStatus,
    /// The playbook task that failed.
    #[serde(default)]
    pub failed_task: Option<String>,
    /// Its error: iolab's own message where iolab failed.
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub studies: Vec<String>,
    #[serde(default)]
    pub quick: Option<bool>,
    #[serde(default)]
    pub targets: Vec<String>,
}

/// The part of `iolab topology --json` the fleet view shows.
#[derive(Clone, Debug, Deserialize)]
pub struct TopologyView {
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub packages: u32,
    pub cores: Vec<CoreView>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct CoreView {
    pub cpus: Vec<u32>,
}

impl TopologyView {
    pub fn threads(&self) -> usize {
        self.cores.iter().map(|c| c.cpus.len()).sum()
    }
    /// Hardware threads per core where it is the same for every core.
    pub fn smt(&self) -> Option<usize> {
        let first = self.cores.first()?.cpus.len();
        self.cores
            .iter()
            .all(|c| c.cpus.len() == first)
            .then_some(first)
    }
}

/// The part of `iolab probe --json` the fleet view shows.
#[derive(Clone, Debug, Deserialize)]
pub struct ProbeView {
    pub given: PathBuf,
    #[serde(default)]
    pub fs_type: Option<String>,
    pub machine: ProbeMachine,
    pub read: ProbeOp,
    #[serde(default)]
    pub write: Option<ProbeOp>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct ProbeMachine {
    pub wakeup_ns: u64,
    pub clock_cost_ns: f64,
}

#[derive(Clone, Debug, Deserialize)]
pub struct ProbeOp {
    pub direct: bool,
    pub rows: Vec<ProbeRow>,
    pub recommendation: Option<ProbeRecommendation>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct ProbeRow {
    pub model: String,
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub label: String,
    pub iops: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub cpu_all_ns_per_io: f64,
    /// What the adaptive model chose per size class, and why (adaptive's row).
    #[serde(default)]
    pub adaptive: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct ProbeRecommendation {
    pub model: String,
    pub label: String,
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub reason: String,
    pub rule: String,
    #[serde(default)]
    pub cheapest: Option<String>,
}

impl ProbeOp {
    /// What the adaptive model chose there, when it ran.
    pub fn adaptive_choice(&self) -> Option<String> {
        let r = self.rows.iter().find(|r| r.model == "adaptive")?;
        (!r.adaptive.is_empty()).then(|| r.adaptive.join("; "))
    }

    /// The measured row of the recommended model.
    pub fn recommended_row(&self) -> Option<&ProbeRow> {
        let rec = self.recommendation.as_ref()?;
        self.rows.iter().find(|r| r.model == rec.model)
    }
}

/// One probe output file of a host.
#[derive(Debug)]
pub struct HostProbe {
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub file: PathBuf,
    pub probe: ProbeView,
}

/// Lab results as far as they could be read.
#[derive(Debug, Default)]
pub struct HostResults {
    pub iolab_version: String,
    /// `None` when the machine block itself did not read.
    pub machine: Option<Machine>,
    pub quick: Option<bool>,
    pub studies: Vec<StudyResult>,
    /// Studies `iolab lab` could not run there, as (study, reason).
    pub not_run: Vec<(String, String)>,
    /// Read completely with this iolab's schema.
    pub complete: bool,
}

impl From<LabResults> for HostResults {
    fn from(r: LabResults) -> Self {
        HostResults {
            iolab_version: r.iolab_version,
            machine: Some(r.machine),
            quick: Some(r.quick),
            studies: r.studies,
            not_run: r.not_run.into_iter().map(|k| (k.part, k.reason)).collect(),
            complete: true,
        }
    }
}

/// Everything known about one host.
#[derive(Debug)]
pub struct FleetHost {
    /// The inventory name (the directory's name).
    pub name: String,
    pub record: Option<HostRecord>,
    pub results: Option<HostResults>,
    pub topology: Option<TopologyView>,
    pub probes: Vec<HostProbe>,
    pub problems: Vec<HostProblem>,
}

/// How a host ended, as the report says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostState {
    /// Everything asked for is here.
    Ok,
    /// The run failed: the task and its error.
    Failed {
        task: String,
        error: String,
    },
    Unreachable {
        error: String,
    },
    /// No record from the playbook: results gathered by hand.
    Unrecorded,
}

impl FleetHost {
    pub fn state(&self) -> HostState {
        let Some(r) = &self.record else {
            return HostState::Unrecorded;
        };
        let error = r.error.clone().unwrap_or_default();
        match r.status {
            RecordStatus::Ok => HostState::Ok,
            RecordStatus::Failed => HostState::Failed {
                task: r.failed_task.clone().unwrap_or_default(),
                error,
            },
            RecordStatus::Unreachable => HostState::Unreachable { error },
        }
    }

    /// The iolab version the results came from, where it differs from this one.
    pub fn other_version(&self) -> Option<&str> {
        let v = self.results.as_ref()?.iolab_version.as_str();
        (v != env!("CARGO_PKG_VERSION")).then_some(v)
    }

    /// Wakeup cost in ns: the lab's measurement, else the probe's.
    pub fn wakeup_ns(&self) -> Option<u64> {
        let lab = self
            .results
            .as_ref()
            .and_then(|r| r.machine.as_ref())
            .map(|m| m.wakeup_cost_ns)
            .filter(|w| *w > 0);
        lab.or_else(|| self.probes.first().map(|p| p.probe.machine.wakeup_ns))
    }

    /// Cost of one clock reading in ns: the lab's, else the probe's.
    pub fn clock_ns(&self) -> Option<f64> {
        let lab = self
            .results
            .as_ref()
            .and_then(|r| r.machine.as_ref())
            .map(|m| m.clock_cost_ns)
            .filter(|c| c.is_finite() && *c > 0.0);
        lab.or_else(|| self.probes.first().map(|p| p.probe.machine.clock_cost_ns))
    }
}

/// Every host of a fleet directory, by name.
#[derive(Debug)]
pub struct Fleet {
    pub dir: PathBuf,
    pub hosts: Vec<FleetHost>,
}

/// Read a fleet directory (see the module's doc for its layout).
pub fn load_fleet(dir: &Path) -> Result<Fleet, FleetError> {
    let read_dir = |d: &Path| {
        std::fs::read_dir(d).map_err(|err| FleetError::ReadDir {
            dir: d.to_path_buf(),
            err,
        })
    };
    let mut hosts = Vec::new();
    for e in read_dir(dir)? {
        let e = e.map_err(|err| FleetError::ReadDir {
            dir: dir.to_path_buf(),
            err,
        })?;
        let path = e.path();
        if !path.is_dir() {
            continue;
        }
        let mut files: Vec<PathBuf> = read_dir(&path)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        files.sort();
        let named = |n: &str| files.iter().any(|f| f.file_name().is_some_and(|f| f == n));
        let probes: Vec<&PathBuf> = files.iter().filter(|f| is_probe_file(f)).collect();
        if !named(RECORD_FILE) && !named(RESULTS_FILE) && !named(TOPOLOGY_FILE) && probes.is_empty()
        {
            // Not a host: e.g. the report's own output directory.
            continue;
        }
        let name = e.file_name().to_string_lossy().into_owned();
        hosts.push(load_host(name, &path, &probes));
    }
    if hosts.is_empty() {
        return Err(FleetError::NoHosts(dir.to_path_buf()));
    }
    hosts.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Fleet {
        dir: dir.to_path_buf(),
        hosts,
    })
}

fn is_probe_file(f: &Path) -> bool {
    f.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(PROBE_PREFIX) && n.ends_with(".json"))
}

fn load_host(name: String, dir: &Path, probes: &[&PathBuf]) -> FleetHost {
    let mut problems = Vec::new();
    let record = read_typed::<HostRecord>(&dir.join(RECORD_FILE), "the fleet playbook")
        .unwrap_or_else(|p| {
            problems.extend(p);
            None
        });
    let topology = read_typed::<TopologyView>(&dir.join(TOPOLOGY_FILE), "iolab topology --json")
        .unwrap_or_else(|p| {
            problems.extend(p);
            None
        });
    let results_file = dir.join(RESULTS_FILE);
    let results = if results_file.is_file() {
        match load_results(&results_file) {
            Ok(r) => Some(HostResults::from(r)),
            Err(LoadError::Format { file, err }) => {
                problems.push(HostProblem::Schema {
                    file: file.clone(),
                    err,
                });
                Some(read_lenient(&file, &mut problems))
            }
            Err(e) => {
                problems.push(e.into());
                None
            }
        }
    } else {
        None
    };
    let mut host_probes = Vec::new();
    for f in probes {
        match read_typed::<ProbeView>(f, "iolab probe --json") {
            Ok(Some(probe)) => host_probes.push(HostProbe {
                file: f.to_path_buf(),
                probe,
            }),
            Ok(None) => {}
            Err(p) => problems.extend(p),
        }
    }
    FleetHost {
        name,
        record,
        results,
        topology,
        probes: host_probes,
        problems,
    }
}

/// `Ok(None)` when the file does not exist.
fn read_typed<T: serde::de::DeserializeOwned>(
    file: &Path,
    command: &'static str,
) -> Result<Option<T>, Option<HostProblem>> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => {
            return Err(Some(HostProblem::Read {
                file: file.to_path_buf(),
                err,
            }));
        }
    };
    serde_json::from_str(&text).map(Some).map_err(|err| {
        Some(HostProblem::Format {
            file: file.to_path_buf(),
            command,
            err,
        })
    })
}

/// Results of another schema: the top level with every part optional, each
/// part then read on its own so one mismatch loses only that part.
#[derive(Deserialize, Default)]
#[serde(default)]
struct LenientResults {
    iolab_version: Option<serde_json::Value>,
    machine: Option<serde_json::Value>,
    quick: Option<bool>,
    studies: Vec<serde_json::Value>,
}

/// Enough of a study to name it when the rest does not read.
#[derive(Deserialize, Default)]
#[serde(default)]
struct StudyName {
    id: String,
}

fn read_lenient(file: &Path, problems: &mut Vec<HostProblem>) -> HostResults {
    // load_results read and parsed this file a moment ago; a failure now is
    // reported like any other.
    let parsed = std::fs::read_to_string(file)
        .map_err(|err| HostProblem::Read {
            file: file.to_path_buf(),
            err,
        })
        .and_then(|t| {
            serde_json::from_str::<LenientResults>(&t).map_err(|err| HostProblem::Schema {
                file: file.to_path_buf(),
                err,
            })
        });
    let l = match parsed {
        Ok(l) => l,
        Err(p) => {
            problems.push(p);
            return HostResults::default();
        }
    };
    let mut out = HostResults {
        iolab_version: l
            .iolab_version
            .and_then(|v| serde_json::from_value::<String>(v).ok())
            .unwrap_or_default(),
        machine: l
            .machine
            .and_then(|v| serde_json::from_value::<Machine>(v).ok()),
        quick: l.quick,
        ..Default::default()
    };
    for (index, v) in l.studies.into_iter().enumerate() {
        let id = serde_json::from_value::<StudyName>(v.clone())
            .map(|n| n.id)
            .unwrap_or_default();
        match serde_json::from_value::<StudyResult>(v) {
            Ok(s) => out.studies.push(s),
            Err(err) => problems.push(HostProblem::Study {
                file: file.to_path_buf(),
                index,
                id: if id.is_empty() { "no id".into() } else { id },
                err,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::study::{Comparison, LabResults};

    fn write(dir: &Path, host: &str, file: &str, text: &str) {
        let d = dir.join(host);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(file), text).unwrap();
    }

    fn results(host: &str, version: &str) -> String {
        let r = LabResults {
            schema_version: crate::report::study::LAB_SCHEMA_VERSION.into(),
            iolab_version: version.into(),
            machine: Machine {
                hostname: host.into(),
                cpus: 4,
                wakeup_cost_ns: 12_000,
                clock_cost_ns: 20.0,
                ..Default::default()
            },
            quick: true,
            studies: vec![StudyResult {
                id: "poll".into(),
                comparisons: vec![Comparison {
                    what: "4 KiB read latency, poll".into(),
                    ours: 4.0,
                    unit: "us".into(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            not_run: vec![],
        };
        serde_json::to_string(&r).unwrap()
    }

    #[test]
    fn hosts_failures_and_other_versions_are_all_kept() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        write(
            dir,
            "b-ok",
            RESULTS_FILE,
            &results("b", env!("CARGO_PKG_VERSION")),
        );
        write(
            dir,
            "b-ok",
            RECORD_FILE,
            r#"{"host":"b-ok","status":"ok","studies":["poll"],"quick":true,"targets":[]}"#,
        );
        write(
            dir,
            "a-failed",
            RECORD_FILE,
            r#"{"host":"a-failed","status":"failed","failed_task":"probe /nope","error":"iolab: error: /nope: no such file or directory"}"#,
        );
        write(dir, "c-old", RESULTS_FILE, &results("c", "0.0.1"));
        // Another schema: machine.cpus is text, one study is not a study.
        write(
            dir,
            "d-schema",
            RESULTS_FILE,
            r#"{"iolab_version":"9.0","machine":{"cpus":"four"},"quick":false,
               "studies":[{"id":"poll","seed":"000","title":"t","setup":[],"tables":[],"comparisons":[],"charts":[],"verdict":[],"skipped":[],"duration_s":1.0},
                          {"id":"laq","charts":"none"}]}"#,
        );
        write(dir, "e-junk", TOPOLOGY_FILE, "not json");
        std::fs::create_dir_all(dir.join("report")).unwrap();
        std::fs::write(dir.join("report/index.html"), "<html>").unwrap();

        let f = load_fleet(dir).unwrap();
        let names: Vec<&str> = f.hosts.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["a-failed", "b-ok", "c-old", "d-schema", "e-junk"]);

        let a = &f.hosts[0];
        assert!(matches!(
            a.state(),
            HostState::Failed { ref task, ref error } if task == "probe /nope" && error.contains("no such file")
        ));
        assert!(a.results.is_none());

        let b = &f.hosts[1];
        assert_eq!(b.state(), HostState::Ok);
        assert_eq!(b.other_version(), None);
        assert_eq!(b.wakeup_ns(), Some(12_000));
        assert!(b.results.as_ref().unwrap().complete);

        let c = &f.hosts[2];
        assert_eq!(c.state(), HostState::Unrecorded);
        assert_eq!(c.other_version(), Some("0.0.1"));
        assert_eq!(c.results.as_ref().unwrap().studies.len(), 1);

        let d4 = &f.hosts[3];
        let r = d4.results.as_ref().unwrap();
        assert!(!r.complete);
        assert_eq!(r.iolab_version, "9.0");
        assert!(r.machine.is_none());
        assert_eq!(r.studies.len(), 1, "the study that reads is kept");
        let msgs: Vec<String> = d4.problems.iter().map(|p| p.to_string()).collect();
        assert!(
            msgs.iter().any(|m| m.contains("another iolab schema")),
            "{msgs:?}"
        );
        assert!(
            msgs.iter().any(|m| m.contains("study #1 (laq)")),
            "{msgs:?}"
        );

        let e = &f.hosts[4];
        assert!(e.problems[0].to_string().contains("iolab topology --json"));
    }

    #[test]
    fn an_empty_or_missing_directory_is_an_error_that_says_what_to_pass() {
        let d = tempfile::tempdir().unwrap();
        let e = load_fleet(d.path()).unwrap_err().to_string();
        assert!(e.contains("holds no host"), "{e}");
        let e = load_fleet(&d.path().join("nope")).unwrap_err().to_string();
        assert!(e.contains("iolab_fleet_dir"), "{e}");
    }

    #[test]
    fn topology_counts_cores_and_smt() {
        let t: TopologyView = serde_json::from_str(
            r#"{"source":"x","packages":1,"cores":[{"package":0,"core_id":0,"cpus":[0,2]},{"package":0,"core_id":1,"cpus":[1,3]}],"offline":[]}"#,
        )
        .unwrap();
        assert_eq!((t.cores.len(), t.threads(), t.smt()), (2, 4, Some(2)));
    }
}
