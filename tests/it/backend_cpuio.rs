//! cpuio: fio's CPU burner. The think time that keeps the load at cpuload,
//! what the engine needs, how it ends (runtime, or exit_on_io_done when the
//! group's I/O jobs end). No wall-clock verdicts: what is checked is what
//! was asked and that the run ends.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::run_common::{iolab_run, run_json};
use iolab::job::Engine;
use iolab::job::plan::parse_run_args;

/// Parse a one-job file's lines (`[name]` then `key=value`) as command-line
/// options.
fn parse(text: &str) -> Result<Vec<iolab::job::JobSpec>, String> {
    let args: Vec<String> = text
        .lines()
        .map(|l| match l.strip_prefix('[') {
            Some(n) => format!("--name={}", n.trim_end_matches(']')),
            None => format!("--{l}"),
        })
        .collect();
    parse_run_args(&args, &|_| None)
        .map(|p| p.jobs)
        .map_err(|e| e.to_string())
}

#[test]
fn think_time_keeps_the_load() {
    let j = &parse("[b]\nioengine=cpuio\ncpuload=25\ncpuchunks=10000\nruntime=1\n").unwrap()[0];
    assert_eq!(j.ioengine, Engine::Cpuio);
    // fio: cycle x (100 - load) / load.
    assert_eq!(j.thinktime, Duration::from_micros(30_000));
    assert_eq!(j.thinktime_blocks, 1);
    assert!(j.time_based);
    // Above 100 is 100 (fio caps it): no think time.
    let j = &parse("[b]\nioengine=cpuio\ncpuload=150\nruntime=1\n").unwrap()[0];
    assert_eq!(j.backend.cpuio.cpuload, 100);
    assert_eq!(j.thinktime, Duration::ZERO);
    // fio's default cycle: 50 ms.
    let j = &parse("[b]\nioengine=cpuio\ncpuload=50\ncpumode=qsort\nruntime=1\n").unwrap()[0];
    assert_eq!(j.thinktime, Duration::from_millis(50));
}

#[test]
fn what_cpuio_needs() {
    let e = parse("[b]\nioengine=cpuio\nruntime=1\n").unwrap_err();
    assert!(e.contains("cpuload"), "{e}");
    let e = parse("[b]\nioengine=cpuio\ncpuload=10\n").unwrap_err();
    assert!(
        e.contains("runtime") && e.contains("exit_on_io_done"),
        "{e}"
    );
    let e = parse("[b]\nioengine=cpuio\ncpuload=10\ncpumode=spin\nruntime=1\n").unwrap_err();
    assert!(e.contains("noop or qsort"), "{e}");
    let e = parse("[b]\nioengine=psync\ncpuload=10\n").unwrap_err();
    assert!(e.contains("cpuload is an option of ioengine=cpuio"), "{e}");
}

#[test]
fn burns_until_runtime() {
    for mode in ["noop", "qsort"] {
        let j = run_json(&[
            "--name=b",
            "--ioengine=cpuio",
            "--cpuload=50",
            "--cpuchunks=2000",
            &format!("--cpumode={mode}"),
            "--runtime=200ms",
        ]);
        let job = &j["jobs"][0];
        assert!(
            job["read"]["total_ios"].as_u64().unwrap() > 0,
            "{mode}: {job}"
        );
        assert_eq!(job["error"], 0);
    }
}

#[test]
fn exit_on_io_done_ends_with_the_io_jobs() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("io");
    let job = format!(
        "[io]\nfilename={}\nsize=1m\nrw=read\nioengine=psync\n\n[burn]\nioengine=cpuio\n\
         cpuload=20\ncpuchunks=1000\nexit_on_io_done=1\n",
        f.display()
    );
    let jf = d.path().join("j.fio");
    std::fs::write(&jf, job).unwrap();
    // Without runtime the burner would run forever if nothing ended it.
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["run", jf.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            assert!(st.success());
            break;
        }
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the burner did not end with the I/O job");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = iolab_run::<&str>;
}
