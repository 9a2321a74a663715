//! The verify family beyond crc32c/pattern per block (fio's surface-scan.fio
//! and cross-stripe-verify.fio need them): `verify=meta` catches a block
//! written at the wrong place, `verify_interval` names the interval that was
//! corrupted, `verify_dump` writes the received and expected bytes, and
//! `fill_device` ends a write job at ENOSPC or its size. Each corrupts a file
//! between a write job and a later verify job.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// `iolab run ARGS` in `cwd` (dumps land in the working directory, as fio's).
fn iolab_in(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("run")
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run iolab");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn flip(path: &Path, at: u64) {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ 0x5a], at).unwrap();
}

/// A scratch file on the disk (not tmpfs: the jobs use O_DIRECT).
fn scratch() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = dir.path().join("c");
    (dir, f)
}

#[test]
fn meta_header_catches_a_block_written_at_the_wrong_offset() {
    let (dir, f) = scratch();
    let fname = format!("--filename={}", f.display());
    let common = [
        fname.as_str(),
        "--size=256k",
        "--bs=4k",
        "--direct=1",
        "--ioengine=psync",
        "--verify=meta",
    ];
    let w: Vec<&str> = ["--name=w", "--rw=write"]
        .iter()
        .chain(&common)
        .copied()
        .collect();
    let r: Vec<&str> = ["--name=r", "--rw=read"]
        .iter()
        .chain(&common)
        .copied()
        .collect();
    let (code, _, err) = iolab_in(dir.path(), &w);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = iolab_in(dir.path(), &r);
    assert_eq!(code, 0, "an intact file reads back clean: {err}");

    // meta checks the header, not the data (fio's meaning): a data byte
    // flipped is not its business.
    flip(&f, 32768 + 1000);
    let (code, _, err) = iolab_in(dir.path(), &r);
    assert_eq!(code, 0, "meta without a pattern checks headers only: {err}");

    // The block written for 8192 copied over the one at 16384: every byte is
    // a valid block, but in the wrong place.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&f)
        .unwrap();
    let mut block = vec![0u8; 4096];
    file.read_exact_at(&mut block, 8192).unwrap();
    file.write_all_at(&block, 16384).unwrap();
    drop(file);
    let (code, out, err) = iolab_in(dir.path(), &r);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        err.contains(
            "block at offset 16384 (4096 bytes): offset mismatch: expected 0x4000, found 0x2000"
        ),
        "{err}"
    );
    assert!(
        err.contains("1 of 64 blocks checked failed verification"),
        "{err}"
    );
}

#[test]
fn verify_interval_names_the_corrupted_interval_and_dumps_it() {
    for kind in [
        &["--verify=crc32c"][..],
        // surface-scan.fio's combination: meta headers, pattern data.
        &["--verify=meta", "--verify_pattern=0xaa555aa5"][..],
    ] {
        let (dir, f) = scratch();
        let fname = format!("--filename={}", f.display());
        let mut common = vec![
            fname.as_str(),
            "--size=64k",
            "--bs=4k",
            "--ioengine=psync",
            "--verify_interval=512",
        ];
        common.extend_from_slice(kind);
        let mut w = vec!["--name=w", "--rw=write"];
        w.extend(&common);
        let (code, _, err) = iolab_in(dir.path(), &w);
        assert_eq!(code, 0, "{kind:?}: {err}");
        // Every interval carries its own header: the one at 4096 + 512 says so.
        let mut hdr = [0u8; 24];
        std::fs::File::open(&f)
            .unwrap()
            .read_exact_at(&mut hdr, 4096 + 512)
            .unwrap();
        assert_eq!(&hdr[0..2], &[0xca, 0xac]);
        assert_eq!(u32::from_le_bytes(hdr[4..8].try_into().unwrap()), 512);
        assert_eq!(u64::from_le_bytes(hdr[16..24].try_into().unwrap()), 4608);

        // A data byte in the second interval of the block at 4096.
        flip(&f, 4096 + 512 + 100);
        let mut r = vec!["--name=r", "--rw=read", "--verify_dump=1"];
        r.extend(&common);
        let (code, out, err) = iolab_in(dir.path(), &r);
        assert_eq!(code, 1, "{kind:?}: {out}\n{err}");
        assert!(
            err.contains("block at offset 4608 (512 bytes)")
                && err.contains("first bad byte at block offset 100"),
            "{kind:?}: {err}"
        );
        let received = std::fs::read(dir.path().join("c.4608.received")).unwrap();
        let expected = std::fs::read(dir.path().join("c.4608.expected")).unwrap();
        assert_eq!((received.len(), expected.len()), (512, 512), "{kind:?}");
        let differ: Vec<usize> = (0..512).filter(|&i| received[i] != expected[i]).collect();
        assert_eq!(differ, [100], "{kind:?}: only the flipped byte differs");
    }
}

#[test]
fn verify_dump_writes_received_and_expected_blocks_that_differ_at_the_corrupted_byte() {
    let (dir, f) = scratch();
    let fname = format!("--filename={}", f.display());
    let common = [fname.as_str(), "--size=128k", "--bs=8k", "--ioengine=psync"];
    // A write job that checks its own blocks: the corruption happens between
    // its write phase and a later job's check, so write with do_verify=0.
    let mut w = vec!["--name=w", "--rw=write", "--verify=crc32c", "--do_verify=0"];
    w.extend(common);
    let (code, _, err) = iolab_in(dir.path(), &w);
    assert_eq!(code, 0, "{err}");
    flip(&f, 16384 + 700);
    let mut r = vec![
        "--name=r",
        "--rw=read",
        "--verify=crc32c",
        "--verify_dump=1",
    ];
    r.extend(common);
    let (code, _, err) = iolab_in(dir.path(), &r);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("c.16384.received") && err.contains("c.16384.expected"),
        "{err}"
    );
    let received = std::fs::read(dir.path().join("c.16384.received")).unwrap();
    let expected = std::fs::read(dir.path().join("c.16384.expected")).unwrap();
    assert_eq!(received.len(), 8192);
    let differ: Vec<usize> = (0..8192).filter(|&i| received[i] != expected[i]).collect();
    assert_eq!(differ, [700]);
    assert_eq!(received[700] ^ expected[700], 0x5a);
    // Only the bad block is dumped.
    let dumps = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("c."))
        .count();
    assert_eq!(dumps, 2);
}

/// fio's names for the two kinds of mismatch: a bad header is dumped as read
/// (`.hdr_fail`, nothing to rebuild the expected bytes from), bad data as
/// `.received` and `.expected`; every mismatch of the job is dumped.
#[test]
fn verify_dump_writes_a_bad_header_as_hdr_fail_and_dumps_every_mismatch() {
    let (dir, f) = scratch();
    let fname = format!("--filename={}", f.display());
    let common = [fname.as_str(), "--size=128k", "--bs=8k", "--ioengine=psync"];
    let mut w = vec!["--name=w", "--rw=write", "--verify=md5", "--do_verify=0"];
    w.extend(common);
    let (code, _, err) = iolab_in(dir.path(), &w);
    assert_eq!(code, 0, "{err}");
    flip(&f, 16384); // the magic of the block at 16384
    flip(&f, 65536 + 700); // data of the block at 65536
    let mut r = vec!["--name=r", "--rw=read", "--verify=md5", "--verify_dump=1"];
    r.extend(common);
    let (code, _, err) = iolab_in(dir.path(), &r);
    assert_eq!(code, 1, "{err}");
    let on_disk = std::fs::read(&f).unwrap();
    let hdr = std::fs::read(dir.path().join("c.16384.hdr_fail")).unwrap();
    assert_eq!(hdr, &on_disk[16384..16384 + 8192]);
    let received = std::fs::read(dir.path().join("c.65536.received")).unwrap();
    let expected = std::fs::read(dir.path().join("c.65536.expected")).unwrap();
    let differ: Vec<usize> = (0..8192).filter(|&i| received[i] != expected[i]).collect();
    assert_eq!(differ, [700]);
    let mut dumps: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("c."))
        .collect();
    dumps.sort();
    assert_eq!(
        dumps,
        ["c.16384.hdr_fail", "c.65536.expected", "c.65536.received"],
        "{err}"
    );
}

#[test]
fn fill_device_is_bounded_on_a_regular_file() {
    let (dir, f) = scratch();
    let fname = format!("--filename={}", f.display());
    // Without a size fio would fill the filesystem: refused, naming why.
    let (code, _, err) = iolab_in(
        dir.path(),
        &[
            "--name=w",
            fname.as_str(),
            "--rw=write",
            "--bs=64k",
            "--fill_device=1",
        ],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("fill_device on the regular file") && err.contains("give size="),
        "{err}"
    );
    assert!(!f.exists(), "nothing is created for a refused job");
    // With a size it writes that much and verifies it (surface-scan's write phase).
    let (code, out, err) = iolab_in(
        dir.path(),
        &[
            "--name=w",
            fname.as_str(),
            "--rw=write",
            "--bs=64k",
            "--fill_fs=1",
            "--size=1m",
            "--verify=meta",
            "--verify_pattern=0xaa555aa5",
            "--verify_interval=512",
            "--output-format=json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let job = &doc["jobs"][0];
    assert_eq!(job["write"]["io_bytes"], 1 << 20);
    assert_eq!(job["iolab"]["engine"]["verify"]["checked"], 16);
    assert_eq!(job["iolab"]["engine"]["verify"]["failures"], 0);
    // A read job cannot fill anything.
    let (code, _, err) = iolab_in(
        dir.path(),
        &[
            "--name=r",
            fname.as_str(),
            "--rw=read",
            "--fill_device=1",
            "--size=1m",
        ],
    );
    assert_eq!(code, 1);
    assert!(err.contains("fill_device applies to write jobs"), "{err}");
}

#[test]
fn fill_device_stops_at_enospc_and_verifies_what_fit() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        crate::support::needs::skip(
            "cannot mount a 4 MiB tmpfs (needs root) to run out of space on",
        );
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _guard = Unmount(&mnt);
    let fname = format!("--filename={}", mnt.join("f").display());
    let (code, out, err) = iolab_in(
        dir.path(),
        &[
            "--name=w",
            fname.as_str(),
            "--rw=write",
            "--bs=64k",
            "--fill_device=1",
            "--size=16m",
            "--verify=crc32c",
            "--output-format=json",
        ],
    );
    assert_eq!(
        code, 0,
        "ENOSPC ends a fill_device job without error: {err}"
    );
    let doc: Value = serde_json::from_str(&out).unwrap();
    let job = &doc["jobs"][0];
    assert_eq!(job["error"], 0);
    assert_eq!(job["write"]["io_bytes"], 4 << 20, "the 4 MiB that fit");
    assert_eq!(job["iolab"]["engine"]["verify"]["checked"], 64);
    assert_eq!(job["iolab"]["engine"]["verify"]["failures"], 0);
}

/// fio's meaning of an interval the blocks cannot take (t0004 of fio's
/// suite: `verify_interval=1M` with 512-byte blocks): longer than the block,
/// it becomes the block; not a divisor, it becomes the gcd of the smallest
/// and largest block. A corrupted byte is still found at its exact offset.
#[test]
fn verify_interval_the_blocks_cannot_take_is_fitted_as_fio_fits_it() {
    for (bs, interval, hdr_len) in [("512", "1m", 512u32), ("4k", "3000", 4096)] {
        let (dir, f) = scratch();
        let fname = format!("--filename={}", f.display());
        let bs_opt = format!("--bs={bs}");
        let iv_opt = format!("--verify_interval={interval}");
        let common = [
            fname.as_str(),
            "--size=64k",
            bs_opt.as_str(),
            iv_opt.as_str(),
            "--ioengine=psync",
            "--verify=md5",
        ];
        let mut w = vec!["--name=w", "--rw=write", "--do_verify=0"];
        w.extend(common);
        let (code, _, err) = iolab_in(dir.path(), &w);
        assert_eq!(code, 0, "bs={bs}: {err}");
        // One header per hdr_len bytes, each naming its own length.
        let mut hdr = [0u8; 24];
        let second = u64::from(hdr_len);
        std::fs::File::open(&f)
            .unwrap()
            .read_exact_at(&mut hdr, second)
            .unwrap();
        assert_eq!(&hdr[0..2], &[0xca, 0xac], "bs={bs}");
        assert_eq!(u32::from_le_bytes(hdr[4..8].try_into().unwrap()), hdr_len);
        assert_eq!(u64::from_le_bytes(hdr[16..24].try_into().unwrap()), second);
        let bad = 5 * second + 300;
        flip(&f, bad);
        let mut r = vec!["--name=r", "--rw=read"];
        r.extend(common);
        let (code, _, err) = iolab_in(dir.path(), &r);
        assert_eq!(code, 1, "bs={bs}: {err}");
        assert!(
            err.contains(&format!("block at offset {} ({hdr_len} bytes)", 5 * second))
                && err.contains(&format!(
                    "first bad byte at block offset 300 (device offset {bad})"
                )),
            "bs={bs}: {err}"
        );
    }
}

/// fio's t0002 in small: a job with varying block sizes writes its region,
/// which ends where the file ends; the file then grows (t0002's other job
/// writes further on), and a later read job with the same options verifies
/// the region. Both passes end exactly at the region's end, block for block,
/// so every block read carries the header its write left (iolab's write
/// pass used to stop at the first size that did not fit, its read pass to
/// run past the region's end).
#[test]
fn a_later_job_verifies_varying_blocks_written_into_part_of_a_larger_file() {
    let (dir, f) = scratch();
    let grow = |len: u64| {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&f)
            .and_then(|h| h.set_len(len))
            .unwrap()
    };
    grow(3 << 20);
    let fname = format!("--filename={}", f.display());
    let common = [
        fname.as_str(),
        "--size=2m",
        "--offset=1m",
        "--bssplit=512/50:256k/50",
        "--ioengine=psync",
        "--verify=md5",
        "--output-format=json",
    ];
    let mut w = vec!["--name=w", "--rw=write", "--do_verify=0"];
    w.extend(common);
    let (code, out, err) = iolab_in(dir.path(), &w);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["jobs"][0]["write"]["io_bytes"], 2 << 20);
    let written = doc["jobs"][0]["write"]["total_ios"].as_u64().unwrap();
    grow(8 << 20);
    let mut r = vec!["--name=r", "--rw=read", "--verify_fatal=1"];
    r.extend(common);
    let (code, out, err) = iolab_in(dir.path(), &r);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let job = &doc["jobs"][0];
    assert_eq!(job["read"]["io_bytes"], 2 << 20);
    assert_eq!(job["iolab"]["engine"]["verify"]["checked"], written);
    assert_eq!(job["iolab"]["engine"]["verify"]["failures"], 0);
}

#[test]
fn bad_verify_family_values_are_refused_with_what_is_valid() {
    let base = [
        "--name=x",
        "--ioengine=null",
        "--null_backing=mem",
        "--size=1m",
        "--rw=write",
    ];
    let cases: [(&[&str], &str); 5] = [
        (
            &["--verify=crc32c", "--verify_offset=16"],
            "verify_offset=16 would swap the 44-byte header with bytes that overlap it",
        ),
        (
            &["--verify=crc32c", "--bs=4k", "--verify_offset=4090"],
            "runs past the smallest block (4096 bytes); use a verify_offset of at most 4052",
        ),
        (
            // fio's fit gives gcd(4k, 12k) = 4k, which cannot split the 6k blocks.
            &[
                "--verify=crc32c",
                "--bssplit=4k/50:12k/25:6k/25",
                "--verify_interval=4k",
            ],
            "verify_interval=4096 does not divide the block size 6144",
        ),
        (
            &["--verify=crc32c", "--verify_interval=32"],
            "verify_interval=32 is smaller than 64 bytes",
        ),
        (
            &["--verify=sha3-1024"],
            "sha3-224, sha3-256, sha3-384, sha3-512, xxhash",
        ),
    ];
    for (extra, want) in cases {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        let (code, _, err) = iolab_in(Path::new("."), &a);
        assert_eq!(code, 1, "{extra:?}");
        assert!(err.contains(want), "{extra:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn a_write_job_dumps_what_it_wrote_next_to_what_came_back() {
    // The null device flips one byte of some reads: each dump pair of the
    // write job's read-back must differ in exactly that byte, so the expected
    // side is the block as written (its seq and seed, regenerated).
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (code, out, err) = iolab_in(
        dir.path(),
        &[
            "--name=w",
            "--ioengine=null",
            "--null_backing=mem",
            "--null_corrupt_rate=0.05",
            "--size=1m",
            "--bs=4k",
            "--rw=randwrite",
            "--verify=crc32c",
            "--verify_interval=1k",
            "--verify_dump=1",
            "--continue_on_error=verify",
            "--output-format=json",
        ],
    );
    assert_eq!(code, 1, "corrupted reads fail the job: {err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let failures = doc["jobs"][0]["iolab"]["engine"]["verify"]["failures"]
        .as_u64()
        .unwrap();
    let (mut pairs, mut headers) = (0, 0);
    for e in std::fs::read_dir(dir.path()).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".hdr_fail") {
            // The flipped byte hit a header: dumped as read, as fio does.
            assert_eq!(std::fs::read(e.path()).unwrap().len(), 1024, "{name}");
            headers += 1;
            continue;
        }
        let Some(stem) = name.strip_suffix(".received") else {
            continue;
        };
        let received = std::fs::read(e.path()).unwrap();
        let expected = std::fs::read(dir.path().join(format!("{stem}.expected"))).unwrap();
        assert_eq!(received.len(), 1024, "{name}: one interval");
        let differ = (0..1024).filter(|&i| received[i] != expected[i]).count();
        assert_eq!(differ, 1, "{name}: one flipped byte");
        pairs += 1;
    }
    assert!(pairs > 0, "no dumps: {err}");
    assert_eq!(
        pairs + headers,
        failures,
        "one dump per mismatch, every mismatch"
    );
}

#[test]
fn loops_read_back_every_pass_as_fio_does() {
    let (dir, f) = scratch();
    let fname = format!("--filename={}", f.display());
    let (code, out, err) = iolab_in(
        dir.path(),
        &[
            "--name=w",
            fname.as_str(),
            "--rw=write",
            "--bs=4k",
            "--size=64k",
            "--loops=2",
            "--verify=crc32c",
            "--output-format=json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let job = &doc["jobs"][0];
    // fio 3.33 on the same job: 32 writes, 32 reads.
    assert_eq!(job["write"]["total_ios"], 32);
    assert_eq!(job["read"]["total_ios"], 32);
    assert_eq!(job["iolab"]["engine"]["verify"]["failures"], 0);
}

#[test]
fn verify_offset_stores_the_header_inside_the_block_and_reads_back_clean() {
    let (dir, f) = scratch();
    let fname = format!("--filename={}", f.display());
    let common = [
        fname.as_str(),
        "--size=64k",
        "--bs=4k",
        "--ioengine=psync",
        "--verify=crc32c",
        "--verify_interval=1k",
        "--verify_offset=300",
    ];
    let mut w = vec!["--name=w", "--rw=write", "--do_verify=0"];
    w.extend(common);
    let (code, _, err) = iolab_in(dir.path(), &w);
    assert_eq!(code, 0, "{err}");
    // On disk the header of the interval at 8192 + 1024 sits 300 bytes in.
    let mut hdr = [0u8; 24];
    std::fs::File::open(&f)
        .unwrap()
        .read_exact_at(&mut hdr, 8192 + 1024 + 300)
        .unwrap();
    assert_eq!(&hdr[0..2], &[0xca, 0xac]);
    assert_eq!(u64::from_le_bytes(hdr[16..24].try_into().unwrap()), 9216);
    let mut r = vec!["--name=r", "--rw=read"];
    r.extend(common);
    let (code, _, err) = iolab_in(dir.path(), &r);
    assert_eq!(code, 0, "read back with the same verify_offset: {err}");
    // Without verify_offset the reader finds no header at the start.
    let plain: Vec<&str> = r
        .iter()
        .copied()
        .filter(|a| !a.starts_with("--verify_offset"))
        .collect();
    let (code, _, err) = iolab_in(dir.path(), &plain);
    assert_eq!(code, 1, "{err}");
    // A flipped byte of a moved header is caught in its interval.
    flip(&f, 8192 + 1024 + 300 + 20);
    let (code, _, err) = iolab_in(dir.path(), &r);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("block at offset 9216 (1024 bytes)"), "{err}");
}
