//! fio's random streams, I/O for I/O: random offsets (through fio's random
//! map, or without it), block sizes from `bsrange`/`bssplit`, a mixed job's
//! directions, the seeds of each job clone (`randseed`, `randrepeat`,
//! `numjobs`) and `random_generator=tausworthe64` come from fio's own
//! generators, seeded as fio 3.33 seeds them (`workload::fio_rand`). fio and
//! iolab run the same size-bound job (psync, depth 1) on scratch files, and
//! their `write_iolog`s must list the same (op, offset, length) sequence.

use std::path::Path;
use std::process::Command;

use crate::backend_fio::sparse;
use crate::run_common::{FileReq as Req, iolab_run, iolog_file_requests as requests};
use crate::support::needs::{Need, ready};

/// Each file's requests in order (clones interleave in time; a file's own
/// order is its clone's issue order).
fn by_file(mut reqs: Vec<Req>) -> Vec<Req> {
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    reqs
}

/// Run `tool` on a fresh directory with the job's options; returns the
/// requests its `write_iolog` lists and the files' bytes.
fn run(tool: &str, dir: &Path, file: Option<&str>, opts: &[&str]) -> (Vec<Req>, Vec<Vec<u8>>) {
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
    match file {
        Some(name) => args.push(format!("--filename={}", sparse(&work, name, 1 << 20))),
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
    let reqs = requests(&log);
    let mut names: Vec<_> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n != "iolog"))
        .collect();
    names.sort();
    let bytes = names.iter().map(|p| std::fs::read(p).unwrap()).collect();
    (reqs, bytes)
}

/// Jobs on one scratch file of 1 MiB.
const ONE_FILE: &[&[&str]] = &[
    &["--size=1m", "--bs=4k", "--rw=randread"],
    &["--size=1m", "--bs=4k", "--rw=randwrite"],
    &["--size=1m", "--bs=4k", "--rw=randrw", "--rwmixread=70"],
    &["--size=1m", "--bs=4k", "--rw=randread", "--norandommap"],
    &["--size=1m", "--bssplit=4k/50:8k/30:16k/20", "--rw=randread"],
    &[
        "--size=1m",
        "--bssplit=4k/50:8k/30:16k/20",
        "--rw=randread",
        "--norandommap",
    ],
    &["--size=1m", "--bsrange=4k-16k", "--rw=randread"],
    &["--size=1m", "--bsrange=4k-64k", "--rw=randwrite"],
    &["--size=1m", "--bssplit=4k/10:64k/90", "--rw=randrw"],
    &["--size=1m", "--bsrange=4k-16k", "--rw=read"],
    &[
        "--size=1m",
        "--bs=4k",
        "--rw=randread",
        "--random_generator=tausworthe64",
    ],
    // randseed with randrepeat=0 seeds offsets from randseed; with the
    // default randrepeat=1 fio keeps its fixed offset seed.
    &[
        "--size=1m",
        "--bs=4k",
        "--rw=randrw",
        "--randseed=42",
        "--randrepeat=0",
    ],
    &["--size=1m", "--bs=4k", "--rw=randread", "--randseed=42"],
    // A second loop starts from the same seeds again (randrepeat=1).
    &[
        "--size=1m",
        "--bsrange=4k-16k",
        "--rw=randread",
        "--loops=2",
    ],
];

#[test]
fn random_offsets_and_sizes_equal_fios() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for &opts in ONE_FILE {
        let (theirs, _) = run("fio", dir.path(), Some("f"), opts);
        let (ours, _) = run("iolab", dir.path(), Some("f"), opts);
        assert!(theirs.len() > 16, "fio logged too little for {opts:?}");
        assert_eq!(ours, theirs, "I/Os differ from fio's for {opts:?}");
    }
}

/// numjobs=4: each clone has its own file (r.N.0) and its own seeds, by
/// fio's thread numbers (the job first, then its clones from the last).
#[test]
fn clones_draw_their_own_streams_as_fios_do() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for opts in [
        &["--size=256k", "--bs=4k", "--rw=randread", "--numjobs=4"][..],
        &[
            "--size=256k",
            "--bssplit=4k/60:16k/40",
            "--rw=randrw",
            "--numjobs=4",
        ],
        &[
            "--size=256k",
            "--bs=4k",
            "--rw=randread",
            "--numjobs=3",
            "--randseed=7",
            "--randrepeat=0",
        ],
    ] {
        let (theirs, _) = run("fio", dir.path(), None, opts);
        let (ours, _) = run("iolab", dir.path(), None, opts);
        assert!(theirs.len() > 16, "fio logged too little for {opts:?}");
        assert_eq!(
            by_file(ours),
            by_file(theirs),
            "I/Os differ from fio's for {opts:?}"
        );
    }
}
