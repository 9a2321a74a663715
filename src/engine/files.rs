//! A job's file set while it runs (options parsed in `job::files`): the files
//! besides the first are opened with the first's flags before the clock starts,
//! their descriptors handed to the queue ([`crate::device::Queue::set_files`]),
//! and each file gets its own offset generator; [`Source`] picks which file the
//! next request goes to by `file_service_type`.
//!
//! Every file stays open for the whole run (no open/close on the measured
//! path), so `nrfiles` x `numjobs` must fit the open-file limit:
//! [`check_open_limit`] says so before the first I/O.

use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;

use crate::device::target::{Target, TargetKind, TargetSpec, open_target};
use crate::engine::error::label;
use crate::engine::error::{EngineError, Result};
use crate::job::JobSpec;
use crate::job::files::ServiceKind;
use crate::workload::fio_rand::FioRand;
use crate::workload::{Generator, NextIo};

/// Where a stream's requests come from: one generator (one file), or one per
/// file and a file service choosing among them.
// One Source per stream, so its size does not matter; the single-file case,
// the common one, stays inline (no pointer to follow per request).
#[allow(clippy::large_enum_variant)]
pub enum Source {
    One(Generator),
    Many(Box<FileService>),
    /// `read_iolog`: the log's I/Os on the log's files (`workload::replay`).
    Replay(Box<crate::workload::replay::Replay>),
}

impl From<Generator> for Source {
    fn from(g: Generator) -> Source {
        Source::One(g)
    }
}

impl Source {
    /// The one generator of a one-file job (rate switching redraws from it).
    #[inline]
    pub fn single_mut(&mut self) -> Option<&mut Generator> {
        match self {
            Source::One(g) => Some(g),
            Source::Many(_) | Source::Replay(_) => None,
        }
    }

    #[inline]
    pub fn next_io(&mut self) -> Option<NextIo> {
        match self {
            Source::One(g) => g.next_io(),
            Source::Many(m) => m.next_io(),
            Source::Replay(r) => r.next_io(),
        }
    }

    /// Whether a new pass over the region began (one file only: a file set
    /// is invalidated once, before the clock starts).
    #[inline]
    pub fn take_new_pass(&mut self) -> bool {
        match self {
            Source::One(g) => g.take_new_pass(),
            Source::Many(_) | Source::Replay(_) => false,
        }
    }

    /// A new `loops` pass began (one file only: verify has one file).
    pub fn take_new_loop(&mut self) -> bool {
        match self {
            Source::One(g) => g.take_new_loop(),
            Source::Many(_) | Source::Replay(_) => false,
        }
    }

    /// Zone resets of a `zonemode=zbd` job so far, over its files.
    pub fn zone_resets(&self) -> u64 {
        match self {
            Source::One(g) => g.zone_resets(),
            Source::Many(m) => m.gens.iter().map(Generator::zone_resets).sum(),
            Source::Replay(_) => 0,
        }
    }

    /// When the request `next_io` returned last may go by the log's times
    /// (0: whenever; only a replay has times of its own).
    #[inline]
    pub fn replay_due(&mut self, now: u64) -> u64 {
        match self {
            Source::Replay(r) => r.due(now),
            _ => 0,
        }
    }

    /// The request `next_io` returned last went at `now` (a replay's next
    /// gap counts from it).
    #[inline]
    pub fn replay_issued(&mut self, now: u64) {
        if let Source::Replay(r) = self {
            r.issued(now);
        }
    }

    /// Whether the requests come from a log (`read_iolog`).
    pub fn is_replay(&self) -> bool {
        matches!(self, Source::Replay(_))
    }

    /// The file of the request `next_io` returned last (the queue's file index).
    #[inline]
    pub fn file(&self) -> u16 {
        match self {
            Source::One(_) => 0,
            Source::Many(m) => m.last,
            Source::Replay(r) => r.file(),
        }
    }
}

/// One generator per file and fio's `file_service_type` over them.
pub struct FileService {
    gens: Vec<Generator>,
    alive: Vec<bool>,
    live: usize,
    kind: ServiceKind,
    every: u32,
    cur: usize,
    /// Requests left for `cur` before the service picks again.
    left: u32,
    rng: u64,
    last: u16,
    /// fio's `openfiles`: the files the service may pick from. fio opens at
    /// most that many and replaces a file only once it is done (its I/O all
    /// issued), so the window moves only at a file's end: off the request path.
    open: Vec<bool>,
    /// `ServiceKind::Distributed`: the distribution over the files.
    picker: Option<(crate::workload::distribution::Picker, fastrand::Rng)>,
    /// The job's direction draw while no file's generator holds it (mixed
    /// jobs only; `next_io` lends it to the file it asks).
    mix: Option<crate::workload::fio_rand::RwMix>,
    /// The job's offset generator while no file's generator holds it.
    orng: Option<crate::workload::fio_rand::FioRand>,
    /// `file_service_type=random`: fio's draw of the next file (its
    /// `next_file_state`, seeded from the job's file slot), once the engine
    /// gives fio's seeds (`with_fio_seeds`); until then `rng`.
    frng: Option<crate::workload::fio_rand::FioRand>,
    /// fio's `io_size` (or a smaller `size`) is the job's, over all its
    /// files: bytes issued so far, and the limit (`io_size` x `loops`;
    /// `u64::MAX` without one, or time_based).
    issued: u64,
    budget: u64,
    /// rw=trimwrite: a range's write follows its trim and counts once (the
    /// trim's), as in the generator.
    trimwrite: bool,
}

impl FileService {
    /// `regions`: each file's (first byte, bytes to address). `number_ios` is
    /// the job's total, shared out over the files.
    /// `mix_seed`: the job's direction draw (`Generator::with_rwmix_seed`),
    /// one for all its files, as fio's job has one.
    pub fn new(job: &JobSpec, regions: &[(u64, u64)], seed: u64, mix_seed: u32) -> FileService {
        let n = regions.len() as u64;
        // An io_size the files hold is the service's limit (`budget`): each
        // file stops at its own end, as fio's do; a larger one wraps them.
        let total: u64 = regions.iter().map(|r| r.1).sum();
        let per_file_io = job.io_size.filter(|&b| b > total);
        let mut gens: Vec<Generator> = regions
            .iter()
            .enumerate()
            .map(|(i, &(start, len))| {
                let mut j = job.clone();
                j.io_size = per_file_io;
                j.number_ios = job
                    .number_ios
                    .map(|t| t / n + u64::from((i as u64) < t % n));
                Generator::new(&j, start, len, seed.wrapping_add(i as u64 * 0x9E37_79B9))
                    .with_rwmix_seed(mix_seed)
            })
            .collect();
        // The files share one draw: the service keeps it and lends it to
        // whichever file's generator makes the next request.
        let mut mix = None;
        for g in gens.iter_mut() {
            let mut own = None;
            g.swap_rwmix(&mut own);
            mix = mix.or(own);
        }
        // A file with nothing to do (number_ios shared out to 0) is dead now.
        let alive: Vec<bool> = (0..n)
            .map(|i| {
                job.number_ios
                    .is_none_or(|t| t / n + u64::from(i < t % n) > 0)
            })
            .collect();
        // The first `openfiles` files (in file order) that have I/O to do.
        let window = match job.files.openfiles {
            0 => usize::MAX,
            k => k as usize,
        };
        let mut open = vec![false; alive.len()];
        for i in (0..alive.len()).filter(|&i| alive[i]).take(window) {
            open[i] = true;
        }
        let picker = (job.files.service == ServiceKind::Distributed).then(|| {
            let mut rng = fastrand::Rng::with_seed(seed ^ 0x5EED_F11E);
            let p = crate::workload::distribution::Picker::new(
                &job.file_service_dist,
                0,
                n,
                1,
                &mut rng,
            );
            (p, rng)
        });
        let picker = picker.and_then(|(p, rng)| p.map(|p| (p, rng)));
        let mut fs = FileService {
            picker,
            open,
            live: alive.iter().filter(|&&a| a).count(),
            alive,
            gens,
            kind: job.files.service,
            every: job.files.service_every.max(1),
            cur: 0,
            left: 0,
            rng: seed | 1,
            last: 0,
            mix,
            orng: None,
            frng: None,
            issued: 0,
            budget: match (job.io_size, job.time_based) {
                (Some(b), false) => b.saturating_mul(u64::from(job.loops.max(1))),
                _ => u64::MAX,
            },
            trimwrite: job.rw.dir == crate::job::Direction::TrimWrite,
        };
        fs.cur = match fs.kind {
            ServiceKind::Random | ServiceKind::Distributed => {
                let r = fs.draw();
                fs.live_from(r)
            }
            _ => fs.live_from(0),
        };
        fs.left = fs.quota();
        fs
    }

    /// Seed each file's distribution state (zipf, pareto, normal) as fio
    /// seeds that file's: `seeds` in file order (`fio_dist::seed`).
    pub fn with_dist_seeds(mut self, seeds: impl IntoIterator<Item = u32>) -> Self {
        for (g, s) in self.gens.iter_mut().zip(seeds) {
            g.set_dist_seed(s);
        }
        self
    }

    /// Seed every file's offsets as fio seeds the job
    /// (`Generator::with_fio_seeds`). fio's job has one offset generator
    /// for all its files: the service keeps it and lends it to the file it
    /// asks, as it does the direction draw.
    pub fn with_fio_seeds(
        mut self,
        seeds: &[u64; crate::workload::fio_rand::SLOTS],
        repeat: bool,
    ) -> Self {
        for g in self.gens.iter_mut() {
            g.set_fio_seeds(seeds, repeat);
        }
        self.orng = self.gens.first().map(Generator::fio_rng);
        if self.kind == ServiceKind::Random {
            let use64 = matches!(self.orng, Some(FioRand::T64(_)));
            self.frng = Some(FioRand::new(
                seeds[crate::workload::fio_rand::SLOT_FILE],
                use64,
            ));
            // fio draws the first file with it too.
            self.pick();
        }
        self
    }

    fn quota(&self) -> u32 {
        match self.kind {
            ServiceKind::Sequential => u32::MAX,
            _ => self.every,
        }
    }

    #[inline]
    fn rand(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    /// A file index drawn by the service's distribution (uniform for random).
    #[inline]
    fn draw(&mut self) -> usize {
        let n = self.gens.len() as u64;
        match self.picker.as_mut() {
            Some((p, rng)) => p.block(n, rng) as usize,
            None => (self.rand() % n) as usize,
        }
    }

    /// fio's random pick: a file drawn uniformly from all of them, drawn
    /// again while it lands on one that is done or outside the open window
    /// (the caller has a live file, so the draws end).
    #[inline]
    fn fio_draw(&mut self) -> usize {
        let n = self.gens.len() as u64;
        let Some(r) = self.frng.as_mut() else {
            unreachable!("called with fio's file draw only")
        };
        loop {
            let i = r.scaled(n) as usize;
            if self.alive[i] && self.open[i] {
                return i;
            }
        }
    }

    /// The next live, open file at or after `from` (wrapping).
    #[inline]
    fn live_from(&self, from: usize) -> usize {
        let n = self.gens.len();
        (0..n)
            .map(|k| (from + k) % n)
            .find(|&i| self.alive[i] && self.open[i])
            .unwrap_or(0)
    }

    /// File `i` is done: it leaves the window, and the first file that has
    /// I/O to do and was never in it enters (fio closes one, opens the next;
    /// a file leaves the window only when done, so an alive file outside it
    /// was never serviced).
    #[cold]
    fn done(&mut self, i: usize) {
        self.alive[i] = false;
        self.live -= 1;
        if std::mem::take(&mut self.open[i])
            && let Some(next) = (0..self.gens.len()).find(|&k| self.alive[k] && !self.open[k])
        {
            self.open[next] = true;
        }
    }

    /// The file after `cur` used up its quota or its I/O.
    #[inline]
    fn pick(&mut self) {
        self.cur = match self.kind {
            ServiceKind::RoundRobin => self.live_from(self.cur + 1),
            ServiceKind::Sequential => self.live_from(self.cur),
            ServiceKind::Random if self.frng.is_some() => self.fio_draw(),
            ServiceKind::Random | ServiceKind::Distributed => {
                let r = self.draw();
                self.live_from(r)
            }
        };
        self.left = self.quota();
    }

    #[inline]
    fn next_io(&mut self) -> Option<NextIo> {
        if self.issued >= self.budget {
            return None;
        }
        while self.live > 0 {
            if self.left == 0 || !self.alive[self.cur] {
                self.pick();
            }
            let g = &mut self.gens[self.cur];
            g.swap_rwmix(&mut self.mix);
            g.swap_fio_rng(&mut self.orng);
            let next = g.next_io();
            g.swap_fio_rng(&mut self.orng);
            g.swap_rwmix(&mut self.mix);
            match next {
                Some(io) => {
                    self.left -= 1;
                    self.last = self.cur as u16;
                    if !(self.trimwrite && io.op == crate::request::Op::Write) {
                        self.issued += u64::from(io.len);
                    }
                    return Some(io);
                }
                None => {
                    // fio finds a file done when its next offset fails: with
                    // the random map, after drawing that offset from the
                    // job's generator, which so moves on by one.
                    if self.gens[self.cur].random_map_full()
                        && let Some(o) = self.orng.as_mut()
                    {
                        o.draw();
                    }
                    self.done(self.cur);
                    self.left = 0;
                }
            }
        }
        None
    }
}

/// The files of a worker besides the first (which `setup` opens as the
/// worker's target), and what happens to all of them at the end.
#[derive(Debug, Default)]
pub struct OpenSet {
    pub rest: Vec<Target>,
    /// How each of `rest` was opened (kept for `unlink_each_loop` only).
    specs: Vec<TargetSpec>,
    unlink: bool,
}

impl OpenSet {
    /// Open `paths[1..]` as `first` was opened (same flags; the same size,
    /// or each file's own from `sizes`, indexed as `paths`).
    pub fn open(
        job: &JobSpec,
        first: &TargetSpec,
        paths: &[PathBuf],
        sizes: Option<&[u64]>,
    ) -> Result<OpenSet> {
        let mut rest = Vec::with_capacity(paths.len().saturating_sub(1));
        let mut specs = Vec::new();
        for (i, p) in paths.iter().enumerate().skip(1) {
            let spec = TargetSpec {
                path: p.clone(),
                size: sizes.map_or(first.size, |s| Some(s[i])),
                ..first.clone()
            };
            rest.push(open_target(&spec)?);
            if job.files.unlink_each_loop {
                specs.push(spec);
            }
        }
        Ok(OpenSet {
            rest,
            specs,
            unlink: job.files.unlink,
        })
    }

    /// `unlink_each_loop` over several passes: every file, `first` (opened
    /// from `first_spec`) first, made again between passes.
    pub fn relayout(
        &self,
        job: &JobSpec,
        first_spec: &TargetSpec,
        first: &Target,
    ) -> Option<Relayout> {
        let mut specs = vec![(first_spec.clone(), first)];
        specs.extend(self.specs.iter().cloned().zip(&self.rest));
        Relayout::new(job, &specs)
    }

    /// Every file's descriptor, the first's first (the queue's file table).
    pub fn fds(&self, first: Option<&Target>) -> Vec<RawFd> {
        first
            .into_iter()
            .chain(&self.rest)
            .map(|t| t.file.as_raw_fd())
            .collect()
    }

    /// Every file, the first's first.
    pub fn all<'a>(&'a self, first: Option<&'a Target>) -> impl Iterator<Item = &'a Target> {
        first.into_iter().chain(&self.rest)
    }

    /// `unlink=1`: delete the job's regular files (never a block device).
    pub fn finish(&self, first: Option<&Target>) {
        if !self.unlink {
            return;
        }
        for t in self.all(first) {
            if t.kind == TargetKind::File
                && let Err(e) = std::fs::remove_file(&t.path)
            {
                eprintln!("iolab: unlink={}: {e}", t.path.display());
            }
        }
    }
}

/// fio's `unlink_each_loop` with more than one pass: before every pass
/// after the first, the job's regular files are deleted and made again as
/// the first pass found them (created, and laid out where the job reads),
/// and each new file takes the old one's descriptor number (`dup3`), so the
/// queue's file table stays valid. The worker runs it between requests with
/// none in flight: no request's latency includes it; the job's runtime does,
/// as fio's does (fio deletes at the start of its next loop, on its clock).
#[derive(Debug)]
pub struct Relayout {
    /// Each regular file's spec (as opened) and descriptor.
    files: Vec<(TargetSpec, RawFd)>,
    /// A new pass began and waits for the requests in flight.
    pub due: bool,
    /// Times the files were made again.
    pub done: u32,
}

impl Relayout {
    /// For a job with `unlink_each_loop` and more than one pass; `specs`
    /// pairs each file's spec with the target it opened.
    pub fn new(job: &JobSpec, specs: &[(TargetSpec, &Target)]) -> Option<Relayout> {
        if !job.files.unlink_each_loop || job.loops <= 1 {
            return None;
        }
        let files: Vec<(TargetSpec, RawFd)> = specs
            .iter()
            .filter(|(_, t)| t.kind == TargetKind::File)
            .map(|(s, t)| (s.clone(), t.file.as_raw_fd()))
            .collect();
        (!files.is_empty()).then_some(Relayout {
            files,
            due: false,
            done: 0,
        })
    }

    /// Delete every file and make it again under its old descriptor.
    #[cold]
    pub fn run(&mut self) -> std::result::Result<(), std::io::Error> {
        for (spec, fd) in &self.files {
            match std::fs::remove_file(&spec.path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            let fresh = open_target(spec).map_err(std::io::Error::other)?;
            // SAFETY: both descriptors are open and ours; dup3 closes the old
            // file's and points its number at the new one (close-on-exec, as opened).
            if unsafe { libc::dup3(fresh.file.as_raw_fd(), *fd, libc::O_CLOEXEC) } < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        self.done += 1;
        Ok(())
    }
}

/// `pre_read`: read `[offset, offset+size)` of the file through the page cache
/// so the job starts warm (fio turns `invalidate` off with it, as iolab does).
pub fn pre_read(job: &JobSpec, t: &Target) -> Result<()> {
    let err = |source| EngineError::PreRead {
        job: label(job),
        path: t.path.display().to_string(),
        source,
    };
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(&t.path)
        .map_err(err)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut off = t.offset;
    let end = t.offset + t.size;
    while off < end {
        let n = ((end - off) as usize).min(buf.len());
        let got = f.read_at(&mut buf[..n], off).map_err(err)?;
        if got == 0 {
            break;
        }
        off += got as u64;
    }
    Ok(())
}

/// fio's `file_append`: a regular file's region starts at its current end.
pub fn append_offset(job: &JobSpec, path: &std::path::Path) -> Option<u64> {
    if !job.files.file_append {
        return None;
    }
    std::fs::metadata(path)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.len())
}

/// How a missing or short file of the worker's jobs is made. As fio: a job
/// that reads lays it out with data; a job that only writes, without
/// `overwrite`, or one that appends, creates it and lets its own writes fill
/// it (fio lays out only "for operations involving reads, or for writes where
/// overwrite is set").
pub fn layout<'a>(
    first: &JobSpec,
    mut jobs: impl Iterator<Item = &'a JobSpec>,
) -> crate::device::target::Layout {
    use crate::device::target::Layout;
    let base = crate::engine::verify_setup::layout(first);
    let only_writes = jobs.all(|j| {
        j.rw.dir == crate::job::Direction::Write && !j.files.overwrite && j.verify.kind.is_none()
    });
    if base == Layout::Grow || first.files.file_append || only_writes {
        Layout::Grow
    } else {
        base
    }
}

/// The size in bytes of a file or block device, `None` when it does not exist.
fn real_size(path: &std::path::Path) -> std::io::Result<Option<u64>> {
    use std::io::Seek;
    use std::os::unix::fs::FileTypeExt;
    match std::fs::metadata(path) {
        Ok(md) if md.file_type().is_block_device() => {
            let mut f = std::fs::File::open(path)?;
            Ok(Some(f.seek(std::io::SeekFrom::End(0))?))
        }
        Ok(md) => Ok(Some(md.len())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// fio's slot of the generator a file size is drawn from (`filesize` range).
const SLOT_FILE_SIZE: u64 = 7;

/// Each file's bytes to address (from the job's offset on) when the job
/// sizes its files one by one (`FileSpec::sizes`: a `filesize` range, or
/// `filesize` with `size=N%`); `None` for a job whose files share `size`.
///
/// As fio 3.33 sets its files up: a file that exists with a size inside
/// the range keeps it; any other gets `low`, or for a range a size drawn
/// from fio's taus88 generator seeded as fio seeds this clone's file-size
/// draw, rounded down to the smallest block size of any direction. With
/// `size=N%`, a file's I/O covers N% of it, rounded down to the smallest
/// block. Off the request path: once, before the files are opened.
pub fn file_sizes(
    jobs: &[JobSpec],
    job: usize,
    jobnum: u32,
    paths: &[PathBuf],
) -> Result<Option<Vec<u64>>> {
    let j = &jobs[job];
    let Some(sz) = j.files.sizes else {
        return Ok(None);
    };
    let thread = crate::workload::fio_rand::thread_number(jobs, job, jobnum);
    let seed = if j.workload.allrandrepeat {
        crate::workload::fio_rand::allrand_seed(thread, SLOT_FILE_SIZE)
    } else if j.randrepeat {
        crate::workload::fio_rand::slot_seed(j.randseed, thread, SLOT_FILE_SIZE)
    } else {
        crate::measure::clock::now_ns()
    };
    // fio's 32-bit generator takes the seed's low 32 bits.
    let mut rng = crate::workload::fio_rand::Taus88::new(seed as u32);
    let min_bs = u64::from(j.bs[0].min().min(j.bs[1].min()).max(1));
    let offset = j.clone_offset(jobnum);
    let mut out = Vec::with_capacity(paths.len());
    for p in paths {
        let real = real_size(p).map_err(|err| EngineError::Open {
            path: p.clone(),
            err,
        })?;
        let size = match real {
            Some(r) if (sz.low..=sz.high).contains(&r) => r,
            _ if sz.low == sz.high => sz.low,
            _ => {
                let r = f64::from(rng.next_u32()) / 4_294_967_296.0;
                let drawn = ((sz.high - sz.low) as f64 * r) as u64 + sz.low;
                drawn - drawn % min_bs
            }
        };
        if offset >= size {
            return Err(EngineError::JobFailed(format!(
                "{}: offset {offset} is at or beyond the end of {} ({size} bytes, from \
                 filesize): give a smaller offset or a larger filesize",
                label(j),
                p.display()
            )));
        }
        let mut bytes = size - offset;
        if let Some(pct) = sz.percent {
            bytes = (size * u64::from(pct) / 100).min(bytes);
            bytes -= bytes % min_bs;
            if bytes == 0 {
                return Err(EngineError::JobFailed(format!(
                    "{}: size={pct}% of {} ({size} bytes) is less than one block: give a \
                     larger size= or filesize",
                    label(j),
                    p.display()
                )));
            }
        }
        out.push(bytes);
    }
    Ok(Some(out))
}

/// fio's shares of the target, resolved against it before the first I/O:
/// `size=N%` (of the target, less the offset, in whole smallest blocks),
/// `offset=N%` and `offset_increment=N%` (rounded up to `offset_align`, or to
/// the smallest block size), `io_size=N%` (of the region).
pub fn resolve_shares(jobs: &[JobSpec]) -> Result<Vec<JobSpec>> {
    let mut out = jobs.to_vec();
    for job in &mut out {
        if job.files.file_append && job.ioengine != crate::job::Engine::Null {
            // fio's file_append: the region starts at the file's end (every
            // clone's: fio ignores offset and offset_increment then).
            let first = crate::job::files_opts::paths(job, 0);
            if let Some(end) = first.first().and_then(|p| append_offset(job, p)) {
                job.offset = end;
                job.offset_increment = 0;
                job.offset_percent = None;
                job.target.offset_increment_percent = None;
            }
        }
        let t = &job.target;
        if job.size_percent.is_none()
            && job.offset_percent.is_none()
            && t.offset_increment_percent.is_none()
            && t.io_size_percent.is_none()
        {
            continue;
        }
        let real = if job.ioengine == crate::job::Engine::Null {
            job.size
        } else {
            let p = crate::job::files_opts::paths(job, 0)
                .into_iter()
                .next()
                .unwrap_or_default();
            real_size(&p).map_err(|err| EngineError::Open {
                path: p.clone(),
                err,
            })?
        };
        let Some(real) = real.filter(|&r| r > 0) else {
            return Err(EngineError::JobFailed(format!(
                "{}: size=, offset=, offset_increment= or io_size= is a percentage of the \
                 target, and the target does not exist yet (or is empty): give sizes in bytes, \
                 or create the file first",
                label(job)
            )));
        };
        let min_bs = u64::from(job.bs[0].min().min(job.bs[1].min()).max(1));
        let mut align = false;
        if let Some(p) = job.offset_percent.take() {
            job.offset = real * u64::from(p) / 100;
            align = true;
        }
        if let Some(p) = job.target.offset_increment_percent.take() {
            job.offset_increment = real * u64::from(p) / 100;
            align = true;
        }
        if align {
            job.target.clone_align = match job.target.offset_align {
                0 => min_bs,
                a => a,
            };
            job.offset = job.clone_offset(0);
        }
        if let Some(p) = job.size_percent.take() {
            let room = real.saturating_sub(job.offset);
            let s = (real * u64::from(p) / 100).min(room);
            job.size = Some(s - s % min_bs);
        }
        if let Some(p) = job.target.io_size_percent.take() {
            let region = job.size.unwrap_or(real.saturating_sub(job.offset));
            job.io_size = Some((region * u64::from(p) / 100).max(1));
        }
    }
    Ok(out)
}

/// Rules between the jobs of a group that only the whole run can check:
/// `lockfile` on a file two running job clones share (iolab's workers have
/// no lock between them), and cgroup v2 names (the process moves as a whole).
pub fn check_group_rules(jobs: &[JobSpec], groups: &[Vec<usize>]) -> Result<()> {
    use crate::job::target::LockFile;
    for g in groups {
        let mut users: Vec<(PathBuf, usize)> = Vec::new();
        for &j in g {
            let job = &jobs[j];
            if job.ioengine == crate::job::Engine::Null {
                continue;
            }
            for n in 0..job.numjobs {
                for p in crate::job::files_opts::paths(job, n) {
                    users.push((p, j));
                }
            }
        }
        for &j in g {
            let job = &jobs[j];
            if job.target.lockfile == LockFile::None {
                continue;
            }
            let mine = crate::job::files_opts::paths(job, 0);
            if let Some((p, _)) = users
                .iter()
                .filter(|(p, _)| mine.contains(p))
                .find(|(p, _)| users.iter().filter(|(q, _)| q == p).count() > 1)
            {
                return Err(EngineError::JobFailed(format!(
                    "{}: lockfile={} on {}, which other job clones of its group use at the \
                     same time: iolab runs them on separate threads with no lock between their \
                     requests, so it cannot serialize them as fio does; give each job its own \
                     file, or run them one after another (stonewall)",
                    label(job),
                    job.target.lockfile,
                    p.display()
                )));
            }
        }
        let names: Vec<&str> = g
            .iter()
            .filter_map(|&j| jobs[j].process.cgroup.as_deref())
            .collect();
        if names.windows(2).any(|w| w[0] != w[1])
            && std::fs::read_to_string("/proc/mounts")
                .ok()
                .and_then(|m| crate::sys::cgroup::find_hierarchy(&m))
                .is_some_and(|h| h.v2)
        {
            return Err(EngineError::JobFailed(format!(
                "jobs running at once name different cgroups ({}): on cgroup v2 a group holds \
                 whole processes, so iolab's one process cannot be in two; separate them with \
                 stonewall",
                names.join(", ")
            )));
        }
    }
    Ok(())
}

/// The directories the job's file names lead through, made where missing
/// (mode 0700), as fio makes them before laying out a file whose name holds
/// a `/` (what `filename_format=$filenum/$jobnum` adds under `directory=`).
/// Each `directory=` entry must exist, as fio requires. fio makes the
/// directories of a job's first such file only (its later files then fail
/// to open); iolab makes every file's. Neither removes them (`unlink=1`
/// deletes the files only). Not for ioengine=null, which opens no file.
pub fn make_dirs(job: &JobSpec, paths: &[PathBuf]) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if job.ioengine == crate::job::Engine::Null {
        return Ok(());
    }
    let listed = job
        .directory
        .as_deref()
        .map(crate::job::files_opts::filename_list)
        .unwrap_or_default();
    if let Some(d) = listed.iter().find(|d| !std::path::Path::new(d).is_dir()) {
        return Err(EngineError::JobFailed(format!(
            "{}: directory={d} is not a directory: name one that exists (fio requires it too; \
             only the directories below it that filename_format adds are made)",
            label(job)
        )));
    }
    for dir in paths.iter().filter_map(|p| p.parent()) {
        if dir.as_os_str().is_empty() || dir.is_dir() {
            continue;
        }
        if let Err(err) = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
        {
            return Err(EngineError::JobFailed(format!(
                "{}: cannot create the directory {} for its files: {err}; point directory= \
                 (or filename_format's path) somewhere this user may write",
                label(job),
                dir.display()
            )));
        }
    }
    Ok(())
}

/// `opendir`: the directory must name at least one file.
pub fn check_opendir(job: &JobSpec, paths: &[PathBuf]) -> Result<()> {
    if let Some(d) = &job.files.opendir {
        if let Err(err) = std::fs::read_dir(d) {
            return Err(EngineError::Open {
                path: PathBuf::from(d),
                err,
            });
        }
        if paths.is_empty() {
            return Err(EngineError::JobFailed(format!(
                "{}: opendir={d} holds no regular file: put the job's files there first",
                label(job)
            )));
        }
    }
    Ok(())
}

/// Before the first I/O: can every group open all its files at once?
pub fn check_open_limit(jobs: &[JobSpec], groups: &[Vec<usize>]) -> Result<()> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one struct through the pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0
        || rl.rlim_cur == libc::RLIM_INFINITY
    {
        return Ok(());
    }
    let open = open_fds();
    for g in groups {
        // File-operation engines and cpuio hold no file open while they run.
        let need: u64 = g
            .iter()
            .filter(|&&j| {
                !jobs[j].ioengine.is_file_op() && jobs[j].ioengine != crate::job::Engine::Cpuio
            })
            .map(|&j| u64::from(jobs[j].files.nrfiles) * u64::from(jobs[j].numjobs))
            .sum();
        // Each worker also holds a ring or AIO context and a few descriptors
        // of its own: a margin of 2 per clone.
        let clones: u64 = g.iter().map(|&j| u64::from(jobs[j].numjobs)).sum();
        if need + 2 * clones + open > rl.rlim_cur {
            let first = &jobs[g[0]];
            return Err(EngineError::TooManyFiles {
                group: if g.len() == 1 {
                    label(first)
                } else {
                    format!("the group starting with {}", label(first))
                },
                need,
                open,
                limit: rl.rlim_cur,
            });
        }
    }
    Ok(())
}

fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files_of(kind: ServiceKind, every: u32, number_ios: Option<u64>) -> Vec<u16> {
        let mut job = JobSpec::default();
        job.files.service = kind;
        job.files.service_every = every;
        job.number_ios = number_ios;
        job.file_service_dist = crate::job::RandomDist::Zipf {
            theta: 1.2,
            center: None,
        };
        // Three files of 4 blocks each.
        let regions = [(0, 16384), (0, 16384), (0, 16384)];
        let mut src = Source::Many(Box::new(FileService::new(&job, &regions, 7, 7)));
        let mut out = Vec::new();
        while let Some(io) = src.next_io() {
            assert!(io.offset < 16384);
            out.push(src.file());
        }
        out
    }

    #[test]
    fn roundrobin_sequential_and_random_service() {
        assert_eq!(
            files_of(ServiceKind::RoundRobin, 1, None),
            [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]
        );
        assert_eq!(
            files_of(ServiceKind::RoundRobin, 2, None),
            [0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2]
        );
        assert_eq!(
            files_of(ServiceKind::Sequential, 1, None),
            [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
        );
        // zipf over three files: every file still gets its four I/Os (each
        // file's generator ends it), the hottest file first more often.
        let z = files_of(ServiceKind::Distributed, 1, None);
        assert_eq!(z.len(), 12);
        for f in 0..3 {
            assert_eq!(z.iter().filter(|&&x| x == f).count(), 4, "{z:?}");
        }
        let r = files_of(ServiceKind::Random, 1, None);
        assert_eq!(r.len(), 12);
        for f in 0..3 {
            assert_eq!(r.iter().filter(|&&x| x == f).count(), 4, "{r:?}");
        }
        assert_ne!(r, files_of(ServiceKind::RoundRobin, 1, None));
        // number_ios is the job's total, shared out over the files.
        assert_eq!(files_of(ServiceKind::RoundRobin, 1, Some(4)), [0, 1, 2, 0]);
        assert_eq!(files_of(ServiceKind::RoundRobin, 1, Some(2)), [0, 1]);
    }
}
