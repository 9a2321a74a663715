//! `cmdprio_bssplit` while a job runs: the table a request's block size is
//! looked up in (the option is parsed in `job::cmdprio`).
//!
//! The table is built once per stream before the clock starts; per request
//! the lookup is a scan of a few entries and one random draw: no allocation.

use crate::job::control::BsPrio;

/// One priority of one block size, with the draw that selects it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    bs: u32,
    /// The draw `0..100` selects this entry below this bound; the bounds of
    /// one block size's entries are cumulative (25, then 25 + 75 = 100).
    below: u32,
    ioprio: u16,
}

/// Per direction, the entries with a share, grouped by block size.
#[derive(Clone, Debug, Default)]
pub struct BsPrioTable {
    dirs: [Box<[Entry]>; 2],
}

impl BsPrioTable {
    /// `simple` is the ioprio of the simple form's entries per direction
    /// (`cmdprio_class`/`cmdprio`).
    pub fn new(split: &[Vec<BsPrio>; 2], simple: [u16; 2]) -> BsPrioTable {
        let mut dirs: [Box<[Entry]>; 2] = Default::default();
        for (d, list) in split.iter().enumerate() {
            let mut v: Vec<Entry> = Vec::with_capacity(list.len());
            for e in list.iter().filter(|e| e.percentage > 0) {
                let ioprio = match e.prio {
                    Some((class, level)) => (u16::from(class) << 13) | u16::from(level),
                    None => simple[d],
                };
                // Entries of one size stay together, in the order given.
                // The last entry of the size holds its running total.
                let before = v.iter().rev().find(|x| x.bs == e.bs).map_or(0, |x| x.below);
                let at = v
                    .iter()
                    .rposition(|x| x.bs == e.bs)
                    .map_or(v.len(), |i| i + 1);
                v.insert(
                    at,
                    Entry {
                        bs: e.bs,
                        below: before + e.percentage,
                        ioprio,
                    },
                );
            }
            dirs[d] = v.into_boxed_slice();
        }
        BsPrioTable { dirs }
    }

    /// The ioprios direction `dir`'s entries give.
    pub fn values(&self, dir: usize) -> impl Iterator<Item = u16> + '_ {
        self.dirs[dir.min(1)].iter().map(|e| e.ioprio)
    }

    pub fn is_empty(&self) -> bool {
        self.dirs.iter().all(|d| d.is_empty())
    }

    /// The ioprio of a request of `len` bytes in direction `dir`, `draw` a
    /// uniform value in `0..100`; `None` keeps the job's priority.
    #[inline]
    pub fn pick(&self, dir: usize, len: u32, draw: u32) -> Option<u16> {
        self.dirs[dir.min(1)]
            .iter()
            .find(|e| e.bs == len && draw < e.below)
            .map(|e| e.ioprio)
    }

    /// Does direction `dir` give requests of `len` bytes any share?
    #[inline]
    pub fn names(&self, dir: usize, len: u32) -> bool {
        self.dirs[dir.min(1)].iter().any(|e| e.bs == len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(bs: u32, percentage: u32, prio: Option<(u8, u8)>) -> BsPrio {
        BsPrio {
            bs,
            percentage,
            prio,
        }
    }

    #[test]
    fn shares_of_one_size_are_cumulative_and_others_keep_the_job_priority() {
        // 64k/25/1/1:1m/0:64k/75/3/2 for reads, 1m/50 (simple) for writes.
        let t = BsPrioTable::new(
            &[
                vec![
                    e(65536, 25, Some((1, 1))),
                    e(1 << 20, 0, None),
                    e(65536, 75, Some((3, 2))),
                ],
                vec![e(1 << 20, 50, None)],
            ],
            [(2 << 13) | 5, (1 << 13) | 4],
        );
        assert_eq!(t.pick(0, 65536, 0), Some((1 << 13) | 1));
        assert_eq!(t.pick(0, 65536, 24), Some((1 << 13) | 1));
        assert_eq!(t.pick(0, 65536, 25), Some((3 << 13) | 2));
        assert_eq!(t.pick(0, 65536, 99), Some((3 << 13) | 2));
        assert_eq!(t.pick(0, 1 << 20, 0), None, "a 0% entry has no share");
        assert_eq!(t.pick(0, 4096, 0), None, "a size not listed");
        assert_eq!(t.pick(1, 1 << 20, 49), Some((1 << 13) | 4), "simple form");
        assert_eq!(t.pick(1, 1 << 20, 50), None);
        assert!(!t.names(0, 1 << 20));
        assert!(t.names(1, 1 << 20));
    }
}
