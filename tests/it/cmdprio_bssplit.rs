//! `cmdprio_bssplit`: a request's ioprio follows its block size's entry.
//! A randrw job with two block sizes logs every I/O with its priority
//! (`write_lat_log`, `log_prio=1`); the shares per block size must match the
//! split (a wide margin: the draw is random), for iolab and, as the reference
//! for what the option means, for fio 3.33 on the same job.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::run_common::iolab_run;
use crate::support::needs::{Need, ready};

/// Reads: 4k split 30% RT/1, 70% idle/2 (advanced form), 16k none.
/// Writes: 40% of 16k at cmdprio_class/cmdprio = BE/5 (simple form), 4k none.
const JOB: &str = "[global]
direct=1
rw=randrw
size=16m
bssplit=4k/50:16k/50
iodepth=8
write_lat_log=prio
log_prio=1
cmdprio_class=2
cmdprio=5
cmdprio_bssplit=4k/30/1/1:4k/70/3/2:16k/0,16k/40
";

const RT1: u16 = (1 << 13) | 1;
const IDLE2: u16 = (3 << 13) | 2;
const BE5: u16 = (2 << 13) | 5;

/// (ddir, bs) -> ioprio -> I/Os, from a `*_clat.1.log` with `log_prio=1`.
fn shares(log: &Path) -> BTreeMap<(u8, u32), BTreeMap<u16, u32>> {
    let text = std::fs::read_to_string(log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
    let mut out: BTreeMap<(u8, u32), BTreeMap<u16, u32>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        assert_eq!(f.len(), 5, "{}: '{line}'", log.display());
        let prio = u16::from_str_radix(f[4].trim_start_matches("0x"), 16)
            .unwrap_or_else(|_| panic!("prio column of '{line}'"));
        let key = (f[2].parse().unwrap(), f[3].parse().unwrap());
        *out.entry(key).or_default().entry(prio).or_default() += 1;
    }
    out
}

/// The shares of `JOB`, whoever ran it.
fn check(who: &str, got: &BTreeMap<(u8, u32), BTreeMap<u16, u32>>) {
    eprintln!("{who}: (ddir, bs) -> {{ioprio: I/Os}}: {got:?}");
    let share = |key: (u8, u32), prio: u16| {
        let m = got
            .get(&key)
            .unwrap_or_else(|| panic!("{who}: no I/O of {key:?}"));
        let n: u32 = m.values().sum();
        assert!(n >= 100, "{who}: only {n} I/Os of {key:?}");
        f64::from(*m.get(&prio).unwrap_or(&0)) / f64::from(n)
    };
    let near = |what: &str, got: f64, want: f64| {
        assert!(
            (got - want).abs() <= 0.12,
            "{who}: {what}: {:.0}% of the I/Os, the split says {:.0}%",
            got * 100.0,
            want * 100.0
        );
    };
    near("4k reads at RT/1", share((0, 4096), RT1), 0.30);
    near("4k reads at idle/2", share((0, 4096), IDLE2), 0.70);
    assert!(
        (share((0, 4096), RT1) + share((0, 4096), IDLE2) - 1.0).abs() < 1e-9,
        "{who}: every 4k read carries one of its entries' priorities"
    );
    assert_eq!(share((0, 16384), 0), 1.0, "{who}: 16k reads keep the job's");
    near("16k writes at BE/5", share((1, 16384), BE5), 0.40);
    near("16k writes at the job's", share((1, 16384), 0), 0.60);
    assert_eq!(share((1, 4096), 0), 1.0, "{who}: 4k writes keep the job's");
}

#[test]
fn logged_priorities_follow_the_block_size_split() {
    if !ready(&[Need::Root]) {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let data = dir.path().join("data");
    let job = dir.path().join("split.fio");
    std::fs::write(
        &job,
        format!("{JOB}ioengine=io_uring\n[j]\nfilename={}\n", data.display()),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("run")
        .arg(&job)
        .current_dir(dir.path())
        .output()
        .expect("run iolab");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check("iolab", &shares(&dir.path().join("prio_clat.1.log")));

    // fio on the same job: the reference for what the option means.
    if !ready(&[Need::Fio]) {
        return;
    }
    let fio_dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = Command::new("fio")
        .arg(&job)
        .arg("--output=/dev/null")
        .current_dir(fio_dir.path())
        .output()
        .expect("run fio");
    assert!(
        out.status.success(),
        "fio: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    check("fio", &shares(&fio_dir.path().join("prio_clat.1.log")));
}

#[test]
fn bad_splits_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("cmdprio_bssplit=64k/101", "'101' is not a percentage 0-100"),
        ("cmdprio_bssplit=64k/50/4/0", "'4' is not a class 1-3"),
        ("cmdprio_bssplit=64k/50/0/0", "'0' is not a class 1-3"),
        ("cmdprio_bssplit=64k/50/1/8", "'8' is not a level 0-7"),
        ("cmdprio_bssplit=64k/50/1", "'64k/50/1' has 3 fields"),
        ("cmdprio_bssplit=64k", "'64k' has 1 fields"),
        ("cmdprio_bssplit=zz/10", "bs/percentage"),
        ("cmdprio_bssplit=64k/60:64k/50/1/1", "add up to 110%"),
        ("cmdprio_bssplit=4k/10,4k/10,8k/10", "trim value"),
    ];
    for (line, want) in cases {
        let f = dir.path().join("bad.fio");
        std::fs::write(
            &f,
            format!("[j]\nioengine=io_uring\nfilename=/tmp/x\nsize=1m\n{line}\n"),
        )
        .unwrap();
        let (code, _, err) = iolab_run(&[f.to_str().unwrap()]);
        assert_eq!(code, 1, "{line}");
        assert!(err.contains("bad.fio:5"), "{line}: {err}");
        assert!(err.contains("cmdprio_bssplit"), "{line}: {err}");
        assert!(err.contains(want), "{line}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{line}: {err}");
    }
    let conflicts = [
        (
            "ioengine=io_uring\ncmdprio_percentage=20\ncmdprio_bssplit=4k/50",
            "keep one of them",
        ),
        (
            "ioengine=psync\ncmdprio_bssplit=4k/50",
            "only io_uring and libaio",
        ),
    ];
    for (text, want) in conflicts {
        let f = dir.path().join("conflict.fio");
        std::fs::write(&f, format!("[j]\nfilename=/tmp/x\nsize=1m\n{text}\n")).unwrap();
        let (code, _, err) = iolab_run(&[f.to_str().unwrap()]);
        assert_eq!(code, 1, "{text}");
        assert!(err.contains(want), "{text}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{text}: {err}");
    }
}
