//! The block-size draw: the length of each request, per direction, from the
//! job's `bs` / `bsrange` / `bssplit`, as fio draws it.

use crate::job::BlockSizes;

use super::fio_rand::FioRand;

/// fio's own block-size draw (`get_next_buflen`) for one direction, from
/// that direction's fio generator: a range's size is its smallest plus the
/// largest times a uniform fraction, rounded down to a multiple of the
/// smallest and capped at the largest; a split's is the first entry (in
/// fio's order, by percentage) whose running percentage the draw falls
/// under and that fits. A size that does not fit in `room` is drawn again.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FioSizes {
    min: u64,
    max: u64,
    unaligned: bool,
    /// (size, percent), sorted by percent as fio sorts them; `n` used.
    split: [(u64, u64); 16],
    n: usize,
}

impl FioSizes {
    pub(crate) fn new(bs: &BlockSizes, unaligned: bool) -> FioSizes {
        let mut split = [(0u64, 0u64); 16];
        let mut n = 0;
        if let BlockSizes::Split(parts) = bs {
            n = parts.len().min(16);
            for (i, (size, pct)) in parts.iter().take(n).enumerate() {
                split[i] = (u64::from(*size), u64::from(*pct));
            }
            // fio sorts the entries by percentage (ties keep their order).
            split[..n].sort_by_key(|e| e.1);
        }
        FioSizes {
            min: u64::from(bs.min().max(1)),
            max: u64::from(bs.max().max(1)),
            unaligned,
            split,
            n,
        }
    }

    /// The smallest size.
    #[inline]
    pub(crate) fn min(&self) -> u64 {
        self.min
    }

    /// Whether fio draws at all (it does not for one size).
    #[inline]
    pub(crate) fn draws(&self) -> bool {
        self.min != self.max
    }

    /// The next size of at most `room` bytes, or `None` when not even the
    /// smallest fits (fio fails the I/O then). One step per draw; no
    /// allocation.
    #[inline]
    pub(crate) fn pick(&self, rng: &mut FioRand, room: u64) -> Option<u64> {
        if !self.draws() {
            return Some(self.min);
        }
        if self.min > room {
            return None;
        }
        let fits = |b: u64| b <= room;
        loop {
            let r = rng.draw();
            let mut len = 0;
            if self.n == 0 {
                len = self.min + (self.max as f64 * (r as f64 / rng.max_plus_one())) as u64;
            } else {
                let limit = rng.max_value() / 100;
                let mut perc = 0u64;
                for &(size, p) in &self.split[..self.n] {
                    if p == 0 {
                        continue;
                    }
                    len = size;
                    perc += p;
                    if r / perc <= limit && fits(len) {
                        break;
                    }
                }
            }
            if !self.unaligned {
                len -= len % self.min;
            }
            len = len.min(self.max);
            if fits(len) && len > 0 {
                return Some(len);
            }
        }
    }
}
