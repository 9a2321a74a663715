//! fio's latency bins for `--output-format=json+` (`clat_ns.bins`).
//!
//! fio keeps completion latencies in a fixed log-linear histogram of 1856 bins
//! (29 groups of 64): values below 128 ns have a bin each; above, every power
//! of two `[2^k, 2^(k+1))` is cut into 64 equal bins of width `2^(k-6)`. A bin
//! is named in json+ by its representative value, the middle of the bin
//! rounded down (a bin of width 1 is named by its value). Everything from
//! about 17.2 s up falls into the last bin. `fio_jsonplus_clat2csv` and the
//! other consumers read the `bins` object as "value in ns" -> count.
//!
//! iolab records latencies in HDR histograms with 3 significant digits
//! ([`crate::measure::recorder`]): exact below 2048 ns, and above it buckets
//! of width `2^(k-10)` inside `[2^k, 2^(k+1))`. Those buckets are power-of-two
//! aligned and never wider than fio's, so each lies wholly inside one fio bin:
//! moving counts from HDR buckets to fio bins loses nothing beyond fio's own
//! binning. The bins hold exactly the counts fio would have produced for the
//! same latencies, and a percentile read from them is off from the true value
//! by at most fio's half bin width, 1/128 (0.8 %) of the value, while the
//! `percentile` object beside them keeps iolab's own 0.1 % bound. Samples iolab
//! clamped at its histogram ceiling (1 hour, `iolab.histogram.clamped`) land in
//! fio's last bin, as fio's would.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};

use crate::measure::recorder::LatHist;

/// Bits of linear resolution per power of two (64 bins per group).
const PLAT_BITS: u32 = 6;
/// Bins per group.
const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// Groups; fio's histogram has `PLAT_GROUPS * PLAT_VAL` bins.
const PLAT_GROUPS: u64 = 29;
/// Number of bins in fio's latency histogram.
pub const PLAT_NR: u64 = PLAT_GROUPS * PLAT_VAL;

/// fio's bin index for a latency in ns.
pub fn bin_index(ns: u64) -> u64 {
    if ns < 2 * PLAT_VAL {
        return ns;
    }
    let msb = 63 - ns.leading_zeros();
    // Bits below the 6 kept after the leading one are what the bin forgets.
    let shift = msb - PLAT_BITS;
    let group_base = u64::from(shift + 1) << PLAT_BITS;
    let within = (ns >> shift) & (PLAT_VAL - 1);
    (group_base + within).min(PLAT_NR - 1)
}

/// The value fio names bin `idx` by: its middle, rounded down.
pub fn bin_value(idx: u64) -> u64 {
    if idx < 2 * PLAT_VAL {
        return idx;
    }
    let shift = (idx >> PLAT_BITS) - 1;
    let lower = 1u64 << (shift + u64::from(PLAT_BITS));
    let width = 1u64 << shift;
    lower + (idx & (PLAT_VAL - 1)) * width + width / 2
}

/// Non-empty fio bins as (representative ns, count), ascending.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioBins(pub Vec<(u64, u64)>);

impl FioBins {
    /// The bins of one latency series, `None` when it has no samples (fio
    /// writes no `bins` then, and its consumers expect at least one bin when
    /// the key is there).
    pub fn of(h: &LatHist) -> Option<FioBins> {
        if h.count() == 0 {
            return None;
        }
        let hist = h.histogram();
        let mut out: Vec<(u64, u64)> = Vec::new();
        for v in hist.iter_recorded() {
            // Any value of the HDR bucket names the same fio bin (see the
            // module comment); take its lowest.
            let idx = bin_index(hist.lowest_equivalent(v.value_iterated_to()));
            let n = v.count_at_value();
            match out.last_mut() {
                Some((last, c)) if *last == idx => *c += n,
                _ => out.push((idx, n)),
            }
        }
        Some(FioBins(
            out.into_iter().map(|(i, n)| (bin_value(i), n)).collect(),
        ))
    }

    pub fn total(&self) -> u64 {
        self.0.iter().map(|(_, n)| n).sum()
    }

    /// Percentile `p` of `total` samples as fio reports it (stat.c): the
    /// name of the first bin at which the running count reaches `p` % of
    /// the samples. None when the bins hold fewer (they never do: `total`
    /// is their sum).
    pub fn percentile(&self, p: f64, total: u64) -> Option<u64> {
        let mut sum = 0u64;
        self.0.iter().find_map(|&(v, n)| {
            sum += n;
            reaches(sum, p, total).then_some(v)
        })
    }
}

/// Whether `count` samples reach `p` % of `total`: `count >= p / 100 *
/// total`, decided exactly (fio computes it in long double, which is exact
/// for every percentile and sample count a run has in practice; doubles
/// would round 99.9 % of 1000 samples to exactly 999 and stop a bin early).
fn reaches(count: u64, p: f64, total: u64) -> bool {
    if p <= 0.0 {
        return count > 0;
    }
    // p = m * 2^e exactly.
    let bits = p.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | 1u64 << 52, exp - 1075)
    };
    let lhs = u128::from(count) * 100;
    let rhs = u128::from(m) * u128::from(total);
    if e >= 0 {
        // p >= 2^52: no count reaches it.
        return rhs == 0;
    }
    // count * 100 >= rhs / 2^-e; count is whole, so against the ceiling.
    let sh = e.unsigned_abs();
    let need = if sh >= 128 {
        u128::from(rhs > 0)
    } else {
        (rhs >> sh) + u128::from(rhs & ((1u128 << sh) - 1) != 0)
    };
    lhs >= need
}

impl serde::Serialize for FioBins {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (v, n) in &self.0 {
            m.serialize_entry(&v.to_string(), n)?;
        }
        m.end()
    }
}

impl<'de> serde::Deserialize<'de> for FioBins {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FioBins;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of latency in ns -> count")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<FioBins, A::Error> {
                let mut out = Vec::with_capacity(m.size_hint().unwrap_or(0));
                while let Some((k, n)) = m.next_entry::<String, u64>()? {
                    let v = k.parse::<u64>().map_err(|_| {
                        de::Error::custom(format!("bin key `{k}` is not a latency in ns"))
                    })?;
                    out.push((v, n));
                }
                out.sort_unstable();
                Ok(FioBins(out))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_match_fio_names() {
        // Names seen in real fio 3.33 json+ output.
        for (ns, name) in [
            (20, 20),
            (121, 121),
            (127, 127),
            (131, 131),
            (8256, 8256),
            (8300, 8256),
        ] {
            assert_eq!(bin_value(bin_index(ns)), name, "{ns}");
        }
        assert_eq!(bin_index(128), 128);
        assert_eq!(bin_value(PLAT_NR - 1), 17_112_760_320);
        assert_eq!(bin_index(u64::MAX), PLAT_NR - 1);
    }

    #[test]
    fn every_value_lands_in_the_bin_that_contains_it() {
        for idx in 128..PLAT_NR {
            let shift = (idx >> PLAT_BITS) - 1;
            let lower = (1u64 << (shift + 6)) + (idx & 63) * (1 << shift);
            let upper = lower + (1 << shift) - 1;
            assert_eq!(bin_index(lower), idx);
            assert_eq!(bin_index(upper), idx);
            let mid = bin_value(idx);
            assert!(lower <= mid && mid <= upper);
            // The half-width bound the module states.
            assert!((mid - lower) as f64 <= lower as f64 / 128.0 + 0.5);
        }
    }

    #[test]
    fn percentiles_are_read_from_the_bins_as_fio_reads_them() {
        // 1000 samples: 10 ns x 500, 20 ns x 499, 300 ns x 1.
        let b = FioBins(vec![(10, 500), (20, 499), (300, 1)]);
        assert_eq!(b.percentile(50.0, 1000), Some(10));
        assert_eq!(b.percentile(50.1, 1000), Some(20));
        // 99.9 % of 1000 is a hair above 999 (99.9 is not exact in binary):
        // the 999th sample does not reach it, the last bin does.
        assert_eq!(b.percentile(99.9, 1000), Some(300));
        assert_eq!(b.percentile(99.8, 1000), Some(20));
        assert_eq!(b.percentile(100.0, 1000), Some(300));
        assert_eq!(b.percentile(1.0, 1000), Some(10));
        assert!(!reaches(999, 99.9, 1000) && reaches(1000, 99.9, 1000));
        assert!(reaches(998, 99.8, 1000) && !reaches(997, 99.8, 1000));
        assert!(reaches(500, 50.0, 1000) && !reaches(499, 50.0, 1000));
    }

    #[test]
    fn hdr_counts_move_whole_into_fio_bins() {
        let mut h = LatHist::new();
        let mut n = 0;
        let mut v = 1u64;
        while v < 30_000_000_000 {
            h.record(v);
            h.record(v + v / 3);
            n += 2;
            v = v * 5 / 4 + 1;
        }
        let b = FioBins::of(&h).unwrap();
        assert_eq!(b.total(), n);
        assert!(b.0.windows(2).all(|w| w[0].0 < w[1].0), "ascending, unique");
        // Each sample's own fio bin holds it: compare with direct binning.
        let mut direct = std::collections::BTreeMap::new();
        let mut v = 1u64;
        while v < 30_000_000_000 {
            for x in [v, v + v / 3] {
                let x = x.min(crate::measure::recorder::HIGHEST_NS);
                *direct.entry(bin_value(bin_index(x))).or_insert(0u64) += 1;
            }
            v = v * 5 / 4 + 1;
        }
        assert_eq!(b.0, direct.into_iter().collect::<Vec<_>>());
        assert_eq!(FioBins::of(&LatHist::new()), None);
    }
}
