//! workload
