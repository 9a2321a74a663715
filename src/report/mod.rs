//! Rendering results: the fio-shaped result model, fio-like text, fio JSON,
//! and the self-contained HTML report with SVG charts.

pub mod html;
pub mod json;
pub mod model;
pub mod svg;
pub mod text;
