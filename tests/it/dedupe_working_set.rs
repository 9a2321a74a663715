//! `dedupe_mode=working_set` and `dedupe_global` end to end: the data written
//! dedupes as fio's does. Two jobs write N = 2048 blocks of 4 KiB each with
//! dedupe_percentage=50 and dedupe_working_set_percentage=50 (fio's
//! dedupe-global.fio, smaller); counting the distinct blocks of each file and
//! of both (zram stores duplicates apart, so the count is the measure):
//!
//! - private working sets: each file holds its ~N/2 unique writes, and its
//!   repeats come from its own first unique pages: ~N/2 distinct per file,
//!   ~N for both;
//! - `dedupe_global`: each job's working set is half its own first pages,
//!   half the other job's, so the repeats add the other's pages to a file:
//!   N/2 + (N/2)(1 - 1/e)/2 ~ 1348 distinct per file, still ~N for both.
//!
//! fio 3.33 runs the same job as the reference (its files give 1351/1363 and
//! 1054/1041 here).

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

use crate::run_common::iolab_run;
use crate::support::needs::{Need, ready};

const BLOCKS: usize = 2048;

fn job(dir: &Path, global: bool) -> String {
    format!(
        "[global]
size=8m
blocksize=4k
rw=write
dedupe_mode=working_set
dedupe_global={}
dedupe_percentage=50
dedupe_working_set_percentage=50
buffer_compress_percentage=50
[a]
filename={}/a
[b]
filename={}/b
",
        u8::from(global),
        dir.display(),
        dir.display()
    )
}

/// Distinct 4 KiB blocks of file a, of file b, and of both.
fn distinct(dir: &Path) -> (usize, usize, usize) {
    let a = std::fs::read(dir.join("a")).unwrap();
    let b = std::fs::read(dir.join("b")).unwrap();
    assert_eq!(a.len(), BLOCKS * 4096);
    assert_eq!(b.len(), BLOCKS * 4096);
    let set = |d: &[u8]| d.chunks(4096).map(<[u8]>::to_vec).collect::<HashSet<_>>();
    let (sa, sb) = (set(&a), set(&b));
    let both = sa.union(&sb).count();
    (sa.len(), sb.len(), both)
}

fn check(who: &str, global: bool, (a, b, both): (usize, usize, usize)) {
    eprintln!("{who}, dedupe_global={global}: distinct blocks a={a} b={b} both={both}");
    let n = BLOCKS as f64;
    let per_file = if global {
        n / 2.0 + n / 2.0 * (1.0 - (-1.0f64).exp()) / 2.0
    } else {
        n / 2.0
    };
    // The unique share is binomial (sd ~23 blocks per file): 4 sd of margin.
    for (f, got) in [("a", a), ("b", b)] {
        assert!(
            (got as f64 - per_file).abs() < 90.0,
            "{who}: file {f} has {got} distinct blocks, the working set gives ~{per_file:.0}"
        );
    }
    assert!(
        (both as f64 - n).abs() < 130.0,
        "{who}: both files have {both} distinct blocks, the working set gives ~{n}"
    );
}

#[test]
fn working_set_and_global_dedupe_give_fios_distinct_blocks() {
    for global in [false, true] {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let f = dir.path().join("dedupe.fio");
        std::fs::write(&f, job(dir.path(), global)).unwrap();
        let (code, out, err) = iolab_run(&[f.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}\n{out}");
        check("iolab", global, distinct(dir.path()));
    }
    if !ready(&[Need::Fio]) {
        return;
    }
    for global in [false, true] {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let f = dir.path().join("dedupe.fio");
        std::fs::write(&f, job(dir.path(), global)).unwrap();
        let out = Command::new("fio")
            .arg(&f)
            .arg("--output=/dev/null")
            .output()
            .expect("run fio");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        check("fio", global, distinct(dir.path()));
    }
}

#[test]
fn bad_working_set_settings_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let base = "[j]\nfilename=/tmp/x\nrw=write\ndedupe_mode=working_set\ndedupe_percentage=50\n";
    let cases = [
        (
            "size=1m\ndedupe_working_set_percentage=60",
            "dedupe_percentage=50 cannot be reached",
        ),
        ("dedupe_working_set_percentage=10", "set size= explicitly"),
        (
            "size=1m\nnrfiles=2\nfilename_format=f.$filenum",
            "one file per job",
        ),
        (
            "size=1m\ndedupe_working_set_percentage=101",
            "an integer from 0 to 100",
        ),
        ("size=1m\ndedupe_mode=sideways", "repeat or working_set"),
        ("size=1m\ndedupe_global=maybe", "dedupe_global"),
    ];
    for (text, want) in cases {
        let f = dir.path().join("bad.fio");
        std::fs::write(&f, format!("{base}{text}\n")).unwrap();
        let (code, _, err) = iolab_run(&[f.to_str().unwrap()]);
        assert_eq!(code, 1, "{text}");
        assert!(err.contains("bad.fio:"), "{text}: {err}");
        assert!(err.contains(want), "{text}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{text}: {err}");
    }
}
