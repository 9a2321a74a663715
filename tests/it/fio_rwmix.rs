//! A mixed job's directions against fio 3.33 itself: fio draws each I/O's
//! direction from its own seeded generator (`workload::fio_rand`), and iolab
//! draws the same sequence for the same job and seed. Both run the same job
//! with psync at depth 1 on the same scratch file; fio's `write_iolog` and
//! iolab's per-I/O log list the I/Os in issue order. For sequential
//! `rw=readwrite` the two lists must be equal I/O for I/O (direction,
//! offset, length); for `rw=randrw` (whose offsets come from a different
//! generator) the order of reads and writes must be.

use crate::backend_fio::sparse;
use crate::io_order::{Io, fio_ios, iolab_ios};
use crate::support::needs::{Need, ready};

fn directions(ios: &[Io]) -> String {
    ios.iter().map(|io| if io.0 { 'w' } else { 'r' }).collect()
}

/// (options, whether offsets must match too)
const CASES: &[(&[&str], bool)] = &[
    // The default seed (randrepeat=1, randseed=0x89).
    (
        &["--size=1m", "--bs=4k", "--rw=randrw", "--rwmixread=50"],
        false,
    ),
    (
        &["--size=1m", "--bs=4k", "--rw=readwrite", "--rwmixread=50"],
        true,
    ),
    // Another seed and share; a far-behind direction is held to catch up.
    (
        &[
            "--size=1m",
            "--bs=4k",
            "--rw=readwrite",
            "--rwmixread=90",
            "--randseed=1234",
        ],
        true,
    ),
    (
        &["--size=512k", "--bs=4k", "--rw=randrw", "--rwmixwrite=30"],
        false,
    ),
];

#[test]
fn mixed_job_directions_equal_fios() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for &(opts, offsets) in CASES {
        let file = sparse(dir.path(), "f", 1 << 20);
        let theirs = fio_ios(dir.path(), &file, opts);
        let file = sparse(dir.path(), "f", 1 << 20);
        let ours = iolab_ios(dir.path(), &file, opts);
        assert!(!theirs.is_empty(), "fio logged nothing for {opts:?}");
        assert_eq!(
            directions(&ours),
            directions(&theirs),
            "the order of reads and writes differs from fio's for {opts:?}"
        );
        if offsets {
            assert_eq!(ours, theirs, "I/Os differ from fio's for {opts:?}");
        }
    }
}
