//! Trims (`rw=trim`, `randtrim`, `trimwrite`, `randtrimwrite`) end to end: a
//! trim on a file punches holes (blocks freed, zeros read back) with every
//! file engine, a trim on a hot-added zram frees its pages (mm_stat), a
//! trimwrite writes each range right after trimming it, the JSON's `trim`
//! object has fio 3.33's keys and counts, and a trim is refused on a device
//! holding a filesystem, as a write is.

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::run_common::{iolab_run, run_json};
use crate::support::needs::{Need, ready};

const ENGINES: [&str; 6] = ["psync", "sync", "pvsync", "pvsync2", "libaio", "io_uring"];

fn tmp() -> tempfile::TempDir {
    // On the target disk (ext4 here), not tmpfs: both punch holes, but the
    // disk is where users' files are.
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Blocks (512 B) the file holds.
fn blocks(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().blocks()
}

fn args(file: &Path, rw: &str, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "--name=t".into(),
        format!("--filename={}", file.display()),
        "--size=4m".into(),
        "--bs=64k".into(),
        format!("--rw={rw}"),
    ];
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn json_of(a: &[String]) -> Value {
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    run_json(&a)
}

#[test]
fn trim_on_a_file_punches_holes_with_every_file_engine() {
    let dir = tmp();
    for engine in ENGINES {
        let f = dir.path().join(format!("f-{engine}"));
        let eng = format!("--ioengine={engine}");
        json_of(&args(&f, "write", &[&eng, "--end_fsync=1"]));
        let full = blocks(&f);
        assert!(
            full >= 4 * 2048,
            "{engine}: the write job filled the file ({full} blocks)"
        );
        let j = json_of(&args(&f, "trim", &[&eng, "--iodepth=4"]));
        let t = &j["jobs"][0]["trim"];
        assert_eq!(t["total_ios"], 64, "{engine}: {t}");
        assert_eq!(t["io_bytes"], 4 << 20, "{engine}: {t}");
        assert_eq!(j["jobs"][0]["write"]["total_ios"], 0, "{engine}");
        assert_eq!(j["jobs"][0]["error"], 0, "{engine}");
        let after = blocks(&f);
        assert!(
            after * 10 < full,
            "{engine}: the holes freed the blocks ({full} -> {after})"
        );
        let data = std::fs::read(&f).unwrap();
        assert_eq!(data.len(), 4 << 20, "{engine}: the size stays");
        assert!(
            data.iter().all(|&b| b == 0),
            "{engine}: the holes read as zeros"
        );
    }
}

#[test]
fn randtrim_covers_the_region_once_and_reports_like_fio() {
    let dir = tmp();
    let f = dir.path().join("f");
    json_of(&args(&f, "write", &[]));
    let (code, out, err) = iolab_run(&args(&f, "randtrim", &["--bs=4k"]));
    assert_eq!(code, 0, "{err}");
    // fio's normal output: a trim block, the group's TRIM line, issued rwts.
    assert!(out.contains("  trim: IOPS="), "{out}");
    assert!(out.contains("   TRIM: bw="), "{out}");
    assert!(out.contains("issued rwts: total=0,0,1024,0"), "{out}");
    assert!(
        !out.contains("  read: IOPS=") && !out.contains("  write: IOPS="),
        "{out}"
    );
    let data = std::fs::read(&f).unwrap();
    assert!(
        data.iter().all(|&b| b == 0),
        "the random map trims every block once"
    );
}

/// (ddir, offset) of each row of a per-I/O log written with log_offset=1.
fn log_rows(p: &Path) -> Vec<(u32, u64)> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            (f[2].parse().unwrap(), f[4].parse().unwrap())
        })
        .collect()
}

#[test]
fn trimwrite_writes_each_range_right_after_trimming_it() {
    let dir = tmp();
    for rw in ["trimwrite", "randtrimwrite"] {
        let f = dir.path().join(rw);
        let prefix = dir.path().join(format!("{rw}-log"));
        let j = json_of(&args(
            &f,
            rw,
            &[
                "--ioengine=psync",
                &format!("--write_lat_log={}", prefix.display()),
                "--log_offset=1",
            ],
        ));
        let job = &j["jobs"][0];
        // fio: "io_size=64K trims 64K and writes 64K on the same blocks".
        assert_eq!(job["trim"]["total_ios"], 64, "{rw}");
        assert_eq!(job["write"]["total_ios"], 64, "{rw}");
        assert_eq!(job["trim"]["io_bytes"], job["write"]["io_bytes"], "{rw}");
        let rows = log_rows(&dir.path().join(format!("{rw}-log_lat.1.log")));
        assert_eq!(rows.len(), 128, "{rw}");
        let mut trimmed = BTreeSet::new();
        for pair in rows.chunks(2) {
            // fio's log direction column: 2 for a trim, 1 for a write.
            assert_eq!(pair[0].0, 2, "{rw}: a trim first: {pair:?}");
            assert_eq!(pair[1].0, 1, "{rw}: then the write: {pair:?}");
            assert_eq!(pair[0].1, pair[1].1, "{rw}: of the same range: {pair:?}");
            trimmed.insert(pair[0].1);
        }
        assert_eq!(trimmed.len(), 64, "{rw}: every range once");
        let data = std::fs::read(&f).unwrap();
        assert!(
            data.chunks(4096).all(|c| c.iter().any(|&b| b != 0)),
            "{rw}: every block holds the data written after its trim"
        );
    }
}

#[test]
fn trimwrite_at_depth_never_lets_a_write_overtake_its_trim() {
    let dir = tmp();
    for engine in ["io_uring", "libaio"] {
        let f = dir.path().join(engine);
        let eng = format!("--ioengine={engine}");
        let extra = [eng.as_str(), "--iodepth=16", "--bs=4k", "--direct=1"];
        let j = json_of(&args(&f, "randtrimwrite", &extra));
        let job = &j["jobs"][0];
        assert_eq!(job["trim"]["total_ios"], 1024, "{engine}: {}", job["trim"]);
        assert_eq!(job["write"]["total_ios"], 1024, "{engine}");
        assert_eq!(job["error"], 0, "{engine}");
        let data = std::fs::read(&f).unwrap();
        assert!(
            data.chunks(4096).all(|c| c.iter().any(|&b| b != 0)),
            "{engine}: a trim landed after the write of its range"
        );
    }
}

#[test]
fn the_null_device_completes_trims_like_other_commands() {
    let j = run_json(&[
        "--name=n",
        "--ioengine=null",
        "--size=1m",
        "--bs=4k",
        "--rw=randtrim",
        "--iodepth=8",
    ]);
    let job = &j["jobs"][0];
    assert_eq!(job["trim"]["total_ios"], 256, "{}", job["trim"]);
    assert_eq!(job["trim"]["io_bytes"], 1 << 20);
    assert!(job["trim"]["clat_ns"]["mean"].as_f64().unwrap() > 0.0);
    assert_eq!(job["read"]["total_ios"], 0);
    // fio's latency distribution counts trims.
    let us: f64 = job["latency_us"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_f64().unwrap())
        .sum();
    let ns: f64 = job["latency_ns"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_f64().unwrap())
        .sum();
    let ms: f64 = job["latency_ms"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!((us + ns + ms - 100.0).abs() < 0.5, "{us} + {ns} + {ms}");
}

/// `orig_data_size` of zramN's mm_stat: bytes of data the device holds.
fn zram_data(name: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/sys/block/{name}/mm_stat")).unwrap();
    s.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn trim_on_zram_frees_its_pages() {
    if !ready(&[Need::Zram]) {
        return;
    }
    for engine in ["psync", "libaio", "io_uring"] {
        let z = iolab::sys::zram::Zram::create(16 << 20).unwrap();
        let dev = z.path();
        let eng = format!("--ioengine={engine}");
        let common = [
            "--size=8m",
            "--bs=64k",
            "--direct=1",
            "--iodepth=4",
            eng.as_str(),
        ];
        let file = format!("--filename={}", dev.display());
        let mut w = vec!["--name=w", file.as_str(), "--rw=write"];
        w.extend(common);
        run_json(&w);
        let held = zram_data(&z.name());
        assert!(held >= 8 << 20, "{engine}: the write stored 8 MiB ({held})");
        let mut t = vec!["--name=t", file.as_str(), "--rw=trim"];
        t.extend(common);
        let j = run_json(&t);
        assert_eq!(j["jobs"][0]["trim"]["total_ios"], 128, "{engine}");
        assert_eq!(j["jobs"][0]["error"], 0, "{engine}");
        let left = zram_data(&z.name());
        assert_eq!(
            left, 0,
            "{engine}: the discards freed every page ({held} -> {left})"
        );
    }
}

/// Every key path of a JSON value (`a.b`, arrays as `a[]`).
fn key_paths(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{prefix}.{k}");
                out.insert(p.clone());
                key_paths(x, &p, out);
            }
        }
        Value::Array(a) => {
            for x in a {
                key_paths(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn json_trim_object_has_fios_keys_and_counts() {
    if !ready(&[Need::Zram, Need::Fio]) {
        return;
    }
    let z = iolab::sys::zram::Zram::create(16 << 20).unwrap();
    let job = [
        "--name=t".to_string(),
        format!("--filename={}", z.path().display()),
        "--size=4m".into(),
        "--bs=4k".into(),
        "--rw=randtrim".into(),
        "--ioengine=psync".into(),
    ];
    let ours = json_of(&job);
    let o = Command::new("fio")
        .args(&job)
        .arg("--output-format=json")
        .output()
        .expect("run fio");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let theirs: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    let (a, b) = (&ours["jobs"][0], &theirs["jobs"][0]);
    for d in ["read", "write", "trim"] {
        let (mut ka, mut kb) = (BTreeSet::new(), BTreeSet::new());
        key_paths(&a[d], d, &mut ka);
        key_paths(&b[d], d, &mut kb);
        assert_eq!(ka, kb, "{d}: iolab's keys vs fio 3.33's");
        for k in [
            "total_ios",
            "io_bytes",
            "io_kbytes",
            "short_ios",
            "drop_ios",
        ] {
            assert_eq!(a[d][k], b[d][k], "{d}.{k}");
        }
    }
    assert_eq!(a["trim"]["total_ios"], 1024);
    assert_eq!(a["sync"]["total_ios"], b["sync"]["total_ios"]);
}

#[test]
fn a_trim_on_a_device_holding_a_filesystem_is_refused() {
    if !ready(&[
        Need::Loop,
        Need::Tool {
            cmd: "mkfs.ext4",
            package: "e2fsprogs",
        },
    ]) {
        return;
    }
    let mut backing = tempfile::NamedTempFile::new_in(std::env::temp_dir()).unwrap();
    std::io::Write::write_all(&mut backing, &vec![0u8; 32 << 20]).unwrap();
    let lo = iolab::sys::loopdev::LoopDev::attach(backing.path(), false).unwrap();
    let p = lo.path();
    let o = Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for rw in ["trim", "randtrim", "trimwrite"] {
        let (code, _, err) = iolab_run(&[
            "--name=t".to_string(),
            format!("--filename={}", p.display()),
            "--size=1m".into(),
            format!("--rw={rw}"),
        ]);
        assert_ne!(code, 0, "{rw}: refused");
        assert!(
            err.contains("ext4 filesystem") && err.contains("--allow-destructive"),
            "{rw}: {err}"
        );
    }
    // The filesystem is intact: nothing was discarded.
    let o = Command::new("blkid").arg(&p).output().unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("ext4"),
        "blkid: {o:?}"
    );
}
