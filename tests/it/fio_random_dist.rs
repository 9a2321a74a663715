//! fio's `random_distribution` draws, I/O for I/O: zipf, pareto and normal
//! offsets come from fio's own per-file state (`workload::fio_dist`), seeded
//! as fio 3.33 seeds it (a hash of the file's name times the thread number
//! under the default randrepeat=1, the job's offset seed with `randseed=`);
//! zoned and zoned_abs from fio's zone and offset generators.
//! The file's name is part of the seed, so both tools run on the same path:
//! fio first, then iolab on a fresh file at the same place. Their
//! `write_iolog`s must list the same (file, op, offset, length) sequence.

use std::path::Path;
use std::process::Command;

use crate::backend_fio::sparse;
use crate::run_common::{FileReq as Req, iolab_run, iolog_file_requests as requests};
use crate::support::needs::{Need, ready};

/// Run `tool` with the job's options on `target`: a scratch file of 4 MiB
/// (`--filename`) or, when `None`, fresh files in the directory `dir/d`
/// (`--directory`, one per clone). Returns the logged requests, grouped by
/// file in each file's own order (clones interleave in time).
fn run(tool: &str, dir: &Path, one_file: bool, opts: &[&str]) -> Vec<Req> {
    let data = dir.join("d");
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).unwrap();
    let log = dir.join(format!("{tool}.iolog"));
    let _ = std::fs::remove_file(&log);
    let mut args = vec![
        "--name=r".to_string(),
        "--ioengine=psync".into(),
        format!("--write_iolog={}", log.display()),
        "--output=/dev/null".into(),
    ];
    if one_file {
        args.push(format!("--filename={}", sparse(&data, "f", 4 << 20)));
    } else {
        args.push(format!("--directory={}", data.display()));
    }
    args.extend(opts.iter().map(|s| s.to_string()));
    if tool == "fio" {
        let out = Command::new("fio").args(&args).output().expect("run fio");
        assert!(out.status.success(), "fio {opts:?}: {out:?}");
    } else {
        let (code, out, err) = iolab_run(&args);
        assert_eq!(code, 0, "iolab {opts:?}: {err}\n{out}");
    }
    let mut reqs = requests(&log);
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    reqs
}

fn same_as_fio(one_file: bool, jobs: &[Vec<&str>]) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for opts in jobs {
        let theirs = run("fio", dir.path(), one_file, opts);
        let ours = run("iolab", dir.path(), one_file, opts);
        assert!(theirs.len() >= 64, "fio logged too little for {opts:?}");
        // A hot spot repeats blocks: the sequence is not the uniform one.
        let mut offsets: Vec<u64> = theirs.iter().map(|r| r.2).collect();
        offsets.sort_unstable();
        offsets.dedup();
        assert!(offsets.len() < theirs.len(), "no repeats for {opts:?}");
        assert_eq!(ours, theirs, "I/Os differ from fio's for {opts:?}");
    }
}

/// zipf and pareto on one 4 MiB file (1024 blocks of 4 KiB), with the
/// default seeding, with `randseed=` (either randrepeat), and with
/// `norandommap` (which changes nothing: fio turns the map off for them).
#[test]
fn zipf_and_pareto_offsets_equal_fios() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let mut jobs = Vec::new();
    for dist in [
        "--random_distribution=zipf:0.8",
        "--random_distribution=zipf:1.2",
        "--random_distribution=pareto:0.2",
        "--random_distribution=pareto:0.9",
    ] {
        for extra in [
            &[][..],
            &["--norandommap"],
            &["--randseed=42"],
            &["--randseed=42", "--randrepeat=0", "--norandommap"],
        ] {
            let mut o = vec!["--size=4m", "--bs=4k", "--rw=randread", dist];
            o.extend_from_slice(extra);
            jobs.push(o);
        }
    }
    same_as_fio(true, &jobs);
}

/// Centers, normal (gauss) with and without a spread, both directions of a
/// mixed job drawing from the file's one state, loops; zoned and zoned_abs
/// (the zone from fio's zone generator, the block from its offset draw),
/// with bsrange sizes.
#[test]
fn centered_normal_and_mixed_offsets_equal_fios() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let base = ["--size=4m", "--bs=4k"];
    let jobs: Vec<Vec<&str>> = [
        &["--rw=randread", "--random_distribution=zipf:1.2:0.25"][..],
        &["--rw=randread", "--random_distribution=pareto:0.3:0.7"],
        &["--rw=randread", "--random_distribution=normal"],
        &["--rw=randread", "--random_distribution=normal:10"],
        &[
            "--rw=randread",
            "--random_distribution=normal:20:0.3",
            "--randseed=5",
        ],
        &["--rw=randrw", "--random_distribution=zipf:0.8"],
        &[
            "--rw=randwrite",
            "--random_distribution=pareto:0.2",
            "--loops=2",
        ],
        &[
            "--rw=randread",
            "--random_distribution=zoned:60/10:30/20:10/70",
        ],
        &["--rw=randwrite", "--random_distribution=zoned:60/10:40/"],
        &[
            "--rw=randrw",
            "--random_distribution=zoned:50/50:50/50",
            "--randseed=3",
        ],
        &[
            "--rw=randread",
            "--random_distribution=zoned_abs:70/512k:30/3584k",
        ],
        &[
            "--rw=randread",
            "--random_distribution=zoned_abs:90/64k:10/1m",
            "--bsrange=4k-16k",
        ],
    ]
    .iter()
    .map(|o| base.iter().chain(o.iter()).copied().collect())
    .collect();
    same_as_fio(true, &jobs);
}

/// Each of `dists` over `base` (a job of several files), with the default
/// seeding and with `randseed=9`.
fn over_files<'a>(base: [&'a str; 4], dists: [&'a str; 3]) -> Vec<Vec<&'a str>> {
    [&[][..], &["--randseed=9"]]
        .iter()
        .flat_map(|extra| {
            dists.map(|d| {
                let mut o = base.to_vec();
                o.push(d);
                o.extend_from_slice(extra);
                o
            })
        })
        .collect()
}

/// numjobs=3, a file per clone (r.N.0): each clone's seed has its own file
/// name and thread number, or, with `randseed=`, its own offset seed.
#[test]
fn clones_draw_their_own_distribution_streams() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let jobs = over_files(
        ["--size=256k", "--bs=4k", "--rw=randread", "--numjobs=3"],
        [
            "--random_distribution=zipf:1.2",
            "--random_distribution=pareto:0.5",
            "--random_distribution=zoned:70/30:30/70",
        ],
    );
    same_as_fio(false, &jobs);
}

/// nrfiles=3 in one job (r.0.0, r.0.1, r.0.2): each file's distribution
/// state is seeded from its own name, as fio seeds it.
#[test]
fn each_file_of_a_job_draws_its_own_distribution_stream() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let jobs = over_files(
        ["--size=768k", "--bs=4k", "--rw=randread", "--nrfiles=3"],
        [
            "--random_distribution=zipf:1.2",
            "--random_distribution=pareto:0.5",
            "--random_distribution=normal:20",
        ],
    );
    same_as_fio(false, &jobs);
}
