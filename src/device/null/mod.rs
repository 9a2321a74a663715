//! null backend.
