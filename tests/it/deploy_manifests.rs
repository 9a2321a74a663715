//! The container and Kubernetes files under `deploy/`, checked as far as can
//! be done offline: the Containerfile's build commands are the ones CI runs
//! (`.ci/run`) and it installs the Debian package, the manifests and the
//! Ansible files parse as YAML and the Kubernetes objects say what docs/fleet.md says (privileged, the node script,
//! results under /var/lib/iolab-fleet), and the node script the image runs
//! writes the fleet layout `iolab report --fleet` reads.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use iolab::report::fleet::{HostState, load_fleet};
use serde::Deserialize;
use support::needs::{Need, ready, skip};

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");
const RESULTS_DIR: &str = "/var/lib/iolab-fleet";
const NODE_SCRIPT: &str = "/usr/local/bin/iolab-run-node";

fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

fn read(p: &str) -> String {
    std::fs::read_to_string(repo(p)).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// The cargo commands of a shell text: each `cargo ...` line or `&&`/`;`
/// segment, whitespace normalised.
fn cargo_commands(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.trim().trim_start_matches("RUN ").trim())
        .filter(|l| !l.starts_with('#'))
        .flat_map(|l| l.split("&&").flat_map(|s| s.split(';')))
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .map(|s| s.trim_start_matches("then ").to_string())
        .filter(|s| s.starts_with("cargo "))
        .collect()
}

#[test]
fn containerfile_builds_with_the_commands_ci_runs() {
    let ci = cargo_commands(&read(".ci/run"));
    let cf = cargo_commands(&read("deploy/container/Containerfile"));
    assert!(
        ci.iter().any(|c| c == "cargo test --release"),
        ".ci/run lost its test command: {ci:?}"
    );
    for c in &ci {
        assert!(
            cf.contains(c),
            "the Containerfile does not run CI's `{c}` (it runs {cf:?})"
        );
    }
    // Nothing beyond CI's: the package is built by packaging/build-deb.sh.
    for c in &cf {
        assert!(
            ci.contains(c),
            "the Containerfile runs `{c}`, which CI does not ({ci:?})"
        );
    }
    let text = read("deploy/container/Containerfile");
    assert!(text.contains(&format!("COPY deploy/kubernetes/run-node.sh {NODE_SCRIPT}")));
    // The image installs the Debian package that the one recipe makes (CI
    // builds and installs the same: tests/it/packaging.rs), not a second
    // copy of the binary.
    assert!(text.contains("RUN packaging/build-deb.sh\n"));
    assert!(text.contains("COPY --from=build /src/target/debian/ /tmp/iolab-deb/"));
    assert!(text.contains("/tmp/iolab-deb/iolab_*.deb"));
    assert!(!text.contains("target/release/iolab"));
    // The manifests say how to build and push the image they name.
    for m in [
        "deploy/kubernetes/daemonset.yaml",
        "deploy/kubernetes/job.yaml",
    ] {
        let m_text = read(m);
        assert!(
            m_text.contains("podman build -f deploy/container/Containerfile -t iolab:latest .")
                && m_text.contains("podman push"),
            "{m} does not say how to build and push its image"
        );
    }
}

/// A Python with PyYAML: the ansible venv's (ansible-core needs PyYAML), else
/// python3 if it has it.
fn python_with_yaml() -> Option<PathBuf> {
    let venv = repo("target/ansible-venv/bin/python");
    [venv, PathBuf::from("python3")].into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import yaml"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Every YAML document of `files`, as JSON values keyed by file.
fn load_yaml(py: &Path, files: &[PathBuf]) -> BTreeMap<String, Vec<serde_json::Value>> {
    const SCRIPT: &str = "import json, sys, yaml\nout = {}\nfor f in sys.argv[1:]:\n    with open(f) as fh:\n        out[f] = [d for d in yaml.safe_load_all(fh) if d is not None]\nprint(json.dumps(out))\n";
    let o = Command::new(py)
        .arg("-c")
        .arg(SCRIPT)
        .args(files)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "YAML does not parse:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

#[derive(Deserialize)]
struct Object {
    kind: String,
    metadata: Meta,
    #[serde(default)]
    spec: Option<Workload>,
}

#[derive(Deserialize)]
struct Meta {
    name: String,
}

#[derive(Deserialize)]
struct Workload {
    template: PodTemplate,
}

#[derive(Deserialize)]
struct PodTemplate {
    spec: PodSpec,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodSpec {
    #[serde(default)]
    init_containers: Vec<Container>,
    containers: Vec<Container>,
    volumes: Vec<Volume>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Container {
    image: String,
    command: Vec<String>,
    #[serde(default)]
    env: Vec<Env>,
    #[serde(default)]
    security_context: Option<SecurityContext>,
    #[serde(default)]
    volume_mounts: Vec<Mount>,
}

#[derive(Deserialize)]
struct Env {
    name: String,
    #[serde(default)]
    value: Option<String>,
}

#[derive(Deserialize)]
struct SecurityContext {
    #[serde(default)]
    privileged: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Mount {
    name: String,
    mount_path: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Volume {
    name: String,
    #[serde(default)]
    host_path: Option<HostPath>,
}

#[derive(Deserialize)]
struct HostPath {
    path: String,
}

#[test]
fn manifests_parse_and_say_what_the_docs_say() {
    let Some(py) = python_with_yaml() else {
        skip("needs Python with PyYAML (apt-get install python3-yaml)");
        return;
    };
    let k8s = [
        repo("deploy/kubernetes/daemonset.yaml"),
        repo("deploy/kubernetes/job.yaml"),
    ];
    let ansible = [
        repo("deploy/ansible/fleet.yml"),
        repo("deploy/ansible/roles/iolab/tasks/main.yml"),
        repo("deploy/ansible/roles/iolab/defaults/main.yml"),
        repo("deploy/ansible/inventory.example.yml"),
    ];
    let all: Vec<PathBuf> = k8s.iter().chain(&ansible).cloned().collect();
    let docs = load_yaml(&py, &all);
    for f in &ansible {
        assert!(
            !docs[&f.display().to_string()].is_empty(),
            "{}",
            f.display()
        );
    }
    let mut kinds = Vec::new();
    for f in &k8s {
        for d in &docs[&f.display().to_string()] {
            let o: Object = serde_json::from_value(d.clone())
                .unwrap_or_else(|e| panic!("{}: not a Kubernetes object: {e}", f.display()));
            kinds.push(o.kind.clone());
            let Some(spec) = o.spec else { continue };
            let pod = spec.template.spec;
            let runner = pod
                .init_containers
                .iter()
                .chain(&pod.containers)
                .find(|c| c.command == [NODE_SCRIPT])
                .unwrap_or_else(|| panic!("{}: no container runs {NODE_SCRIPT}", o.metadata.name));
            assert!(runner.image.starts_with("iolab"), "{}", runner.image);
            assert!(
                runner
                    .security_context
                    .as_ref()
                    .is_some_and(|s| s.privileged),
                "{}: the lab needs a privileged container",
                o.metadata.name
            );
            let env = |n: &str| runner.env.iter().find(|e| e.name == n);
            assert!(env("NODE_NAME").is_some());
            assert_eq!(
                env("IOLAB_QUICK").and_then(|e| e.value.as_deref()),
                Some("1")
            );
            let fleet_dir = env("IOLAB_FLEET_DIR")
                .and_then(|e| e.value.clone())
                .expect("IOLAB_FLEET_DIR");
            // The results directory is the node's, through a hostPath volume.
            let m = runner
                .volume_mounts
                .iter()
                .find(|m| m.mount_path == fleet_dir)
                .expect("results mount");
            let v = pod.volumes.iter().find(|v| v.name == m.name).unwrap();
            assert_eq!(
                v.host_path.as_ref().map(|h| h.path.as_str()),
                Some(RESULTS_DIR)
            );
        }
    }
    kinds.sort();
    assert_eq!(kinds, ["DaemonSet", "Job", "Namespace"]);
    let docs_page = read("docs/fleet.md");
    assert!(docs_page.contains(RESULTS_DIR) && docs_page.contains("deploy/kubernetes"));
}

#[test]
fn node_script_writes_the_fleet_layout() {
    let _one = support::serial::one_at_a_time();
    if !ready(&[Need::Root]) {
        return;
    }
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    let bin_dir = Path::new(IOLAB).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let target = d.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let run = |node: &str, targets: String, studies: &str| {
        Command::new("sh")
            .arg(repo("deploy/kubernetes/run-node.sh"))
            .env("PATH", &path)
            .env("NODE_NAME", node)
            .env("IOLAB_FLEET_DIR", d.path().join("fleet"))
            .env("IOLAB_PROBE_TARGETS", targets)
            .env("IOLAB_PROBE_RUNTIME", "0.05")
            .env("IOLAB_STUDIES", studies)
            .output()
            .unwrap()
    };
    let missing = d.path().join("missing");
    let bad = run(
        "node-bad",
        format!("{} {}", target.display(), missing.display()),
        "placement",
    );
    assert!(!bad.status.success());
    let good = run("node-good", target.display().to_string(), "placement");
    assert!(
        good.status.success(),
        "{}",
        String::from_utf8_lossy(&good.stderr)
    );
    let fleet = load_fleet(&d.path().join("fleet")).unwrap();
    assert_eq!(fleet.hosts.len(), 2);
    let b = &fleet.hosts[0];
    assert_eq!(b.name, "node-bad");
    match b.state() {
        HostState::Failed { task, error } => {
            assert_eq!(task, "iolab probe");
            assert!(
                error.contains(&format!("{}: no such file or directory", missing.display())),
                "{error}"
            );
        }
        s => panic!("{s:?}"),
    }
    assert_eq!(b.probes.len(), 1, "the target that could be probed is kept");
    assert!(b.problems.is_empty(), "{:?}", b.problems);
    let g = &fleet.hosts[1];
    assert_eq!(g.state(), HostState::Ok);
    assert!(g.problems.is_empty(), "{:?}", g.problems);
    assert_eq!(g.results.as_ref().unwrap().studies[0].id, "placement");
    assert!(g.topology.is_some() && g.probes.len() == 1);
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
}
