//! fio's pass and loop accounting: a job runs passes over its region (fio's
//! `do_io`); a pass ends when its offsets run out, when it issued `size`
//! bytes, or when the job issued `io_size` (or `size`) times `loops` bytes in
//! all. `loops` passes always start; more follow while fewer than `io_size`
//! (or `size`) bytes are done (fio's `keep_running`). Counts are of bytes
//! issued.

use crate::job::{Direction, JobSpec, Pattern};

/// One job's pass accounting over its region, in bytes issued. Plain copies
/// (the generator's undo snapshot holds one).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Passes {
    /// This pass's bytes, and fio's `total_bytes` for a pass.
    issued: u64,
    limit: u64,
    /// The job's bytes, and fio's limit on them (`io_size` or `size`, times `loops`).
    total: u64,
    total_limit: u64,
    /// `io_size` (or `size`): more passes follow while fewer bytes are done.
    once: u64,
    io_size_set: bool,
    /// Passes finished, and `loops`.
    done: u32,
    loops: u32,
    /// The largest block size: fio stops when less than one is left to do.
    max_bs: u64,
}

impl Passes {
    /// The accounting of `job` over a region of `region_len` bytes (fio's
    /// `size` for one file).
    pub(crate) fn new(job: &JobSpec, region_len: u64) -> Passes {
        let once = job.io_size.unwrap_or(region_len);
        let loops = job.loops.max(1);
        // fio lets one pass run past the region (wrapping) for a mixed
        // sequential job without verify and for random overwrites without a
        // random map: their pass is `io_size` long.
        let mixed_seq = job.rw.dir == Direction::Mixed && job.rw.pattern == Pattern::Seq;
        let overwrite =
            job.rw.dir == Direction::Write && job.rw.pattern == Pattern::Rand && job.norandommap;
        let limit = if (mixed_seq && job.verify.kind.is_none()) || overwrite {
            region_len.max(once)
        } else {
            region_len
        };
        Passes {
            issued: 0,
            limit,
            total: 0,
            total_limit: once.saturating_mul(u64::from(loops)),
            once,
            io_size_set: job.io_size.is_some(),
            done: 0,
            loops,
            max_bs: u64::from(job.max_bs()),
        }
    }

    /// fio's `do_io` loop condition, false: this pass issued `size` bytes or
    /// the job all it may.
    #[inline]
    pub(crate) fn pass_done(&self) -> bool {
        self.total >= self.total_limit || self.issued >= self.limit
    }

    /// `len` bytes were issued.
    #[inline]
    pub(crate) fn count(&mut self, len: u64) {
        self.issued += len;
        self.total += len;
    }

    /// Whether `io_size` reaches beyond a region of `len` bytes (a mixed
    /// sequential job then wraps at the region's end).
    pub(crate) fn io_size_beyond(&self, len: u64) -> bool {
        self.once > len
    }

    /// fio's `keep_running` after a pass (`offsets_done`: it ended because
    /// its offsets ran out): `loops` passes always run; then more while
    /// fewer than `io_size` (or `size`) bytes are done and at least one
    /// block is left; without `io_size`, not once the offsets ran out. A
    /// pass that issued nothing ends the job. `Some(forced)` when another
    /// pass starts (`forced`: one of the `loops`).
    pub(crate) fn finish(&mut self, offsets_done: bool, time_based: bool) -> Option<bool> {
        if self.issued == 0 {
            return None;
        }
        self.done += 1;
        let forced = self.done < self.loops;
        let left = self.once.saturating_sub(self.total);
        let more = time_based
            || forced
            || (left > 0 && left >= self.max_bs && (self.io_size_set || !offsets_done));
        if !more {
            return None;
        }
        self.issued = 0;
        Some(forced)
    }
}
