//! `iolab run` as a child process, for the end-to-end tests of the run command.

#![allow(dead_code)] // each test binary uses what it needs

use std::ffi::OsStr;
use std::process::Command;

use serde_json::Value;

/// Exit status, stdout and stderr of `iolab run ARGS...`.
pub fn iolab_run<S: AsRef<OsStr>>(args: &[S]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("run")
        .args(args)
        .output()
        .expect("run iolab");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `iolab run ARGS... --output-format=json`, which must succeed; its JSON.
pub fn run_json(args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--output-format=json");
    let (code, out, err) = iolab_run(&a);
    assert_eq!(code, 0, "iolab run {args:?} failed: {err}\n{out}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("invalid JSON ({e}): {out}"))
}

/// The requests of a version 3 iolog (`write_iolog`), in order: (time in
/// microseconds, action, offset, length); the file lines (`add`, `open`,
/// `close`) left out.
pub fn iolog_requests(path: &std::path::Path) -> Vec<(u64, String, u64, u64)> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.as_slice() {
                [t, _, a, off, len] => Some((
                    t.parse().ok()?,
                    a.to_string(),
                    off.parse().ok()?,
                    len.parse().ok()?,
                )),
                _ => None,
            }
        })
        .collect()
}

/// A request of a version 3 iolog with the name of its file (the last
/// part of the path the log gives): (file, action, offset, length).
pub type FileReq = (String, String, u64, u64);

/// The requests of a version 3 iolog in order, each with its file's name
/// (the tests that run fio and iolab side by side compare these).
pub fn iolog_file_requests(path: &std::path::Path) -> Vec<FileReq> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [t, f, a, off, len] if t.parse::<u64>().is_ok() => Some((
                std::path::Path::new(f)
                    .file_name()
                    .map_or(String::new(), |n| n.to_string_lossy().into_owned()),
                a.to_string(),
                off.parse().ok()?,
                len.parse().ok()?,
            )),
            _ => None,
        })
        .collect()
}

/// The I/O rows of a version 3 iolog (`write_iolog`) with this action
/// (`read`, `write`, `trim`...): (time in microseconds, offset, length).
pub fn iolog_rows(path: &std::path::Path, action: &str) -> Vec<(u64, u64, u64)> {
    iolog_requests(path)
        .into_iter()
        .filter(|r| r.1 == action)
        .map(|(t, _, off, len)| (t, off, len))
        .collect()
}
