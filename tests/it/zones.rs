//! fio's zone modes under `iolab run`: the strided walk issues the offsets fio
//! issues (compared with fio 3.33 itself), `zonemode=zbd` on a regular file
//! writes at each zone's write pointer and reads below it (checked on
//! iolab's per-I/O log, and the same check holds for fio's own log), and bad
//! zone options are named before the first I/O.

use crate::backend_fio::sparse;
use crate::io_order::{Io, fio_ios, iolab_ios};
use crate::run_common::iolab_run;
use crate::support::needs::{Need, ready};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

#[test]
fn strided_offsets_equal_fios() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = sparse(dir.path(), "f", 16 * MIB);
    let cases: &[&[&str]] = &[
        // zonesize of every zonerange, then zoneskip; wraps at the file's end.
        &[
            "--rw=read",
            "--bs=256k",
            "--zonemode=strided",
            "--zonesize=512k",
            "--zonerange=2m",
            "--zoneskip=1m",
        ],
        // zonerange defaults to zonesize.
        &[
            "--rw=read",
            "--bs=256k",
            "--zonemode=strided",
            "--zonesize=512k",
            "--zoneskip=1m",
        ],
        // zonesize > zonerange: each zone's range is walked twice.
        &[
            "--rw=read",
            "--bs=256k",
            "--zonemode=strided",
            "--zonesize=2m",
            "--zonerange=1m",
        ],
        // io_size beyond the file: a zone cut short by the file's end starts
        // the walk again.
        &[
            "--rw=read",
            "--bs=256k",
            "--zonemode=strided",
            "--zonesize=2m",
            "--zoneskip=1m",
            "--io_size=32m",
        ],
        // offset/size: zones start at offset and run to the file's end, not
        // to offset + size.
        &[
            "--rw=write",
            "--bs=256k",
            "--zonemode=strided",
            "--zonesize=2m",
            "--zoneskip=1m",
            "--size=8m",
            "--offset=1m",
        ],
    ];
    for opts in cases {
        let theirs = fio_ios(dir.path(), &file, opts);
        let ours = iolab_ios(dir.path(), &file, opts);
        assert!(theirs.len() >= 32, "fio logged too little for {opts:?}");
        assert_eq!(ours, theirs, "offsets differ from fio's for {opts:?}");
    }
}

#[test]
fn strided_random_offsets_stay_in_the_current_zone() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = sparse(dir.path(), "f", 16 * MIB);
    let ios = iolab_ios(
        dir.path(),
        &file,
        &[
            "--rw=randread",
            "--bs=64k",
            "--zonemode=strided",
            "--zonesize=256k",
            "--zonerange=1m",
            "--zoneskip=3m",
        ],
    );
    // 16 MiB of reads, 4 per zone; zones start every 4 MiB (1m range + 3m
    // skip) and wrap at the file's end.
    assert_eq!(ios.len(), 256);
    for (i, &(_, off, len)) in ios.iter().enumerate() {
        let zone = (i as u64 / 4 % 4) * 4 * MIB;
        assert!(
            off >= zone && off + len <= zone + MIB,
            "I/O {i} at {off} is outside zone [{zone}, +1m)"
        );
    }
}

/// Replays `ios` against emulated zones of `zone` bytes: every write must
/// land on its zone's write pointer (or at its start when the zone is reset,
/// which only a full zone may be here), at most `max_open` zones may be
/// partly written at once, and every read must lie below its zone's write
/// pointer. Returns the zone resets seen.
fn check_zbd(who: &str, ios: &[Io], zone: u64, zones: usize, max_open: usize) -> u64 {
    let mut wp = vec![0u64; zones];
    let mut resets = 0;
    for (i, &(write, off, len)) in ios.iter().enumerate() {
        let z = (off / zone) as usize;
        let start = z as u64 * zone;
        assert!(
            off + len <= start + zone,
            "{who}: I/O {i} at {off}+{len} crosses a zone end"
        );
        if write {
            if off == start && wp[z] == zone {
                wp[z] = 0;
                resets += 1;
            }
            assert_eq!(
                off,
                start + wp[z],
                "{who}: write {i} at {off} is not at zone {z}'s write pointer"
            );
            wp[z] += len;
            let open = wp.iter().filter(|&&w| w > 0 && w < zone).count();
            assert!(open <= max_open, "{who}: {open} zones open after write {i}");
        } else {
            assert!(
                off + len <= start + wp[z],
                "{who}: read {i} at {off}+{len} above zone {z}'s write pointer {}",
                start + wp[z]
            );
        }
    }
    resets
}

#[test]
fn zbd_writes_at_write_pointers_and_reads_below_them_as_fio_does() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = sparse(dir.path(), "g", 8 * MIB);
    let write: &[&str] = &[
        "--rw=randwrite",
        "--bs=64k",
        "--zonemode=zbd",
        "--zonesize=1m",
        "--max_open_zones=2",
    ];
    let ours = iolab_ios(dir.path(), &file, write);
    assert_eq!(ours.iter().map(|i| i.2).sum::<u64>(), 8 * MIB);
    let resets = check_zbd("iolab randwrite", &ours, MIB, 8, 2);
    // 8 MiB over 2 open zones of 1 MiB: zones fill and are written again.
    assert!(resets > 0, "no zone was reset");
    let mixed: &[&str] = &[
        "--rw=randrw",
        "--bs=64k",
        "--zonemode=zbd",
        "--zonesize=1m",
        "--max_open_zones=3",
    ];
    let ours = iolab_ios(dir.path(), &file, mixed);
    assert!(
        ours[0].0,
        "a mixed zbd job starts with a write (nothing to read yet)"
    );
    assert!(ours.iter().filter(|i| !i.0).count() > 10, "too few reads");
    check_zbd("iolab randrw", &ours, MIB, 8, 3);
    // A read-only job on fresh (empty) emulated zones has nothing to read.
    assert!(
        iolab_ios(
            dir.path(),
            &file,
            &["--rw=read", "--bs=64k", "--zonemode=zbd", "--zonesize=1m"]
        )
        .is_empty()
    );

    if !ready(&[Need::Fio]) {
        return;
    }
    // fio's own runs obey the same model (its random choices differ).
    let theirs = fio_ios(dir.path(), &file, write);
    assert_eq!(theirs.iter().map(|i| i.2).sum::<u64>(), 8 * MIB);
    check_zbd("fio randwrite", &theirs, MIB, 8, 2);
    let theirs = fio_ios(dir.path(), &file, mixed);
    assert!(theirs[0].0);
    check_zbd("fio randrw", &theirs, MIB, 8, 3);
    let theirs = fio_ios(
        dir.path(),
        &file,
        &["--rw=read", "--bs=64k", "--zonemode=zbd", "--zonesize=1m"],
    );
    assert!(theirs.is_empty());
}

#[test]
fn bad_zone_options_are_named() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = sparse(dir.path(), "h", 8 * MIB);
    let base = [
        "--name=z".to_string(),
        format!("--filename={file}"),
        "--bs=64k".into(),
        "--ioengine=psync".into(),
    ];
    let cases: &[(&[&str], &[&str])] = &[
        (&["--zonesize=1m"], &["zonesize", "zonemode=strided"]),
        (
            &["--zonemode=bogus"],
            &["zonemode", "bogus", "none, strided or zbd"],
        ),
        (&["--zonemode=strided"], &["zonesize="]),
        (
            &[
                "--zonemode=zbd",
                "--zonesize=1m",
                "--zone_reset_threshold=2",
            ],
            &["zone_reset_threshold", "'2'"],
        ),
        (
            &["--zonemode=zbd", "--zonesize=1m", "--max_open_zones=5000"],
            &["max_open_zones", "from 0 to 4096"],
        ),
        (
            &["--zonemode=strided", "--zonesize=1m", "--max_open_zones=2"],
            &["max_open_zones", "zonemode=zbd"],
        ),
        (
            &["--zonemode=zbd", "--zonesize=1m", "--zoneskip=1m"],
            &["zoneskip", "not implemented"],
        ),
        (
            &["--zonemode=zbd", "--zonesize=32k"],
            &["zonesize", "65536"],
        ),
        (
            &[
                "--rw=write",
                "--zonemode=zbd",
                "--zonesize=1m",
                "--offset=100k",
            ],
            &["offset", "offset=1048576"],
        ),
        (
            &["--rw=write", "--zonemode=zbd", "--zonesize=3m", "--size=8m"],
            &["size=6291456"],
        ),
    ];
    for (opts, says) in cases {
        let mut args = base.to_vec();
        args.extend(opts.iter().map(|s| s.to_string()));
        let (code, out, err) = iolab_run(&args);
        assert_ne!(code, 0, "{opts:?} ran: {out}");
        assert_eq!(err.lines().count(), 1, "{opts:?}: one line expected: {err}");
        for s in *says {
            assert!(err.contains(s), "{opts:?}: error lacks '{s}': {err}");
        }
    }
}

/// `zonecapacity` below `zonesize`: a sequential writer fills each zone to
/// its capacity and moves on to the next zone, with fio's offsets; a random
/// writer stays below the capacities and resets full zones.
#[test]
fn zone_capacity_stops_writes_as_fios_emulated_zones_do() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = sparse(dir.path(), "c", 4 * MIB);
    let zbd = [
        "--bs=64k",
        "--zonemode=zbd",
        "--zonesize=1m",
        "--zonecapacity=768k",
    ];
    let job = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = zbd.to_vec();
        v.extend_from_slice(extra);
        v
    };
    // One pass: the first 768 KiB of each of the four zones (fio 3.33's
    // write_iolog lists exactly these).
    let want: Vec<Io> = (0..4u64)
        .flat_map(|z| (0..12u64).map(move |b| (true, z * MIB + b * 64 * KIB, 64 * KIB)))
        .collect();
    assert_eq!(iolab_ios(dir.path(), &file, &job(&["--rw=write"])), want);
    // loops=2: the second pass resets each zone and writes it again.
    let twice = iolab_ios(dir.path(), &file, &job(&["--rw=write", "--loops=2"]));
    assert_eq!(twice, [want.clone(), want.clone()].concat());
    // A random writer: every write below its zone's capacity, at the write
    // pointer; full zones are reset.
    let rand = iolab_ios(dir.path(), &file, &job(&["--rw=randwrite"]));
    assert_eq!(rand.iter().map(|i| i.2).sum::<u64>(), 4 * MIB);
    let mut wp = [0u64; 4];
    let mut resets = 0;
    for &(w, off, len) in &rand {
        assert!(w);
        let z = (off / MIB) as usize;
        if wp[z] == 768 * KIB {
            wp[z] = 0;
            resets += 1;
        }
        assert_eq!(
            off,
            z as u64 * MIB + wp[z],
            "write at {off} not at the write pointer"
        );
        wp[z] += len;
        assert!(
            wp[z] <= 768 * KIB,
            "write at {off} past the zone's capacity"
        );
    }
    assert!(resets > 0, "4 MiB over 3 MiB of capacity resets zones");
    // Reads of a mixed job stay below the write pointers, so below capacity.
    let mixed = iolab_ios(dir.path(), &file, &job(&["--rw=randrw"]));
    assert!(
        mixed
            .iter()
            .all(|&(_, off, len)| off % MIB + len <= 768 * KIB),
        "an I/O past a zone's capacity"
    );
    // A capacity above the zone size is an error naming the option.
    let (code, _, err) = iolab_run(&[
        format!("--filename={file}"),
        "--name=c".into(),
        "--rw=write".into(),
        "--zonemode=zbd".into(),
        "--zonesize=1m".into(),
        "--zonecapacity=2m".into(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("zonecapacity"), "{err}");

    if !ready(&[Need::Fio]) {
        return;
    }
    for extra in [&["--rw=write"][..], &["--rw=write", "--io_size=8m"]] {
        let opts = job(extra);
        let theirs = fio_ios(dir.path(), &file, &opts);
        let ours = iolab_ios(dir.path(), &file, &opts);
        assert_eq!(ours, theirs, "offsets differ from fio's for {opts:?}");
    }
}
