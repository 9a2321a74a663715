//! Rendering results: the fio-shaped result model, fio-like text, fio JSON.

pub mod json;
pub mod model;
pub mod text;
