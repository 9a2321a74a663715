//! The generator's tests: offsets, passes, mixes and sizes against fio 3.33's
//! figures for the same jobs.

use super::*;
use crate::job::RwMode;

fn job(pattern: Pattern, dir: Direction) -> JobSpec {
    JobSpec {
        rw: RwMode { pattern, dir },
        ..JobSpec::default()
    }
}

#[test]
fn sequential_read_covers_region_once_then_stops() {
    let j = job(Pattern::Seq, Direction::Read);
    let mut g = Generator::new(&j, 8192, 64 * 1024, 1);
    let offs: Vec<u64> = std::iter::from_fn(|| g.next_io())
        .map(|n| n.offset)
        .collect();
    assert_eq!(offs.len(), 16);
    assert_eq!(offs[0], 8192);
    assert_eq!(offs[15], 8192 + 15 * 4096);
}

#[test]
fn random_offsets_stay_aligned_and_inside() {
    let mut j = job(Pattern::Rand, Direction::Read);
    j.bs = [
        BlockSizes::Range {
            min: 512,
            max: 8192,
        },
        BlockSizes::Fixed(4096),
    ];
    let mut g = Generator::new(&j, 4096, 1 << 20, 7);
    let mut n = 0;
    while let Some(io) = g.next_io() {
        assert_eq!(io.offset % 512, 0);
        assert!(io.offset >= 4096 && io.offset + io.len as u64 <= 4096 + (1 << 20));
        assert!(io.len >= 512 && io.len <= 8192 && io.len % 512 == 0);
        n += 1;
    }
    assert!(n > 100);
}

fn offsets(j: &JobSpec, start: u64, len: u64) -> Vec<u64> {
    let mut g = Generator::new(j, start, len, 3);
    std::iter::from_fn(|| g.next_io())
        .map(|n| n.offset)
        .collect()
}

#[test]
fn rw_suffix_leaves_holes_or_goes_backwards() {
    // rw=read:8k with bs=4k: 4k read, 8k hole, ...; 64k of I/O over a 1m region.
    let mut j = job(Pattern::Seq, Direction::Read);
    j.rw_suffix = RwSuffix::Add(8192);
    j.size = Some(64 * 1024);
    let o = offsets(&j, 4096, 1 << 20);
    assert_eq!(&o[..4], &[4096, 4096 + 12288, 4096 + 24576, 4096 + 36864]);
    // The holes use up the region: one pass over 1m is 86 reads (fio 3.33's
    // count for the same job), each inside the region.
    let o = offsets(&j, 0, 1 << 20);
    assert_eq!(o.len(), 86);
    assert!(o.iter().all(|&x| x + 4096 <= 1 << 20), "{o:?}");
    // rw=read:-8k: each read starts 4k below the last; the first is at 0,
    // the next 8k below the region's end (fio 3.33: 0, 56k, 52k, ... 0).
    j.rw_suffix = RwSuffix::Add(-8192);
    let o = offsets(&j, 0, 64 * 1024);
    assert_eq!(o.len(), 16);
    assert_eq!(o[0], 0);
    assert_eq!(o[1], 56 * 1024);
    for w in o[1..].windows(2) {
        assert_eq!(w[0] - w[1], 4096, "backwards by one block: {o:?}");
    }
}

#[test]
fn random_suffix_runs_sequentially_between_random_offsets() {
    // fio 3.33's first 40 offsets (write_iolog) for
    // `--rw=randread:4 --bs=4k --size=1m` (default seeds, thread 1): a
    // random block from fio's generator, then three sequential ones.
    let want: [u64; 40] = [
        61440, 65536, 69632, 73728, 774144, 778240, 782336, 786432, 880640, 884736, 888832, 892928,
        491520, 495616, 499712, 503808, 417792, 421888, 425984, 430080, 884736, 888832, 892928,
        897024, 397312, 401408, 405504, 409600, 368640, 372736, 376832, 380928, 954368, 958464,
        962560, 966656, 69632, 73728, 77824, 81920,
    ];
    let mut j = job(Pattern::Rand, Direction::Read);
    j.rw_suffix = RwSuffix::Every(4);
    let seeds = crate::workload::fio_rand::job_seeds(&j, 1);
    let mut g = Generator::new(&j, 0, 1 << 20, 3).with_fio_seeds(&seeds, true);
    let got: Vec<u64> = (0..40).map(|_| g.next_io().unwrap().offset).collect();
    assert_eq!(got, want);
}

#[test]
fn norandommap_draws_with_replacement() {
    let mut j = job(Pattern::Rand, Direction::Read);
    let mut o = offsets(&j, 0, 1 << 20);
    o.sort_unstable();
    o.dedup();
    assert_eq!(o.len(), 256, "the random map visits every block once");
    j.norandommap = true;
    let mut o = offsets(&j, 0, 1 << 20);
    assert_eq!(o.len(), 256);
    o.sort_unstable();
    o.dedup();
    // 256 draws from 256 blocks leave about 256/e blocks unvisited.
    assert!(o.len() < 200, "{} distinct blocks of 256 draws", o.len());
}

#[test]
fn random_map_visits_every_block_once_per_pass() {
    for blocks in [1u64, 2, 3, 7, 64, 1000, 4097] {
        let j = job(Pattern::Rand, Direction::Read);
        let mut g = Generator::new(&j, 0, blocks * 4096, blocks);
        let mut seen = vec![false; blocks as usize];
        let mut n = 0;
        while let Some(io) = g.next_io() {
            let b = (io.offset / 4096) as usize;
            assert!(!seen[b], "block {b} of {blocks} visited twice");
            seen[b] = true;
            n += 1;
        }
        assert_eq!(n, blocks);
    }
    // Not the identity: a permutation that looks random.
    let j = job(Pattern::Rand, Direction::Read);
    let mut g = Generator::new(&j, 0, 1000 * 4096, 5);
    let first: Vec<u64> = (0..10)
        .map(|_| g.next_io().unwrap().offset / 4096)
        .collect();
    assert_ne!(first, (0..10).collect::<Vec<_>>());
    assert!(
        first.windows(2).any(|w| w[0] % 2 == w[1] % 2),
        "parity must not simply alternate: {first:?}"
    );
}

#[test]
fn same_seed_same_sequence() {
    let j = job(Pattern::Rand, Direction::Mixed);
    let a: Vec<_> = {
        let mut g = Generator::new(&j, 0, 1 << 20, 42);
        std::iter::from_fn(|| g.next_io()).collect()
    };
    let b: Vec<_> = {
        let mut g = Generator::new(&j, 0, 1 << 20, 42);
        std::iter::from_fn(|| g.next_io()).collect()
    };
    assert_eq!(a, b);
}

#[test]
fn rwmix_is_respected_roughly() {
    let mut j = job(Pattern::Rand, Direction::Mixed);
    j.rwmixread = 70;
    j.number_ios = Some(10_000);
    j.time_based = true;
    let mut g = Generator::new(&j, 0, 1 << 20, 3);
    let reads = std::iter::from_fn(|| g.next_io())
        .filter(|n| n.op == Op::Read)
        .count();
    assert!((6500..7500).contains(&reads), "reads={reads}");
}

#[test]
fn fsync_every_n_writes_and_classes() {
    let mut j = job(Pattern::Seq, Direction::Write);
    j.fsync = 2;
    let mut g = Generator::new(&j, 0, 4 * 4096, 1);
    let ops: Vec<_> = std::iter::from_fn(|| g.next_io()).collect();
    let kinds: Vec<Op> = ops.iter().map(|n| n.op).collect();
    // None after the last write: fio looks for a due sync only when it
    // fetches another request.
    assert_eq!(
        kinds,
        [Op::Write, Op::Write, Op::Fsync, Op::Write, Op::Write]
    );
    assert!(ops.iter().all(|n| n.class == Class::SyncWrite));
    let j = job(Pattern::Seq, Direction::Write);
    let mut g = Generator::new(&j, 0, 4096, 1);
    assert_eq!(g.next_io().unwrap().class, Class::AsyncWrite);
}

#[test]
fn fsync_fdatasync_and_sync_file_range_each_count_writes() {
    let mut j = job(Pattern::Seq, Direction::Write);
    (j.fsync, j.syncs.fdatasync, j.syncs.range_every) = (4, 2, 3);
    j.syncs.range_flags = 2;
    let mut g = Generator::new(&j, 0, 13 * 4096, 1);
    let got: Vec<&str> = std::iter::from_fn(|| g.next_io())
        .map(|n| match (n.op, n.flush) {
            (Op::Write, _) => "w",
            (Op::Fsync, Flush::Full) => "fsync",
            (Op::Fsync, Flush::Data) => "fdatasync",
            (Op::Fsync, Flush::Range { flags: 2, len: 0 }) => "range",
            other => panic!("{other:?}"),
        })
        .collect();
    // Write 4, 8, 12: both fsync and fdatasync fall due, the fsync alone
    // goes; write 6 is due for fdatasync and sync_file_range: the fdatasync.
    assert_eq!(
        got.join(" "),
        "w w fdatasync w range w fsync w w fdatasync w w fsync w range w fdatasync w w fsync w"
    );
}

#[test]
fn readahead_marks_sequential_reads() {
    let mut j = job(Pattern::Seq, Direction::Read);
    j.readahead = 256 << 10;
    let mut g = Generator::new(&j, 0, 1 << 20, 1);
    assert_eq!(g.next_io().unwrap().class, Class::Readahead);
}

#[test]
fn loops_and_number_ios_bound_the_job() {
    let mut j = job(Pattern::Seq, Direction::Read);
    j.loops = 3;
    let mut g = Generator::new(&j, 0, 4 * 4096, 1);
    assert_eq!(std::iter::from_fn(|| g.next_io()).count(), 12);
    j.number_ios = Some(5);
    let mut g = Generator::new(&j, 0, 4 * 4096, 1);
    assert_eq!(std::iter::from_fn(|| g.next_io()).count(), 5);
}

#[test]
fn bssplit_picks_only_listed_sizes_in_proportion() {
    let mut j = job(Pattern::Rand, Direction::Read);
    j.bs[0] = BlockSizes::Split(vec![(4096, 75), (65536, 25)]);
    // The random map would shorten I/Os that run into used blocks.
    j.norandommap = true;
    j.number_ios = Some(8000);
    j.time_based = true;
    let mut g = Generator::new(&j, 0, 1 << 24, 9);
    let small = std::iter::from_fn(|| g.next_io())
        .filter(|n| {
            assert!(n.len == 4096 || n.len == 65536);
            n.len == 4096
        })
        .count();
    assert!((5600..6400).contains(&small), "small={small}");
}

#[test]
fn distributions_keep_offsets_inside_and_aligned() {
    use crate::job::RandomDist;
    let dists = [
        RandomDist::Zipf {
            theta: 1.2,
            center: None,
        },
        RandomDist::Zipf {
            theta: 0.5,
            center: Some(1.0),
        },
        RandomDist::Pareto {
            h: 0.2,
            center: Some(0.9),
        },
        RandomDist::Normal {
            dev: 50.0,
            center: Some(0.0),
        },
        RandomDist::Zoned([vec![(50, 5), (30, 15), (20, 80)], vec![(100, 100)]]),
        RandomDist::ZonedAbs([vec![(90, 4096), (10, 60 << 10)], vec![(100, 64 << 10)]]),
    ];
    for dist in dists {
        let mut j = job(Pattern::Rand, Direction::Mixed);
        j.random_distribution = dist.clone();
        j.bs = [
            BlockSizes::Range {
                min: 4096,
                max: 16384,
            },
            BlockSizes::Fixed(8192),
        ];
        j.blockalign = [2048, 8192];
        j.number_ios = Some(5000);
        j.time_based = true;
        let mut g = Generator::new(&j, 1 << 20, 64 << 10, 9);
        let mut n = 0;
        while let Some(io) = g.next_io() {
            let rel = io.offset - (1 << 20);
            let a = if io.op == Op::Read { 2048 } else { 8192 };
            assert_eq!(rel % a, 0, "{dist:?}: {io:?} not aligned to {a}");
            assert!(
                rel + io.len as u64 <= 64 << 10,
                "{dist:?}: {io:?} leaves the region"
            );
            n += 1;
        }
        assert_eq!(n, 5000);
    }
}

#[test]
fn zipf_job_draws_fios_blocks_near_the_law() {
    // 256 blocks, theta 1.2: the blocks are fio's draws (`fio_dist`, here
    // with the generator's own seed until the engine gives fio's), so the
    // hottest 10% take about the share the zipf law gives (fio's
    // approximation of the law, with a fixed seed: the same every run).
    let mut j = job(Pattern::Rand, Direction::Read);
    j.random_distribution = crate::job::RandomDist::Zipf {
        theta: 1.2,
        center: None,
    };
    j.number_ios = Some(100_000);
    j.time_based = true;
    let mut g = Generator::new(&j, 0, 1 << 20, 4);
    let mut fio =
        crate::workload::fio_dist::FioDist::new(&j.random_distribution, 1 << 20, 4096, 4).unwrap();
    let mut hits = vec![0u64; 256];
    while let Some(io) = g.next_io() {
        assert_eq!(io.offset, fio.next_block() * 4096);
        hits[(io.offset / 4096) as usize] += 1;
    }
    hits.sort_unstable_by(|a, b| b.cmp(a));
    let got = hits[..25].iter().sum::<u64>() as f64 / 1e5;
    let norm: f64 = (1..=256).map(|i| (i as f64).powf(-1.2)).sum();
    let want = (1..=25).map(|i| (i as f64).powf(-1.2)).sum::<f64>() / norm;
    assert!(
        (got - want).abs() < 0.03,
        "hot 10%: {got:.4}, zipf says {want:.4}"
    );
}

#[test]
fn percentage_random_mixes_sequential_runs() {
    let mut j = job(Pattern::Rand, Direction::Read);
    j.percentage_random = [25, 100];
    j.number_ios = Some(20_000);
    j.time_based = true;
    let o = offsets(&j, 0, 64 << 20);
    let seq = o.windows(2).filter(|w| w[1] == w[0] + 4096).count();
    // 75% continue from the last I/O (a few wrap at the end).
    let share = seq as f64 / (o.len() - 1) as f64;
    assert!((0.73..0.77).contains(&share), "sequential share {share}");
    j.percentage_random = [0, 100];
    let o = offsets(&j, 0, 1 << 20);
    assert!(o.windows(2).all(|w| w[1] == (w[0] + 4096) % (1 << 20)));
}

#[test]
fn io_size_counts_bytes_not_the_region() {
    let count = |io_size: u64, loops: u32, pattern: Pattern| {
        let mut j = job(pattern, Direction::Read);
        j.io_size = Some(io_size);
        j.loops = loops;
        let mut g = Generator::new(&j, 0, 1 << 20, 1);
        std::iter::from_fn(|| g.next_io())
            .map(|n| n.len as u64)
            .sum::<u64>()
    };
    // fio 3.33 over size=1m at bs=4k: io_size=2m does 2m, 512k does 512k,
    // 6k rounds up to two whole I/Os.
    assert_eq!(count(2 << 20, 1, Pattern::Seq), 2 << 20);
    assert_eq!(count(2 << 20, 1, Pattern::Rand), 2 << 20);
    assert_eq!(count(512 << 10, 1, Pattern::Seq), 512 << 10);
    assert_eq!(count(6 << 10, 1, Pattern::Seq), 8 << 10);
    assert_eq!(count(512 << 10, 2, Pattern::Seq), 1 << 20);
}

#[test]
fn redo_as_takes_back_the_last_request() {
    let mut j = job(Pattern::Seq, Direction::Mixed);
    j.size = Some(1 << 20);
    let mut g = Generator::new(&j, 0, 1 << 20, 1);
    let mut a = Generator::new(&j, 0, 1 << 20, 1);
    let first = g.next_io().unwrap();
    let other = if first.op == Op::Read {
        Op::Write
    } else {
        Op::Read
    };
    let redone = g.redo_as(other).unwrap();
    assert_eq!(redone.op, other);
    assert_eq!(redone.offset, 0, "the other direction starts at its own 0");
    assert!(
        g.redo_as(other).is_some(),
        "the redone one can be taken back too"
    );
    // Taking back leaves no hole: the first direction starts at 0 again.
    let _ = a.next_io();
    let mut seen = 0;
    while let Some(io) = g.next_io() {
        if io.op == first.op {
            assert_eq!(io.offset, 0);
            seen += 1;
            break;
        }
    }
    assert_eq!(seen, 1);
}

/// fio 3.33, `rw=randtrimwrite bs=4k,4k,8k norandommap=1` over 1 MiB
/// (write_iolog): 128 trims of 8k at 8k-aligned offsets, each followed by a
/// write of the range it trimmed.
#[test]
fn trims_take_their_own_block_size() {
    let mut j = job(Pattern::Rand, Direction::TrimWrite);
    j.bs_trim = Some(BlockSizes::Fixed(8192));
    j.norandommap = true;
    let mut g = Generator::new(&j, 0, 1 << 20, 1);
    let ios: Vec<NextIo> = std::iter::from_fn(|| g.next_io()).collect();
    assert_eq!(ios.len(), 256);
    for pair in ios.chunks(2) {
        let (t, w) = (pair[0], pair[1]);
        assert_eq!((t.op, t.len), (Op::Trim, 8192), "{t:?}");
        assert_eq!(t.offset % 8192, 0, "{t:?}");
        assert_eq!((w.op, w.offset, w.len), (Op::Write, t.offset, t.len));
    }
    // Reads and writes of a mixed job keep their own sizes beside it.
    let mut j = job(Pattern::Rand, Direction::Mixed);
    j.bs_trim = Some(BlockSizes::Fixed(8192));
    let mut g = Generator::new(&j, 0, 1 << 20, 1);
    assert!(std::iter::from_fn(|| g.next_io()).all(|io| io.len == 4096));
}

/// Every 512-byte sector of the region once: no I/O overlaps another and
/// together they cover the region (fio's random map with variable sizes,
/// t0023). Returns the sizes issued.
fn tiles_once(ios: &[NextIo], len: u64) -> Vec<u32> {
    let mut seen = vec![false; (len / 512) as usize];
    for io in ios {
        assert_eq!(io.offset % 512, 0, "{io:?}");
        assert!(io.offset + u64::from(io.len) <= len, "{io:?}");
        for s in io.offset / 512..(io.offset + u64::from(io.len)) / 512 {
            assert!(!seen[s as usize], "sector {s} twice ({io:?})");
            seen[s as usize] = true;
        }
    }
    assert!(seen.iter().all(|&s| s), "some sectors never touched");
    ios.iter().map(|io| io.len).collect()
}

#[test]
fn random_map_covers_every_block_with_variable_sizes() {
    let range = BlockSizes::Range {
        min: 512,
        max: 4096,
    };
    let split = BlockSizes::Split(vec![(512, 25), (1024, 25), (2048, 25), (4096, 25)]);
    for (bs, seed) in [(range.clone(), 1), (split, 2), (range, 3)] {
        let mut j = job(Pattern::Rand, Direction::Read);
        j.bs = [bs.clone(), bs];
        let mut g = Generator::new(&j, 0, 1 << 20, seed);
        let ios: Vec<NextIo> = std::iter::from_fn(|| g.next_io()).collect();
        let sizes = tiles_once(&ios, 1 << 20);
        assert_eq!(sizes.iter().map(|&s| u64::from(s)).sum::<u64>(), 1 << 20);
        // Most I/Os keep the size drawn; some are shortened at used blocks
        // (sizes stay whole sectors, and every listed size occurs).
        for want in [512, 1024, 2048, 4096] {
            assert!(sizes.contains(&want), "no {want}-byte I/O");
        }
        assert!(
            sizes.len() > 400 && sizes.len() < 1200,
            "{} I/Os",
            sizes.len()
        );
    }
}

#[test]
fn random_map_with_variable_sizes_starts_over_each_pass() {
    let mut j = job(Pattern::Rand, Direction::Write);
    j.bs = [
        BlockSizes::Fixed(4096),
        BlockSizes::Range {
            min: 4096,
            max: 16384,
        },
    ];
    j.loops = 3;
    let mut g = Generator::new(&j, 8192, 256 * 1024, 9);
    let ios: Vec<NextIo> = std::iter::from_fn(|| g.next_io()).collect();
    let total: u64 = ios.iter().map(|io| u64::from(io.len)).sum();
    assert_eq!(total, 3 * 256 * 1024, "three passes of the whole region");
    // Split into passes where the bytes add up to the region.
    let mut at = 0;
    for _ in 0..3 {
        let mut sum = 0;
        let start = at;
        while sum < 256 * 1024 {
            sum += u64::from(ios[at].len);
            at += 1;
        }
        let pass: Vec<NextIo> = ios[start..at]
            .iter()
            .map(|io| NextIo {
                offset: io.offset - 8192,
                ..*io
            })
            .collect();
        tiles_once(&pass, 256 * 1024);
    }
}

/// fio 3.33's t0023 `bsrange` job: `rw=randtrimwrite bsrange=512-4k` over
/// 1 MiB trims every sector once and writes each trimmed range after it.
#[test]
fn randtrimwrite_with_variable_sizes_trims_every_sector() {
    let mut j = job(Pattern::Rand, Direction::TrimWrite);
    let range = BlockSizes::Range {
        min: 512,
        max: 4096,
    };
    j.bs = [range.clone(), range];
    let mut g = Generator::new(&j, 0, 1 << 20, 4);
    let ios: Vec<NextIo> = std::iter::from_fn(|| g.next_io()).collect();
    let trims: Vec<NextIo> = ios.iter().copied().filter(|io| io.op == Op::Trim).collect();
    tiles_once(&trims, 1 << 20);
    for pair in ios.chunks(2) {
        assert_eq!(pair[0].op, Op::Trim);
        assert_eq!(
            (pair[1].op, pair[1].offset, pair[1].len),
            (Op::Write, pair[0].offset, pair[0].len)
        );
    }
}

/// A mixed job that takes a request back (`redo_as`) frees the blocks it
/// marked: the pass still touches every block exactly once.
#[test]
fn redo_as_frees_the_blocks_of_the_request_taken_back() {
    let mut j = job(Pattern::Rand, Direction::Mixed);
    let range = BlockSizes::Range {
        min: 512,
        max: 8192,
    };
    j.bs = [range.clone(), range];
    let mut g = Generator::new(&j, 0, 512 * 1024, 6);
    let mut ios = Vec::new();
    while let Some(io) = g.next_io() {
        // Every third request is taken back and made in the other direction.
        let io = if ios.len() % 3 == 0 {
            let other = if io.op == Op::Read {
                Op::Write
            } else {
                Op::Read
            };
            g.redo_as(other).expect("a mixed job takes back")
        } else {
            io
        };
        ios.push(io);
    }
    tiles_once(&ios, 512 * 1024);
}

/// fio 3.33's t0024 `bsrange` job: `rw=trimwrite bsrange=512-4k` over 1 MiB
/// trims the region in order, every sector once (the last size fitted to
/// the region's end), each trim followed by the write of its range.
#[test]
fn trimwrite_with_variable_sizes_tiles_the_region() {
    let mut j = job(Pattern::Seq, Direction::TrimWrite);
    let range = BlockSizes::Range {
        min: 512,
        max: 4096,
    };
    j.bs = [range.clone(), range];
    let mut g = Generator::new(&j, 0, 1 << 20, 8);
    let ios: Vec<NextIo> = std::iter::from_fn(|| g.next_io()).collect();
    let trims: Vec<NextIo> = ios.iter().copied().filter(|io| io.op == Op::Trim).collect();
    tiles_once(&trims, 1 << 20);
    assert!(
        trims
            .windows(2)
            .all(|w| w[1].offset == w[0].offset + u64::from(w[0].len))
    );
    for pair in ios.chunks(2) {
        assert_eq!(
            (pair[1].op, pair[1].offset, pair[1].len),
            (Op::Write, pair[0].offset, pair[0].len)
        );
    }
}

/// A random map beyond memory is refused when the job starts (naming
/// `norandommap`); without the map nothing is allocated.
#[test]
fn a_random_map_beyond_memory_is_refused() {
    let mut j = job(Pattern::Rand, Direction::Read);
    j.bs[0] = BlockSizes::Range {
        min: 512,
        max: 4096,
    };
    let huge = 1u64 << 63;
    assert!(check_random_map(&j, 1 << 30).is_ok());
    let err = check_random_map(&j, huge).unwrap_err();
    assert!(err.to_string().contains("norandommap=1"), "{err}");
    j.norandommap = true;
    assert!(check_random_map(&j, huge).is_ok());
    // One size keeps fio's map too (fio's axmap), refused alike.
    let fixed = job(Pattern::Rand, Direction::Read);
    assert!(check_random_map(&fixed, huge).is_err());
    assert!(check_random_map(&fixed, 1 << 30).is_ok());
}
