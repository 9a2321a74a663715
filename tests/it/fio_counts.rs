//! How many I/Os a job does, and where, against fio 3.33 itself: sequential
//! holes (`rw=write:112k`, `rw=read:8k`) and backwards (`rw=read:-8k`) over a
//! file the size of the region and over a larger one, with `offset`;
//! `io_size` with `loops`; `rw=randread:N`. Both run the same job with psync
//! at depth 1 on the same scratch file; fio's `write_iolog` and iolab's
//! per-I/O log (`log_offset=1`) list the I/Os in issue order, and for the
//! sequential jobs the two lists must be equal, offset for offset; for the
//! random one the counts per direction must be. The text report ends each
//! write line with fio's "; N zone resets".

use std::process::Command;

use crate::backend_fio::sparse;
use crate::io_order::{Io, fio_ios, iolab_ios};
use crate::run_common::iolab_run;
use crate::support::needs::{Need, ready};

const KIB: u64 = 1024;

fn counts(ios: &[Io]) -> (usize, usize) {
    let w = ios.iter().filter(|i| i.0).count();
    (ios.len() - w, w)
}

/// (file size, options, compare offsets too).
const CASES: &[(u64, &[&str], bool)] = &[
    // Holes past the file's end wrap to the start; the job still writes
    // its 1m: 64 writes (iolab did 8 before).
    (1024, &["--rw=write:112k", "--bs=16k", "--size=1m"], true),
    // A read ending exactly at the file's end ends the pass: 86 reads.
    (1024, &["--rw=read:8k", "--bs=4k", "--size=1m"], true),
    // In a larger file the holes run on to the region's end.
    (4096, &["--rw=read:8k", "--bs=4k", "--size=1m"], true),
    (4096, &["--rw=write:112k", "--bs=16k", "--size=1m"], true),
    // offset: fio wraps to `offset` counted from the region's start.
    (
        4096,
        &["--rw=write:112k", "--bs=16k", "--size=1m", "--offset=1m"],
        true,
    ),
    (1024, &["--rw=read:-8k", "--bs=4k", "--size=1m"], true),
    (4096, &["--rw=read:-8k", "--bs=4k", "--size=1m"], true),
    (
        4096,
        &["--rw=read:-8k", "--bs=4k", "--size=1m", "--offset=1m"],
        true,
    ),
    // io_size with loops: fio's passes, not io_size per loop (iolab did
    // 4m and 4 reads for the first two before).
    (
        1024,
        &[
            "--rw=read",
            "--bs=4k",
            "--size=1m",
            "--io_size=2m",
            "--loops=2",
        ],
        true,
    ),
    (
        1024,
        &[
            "--rw=read",
            "--bs=4k",
            "--size=1m",
            "--io_size=768k",
            "--loops=3",
        ],
        true,
    ),
    (
        1024,
        &[
            "--rw=read",
            "--bs=4k",
            "--size=1m",
            "--io_size=512k",
            "--loops=2",
        ],
        true,
    ),
    (
        1024,
        &["--rw=write:112k", "--bs=16k", "--size=1m", "--loops=2"],
        true,
    ),
    (1024, &["--rw=randread:4", "--bs=4k", "--size=1m"], false),
    (
        1024,
        &[
            "--rw=randread",
            "--bs=4k",
            "--size=1m",
            "--io_size=2m",
            "--loops=2",
        ],
        false,
    ),
];

#[test]
fn total_ios_and_offsets_equal_fios() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for &(file_kib, opts, offsets) in CASES {
        let file = sparse(dir.path(), "f", file_kib * KIB);
        let theirs = fio_ios(dir.path(), &file, opts);
        let file = sparse(dir.path(), "f", file_kib * KIB);
        let ours = iolab_ios(dir.path(), &file, opts);
        eprintln!(
            "{opts:?} on {file_kib}k: fio {:?}, iolab {:?} (reads, writes)",
            counts(&theirs),
            counts(&ours)
        );
        assert!(!theirs.is_empty(), "fio logged nothing for {opts:?}");
        assert_eq!(
            counts(&ours),
            counts(&theirs),
            "I/O counts differ from fio's for {opts:?} on a {file_kib}k file"
        );
        if offsets {
            assert_eq!(
                ours, theirs,
                "offsets differ from fio's for {opts:?} on a {file_kib}k file"
            );
        }
    }
}

/// The number at the end of a text report's write line ("; N zone resets"),
/// and whether any read line carries one.
fn zone_resets(text: &str) -> (Option<u64>, bool) {
    let n = text
        .lines()
        .find(|l| l.trim_start().starts_with("write: IOPS="))
        .and_then(|l| {
            l.split("; ")
                .nth(1)?
                .strip_suffix(" zone resets")?
                .parse()
                .ok()
        });
    let on_reads = text
        .lines()
        .any(|l| l.trim_start().starts_with("read: IOPS=") && l.contains("zone resets"));
    (n, on_reads)
}

/// fio 3.33 ends every write line with "; N zone resets" (0 without zones)
/// and no read line; a sequential zbd job that wraps resets each zone it
/// comes back to: 12 for 4m written over four 256k zones of a 1m region.
#[test]
fn zone_resets_end_the_write_line_as_fios_do() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let cases: &[(&[&str], u64)] = &[
        (&["--rw=write", "--bs=64k", "--size=1m"], 0),
        (
            &[
                "--rw=write",
                "--bs=64k",
                "--size=1m",
                "--io_size=4m",
                "--zonemode=zbd",
                "--zonesize=256k",
            ],
            12,
        ),
    ];
    for &(opts, want) in cases {
        let file = sparse(dir.path(), "f", 1024 * KIB);
        let mut args = vec!["--name=z".to_string(), format!("--filename={file}")];
        args.push("--ioengine=psync".into());
        args.extend(opts.iter().map(|s| s.to_string()));
        let (code, out, err) = iolab_run(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert_eq!(
            zone_resets(&out),
            (Some(want), false),
            "iolab {opts:?}:\n{out}"
        );
        if ready(&[Need::Fio]) {
            let file = sparse(dir.path(), "f", 1024 * KIB);
            let out = Command::new("fio")
                .args([
                    "--name=z",
                    &format!("--filename={file}"),
                    "--ioengine=psync",
                ])
                .args(opts)
                .output()
                .expect("run fio");
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(
                zone_resets(&text),
                (Some(want), false),
                "fio {opts:?}:\n{text}"
            );
        }
    }
    // A read-only job has no write line, so nothing to end.
    let file = sparse(dir.path(), "f", 1024 * KIB);
    let (code, out, _) = iolab_run(&[
        "--name=r",
        &format!("--filename={file}"),
        "--rw=read",
        "--size=1m",
    ]);
    assert_eq!(code, 0);
    assert!(!out.contains("zone resets"), "{out}");
}

/// Whether `ios` cover `[start, start + len)` exactly, one after another.
fn tiles(ios: &[Io], start: u64, len: u64) -> Result<(), String> {
    let mut at = start;
    for (i, &(_, off, l)) in ios.iter().enumerate() {
        if off != at {
            return Err(format!("I/O {i} at {off}, expected {at}"));
        }
        at += l;
    }
    if at != start + len {
        return Err(format!("the pass ends at {at}, not {}", start + len));
    }
    Ok(())
}

/// Sequential jobs whose block sizes vary (fio's t0002:
/// `bssplit=512/50:1M/50`): fio draws a size again when the block would run
/// past the region's end, so a pass covers `[offset, offset + size)` exactly,
/// in a file the region's size (iolab stopped early there before) or a
/// larger one (iolab ran past the region's end there, so a later job's
/// verify read a block the write job never wrote). The sizes are each
/// tool's own random draws; the tiling is what is compared.
#[test]
fn varying_block_sizes_tile_the_region_exactly_as_fios_do() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let cases: &[(u64, u64, &[&str])] = &[
        (
            4096,
            0,
            &["--rw=write", "--bssplit=512/50:1m/50", "--size=4m"],
        ),
        (
            16384,
            4096,
            &[
                "--rw=read",
                "--bssplit=512/50:1m/50",
                "--size=4m",
                "--offset=4m",
            ],
        ),
        (16384, 0, &["--rw=read", "--bsrange=512-1m", "--size=4m"]),
        (
            16384,
            0,
            &["--rw=write", "--bssplit=4k/20:64k/30:1m/50", "--size=4m"],
        ),
    ];
    for &(file_kib, start_kib, opts) in cases {
        let file = sparse(dir.path(), "f", file_kib * KIB);
        let theirs = fio_ios(dir.path(), &file, opts);
        tiles(&theirs, start_kib * KIB, 4096 * KIB)
            .unwrap_or_else(|e| panic!("fio {opts:?}: {e}; the premise of this test is wrong"));
        let file = sparse(dir.path(), "f", file_kib * KIB);
        let ours = iolab_ios(dir.path(), &file, opts);
        tiles(&ours, start_kib * KIB, 4096 * KIB)
            .unwrap_or_else(|e| panic!("iolab {opts:?} on a {file_kib}k file: {e}"));
    }
}

/// The 512-byte sectors `ios` touch (distinct), how many they touch more
/// than once, and their bytes in all.
fn coverage(ios: &[Io]) -> (usize, usize, u64) {
    let mut seen = std::collections::HashSet::new();
    let mut again = 0;
    for &(_, off, len) in ios {
        for s in off / 512..(off + len).div_ceil(512) {
            if !seen.insert(s) {
                again += 1;
            }
        }
    }
    (seen.len(), again, ios.iter().map(|i| i.2).sum())
}

/// fio's random map with variable block sizes (its t0023 and t0024 jobs,
/// here as reads and writes a file takes): a random `bsrange` or `bssplit`
/// job touches every sector of its region exactly once per pass, an I/O
/// that lands on used blocks moving to a free one and shortened to the free
/// blocks it covers, and so does a sequential `bsrange` job. iolab drew
/// variable sizes with replacement before and touched about 1300 of the
/// 2048 sectors. The sizes and offsets are each tool's own draws; the
/// coverage (distinct sectors, sectors touched twice, bytes) is compared.
#[test]
fn variable_block_sizes_cover_every_sector_once_as_fios_random_map_does() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let cases: &[&[&str]] = &[
        &["--rw=randwrite", "--bsrange=512-4k", "--size=1m"],
        &[
            "--rw=randread",
            "--bssplit=512/25:1k/25:2k/25:4k/25",
            "--size=1m",
        ],
        &["--rw=randrw", "--bsrange=512-8k", "--size=1m"],
        &["--rw=write", "--bsrange=512-4k", "--size=1m"],
    ];
    for &opts in cases {
        let file = sparse(dir.path(), "f", 1024 * KIB);
        let theirs = coverage(&fio_ios(dir.path(), &file, opts));
        assert_eq!(
            theirs,
            (2048, 0, 1024 * KIB),
            "fio {opts:?}: the premise of this test is wrong"
        );
        let file = sparse(dir.path(), "f", 1024 * KIB);
        let ours = coverage(&iolab_ios(dir.path(), &file, opts));
        eprintln!("{opts:?}: fio {theirs:?}, iolab {ours:?} (sectors, again, bytes)");
        assert_eq!(ours, theirs, "iolab {opts:?} (sectors, again, bytes)");
    }
}
