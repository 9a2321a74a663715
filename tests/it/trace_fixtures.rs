//! Parsing of recorded tracefs output: binary ring-buffer pages and text lines of
//! the same run must give the same block events and the same btt table.

use std::path::PathBuf;

use iolab::measure::blktrace::{
    Action, BlockDecoder, BlockEvent, btt_table, match_requests, parse_trace_line, render_btt,
};
use iolab::measure::tracefs::{EventFormat, PageLayout, RawEvent, parse_page};

fn fx(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/trace")
        .join(name)
}

fn raw_events() -> Vec<BlockEvent> {
    let names = [
        "block_bio_queue",
        "block_getrq",
        "block_rq_insert",
        "block_rq_issue",
        "block_rq_complete",
        "block_bio_complete",
        "block_bio_backmerge",
        "block_bio_frontmerge",
    ];
    let formats: Vec<EventFormat> = names
        .iter()
        .map(|n| {
            let t = std::fs::read_to_string(fx(&format!("block_{n}.format"))).unwrap();
            EventFormat::parse("block", &t).unwrap()
        })
        .collect();
    let dec = BlockDecoder::new(&formats).unwrap();
    let layout = PageLayout::parse(&std::fs::read_to_string(fx("header_page")).unwrap()).unwrap();
    let mut out = Vec::new();
    for cpu in 0..2u32 {
        let data = std::fs::read(fx(&format!("loop_mq_deadline.cpu{cpu}.raw"))).unwrap();
        for page in data.chunks(4096) {
            let info = parse_page(page, layout, |ts, rec| {
                let ev = RawEvent {
                    cpu,
                    ts,
                    id: u16::from_le_bytes([rec[0], rec[1]]),
                    pid: i32::from_le_bytes(rec[4..8].try_into().unwrap()),
                    payload: rec,
                };
                out.extend(dec.decode(&ev));
            })
            .unwrap();
            assert!(!info.missed);
        }
    }
    out
}

fn text_events() -> Vec<BlockEvent> {
    std::fs::read_to_string(fx("loop_mq_deadline.trace"))
        .unwrap()
        .lines()
        .filter_map(parse_trace_line)
        .collect()
}

fn key(e: &BlockEvent) -> (Action, u64, u32, bool, i32) {
    (e.action, e.sector, e.nr_sector, e.write, e.pid)
}

#[test]
fn binary_and_text_recordings_agree() {
    let mut raw = raw_events();
    let mut txt = text_events();
    assert_eq!(raw.len(), 209);
    assert_eq!(txt.len(), raw.len());
    // Two instances recorded the run, each stamping events itself: same events,
    // stamps a few microseconds apart (and text keeps only microseconds).
    let order = |e: &BlockEvent| (e.action as usize, e.sector, e.nr_sector, e.pid, e.ts);
    raw.sort_by_key(order);
    txt.sort_by_key(order);
    for (r, t) in raw.iter().zip(&txt) {
        assert_eq!(key(r), key(t));
        assert_eq!(r.dev, t.dev);
        assert!(r.ts.abs_diff(t.ts) < 20_000, "{r:?} vs {t:?}");
    }
}

#[test]
fn recorded_run_gives_the_btt_table() {
    let (reqs, st) = match_requests(&raw_events());
    let t = btt_table(&reqs, &st);
    eprintln!("{}", render_btt(&t));
    assert_eq!(st.by_action[Action::Q as usize], 46);
    assert_eq!(st.by_action[Action::Mb as usize], 7);
    assert_eq!(st.merged_bios, 7);
    assert_eq!(st.completed, 39);
    assert_eq!((st.orphan_completions, st.in_flight_at_end), (0, 0));
    // With mq-deadline every request was inserted, so all btt stages are present.
    for (name, s) in [
        ("Q2G", t.q2g),
        ("G2I", t.g2i),
        ("I2D", t.i2d),
        ("D2C", t.d2c),
    ] {
        assert_eq!(s.n, 39, "{name}");
        assert!(
            s.min_ns <= s.avg_ns as u64 && s.avg_ns as u64 <= s.max_ns,
            "{name}"
        );
    }
    assert_eq!(t.g2d.n, 0);
    assert_eq!(t.q2c.n, 39);
    assert_eq!(t.d2c_hist.total(), 39);
    // The merged 512 B writes grew their requests.
    assert!(reqs.iter().any(|r| r.merged > 0 && r.nr_sector > 1));
    // Stage sums: Q2C = Q2G + G2I + I2D + D2C for every request.
    for r in &reqs {
        let (q, g, i, d, c) = (
            r.q.unwrap(),
            r.g.unwrap(),
            r.i.unwrap(),
            r.d.unwrap(),
            r.c.unwrap(),
        );
        assert!(q <= g && g <= i && i <= d && d <= c, "{r:?}");
    }
}
