//! Measurement: clocks, histograms, CPU and /proc accounting, tracing, observe.

pub mod clock;
pub mod observe;
