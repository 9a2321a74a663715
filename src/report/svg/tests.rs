//! The charts checked: scales, labels, escaping, geometry, and properties over
//! random charts (never NaN, always sized).

use super::layout::*;
use super::scale::*;
use super::*;
use crate::report::chart::Series;
use crate::report::escape::escape;

fn chart(kind: ChartKind, series: Vec<Series>, categories: Vec<&str>, log_x: bool) -> Chart {
    Chart {
        title: "t <x>".into(),
        kind,
        x_label: "x".into(),
        y_label: "y".into(),
        categories: categories.into_iter().map(String::from).collect(),
        series,
        log_x,
    }
}

fn s(name: &str, pts: &[(f64, f64)]) -> Series {
    Series {
        name: name.into(),
        points: pts.to_vec(),
    }
}

/// (width, height, viewBox) of the root element.
fn size(svg: &str) -> (f64, f64, String) {
    let attr = |k: &str| {
        let i = svg.find(&format!(" {k}=\"")).unwrap() + k.len() + 3;
        svg[i..i + svg[i..].find('"').unwrap()].to_string()
    };
    (
        attr("width").parse().unwrap(),
        attr("height").parse().unwrap(),
        attr("viewBox"),
    )
}

fn well_formed(svg: &str) {
    for bad in ["NaN", "inf", "undefined"] {
        assert!(!svg.contains(bad), "{bad} in {svg}");
    }
    let (w, h, vb) = size(svg);
    assert!(w > 0.0 && h > 0.0, "{w}x{h}");
    assert_eq!(vb, format!("0 0 {} {}", c(w), c(h)));
    assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    // Balanced elements: every open tag is closed or self-closed.
    let opens = svg.matches('<').count();
    let closes = svg.matches("</").count() + svg.matches("/>").count();
    assert_eq!(opens, 2 * closes - svg.matches("/>").count(), "{svg}");
}

#[test]
fn nice_steps_are_1_2_5() {
    assert_eq!(nice_step(0.7), 1.0);
    assert_eq!(nice_step(1.0), 1.0);
    assert_eq!(nice_step(1.3), 2.0);
    assert_eq!(nice_step(3.0), 5.0);
    assert_eq!(nice_step(7.0), 10.0);
    assert_eq!(nice_step(1234.0), 2000.0);
    assert!((nice_step(0.031) - 0.05).abs() < 1e-15);
    assert_eq!(nice_step(0.0), 1.0);
    assert_eq!(nice_step(f64::NAN), 1.0);
}

#[test]
fn linear_ticks_cover_range_with_round_values() {
    let t = linear_ticks(0.0, 97.0, 6);
    assert_eq!(t.values, vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
    assert_eq!((t.lo, t.hi, t.step), (0.0, 100.0, 20.0));
    let t = linear_ticks(3.2, 3.9, 6);
    assert!(t.lo <= 3.2 && t.hi >= 3.9, "{t:?}");
    assert_eq!(t.labels(), vec!["3.2", "3.4", "3.6", "3.8", "4.0"]);
    let t = linear_ticks(-12.0, 7.0, 5);
    assert!(t.values.contains(&0.0), "{t:?}");
    // Degenerate: one value, or nothing finite.
    let t = linear_ticks(5.0, 5.0, 6);
    assert!(t.lo < 5.0 && t.hi > 5.0, "{t:?}");
    let t = linear_ticks(0.0, 0.0, 6);
    assert_eq!((t.lo, t.hi), (0.0, 1.0));
    let t = linear_ticks(f64::NAN, f64::INFINITY, 6);
    assert_eq!((t.lo, t.hi), (0.0, 1.0));
    assert!(t.values.iter().all(|v| v.is_finite()));
}

#[test]
fn log_ticks_are_decades() {
    let t = log_ticks(3.0, 40_000.0);
    assert_eq!(t.values, vec![1.0, 10.0, 100.0, 1e3, 1e4, 1e5]);
    assert_eq!(t.labels(), vec!["1", "10", "100", "1k", "10k", "100k"]);
    // Narrow range: 1-2-5 marks inside two decades.
    let t = log_ticks(2.0, 30.0);
    assert_eq!(t.values, vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]);
    assert!((t.frac(10.0) - 0.5).abs() < 1e-12);
    // One value, invalid input.
    let t = log_ticks(10.0, 10.0);
    assert!(t.lo <= 10.0 && t.hi > 10.0);
    let t = log_ticks(-1.0, 0.0);
    assert_eq!((t.lo, t.hi), (1.0, 10.0));
}

#[test]
fn si_labels() {
    let t = linear_ticks(0.0, 230_000.0, 6);
    assert_eq!(t.labels(), vec!["0", "50k", "100k", "150k", "200k", "250k"]);
    let t = linear_ticks(0.0, 2.4e6, 6);
    assert_eq!(t.labels()[1], "0.5M");
    let t = linear_ticks(0.0, 1.0, 6);
    assert_eq!(t.labels(), vec!["0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
    assert_eq!(fmt_si_single(1500.0), "1.5k");
    assert_eq!(fmt_si_single(4.4), "4.4");
    assert_eq!(fmt_si_single(2e-6), "2µ");
    assert_eq!(fmt_si_single(123456.0), "123k");
    assert_eq!(fmt_si_single(f64::NAN), "-");
}

#[test]
fn escaping() {
    assert_eq!(
        escape(r#"<b a="1">&'x'</b>"#),
        "&lt;b a=&quot;1&quot;&gt;&amp;&#39;x&#39;&lt;/b&gt;"
    );
    assert_eq!(escape("a\u{1}b"), "a\u{FFFD}b");
    let svg = chart_svg(&chart(
        ChartKind::Bar,
        vec![s("<script>alert(1)</script>", &[(0.0, 1.0)])],
        vec!["a&b"],
        false,
    ));
    assert!(!svg.contains("<script>"), "{svg}");
    assert!(svg.contains("a&amp;b") && svg.contains("t &lt;x&gt;"));
}

#[test]
fn scaling_maps_values_into_the_plot() {
    // Bar of 50 on a 0..100 axis: half the plot height.
    let svg = chart_svg(&chart(
        ChartKind::Bar,
        vec![s("", &[(0.0, 50.0), (1.0, 100.0)])],
        vec!["a", "b"],
        false,
    ));
    well_formed(&svg);
    let heights: Vec<f64> = svg
        .match_indices("<rect x=")
        .filter_map(|(i, _)| {
            let r = &svg[i..];
            let h = r.find("height=\"")? + 8;
            let v: f64 = r[h..h + r[h..].find('"')?].parse().ok()?;
            r[..r.find('>')?].contains("fill=\"#0072B2\"").then_some(v)
        })
        .collect();
    assert_eq!(heights.len(), 2, "{svg}");
    assert!((heights[0] * 2.0 - heights[1]).abs() < 0.2, "{heights:?}");
    assert!((heights[1] - PLOT_H).abs() < 0.2, "{heights:?}");
}

#[test]
fn every_kind_draws_and_empty_or_bad_data_never_gives_nan() {
    let kinds = [
        ChartKind::Bar,
        ChartKind::Stacked,
        ChartKind::Line,
        ChartKind::Cdf,
    ];
    let inputs = vec![
        vec![],
        vec![s("empty", &[])],
        vec![s("a", &[(0.0, f64::NAN), (1.0, f64::INFINITY)])],
        vec![s("one", &[(0.0, 3.0)])],
        vec![s("zero", &[(0.0, 0.0), (1.0, 0.0)])],
        vec![
            s("neg", &[(0.0, -2.0), (1.0, 5.0)]),
            s("b", &[(0.0, 1.0), (1.0, 2.0)]),
        ],
    ];
    for kind in kinds {
        for log_x in [false, true] {
            for series in &inputs {
                let svg = chart_svg(&chart(kind, series.clone(), vec!["p", "q"], log_x));
                well_formed(&svg);
            }
        }
    }
    let svg = chart_svg(&chart(ChartKind::Line, vec![], vec![], false));
    assert!(svg.contains("no data"));
    let svg = chart_svg(&chart(
        ChartKind::Line,
        vec![s("a", &[(0.0, 1.0), (10.0, 2.0), (f64::NAN, 1.0)])],
        vec![],
        true,
    ));
    assert!(svg.contains("2 points not drawn"), "{svg}");
}

#[test]
fn stacked_totals_and_legend() {
    let svg = chart_svg(&chart(
        ChartKind::Stacked,
        vec![
            s("device", &[(0.0, 4.0), (1.0, 4.0)]),
            s("OS + user", &[(0.0, 1.5), (1.0, 6.0)]),
        ],
        vec!["poll 4K", "interrupt 4K"],
        false,
    ));
    well_formed(&svg);
    assert!(svg.contains(">5.5<") && svg.contains(">10<"), "{svg}");
    assert!(svg.contains(">device<") && svg.contains(">OS + user<"));
}

#[test]
fn bar_without_categories_uses_x_values_and_drops_strays() {
    let svg = chart_svg(&chart(
        ChartKind::Bar,
        vec![s("a", &[(512.0, 1.0), (4096.0, 2.0)])],
        vec![],
        false,
    ));
    assert!(svg.contains(">512<") && svg.contains(">4.1k<"), "{svg}");
    let svg = chart_svg(&chart(
        ChartKind::Bar,
        vec![s("a", &[(0.0, 1.0), (7.0, 2.0), (0.5, 1.0)])],
        vec!["only"],
        false,
    ));
    assert!(svg.contains("2 points not drawn"), "{svg}");
}

#[test]
fn cdf_axis_fraction_or_percent() {
    let f = chart_svg(&chart(
        ChartKind::Cdf,
        vec![s("clat", &[(3.0, 0.5), (7.0, 0.99)])],
        vec![],
        true,
    ));
    assert!(f.contains(">1.0<") && !f.contains(">100<"));
    let p = chart_svg(&chart(
        ChartKind::Cdf,
        vec![s("clat", &[(1.0, 50.0), (2.0, 99.0)])],
        vec![],
        false,
    ));
    assert!(p.contains(">100<"), "{p}");
    let bad = chart_svg(&chart(
        ChartKind::Cdf,
        vec![s("clat", &[(1.0, 50.0), (2.0, 150.0), (3.0, -0.5)])],
        vec![],
        false,
    ));
    assert!(bad.contains("2 points not drawn"), "{bad}");
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![
            8 => -1e12f64..1e12,
            4 => 0.0f64..10.0,
            2 => 1e-9f64..1e-3,
            1 => Just(f64::NAN),
            1 => Just(f64::INFINITY),
            1 => Just(f64::NEG_INFINITY),
            1 => Just(0.0),
        ]
    }

    fn any_chart() -> impl Strategy<Value = Chart> {
        let kind = prop_oneof![
            Just(ChartKind::Bar),
            Just(ChartKind::Stacked),
            Just(ChartKind::Line),
            Just(ChartKind::Cdf),
        ];
        let series = proptest::collection::vec(
            (
                ".{0,20}",
                proptest::collection::vec((value(), value()), 0..30),
            ),
            0..6,
        );
        (
            kind,
            series,
            proptest::collection::vec(".{0,40}", 0..12),
            any::<bool>(),
            ".{0,80}",
        )
            .prop_map(|(kind, series, categories, log_x, title)| Chart {
                title,
                kind,
                x_label: "x".into(),
                y_label: "y".into(),
                categories,
                series: series
                    .into_iter()
                    .map(|(name, points)| Series { name, points })
                    .collect(),
                log_x,
            })
    }

    proptest! {
        #[test]
        fn any_chart_is_a_sized_svg_without_nan(ch in any_chart()) {
            let svg = chart_svg(&ch);
            well_formed(&svg);
            // Every coordinate stays in a sane range (no overflow to huge numbers).
            for part in svg.split('"') {
                if let Ok(v) = part.parse::<f64>() {
                    prop_assert!(v.abs() < 1e5, "coordinate {v}");
                }
            }
        }

        #[test]
        fn linear_ticks_contain_their_range(a in -1e12f64..1e12, b in -1e12f64..1e12, n in 2usize..10) {
            let t = linear_ticks(a, b, n);
            prop_assert!(t.lo <= a.min(b) && t.hi >= a.max(b), "{t:?}");
            prop_assert!(t.values.len() >= 2 && t.values.len() <= 2 * n + 2, "{t:?}");
            prop_assert!(t.values.windows(2).all(|w| w[1] > w[0]));
            let labels = t.labels();
            let mut dedup = labels.clone();
            dedup.dedup();
            prop_assert_eq!(dedup.len(), labels.len(), "distinct labels {:?}", labels);
        }
    }
}
