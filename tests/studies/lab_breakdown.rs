//! `iolab lab breakdown --quick`: Low and Normal rows for each device, the split
//! sums to the total, and the allocation comparison is measured. Without root
//! every part must be reported as skipped with the reason.

use iolab::lab::breakdown::{BreakdownStudyOpts, run};
use iolab::report::study::Cell;

fn num(c: &Cell) -> f64 {
    match c {
        Cell::Num { v, .. } => *v,
        Cell::Text(t) => panic!("expected a number, got {t}"),
    }
}

fn text(c: &Cell) -> &str {
    match c {
        Cell::Text(t) => t,
        Cell::Num { .. } => panic!("expected text"),
    }
}

#[test]
fn quick_study_has_low_and_normal_rows_per_device() {
    let _one = crate::support::serial::one_at_a_time();
    let t0 = std::time::Instant::now();
    let r = run(&BreakdownStudyOpts { quick: true }).expect("study runs");
    println!("{}", r.render_text());
    assert_eq!((r.id.as_str(), r.seed.as_str()), ("breakdown", "002"));
    // SAFETY: geteuid has no failure mode.
    if unsafe { libc::geteuid() } != 0 {
        assert!(r.tables.is_empty());
        assert!(r.skipped.iter().all(|s| s.reason.contains("root")));
        assert!(r.skipped.len() >= 4);
        return;
    }
    assert!(t0.elapsed().as_secs_f64() < 30.0, "quick must stay quick");
    let split = &r.tables[0];
    let skipped: Vec<&str> = r.skipped.iter().map(|s| s.part.as_str()).collect();
    for dev in ["zram", "loop (dio on vda)", "file on vda"] {
        if dev == "file on vda" && skipped.contains(&"file on vda") {
            continue;
        }
        for load in ["Low", "Normal"] {
            for op in ["read", "write"] {
                let row = split
                    .rows
                    .iter()
                    .find(|row| {
                        text(&row[0]) == dev && text(&row[1]) == load && text(&row[2]) == op
                    })
                    .unwrap_or_else(|| panic!("no {dev} {load} {op} row; skipped: {skipped:?}"));
                let (user, q2c, compl, total, n) = (
                    num(&row[3]),
                    num(&row[6]),
                    num(&row[7]),
                    num(&row[8]),
                    num(&row[9]),
                );
                assert!(n > 0.0, "{dev} {load} {op}: nothing joined");
                let sum = user + q2c + compl;
                assert!(
                    (sum - total).abs() <= 0.02 * total + 0.01,
                    "{dev} {load} {op}: {sum} vs {total}"
                );
                if dev == "zram" {
                    assert!(num(&row[4]).is_nan(), "zram has no Q->D");
                } else {
                    assert!(num(&row[4]) > 0.0 && num(&row[5]) > 0.0);
                }
            }
        }
    }
    let chart = &r.charts[0];
    assert!(chart.categories.len() >= 8);
    assert!(
        chart
            .series
            .iter()
            .all(|s| s.points.len() == chart.categories.len())
    );
    // The allocation comparison: both states under both loads, measured.
    let alloc = &r.tables[1];
    assert_eq!(alloc.rows.len(), 4);
    for row in &alloc.rows {
        assert!(num(&row[2]) > 0.0 && num(&row[4]) > 0.0 && num(&row[5]) > 0.0);
    }
    assert!(r.comparisons.iter().any(|c| c.published == Some(19.0)));
    assert!(r.comparisons.iter().all(|c| c.ours.is_finite()));
}
