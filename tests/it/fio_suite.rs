//! fio 3.33's own regression suite (`t/run-fio-tests.py`) run against iolab.
//!
//! The job-file tests (t0001-t0026) and the Python tests that take a fio path
//! (readonly, steadystate, strided, latency_percentiles, jsonplus2csv,
//! log_compression) run through a `fio` shim that is `exec iolab run "$@"`:
//! every argument reaches iolab unchanged. A test iolab fails is run again
//! with the real fio; if fio passes it here, iolab must too, unless
//! docs/fio-compat.md's "fio's test suite" section lists the test with a
//! reason. (Tests iolab passes need no fio run; tests fio fails here, e.g.
//! for want of CPUs or SciPy, prove nothing either way.)
//!
//! fio's source comes from Debian (`apt-get source fio`, which `.ci/run`
//! does into target/fio-source/), or from `IOLAB_FIO_SOURCE`.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::needs::{Need, ready, skip};

/// The suite's tests that run on Linux without fio's compiled helpers
/// (t/axmap, t/lfsr-test, unittests and the zbd scripts are fio's own C code).
const TESTS: &[u32] = &[
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26,
    1003, 1004, 1006, 1010, 1011, 1012,
];

/// Longest a single test may take (fio's harness allows 600 s; its jobs are
/// small, and t0010 under fio 3.33 hangs until fio's own watchdog).
const PER_TEST: Duration = Duration::from_secs(120);

#[derive(Clone, Debug, PartialEq)]
enum Verdict {
    Passed,
    Failed(String),
    Skipped(String),
}

/// fio 3.33's source tree: `IOLAB_FIO_SOURCE`, or what `.ci/run` unpacks
/// into target/fio-source/ (its `t/` holds the suite and `t/jobs`).
pub fn fio_source() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("IOLAB_FIO_SOURCE") {
        return Some(PathBuf::from(p));
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fio-source");
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.is_dir() && p.join("t/run-fio-tests.py").exists())
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

/// Debian's interpreter when there is one: it has the SciPy, statsmodels
/// and pandas that fio's Python tests import (`.ci/run` installs them), where
/// a `python3` earlier on PATH (pyenv's, a venv's) may not.
const DEBIAN_PYTHON: &str = "/usr/bin/python3";

/// A directory holding `python3` -> Debian's interpreter, to put first on
/// PATH: fio's scripts start with `#!/usr/bin/env python3`, and the harness
/// runs them by that line. `None` when there is no Debian interpreter.
fn python_dir(root: &Path) -> Option<PathBuf> {
    if !Path::new(DEBIAN_PYTHON).exists() {
        return None;
    }
    let dir = root.join("python-bin");
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("python3");
    if !link.exists() {
        std::os::unix::fs::symlink(DEBIAN_PYTHON, &link).unwrap();
    }
    Some(dir)
}

/// Runs one test of the harness with `fio`; the harness prints
/// `Test N PASSED|FAILED: why|SKIPPED (why)`.
fn run_one(root: &Path, fio: &Path, id: u32, tag: &str) -> Verdict {
    let art = root.join(format!("art-{tag}-{id}"));
    let _ = std::fs::remove_dir_all(&art);
    let mut cmd = Command::new("python3");
    if let Some(dir) = python_dir(root) {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![dir];
        dirs.extend(std::env::split_paths(&path));
        cmd = Command::new(DEBIAN_PYTHON);
        cmd.env("PATH", std::env::join_paths(dirs).unwrap());
    }
    let mut child = cmd
        .arg(root.join("t/run-fio-tests.py"))
        .arg("-r")
        .arg(root)
        .arg("-f")
        .arg(fio)
        .arg("-a")
        .arg(&art)
        .arg("--run-only")
        .arg(id.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("python3 runs");
    let t0 = Instant::now();
    loop {
        match child.try_wait().expect("wait for the harness") {
            Some(_) => break,
            None if t0.elapsed() > PER_TEST => {
                // The harness and everything it started (fio or iolab).
                // SAFETY: kill(2) on the process group this test created.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.wait();
                return Verdict::Failed(format!("timeout after {} s", PER_TEST.as_secs()));
            }
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    let out = child.wait_with_output().expect("harness output");
    let text = String::from_utf8_lossy(&out.stdout);
    let prefix = format!("Test {id} ");
    let Some(line) = text.lines().find(|l| l.starts_with(&prefix)) else {
        return Verdict::Failed(format!("no verdict line in the harness output: {text}"));
    };
    let rest = &line[prefix.len()..];
    if rest.starts_with("PASSED") {
        Verdict::Passed
    } else if let Some(why) = rest.strip_prefix("SKIPPED") {
        Verdict::Skipped(why.trim().to_string())
    } else {
        let why = rest.strip_prefix("FAILED:").unwrap_or(rest).trim();
        Verdict::Failed(why.chars().take(300).collect())
    }
}

/// docs/fio-compat.md's "fio's test suite" table: test number -> reason.
pub fn listed_failures() -> Vec<(u32, String)> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/fio-compat.md"))
            .expect("docs/fio-compat.md");
    let start = doc
        .find("\n## fio's test suite")
        .expect("docs/fio-compat.md has a \"## fio's test suite\" section");
    let section = &doc[start + 1..];
    let section = section[2..]
        .find("\n## ")
        .map_or(section, |e| &section[..e + 2]);
    let mut out = Vec::new();
    for line in section.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() >= 4
            && let Ok(id) = cells[1].parse::<u32>()
        {
            let reason = cells[3].to_string();
            assert!(!reason.is_empty(), "test {id} is listed without a reason");
            out.push((id, reason));
        }
    }
    out
}

#[test]
fn fio_suite_listed_failures_have_reasons() {
    let listed = listed_failures();
    assert!(!listed.is_empty(), "the section's table was not found");
    for (id, reason) in &listed {
        assert!(
            TESTS.contains(id),
            "test {id} is not one of the suite's tests here"
        );
        assert!(
            reason.len() > 20,
            "test {id}: the reason says too little: {reason}"
        );
    }
}

#[test]
fn fio_suite_passes_under_iolab_where_it_passes_under_fio() {
    if !ready(&[
        Need::Fio,
        Need::Tool {
            cmd: "python3",
            package: "python3",
        },
    ]) {
        return;
    }
    let Some(src) = fio_source() else {
        skip(
            "needs fio 3.33's source: run .ci/run (adds a deb-src entry and runs \
             apt-get source fio into target/fio-source/), or set IOLAB_FIO_SOURCE",
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    copy_dir(&src.join("t"), &root.join("t"));
    // The harness reads fio's build configuration for libaio; Debian's fio
    // and iolab both have it.
    std::fs::write(root.join("config-host.h"), "#define CONFIG_LIBAIO\n").unwrap();
    let shim = root.join("fio");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\nexec '{}' run \"$@\"\n",
            env!("CARGO_BIN_EXE_iolab")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&shim, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let real_fio = PathBuf::from(
        String::from_utf8(
            Command::new("sh")
                .args(["-c", "command -v fio"])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap()
        .trim(),
    );
    let listed = listed_failures();
    let mut regressions = Vec::new();
    let mut stale = Vec::new();
    let mut report = String::new();
    for &id in TESTS {
        let mut iolab = run_one(root, &shim, id, "iolab");
        let fio = match &iolab {
            Verdict::Failed(_) => Some(run_one(root, &real_fio, id, "fio")),
            _ => None,
        };
        // fio passed where iolab failed a moment before: the machine may have
        // been busier then (t0006, t0011 and latency_percentiles.py depend on
        // it: fio fails them under load too). Give iolab the same moment: a
        // second run. A real difference fails twice.
        if let (Verdict::Failed(first), Some(Verdict::Passed)) = (&iolab, &fio) {
            let again = run_one(root, &shim, id, "iolab-again");
            report += &format!("test {id}: iolab failed once ({first}), then {again:?}\n");
            iolab = again;
        }
        let reason = listed.iter().find(|l| l.0 == id).map(|l| l.1.as_str());
        report += &format!("test {id}: iolab {iolab:?}; fio {fio:?}\n");
        match (&iolab, &fio, reason) {
            (Verdict::Failed(why), Some(Verdict::Passed), None) => {
                regressions.push(format!("test {id}: fio passes, iolab fails: {why}"))
            }
            (Verdict::Passed, _, Some(_)) => stale.push(id),
            _ => {}
        }
    }
    println!("{report}");
    if !stale.is_empty() {
        println!(
            "listed in docs/fio-compat.md but passing under iolab now (remove them): {stale:?}"
        );
    }
    assert!(
        regressions.is_empty(),
        "fio's suite: tests fio passes here and iolab fails, not listed in \
         docs/fio-compat.md's \"fio's test suite\" with a reason:\n{}\n\nall:\n{report}",
        regressions.join("\n")
    );
}
