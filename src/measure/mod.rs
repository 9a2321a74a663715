//! Measurement: clocks, histograms, CPU and /proc accounting, tracing, observe.

pub mod blktrace;
pub mod clock;
pub mod cpu;
pub mod observe;
pub mod recorder;
pub mod tracefs;
