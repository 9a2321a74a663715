//! Inline SVG charts for the HTML report: bar, stacked bar, line (optionally
//! log x) and CDF, drawn from the lab's [`Chart`] model.
//!
//! Every chart has an explicit size and viewBox, axes with "nice" ticks
//! (1-2-5 steps, SI-prefixed labels), a title, and a legend when there is more
//! than one named series. Data that cannot be drawn (non-finite values, values
//! <= 0 on a log axis, bar points outside the categories) is left out and the
//! chart says how many points that was, so nothing ever reaches the SVG as
//! `NaN` or `inf` and nothing is hidden silently.
//!
//! `scale` holds the axes' numbers, `layout` the geometry and the parts every
//! chart shares, `bar` and `line` the two families of charts.

mod bar;
mod layout;
mod line;
mod scale;

use crate::report::chart::{Chart, ChartKind};

pub use bar::Whisker;
#[cfg(any(test, feature = "testing"))]
pub use layout::PALETTE;
pub use scale::fmt_si_single;
#[cfg(any(test, feature = "testing"))]
pub use scale::{Ticks, linear_ticks, log_ticks, nice_step};

use bar::bar_svg;
use layout::clean;
use line::line_svg;

/// One chart as a standalone `<svg>` element.
pub fn chart_svg(chart: &Chart) -> String {
    let log_x = chart.log_x && matches!(chart.kind, ChartKind::Line | ChartKind::Cdf);
    let data = clean(&chart.series, log_x);
    match chart.kind {
        ChartKind::Bar | ChartKind::Stacked => bar_svg(chart, data, &[]),
        ChartKind::Line | ChartKind::Cdf => line_svg(chart, data, log_x),
    }
}

/// A (grouped, not stacked) bar chart with an interval over some bars.
/// Whiskers that are not finite or name no bar are counted as not drawn.
pub fn bar_with_intervals_svg(chart: &Chart, whiskers: &[Whisker]) -> String {
    let data = clean(&chart.series, false);
    bar_svg(chart, data, whiskers)
}

#[cfg(test)]
mod tests;
