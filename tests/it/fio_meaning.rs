//! Job options whose meaning differed between fio 3.33 and iolab, each run
//! under both with fio as the reference: the same job (size-bound, psync at
//! depth 1) in two scratch directories, then the files each made, the
//! requests each `write_iolog` lists, the names each report gives, or each
//! one's verdict on the command line.
//!
//! - `name=` inside a section renames the job, not its files (`job1.0.0`),
//!   and numjobs' clones keep the section's name;
//! - `end_fsync`/`fsync_on_close` syncs are `sync` lines in the iolog;
//! - `nrfiles` above a `filename` list's length runs the listed files;
//! - `filename_format` with a `/` makes the directories under `directory=`;
//! - a unique beginning of a long option is that option on the command line;
//! - pvsync2 `hipri=1` runs where nothing can be polled;
//! - a per-direction value with every part empty (`rate=,`) is refused;
//! - `--parse-only` with options and no job parses them.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::needs::{Need, ready};

/// Exit status, stdout and stderr of fio (`fio: true`) or `iolab run` with
/// `args`, run in `dir`.
fn run_in(dir: &Path, fio: bool, args: &[String]) -> (i32, String, String) {
    let mut c = if fio {
        Command::new("fio")
    } else {
        let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
        c.arg("run");
        c
    };
    let out = c
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run the tool");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn strings(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// Every path under `dir` (relative, directories marked with a trailing
/// `/`), sorted; files named in `except` left out.
fn tree(dir: &Path, except: &[&str]) -> Vec<String> {
    fn walk(root: &Path, d: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            if p.is_dir() {
                out.push(format!("{rel}/"));
                walk(root, &p, out);
            } else {
                out.push(rel);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.retain(|p| !except.contains(&p.as_str()));
    out.sort();
    out
}

/// A fresh directory for each tool under `root`.
fn dirs(root: &Path) -> (PathBuf, PathBuf) {
    let (f, i) = (root.join("fio"), root.join("iolab"));
    for d in [&f, &i] {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).unwrap();
    }
    (f, i)
}

/// Run `args` under both tools in their own directories; both must succeed.
/// Returns (fio's, iolab's) stdout.
fn both_ok(root: &Path, args: &[String]) -> (PathBuf, PathBuf, String, String) {
    let (fd, id) = dirs(root);
    let (fc, fout, ferr) = run_in(&fd, true, args);
    assert_eq!(fc, 0, "fio {args:?}: {ferr}\n{fout}");
    let (ic, iout, ierr) = run_in(&id, false, args);
    assert_eq!(ic, 0, "iolab {args:?}: {ierr}\n{iout}");
    (fd, id, fout, iout)
}

/// The iolog's request and close lines without their times: `FILE ACTION
/// [OFFSET LENGTH]` (fio opens each file at its first I/O, iolab all before
/// the first: the `add` and `open` lines are left out).
fn iolog_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        .filter(|l| !l.ends_with(" add") && !l.ends_with(" open"))
        .collect()
}

/// Sync lines keep their file and action (fio's repeat a reused request's
/// old offset, iolab's say 0).
fn without_sync_offsets(lines: Vec<String>) -> Vec<String> {
    lines
        .into_iter()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            match f.as_slice() {
                [file, "sync", ..] => format!("{file} sync"),
                _ => l,
            }
        })
        .collect()
}

fn jobnames(json: &str) -> Vec<String> {
    let v: serde_json::Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("JSON ({e}): {json}"));
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["jobname"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn name_renames_the_job_and_leaves_its_files_and_clones_the_sections_name() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "[job1]\nname=seqread\nrw=write\nsize=16k\nbs=4k\nnumjobs=2\n",
            &["job1.0.0", "job1.1.0"],
            &["seqread", "job1"],
        ),
        (
            "[job1]\nname=seqread\nrw=write\nsize=16k\nbs=4k\nnrfiles=2\n\
             filename_format=$jobname-$filenum\n",
            &["job1-0", "job1-1"],
            &["seqread"],
        ),
    ];
    for (job, files, names) in cases {
        let (fd, id) = dirs(tmp.path());
        let mut got = Vec::new();
        for (d, fio) in [(&fd, true), (&id, false)] {
            std::fs::write(d.join("j.fio"), job).unwrap();
            let (c, out, err) = run_in(d, fio, &strings(&["--output-format=json", "j.fio"]));
            assert_eq!(c, 0, "fio={fio} {job}: {err}\n{out}");
            got.push((tree(d, &["j.fio"]), jobnames(&out)));
        }
        assert_eq!(got[0], got[1], "{job}: fio (left) and iolab (right) differ");
        assert_eq!(got[1].0, *files, "{job}");
        assert_eq!(got[1].1, *names, "{job}");
    }
}

#[test]
fn end_syncs_are_in_the_iolog_as_fios_are() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], usize)] = &[
        (&["--rw=write", "--end_fsync=1"], 2),
        (&["--rw=write", "--fsync_on_close=1"], 2),
        (&["--rw=write", "--end_fsync=1", "--fsync_on_close=1"], 2),
        (&["--rw=readwrite", "--fsync_on_close=1"], 2),
        // A job that does not write is not synced.
        (&["--rw=read", "--end_fsync=1"], 0),
    ];
    for (opts, syncs) in cases {
        let mut args = strings(&[
            "--name=j",
            "--ioengine=psync",
            "--bs=4k",
            "--size=32k",
            "--nrfiles=2",
            "--write_iolog=log",
            "--output=/dev/null",
        ]);
        args.extend(strings(opts));
        let (fd, id, _, _) = both_ok(tmp.path(), &args);
        let fio = without_sync_offsets(iolog_lines(&fd.join("log")));
        let iolab = without_sync_offsets(iolog_lines(&id.join("log")));
        assert_eq!(
            fio.iter().filter(|l| l.ends_with(" sync")).count(),
            *syncs,
            "{opts:?}: fio's log {fio:#?}"
        );
        assert_eq!(iolab, fio, "{opts:?}: iolab's log (left), fio's (right)");
    }
}

#[test]
fn nrfiles_above_the_filename_lists_length_runs_the_listed_files() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for order in [
        ["--filename=a", "--nrfiles=3"],
        ["--nrfiles=3", "--filename=a"],
    ] {
        let mut args = strings(&[
            "--name=j",
            "--ioengine=psync",
            "--rw=write",
            "--bs=4k",
            "--size=12k",
            "--write_iolog=log",
            "--output=/dev/null",
        ]);
        args.extend(strings(&order));
        let (fd, id, _, _) = both_ok(tmp.path(), &args);
        assert_eq!(
            tree(&id, &[]),
            tree(&fd, &[]),
            "{order:?}: iolab's files, fio's"
        );
        assert_eq!(iolog_lines(&id.join("log")), iolog_lines(&fd.join("log")));
        assert_eq!(std::fs::metadata(id.join("a")).unwrap().len(), 12 << 10);
    }
    // Fewer than listed stays refused: fio would size each file as
    // size/nrfiles and still use them all.
    let (_, id) = dirs(tmp.path());
    let (c, _, err) = run_in(
        &id,
        false,
        &strings(&["--name=j", "--filename=a:b:c", "--nrfiles=2", "--size=12k"]),
    );
    assert_ne!(c, 0);
    assert!(err.contains("nrfiles=2 is fewer"), "{err}");
}

#[test]
fn filename_format_makes_the_directories_under_directory() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // One file per job: fio makes the directories of a job's first file
    // only, so this is where fio's own runs succeed.
    for unlink in ["0", "1"] {
        let (fd, id) = dirs(tmp.path());
        for d in [&fd, &id] {
            std::fs::create_dir(d.join("sub")).unwrap();
        }
        let args = strings(&[
            "--name=j",
            "--ioengine=psync",
            "--rw=write",
            "--bs=4k",
            "--size=8k",
            "--numjobs=2",
            "--directory=sub",
            "--filename_format=$filenum/$jobnum/f",
            &format!("--unlink={unlink}"),
            "--output=/dev/null",
        ]);
        let (fc, _, ferr) = run_in(&fd, true, &args);
        assert_eq!(fc, 0, "fio: {ferr}");
        let (ic, _, ierr) = run_in(&id, false, &args);
        assert_eq!(ic, 0, "iolab: {ierr}");
        let got = tree(&id, &[]);
        assert_eq!(got, tree(&fd, &[]), "unlink={unlink}: iolab's tree, fio's");
        assert!(got.contains(&"sub/0/1/".to_string()), "{got:?}");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(id.join("sub/0")).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o700, "fio makes them 0700");
    }
    // directory= itself must exist, as fio requires.
    let (_, id) = dirs(tmp.path());
    let (c, _, err) = run_in(
        &id,
        false,
        &strings(&["--name=j", "--directory=missing", "--size=8k"]),
    );
    assert_ne!(c, 0);
    assert!(
        err.contains("directory=missing is not a directory"),
        "{err}"
    );
}

/// fio's candidates in its "is ambiguous" message, sorted.
fn candidates(stderr: &str, marker: &str) -> Vec<String> {
    let Some(line) = stderr.lines().find(|l| l.contains(marker)) else {
        return Vec::new();
    };
    let rest = line.split(marker).nth(1).unwrap();
    let mut out: Vec<String> = rest
        .split(|c: char| c == '\'' || c == ',' || c == ';' || c.is_whitespace())
        .filter(|w| w.starts_with("--"))
        .map(str::to_string)
        .collect();
    out.sort();
    out
}

#[test]
fn a_unique_beginning_of_a_long_option_is_that_option() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (fd, id) = dirs(tmp.path());
    // (argument, the option fio's debug output then handles, or None: ambiguous)
    let cases: &[(&str, Option<&str>)] = &[
        ("--runt=1", Some("handle_option=runtime, ptr=1")),
        ("--time_ba=1", Some("handle_option=time_based, ptr=1")),
        ("--rwmixr=30", Some("handle_option=rwmixread, ptr=30")),
        ("--ra=1", None),
        ("--outp=/dev/null", None),
        ("--rwmix=30", None),
    ];
    for (arg, handled) in cases {
        let args = strings(&[
            "--debug=parse",
            "--name=j",
            "--size=4k",
            "--filename=x",
            arg,
            "--parse-only",
        ]);
        let (fc, fout, ferr) = run_in(&fd, true, &args);
        let (ic, iout, ierr) = run_in(&id, false, &args);
        match handled {
            Some(h) => {
                assert_eq!((fc, ic), (0, 0), "{arg}: fio {ferr}; iolab {ierr}");
                assert!(fout.contains(h), "{arg}: fio: {fout}");
                assert!(iout.contains(h), "{arg}: iolab: {iout}");
            }
            None => {
                assert_ne!(fc, 0, "{arg}: fio accepted it");
                assert_ne!(ic, 0, "{arg}: iolab accepted it");
                let want = candidates(&ferr, "possibilities:");
                assert!(!want.is_empty(), "{arg}: {ferr}");
                assert_eq!(candidates(&ierr, "it begins"), want, "{arg}: {ierr}");
            }
        }
    }
}

#[test]
fn pvsync2_hipri_runs_where_nothing_is_polled() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for direct in ["0", "1"] {
        let args = strings(&[
            "--name=j",
            "--ioengine=pvsync2",
            "--hipri=1",
            &format!("--direct={direct}"),
            "--rw=write",
            "--bs=4k",
            "--size=32k",
            "--write_iolog=log",
            "--output=/dev/null",
            "--notes",
        ]);
        let (fd, id) = dirs(tmp.path());
        let (fc, _, ferr) = run_in(&fd, true, &args[..args.len() - 1]);
        if fc != 0 && direct == "1" && ferr.contains("Invalid argument") {
            // A filesystem without O_DIRECT: fio cannot run it either.
            continue;
        }
        assert_eq!(fc, 0, "fio direct={direct}: {ferr}");
        let (ic, iout, ierr) = run_in(&id, false, &args);
        assert_eq!(ic, 0, "iolab direct={direct}: {ierr}\n{iout}");
        assert!(
            ierr.contains("hipri is accepted, but polls only where"),
            "{ierr}"
        );
        assert_eq!(iolog_lines(&id.join("log")), iolog_lines(&fd.join("log")));
    }
}

#[test]
fn a_per_direction_value_with_every_part_empty_is_refused_as_fio_refuses_it() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (fd, id) = dirs(tmp.path());
    let cases: &[(&str, bool)] = &[
        ("--rate=,", false),
        ("--rate=,,", false),
        ("--rate_iops=,", false),
        ("--rate_min=,", false),
        ("--bs=,", false),
        ("--blocksize_range=,", false),
        ("--rate=1m,", true),
        ("--rate=,1m", true),
        ("--bs=4k,", true),
        ("--bssplit=,", true),
    ];
    for (arg, ok) in cases {
        let args = strings(&[
            "--name=j",
            "--size=12k",
            "--rw=write",
            "--filename=a",
            arg,
            "--parse-only",
        ]);
        let (fc, _, ferr) = run_in(&fd, true, &args);
        let (ic, _, ierr) = run_in(&id, false, &args);
        assert_eq!(fc == 0, *ok, "{arg}: fio {ferr}");
        assert_eq!(ic == 0, *ok, "{arg}: iolab {ierr}");
        if !ok {
            // The option's own name (blocksize_range is bsrange's alias).
            let key = arg.trim_start_matches("--").split('=').next().unwrap();
            let key = if key == "blocksize_range" {
                "bsrange"
            } else {
                key
            };
            assert!(
                ierr.contains(&format!("option '{key}'"))
                    && ierr.contains("but not every part empty"),
                "{arg}: {ierr}"
            );
        }
    }
}

#[test]
fn parse_only_without_a_job_parses_the_options() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (fd, id) = dirs(tmp.path());
    // fio's own steadystate_tests.py checks these lines.
    for (ss, line) in [
        ("iops:10", "set steady state IOPS threshold to 10.000000"),
        ("iops:10%", "set steady state threshold to 10.000000%"),
        ("iops:.1%", "set steady state threshold to 0.100000%"),
        ("bw:10%", "set steady state threshold to 10.000000%"),
        ("bw:12", "set steady state BW threshold to 12"),
    ] {
        let args = strings(&[
            "--parse-only",
            "--debug=parse",
            "--ss_dur=10s",
            &format!("--ss={ss}"),
            "--ss_ramp=5",
        ]);
        for (d, fio) in [(&fd, true), (&id, false)] {
            let (c, out, err) = run_in(d, fio, &args);
            assert_eq!(c, 0, "fio={fio} --ss={ss}: {err}");
            assert!(out.contains(line), "fio={fio} --ss={ss}: {out}");
        }
    }
    // Without --parse-only a run still needs a job, as fio's does.
    let (c, _, err) = run_in(&id, false, &strings(&["--ss_dur=10s"]));
    assert_ne!(c, 0);
    assert!(err.contains("no jobs defined"), "{err}");
}
