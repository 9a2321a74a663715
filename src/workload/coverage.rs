//! The coverage map: fio's random map (every block once per pass) as a
//! memoryless permutation, O(1) space and O(1) per draw.

/// A random permutation of `[0, n)` drawn one value at a time without memory:
/// fio's random map (every block once per pass) at O(1) space. A full-period
/// LCG over the next power of two walks every value of `[0, m)` once per period;
/// a bijective xorshift-multiply scramble on top hides the LCG's regular low
/// bits; values `>= n` are skipped (fewer than half, since `m < 2n`).
#[derive(Clone, Debug)]
pub(crate) struct Coverage {
    n: u64,
    mask: u64,
    shift: u32,
    a: u64,
    c: u64,
    k: u64,
    x: u64,
}

impl Coverage {
    /// A fresh permutation of `[0, n)`, its constants drawn from `rng`.
    pub(crate) fn new(n: u64, rng: &mut fastrand::Rng) -> Coverage {
        let bits = 64 - n.max(2).saturating_sub(1).leading_zeros();
        let mask = if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        Coverage {
            n: n.max(1),
            mask,
            shift: (bits / 2).max(1),
            // Hull-Dobell for a power-of-two modulus: c odd, a = 1 (mod 4).
            a: (rng.u64(..) << 2) | 1,
            c: rng.u64(..) | 1,
            k: rng.u64(..) | 1,
            x: rng.u64(..) & mask,
        }
    }

    /// The next value of the permutation.
    #[inline(always)]
    pub(crate) fn next(&mut self) -> u64 {
        loop {
            self.x = self.a.wrapping_mul(self.x).wrapping_add(self.c) & self.mask;
            let mut y = self.x;
            y ^= y >> self.shift;
            y = y.wrapping_mul(self.k) & self.mask;
            y ^= y >> self.shift;
            if y < self.n {
                return y;
            }
        }
    }
}
