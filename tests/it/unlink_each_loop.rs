//! `unlink_each_loop` with `loops` above 1, against fio 3.33: the job's file
//! is deleted before each loop after the first and made again, so a job of
//! three loops deletes it twice (strace counts the unlink calls of both
//! tools) and does fio's I/O count; the last loop's file stays. A job that
//! reads gets its file laid out again (fio 3.33 stops with ENOENT there).

use std::path::Path;
use std::process::Command;

use crate::run_common::{iolab_run, run_json};
use crate::support::needs::{Need, ready};

/// Successful unlink calls on `path` in an strace log.
fn unlinks(log: &Path, path: &Path) -> usize {
    let name = path.display().to_string();
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter(|l| l.contains("unlink") && l.contains(&name) && l.trim_end().ends_with("= 0"))
        .count()
}

/// `tool` (fio, or iolab's binary with `run`) under strace: its unlinks of
/// `file`, and its JSON output.
fn traced(tool: &str, args: &[String], dir: &Path, file: &Path) -> (usize, serde_json::Value) {
    let log = dir.join(format!(
        "{}.strace",
        Path::new(tool).file_name().unwrap().display()
    ));
    let mut cmd = Command::new("strace");
    cmd.arg("-f")
        .arg("-e")
        .arg("trace=unlink,unlinkat")
        .arg("-o")
        .arg(&log)
        .arg(tool);
    if tool != "fio" {
        cmd.arg("run");
    }
    let out = cmd
        .args(args)
        .arg("--output-format=json")
        .output()
        .expect("run strace");
    assert!(out.status.success(), "{tool} {args:?}: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    // fio may print lines before its JSON.
    let json = &text[text.find('{').expect("JSON output")..];
    let doc = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {text}"));
    (unlinks(&log, file), doc)
}

#[test]
fn files_are_made_again_between_loops_as_fios_are() {
    if !ready(&[Need::Strace, Need::Fio]) {
        return;
    }
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = d.path().join("j.0.0");
    for loops in [3u64, 1] {
        let args: Vec<String> = [
            "--name=j",
            &format!("--directory={}", d.path().display()),
            "--ioengine=psync",
            "--rw=write",
            "--bs=4k",
            "--size=1m",
            "--unlink_each_loop=1",
            &format!("--loops={loops}"),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let _ = std::fs::remove_file(&file);
        let (fio_unlinks, fio) = traced("fio", &args, d.path(), &file);
        assert!(file.exists(), "fio keeps the last loop's file");
        let _ = std::fs::remove_file(&file);
        let (ours_unlinks, ours) = traced(env!("CARGO_BIN_EXE_iolab"), &args, d.path(), &file);
        let writes = |doc: &serde_json::Value| doc["jobs"][0]["write"]["total_ios"].as_u64();
        eprintln!(
            "loops={loops}: fio {fio_unlinks} unlinks, {:?} writes; iolab {ours_unlinks}, {:?}",
            writes(&fio),
            writes(&ours)
        );
        assert_eq!(fio_unlinks as u64, loops - 1, "fio's unlinks");
        assert_eq!(ours_unlinks, fio_unlinks, "unlinks differ from fio's");
        assert_eq!(writes(&ours), writes(&fio), "writes differ from fio's");
        assert_eq!(writes(&ours), Some(256 * loops));
        assert!(file.exists(), "the last loop's file stays, as fio's");
        assert_eq!(std::fs::metadata(&file).unwrap().len(), 1 << 20);
    }
}

/// A job that reads: every loop reads a laid-out file (no error, no short
/// read), and the file made again is a new one (its own inode while the
/// old one is still held open here, so the number cannot be reused).
#[test]
fn a_reading_job_reads_a_file_laid_out_again() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = format!("--directory={}", d.path().display());
    let job = [
        "--name=r",
        dir.as_str(),
        "--ioengine=psync",
        "--rw=read",
        "--bs=4k",
        "--size=256k",
    ];
    run_json(&job);
    let file = d.path().join("r.0.0");
    let held = std::fs::File::open(&file).unwrap();
    let before = std::os::unix::fs::MetadataExt::ino(&held.metadata().unwrap());
    let mut a = job.to_vec();
    a.extend(["--unlink_each_loop=1", "--loops=3"]);
    let doc = run_json(&a);
    let r = &doc["jobs"][0]["read"];
    assert_eq!(r["total_ios"].as_u64(), Some(192), "{r}");
    assert_eq!(r["short_ios"].as_u64(), Some(0), "{r}");
    let after = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&file).unwrap());
    assert_ne!(before, after, "the file was not made again");
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 256 << 10);
}

#[test]
fn several_files_per_job_are_refused_with_loops() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (code, out, err) = iolab_run(&[
        "--name=j",
        &format!("--directory={}", d.path().display()),
        "--nrfiles=2",
        "--size=64k",
        "--rw=write",
        "--unlink_each_loop=1",
        "--loops=2",
    ]);
    assert_ne!(code, 0, "{out}");
    assert!(
        err.contains("unlink_each_loop") && err.contains("one file per job"),
        "{err}"
    );
}
