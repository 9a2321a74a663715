//! The study result model lives in `report` (`report::study`, `report::chart`):
//! lab fills it, report renders it. Re-exported here so studies and tests keep
//! their `lab::model::...` paths.

pub use crate::report::chart::{Chart, ChartKind, Series};
pub use crate::report::study::*;
