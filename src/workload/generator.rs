//! The generator: which I/O a job issues next (op, offset, length, class),
//! phase by phase: a queued request first (an fsync, trimwrite's write), then
//! whether the job may go on, the direction, the length, the offset, and the
//! accounting of what was issued.

use crate::job::{BlockSizes, Direction, JobSpec, Pattern, RandomDist, RwSuffix};
use crate::request::{Class, Flush, Op};

use super::blockmap::{BlockMap, RandomMapError};
use super::bs::FioSizes;
use super::distribution::Picker;
use super::fio_dist::{FioDist, FioZones};
use super::fio_rand::{FioRand, RwMix, Taus88};
use super::passes::Passes;
use super::{lfsr, zones};

/// The next I/O a job wants to issue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextIo {
    pub op: Op,
    pub offset: u64,
    pub len: u32,
    pub class: Class,
    /// What an `Op::Fsync` flushes (`Flush::Full` for other ops); a range's
    /// offset and length are the worker's to fill (`engine::worker`).
    pub flush: Flush,
}

/// Generates a job's requests. Deterministic for a given seed.
#[derive(Debug)]
pub struct Generator {
    pattern: Pattern,
    dir: Direction,
    /// A mixed job's direction draw, fio's own (`fio_rand`); None otherwise.
    mix: Option<RwMix>,
    /// Block sizes for reads, writes and trims (`Op::dir`), drawn as fio
    /// draws them from fio's per-direction generators (`bs_rng`).
    bs: [FioSizes; 3],
    bs_rng: [FioRand; 3],
    /// The drawing direction's generator before the request's size was
    /// drawn: a size that does not fit where the offset lands is drawn again
    /// from here, as fio draws it after the offset ([`Generator::refit`]).
    bs_snap: FioRand,
    /// Which of fio's seed slots each direction's sizes take (fio shares
    /// the read seed with writes under verify, the write seed with trims
    /// under trimwrite).
    bs_slot: [usize; 3],
    /// Addressable region [start, start + len) of the target.
    start: u64,
    len: u64,
    /// Random offsets are aligned to this per direction, reads, writes and
    /// trims (fio's blockalign; by default the smallest block size).
    align: [u64; 3],
    /// `random_distribution` other than uniform, per direction, over blocks of
    /// `align` bytes.
    pick: [Option<Picker>; 2],
    /// zipf, pareto and normal as fio draws them: one state for the file's
    /// reads and writes, over blocks of the smallest block size
    /// (`fio_dist`); these take the place of `pick`.
    fdist: Option<FioDist>,
    /// zoned and zoned_abs as fio draws them, per direction: the zone from
    /// fio's zone generator (`zone_rng`, re-seeded with the offsets'), the
    /// block from the offset generator.
    fzones: [Option<FioZones>; 2],
    zone_rng: Taus88,
    zone_seed: Option<u32>,
    /// `percentage_random` per direction; the rest continue sequentially
    /// from where the direction's last I/O ended (`last_end`).
    pct_random: [u32; 2],
    last_end: [u64; 2],
    /// fio's job loop: the passes over the region and the byte limits that
    /// end them (`passes`).
    pass: Passes,
    /// Where the file or device ends, from `start` (fio's `real_file_size`):
    /// sequential holes wrap there, not at the region's end.
    file_end: u64,
    /// End of the last sequential I/O, relative to `start`, per direction
    /// (fio's `last_pos`; 0 at the start of a pass).
    seq_pos: [u64; 2],
    rng: fastrand::Rng,
    /// fio's offset generator (its `random_state`): uniform random offsets
    /// are fio's draws from it, scaled to the region's blocks.
    orng: FioRand,
    /// The seed `orng` starts each `loops` pass from again (fio re-seeds
    /// between loops under randrepeat=1 without `randseed`), if it does.
    loop_reseed: Option<u64>,
    /// The same for the size generators.
    bs_seeds: Option<[u64; 3]>,
    /// fio's `last_block` per direction (reads, writes, trims; from the
    /// smallest block size, [`last_block`]), kept: the region
    /// and sizes do not change, and a division per request is measurable
    /// on the null device.
    lastb: [u64; 3],
    /// A new pass over the region began with the last request (fio drops the
    /// page cache at each pass of a buffered job; the engine does the same).
    new_pass: bool,
    /// A new `loops` pass began with the last request (fio verifies what a
    /// write job wrote after every loop; `workload::verify`).
    new_loop: bool,
    /// `random_generator=lfsr`: fio's register over the region's blocks,
    /// every block once per pass in fio's order, with or without the random
    /// map (`lfsr::blocks`). `None` otherwise.
    lfsr: Option<lfsr::FioLfsr>,
    /// fio's random map (its axmap): the blocks (of the job's smallest size)
    /// this pass touched. A drawn block that is used moves on to the next
    /// free one, and an I/O is shortened to the free blocks it starts on.
    /// `None` without the map (`norandommap`, lfsr, ...).
    block_map: Option<BlockMap>,
    /// The map's block size (the smallest block size), and the run of blocks
    /// the last request marked (first, count), for [`Generator::redo_as`].
    map_unit: u64,
    last_mark: (u64, u64),
    /// `rw=...:N`: bytes added after each sequential I/O (negative: backwards).
    seq_add: i64,
    /// `rw=rand...:N`: a new random offset every N I/Os (1 = every I/O), and
    /// how many sequential ones are left before the next.
    rand_every: u32,
    rand_run_left: u32,
    /// Where the current random run's next sequential I/O starts (relative).
    rand_run_pos: u64,
    /// `rw_sequencer=identical`: a run repeats its random offset instead.
    run_identical: bool,
    /// Random blocks still unvisited in this pass (fio's random map: the
    /// pass ends when it is full).
    bytes_left: u64,
    ios_left: u64,
    time_based: bool,
    /// fio's periodic syncs: every N writes an fsync, an fdatasync, a
    /// sync_file_range (0 = never), each on its own count; when two fall due
    /// on one write the first of them is issued, as fio's order is.
    sync_every: [u32; 3],
    /// sync_file_range's SYNC_FILE_RANGE_* flags.
    range_flags: u32,
    /// Writes issued (fio's `io_issues[DDIR_WRITE]`: the counts above are
    /// taken of it).
    writes: u64,
    /// The last request was a sync (fio's `last_was_sync`). fio issues a sync
    /// before the next request whenever the write count is a multiple of N
    /// and the last request was not a sync: so a read after it (a mixed
    /// job) makes it due again, and so does a new `loops` pass (fio forgets
    /// its last sync there); and none follows the job's last write.
    last_was_sync: bool,
    /// A new pass began since the last look (`next_pass`): fio's new loop
    /// forgets its last sync.
    pass_forgets_sync: bool,
    /// The last loop's closing sync went out after the new loop began: the
    /// new loop is announced with the request after it (`take_new_loop`),
    /// so verification reads the loop back after its sync, as fio does.
    loop_after_sync: bool,
    /// A request held back while the sync its new pass made due goes first.
    deferred: Option<NextIo>,
    /// `rw=trimwrite`/`randtrimwrite`: the write of the range just trimmed,
    /// issued next (absolute offset, length).
    pending_write: Option<(u64, u32)>,
    class_override: Option<Class>,
    sync_writes: bool,
    readahead: bool,
    /// State before the last request, so [`Generator::redo_as`] can take it back.
    undo: Option<Undo>,
    /// fio's `zonemode`: the strided walk or emulated zones (`zones`).
    zones: zones::Zones,
    /// The random map of a strided job: each zone's blocks once per visit
    /// (`lfsr::ZoneMap`).
    zone_map: Option<lfsr::ZoneMap>,
}

/// The generator's position before its last request (plain copies: taking a
/// snapshot per request allocates nothing).
#[derive(Clone, Copy, Debug)]
struct Undo {
    seq_pos: [u64; 2],
    last_end: [u64; 2],
    rand_run_left: u32,
    rand_run_pos: u64,
    bytes_left: u64,
    pass: Passes,
    ios_left: u64,
    new_pass: bool,
    writes: u64,
    last_was_sync: bool,
    lfsr: Option<lfsr::FioLfsr>,
    strided: Option<zones::StridedPos>,
    mix_counts: [u64; 2],
    orng: FioRand,
    bs_rng: [FioRand; 3],
}

impl Generator {
    /// `region_len` is the number of bytes the job may address (after `offset`),
    /// resolved by the engine against the real target.
    pub fn new(job: &JobSpec, region_start: u64, region_len: u64, seed: u64) -> Generator {
        let unaligned = job.target.bs_unaligned;
        let bs = [&job.bs[0], &job.bs[1], job.trim_bs()].map(|b| FioSizes::new(b, unaligned));
        let mut bs_slot = super::fio_rand::SLOT_BS;
        if job.verify.kind.is_some() {
            bs_slot[1] = bs_slot[0];
        }
        if job.rw.dir == Direction::TrimWrite {
            bs_slot[2] = bs_slot[1];
        }
        let bs_rng = bs_slot.map(|slot| FioRand::new(seed.wrapping_add(slot as u64), use64(job)));
        let align = aligns(job);
        let time_based = job.time_based;
        let mut rng = fastrand::Rng::with_seed(seed);
        let fixed = one_size(job);
        // fio turns its random map off for a non-uniform distribution and for
        // blockalign (offsets then need not be whole blocks).
        // A strided job draws within one zone at a time (with replacement).
        let uniform = uniform_unzoned(job);
        // Seeded with fio's offset seed by `set_fio_seeds` (0 meanwhile: it
        // is never the register's stuck state).
        let lfsr = lfsr::blocks(job, region_len).and_then(|n| lfsr::FioLfsr::new(n, 0, 0).ok());
        let block_map = variable_map_unit(job, &align, fixed, region_len, uniform);
        // The engine checked it can be allocated (`check_random_map`).
        let pick = [0, 1].map(|d| {
            Picker::new(
                &job.random_distribution,
                d,
                region_len / align[d],
                align[d],
                &mut rng,
            )
        });
        // Seeded from `seed` until the engine gives fio's seed for the file
        // (`with_dist_seed`).
        let smallest = u64::from(job.bs[0].min().min(job.bs[1].min()));
        let fdist = FioDist::new(&job.random_distribution, region_len, smallest, seed as u32);
        let pass = Passes::new(job, region_len);
        let min_bs = [
            u64::from(job.bs[0].min().max(1)),
            u64::from(job.bs[1].min().max(1)),
            u64::from(job.trim_bs().min().max(1)),
        ];
        Generator {
            pattern: job.rw.pattern,
            dir: job.rw.dir,
            // Seeded from `seed` until the engine gives fio's seed
            // (`with_rwmix_seed`).
            mix: (job.rw.dir == Direction::Mixed).then(|| RwMix::new(seed as u32, job.rwmixread)),
            bs,
            bs_rng,
            bs_snap: bs_rng[0],
            bs_slot,
            start: region_start,
            len: region_len,
            align,
            pick,
            fdist,
            fzones: [0, 1].map(|d| FioZones::new(&job.random_distribution, d)),
            zone_rng: Taus88::new(seed as u32),
            zone_seed: None,
            pct_random: job.percentage_random,
            last_end: [0, 0],
            pass,
            file_end: region_len,
            seq_pos: [0, 0],
            rng,
            orng: FioRand::new(seed, use64(job)),
            loop_reseed: None,
            bs_seeds: None,
            lastb: std::array::from_fn(|b| last_block(region_len, align[b], min_bs[b])),
            lfsr,
            map_unit: block_map.unwrap_or(1),
            block_map: block_map.map(|g| BlockMap::new(region_len / g)),
            last_mark: (0, 0),
            seq_add: match job.rw_suffix {
                RwSuffix::Add(n) => n,
                _ => 0,
            },
            rand_every: match job.rw_suffix {
                RwSuffix::Every(n) => n.max(1),
                _ => 1,
            },
            rand_run_left: 0,
            rand_run_pos: 0,
            run_identical: job.workload.seq_identical,
            new_pass: false,
            new_loop: false,
            bytes_left: region_len,
            ios_left: job.number_ios.unwrap_or(u64::MAX),
            time_based,
            sync_every: [job.fsync, job.syncs.fdatasync, job.syncs.range_every],
            range_flags: job.syncs.range_flags,
            writes: 0,
            last_was_sync: false,
            pass_forgets_sync: false,
            loop_after_sync: false,
            deferred: None,
            pending_write: None,
            class_override: job.ioclass,
            sync_writes: job.sync || job.syncs_writes(),
            readahead: job.readahead > 0
                && job.rw.pattern == Pattern::Seq
                && job.rw.dir == Direction::Read,
            undo: None,
            zones: zones::Zones::new(job, region_len),
            zone_map: lfsr::ZoneMap::for_job(job, fixed),
        }
    }

    /// fio's strided walk wraps at the end of the file (`end` bytes from the
    /// region start), which may lie beyond the job's region.
    pub fn with_zone_end(mut self, end: Option<u64>) -> Generator {
        if let (zones::Zones::Strided(z), Some(e)) = (&mut self.zones, end) {
            z.set_end(e);
        }
        self
    }

    /// Where the target ends, in bytes from the region's start (fio's
    /// `real_file_size`: a file or device may reach beyond `offset + size`);
    /// `None` (the emulated device) is the region's end.
    pub fn with_file_end(mut self, end: Option<u64>) -> Generator {
        self.file_end = end.unwrap_or(self.len).max(self.len);
        self
    }

    /// Seed a mixed job's direction draw as fio seeds it for this job clone
    /// (`fio_rand::rwmix_seed`), so its directions come in fio's order.
    pub fn with_rwmix_seed(mut self, seed: u32) -> Generator {
        if let Some(m) = &mut self.mix {
            *m = RwMix::new(seed, m.read_pct());
        }
        self
    }

    /// Seed the job's random streams as fio seeds this job clone
    /// (`fio_rand::job_seeds`): offsets from fio's offset slot. `repeat`:
    /// fio re-seeds them at each `loops` pass (randrepeat=1 without
    /// `randseed`).
    pub fn with_fio_seeds(mut self, seeds: &[u64; super::fio_rand::SLOTS], repeat: bool) -> Self {
        self.set_fio_seeds(seeds, repeat);
        self
    }

    /// [`Generator::with_fio_seeds`] in place.
    pub fn set_fio_seeds(&mut self, seeds: &[u64; super::fio_rand::SLOTS], repeat: bool) {
        let use64 = matches!(self.orng, FioRand::T64(_));
        let block = seeds[super::fio_rand::SLOT_BLOCK];
        self.orng = FioRand::new(block, use64);
        self.loop_reseed = repeat.then_some(block);
        self.bs_rng = self.bs_slot.map(|slot| FioRand::new(seeds[slot], use64));
        self.bs_seeds = repeat.then_some(self.bs_slot.map(|slot| seeds[slot]));
        if let Some(l) = self.lfsr.as_mut() {
            // The engine checked the seed (`lfsr::check`); a seed it refuses
            // leaves the register as it was, which still moves.
            let _ = l.reseed(block);
        }
        let zone = seeds[super::fio_rand::SLOT_ZONE] as u32;
        self.zone_rng = Taus88::new(zone);
        self.zone_seed = repeat.then_some(zone);
    }

    /// Seed the distribution's draws (zipf, pareto, normal) as fio seeds
    /// this file's (`fio_dist::seed`).
    pub fn with_dist_seed(mut self, seed: Option<u32>) -> Self {
        if let Some(s) = seed {
            self.set_dist_seed(s);
        }
        self
    }

    /// [`Generator::with_dist_seed`] in place.
    pub fn set_dist_seed(&mut self, seed: u32) {
        if let Some(d) = &mut self.fdist {
            d.reseed(seed);
        }
    }

    /// The offset generator as it stands (for a service sharing one).
    pub fn fio_rng(&self) -> FioRand {
        self.orng
    }

    /// Exchange the offset generator with `other` when it holds one: the
    /// files of one job share one, as fio's job has one.
    #[inline]
    pub fn swap_fio_rng(&mut self, other: &mut Option<FioRand>) {
        if let Some(o) = other {
            std::mem::swap(&mut self.orng, o);
        }
    }

    /// Exchange the direction draw with `other`: the files of one job share
    /// one draw, as fio's job has one (`engine::files::FileService`).
    #[inline]
    pub fn swap_rwmix(&mut self, other: &mut Option<RwMix>) {
        std::mem::swap(&mut self.mix, other);
    }

    /// Whether the random map holds every block of the region (the pass's
    /// offsets are used up).
    pub fn random_map_full(&self) -> bool {
        self.block_map.as_ref().is_some_and(BlockMap::is_full)
    }

    /// Zone resets of a `zonemode=zbd` job so far (fio's "N zone resets").
    pub fn zone_resets(&self) -> u64 {
        match &self.zones {
            zones::Zones::Zbd(z) => z.resets(),
            _ => 0,
        }
    }

    /// Whether the job mixes reads and writes (only such a job can switch a
    /// request's direction, [`Generator::redo_as`]).
    #[inline]
    pub fn is_mixed(&self) -> bool {
        self.dir == Direction::Mixed
    }

    /// The next request, or `None` when the job has issued all it should.
    #[inline]
    pub fn next_io(&mut self) -> Option<NextIo> {
        self.next_io_as(None)
    }

    /// Take back the request just generated and make one in direction `op`
    /// instead (a mixed job whose next direction must wait for its rate while
    /// the other may go now: fio switches direction then). `None` if the last
    /// request cannot be taken back (an fsync, or a job that is not mixed:
    /// only a mixed job keeps what it takes to take one back).
    pub fn redo_as(&mut self, op: Op) -> Option<NextIo> {
        let snap = self.undo.take()?;
        self.seq_pos = snap.seq_pos;
        self.last_end = snap.last_end;
        self.rand_run_left = snap.rand_run_left;
        self.rand_run_pos = snap.rand_run_pos;
        self.bytes_left = snap.bytes_left;
        self.pass = snap.pass;
        self.ios_left = snap.ios_left;
        self.new_pass = snap.new_pass;
        self.writes = snap.writes;
        self.last_was_sync = snap.last_was_sync;
        if let Some(m) = self.mix.as_mut() {
            m.set_counts(snap.mix_counts);
        }
        self.orng = snap.orng;
        self.bs_rng = snap.bs_rng;
        self.lfsr = snap.lfsr;
        if let Some(m) = self.block_map.as_mut() {
            m.unmark_run(self.last_mark.0, self.last_mark.1);
        }
        if let (zones::Zones::Strided(z), Some(p)) = (&mut self.zones, snap.strided) {
            z.set_pos(p);
        }
        self.next_io_as(Some(op))
    }

    /// One request, phase by phase. `force`: the direction [`Generator::redo_as`]
    /// asks for instead of drawing one.
    #[inline]
    fn next_io_as(&mut self, force: Option<Op>) -> Option<NextIo> {
        self.snapshot_for_redo();
        self.new_loop |= std::mem::take(&mut self.loop_after_sync);
        if let Some(io) = self.queued_io() {
            return Some(io);
        }
        // fio looks for a due sync before the limits: the sync goes before
        // the pass that ends here does, and a job ended by its last write
        // issues none after it.
        let due = self.sync_due();
        if !self.may_issue_more() {
            return None;
        }
        let forgot = std::mem::take(&mut self.pass_forgets_sync);
        if let Some(flush) = due {
            let io = self.sync_io(flush);
            if forgot {
                // The last loop's sync: the new loop that began behind it
                // starts with the next request, and its sync is due again.
                self.last_was_sync = false;
                self.loop_after_sync = std::mem::take(&mut self.new_loop);
            }
            return Some(io);
        }
        if forgot {
            self.last_was_sync = false;
            if let Some(flush) = self.sync_due() {
                return Some(self.sync_io(flush));
            }
        }
        let op = self.choose_op(force);
        // Trims take the write direction's options (`Op::rw_slot`).
        let d = op.rw_slot().unwrap_or(1);
        // Sizes and alignment are the trims' own (`bs=4k,4k,8k`).
        // The size as fio would draw it where it fits; where the offset
        // leaves less room, `refit` draws it again as fio does.
        let b = op.dir();
        if self.bs[b].draws() {
            // (One size draws nothing: nothing to take back in `refit`.)
            self.bs_snap = self.bs_rng[b];
        }
        let mut len = self.bs[b]
            .pick(&mut self.bs_rng[b], u64::MAX)
            .unwrap_or(self.bs[b].min())
            .min(self.len.max(1));
        let rel = self.choose_offset(d, op.dir(), &mut len)?;
        let (rel, len) = self.fit_to_zone(op, d, rel, len)?;
        // A new pass may have begun with this request (`next_pass`), and
        // with it a sync due again: it goes first.
        if std::mem::take(&mut self.pass_forgets_sync) {
            self.last_was_sync = false;
        }
        let due = self.sync_due();
        let io = self.account(op, d, rel, len);
        if let Some(flush) = due {
            self.deferred = Some(io);
            return Some(self.sync_io(flush));
        }
        self.last_was_sync = false;
        Some(io)
    }

    /// A sync request of kind `flush`; it cannot be taken back.
    #[inline]
    fn sync_io(&mut self, flush: Flush) -> NextIo {
        self.undo = None;
        self.last_was_sync = true;
        NextIo {
            op: Op::Fsync,
            offset: 0,
            len: 0,
            class: Class::SyncWrite,
            flush,
        }
    }

    /// Keep what [`Generator::redo_as`] needs to take the coming request back.
    /// Only a mixed job ever switches direction (`due_or_switch`): other jobs
    /// skip the snapshot, a dozen stores on every request, and their `undo`
    /// stays None (nothing else sets it), so they skip even that store.
    #[inline]
    fn snapshot_for_redo(&mut self) {
        if self.dir != Direction::Mixed {
            return;
        }
        self.last_mark = (0, 0);
        self.undo = Some(Undo {
            seq_pos: self.seq_pos,
            last_end: self.last_end,
            rand_run_left: self.rand_run_left,
            rand_run_pos: self.rand_run_pos,
            bytes_left: self.bytes_left,
            pass: self.pass,
            ios_left: self.ios_left,
            new_pass: self.new_pass,
            writes: self.writes,
            last_was_sync: self.last_was_sync,
            lfsr: self.lfsr,
            strided: match &self.zones {
                zones::Zones::Strided(z) => Some(z.pos()),
                _ => None,
            },
            mix_counts: self.mix.as_ref().map_or([0, 0], RwMix::counts),
            orng: self.orng,
            bs_rng: self.bs_rng,
        });
    }

    /// A request an earlier one queued: the sync `fsync=N` (`fdatasync=N`,
    /// `sync_file_range=F:N`) asked for, or the write of the range
    /// `trimwrite` just trimmed. Neither can be taken back.
    #[inline]
    fn queued_io(&mut self) -> Option<NextIo> {
        if let Some(io) = self.deferred.take() {
            self.undo = None;
            self.last_was_sync = false;
            return Some(io);
        }
        let (offset, len) = self.pending_write.take()?;
        // fio counts the trim and its write once against size/io_size and
        // number_ios (it doubles number_ios for trimwrite), so the write takes
        // nothing from them.
        self.undo = None;
        self.count_write_for_syncs();
        self.last_was_sync = false;
        Some(NextIo {
            op: Op::Write,
            offset,
            len,
            flush: Flush::Full,
            class: self.class_of(Op::Write),
        })
    }

    /// Whether the job may issue another request: `number_ios` left, the byte
    /// limits of its passes, and (a full random map ends a pass, as fio's byte
    /// limits do) another pass when the map is full.
    #[inline]
    fn may_issue_more(&mut self) -> bool {
        if self.ios_left == 0 || !self.within_limits() {
            return false;
        }
        let map_full = self.lfsr.as_ref().is_some_and(lfsr::FioLfsr::exhausted)
            || self.block_map.as_ref().is_some_and(BlockMap::is_full);
        !map_full || (self.next_pass(true) && self.within_limits())
    }

    /// The direction of the next request: the job's own, or for a mixed job
    /// one drawn by `rwmixread` (or the one `redo_as` forces). Emulated zones
    /// that cannot be read yet turn a read into a write.
    #[inline]
    fn choose_op(&mut self, force: Option<Op>) -> Op {
        let op = match (force, self.dir) {
            (Some(op), _) => {
                // fio holds the direction a rate limit switched to.
                if let Some(m) = self.mix.as_mut() {
                    m.switch_to(op.dir());
                }
                op
            }
            (None, Direction::Read) => Op::Read,
            (None, Direction::Write) => Op::Write,
            (None, Direction::Trim | Direction::TrimWrite) => Op::Trim,
            (None, Direction::Mixed) => match self.mix.as_mut().map_or(0, RwMix::next_dir) {
                0 => Op::Read,
                _ => Op::Write,
            },
        };
        let op = match &self.zones {
            zones::Zones::Zbd(z) if op == Op::Read && !z.read_allowed(self.dir) => Op::Write,
            _ => op,
        };
        // fio's draw counts the I/Os issued each way (a zone's turning a
        // read into a write counts as the write it is).
        if let Some(m) = self.mix.as_mut() {
            m.issued(op.dir());
        }
        op
    }

    /// The offset (relative to `start`) of a request of `len` bytes in
    /// direction `d` (`Op::rw_slot`) with the sizes and alignment of `b`
    /// (`Op::dir`), or `None` when the job is over. A sequential pass may
    /// shorten `len` to what is left of the region ([`Self::seq_offset`]).
    #[inline]
    fn choose_offset(&mut self, d: usize, b: usize, len: &mut u64) -> Option<u64> {
        let a = self.align[b];
        match (self.pattern, &self.zones) {
            (Pattern::Seq, zones::Zones::None) => match self.seq_offset(d, b, len) {
                Some(o) => Some(o),
                // The pass is over: the next one starts from the region's start.
                None if self.next_pass(true) && self.within_limits() => self.seq_offset(d, b, len),
                None => None,
            },
            (Pattern::Seq, zones::Zones::Zbd(_)) if b == 1 => {
                // fio: a sequential write at a zone's capacity moves on to the
                // zone's end; past the region's end, the pass's offsets ran out.
                let skip = match &self.zones {
                    zones::Zones::Zbd(z) => z.past_capacity(self.seq_pos[d]),
                    _ => None,
                };
                if let Some(end) = skip {
                    self.seq_pos[d] = end;
                    if end >= self.len && !(self.next_pass(true) && self.within_limits()) {
                        return None;
                    }
                }
                Some(self.zoned_seq_offset(d, a, *len))
            }
            (Pattern::Seq, _) => Some(self.zoned_seq_offset(d, a, *len)),
            (Pattern::Rand, zones::Zones::Strided(_)) => Some(self.strided_rand_offset(a, *len)),
            (Pattern::Rand, _) => Some(self.rand_offset(d, b, a, len)),
        }
    }

    /// A sequential offset in a zoned job: the strided walk, or emulated
    /// zones (zbd), whose write pointers move the offset afterwards.
    #[inline]
    fn zoned_seq_offset(&mut self, d: usize, a: u64, len: u64) -> u64 {
        if let zones::Zones::Strided(z) = &mut self.zones {
            let o = z.seq(&mut self.seq_pos[d], len);
            self.seq_pos[d] = o + len + self.seq_add.max(0) as u64;
            return o;
        }
        if self.seq_pos[d].saturating_add(len) > self.len {
            // Wrap like fio does when a sequential job runs past the end
            // (a backwards job wraps to the last whole block).
            self.seq_pos[d] = if self.seq_add < 0 {
                (self.len - len) / a * a
            } else {
                0
            };
        }
        let o = self.seq_pos[d];
        // The next one starts after this one plus the hole (`rw=read:8k`),
        // or before it (`rw=read:-8k`); before the start wraps to the end.
        let next = o as i128 + len as i128 + self.seq_add as i128;
        self.seq_pos[d] = if next < 0 { u64::MAX } else { next as u64 };
        o
    }

    /// A random offset in a strided job: within the current zone, from the
    /// zone's random map when it has one.
    #[inline]
    fn strided_rand_offset(&mut self, a: u64, len: u64) -> u64 {
        let zones::Zones::Strided(z) = &mut self.zones else {
            unreachable!("called for strided jobs only")
        };
        let rng = &mut self.rng;
        match self.zone_map.as_mut() {
            Some(m) => z.rand(len, a, |n, at| m.draw(at, n, rng)),
            None => z.rand(len, a, |n, _| rng.u64(0..n)),
        }
    }

    /// A random job's offset: the next of a sequential run (`rw=randread:N`),
    /// a sequential continuation (`percentage_random`), or a fresh draw
    /// (which the random map of variable sizes may shorten, `b` the picker).
    #[inline]
    fn rand_offset(&mut self, d: usize, b: usize, a: u64, len_io: &mut u64) -> u64 {
        let len = *len_io;
        if self.rand_run_left > 0 && self.rand_run_pos + len <= self.len {
            self.rand_run_left -= 1;
            let o = self.rand_run_pos;
            if !self.run_identical {
                self.rand_run_pos += len;
            }
            return o;
        }
        if self.pct_random[d] < 100 && self.rng.u32(0..100) >= self.pct_random[d] {
            // percentage_random: this one continues where the last I/O of
            // its direction ended, wrapping at the end of the region.
            return if self.last_end[d] + len > self.len {
                0
            } else {
                self.last_end[d]
            };
        }
        let o = if self.block_map.is_some() {
            self.draw_mapped_offset(b, len_io)
        } else {
            self.draw_rand_offset(d, b, a, len_io)
        };
        let len = *len_io;
        self.rand_run_left = self.rand_every - 1;
        self.rand_run_pos = if self.run_identical { o } else { o + len };
        o
    }

    /// A fresh random offset without the random map: lfsr's next block, a
    /// block of the job's distribution, or fio's uniform draw of an aligned
    /// block (with replacement). A length that does not fit from there is
    /// drawn again among the sizes that do (fio's `io_u_fits`).
    #[inline]
    fn draw_rand_offset(&mut self, d: usize, b: usize, a: u64, len_io: &mut u64) -> u64 {
        let len = *len_io;
        if let Some(f) = &mut self.fdist {
            // fio's block of the smallest size, placed at the direction's
            // alignment; one past the region cannot be issued whole, and is
            // pulled back to the last block that can.
            let o = f.next_block().saturating_mul(a);
            return o.min((self.len - len) / a * a);
        }
        if let Some(z) = &self.fzones[d] {
            let v = self.zone_rng.between(1, 100);
            let orng = &mut self.orng;
            let o = z.block(v, self.lastb[b], a, |n| orng.scaled(n)) * a;
            return o.min((self.len - len) / a * a);
        }
        match (&mut self.lfsr, &self.pick[d]) {
            // `may_issue_more` started a new pass when the last block went.
            (Some(l), _) => l.next_block().unwrap_or(0) * len,
            (None, Some(p)) => {
                let o = p.block(self.len / a, &mut self.rng) * a;
                // A block near the end may not fit a whole I/O.
                o.min((self.len - len) / a * a)
            }
            (None, None) => {
                let lastb = self.lastb[b];
                let o = self.orng.scaled(lastb) * a;
                if o + len > self.len {
                    *len_io = self
                        .refit(b, self.len - o)
                        .unwrap_or(len.min(self.len - o).max(1));
                }
                o
            }
        }
    }

    /// fio's random map with variable block sizes: a uniform block, or the
    /// next free one after it (wrapping) when it is used; a length that fits
    /// the region from there (drawn again among the sizes that fit, as fio
    /// draws until one fits); then the length shortened to the free blocks
    /// it covers from its start. `may_issue_more` ended the pass if the map
    /// was full, so a free block exists.
    #[inline]
    fn draw_mapped_offset(&mut self, b: usize, len: &mut u64) -> u64 {
        let g = self.map_unit;
        let Some(map) = self.block_map.as_mut() else {
            unreachable!("called with a block map only")
        };
        // fio draws among its last block's blocks (in units of the
        // alignment, which is the map's block here).
        let lastb = self.lastb[b].min(map.len());
        let drawn = self.orng.scaled(lastb);
        let blk = map.free_at_or_after(drawn).unwrap_or(drawn);
        let o = blk * g;
        if o + *len > self.len {
            // The smallest size (the map's block) always fits: `blk` < len / g.
            *len = self.refit(b, self.len - o).unwrap_or(g);
        }
        let Some(map) = self.block_map.as_mut() else {
            unreachable!("called with a block map only")
        };
        let marked = if *len == g {
            map.mark_one(blk)
        } else {
            map.mark_run(blk, len.div_ceil(g))
        };
        self.last_mark = (blk, marked);
        *len = (*len).min(marked.max(1) * g);
        o
    }

    /// The size of direction `b` drawn again, from where its generator stood
    /// before this request's draw, to fit in `room` bytes (fio draws the size
    /// after the offset, again until one fits); `None` when none can.
    #[cold]
    fn refit(&mut self, b: usize, room: u64) -> Option<u64> {
        self.bs_rng[b] = self.bs_snap;
        self.bs[b].pick(&mut self.bs_rng[b], room)
    }

    /// Emulated zones (zbd) place writes at a zone's write pointer and keep
    /// reads below it: the request as the zones allow it, or `None` when
    /// nothing is left to read.
    #[inline]
    fn fit_to_zone(&mut self, op: Op, d: usize, rel: u64, len: u64) -> Option<(u64, u64)> {
        let zones::Zones::Zbd(z) = &mut self.zones else {
            return Some((rel, len));
        };
        // Zone state cannot be taken back cheaply: no redo after this.
        self.undo = None;
        let (o, l) = if op == Op::Write {
            z.write(rel, len)
        } else {
            z.read(rel, len)?
        };
        if self.pattern == Pattern::Seq {
            self.seq_pos[d] = o + l;
        }
        Some((o, l))
    }

    /// Count the request against the job's limits, queue what follows it (an
    /// fsync, trimwrite's write) and make it absolute.
    #[inline]
    fn account(&mut self, op: Op, d: usize, rel: u64, len: u64) -> NextIo {
        self.last_end[d] = rel + len;
        self.bytes_left = self.bytes_left.saturating_sub(len);
        self.pass.count(len);
        self.ios_left -= 1;
        if op == Op::Write {
            self.count_write_for_syncs();
        }
        if op == Op::Trim && self.dir == Direction::TrimWrite {
            self.pending_write = Some((self.start + rel, len as u32));
        }
        NextIo {
            op,
            offset: self.start + rel,
            len: len as u32,
            class: self.class_of(op),
            flush: Flush::Full,
        }
    }

    /// Count a write for `fsync=N`, `fdatasync=N`, `sync_file_range=F:N`
    /// (`sync_due`).
    #[inline]
    fn count_write_for_syncs(&mut self) {
        if self.sync_every == [0; 3] {
            return;
        }
        self.writes += 1;
    }

    /// The sync due before the next request, if any, fio's way: the write
    /// count is a multiple of N and the last request was not a sync. When
    /// several fall due on one count only the first (fsync, then fdatasync,
    /// then sync_file_range) is issued, as fio's choice is.
    #[inline]
    fn sync_due(&self) -> Option<Flush> {
        if self.last_was_sync || self.sync_every == [0; 3] {
            return None;
        }
        let due = |n: u32| n > 0 && self.writes > 0 && self.writes.is_multiple_of(u64::from(n));
        if due(self.sync_every[0]) {
            Some(Flush::Full)
        } else if due(self.sync_every[1]) {
            Some(Flush::Data)
        } else if due(self.sync_every[2]) {
            Some(Flush::Range {
                flags: self.range_flags,
                len: 0,
            })
        } else {
            None
        }
    }

    /// fio's next sequential offset (`get_next_seq_offset` and the checks of
    /// `get_next_offset` and `fill_io_u` after it), relative to `start`, or
    /// `None` when the pass is over. fio mixes positions relative to the
    /// region and absolute in the file here; so does this, to issue the same
    /// offsets: a hole (`rw=write:112k`) that passes the file's end wraps to
    /// the region's start (to `offset` itself, counted from the region) and
    /// the pass goes on until its bytes are done, while an I/O that ends
    /// exactly at the file's end ends the pass (so 1m read at bs=4k with 8k
    /// holes is 86 reads, 1m written at bs=16k with 112k holes is 64 writes).
    /// Backwards (`rw=read:-8k`) starts at the region's start, then wraps to
    /// below the region's end.
    ///
    /// With block sizes that vary, the block must also fit in what is left
    /// of the region (fio's `io_u_fits` in `get_next_buflen`): a size drawn
    /// too long is drawn again among those that fit (picker `b`), and when
    /// not even the smallest fits the pass is over, so the pass ends exactly
    /// at the region's end whatever the file's size. A fixed size is not
    /// checked against the region (fio's neither), only against the file's
    /// end.
    fn seq_offset(&mut self, d: usize, b: usize, len: &mut u64) -> Option<u64> {
        let (s, i, add) = (self.start, self.len, self.seq_add);
        let r = s.saturating_add(self.file_end);
        if self.seq_pos[d] >= i && self.wrap_at_region() {
            self.seq_pos[d] = 0;
            self.new_pass = true;
        }
        let mut last = s + self.seq_pos[d];
        if last >= r {
            return None;
        }
        if add < 0 && last == s && s != 0 {
            last = i.min(r);
        }
        let mut pos = last.wrapping_sub(s);
        if pos != 0 && add != 0 {
            pos = pos.wrapping_add(add as u64);
            if pos >= r {
                pos = if add > 0 {
                    s
                } else {
                    i.min(r).wrapping_add(add as u64)
                };
            }
        }
        if pos >= i {
            return None;
        }
        if pos + *len > i {
            *len = self.refit(b, i - pos)?;
        }
        if s.saturating_add(pos).saturating_add(*len) > r {
            return None;
        }
        self.seq_pos[d] = pos + *len;
        Some(pos)
    }

    /// fio starts a sequential pass over at the region's end, rather than
    /// ending it, for a time_based job and for a mixed one whose `io_size`
    /// is beyond its `size`.
    fn wrap_at_region(&self) -> bool {
        self.time_based || (self.dir == Direction::Mixed && self.pass.io_size_beyond(self.len))
    }

    /// fio's `do_io` loop condition: a pass ends once it has issued `size`
    /// bytes or the job its `io_size` (or `size`) times `loops` (a
    /// time_based job has neither limit). False when no pass may follow.
    #[inline]
    fn within_limits(&mut self) -> bool {
        while !self.time_based && self.pass.pass_done() {
            if !self.next_pass(false) {
                return false;
            }
        }
        true
    }

    /// The pass ended (`offsets_done`: its offsets ran out): start the next
    /// if fio's `keep_running` would (`Passes::finish`). Returns whether one
    /// starts.
    fn next_pass(&mut self, offsets_done: bool) -> bool {
        let Some(forced) = self.pass.finish(offsets_done, self.time_based) else {
            return false;
        };
        self.bytes_left = self.len;
        if let Some(m) = self.block_map.as_mut() {
            m.reset();
        }
        // fio resets the register when it opens the file again (a new loop)
        // and when a time_based job has used every block.
        if let Some(l) = self.lfsr.as_mut() {
            l.reset();
        }
        if let (Some(seed), false) = (self.loop_reseed, self.time_based) {
            let use64 = matches!(self.orng, FioRand::T64(_));
            self.orng = FioRand::new(seed, use64);
            if let Some(s) = self.bs_seeds {
                self.bs_rng = s.map(|s| FioRand::new(s, use64));
            }
            if let Some(z) = self.zone_seed {
                self.zone_rng = Taus88::new(z);
            }
        }
        self.new_pass = true;
        self.new_loop |= !self.time_based;
        self.pass_forgets_sync |= !self.time_based;
        match self.zones {
            // fio's strided walk goes on across passes; `loops` starts it over.
            zones::Zones::Strided(_) if !forced => {}
            _ => {
                self.seq_pos = [0, 0];
                self.restart_zones();
            }
        }
        true
    }

    fn restart_zones(&mut self) {
        if let zones::Zones::Strided(z) = &mut self.zones {
            z.restart();
        }
    }

    /// Whether a new pass over the region started since the last call.
    #[inline]
    pub fn take_new_pass(&mut self) -> bool {
        std::mem::take(&mut self.new_pass)
    }

    /// Did the last request start a new `loops` pass? (Once per pass.)
    pub fn take_new_loop(&mut self) -> bool {
        std::mem::take(&mut self.new_loop)
    }

    fn class_of(&self, op: Op) -> Class {
        if let Some(c) = self.class_override {
            return c;
        }
        match op {
            Op::Read if self.readahead => Class::Readahead,
            Op::Read => Class::Read,
            // A trim changes the target as a write does, and is classed so.
            Op::Write | Op::Trim if self.sync_writes => Class::SyncWrite,
            Op::Write | Op::Trim => Class::AsyncWrite,
            Op::Fsync => Class::SyncWrite,
        }
    }
}

/// Random offsets align to these per direction, reads, writes and trims
/// (fio's blockalign; by default the smallest block size).
fn aligns(job: &JobSpec) -> [u64; 3] {
    let min_bs = job.bs[0].min().min(job.bs[1].min()).max(1) as u64;
    let rw_align = [0, 1].map(|d| match job.blockalign[d] {
        0 => min_bs,
        a => a as u64,
    });
    // Trims align to their own blockalign, or (as fio's per-direction
    // default) to their own smallest size when they have their own sizes.
    let trim_align = match (job.blockalign_trim, &job.bs_trim) {
        (Some(a), _) => u64::from(a.max(1)),
        (None, Some(b)) => u64::from(b.min().max(1)),
        (None, None) => rw_align[1],
    };
    [rw_align[0], rw_align[1], trim_align]
}

/// Whether the job's offsets come from fio's 64-bit generator.
fn use64(job: &JobSpec) -> bool {
    job.workload.random_generator == crate::job::workload_opts::RandomGenerator::Tausworthe64
}

/// The job's one block size, if every direction it uses has the same fixed
/// size (trims' own sizes count only where the job trims).
fn one_size(job: &JobSpec) -> Option<u64> {
    let trims = matches!(job.rw.dir, Direction::Trim | Direction::TrimWrite);
    match (&job.bs[0], &job.bs[1]) {
        (BlockSizes::Fixed(r), BlockSizes::Fixed(w))
            if r == w && (!trims || job.trim_bs() == &job.bs[1]) =>
        {
            Some(*r as u64)
        }
        _ => None,
    }
}

/// A uniform distribution outside a strided zone walk: where fio keeps its
/// random map.
fn uniform_unzoned(job: &JobSpec) -> bool {
    job.random_distribution == RandomDist::Random
        && job.zones.mode != crate::job::zones::ZoneMode::Strided
}

/// Whether the random map a job's generator keeps over a region of
/// `region_len` bytes (with variable block sizes, a bitmap of its blocks)
/// can be allocated: an error naming `norandommap` rather than an abort when
/// the engine builds the generator.
pub fn check_random_map(job: &JobSpec, region_len: u64) -> Result<(), RandomMapError> {
    let align = aligns(job);
    match variable_map_unit(job, &align, one_size(job), region_len, uniform_unzoned(job)) {
        Some(g) => super::blockmap::check_alloc(region_len / g),
        None => Ok(()),
    }
}

/// The block size of fio's random map for a random job with variable block
/// sizes (`None` where it keeps none: one size, which the coverage walk
/// serves, `norandommap`, lfsr, a non-uniform distribution, `blockalign`,
/// zones, or directions whose smallest sizes differ). fio's map counts
/// blocks of the smallest size and marks each I/O in blocks of its
/// direction's smallest size, which is one size only when every direction
/// the job uses has the same smallest size and aligns to it.
fn variable_map_unit(
    job: &JobSpec,
    align: &[u64; 3],
    fixed: Option<u64>,
    region_len: u64,
    uniform: bool,
) -> Option<u64> {
    let _ = fixed;
    if job.rw.pattern != Pattern::Rand
        || job.norandommap
        || lfsr::visits_every_block(job)
        || !uniform
        || job.zones.mode != crate::job::zones::ZoneMode::None
        || job.blockalign != [0, 0]
        || job.blockalign_trim.is_some()
        // Sizes of any byte count do not tile blocks of the smallest size.
        || job.target.bs_unaligned
    {
        return None;
    }
    let used: &[usize] = match job.rw.dir {
        Direction::Read => &[0],
        Direction::Write => &[1],
        Direction::Mixed => &[0, 1],
        Direction::Trim => &[2],
        Direction::TrimWrite => &[1, 2],
    };
    let sizes = [&job.bs[0], &job.bs[1], job.trim_bs()];
    let g = align[used[0]];
    let same = used
        .iter()
        .all(|&u| align[u] == g && u64::from(sizes[u].min()) == g);
    (same && g > 0 && region_len >= g).then_some(g)
}

/// Bytes from `start` to the end of the target's file or device, read once
/// at setup, for [`Generator::with_file_end`].
pub fn target_end(target: Option<&crate::device::target::Target>, start: u64) -> Option<u64> {
    use std::io::Seek;
    let t = target?;
    let len = match t.kind {
        crate::device::target::TargetKind::File => t.file.metadata().ok()?.len(),
        // A block device's size is where its end seeks to (the I/O itself
        // gives every offset, so the file position does not matter).
        crate::device::target::TargetKind::BlockDevice => {
            (&t.file).seek(std::io::SeekFrom::End(0)).ok()?
        }
    };
    Some(len.saturating_sub(start))
}

#[cfg(test)]
mod tests;

/// fio's number of blocks random offsets are drawn from (`last_block`): the
/// region of `len` bytes in units of the alignment `a`, less what the
/// smallest size `min` overhangs the alignment by.
fn last_block(len: u64, a: u64, min: u64) -> u64 {
    let max = if min > a {
        len.saturating_sub(min - a)
    } else {
        len
    };
    max / a.max(1)
}
