//! The chart model: what a chart shows, independent of how it is drawn
//! (`report::svg` draws it). Studies and the run report build charts.

use serde::{Deserialize, Serialize};

#[derive(
    schemars::JsonSchema, Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq,
)]
#[serde(rename_all = "lowercase")]
pub enum ChartKind {
    #[default]
    Bar,
    /// Bars made of stacked segments (one series per segment).
    Stacked,
    Line,
    /// Cumulative distribution: x = value, y = fraction.
    Cdf,
}

#[derive(schemars::JsonSchema, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Chart {
    pub title: String,
    pub kind: ChartKind,
    pub x_label: String,
    pub y_label: String,
    /// Category names for bar charts (x positions); empty for numeric x.
    pub categories: Vec<String>,
    pub series: Vec<Series>,
    /// Log scale on x (device latency sweeps, CDFs over decades).
    #[serde(default)]
    pub log_x: bool,
}

#[derive(schemars::JsonSchema, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Series {
    pub name: String,
    /// (x, y); for bar charts x is the category index. A value that could not
    /// be measured (NaN) is written as null.
    #[schemars(with = "Vec<(Option<f64>, Option<f64>)>")]
    pub points: Vec<(f64, f64)>,
}
