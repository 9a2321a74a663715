//! psync backend.
