//! `iolab observe` end to end, with both backends (bpf and tracefs): exact
//! syscall counts across threads and children, interval totals, exit codes, and
//! removal of the tracefs instance after success, error and SIGINT. Needs root,
//! tracefs and a C compiler; skips with a reason.

use crate::support;

use support::needs::{Need, ready, skip};

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

struct Helper {
    _dir: tempfile::TempDir,
    bin: PathBuf,
}

/// Compile tests/helpers/syscalls.c into a temp dir, or say why not.
fn helper() -> Option<Helper> {
    if !ready(&[
        Need::Root,
        Need::Tool {
            cmd: "cc",
            package: "gcc",
        },
    ]) {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("syscalls");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/helpers/syscalls.c");
    match Command::new("cc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
    {
        Ok(s) if s.success() => Some(Helper { _dir: dir, bin }),
        r => {
            skip(format_args!("cannot compile the helper with cc: {r:?}"));
            None
        }
    }
}

fn instances_of(pid: u32) -> Vec<String> {
    let prefix = format!("iolab-{pid}-");
    std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Both collectors; each test runs with each.
const BACKENDS: [&str; 2] = ["bpf", "tracefs"];

/// Whether the observing process `pid` has its collector in place.
fn attached(pid: u32, backend: &str) -> bool {
    if backend == "tracefs" {
        return !instances_of(pid).is_empty();
    }
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|rd| {
            rd.flatten().any(|e| {
                std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().contains("bpf_link"))
            })
        })
        .unwrap_or(false)
}

fn run(args: &[&str]) -> (Output, u32) {
    let child = Command::new(IOLAB)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    (child.wait_with_output().unwrap(), pid)
}

/// The reports of `observe --json`, which go to stderr (as strace's do);
/// iolab's own notes there start with `iolab:`.
fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON {l:?}: {e}")))
        .collect()
}

fn calls(report: &Value, name: &str) -> u64 {
    report["syscalls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .map(|s| s["calls"].as_u64().unwrap())
        .unwrap_or(0)
}

/// `iolab observe --json OPTS -- helper n m k`: the total report and the pid
/// of the observing process; fails the test if observe failed.
fn observe_helper(h: &Helper, opts: &[&str], (n, m, k): (u64, u64, u64)) -> (Value, u32) {
    let counts = [n.to_string(), m.to_string(), k.to_string()];
    let mut args = vec!["observe", "--json"];
    args.extend_from_slice(opts);
    args.extend(["--", h.bin.to_str().unwrap()]);
    args.extend(counts.iter().map(String::as_str));
    let (out, pid) = run(&args);
    assert!(
        out.status.success(),
        "{opts:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (json_lines(&out).pop().unwrap(), pid)
}

#[test]
fn counts_exact_syscalls_of_threads_and_children() {
    let _one = crate::support::serial::one_at_a_time();
    let Some(h) = helper() else { return };
    let (n, m, k) = (50_000u64, 7_001u64, 3_333u64);
    for backend in BACKENDS {
        let (total, pid) = observe_helper(&h, &["--backend", backend], (n, m, k));
        let total = &total;
        assert_eq!(total["kind"], "total");
        assert_eq!(total["backend"], backend);
        assert_eq!(calls(total, "getppid"), n + m + k, "{backend}");
        assert_eq!(total["lost_events"], 0);
        // main thread, the pthread, the forked child
        let threads = total["threads"].as_array().unwrap();
        let with_calls: Vec<u64> = threads
            .iter()
            .map(|t| t["syscalls"].as_u64().unwrap())
            .collect();
        assert_eq!(threads.len(), 3, "{backend}: {threads:?}");
        assert!(with_calls.iter().any(|&c| c >= n), "{with_calls:?}");
        assert!(
            with_calls.iter().any(|&c| c >= k && c < n),
            "{with_calls:?}"
        );
        // One execve for the helper itself, and a clone for the fork.
        assert_eq!(calls(total, "execve"), 1, "{backend}");
        assert!(calls(total, "clone") + calls(total, "clone3") >= 2);
        // Three exits (main thread, pthread, child), two forks (pthread, child).
        assert_eq!(total["exits"], 3, "{backend}");
        assert_eq!(total["forks"], 2, "{backend}");
        assert!(instances_of(pid).is_empty(), "instance left behind");
    }
}

#[test]
fn time_sampling_keeps_counts_exact_and_times_a_random_share() {
    let _one = crate::support::serial::one_at_a_time();
    let Some(h) = helper() else { return };
    let (n, m, k) = (50_000u64, 7_001u64, 3_333u64);
    let (total, _) = observe_helper(&h, &["--time-sample", "16"], (n, m, k));
    let total = &total;
    if total["backend"] != "bpf" {
        skip("time sampling needs observe's bpf backend, unavailable on this kernel");
        return;
    }
    assert_eq!(total["time_sample"], 16);
    let all = n + m + k;
    assert_eq!(calls(total, "getppid"), all);
    assert_eq!(total["lost_events"], 0);
    let row = total["syscalls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "getppid")
        .unwrap();
    // Binomial(60334, 1/16): mean 3771, sd 59; +-20% is over 12 sd.
    let timed = row["timed"].as_u64().unwrap() as f64;
    let expect = all as f64 / 16.0;
    assert!(
        (timed - expect).abs() < 0.2 * expect,
        "timed {timed}: {row}"
    );
    let (avg, tot) = (
        row["avg_ns"].as_f64().unwrap(),
        row["total_ns"].as_f64().unwrap(),
    );
    assert!(avg > 0.0, "{row}");
    assert!(
        (tot - avg * all as f64).abs() <= 1.0,
        "total = avg x calls: {row}"
    );

    let (out, _) = run(&["observe", "--time-sample", "12", "--", "true"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--time-sample 12") && err.contains("power of two"),
        "{err}"
    );
    let (out, _) = run(&[
        "observe",
        "--backend",
        "tracefs",
        "--time-sample",
        "16",
        "--",
        "true",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("only the bpf backend"));
}

#[test]
fn interval_reports_add_up_to_the_total() {
    let _one = crate::support::serial::one_at_a_time();
    let Some(h) = helper() else { return };
    let bin = h.bin.to_str().unwrap();
    let n = 400_000u64;
    for backend in BACKENDS {
        let (out, _) = run(&[
            "observe",
            "--json",
            "--backend",
            backend,
            "--interval",
            "0.05",
            "--",
            bin,
            &n.to_string(),
            "0",
            "0",
        ]);
        assert!(
            out.status.success(),
            "{backend}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let reports = json_lines(&out);
        let (intervals, total): (Vec<&Value>, Vec<&Value>) =
            reports.iter().partition(|r| r["kind"] == "interval");
        assert_eq!(total.len(), 1);
        assert!(
            intervals.len() >= 2,
            "{backend}: expected several intervals: {}",
            intervals.len()
        );
        let sum: u64 = intervals.iter().map(|r| calls(r, "getppid")).sum();
        assert_eq!(sum, n, "{backend}");
        assert_eq!(calls(total[0], "getppid"), n, "{backend}");
        // The total's longest call is the longest of some interval.
        let max_of = |r: &Value| {
            r["syscalls"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["name"] == "getppid")
                .map_or(0, |s| s["max_ns"].as_u64().unwrap())
        };
        let interval_max = intervals.iter().map(|r| max_of(r)).max().unwrap();
        assert!(interval_max > 0, "{backend}");
        assert_eq!(max_of(total[0]), interval_max, "{backend}");
    }
}

#[test]
fn exit_code_of_the_command_is_returned_and_errors_leave_nothing() {
    let _one = crate::support::serial::one_at_a_time();
    let Some(h) = helper() else { return };
    // Too few arguments: the helper exits 2.
    let (out, pid) = run(&["observe", "--", h.bin.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(instances_of(pid).is_empty());
    // A command that cannot be executed: 127, instance removed.
    let (out, pid) = run(&["observe", "--", "/nonexistent/command"]);
    assert_eq!(out.status.code(), Some(127));
    assert!(instances_of(pid).is_empty());
    // Bad input: clear error naming the option, no instance.
    let (out, pid) = run(&["observe", "--interval", "0", "--", "true"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--interval"));
    assert!(instances_of(pid).is_empty());
    let (out, _) = run(&["observe", "--pid", "999999999"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such running process"));
}

/// utime + stime of a process, in clock ticks (/proc/PID/stat fields 14 and 15).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse().ok())
        .collect();
    f.iter().sum()
}

#[test]
fn attaches_to_a_running_pid() {
    let _one = crate::support::serial::one_at_a_time();
    let Some(h) = helper() else { return };
    let mut spinner = Command::new(&h.bin)
        .args(["0", "0", "0", "1"])
        .spawn()
        .unwrap();
    let sp = spinner.id().to_string();
    // Attach only once the spinner is in its endless loop: before that it starts
    // a thread and forks a child, which an attach on a loaded machine could catch
    // alive (the test expects the spinner's own thread alone). Its CPU time tells:
    // the start-up takes well under a clock tick, the loop burns CPU.
    let spinning = std::time::Instant::now();
    while cpu_ticks(spinner.id()) < 3 {
        assert!(
            spinning.elapsed() < std::time::Duration::from_secs(30),
            "the spinner never started spinning"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let mut results = Vec::new();
    for backend in BACKENDS {
        results.push((
            backend,
            run(&[
                "observe",
                "--json",
                "--backend",
                backend,
                "--pid",
                &sp,
                "--duration",
                "0.3",
            ]),
        ));
    }
    let _ = spinner.kill();
    let _ = spinner.wait();
    for (backend, (out, pid)) in results {
        assert!(
            out.status.success(),
            "{backend}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let total = json_lines(&out).pop().unwrap();
        assert!(calls(&total, "getppid") > 1000, "{backend}: {total}");
        let tids: Vec<i64> = total["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["tid"].as_i64().unwrap())
            .collect();
        assert_eq!(tids, vec![spinner.id() as i64], "{backend}");
        assert!(instances_of(pid).is_empty());
    }
}

#[test]
fn sigint_stops_observing_and_removes_the_instance() {
    let _one = crate::support::serial::one_at_a_time();
    let Some(_h) = helper() else { return };
    for backend in BACKENDS {
        let child = Command::new(IOLAB)
            .args([
                "observe",
                "--json",
                "--backend",
                backend,
                "--",
                "sleep",
                "5",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !attached(pid, backend) {
            assert!(Instant::now() < deadline, "{backend}: never attached");
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(100));
        // SAFETY: signalling the child we spawned.
        unsafe { libc::kill(pid as i32, libc::SIGINT) };
        let out = child.wait_with_output().unwrap();
        assert!(instances_of(pid).is_empty(), "instance left after SIGINT");
        let total = json_lines(&out)
            .pop()
            .unwrap_or_else(|| panic!("{backend}: a total report after SIGINT"));
        assert_eq!(total["kind"], "total");
        // sleep is still inside nanosleep/clock_nanosleep: reported, not timed.
        let in_flight = total["in_flight"].as_array().expect("in_flight listed");
        assert!(
            in_flight
                .iter()
                .any(|f| f["syscall"].as_str().unwrap().contains("nanosleep")),
            "{backend}: {total}"
        );
        for t in total["threads"].as_array().unwrap() {
            // SAFETY: the orphaned `sleep` we started through observe.
            unsafe { libc::kill(t["tid"].as_i64().unwrap() as i32, libc::SIGKILL) };
        }
    }
}

/// The observed command's stdout is its own: the report goes to stderr, or
/// with `-o FILE` to FILE alone (as strace's), and the command's exit status
/// is observe's.
#[test]
fn the_report_leaves_the_commands_stdout_alone() {
    let _one = crate::support::serial::one_at_a_time();
    if !ready(&[Need::Root]) {
        return;
    }
    let script = "echo line one; echo line two; echo oops >&2; exit 3";
    let (out, _) = run(&["observe", "--", "sh", "-c", script]);
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("needs root") || err.contains("CAP_") {
        skip(format_args!("observe cannot run here: {err}"));
        return;
    }
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "line one\nline two\n");
    assert!(err.starts_with("oops\n"), "{err}");
    assert!(err.contains("--- total for `sh -c"), "{err}");

    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("report.jsonl");
    let (out, _) = run(&[
        "observe",
        "--json",
        "-o",
        file.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "line one\nline two\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "oops\n");
    let text = std::fs::read_to_string(&file).unwrap();
    let total: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(total["kind"], "total");
    assert!(calls(&total, "write") >= 3, "{total}");

    // A report file that cannot be created stops observe before it starts
    // anything, naming the path.
    let (out, _) = run(&["observe", "-o", "/nonexistent/dir/r", "--", "true"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("-o /nonexistent/dir/r"), "{err}");
}
