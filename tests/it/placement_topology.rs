//! Topology from fixture sysfs trees and topology files, including the errors.

use std::path::{Path, PathBuf};

use iolab::placement::Topology;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/topology")
        .join(name)
}

fn cores(t: &Topology) -> Vec<Vec<u32>> {
    t.cores.iter().map(|c| c.cpus.clone()).collect()
}

#[test]
fn smt_machine_groups_siblings() {
    let t = Topology::from_sysfs(&fixture("sysfs_4c8t")).unwrap();
    assert_eq!(t.packages, 1);
    assert_eq!(
        cores(&t),
        vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]
    );
    assert!(t.has_smt());
    assert_eq!(t.num_cpus(), 8);
    assert!(t.offline.is_empty());
    assert_eq!(t.core_of(6), Some(2));
}

#[test]
fn offline_cpu_leaves_its_core_and_stale_sibling_lists_are_ignored() {
    let t = Topology::from_sysfs(&fixture("sysfs_4c8t_offline")).unwrap();
    assert_eq!(cores(&t), vec![vec![0, 4], vec![1], vec![2, 6], vec![3, 7]]);
    assert_eq!(t.offline, vec![5]);
    assert_eq!(t.core_of(5), None);
    assert!(t.has_smt(), "three cores still have two threads");
    assert!(t.to_string().contains("offline 5"));
}

#[test]
fn old_kernel_two_packages_with_repeating_core_ids() {
    let t = Topology::from_sysfs(&fixture("sysfs_2p_old")).unwrap();
    assert_eq!(t.packages, 2);
    assert_eq!(cores(&t), vec![vec![0], vec![1], vec![2], vec![3]]);
    assert_eq!(t.cores[2].package, 1);
    assert_eq!(
        t.cores[2].core_id, 0,
        "core_id repeats per package but cores stay apart"
    );
    assert!(!t.has_smt());
}

#[test]
fn this_vm_shape() {
    let t = Topology::from_sysfs(&fixture("sysfs_vm2")).unwrap();
    assert_eq!(cores(&t), vec![vec![0], vec![1]]);
    assert!(!t.has_smt());
    assert!(
        t.to_string()
            .contains("colocate/spread placements need SMT")
    );
}

#[test]
fn broken_trees_name_the_file() {
    let e = Topology::from_sysfs(&fixture("sysfs_bad_core_id"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("core_id") && e.contains("`x` is not a number"),
        "{e}"
    );
    let e = Topology::from_sysfs(&fixture("sysfs_missing_cpu"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("cpu1/topology/physical_package_id"), "{e}");
    let e = Topology::from_sysfs(&fixture("no_such_tree"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no_such_tree/online"), "{e}");
}

#[test]
fn this_machine_reads() {
    let t = Topology::from_system().expect("sysfs topology of this machine");
    assert!(t.num_cpus() >= 1);
    let online = std::thread::available_parallelism().unwrap().get();
    assert!(
        t.num_cpus() >= online,
        "every CPU we may run on is in the topology"
    );
}

#[test]
fn topology_files() {
    let t = Topology::from_file(&fixture("shape_4c8t.topo")).unwrap();
    assert_eq!(
        cores(&t),
        vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]
    );
    let t = Topology::from_file(&fixture("explicit_amd.topo")).unwrap();
    assert_eq!(cores(&t), vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6]]);
    assert_eq!(t.packages, 2);
    assert_eq!(t.offline, vec![7]);
    assert_eq!((t.cores[3].package, t.cores[3].core_id), (1, 1));
    let t = Topology::parse_text("x", "packages=2 cores=2 threads=2 offline=7").unwrap();
    assert_eq!(cores(&t), vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3]]);
    assert_eq!(t.packages, 2);
}

#[test]
fn json_round_trip() {
    let t = Topology::from_sysfs(&fixture("sysfs_4c8t_offline")).unwrap();
    let j = serde_json::to_string(&t).unwrap();
    let back = Topology::parse_text("back.json", &j).unwrap();
    assert_eq!(back.cores, t.cores);
    assert_eq!(back.offline, t.offline);
}

#[test]
fn topology_file_errors_name_line_and_valid_choices() {
    let cases: &[(&str, &str)] = &[
        ("", "f:1: empty topology file"),
        (
            "cores=4 threads=two",
            "f:1: threads=`two`: expected a positive number",
        ),
        ("# c\ncores=0", "f:2: cores=`0`: expected a positive number"),
        (
            "cores=4 thread=2",
            "f:1: unknown key `thread` (valid: packages, cores, threads",
        ),
        ("threads=2", "f:1: missing cores=N"),
        (
            "cores=2 numbering=weird",
            "numbering=`weird`: valid are spread",
        ),
        (
            "cores=2\ncores=3",
            "f:2: second shape line (the first is line 1)",
        ),
        (
            "core 0,1\ncores=2",
            "f:1: `core` lines cannot be mixed with the shape line on line 2",
        ),
        ("core 0-1\ncore 1-2", "f:1: cpu1 belongs to two cores"),
        ("core 3-1", "f:1: range `3-1`"),
        (
            "core 0 pkg=1",
            "f:1: unknown word `pkg=1` (valid after the CPU list: package=N)",
        ),
        ("core\n", "f:1: cannot read `core`"),
        ("cpus 0-3", "f:1: cannot read `cpus 0-3`: expected"),
        (
            "core 0-1\noffline 1",
            "cpu1 is listed both online and offline",
        ),
        ("cores=1 offline=0", "f:1: no online CPUs"),
        ("{\"cores\": 3}", "f:1: not a topology JSON object"),
    ];
    for (text, want) in cases {
        let e = Topology::parse_text("f", text).unwrap_err().to_string();
        assert!(e.contains(want), "input {text:?}: got `{e}`, want `{want}`");
    }
    let e = Topology::from_file(&fixture("missing.topo"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.topo"), "{e}");
}
