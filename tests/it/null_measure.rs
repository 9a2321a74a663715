//! Costs of the null device's hot path and of its interrupt modes, printed for the
//! record (meaningful in a release build):
//! `cargo test --release --test null_measure -- --nocapture`.
//! Only correctness is asserted; the numbers depend on the machine.

use std::time::Duration;

use iolab::device::null::NullDevice;
use iolab::device::{Queue, Queued, Wait};
use iolab::job::spec::{IrqMode, NullParams};
use iolab::measure::clock::{now_ns, self_check, set_thread_timer_slack_ns, sleep_until};
use iolab::request::{Class, Completion, IoCmd};

fn read(slot: u32) -> IoCmd {
    crate::backend_common::null_read(slot, 0, Class::Read)
}

fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

#[test]
fn hot_path_costs() {
    let clock = self_check();

    // A peek that finds nothing: the command is due in 10 s.
    let p = NullParams {
        lat: Duration::from_secs(10),
        ..NullParams::default()
    };
    let mut d = NullDevice::new(&p, 1 << 20, 1, 0).unwrap();
    assert_eq!(d.queue(&read(0)).unwrap(), Queued::Pending);
    d.commit().unwrap();
    let mut out = [Completion::default(); 1];
    const PEEKS: u64 = 2_000_000;
    let t0 = now_ns();
    let mut found = 0;
    for _ in 0..PEEKS {
        found += d.reap(Wait::Peek, &mut out).unwrap();
    }
    let peek_ns = (now_ns() - t0) as f64 / PEEKS as f64;
    assert_eq!(found, 0);

    // QD1 with zero device latency: queue + commit + peek until it is back.
    let mut d = NullDevice::new(&NullParams::default(), 1 << 20, 1, 0).unwrap();
    const TRIPS: u64 = 1_000_000;
    let t0 = now_ns();
    for i in 0..TRIPS {
        d.queue(&read(i as u32)).unwrap();
        d.commit().unwrap();
        while d.reap(Wait::Peek, &mut out).unwrap() == 0 {}
        assert_eq!(out[0].slot, i as u32);
    }
    let trip_ns = (now_ns() - t0) as f64 / TRIPS as f64;

    println!(
        "null hot path: clock read {:.1} ns; empty peek {peek_ns:.1} ns; \
         QD1 zero-latency queue+commit+peek round trip {trip_ns:.1} ns",
        clock.cost_ns
    );
}

/// Wake-up delay past the completion time (seen - dev_done) per interrupt mode,
/// next to a bare hrtimer sleep of the same length as the baseline.
#[test]
fn interrupt_wakeup_overshoot() {
    set_thread_timer_slack_ns(1);
    let mut bare: Vec<u64> = (0..2000)
        .map(|_| {
            let at = now_ns() + 50_000;
            sleep_until(at);
            now_ns() - at
        })
        .collect();
    println!(
        "bare clock_nanosleep(50 us, slack 1 ns): woke {} ns (median) after the deadline",
        median(&mut bare)
    );
    for mode in [IrqMode::Timer, IrqMode::Thread] {
        let p = NullParams {
            lat: Duration::from_micros(50),
            irqmode: mode,
            ..NullParams::default()
        };
        let mut d = NullDevice::new(&p, 1 << 20, 1, 0).unwrap();
        let mut out = [Completion::default(); 1];
        let mut late: Vec<u64> = Vec::with_capacity(2000);
        for i in 0..2000u32 {
            d.queue(&read(i)).unwrap();
            d.commit().unwrap();
            assert_eq!(d.reap(Wait::Sleep { min: 1 }, &mut out).unwrap(), 1);
            let seen = now_ns();
            assert!(seen >= out[0].dev_done);
            late.push(seen - out[0].dev_done);
        }
        let s = d.stats();
        // Each sleep ends on one interrupt. A reap finds its I/O already done
        // (no sleep) only when the thread lost its CPU for the device's 50 us
        // between commit and reap: on a busy VM that is rare, not never.
        assert_eq!(s.wait_calls, s.interrupts, "{mode:?}");
        assert!((1900..=2000).contains(&s.wait_calls), "{mode:?}: {s:?}");
        let p99 = {
            late.sort_unstable();
            late[late.len() * 99 / 100]
        };
        println!(
            "null irqmode={mode:?}: completion seen {} ns (median), {p99} ns (p99) after dev_done",
            median(&mut late)
        );
    }
}
