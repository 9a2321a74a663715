//! The periodic syncs against fio 3.33 itself: `fsync=N`, `fdatasync=N` and
//! `sync_file_range=FLAGS:N` together, each on its own count of writes, and
//! sync_file_range's range. Both run the same job on the same scratch file;
//! each one's `write_iolog` names every request it issued (`sync`,
//! `datasync`, `sync_file_range`), and strace shows the range each
//! sync_file_range(2) call covered.

use std::path::Path;
use std::process::Command;

use crate::backend_fio::sparse;
use crate::run_common::iolab_run;
use crate::support::needs::{Need, ready, skip};

/// The log's requests in order: (action, offset, length), without the file
/// lines (`add`, `open`, `close`).
fn requests(log: &Path) -> Vec<(String, u64, u64)> {
    crate::run_common::iolog_requests(log)
        .into_iter()
        .map(|(_, a, off, len)| (a, off, len))
        .collect()
}

/// The actions alone, in order.
fn actions(reqs: &[(String, u64, u64)]) -> Vec<&str> {
    reqs.iter().map(|r| r.0.as_str()).collect()
}

/// Run `tool` (`fio`, or iolab's `run`) on `file` with `opts` and its
/// `write_iolog`, under `strace -e trace=sync_file_range` when `strace` is
/// given (its output file). Returns the log's requests.
fn run(
    dir: &Path,
    fio: bool,
    file: &str,
    opts: &[&str],
    strace: Option<&Path>,
) -> Vec<(String, u64, u64)> {
    let log = dir.join(if fio { "fio.iolog" } else { "iolab.iolog" });
    let _ = std::fs::remove_file(&log);
    let mut args: Vec<String> = vec![
        "--name=s".into(),
        format!("--filename={file}"),
        format!("--write_iolog={}", log.display()),
        "--output=/dev/null".into(),
    ];
    args.extend(opts.iter().map(|s| s.to_string()));
    let out = match strace {
        Some(out) => {
            let mut c = Command::new("strace");
            c.args(["-f", "-e", "trace=sync_file_range", "-o"]).arg(out);
            if fio {
                c.arg("fio");
            } else {
                c.arg(env!("CARGO_BIN_EXE_iolab")).arg("run");
            }
            // fio leaves a verify state file in its working directory.
            c.current_dir(dir).args(&args).output().expect("run strace")
        }
        None if fio => Command::new("fio")
            .current_dir(dir)
            .args(&args)
            .output()
            .expect("run fio"),
        None => {
            let (code, out, err) = iolab_run(&args);
            assert_eq!(code, 0, "iolab run {args:?}: {err}\n{out}");
            return requests(&log);
        }
    };
    assert!(out.status.success(), "{args:?}: {out:?}");
    requests(&log)
}

/// (offset, length) of each sync_file_range(2) call in strace's output.
fn range_calls(strace: &Path) -> Vec<(u64, u64)> {
    std::fs::read_to_string(strace)
        .expect("strace output")
        .lines()
        .filter_map(|l| {
            let args = l.split_once("sync_file_range(")?.1;
            let f: Vec<&str> = args.split(", ").collect();
            Some((f.get(1)?.parse().ok()?, f.get(2)?.parse().ok()?))
        })
        .collect()
}

/// The ranges fio's rule gives for the requests of `reqs`: at each
/// `sync_file_range`, the lowest offset to the highest end written since
/// the last sync of any kind; before the first sync the range starts at the
/// file's start (fio's file starts with both ends at 0). An empty range
/// makes no call.
fn expected_ranges(reqs: &[(String, u64, u64)]) -> Vec<(u64, u64)> {
    let (mut lo, mut hi) = (0u64, 0u64);
    let mut out = Vec::new();
    for (a, off, len) in reqs {
        match a.as_str() {
            "write" => {
                lo = lo.min(*off);
                hi = hi.max(off + len);
            }
            "sync" | "datasync" | "sync_file_range" => {
                if a == "sync_file_range" && hi > lo {
                    out.push((lo, hi - lo));
                }
                (lo, hi) = (u64::MAX, 0);
            }
            _ => {}
        }
    }
    out
}

#[test]
fn fsync_fdatasync_and_sync_file_range_go_together_on_their_own_counts() {
    let dir = tempfile::tempdir().unwrap();
    let file = sparse(dir.path(), "f", 64 << 10);
    let opts = [
        "--ioengine=psync",
        "--rw=write",
        "--bs=4k",
        "--size=64k",
        "--fsync=4",
        "--fdatasync=2",
        "--sync_file_range=write:3",
    ];
    let got = run(dir.path(), false, &file, &opts, None);
    // After write N: fsync when 4 divides N, else fdatasync when 2 does,
    // else sync_file_range when 3 does; none after the 16th, the last.
    let mut want = Vec::new();
    for n in 1..=16u32 {
        want.push("write");
        if n == 16 {
            break;
        }
        if n % 4 == 0 {
            want.push("sync");
        } else if n % 2 == 0 {
            want.push("datasync");
        } else if n % 3 == 0 {
            want.push("sync_file_range");
        }
    }
    assert_eq!(actions(&got), want);
}

/// fio's own order of writes, reads and the three syncs, for jobs whose
/// requests both issue alike: sequential, random with the random map, a
/// mixed job (fio syncs again when a read comes between a sync and the next
/// write), `loops` (fio issues the loop's due sync again when a new loop
/// starts), verification reading each loop back after its sync, and libaio
/// (which drains its queue before each sync, as fio's does).
#[test]
fn the_syncs_are_issued_where_fios_are() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cases: &[&[&str]] = &[
        &[
            "--rw=write",
            "--size=64k",
            "--fsync=4",
            "--fdatasync=2",
            "--sync_file_range=write:3",
        ],
        &[
            "--rw=randwrite",
            "--size=24k",
            "--loops=3",
            "--fsync=3",
            "--fdatasync=2",
        ],
        &[
            "--rw=randrw",
            "--size=256k",
            "--rwmixread=30",
            "--fdatasync=3",
        ],
        &["--rw=write", "--size=32k", "--loops=2", "--fsync=4"],
        &[
            "--rw=write",
            "--size=32k",
            "--loops=2",
            "--fsync=4",
            "--verify=crc32c",
        ],
        &[
            "--rw=write",
            "--size=64k",
            "--ioengine=libaio",
            "--iodepth=4",
            "--fsync=4",
            "--fdatasync=3",
        ],
        &["--rw=write", "--size=64k", "--number_ios=8", "--fsync=4"],
    ];
    for opts in cases {
        let mut o = vec!["--ioengine=psync", "--bs=4k"];
        o.extend_from_slice(opts);
        let file = sparse(dir.path(), "f", 256 << 10);
        let fio = run(dir.path(), true, &file, &o, None);
        let file = sparse(dir.path(), "f", 256 << 10);
        let iolab = run(dir.path(), false, &file, &o, None);
        assert!(
            fio.iter().any(|r| r.0.contains("sync")),
            "{opts:?}: fio issued no sync"
        );
        assert_eq!(actions(&iolab), actions(&fio), "{opts:?}");
    }
}

/// sync_file_range(2) covers what the job wrote to the file since its last
/// sync, as fio's call does: for a sequential job the very calls fio makes;
/// for random jobs (whose offsets are each tool's own) fio's rule over each
/// one's own writes, and the same number of calls. At depth 1, where every
/// write has completed when the sync goes (deeper, the range holds the
/// writes completed by then, in fio as in iolab: a matter of timing).
#[test]
fn sync_file_range_syncs_the_range_written_since_the_last_sync() {
    if !ready(&[Need::Strace]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let st = dir.path().join("strace.txt");
    let cases: &[(&[&str], bool)] = &[
        (&["--rw=write", "--sync_file_range=write:4"], true),
        (
            &[
                "--rw=write",
                "--offset=64k",
                "--size=64k",
                "--sync_file_range=wait_before,write,wait_after:4",
            ],
            true,
        ),
        (&["--rw=randwrite", "--sync_file_range=write:5"], false),
        (
            &["--rw=randwrite", "--sync_file_range=write:3", "--fsync=4"],
            false,
        ),
        (&["--rw=randrw", "--sync_file_range=write:2"], false),
        (
            &[
                "--rw=randwrite",
                "--sync_file_range=write:4",
                "--ioengine=libaio",
            ],
            false,
        ),
    ];
    let fio = Need::Fio.missing().is_none();
    for (opts, same_offsets) in cases {
        let mut o = vec!["--ioengine=psync", "--bs=4k", "--size=128k"];
        o.extend_from_slice(opts);
        let file = sparse(dir.path(), "f", 128 << 10);
        let reqs = run(dir.path(), false, &file, &o, Some(&st));
        let iolab = range_calls(&st);
        assert!(!iolab.is_empty(), "{opts:?}: no sync_file_range call");
        assert_eq!(iolab, expected_ranges(&reqs), "{opts:?}");
        if !fio {
            continue;
        }
        let file = sparse(dir.path(), "f", 128 << 10);
        let fio_reqs = run(dir.path(), true, &file, &o, Some(&st));
        let theirs = range_calls(&st);
        assert_eq!(theirs, expected_ranges(&fio_reqs), "fio {opts:?}");
        if *same_offsets {
            assert_eq!(iolab, theirs, "{opts:?}");
        } else {
            assert_eq!(iolab.len(), theirs.len(), "{opts:?}");
        }
    }
    if let Some(why) = Need::Fio.missing() {
        skip(format!("the comparison with fio: {why}"));
    }
}
