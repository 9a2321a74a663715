//! The block-size picker: the length of each request, per direction, from the
//! job's `bs` / `bsrange` / `bssplit`.

use crate::job::BlockSizes;

#[derive(Clone, Debug)]
pub(crate) enum BsPicker {
    Fixed(u32),
    /// Uniform multiple of `min` in [min, max].
    Range {
        min: u32,
        steps: u32,
    },
    /// `bs_unaligned` with a range: any byte count in [min, max], as fio
    /// draws it.
    Bytes {
        min: u32,
        max: u32,
    },
    /// Cumulative percent thresholds (0..100) and sizes.
    Split {
        cum: [u8; 16],
        sizes: [u32; 16],
        n: usize,
    },
}

impl BsPicker {
    /// The picker for one direction's block sizes; `unaligned`:
    /// `bs_unaligned` (a range's sizes need not be multiples of its smallest).
    pub(crate) fn new(bs: &BlockSizes, unaligned: bool) -> BsPicker {
        match bs {
            BlockSizes::Fixed(b) => BsPicker::Fixed(*b),
            BlockSizes::Range { min, max } if unaligned && max > min => BsPicker::Bytes {
                min: *min,
                max: *max,
            },
            BlockSizes::Range { min, max } => BsPicker::Range {
                min: *min,
                steps: (max / min).max(1),
            },
            BlockSizes::Split(parts) => {
                let mut cum = [0u8; 16];
                let mut sizes = [0u32; 16];
                let mut acc = 0u32;
                let n = parts.len().min(16);
                for (i, (size, pct)) in parts.iter().take(n).enumerate() {
                    acc += pct;
                    cum[i] = acc.min(100) as u8;
                    sizes[i] = *size;
                }
                // Rounding in the job file must not leave a gap at the top.
                if n > 0 {
                    cum[n - 1] = 100;
                }
                BsPicker::Split { cum, sizes, n }
            }
        }
    }

    /// A size of at most `room` bytes, drawn as [`Self::pick`] draws but
    /// among the sizes that fit (fio draws again until one fits); `None` when
    /// none does. A fixed size is returned as it is: fio does not fit it.
    #[cold]
    pub(crate) fn pick_within(&self, room: u64, rng: &mut fastrand::Rng) -> Option<u32> {
        match self {
            BsPicker::Fixed(b) => Some(*b),
            BsPicker::Range { min, steps } => {
                let fit = (room / u64::from(*min)).min(u64::from(*steps)) as u32;
                (fit > 0).then(|| min * (1 + rng.u32(0..fit)))
            }
            BsPicker::Bytes { min, max } => {
                let hi = room.min(u64::from(*max)) as u32;
                (hi >= *min).then(|| rng.u32(*min..=hi))
            }
            BsPicker::Split { cum, sizes, n } => {
                // The percentages of the sizes that fit, drawn among themselves.
                let mut pct = [0u8; 16];
                let mut prev = 0;
                for i in 0..*n {
                    if u64::from(sizes[i]) <= room {
                        pct[i] = cum[i] - prev;
                    }
                    prev = cum[i];
                }
                let total: u32 = pct[..*n].iter().map(|&p| u32::from(p)).sum();
                if total == 0 {
                    // Only sizes listed at 0% (or none) fit: the smallest that does.
                    return sizes[..*n]
                        .iter()
                        .copied()
                        .filter(|&z| u64::from(z) <= room)
                        .min();
                }
                let mut r = rng.u32(0..total);
                for i in 0..*n {
                    if r < u32::from(pct[i]) {
                        return Some(sizes[i]);
                    }
                    r -= u32::from(pct[i]);
                }
                None
            }
        }
    }

    /// The next request's length (one draw; no allocation).
    #[inline]
    pub(crate) fn pick(&self, rng: &mut fastrand::Rng) -> u32 {
        match self {
            BsPicker::Fixed(b) => *b,
            BsPicker::Range { min, steps } => min * (1 + rng.u32(0..*steps)),
            BsPicker::Bytes { min, max } => rng.u32(*min..=*max),
            BsPicker::Split { cum, sizes, n } => {
                let r = rng.u8(0..100);
                let i = cum[..*n].iter().position(|c| r < *c).unwrap_or(n - 1);
                sizes[i]
            }
        }
    }
}
