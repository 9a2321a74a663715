//! filecreate, filestat, filedelete: one timed file operation per file. The
//! files each leaves (names, sizes, how many) and the I/O counts are compared
//! with fio 3.33's engines for the same job.

use std::path::Path;

use crate::backend_fio::fio;
use crate::run_common::{iolab_run, run_json};
use crate::support::needs::{Need, ready};

/// The directory's entries, sorted, with their sizes.
fn listing(dir: &Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    v.sort();
    v
}

fn job(engine: &str, dir: &Path, extra: &[&str]) -> Vec<String> {
    let mut a = vec![
        "--name=t".to_string(),
        format!("--ioengine={engine}"),
        "--nrfiles=20".into(),
        "--filesize=4k".into(),
        format!("--directory={}", dir.display()),
    ];
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

fn iolab_total(engine: &str, dir: &Path, extra: &[&str]) -> u64 {
    let a = job(engine, dir, extra);
    let args: Vec<&str> = a.iter().map(String::as_str).collect();
    let j = run_json(&args);
    j["jobs"][0]["read"]["total_ios"].as_u64().unwrap()
}

#[test]
fn filecreate_creates_each_file_once() {
    let d = tempfile::tempdir().unwrap();
    assert_eq!(iolab_total("filecreate", d.path(), &[]), 20);
    let l = listing(d.path());
    assert_eq!(l.len(), 20);
    assert!(
        l.iter().all(|(n, len)| n.starts_with("t.0.") && *len == 0),
        "{l:?}"
    );
}

#[test]
fn filestat_and_filedelete() {
    let d = tempfile::tempdir().unwrap();
    for st in ["stat", "lstat", "statx"] {
        let arg = format!("--stat_type={st}");
        assert_eq!(iolab_total("filestat", d.path(), &[&arg]), 20, "{st}");
    }
    // Laid out first, as fio lays them out; stat leaves them as they are.
    let l = listing(d.path());
    assert_eq!(l.len(), 20);
    assert!(l.iter().all(|(_, len)| *len == 4096), "{l:?}");
    assert_eq!(iolab_total("filedelete", d.path(), &[]), 20);
    assert!(listing(d.path()).is_empty());
    // filedelete lays the files out itself when they are missing.
    assert_eq!(iolab_total("filedelete", d.path(), &[]), 20);
    assert!(listing(d.path()).is_empty());
}

#[test]
fn bad_stat_type_and_wrong_engine_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let a = job("filestat", d.path(), &["--stat_type=fstat"]);
    let (code, _, err) = iolab_run(&a);
    assert_ne!(code, 0);
    assert!(
        err.contains("stat_type") && err.contains("stat, lstat or statx"),
        "{err}"
    );
    let a = job("filecreate", d.path(), &["--stat_type=statx"]);
    let (code, _, err) = iolab_run(&a);
    assert_ne!(code, 0);
    assert!(
        err.contains("stat_type is an option of ioengine=filestat"),
        "{err}"
    );
}

#[test]
fn files_and_counts_as_under_fio() {
    if !ready(&[Need::Fio]) {
        return;
    }
    for (engine, extra) in [
        ("filecreate", &[][..]),
        ("filestat", &["--stat_type=statx"][..]),
        ("filedelete", &[][..]),
    ] {
        let theirs = tempfile::tempdir().unwrap();
        let ours = tempfile::tempdir().unwrap();
        let a = job(engine, theirs.path(), extra);
        let mut args: Vec<&str> = a.iter().map(String::as_str).collect();
        args.push("--output-format=json");
        let out = std::process::Command::new("fio")
            .args(&args)
            .output()
            .unwrap();
        assert!(out.status.success(), "fio {engine}: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        let j: serde_json::Value =
            serde_json::from_str(&text[text.find('{').unwrap()..]).expect("fio's JSON");
        let fio_total = j["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
        assert_eq!(
            iolab_total(engine, ours.path(), extra),
            fio_total,
            "{engine}"
        );
        assert_eq!(
            listing(ours.path()),
            listing(theirs.path()),
            "{engine}: files left"
        );
        let _ = fio;
    }
}
