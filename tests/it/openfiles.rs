//! `openfiles` below `nrfiles`, with fio's meaning: the file service picks
//! from at most `openfiles` files, and a file is replaced by the next only
//! once its I/O is done (fio closes it and opens the next; iolab keeps every
//! descriptor open, so nothing changes on the request path). Seen from the
//! outside with strace: which descriptors the reads go to, in order, for
//! iolab and — when installed — for fio itself.

use std::path::Path;
use std::process::Command;

use crate::support::needs::{Need, ready};

/// The descriptors of the job's files' preads, in order, under `strace`.
fn pread_fds(cmd: &[String], dir: &Path) -> Vec<u32> {
    let out = dir.join("strace.txt");
    let mut a = vec![
        "-f".to_string(),
        "-e".into(),
        "trace=pread64".into(),
        "-e".into(),
        "signal=none".into(),
        "-o".into(),
        out.display().to_string(),
    ];
    a.extend(cmd.iter().cloned());
    let o = Command::new("strace").args(&a).output().expect("strace");
    assert!(
        o.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let rest = &l[l.find("pread64(")? + "pread64(".len()..];
            let fd: u32 = rest[..rest.find(',')?].parse().ok()?;
            // The job's 4 KiB reads only (not fio's or iolab's own file reads).
            l.contains(", 4096, ").then_some(fd)
        })
        .collect()
}

fn distinct(fds: &[u32]) -> Vec<u32> {
    let mut v = fds.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

fn job(dir: &Path, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "--name=o",
        "--nrfiles=4",
        "--openfiles=2",
        "--size=256k",
        "--bs=4k",
        "--rw=randread",
        "--ioengine=psync",
        "--file_service_type=roundrobin",
        "--output=/dev/null",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.push(format!("--directory={}", dir.display()));
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// Size-based: two files at a time, the first pair to its end, then the next.
fn check_waves(who: &str, fds: &[u32]) {
    assert_eq!(fds.len(), 64, "{who}: 256k in 4k reads");
    let (a, b) = fds.split_at(32);
    assert_eq!(distinct(a).len(), 2, "{who}: first half {a:?}");
    assert_eq!(distinct(b).len(), 2, "{who}: second half {b:?}");
    // Round robin inside the window: the two files alternate.
    assert!(a.windows(2).all(|w| w[0] != w[1]), "{who}: {a:?}");
}

#[test]
fn openfiles_services_files_in_windows_like_fio() {
    if !ready(&[Need::Strace]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = vec![env!("CARGO_BIN_EXE_iolab").to_string(), "run".into()];
    cmd.extend(job(dir.path(), &[]));
    let ours = pread_fds(&cmd, dir.path());
    check_waves("iolab", &ours);
    // iolab keeps all four descriptors: the second pair are other files.
    assert_eq!(distinct(&ours).len(), 4, "{ours:?}");

    // time_based: files never finish, so only the first two are read.
    let mut cmd = vec![env!("CARGO_BIN_EXE_iolab").to_string(), "run".into()];
    cmd.extend(job(dir.path(), &["--time_based", "--runtime=300ms"]));
    let timed = pread_fds(&cmd, dir.path());
    assert!(timed.len() > 64, "{}", timed.len());
    assert_eq!(
        distinct(&timed),
        distinct(&ours[..32]),
        "the first window only"
    );

    if !ready(&[Need::Fio]) {
        return;
    }
    let mut cmd = vec!["fio".to_string()];
    cmd.extend(job(dir.path(), &[]));
    let theirs = pread_fds(&cmd, dir.path());
    // fio reuses the closed files' descriptor numbers for the next pair, so
    // only the shape of each half is compared.
    check_waves("fio", &theirs);
}

#[test]
fn openfiles_at_or_above_nrfiles_changes_nothing() {
    if !ready(&[Need::Strace]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = vec![env!("CARGO_BIN_EXE_iolab").to_string(), "run".into()];
    cmd.extend(job(dir.path(), &["--openfiles=4"]));
    let fds = pread_fds(&cmd, dir.path());
    assert_eq!(fds.len(), 64);
    assert_eq!(
        distinct(&fds[..4]).len(),
        4,
        "all four files from the start: {fds:?}"
    );
}
