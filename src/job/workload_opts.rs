//! fio's options about how requests are generated and timed beyond the
//! basics of `rw`/`bs`/`rate`: the think-time family, `rw_sequencer`,
//! `serialize_overlap`, `random_generator`, `allrandrepeat` and the verify
//! backlog's batch. Their values land in [`WorkloadOpts`]; `workload::`
//! (`thinktime`, the generator, the verifier) and the engine act on them.

/// fio's `random_generator`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum RandomGenerator {
    /// fio's default: a generator of random numbers; with `norandommap`
    /// offsets are drawn with replacement.
    #[default]
    Tausworthe,
    /// fio's 64-bit variant (same meaning here: iolab's generator is 64-bit).
    Tausworthe64,
    /// A maximal-period sequence: every block of the region exactly once per
    /// pass, with or without the random map.
    Lfsr,
}

/// fio's `thinktime_blocks_type`: what `thinktime_blocks` counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum ThinkCount {
    /// Completed I/Os (fio's default).
    #[default]
    Complete,
    /// Issued I/Os.
    Issue,
}

/// What the options of this file set (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WorkloadOpts {
    /// `thinktime_spin`: the first part of each think time is spent spinning
    /// on the CPU, the rest asleep.
    pub thinktime_spin: std::time::Duration,
    pub think_count: ThinkCount,
    /// `thinktime_blocks` was written (fio: with `thinktime_iotime`, the
    /// default of 1 block does not apply).
    pub thinktime_blocks_set: bool,
    /// `thinktime_iotime`: think after this much time of I/O (0 = off).
    pub thinktime_iotime: std::time::Duration,
    /// `rate_ignore_thinktime`: the rate's schedule moves on during think
    /// time instead of catching up after it.
    pub rate_ignore_thinktime: bool,
    /// `rw_sequencer=identical`: `rw=rand...:N` repeats one offset N times
    /// (default `sequential`: N consecutive blocks).
    pub seq_identical: bool,
    /// `serialize_overlap`: a request that overlaps one in flight waits for it.
    pub serialize_overlap: bool,
    pub random_generator: RandomGenerator,
    /// `allrandrepeat`: every random generator repeatable (fio); iolab draws
    /// them all from one seed, so this makes the job repeatable.
    pub allrandrepeat: bool,
    /// `randseed=` was given with `randrepeat=0`: fio then seeds offsets
    /// from it rather than from its fixed per-thread offset seed (which
    /// fio 3.33 keeps under randrepeat=1 even with `randseed=`), and does
    /// not re-seed them at each loop (`fio_rand::job_seeds`).
    pub offsets_from_randseed: bool,
    /// `randseed=` was given at all: fio then drops randrepeat after it has
    /// filled the seeds, so a file's `random_distribution` state (zipf,
    /// pareto, normal) takes the offset seed rather than its file-name hash
    /// (`fio_dist::seed`).
    #[serde(skip)]
    pub randseed_given: bool,
    /// `verify_backlog_batch`: blocks read back at each backlog check (0 =
    /// `verify_backlog`).
    pub verify_backlog_batch: u64,
}

pub(crate) const SEQUENCER_VALID: &str = "sequential or identical";
pub(crate) const GENERATOR_VALID: &str = "tausworthe, lfsr or tausworthe64";
pub(crate) const THINK_COUNT_VALID: &str = "complete or issue";
