//! Shared test support, for the integration-test binary `it` and the few
//! binaries kept apart: what a test needs and how it skips (`needs`), the
//! lock for tests that must not run side by side (`serial`), the faulty
//! null-device job (`faults`) and block-trace helpers (`trace`).

#![allow(dead_code)] // each binary uses part of it

pub mod faults;
pub mod needs;
pub mod serial;
pub mod trace;
