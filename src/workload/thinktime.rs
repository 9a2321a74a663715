//! fio's think time: a job pauses for `thinktime` after every
//! `thinktime_blocks` I/Os (counted as they complete, or as they are issued
//! with `thinktime_blocks_type=issue`) and, with `thinktime_iotime`, after
//! every so long of I/O. The first `thinktime_spin` of each pause is spent
//! spinning on the CPU (the engine spins until [`Think::spin_until`]), the
//! rest asleep. Per request this is a few compares and stores.

use crate::job::JobSpec;
use crate::job::workload_opts::ThinkCount;

/// One stream's think-time state.
#[derive(Clone, Debug, Default)]
pub struct Think {
    think_ns: u64,
    spin_ns: u64,
    /// 0: no block count (thinktime_iotime alone).
    blocks: u32,
    on_issue: bool,
    iotime_ns: u64,
    counted: u64,
    last_blocks: u64,
    last_think: u64,
    /// The pause ends here (0: none yet).
    pub until: u64,
    spin_end: u64,
}

impl Think {
    pub fn new(job: &JobSpec, start_ns: u64) -> Think {
        let w = &job.workload;
        let iotime_ns = super::dur_ns(w.thinktime_iotime);
        // fio: with thinktime_iotime and no thinktime_blocks written, the
        // default of one block does not apply.
        let blocks = if iotime_ns > 0 && !w.thinktime_blocks_set {
            0
        } else {
            job.thinktime_blocks.max(1)
        };
        Think {
            think_ns: super::dur_ns(job.thinktime),
            spin_ns: super::dur_ns(w.thinktime_spin),
            blocks,
            on_issue: w.think_count == ThinkCount::Issue,
            iotime_ns,
            last_think: start_ns,
            ..Think::default()
        }
    }

    /// Start afresh at `start_ns` (the worker's clock start).
    pub fn restart(&mut self, start_ns: u64) {
        self.counted = 0;
        self.last_blocks = 0;
        self.last_think = start_ns;
        self.until = 0;
        self.spin_end = 0;
    }

    /// Is there think time at all?
    #[inline]
    pub fn active(&self) -> bool {
        self.think_ns != 0
    }

    /// An I/O was issued (`issue`) or completed at `now`. Returns the length
    /// of the pause it starts, 0 if none.
    #[inline]
    pub fn count(&mut self, issue: bool, now: u64) -> u64 {
        if self.think_ns == 0 || issue != self.on_issue {
            return 0;
        }
        self.counted += 1;
        let by_time = self.iotime_ns > 0
            && now.saturating_sub(self.last_think) >= self.iotime_ns + self.think_ns;
        let by_blocks =
            self.blocks > 0 && self.counted >= self.last_blocks + u64::from(self.blocks);
        if !(by_time || by_blocks) {
            return 0;
        }
        self.last_blocks = self.counted;
        self.last_think = now;
        self.until = now + self.think_ns;
        self.spin_end = now + self.spin_ns.min(self.think_ns);
        self.think_ns
    }

    /// Until when the engine should spin rather than sleep (`thinktime_spin`).
    #[inline]
    pub fn spin_until(&self) -> u64 {
        self.spin_end
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn job() -> JobSpec {
        JobSpec {
            thinktime: Duration::from_micros(100),
            thinktime_blocks: 4,
            ..JobSpec::default()
        }
    }

    #[test]
    fn blocks_counted_on_completion_by_default() {
        let mut t = Think::new(&job(), 0);
        for i in 0..3 {
            assert_eq!(t.count(false, i), 0);
            assert_eq!(t.count(true, i), 0, "issues are not counted by default");
        }
        assert_eq!(t.count(false, 10), 100_000);
        assert_eq!(t.until, 100_010);
    }

    #[test]
    fn issue_type_counts_issues() {
        let mut j = job();
        j.workload.think_count = ThinkCount::Issue;
        let mut t = Think::new(&j, 0);
        for _ in 0..3 {
            assert_eq!(t.count(true, 0), 0);
            assert_eq!(t.count(false, 0), 0);
        }
        assert_eq!(t.count(true, 5), 100_000);
    }

    #[test]
    fn iotime_alone_ignores_the_default_block_count() {
        let mut j = job();
        j.thinktime_blocks = 1;
        j.workload.thinktime_iotime = Duration::from_millis(1);
        let mut t = Think::new(&j, 0);
        assert_eq!(t.count(false, 500_000), 0);
        assert_eq!(t.count(false, 1_000_000), 0);
        // iotime + thinktime since the last pause (fio's rule).
        assert_eq!(t.count(false, 1_100_000), 100_000);
        assert_eq!(t.count(false, 1_200_000), 0);
    }

    #[test]
    fn spin_is_the_start_of_the_pause() {
        let mut j = job();
        j.thinktime_blocks = 1;
        j.workload.thinktime_spin = Duration::from_micros(30);
        let mut t = Think::new(&j, 0);
        t.count(false, 1_000);
        assert_eq!(t.spin_until(), 31_000);
        assert_eq!(t.until, 101_000);
    }
}
