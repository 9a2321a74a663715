// Own binary: installs a counting global allocator.
//! The recorder's hot path: no allocation per request, and what one call costs.
//!
//! A counting global allocator proves `record_sample`/`record` allocate nothing
//! (also when values are out of range or the interval log is full). It counts
//! this thread's allocations only: the recorder runs here, and libtest's main
//! thread may allocate while it waits for the test (a CI run once saw 4). The cost per
//! call is printed; in release builds it must stay under a generous bound
//! (`cargo test --release --test report_record_cost -- --nocapture`).

use iolab::measure::clock::now_ns;
use iolab::measure::cpu::ThreadUsage;
use iolab::measure::recorder::{HIGHEST_NS, Recorder, RecorderConfig, Sample};
use iolab::request::{Class, Op};

mod counting_alloc;

use counting_alloc::thread_allocations as allocations;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

const N: u64 = 2_000_000;

fn samples() -> Vec<Sample> {
    let ops = [Op::Read, Op::Write, Op::Fsync];
    let mut x = 0x9E3779B97F4A7C15u64;
    (0..4096u64)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Spread over ns..s, plus a few beyond the one-hour range.
            let v = if i % 1000 == 999 {
                HIGHEST_NS * 2
            } else {
                (x % 1_000_000) << (x % 20)
            };
            Sample {
                op: ops[(x % 3) as usize],
                class: Class::ALL[(x % 4) as usize],
                bytes: 4096,
                slat_ns: v / 8,
                clat_ns: v,
                lat_ns: v + v / 8,
                done_ns: i * 400_000,
            }
        })
        .collect()
}

#[test]
fn record_allocates_nothing_and_is_cheap() {
    // The counter sees this thread's allocations (else the checks below could not fail).
    let before = allocations();
    drop(std::hint::black_box(Box::new(7u64)));
    assert_eq!(allocations() - before, 1);
    let input = samples();
    // Small log: samples past its end exercise the `dropped` path too.
    let mut rec = Recorder::new_at(
        RecorderConfig {
            slat: true,
            interval_ns: 1_000_000,
            intervals: 64,
            classes: true,
        },
        0,
    );
    let before = allocations();
    let ru0 = ThreadUsage::now();
    let t0 = now_ns();
    for i in 0..N {
        let s = &input[(i & 4095) as usize];
        rec.record_sample(s);
    }
    let t1 = now_ns();
    for i in 0..N / 4 {
        let s = &input[(i & 4095) as usize];
        rec.record(s.op, s.bytes, s.slat_ns, s.clat_ns, s.lat_ns);
    }
    let t2 = now_ns();
    let ru = ThreadUsage::delta(&ru0, &ThreadUsage::now());
    let allocs = allocations() - before;
    assert_eq!(allocs, 0, "the recorder allocated on its hot path");
    // Memory was touched at construction: no first-touch page faults while recording.
    assert_eq!(
        ru.minflt + ru.majflt,
        0,
        "page faults while recording: {ru:?}"
    );
    assert!(rec.log.dropped > 0 && rec.clamped() > 0);
    let per_sample = (t1 - t0) as f64 / N as f64;
    let per_record = (t2 - t1) as f64 / (N / 4) as f64;
    eprintln!("recorder footprint: {} KiB", rec.footprint_bytes() / 1024);
    eprintln!(
        "record_sample: {per_sample:.1} ns/call, record (reads the clock): {per_record:.1} ns/call ({})",
        if cfg!(debug_assertions) {
            "debug build"
        } else {
            "release build"
        }
    );
    if !cfg!(debug_assertions) {
        assert!(per_sample < 500.0, "record_sample costs {per_sample:.1} ns");
    }

    // A realistic device: latencies clustered around 20 us, one op and class.
    let clustered: Vec<Sample> = input
        .iter()
        .map(|s| Sample {
            op: Op::Read,
            class: Class::Read,
            slat_ns: 1_500 + s.clat_ns % 500,
            clat_ns: 18_000 + s.clat_ns % 4_000,
            lat_ns: 20_000 + s.clat_ns % 4_000,
            ..*s
        })
        .collect();
    let before = allocations();
    let t0 = now_ns();
    for i in 0..N {
        rec.record_sample(&clustered[(i & 4095) as usize]);
    }
    let per_clustered = (now_ns() - t0) as f64 / N as f64;
    assert_eq!(allocations() - before, 0);
    eprintln!("record_sample, clustered latencies: {per_clustered:.1} ns/call");
}
