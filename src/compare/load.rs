//! Reading one side of a comparison: a run JSON file (one round), a directory
//! of them (one per round), or a fleet host's directory (`jobs/<job>/roundN.json`
//! per job file, as deploy/ansible fetches them).
//!
//! Both producers write fio's JSON schema (`iolab run --output-format=json`
//! adds an `iolab` object; fio 3.x writes `fio version: fio-3.x`), so one
//! reader takes both. It reads the document as plain JSON rather than as
//! `report::model::RunResult`: fio leaves out keys iolab always writes, and
//! only the measured figures below matter here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::compare::stats::LatDist;

/// Why a side could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{}: {err}", path.display())]
    Read { path: PathBuf, err: std::io::Error },
    #[error(
        "{}: not JSON ({err}); give files written by `iolab run --output-format=json` or `fio --output-format=json` (json+ too)",
        path.display()
    )]
    Parse {
        path: PathBuf,
        err: serde_json::Error,
    },
    #[error(
        "{}: {what}; give files written by `iolab run --output-format=json` or `fio --output-format=json` (fio 3.x; json+ too)",
        path.display()
    )]
    NotRun { path: PathBuf, what: String },
    #[error(
        "{}: no round files in this directory (expected *.json written by `iolab run --output-format=json` or fio, one per round)",
        path.display()
    )]
    Empty { path: PathBuf },
}

/// fio's three directions.
pub const DIRS: [&str; 3] = ["read", "write", "trim"];

/// A job's identity across rounds and sides: the job file it came from (fleet
/// directories; empty otherwise), its name, and which of the jobs with that
/// name it is (numjobs without group_reporting repeats names).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobKey {
    pub file: String,
    pub name: String,
    pub index: usize,
}

impl std::fmt::Display for JobKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.file.is_empty() {
            write!(f, "{}:", self.file)?;
        }
        write!(f, "{}", self.name)?;
        if self.index > 0 {
            write!(f, "#{}", self.index + 1)?;
        }
        Ok(())
    }
}

/// One direction of one job in one round.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DirSample {
    pub iops: f64,
    pub bw_bytes: f64,
    /// Completion latency (clat), ns.
    pub clat_mean: Option<f64>,
    pub clat_stddev: f64,
    pub clat_n: u64,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub dist: Option<LatDist>,
}

/// One job in one round.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSample {
    pub key: JobKey,
    /// Global options overlaid with the job's own, as the document lists them.
    pub options: BTreeMap<String, String>,
    pub dirs: BTreeMap<&'static str, DirSample>,
    /// CPU time (user + system) per I/O, ns: (usr_cpu + sys_cpu) % of the
    /// job's runtime, over its I/Os in every direction.
    pub cpu_per_io: Option<f64>,
}

/// One run's document.
#[derive(Clone, Debug, PartialEq)]
pub struct Round {
    pub source: PathBuf,
    /// `fio version` as written: `fio-3.33`, `iolab-0.1.0`.
    pub producer: String,
    pub jobs: Vec<JobSample>,
}

/// One side: its rounds in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Side {
    pub path: PathBuf,
    pub rounds: Vec<Round>,
}

impl Side {
    pub fn producers(&self) -> Vec<String> {
        let mut p: Vec<String> = self.rounds.iter().map(|r| r.producer.clone()).collect();
        p.sort();
        p.dedup();
        p
    }
}

/// Read a side: a file, a directory of round files, or a fleet host's
/// directory.
pub fn load_side(path: &Path) -> Result<Side, LoadError> {
    let meta = std::fs::metadata(path).map_err(|err| LoadError::Read {
        path: path.to_path_buf(),
        err,
    })?;
    if meta.is_file() {
        return Ok(Side {
            path: path.to_path_buf(),
            rounds: vec![load_round(path, "")?],
        });
    }
    let jobs = path.join("jobs");
    if jobs.is_dir() {
        return load_host(path, &jobs);
    }
    let files = round_files(path)?;
    if files.is_empty() {
        return Err(LoadError::Empty {
            path: path.to_path_buf(),
        });
    }
    let rounds = files
        .iter()
        .map(|f| load_round(f, ""))
        .collect::<Result<_, _>>()?;
    Ok(Side {
        path: path.to_path_buf(),
        rounds,
    })
}

/// A fleet host: `jobs/<job file stem>/round<N>.json`. Round i of the side
/// holds round i of every job file, so each job keeps its own rounds.
fn load_host(path: &Path, jobs: &Path) -> Result<Side, LoadError> {
    let mut per_file: Vec<(String, Vec<PathBuf>)> = Vec::new();
    for e in read_dir_sorted(jobs)? {
        if e.is_dir() {
            let stem = e
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            per_file.push((stem, round_files(&e)?));
        }
    }
    let most = per_file.iter().map(|f| f.1.len()).max().unwrap_or(0);
    if most == 0 {
        return Err(LoadError::Empty {
            path: jobs.to_path_buf(),
        });
    }
    let mut rounds = Vec::with_capacity(most);
    for i in 0..most {
        let mut round = Round {
            source: jobs.to_path_buf(),
            producer: String::new(),
            jobs: Vec::new(),
        };
        for (stem, files) in &per_file {
            if let Some(f) = files.get(i) {
                let r = load_round(f, stem)?;
                round.producer = r.producer;
                round.jobs.extend(r.jobs);
            }
        }
        rounds.push(round);
    }
    Ok(Side {
        path: path.to_path_buf(),
        rounds,
    })
}

fn read_dir_sorted(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let rd = std::fs::read_dir(dir).map_err(|err| LoadError::Read {
        path: dir.to_path_buf(),
        err,
    })?;
    let mut v: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    v.sort_by_key(|p| natural_key(p));
    Ok(v)
}

/// round2.json before round10.json.
fn natural_key(p: &Path) -> (String, u64, String) {
    let name = p.file_name().unwrap_or_default().to_string_lossy();
    let stem = name.trim_end_matches(".json");
    let digits: String = stem
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let head = stem[..stem.len() - digits.len()].to_string();
    (head, digits.parse().unwrap_or(0), name.into_owned())
}

/// The *.json files of a directory that can be rounds (not a fleet host's
/// bookkeeping files).
pub fn round_files(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    Ok(read_dir_sorted(dir)?
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            p.is_file()
                && name.ends_with(".json")
                && !matches!(
                    name.as_ref(),
                    "host.json" | "topology.json" | "results.json"
                )
                && !name.starts_with("probe-")
        })
        .collect())
}

/// One document. fio may print warnings before its JSON (`fio: ...` lines on
/// stdout); the document starts at the first line that opens an object.
pub fn load_round(path: &Path, file: &str) -> Result<Round, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|err| LoadError::Read {
        path: path.to_path_buf(),
        err,
    })?;
    let start = if text.trim_start().starts_with('{') {
        0
    } else {
        text.find("\n{").map_or(0, |i| i + 1)
    };
    let doc: Value = serde_json::from_str(&text[start..]).map_err(|err| LoadError::Parse {
        path: path.to_path_buf(),
        err,
    })?;
    parse_round(&doc, path, file)
}

pub fn parse_round(doc: &Value, path: &Path, file: &str) -> Result<Round, LoadError> {
    let not_run = |what: &str| LoadError::NotRun {
        path: path.to_path_buf(),
        what: what.to_string(),
    };
    let jobs = doc
        .get("jobs")
        .and_then(Value::as_array)
        .ok_or_else(|| not_run("no `jobs` array (is this iolab lab or probe output?)"))?;
    let producer = doc
        .get("fio version")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_string();
    let global = strings(doc.get("global options"));
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::with_capacity(jobs.len());
    for (i, j) in jobs.iter().enumerate() {
        let name = j
            .get("jobname")
            .and_then(Value::as_str)
            .ok_or_else(|| not_run(&format!("job {} has no `jobname`", i + 1)))?
            .to_string();
        let index = seen.entry(name.clone()).or_default();
        let key = JobKey {
            file: file.to_string(),
            name,
            index: *index,
        };
        *index += 1;
        let mut options = global.clone();
        options.extend(strings(j.get("job options")));
        let mut dirs = BTreeMap::new();
        let mut ios = 0.0;
        for d in DIRS {
            let Some(v) = j.get(d) else { continue };
            let total = num(v.get("total_ios")).unwrap_or(0.0);
            ios += total;
            if total > 0.0 {
                dirs.insert(d, dir_sample(v));
            }
        }
        let cpu_per_io = match (
            num(j.get("usr_cpu")),
            num(j.get("sys_cpu")),
            num(j.get("job_runtime")),
        ) {
            (Some(u), Some(s), Some(rt)) if ios > 0.0 && rt > 0.0 => {
                Some((u + s) / 100.0 * rt * 1e6 / ios)
            }
            _ => None,
        };
        out.push(JobSample {
            key,
            options,
            dirs,
            cpu_per_io,
        });
    }
    Ok(Round {
        source: path.to_path_buf(),
        producer,
        jobs: out,
    })
}

fn strings(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let s = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                    (k.clone(), s)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn num(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64).filter(|x| x.is_finite())
}

fn dir_sample(v: &Value) -> DirSample {
    let mut s = DirSample {
        iops: num(v.get("iops")).unwrap_or(0.0),
        bw_bytes: num(v.get("bw_bytes"))
            .or_else(|| num(v.get("bw")).map(|k| k * 1024.0))
            .unwrap_or(0.0),
        ..Default::default()
    };
    let Some(clat) = v.get("clat_ns").filter(|c| c.is_object()) else {
        return s;
    };
    s.clat_n = num(clat.get("N")).unwrap_or(0.0) as u64;
    if s.clat_n == 0 {
        return s;
    }
    s.clat_mean = num(clat.get("mean"));
    s.clat_stddev = num(clat.get("stddev")).unwrap_or(0.0);
    let min = num(clat.get("min")).unwrap_or(0.0);
    let max = num(clat.get("max")).unwrap_or(min);
    let mut points: Vec<(f64, f64)> = clat
        .get("percentile")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.parse::<f64>().ok()? / 100.0, v.as_f64()?)))
                .collect()
        })
        .unwrap_or_default();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let listed = |p: f64| points.iter().find(|x| (x.0 - p).abs() < 1e-9).map(|x| x.1);
    let mut bins: Vec<(f64, u64)> = clat
        .get("bins")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.parse::<f64>().ok()?, v.as_u64()?)))
                .filter(|b| b.1 > 0)
                .collect()
        })
        .unwrap_or_default();
    bins.sort_by(|a, b| a.0.total_cmp(&b.0));
    s.dist = if !bins.is_empty() {
        Some(LatDist::Bins(bins))
    } else if !points.is_empty() {
        Some(LatDist::Percentiles {
            points: points.clone(),
            n: s.clat_n,
            min,
            max,
        })
    } else {
        None
    };
    // A percentile the document lists is taken as written; one it does not
    // (a custom percentile_list) is read off the bins when there are some.
    let from_bins = |p: f64| match &s.dist {
        Some(d @ LatDist::Bins(_)) => Some(d.inv_cdf(p)),
        _ => None,
    };
    s.p50 = listed(0.5).or_else(|| from_bins(0.5));
    s.p99 = listed(0.99).or_else(|| from_bins(0.99));
    s.p999 = listed(0.999).or_else(|| from_bins(0.999));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_fio_document_with_warnings_before_it() {
        let doc = r#"{"fio version":"fio-3.33","global options":{"bs":"4k"},
          "jobs":[{"jobname":"r","job options":{"rw":"randread"},"usr_cpu":10.0,"sys_cpu":30.0,"job_runtime":1000,
            "read":{"iops":1000.0,"bw_bytes":4096000,"total_ios":1000,
              "clat_ns":{"min":10,"max":90,"mean":20.0,"stddev":5.0,"N":1000,
                "percentile":{"50.000000":20,"99.000000":80,"99.900000":90},
                "bins":{"20":500,"10":400,"90":100}}},
            "write":{"iops":0,"bw_bytes":0,"total_ios":0}}]}"#;
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("fio.json");
        std::fs::write(&f, format!("fio: some warning\n{doc}")).unwrap();
        let r = load_round(&f, "").unwrap();
        assert_eq!(r.producer, "fio-3.33");
        let j = &r.jobs[0];
        assert_eq!(j.options["bs"], "4k");
        assert_eq!(j.options["rw"], "randread");
        assert_eq!(j.dirs.len(), 1, "write had no I/O");
        let d = &j.dirs["read"];
        assert_eq!((d.p50, d.p99, d.p999), (Some(20.0), Some(80.0), Some(90.0)));
        assert_eq!(
            d.dist,
            Some(LatDist::Bins(vec![(10.0, 400), (20.0, 500), (90.0, 100)]))
        );
        // 40% of 1 s of CPU over 1000 I/Os: 400 us each.
        assert_eq!(j.cpu_per_io, Some(400_000.0));
    }

    #[test]
    fn rejects_what_is_not_a_run() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x.json");
        std::fs::write(&f, r#"{"studies":[]}"#).unwrap();
        let e = load_round(&f, "").unwrap_err().to_string();
        assert!(e.contains("no `jobs` array"), "{e}");
        assert!(matches!(
            load_side(dir.path().join("none").as_path()),
            Err(LoadError::Read { .. })
        ));
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            load_side(empty.path()),
            Err(LoadError::Empty { .. })
        ));
    }

    #[test]
    fn rounds_sort_naturally() {
        let mut v = [
            PathBuf::from("round10.json"),
            PathBuf::from("round2.json"),
            PathBuf::from("round1.json"),
        ];
        v.sort_by_key(|p| natural_key(p));
        assert_eq!(v[0], PathBuf::from("round1.json"));
        assert_eq!(v[2], PathBuf::from("round10.json"));
    }
}
