//! The chart's geometry and the parts every chart draws: sizes, colours,
//! markers, the plot rectangle laid out from its labels, axes, frame, legend
//! and the note on points not drawn.

use std::fmt::Write;

use crate::report::chart::{Chart, Series};
use crate::report::escape::escape;
use crate::report::svg::scale::Ticks;

/// Okabe-Ito colours: distinguishable with the common colour-vision
/// deficiencies and still apart when printed; yellow last, it is weak on white.
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442",
];

/// Dash patterns cycled after the palette, so series 9+ stay distinct.
pub(super) const DASHES: [&str; 3] = ["", "6 3", "2 3"];

pub(super) const WIDTH: f64 = 860.0;
/// Rotated category labels longer than this are cut (full text in a tooltip).
pub(super) const ROTATED_MAX_CHARS: f64 = 30.0;
pub(super) const PLOT_H: f64 = 260.0;
pub(super) const TOP: f64 = 40.0;
pub(super) const RIGHT: f64 = 24.0;
pub(super) const TICK_FONT: f64 = 11.0;
pub(super) const LABEL_FONT: f64 = 12.0;
pub(super) const TITLE_FONT: f64 = 14.0;
/// Average advance of a sans-serif glyph relative to the font size, to lay out
/// text without a font engine.
pub(super) const CHAR_W: f64 = 0.6;

/// programming error we prefer to draw wrong rather than break the document).
pub(super) fn c(v: f64) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

pub(super) fn text_w(s: &str, font: f64) -> f64 {
    s.chars().count() as f64 * font * CHAR_W
}

/// Shorten `s` to fit `px` at `font`, with an ellipsis.
pub(super) fn fit(s: &str, px: f64, font: f64) -> String {
    let max = (px / (font * CHAR_W)).floor().max(1.0) as usize;
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

pub(super) fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

pub(super) fn dash(i: usize) -> &'static str {
    DASHES[(i / PALETTE.len()) % DASHES.len()]
}

/// Marker shapes per series, so lines stay apart in grey-scale print.
pub(super) fn marker(out: &mut String, i: usize, x: f64, y: f64, tip: &str) {
    let col = color(i);
    let r = 3.5;
    let shape = match i % 4 {
        0 => format!(r#"<circle cx="{}" cy="{}" r="{r}""#, c(x), c(y)),
        1 => format!(
            r#"<rect x="{}" y="{}" width="{}" height="{}""#,
            c(x - r),
            c(y - r),
            c(2.0 * r),
            c(2.0 * r)
        ),
        2 => format!(
            r#"<path d="M{} {}L{} {}L{} {}Z""#,
            c(x),
            c(y - r - 0.5),
            c(x + r + 0.5),
            c(y + r),
            c(x - r - 0.5),
            c(y + r)
        ),
        _ => format!(
            r#"<path d="M{} {}L{} {}L{} {}L{} {}Z""#,
            c(x),
            c(y - r - 1.0),
            c(x + r + 1.0),
            c(y),
            c(x),
            c(y + r + 1.0),
            c(x - r - 1.0),
            c(y)
        ),
    };
    let _ = write!(
        out,
        r##"{shape} fill="{col}" stroke="#fff" stroke-width="0.8">"##
    );
    if !tip.is_empty() {
        let _ = write!(out, "<title>{}</title>", escape(tip));
    }
    let close = match i % 4 {
        0 => "</circle>",
        1 => "</rect>",
        _ => "</path>",
    };
    out.push_str(close);
}

/// Points that can be drawn, and how many could not.
pub(super) struct Clean {
    pub(super) series: Vec<(String, Vec<(f64, f64)>)>,
    pub(super) dropped: usize,
}

pub(super) fn clean(series: &[Series], log_x: bool) -> Clean {
    let mut dropped = 0;
    let series = series
        .iter()
        .map(|s| {
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|&(x, y)| {
                    let ok = x.is_finite() && y.is_finite() && (!log_x || x > 0.0);
                    if !ok {
                        dropped += 1;
                    }
                    ok
                })
                .collect();
            (s.name.clone(), pts)
        })
        .collect();
    Clean { series, dropped }
}

/// The plot rectangle and the text around it, laid out from the content.
pub(super) struct Layout {
    pub(super) height: f64,
    pub(super) left: f64,
    pub(super) plot_w: f64,
    pub(super) plot_top: f64,
    pub(super) plot_bottom: f64,
    pub(super) x_label_y: f64,
    pub(super) legend_y: f64,
    pub(super) legend_rows: Vec<Vec<(usize, f64)>>,
    pub(super) note_y: f64,
    pub(super) rotate_x: bool,
}

impl Layout {
    pub(super) fn x(&self, frac: f64) -> f64 {
        self.left + frac * self.plot_w
    }
    pub(super) fn y(&self, frac: f64) -> f64 {
        self.plot_bottom - frac * (self.plot_bottom - self.plot_top)
    }
}

pub(super) fn layout(
    y_labels: &[String],
    x_labels: &[String],
    slot_w_for_cats: Option<usize>,
    legend_names: &[String],
    has_note: bool,
) -> Layout {
    let ytw = y_labels
        .iter()
        .map(|l| text_w(l, TICK_FONT))
        .fold(0.0, f64::max);
    let left = (ytw + 8.0 + LABEL_FONT + 14.0).max(48.0);
    let plot_w = WIDTH - left - RIGHT;
    let plot_top = TOP;
    let plot_bottom = plot_top + PLOT_H;
    let (rotate_x, x_tick_h) = match slot_w_for_cats {
        Some(n) if n > 0 => {
            let slot = plot_w / n as f64;
            let widest = x_labels
                .iter()
                .map(|l| text_w(l, TICK_FONT))
                .fold(0.0, f64::max);
            if widest > slot - 4.0 {
                let w = widest.min(ROTATED_MAX_CHARS * TICK_FONT * CHAR_W);
                (true, w * 0.64 + 14.0)
            } else {
                (false, 18.0)
            }
        }
        _ => (false, 18.0),
    };
    let x_label_y = plot_bottom + x_tick_h + 18.0;
    // Legend rows: greedy fill of the plot width.
    let mut legend_rows: Vec<Vec<(usize, f64)>> = Vec::new();
    if legend_names.len() > 1 || legend_names.iter().any(|n| !n.is_empty()) {
        let mut row = Vec::new();
        let mut x = 0.0;
        for (i, n) in legend_names.iter().enumerate() {
            let w = 26.0 + text_w(&fit(n, 300.0, TICK_FONT), TICK_FONT) + 18.0;
            if x + w > plot_w && !row.is_empty() {
                legend_rows.push(std::mem::take(&mut row));
                x = 0.0;
            }
            row.push((i, x));
            x += w;
        }
        legend_rows.push(row);
    }
    let legend_y = x_label_y + 14.0;
    let after_legend = legend_y + legend_rows.len() as f64 * 18.0;
    let note_y = after_legend + 8.0;
    let height = (if has_note {
        note_y + 14.0
    } else {
        after_legend
    }) + 6.0;
    Layout {
        height,
        left,
        plot_w,
        plot_top,
        plot_bottom,
        x_label_y,
        legend_y,
        legend_rows,
        note_y,
        rotate_x,
    }
}

pub(super) fn svg_open(out: &mut String, chart: &Chart, height: f64) {
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" font-family="system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif"><title>{t}</title><rect width="{w}" height="{h}" fill="#fff"/>"##,
        w = c(WIDTH),
        h = c(height),
        t = escape(&chart.title)
    );
    let title = fit(&chart.title, WIDTH - 20.0, TITLE_FONT);
    let _ = write!(
        out,
        r##"<text x="{}" y="22" text-anchor="middle" font-size="{TITLE_FONT}" font-weight="600" fill="#111">{}</text>"##,
        c(WIDTH / 2.0),
        escape(&title)
    );
}

pub(super) fn y_axis(
    out: &mut String,
    l: &Layout,
    ticks: &Ticks,
    labels: &[String],
    y_label: &str,
) {
    for (v, lab) in ticks.values.iter().zip(labels) {
        let y = l.y(ticks.frac(*v));
        let _ = write!(
            out,
            r##"<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}" stroke="#ddd" stroke-width="1"/><text x="{tx}" y="{ty}" text-anchor="end" font-size="{TICK_FONT}" fill="#333">{lab}</text>"##,
            x0 = c(l.left),
            x1 = c(l.left + l.plot_w),
            y = c(y),
            tx = c(l.left - 6.0),
            ty = c(y + 4.0),
            lab = escape(lab)
        );
    }
    let cy = (l.plot_top + l.plot_bottom) / 2.0;
    let _ = write!(
        out,
        r##"<text transform="translate({x} {y}) rotate(-90)" text-anchor="middle" font-size="{LABEL_FONT}" fill="#111">{t}</text>"##,
        x = c(12.0 + LABEL_FONT / 2.0),
        y = c(cy),
        t = escape(&fit(y_label, PLOT_H, LABEL_FONT))
    );
}

pub(super) fn frame(out: &mut String, l: &Layout, x_label: &str) {
    let _ = write!(
        out,
        r##"<path d="M{x0} {y0}V{y1}H{x1}" fill="none" stroke="#222" stroke-width="1"/><text x="{cx}" y="{ly}" text-anchor="middle" font-size="{LABEL_FONT}" fill="#111">{t}</text>"##,
        x0 = c(l.left),
        y0 = c(l.plot_top),
        y1 = c(l.plot_bottom),
        x1 = c(l.left + l.plot_w),
        cx = c(l.left + l.plot_w / 2.0),
        ly = c(l.x_label_y),
        t = escape(&fit(x_label, l.plot_w, LABEL_FONT))
    );
}

pub(super) fn legend(out: &mut String, l: &Layout, names: &[String], bars: bool) {
    for (r, row) in l.legend_rows.iter().enumerate() {
        let y = l.legend_y + r as f64 * 18.0;
        for &(i, dx) in row {
            let x = l.left + dx;
            if bars {
                let _ = write!(
                    out,
                    r#"<rect x="{}" y="{}" width="18" height="11" fill="{}"/>"#,
                    c(x),
                    c(y - 9.0),
                    color(i)
                );
            } else {
                let _ = write!(
                    out,
                    r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2" stroke-dasharray="{}"/>"#,
                    c(x),
                    c(y - 4.0),
                    c(x + 20.0),
                    c(y - 4.0),
                    color(i),
                    dash(i)
                );
                marker(out, i, x + 10.0, y - 4.0, "");
            }
            let name = if names[i].is_empty() {
                format!("series {}", i + 1)
            } else {
                names[i].clone()
            };
            let _ = write!(
                out,
                r##"<text x="{}" y="{}" font-size="{TICK_FONT}" fill="#222">{}</text>"##,
                c(x + 26.0),
                c(y),
                escape(&fit(&name, 300.0, TICK_FONT))
            );
        }
    }
}

pub(super) fn note(out: &mut String, l: &Layout, dropped: usize, empty: bool) {
    if empty {
        let _ = write!(
            out,
            r##"<text x="{}" y="{}" text-anchor="middle" font-size="{LABEL_FONT}" fill="#777">no data</text>"##,
            c(l.left + l.plot_w / 2.0),
            c((l.plot_top + l.plot_bottom) / 2.0)
        );
    }
    if dropped > 0 {
        let _ = write!(
            out,
            r##"<text x="{}" y="{}" font-size="{TICK_FONT}" fill="#a33">{dropped} point{} not drawn (not a finite number, outside the categories or the CDF range, or &lt;= 0 on a log axis)</text>"##,
            c(l.left),
            c(l.note_y),
            if dropped == 1 { "" } else { "s" }
        );
    }
}
