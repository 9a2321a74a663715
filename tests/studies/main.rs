// Own binary: the quick studies assert their own wall time and compare latencies,
// so they run one at a time with no other test in the process beside them.
//! The lab studies end to end (former tests/lab_*.rs and
//! tests/placement_study.rs), one module each. Every test holds
//! `support::serial::one_at_a_time()`: before the integration tests were merged
//! each study ran alone in its own binary; in `it` they would share both CPUs
//! with whatever else runs (a loaded run took study 003 past its 20 s bound).

#[path = "../support/mod.rs"]
mod support;

mod lab_breakdown;
mod lab_laq;
mod lab_observe;
mod placement_study;
