//! fio's buffer-contents options end to end: what reaches the device.
//! zram (hot-added here, removed after) reports how the written data
//! compressed (`mm_stat`); files read back show dedupe shares, patterns and
//! scrambling byte for byte.

use std::collections::HashSet;

use crate::run_common::run_json;
use crate::support::needs::{Need, ready};

const MIB: u64 = 1 << 20;

/// `mm_stat` of a zram after `iolab run` wrote 16 MiB to it with `extra`:
/// (bytes stored before compression, compressed bytes, same-filled pages).
fn zram_after_write(extra: &[&str]) -> (u64, u64, u64) {
    let z = iolab::sys::zram::Zram::create(32 * MIB).expect("hot-add zram");
    let dev = z.path().display().to_string();
    let mut args = vec![
        "--name=fill".to_string(),
        format!("--filename={dev}"),
        "--rw=write".into(),
        "--bs=64k".into(),
        "--size=16m".into(),
        "--direct=1".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let doc = run_json(&a);
    assert_eq!(doc["jobs"][0]["write"]["io_bytes"], 16 * MIB, "{extra:?}");
    let stat =
        std::fs::read_to_string(format!("/sys/block/{}/mm_stat", z.name())).expect("mm_stat");
    let f: Vec<u64> = stat
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // orig_data_size, compr_data_size, ..., same_pages (6th)
    (f[0], f[1], f[5])
}

#[test]
fn zram_compression_follows_buffer_compress_percentage() {
    if !ready(&[Need::Zram]) {
        return;
    }
    let pages = 16 * MIB / 4096;
    let mut ratios = Vec::new();
    for pct in [0u32, 50, 90] {
        let (orig, compr, same) =
            zram_after_write(&[&format!("--buffer_compress_percentage={pct}")]);
        assert_eq!(same, 0, "{pct}%: no page is all one byte");
        assert_eq!(orig, 16 * MIB, "{pct}%: every page stored");
        let ratio = compr as f64 / orig as f64;
        eprintln!(
            "buffer_compress_percentage={pct}: zram stored {compr} of {orig} bytes ({ratio:.3})"
        );
        ratios.push(ratio);
    }
    assert!(
        ratios[0] > 0.95,
        "random data does not compress: {ratios:?}"
    );
    assert!(
        (0.45..0.70).contains(&ratios[1]),
        "half of every 512-byte chunk is zeros: {ratios:?}"
    );
    assert!(ratios[2] < 0.25, "90% zeros: {ratios:?}");

    // zero_buffers: every page is same-filled, nothing is compressed.
    let (_, compr, same) = zram_after_write(&["--zero_buffers"]);
    assert_eq!(same, pages, "all {pages} pages are zero pages");
    assert_eq!(compr, 0, "zram stores zero pages as flags only");

    // The default (random buffers, scrambled per write) stays incompressible.
    let (orig, compr, same) = zram_after_write(&[]);
    assert_eq!(same, 0);
    assert!(compr as f64 > 0.95 * orig as f64, "{compr} of {orig}");
}

/// Blocks of `bs` bytes of `path`, and how many repeat an earlier block.
fn repeated_blocks(path: &std::path::Path, bs: usize) -> (usize, usize) {
    let data = std::fs::read(path).unwrap();
    let mut seen = HashSet::new();
    let mut repeats = 0;
    for b in data.chunks(bs) {
        if !seen.insert(b.to_vec()) {
            repeats += 1;
        }
    }
    (data.len() / bs, repeats)
}

fn write_file(dir: &std::path::Path, name: &str, size: &str, extra: &[&str]) -> std::path::PathBuf {
    let path = dir.join(name);
    let mut args = vec![
        format!("--name={name}"),
        format!("--filename={}", path.display()),
        "--rw=write".into(),
        "--bs=4k".into(),
        format!("--size={size}"),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    run_json(&a);
    path
}

#[test]
fn dedupe_percentage_is_the_share_of_repeated_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(dir.path(), "d50", "8m", &["--dedupe_percentage=50"]);
    let (blocks, repeats) = repeated_blocks(&p, 4096);
    let share = repeats as f64 / blocks as f64;
    assert!(
        (0.45..=0.55).contains(&share),
        "{repeats} of {blocks} blocks repeat"
    );
    let p = write_file(dir.path(), "d0", "4m", &["--refill_buffers"]);
    assert_eq!(
        repeated_blocks(&p, 4096).1,
        0,
        "refilled random blocks are unique"
    );
}

#[test]
fn scramble_buffers_defeats_naive_dedupe_of_a_reused_buffer() {
    let dir = tempfile::tempdir().unwrap();
    // iodepth=1: one slot, one buffer, reused by every write.
    let p = write_file(dir.path(), "scr", "1m", &[]);
    assert_eq!(
        repeated_blocks(&p, 4096).1,
        0,
        "scrambled by default, as fio"
    );
    let p = write_file(dir.path(), "noscr", "1m", &["--scramble_buffers=0"]);
    let (blocks, repeats) = repeated_blocks(&p, 4096);
    assert_eq!(repeats, blocks - 1, "the same buffer every time");
}

#[test]
fn buffer_pattern_bytes_reach_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(
        dir.path(),
        "pat",
        "1m",
        &["--buffer_pattern=0xdeadbeef\"ab\""],
    );
    let data = std::fs::read(&p).unwrap();
    assert_eq!(data.len() as u64, MIB);
    let pattern = [0xde, 0xad, 0xbe, 0xef, b'a', b'b'];
    for (i, block) in data.chunks(4096).enumerate() {
        for (j, &b) in block.iter().enumerate() {
            assert_eq!(
                b,
                pattern[j % 6],
                "block {i} byte {j}: each buffer starts the pattern"
            );
        }
    }
    // With compression, the fixed tail of each chunk is the pattern.
    let p = write_file(
        dir.path(),
        "patc",
        "64k",
        &[
            "--buffer_pattern=\"xy\"",
            "--buffer_compress_percentage=50",
            "--buffer_compress_chunk=1k",
        ],
    );
    let data = std::fs::read(&p).unwrap();
    for chunk in data.chunks(1024) {
        assert!(
            chunk[512..].chunks(2).all(|c| c == b"xy"),
            "tail is the pattern"
        );
    }
}

#[test]
fn bad_buffer_options_name_the_option_and_what_is_valid() {
    for (arg, says) in [
        ("--buffer_compress_percentage=101", "0 to 100"),
        ("--dedupe_percentage=-1", "0 to 100"),
        (
            "--buffer_pattern='/nonexistent/p'",
            "a readable file between single quotes",
        ),
        ("--buffer_pattern=0xzz", "hex number"),
        ("--dedupe_mode=sideways", "repeat or working_set"),
        ("--buffer_compress_chunk=5g", "below 4 GiB"),
    ] {
        let (code, out, err) =
            crate::run_common::iolab_run(&["--name=j", "--ioengine=null", "--size=1m", arg]);
        assert_eq!(code, 1, "{arg}: {out}");
        let key = arg.trim_start_matches("--").split('=').next().unwrap();
        assert!(err.contains(key) && err.contains(says), "{arg}: {err}");
    }
}

/// fio lays a read job's file out with the job's buffer contents, so with
/// `zero_buffers=1` the reads meet zeroes (a zram or deduplicating target
/// serves zero pages differently from data); without it, data.
#[test]
fn zero_buffers_lays_out_zeroes_for_a_read_job() {
    let dir = tempfile::tempdir().unwrap();
    let layout = |name: &str, extra: &[&str]| {
        let path = dir.path().join(name);
        let mut args = vec![
            format!("--name={name}"),
            format!("--filename={}", path.display()),
            "--rw=read".to_string(),
            "--bs=4k".to_string(),
            "--size=1m".to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        run_json(&a);
        std::fs::read(&path).unwrap()
    };
    let zeroes = layout("z", &["--zero_buffers=1"]);
    assert_eq!(zeroes.len(), 1 << 20);
    assert!(
        zeroes.iter().all(|&b| b == 0),
        "zero_buffers layout holds data"
    );
    let data = layout("d", &[]);
    assert!(
        data.iter().filter(|&&b| b == 0).count() < data.len() / 100,
        "the default layout is data, not zeroes"
    );
}
