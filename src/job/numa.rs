//! fio's `numa_cpu_nodes` and `numa_mem_policy`, parsed and checked against the
//! nodes this machine has (`sys::numa`); the engine pins the job's worker to
//! the nodes' CPUs and sets its memory policy before the buffers are touched.
//! (The value parsers are `job::control_opts`.)

use crate::sys::numa;

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
