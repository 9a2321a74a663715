//! The polling-aware balancer converges to the study's best placement from any
//! start, in a bounded number of steps, without ever revisiting a placement.

use std::collections::HashSet;

use iolab::placement::balance::{self, is_best, step};
use iolab::placement::{Policy, TaskKind, Topology, place};
use proptest::prelude::*;

fn run(topo: &Topology, start: Vec<u32>, kinds: &[TaskKind]) -> (Vec<u32>, usize) {
    let mut cur = start;
    let mut seen = HashSet::new();
    seen.insert(cur.clone());
    let mut steps = 0;
    loop {
        let m = step(topo, &cur, kinds).expect("valid input");
        if m.is_empty() {
            return (cur, steps);
        }
        for x in &m {
            assert_eq!(
                cur[x.task], x.from,
                "migration names the task's current CPU"
            );
            assert_ne!(x.from, x.to);
            cur[x.task] = x.to;
        }
        steps += 1;
        assert!(
            seen.insert(cur.clone()),
            "placement revisited after {steps} steps: oscillation ({cur:?})"
        );
        assert!(steps <= balance::step_bound(kinds.len()), "no convergence");
    }
}

fn p_per_core(topo: &Topology, cpus: &[u32], kinds: &[TaskKind]) -> Vec<usize> {
    let mut v = vec![0; topo.cores.len()];
    for (c, k) in cpus.iter().zip(kinds) {
        if *k == TaskKind::Poll {
            v[topo.core_of(*c).unwrap()] += 1;
        }
    }
    v
}

/// A homogeneous machine, tasks of random kinds, and a random start.
fn case() -> impl Strategy<Value = (Topology, Vec<TaskKind>, Vec<u32>)> {
    (1u32..=4, 1u32..=2, 0usize..=20).prop_flat_map(|(cores, threads, ntasks)| {
        let topo = Topology::parse_text("t", &format!("cores={cores} threads={threads}")).unwrap();
        let ncpu = (cores * threads) as usize;
        (
            Just(topo),
            proptest::collection::vec(
                prop_oneof![Just(TaskKind::Poll), Just(TaskKind::Compute)],
                ntasks,
            ),
            proptest::collection::vec(0..ncpu as u32, ntasks),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// The study's setup: 4 cores x 2 threads, 8 C + 8 P tasks, any start.
    #[test]
    fn study_setup_reaches_best(start in proptest::collection::vec(0u32..8, 16)) {
        let topo = Topology::parse_text("t", "packages=1 cores=4 threads=2").unwrap();
        let kinds: Vec<TaskKind> =
            (0..16).map(|i| if i < 8 { TaskKind::Compute } else { TaskKind::Poll }).collect();
        let (end, steps) = run(&topo, start, &kinds);
        prop_assert!(is_best(&topo, &end, &kinds), "{end:?}");
        prop_assert_eq!(p_per_core(&topo, &end, &kinds), vec![2, 2, 2, 2]);
        // Every core: its two P tasks on one logical CPU, its two C tasks on the other.
        for core in &topo.cores {
            let on = |cpu: u32| -> Vec<TaskKind> {
                (0..16).filter(|&t| end[t] == cpu).map(|t| kinds[t]).collect()
            };
            let (a, b) = (on(core.cpus[0]), on(core.cpus[1]));
            let pure = |v: &Vec<TaskKind>| v.len() == 2 && v.iter().all(|k| *k == v[0]);
            prop_assert!(pure(&a) && pure(&b) && a[0] != b[0], "core {:?}: {a:?} {b:?}", core.cpus);
        }
        // 16 tasks: at most one action per misplaced task plus the swaps.
        prop_assert!(steps <= 32, "{steps} steps");
    }

    #[test]
    fn any_homogeneous_machine_reaches_best((topo, kinds, start) in case()) {
        let (end, _) = run(&topo, start, &kinds);
        prop_assert!(is_best(&topo, &end, &kinds), "{end:?} kinds {kinds:?}");
        let pc = p_per_core(&topo, &end, &kinds);
        prop_assert!(pc.iter().max().unwrap_or(&0) - pc.iter().min().unwrap_or(&0) <= 1, "{pc:?}");
        // Settled means settled: another call proposes nothing.
        prop_assert!(step(&topo, &end, &kinds).unwrap().is_empty());
    }

    /// With offline siblings the cores are unequal; the balancer must still stop
    /// without oscillating, with even loads.
    #[test]
    fn unequal_cores_terminate((topo, kinds, start) in case(), off in 0u32..8) {
        let text = format!(
            "packages=1 cores={} threads=2 offline={}",
            topo.cores.len(), off.min(topo.cores.len() as u32 * 2 - 1)
        );
        let Ok(t2) = Topology::parse_text("t", &text) else { return Ok(()); };
        let cpus = t2.cpus();
        let start: Vec<u32> = start.iter().map(|&c| cpus[c as usize % cpus.len()]).collect();
        let (end, _) = run(&t2, start, &kinds);
        let mut load = vec![0; 64];
        for c in &end { load[*c as usize] += 1; }
        let l: Vec<i32> = cpus.iter().map(|&c| load[c as usize]).collect();
        prop_assert!(l.iter().max().unwrap() - l.iter().min().unwrap() <= 1);
    }
}

#[test]
fn balance_policy_equals_settled_balancer_and_settled_start_needs_nothing() {
    let topo = Topology::parse_text("t", "cores=4 threads=2").unwrap();
    let kinds: Vec<TaskKind> = (0..16)
        .map(|i| {
            if i % 3 == 0 {
                TaskKind::Poll
            } else {
                TaskKind::Compute
            }
        })
        .collect();
    let plan = place(Policy::Balance, &topo, &kinds).unwrap();
    let cpus = plan.single_cpus().unwrap();
    assert!(is_best(&topo, &cpus, &kinds));
    assert!(balance::balance(&topo, &cpus, &kinds).unwrap().is_empty());
}

#[test]
fn literal_study_rule_would_oscillate_ours_does_not() {
    // 3 P tasks on 2 cores (average 1.5): P_S = 2 > 1.5 > 1 = P_D. Moving one P
    // just swaps which core has two; the balancer must leave this alone.
    let topo = Topology::parse_text("t", "cores=2 threads=2").unwrap();
    let kinds = [
        TaskKind::Poll,
        TaskKind::Poll,
        TaskKind::Poll,
        TaskKind::Compute,
    ];
    // core 0 = cpus 0,2; core 1 = cpus 1,3.
    let start = [0, 0, 1, 3];
    let m = balance::balance(&topo, &start, &kinds).unwrap();
    assert!(
        m.iter()
            .all(|x| kinds[x.task] != TaskKind::Poll || topo.core_of(x.from) == topo.core_of(x.to)),
        "{m:?}"
    );
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let topo = Topology::parse_text("t", "cores=2 threads=1").unwrap();
    let e = step(&topo, &[0, 5], &[TaskKind::Poll, TaskKind::Compute]).unwrap_err();
    assert!(e.to_string().contains("cpu5"), "{e}");
    assert!(step(&topo, &[0], &[TaskKind::Poll, TaskKind::Compute]).is_err());
}
