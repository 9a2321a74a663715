//! fio's fixed buckets: the latency distribution (`latency_ns`, `_us`, `_ms`),
//! `IO depths`, and requests per submit and per reap call. Each lookup is a few
//! compares on the per-request path.

/// Upper bounds (exclusive, ns) of fio's latency distribution buckets: `latency_ns`
/// (10), `latency_us` (10), `latency_ms` (11 + the open ">=2000" bucket).
pub const LAT_BUCKET_BOUNDS_NS: [u64; 31] = {
    const STEPS: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
    let mut out = [0u64; 31];
    let mut i = 0;
    while i < 10 {
        out[i] = STEPS[i];
        out[10 + i] = STEPS[i] * 1_000;
        out[20 + i] = STEPS[i] * 1_000_000;
        i += 1;
    }
    out[30] = 2_000 * 1_000_000;
    out
};
/// Buckets of the latency distribution: 31 bounded ones and ">=2000 ms".
pub const LAT_BUCKETS: usize = 32;

/// fio's `IO depths` buckets: 1, 2, 4, 8, 16, 32, >=64.
pub const DEPTH_BUCKETS: usize = 7;

/// Per power of two `k` (values in `[2^k, 2^(k+1))`): how many bounds are at or
/// below `2^k`, and the at most two bounds strictly inside the range (u64::MAX
/// where there are fewer). fio's bounds are at least 4/3 apart, so no binary
/// range holds more than two of them (750 and 1000 share `[512, 1024)`).
const LAT_BUCKET_BY_POW2: [(u64, u64, u64); 64] = {
    let mut out = [(0u64, u64::MAX, u64::MAX); 64];
    let mut k = 0;
    while k < 64 {
        let lo = 1u64 << k;
        let mut below = 0u64;
        let mut inside = [u64::MAX; 2];
        let mut n_inside = 0;
        let mut i = 0;
        while i < LAT_BUCKET_BOUNDS_NS.len() {
            let b = LAT_BUCKET_BOUNDS_NS[i];
            if b <= lo {
                below += 1;
            } else if k == 63 || b < lo << 1 {
                assert!(n_inside < 2, "more than two bounds in one binary range");
                inside[n_inside] = b;
                n_inside += 1;
            }
            i += 1;
        }
        out[k] = (below, inside[0], inside[1]);
        k += 1;
    }
    out
};

/// fio's latency bucket of `ns`: the number of bounds at or below it. One
/// table row picked by the value's highest set bit and two compares, instead
/// of a binary search over 31 bounds on every completion (the search was a
/// third of `Worker::finish` at QD1 on the null device).
#[inline]
pub(super) fn lat_bucket(ns: u64) -> usize {
    // u64::MAX marks an absent bound; no value may reach it (the top bucket
    // starts at 2 s, so clamping changes no answer).
    let ns = ns.min(u64::MAX - 1);
    let k = 63 - (ns | 1).leading_zeros() as usize;
    let (below, a, b) = LAT_BUCKET_BY_POW2[k];
    below as usize + (ns >= a) as usize + (ns >= b) as usize
}

#[inline]
pub(super) fn depth_bucket(inflight: u32) -> usize {
    match inflight {
        0..=1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

#[inline]
pub(super) fn batch_bucket(n: u32) -> usize {
    match n {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}
