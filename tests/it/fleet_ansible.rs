//! The fleet playbook (`deploy/ansible/fleet.yml`) run by ansible-core for
//! real, on inventories whose hosts all use the local connection (each one a
//! separate inventory host with its own variables, fetched results and
//! working directory), then the fleet report it rendered checked: host rows,
//! one chart series per host, Chromium renders it; failed hosts named with
//! iolab's own message while the others' results stay in the report.
//!
//! ansible-playbook is `IOLAB_ANSIBLE_PLAYBOOK`, else the venv `.ci/run` makes
//! (`target/ansible-venv`), else the one on PATH; without it the tests say
//! SKIPPED and how to get it. The hosts use `become_method: su` because this
//! machine has no sudo (root su needs no password).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use iolab::report::fleet::{FleetHost, HostState, load_fleet};
use iolab::report::html::{fleet_charts, render_fleet_html};
use support::needs::{Need, chromium, on_path, ready, skip};

use crate::browser_report::{check_png, faults, probe, run_chromium};

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

fn playbook_cmd() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("IOLAB_ANSIBLE_PLAYBOOK") {
        return Some(PathBuf::from(p));
    }
    let venv =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ansible-venv/bin/ansible-playbook");
    if venv.is_file() {
        return Some(venv);
    }
    on_path("ansible-playbook").then(|| PathBuf::from("ansible-playbook"))
}

fn playbook() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/ansible/fleet.yml")
}

/// Run the fleet playbook on `inventory` (YAML) with results in `dir/fleet`.
/// Killed after 10 minutes so a hung run fails the test. Returns the log.
pub(crate) fn run_playbook(bin: &Path, dir: &Path, inventory: &str) -> String {
    let inv = dir.join("inventory.yml");
    std::fs::write(&inv, inventory).unwrap();
    let log = dir.join("ansible.log");
    let mut child = Command::new(bin)
        .arg("-i")
        .arg(&inv)
        .arg(playbook())
        .arg("-e")
        .arg(format!("iolab_fleet_dir={}", dir.join("fleet").display()))
        .arg("-e")
        .arg(format!("iolab_controller_bin={IOLAB}"))
        // Ansible's own temp files stay in the test's directory.
        .env("ANSIBLE_LOCAL_TEMP", dir.join("ansible-local"))
        .env("ANSIBLE_REMOTE_TMP", dir.join("ansible-remote"))
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_RETRY_FILES_ENABLED", "0")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(dir.join("ansible.err")).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > Duration::from_secs(600) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ansible-playbook did not finish in 10 minutes");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let out = std::fs::read_to_string(&log).unwrap_or_default();
    let err = std::fs::read_to_string(dir.join("ansible.err")).unwrap_or_default();
    eprintln!(
        "fleet_ansible: ansible-playbook ran {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    // Failed hosts are recorded, not fatal: the playbook itself succeeds.
    assert!(status.success(), "ansible-playbook {status}:\n{out}\n{err}");
    out
}

/// Inventory vars every test host shares: local connection, root through su,
/// ansible's own Python on the "host", one quick study, short probes.
pub(crate) fn inventory(hosts: &[(&str, String)]) -> String {
    let mut s = String::from("all:\n  hosts:\n");
    for (name, vars) in hosts {
        s += &format!("    {name}:\n{vars}");
    }
    s += "  vars:\n    ansible_connection: local\n    ansible_python_interpreter: \"{{ ansible_playbook_python }}\"\n    ansible_become_method: su\n    iolab_quick: true\n    iolab_probe_runtime: 0.1\n";
    s
}

fn host_vars(dir: &Path, name: &str, studies: &str, targets: &[PathBuf], write: bool) -> String {
    let targets: Vec<String> = targets
        .iter()
        .map(|t| format!("\"{}\"", t.display()))
        .collect();
    format!(
        "      iolab_studies: {studies}\n      iolab_probe_targets: [{}]\n      iolab_probe_write: {write}\n      iolab_remote_dir: \"{}\"\n",
        targets.join(", "),
        dir.join(format!("remote-{name}")).display()
    )
}

pub(crate) fn ansible_ready() -> Option<PathBuf> {
    if !ready(&[Need::Root]) {
        return None;
    }
    match playbook_cmd() {
        Some(p) => Some(p),
        None => {
            skip(
                "needs ansible-core (.ci/run installs it: python3 -m venv target/ansible-venv && \
                 target/ansible-venv/bin/pip install ansible-core; or set IOLAB_ANSIBLE_PLAYBOOK)",
            );
            None
        }
    }
}

/// The rows of the report's hosts table.
fn host_rows(html: &str) -> usize {
    let i = html
        .find("<table class=\"data hosts\">")
        .expect("hosts table");
    let j = i + html[i..].find("</table>").unwrap();
    html[i..j].matches("<tr>").count() - 1
}

fn host<'a>(hosts: &'a [FleetHost], name: &str) -> &'a FleetHost {
    hosts
        .iter()
        .find(|h| h.name == name)
        .unwrap_or_else(|| panic!("host {name} missing from the fleet"))
}

#[test]
fn two_hosts_run_the_lab_and_share_one_report() {
    let _one = support::serial::one_at_a_time();
    let Some(ansible) = ansible_ready() else {
        return;
    };
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = dir.path();
    // alpha probes a directory (a temp file is made there), beta a file.
    let dir_target = d.join("target-dir");
    std::fs::create_dir(&dir_target).unwrap();
    let file_target = d.join("target-file");
    std::fs::write(&file_target, vec![7u8; 1 << 20]).unwrap();
    let inv = inventory(&[
        (
            "alpha",
            host_vars(
                d,
                "alpha",
                "[placement]",
                std::slice::from_ref(&dir_target),
                false,
            ),
        ),
        (
            "beta",
            host_vars(
                d,
                "beta",
                "[placement]",
                std::slice::from_ref(&file_target),
                false,
            ),
        ),
    ]);
    let log = run_playbook(&ansible, d, &inv);

    let fleet_dir = d.join("fleet");
    let fleet = load_fleet(&fleet_dir).unwrap();
    let names: Vec<&str> = fleet.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["alpha", "beta"], "{log}");
    for h in &fleet.hosts {
        assert_eq!(h.state(), HostState::Ok, "{}: {log}", h.name);
        assert!(h.problems.is_empty(), "{}: {:?}", h.name, h.problems);
        let r = h.results.as_ref().expect("results.json fetched");
        assert!(r.complete && r.quick == Some(true));
        assert_eq!(r.studies.len(), 1);
        assert_eq!(r.studies[0].id, "placement");
        assert!(!r.studies[0].comparisons.is_empty());
        assert!(h.topology.as_ref().is_some_and(|t| t.threads() >= 1));
        assert_eq!(h.probes.len(), 1, "{}: one probe per target", h.name);
        let p = &h.probes[0].probe;
        assert!(p.read.recommendation.is_some() && p.read.recommended_row().is_some());
        assert!(
            p.read.adaptive_choice().is_some(),
            "{}: adaptive's decision",
            h.name
        );
        // Nothing left on the "host": the role removes its working directory,
        // the probe its temp file.
        let remote = d.join(format!("remote-{}", h.name));
        assert!(!remote.exists(), "{} left behind", remote.display());
    }
    assert_eq!(std::fs::read_dir(&dir_target).unwrap().count(), 0);
    assert_eq!(
        host(&fleet.hosts, "alpha").probes[0].probe.given,
        dir_target
    );

    // The report the playbook rendered on the controller is this fleet's.
    let page = fleet_dir.join("report/index.html");
    let html = std::fs::read_to_string(&page).expect("the playbook rendered the report");
    assert_eq!(html, render_fleet_html(&fleet));
    assert_eq!(host_rows(&html), 2);
    assert!(html.contains(&dir_target.display().to_string()));
    assert!(html.contains(&file_target.display().to_string()));
    // Per study, one series per host in every chart.
    let runs: Vec<(&str, &iolab::report::study::StudyResult)> = fleet
        .hosts
        .iter()
        .map(|h| (h.name.as_str(), &h.results.as_ref().unwrap().studies[0]))
        .collect();
    let charts = fleet_charts(&runs);
    assert!(!charts.is_empty());
    for (c, missing) in &charts {
        let series: Vec<&str> = c.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(series, ["alpha", "beta"], "{}", c.title);
        assert!(missing.is_empty());
        assert!(html.contains(&iolab::report::html::escape(&c.title)));
    }

    // In a real browser: no faults, every chart drawn, a screenshot.
    if !ready(&[Need::Chromium]) {
        return;
    }
    let chrome = chromium().expect("checked by ready");
    let p = probe(&chrome, d, "fleet", &html);
    assert_eq!(p["charts"].as_array().unwrap().len(), charts.len());
    let f = faults(&p, 3);
    assert!(f.is_empty(), "fleet report faults:\n{}", f.join("\n"));
    let shot = d.join("fleet.png");
    run_chromium(
        &chrome,
        &d.join("shot.profile"),
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2000".into(),
        ],
    );
    let size = check_png(&shot, 1280, 2000);
    assert!(size > 60_000, "screenshot only {size} bytes");
    if let Some(keep) = std::env::var_os("IOLAB_KEEP_FLEET_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}

/// Unmounts on drop, also when an assertion fails.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn failed_hosts_are_named_with_iolabs_message_and_the_others_kept() {
    let _one = support::serial::one_at_a_time();
    let Some(ansible) = ansible_ready() else {
        return;
    };
    if !ready(&[Need::Zram]) {
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = dir.path();
    // A mounted file system on a zram device of our own.
    let z = match iolab::sys::zram::Zram::create(64 << 20) {
        Ok(z) => z,
        Err(e) => {
            skip(format_args!("cannot create zram: {e:#}"));
            return;
        }
    };
    let mkfs = Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(z.path())
        .output();
    if !mkfs.as_ref().is_ok_and(|o| o.status.success()) {
        skip(format_args!(
            "mkfs.ext4 unavailable or failed: {mkfs:?} (apt-get install e2fsprogs)"
        ));
        return;
    }
    let mnt = d.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    if !Command::new("mount")
        .arg(z.path())
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success())
    {
        skip("cannot mount the zram file system");
        return;
    }
    let _mounted = Mounted(mnt.clone());

    let good_target = d.join("target-dir");
    std::fs::create_dir(&good_target).unwrap();
    let missing = d.join("no-such-target");
    let dev = z.path();
    let inv = inventory(&[
        (
            "good",
            host_vars(
                d,
                "good",
                "[placement]",
                std::slice::from_ref(&good_target),
                false,
            ),
        ),
        (
            "missing",
            host_vars(
                d,
                "missing",
                "[placement]",
                &[good_target.clone(), missing.clone()],
                false,
            ),
        ),
        (
            "badstudy",
            host_vars(d, "badstudy", "[placement, nosuch]", &[], false),
        ),
        (
            "mounted",
            host_vars(
                d,
                "mounted",
                "[placement]",
                std::slice::from_ref(&dev),
                true,
            ),
        ),
    ]);
    let log = run_playbook(&ansible, d, &inv);
    let fleet_dir = d.join("fleet");
    let fleet = load_fleet(&fleet_dir).unwrap();
    assert_eq!(fleet.hosts.len(), 4, "{log}");

    let good = host(&fleet.hosts, "good");
    assert_eq!(good.state(), HostState::Ok, "{log}");
    assert_eq!(good.results.as_ref().unwrap().studies[0].id, "placement");

    let failed = |name: &str| match host(&fleet.hosts, name).state() {
        HostState::Failed { task, error } => (task, error),
        other => panic!("{name}: {other:?}\n{log}"),
    };
    // Each failure carries iolab's own message.
    let (task, error) = failed("missing");
    assert_eq!(task, "iolab probe");
    assert!(
        error.contains(&missing.display().to_string())
            && error.contains("no such file or directory")
            && error.contains("iolab probe needs an existing"),
        "{error}"
    );
    // The target that could be probed on that host is still reported.
    assert_eq!(host(&fleet.hosts, "missing").probes.len(), 1);
    let (task, error) = failed("badstudy");
    assert_eq!(task, "iolab lab");
    assert!(
        error.contains("unknown study 'nosuch'; valid studies: poll, placement"),
        "{error}"
    );
    let (task, error) = failed("mounted");
    assert_eq!(task, "iolab probe");
    assert!(
        error.contains("--write refused") && error.contains("mounted on"),
        "{error}"
    );
    for h in ["good", "missing", "badstudy", "mounted"] {
        let remote = d.join(format!("remote-{h}"));
        assert!(!remote.exists(), "{} left behind", remote.display());
    }

    // The report names every failed host with its error beside the good
    // host's results.
    let html = std::fs::read_to_string(fleet_dir.join("report/index.html")).unwrap();
    assert_eq!(host_rows(&html), 4);
    assert!(html.contains("failed: iolab probe</td>") && html.contains("failed: iolab lab"));
    assert!(html.contains(&iolab::report::html::escape("unknown study 'nosuch'")));
    assert!(html.contains("--write refused"));
    assert!(html.contains(&iolab::report::html::escape(&format!(
        "{}: no such file or directory",
        missing.display()
    ))));
    // The placement study's charts, drawn from the one host that ran it.
    let charts = fleet_charts(&[("good", &good.results.as_ref().unwrap().studies[0])]);
    assert!(!charts.is_empty());
    assert!(html.contains("<code>iolab lab placement</code> on 1 host: good."));
}
