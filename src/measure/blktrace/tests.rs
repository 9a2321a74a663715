use super::*;

use crate::request::Op;
use crate::sys::blockdev::kernel_dev;

fn ev(ts: u64, action: Action, sector: u64) -> BlockEvent {
    BlockEvent {
        ts,
        action,
        dev: kernel_dev(7, 0),
        sector,
        nr_sector: 8,
        write: false,
        pid: 1,
        error: 0,
    }
}

#[test]
fn matches_full_request_path_out_of_cpu_order() {
    use Action::*;
    // Completion recorded on another CPU arrives first in the input.
    let evs = [
        ev(900, C, 0),
        ev(100, Q, 0),
        ev(150, G, 0),
        ev(200, I, 0),
        ev(400, D, 0),
    ];
    let (reqs, st) = match_requests(&evs);
    assert_eq!(reqs.len(), 1);
    assert_eq!(st.completed, 1);
    let t = btt_table(&reqs, &st);
    assert_eq!((t.q2g.min_ns, t.g2i.min_ns, t.i2d.min_ns), (50, 50, 200));
    assert_eq!((t.d2c.max_ns, t.q2c.n, t.q2c.avg_ns), (500, 1, 800.0));
    assert!(t.notes.is_empty(), "{:?}", t.notes);
}

#[test]
fn windows_never_pair_events_across_a_gap() {
    use Action::*;
    // Sector 8 is queued in the first window and completes in the second:
    // unseen in between, so it must not become one 2 ms request.
    let evs = [
        ev(100, Q, 8),
        ev(300, Q, 16),
        ev(900, Cb, 16),
        ev(2_000_100, Cb, 8),
        ev(2_000_200, Q, 24),
        ev(2_000_700, Cb, 24),
    ];
    let w = [
        Window {
            start: 50,
            end: 1_000,
        },
        Window {
            start: 2_000_000,
            end: 2_001_000,
        },
    ];
    let (reqs, st) = match_windows(&evs, &w);
    let q2c: Vec<u64> = reqs.iter().map(|r| r.c.unwrap() - r.q.unwrap()).collect();
    assert_eq!(q2c, vec![600, 500]);
    assert_eq!((st.orphan_completions, st.in_flight_at_end), (1, 1));
    assert_eq!(st.events, 6);
    assert_eq!(st.outside_windows, 0);
    let (_, st) = match_windows(&evs, &w[1..]);
    assert_eq!(st.outside_windows, 3, "the first window's events");
    // Without windows the same events pair sector 8 across the gap.
    let (all, _) = match_windows(&evs, &[]);
    assert_eq!(all.len(), 3);
}

#[test]
fn bio_based_device_reports_missing_stages() {
    use Action::*;
    let evs = [
        ev(10, Q, 8),
        ev(5_010, Cb, 8),
        ev(6_000, Q, 16),
        ev(9_000, Cb, 16),
    ];
    let (reqs, st) = match_requests(&evs);
    let t = btt_table(&reqs, &st);
    assert_eq!(t.q2c.n, 2);
    assert_eq!(t.d2c.n, 0);
    assert!(t.notes[0].contains("bio-based"));
    assert_eq!(t.q2c_hist.buckets, vec![0, 1, 1]);
    let txt = render_btt(&t);
    assert!(txt.contains("D2C                          -"), "{txt}");
}

#[test]
fn merges_orphans_and_in_flight_are_counted() {
    use Action::*;
    let evs = [
        ev(1, C, 99),
        ev(10, Q, 0),
        ev(11, G, 0),
        ev(12, Q, 8),
        BlockEvent {
            ts: 13,
            ..ev(13, Mb, 8)
        },
        ev(20, D, 0),
        ev(30, C, 0),
        ev(40, Q, 64),
    ];
    let (reqs, st) = match_requests(&evs);
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].nr_sector, 16);
    assert_eq!(reqs[0].merged, 1);
    assert_eq!(
        (st.merged_bios, st.orphan_completions, st.in_flight_at_end),
        (1, 1, 1)
    );
}

#[test]
fn histogram_buckets_are_log2_microseconds() {
    let mut h = Log2Hist::default();
    for ns in [0, 1_999, 2_000, 3_999, 4_000, 1_000_000] {
        h.add_ns(ns);
    }
    assert_eq!(h.buckets[0], 2);
    assert_eq!(h.buckets[1], 2);
    assert_eq!(h.buckets[2], 1);
    assert_eq!(h.buckets[9], 1, "1000 us is in [512, 1024)");
    assert_eq!(h.total(), 6);
}

#[test]
fn join_splits_time_between_layers() {
    use Action::*;
    let evs = [
        ev(1_100, Q, 16),
        ev(1_200, G, 16),
        ev(1_500, D, 16),
        ev(9_500, C, 16),
        ev(20_000, Q, 16),
        ev(21_000, Cb, 16),
    ];
    let (reqs, _) = match_requests(&evs);
    let user = [
        UserIo {
            offset: 8192,
            len: 4096,
            op: Op::Read,
            t_submit_start: 1_000,
            t_submit_end: 1_700,
            t_complete_seen: 10_000,
        },
        UserIo {
            offset: 8192,
            len: 4096,
            op: Op::Write,
            t_submit_start: 19_000,
            t_submit_end: 19_500,
            t_complete_seen: 22_000,
        },
    ];
    let b = join(&user, &reqs, 0);
    assert_eq!(b.joined.len(), 1, "write must not match a read request");
    let j = b.joined[0];
    assert_eq!(
        (
            j.user_ns,
            j.block_ns,
            j.device_ns,
            j.completion_ns,
            j.total_ns
        ),
        (100, Some(400), Some(8_000), 500, 9_000)
    );
    assert_eq!(b.unmatched_user, 1);
    assert_eq!(b.unclaimed_requests, 1);
    let txt = render_breakdown(&b);
    assert!(txt.contains("driver+device (D -> C)"), "{txt}");
}

#[test]
fn join_takes_users_of_several_streams_in_any_order() {
    use Action::*;
    // Two streams hit the same sector; their logs arrive one after the other,
    // the later stream first.
    let evs = [
        ev(150, Q, 8),
        ev(400, Cb, 8),
        ev(1_100, Q, 8),
        ev(1_900, Cb, 8),
        ev(2_100, Q, 8),
        ev(2_300, Cb, 8),
    ];
    let (reqs, _) = match_requests(&evs);
    let u = |s, e| UserIo {
        offset: 4096,
        len: 4096,
        op: Op::Read,
        t_submit_start: s,
        t_submit_end: e,
        t_complete_seen: e,
    };
    let user = [u(1_000, 2_000), u(2_050, 2_400), u(100, 500), u(600, 700)];
    let b = join(&user, &reqs, 0);
    assert_eq!(b.joined.len(), 3);
    assert_eq!(b.unmatched_user, 1, "600..700 saw no request");
    assert_eq!(b.unclaimed_requests, 0);
    let mut totals: Vec<u64> = b.joined.iter().map(|j| j.total_ns).collect();
    totals.sort_unstable();
    assert_eq!(totals, [350, 400, 1_000]);
}

#[test]
fn parses_text_trace_lines() {
    let l = "     ksoftirqd/1-22      [001] ..s..   626.589779: block_rq_complete: \
             7,0 RS () 0 + 8 be,0,4 [0]";
    let e = parse_trace_line(l).unwrap();
    assert_eq!(
        (e.action, e.dev, e.sector, e.nr_sector, e.pid, e.ts),
        (Action::C, kernel_dev(7, 0), 0, 8, 22, 626_589_779_000)
    );
    let l = "   dd-19976   [000] .....   626.589685: block_rq_issue: 7,0 WS 4096 () 8 + 8 \
             be,0,4 [dd]";
    let e = parse_trace_line(l).unwrap();
    assert_eq!((e.action, e.sector, e.write), (Action::D, 8, true));
    assert!(parse_trace_line("# tracer: nop").is_none());
    assert!(parse_trace_line("  x-1 [000] ..... 1.0: sys_enter: NR 3").is_none());
}
