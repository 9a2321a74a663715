//! Data verification end to end through `iolab run`: write-then-verify and
//! verify_backlog on the null device (memory image), psync and io_uring, buffered
//! and O_DIRECT, with crc32c and pattern; a corrupted file is caught by a later
//! read job with the offset and field named, in text and JSON, with exit status 1.

use std::os::unix::fs::FileExt;

use serde_json::Value;

use crate::run_common;

use run_common::iolab_run as iolab;

fn json(args: &[&str]) -> (i32, Value, String) {
    let mut a = args.to_vec();
    a.push("--output-format=json");
    let (code, out, err) = iolab(&a);
    let v =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("invalid JSON ({e}): {out}\n{err}"));
    (code, v, err)
}

fn verify_of(doc: &Value) -> &Value {
    &doc["jobs"][0]["iolab"]["engine"]["verify"]
}

#[test]
fn null_device_write_then_verify_checks_every_block() {
    for kind in ["--verify=crc32c", "--verify_pattern=0xdeadbeef\"iolab\""] {
        let (code, doc, err) = json(&[
            "--name=w",
            "--ioengine=null",
            "--size=2m",
            "--null_backing=mem",
            "--rw=write",
            "--bs=8k",
            "--iodepth=4",
            kind,
        ]);
        assert_eq!(code, 0, "{kind}: {err}");
        let v = verify_of(&doc);
        assert_eq!(v["written"], 256, "{v}");
        assert_eq!(v["checked"], 256, "{v}");
        assert_eq!(v["failures"], 0, "{v}");
        // The read-back shows up as reads, like fio's verify phase.
        assert_eq!(doc["jobs"][0]["read"]["total_ios"], 256);
    }
}

#[test]
fn backlog_verifies_while_writing_and_random_writes_are_tracked() {
    let (code, doc, err) = json(&[
        "--name=b",
        "--ioengine=null",
        "--size=1m",
        "--null_backing=mem",
        "--null_channels=4",
        "--null_lat=2us",
        "--rw=randwrite",
        "--bsrange=4k-16k",
        "--iodepth=16",
        "--number_ios=2000",
        "--loops=100",
        "--verify=crc32c",
        "--verify_backlog=10",
        "--do_verify=0",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = verify_of(&doc);
    assert_eq!(v["written"], 2000, "{v}");
    // Every batch of 10 writes is read back, except blocks overwritten in part
    // by a later write before their check (mixed sizes overlap).
    let checked = v["checked"].as_u64().unwrap();
    let skipped = v["skipped"].as_u64().unwrap();
    assert_eq!(checked + skipped, 2000, "{v}");
    assert!(checked > 1000, "{v}");
    assert_eq!(v["failures"], 0, "{v}");
}

#[test]
fn files_verify_clean_on_psync_and_io_uring_buffered_and_direct() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = dir.path().join("v");
    let fname = format!("--filename={}", f.display());
    for engine in ["psync", "io_uring"] {
        for direct in ["0", "1"] {
            let (code, doc, err) = json(&[
                "--name=f",
                &fname,
                "--size=4m",
                "--rw=randwrite",
                "--bs=4k",
                "--iodepth=8",
                "--number_ios=1500",
                "--loops=2",
                &format!("--ioengine={engine}"),
                &format!("--direct={direct}"),
                "--verify=crc32c",
                "--verify_backlog=64",
            ]);
            assert_eq!(code, 0, "{engine} direct={direct}: {err}");
            let v = verify_of(&doc);
            assert_eq!(v["failures"], 0, "{engine} direct={direct}: {v}");
            assert_eq!(v["written"], 1500, "{v}");
            // The backlog checks each write once; as in fio (t0008), the
            // final read-back has nothing left to check.
            assert_eq!(v["checked"].as_u64(), Some(1500), "{v}");
        }
    }
}

#[test]
fn a_corrupted_file_is_caught_by_a_read_job_naming_offset_and_field() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = dir.path().join("c");
    let fname = format!("--filename={}", f.display());
    let common = [fname.as_str(), "--size=1m", "--bs=4k", "--ioengine=psync"];
    let mut w = vec!["--name=w", "--rw=write", "--verify=crc32c"];
    w.extend(common);
    let (code, _, err) = iolab(&w);
    assert_eq!(code, 0, "{err}");
    let mut r = vec!["--name=r", "--rw=read", "--verify=crc32c"];
    r.extend(common);
    let (code, _, err) = iolab(&r);
    assert_eq!(code, 0, "an intact file reads back clean: {err}");

    let file = std::fs::OpenOptions::new().write(true).open(&f).unwrap();
    // Data byte 100 of the block at 8192, and the offset field of the block at 65536.
    let mut b = [0u8; 1];
    std::fs::File::open(&f)
        .unwrap()
        .read_exact_at(&mut b, 8192 + 100)
        .unwrap();
    file.write_all_at(&[b[0] ^ 0x5a], 8192 + 100).unwrap();
    file.write_all_at(&[0x77], 65536 + 17).unwrap();
    drop(file);

    let (code, out, err) = iolab(&r);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        err.contains("block at offset 8192") && err.contains("data crc mismatch"),
        "{err}"
    );
    assert!(err.contains("first bad byte at block offset 100"), "{err}");
    assert!(
        err.contains("2 of 256 blocks checked failed verification"),
        "{err}"
    );
    let (code, doc, _) = json(&r);
    assert_eq!(code, 1);
    let job = &doc["jobs"][0];
    assert_eq!(job["error"], 84, "EILSEQ, as fio reports a verify failure");
    let v = &job["iolab"]["engine"]["verify"];
    assert_eq!(v["failures"], 2, "{v}");
    assert_eq!(v["first_failure"]["field"], "data_crc");
    assert_eq!(v["first_failure"]["offset"], 8192);
    assert!(
        job["iolab"]["engine"]["error_message"]
            .as_str()
            .unwrap()
            .contains("failed verification")
    );
    // verify_fatal stops at the first bad block.
    let mut rf = r.clone();
    rf.push("--verify_fatal=1");
    let (code, doc, _) = json(&rf);
    assert_eq!(code, 1);
    assert_eq!(verify_of(&doc)["checked"], 3);
    // The offset field is named when the header lies about where it was written.
    let mut tail = r.clone();
    tail.push("--offset=64k");
    let (_, _, err) = iolab(&tail);
    assert!(err.contains("offset mismatch: expected 0x10000"), "{err}");
}

#[test]
fn bad_verify_options_are_refused_with_what_is_valid() {
    let base = ["--name=x", "--ioengine=null", "--size=1m", "--rw=write"];
    let cases: [(&[&str], &str); 4] = [
        (
            &["--verify=md4", "--null_backing=mem"],
            "crc32c (crc32c-intel), md5, crc64, crc32, crc16, crc7, sha1, sha256",
        ),
        (
            &["--verify=pattern", "--null_backing=mem"],
            "verify=pattern needs verify_pattern=",
        ),
        (&["--verify=crc32c"], "needs null_backing=mem"),
        (
            &["--verify=crc32c", "--null_backing=mem", "--bs=32"],
            "at least 64 bytes",
        ),
    ];
    for (extra, want) in cases {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        let (code, _, err) = iolab(&a);
        assert_eq!(code, 1, "{a:?}");
        assert!(err.contains(want), "{a:?}: {err}");
    }
}

/// A mixed job verifies what it writes (fio's verify in rw=randrw): backlog
/// read-backs while it runs, every written block at the end, and its own
/// reads of blocks it wrote; a corruption is still caught.
#[test]
fn a_mixed_job_verifies_its_writes() {
    let base = [
        "--name=x",
        "--ioengine=null",
        "--size=1m",
        "--bs=4k",
        "--rw=randrw",
        "--verify=crc32c",
        "--verify_backlog=16",
        "--null_backing=mem",
        "--iodepth=8",
        "--number_ios=2000",
        "--time_based",
        "--runtime=30",
    ];
    let (code, doc, err) = json(&base);
    assert_eq!(code, 0, "{err}");
    let v = verify_of(&doc);
    let written = v["written"].as_u64().unwrap();
    assert!(written > 500, "{v}");
    // The final read-back alone checks every block written (most of the 256).
    assert!(v["checked"].as_u64().unwrap() > 200, "{v}");
    assert_eq!(v["failures"], 0, "{v}");
    let mut bad = base.to_vec();
    bad.push("--null_corrupt_rate=0.05");
    let (code, doc, _) = json(&bad);
    assert_ne!(code, 0);
    assert!(verify_of(&doc)["failures"].as_u64().unwrap() > 0);
}
