//! A paced stream (rate_iops, QD1) beside a background stream on one worker and
//! one iolab scheduler must keep its cadence: the worker wakes when the paced
//! request falls due, not when the background's next completion happens, and
//! laq lets a high-priority read past the read-ahead it holds.
//!
//! The device is the null device in virtual time, set so that background
//! completions are rare (1 MiB at 20 MB/s per channel: 52 ms each) while a
//! 4 KiB read takes 0.2 ms on a free channel. A worker that waited for the
//! next completion instead of the paced stream's due time would issue about
//! one paced read per background completion (~40 a second instead of 500);
//! a scheduler that kept the read behind the held read-ahead would give it a
//! median of tens of milliseconds. The bounds are functional, not timings: at
//! least half of the due reads complete and their median latency (from issue,
//! so time held in iolab's scheduler counts) stays under 20 ms, a hundred
//! periods of slack for a busy 2-CPU machine.

use std::time::Duration;

use iolab::job::{
    BlockSizes, CompletionModel, Direction, Engine, JobSpec, LaqParams, NullOrder, NullParams,
    Pattern, RwMode, SchedKind,
};
use iolab::request::Class;

const PERIOD: Duration = Duration::from_millis(2);
const RUNTIME: Duration = Duration::from_secs(1);
const MIB: u64 = 1 << 20;

/// Paced 4 KiB reads (job 0) and sequential 1 MiB read-ahead `bg_depth` deep
/// (job 1), on one emulated device: the same filename gives them one worker.
fn jobs(sched: SchedKind, laq: LaqParams, bg_depth: u32) -> Vec<JobSpec> {
    let common = JobSpec {
        filename: Some("paced-stream-dev".into()),
        ioengine: Engine::Null,
        size: Some(1 << 30),
        runtime: Some(RUNTIME),
        time_based: true,
        completion: Some(CompletionModel::Interrupt),
        scheduler: sched,
        laq,
        backend: iolab::job::BackendOptions {
            null: NullParams {
                bw: 20_000_000,
                channels: 4,
                qd: 32,
                order: NullOrder::ReadFirst,
                ..NullParams::default()
            },
            ..Default::default()
        },
        ..JobSpec::default()
    };
    let paced = JobSpec {
        name: "paced".into(),
        rw: RwMode {
            pattern: Pattern::Rand,
            dir: Direction::Read,
        },
        bs: [BlockSizes::Fixed(4096), BlockSizes::Fixed(4096)],
        iodepth: 1,
        rate_iops: [1_000_000_000 / PERIOD.as_nanos() as u64, 0],
        ioclass: Some(Class::Read),
        ..common.clone()
    };
    let background = JobSpec {
        name: "background".into(),
        rw: RwMode {
            pattern: Pattern::Seq,
            dir: Direction::Read,
        },
        bs: [BlockSizes::Fixed(MIB as u32), BlockSizes::Fixed(MIB as u32)],
        iodepth: bg_depth,
        ioclass: Some(Class::Readahead),
        ..common
    };
    vec![paced, background]
}

fn check(what: &str, sched: SchedKind, laq: LaqParams, bg_depth: u32) {
    let runs = iolab::engine::summary::run(&jobs(sched, laq, bg_depth))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(runs.len(), 2, "{what}: one run per job");
    let (_, paced) = runs.iter().find(|(j, _)| *j == 0).expect("paced job ran");
    let (_, bg) = runs.iter().find(|(j, _)| *j == 1).expect("background ran");
    assert_eq!(
        paced.worker_streams, 2,
        "{what}: the two jobs share a worker"
    );
    let due = paced.runtime_ns / PERIOD.as_nanos() as u64;
    let d = &paced.rec.dirs[0];
    let p50 = d.lat.percentile(50.0);
    let bg_ios = bg.rec.dirs[0].total_ios;
    eprintln!(
        "{what}: paced {} of {due} due, lat p50 {} us max {} us; background {bg_ios} x 1 MiB",
        d.total_ios,
        p50 / 1000,
        d.lat.max() / 1000
    );
    // The background really ran beside it, and kept the device busy.
    assert!(bg_ios >= 10, "{what}: background did {bg_ios} reads");
    assert!(
        d.total_ios * 2 >= due,
        "{what}: the paced stream completed {} of {due} due reads (p50 {p50} ns): \
         it is starved behind the background",
        d.total_ios
    );
    assert!(
        p50 <= 20_000_000,
        "{what}: paced read median latency {p50} ns (period {PERIOD:?}); {} reads",
        d.total_ios
    );
}

#[test]
fn paced_stream_keeps_its_cadence_beside_a_saturating_background() {
    let _serial = crate::support::serial::one_at_a_time();
    // noop and prio: two 1 MiB reads at the device leave channels free, so the
    // only thing that can make the paced stream late is the worker itself
    // sleeping until a background completion.
    check("noop", SchedKind::Noop, LaqParams::default(), 2);
    check("prio", SchedKind::Prio, LaqParams::default(), 2);
    // laq: eight read-ahead requests, two at the device (ois_max 2 MiB + 64
    // KiB) and six held in iolab's scheduler for the whole run; the 4 KiB read
    // fits under ois_max and goes first.
    let laq = LaqParams {
        ois_max: 2 * MIB + (64 << 10),
        ois_min: 2 * MIB,
        t_wait: Duration::from_millis(1),
    };
    check("laq", SchedKind::Laq, laq, 8);
}
