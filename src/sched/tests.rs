use std::time::Duration;

use super::*;

const KIB: u32 = 1024;

fn req(slot: u32, class: Class, bytes: u32) -> SchedReq {
    SchedReq {
        slot,
        class,
        bytes,
        stream: 0,
        arrival_ns: 0,
    }
}

fn params(max: u64, min: u64, t_wait_ns: u64) -> LaqParams {
    LaqParams {
        ois_max: max,
        ois_min: min,
        t_wait: Duration::from_nanos(t_wait_ns),
    }
}

fn drain(s: &mut Scheduler, now: u64) -> Vec<u32> {
    std::iter::from_fn(|| s.dispatch(now))
        .map(|r| r.slot)
        .collect()
}

#[test]
fn noop_is_one_fifo_without_a_limit() {
    let mut s = Scheduler::new(SchedKind::Noop, params(8 * 1024, 4096, 1000), 8).unwrap();
    s.enqueue(req(1, Class::AsyncWrite, 64 * KIB), 0).unwrap();
    s.enqueue(req(2, Class::Readahead, 64 * KIB), 0).unwrap();
    s.enqueue(req(3, Class::Read, 4 * KIB), 0).unwrap();
    s.enqueue(req(4, Class::AsyncWrite, 64 * KIB), 0).unwrap();
    assert_eq!(drain(&mut s, 0), [1, 2, 3, 4]);
    assert_eq!(s.ois(), (3 * 64 + 4) as u64 * 1024);
    assert_eq!(s.pending(), 0);
}

#[test]
fn prio_orders_classes_and_keeps_the_high_group_fifo() {
    let mut s = Scheduler::new(SchedKind::Prio, LaqParams::default(), 8).unwrap();
    s.enqueue(req(1, Class::AsyncWrite, 4096), 0).unwrap();
    s.enqueue(req(2, Class::Readahead, 4096), 0).unwrap();
    s.enqueue(req(3, Class::SyncWrite, 4096), 0).unwrap();
    s.enqueue(req(4, Class::Read, 4096), 0).unwrap();
    s.enqueue(req(5, Class::SyncWrite, 4096), 0).unwrap();
    s.enqueue(req(6, Class::Readahead, 4096), 0).unwrap();
    assert_eq!(drain(&mut s, 0), [3, 4, 5, 2, 6, 1]);
    let st = s.stats(0);
    assert_eq!(st.dispatched.syncwrite, 2);
    assert_eq!(st.dispatched.asyncwrite, 1);
    assert_eq!(st.dispatched.total(), 6);
}

#[test]
fn laq_caps_ois_and_holds_low_classes_to_ois_min_in_the_window() {
    // ois_max 1 MiB, ois_min 512 KiB, t_wait 1 ms.
    let mut s = Scheduler::new(SchedKind::Laq, LaqParams::default(), 16).unwrap();
    for i in 0..6 {
        s.enqueue(req(i, Class::Readahead, 256 * KIB), 0).unwrap();
    }
    // Without a high-priority arrival, read-ahead fills OIS up to ois_max.
    assert_eq!(drain(&mut s, 0), [0, 1, 2, 3]);
    assert_eq!(s.ois(), 1 << 20);
    assert_eq!(
        s.next_event_ns(),
        None,
        "held by OIS: only a completion helps"
    );

    // A foreground read at t=100 us is itself bound by ois_max.
    s.enqueue(req(10, Class::Read, 4 * KIB), 100_000).unwrap();
    assert_eq!(s.dispatch(100_000), None);
    s.complete(Class::Readahead, 256 * KIB, 200_000);
    assert_eq!(s.dispatch(200_000).map(|r| r.slot), Some(10));
    assert_eq!(s.low_cap(200_000), Some(512 * 1024));
    assert_eq!(s.cap_for(Class::Read, 200_000), Some(1 << 20));
    // 772 KiB + 256 KiB > ois_max: only a completion can help.
    assert_eq!(s.dispatch(200_000), None);
    assert_eq!(s.next_event_ns(), None);
    // 768 KiB + 256 KiB fits ois_max but not the window's ois_min.
    s.complete(Class::Read, 4 * KIB, 300_000);
    assert_eq!(s.dispatch(300_000), None);
    assert_eq!(s.next_event_ns(), Some(1_100_000));
    s.complete(Class::Readahead, 256 * KIB, 400_000);
    assert_eq!(s.dispatch(400_000), None, "512 KiB + 256 KiB > ois_min");
    s.complete(Class::Readahead, 256 * KIB, 500_000);
    assert_eq!(drain(&mut s, 500_000), [4]);
    assert_eq!(s.ois(), 512 * 1024);
    assert_eq!(s.next_event_ns(), Some(1_100_000));
    // When the window closes, the cap is back at ois_max.
    assert_eq!(drain(&mut s, 1_100_000), [5]);
    assert_eq!(s.next_event_ns(), None);

    let st = s.stats(2_100_000);
    assert_eq!(st.windows, 1);
    assert_eq!(st.time_at_ois_min_ns, 1_000_000);
    assert_eq!(st.time_at_ois_max_ns, 1_100_000);
    // Slot 4 and the read were held by ois_max (each counted once, by the first
    // reason); slot 5 only by the window.
    assert_eq!(st.held_by_ois_max, 2);
    assert_eq!(st.held_by_ois_min, 1);
    assert_eq!(st.ois_peak, 1 << 20);
    assert_eq!(st.oversize, 0);
}

#[test]
fn high_priority_never_waits_behind_low_and_asyncwrite_waits_for_everything() {
    let mut s = Scheduler::new(SchedKind::Laq, params(64 * 1024, 32 * 1024, 0), 16).unwrap();
    s.enqueue(req(1, Class::AsyncWrite, 4 * KIB), 0).unwrap();
    s.enqueue(req(2, Class::Readahead, 64 * KIB), 0).unwrap();
    s.enqueue(req(3, Class::Read, 4 * KIB), 0).unwrap();
    assert_eq!(
        drain(&mut s, 0),
        [3],
        "readahead must wait: 4 KiB + 64 KiB > cap"
    );
    s.complete(Class::Read, 4 * KIB, 1);
    assert_eq!(drain(&mut s, 1), [2]);
    s.complete(Class::Readahead, 64 * KIB, 2);
    assert_eq!(drain(&mut s, 2), [1]);
}

#[test]
fn a_request_larger_than_the_cap_goes_alone_when_ois_is_zero() {
    let mut s = Scheduler::new(SchedKind::Laq, params(64 * 1024, 32 * 1024, 1000), 4).unwrap();
    s.enqueue(req(1, Class::Readahead, 4096), 0).unwrap();
    s.enqueue(req(2, Class::Readahead, 1 << 20), 0).unwrap();
    assert_eq!(drain(&mut s, 0), [1]);
    s.complete(Class::Readahead, 4096, 5);
    assert_eq!(drain(&mut s, 5), [2]);
    assert_eq!(s.stats(5).oversize, 1);
}

#[test]
fn full_scheduler_hands_the_request_back() {
    let mut s = Scheduler::new(SchedKind::Prio, LaqParams::default(), 1).unwrap();
    s.enqueue(req(1, Class::Read, 4096), 0).unwrap();
    let back = s.enqueue(req(2, Class::Read, 4096), 0);
    assert_eq!(back.map_err(|r| r.slot), Err(2));
    // Under prio another class has its own ring.
    s.enqueue(req(3, Class::Readahead, 4096), 0).unwrap();
    assert_eq!(s.stats(0).rejected_full, 1);
    assert_eq!(s.pending(), 2);
    assert_eq!(s.pending_class(Class::Readahead), 1);
    // noop keeps one FIFO of `capacity` for all classes.
    let mut s = Scheduler::new(SchedKind::Noop, LaqParams::default(), 1).unwrap();
    s.enqueue(req(1, Class::Read, 4096), 0).unwrap();
    let back = s.enqueue(req(3, Class::Readahead, 4096), 0);
    assert_eq!(back.map_err(|r| r.slot), Err(3));
    assert_eq!(s.pending_class(Class::Read), 1);
    assert_eq!(s.pending_class(Class::Readahead), 0);
}

#[test]
fn unmatched_completion_is_counted_not_hidden() {
    let mut s = Scheduler::new(SchedKind::Noop, LaqParams::default(), 1).unwrap();
    s.complete(Class::Read, 4096, 0);
    assert_eq!(s.ois(), 0);
    assert_eq!(s.stats(0).unmatched_completions, 1);
}

#[test]
fn bad_parameters_name_the_option() {
    let new = |cap, p| Scheduler::new(SchedKind::Laq, p, cap).err();
    assert_eq!(new(0, LaqParams::default()), Some(SchedError::ZeroCapacity));
    assert_eq!(new(1, params(0, 0, 0)), Some(SchedError::ZeroOisMax));
    assert_eq!(new(1, params(10, 0, 0)), Some(SchedError::ZeroOisMin));
    let e = new(1, params(10, 20, 0)).unwrap();
    assert_eq!(
        e.to_string(),
        "ois_min (20 bytes) must not exceed ois_max (10 bytes)"
    );
}

#[test]
fn for_job_takes_the_jobs_scheduler_and_parameters() {
    let job = JobSpec {
        scheduler: SchedKind::Laq,
        laq: params(4096, 2048, 10),
        ..JobSpec::default()
    };
    let s = Scheduler::for_job(&job, 4).unwrap();
    assert_eq!(s.kind(), SchedKind::Laq);
    assert_eq!(s.low_cap(0), Some(4096));
}

#[test]
fn wake_deadline_is_the_earlier_of_the_paced_due_time_and_the_window_end() {
    // ois_max 1 MiB, ois_min 512 KiB, t_wait 1 ms.
    let mut s = Scheduler::new(SchedKind::Laq, LaqParams::default(), 16).unwrap();
    for i in 0..4 {
        s.enqueue(req(i, Class::Readahead, 256 * KIB), 0).unwrap();
    }
    // Nothing held: only a paced stream can ask for a wake-up.
    assert_eq!(s.wake_deadline(None), 0);
    assert_eq!(s.wake_deadline(Some(7)), 7);
    // A read opens the window; read-ahead is then held by it with requests in
    // flight (two at the device): the window end must wake the worker, since
    // no completion may come before it.
    s.enqueue(req(10, Class::Read, 4 * KIB), 100_000).unwrap();
    assert_eq!(drain(&mut s, 100_000), [10, 0]);
    s.complete(Class::Read, 4 * KIB, 170_000);
    assert_eq!(drain(&mut s, 170_000), [1]);
    assert_eq!(s.dispatch(170_000), None, "512 KiB at the device: ois_min");
    assert_eq!(s.ois(), 512 * 1024);
    assert_eq!(s.wake_deadline(None), 1_100_000);
    assert_eq!(s.wake_deadline(Some(900_000)), 900_000);
    assert_eq!(s.wake_deadline(Some(2_000_000)), 1_100_000);
    // At the window end the other half goes at once.
    assert_eq!(drain(&mut s, 1_100_000), [2, 3]);
    assert_eq!(s.wake_deadline(None), 0);
    // noop never holds by time.
    let mut n = Scheduler::new(SchedKind::Noop, LaqParams::default(), 4).unwrap();
    n.enqueue(req(0, Class::Readahead, 256 * KIB), 0).unwrap();
    assert_eq!(n.wake_deadline(Some(5)), 5);
    assert_eq!(n.wake_deadline(None), 0);
}
