//! `random_generator=lfsr`, I/O for I/O: fio's linear feedback shift
//! register over each file's blocks (its taps, its seed from the job's
//! offset seed, its extra first step, its reset at every loop), with and
//! without `norandommap` (fio keeps no random map for lfsr). fio and iolab
//! run the same size-bound job (psync, depth 1) on scratch files, and their
//! `write_iolog`s must list the same (file, op, offset, length) sequence.

use std::path::Path;
use std::process::Command;

use crate::backend_fio::sparse;
use crate::run_common::{FileReq as Req, iolab_run, iolog_file_requests as requests};
use crate::support::needs::{Need, ready};

/// Run `tool` in a fresh directory: on one scratch file of `file_len`
/// bytes, or (None) on the files the job lays out itself; returns the
/// requests its `write_iolog` lists.
fn run(tool: &str, dir: &Path, file_len: Option<u64>, opts: &[&str]) -> Vec<Req> {
    let work = dir.join(tool);
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let log = work.join("iolog");
    let mut args = vec![
        "--name=r".to_string(),
        "--ioengine=psync".into(),
        format!("--write_iolog={}", log.display()),
        "--output=/dev/null".into(),
    ];
    match file_len {
        Some(len) => args.push(format!("--filename={}", sparse(&work, "f", len))),
        None => args.push(format!("--directory={}", work.display())),
    }
    args.extend(opts.iter().map(|s| s.to_string()));
    if tool == "fio" {
        let out = Command::new("fio").args(&args).output().expect("run fio");
        assert!(out.status.success(), "fio {opts:?}: {out:?}");
    } else {
        let (code, out, err) = iolab_run(&args);
        assert_eq!(code, 0, "iolab {opts:?}: {err}\n{out}");
    }
    requests(&log)
}

/// fio and iolab issue the same requests for the job.
fn same_as_fio(dir: &Path, file_len: Option<u64>, opts: &[&str]) -> usize {
    let theirs = run("fio", dir, file_len, opts);
    let ours = run("iolab", dir, file_len, opts);
    assert!(theirs.len() >= 7, "fio logged too little for {opts:?}");
    if ours != theirs {
        let at = ours.iter().zip(&theirs).position(|(a, b)| a != b);
        panic!(
            "I/Os differ from fio's for {opts:?}: {} vs {} requests, first difference at {at:?}: \
             iolab {:?} fio {:?}",
            ours.len(),
            theirs.len(),
            at.and_then(|i| ours.get(i)),
            at.and_then(|i| theirs.get(i)),
        );
    }
    theirs.len()
}

/// One file: sizes whose block counts are and are not powers of two (and a
/// region that is not a whole number of blocks), both directions, with and
/// without the random map, seeds, and two loops.
const ONE_FILE: &[(u64, &[&str])] = &[
    (1 << 20, &["--size=1m", "--bs=4k", "--rw=randread"]),
    (1 << 20, &["--size=1m", "--bs=4k", "--rw=randwrite"]),
    (
        1 << 20,
        &["--size=1m", "--bs=4k", "--rw=randread", "--norandommap"],
    ),
    (1000 << 10, &["--size=1000k", "--bs=4k", "--rw=randwrite"]),
    (
        1000 << 10,
        &["--size=1000k", "--bs=4k", "--rw=randread", "--norandommap"],
    ),
    (1000 << 10, &["--size=1000k", "--bs=16k", "--rw=randread"]),
    (
        1000 << 10,
        &[
            "--size=1000k",
            "--bs=16k",
            "--rw=randwrite",
            "--norandommap",
        ],
    ),
    (
        3 << 20,
        &["--size=3m", "--bs=16k", "--rw=randread", "--randseed=42"],
    ),
    (
        3 << 20,
        &[
            "--size=3m",
            "--bs=16k",
            "--rw=randwrite",
            "--randseed=42",
            "--randrepeat=0",
        ],
    ),
    (28 << 10, &["--size=28k", "--bs=4k", "--rw=randread"]),
    (
        1 << 20,
        &["--size=1m", "--bs=4k", "--rw=randread", "--loops=2"],
    ),
    (
        1000 << 10,
        &[
            "--size=1000k",
            "--bs=16k",
            "--rw=randwrite",
            "--norandommap",
            "--loops=2",
        ],
    ),
    (
        1000 << 10,
        &[
            "--size=1000k",
            "--bs=4k",
            "--rw=randread",
            "--randseed=1234",
            "--randrepeat=0",
            "--loops=2",
        ],
    ),
    (
        1 << 20,
        &["--size=1m", "--bs=4k", "--rw=randrw", "--rwmixread=70"],
    ),
];

#[test]
fn lfsr_offsets_equal_fios() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for &(len, opts) in ONE_FILE {
        let mut o = opts.to_vec();
        o.push("--random_generator=lfsr");
        same_as_fio(dir.path(), Some(len), &o);
    }
}

/// Several files: each file has its own register (seeded alike), and
/// `file_service_type=random` picks files by fio's own draw (its file seed
/// slot), drawn again when it lands on a file that is done.
#[test]
fn lfsr_over_several_files_equals_fios() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for opts in [
        &["--size=1m", "--nrfiles=4", "--bs=4k", "--rw=randread"][..],
        &[
            "--size=1m",
            "--nrfiles=4",
            "--bs=4k",
            "--rw=randread",
            "--file_service_type=random",
        ],
        &[
            "--size=1000k",
            "--nrfiles=4",
            "--bs=4k",
            "--rw=randwrite",
            "--file_service_type=random",
            "--norandommap",
        ],
        &[
            "--size=1m",
            "--nrfiles=4",
            "--bs=16k",
            "--rw=randread",
            "--file_service_type=random:3",
            "--randseed=9",
            "--randrepeat=0",
        ],
        &[
            "--size=1m",
            "--nrfiles=4",
            "--bs=4k",
            "--rw=randread",
            "--file_service_type=sequential",
        ],
    ] {
        let mut o = opts.to_vec();
        o.push("--random_generator=lfsr");
        same_as_fio(dir.path(), None, &o);
    }
}

/// `file_service_type=random` with fio's default generator: the files come
/// in fio's order, offsets from the job's one draw (which fio also draws
/// from once on a file whose map is full, before it gives the file up).
/// (Not with `norandommap`: fio then keeps servicing a file past its share
/// of `size`, iolab does not.)
#[test]
fn random_file_service_equals_fios() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for opts in [
        &[
            "--size=1m",
            "--nrfiles=4",
            "--bs=4k",
            "--rw=randread",
            "--file_service_type=random",
        ][..],
        &[
            "--size=1000k",
            "--nrfiles=4",
            "--bs=4k",
            "--rw=randwrite",
            "--file_service_type=random:4",
        ],
        &[
            "--size=1m",
            "--nrfiles=4",
            "--bs=4k",
            "--rw=read",
            "--file_service_type=random:2",
        ],
    ] {
        same_as_fio(dir.path(), None, opts);
    }
}
