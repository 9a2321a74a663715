//! Latency per I/O priority: fio's per-priority statistics (`prios` in its
//! JSON), kept for jobs whose requests carry more than one priority
//! (`cmdprio_percentage`, `cmdprio_bssplit`).
//!
//! The priorities a job can issue with are known before the clock starts (the
//! job's own and its command priorities), so the histograms are allocated
//! then, a few per job; recording one finds its priority among those few by a
//! scan and adds to a histogram, like the direction's own series. A request
//! with a priority outside the list (none is expected) is counted under the
//! first, the job's own.

use super::hist::LatHist;
use crate::request::Op;

/// Directions with priorities: read, write, trim (fio's `ddir_rw`).
pub const PRIO_DIRS: usize = 3;

/// One priority's latency per direction.
#[derive(Clone, Debug)]
pub struct PrioSeries {
    /// The ioprio value: class << 13 | level, as fio and ioprio_set(2) write it.
    pub ioprio: u16,
    pub dirs: [LatHist; PRIO_DIRS],
}

/// The per-priority latencies of one recorder.
#[derive(Clone, Debug)]
pub struct PrioStats {
    /// Whether the series hold total latency (fio does with
    /// `lat_percentiles=1`) or completion latency.
    pub total: bool,
    pub series: Vec<PrioSeries>,
}

impl PrioStats {
    /// Series for each distinct value of `ioprios` (in that order), recording
    /// total latency when `total`. Every histogram is written here, before
    /// the clock starts.
    pub fn new(ioprios: &[u16], total: bool) -> PrioStats {
        let mut series: Vec<PrioSeries> = Vec::with_capacity(ioprios.len());
        for &p in ioprios {
            if series.iter().all(|s| s.ioprio != p) {
                series.push(PrioSeries {
                    ioprio: p,
                    dirs: std::array::from_fn(|_| LatHist::new()),
                });
            }
        }
        let mut s = PrioStats { total, series };
        s.reset();
        s
    }

    /// One measured request of `op` issued with `ioprio`.
    #[inline]
    pub fn record(&mut self, op: Op, ioprio: u16, clat_ns: u64, lat_ns: u64) {
        let dir = op.dir();
        if dir >= PRIO_DIRS || self.series.is_empty() {
            return;
        }
        let i = self
            .series
            .iter()
            .position(|s| s.ioprio == ioprio)
            .unwrap_or(0);
        let v = if self.total { lat_ns } else { clat_ns };
        self.series[i].dirs[dir].record(v);
    }

    pub fn reset(&mut self) {
        for s in &mut self.series {
            for h in &mut s.dirs {
                h.reset();
            }
        }
    }

    /// Fold `other` in, priority by priority (report time: a priority only
    /// `other` has is added).
    pub fn merge(&mut self, other: &PrioStats) {
        self.total |= other.total;
        for o in &other.series {
            match self.series.iter_mut().find(|s| s.ioprio == o.ioprio) {
                Some(s) => {
                    for (a, b) in s.dirs.iter_mut().zip(&o.dirs) {
                        a.merge(b);
                    }
                }
                None => self.series.push(o.clone()),
            }
        }
    }

    /// fio's `unified_rw_reporting`: writes and trims folded into reads.
    pub fn mixed(&mut self) {
        for s in &mut self.series {
            let [r, w, t] = &mut s.dirs;
            r.merge(w);
            r.merge(t);
        }
    }

    /// Priorities with samples in direction `dir`.
    pub fn with_samples(&self, dir: usize) -> impl Iterator<Item = &PrioSeries> {
        self.series
            .iter()
            .filter(move |s| s.dirs.get(dir).is_some_and(|h| h.count() > 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_lands_in_its_priority_and_merges_by_value() {
        let mut p = PrioStats::new(&[0, 1 << 13, 0], false);
        assert_eq!(p.series.len(), 2);
        p.record(Op::Read, 0, 10, 20);
        p.record(Op::Read, 1 << 13, 30, 40);
        p.record(Op::Write, 1 << 13, 50, 60);
        p.record(Op::Read, 7, 70, 80); // unknown: the job's own
        assert_eq!(p.series[0].dirs[0].count(), 2);
        assert_eq!(p.series[1].dirs[0].max(), 30);
        let mut q = PrioStats::new(&[3 << 13], true);
        q.record(Op::Read, 3 << 13, 1, 2);
        assert_eq!(q.series[0].dirs[0].min(), 2, "total latency");
        p.merge(&q);
        assert_eq!(p.series.len(), 3);
        p.mixed();
        assert_eq!(p.series[1].dirs[0].count(), 2);
        assert_eq!(p.with_samples(0).count(), 3);
        assert_eq!(p.with_samples(2).count(), 0);
    }
}
