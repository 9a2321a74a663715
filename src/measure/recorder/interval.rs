//! IOPS and bandwidth over time: a fixed-capacity array of intervals, filled
//! per completion without a division in the common case.

use super::DIRS;

/// Completions and bytes per direction in one interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IntervalSlot {
    pub ios: [u64; DIRS],
    pub bytes: [u64; DIRS],
}

/// IOPS and bandwidth over time: fixed-capacity array of intervals.
#[derive(Clone, Debug)]
pub struct IntervalLog {
    pub(super) start_ns: u64,
    pub(super) interval_ns: u64,
    pub(super) slots: Box<[IntervalSlot]>,
    /// Highest slot written + 1.
    pub(super) used: usize,
    /// Completions that fell past the last slot.
    pub dropped: u64,
    // Cached bounds of the slot last written, so the common case costs no division.
    pub(super) cur: usize,
    pub(super) cur_start: u64,
    pub(super) cur_end: u64,
}

impl IntervalLog {
    pub(super) fn new(start_ns: u64, interval_ns: u64, intervals: usize) -> IntervalLog {
        let interval_ns = interval_ns.max(1);
        IntervalLog {
            start_ns,
            interval_ns,
            slots: vec![IntervalSlot::default(); intervals.max(1)].into_boxed_slice(),
            used: 0,
            dropped: 0,
            cur: 0,
            cur_start: start_ns,
            cur_end: start_ns + interval_ns,
        }
    }

    #[inline]
    pub(super) fn add(&mut self, t_ns: u64, dir: usize, bytes: u64) {
        if t_ns < self.cur_start || t_ns >= self.cur_end {
            let idx = (t_ns.saturating_sub(self.start_ns) / self.interval_ns) as usize;
            if idx >= self.slots.len() {
                self.dropped += 1;
                return;
            }
            self.cur = idx;
            self.cur_start = self.start_ns + idx as u64 * self.interval_ns;
            self.cur_end = self.cur_start + self.interval_ns;
        }
        let s = &mut self.slots[self.cur];
        s.ios[dir] += 1;
        s.bytes[dir] += bytes;
        if self.cur >= self.used {
            self.used = self.cur + 1;
        }
    }

    pub(super) fn reset(&mut self, start_ns: u64) {
        self.slots.fill(IntervalSlot::default());
        self.start_ns = start_ns;
        self.used = 0;
        self.dropped = 0;
        self.cur = 0;
        self.cur_start = start_ns;
        self.cur_end = start_ns + self.interval_ns;
    }

    /// Add `other` slot by slot, aligned on absolute time (to within one interval
    /// when the two logs started at different times).
    pub(super) fn merge(&mut self, other: &IntervalLog) {
        for (i, s) in other.slots[..other.used].iter().enumerate() {
            let t = other.start_ns + i as u64 * other.interval_ns;
            let idx = (t.saturating_sub(self.start_ns) / self.interval_ns) as usize;
            match self.slots.get_mut(idx) {
                Some(d) => {
                    for k in 0..DIRS {
                        d.ios[k] += s.ios[k];
                        d.bytes[k] += s.bytes[k];
                    }
                    self.used = self.used.max(idx + 1);
                }
                None => self.dropped += s.ios.iter().sum::<u64>(),
            }
        }
        self.dropped += other.dropped;
    }

    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }
    pub fn interval_ns(&self) -> u64 {
        self.interval_ns
    }
    /// The intervals written so far (the last one may be partial).
    pub fn slots(&self) -> &[IntervalSlot] {
        &self.slots[..self.used]
    }
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }
}
