//! Shared test support, for the integration-test binary `it` and the few
//! binaries kept apart: what a test needs and how it skips (`needs`), the
//! lock for tests that must not run side by side (`serial`), the faulty
//! null-device job (`faults`) and block-trace helpers (`trace`), and the
//! completion models a queued backend takes (`QUEUED_MODELS`).

#![allow(dead_code)] // each binary uses part of it

pub mod faults;
pub mod needs;
pub mod serial;
pub mod trace;

/// Every `completion=` value for a queued backend but `poll` (which tests
/// usually add or treat apart) and `sync` (no queue to wait on).
pub const QUEUED_MODELS: [&str; 6] = [
    "interrupt",
    "hybrid",
    "hybrid-uring",
    "pas",
    "dpas",
    "adaptive",
];
