//! Measurement: clocks, the machine's cost of sleeping, histograms, CPU and
//! /proc accounting, tracing.

pub mod blktrace;
pub mod calibration;
pub mod clock;
pub mod cpu;
pub mod iolog;
pub mod max_latency;
pub mod recorder;
pub mod tracefs;
