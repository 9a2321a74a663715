//! fio's `dedupe_mode=working_set`: `dedupe_percentage` of the writes carry a
//! page drawn uniformly from a working set, the others a new unique page.
//!
//! As in fio, content is named by seeds. A stream's unique writes are its
//! pages 0, 1, 2, ... ([`page_seed`] of its buffer seed); its working set is
//! `dedupe_working_set_percentage` of `size` in write blocks, namely its own
//! first pages, which its first unique writes also carry. With
//! `dedupe_global`, the working set is spread evenly over every clone of
//! every job that sets it: each participant owns `pages / participants`
//! pages (its first ones), and every participant's working set is the same
//! union, so the jobs' files share duplicates (fio's example: each file alone
//! reduces to about 1:0.5, the two together to about 1:1).
//!
//! The working set is built before the clock starts; a write draws one index
//! from it: no allocation per request.

use std::sync::OnceLock;

use crate::job::JobSpec;

/// splitmix64's finaliser: a well-spread 64-bit value from any input.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The content seed of page `k` of the stream with buffer seed `stream`.
#[inline]
pub fn page_seed(stream: u64, k: u64) -> u64 {
    mix(stream ^ mix(k))
}

/// One value per run for jobs with `randrepeat=0`: every worker must agree on
/// the other participants' seeds (`dedupe_global`).
fn run_nonce() -> u64 {
    static NONCE: OnceLock<u64> = OnceLock::new();
    *NONCE.get_or_init(|| mix(crate::measure::clock::now_ns() ^ u64::from(std::process::id())))
}

/// The buffer-content seed of clone `n` of job `j`: distinct per job and
/// clone (fio seeds each job's buffers apart, so two jobs never write the
/// same data by accident), repeatable with `randrepeat`, and the same
/// wherever it is computed.
pub fn buffer_seed(jobs: &[JobSpec], j: usize, n: u32) -> u64 {
    let job = &jobs[j];
    let base = if job.randrepeat || job.workload.allrandrepeat {
        job.randseed
    } else {
        run_nonce()
    };
    mix(base.wrapping_add(u64::from(n)) ^ mix(j as u64 + 1))
}

/// A stream's working set: the seeds of the pages its repeats draw from.
#[derive(Clone, Debug)]
pub struct WorkingSet {
    pages: Box<[u64]>,
}

impl WorkingSet {
    /// The working set of clone `n` of job `j`, or `None` when the job does
    /// not use `dedupe_mode=working_set`.
    pub fn new(jobs: &[JobSpec], j: usize, n: u32) -> Option<WorkingSet> {
        let job = &jobs[j];
        let b = &job.buffers;
        if !b.working_set() {
            return None;
        }
        // The job parser requires size= (fio's rule); pages of the smallest
        // write block, at least one.
        let bs = u64::from(job.bs[1].min().max(1));
        let size = job.size.unwrap_or(bs);
        let count = (size * u64::from(b.dedupe_working_set_percentage) / 100 / bs).max(1);
        let own = buffer_seed(jobs, j, n);
        let pages: Box<[u64]> = if b.dedupe_global {
            let members: Vec<(usize, u32)> = jobs
                .iter()
                .enumerate()
                .filter(|(_, x)| x.buffers.working_set() && x.buffers.dedupe_global)
                .flat_map(|(i, x)| (0..x.numjobs).map(move |m| (i, m)))
                .collect();
            let me = members.iter().position(|&m| m == (j, n)).unwrap_or(0);
            let seeds: Vec<u64> = members
                .iter()
                .map(|&(i, m)| buffer_seed(jobs, i, m))
                .collect();
            let per = (count / members.len() as u64).max(1);
            (0..count)
                .map(|i| {
                    let owner = seeds[(me + (i / per) as usize) % seeds.len()];
                    page_seed(owner, i % per)
                })
                .collect()
        } else {
            (0..count).map(|i| page_seed(own, i)).collect()
        };
        Some(WorkingSet { pages })
    }

    /// The page a repeat carries, for a uniform random `draw`.
    #[inline]
    pub fn page(&self, draw: u64) -> u64 {
        self.pages[(draw % self.pages.len() as u64) as usize]
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::buffers::DedupeMode;
    use std::collections::HashSet;

    fn job(global: bool, numjobs: u32) -> JobSpec {
        let mut j = JobSpec {
            size: Some(4 << 20),
            numjobs,
            ..Default::default()
        };
        j.buffers.dedupe_mode = DedupeMode::WorkingSet;
        j.buffers.dedupe_percentage = 50;
        j.buffers.dedupe_working_set_percentage = 50;
        j.buffers.dedupe_global = global;
        j
    }

    #[test]
    fn a_private_working_set_is_the_streams_first_pages() {
        let jobs = [job(false, 1)];
        let ws = WorkingSet::new(&jobs, 0, 0).unwrap();
        let bs = u64::from(jobs[0].bs[1].min());
        assert_eq!(ws.len() as u64, (4 << 20) / 2 / bs);
        let own = buffer_seed(&jobs, 0, 0);
        let first: HashSet<u64> = (0..ws.len() as u64).map(|k| page_seed(own, k)).collect();
        assert!((0..10_000).all(|d| first.contains(&ws.page(d))));
    }

    #[test]
    fn a_global_working_set_is_one_union_spread_over_the_participants() {
        // Two jobs, the second with two clones, and a job outside.
        let jobs = [job(true, 1), job(true, 2), job(false, 1)];
        let sets: Vec<HashSet<u64>> = [(0, 0), (1, 0), (1, 1)]
            .iter()
            .map(|&(j, n)| {
                let ws = WorkingSet::new(&jobs, j, n).unwrap();
                (0..ws.len() as u64).map(|d| ws.page(d)).collect()
            })
            .collect();
        assert_eq!(sets[0], sets[1]);
        assert_eq!(sets[1], sets[2]);
        let per = sets[0].len() as u64 / 3;
        for (j, n) in [(0, 0), (1, 0), (1, 1)] {
            let own = buffer_seed(&jobs, j, n);
            let owned = (0..per).filter(|&k| sets[0].contains(&page_seed(own, k)));
            assert_eq!(owned.count() as u64, per, "each owns an even share");
        }
        let outside = WorkingSet::new(&jobs, 2, 0).unwrap();
        assert!(!sets[0].contains(&outside.page(0)));
        assert_ne!(buffer_seed(&jobs, 0, 0), buffer_seed(&jobs, 1, 0));
    }
}
