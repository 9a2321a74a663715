//! Study 004 end to end, through `iolab lab observe --quick`: MariaDB + sysbench
//! and PostgreSQL + pgbench on a slow (throttled loop) and a fast (zram) device
//! under observe's collector; results.json carries both servers' tables and the
//! paper's comparisons; nothing is left behind (no server process, socket, data
//! directory, mount, loop or zram device, cgroup), also when the lab is stopped
//! by a signal in the middle of the MariaDB run.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::needs::{Need, ready};

use iolab::lab::observe::{ObserveStudyOpts, run};
use iolab::report::study::{Cell, LabResults, StudyResult, Table};

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

const NEEDS: [Need; 6] = [
    Need::Root,
    Need::Zram,
    Need::Loop,
    Need::Postgres,
    Need::Tool {
        cmd: "mariadbd",
        package: "mariadb-server",
    },
    Need::Tool {
        cmd: "sysbench",
        package: "sysbench",
    },
];

fn num(c: &Cell) -> f64 {
    match c {
        Cell::Num { v, .. } => *v,
        Cell::Text(t) => panic!("expected a number, got {t:?}"),
    }
}

fn root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn setup<'a>(r: &'a StudyResult, key: &str) -> &'a str {
    r.setup
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no setup entry {key:?}: {:?}", r.setup))
}

fn table<'a>(r: &'a StudyResult, prefix: &str, has: &str) -> &'a Table {
    r.tables
        .iter()
        .find(|t| t.title.starts_with(prefix) && t.title.contains(has))
        .unwrap_or_else(|| {
            let titles: Vec<&str> = r.tables.iter().map(|t| t.title.as_str()).collect();
            panic!("no table {prefix}..{has}: {titles:#?}")
        })
}

fn col(t: &Table, name: &str) -> usize {
    t.columns
        .iter()
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("no column {name:?} in {:?}", t.columns))
}

fn row<'a>(t: &'a Table, first: &str) -> &'a [Cell] {
    t.rows
        .iter()
        .find(|row| matches!(&row[0], Cell::Text(x) if x == first))
        .unwrap_or_else(|| panic!("no row {first:?} in {:?}", t.title))
}

/// The study temp dirs in /var/tmp now.
fn study_dirs() -> Vec<PathBuf> {
    std::fs::read_dir("/var/tmp")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("iolab-observe-"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Processes whose command line mentions `needle`, as "pid cmdline".
fn procs_mentioning(needle: &str) -> Vec<String> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Ok(c) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            if c.contains(needle) {
                v.push(format!("{pid} {c}"));
            }
        }
    }
    v
}

/// Everything the study makes, for one lab process: none may be left.
fn assert_nothing_left(lab_pid: u32, dirs: &[PathBuf], zram: Option<&str>) {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    let losetup = Command::new("losetup").arg("-a").output().unwrap();
    let losetup = String::from_utf8_lossy(&losetup.stdout).into_owned();
    for d in dirs {
        let ds = d.display().to_string();
        assert!(
            !d.exists(),
            "{ds} (data directories, socket, image) left behind"
        );
        assert!(!mounts.contains(&ds), "a study mount is left:\n{mounts}");
        assert!(
            !losetup.contains(&ds),
            "a loop device is still attached to a file in {ds}:\n{losetup}"
        );
        let p = procs_mentioning(&ds);
        assert!(p.is_empty(), "processes of the study left: {p:#?}");
        assert!(
            !d.join("mnt/mariadb/mysqld.sock").exists(),
            "MariaDB's socket left"
        );
    }
    // The zram number may be reused by a concurrent test; ours held an ext4 at
    // our mount point (gone, checked above) and had the study's size.
    if let Some(z) = zram {
        assert!(
            !Path::new(&format!("/sys/block/{z}")).exists()
                || std::fs::read_to_string(format!("/sys/block/{z}/disksize"))
                    .is_ok_and(|s| s.trim() != (512u64 << 20).to_string()),
            "{z} left behind"
        );
    }
    let prefix = format!("iolab-observe-{lab_pid}-");
    for root in ["/sys/fs/cgroup/blkio", "/sys/fs/cgroup/cpuacct"] {
        let left: Vec<String> = std::fs::read_dir(root)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(&prefix))
                    .collect()
            })
            .unwrap_or_default();
        assert!(left.is_empty(), "cgroups left in {root}: {left:?}");
    }
    let my = Command::new("pgrep")
        .args(["-u", "mysql", "-a", "mariadbd"])
        .output()
        .unwrap();
    let my = String::from_utf8_lossy(&my.stdout);
    assert!(
        !my.contains("iolab-observe-"),
        "mariadbd processes left:\n{my}"
    );
    let pg = Command::new("pgrep")
        .args(["-u", "postgres", "-a"])
        .output()
        .unwrap();
    let pg = String::from_utf8_lossy(&pg.stdout);
    assert!(
        !pg.contains("iolab-observe-") && !pg.lines().any(|l| l.contains("postgres:")),
        "postgres processes left:\n{pg}"
    );
}

/// Kills the lab if a test fails before it exits.
struct Lab(Child);

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `iolab lab observe --quick`; stdout kept only when it will be read to the end
/// (a pipe nobody reads would block the lab on a full buffer).
fn start_lab(out: &Path, keep_stdout: bool) -> Child {
    Command::new(IOLAB)
        .args(["lab", "observe", "--quick", "--json", "--out"])
        .arg(out)
        .stdin(Stdio::null())
        .stdout(if keep_stdout {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting iolab lab observe")
}

#[test]
fn quick_study_measures_both_servers_on_both_devices_and_cleans_up() {
    // The studies load both CPUs and their numbers mean nothing side by side.
    let _one = support::serial::one_at_a_time();
    if !root() {
        let e = run(&ObserveStudyOpts { quick: true }).unwrap_err();
        assert!(e.to_string().contains("root"), "{e}");
        return;
    }
    if !ready(&NEEDS) {
        return;
    }
    let before = study_dirs();
    let out = tempfile::tempdir().unwrap();
    let lab = start_lab(out.path(), true);
    let pid = lab.id();
    let o = lab.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "iolab lab observe: {}\n{stderr}",
        o.status
    );
    let json = std::fs::read_to_string(out.path().join("results.json")).unwrap();
    let lab: LabResults = serde_json::from_str(&json).unwrap();
    assert!(lab.not_run.is_empty(), "not run: {:?}", lab.not_run);
    let r = &lab.studies[0];
    println!("{}", r.render_text());
    assert_eq!((r.id.as_str(), r.seed.as_str()), ("observe", "004"));
    assert!(r.skipped.is_empty(), "skipped: {:?}", r.skipped);
    // A bound against a hang, not a speed claim.
    assert!(
        r.duration_s < 240.0,
        "quick study took {:.1} s",
        r.duration_s
    );

    for (server, bench) in [
        ("MariaDB", "sysbench oltp_read_write"),
        ("PostgreSQL", "pgbench"),
    ] {
        let t = table(r, &format!("(i) {server}: {bench}"), "");
        let tps = col(t, "TPS");
        let slow = num(&row(t, "slow (HDD-like)")[tps]);
        let fast = num(&row(t, "fast (zram)")[tps]);
        assert!(slow > 0.0 && fast > 0.0, "{server}: TPS {slow} {fast}");
        // The throttle must make the loop device the slower one.
        assert!(
            fast > slow,
            "{server}: zram ({fast:.0} TPS) should beat the throttled loop device ({slow:.0})"
        );
        for dev in ["slow (HDD-like)", "fast (zram)"] {
            let sc = table(r, &format!("(iii) {server}:"), dev);
            let calls = col(sc, "calls");
            let total: f64 = sc.rows.iter().map(|row| num(&row[calls])).sum();
            assert!(total > 0.0, "{server} {dev}: no system calls counted");
        }
        table(r, &format!("(ii) {server}:"), "/proc/stat");
        let cs = table(r, &format!("(iv) {server}:"), "context switches");
        let v = col(cs, "server voluntary");
        assert!(
            num(&row(cs, "fast (zram)")[v]) > 0.0,
            "{server}: no switches"
        );
        table(r, &format!("(v) {server}:"), "cost of observing");
        for what in [
            "throughput fast/slow",
            "futex calls fast/slow, same work",
            "context switches/s fast/slow",
        ] {
            let w = format!("{server}: {what}");
            let c = r
                .comparisons
                .iter()
                .find(|c| c.what == w)
                .unwrap_or_else(|| panic!("no comparison {w:?}: {:?}", r.comparisons));
            assert!(c.ours.is_finite() && c.published.is_some(), "{c:?}");
        }
    }
    // MariaDB's server is threads: its syscall table shows futex.
    let m = table(r, "(iii) MariaDB:", "fast (zram)");
    assert!(
        m.rows
            .iter()
            .any(|row| matches!(&row[0], Cell::Text(n) if n == "futex")),
        "no futex in MariaDB's calls: {m:?}"
    );
    // The side-by-side table agrees with the comparisons, server by server.
    let e = table(r, "(vi)", "paper's effect");
    let ratio = col(e, "futex fast/slow");
    let shows = col(e, "shows the futex effect");
    for server in ["MariaDB", "PostgreSQL"] {
        let row = row(e, server);
        let c = r
            .comparisons
            .iter()
            .find(|c| c.what == format!("{server}: futex calls fast/slow, same work"))
            .unwrap();
        assert!((num(&row[ratio]) - c.ours).abs() < 1e-9);
        let said = r
            .verdict
            .iter()
            .any(|v| v.starts_with(&format!("{server} shows the paper's effect")));
        assert_eq!(
            said,
            c.ours > 1.0,
            "{server}: verdict vs futex ratio {}",
            c.ours
        );
        assert_eq!(
            row[shows],
            Cell::text(if c.ours > 1.0 { "yes" } else { "no" })
        );
    }

    let (zram, _) = setup(r, "fast (zram) device").split_once(' ').unwrap();
    let dirs: Vec<PathBuf> = study_dirs()
        .into_iter()
        .chain(
            r.setup
                .iter()
                .filter_map(|(_, v)| v.split_whitespace().find(|w| w.starts_with("/var/tmp/")))
                .map(|w| PathBuf::from(w.trim_end_matches("/disk.img"))),
        )
        .filter(|d| !before.contains(d))
        .collect();
    assert!(!dirs.is_empty(), "the slow device names its temp dir");
    assert_nothing_left(pid, &dirs, Some(zram));
}

/// Start the lab, wait until its MariaDB server is up (its socket listens),
/// send `signals`, and check that nothing of the study is left.
fn kill_during_mariadb(signals: &[libc::c_int]) {
    let _one = support::serial::one_at_a_time();
    if !ready(&NEEDS) {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let mut lab = Lab(start_lab(out.path(), false));
    let pid = lab.0.id();
    // mariadbd is the lab's own child; its --socket names the study's dir.
    let deadline = Instant::now() + Duration::from_secs(90);
    let (mpid, sock) = loop {
        assert!(
            lab.0.try_wait().unwrap().is_none(),
            "the lab ended before MariaDB started"
        );
        let found = procs_mentioning("--socket=/var/tmp/iolab-observe-")
            .into_iter()
            .find_map(|l| {
                let mpid: i32 = l.split_whitespace().next()?.parse().ok()?;
                let stat = std::fs::read_to_string(format!("/proc/{mpid}/stat")).ok()?;
                let ppid: u32 = stat[stat.rfind(')')? + 1..]
                    .split_whitespace()
                    .nth(1)?
                    .parse()
                    .ok()?;
                let sock = l
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix("--socket="))?
                    .to_string();
                (ppid == pid && Path::new(&sock).exists()).then_some((mpid, sock))
            });
        if let Some(f) = found {
            break f;
        }
        assert!(Instant::now() < deadline, "no MariaDB server up after 90 s");
        std::thread::sleep(Duration::from_millis(20));
    };
    let dir = PathBuf::from(sock.split("/mnt/").next().unwrap());
    for (i, s) in signals.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(300));
        }
        // SAFETY: sending a signal to our own child.
        assert_eq!(unsafe { libc::kill(pid as i32, *s) }, 0);
    }
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(st) = lab.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "the lab did not end 90 s after the signal"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    if let Some(mut e) = lab.0.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    println!("lab ended: {status}\n{err}");
    let cmdline = std::fs::read(format!("/proc/{mpid}/cmdline")).unwrap_or_default();
    assert!(
        !String::from_utf8_lossy(&cmdline).contains(&sock),
        "mariadbd pid {mpid} still running"
    );
    assert!(!Path::new(&sock).exists(), "socket {sock} left");
    assert_nothing_left(pid, &[dir], None);
}

#[test]
fn sigint_during_the_mariadb_run_leaves_nothing_behind() {
    // The first signal: the study stops at its next check and every guard undoes
    // its part on the way out.
    kill_during_mariadb(&[libc::SIGINT]);
}

#[test]
fn second_sigterm_during_the_mariadb_run_leaves_nothing_behind() {
    // The second signal aborts at once: the cleanup registry alone undoes the
    // server, cgroups, mount, loop device and temp dir (no destructor runs).
    kill_during_mariadb(&[libc::SIGTERM, libc::SIGTERM]);
}
