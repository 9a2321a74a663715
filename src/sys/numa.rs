//! NUMA facts and mechanics: which nodes the machine has and their CPUs
//! (`/sys/devices/system/node/nodeN/cpulist`), and a thread's memory policy
//! (`set_mempolicy(2)`), for fio's `numa_cpu_nodes` and `numa_mem_policy`.
//!
//! A kernel without NUMA support has no `/sys/devices/system/node`; such a
//! machine is one node 0 holding every online CPU, and [`Nodes::from_sysfs`]
//! says so, so callers can tell the user.

use std::io;
use std::path::Path;

/// A kernel list such as `0-3,8` (CPUs or nodes); None if malformed.
pub fn parse_list(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.trim().is_empty()) {
        let num = |t: &str| t.trim().parse::<u32>().ok();
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b || b - a > 65_535 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// Where the kernel lists the NUMA nodes.
pub const NODE_DIR: &str = "/sys/devices/system/node";

/// The machine's NUMA nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nodes {
    /// (node, its CPUs), by node number.
    pub nodes: Vec<(u32, Vec<u32>)>,
    /// False when the directory is missing and the machine is taken as one node 0.
    pub from_sysfs: bool,
}

impl Nodes {
    /// The nodes of this machine.
    pub fn system() -> Nodes {
        Nodes::read(
            Path::new(NODE_DIR),
            Path::new("/sys/devices/system/cpu/online"),
        )
    }

    /// The nodes under `node_dir`; without it, one node 0 with the CPUs
    /// `cpu_online` lists (or every CPU the process may use).
    pub fn read(node_dir: &Path, cpu_online: &Path) -> Nodes {
        let mut nodes = Vec::new();
        if let Ok(rd) = std::fs::read_dir(node_dir) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(n) = name
                    .strip_prefix("node")
                    .and_then(|n| n.parse::<u32>().ok())
                else {
                    continue;
                };
                let cpus = std::fs::read_to_string(e.path().join("cpulist"))
                    .ok()
                    .and_then(|s| parse_list(&s))
                    .unwrap_or_default();
                nodes.push((n, cpus));
            }
        }
        if nodes.is_empty() {
            let cpus = std::fs::read_to_string(cpu_online)
                .ok()
                .and_then(|s| parse_list(&s))
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| {
                    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
                    (0..n as u32).collect()
                });
            return Nodes {
                nodes: vec![(0, cpus)],
                from_sysfs: false,
            };
        }
        nodes.sort_unstable_by_key(|n| n.0);
        Nodes {
            nodes,
            from_sysfs: true,
        }
    }

    /// Node numbers, e.g. for messages.
    pub fn ids(&self) -> Vec<u32> {
        self.nodes.iter().map(|n| n.0).collect()
    }

    pub fn has(&self, node: u32) -> bool {
        self.nodes.iter().any(|n| n.0 == node)
    }

    /// The CPUs of `nodes`, sorted, each once.
    pub fn cpus_of(&self, nodes: &[u32]) -> Vec<u32> {
        let mut out: Vec<u32> = (self.nodes.iter())
            .filter(|n| nodes.contains(&n.0))
            .flat_map(|n| n.1.iter().copied())
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// The kernel's memory-policy modes (`linux/mempolicy.h`).
pub const MPOL_DEFAULT: i32 = 0;
pub const MPOL_PREFERRED: i32 = 1;
pub const MPOL_BIND: i32 = 2;
pub const MPOL_INTERLEAVE: i32 = 3;
pub const MPOL_LOCAL: i32 = 4;

/// Node masks of 1024 nodes (the kernel's largest MAX_NUMNODES).
const MASK_WORDS: usize = 16;
/// set/get_mempolicy read `maxnode - 1` bits (a historical off-by-one).
const MAXNODE: u64 = (MASK_WORDS * 64) as u64 + 1;

fn mask_of(nodes: &[u32]) -> io::Result<[u64; MASK_WORDS]> {
    let mut mask = [0u64; MASK_WORDS];
    for &n in nodes {
        let (w, b) = (n as usize / 64, n % 64);
        let word = mask.get_mut(w).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("node {n} is above 1023"),
            )
        })?;
        *word |= 1 << b;
    }
    Ok(mask)
}

/// Set the calling thread's memory policy: `mode` (an `MPOL_*`) over `nodes`
/// (empty for `MPOL_DEFAULT` and `MPOL_LOCAL`).
pub fn set_mempolicy(mode: i32, nodes: &[u32]) -> io::Result<()> {
    let mask = mask_of(nodes)?;
    let (ptr, maxnode) = if nodes.is_empty() {
        (std::ptr::null(), 0)
    } else {
        (mask.as_ptr(), MAXNODE)
    };
    // SAFETY: the mask outlives the call and holds MAXNODE - 1 bits.
    let r = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, ptr, maxnode) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's memory policy: (mode, nodes).
pub fn get_mempolicy() -> io::Result<(i32, Vec<u32>)> {
    let mut mode: libc::c_int = 0;
    let mut mask = [0u64; MASK_WORDS];
    // SAFETY: valid pointers; the mask holds MAXNODE - 1 bits; addr 0, flags 0
    // ask for the thread's own policy.
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            mask.as_mut_ptr(),
            MAXNODE,
            0usize,
            0usize,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    let nodes = (0..MASK_WORDS * 64)
        .filter(|&i| mask[i / 64] & (1 << (i % 64)) != 0)
        .map(|i| i as u32)
        .collect();
    Ok((mode, nodes))
}

/// The calling thread under a memory policy until dropped, then back under the
/// one it had: memory first touched meanwhile is placed by the policy.
#[derive(Debug)]
pub struct PolicyScope {
    saved: (i32, Vec<u32>),
}

impl PolicyScope {
    pub fn enter(mode: i32, nodes: &[u32]) -> io::Result<PolicyScope> {
        let saved = get_mempolicy()?;
        set_mempolicy(mode, nodes)?;
        Ok(PolicyScope { saved })
    }
}

impl Drop for PolicyScope {
    fn drop(&mut self) {
        let (mode, nodes) = &self.saved;
        // The policy read back is one the kernel accepted: setting it again
        // cannot fail but for memory pressure, and then the default is harmless.
        if set_mempolicy(*mode, nodes).is_err() {
            let _ = set_mempolicy(MPOL_DEFAULT, &[]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_read_from_a_sysfs_tree_and_without_one() {
        let d = tempfile::tempdir().unwrap();
        for (n, cpus) in [("node1", "2-3\n"), ("node0", "0-1\n")] {
            std::fs::create_dir(d.path().join(n)).unwrap();
            std::fs::write(d.path().join(n).join("cpulist"), cpus).unwrap();
        }
        std::fs::create_dir(d.path().join("power")).unwrap();
        let online = d.path().join("online");
        std::fs::write(&online, "0-5\n").unwrap();
        let n = Nodes::read(d.path(), &online);
        assert!(n.from_sysfs);
        assert_eq!(n.ids(), vec![0, 1]);
        assert_eq!(n.cpus_of(&[1]), vec![2, 3]);
        assert_eq!(n.cpus_of(&[0, 1]), vec![0, 1, 2, 3]);
        let none = Nodes::read(&d.path().join("missing"), &online);
        assert!(!none.from_sysfs);
        assert_eq!(none.nodes, vec![(0, (0..6).collect())]);
    }

    #[test]
    fn a_policy_scope_sets_and_restores_the_threads_policy() {
        // On a thread of its own: the policy is per thread.
        std::thread::spawn(|| {
            let before = get_mempolicy().unwrap();
            {
                let _s = PolicyScope::enter(MPOL_INTERLEAVE, &[0]).unwrap();
                assert_eq!(get_mempolicy().unwrap(), (MPOL_INTERLEAVE, vec![0]));
            }
            assert_eq!(get_mempolicy().unwrap(), before);
        })
        .join()
        .unwrap();
    }
}
