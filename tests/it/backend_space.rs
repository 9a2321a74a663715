//! falloc and ftruncate: the file system's allocation calls as the I/O. The
//! file each leaves behind (size, blocks allocated) is compared with what
//! fio 3.33's engines leave after the same job on the same sparse file.

use crate::backend_common::*;
use crate::backend_fio::{fio, fio_ios, iolab_ios, size_and_blocks, sparse};
use crate::run_common::{iolab_run, run_json};
use crate::support::needs::{Need, ready};
use iolab::device::space::{Space, SpaceKind};
use iolab::device::{Queue, Queued};
use iolab::request::{IoCmd, Op};

fn result(q: &mut Space, c: &IoCmd) -> i64 {
    match q.queue(c).unwrap() {
        Queued::Done(c) => c.result,
        other => panic!("space backends complete inline, got {other:?}"),
    }
}

#[test]
fn falloc_allocates_keeps_size_and_punches() {
    let t = TempTarget::new(0, false);
    let path = t.path.display().to_string();
    let mut q = Space::new(t.fd(), SpaceKind::Falloc).unwrap();
    let b = AlignedBuf::new(65536);
    // A write extends the file and allocates.
    assert_eq!(result(&mut q, &cmd(Op::Write, 0, &b, 0)), 65536);
    assert_eq!(size_and_blocks(&path), (65536, 128));
    // A read allocates past the end without changing the size.
    assert_eq!(result(&mut q, &cmd(Op::Read, 65536, &b, 0)), 65536);
    assert_eq!(size_and_blocks(&path), (65536, 256));
    // A trim punches a hole, size kept.
    assert_eq!(result(&mut q, &cmd(Op::Trim, 0, &b, 0)), 65536);
    assert_eq!(size_and_blocks(&path), (65536, 128));
    assert_eq!(q.stats().submit_calls, 3);
}

#[test]
fn ftruncate_sets_the_size_to_the_offset_and_refuses_reads() {
    let t = TempTarget::new(1 << 20, false);
    let path = t.path.display().to_string();
    let mut q = Space::new(t.fd(), SpaceKind::Ftruncate).unwrap();
    let b = AlignedBuf::new(4096);
    assert_eq!(result(&mut q, &cmd(Op::Write, 12288, &b, 0)), 4096);
    assert_eq!(
        size_and_blocks(&path).0,
        12288,
        "fio truncates to the offset"
    );
    assert_eq!(
        result(&mut q, &cmd(Op::Read, 0, &b, 0)),
        -(libc::EINVAL as i64)
    );
}

/// Run `opts` under fio on a fresh sparse file, then under iolab on another:
/// the files must end alike.
fn same_file_as_fio(engine: &str, opts: &[&str]) {
    let d = tempfile::tempdir().unwrap();
    let run = |name: &str, with_fio: bool| {
        let f = sparse(d.path(), name, 1 << 20);
        let mut a = vec![
            "--name=s".to_string(),
            format!("--filename={f}"),
            format!("--ioengine={engine}"),
            "--size=1m".into(),
        ];
        a.extend(opts.iter().map(|s| s.to_string()));
        if with_fio {
            let args: Vec<&str> = a.iter().map(String::as_str).collect();
            let out = fio(&args);
            assert!(out.status.success(), "fio {a:?}: {out:?}");
        } else {
            let (code, out, err) = iolab_run(&a);
            assert_eq!(code, 0, "iolab {a:?}: {err}\n{out}");
        }
        size_and_blocks(&f)
    };
    let theirs = run("fio", true);
    let ours = run("iolab", false);
    assert_eq!(ours.0, theirs.0, "{engine} {opts:?}: size, iolab vs fio");
    // Blocks allocated: the same data blocks; ext4 may add one 4 KiB block
    // of extent tree to either, depending on how its extents split.
    assert!(
        ours.1.abs_diff(theirs.1) <= 8,
        "{engine} {opts:?}: blocks, iolab {} vs fio {}",
        ours.1,
        theirs.1
    );
}

#[test]
fn files_end_as_under_fio() {
    if !ready(&[Need::Fio]) {
        return;
    }
    // The first 32 blocks allocated, the rest sparse.
    same_file_as_fio("falloc", &["--rw=write", "--bs=4k", "--number_ios=32"]);
    // KEEP_SIZE allocation of the whole region.
    same_file_as_fio("falloc", &["--rw=read", "--bs=64k"]);
    // Holes punched over a laid-out file.
    same_file_as_fio("falloc", &["--rw=trim", "--bs=64k", "--number_ios=4"]);
    // The size follows the last write's offset.
    same_file_as_fio("ftruncate", &["--rw=write", "--bs=4k"]);
    same_file_as_fio("ftruncate", &["--rw=write", "--bs=4k", "--number_ios=10"]);
}

#[test]
fn issues_what_fio_issues() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    for engine in ["falloc", "ftruncate"] {
        let f = sparse(d.path(), "f", 256 << 10);
        let all = [
            format!("--ioengine={engine}"),
            format!("--filename={f}"),
            "--rw=write".into(),
            "--bs=8k".into(),
            "--size=256k".into(),
        ];
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let fio = fio_ios(d.path(), &all);
        sparse(d.path(), "f", 256 << 10);
        assert_eq!(iolab_ios(d.path(), &all), fio, "{engine}");
    }
}

#[test]
fn ftruncate_read_fails_as_in_fio() {
    let d = tempfile::tempdir().unwrap();
    let f = sparse(d.path(), "r", 64 << 10);
    let (code, out, err) = iolab_run(&[
        "--name=r",
        &format!("--filename={f}"),
        "--ioengine=ftruncate",
        "--rw=read",
        "--size=64k",
        "--output-format=json",
    ]);
    // fio: err=22 (EINVAL) on the first read, and the job ends.
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("\"error\" : 22")
            || err.contains("EINVAL")
            || err.contains("Invalid argument"),
        "{out}\n{err}"
    );
    let _ = run_json;
}
