//! The recorder checked: exact moments, bounded percentiles, hdrhistogram's
//! layout bin for bin, fio's bucket edges, and merging.

use super::buckets::*;
use super::hist::*;
use super::*;
use hdrhistogram::Histogram;
use proptest::prelude::*;

fn cfg() -> RecorderConfig {
    RecorderConfig {
        slat: true,
        interval_ns: 1_000,
        intervals: 100,
        classes: true,
    }
}

fn sample(op: Op, class: Class, v: u64, t: u64) -> Sample {
    Sample {
        op,
        class,
        bytes: 4096,
        slat_ns: v / 10,
        clat_ns: v,
        lat_ns: v + v / 10,
        done_ns: t,
    }
}

/// Exact percentile by fio's/HDR's rank rule: smallest value with at least
/// ceil(p/100 * n) samples at or below it.
fn exact(sorted: &[u64], p: f64) -> u64 {
    let rank = ((p / 100.0 * sorted.len() as f64).ceil() as usize).max(1);
    sorted[rank - 1]
}

#[test]
fn histogram_never_resizes_and_clamps_beyond_an_hour() {
    let mut h = LatHist::new();
    assert!(!h.histogram().is_auto_resize());
    let len = h.histogram().distinct_values();
    let bytes = h.footprint_bytes();
    h.record(HIGHEST_NS * 5);
    h.record(0);
    assert_eq!(h.histogram().distinct_values(), len);
    assert_eq!(h.footprint_bytes(), bytes);
    assert_eq!(h.clamped(), 1);
    assert_eq!(h.max(), HIGHEST_NS);
    assert_eq!(h.min(), 0);
}

#[test]
fn known_samples_give_exact_moments_and_bounded_percentiles() {
    let mut h = LatHist::new();
    let vals: Vec<u64> = (1..=10_000u64).map(|i| i * 997).collect();
    for &v in &vals {
        h.record(v);
    }
    assert_eq!(h.count(), 10_000);
    assert_eq!(h.min(), 997);
    assert_eq!(h.max(), 9_970_000);
    let mean = vals.iter().sum::<u64>() as f64 / vals.len() as f64;
    assert!((h.mean() - mean).abs() < 1e-6);
    let var = vals.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / 9_999.0;
    assert!((h.stddev() - var.sqrt()).abs() / var.sqrt() < 1e-9);
    // fio's default percentile list (job::spec::DEFAULT_PERCENTILES; written
    // out here: measure sits below job).
    let list = [
        1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9,
        99.95, 99.99,
    ];
    let got = h.percentiles(&list);
    for w in got.windows(2) {
        assert!(w[0] <= w[1], "percentiles must be ordered: {got:?}");
    }
    for (&p, &g) in list.iter().zip(&got) {
        let e = exact(&vals, p);
        assert!(g >= e, "p{p}: {g} < exact {e}");
        assert!(
            (g - e) as f64 <= e as f64 * RELATIVE_ERROR,
            "p{p}: {g} vs exact {e} beyond the stated bound"
        );
    }
}

#[test]
fn small_values_are_exact() {
    let mut h = LatHist::new();
    for v in [3u64, 5, 7, 1999, 2047] {
        h.record(v);
    }
    assert_eq!(h.percentile(20.0), 3);
    assert_eq!(h.percentile(60.0), 7);
    assert_eq!(h.percentile(100.0), 2047);
}

#[test]
fn stddev_matches_fio_definition() {
    let mut h = LatHist::new();
    for v in [2u64, 4, 4, 4, 5, 5, 7, 9] {
        h.record(v);
    }
    // sample variance: sum sq dev = 32, n-1 = 7
    assert!((h.stddev() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
    let mut one = LatHist::new();
    one.record(5);
    assert_eq!(one.stddev(), 0.0);
}

#[test]
fn record_counts_directions_classes_buckets_and_intervals() {
    let mut r = Recorder::new_at(cfg(), 10_000);
    r.record_sample(&sample(Op::Read, Class::Read, 1_500, 10_100));
    r.record_sample(&sample(Op::Read, Class::Readahead, 15, 11_100));
    r.record_sample(&sample(Op::Write, Class::AsyncWrite, 3_000_000, 12_999));
    r.record_sample(&sample(Op::Fsync, Class::SyncWrite, 700, 13_000));
    r.record_error(Op::Write, 5);
    r.record_error(Op::Read, 6);
    assert_eq!(r.dirs[0].total_ios, 3);
    assert_eq!(r.dirs[0].clat.count(), 2);
    assert_eq!(r.dirs[0].io_bytes, 8192);
    assert_eq!(r.dirs[1].errors, 1);
    assert_eq!(r.first_error, 5);
    assert_eq!(r.dirs[Op::Fsync.dir()].lat.count(), 1);
    assert_eq!(r.classes[Class::Readahead.index()].ios, 1);
    // 1500 ns -> "2" us bucket (index 10); 15 ns -> "20" ns (3); 3 ms -> "4" ms (21);
    // the fsync is not in the distribution, like fio.
    assert_eq!(r.lat_buckets[10], 1);
    assert_eq!(r.lat_buckets[3], 1);
    assert_eq!(r.lat_buckets[21], 1);
    assert_eq!(r.lat_buckets.iter().sum::<u64>(), 3);
    let slots = r.log.slots();
    assert_eq!(slots.len(), 4);
    // `[read, write, trim, sync]`: the fsync is the fourth direction.
    assert_eq!(slots[0].ios, [1, 0, 0, 0]);
    assert_eq!(slots[1].ios, [1, 0, 0, 0]);
    assert_eq!(slots[2].ios, [0, 1, 0, 0]);
    assert_eq!(slots[3].ios, [0, 0, 0, 1]);
    r.record_sample(&sample(Op::Read, Class::Read, 1, 10_000 + 1_000 * 100));
    assert_eq!(r.log.dropped, 1);
    r.reset(50_000);
    assert_eq!(r.dirs[0].total_ios, 0);
    assert_eq!(r.dirs[0].clat.count(), 0);
    assert!(r.log.slots().is_empty());
    assert_eq!(r.lat_buckets.iter().sum::<u64>(), 0);
}

#[test]
fn slat_off_for_sync_backends() {
    let mut r = Recorder::new_at(
        RecorderConfig {
            slat: false,
            ..cfg()
        },
        0,
    );
    r.record(Op::Read, 512, 9, 10, 11);
    assert_eq!(r.dirs[0].slat.count(), 0);
    assert_eq!(r.dirs[0].clat.count(), 1);
}

#[test]
fn lat_bucket_table_equals_a_search_over_the_bounds() {
    let search = |ns: u64| LAT_BUCKET_BOUNDS_NS.partition_point(|&b| b <= ns);
    let mut vals = vec![0u64, 1, u64::MAX, u64::MAX - 1, HIGHEST_NS];
    for b in LAT_BUCKET_BOUNDS_NS {
        vals.extend([b - 1, b, b + 1]);
    }
    for k in 0..64 {
        let p = 1u64 << k;
        vals.extend([p - 1, p, p + 1, p | (p >> 1)]);
    }
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..100_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Spread over every magnitude, not only the large ones.
        vals.push(x >> (x % 64));
    }
    for v in vals {
        assert_eq!(lat_bucket(v), search(v), "value {v}");
    }
}

#[test]
fn lat_bucket_edges_follow_fio() {
    assert_eq!(lat_bucket(0), 0);
    assert_eq!(lat_bucket(1), 0);
    assert_eq!(lat_bucket(2), 1);
    assert_eq!(lat_bucket(999), 9);
    assert_eq!(lat_bucket(1_000), 10);
    assert_eq!(lat_bucket(999_999), 19);
    assert_eq!(lat_bucket(1_999_999_999), 30);
    assert_eq!(lat_bucket(2_000_000_000), 31);
    assert_eq!(depth_bucket(1), 0);
    assert_eq!(depth_bucket(64), 6);
    assert_eq!(batch_bucket(4), 1);
    assert_eq!(batch_bucket(65), 6);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn merge_equals_recording_everything_in_one(
        a in proptest::collection::vec((0u8..3, 0u8..4, 0u64..5_000_000_000, 0u64..90_000), 0..200),
        b in proptest::collection::vec((0u8..3, 0u8..4, 0u64..5_000_000_000, 0u64..90_000), 0..200),
    ) {
        let ops = [Op::Read, Op::Write, Op::Fsync];
        let mk = |&(o, c, v, t): &(u8, u8, u64, u64)| sample(ops[o as usize], Class::ALL[c as usize], v, t);
        let mut ra = Recorder::new_at(cfg(), 0);
        let mut rb = Recorder::new_at(cfg(), 0);
        let mut all = Recorder::new_at(cfg(), 0);
        for s in a.iter().map(mk) { ra.record_sample(&s); all.record_sample(&s); }
        for s in b.iter().map(mk) { rb.record_sample(&s); all.record_sample(&s); }
        ra.merge(&rb);
        for d in 0..DIRS {
            let (m, e) = (&ra.dirs[d], &all.dirs[d]);
            prop_assert_eq!(m.total_ios, e.total_ios);
            prop_assert_eq!(m.io_bytes, e.io_bytes);
            for (x, y) in [(&m.slat, &e.slat), (&m.clat, &e.clat), (&m.lat, &e.lat)] {
                prop_assert_eq!(x.count(), y.count());
                prop_assert_eq!(x.min(), y.min());
                prop_assert_eq!(x.max(), y.max());
                prop_assert_eq!(x.mean(), y.mean());
                prop_assert_eq!(x.stddev(), y.stddev());
                prop_assert_eq!(x.histogram(), y.histogram());
            }
        }
        for c in 0..Class::COUNT {
            prop_assert_eq!(ra.classes[c].clat.histogram(), all.classes[c].clat.histogram());
        }
        prop_assert_eq!(ra.lat_buckets, all.lat_buckets);
        prop_assert_eq!(ra.log.slots(), all.log.slots());
        prop_assert_eq!(ra.log.dropped, all.log.dropped);
    }
}

/// Values over the whole range: every power of two and its neighbours (the
/// bucket edges) and log-uniform random ones.
fn spread_values() -> Vec<u64> {
    let mut v: Vec<u64> = (0..42)
        .flat_map(|b| {
            let p = 1u64 << b;
            [p - 1, p, p + 1]
        })
        .filter(|&x| (1..=HIGHEST_NS).contains(&x))
        .collect();
    let mut rng = fastrand::Rng::with_seed(7);
    for _ in 0..100_000 {
        let bits = rng.u32(1..=42);
        v.push(rng.u64(1..(1u64 << bits)).min(HIGHEST_NS));
    }
    v
}

#[test]
fn bin_of_and_bin_range_are_hdrhistograms_index() {
    let hdr = Histogram::<u64>::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGFIG).unwrap();
    let edges = [
        0,
        1,
        2,
        1023,
        1024,
        2046,
        2047,
        2048,
        2049,
        2050,
        4094,
        4095,
        4096,
        4097,
        8191,
        8192,
        1_000_000,
        HIGHEST_NS - 1,
        HIGHEST_NS,
    ];
    let mut last = 0;
    for v in edges.into_iter().chain(spread_values()) {
        let i = bin_of(v);
        let (low, width) = bin_range(i);
        assert_eq!(low, hdr.lowest_equivalent(v), "lowest of {v}");
        assert_eq!(width, hdr.equivalent_range(v), "width of {v}");
        assert!((low..low + width).contains(&v), "{v} outside bin {i}");
        // hdrhistogram's own index of v: the bin its single count lands
        // in (a full scan each, so for the edges and a sample of the rest).
        if edges.contains(&v) || v % 499 == 0 {
            let mut one = Histogram::<u64>::new_from(&hdr);
            one.record(v).unwrap();
            let at: Vec<usize> = one
                .iter_all()
                .enumerate()
                .filter(|(_, x)| x.count_since_last_iteration() > 0)
                .map(|(k, _)| k)
                .collect();
            assert_eq!(at, vec![i], "index of {v}");
        }
        if v >= last {
            assert!(i >= bin_of(last), "bins not monotone at {v}");
            last = v;
        }
    }
    assert!(bin_of(HIGHEST_NS) < hdr.distinct_values());
    assert_eq!(bin_range(bin_of(2047)), (2047, 1));
    assert_eq!(bin_range(bin_of(2048)), (2048, 2));
    assert_eq!(bin_range(bin_of(4095)), (4094, 2));
    assert_eq!(bin_range(bin_of(4096)), (4096, 4));
}

#[test]
fn bins_are_hdrhistograms_bins() {
    let vals = spread_values();
    let mut own = LatHist::new();
    let mut hdr = Histogram::<u64>::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGFIG).unwrap();
    assert_eq!(own.counts.len(), hdr.distinct_values());
    for &v in &vals {
        own.record(v);
        hdr.record(v).unwrap();
    }
    // Same bins and counts, total, min and max.
    assert!(own.histogram() == hdr);
    for p in [
        0.0, 0.001, 1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.5, 99.9, 99.99, 100.0,
    ] {
        assert_eq!(
            own.percentile(p),
            hdr.value_at_percentile(p).min(own.max()),
            "p{p}"
        );
    }
    // One value, and one value many times: min and max in the same bin.
    for n in [1, 3] {
        let mut one = LatHist::new();
        let mut h1 = Histogram::<u64>::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGFIG).unwrap();
        for _ in 0..n {
            one.record(123_457);
            h1.record(123_457).unwrap();
        }
        assert!(one.histogram() == h1);
        assert_eq!(one.percentile(50.0), 123_457);
    }
    assert_eq!(LatHist::new().histogram().len(), 0);
}

#[test]
fn merged_bins_are_the_bins_of_all_values() {
    let vals = spread_values();
    let (a, b) = vals.split_at(vals.len() / 3);
    let (mut ha, mut hb, mut all) = (LatHist::new(), LatHist::new(), LatHist::new());
    a.iter().for_each(|&v| ha.record(v));
    b.iter().for_each(|&v| hb.record(v));
    vals.iter().for_each(|&v| all.record(v));
    ha.merge(&hb);
    assert_eq!(ha.counts, all.counts);
    assert!(ha.histogram() == all.histogram());
    assert_eq!(
        ha.percentiles(&[50.0, 99.0]),
        all.percentiles(&[50.0, 99.0])
    );
}
