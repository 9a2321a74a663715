//! fio's `numa_cpu_nodes` and `numa_mem_policy` end to end: while a job runs,
//! its worker thread is allowed exactly node 0's CPUs and lives under the
//! memory policy asked for (read from /proc, as `numactl --show` would); a node
//! the machine lacks is a one-line error naming the option, the node and the
//! nodes there are.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::run_common::iolab_run;

const NODE0: &str = "/sys/devices/system/node/node0/cpulist";

/// The worker thread's (Cpus_allowed_list, numa_maps policy) of a running
/// `iolab run`: read until they are `want` (the thread names itself before it
/// places itself, so a first look can come between the two) or the deadline
/// passes; the last seen.
fn worker_placement(
    pid: u32,
    deadline: Instant,
    want: &(String, String),
) -> Option<(String, String)> {
    let mut seen = None;
    while Instant::now() < deadline {
        if let Some(now) = worker_placement_now(pid) {
            if &now == want {
                return Some(now);
            }
            seen = Some(now);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    seen
}

/// The worker thread's placement now, if it exists.
fn worker_placement_now(pid: u32) -> Option<(String, String)> {
    {
        if let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for t in rd.flatten() {
                let p = t.path();
                let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
                if comm.trim() != "iolab-w0" {
                    continue;
                }
                let status = std::fs::read_to_string(p.join("status")).ok()?;
                let cpus = status
                    .lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
                    .trim()
                    .to_string();
                // Each mapping's policy; a mapping without its own shows the
                // thread's policy (the binary's first mapping has none).
                let maps = std::fs::read_to_string(p.join("numa_maps")).ok()?;
                let policy = maps.lines().next()?.split_whitespace().nth(1)?.to_string();
                return Some((cpus, policy));
            }
        }
    }
    None
}

#[test]
fn the_worker_runs_on_its_nodes_cpus_under_its_memory_policy() {
    let Ok(node0) = std::fs::read_to_string(NODE0) else {
        crate::support::needs::skip(format_args!(
            "no {NODE0}: the kernel shows no NUMA nodes, so there is no policy to observe"
        ));
        return;
    };
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "run",
            "--name=n",
            "--ioengine=null",
            "--size=1g",
            "--time_based",
            "--runtime=3s",
            "--numa_cpu_nodes=0",
            "--numa_mem_policy=interleave:0",
            // fio applies the node mask over cpus_allowed: node 0's CPUs win.
            "--cpus_allowed=1",
            "--notes",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start iolab");
    let want = (node0.trim().to_string(), "interleave:0".to_string());
    let seen = worker_placement(
        child.id(),
        Instant::now() + Duration::from_millis(2500),
        &want,
    );
    let out = child.wait_with_output().expect("wait for iolab");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (cpus, policy) = seen.expect("the worker thread iolab-w0 was not seen while it ran");
    assert_eq!(
        cpus,
        node0.trim(),
        "worker allowed {cpus}, node 0 has {node0}"
    );
    assert_eq!(policy, "interleave:0");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("numa_cpu_nodes is accepted, but it overrides cpus_allowed"),
        "{err}"
    );
}

#[test]
fn a_node_the_machine_lacks_is_a_one_line_error() {
    for opt in ["--numa_cpu_nodes=7", "--numa_mem_policy=bind:0,7"] {
        let (code, _, err) = iolab_run(&["--name=n", "--ioengine=null", "--size=1m", opt]);
        assert_ne!(code, 0, "{opt} accepted");
        let line = err.trim();
        assert_eq!(line.lines().count(), 1, "{err}");
        let name = opt.trim_start_matches("--").split('=').next().unwrap();
        assert!(line.contains(&format!("option '{name}'")), "{line}");
        assert!(line.contains("node 7 does not exist"), "{line}");
        assert!(line.contains("this machine has (0"), "{line}");
    }
    let (code, _, err) = iolab_run(&[
        "--name=n",
        "--ioengine=null",
        "--size=1m",
        "--numa_mem_policy=prefer:0-1",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("numa_mem_policy"), "{err}");
}
