//! The engine's side of `numa_cpu_nodes` / `numa_mem_policy` (parsed and
//! checked against the machine in `job::numa`): the worker's CPUs come from the
//! nodes (`setup`), and the job's buffers are first touched under its memory
//! policy here, on the thread that builds the worker, before the worker
//! thread itself enters the policy (`control::WorkerControl::enter_mem_policy`).

use std::sync::Once;

use crate::engine::error::{EngineError, Result, label};
use crate::job::JobSpec;
use crate::sys::numa::PolicyScope;

/// The calling thread under `job`'s memory policy until the scope is dropped
/// (`None` when the job sets none).
pub fn buffer_policy(job: &JobSpec) -> Result<Option<PolicyScope>> {
    let numa = &job.control.numa;
    if numa.assumed_one_node {
        static NOTE: Once = Once::new();
        NOTE.call_once(|| {
            eprintln!(
                "iolab: warning: {} is missing (a kernel without NUMA): numa_cpu_nodes and \
                 numa_mem_policy take the machine as one node 0 holding every CPU",
                crate::sys::numa::NODE_DIR
            )
        });
    }
    let Some(m) = &numa.mem else {
        return Ok(None);
    };
    PolicyScope::enter(m.mode.mpol(), &m.nodes)
        .map(Some)
        .map_err(|source| EngineError::MemPolicy {
            job: label(job),
            policy: m.to_string(),
            source,
        })
}
