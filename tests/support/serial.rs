//! One process-wide lock for tests that must not run beside each other inside
//! one test binary: traced runs (one block trace, one tracefs instance at a
//! time), the lab studies and placement runs (they load both CPUs and their
//! numbers mean nothing side by side), observe, the signal and fault tests whose
//! timeouts are measured in milliseconds. Before the integration tests shared
//! a binary each file had its own lock, or ran alone in its own process.

use std::sync::{Mutex, MutexGuard};

static ONE: Mutex<()> = Mutex::new(());

/// Hold while the test (or the one run) must be the only one of its kind.
/// A test that failed while holding it does not stop the others (poison is
/// ignored: the lock guards no data).
pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}
