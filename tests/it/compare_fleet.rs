//! `iolab compare` across a fleet: the playbook runs one job file (iolab_jobs)
//! on two local-connection hosts, three rounds each, and fetches the rounds;
//! then host against host, and the fleet before against the same fleet
//! after (a second playbook run), per host and overall, on one page.

use crate::support;

use std::process::Command;

use serde_json::Value;

use crate::fleet_ansible::{ansible_ready, inventory, run_playbook};

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

#[test]
fn fleet_jobs_compare_host_against_host_and_before_against_after() {
    let _one = support::serial::one_at_a_time();
    let Some(ansible) = ansible_ready() else {
        return;
    };
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = dir.path();
    let job = d.join("null-read.fio");
    std::fs::write(
        &job,
        "[global]\nioengine=null\nsize=64m\nbs=4k\nruntime=200ms\ntime_based\ncompletion=poll\nnull_lat=4us\n[r]\nrw=randread\n",
    )
    .unwrap();
    let fleets: Vec<std::path::PathBuf> = ["before", "after"]
        .iter()
        .map(|run| {
            let rd = d.join(run);
            std::fs::create_dir(&rd).unwrap();
            let hosts: Vec<(&str, String)> = ["alpha", "beta"]
                .iter()
                .map(|h| {
                    (
                        *h,
                        format!(
                            "      iolab_lab: false\n      iolab_jobs: [\"{}\"]\n      iolab_job_rounds: 3\n      iolab_remote_dir: \"{}\"\n",
                            job.display(),
                            rd.join(format!("remote-{h}")).display()
                        ),
                    )
                })
                .collect();
            let log = run_playbook(&ansible, &rd, &inventory(&hosts));
            let fleet = rd.join("fleet");
            for h in ["alpha", "beta"] {
                for n in 1..=3 {
                    let f = fleet.join(h).join(format!("jobs/null-read/round{n}.json"));
                    assert!(f.is_file(), "{} missing:\n{log}", f.display());
                }
                let rec: Value = serde_json::from_str(
                    &std::fs::read_to_string(fleet.join(h).join("host.json")).unwrap(),
                )
                .unwrap();
                assert_eq!(rec["status"], "ok", "{rec:#}\n{log}");
                assert_eq!(rec["jobs"][0], "null-read.fio");
                assert!(
                    !rd.join(format!("remote-{h}")).exists(),
                    "the host's working directory is removed"
                );
            }
            fleet
        })
        .collect();

    let compare = |args: &[&std::path::Path], extra: &[&str]| {
        let out = Command::new(IOLAB)
            .arg("compare")
            .args(args)
            .args(extra)
            .arg("--output-format=json")
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        (out.status.code(), v)
    };

    // Host against host: beta against alpha, the same job matched.
    let (code, v) = compare(&[&fleets[0]], &["--fail-if", "p50>+10%"]);
    assert_eq!(code, Some(0), "{v:#}");
    let c = v["comparisons"].as_array().unwrap();
    assert_eq!(c.len(), 1);
    assert_eq!(c[0]["title"], "host beta against host alpha");
    let j = &c[0]["jobs"][0];
    assert_eq!(j["job"], "null-read:r");
    let p50 = j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "p50")
        .unwrap();
    assert_eq!(p50["base_rounds"], 3);
    // Three rounds a side decide: the same device on both hosts, the same
    // p50 in every round, so no difference, and an interval well inside the
    // rule's +10%: the gate passes.
    assert_eq!(p50["verdict"], "no_difference");
    assert!(
        p50["test"]
            .as_str()
            .unwrap()
            .starts_with("Welch's t-test on ln(p50) over 3 vs 3 rounds"),
        "{p50:#}"
    );
    assert_eq!(v["outcome"], "pass", "{v:#}");

    // Before against after: per host, and overall with six rounds a side.
    let html = d.join("page");
    let (code, v) = compare(
        &[&fleets[0], &fleets[1]],
        &["--html", html.to_str().unwrap()],
    );
    assert_eq!(code, Some(0), "{v:#}");
    let titles: Vec<&str> = v["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        [
            "fleet overall: 2 hosts, their rounds pooled per side",
            "host alpha: before against after",
            "host beta: before against after"
        ]
    );
    let overall = &v["comparisons"][0]["jobs"][0]["rows"][0];
    assert_eq!(overall["base_rounds"], 6, "{overall:#}");
    let page = std::fs::read_to_string(html.join("index.html")).unwrap();
    for t in &titles {
        assert!(page.contains(t), "{t} not on the page");
    }

    // A host missing from the second fleet: not compared, so the gate is
    // inconclusive (exit 3) and names it, as a job on one side only would be.
    let partial = d.join("after-alpha-only");
    std::fs::create_dir(&partial).unwrap();
    let alpha = fleets[1].join("alpha");
    let st = Command::new("cp")
        .arg("-r")
        .arg(&alpha)
        .arg(partial.join("alpha"))
        .status()
        .unwrap();
    assert!(st.success());
    let (code, v) = compare(&[&fleets[0], &partial], &["--fail-if", "p50>+10%"]);
    assert_eq!(code, Some(3), "{v:#}");
    assert_eq!(v["outcome"], "inconclusive");
    let u = v["unjudged"].as_array().unwrap();
    assert!(
        u.iter()
            .any(|x| x["why"].as_str().unwrap().contains("host beta")),
        "{u:#?}"
    );
}
