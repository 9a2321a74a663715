//! Typed results rendered three ways: the fio-shaped result model (`model`,
//! with `trace` for `--trace`), assembled from the engine's raw results (`raw`,
//! `assemble`), and rendered as fio-like text, fio JSON and the self-contained
//! HTML report with SVG charts. Each renderer is a pure function of the model.

pub mod assemble;
pub mod chart;
pub mod cli;
pub mod escape;
pub mod fleet;
pub mod html;
pub mod json;
pub mod jsonplus;
pub mod lat_target;
pub mod load;
pub mod model;
pub mod raw;
pub mod steady;
pub mod study;
pub mod svg;
pub mod terse;
pub mod text;
pub mod trace;
pub mod unified;
