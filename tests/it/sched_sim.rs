//! Study 003's experiment in the deterministic device model (`sched::sim`): a
//! periodic 4 KiB reader beside a 256 KiB sequential read-ahead stream.

use iolab::job::spec::{LaqParams, SchedKind};
use iolab::sched::sim::{SimConfig, SimError, SimResult, simulate};

fn run(kind: SchedKind, period_us: u64) -> SimResult {
    let cfg = SimConfig {
        fg_period_ns: period_us * 1000,
        ..SimConfig::default()
    };
    let r = simulate(kind, LaqParams::default(), &cfg).unwrap();
    eprintln!(
        "period {period_us:>5} us {:>4}: fg reads {:>5} mean {:>6} us p99 {:>6} us max {:>6} us | bg {:>4} MB/s | held max/min {}/{} windows {} at ois_min {} ms",
        r.sched,
        r.fg_reads,
        r.fg_lat_mean_ns / 1000,
        r.fg_lat_p99_ns / 1000,
        r.fg_lat_max_ns / 1000,
        r.bg_bytes_per_sec / 1_000_000,
        r.stats.held_by_ois_max,
        r.stats.held_by_ois_min,
        r.stats.windows,
        r.stats.time_at_ois_min_ns / 1_000_000,
    );
    r
}

#[test]
fn laq_protects_the_periodic_reader_and_keeps_background_bandwidth() {
    for period_us in [5000, 500] {
        let noop = run(SchedKind::Noop, period_us);
        let prio = run(SchedKind::Prio, period_us);
        let laq = run(SchedKind::Laq, period_us);
        let expected = 2_000_000 / period_us - 10_000 / period_us;
        for r in [&noop, &prio, &laq] {
            // Reads still in the device when the run ends are not counted.
            let in_flight_at_end = r.fg_lat_max_ns / (period_us * 1000) + 2;
            assert!(
                r.fg_reads + in_flight_at_end >= expected,
                "{}: only {} of ~{expected} periodic reads finished",
                r.sched,
                r.fg_reads
            );
        }
        // The device queue holds the whole read-ahead window under noop: the
        // periodic read waits behind it. Host priority alone cannot help, since
        // the device already holds everything.
        assert!(noop.fg_lat_mean_ns > 3_000_000, "{noop:?}");
        assert!(
            prio.fg_lat_mean_ns * 10 > noop.fg_lat_mean_ns * 8,
            "{prio:?}"
        );
        // LAQ keeps OIS at the saturation point: the read waits for one channel.
        assert!(
            laq.fg_lat_mean_ns * 3 < noop.fg_lat_mean_ns,
            "laq {} ns vs noop {} ns",
            laq.fg_lat_mean_ns,
            noop.fg_lat_mean_ns
        );
        // ... and background read-ahead is slowed, not starved.
        assert!(laq.bg_bytes_per_sec * 2 > noop.bg_bytes_per_sec, "{laq:?}");
        assert!(laq.stats.dispatched.readahead > 0);
    }
}

#[test]
fn a_period_inside_t_wait_keeps_the_window_open_and_the_reads_fast() {
    // With reads every 0.5 ms (< t_wait = 1 ms) read-ahead stays at ois_min,
    // leaving room for the next read (the study's "period < 1 ms" case).
    let slow = run(SchedKind::Laq, 5000);
    let fast = run(SchedKind::Laq, 500);
    assert!(fast.stats.time_at_ois_min_ns > 1_900_000_000, "{fast:?}");
    assert!(
        fast.fg_lat_mean_ns < slow.fg_lat_mean_ns,
        "{fast:?} vs {slow:?}"
    );
    assert!(fast.bg_bytes_per_sec < slow.bg_bytes_per_sec);
}

#[test]
fn bad_model_parameters_are_named() {
    let cfg = SimConfig {
        fg_period_ns: 0,
        ..SimConfig::default()
    };
    let e = simulate(SchedKind::Laq, LaqParams::default(), &cfg).unwrap_err();
    assert_eq!(e, SimError::Zero("fg_period_ns"));
    assert_eq!(
        e.to_string(),
        "simulated device: fg_period_ns must be greater than 0"
    );
}
