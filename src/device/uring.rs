//! uring backend.
