//! Study 003 end to end: the quick study runs, compares the three iolab
//! schedulers, and shows LAQ's mechanism (a shorter periodic read than noop's
//! while the background reader still moves data). The kernel part runs as
//! root and is reported as skipped otherwise.

use iolab::lab::laq::{LaqStudyOpts, run};
use iolab::report::study::Cell;

fn num(c: &Cell) -> f64 {
    match c {
        Cell::Num { v, .. } => *v,
        Cell::Text(t) => panic!("expected a number, got {t:?}"),
    }
}

#[test]
fn quick_study_shows_laq_shortening_the_periodic_read() {
    let _one = crate::support::serial::one_at_a_time();
    let r = run(&LaqStudyOpts { quick: true }).expect("study 003 runs");
    println!("{}", r.render_text());
    assert_eq!((r.id.as_str(), r.seed.as_str()), ("laq", "003"));
    let t = r
        .tables
        .iter()
        .find(|t| t.title.starts_with("(i)"))
        .expect("scheduler table");
    let col = |name: &str| t.columns.iter().position(|c| c == name).expect(name);
    let (p50, bw) = (col("p50 us"), col("background MB/s"));
    let row = |s: &str| {
        t.rows
            .iter()
            .find(|r| matches!(&r[0], Cell::Text(x) if x == s))
            .unwrap_or_else(|| panic!("no row for {s}"))
    };
    for s in ["noop", "prio", "laq"] {
        assert!(num(&row(s)[bw]) > 0.0, "{s}: background bandwidth");
        assert!(num(&row(s)[p50]) > 0.0, "{s}: periodic p50");
    }
    assert!(
        num(&row("laq")[p50]) < num(&row("noop")[p50]),
        "laq must shorten the periodic read"
    );
    assert!(
        r.duration_s < 20.0,
        "quick study took {:.1} s",
        r.duration_s
    );
}
