// Own binary: clock::init() picks the TSC as the clock of the whole process.
//! Block tracing while the engine clock reads the TSC: the trace instance stamps
//! events with `x86-tsc` and they are scaled with the engine's own calibration.
//! Checks on a live trace of a zram this test creates that every request's kernel
//! stamps fall inside the engine-clock window of the read that caused it (the
//! per-request join is exact) and agree with CLOCK_MONOTONIC within a bound; and
//! that only the events a device kind can fire are enabled; and that a run larger
//! than half the ring buffer is read while it goes, without losing events.
//! Own test binary: `clock::init()` picks the TSC for the whole process.
//! Root only (zram, loop, tracefs); otherwise each test says why it skipped.

mod support;

use support::needs::skip;

use std::time::Duration;

use iolab::measure::blktrace::{
    Action, BlockTrace, BlockTraceOptions, join, match_requests, render_breakdown,
};
use iolab::measure::clock;
use iolab::measure::tracefs::Tracefs;

use support::trace as trace_common;

use trace_common::*;

#[test]
fn tsc_trace_clock_joins_exactly_and_agrees_with_monotonic() {
    if !root() {
        return;
    }
    clock::init();
    if clock::tsc_scale().is_none() {
        skip(format_args!(
            "the engine clock is {} here (TSC not constant/nonstop or not the \
             kernel clocksource), so tracing uses `mono`",
            clock::source()
        ));
        return;
    }
    if !Tracefs::open().unwrap().offers_clock("x86-tsc") {
        skip("this kernel's trace_clock has no x86-tsc");
        return;
    }
    let Some(z) = zram_16m() else {
        return;
    };
    let trace = BlockTrace::start(&z.path(), opts()).unwrap();
    assert_eq!(trace.clock(), "x86-tsc");
    // Spread the reads over a few hundred ms so a wrong scale factor would show
    // as drift, not only an offset.
    let mut user = Vec::new();
    let mut mono = Vec::new();
    for _ in 0..4 {
        let (u, m) = direct_reads(&z.path(), 500);
        user.extend(u);
        mono.extend(m);
        std::thread::sleep(Duration::from_millis(100));
    }
    let res = trace.stop().unwrap();
    assert_eq!(res.clock, "x86-tsc");
    let (reqs, st) = match_requests(&res.events);
    assert_eq!(st.by_action[Action::Q as usize], 2000);
    let b = join(&user, &reqs, 0);
    assert_eq!(
        b.joined.len(),
        2000,
        "every read's Q and C must fall inside its engine-clock window\n{}",
        render_breakdown(&b)
    );
    // The same requests against CLOCK_MONOTONIC: the engine clock is anchored to
    // it, so converted stamps sit inside each read's monotonic window up to the
    // calibration's error (a few ppm of the time since calibration, < 50 us here).
    const BOUND_NS: i64 = 50_000;
    let mut worst = 0i64;
    for (u, &(m0, m1)) in user.iter().zip(&mono) {
        let r = reqs
            .iter()
            .find(|r| r.sector == u.offset / 512 && r.q >= Some(u.t_submit_start))
            .expect("joined above");
        for ts in [r.q.unwrap(), r.c.unwrap()] {
            let off = if ts < m0 {
                m0 as i64 - ts as i64
            } else if ts > m1 {
                ts as i64 - m1 as i64
            } else {
                0
            };
            worst = worst.max(off);
        }
    }
    assert!(
        worst <= BOUND_NS,
        "kernel stamps on x86-tsc, scaled to the engine clock, are {worst} ns outside \
         CLOCK_MONOTONIC windows (bound {BOUND_NS} ns)"
    );
    eprintln!("x86-tsc trace vs CLOCK_MONOTONIC: worst {worst} ns outside the windows");
}

#[test]
fn only_events_the_device_kind_fires_are_enabled() {
    if !root() {
        return;
    }
    let Some(z) = zram_16m() else {
        return;
    };
    let t = BlockTrace::start(&z.path(), opts()).unwrap();
    assert_eq!(t.events(), ["block_bio_queue", "block_bio_complete"]);
    t.stop().unwrap();

    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let file = dir.path().join("backing");
    std::fs::File::create(&file)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let Some(lo) = loop_on(&file) else {
        return;
    };
    let t = BlockTrace::start(&lo.path(), opts()).unwrap();
    let ev = t.events().to_vec();
    let (user, _) = direct_reads(&lo.path(), 50);
    let res = t.stop().unwrap();
    for e in [
        "block_bio_queue",
        "block_getrq",
        "block_rq_issue",
        "block_rq_complete",
    ] {
        assert!(ev.contains(&e), "{e} missing from {ev:?}");
    }
    assert!(!ev.contains(&"block_bio_complete"), "{ev:?}");
    let (reqs, st) = match_requests(&res.events);
    assert_eq!(st.by_action[Action::Cb as usize], 0);
    let b = join(&user, &reqs, 0);
    assert_eq!(b.joined.len(), 50, "{}", render_breakdown(&b));
}

#[test]
fn collector_reads_a_half_full_buffer_during_the_run() {
    if !root() {
        return;
    }
    let Some(z) = zram_16m() else {
        return;
    };
    // 1 MiB per CPU holds ~18000 events: 30000 reads (60000 events) only fit if
    // the collector reads each half-full buffer while the reads go on. Pauses
    // give it room on a busy machine, where it can wait ~50 ms for a CPU.
    let t = BlockTrace::start(
        &z.path(),
        BlockTraceOptions {
            buffer_kb: 1024,
            drain_every: Duration::from_millis(5),
            sampling: None,
        },
    )
    .unwrap();
    let mut user = Vec::new();
    for _ in 0..60 {
        user.extend(direct_reads(&z.path(), 500).0);
        std::thread::sleep(Duration::from_millis(10));
    }
    let res = t.stop().unwrap_or_else(|e| panic!("{e:#}"));
    assert!(!res.loss.any_loss(), "{}", res.loss.describe());
    let (reqs, st) = match_requests(&res.events);
    assert_eq!(st.by_action[Action::Q as usize], 30_000);
    let b = join(&user, &reqs, 0);
    assert_eq!(b.joined.len(), 30_000, "{}", render_breakdown(&b));
}
