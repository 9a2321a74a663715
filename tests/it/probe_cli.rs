//! `iolab probe` end to end through the library: arguments parsed by the real clap
//! definition, the probe run on a file in /var/tmp (a disk file system: /tmp may
//! be tmpfs, which has no O_DIRECT), on a directory, and on a zram device of our
//! own (root only), with the text and JSON reports checked.

use crate::support;

use support::needs::{Need, ready, skip};

use std::io::Write;
use std::path::Path;

use clap::Parser;
use iolab::probe::{ModelKey, ProbeArgs, ProbeReport, render, run};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    probe: ProbeArgs,
}

fn args(v: &[&str]) -> Result<ProbeArgs, clap::Error> {
    Cli::try_parse_from(std::iter::once("probe").chain(v.iter().copied())).map(|c| c.probe)
}

fn var_tmp() -> tempfile::TempDir {
    let dir = std::env::var("IOLAB_TMPDIR").unwrap_or_else(|_| "/var/tmp".into());
    tempfile::Builder::new()
        .prefix("iolab-probe-test-")
        .tempdir_in(dir)
        .expect("temp dir in /var/tmp")
}

fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}

/// What every report must show, whatever the target.
fn check_report(r: &ProbeReport, expect_models: &[ModelKey]) -> (String, serde_json::Value) {
    let text = render::text(r);
    println!("{text}");
    for k in expect_models {
        let row = r
            .read
            .rows
            .iter()
            .find(|row| row.model == *k)
            .unwrap_or_else(|| panic!("no row for {k:?}; skipped: {:?}", r.read.skipped));
        assert!(row.p50_ns > 0, "{k:?}: p50 0");
        assert!(row.ios > 0 && row.iops > 0.0, "{k:?}: {row:?}");
        assert!(row.p99_ns >= row.p50_ns, "{k:?}: {row:?}");
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(row.label)),
            "no text row for {}",
            row.label
        );
    }
    assert!(text.contains("block size       logical"), "{text}");
    assert!(text.contains("wakeup cost"), "{text}");
    assert!(text.contains("clock cost"), "{text}");
    assert!(text.contains("\nrecommendation (reads, QD1): "), "{text}");
    let rec = r.read.recommendation.as_ref().expect("a recommendation");
    assert!(
        !rec.reason.is_empty() && rec.rule.contains("wakeup"),
        "{rec:?}"
    );
    assert!(
        r.read.rows.iter().any(|row| row.model == rec.model),
        "recommended a model that was not measured"
    );
    assert_ne!(
        rec.model,
        ModelKey::InterruptPinned,
        "a placement recommended"
    );
    let json: serde_json::Value =
        serde_json::from_str(&render::json(r).expect("json")).expect("JSON parses");
    let rows = json["read"]["rows"].as_array().expect("read.rows");
    assert_eq!(rows.len(), r.read.rows.len());
    for row in rows {
        assert!(row["p50_ns"].as_u64().unwrap() > 0, "{row}");
    }
    assert!(json["machine"]["wakeup_ns"].as_u64().unwrap() > 0);
    assert!(json["read"]["recommendation"]["model"].is_string());
    (text, json)
}

const URING_MODELS: [ModelKey; 5] = [
    ModelKey::Sync,
    ModelKey::Interrupt,
    ModelKey::Poll,
    ModelKey::Hybrid,
    ModelKey::Adaptive,
];

#[test]
fn probe_a_file_in_var_tmp() {
    let dir = var_tmp();
    let path = dir.path().join("data");
    {
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&random_bytes(16 << 20, 7)).unwrap();
        f.sync_all().unwrap();
    }
    let a = args(&[path.to_str().unwrap(), "--runtime", "0.2", "--json"]).unwrap();
    assert!(a.json);
    let r = run(&a).expect("probe a file");
    let (text, json) = check_report(&r, &URING_MODELS);
    assert!(text.contains("kind             regular file"), "{text}");
    assert_eq!(json["caps"]["kind"], "regular_file");
    assert_eq!(json["caps"]["size"].as_u64(), Some(16 << 20));
    // The punt behaviour is stated either way.
    assert!(
        text.contains("no NOWAIT: io_uring punts")
            || text.contains("NOWAIT issue works")
            || text.contains("io-wq punting unknown"),
        "{text}"
    );
    // IOPOLL is measured or its absence explained.
    let iopoll_row = r.read.rows.iter().any(|x| x.model == ModelKey::Iopoll);
    let iopoll_skip = r
        .read
        .skipped
        .iter()
        .any(|s| s.model == ModelKey::Iopoll && !s.reason.is_empty());
    assert!(iopoll_row || iopoll_skip);
    // Reads only: the file is unchanged.
    assert_eq!(std::fs::read(&path).unwrap(), random_bytes(16 << 20, 7));
}

#[test]
fn probe_a_directory_lays_out_and_removes_a_temp_file() {
    let dir = var_tmp();
    let a = args(&[dir.path().to_str().unwrap(), "--runtime", "0.2"]).unwrap();
    let r = run(&a).expect("probe a directory");
    let (text, _) = check_report(&r, &URING_MODELS);
    assert!(text.contains("temp file"), "{text}");
    assert_eq!(r.caps.size, iolab::probe::target::TEMP_FILE_BYTES);
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "temp file left behind: {left:?}");
}

#[test]
fn probe_writes_only_with_write_and_only_to_our_temp_file() {
    let dir = var_tmp();
    let a = args(&[dir.path().to_str().unwrap(), "--runtime", "0.1", "--write"]).unwrap();
    let r = run(&a).expect("probe --write on a directory");
    let w = r.write.as_ref().expect("write results with --write");
    assert!(w.rows.iter().all(|x| x.p50_ns > 0 && x.ios > 0), "{w:?}");
    assert!(render::text(&r).contains("recommendation (writes, QD1)"));
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn zram_is_probed_and_its_punting_reported() {
    if !ready(&[Need::Zram]) {
        return;
    }
    let z = match iolab::sys::zram::Zram::create(64 << 20) {
        Ok(z) => z,
        Err(e) => {
            skip(format_args!("cannot create zram: {e:#}"));
            return;
        }
    };
    {
        // Stored data, so reads decompress pages as on a used device.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(z.path())
            .unwrap();
        f.write_all(&random_bytes(64 << 20, 11)).unwrap();
        f.sync_all().unwrap();
    }
    let a = args(&[z.path().to_str().unwrap(), "--runtime", "0.2"]).unwrap();
    let r = run(&a).expect("probe zram");
    let (text, json) = check_report(&r, &URING_MODELS);
    assert!(text.contains("kind             block device"), "{text}");
    assert!(
        text.contains(&format!("block device     {}", z.name())),
        "{text}"
    );
    assert_eq!(json["caps"]["kind"], "block_device");
    // zram has no NOWAIT: io_uring hands every request to io-wq.
    assert!(
        text.contains("no NOWAIT: io_uring punts every request to io-wq workers"),
        "{text}"
    );
    let intr = r
        .read
        .rows
        .iter()
        .find(|x| x.model == ModelKey::Interrupt)
        .unwrap();
    let punted = intr.punted.expect("punts counted as root");
    assert!(punted * 2 >= intr.ios, "{intr:?}");
    // Bio-based: no scheduler, no io_poll, so IOPOLL is skipped with the reason.
    assert!(text.contains("no scheduler (bio-based"), "{text}");
    let skip = r
        .read
        .skipped
        .iter()
        .find(|s| s.model == ModelKey::Iopoll)
        .expect("IOPOLL skipped on zram");
    assert!(skip.reason.contains("poll"), "{skip:?}");
    // Every request punted: the pinned interrupt row backs the pinning advice
    // with its own numbers, where the process may use two CPUs or more.
    let cpus = iolab::placement::affinity::get_affinity(0).unwrap_or_default();
    if cpus.len() > 1 {
        let pinned = r
            .read
            .rows
            .iter()
            .find(|x| x.model == ModelKey::InterruptPinned)
            .unwrap_or_else(|| panic!("no pinned row; skipped: {:?}", r.read.skipped));
        assert!(pinned.ios > 0 && pinned.p50_ns > 0, "{pinned:?}");
        assert!(text.contains("measured at QD1: pinned p50"), "{text}");
    } else {
        assert!(
            r.read
                .skipped
                .iter()
                .any(|s| s.model == ModelKey::InterruptPinned && s.reason.contains("one CPU")),
            "{:?}",
            r.read.skipped
        );
    }
}

#[test]
fn bad_input_is_refused_with_a_reason() {
    let e = run(&args(&["/nonexistent/iolab-probe"]).unwrap()).unwrap_err();
    assert!(
        format!("{e:#}").contains("no such file or directory"),
        "{e:#}"
    );
    let e = run(&args(&["/dev/null"]).unwrap()).unwrap_err();
    assert!(format!("{e:#}").contains("character device"), "{e:#}");
    let dir = var_tmp();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = run(&args(&[fifo.to_str().unwrap()]).unwrap()).unwrap_err();
    assert!(format!("{e:#}").contains("FIFO"), "{e:#}");
    let small = dir.path().join("small");
    std::fs::write(&small, b"tiny").unwrap();
    let e = run(&args(&[small.to_str().unwrap()]).unwrap()).unwrap_err();
    assert!(format!("{e:#}").contains("too small"), "{e:#}");

    let e = args(&["x", "--runtime", "0"]).unwrap_err().to_string();
    assert!(e.contains("--runtime") && e.contains("0.01..3600"), "{e}");
    let e = args(&["x", "--runtime", "soon"]).unwrap_err().to_string();
    assert!(e.contains("not a number"), "{e}");
    assert!(args(&[]).is_err(), "TARGET is required");
    assert!(Path::new("/dev/null").exists());
}

/// Unmounts on drop, also when an assertion fails.
struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn mounted_device_is_read_with_a_note_and_write_is_refused() {
    if !ready(&[Need::Zram]) {
        return;
    }
    let z = match iolab::sys::zram::Zram::create(64 << 20) {
        Ok(z) => z,
        Err(e) => {
            skip(format_args!("cannot create zram: {e:#}"));
            return;
        }
    };
    let out = std::process::Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(z.path())
        .output();
    match out {
        Ok(o) if o.status.success() => {}
        other => {
            skip(format_args!(
                "mkfs.ext4 unavailable or failed: {other:?} (apt-get install e2fsprogs)"
            ));
            return;
        }
    }
    let mnt = var_tmp();
    let ok = std::process::Command::new("mount")
        .arg(z.path())
        .arg(mnt.path())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        skip("cannot mount the zram file system");
        return;
    }
    let _guard = Mounted(mnt.path().to_path_buf());
    let dev = z.path();
    let dev = dev.to_str().unwrap();

    let e = run(&args(&[dev, "--write", "--runtime", "0.1"]).unwrap()).unwrap_err();
    let e = format!("{e:#}");
    println!("{e}");
    assert!(
        e.contains("--write refused") && e.contains("mounted on") && e.contains("without --write"),
        "{e}"
    );

    let r = run(&args(&[dev, "--runtime", "0.1"]).unwrap()).expect("reads of a mounted device");
    let text = render::text(&r);
    println!("{text}");
    assert!(
        text.contains("mounted on") && text.contains("probe only reads"),
        "{text}"
    );
    assert!(r.write.is_none());
}

#[test]
fn block_device_without_permission_says_how() {
    if !ready(&[Need::Zram]) {
        return;
    }
    let z = match iolab::sys::zram::Zram::create(16 << 20) {
        Ok(z) => z,
        Err(e) => {
            skip(format_args!("cannot create zram: {e:#}"));
            return;
        }
    };
    use std::os::unix::process::CommandExt;
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "probe_cli::child_probe_as_unprivileged_user",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("IOLAB_PROBE_CHILD_TARGET", z.path())
        .uid(65534)
        .gid(65534)
        .output()
        .expect("run the test binary as nobody");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("CHILD-REFUSED:"), "{stdout}");
    println!(
        "{}",
        stdout
            .lines()
            .find(|l| l.contains("CHILD-REFUSED"))
            .unwrap_or("")
    );
}

/// Runs only as the child of `block_device_without_permission_says_how` (which
/// sets the variable and drops to uid nobody); does nothing otherwise.
#[test]
fn child_probe_as_unprivileged_user() {
    let Ok(target) = std::env::var("IOLAB_PROBE_CHILD_TARGET") else {
        return;
    };
    let e = run(&args(&[&target]).unwrap()).unwrap_err();
    let e = format!("{e:#}");
    assert!(
        e.contains("permission denied") && e.contains("run as root") && e.contains("sudo"),
        "{e}"
    );
    println!("CHILD-REFUSED: {e}");
}
