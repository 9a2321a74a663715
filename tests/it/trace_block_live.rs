//! Live block breakdown on devices this test creates (a hot-added zram, a loop
//! device on a temp file), joined with user-side timestamps taken around pread.
//! Needs root; skips with a reason otherwise.

use iolab::measure::blktrace::{
    Action, BlockTrace, LayerSplit, btt_table, join, match_requests, render_breakdown, render_btt,
};

use crate::support::trace as trace_common;

use trace_common::*;

#[test]
fn zram_is_bio_based_and_reports_only_q2c() {
    let _one = crate::support::serial::one_at_a_time();
    if !root() {
        return;
    }
    let Some(z) = zram_16m() else {
        return;
    };
    let trace = BlockTrace::start(&z.path(), opts()).unwrap();
    let (user, _) = direct_reads(&z.path(), 200);
    let res = trace.stop().unwrap();
    let (reqs, st) = match_requests(&res.events);
    let t = btt_table(&reqs, &st);
    assert_eq!(st.by_action[Action::Q as usize], 200);
    assert_eq!(st.by_action[Action::D as usize], 0);
    assert_eq!(t.q2c.n, 200);
    assert_eq!(t.d2c.n, 0);
    assert!(
        t.notes.iter().any(|n| n.contains("bio-based")),
        "{:?}",
        t.notes
    );
    let b = join(&user, &reqs, 0);
    assert_eq!(b.joined.len(), 200, "{}", render_breakdown(&b));
    assert_eq!(LayerSplit::of(&b.joined, None).block.n, 0);
    for j in &b.joined {
        assert_eq!(j.user_ns + j.q2c_ns + j.completion_ns, j.total_ns);
    }
    eprintln!("{}\n{}", render_btt(&t), render_breakdown(&b));
}

#[test]
fn loop_device_has_request_stages_and_joins() {
    let _one = crate::support::serial::one_at_a_time();
    if !root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("backing");
    std::fs::File::create(&file)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let Some(lo) = loop_on(&file) else {
        return;
    };
    let trace = BlockTrace::start(&lo.path(), opts()).unwrap();
    let (user, _) = direct_reads(&lo.path(), 100);
    let res = trace.stop().unwrap();
    assert!(!res.loss.any_loss());
    let (reqs, st) = match_requests(&res.events);
    let t = btt_table(&reqs, &st);
    // Every read went through Q, G, D and C (I only with an I/O scheduler).
    assert!(
        t.q2g.n >= 100 && t.d2c.n >= 100 && t.q2c.n >= 100,
        "{}",
        render_btt(&t)
    );
    let b = join(&user, &reqs, 0);
    assert_eq!(b.joined.len(), 100, "{}", render_breakdown(&b));
    for j in &b.joined {
        let (blk, dev) = (j.block_ns.unwrap(), j.device_ns.unwrap());
        assert_eq!(j.user_ns + blk + dev + j.completion_ns, j.total_ns);
    }
    assert!(LayerSplit::of(&b.joined, None).device.avg_ns > 0.0);
    eprintln!("{}\n{}", render_btt(&t), render_breakdown(&b));
}
