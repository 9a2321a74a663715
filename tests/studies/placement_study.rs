//! Study 001 in quick mode on this machine: every part that can run here runs,
//! the parts that cannot are skipped with the reason, and the numbers are real.

use std::time::Duration;

use iolab::lab::placement::{PlacementStudyOpts, run_placement_study};
use iolab::placement::Topology;

#[test]
fn quick_study_runs_and_reports() {
    let _one = crate::support::serial::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let what_if = dir.path().join("xeon.topo");
    std::fs::write(&what_if, "packages=1 cores=4 threads=2\n").unwrap();
    let opts = PlacementStudyOpts {
        quick: true,
        topology: Some(what_if),
        run_time: Some(Duration::from_millis(250)),
        ..PlacementStudyOpts::default()
    };
    let r = run_placement_study(&opts).unwrap();
    let text = r.render_text();
    println!("{text}");
    assert!(
        r.duration_s < 15.0,
        "quick mode must stay under 15 s: {}",
        r.duration_s
    );
    assert!(r.alone.iter().all(|(_, u)| *u > 0.0));
    assert!(
        r.p_alone.ios > 0 && r.p_alone.voluntary_switches <= 2,
        "{:?}",
        r.p_alone
    );
    for run in &r.runs {
        assert!(run.c_reports.iter().all(|c| c.units > 0), "{run:?}");
        assert!(
            run.p_reports.iter().all(|p| p.ios > 0 && p.errors == 0),
            "{run:?}"
        );
        assert!(run.c_norm > 0.0 && run.c_norm.is_finite());
    }
    let topo = Topology::from_system().unwrap();
    if !topo.has_smt() {
        assert!(
            r.skipped
                .iter()
                .any(|s| s.part.contains("colocate") && s.reason.contains("no SMT")),
            "{:?}",
            r.skipped
        );
    }
    if topo.cores.len() >= 2 {
        for p in ["bunch", "scatter", "free"] {
            assert!(
                r.runs
                    .iter()
                    .any(|x| x.experiment == "cross-core" && x.placement == p)
            );
        }
    }
    let live: Vec<_> = r.runs.iter().filter_map(|x| x.balancer.as_ref()).collect();
    assert!(!live.is_empty());
    for b in live {
        // One polling interval makes a P task (two if the machine starved a poller
        // for a whole interval).
        assert!(matches!(b.classified_at_tick, Some(1 | 2)), "{b:?}");
        assert!(b.reached_best, "{b:?}");
    }
    let w = r.whatif.as_ref().unwrap();
    assert!(w.balance_is_best);
    assert!(
        w.plans.iter().all(|(_, p)| p.is_ok()),
        "SMT what-if allows every policy"
    );
    assert!(text.contains("scatter vs bunch") && text.contains("What-if"));
    serde_json::to_string(&r).unwrap();
}

/// `iolab lab --topology` is checked before any study runs: a file that cannot be
/// read, or a lab run without the placement study, is an error naming the reason.
#[test]
fn lab_topology_option_is_checked_first() {
    let _one = crate::support::serial::one_at_a_time();
    let lab = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
            .arg("lab")
            .args(args)
            .output()
            .expect("run iolab");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.topo");
    let (code, err) = lab(&["placement", "--topology", missing.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("none.topo") && err.contains("No such file"),
        "{err}"
    );
    assert_eq!(err.matches("No such file").count(), 1, "said twice: {err}");
    let bad = dir.path().join("bad.topo");
    std::fs::write(&bad, "cores=two\n").unwrap();
    let (code, err) = lab(&["placement", "--topology", bad.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("bad.topo"), "{err}");
    let (code, err) = lab(&["observe", "--topology", bad.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("placement study") && err.contains("observe"),
        "{err}"
    );
}
