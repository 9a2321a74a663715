//! Kernel tracepoints through tracefs, in an instance of our own.
//!
//! An [`Instance`] is a private ring buffer under `tracefs/instances/iolab-<pid>-<n>`:
//! enabling events there leaves the global buffer (and other tools) alone. Its owner
//! picks the clock: `mono` stamps CLOCK_MONOTONIC ns, `x86-tsc` the raw TSC (which
//! [`crate::measure::clock::tsc_scale`] puts on the engine clock). Events are read in binary from
//! the per-CPU `trace_pipe_raw` files: the kernel copies ring-buffer pages out without
//! formatting text, which keeps the reader cheap enough for exact syscall counts.
//!
//! Lost events are never silent: the per-CPU `stats` (overrun, dropped) and the
//! "missed events" flag of every page are collected into [`LossReport`].
//!
//! Removal: `Drop` stops tracing, closes the readers and removes the directory. The
//! removal is also registered in [`crate::sys::cleanup`], so the abort path (a second
//! Ctrl-C) removes the instance even while its owner is still running. Instances left
//! behind by a killed iolab (SIGKILL: its pid no longer alive) are removed the next
//! time an instance is created.
//!
//! One concern per file: [`mount`] finds tracefs, [`format`] reads event
//! layouts and fields, [`page`] walks the binary ring-buffer pages, [`instance`]
//! owns an instance and its readers. Everything public is re-exported here, so
//! `measure::tracefs::X` names every item.

pub mod format;
pub mod instance;
pub mod mount;
pub mod page;

#[cfg(any(test, feature = "testing"))]
pub use format::ids_by_name;
pub use format::{EventFormat, Field, field_i64, field_str, field_u64};
#[cfg(any(test, feature = "testing"))]
pub use instance::{CpuStats, DrainStats};
pub use instance::{Instance, LossReport};
pub use mount::Tracefs;
#[cfg(any(test, feature = "testing"))]
pub use mount::read_text;
#[cfg(any(test, feature = "testing"))]
pub use page::{PageInfo, PageLayout};
pub use page::{RawEvent, parse_page};
