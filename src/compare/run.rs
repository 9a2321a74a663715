//! `iolab compare --run`: the two variants run alternately on this machine.
//!
//! Each round runs `iolab run JOB... OPTS --output-format=json+` as a child
//! process of the current executable rather than calling the engine in this
//! process: every round then starts from the same state (no buffers, threads,
//! page-cache warmth or allocator state carried from the round before), its
//! JSON is exactly what `iolab run` prints for the user, and a variant that
//! fails (bad option, device error, crash) fails alone with its own message.
//! A process start costs a few milliseconds against rounds of hundreds.
//!
//! The order alternates A B, B A, A B, ...: whatever drifts over the run
//! (another tenant, thermal state, page cache) lands on both sides alike, and
//! neither side always goes first.

use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("--{which} '{opts}': {why}")]
    Opts {
        which: &'static str,
        opts: String,
        why: String,
    },
    #[error("cannot write {}: {err}", path.display())]
    Write { path: PathBuf, err: std::io::Error },
    #[error("cannot read {}: {why}", path.display())]
    Read { path: PathBuf, why: String },
    #[error("cannot start {}: {err}", exe.display())]
    Spawn { exe: PathBuf, err: std::io::Error },
    #[error("variant {variant}, round {round}: `iolab run {args}` failed ({status}):\n{stderr}")]
    Failed {
        variant: &'static str,
        round: usize,
        args: String,
        status: String,
        stderr: String,
    },
}

/// What to run: job files, the two variants' extra options, how many rounds.
#[derive(Clone, Debug)]
pub struct AbPlan {
    pub jobs: Vec<String>,
    pub a: Vec<String>,
    pub b: Vec<String>,
    pub rounds: usize,
    pub out: PathBuf,
}

/// Split a variant's options as a shell would (`--a '--null_lat=4us --bs=8k'`).
pub fn split_opts(which: &'static str, opts: &str) -> Result<Vec<String>, RunError> {
    let words = shlex::split(opts).ok_or_else(|| RunError::Opts {
        which,
        opts: opts.to_string(),
        why: "unbalanced quotes".into(),
    })?;
    if let Some(w) = words.iter().find(|w| !w.starts_with("--")) {
        return Err(RunError::Opts {
            which,
            opts: opts.to_string(),
            why: format!(
                "'{w}' is not an option; give fio options as --key=value (job files go after --run)"
            ),
        });
    }
    Ok(words)
}

/// The option names a variant sets: what the two sides may differ in.
pub fn option_names(opts: &[String]) -> Vec<String> {
    opts.iter()
        .map(|o| {
            let o = o.trim_start_matches('-');
            o.split_once('=').map_or(o, |(k, _)| k).to_string()
        })
        .collect()
}

/// The file in an A/B run's directory that names each variant's options.
pub const VARIANTS: &str = "variants.json";

/// The option names an A/B run's directory varied on purpose (from its
/// [`VARIANTS`] file; none when the directory has no such file).
pub fn varied_options(dir: &Path) -> Result<Vec<String>, RunError> {
    let path = dir.join(VARIANTS);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => {
            return Err(RunError::Read {
                path,
                why: err.to_string(),
            });
        }
    };
    let v: std::collections::BTreeMap<String, Vec<String>> =
        serde_json::from_str(&text).map_err(|e| RunError::Read {
            path: path.clone(),
            why: format!("{e} (want {{\"a\": [\"--key=value\", ...], \"b\": [...]}})"),
        })?;
    Ok(v.values().flat_map(|o| option_names(o)).collect())
}

/// Run the rounds, writing OUT/a/roundN.json and OUT/b/roundN.json (N from 1).
pub fn run_ab(exe: &Path, plan: &AbPlan, mut progress: impl FnMut(&str)) -> Result<(), RunError> {
    for v in ["a", "b"] {
        let dir = plan.out.join(v);
        std::fs::create_dir_all(&dir).map_err(|err| RunError::Write {
            path: dir.clone(),
            err,
        })?;
        // Rounds of an earlier run in the same directory would be read as
        // rounds of this one: remove them (only our own roundN.json files).
        let old = std::fs::read_dir(&dir).map_err(|err| RunError::Write {
            path: dir.clone(),
            err,
        })?;
        for e in old.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            let ours = name
                .strip_prefix("round")
                .and_then(|r| r.strip_suffix(".json"))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if ours {
                std::fs::remove_file(e.path()).map_err(|err| RunError::Write {
                    path: e.path(),
                    err,
                })?;
            }
        }
    }
    // The variants' options, so that comparing OUT again later allows the
    // differences the run made on purpose, as this run does.
    let variants = plan.out.join(VARIANTS);
    let names = serde_json::json!({ "a": &plan.a, "b": &plan.b });
    std::fs::write(&variants, format!("{names:#}\n")).map_err(|err| RunError::Write {
        path: variants,
        err,
    })?;
    for round in 1..=plan.rounds {
        let order: [(&'static str, &[String]); 2] = if round % 2 == 1 {
            [("a", &plan.a), ("b", &plan.b)]
        } else {
            [("b", &plan.b), ("a", &plan.a)]
        };
        for (variant, opts) in order {
            let mut args: Vec<String> = vec!["run".into()];
            args.extend(plan.jobs.iter().cloned());
            args.extend(opts.iter().cloned());
            // json+: the latency bins, for the CDFs and for one-round fallbacks.
            args.push("--output-format=json+".into());
            progress(&format!("round {round}/{}: {variant}", plan.rounds));
            let out = Command::new(exe)
                .args(&args)
                .output()
                .map_err(|err| RunError::Spawn {
                    exe: exe.to_path_buf(),
                    err,
                })?;
            if !out.status.success() {
                return Err(RunError::Failed {
                    variant,
                    round,
                    args: args[1..].join(" "),
                    status: out.status.to_string(),
                    stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
                });
            }
            let path = plan.out.join(variant).join(format!("round{round}.json"));
            std::fs::write(&path, &out.stdout).map_err(|err| RunError::Write { path, err })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variant_options_split_like_a_shell() {
        let v = split_opts("a", "--null_lat=4us  --name='x y'").unwrap();
        assert_eq!(v, vec!["--null_lat=4us", "--name=x y"]);
        assert_eq!(option_names(&v), vec!["null_lat", "name"]);
        let e = split_opts("b", "null_lat=4us").unwrap_err().to_string();
        assert!(
            e.contains("--b 'null_lat=4us'") && e.contains("--key=value"),
            "{e}"
        );
        assert!(split_opts("a", "--x='y").is_err());
    }
}
