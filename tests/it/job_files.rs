//! fio's file-set options end to end: `nrfiles` creates and uses N files (each
//! gets its share of the writes, counted per descriptor with strace),
//! `filename_format` names them, a `directory` list spreads the clones' files,
//! a `filename` list, `fallocate`, `pre_read`, `unlink`, and the one-line
//! errors for bad values.

use std::collections::BTreeMap;
use std::process::Command;

use crate::run_common::{iolab_run, run_json};
use crate::support::needs::{Need, ready};

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn nrfiles_filename_format_and_directory_list() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let dirs = format!("--directory={}:{}", a.display(), b.display());
    let doc = run_json(&[
        "--name=x",
        "--nrfiles=3",
        "--size=3m",
        "--numjobs=2",
        &dirs,
        "--rw=write",
    ]);
    // fio's names ($jobname.$jobnum.$filenum), clone N in the N-th directory,
    // size spread over the files.
    assert_eq!(names(&a), ["x.0.0", "x.0.1", "x.0.2"]);
    assert_eq!(names(&b), ["x.1.0", "x.1.1", "x.1.2"]);
    for f in ["x.0.0", "x.0.2"] {
        assert_eq!(std::fs::metadata(a.join(f)).unwrap().len(), 1 << 20);
    }
    for j in doc["jobs"].as_array().unwrap() {
        assert_eq!(j["write"]["io_bytes"].as_u64(), Some(3 << 20), "{j}");
    }
    // filename_format, unlink.
    let dir = format!("--directory={}", a.display());
    run_json(&[
        "--name=y",
        "--nrfiles=2",
        "--size=64k",
        &dir,
        "--filename_format=data-$jobname-$filenum.bin",
        "--unlink=1",
    ]);
    assert_eq!(
        names(&a),
        ["x.0.0", "x.0.1", "x.0.2"],
        "unlink removed y's files"
    );
    run_json(&[
        "--name=y",
        "--nrfiles=2",
        "--size=64k",
        &dir,
        "--filename_format=data-$jobname-$filenum.bin",
    ]);
    assert!(names(&a).contains(&"data-y-1.bin".to_string()));
    // A filename list: relative names under directory.
    let doc = run_json(&[
        "--name=z",
        "--filename=l1:l2",
        &format!("--directory={}", b.display()),
        "--size=64k",
        "--rw=randwrite",
        "--fallocate=posix",
    ]);
    assert!(names(&b).contains(&"l2".to_string()));
    assert_eq!(doc["jobs"][0]["write"]["io_bytes"].as_u64(), Some(64 << 10));
}

/// pwrite64 calls per descriptor made by `iolab run ARGS`.
fn pwrites_per_fd(args: &[&str]) -> BTreeMap<i32, u64> {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("st");
    let st = Command::new("strace")
        .args(["-f", "-e", "trace=pwrite64", "-o"])
        .arg(&out)
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .arg("run")
        .args(args)
        .output()
        .unwrap();
    assert!(st.status.success(), "{st:?}");
    let mut m = BTreeMap::new();
    for l in std::fs::read_to_string(&out).unwrap().lines() {
        if let Some(rest) = l.split("pwrite64(").nth(1) {
            let fd: i32 = rest.split(',').next().unwrap().parse().unwrap();
            *m.entry(fd).or_default() += 1;
        }
    }
    m
}

#[test]
fn every_file_gets_its_share_of_the_writes() {
    if !ready(&[Need::Strace]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let dir = format!("--directory={}", d.path().display());
    let job = [
        "--name=w",
        "--nrfiles=4",
        "--size=1m",
        "--bs=4k",
        "--rw=randwrite",
    ];
    // Lay the files out first, so only the job's writes are counted.
    let mut a = job.to_vec();
    a.push(&dir);
    run_json(&a);
    let per_fd = pwrites_per_fd(&a);
    let counts: Vec<u64> = per_fd.values().copied().collect();
    assert_eq!(counts, [64, 64, 64, 64], "pwrite64 per fd: {per_fd:?}");
    // file_service_type=sequential writes them one after another, same shares.
    a.push("--file_service_type=sequential");
    let counts: Vec<u64> = pwrites_per_fd(&a).values().copied().collect();
    assert_eq!(counts, [64, 64, 64, 64]);
}

#[test]
fn io_uring_and_libaio_address_every_file() {
    let d = tempfile::tempdir().unwrap();
    let dir = format!("--directory={}", d.path().display());
    for engine in [
        "--ioengine=io_uring",
        "--ioengine=libaio",
        "--ioengine=sync",
        "--ioengine=pvsync",
    ] {
        for extra in ["--registerfiles=0", "--registerfiles=1"] {
            if extra.ends_with('1') && engine != "--ioengine=io_uring" {
                continue;
            }
            let doc = run_json(&[
                "--name=r",
                "--nrfiles=5",
                "--size=640k",
                &dir,
                engine,
                extra,
                "--iodepth=4",
                "--rw=randread",
                "--file_service_type=random:2",
                "--pre_read=1",
            ]);
            let j = &doc["jobs"][0];
            assert_eq!(j["read"]["total_ios"].as_u64(), Some(160), "{engine}: {j}");
            assert_eq!(j["error"].as_i64(), Some(0), "{engine}: {j}");
        }
    }
}

#[test]
fn bad_file_options_say_what_is_valid() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        ("nrfiles=0", "option 'nrfiles'"),
        ("file_service_type=roundrobin:0", "roundrobin:4"),
        (
            "filename_format=$jobname.$fileno",
            "'$fileno' is not one of them",
        ),
        ("fallocate=sometimes", "none, native, posix"),
        ("openfiles=0", "option 'openfiles'"),
    ];
    for (line, want) in cases {
        let f = d.path().join("bad.fio");
        std::fs::write(&f, format!("[j]\nsize=1m\nnrfiles=4\n{line}\n")).unwrap();
        let (code, _, err) = iolab_run(&[f.to_str().unwrap()]);
        assert_eq!(code, 1, "{line}");
        assert!(err.contains("bad.fio:"), "{line}: {err}");
        assert!(err.contains(want), "{line}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{line}: {err}");
    }
    // More files than the open-file limit allows: refused before any I/O,
    // nothing created.
    let dir = d.path().join("many");
    std::fs::create_dir(&dir).unwrap();
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(format!(
        "ulimit -n 64 && exec {} run --name=m --nrfiles=100 --size=400k --directory={}",
        env!("CARGO_BIN_EXE_iolab"),
        dir.display()
    ));
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("open-file limit of 64"), "{err}");
    assert!(
        names(&dir).is_empty(),
        "files were created: {:?}",
        names(&dir)
    );
}

/// `allow_file_create=0` (fio's xnvme examples set it to protect device
/// paths): a missing or short file is an error before the first I/O, and
/// nothing is created or extended; a file of the right size runs.
#[test]
fn allow_file_create_0_never_creates_or_extends() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("f");
    let fname = format!("--filename={}", f.display());
    let args = [
        "--name=x",
        fname.as_str(),
        "--size=1m",
        "--allow_file_create=0",
    ];
    let (code, _, err) = iolab_run(&args);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("does not exist, and allow_file_create=0 forbids creating it"),
        "{err}"
    );
    assert!(!f.exists(), "nothing created");
    std::fs::File::create(&f)
        .unwrap()
        .set_len(512 << 10)
        .unwrap();
    let (code, _, err) = iolab_run(&args);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("is 524288 bytes, short of the 1048576"),
        "{err}"
    );
    assert_eq!(
        std::fs::metadata(&f).unwrap().len(),
        512 << 10,
        "not extended"
    );
    std::fs::File::options()
        .write(true)
        .open(&f)
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let (code, _, err) = iolab_run(&args);
    assert_eq!(code, 0, "{err}");
}
