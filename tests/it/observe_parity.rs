//! `iolab observe` against `strace -c -f` on real programs: each program runs
//! once under strace and once under observe per backend (bpf, tracefs), with
//! the same environment, the same fresh working tree and the same stdin/stdout
//! kinds; per syscall name, calls and errors must be equal, except for the
//! exceptions listed in docs/observe.md (each named below with its reason). A
//! failure prints both tables. Needs root, tracefs and strace; skips with the
//! reason otherwise.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

/// name -> (calls, errors)
type Table = BTreeMap<String, (u64, u64)>;

/// Calls strace -c never shows: it counts a call when it sees the call return,
/// and these never return. observe counts a call when it starts.
const NEVER_RETURN: [&str; 2] = ["exit", "exit_group"];

/// One program of the test.
struct Case {
    name: &'static str,
    argv: Vec<String>,
    /// Builds the working directory's contents (run before each tool's run).
    setup: fn(&Path),
    /// Syscalls whose count depends on scheduling, not on the tool, with the
    /// reason (docs/observe.md lists them): both tools must show the call.
    varies: &'static [(&'static str, &'static str)],
}

fn skip(why: &str) {
    crate::support::needs::skip(why);
}

fn have(prog: &str) -> bool {
    Command::new(prog)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// The same environment under both tools: C locale, UTC, fixed hash seed, no
/// bytecode writing, one worker thread for programs that size pools by CPUs,
/// and one malloc arena: a thread's own arena is carved out of a larger
/// mapping whose unaligned ends are unmapped, one `munmap` or two depending on
/// where the randomised address space put it.
fn deterministic(cmd: &mut Command, work: &Path) {
    cmd.env_clear()
        .current_dir(work)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", work)
        .env("LC_ALL", "C")
        .env("LANG", "C")
        .env("TZ", "UTC")
        .env("PYTHONHASHSEED", "0")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("OMP_NUM_THREADS", "1")
        .env("MALLOC_ARENA_MAX", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
}

fn fresh(work: &Path, setup: fn(&Path)) {
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work).unwrap();
    setup(work);
}

/// Parse strace's -c summary by the columns its dashed rule draws, so an
/// empty `errors` cell is an empty cell, not a shifted one.
fn parse_strace(text: &str) -> Result<Table, String> {
    let lines: Vec<&str> = text.lines().collect();
    let hi = lines
        .iter()
        .position(|l| l.contains("calls") && l.contains("syscall"))
        .ok_or_else(|| format!("no header line in strace's summary:\n{text}"))?;
    let rule = lines
        .get(hi + 1)
        .filter(|l| l.starts_with('-'))
        .ok_or_else(|| format!("no dashed rule under the header:\n{text}"))?;
    // Column spans from the rule: runs of '-'.
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in rule.char_indices().chain([(rule.len(), ' ')]) {
        match (c == '-', start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                spans.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    let header = lines[hi];
    let col = |name: &str| -> Result<usize, String> {
        spans
            .iter()
            .position(|&(s, e)| header.get(s..e.min(header.len())).unwrap_or("").trim() == name)
            .ok_or_else(|| format!("no `{name}` column in {header:?}"))
    };
    let (ci, ei, ni) = (col("calls")?, col("errors")?, col("syscall")?);
    let cell = |l: &str, k: usize, last: bool| -> String {
        let (s, e) = spans[k];
        let e = if last { l.len() } else { e.min(l.len()) };
        l.get(s.min(l.len())..e).unwrap_or("").trim().to_string()
    };
    let mut t = Table::new();
    for l in &lines[hi + 2..] {
        if l.starts_with('-') || l.trim().is_empty() {
            continue;
        }
        let name = cell(l, ni, ni == spans.len() - 1);
        if name == "total" {
            continue;
        }
        let num = |s: String| -> Result<u64, String> {
            if s.is_empty() {
                Ok(0)
            } else {
                s.parse()
                    .map_err(|_| format!("bad number {s:?} in line {l:?}"))
            }
        };
        t.insert(name, (num(cell(l, ci, false))?, num(cell(l, ei, false))?));
    }
    Ok(t)
}

fn run_strace(case: &Case, work: &Path, out: &Path) -> Table {
    fresh(work, case.setup);
    let mut cmd = Command::new("strace");
    cmd.args(["-c", "-f", "-o"])
        .arg(out)
        .arg("--")
        .args(&case.argv);
    deterministic(&mut cmd, work);
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{}: strace run failed: {}",
        case.name,
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(out).unwrap();
    parse_strace(&text).unwrap_or_else(|e| panic!("{}: {e}", case.name))
}

fn run_observe(case: &Case, work: &Path, backend: &str) -> Table {
    fresh(work, case.setup);
    // Like strace's -o above: the report in a file of its own.
    let report = work.with_extension("observe.jsonl");
    let mut cmd = Command::new(IOLAB);
    cmd.args(["observe", "--json", "--backend", backend, "-o"])
        .arg(&report)
        .arg("--")
        .args(&case.argv);
    deterministic(&mut cmd, work);
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{} ({backend}): observe failed: {}",
        case.name,
        String::from_utf8_lossy(&o.stderr)
    );
    // One JSON line per report; the total is the last.
    let text = std::fs::read_to_string(&report).unwrap();
    let last = text.lines().last().unwrap_or("");
    let v: serde_json::Value = serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("{}: last line is not the report ({e}): {last:?}", case.name));
    assert_eq!(v["kind"], "total");
    assert_eq!(v["lost_events"], 0);
    let mut t = Table::new();
    for s in v["syscalls"].as_array().unwrap() {
        t.insert(
            s["name"].as_str().unwrap().to_string(),
            (s["calls"].as_u64().unwrap(), s["errors"].as_u64().unwrap()),
        );
    }
    t
}

fn render(strace: &Table, observe: &Table) -> String {
    let mut names: Vec<&String> = strace.keys().chain(observe.keys()).collect();
    names.sort();
    names.dedup();
    let mut s = format!(
        "  {:<22} {:>9} {:>9}   {:>9} {:>9}\n",
        "syscall", "strace", "errors", "observe", "errors"
    );
    for n in names {
        let (a, b) = (strace.get(n), observe.get(n));
        let f = |v: Option<&(u64, u64)>, i: usize| {
            v.map(|p| if i == 0 { p.0 } else { p.1 }.to_string())
                .unwrap_or_else(|| "-".into())
        };
        s.push_str(&format!(
            "  {:<22} {:>9} {:>9}   {:>9} {:>9}{}\n",
            n,
            f(a, 0),
            f(a, 1),
            f(b, 0),
            f(b, 1),
            if a == b { "" } else { "  <" }
        ));
    }
    s
}

/// Differences that are not listed exceptions.
fn differences(case: &Case, strace: &Table, observe: &Table) -> Vec<String> {
    let mut bad = Vec::new();
    let mut names: Vec<&String> = strace.keys().chain(observe.keys()).collect();
    names.sort();
    names.dedup();
    for n in names {
        let (a, b) = (strace.get(n), observe.get(n));
        if NEVER_RETURN.contains(&n.as_str()) {
            if a.is_some() {
                bad.push(format!("{n}: strace counted a call that never returns"));
            }
            continue;
        }
        if case.varies.iter().any(|(v, _)| v == n) {
            if a.is_none() != b.is_none() {
                bad.push(format!("{n}: seen by one tool only"));
            }
            continue;
        }
        if a != b {
            bad.push(format!("{n}: strace {a:?} vs observe {b:?}"));
        }
    }
    bad
}

fn tree(dir: &Path) {
    // 3 levels of 4 directories, 5 files of 1 KiB in each: a fixed tree.
    fn fill(d: &Path, depth: u32) {
        for f in 0..5 {
            std::fs::write(d.join(format!("f{f}.txt")), vec![b'a'; 1024]).unwrap();
        }
        if depth == 0 {
            return;
        }
        for i in 0..4 {
            let sub = d.join(format!("d{i}"));
            std::fs::create_dir(&sub).unwrap();
            fill(&sub, depth - 1);
        }
    }
    let t = dir.join("tree");
    std::fs::create_dir(&t).unwrap();
    fill(&t, 3);
}

fn tree_and_archive(dir: &Path) {
    tree(dir);
    let ok = Command::new("tar")
        .args(["-cf", "a.tar", "tree"])
        .current_dir(dir)
        .status()
        .unwrap()
        .success();
    assert!(ok, "tar -cf for the listing case");
}

fn nothing(_: &Path) {}

/// Threads that each write a file of their own and read it back, with
/// unbuffered os calls so the calls are the program's, not the buffer's.
const PYTHON: &str = "\
import os, threading
# All threads are alive at once, so each has a stack of its own in every run
# (a finished thread's stack would otherwise be reused, or not, by timing).
ready = threading.Barrier(4)
def work(i):
    ready.wait()
    fd = os.open(f't{i}.dat', os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    for _ in range(64):
        os.write(fd, b'x' * 4096)
    os.close(fd)
    fd = os.open(f't{i}.dat', os.O_RDONLY)
    while os.read(fd, 8192):
        pass
    os.close(fd)
ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
";

/// Why futex counts differ run to run in a threaded program: each wait and
/// wake depends on which thread got to a lock first.
const FUTEX: (&str, &str) = ("futex", "lock hand-offs between threads depend on timing");

/// Python's join returns once the thread's Python part is done; glibc's
/// teardown of the thread after it (block signals, release the stack's pages,
/// exit) races with the main thread's exit_group, which may cut it short.
const TEARDOWN: ((&str, &str), (&str, &str)) = (
    (
        "rt_sigprocmask",
        "a joined thread's teardown races with the process's exit",
    ),
    (
        "madvise",
        "a joined thread's teardown races with the process's exit",
    ),
);

fn cases(thread_exec: Option<&Path>) -> Vec<Case> {
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let mut v = vec![
        Case {
            name: "find",
            argv: s(&["find", "tree"]),
            setup: tree,
            varies: &[],
        },
        Case {
            name: "tar create",
            argv: s(&["tar", "-cf", "b.tar", "tree"]),
            setup: tree,
            varies: &[],
        },
        Case {
            name: "tar list",
            argv: s(&["tar", "-tvf", "a.tar"]),
            setup: tree_and_archive,
            varies: &[],
        },
        Case {
            name: "python3 threads",
            argv: s(&["python3", "-I", "-c", PYTHON]),
            setup: nothing,
            varies: &[FUTEX, TEARDOWN.0, TEARDOWN.1],
        },
        Case {
            name: "shell pipeline",
            argv: s(&["sh", "-c", "seq 100000 | sort | uniq -c > f"]),
            setup: nothing,
            varies: &[
                (
                    "read",
                    "a read of a pipe returns what the writer has written so far",
                ),
                (
                    "rt_sigreturn",
                    "SIGCHLDs of children that exit close together merge into one",
                ),
            ],
        },
    ];
    if let Some(p) = thread_exec {
        v.push(Case {
            name: "exec from a non-leader thread",
            argv: vec![p.to_string_lossy().into_owned(), "1000".into()],
            setup: nothing,
            varies: &[],
        });
    }
    v
}

/// tests/helpers/thread_exec.c compiled into `dir`, or why not.
fn compile_thread_exec(dir: &Path) -> Result<PathBuf, String> {
    let bin = dir.join("thread_exec");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/helpers/thread_exec.c");
    match Command::new("cc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
    {
        Ok(s) if s.success() => Ok(bin),
        r => Err(format!("cannot compile {} with cc: {r:?}", src.display())),
    }
}

#[test]
fn strace_parse_reads_empty_error_cells_and_long_names() {
    let text = "\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 90.17    0.004349           2      2000           getppid
  0.12    0.000006           3         2         2 access
  0.01    0.000001           1         1           sched_getaffinity_long
------ ----------- ----------- --------- --------- ----------------
100.00    0.004823           2      2003         2 total
";
    let t = parse_strace(text).unwrap();
    assert_eq!(t["getppid"], (2000, 0));
    assert_eq!(t["access"], (2, 2));
    assert_eq!(t["sched_getaffinity_long"], (1, 0));
    assert!(!t.contains_key("total"));
    assert!(parse_strace("no table here").is_err());
}

#[test]
fn counts_equal_strace_on_real_programs() {
    use crate::support::needs::{Need, ready};
    if !ready(&[Need::Root, Need::Strace]) {
        return;
    }
    // Alone: the parity compares exact counts; tracing beside other tests'
    // traced runs would only slow both.
    let _one = crate::support::serial::one_at_a_time();
    if !Path::new("/sys/kernel/tracing/events/raw_syscalls").exists() {
        return skip("no tracefs raw_syscalls events at /sys/kernel/tracing");
    }
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let thread_exec = match compile_thread_exec(&bin) {
        Ok(p) => Some(p),
        Err(e) => {
            skip(&format!("the non-leader exec case: {e}"));
            None
        }
    };
    let work = tmp.path().join("work");
    let summary = tmp.path().join("strace.txt");
    let mut failures = Vec::new();
    for case in cases(thread_exec.as_deref()) {
        if !have(&case.argv[0]) && !Path::new(&case.argv[0]).exists() {
            skip(&format!("{}: {} is not installed", case.name, case.argv[0]));
            continue;
        }
        let st = run_strace(&case, &work, &summary);
        for backend in ["bpf", "tracefs"] {
            let ob = run_observe(&case, &work, backend);
            let bad = differences(&case, &st, &ob);
            let table = render(&st, &ob);
            eprintln!("{} ({backend}):\n{table}", case.name);
            if !bad.is_empty() {
                failures.push(format!(
                    "{} ({backend}): {}\n{table}",
                    case.name,
                    bad.join("; ")
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "observe differs from strace -c -f:\n{}",
        failures.join("\n")
    );
}
