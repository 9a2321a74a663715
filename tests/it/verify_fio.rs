//! fio's verify format, against fio 3.33 itself: for every checksum iolab
//! accepts, what fio writes passes `iolab run --verify_only` and what iolab
//! writes passes `fio --verify_only`; a flipped byte is reported by both at
//! the same offset; and a sequential write job leaves the same bytes under
//! both tools (all but each header's write time and the header crc that
//! covers it).

use std::process::Command;

use serde_json::Value;

use crate::backend_fio::sparse;
use crate::run_common::iolab_run;
use crate::support::needs::{Need, ready};

const BS: u64 = 4096;
const SIZE: u64 = 64 * 1024;

/// Every `verify=` kind that checks something, with the options it needs.
const KINDS: &[&[&str]] = &[
    &["--verify=crc32c"],
    &["--verify=crc32c-intel"],
    &["--verify=md5"],
    &["--verify=crc64"],
    &["--verify=crc32"],
    &["--verify=crc16"],
    &["--verify=crc7"],
    &["--verify=xxhash"],
    &["--verify=sha1"],
    &["--verify=sha256"],
    &["--verify=sha512"],
    &["--verify=sha3-224"],
    &["--verify=sha3-256"],
    &["--verify=sha3-384"],
    &["--verify=sha3-512"],
    &["--verify=meta", "--verify_pattern=0x5a5aa5"],
    &["--verify=pattern", "--verify_pattern=0xdeadbeef"],
    &["--verify_pattern=0x0123456789"],
    &["--verify=crc32c", "--verify_pattern=0xfeed\"ab\""],
    &["--verify=md5", "--verify_interval=1024"],
    &[
        "--verify=sha256",
        "--verify_interval=2048",
        "--verify_offset=512",
    ],
    &["--verify=crc32c", "--buffer_compress_percentage=50"],
];

/// The job both tools run on `file`: a sequential write of SIZE in BS
/// blocks, with `extra` (the kind, then do_verify/verify_only).
fn job(file: &str, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "--name=v".to_string(),
        format!("--filename={file}"),
        format!("--size={SIZE}"),
        format!("--bs={BS}"),
        "--rw=write".into(),
        "--ioengine=psync".into(),
    ]
    .into();
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// fio with `args`: (exit status, stdout + stderr).
fn fio(args: &[String]) -> (i32, String) {
    let out = Command::new("fio").args(args).output().expect("run fio");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// iolab with `args` and JSON output: (exit status, its verify section,
/// stderr).
fn iolab(args: &[String]) -> (i32, Value, String) {
    let mut a = args.to_vec();
    a.push("--output-format=json".into());
    let (code, out, err) = iolab_run(&a);
    let doc: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("invalid JSON ({e}): {out}\n{err}"));
    (
        code,
        doc["jobs"][0]["iolab"]["engine"]["verify"].clone(),
        err,
    )
}

fn with(kind: &[&str], more: &[&str]) -> Vec<String> {
    kind.iter().chain(more).map(|s| s.to_string()).collect()
}

fn as_refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn what_each_tool_writes_the_other_verifies() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    for kind in KINDS {
        let write = with(kind, &["--do_verify=0"]);
        let check = with(kind, &["--verify_only=1"]);
        // fio writes, iolab checks.
        let f = sparse(dir.path(), "by_fio", SIZE);
        let (rc, out) = fio(&job(&f, &as_refs(&write)));
        assert_eq!(rc, 0, "fio {kind:?}: {out}");
        let (rc, v, err) = iolab(&job(&f, &as_refs(&check)));
        assert_eq!(
            rc, 0,
            "iolab verify_only {kind:?} on fio's data: {err}\n{v}"
        );
        assert_eq!(v["checked"], SIZE / BS, "{kind:?}: {v}");
        assert_eq!(v["failures"], 0, "{kind:?}: {v}");
        // iolab writes, fio checks.
        let f = sparse(dir.path(), "by_iolab", SIZE);
        let (rc, v, err) = iolab(&job(&f, &as_refs(&write)));
        assert_eq!(rc, 0, "iolab {kind:?}: {err}");
        assert_eq!(v["written"], SIZE / BS, "{kind:?}: {v}");
        let (rc, out) = fio(&job(&f, &as_refs(&check)));
        assert_eq!(rc, 0, "fio verify_only {kind:?} on iolab's data: {out}");
    }
}

/// The header fields that differ between two writes of the same block: the
/// write time (bytes 24..32) and the header crc over it (36..40), of every
/// interval (`hdr_at` = where the headers sit in each interval).
fn mask_times(buf: &mut [u8], interval: usize, hdr_at: usize) {
    for chunk in buf.chunks_mut(interval) {
        chunk[hdr_at + 24..hdr_at + 32].fill(0);
        chunk[hdr_at + 36..hdr_at + 40].fill(0);
    }
}

#[test]
fn a_sequential_write_job_leaves_the_same_bytes_under_both_tools() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    for kind in KINDS {
        let opts = with(kind, &["--do_verify=0"]);
        let a = sparse(dir.path(), "fio", SIZE);
        let (rc, out) = fio(&job(&a, &as_refs(&opts)));
        assert_eq!(rc, 0, "fio {kind:?}: {out}");
        let b = sparse(dir.path(), "iolab", SIZE);
        let (rc, _, err) = iolab(&job(&b, &as_refs(&opts)));
        assert_eq!(rc, 0, "iolab {kind:?}: {err}");
        let (mut x, mut y) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        let strict = kind.contains(&"--verify=pattern");
        if !strict {
            let arg = |name: &str| {
                kind.iter()
                    .find_map(|k| k.strip_prefix(name))
                    .map_or(0, |v| v.parse::<usize>().unwrap())
            };
            let interval = match arg("--verify_interval=") {
                0 => BS as usize,
                iv => iv,
            };
            let hdr_at = arg("--verify_offset=");
            mask_times(&mut x, interval, hdr_at);
            mask_times(&mut y, interval, hdr_at);
        }
        let first = x.iter().zip(&y).position(|(p, q)| p != q);
        assert_eq!(
            first, None,
            "{kind:?}: files differ first at byte {first:?}"
        );
        assert_eq!(x.len(), y.len());
    }
}

/// The byte offset fio names on a failure ("... at file F offset N").
fn fio_failure_offset(out: &str) -> Option<u64> {
    let from = out.find("at file ")?;
    let at = from + out[from..].find(" offset ")?;
    let rest = &out[at + 8..];
    let end = rest.find(|c: char| !c.is_ascii_digit())?;
    rest[..end].parse().ok()
}

#[test]
fn a_flipped_byte_is_reported_by_both_at_the_same_offset() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    for kind in KINDS {
        // The interval of the flip: block 5, or its third 1k interval.
        let iv = if kind.contains(&"--verify_interval=1024") {
            1024
        } else if kind.contains(&"--verify_interval=2048") {
            2048
        } else {
            BS
        };
        let interval_at = 5 * BS + (2048 / iv) * iv % BS;
        // The last data byte of that interval (fio's sha512 does not look
        // at the middle of the data, only its first 128 and last bytes).
        let flip = interval_at + iv - 1;
        for writer_is_fio in [true, false] {
            let f = sparse(dir.path(), "flip", SIZE);
            let write = with(kind, &["--do_verify=0"]);
            if writer_is_fio {
                let (rc, out) = fio(&job(&f, &as_refs(&write)));
                assert_eq!(rc, 0, "{out}");
            } else {
                let (rc, _, err) = iolab(&job(&f, &as_refs(&write)));
                assert_eq!(rc, 0, "{err}");
            }
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&f)
                .unwrap();
            use std::os::unix::fs::FileExt;
            let mut b = [0u8];
            file.read_exact_at(&mut b, flip).unwrap();
            file.write_all_at(&[b[0] ^ 0x10], flip).unwrap();
            drop(file);
            let check = with(kind, &["--verify_only=1"]);
            let (rc, out) = fio(&job(&f, &as_refs(&check)));
            // fio 3.33 exits 0 when a block's last interval checks clean
            // after an earlier one failed (the next interval's result
            // replaces the failure); its message still names the interval.
            if iv == BS {
                assert_ne!(rc, 0, "fio missed the flip, {kind:?}: {out}");
            }
            assert_eq!(
                fio_failure_offset(&out),
                Some(interval_at),
                "{kind:?} fio: {out}"
            );
            let (rc, v, err) = iolab(&job(&f, &as_refs(&check)));
            assert_eq!(rc, 1, "iolab missed the flip, {kind:?}: {v}");
            assert_eq!(v["failures"], 1, "{kind:?}: {v}");
            assert_eq!(v["first_failure"]["offset"], interval_at, "{kind:?}: {v}");
            assert!(
                err.contains(&format!("block at offset {interval_at} ")),
                "{kind:?}: {err}"
            );
            // The flipped byte itself is named.
            assert_eq!(
                v["first_failure"]["bad_byte"][0].as_u64(),
                Some(flip - interval_at),
                "{kind:?}: {v}"
            );
        }
    }
}

#[test]
fn iolab_checks_what_a_random_fio_job_wrote() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    for kind in [&["--verify=crc32c"][..], &["--verify=sha1"][..]] {
        let f = sparse(dir.path(), "rand", SIZE);
        let mut args = job(&f, &as_refs(&with(kind, &["--do_verify=0"])));
        args.push("--rw=randwrite".into());
        let (rc, out) = fio(&args);
        assert_eq!(rc, 0, "{out}");
        let mut args = job(&f, &as_refs(&with(kind, &["--verify_only=1"])));
        args.push("--rw=randwrite".into());
        let (rc, v, err) = iolab(&args);
        assert_eq!(rc, 0, "{kind:?}: {err}\n{v}");
        assert_eq!(v["checked"], SIZE / BS, "{v}");
        assert_eq!(v["failures"], 0, "{v}");
    }
}
