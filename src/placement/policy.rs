//! The placements of study 001, as pure functions of topology and task kinds.
//!
//! A plan gives each task the set of logical CPUs it may run on:
//! - `free`: every online CPU (Linux's load balancer decides);
//! - `bunch`: tasks of the same kind packed onto the same physical cores, C tasks
//!   first (the study's worst case); the task may run on any sibling of its core;
//! - `scatter`: C tasks round-robin over physical cores, P tasks continuing the
//!   round so every core gets a share of both; any sibling of the core;
//! - `colocate` (SMT only): scatter across cores, and inside a core all its P tasks
//!   on one logical CPU while the C tasks use the siblings;
//! - `spread` (SMT only): scatter across cores, and inside a core P and C tasks
//!   interleaved over the logical CPUs so every sibling runs a P task;
//! - `balance`: where [`super::balance`]'s migration rules settle, starting from a
//!   round-robin placement.
//!
//! Bunch and scatter decide only the physical core, as in the study's cross-core
//! experiment; colocate and spread also decide the logical CPU.

use std::fmt;

use super::balance;
use super::predictor::TaskKind;
use super::topology::Topology;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Free,
    Bunch,
    Scatter,
    Colocate,
    Spread,
    Balance,
}

impl Policy {
    pub const ALL: [Policy; 6] = [
        Policy::Free,
        Policy::Bunch,
        Policy::Scatter,
        Policy::Colocate,
        Policy::Spread,
        Policy::Balance,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Policy::Free => "free",
            Policy::Bunch => "bunch",
            Policy::Scatter => "scatter",
            Policy::Colocate => "colocate",
            Policy::Spread => "spread",
            Policy::Balance => "balance",
        }
    }

    pub fn parse(s: &str) -> Result<Policy, UnknownPolicy> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownPolicy(s.to_string()))
    }

    /// Whether the policy only makes sense with SMT siblings.
    pub fn needs_smt(self) -> bool {
        matches!(self, Policy::Colocate | Policy::Spread)
    }

    /// Why this policy cannot run on `topo`, if it cannot.
    pub fn refusal(self, topo: &Topology) -> Option<String> {
        (self.needs_smt() && !topo.has_smt()).then(|| {
            format!(
                "placement `{}` arranges tasks across the SMT siblings of a physical core, \
                 but {} has one logical CPU per core ({} cores, no SMT); run it on a machine \
                 with SMT, or give a what-if topology with --topology (e.g. a file with \
                 `packages=1 cores=4 threads=2`)",
                self.name(),
                topo.source,
                topo.cores.len()
            )
        })
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A placement name that is none of [`Policy::ALL`].
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("unknown placement `{0}` (valid: free, bunch, scatter, colocate, spread, balance)")]
pub struct UnknownPolicy(pub String);

impl std::str::FromStr for Policy {
    type Err = UnknownPolicy;
    fn from_str(s: &str) -> Result<Self, UnknownPolicy> {
        Policy::parse(s)
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    #[error("{0}")]
    NeedsSmt(String),
}

/// Allowed CPUs per task (index = task index), each list ascending.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Plan {
    pub policy: Policy,
    pub cpus: Vec<Vec<u32>>,
}

impl Plan {
    /// Tasks pinned to exactly one CPU each give that CPU; otherwise None.
    pub fn single_cpus(&self) -> Option<Vec<u32>> {
        self.cpus
            .iter()
            .map(|c| (c.len() == 1).then(|| c[0]))
            .collect()
    }
}

/// Indices of tasks of each kind, in task order.
fn split(kinds: &[TaskKind]) -> (Vec<usize>, Vec<usize>) {
    let c = (0..kinds.len())
        .filter(|&i| kinds[i] == TaskKind::Compute)
        .collect();
    let p = (0..kinds.len())
        .filter(|&i| kinds[i] == TaskKind::Poll)
        .collect();
    (c, p)
}

/// Physical core per task for scatter-style policies: C tasks round-robin over the
/// cores, P tasks continuing where the C tasks stopped so per-core totals stay even.
fn scatter_cores(topo: &Topology, kinds: &[TaskKind]) -> Vec<usize> {
    let n = topo.cores.len();
    let (c, p) = split(kinds);
    let mut core = vec![0; kinds.len()];
    for (j, &t) in c.iter().chain(p.iter()).enumerate() {
        core[t] = j % n;
    }
    core
}

/// Compute the plan for `policy`. Pure: reads nothing but its arguments.
pub fn place(policy: Policy, topo: &Topology, kinds: &[TaskKind]) -> Result<Plan, PolicyError> {
    if let Some(why) = policy.refusal(topo) {
        return Err(PolicyError::NeedsSmt(why));
    }
    let all = topo.cpus();
    let cpus: Vec<Vec<u32>> = match policy {
        Policy::Free => vec![all; kinds.len()],
        Policy::Bunch => {
            // Core-major CPU order: filling it in sequence fills one core's siblings
            // before the next core.
            let order: Vec<u32> = topo.cores.iter().flat_map(|c| c.cpus.clone()).collect();
            let (c, p) = split(kinds);
            let n = kinds.len();
            let mut out = vec![Vec::new(); n];
            for (j, &t) in c.iter().chain(p.iter()).enumerate() {
                let idx = if n <= order.len() {
                    j
                } else {
                    j * order.len() / n
                };
                let core = topo.core_of(order[idx]).expect("cpu from topology");
                out[t] = topo.cores[core].cpus.clone();
            }
            out
        }
        Policy::Scatter => scatter_cores(topo, kinds)
            .into_iter()
            .map(|k| topo.cores[k].cpus.clone())
            .collect(),
        Policy::Colocate | Policy::Spread => {
            let core = scatter_cores(topo, kinds);
            let mut out = vec![Vec::new(); kinds.len()];
            for (k, c) in topo.cores.iter().enumerate() {
                let here: Vec<usize> = (0..kinds.len()).filter(|&t| core[t] == k).collect();
                let (mut nc, mut np) = (0usize, 0usize);
                let t_count = c.cpus.len();
                for &t in &here {
                    let cpu = match (policy, kinds[t]) {
                        // The last sibling takes every P task; C tasks share the
                        // others (or that one too, on a core with a single online CPU).
                        (Policy::Colocate, TaskKind::Poll) => c.cpus[t_count - 1],
                        (Policy::Colocate, TaskKind::Compute) => {
                            let others = t_count.saturating_sub(1).max(1);
                            nc += 1;
                            c.cpus[(nc - 1) % others]
                        }
                        (_, TaskKind::Poll) => {
                            np += 1;
                            c.cpus[(np - 1) % t_count]
                        }
                        (_, TaskKind::Compute) => {
                            nc += 1;
                            c.cpus[(nc - 1) % t_count]
                        }
                    };
                    out[t] = vec![cpu];
                }
            }
            out
        }
        Policy::Balance => {
            let start: Vec<u32> = (0..kinds.len()).map(|i| all[i % all.len()]).collect();
            let end = balance::settle(topo, &start, kinds);
            end.into_iter().map(|c| vec![c]).collect()
        }
    };
    Ok(Plan { policy, cpus })
}

#[cfg(test)]
mod tests {
    use super::*;
    use TaskKind::{Compute as C, Poll as P};

    fn topo(s: &str) -> Topology {
        Topology::parse_text("t", s).unwrap()
    }

    #[test]
    fn cross_core_study_setup_on_two_smt_cores() {
        // Two cores, siblings (0,2) and (1,3); 2 C + 2 P as in the study's 2.1.
        let t = topo("cores=2 threads=2");
        let kinds = [C, C, P, P];
        let b = place(Policy::Bunch, &t, &kinds).unwrap();
        assert_eq!(b.cpus, vec![vec![0, 2], vec![0, 2], vec![1, 3], vec![1, 3]]);
        let s = place(Policy::Scatter, &t, &kinds).unwrap();
        assert_eq!(s.cpus, vec![vec![0, 2], vec![1, 3], vec![0, 2], vec![1, 3]]);
        let f = place(Policy::Free, &t, &kinds).unwrap();
        assert!(f.cpus.iter().all(|c| c == &vec![0, 1, 2, 3]));
    }

    #[test]
    fn in_core_study_setup_on_one_smt_core() {
        let t = topo("cores=1 threads=2");
        let kinds = [C, C, P, P];
        let c = place(Policy::Colocate, &t, &kinds)
            .unwrap()
            .single_cpus()
            .unwrap();
        assert_eq!(c, vec![0, 0, 1, 1], "P tasks share one logical CPU");
        let s = place(Policy::Spread, &t, &kinds)
            .unwrap()
            .single_cpus()
            .unwrap();
        assert_eq!(s, vec![0, 1, 0, 1], "each sibling runs one C and one P");
    }

    #[test]
    fn no_smt_refuses_in_core_policies_with_reason() {
        let t = topo("cores=2 threads=1");
        for p in [Policy::Colocate, Policy::Spread] {
            let e = place(p, &t, &[C, P]).unwrap_err().to_string();
            assert!(e.contains("no SMT") && e.contains(p.name()), "{e}");
        }
        let b = place(Policy::Bunch, &t, &[C, C, P, P]).unwrap();
        assert_eq!(b.single_cpus().unwrap(), vec![0, 0, 1, 1]);
        let s = place(Policy::Scatter, &t, &[C, C, P, P]).unwrap();
        assert_eq!(s.single_cpus().unwrap(), vec![0, 1, 0, 1]);
    }

    #[test]
    fn balance_plan_is_the_studys_best_on_4x2() {
        let t = topo("cores=4 threads=2");
        let kinds: Vec<TaskKind> = (0..16).map(|i| if i % 2 == 0 { C } else { P }).collect();
        let cpus = place(Policy::Balance, &t, &kinds)
            .unwrap()
            .single_cpus()
            .unwrap();
        assert!(balance::is_best(&t, &cpus, &kinds), "{cpus:?}");
    }

    #[test]
    fn parse_names() {
        assert_eq!(Policy::parse("scatter"), Ok(Policy::Scatter));
        assert!(
            Policy::parse("scater")
                .unwrap_err()
                .to_string()
                .contains("valid")
        );
    }
}
