//! Live tracefs checks: need root and tracefs; skip with a reason otherwise.

use crate::support;

use support::needs::{Need, ready, skip};

use iolab::measure::clock::monotonic_ns;
use iolab::measure::tracefs::{Tracefs, field_i64};

fn tracefs_or_skip() -> Option<Tracefs> {
    if !ready(&[Need::Root]) {
        return None;
    }
    match Tracefs::open() {
        Ok(t) => Some(t),
        Err(e) => {
            skip(format_args!("{e:#}"));
            None
        }
    }
}

fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

#[test]
fn raw_reader_counts_exact_syscalls_on_the_mono_clock() {
    let _one = crate::support::serial::one_at_a_time();
    let Some(tfs) = tracefs_or_skip() else { return };
    let mut inst = tfs.new_instance().unwrap();
    let dir = inst.dir().to_path_buf();
    inst.set_clock("mono").unwrap();
    assert_eq!(inst.clock().unwrap(), "mono");
    inst.set_buffer_size_kb(4096).unwrap();
    let enter = inst.enable_event("raw_syscalls", "sys_enter").unwrap();
    let exit = inst.enable_event("raw_syscalls", "sys_exit").unwrap();
    let nr = enter.field("id").unwrap().clone();
    let tid = gettid();
    inst.set_filter(
        "raw_syscalls",
        "sys_enter",
        &format!("id == {}", libc::SYS_getppid),
    )
    .unwrap();
    inst.set_filter(
        "raw_syscalls",
        "sys_exit",
        &format!("id == {}", libc::SYS_getppid),
    )
    .unwrap();
    inst.add_event_pids(&[tid]).unwrap();
    assert_eq!(inst.event_pids().unwrap(), vec![tid]);
    inst.open_readers().unwrap();
    inst.set_tracing_on(true).unwrap();
    // CLOCK_MONOTONIC itself: the engine clock (`now_ns`) reads the TSC once
    // any test in this process has initialised it, which agrees with mono
    // only to within its calibration.
    let t0 = monotonic_ns();
    const N: usize = 12_345;
    for _ in 0..N {
        // SAFETY: getppid has no preconditions.
        unsafe { libc::getppid() };
    }
    let t1 = monotonic_ns();
    inst.set_tracing_on(false).unwrap();
    let (mut n_enter, mut n_exit, mut in_window) = (0usize, 0usize, 0usize);
    inst.drain(|ev| {
        assert_eq!(ev.pid, tid);
        if ev.id == enter.id {
            n_enter += 1;
            assert_eq!(field_i64(ev.payload, &nr), Some(libc::SYS_getppid));
        } else if ev.id == exit.id {
            n_exit += 1;
        }
        if ev.ts >= t0 && ev.ts <= t1 {
            in_window += 1;
        }
    })
    .unwrap();
    assert_eq!((n_enter, n_exit), (N, N));
    assert_eq!(
        in_window,
        2 * N,
        "trace_clock mono must match CLOCK_MONOTONIC"
    );
    assert!(!inst.loss_report().unwrap().any_loss());
    inst.remove().unwrap();
    assert!(!dir.exists());
}

#[test]
fn instance_is_removed_on_drop_after_an_error() {
    let _one = crate::support::serial::one_at_a_time();
    let Some(tfs) = tracefs_or_skip() else { return };
    let dir;
    {
        let inst = tfs.new_instance().unwrap();
        dir = inst.dir().to_path_buf();
        let err = inst.set_filter("raw_syscalls", "sys_enter", "no_such_field == 3");
        assert!(err.is_err());
        let msg = format!("{:#}", err.unwrap_err());
        assert!(msg.contains("no_such_field"), "{msg}");
        assert!(inst.enable_event("nosystem", "noevent").is_err());
        assert!(dir.exists());
    }
    assert!(!dir.exists(), "instance left behind: {}", dir.display());
}
