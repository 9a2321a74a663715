//! The engine: worker threads running the per-request loop, and `iolab run`.

pub mod buffers;
pub mod cli;
pub mod worker;
