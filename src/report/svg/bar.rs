//! Bar charts: grouped and stacked, with optional intervals (whiskers) over bars.

use std::fmt::Write;

use crate::report::chart::{Chart, ChartKind};
use crate::report::escape::escape;
use crate::report::svg::layout::*;
use crate::report::svg::scale::*;

/// An interval drawn over one bar: a spread of rounds, a confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Whisker {
    /// The bar's series (its index in the chart's series).
    pub series: usize,
    /// The bar's category (its index in the chart's categories).
    pub category: usize,
    /// The interval's low end, in the y axis' unit.
    pub lo: f64,
    /// The interval's high end, in the y axis' unit.
    pub hi: f64,
}

pub(super) fn bar_svg(chart: &Chart, mut data: Clean, whiskers: &[Whisker]) -> String {
    let stacked = chart.kind == ChartKind::Stacked;
    let cats = categories(chart, &mut data);
    let ncat = cats.len();
    // Bar points: (category index, series index, value).
    let mut bars: Vec<(usize, usize, f64)> = Vec::new();
    for (si, (_, pts)) in data.series.iter().enumerate() {
        for &(x, y) in pts {
            let xi = x.round();
            if xi < 0.0 || xi >= ncat as f64 || (x - xi).abs() > 1e-6 {
                data.dropped += 1;
                continue;
            }
            bars.push((xi as usize, si, y));
        }
    }
    let (mut lo, mut hi) = value_range(stacked, &bars, ncat);
    let whiskers: Vec<Whisker> = if stacked {
        data.dropped += whiskers.len();
        Vec::new()
    } else {
        let (ok, bad): (Vec<Whisker>, Vec<Whisker>) = whiskers.iter().partition(|w| {
            w.lo.is_finite()
                && w.hi.is_finite()
                && bars.iter().any(|b| b.0 == w.category && b.1 == w.series)
        });
        data.dropped += bad.len();
        ok
    };
    for w in &whiskers {
        hi = hi.max(w.hi).max(w.lo);
        lo = lo.min(w.lo).min(w.hi);
    }
    let ticks = linear_ticks(lo, hi, 6);
    let ylabels = ticks.labels();
    let names: Vec<String> = data.series.iter().map(|s| s.0.clone()).collect();
    let l = layout(&ylabels, &cats, Some(ncat), &names, data.dropped > 0);
    let mut out = String::with_capacity(4096 + bars.len() * 200);
    svg_open(&mut out, chart, l.height);
    y_axis(&mut out, &l, &ticks, &ylabels, &chart.y_label);

    let slot = if ncat > 0 {
        l.plot_w / ncat as f64
    } else {
        l.plot_w
    };
    let nser = data.series.len().max(1);
    let group_w = slot * 0.78;
    let bar_w = if stacked {
        group_w.min(90.0)
    } else {
        (group_w / nser as f64).min(60.0)
    };
    let zero_y = l.y(ticks.frac(0.0));
    let mut pos_top = vec![0.0f64; ncat];
    let mut neg_bot = vec![0.0f64; ncat];
    for &(k, si, y) in &bars {
        let cx = l.left + slot * (k as f64 + 0.5);
        let (x, v0, v1) = if stacked {
            let base = if y >= 0.0 {
                &mut pos_top[k]
            } else {
                &mut neg_bot[k]
            };
            let v0 = *base;
            *base += y;
            (cx - bar_w / 2.0, v0, *base)
        } else {
            let x = cx - bar_w * nser as f64 / 2.0 + bar_w * si as f64;
            (x, 0.0, y)
        };
        let ya = l.y(ticks.frac(v0));
        let yb = l.y(ticks.frac(v1));
        let (top, h) = (ya.min(yb), (ya - yb).abs());
        let tip = format!(
            "{} — {}: {}",
            if names[si].is_empty() {
                "value"
            } else {
                &names[si]
            },
            cats[k],
            fmt_si_single(y)
        );
        let _ = write!(
            out,
            r##"<rect x="{}" y="{}" width="{}" height="{}" fill="{}" stroke="#fff" stroke-width="0.5"><title>{}</title></rect>"##,
            c(x),
            c(top),
            c(bar_w.max(1.0)),
            c(h),
            color(si),
            escape(&tip)
        );
    }
    let geometry = Bars { slot, bar_w, nser };
    draw_whiskers(&mut out, &l, &ticks, &geometry, &whiskers, &names);
    // Totals above stacks, so the split and the sum read at once (as in seed
    // 000's Fig. 1) — only while they fit.
    if stacked && nser > 1 && slot >= 34.0 {
        for (k, &total) in pos_top.iter().enumerate() {
            if total > 0.0 {
                let _ = write!(
                    out,
                    r##"<text x="{}" y="{}" text-anchor="middle" font-size="10" fill="#333">{}</text>"##,
                    c(l.left + slot * (k as f64 + 0.5)),
                    c(l.y(ticks.frac(total)) - 4.0),
                    escape(&fmt_si_single(total))
                );
            }
        }
    }
    let _ = write!(
        out,
        r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#222" stroke-width="1"/>"##,
        c(l.left),
        c(zero_y),
        c(l.left + l.plot_w),
        c(zero_y)
    );
    draw_category_labels(&mut out, &l, &cats, slot);
    frame(&mut out, &l, &chart.x_label);
    legend(&mut out, &l, &names, true);
    note(&mut out, &l, data.dropped, bars.is_empty());
    out.push_str("</svg>");
    out
}

/// The chart's categories: given, or the distinct x values when the producer
/// left them out (the points' x then becomes the category's index).
fn categories(chart: &Chart, data: &mut Clean) -> Vec<String> {
    if chart.categories.is_empty() {
        let mut xs: Vec<f64> = data
            .series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|q| q.0))
            .collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        let labels: Vec<String> = xs.iter().map(|&x| fmt_si_single(x)).collect();
        for (_, pts) in &mut data.series {
            for p in pts.iter_mut() {
                p.0 = xs.iter().position(|&x| x == p.0).unwrap_or(0) as f64;
            }
        }
        labels
    } else {
        chart.categories.clone()
    }
}

/// The lowest and highest value the bars reach (stacks summed), with 0.
fn value_range(stacked: bool, bars: &[(usize, usize, f64)], ncat: usize) -> (f64, f64) {
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    if stacked {
        for k in 0..ncat {
            let (mut pos, mut neg) = (0.0, 0.0);
            for &(_, _, y) in bars.iter().filter(|b| b.0 == k) {
                if y >= 0.0 {
                    pos += y;
                } else {
                    neg += y;
                }
            }
            hi = hi.max(pos);
            lo = lo.min(neg);
        }
    } else {
        for &(_, _, y) in bars {
            hi = hi.max(y);
            lo = lo.min(y);
        }
    }
    (lo, hi)
}

/// Where bars sit: the width of a category's slot, of one bar, and the
/// number of series side by side.
struct Bars {
    slot: f64,
    bar_w: f64,
    nser: usize,
}

/// Each whisker as an I-beam over its bar, with its interval as a tooltip.
fn draw_whiskers(
    out: &mut String,
    l: &Layout,
    ticks: &Ticks,
    g: &Bars,
    whiskers: &[Whisker],
    names: &[String],
) {
    let Bars { slot, bar_w, nser } = *g;
    for w in whiskers {
        let cx = l.left + slot * (w.category as f64 + 0.5) - bar_w * nser as f64 / 2.0
            + bar_w * (w.series as f64 + 0.5);
        let (ya, yb) = (l.y(ticks.frac(w.lo)), l.y(ticks.frac(w.hi)));
        let cap = (bar_w * 0.3).clamp(2.0, 8.0);
        let _ = write!(
            out,
            r##"<path d="M{x} {ya}V{yb}M{x0} {ya}H{x1}M{x0} {yb}H{x1}" stroke="#222" stroke-width="1.3" fill="none"><title>{t}</title></path>"##,
            x = c(cx),
            ya = c(ya),
            yb = c(yb),
            x0 = c(cx - cap),
            x1 = c(cx + cap),
            t = escape(&format!(
                "{}: {} to {}",
                names.get(w.series).map_or("", String::as_str),
                fmt_si_single(w.lo),
                fmt_si_single(w.hi)
            ))
        );
    }
}

/// The category names under the bars, shortened to fit (rotated when long),
/// each with its full name as a tooltip.
fn draw_category_labels(out: &mut String, l: &Layout, cats: &[String], slot: f64) {
    for (k, cat) in cats.iter().enumerate() {
        let cx = l.left + slot * (k as f64 + 0.5);
        let ty = l.plot_bottom + 14.0;
        let tx = if l.rotate_x { cx + 3.0 } else { cx };
        let shown = if l.rotate_x {
            fit(cat, ROTATED_MAX_CHARS * TICK_FONT * CHAR_W, TICK_FONT)
        } else {
            fit(cat, slot, TICK_FONT)
        };
        let _ = write!(
            out,
            r##"<text x="{x}" y="{y}" font-size="{TICK_FONT}" fill="#333" text-anchor="{a}"{rot}><title>{full}</title>{s}</text>"##,
            x = c(tx),
            y = c(ty),
            a = if l.rotate_x { "end" } else { "middle" },
            rot = if l.rotate_x {
                format!(r#" transform="rotate(-40 {} {})""#, c(tx), c(ty))
            } else {
                String::new()
            },
            full = escape(cat),
            s = escape(&shown)
        );
    }
}
