//! Request generation: which I/O a job issues next (op, offset, length, class),
//! and when it may issue it (rate limits, think time, end conditions).
//!
//! A [`Generator`] is built once per worker from a [`crate::job::JobSpec`] and
//! then called per request without allocating. The folder, one concern a file:
//!
//! - `generator`: the generator itself (direction, length, offset, the job's
//!   passes and end), built from the pieces below;
//! - `passes`: fio's pass and loop accounting (when a pass ends, whether
//!   another starts);
//! - `bs`: the block-size picker (`bs`, `bsrange`, `bssplit`);
//! - `coverage`: the random map with one block size (every block once per
//!   pass, O(1) space); `blockmap`: the random map with variable sizes (a
//!   bitmap of the blocks a pass touched, allocated once);
//! - `distribution`, `lfsr`, `zones`: non-uniform offsets, the strided random
//!   map, `zonemode`;
//! - `fio_rand`: fio's own generator and seeds, for a mixed job's direction
//!   draw (`rwmixread`), so directions come in fio's order;
//! - `pacer`: when the next request may go (`rate*`, `thinktime`), and
//!   `rate_min`;
//! - `thinktime`: the think-time family the pacer applies;
//! - `replay`: `read_iolog` traces;
//! - `buffers`, `dedupe`: the data written;
//! - `verify*`: verification headers, digests, and dumps of failures.

pub mod blockmap;
mod bs;
pub mod buffers;
mod coverage;
pub mod dedupe;
pub mod distribution;
pub mod fio_dist;
pub mod fio_rand;
pub mod generator;
pub mod lfsr;
pub mod pacer;
mod passes;
pub mod replay;
pub mod thinktime;
pub mod verify;
pub mod verify_block;
pub mod verify_digest;
pub mod verify_dump;
pub mod zones;

use std::time::Duration;

pub use generator::{Generator, NextIo, target_end};
#[cfg(any(test, feature = "testing"))]
pub use pacer::MinRateMiss;
pub use pacer::{Pacer, due_or_switch};

/// A duration in nanoseconds, saturating at `u64::MAX` (the unit of every
/// schedule in the workload and the engine).
pub fn dur_ns(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}
