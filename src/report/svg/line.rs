//! Line charts (optionally with a log x axis) and CDFs.

use std::fmt::Write;

use crate::report::chart::{Chart, ChartKind};
use crate::report::escape::escape;
use crate::report::svg::layout::*;
use crate::report::svg::scale::*;

pub(super) fn line_svg(chart: &Chart, mut data: Clean, log_x: bool) -> String {
    let cdf = chart.kind == ChartKind::Cdf;
    // A CDF is in [0, 1], or [0, 100] when the producer gave percent; anything
    // else is not a cumulative fraction and is counted as not drawn.
    let cdf_top = {
        let in_unit = data
            .series
            .iter()
            .flat_map(|(_, p)| p.iter())
            .all(|&(_, y)| y <= 1.0 + 1e-9);
        if in_unit { 1.0 } else { 100.0 }
    };
    if cdf {
        for (_, pts) in &mut data.series {
            let before = pts.len();
            pts.retain(|&(_, y)| (-1e-9..=cdf_top + 1e-9).contains(&y));
            data.dropped += before - pts.len();
        }
    }
    let all = || data.series.iter().flat_map(|(_, p)| p.iter().copied());
    let empty = all().next().is_none();
    let (xmin, xmax) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (x, _)| {
        (a.min(x), b.max(x))
    });
    let (ymin, ymax) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (_, y)| {
        (a.min(y), b.max(y))
    });
    let xt = if log_x {
        log_ticks(xmin, xmax)
    } else if empty {
        linear_ticks(0.0, 1.0, 6)
    } else {
        linear_ticks(xmin, xmax, 7)
    };
    let yt = if cdf {
        linear_ticks(0.0, cdf_top, 6)
    } else if empty {
        linear_ticks(0.0, 1.0, 6)
    } else {
        // Quantities here (IOPS, latency, CPU) are read against zero.
        linear_ticks(ymin.min(0.0), ymax, 6)
    };
    let xlabels = xt.labels();
    let ylabels = yt.labels();
    let names: Vec<String> = data.series.iter().map(|s| s.0.clone()).collect();
    let l = layout(&ylabels, &xlabels, None, &names, data.dropped > 0);
    let mut out = String::with_capacity(4096);
    svg_open(&mut out, chart, l.height);
    y_axis(&mut out, &l, &yt, &ylabels, &chart.y_label);
    for (v, lab) in xt.values.iter().zip(&xlabels) {
        let x = l.x(xt.frac(*v));
        let _ = write!(
            out,
            r##"<line x1="{x}" y1="{y0}" x2="{x}" y2="{y1}" stroke="#eee" stroke-width="1"/><line x1="{x}" y1="{y1}" x2="{x}" y2="{y2}" stroke="#222" stroke-width="1"/><text x="{x}" y="{ty}" text-anchor="middle" font-size="{TICK_FONT}" fill="#333">{lab}</text>"##,
            x = c(x),
            y0 = c(l.plot_top),
            y1 = c(l.plot_bottom),
            y2 = c(l.plot_bottom + 4.0),
            ty = c(l.plot_bottom + 16.0),
            lab = escape(lab)
        );
    }
    let x_label = if log_x {
        format!("{} (log scale)", chart.x_label)
    } else {
        chart.x_label.clone()
    };
    for (si, (name, pts)) in data.series.iter().enumerate() {
        let mut pts = pts.clone();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        if pts.is_empty() {
            continue;
        }
        let mut d = String::new();
        for (i, &(x, y)) in pts.iter().enumerate() {
            let px = l.x(xt.frac(x));
            let py = l.y(yt.frac(y));
            let _ = write!(d, "{}{} {}", if i == 0 { "M" } else { "L" }, c(px), c(py));
        }
        let _ = write!(
            out,
            r#"<path d="{d}" fill="none" stroke="{}" stroke-width="2" stroke-linejoin="round" stroke-dasharray="{}"/>"#,
            color(si),
            dash(si)
        );
        // Markers help in print and for few points; a dense CDF is a curve.
        if pts.len() <= 40 {
            for &(x, y) in &pts {
                let tip = format!(
                    "{}: x={} y={}",
                    if name.is_empty() { "value" } else { name },
                    fmt_si_single(x),
                    fmt_si_single(y)
                );
                marker(&mut out, si, l.x(xt.frac(x)), l.y(yt.frac(y)), &tip);
            }
        }
    }
    frame(&mut out, &l, &x_label);
    legend(&mut out, &l, &names, false);
    note(&mut out, &l, data.dropped, empty);
    out.push_str("</svg>");
    out
}
