//! Inline SVG charts for the HTML report: bar, stacked bar, line (optionally
//! log x) and CDF, drawn from the lab's [`Chart`] model.
//!
//! Every chart has an explicit size and viewBox, axes with "nice" ticks
//! (1-2-5 steps, SI-prefixed labels), a title, and a legend when there is more
//! than one named series. Data that cannot be drawn (non-finite values, values
//! <= 0 on a log axis, bar points outside the categories) is left out and the
//! chart says how many points that was, so nothing ever reaches the SVG as
//! `NaN` or `inf` and nothing is hidden silently.

use std::fmt::Write;

use crate::report::chart::{Chart, ChartKind, Series};

/// Okabe-Ito colours: distinguishable with the common colour-vision
/// deficiencies and still apart when printed; yellow last, it is weak on white.
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442",
];

/// Dash patterns cycled after the palette, so series 9+ stay distinct.
const DASHES: [&str; 3] = ["", "6 3", "2 3"];

const WIDTH: f64 = 860.0;
/// Rotated category labels longer than this are cut (full text in a tooltip).
const ROTATED_MAX_CHARS: f64 = 30.0;
const PLOT_H: f64 = 260.0;
const TOP: f64 = 40.0;
const RIGHT: f64 = 24.0;
const TICK_FONT: f64 = 11.0;
const LABEL_FONT: f64 = 12.0;
const TITLE_FONT: f64 = 14.0;
/// Average advance of a sans-serif glyph relative to the font size, to lay out
/// text without a font engine.
const CHAR_W: f64 = 0.6;

/// Escape text for HTML and SVG (element content and quoted attributes).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0 documents.
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// The smallest 1, 2 or 5 x 10^k that is >= `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if !raw.is_finite() || raw <= 0.0 {
        return 1.0;
    }
    let exp = raw.log10().floor();
    let base = 10f64.powf(exp);
    let f = raw / base;
    // Tolerance: 2.0000000001 from float noise is still a 2.
    let nf = if f <= 1.0 + 1e-9 {
        1.0
    } else if f <= 2.0 + 1e-9 {
        2.0
    } else if f <= 5.0 + 1e-9 {
        5.0
    } else {
        10.0
    };
    nf * base
}

/// An axis range and where its tick marks go.
#[derive(Clone, Debug, PartialEq)]
pub struct Ticks {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
    /// Linear step (0 for log axes).
    pub step: f64,
    pub values: Vec<f64>,
}

impl Ticks {
    /// Position of `v` as a fraction of the axis (0 at `lo`, 1 at `hi`).
    pub fn frac(&self, v: f64) -> f64 {
        let (a, b, x) = if self.log {
            (self.lo.log10(), self.hi.log10(), v.log10())
        } else {
            (self.lo, self.hi, v)
        };
        let t = if b > a { (x - a) / (b - a) } else { 0.5 };
        if t.is_finite() { t } else { 0.0 }
    }

    /// Tick labels, with one SI prefix and one precision for the whole axis
    /// on linear axes, and per tick on log axes (decades differ in prefix).
    pub fn labels(&self) -> Vec<String> {
        if self.log {
            return self.values.iter().map(|&v| fmt_si_single(v)).collect();
        }
        let max_abs = self.values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let f = SiFmt::new(max_abs, self.step);
        self.values.iter().map(|&v| f.fmt(v)).collect()
    }
}

/// Linear ticks covering [lo, hi] with about `target` 1-2-5 steps; the range
/// is widened to whole steps. Degenerate ranges (one value, non-finite) get a
/// sensible range around the value instead of a zero-width axis.
pub fn linear_ticks(lo: f64, hi: f64, target: usize) -> Ticks {
    let (mut lo, mut hi) = if lo.is_finite() && hi.is_finite() {
        (lo.min(hi), lo.max(hi))
    } else {
        (0.0, 1.0)
    };
    let span = hi - lo;
    if span <= hi.abs().max(lo.abs()) * 1e-12 || span == 0.0 {
        if lo == 0.0 {
            hi = 1.0;
        } else {
            let d = lo.abs() * 0.5;
            lo -= d;
            hi += d;
        }
    }
    let step = nice_step((hi - lo) / target.max(2).saturating_sub(1) as f64);
    let nlo = (lo / step + 1e-9).floor() * step;
    let nhi = (hi / step - 1e-9).ceil() * step;
    let n = ((nhi - nlo) / step).round().max(1.0) as usize;
    let values = (0..=n)
        .map(|i| {
            let v = nlo + i as f64 * step;
            if v.abs() < step * 1e-9 { 0.0 } else { v }
        })
        .collect::<Vec<_>>();
    Ticks {
        lo: nlo,
        hi: nlo + n as f64 * step,
        log: false,
        step,
        values,
    }
}

/// Log ticks over whole decades covering [lo, hi] (both > 0); 2 and 5 marks
/// are added when the axis spans two decades or less, so it never has only two
/// labels.
pub fn log_ticks(lo: f64, hi: f64) -> Ticks {
    let valid = |v: f64| v.is_finite() && v > 0.0;
    let (lo, hi) = match (valid(lo), valid(hi)) {
        (true, true) => (lo.min(hi), lo.max(hi)),
        (true, false) => (lo, lo),
        (false, true) => (hi, hi),
        (false, false) => (1.0, 10.0),
    };
    let dlo = (lo.log10() + 1e-9).floor() as i32;
    let mut dhi = (hi.log10() - 1e-9).ceil() as i32;
    if dhi <= dlo {
        dhi = dlo + 1;
    }
    let mut values = Vec::new();
    for d in dlo..=dhi {
        let base = 10f64.powi(d);
        values.push(base);
        if dhi - dlo <= 2 && d < dhi {
            values.push(2.0 * base);
            values.push(5.0 * base);
        }
    }
    Ticks {
        lo: 10f64.powi(dlo),
        hi: 10f64.powi(dhi),
        log: true,
        step: 0.0,
        values,
    }
}

/// One SI prefix and decimal count for a set of numbers.
struct SiFmt {
    div: f64,
    suffix: &'static str,
    decimals: usize,
}

const PREFIXES: [(f64, &str); 7] = [
    (1e12, "T"),
    (1e9, "G"),
    (1e6, "M"),
    (1e3, "k"),
    (1.0, ""),
    (1e-6, "µ"),
    (1e-9, "n"),
];

fn prefix_for(max_abs: f64) -> (f64, &'static str) {
    // Plain decimals between 0.001 and 1000: "0.25" reads better than "250m"
    // on fraction axes, and "m" would clash with "ms" in axis labels.
    if max_abs == 0.0 || (1e-3..1e3).contains(&max_abs) {
        return (1.0, "");
    }
    for (div, s) in PREFIXES {
        if max_abs >= div {
            return (div, s);
        }
    }
    (1e-9, "n")
}

impl SiFmt {
    fn new(max_abs: f64, step: f64) -> SiFmt {
        let (div, suffix) = prefix_for(max_abs);
        let s = step / div;
        let decimals = if s > 0.0 && s.is_finite() {
            (-(s.log10() + 1e-9).floor()).clamp(0.0, 9.0) as usize
        } else {
            0
        };
        SiFmt {
            div,
            suffix,
            decimals,
        }
    }

    fn fmt(&self, v: f64) -> String {
        if !v.is_finite() {
            return "-".into();
        }
        let s = format!("{:.*}", self.decimals, v / self.div);
        let s = if s
            .trim_start_matches('-')
            .chars()
            .all(|c| c == '0' || c == '.')
        {
            s.trim_start_matches('-').to_string()
        } else {
            s
        };
        if v == 0.0 {
            "0".into()
        } else {
            s + self.suffix
        }
    }
}

/// A single number with an SI prefix and at most 3 significant digits.
pub fn fmt_si_single(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let (div, suffix) = prefix_for(v.abs());
    let x = v / div;
    let decimals = (2 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let mut s = format!("{x:.decimals$}");
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    s + suffix
}

/// A coordinate for the SVG: one decimal, never NaN (non-finite becomes 0, a
/// programming error we prefer to draw wrong rather than break the document).
fn c(v: f64) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

fn text_w(s: &str, font: f64) -> f64 {
    s.chars().count() as f64 * font * CHAR_W
}

/// Shorten `s` to fit `px` at `font`, with an ellipsis.
fn fit(s: &str, px: f64, font: f64) -> String {
    let max = (px / (font * CHAR_W)).floor().max(1.0) as usize;
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

fn dash(i: usize) -> &'static str {
    DASHES[(i / PALETTE.len()) % DASHES.len()]
}

/// Marker shapes per series, so lines stay apart in grey-scale print.
fn marker(out: &mut String, i: usize, x: f64, y: f64, tip: &str) {
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
struct Clean {
    series: Vec<(String, Vec<(f64, f64)>)>,
    dropped: usize,
}

fn clean(series: &[Series], log_x: bool) -> Clean {
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
struct Layout {
    height: f64,
    left: f64,
    plot_w: f64,
    plot_top: f64,
    plot_bottom: f64,
    x_label_y: f64,
    legend_y: f64,
    legend_rows: Vec<Vec<(usize, f64)>>,
    note_y: f64,
    rotate_x: bool,
}

impl Layout {
    fn x(&self, frac: f64) -> f64 {
        self.left + frac * self.plot_w
    }
    fn y(&self, frac: f64) -> f64 {
        self.plot_bottom - frac * (self.plot_bottom - self.plot_top)
    }
}

fn layout(
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

/// One chart as a standalone `<svg>` element.
pub fn chart_svg(chart: &Chart) -> String {
    let log_x = chart.log_x && matches!(chart.kind, ChartKind::Line | ChartKind::Cdf);
    let data = clean(&chart.series, log_x);
    match chart.kind {
        ChartKind::Bar | ChartKind::Stacked => bar_svg(chart, data, &[]),
        ChartKind::Line | ChartKind::Cdf => line_svg(chart, data, log_x),
    }
}

/// An interval drawn over one bar: a spread of rounds, a confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Whisker {
    pub series: usize,
    pub category: usize,
    pub lo: f64,
    pub hi: f64,
}

/// A (grouped, not stacked) bar chart with an interval over some bars.
/// Whiskers that are not finite or name no bar are counted as not drawn.
pub fn bar_with_intervals_svg(chart: &Chart, whiskers: &[Whisker]) -> String {
    let data = clean(&chart.series, false);
    bar_svg(chart, data, whiskers)
}

fn svg_open(out: &mut String, chart: &Chart, height: f64) {
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

fn y_axis(out: &mut String, l: &Layout, ticks: &Ticks, labels: &[String], y_label: &str) {
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

fn frame(out: &mut String, l: &Layout, x_label: &str) {
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

fn legend(out: &mut String, l: &Layout, names: &[String], bars: bool) {
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

fn note(out: &mut String, l: &Layout, dropped: usize, empty: bool) {
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

fn bar_svg(chart: &Chart, mut data: Clean, whiskers: &[Whisker]) -> String {
    let stacked = chart.kind == ChartKind::Stacked;
    // Categories: given, or the distinct x values when the producer left them out.
    let cats: Vec<String> = if chart.categories.is_empty() {
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
    };
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
        for &(_, _, y) in &bars {
            hi = hi.max(y);
            lo = lo.min(y);
        }
    }
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
    for w in &whiskers {
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
    frame(&mut out, &l, &chart.x_label);
    legend(&mut out, &l, &names, true);
    note(&mut out, &l, data.dropped, bars.is_empty());
    out.push_str("</svg>");
    out
}

fn line_svg(chart: &Chart, mut data: Clean, log_x: bool) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
