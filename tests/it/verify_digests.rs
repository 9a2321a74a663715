//! Every checksum fio's `verify=` offers, end to end through `iolab run`: a
//! file written with it reads back clean, and a flipped data byte is found at
//! its exact offset by a later read job, which exits 1 and names the field;
//! `verify=null` only pretends (fio's meaning) and passes the same file.

use std::os::unix::fs::FileExt;

use serde_json::Value;

use crate::run_common::iolab_run as iolab;

const KINDS: [(&str, &str); 13] = [
    ("md5", "data_digest"),
    ("crc64", "data_crc"),
    ("crc32", "data_crc"),
    ("crc16", "data_crc"),
    ("crc7", "data_crc"),
    ("sha1", "data_digest"),
    ("sha256", "data_digest"),
    ("sha512", "data_digest"),
    ("sha3-224", "data_digest"),
    ("sha3-256", "data_digest"),
    ("sha3-384", "data_digest"),
    ("sha3-512", "data_digest"),
    ("xxhash", "data_digest"),
];

fn json(args: &[&str]) -> (i32, Value, String) {
    let mut a = args.to_vec();
    a.push("--output-format=json");
    let (code, out, err) = iolab(&a);
    let v =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("invalid JSON ({e}): {out}\n{err}"));
    (code, v, err)
}

#[test]
fn each_checksum_finds_a_flipped_byte_at_its_offset() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    for (kind, field) in KINDS {
        let f = dir.path().join(kind);
        let fname = format!("--filename={}", f.display());
        let verify = format!("--verify={kind}");
        let common = [
            fname.as_str(),
            verify.as_str(),
            "--size=256k",
            "--bs=4k",
            "--ioengine=psync",
        ];
        let w: Vec<&str> = ["--name=w", "--rw=randwrite"]
            .into_iter()
            .chain(common)
            .collect();
        let (code, doc, err) = json(&w);
        assert_eq!(code, 0, "{kind}: {err}");
        let v = &doc["jobs"][0]["iolab"]["engine"]["verify"];
        assert_eq!(
            (v["written"].as_u64(), v["checked"].as_u64()),
            (Some(64), Some(64)),
            "{kind}: {v}"
        );
        assert_eq!(v["failures"], 0, "{kind}: {v}");

        let r: Vec<&str> = ["--name=r", "--rw=read"]
            .into_iter()
            .chain(common)
            .collect();
        let (code, _, err) = iolab(&r);
        assert_eq!(code, 0, "{kind}: an intact file reads back clean: {err}");

        // A data byte near the end of the block: past every header (the
        // longest is 40 + 128 bytes), and among the bytes fio's sha512 keeps
        // (the first 128 of the data and its last `len % 128`: 88 here).
        let at = 8192 + 4090;
        let mut b = [0u8; 1];
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&f)
            .unwrap();
        file.read_exact_at(&mut b, at).unwrap();
        file.write_all_at(&[b[0] ^ 0x01], at).unwrap();
        drop(file);

        let (code, doc, err) = json(&r);
        assert_eq!(code, 1, "{kind}: {err}");
        let v = &doc["jobs"][0]["iolab"]["engine"]["verify"];
        assert_eq!(v["failures"], 1, "{kind}: {v}");
        assert_eq!(v["first_failure"]["offset"], 8192, "{kind}: {v}");
        assert_eq!(v["first_failure"]["field"], field, "{kind}: {v}");
        // The data regenerates from the header: the exact byte is named.
        assert_eq!(v["first_failure"]["bad_byte"][0], 4090, "{kind}: {v}");

        // fio's null only pretends: the corrupted file passes.
        let n: Vec<&str> = [
            "--name=n",
            "--rw=read",
            fname.as_str(),
            "--verify=null",
            "--size=256k",
            "--bs=4k",
            "--ioengine=psync",
        ]
        .to_vec();
        let (code, _, err) = iolab(&n);
        assert_eq!(code, 0, "verify=null never fails: {err}");
    }
}

#[test]
fn a_long_digest_needs_room_for_its_header_and_says_so() {
    // sha512's header is 40 + 128 bytes: a 64-byte verify_interval cannot hold it.
    let (code, _, err) = iolab(&[
        "--name=s",
        "--ioengine=null",
        "--null_backing=mem",
        "--size=64k",
        "--rw=write",
        "--bs=4k",
        "--verify=sha512",
        "--verify_interval=64",
    ]);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("verify_interval=64") && err.contains("168-byte header"),
        "{err}"
    );
    // And an unknown checksum lists the valid ones.
    let (code, _, err) = iolab(&["--name=s", "--ioengine=null", "--size=64k", "--verify=md4"]);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("sha3-512") && err.contains("xxhash"), "{err}");
}

#[test]
fn digests_verify_on_the_null_device_with_intervals_and_a_swapped_header() {
    for kind in ["md5", "sha256", "crc7"] {
        let (code, doc, err) = json(&[
            "--name=i",
            "--ioengine=null",
            "--null_backing=mem",
            "--size=1m",
            "--rw=randwrite",
            "--bs=16k",
            "--iodepth=4",
            &format!("--verify={kind}"),
            "--verify_interval=4k",
            "--verify_offset=512",
        ]);
        assert_eq!(code, 0, "{kind}: {err}");
        let v = &doc["jobs"][0]["iolab"]["engine"]["verify"];
        assert_eq!(v["written"], 64, "{kind}: {v}");
        assert_eq!(v["failures"], 0, "{kind}: {v}");
    }
}

/// fio's verify_only: the same write job run again does not write; it reads
/// back what the first run wrote and checks it — clean on the intact file,
/// the flipped byte found at its offset on the corrupted one.
#[test]
fn verify_only_checks_an_earlier_runs_writes_without_writing() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = dir.path().join("o");
    let fname = format!("--filename={}", f.display());
    let job = [
        "--name=w",
        fname.as_str(),
        "--size=256k",
        "--rw=randwrite",
        "--bs=4k",
        "--iodepth=4",
        "--ioengine=io_uring",
        "--verify=md5",
    ];
    let (code, doc, err) = json(&job);
    assert_eq!(code, 0, "{err}");
    let first = doc["jobs"][0]["iolab"]["engine"]["verify"]["checked"].clone();
    assert_eq!(first, 64);

    let mut again = job.to_vec();
    again.push("--verify_only=1");
    let (code, doc, err) = json(&again);
    assert_eq!(code, 0, "{err}");
    let j = &doc["jobs"][0];
    assert_eq!(j["write"]["total_ios"], 0, "verify_only writes nothing");
    let v = &j["iolab"]["engine"]["verify"];
    assert_eq!(v["failures"], 0, "{v}");
    assert_eq!(
        v["checked"], first,
        "the same blocks as the first run's read-back: {v}"
    );
    assert_eq!(j["read"]["total_ios"], first);

    // Corrupt one data byte past the md5 header (72 bytes) of the block at
    // 4096 (a random pass writes every 4k block once).
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&f)
        .unwrap();
    let mut b = [0u8; 1];
    file.read_exact_at(&mut b, 4096 + 100).unwrap();
    file.write_all_at(&[b[0] ^ 0x80], 4096 + 100).unwrap();
    drop(file);
    let (code, doc, err) = json(&again);
    let v = &doc["jobs"][0]["iolab"]["engine"]["verify"];
    assert_eq!(code, 1, "{err}");
    assert_eq!(v["failures"], 1, "{v}");
    assert_eq!(v["first_failure"]["field"], "data_digest", "{v}");
    assert_eq!(v["first_failure"]["offset"], 4096, "{v}");
}

#[test]
fn verify_only_without_verify_is_an_error() {
    let (code, _, err) = iolab(&[
        "--name=w",
        "--ioengine=null",
        "--size=64k",
        "--rw=write",
        "--verify_only=1",
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains("verify_only has no effect without verify="),
        "{err}"
    );
}
