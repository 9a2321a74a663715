//! Placement: CPU topology, the polling predictor, placement policies, affinity.

pub mod cli;
