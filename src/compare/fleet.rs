//! Fleet directories (one subdirectory per host, as deploy/ansible fetches
//! them, each with `jobs/<job>/roundN.json`): every host against a base host
//! for the same job, or a fleet before against the same fleet after, per host
//! and overall.

use std::path::{Path, PathBuf};

use crate::compare::analyze::{Settings, compare};
use crate::compare::load::{LoadError, Side, load_side};
use crate::compare::model::Comparison;

#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error("{}: {err}", dir.display())]
    Read { dir: PathBuf, err: std::io::Error },
    #[error(
        "{}: no host with job results (expected HOST/jobs/<job>/roundN.json, as deploy/ansible fetches them with iolab_jobs set)",
        .0.display()
    )]
    NoHosts(PathBuf),
    #[error("--base-host {name}: no such host in {}; hosts: {hosts}", dir.display())]
    NoBaseHost {
        name: String,
        dir: PathBuf,
        hosts: String,
    },
    #[error(transparent)]
    Load(#[from] LoadError),
}

/// A fleet host's directory with job results.
pub fn is_host(dir: &Path) -> bool {
    dir.join("jobs").is_dir()
}

/// Whether `dir` is a fleet: some subdirectory is a host with job results.
pub fn is_fleet(dir: &Path) -> bool {
    dir.is_dir()
        && !is_host(dir)
        && std::fs::read_dir(dir)
            .map(|rd| rd.filter_map(Result::ok).any(|e| is_host(&e.path())))
            .unwrap_or(false)
}

/// A fleet's hosts with job results (name, side), and notes on the others.
type Hosts = (Vec<(String, Side)>, Vec<String>);

/// The hosts of a fleet, sorted by name: (name, side) for those with job
/// results, and a note for each subdirectory that has none (a failed host).
fn hosts(dir: &Path) -> Result<Hosts, FleetError> {
    let rd = std::fs::read_dir(dir).map_err(|err| FleetError::Read {
        dir: dir.to_path_buf(),
        err,
    })?;
    let mut subdirs: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for p in subdirs {
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if is_host(&p) {
            out.push((name, load_side(&p)?));
        } else if p.join("host.json").is_file() {
            let why = std::fs::read_to_string(p.join("host.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .map(|v| {
                    let status = v.get("status").and_then(|s| s.as_str()).unwrap_or("?");
                    let err = v.get("error").and_then(|s| s.as_str()).unwrap_or("");
                    format!("{status} {err}").trim().to_string()
                })
                .unwrap_or_default();
            notes.push(format!(
                "{}: host {name} has no job results ({why})",
                dir.display()
            ));
        }
    }
    if out.is_empty() {
        return Err(FleetError::NoHosts(dir.to_path_buf()));
    }
    Ok((out, notes))
}

/// Every host against the base host (`base`, else the first by name).
pub fn host_vs_host(
    dir: &Path,
    base: Option<&str>,
    set: &Settings,
) -> Result<(Vec<Comparison>, Vec<String>), FleetError> {
    let (hosts, notes) = hosts(dir)?;
    let bi = match base {
        Some(b) => hosts
            .iter()
            .position(|h| h.0 == b)
            .ok_or_else(|| FleetError::NoBaseHost {
                name: b.to_string(),
                dir: dir.to_path_buf(),
                hosts: hosts
                    .iter()
                    .map(|h| h.0.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?,
        None => 0,
    };
    let (bname, bside) = &hosts[bi];
    let out = hosts
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != bi)
        .map(|(_, (name, side))| {
            compare(
                &format!("host {name} against host {bname}"),
                (bname, bside),
                (name, side),
                set,
            )
        })
        .collect();
    Ok((out, notes))
}

/// The same fleet before and after: per host, then every host's rounds
/// pooled per side (overall).
pub fn before_after(
    before: &Path,
    after: &Path,
    set: &Settings,
) -> Result<(Vec<Comparison>, Vec<String>), FleetError> {
    let (hb, mut notes) = hosts(before)?;
    let (ha, notes_a) = hosts(after)?;
    notes.extend(notes_a);
    let mut out = Vec::new();
    let mut pooled_b = Side {
        path: before.to_path_buf(),
        rounds: Vec::new(),
    };
    let mut pooled_a = Side {
        path: after.to_path_buf(),
        rounds: Vec::new(),
    };
    for (name, b) in &hb {
        let Some((_, a)) = ha.iter().find(|h| &h.0 == name) else {
            notes.push(format!(
                "host {name}: only in {} (not compared)",
                before.display()
            ));
            continue;
        };
        out.push(compare(
            &format!("host {name}: before against after"),
            ("before", b),
            ("after", a),
            set,
        ));
        pooled_b.rounds.extend(b.rounds.iter().cloned());
        pooled_a.rounds.extend(a.rounds.iter().cloned());
    }
    for (name, _) in &ha {
        if !hb.iter().any(|h| &h.0 == name) {
            notes.push(format!(
                "host {name}: only in {} (not compared)",
                after.display()
            ));
        }
    }
    let n = out.len();
    if n > 1 {
        out.insert(
            0,
            compare(
                &format!("fleet overall: {n} hosts, their rounds pooled per side"),
                ("before", &pooled_b),
                ("after", &pooled_a),
                set,
            ),
        );
    }
    Ok((out, notes))
}
