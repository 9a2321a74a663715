//! fio's iologs end to end: a log fio writes (`write_iolog`) replays under
//! iolab (`read_iolog`) with the same I/Os, which the iolog iolab writes
//! while replaying shows; a log iolab writes replays under fio with the same
//! I/Os, which fio's per-I/O latency log (`log_offset=1`) shows (fio drops
//! `write_iolog` when it replays). Both at depth 1 with psync, where issue
//! order is completion order. Also: a replay keeps the log's times (its I/Os
//! go no earlier than logged) unless `replay_no_stall`; `replay_redirect`;
//! bad lines name the file and line; a blktrace captured here replays.

use std::path::Path;
use std::process::Command;

use crate::backend_fio::sparse;
use crate::run_common::iolab_run;
use crate::support::needs::{Lack, Need, ready, skip, skip_lacking};

/// (action, offset, length) of each I/O line of an iolog (v2 or v3), and
/// its file name.
fn log_ios(text: &str) -> Vec<(String, String, u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.as_slice() {
                [.., file, act, off, len]
                    if ["read", "write", "trim", "sync", "datasync"].contains(act) =>
                {
                    Some((
                        file.to_string(),
                        act.to_string(),
                        off.parse().ok()?,
                        len.parse().ok()?,
                    ))
                }
                _ => None,
            }
        })
        .collect()
}

/// Microsecond times of a v3 log's I/O lines.
fn log_times(text: &str) -> Vec<u64> {
    text.lines()
        .filter(|l| l.contains(" read ") || l.contains(" write "))
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect()
}

fn ok(args: &[String]) -> String {
    let (code, out, err) = iolab_run(args);
    assert_eq!(code, 0, "iolab run {args:?}: {err}\n{out}");
    err
}

#[test]
fn a_log_fio_writes_replays_under_iolab_with_the_same_ios() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = sparse(dir.path(), "f", 1 << 20);
    let fio_log = dir.path().join("fio.log");
    let out = Command::new("fio")
        .args([
            "--name=w",
            &format!("--filename={file}"),
            "--rw=randrw",
            "--bsrange=512-16k",
            "--size=512k",
            "--ioengine=psync",
            "--fsync=7",
            "--output=/dev/null",
        ])
        .arg(format!("--write_iolog={}", fio_log.display()))
        .output()
        .expect("run fio");
    assert!(out.status.success(), "fio: {out:?}");
    let theirs = std::fs::read_to_string(&fio_log).unwrap();
    let ours_log = dir.path().join("iolab.log");
    ok(&[
        "--name=r".into(),
        format!("--read_iolog={}", fio_log.display()),
        format!("--write_iolog={}", ours_log.display()),
        "--ioengine=psync".into(),
        "--replay_no_stall=1".into(),
    ]);
    let ours = std::fs::read_to_string(&ours_log).unwrap();
    assert!(ours.starts_with("fio version 3 iolog\n"), "{ours}");
    let (t, o) = (log_ios(&theirs), log_ios(&ours));
    assert!(t.len() > 50, "fio logged {} I/Os", t.len());
    assert!(t.iter().any(|i| i.1 == "sync"), "fio logged no sync");
    assert_eq!(o, t, "iolab's replay of fio's log issued other I/Os");
}

#[test]
fn a_log_iolab_writes_replays_under_fio_with_the_same_ios() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = sparse(dir.path(), "f", 1 << 20);
    let log = dir.path().join("iolab.log");
    ok(&[
        "--name=w".into(),
        format!("--filename={file}"),
        "--rw=randrw".into(),
        "--bsrange=512-16k".into(),
        "--size=512k".into(),
        "--ioengine=psync".into(),
        format!("--write_iolog={}", log.display()),
    ]);
    let ours = log_ios(&std::fs::read_to_string(&log).unwrap());
    assert!(ours.len() > 50, "iolab logged {} I/Os", ours.len());
    assert!(ours.iter().all(|i| i.0 == file));
    let prefix = dir.path().join("fr");
    let out = Command::new("fio")
        .args(["--name=r", "--ioengine=psync", "--replay_no_stall=1"])
        .arg(format!("--read_iolog={}", log.display()))
        .arg(format!("--write_lat_log={}", prefix.display()))
        .args(["--log_offset=1", "--output=/dev/null"])
        .output()
        .expect("run fio");
    assert!(out.status.success(), "fio: {out:?}");
    let lat = std::fs::read_to_string(dir.path().join("fr_lat.1.log")).unwrap();
    // fio's per-I/O row: time, latency, ddir, bs, offset, prio.
    let theirs: Vec<(String, String, u64, u64)> = lat
        .lines()
        .map(|l| {
            let c: Vec<u64> = l.split(',').map(|v| v.trim().parse().unwrap()).collect();
            let act = if c[2] == 1 { "write" } else { "read" };
            (file.clone(), act.to_string(), c[4], c[3])
        })
        .collect();
    assert_eq!(
        theirs, ours,
        "fio's replay of iolab's log issued other I/Os"
    );
}

/// A v3 log of four 4k reads of `f` at 0, 100, 200 and 300 ms.
fn timed_log(dir: &Path, f: &str) -> std::path::PathBuf {
    let p = dir.join("timed.log");
    let mut t = format!("fio version 3 iolog\n1 {f} add\n1 {f} open\n");
    for (i, us) in [1u64, 100_001, 200_001, 300_001].iter().enumerate() {
        t.push_str(&format!("{us} {f} read {} 4096\n", i * 4096));
    }
    t.push_str(&format!("300002 {f} close\n"));
    std::fs::write(&p, t).unwrap();
    p
}

#[test]
fn a_replay_keeps_the_logs_times_unless_told_not_to() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = sparse(dir.path(), "f", 1 << 20);
    let log = timed_log(dir.path(), &file);
    let run = |extra: &[&str]| {
        let out = dir.path().join("out.log");
        let _ = std::fs::remove_file(&out);
        let mut a = vec![
            "--name=r".to_string(),
            format!("--read_iolog={}", log.display()),
            format!("--write_iolog={}", out.display()),
            "--ioengine=psync".into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        ok(&a);
        let text = std::fs::read_to_string(&out).unwrap();
        assert_eq!(log_ios(&text).len(), 4, "{text}");
        log_times(&text)
    };
    // Stalling: each I/O goes no earlier than its logged time after the
    // first (a lower bound: a loaded machine only makes them later).
    let t = run(&[]);
    for (k, want) in [0u64, 100_000, 200_000, 300_000].iter().enumerate() {
        assert!(t[k] - t[0] >= *want, "I/O {k} at {t:?}");
    }
    // Twice the rate halves the gaps: 150 ms at least, and the last I/O's
    // gap is no longer than the log's 100 ms (the replay keeps no 300 ms).
    let t = run(&["--replay_time_scale=200"]);
    assert!(t[3] - t[0] >= 150_000, "{t:?}");
    // No stall: a log spanning an hour replays at once (a stalling replay
    // could not log its last I/O before an hour has passed).
    let hour = dir.path().join("hour.log");
    std::fs::write(
        &hour,
        format!(
            "fio version 3 iolog\n1 {file} add\n2 {file} read 0 4096\n3600000002 {file} read 4096 4096\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("hour.out");
    ok(&[
        "--name=r".into(),
        format!("--read_iolog={}", hour.display()),
        format!("--write_iolog={}", out.display()),
        "--ioengine=psync".into(),
        "--replay_no_stall=1".into(),
        // A stalling replay would be cut off here with one I/O.
        "--runtime=60".into(),
    ]);
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(log_ios(&text).len(), 2, "{text}");
    assert!(log_times(&text)[1] < 3_600_000_000, "{text}");
}

#[test]
fn replay_redirect_sends_a_v2_logs_files_to_one_target() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let target = sparse(dir.path(), "t", 1 << 20);
    let log = dir.path().join("v2.log");
    std::fs::write(
        &log,
        "fio version 2 iolog\n/nonexistent/a add\n/nonexistent/b add\n/nonexistent/a open\n\
         /nonexistent/a read 8192 4096\n/nonexistent/b write 65536 8192\n/nonexistent/b wait 1000 0\n\
         /nonexistent/a read 12288 512\n/nonexistent/a close\n",
    )
    .unwrap();
    let out = dir.path().join("out.log");
    ok(&[
        "--name=r".into(),
        format!("--read_iolog={}", log.display()),
        format!("--replay_redirect={target}"),
        format!("--write_iolog={}", out.display()),
        "--ioengine=psync".into(),
        "--replay_scale=2".into(),
        "--replay_align=4k".into(),
    ]);
    let got = log_ios(&std::fs::read_to_string(&out).unwrap());
    let want: Vec<(String, String, u64, u64)> = [
        ("read", 4096, 4096),
        ("write", 32768, 8192),
        ("read", 4096, 512),
    ]
    .iter()
    .map(|(a, o, l)| (target.clone(), a.to_string(), *o, *l))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn a_bad_log_line_stops_the_run_naming_the_file_and_line() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = sparse(dir.path(), "f", 1 << 20);
    let log = dir.path().join("bad.log");
    std::fs::write(
        &log,
        format!("fio version 3 iolog\n0 {file} add\n5 {file} read 0 4096\n9 {file} rread 0 4096\n"),
    )
    .unwrap();
    let (code, out, err) = iolab_run(&[
        "--name=r".to_string(),
        format!("--read_iolog={}", log.display()),
        "--ioengine=psync".into(),
    ]);
    assert_ne!(code, 0, "{out}");
    let at = format!("{}:4: unknown I/O action 'rread'", log.display());
    assert!(err.contains(&at), "{err}");
    // fio's list of options names them.
    let (code, _, err) = iolab_run(&["--name=r", "--replay_skip=reads", "--read_iolog=x"]);
    assert_ne!(code, 0);
    assert!(err.contains("read, write, trim, sync"), "{err}");
}

/// Capture a blktrace of `dev` while `io` runs; Err(why) when blktrace
/// cannot trace here.
fn capture(dev: &str, out: &Path, io: impl FnOnce()) -> Result<(), String> {
    if !Path::new("/sys/kernel/debug/block").exists() {
        let _ = Command::new("mount")
            .args(["-t", "debugfs", "none", "/sys/kernel/debug"])
            .status();
    }
    let mut child = Command::new("blktrace")
        .args(["-d", dev, "-a", "queue", "-o", "-"])
        .stdout(std::fs::File::create(out).map_err(|e| e.to_string())?)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("blktrace did not start: {e}"))?;
    std::thread::sleep(std::time::Duration::from_millis(500));
    if let Ok(Some(_)) = child.try_wait() {
        let o = child.wait_with_output().map_err(|e| e.to_string())?;
        let why = String::from_utf8_lossy(&o.stderr);
        return Err(format!(
            "blktrace cannot trace {dev} on this kernel ({}); dmesg says why (here: kernel \
             lockdown restricts blktrace's debugfs files; boot without lockdown to run it)",
            why.lines().next().unwrap_or("no message").trim()
        ));
    }
    io();
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().map_err(|e| e.to_string())?;
    if std::fs::metadata(out).map_or(0, |m| m.len()) == 0 {
        let why = String::from_utf8_lossy(&o.stderr);
        return Err(format!(
            "blktrace captured nothing on {dev} ({}); 'Operation not permitted' with dmesg's \
             'Lockdown: blktrace: debugfs access is restricted' means kernel lockdown keeps \
             blktrace from tracing: boot without lockdown to run this test",
            why.lines().next().unwrap_or("no message").trim()
        ));
    }
    Ok(())
}

#[test]
fn a_blktrace_captured_here_replays_with_the_same_ios() {
    if !ready(&[
        Need::Zram,
        Need::Tool {
            cmd: "blktrace",
            package: "blktrace",
        },
    ]) {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let z = iolab::sys::zram::Zram::create(16 << 20).expect("hot-add zram");
    let dev = z.path().display().to_string();
    let trace = dir.path().join("trace.bin");
    let issued = dir.path().join("issued.log");
    let io = || {
        ok(&[
            "--name=w".into(),
            format!("--filename={dev}"),
            "--rw=randrw".into(),
            "--bs=4k".into(),
            "--size=1m".into(),
            "--direct=1".into(),
            "--ioengine=psync".into(),
            format!("--write_iolog={}", issued.display()),
        ]);
    };
    if let Err(why) = capture(&dev, &trace, io) {
        if why.contains("Operation not permitted") {
            skip_lacking(Lack::BlockTracing, why);
        } else {
            skip(why);
        }
        return;
    }
    let replayed = dir.path().join("replayed.log");
    ok(&[
        "--name=r".into(),
        format!("--read_iolog={}", trace.display()),
        "--replay_no_stall=1".into(),
        "--direct=1".into(),
        "--ioengine=psync".into(),
        format!("--write_iolog={}", replayed.display()),
    ]);
    let strip = |t: String| -> Vec<(String, u64, u64)> {
        log_ios(&t)
            .into_iter()
            .map(|(_, a, o, l)| (a, o, l))
            .collect()
    };
    let want = strip(std::fs::read_to_string(&issued).unwrap());
    let got = strip(std::fs::read_to_string(&replayed).unwrap());
    assert!(!want.is_empty());
    assert_eq!(
        got, want,
        "the blktrace replay issued other I/Os than were traced"
    );
    drop(z);
}
