//! Block-layer breakdown from tracepoints (study 002): btt's stage table, a
//! biolatency-style histogram, and a per-request join with iolab's own timestamps.
//!
//! Events use blktrace's letters: Q (`block_bio_queue`), G (`block_getrq`),
//! I (`block_rq_insert`), D (`block_rq_issue`), C (`block_rq_complete`, or
//! `block_bio_complete` on bio-based devices such as zram, which have no request and
//! so no G/I/D), M (`block_bio_backmerge`/`frontmerge`). Requests are matched like
//! btt does: by (device, start sector), in time order.
//!
//! Stages that a device does not produce are reported as absent with the reason,
//! never as zero.
//!
//! One concern per file, in dependency order: `decode` (events from pages or
//! text) -> `matching` (requests, like btt) -> `stats` (btt's table, log2
//! histograms) -> `join` (with iolab's timestamps) -> `render` (text views);
//! `live` runs a capture and uses the first three.

mod decode;
mod join;
mod live;
mod matching;
mod render;
mod stats;
#[cfg(test)]
mod tests;

#[cfg(any(test, feature = "testing"))]
pub use decode::*;
pub use join::*;
pub use live::*;
pub use matching::*;
pub use render::*;
pub use stats::*;
