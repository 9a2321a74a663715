//! Value parsers and cross-option checks of the job-control and sync options
//! (their types: `job::control`).

use std::time::Duration;

use super::control::{ExitWhat, IgnoreError};
use super::draft::{Ctx, Draft};
use super::errno;
use super::error::JobError;
use super::parse;
use super::spec::{Engine, JobSpec};
use super::units::{self, TimeUnit};
use crate::sys::numa::Nodes;

pub(crate) fn startdelay(c: &Ctx) -> Result<[Duration; 2], JobError> {
    const VALID: &str = "a time such as 10 (seconds) or 500ms, or a range such as 1s-5s";
    let parts: Vec<&str> = c.value.split(['-', ':']).map(str::trim).collect();
    let t = |s: &str| units::parse_time(s, TimeUnit::Seconds, false).map_err(|e| c.bad(e));
    match parts.as_slice() {
        [one] => {
            let d = t(one)?;
            Ok([d, d])
        }
        [a, b] if !a.is_empty() && !b.is_empty() => {
            let (a, b) = (t(a)?, t(b)?);
            Ok([a.min(b), a.max(b)])
        }
        _ => Err(c.bad(VALID)),
    }
}

pub(crate) const RANGE_VALID: &str = "FLAGS:N, FLAGS one or more of wait_before, write, \
     wait_after joined by ',', N a count of writes, e.g. sync_file_range=wait_before,write:8";

/// `sync_file_range=wait_before,write:8` -> (flags, every).
pub(crate) fn sync_file_range(c: &Ctx) -> Result<(u32, u32), JobError> {
    let Some((flags, n)) = c.value.rsplit_once(':') else {
        return Err(c.bad(RANGE_VALID));
    };
    let mut bits = 0u32;
    for f in flags.split(',').map(str::trim) {
        bits |= match f {
            "wait_before" => libc::SYNC_FILE_RANGE_WAIT_BEFORE,
            "write" => libc::SYNC_FILE_RANGE_WRITE,
            "wait_after" => libc::SYNC_FILE_RANGE_WAIT_AFTER,
            _ => return Err(c.bad(RANGE_VALID)),
        };
    }
    match n.trim().parse::<u32>() {
        Ok(every) if every >= 1 => Ok((bits, every)),
        _ => Err(c.bad(RANGE_VALID)),
    }
}

pub(crate) fn exit_what(c: &Ctx) -> Result<ExitWhat, JobError> {
    Ok(match c.value.to_ascii_lowercase().as_str() {
        "group" => ExitWhat::Group,
        "stonewall" => ExitWhat::Stonewall,
        "all" => ExitWhat::All,
        _ => return Err(c.bad(ExitWhat::VALID)),
    })
}

pub(crate) const IGNORE_VALID: &str = "'READ,WRITE,VERIFY' lists of errno names or numbers, each \
     list ':'-separated, e.g. ignore_error=EAGAIN,ENOSPC:122 (iolab takes no VERIFY list: a \
     mismatch is EILSEQ; use continue_on_error=verify)";

pub(crate) fn ignore_error(c: &Ctx) -> Result<IgnoreError, JobError> {
    let lists: Vec<&str> = c.value.split(',').map(str::trim).collect();
    if lists.len() > 3 || lists.get(2).is_some_and(|v| !v.is_empty()) {
        return Err(c.bad(IGNORE_VALID));
    }
    let mut out = IgnoreError::default();
    for (slot, list) in out.lists.iter_mut().zip(&lists) {
        if list.is_empty() {
            continue;
        }
        let mut v = Vec::new();
        for e in list.split(':').map(str::trim) {
            match errno::parse(e) {
                Some(n) => v.push(n),
                None => {
                    return Err(c.bad(format!(
                        "{IGNORE_VALID}; '{e}' is not an errno name (such as ENOSPC) or number"
                    )));
                }
            }
        }
        *slot = Some(v);
    }
    if out.lists.iter().all(Option::is_none) {
        return Err(c.bad(IGNORE_VALID));
    }
    Ok(out)
}

pub(crate) fn cmdprio_field(
    c: &Ctx,
    current: [u64; 2],
    min: u64,
    max: u64,
) -> Result<[u64; 2], JobError> {
    parse::per_dir(c, current, |p| units::parse_int(p, c.kb, min, max))
}

/// `wait_for=NAME` names one earlier job (fio's rules: no forward reference,
/// not itself, a unique name). `at`: where the option was written.
pub(crate) fn check_wait_for(
    job: &JobSpec,
    at: Option<&str>,
    earlier: &[JobSpec],
) -> Result<(), JobError> {
    let Some(name) = &job.control.wait_for else {
        return Ok(());
    };
    let bad = |expected: String| JobError::BadValue {
        at: at.unwrap_or(&job.origin.0).to_string(),
        option: "wait_for".into(),
        value: name.clone(),
        expected,
    };
    let mut names: Vec<&str> = earlier.iter().map(|j| j.name.as_str()).collect();
    names.dedup();
    if *name == job.name {
        return Err(bad(format!(
            "the name of an earlier job ({}); a job cannot wait for itself",
            list_or_none(&names)
        )));
    }
    match earlier.iter().filter(|j| j.name == *name).count() {
        1 => Ok(()),
        0 => Err(bad(format!(
            "the name of a job defined before this one ({}); a job waits only for earlier jobs",
            list_or_none(&names)
        ))),
        n => Err(bad(format!(
            "the name of one earlier job: {n} earlier jobs are called '{name}'; give the waitee \
             a unique name"
        ))),
    }
}

fn list_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "there is none before it".into()
    } else {
        format!("valid: {}", names.join(", "))
    }
}

// numa_cpu_nodes / numa_mem_policy (types: `job::numa`).

pub(crate) const MEM_VALID: &str = "default, local, prefer:NODE, bind:NODES or interleave:NODES \
     (NODES a list such as 0, 0-1, 0,2 or all)";
const NODES_VALID: &str = "a list of NUMA nodes such as 0, 0-1, 0,2 or all";

/// A node list (`0-1,3`, `all`), each node one the machine has.
fn node_list(c: &Ctx, list: &str, nodes: &Nodes) -> Result<Vec<u32>, JobError> {
    if list.trim() == "all" {
        return Ok(nodes.ids());
    }
    let v = crate::sys::numa::parse_list(list)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| c.bad(NODES_VALID))?;
    if let Some(bad) = v.iter().find(|n| !nodes.has(**n)) {
        let have = crate::placement::topology::format_cpu_list(&nodes.ids());
        let source = if nodes.from_sysfs {
            format!("{} lists node {have}", crate::sys::numa::NODE_DIR)
        } else {
            format!(
                "{} is missing (a kernel without NUMA), so iolab takes the machine as one node 0",
                crate::sys::numa::NODE_DIR
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
pub(crate) fn numa_cpu_nodes(
    c: &Ctx,
    spec: &mut super::numa::NumaSpec,
    nodes: &Nodes,
) -> Result<(), JobError> {
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
pub(crate) fn numa_mem_policy(
    c: &Ctx,
    spec: &mut super::numa::NumaSpec,
    nodes: &Nodes,
) -> Result<(), JobError> {
    spec.assumed_one_node |= !nodes.from_sysfs;
    let (mode, list) = match c.value.split_once(':') {
        Some((m, l)) => (m.trim(), Some(l)),
        None => (c.value.trim(), None),
    };
    let mode = match mode {
        "default" => super::numa::MemMode::Default,
        "prefer" => super::numa::MemMode::Prefer,
        "bind" => super::numa::MemMode::Bind,
        "interleave" => super::numa::MemMode::Interleave,
        "local" => super::numa::MemMode::Local,
        _ => return Err(c.bad(MEM_VALID)),
    };
    let nodes = match (mode, list) {
        (super::numa::MemMode::Default | super::numa::MemMode::Local, None) => Vec::new(),
        (super::numa::MemMode::Default | super::numa::MemMode::Local, Some(_)) => {
            return Err(c.bad(format!("{MEM_VALID}; default and local take no node list")));
        }
        (_, None) => {
            return Err(c.bad(format!("{MEM_VALID}; this mode needs its nodes after ':'")));
        }
        (_, Some(l)) => {
            let v = node_list(c, l, nodes)?;
            if mode == super::numa::MemMode::Prefer && v.len() != 1 {
                return Err(c.bad(format!("{MEM_VALID}; prefer takes exactly one node")));
            }
            v
        }
    };
    spec.mem = Some(super::numa::MemPolicy { mode, nodes });
    Ok(())
}

impl Draft {
    fn control_set_at(&self, name: &str) -> Option<&str> {
        self.set
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, at)| at.as_str())
    }

    /// Rules between the options of this module and the rest of the job, and
    /// what they derive.
    pub(crate) fn check_control(&mut self, section_at: &str) -> Result<(), JobError> {
        self.check_syncs(section_at)?;
        self.note_numa_over_cpus();
        self.check_exit_and_cmdprio(section_at)?;
        self.note_unused_ignore_error();
        Ok(())
    }

    /// The periodic syncs and what each engine can sync. `fsync=N`,
    /// `fdatasync=N` and `sync_file_range=F:N` go together, each on its own
    /// count of writes, as in fio (`workload::generator`).
    fn check_syncs(&mut self, section_at: &str) -> Result<(), JobError> {
        let conflict = |at: Option<&str>, job: &str, problem: String| JobError::Conflict {
            at: at.unwrap_or(section_at).to_string(),
            job: job.to_string(),
            problem,
        };
        let name = self.spec.name.clone();
        if let Some(at) = self.control_set_at("sync_file_range")
            && self.spec.syncs.range_every > 0
            && !matches!(
                self.spec.ioengine,
                Engine::Psync
                    | Engine::Pvsync2
                    | Engine::Sync
                    | Engine::Vsync
                    | Engine::Pvsync
                    | Engine::Libaio
                    | Engine::IoUring
            )
        {
            return Err(conflict(
                Some(at),
                &name,
                format!(
                    "sync_file_range has no ioengine={} command: use a synchronous engine \
                     (psync, sync, ...), libaio or io_uring (IORING_OP_SYNC_FILE_RANGE)",
                    self.spec.ioengine.fio_name()
                ),
            ));
        }
        let s = &self.spec;
        if s.ioengine == Engine::Null {
            for opt in ["end_fsync", "fsync_on_close"] {
                if let Some(at) = self.control_set_at(opt) {
                    return Err(conflict(
                        Some(at),
                        &name,
                        format!(
                            "{opt} syncs the job's file, and ioengine=null has none: use a file \
                             with ioengine=psync, io_uring or another file engine"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// fio applies `numa_cpu_nodes` over `cpus_allowed`/`cpumask`: noted.
    fn note_numa_over_cpus(&mut self) {
        if self.control_set_at("numa_cpu_nodes").is_some()
            && let Some(o) = ["cpus_allowed", "cpumask"]
                .into_iter()
                .find(|o| self.control_set_at(o).is_some())
        {
            // fio applies the CPU mask, then the node mask over it: the
            // nodes' CPUs are where the job runs (engine::setup::worker_cpus).
            self.note(
                "numa_cpu_nodes",
                format!(
                    "it overrides {o}: the job runs on the CPUs of its nodes, and {o} has no \
                     effect (as in fio, which applies the node mask last)"
                ),
            );
        }
    }

    /// `exit_what` needs `exitall`; the per-request priorities need one chooser
    /// and an engine whose requests carry a priority.
    fn check_exit_and_cmdprio(&mut self, section_at: &str) -> Result<(), JobError> {
        let conflict = |at: Option<&str>, job: &str, problem: String| JobError::Conflict {
            at: at.unwrap_or(section_at).to_string(),
            job: job.to_string(),
            problem,
        };
        let name = self.spec.name.clone();
        let s = &self.spec;
        if let Some(at) = self.control_set_at("exit_what")
            && !s.control.exitall
        {
            return Err(conflict(
                Some(at),
                &name,
                "exit_what says which jobs exitall stops, and this job does not set exitall: \
                 add exitall=1 or drop exit_what"
                    .into(),
            ));
        }
        let cp = &s.control.cmdprio;
        let has_split = cp.bssplit.iter().any(|l| !l.is_empty());
        let has_perc = cp.percentage.iter().any(|&p| p > 0);
        if has_split && has_perc {
            return Err(conflict(
                self.control_set_at("cmdprio_bssplit"),
                &name,
                "cmdprio_percentage and cmdprio_bssplit both choose which requests carry the \
                 command priority (fio: mutually exclusive): keep one of them"
                    .into(),
            ));
        }
        if !cp.enabled() && !has_split {
            for opt in ["cmdprio_class", "cmdprio"] {
                if let Some(at) = self.control_set_at(opt) {
                    return Err(conflict(
                        Some(at),
                        &name,
                        format!(
                            "{opt} gives the priority of the share of requests \
                             cmdprio_percentage chooses: set cmdprio_percentage=1-100 (or \
                             cmdprio_bssplit) too"
                        ),
                    ));
                }
            }
        } else if cp.enabled() && !matches!(s.ioengine, Engine::IoUring | Engine::Libaio) {
            let opt = if has_split {
                "cmdprio_bssplit"
            } else {
                "cmdprio_percentage"
            };
            return Err(conflict(
                self.control_set_at(opt),
                &name,
                format!(
                    "{opt} sets a priority per request, which only io_uring and \
                     libaio requests carry; the job uses ioengine={}: use ioengine=io_uring or \
                     libaio, or prio/prioclass for the whole job",
                    s.ioengine.fio_name()
                ),
            ));
        }
        Ok(())
    }

    /// An `ignore_error` list for a direction `continue_on_error` does not cover:
    /// noted.
    fn note_unused_ignore_error(&mut self) {
        let s = &self.spec;
        // fio's rule: an ignore_error list acts only for the directions
        // continue_on_error lets a job go on in.
        // A list for a direction it does not cover is ignored, as fio
        // ignores it (engine::control::goes_on stops at any such error).
        let coe = s.continue_on_error;
        let unused: Vec<&str> = s
            .control
            .ignore_error
            .lists
            .iter()
            .zip([crate::request::Op::Read, crate::request::Op::Write])
            .zip(["read", "write"])
            .filter(|((list, op), _)| list.is_some() && !coe.covers_io(*op))
            .map(|(_, d)| d)
            .collect();
        for d in unused {
            self.note(
                "ignore_error",
                format!(
                    "its {d} list has no effect: continue_on_error={} stops the job at any {d} \
                     error, and the list only acts where continue_on_error goes on (fio \
                     ignores it too); continue_on_error={d} (or io, all) would use it",
                    coe.name()
                ),
            );
        }
    }
}
