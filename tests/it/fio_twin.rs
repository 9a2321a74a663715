//! iolab beside fio 3.33 on whole job files: Debian's fio examples, fio's own
//! `t/jobs`, and job files users keep in their repositories
//! (`tests/fixtures/fio-corpus/`, sources in its `SOURCES.tsv`).
//!
//! Each file is rewritten once per tool into a small, size-bound copy on a
//! scratch directory (`fio_twin_job::capped`), and both tools run that same
//! text. Where fio runs the file, iolab must run it too, and the runs must
//! agree on:
//! - every job's `write_iolog`, I/O by I/O: action, file, offset, length (in
//!   order; as a multiset where several clones append to one log);
//! - the JSON's I/O counts and bytes per job and direction;
//! - the bytes of every file the jobs wrote or trimmed.
//!
//! A file that differs, that iolab refuses where fio runs it, or that iolab
//! runs where fio refuses it, must be listed in docs/fio-compat.md's "Jobs
//! that differ from fio, and why" with the reason; a listed file that now
//! agrees fails the test ("remove it from the list"), so the table stays true.
//! `IOLAB_TWIN_ONLY=TEXT` runs only the files whose key (`examples/NAME`,
//! `t/jobs/NAME`, `corpus/NAME`) contains TEXT.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::fio_twin_job::{Capped, Counts, Iolog, capped, json_counts, read_iolog};
use crate::support::needs::{Need, ready, skip};

/// Far above what a capped file needs; only a hang reaches it.
const HANG: Duration = Duration::from_secs(30);
const SECTION: &str = "\n## Jobs that differ from fio, and why";

/// A finished run of one tool on one file.
struct Run {
    ok: bool,
    /// The first line of stderr that says why, when the run failed.
    why: String,
    dir: PathBuf,
    json: String,
}

enum Outcome {
    Same,
    Differs(String),
    /// fio and iolab both refuse the file: what each said.
    BothRefuse(String, String),
    FioRefuses(String),
    IolabRefuses(String),
    NotHere(String),
}

fn run_tool(tool: &str, job: &Capped, dir: &Path) -> Run {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let file = dir.with_extension("fio");
    std::fs::write(&file, &job.text).unwrap();
    let out = dir.with_extension("json");
    let errf = dir.with_extension("err");
    let mut cmd = if tool == "fio" {
        Command::new("fio")
    } else {
        let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
        c.arg("run");
        c
    };
    let mut child = cmd
        .arg("--output-format=json")
        .arg(format!("--output={}", out.display()))
        .arg(&file)
        // Logs named in the job (write_bw_log=NAME) land in the scratch dir.
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        // To a file, not a pipe: a job process that outlives a killed fio
        // would hold a pipe open.
        .stderr(std::fs::File::create(&errf).unwrap())
        // Its own process group: a hung fio's job processes go with it.
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("start {tool}: {e}"));
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if t0.elapsed() > HANG {
            // SAFETY: kill(2) on the process group this runner created.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            kill_runs_of(&file);
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = std::fs::read_to_string(&errf).unwrap_or_default();
    let why = err
        .lines()
        .find(|l| !l.trim().is_empty() && !l.contains("warning"))
        .unwrap_or("")
        .chars()
        .take(200)
        .collect::<String>();
    Run {
        ok: status.is_some_and(|s| s.success()),
        why: match status {
            None => format!("still running after {HANG:?}"),
            Some(st) if !st.success() && why.is_empty() => format!("{st}"),
            _ => why,
        },
        dir: dir.to_path_buf(),
        json: std::fs::read_to_string(&out).unwrap_or_default(),
    }
}

/// fio's job processes leave its process group (fio makes each a session
/// leader): after a hang, the processes still running this job file.
fn kill_runs_of(file: &Path) {
    let needle = file.as_os_str().as_encoded_bytes();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        if cmd.split(|&b| b == 0).any(|arg| arg == needle) {
            // SAFETY: kill(2) on a process started by this runner (its
            // command line names this runner's own job file).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

fn show(io: Option<&crate::fio_twin_job::Io>) -> String {
    match io {
        Some((a, f, o, l)) => format!("{a} {f} {o} {l}"),
        None => "nothing".into(),
    }
}

/// The differences between two finished runs (`a` fio's), empty if none.
fn differences(jobs: &[String], a: &Run, b: &Run, bname: &str) -> Vec<String> {
    let mut d = Vec::new();
    match (json_counts(&a.json), json_counts(&b.json)) {
        (Ok(x), Ok(y)) if x != y => d.push(counts_diff(&x, &y, bname)),
        (Ok(_), Ok(_)) => {}
        (x, y) => d.push(format!("JSON: fio {:?}, {bname} {:?}", x.err(), y.err())),
    }
    let mut written = BTreeMap::new();
    for (i, name) in jobs.iter().enumerate() {
        let la = read_iolog(&a.dir.join(format!("iolog.{i}")), &a.dir);
        let lb = read_iolog(&b.dir.join(format!("iolog.{i}")), &b.dir);
        for log in [&la, &lb].into_iter().flatten() {
            for io in &log.ios {
                if io.0 == "write" || io.0 == "trim" {
                    written.insert(io.1.clone(), ());
                }
            }
        }
        let (la, lb) = match (la, lb) {
            (None, None) => continue,
            (Some(x), Some(y)) => (x, y),
            (x, y) => {
                d.push(format!(
                    "job [{name}]: write_iolog written by fio: {}, by {bname}: {}",
                    x.is_some(),
                    y.is_some()
                ));
                continue;
            }
        };
        if let Some(line) = la.torn.as_ref().or(lb.torn.as_ref()) {
            // Clones' lines interleaved mid-line: only counts and bytes
            // compare (fio's log; iolab writes whole lines).
            if lb.torn.is_some() {
                d.push(format!(
                    "job [{name}]: {bname}'s write_iolog has a torn line: {line}"
                ));
            }
            continue;
        }
        if let Some(x) = iolog_diff(&la, &lb) {
            d.push(format!("job [{name}]: {x}"));
        }
    }
    for file in written.keys() {
        let x = std::fs::read(a.dir.join(file)).ok();
        let y = std::fs::read(b.dir.join(file)).ok();
        if x != y {
            let at = match (&x, &y) {
                (Some(x), Some(y)) => {
                    let first = x.iter().zip(y.iter()).position(|(p, q)| p != q);
                    match first {
                        Some(p) => format!("first differing byte at {p}"),
                        None => format!("sizes {} and {}", x.len(), y.len()),
                    }
                }
                _ => format!(
                    "present after fio: {}, after {bname}: {}",
                    x.is_some(),
                    y.is_some()
                ),
            };
            d.push(format!("file {file}: bytes differ ({at})"));
        }
    }
    d
}

fn counts_diff(x: &Counts, y: &Counts, bname: &str) -> String {
    if x.len() != y.len() {
        return format!("JSON: {} jobs from fio, {} from {bname}", x.len(), y.len());
    }
    let (i, (p, q)) = x
        .iter()
        .zip(y)
        .enumerate()
        .find(|(_, (p, q))| p != q)
        .expect("some job differs");
    format!(
        "JSON job {i} ({} / {}): (ios, bytes) read/write/trim fio {:?}, {bname} {:?}",
        p.0, q.0, p.1, q.1
    )
}

fn iolog_diff(a: &Iolog, b: &Iolog) -> Option<String> {
    let (mut x, mut y) = (a.ios.clone(), b.ios.clone());
    let several = a.writers > 1 || b.writers > 1;
    if several {
        x.sort();
        y.sort();
    }
    if x == y {
        return None;
    }
    let i = x
        .iter()
        .zip(&y)
        .position(|(p, q)| p != q)
        .unwrap_or(x.len().min(y.len()));
    Some(format!(
        "write_iolog{} differs at I/O {i} of {}/{}: fio {}, iolab {}",
        if several {
            " (sorted: several clones)"
        } else {
            ""
        },
        x.len(),
        y.len(),
        show(x.get(i)),
        show(y.get(i)),
    ))
}

fn text_of(path: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned()
}

fn run_file(path: &Path, scratch: &Path) -> (Outcome, Vec<String>) {
    let text = text_of(path);
    let fio_dir = scratch.join("fio");
    let iolab_dir = scratch.join("iolab");
    let fio_job = capped(&text, &fio_dir);
    let iolab_job = capped(&text, &iolab_dir);
    let notes = fio_job.notes.clone();
    if let Some(engine) = &fio_job.not_here {
        return (
            Outcome::NotHere(format!("ioengine={engine} cannot run on this machine")),
            notes,
        );
    }
    // The two tools run side by side: each on its own directory.
    let (fio, iolab) = std::thread::scope(|s| {
        let f = s.spawn(|| run_tool("fio", &fio_job, &fio_dir));
        let i = run_tool("iolab", &iolab_job, &iolab_dir);
        (f.join().expect("fio runner"), i)
    });
    let outcome = match (fio.ok, iolab.ok) {
        (false, false) => Outcome::BothRefuse(fio.why, iolab.why),
        (false, true) => Outcome::FioRefuses(fio.why),
        (true, false) => Outcome::IolabRefuses(iolab.why),
        (true, true) => {
            let d = differences(&fio_job.jobs, &fio, &iolab, "iolab");
            if d.is_empty() {
                Outcome::Same
            } else {
                let mut text = d[..d.len().min(3)].join("; ");
                if d.len() > 3 {
                    text += &format!("; and {} more", d.len() - 3);
                }
                // With IOLAB_TWIN_FIO_TWICE set: does fio agree with itself
                // on this file? A reason to list the file, not a difference
                // of iolab's (off by default: it costs a third run).
                if std::env::var_os("IOLAB_TWIN_FIO_TWICE").is_some() {
                    let dir2 = scratch.join("fio2");
                    let again = run_tool("fio", &capped(&text_of(path), &dir2), &dir2);
                    if again.ok {
                        let own = differences(&fio_job.jobs, &fio, &again, "fio again");
                        if let Some(first) = own.first() {
                            text += &format!(" [fio differs from itself: {first}]");
                        }
                    }
                }
                Outcome::Differs(text)
            }
        }
    };
    (outcome, notes)
}

/// docs/fio-compat.md's table: job key -> why it is listed.
pub fn listed() -> BTreeMap<String, String> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/fio-compat.md"))
            .expect("docs/fio-compat.md");
    let start = doc
        .find(SECTION)
        .expect("docs/fio-compat.md has a \"## Jobs that differ from fio, and why\" section");
    let section = &doc[start + 1..];
    let section = section[2..]
        .find("\n## ")
        .map_or(section, |e| &section[..e + 2]);
    let mut out = BTreeMap::new();
    for line in section.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() >= 4 {
            let key = cells[1].trim_matches('`');
            if ["examples/", "t/jobs/", "corpus/"]
                .iter()
                .any(|p| key.starts_with(p))
            {
                let prev = out.insert(key.to_string(), cells[3].to_string());
                assert!(prev.is_none(), "{key} is listed twice");
            }
        }
    }
    out
}

fn run_set(set: &str, dir: &Path) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "fio"))
        .collect();
    files.sort();
    let only = std::env::var("IOLAB_TWIN_ONLY").ok();
    let listed = listed();
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("scratch dir");
    let mut report = String::new();
    let mut tally: BTreeMap<&str, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut seen = Vec::new();
    for f in &files {
        let key = format!("{set}/{}", f.file_name().unwrap().to_string_lossy());
        seen.push(key.clone());
        if only.as_ref().is_some_and(|o| !key.contains(o.as_str())) {
            continue;
        }
        let (outcome, notes) = run_file(f, scratch.path());
        let reason = listed.get(&key);
        // A job fio itself does not repeat (seeds from the OS, timing) may
        // come out the same, or refused by both (an OS seed that neither
        // tool accepts), in one run and differ in the next: any outcome.
        let unrepeatable = reason.is_some_and(|r| r.starts_with("fio differs from itself"));
        let (kind, line, bad) = match (&outcome, reason) {
            (Outcome::Same, None) => ("same", "same".to_string(), false),
            (Outcome::Same, Some(_)) if unrepeatable => (
                "listed, same this time",
                "same this time (fio does not repeat it)".into(),
                false,
            ),
            (Outcome::Same, Some(_)) => (
                "listed but same",
                "NOW MATCHES fio: remove it from the list in docs/fio-compat.md".into(),
                true,
            ),
            (Outcome::BothRefuse(a, b), Some(_)) if unrepeatable => (
                "listed, refused by both this time",
                format!(
                    "refused by both this time (fio does not repeat it): fio: {a} | iolab: {b}"
                ),
                false,
            ),
            (Outcome::BothRefuse(a, b), None) => (
                "refused by both",
                format!("refused by both: fio: {a} | iolab: {b}"),
                false,
            ),
            (Outcome::NotHere(why), None) => ("not runnable here", why.clone(), false),
            (Outcome::BothRefuse(a, b), Some(_)) => (
                "listed but refused by both",
                format!(
                    "refused by both now (fio: {a} | iolab: {b}), not a difference: \
                     remove it from the list in docs/fio-compat.md"
                ),
                true,
            ),
            (Outcome::NotHere(why), Some(_)) => (
                "listed but not runnable here",
                format!("{why}: remove it from the list in docs/fio-compat.md"),
                true,
            ),
            (Outcome::Differs(d), r) => (
                if r.is_some() { "listed" } else { "differs" },
                format!("differs: {d}"),
                r.is_none(),
            ),
            (Outcome::FioRefuses(w), r) => (
                if r.is_some() {
                    "listed"
                } else {
                    "fio refuses, iolab runs"
                },
                format!("fio refuses ({w}), iolab runs it"),
                r.is_none(),
            ),
            (Outcome::IolabRefuses(w), r) => (
                if r.is_some() {
                    "listed"
                } else {
                    "iolab refuses"
                },
                format!("fio runs it, iolab refuses: {w}"),
                r.is_none(),
            ),
        };
        *tally.entry(kind).or_default() += 1;
        let listed_note = if reason.is_some() && !bad {
            " (listed)"
        } else {
            ""
        };
        report += &format!("{key}: {line}{listed_note}\n");
        if !notes.is_empty() {
            report += &format!("    capped: {}\n", notes.join(", "));
        }
        if bad {
            failures.push(format!("{key}: {line}"));
        }
    }
    if only.is_none() {
        for key in listed.keys().filter(|k| k.starts_with(&format!("{set}/"))) {
            if !seen.contains(key) {
                failures.push(format!(
                    "{key}: listed in docs/fio-compat.md, but no such job file"
                ));
            }
        }
    }
    let summary = tally
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ");
    println!("{report}{set}: {summary}");
    // The summary where a passing run shows it too.
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "fio_twin {set}: {summary}");
    assert!(
        failures.is_empty(),
        "{set}: jobs that differ from fio and are not listed in docs/fio-compat.md's \
         \"Jobs that differ from fio, and why\" (or listed and no longer differing):\n{}",
        failures.join("\n")
    );
}

#[test]
fn fio_twin_table_has_reasons() {
    let listed = listed();
    for (key, why) in &listed {
        assert!(why.len() > 10, "{key}: the reason says too little: {why}");
    }
}

#[test]
fn fio_twin_examples() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = Path::new("/usr/share/doc/fio/examples");
    if !dir.is_dir() {
        skip("needs Debian's fio examples (apt-get install fio-examples)");
        return;
    }
    run_set("examples", dir);
}

#[test]
fn fio_twin_t_jobs() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let Some(src) = crate::fio_suite::fio_source() else {
        skip(
            "needs fio 3.33's source: run .ci/run (apt-get source fio into \
             target/fio-source/), or set IOLAB_FIO_SOURCE",
        );
        return;
    };
    run_set("t/jobs", &src.join("t/jobs"));
}

#[test]
fn fio_twin_corpus() {
    if !ready(&[Need::Fio]) {
        return;
    }
    run_set(
        "corpus",
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio-corpus"),
    );
}
