//! The I/Os a job issues under fio and under iolab with any engine, for the
//! engine tests that compare the two (`backend_mmap`, `backend_space`, ...):
//! depth 1, so fio's `write_iolog` and iolab's per-I/O latency log (with
//! `log_offset=1`) list them in issue order.

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use crate::io_order::Io;
use crate::run_common::iolab_run;

/// iolab's I/Os for `opts` (which name the engine and the file).
pub fn iolab_ios(dir: &Path, opts: &[&str]) -> Vec<Io> {
    let prefix = dir.join("il");
    let mut args = vec![
        "--name=c".to_string(),
        format!("--write_lat_log={}", prefix.display()),
        "--log_offset=1".into(),
    ];
    args.extend(opts.iter().map(|s| s.to_string()));
    let (code, out, err) = iolab_run(&args);
    assert_eq!(code, 0, "iolab run {args:?}: {err}\n{out}");
    let log = dir.join("il_lat.1.log");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    text.lines()
        .map(|l| {
            let c: Vec<u64> = l.split(',').map(|v| v.trim().parse().unwrap()).collect();
            (c[2] == 1, c[4], c[3])
        })
        .collect()
}

/// fio's I/Os for the same options (callers check that fio is installed).
pub fn fio_ios(dir: &Path, opts: &[&str]) -> Vec<Io> {
    let log = dir.join("fio.iolog");
    let _ = std::fs::remove_file(&log);
    let out = fio(&[
        &["--name=c", &format!("--write_iolog={}", log.display())],
        opts,
    ]
    .concat());
    assert!(out.status.success(), "fio {opts:?}: {out:?}");
    std::fs::read_to_string(&log)
        .expect("fio's iolog")
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.as_slice() {
                [.., op @ ("read" | "write"), off, len] => {
                    Some((*op == "write", off.parse().ok()?, len.parse().ok()?))
                }
                _ => None,
            }
        })
        .collect()
}

/// `fio ARGS... --output=/dev/null`.
pub fn fio(args: &[&str]) -> std::process::Output {
    Command::new("fio")
        .args(args)
        .arg("--output=/dev/null")
        .output()
        .expect("run fio")
}

/// (reads, writes) of a list of I/Os.
pub fn counts(ios: &[Io]) -> (usize, usize) {
    let w = ios.iter().filter(|i| i.0).count();
    (ios.len() - w, w)
}

/// A scratch file of `len` bytes, sparse (recreated, so every run starts alike).
pub fn sparse(dir: &Path, name: &str, len: u64) -> String {
    let p = dir.join(name);
    let _ = std::fs::remove_file(&p);
    std::fs::File::create(&p)
        .and_then(|f| f.set_len(len))
        .expect("scratch file");
    p.display().to_string()
}

/// (size, 512-byte blocks allocated) of a file.
pub fn size_and_blocks(path: &str) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).expect("stat");
    (m.len(), m.blocks())
}
