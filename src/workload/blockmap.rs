//! The random map for variable block sizes: which blocks of the region a
//! pass has touched, as fio's random map keeps them when I/Os are longer than
//! one block. A random offset that lands on a used block moves on to the next
//! free one (wrapping at the region's end), and an I/O is shortened to the
//! free blocks it starts with, so a pass touches every block exactly once and
//! ends when the map is full.
//!
//! A hierarchy of bitmaps: level 0 has a bit per block (set: used); a bit of
//! level k+1 is set when word k of the level below is full. Finding the next
//! free block climbs only while the words on the way are full, so it takes
//! one word per level. Everything is allocated when the map is built;
//! marking, searching and resetting allocate nothing.

/// Bits per word of every level.
const W: u64 = 64;

/// The used/free map of `n` blocks.
#[derive(Clone, Debug)]
pub(crate) struct BlockMap {
    n: u64,
    free: u64,
    /// `levels[0]` a bit per block; each next level a bit per word of the
    /// one below; the last has one word. Bits past the end are kept set, so
    /// a word is full exactly when every block it holds is used.
    levels: Vec<Vec<u64>>,
}

/// A random map too large for this machine's memory (fio's "failed
/// allocating random map").
#[derive(Debug, thiserror::Error)]
#[error(
    "its random map of {blocks} blocks ({mib} MiB) cannot be allocated; \
     norandommap=1 draws random offsets without it (blocks may then repeat \
     within a pass), or a larger smallest block size makes it smaller"
)]
pub struct RandomMapError {
    pub blocks: u64,
    pub mib: u64,
}

/// The words of every level of a map of `n` blocks, level 0 first.
fn level_words(n: u64) -> impl Iterator<Item = u64> {
    let mut bits = Some(n.max(1));
    std::iter::from_fn(move || {
        let words = bits?.div_ceil(W);
        bits = (words > 1).then_some(words);
        Some(words)
    })
}

/// Whether a map of `n` blocks can be allocated here: asks the allocator for
/// its memory (without touching it) and gives it back.
pub(crate) fn check_alloc(n: u64) -> Result<(), RandomMapError> {
    let words: u64 = level_words(n).sum();
    let err = || RandomMapError {
        blocks: n,
        mib: words.saturating_mul(8).div_ceil(1 << 20),
    };
    let words = usize::try_from(words).map_err(|_| err())?;
    let mut probe: Vec<u64> = Vec::new();
    probe.try_reserve_exact(words).map_err(|_| err())
}

impl BlockMap {
    /// A map of `n` free blocks (at least one).
    pub(crate) fn new(n: u64) -> BlockMap {
        let n = n.max(1);
        let levels: Vec<Vec<u64>> = level_words(n).map(|w| vec![0u64; w as usize]).collect();
        let mut map = BlockMap { n, free: n, levels };
        map.reset();
        map
    }

    /// Every block free again (a new pass).
    pub(crate) fn reset(&mut self) {
        let mut bits = self.n;
        for level in &mut self.levels {
            level.fill(0);
            // The bits past the last real one are always set.
            let tail = bits % W;
            if tail != 0 {
                let last = level.len() - 1;
                level[last] = !0u64 << tail;
            }
            bits = level.len() as u64;
        }
        self.free = self.n;
    }

    /// The number of blocks.
    #[inline]
    pub(crate) fn len(&self) -> u64 {
        self.n
    }

    /// Whether every block is used (the pass is over).
    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.free == 0
    }

    /// Whether block `b` is free.
    #[inline]
    pub(crate) fn is_free(&self, b: u64) -> bool {
        b < self.n && self.levels[0][(b / W) as usize] & (1 << (b % W)) == 0
    }

    /// `b` if it is free, else the first free block after it, wrapping at
    /// the end; `None` when the map is full.
    #[inline]
    pub(crate) fn free_at_or_after(&self, b: u64) -> Option<u64> {
        if self.is_full() {
            return None;
        }
        let b = b.min(self.n - 1);
        if self.is_free(b) {
            return Some(b);
        }
        self.first_free_from(b + 1)
            .or_else(|| self.first_free_from(0))
    }

    /// The first free block at or after `b` (no wrapping).
    fn first_free_from(&self, b: u64) -> Option<u64> {
        let mut lvl = 0;
        let mut idx = b;
        loop {
            let level = &self.levels[lvl];
            let w = idx / W;
            if w >= level.len() as u64 {
                return None;
            }
            let free = !level[w as usize] & (!0u64 << (idx % W));
            if free != 0 {
                // A clear bit above says the word below it has a free block:
                // take the first one, level by level, down to a block.
                let mut j = w * W + u64::from(free.trailing_zeros());
                while lvl > 0 {
                    lvl -= 1;
                    let word = self.levels[lvl][j as usize];
                    j = j * W + u64::from((!word).trailing_zeros());
                }
                return (j < self.n).then_some(j);
            }
            if lvl + 1 == self.levels.len() {
                return None;
            }
            // Every block from `idx` to this word's end is used: look on
            // from the next word, one level up.
            idx = w + 1;
            lvl += 1;
        }
    }

    /// Mark up to `nr` blocks from `b` used, stopping at the first block
    /// already used and at the map's end; returns how many it marked (0 when
    /// `b` itself is used).
    #[inline]
    pub(crate) fn mark_run(&mut self, b: u64, nr: u64) -> u64 {
        let mut done = 0;
        while done < nr && b + done < self.n {
            let at = b + done;
            let (w, bit) = ((at / W) as usize, at % W);
            let want = (nr - done).min(W - bit);
            let word = self.levels[0][w];
            // Free blocks from `bit` up to the first used one.
            let run = u64::from((word >> bit).trailing_zeros()).min(want);
            if run == 0 {
                break;
            }
            let mask = if run == W {
                !0
            } else {
                ((1u64 << run) - 1) << bit
            };
            self.levels[0][w] = word | mask;
            if self.levels[0][w] == !0 {
                self.propagate_full(w as u64);
            }
            done += run;
            if run < want {
                break;
            }
        }
        self.free -= done;
        done
    }

    /// [`BlockMap::mark_run`] of one block (the common case of one block
    /// size): 1 if `b` was free and is now used, else 0.
    #[inline]
    pub(crate) fn mark_one(&mut self, b: u64) -> u64 {
        if b >= self.n {
            return 0;
        }
        let (w, bit) = ((b / W) as usize, 1u64 << (b % W));
        let word = self.levels[0][w];
        if word & bit != 0 {
            return 0;
        }
        self.levels[0][w] = word | bit;
        if word | bit == !0 {
            self.propagate_full(w as u64);
        }
        self.free -= 1;
        1
    }

    /// Word `w` of level 0 became full: set its bit above, and on up while
    /// words fill.
    fn propagate_full(&mut self, mut w: u64) {
        for lvl in 1..self.levels.len() {
            let word = &mut self.levels[lvl][(w / W) as usize];
            *word |= 1 << (w % W);
            if *word != !0 {
                return;
            }
            w /= W;
        }
    }

    /// Free `nr` blocks from `b` again (all of which `mark_run` marked): a
    /// request taken back.
    pub(crate) fn unmark_run(&mut self, b: u64, nr: u64) {
        for at in b..(b + nr).min(self.n) {
            let (w, bit) = ((at / W) as usize, at % W);
            let was_full = self.levels[0][w] == !0;
            if self.levels[0][w] & (1 << bit) == 0 {
                continue;
            }
            self.levels[0][w] &= !(1 << bit);
            self.free += 1;
            if was_full {
                // The words above that were full are full no more.
                let mut i = w as u64;
                for lvl in 1..self.levels.len() {
                    let word = &mut self.levels[lvl][(i / W) as usize];
                    let full = *word == !0;
                    *word &= !(1 << (i % W));
                    if !full {
                        break;
                    }
                    i /= W;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::BlockMap;

    /// The map against a plain vector of flags, over sizes around word and
    /// level boundaries.
    fn check(map: &BlockMap, used: &[bool]) {
        assert_eq!(map.is_full(), used.iter().all(|&u| u));
        for b in 0..used.len() as u64 {
            assert_eq!(map.is_free(b), !used[b as usize], "block {b}");
            let want = (b..used.len() as u64)
                .chain(0..b)
                .find(|&i| !used[i as usize]);
            assert_eq!(map.free_at_or_after(b), want, "free at or after {b}");
        }
    }

    #[test]
    fn marks_and_finds_like_a_vector_of_flags() {
        for n in [1u64, 2, 63, 64, 65, 127, 4096, 4097, 64 * 64 + 3] {
            let mut map = BlockMap::new(n);
            let mut used = vec![false; n as usize];
            let mut rng = fastrand::Rng::with_seed(n);
            let mut steps = 0;
            while !map.is_full() {
                let b = rng.u64(0..n);
                let nr = rng.u64(1..9);
                let start = map.free_at_or_after(b).unwrap();
                // One block goes through `mark_one`, as one-size jobs do.
                let got = if nr == 1 {
                    map.mark_one(start)
                } else {
                    map.mark_run(start, nr)
                };
                let mut want = 0;
                while want < nr
                    && ((start + want) as usize) < used.len()
                    && !used[(start + want) as usize]
                {
                    used[(start + want) as usize] = true;
                    want += 1;
                }
                assert_eq!(got, want, "n={n}: run from {start}");
                assert!(got >= 1, "a free block is always marked");
                steps += 1;
                if n <= 128 || steps % 97 == 0 {
                    check(&map, &used);
                }
            }
            check(&map, &used);
            assert_eq!(map.free_at_or_after(0), None);
            map.reset();
            assert!(!map.is_full());
            check(&map, &vec![false; n as usize]);
        }
    }

    #[test]
    fn a_run_stops_at_a_used_block_and_at_the_end() {
        let mut map = BlockMap::new(200);
        assert_eq!(map.mark_run(70, 1), 1);
        assert_eq!(map.mark_run(60, 16), 10, "stops before block 70");
        assert_eq!(map.mark_run(70, 4), 0, "starts on a used block");
        assert_eq!(map.mark_one(70), 0, "one used block");
        assert_eq!(map.mark_one(200), 0, "past the end");
        assert_eq!(map.mark_run(195, 16), 5, "stops at the map's end");
        assert_eq!(map.free_at_or_after(60), Some(71));
        assert_eq!(map.free_at_or_after(199), Some(0), "wraps");
        // Runs across words and through whole words.
        assert_eq!(map.mark_run(0, 60), 60);
        assert_eq!(map.mark_run(71, 124), 124);
        assert!(map.is_full());
    }

    #[test]
    fn a_map_beyond_memory_is_an_error_not_an_abort() {
        assert!(super::check_alloc(1 << 20).is_ok());
        // 2^54 blocks: a 2 PiB bitmap, beyond any address space.
        let err = super::check_alloc(1 << 54).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("norandommap=1"), "{msg}");
        assert!(msg.contains(&(1u64 << 54).to_string()), "{msg}");
    }

    #[test]
    fn unmarking_takes_a_run_back() {
        let n = 64 * 64 * 2 + 5;
        let mut map = BlockMap::new(n);
        assert_eq!(map.mark_run(0, n), n);
        assert!(map.is_full());
        map.unmark_run(4100, 3);
        assert!(!map.is_full());
        assert_eq!(map.free_at_or_after(0), Some(4100));
        assert_eq!(map.free_at_or_after(4102), Some(4102));
        assert_eq!(map.free_at_or_after(4103), Some(4100), "wraps to 4100");
        assert_eq!(map.mark_run(4100, 8), 3);
        assert!(map.is_full());
        assert_eq!(map.len(), n);
    }
}
