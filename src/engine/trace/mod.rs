//! `iolab run --trace`: the per-request user-timestamp log kept by each worker,
//! and the run-side glue that traces the target's block device during the run and
//! joins both into btt's stage table and the user / block layer / driver+device /
//! completion-delivery split (study 002): a typed `report::trace::JobTrace` per
//! job, which report renders.
//!
//! Also the per-request allocation toggle (`EngineOptions::alloc_per_request`) the
//! breakdown study uses to measure study 002's preallocation lesson: it makes the
//! worker allocate and free a driver-PDU-sized object around every I/O, which the
//! engine otherwise never does.
//!
//! `hooks` is what the worker calls per request (hot path); `tracer` arms the
//! hooks and the block trace around a group and joins them afterwards.
//!
//! Hot path: both hooks cost one predictable branch when off. When on, logging is a
//! store into a log preallocated (and pre-touched) before the clock starts; the
//! allocation toggle allocates on purpose, since that is what it measures.

pub mod hooks;
pub mod tracer;

pub use hooks::{Hooks, LOG_CAPACITY, StreamLog};
pub use tracer::{Tracer, arm, device_offset};
