//! Each program in examples/ is built and run as a user would, and its output
//! checked: the examples are documentation that must keep working.

use std::path::PathBuf;
use std::process::Command;

use crate::support::needs::{is_root, skip};

/// Build the examples (already built by a full `cargo test`: then this only
/// checks they are fresh) and return the path of `name`.
fn example(name: &str) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(cargo)
        .args(["build", "--release", "--quiet", "--example", name])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("run cargo");
    assert!(
        st.success(),
        "cargo build --release --example {name} failed"
    );
    PathBuf::from(env!("CARGO_BIN_EXE_iolab"))
        .parent()
        .expect("target/release")
        .join("examples")
        .join(name)
}

/// Exit status and stdout of an example; its stderr is shown on failure.
fn run(name: &str, args: &[&str]) -> String {
    let out = Command::new(example(name))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "example {name} {args:?} failed ({}): {}\n{stdout}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The figures of a `NAME: N I/Os, X IOPS, p50 A ns, p99 B ns, CPU C ns per I/O`
/// line: (N, A, B, C).
fn figures(line: &str) -> (u64, u64, u64, f64) {
    let num = |after: &str| -> f64 {
        let rest = &line[line
            .find(after)
            .unwrap_or_else(|| panic!("{after:?} in {line:?}"))
            + after.len()..];
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    let ios = line.split(": ").nth(1).unwrap().split(' ').next().unwrap();
    (
        ios.parse().unwrap(),
        num("p50 ") as u64,
        num("p99 ") as u64,
        num("CPU "),
    )
}

#[test]
fn run_job_prints_p50_p99_and_cpu_per_io() {
    let out = run("run_job", &[]);
    let line = out
        .lines()
        .find(|l| l.starts_with("randread: "))
        .unwrap_or_else(|| panic!("{out}"));
    let (ios, p50, p99, cpu) = figures(line);
    assert_eq!(ios, 20_000, "{line}");
    // The device takes 4 us per command: no completion is seen sooner.
    assert!(p50 >= 4_000 && p99 >= p50, "{line}");
    assert!(cpu > 0.0, "{line}");
}

#[test]
fn compare_models_prints_both_models() {
    let out = run("compare_models", &[]);
    for model in ["poll", "interrupt"] {
        let row: Vec<&str> = out
            .lines()
            .find(|l| l.split_whitespace().next() == Some(model))
            .unwrap_or_else(|| panic!("no {model} row in:\n{out}"))
            .split_whitespace()
            .collect();
        assert_eq!(row[1], "5000", "{model}: {row:?}");
        let (p50, p99): (u64, u64) = (row[2].parse().unwrap(), row[3].parse().unwrap());
        assert!(p50 >= 20_000 && p99 >= p50, "{model}: {row:?}");
    }
}

#[test]
fn fio_file_runs_the_job_file_it_is_given() {
    let file = "docs/examples/poll-vs-interrupt.fio";
    let out = run("fio_file", &[file, "--max-runtime=300ms"]);
    assert!(out.contains("3 job(s): poll, interrupt, adaptive"), "{out}");
    for job in ["poll", "interrupt", "adaptive"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{job}: ")))
            .unwrap_or_else(|| panic!("no {job} line in:\n{out}"));
        let (ios, p50, _, _) = figures(line);
        assert!(ios > 0 && p50 >= 4_000, "{line}");
    }
    // A file that does not exist is an error naming it, not a panic.
    let out = Command::new(example("fio_file"))
        .arg("no-such.fio")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such.fio"));
}

#[test]
fn observe_child_counts_a_childs_system_calls() {
    let out = run("observe_child", &["true"]);
    if !is_root() {
        assert!(out.starts_with("SKIPPED: observe_child: "), "{out}");
        skip("observe_child: counting system calls needs root; run the tests as root");
        return;
    }
    let head = out.lines().next().unwrap_or("");
    assert!(head.starts_with("`true` exited 0: "), "{out}");
    let calls: u64 = head
        .split(": ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(calls > 0, "{out}");
    // The command's own execve is its first counted call.
    assert!(
        out.lines().any(|l| l.trim_end().ends_with(" execve")),
        "{out}"
    );
}
