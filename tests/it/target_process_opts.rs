//! fio's options about files, targets, the job's thread and its device, run
//! under fio 3.33 and iolab side by side: the files each leaves behind
//! (`overwrite`, `file_append`, `create_only`, `opendir`, a `buffer_pattern`
//! read from a file), the offsets of `size=N%`/`offset=N%` (through fio's
//! `write_iolog`), the posix_fadvise calls of `invalidate`/`fadvise_hint`
//! (through strace), and what `exec_prerun` sees of `nice`, `uid`/`gid`,
//! `cgroup` and `ioscheduler` (its output file, written by each).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use crate::io_order::{fio_ios, iolab_ios};
use crate::support::needs::{Need, ready, skip};

fn iolab_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("run")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run iolab");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn fio_in(dir: &Path, args: &[&str]) {
    let out = Command::new("fio")
        .args(args)
        .arg("--output=/dev/null")
        .current_dir(dir)
        .output()
        .expect("run fio");
    assert!(out.status.success(), "fio {args:?}: {out:?}");
}

fn iolab_ok(dir: &Path, args: &[&str]) {
    let (code, out, err) = iolab_in(dir, args);
    assert_eq!(code, 0, "iolab run {args:?}: {err}\n{out}");
}

/// (size, 512-byte blocks) of a file.
fn size_blocks(p: &Path) -> (u64, u64) {
    let m = std::fs::metadata(p).unwrap();
    (m.len(), m.blocks())
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// overwrite=0 (fio's default) leaves a write job's new file as its writes
/// made it; overwrite=1 lays it out first; file_append writes after the end;
/// create_only makes the file and does no I/O. fio runs with fallocate=none,
/// iolab's default (docs/fio-compat.md).
#[test]
fn files_left_behind_match_fios() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let cases: &[(&[&str], u64)] = &[
        (&["--rw=write", "--size=1m", "--number_ios=4"], 0),
        (
            &["--rw=write", "--size=1m", "--number_ios=4", "--overwrite=1"],
            0,
        ),
        (&["--rw=randwrite", "--size=1m", "--number_ios=8"], 0),
        (&["--rw=write", "--size=16k", "--file_append=1"], 64 << 10),
        (&["--rw=read", "--size=256k", "--create_only=1"], 0),
    ];
    for (opts, existing) in cases {
        let mut sizes = Vec::new();
        for tool in ["fio", "iolab"] {
            let f = d.join(format!("{tool}.f"));
            let _ = std::fs::remove_file(&f);
            if *existing > 0 {
                std::fs::write(&f, vec![7u8; *existing as usize]).unwrap();
            }
            let name = format!("--filename={}", f.display());
            let mut args = vec!["--name=j", "--ioengine=psync", "--bs=4k", &name];
            args.extend_from_slice(opts);
            if tool == "fio" {
                args.push("--fallocate=none");
                fio_in(d, &args);
            } else {
                iolab_ok(d, &args);
            }
            sizes.push(size_blocks(&f));
        }
        // Random writes land where each tool's generator puts them: the
        // file's length is where the last one ended; compare what is
        // allocated only.
        if opts[0] == "--rw=randwrite" {
            assert_eq!(sizes[1].1, sizes[0].1, "{opts:?}: iolab vs fio (blocks)");
        } else {
            assert_eq!(sizes[1], sizes[0], "{opts:?}: iolab vs fio (size, blocks)");
        }
    }
    // create_only does no I/O at all.
    let f = d.join("c.f");
    let name = format!("--filename={}", f.display());
    let (code, out, err) = iolab_in(
        d,
        &[
            "--name=j",
            "--ioengine=psync",
            &name,
            "--size=64k",
            "--create_only=1",
            "--output-format=json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 0, "{out}");
}

/// size=N%, offset=N% (rounded up to offset_align or the block size) and
/// io_size=N%: the same I/Os, offset for offset, as fio's write_iolog.
#[test]
fn percentage_regions_have_fios_offsets() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tmp();
    let f = dir.path().join("f");
    std::fs::write(&f, vec![0u8; 1 << 20]).unwrap();
    let file = f.display().to_string();
    for opts in [
        &["--rw=read", "--bs=4k", "--size=50%", "--offset=30%"][..],
        &[
            "--rw=read",
            "--bs=4k",
            "--size=25%",
            "--offset=30%",
            "--offset_align=64k",
        ],
        &["--rw=write", "--bs=8k", "--size=50%", "--io_size=50%"],
        &["--rw=read", "--bs=4k", "--size=0", "--offset=90%"],
    ] {
        let theirs = fio_ios(dir.path(), &file, opts);
        let ours = iolab_ios(dir.path(), &file, opts);
        assert!(!theirs.is_empty(), "{opts:?}: fio logged nothing");
        assert_eq!(ours, theirs, "{opts:?}: offsets differ from fio's");
    }
}

fn advice(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap();
    let mut v: Vec<String> = text
        .lines()
        .filter(|l| l.contains("fadvise64(") && l.contains("= 0"))
        .filter_map(|l| {
            l.split(", ")
                .nth(3)
                .map(|a| a.split(')').next().unwrap().to_string())
        })
        .collect();
    v.sort();
    v
}

/// invalidate and fadvise_hint make the same posix_fadvise calls as fio's.
#[test]
fn invalidate_and_fadvise_hint_advise_as_fio_does() {
    if !ready(&[Need::Fio, Need::Strace]) {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let f = d.join("f");
    std::fs::write(&f, vec![1u8; 256 << 10]).unwrap();
    let name = format!("--filename={}", f.display());
    for opts in [
        &[][..],
        &["--invalidate=0"],
        &["--fadvise_hint=0"],
        &["--fadvise_hint=random"],
        &["--rw=randread", "--fadvise_hint=sequential"],
        &["--invalidate=0", "--fadvise_hint=0"],
    ] {
        let mut got = Vec::new();
        for tool in ["fio", env!("CARGO_BIN_EXE_iolab")] {
            let log = d.join("strace.log");
            let mut cmd = Command::new("strace");
            cmd.args(["-f", "-e", "trace=fadvise64", "-o"])
                .arg(&log)
                .arg(tool);
            if tool != "fio" {
                cmd.arg("run");
            }
            let out = cmd
                .args(["--name=j", "--ioengine=psync", "--size=64k", &name])
                .args(opts)
                .arg("--output=/dev/null")
                .current_dir(d)
                .output()
                .unwrap();
            assert!(out.status.success(), "{tool} {opts:?}: {out:?}");
            got.push(advice(&log));
        }
        assert_eq!(got[1], got[0], "{opts:?}: iolab's fadvise calls vs fio's");
    }
}

/// A buffer_pattern mixing a file, text and hex writes the same bytes as fio.
#[test]
fn buffer_pattern_from_a_file_writes_fios_bytes() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    std::fs::write(d.join("pat.bin"), b"\x01\x02PATTERN").unwrap();
    let pattern = "--buffer_pattern='pat.bin'\"xy\"0xfe";
    let mut bytes = Vec::new();
    for tool in ["fio", "iolab"] {
        let f = d.join(format!("{tool}.out"));
        let name = format!("--filename={}", f.display());
        let args = [
            "--name=j",
            "--ioengine=psync",
            "--rw=write",
            "--bs=4k",
            "--size=16k",
            &name,
            pattern,
        ];
        if tool == "fio" {
            fio_in(d, &args);
        } else {
            iolab_ok(d, &args);
        }
        bytes.push(std::fs::read(&f).unwrap());
    }
    assert_eq!(&bytes[1][..12], b"\x01\x02PATTERNxy\xfe");
    assert!(bytes[0] == bytes[1], "iolab's file differs from fio's");
}

/// opendir: every file below the directory, as fio reads them.
#[test]
fn opendir_reads_every_file_below_it() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tmp();
    let od = dir.path().join("od");
    std::fs::create_dir_all(od.join("sub")).unwrap();
    std::fs::write(od.join("a"), vec![0u8; 16 << 10]).unwrap();
    std::fs::write(od.join("sub/b"), vec![0u8; 8 << 10]).unwrap();
    let arg = format!("--opendir={}", od.display());
    let args = [
        "--name=j",
        "--ioengine=psync",
        "--rw=read",
        &arg,
        "--output-format=json",
    ];
    let (code, out, err) = iolab_in(dir.path(), &args);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 24 << 10, "{out}");
    let out = dir.path().join("fio.json");
    let fio = Command::new("fio")
        .args(args)
        .arg(format!("--output={}", out.display()))
        .output()
        .unwrap();
    assert!(fio.status.success(), "{fio:?}");
    let text = std::fs::read_to_string(&out).unwrap();
    let f: serde_json::Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    assert_eq!(f["jobs"][0]["read"]["io_bytes"], 24 << 10);
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let arg = format!("--opendir={}", empty.display());
    let (code, _, err) = iolab_in(dir.path(), &["--name=j", "--ioengine=psync", &arg]);
    assert_ne!(code, 0);
    assert!(
        err.contains("opendir") && err.contains("no regular file"),
        "{err}"
    );
}

/// exec_prerun/exec_postrun run through the shell in the working directory,
/// their output in JOB.prerun.txt / JOB.postrun.txt, as fio's; a prerun that
/// fails stops the run (fio silently skips the job's I/O).
#[test]
fn exec_commands_write_fios_files() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let cmd = "--exec_prerun=(echo pre; nice)";
    let post = "--exec_postrun=echo post $((1+2))";
    let mut outs = Vec::new();
    for tool in ["fio", "iolab"] {
        let dir = tmp();
        let args = [
            "--name=px",
            "--ioengine=null",
            "--size=1m",
            "--nice=3",
            cmd,
            post,
        ];
        if tool == "fio" {
            fio_in(dir.path(), &args);
        } else {
            iolab_ok(dir.path(), &args);
        }
        let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
        outs.push((read("px.prerun.txt"), read("px.postrun.txt")));
    }
    assert_eq!(outs[1], outs[0]);
    assert_eq!(outs[1].0, "pre\n3\n");
    let dir = tmp();
    let (code, _, err) = iolab_in(
        dir.path(),
        &[
            "--name=bad",
            "--ioengine=null",
            "--size=1m",
            "--exec_prerun=exit 3",
        ],
    );
    assert_ne!(code, 0);
    assert!(err.contains("exec_prerun 'exit 3' exited"), "{err}");
}

/// uid/gid change the job's own thread only: its prerun runs as that user,
/// the job beside it (another thread of the same process) stays root.
#[test]
fn uid_and_gid_apply_to_the_job_thread_only() {
    if !ready(&[Need::Root]) {
        return;
    }
    // A directory the other user may write its prerun file into.
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    iolab_ok(
        dir.path(),
        &[
            "--ioengine=null",
            "--size=1m",
            "--name=nobody",
            "--uid=65534",
            "--gid=65534",
            "--exec_prerun=(id -u; id -g)",
            "--name=root",
            "--exec_prerun=(id -u; id -g)",
        ],
    );
    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
    assert_eq!(read("nobody.prerun.txt"), "65534\n65534\n");
    assert_eq!(read("root.prerun.txt"), "0\n0\n");
}

/// cgroup: the job's thread (and so its prerun) runs in the group; the group
/// is removed afterwards unless cgroup_nodelete.
#[test]
fn cgroup_holds_the_job_and_goes_away_after() {
    if !ready(&[Need::Root]) {
        return;
    }
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    let Some(h) = iolab::sys::cgroup::find_hierarchy(&mounts) else {
        skip("no cgroup hierarchy with blkio (v1) or cgroup2 is mounted");
        return;
    };
    let name = format!("iolab-test-{}", std::process::id());
    let dir = tmp();
    let arg = format!("--cgroup={name}");
    for nodelete in ["0", "1"] {
        let nd = format!("--cgroup_nodelete={nodelete}");
        iolab_ok(
            dir.path(),
            &[
                "--name=cg",
                "--ioengine=null",
                "--size=1m",
                &arg,
                &nd,
                "--exec_prerun=cat /proc/self/cgroup",
            ],
        );
        let seen = std::fs::read_to_string(dir.path().join("cg.prerun.txt")).unwrap();
        assert!(
            seen.lines().any(|l| l.ends_with(&format!(":/{name}"))),
            "prerun ran outside {name}: {seen}"
        );
        let group = h.root.join(&name);
        assert_eq!(group.exists(), nodelete == "1", "{}", group.display());
        let _ = std::fs::remove_dir(&group);
    }
}

/// ioscheduler switches the device's elevator for the job (its prerun sees
/// it) and puts the old one back afterwards.
#[test]
fn ioscheduler_switches_the_elevator_and_restores_it() {
    if !ready(&[Need::Loop]) {
        return;
    }
    let dir = tmp();
    let backing = dir.path().join("disk");
    std::fs::File::create(&backing)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let dev = match iolab::sys::loopdev::LoopDev::attach(&backing, false) {
        Ok(d) => d,
        Err(e) => {
            skip(format_args!("no loop device: {e:#}"));
            return;
        }
    };
    let sched = format!("/sys/block/{}/queue/scheduler", dev.name());
    let before = std::fs::read_to_string(&sched).unwrap();
    let e = iolab::sys::blockdev::parse_scheduler(&before);
    let Some(other) = e
        .available
        .iter()
        .find(|a| Some(a.as_str()) != e.current.as_deref())
        .cloned()
    else {
        skip(format_args!(
            "{} offers one elevator only: {before}",
            dev.name()
        ));
        return;
    };
    let name = format!("--filename={}", dev.path().display());
    let arg = format!("--ioscheduler={other}");
    let pre = format!("--exec_prerun=cat {sched}");
    iolab_ok(
        dir.path(),
        &[
            "--name=el",
            "--ioengine=psync",
            "--rw=read",
            "--size=1m",
            &name,
            &arg,
            &pre,
        ],
    );
    let during = std::fs::read_to_string(dir.path().join("el.prerun.txt")).unwrap();
    assert!(during.contains(&format!("[{other}]")), "{during}");
    assert_eq!(std::fs::read_to_string(&sched).unwrap(), before);
}

/// lockfile on a file other running clones share cannot be honoured (no lock
/// between iolab's workers) and says so; alone on its file a job runs.
#[test]
fn lockfile_on_a_shared_file_is_refused_alone_it_runs() {
    let dir = tmp();
    let f = dir.path().join("f");
    std::fs::write(&f, vec![0u8; 64 << 10]).unwrap();
    let name = format!("--filename={}", f.display());
    let base = [
        "--name=j",
        "--ioengine=psync",
        &name,
        "--lockfile=exclusive",
    ];
    iolab_ok(dir.path(), &base);
    let mut two = base.to_vec();
    two.push("--numjobs=2");
    let (code, _, err) = iolab_in(dir.path(), &two);
    assert_ne!(code, 0);
    assert!(
        err.contains("lockfile=exclusive") && err.contains("stonewall"),
        "{err}"
    );
}

/// sync=dsync opens the target with O_DSYNC (not O_SYNC), as fio does.
#[test]
fn sync_dsync_opens_with_o_dsync_as_fio() {
    if !ready(&[Need::Fio, Need::Strace]) {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let f = d.join("f");
    std::fs::write(&f, vec![0u8; 64 << 10]).unwrap();
    let name = format!("--filename={}", f.display());
    for tool in ["fio", env!("CARGO_BIN_EXE_iolab")] {
        let log = d.join("open.log");
        let mut cmd = Command::new("strace");
        cmd.args(["-f", "-e", "trace=openat", "-o"])
            .arg(&log)
            .arg(tool);
        if tool != "fio" {
            cmd.arg("run");
        }
        let out = cmd
            .args(["--name=j", "--ioengine=psync", "--rw=write", "--size=64k"])
            .args([name.as_str(), "--sync=dsync", "--output=/dev/null"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{tool}: {out:?}");
        let text = std::fs::read_to_string(&log).unwrap();
        let opens: Vec<&str> = text
            .lines()
            .filter(|l| l.contains(&format!("\"{}\"", f.display())) && l.contains("O_RDWR"))
            .collect();
        assert!(!opens.is_empty(), "{tool}: {text}");
        assert!(
            opens
                .iter()
                .all(|l| l.contains("O_DSYNC") && !l.contains("O_SYNC|")),
            "{tool}: {opens:?}"
        );
    }
}

/// file_service_type=zipf (and pareto, gauss) spreads a job's I/O over its
/// files unevenly, as fio's does: every file still gets its share of a
/// size-based job, and the hottest file is served first more often.
#[test]
fn file_service_distributions_run_every_file() {
    for kind in ["zipf:1.5", "pareto:0.3", "gauss", "normal:10"] {
        let dir = tmp();
        let arg = format!("--file_service_type={kind}");
        let d = format!("--directory={}", dir.path().display());
        let (code, out, err) = iolab_in(
            dir.path(),
            &[
                "--name=j",
                "--ioengine=psync",
                "--rw=randread",
                "--nrfiles=4",
                "--size=256k",
                &d,
                &arg,
                "--output-format=json",
            ],
        );
        assert_eq!(code, 0, "{kind}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["jobs"][0]["read"]["io_bytes"], 256 << 10, "{kind}: {out}");
    }
}
