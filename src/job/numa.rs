//! fio's `numa_cpu_nodes` and `numa_mem_policy`, parsed and checked against the
//! nodes this machine has (`sys::numa`); the engine pins the job's worker to
//! the nodes' CPUs and sets its memory policy before the buffers are touched.

use super::draft::Ctx;
use super::error::JobError;
use crate::sys::numa::{self, Nodes};

/// How the job's memory is placed (`numa_mem_policy=MODE[:NODES]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MemMode {
    /// The system default (allocate on the node of the CPU that touches it).
    Default,
    /// One preferred node, others when it is full.
    Prefer,
    /// Only these nodes.
    Bind,
    /// Pages spread round-robin over these nodes.
    Interleave,
    /// The node of the CPU that touches the page.
    Local,
}

impl MemMode {
    /// The kernel's `MPOL_*` value.
    pub fn mpol(self) -> i32 {
        match self {
            MemMode::Default => numa::MPOL_DEFAULT,
            MemMode::Prefer => numa::MPOL_PREFERRED,
            MemMode::Bind => numa::MPOL_BIND,
            MemMode::Interleave => numa::MPOL_INTERLEAVE,
            MemMode::Local => numa::MPOL_LOCAL,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MemPolicy {
    pub mode: MemMode,
    pub nodes: Vec<u32>,
}

impl std::fmt::Display for MemPolicy {
    /// fio's spelling: `bind:0-1`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mode = match self.mode {
            MemMode::Default => "default",
            MemMode::Prefer => "prefer",
            MemMode::Bind => "bind",
            MemMode::Interleave => "interleave",
            MemMode::Local => "local",
        };
        if self.nodes.is_empty() {
            f.write_str(mode)
        } else {
            let list = crate::placement::topology::format_cpu_list(&self.nodes);
            write!(f, "{mode}:{list}")
        }
    }
}

/// A job's NUMA options.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NumaSpec {
    /// `numa_cpu_nodes`: the nodes ...
    pub cpu_nodes: Vec<u32>,
    /// ... and their CPUs, read when the option was parsed.
    pub cpus: Vec<u32>,
    pub mem: Option<MemPolicy>,
    /// The machine shows no NUMA nodes: it was taken as one node 0.
    pub assumed_one_node: bool,
}

pub(crate) const MEM_VALID: &str = "default, local, prefer:NODE, bind:NODES or interleave:NODES \
     (NODES a list such as 0, 0-1, 0,2 or all)";
const NODES_VALID: &str = "a list of NUMA nodes such as 0, 0-1, 0,2 or all";

/// A node list (`0-1,3`, `all`), each node one the machine has.
fn node_list(c: &Ctx, list: &str, nodes: &Nodes) -> Result<Vec<u32>, JobError> {
    if list.trim() == "all" {
        return Ok(nodes.ids());
    }
    let v = crate::placement::topology::parse_cpu_list(list)
        .ok()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| c.bad(NODES_VALID))?;
    if let Some(bad) = v.iter().find(|n| !nodes.has(**n)) {
        let have = crate::placement::topology::format_cpu_list(&nodes.ids());
        let source = if nodes.from_sysfs {
            format!("{} lists node {have}", numa::NODE_DIR)
        } else {
            format!(
                "{} is missing (a kernel without NUMA), so iolab takes the machine as one node 0",
                numa::NODE_DIR
            )
        };
        return Err(c.bad(format!(
            "nodes this machine has ({have}): node {bad} does not exist here ({source}); iolab \
             does not run a job on nodes the machine lacks"
        )));
    }
    Ok(v)
}

/// `numa_cpu_nodes=NODES` against the machine's nodes.
pub(crate) fn cpu_nodes(c: &Ctx, spec: &mut NumaSpec, nodes: &Nodes) -> Result<(), JobError> {
    let list = node_list(c, c.value, nodes)?;
    spec.cpus = nodes.cpus_of(&list);
    if spec.cpus.is_empty() {
        return Err(c.bad(format!(
            "nodes with CPUs: node {} has none (a memory-only node); use it in numa_mem_policy",
            crate::placement::topology::format_cpu_list(&list)
        )));
    }
    spec.cpu_nodes = list;
    spec.assumed_one_node |= !nodes.from_sysfs;
    Ok(())
}

/// `numa_mem_policy=MODE[:NODES]` against the machine's nodes.
pub(crate) fn mem_policy(c: &Ctx, spec: &mut NumaSpec, nodes: &Nodes) -> Result<(), JobError> {
    spec.assumed_one_node |= !nodes.from_sysfs;
    let (mode, list) = match c.value.split_once(':') {
        Some((m, l)) => (m.trim(), Some(l)),
        None => (c.value.trim(), None),
    };
    let mode = match mode {
        "default" => MemMode::Default,
        "prefer" => MemMode::Prefer,
        "bind" => MemMode::Bind,
        "interleave" => MemMode::Interleave,
        "local" => MemMode::Local,
        _ => return Err(c.bad(MEM_VALID)),
    };
    let nodes = match (mode, list) {
        (MemMode::Default | MemMode::Local, None) => Vec::new(),
        (MemMode::Default | MemMode::Local, Some(_)) => {
            return Err(c.bad(format!("{MEM_VALID}; default and local take no node list")));
        }
        (_, None) => {
            return Err(c.bad(format!("{MEM_VALID}; this mode needs its nodes after ':'")));
        }
        (_, Some(l)) => {
            let v = node_list(c, l, nodes)?;
            if mode == MemMode::Prefer && v.len() != 1 {
                return Err(c.bad(format!("{MEM_VALID}; prefer takes exactly one node")));
            }
            v
        }
    };
    spec.mem = Some(MemPolicy { mode, nodes });
    Ok(())
}
