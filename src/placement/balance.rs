//! Study 001's polling-aware balancer as a pure function: topology, where each task
//! runs now and which tasks are P tasks → the migrations to make.
//!
//! Rules (the study's, made precise where it is silent):
//! 1. **Load** (what Linux's balancer does anyway): when a logical CPU `d` runs at
//!    least two tasks fewer than some `s`, pull one task from `s`. Which kind is the
//!    study's rule: from a sibling on the same physical core, pull a P task when
//!    `P_d >= P_s` (toward colocate); from another core, pull a P task only when
//!    that evens out P tasks across physical cores (toward scatter); otherwise a C
//!    task. A sibling source is skipped while another source exists if colocation
//!    already holds there (`s` runs only P tasks and `P_d < P_s`, or `d` runs only P
//!    tasks and `P_s = 0`).
//! 2. **P tasks across cores**: the study pulls a P task from core S to core D when
//!    `P_D < P_T/N_P < P_S`. Taken literally that oscillates when `P_T/N_P` is not
//!    an integer (P_S = 2, P_D = 1, average 1.5: the move just swaps the roles), so a
//!    P task moves only when it brings both cores closer to their share, i.e. when
//!    `P_S - P_D >= 2` on equal cores. Each core's share is weighted by its online
//!    logical CPUs, which is the study's `P_T/N_P` when cores are equal. With loads
//!    already even, the move is a swap with a C task of D (or a plain move onto a
//!    CPU with one task fewer), so rule 1 is never undone.
//! 3. **Colocation inside a core**: a P task moves from sibling `s` to sibling `d`
//!    when `P_d >= P_s`, swapping with a C task of `d` (or onto a CPU with one task
//!    fewer) so loads stay even.
//!
//! Convergence: every action strictly lowers the potential
//! (Σ load², Σ per-core P deviation², −Σ per-CPU P²) in lexicographic order —
//! rule 1 lowers the first term, rule 2 the second without touching the first,
//! rule 3 the third without touching the others — so no state repeats (no
//! oscillation) and a fixed point is reached in finitely many steps. The fixed point
//! has even loads, P tasks within one of their share on every core, and at most one
//! logical CPU per core running both P and C tasks (the study's best placement).
//! tests/placement_balance.rs checks this with proptest.

use super::predictor::TaskKind;
use super::topology::{Topology, format_cpu_list};

/// Move `task` from CPU `from` to CPU `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Migration {
    pub task: usize,
    pub from: u32,
    pub to: u32,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BalanceError {
    #[error("{tasks} tasks but {kinds} task kinds")]
    Length { tasks: usize, kinds: usize },
    #[error("task {task} is on cpu{cpu}, which is not an online CPU of the topology ({online})")]
    UnknownCpu {
        task: usize,
        cpu: u32,
        online: String,
    },
}

/// Counts the rules work on, by CPU index (position in `Topology::cpus()`).
struct State {
    cpus: Vec<u32>,
    core: Vec<usize>,
    load: Vec<i64>,
    p: Vec<i64>,
    /// Per physical core: P tasks and online logical CPUs.
    core_p: Vec<i64>,
    core_n: Vec<i64>,
    p_total: i64,
}

impl State {
    fn new(topo: &Topology, assign: &[u32], kinds: &[TaskKind]) -> Result<State, BalanceError> {
        if assign.len() != kinds.len() {
            return Err(BalanceError::Length {
                tasks: assign.len(),
                kinds: kinds.len(),
            });
        }
        let cpus = topo.cpus();
        let core: Vec<usize> = cpus
            .iter()
            .map(|&c| topo.core_of(c).expect("cpu from topology"))
            .collect();
        let mut s = State {
            load: vec![0; cpus.len()],
            p: vec![0; cpus.len()],
            core_p: vec![0; topo.cores.len()],
            core_n: topo.cores.iter().map(|c| c.cpus.len() as i64).collect(),
            p_total: 0,
            cpus,
            core,
        };
        for (task, (&cpu, &kind)) in assign.iter().zip(kinds).enumerate() {
            let i = s.index(cpu).ok_or_else(|| BalanceError::UnknownCpu {
                task,
                cpu,
                online: format_cpu_list(&s.cpus),
            })?;
            s.load[i] += 1;
            if kind == TaskKind::Poll {
                s.p[i] += 1;
                s.core_p[s.core[i]] += 1;
                s.p_total += 1;
            }
        }
        Ok(s)
    }

    fn index(&self, cpu: u32) -> Option<usize> {
        self.cpus.binary_search(&cpu).ok()
    }

    fn c(&self, i: usize) -> i64 {
        self.load[i] - self.p[i]
    }

    /// Deviation of core k from its P share, scaled by the CPU count to stay integral.
    fn dev(&self, k: usize) -> i64 {
        self.core_p[k] * self.cpus.len() as i64 - self.p_total * self.core_n[k]
    }

    /// Moving one P task from core `a` to core `b` lowers Σ dev² (see module doc).
    fn p_move_evens(&self, a: usize, b: usize) -> bool {
        a != b && self.dev(a) - self.dev(b) > self.cpus.len() as i64
    }

    /// The study's "colocation already holds" test for a sibling source.
    fn colocated(&self, s: usize, d: usize) -> bool {
        (self.c(s) == 0 && self.p[d] < self.p[s]) || (self.c(d) == 0 && self.p[s] == 0)
    }

    /// The next action as (cpu index from, cpu index to, kind) moves.
    fn next(&self) -> Option<Vec<(usize, usize, TaskKind)>> {
        use TaskKind::{Compute as C, Poll as P};
        let n = self.cpus.len();
        // Rule 1: the least loaded CPU pulls from one with two or more tasks more.
        let d = (0..n).min_by_key(|&i| (self.load[i], i))?;
        let mut sources: Vec<usize> = (0..n)
            .filter(|&s| self.load[s] >= self.load[d] + 2)
            .collect();
        if !sources.is_empty() {
            sources.sort_by_key(|&s| {
                let skip = self.core[s] == self.core[d] && self.colocated(s, d);
                (skip, -self.load[s], s)
            });
            let s = sources[0];
            let want_p = if self.core[s] == self.core[d] {
                self.p[d] >= self.p[s]
            } else {
                self.p_move_evens(self.core[s], self.core[d])
            };
            let kind = if (want_p && self.p[s] > 0) || self.c(s) == 0 {
                P
            } else {
                C
            };
            return Some(vec![(s, d, kind)]);
        }
        // Rule 2: even out P tasks across physical cores without unbalancing loads.
        let mut best: Option<(i64, usize, usize)> = None;
        for s in 0..n {
            if self.p[s] == 0 {
                continue;
            }
            for d in 0..n {
                let (ks, kd) = (self.core[s], self.core[d]);
                if !self.p_move_evens(ks, kd) {
                    continue;
                }
                if self.c(d) > 0 || self.load[s] == self.load[d] + 1 {
                    let gain = self.dev(ks) - self.dev(kd);
                    if best.is_none_or(|(g, _, _)| gain > g) {
                        best = Some((gain, s, d));
                    }
                }
            }
        }
        if let Some((_, s, d)) = best {
            return Some(self.p_action(s, d));
        }
        // Rule 3: gather a core's P tasks on one logical CPU.
        for s in 0..n {
            if self.p[s] == 0 {
                continue;
            }
            for d in 0..n {
                if d == s || self.core[d] != self.core[s] || self.p[d] < self.p[s] {
                    continue;
                }
                if self.c(d) > 0 || self.load[s] == self.load[d] + 1 {
                    return Some(self.p_action(s, d));
                }
            }
        }
        None
    }

    /// Move a P task s→d, swapping a C task back when d has one (keeps loads).
    fn p_action(&self, s: usize, d: usize) -> Vec<(usize, usize, TaskKind)> {
        if self.c(d) > 0 {
            vec![(s, d, TaskKind::Poll), (d, s, TaskKind::Compute)]
        } else {
            vec![(s, d, TaskKind::Poll)]
        }
    }
}

/// The next balancing action (one migration, or two forming a swap), or an empty
/// list when the placement is settled. Pure.
pub fn step(
    topo: &Topology,
    assign: &[u32],
    kinds: &[TaskKind],
) -> Result<Vec<Migration>, BalanceError> {
    let st = State::new(topo, assign, kinds)?;
    let Some(moves) = st.next() else {
        return Ok(Vec::new());
    };
    let mut cur = assign.to_vec();
    let mut out = Vec::with_capacity(2);
    for (from, to, kind) in moves {
        let (from_cpu, to_cpu) = (st.cpus[from], st.cpus[to]);
        // The lowest-numbered task of that kind on `from`: deterministic, so a
        // periodic caller and a test see the same choice.
        let task = (0..cur.len())
            .find(|&t| cur[t] == from_cpu && kinds[t] == kind)
            .expect("state counts say such a task exists");
        cur[task] = to_cpu;
        out.push(Migration {
            task,
            from: from_cpu,
            to: to_cpu,
        });
    }
    Ok(out)
}

/// Upper bound on balancing actions from any start, from the potential: Σ load²
/// starts below tasks² and each rule-1 action lowers it; the other two terms are
/// bounded by tasks² each between rule-1 actions. Loose; used as a safety stop.
pub fn step_bound(tasks: usize) -> usize {
    let t = tasks + 1;
    t * t * t * 4
}

/// All migrations, in order, from `assign` to the balancer's fixed point.
pub fn balance(
    topo: &Topology,
    assign: &[u32],
    kinds: &[TaskKind],
) -> Result<Vec<Migration>, BalanceError> {
    let mut cur = assign.to_vec();
    let mut all = Vec::new();
    for _ in 0..step_bound(assign.len()) {
        let m = step(topo, &cur, kinds)?;
        if m.is_empty() {
            break;
        }
        for x in &m {
            cur[x.task] = x.to;
        }
        all.extend(m);
    }
    Ok(all)
}

/// Where the balancer settles from `start` (which must be valid for `topo`).
pub fn settle(topo: &Topology, start: &[u32], kinds: &[TaskKind]) -> Vec<u32> {
    let mut cur = start.to_vec();
    if let Ok(ms) = balance(topo, start, kinds) {
        for m in ms {
            cur[m.task] = m.to;
        }
    }
    cur
}

/// The study's best placement: even loads (per-CPU task counts within one), P tasks
/// even across physical cores (no P move would bring two cores closer to their
/// share), and inside each core at most one logical CPU mixing P and C tasks.
pub fn is_best(topo: &Topology, assign: &[u32], kinds: &[TaskKind]) -> bool {
    let Ok(st) = State::new(topo, assign, kinds) else {
        return false;
    };
    let n = st.cpus.len();
    let (lo, hi) = (st.load.iter().min(), st.load.iter().max());
    if hi.zip(lo).is_some_and(|(h, l)| h - l > 1) {
        return false;
    }
    let k = topo.cores.len();
    if (0..k).any(|a| (0..k).any(|b| st.p_move_evens(a, b))) {
        return false;
    }
    (0..k).all(|core| {
        (0..n)
            .filter(|&i| st.core[i] == core && st.p[i] > 0 && st.c(i) > 0)
            .count()
            <= 1
    })
}
