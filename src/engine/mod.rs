//! The engine: worker threads running the per-request loop, and `iolab run`.

pub mod cli;
