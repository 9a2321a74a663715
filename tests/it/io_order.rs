//! The I/Os a job issues, in issue order, from iolab and from fio, for tests
//! that compare the two offset for offset (`fio_counts`, `zones`): psync at
//! depth 1 completes each I/O before the next, so iolab's per-I/O
//! `write_lat_log` (with `log_offset=1`) and fio's `write_iolog` both list
//! them in the order they were issued.

use std::path::Path;
use std::process::Command;

use crate::run_common::iolab_run;

/// One logged I/O: write?, offset, length.
pub type Io = (bool, u64, u64);

/// iolab's I/Os for `opts` on `file` (psync, depth 1).
pub fn iolab_ios(dir: &Path, file: &str, opts: &[&str]) -> Vec<Io> {
    let prefix = dir.join("il");
    let mut args = vec![
        "--name=c".to_string(),
        format!("--filename={file}"),
        "--ioengine=psync".into(),
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

/// fio's I/Os for the same options, from its `write_iolog` (callers check
/// that fio is installed).
pub fn fio_ios(dir: &Path, file: &str, opts: &[&str]) -> Vec<Io> {
    let log = dir.join("fio.iolog");
    let _ = std::fs::remove_file(&log);
    let out = Command::new("fio")
        .args([
            "--name=c",
            &format!("--filename={file}"),
            "--ioengine=psync",
        ])
        .arg(format!("--write_iolog={}", log.display()))
        .arg("--output=/dev/null")
        .args(opts)
        .output()
        .expect("run fio");
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
