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
//! Hot path: both hooks cost one predictable branch when off. When on, logging is a
//! store into a log preallocated (and pre-touched) before the clock starts; the
//! allocation toggle allocates on purpose, since that is what it measures.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::engine::setup::{Prepared, label};
use crate::engine::{EngineOptions, JobRun};
use crate::job::JobSpec;
use crate::measure::blktrace::{
    self, BlockTrace, BlockTraceOptions, Breakdown, BttTable, MatchStats, UserIo,
};
use crate::measure::clock;
use crate::report::trace::{
    ActionCounts, EventCounts, JobTrace, LayerSplit, RequestCounts, SamplingReport, Split,
};
use crate::request::Op;

/// Requests each worker can log: the join covers the first this many completions
/// of a worker (about 100 MiB of log); later ones are counted as not logged.
pub const LOG_CAPACITY: usize = 1 << 21;

#[derive(Clone, Copy, Debug)]
struct Logged {
    stream: u16,
    io: UserIo,
}

const EMPTY: Logged = Logged {
    stream: 0,
    io: UserIo {
        offset: 0,
        len: 0,
        op: Op::Read,
        t_submit_start: 0,
        t_submit_end: 0,
        t_complete_seen: 0,
    },
};

/// A worker's trace hooks: off by default.
#[derive(Debug, Default)]
pub struct Hooks {
    /// Either hook is on: the only test on the hot path when both are off.
    armed: bool,
    log_on: bool,
    log: Vec<Logged>,
    /// Completions per stream that did not fit in the log.
    dropped: Vec<u64>,
    pdu_bytes: usize,
    pdus: Vec<Option<Box<[u8]>>>,
}

/// One stream's share of its worker's log.
#[derive(Clone, Debug, Default)]
pub struct StreamLog {
    pub ios: Vec<UserIo>,
    /// Completions not logged because the log was full.
    pub dropped: u64,
}

impl Hooks {
    /// Log every completion of `streams` streams, up to `capacity`. The memory is
    /// written here so the first pass over it takes no page faults in the loop.
    pub fn enable_log(&mut self, streams: usize, capacity: usize) {
        let mut log = vec![EMPTY; capacity];
        log.clear();
        self.log = log;
        self.dropped = vec![0; streams.max(1)];
        self.log_on = true;
        self.armed = true;
    }

    /// Allocate (zeroed, like kzalloc) and free `bytes` per request on the hot path.
    pub fn enable_alloc(&mut self, slots: usize, bytes: usize) {
        if bytes == 0 {
            return;
        }
        self.pdus = vec![None; slots];
        self.pdu_bytes = bytes;
        self.armed = true;
    }

    /// A request is about to be handed to the backend.
    #[inline(always)]
    pub fn dispatched(&mut self, slot: u32) {
        if self.armed && self.pdu_bytes != 0 {
            self.alloc_pdu(slot);
        }
    }

    #[inline(never)]
    fn alloc_pdu(&mut self, slot: u32) {
        let mut pdu = vec![0u8; self.pdu_bytes].into_boxed_slice();
        // A driver writes its per-request state; the store (and black_box) keep
        // the compiler from proving the allocation useless.
        pdu[0] = slot as u8;
        let pdu = std::hint::black_box(pdu);
        if let Some(p) = self.pdus.get_mut(slot as usize) {
            *p = Some(pdu);
        }
    }

    /// A request completed. `t_start` is when the request's submission began
    /// (issue, or the start of a synchronous call), `t_submit_end` when the
    /// submit call returned, `t_seen` when the worker saw the completion.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn finished(
        &mut self,
        slot: u32,
        stream: u16,
        op: Op,
        offset: u64,
        len: u32,
        t_start: u64,
        t_submit_end: u64,
        t_seen: u64,
    ) {
        if !self.armed {
            return;
        }
        if self.pdu_bytes != 0
            && let Some(p) = self.pdus.get_mut(slot as usize)
        {
            drop(std::hint::black_box(p.take()));
        }
        if self.log_on && op != Op::Fsync {
            if self.log.len() < self.log.capacity() {
                self.log.push(Logged {
                    stream,
                    io: UserIo {
                        offset,
                        len,
                        op,
                        t_submit_start: t_start,
                        t_submit_end,
                        t_complete_seen: t_seen,
                    },
                });
            } else if let Some(d) = self.dropped.get_mut(stream as usize) {
                *d += 1;
            }
        }
    }

    /// The log split by stream, in stream order (after the run).
    pub fn split_by_stream(&self, streams: usize) -> Vec<StreamLog> {
        let mut out = vec![StreamLog::default(); streams];
        if !self.log_on {
            return out;
        }
        for l in &self.log {
            if let Some(s) = out.get_mut(l.stream as usize) {
                s.ios.push(l.io);
            }
        }
        for (s, d) in out.iter_mut().zip(&self.dropped) {
            s.dropped = *d;
        }
        out
    }
}

/// How a job's file offsets become byte offsets on the traced device.
#[derive(Clone, Debug)]
enum Mapping {
    /// The job addresses the device itself.
    Device,
    /// A file: its extents (logical, physical, length, unwritten), sorted.
    File(Vec<Extent>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Extent {
    logical: u64,
    physical: u64,
    len: u64,
    unwritten: bool,
}

impl Mapping {
    /// Device byte offset of a file offset; None where the file has no data
    /// block (a hole or unwritten extent: the kernel sends no I/O there).
    fn map(&self, off: u64) -> Option<u64> {
        match self {
            Mapping::Device => Some(off),
            Mapping::File(ex) => {
                let i = ex.partition_point(|e| e.logical <= off).checked_sub(1)?;
                let e = ex[i];
                (off < e.logical + e.len && !e.unwritten).then(|| e.physical + (off - e.logical))
            }
        }
    }
}

struct Traced {
    major: u32,
    minor: u32,
    name: String,
    trace: Option<BlockTrace>,
}

/// Block tracing of the devices under a group's jobs, from before the workers
/// start until after they end.
pub struct Tracer {
    devices: Vec<Traced>,
    /// Job index -> (device index, mapping, direct I/O).
    by_job: HashMap<usize, (usize, Mapping, bool)>,
}

/// Arm the workers' hooks the run options ask for, and start block tracing when
/// `--trace` is on. The engine keeps its clock; the trace instance stamps events
/// on a clock convertible to it (see `blktrace::joinable_trace_clock`). Call after
/// every worker is prepared and before any starts.
pub fn arm(
    opts: &EngineOptions,
    jobs: &[JobSpec],
    prepared: &mut [Prepared],
) -> Result<Option<Tracer>> {
    if opts.alloc_per_request > 0 {
        for p in prepared.iter_mut() {
            let slots = p.worker.slots_free().1;
            p.worker.trace.enable_alloc(slots, opts.alloc_per_request);
        }
    }
    if !opts.trace {
        return Ok(None);
    }
    let mut t = Tracer {
        devices: Vec::new(),
        by_job: HashMap::new(),
    };
    for p in prepared.iter_mut() {
        let job = &jobs[p.placed[0].job];
        let Some(target) = &p.target else {
            bail!(
                "--trace: {}: ioengine=null is iolab's emulated device, with no kernel block \
                 layer to trace; --trace needs a block device or a file on one (filename=/dev/... \
                 or a file path)",
                label(job)
            );
        };
        let (major, minor, mapping) = match target.kind {
            crate::device::target::TargetKind::BlockDevice => {
                let (ma, mi) = crate::measure::tracefs::block_dev_numbers(&target.path)
                    .with_context(|| format!("--trace: {}", label(job)))?;
                (ma, mi, Mapping::Device)
            }
            crate::device::target::TargetKind::File => {
                use std::os::unix::fs::MetadataExt;
                let md = target
                    .file
                    .metadata()
                    .with_context(|| format!("--trace: {}: stat", label(job)))?;
                let ex = fiemap(&target.file).with_context(|| {
                    format!(
                        "--trace: {}: cannot map {} to device sectors with FIEMAP (the \
                         breakdown joins requests by sector); use a block device instead",
                        label(job),
                        target.path.display()
                    )
                })?;
                (
                    libc::major(md.dev()),
                    libc::minor(md.dev()),
                    Mapping::File(ex),
                )
            }
        };
        let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
        if !sys.exists() {
            bail!(
                "--trace: {}: {} is on device {major}:{minor}, which is not a block device \
                 (tmpfs, overlay or a network filesystem?): there are no block events to trace",
                label(job),
                target.path.display()
            );
        }
        if sys.join("partition").exists() {
            bail!(
                "--trace: {}: {} is on partition {major}:{minor}; partitions are not supported \
                 (block events carry whole-disk sectors): use the whole disk or a file on an \
                 unpartitioned one",
                label(job),
                target.path.display()
            );
        }
        let name = std::fs::canonicalize(&sys)
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| format!("{major}:{minor}"));
        let di = match t
            .devices
            .iter()
            .position(|d| (d.major, d.minor) == (major, minor))
        {
            Some(i) => i,
            None => {
                t.devices.push(Traced {
                    major,
                    minor,
                    name,
                    trace: None,
                });
                t.devices.len() - 1
            }
        };
        let streams = p.placed.len();
        p.worker.trace.enable_log(streams, LOG_CAPACITY);
        for pl in &p.placed {
            t.by_job
                .insert(pl.job, (di, mapping.clone(), jobs[pl.job].direct));
        }
    }
    // Kernel stamps are put on the engine clock (TSC ticks scaled with the
    // engine's own calibration); only a kernel without the x86-tsc trace clock
    // makes the engine fall back to CLOCK_MONOTONIC, the trace's `mono`.
    let tfs = crate::measure::tracefs::Tracefs::open().context("--trace")?;
    if blktrace::joinable_trace_clock(&tfs).is_none() {
        clock::use_monotonic();
    }
    for d in &mut t.devices {
        d.trace = Some(
            BlockTrace::start_dev(
                d.major,
                d.minor,
                BlockTraceOptions {
                    sampling: opts.trace_sampling,
                    ..BlockTraceOptions::default()
                },
            )
            .with_context(|| format!("--trace: block tracing of /dev/{}", d.name))?,
        );
    }
    Ok(Some(t))
}

impl Tracer {
    /// Stop tracing, join each job's user timestamps with its device's requests,
    /// and put the result on the job's runs (`JobRun::trace`). A trace that lost
    /// events fails the jobs on that device: a breakdown with holes would mislead.
    /// `logs[i]` holds the user timestamps of `runs[i]`.
    pub fn finish(mut self, jobs: &[JobSpec], runs: &mut [JobRun], logs: &[StreamLog]) {
        for (di, d) in self.devices.iter_mut().enumerate() {
            let Some(tr) = d.trace.take() else { continue };
            let res = tr.stop();
            let mine: Vec<usize> = runs
                .iter()
                .enumerate()
                .filter(|(_, r)| self.by_job.get(&r.job).is_some_and(|m| m.0 == di))
                .map(|(i, _)| i)
                .collect();
            let res = match res {
                Ok(r) => r,
                Err(e) => {
                    let msg = format!("--trace: block trace of /dev/{}: {e:#}", d.name);
                    for &i in &mine {
                        let r = &mut runs[i];
                        r.error = Some(match r.error.take() {
                            Some(prev) => format!("{prev}\n{msg}"),
                            None => msg.clone(),
                        });
                    }
                    continue;
                }
            };
            let (reqs, st, btt) = res.analyse();
            let trace_clock = res.clock;
            let mut done: Vec<usize> = Vec::new();
            for &i in &mine {
                let j = runs[i].job;
                if done.contains(&j) {
                    continue;
                }
                done.push(j);
                let (_, mapping, direct) = &self.by_job[&j];
                let mut users = Vec::new();
                let mut dropped = 0;
                let mut unmapped = 0;
                let mut unsampled = 0;
                for (_, log) in runs.iter().zip(logs).filter(|(r, _)| r.job == j) {
                    dropped += log.dropped;
                    for u in &log.ios {
                        if !in_windows(&res.windows, u.t_submit_start, u.t_complete_seen) {
                            unsampled += 1;
                            continue;
                        }
                        match mapping.map(u.offset) {
                            Some(off) => users.push(UserIo { offset: off, ..*u }),
                            None => unmapped += 1,
                        }
                    }
                }
                let b = blktrace::join(&users, &reqs, 0);
                let mut v = job_trace(
                    &d.name,
                    trace_clock,
                    mapping,
                    *direct,
                    &btt,
                    &st,
                    &b,
                    dropped,
                    unmapped,
                    &jobs[j],
                );
                v.sampling = sampling_report(&res, unsampled);
                for r in runs.iter_mut().filter(|r| r.job == j) {
                    r.trace = Some(v.clone());
                }
            }
        }
    }
}

/// Whether engine-clock span `from..=to` lies in one sampling window (always,
/// unsampled): only then can its request have been traced from Q to C.
fn in_windows(windows: &[blktrace::Window], from: u64, to: u64) -> bool {
    if windows.is_empty() {
        return true;
    }
    let i = windows.partition_point(|w| w.start <= from);
    i > 0 && to <= windows[i - 1].end
}

fn sampling_report(res: &blktrace::BlockTraceResult, unsampled: u64) -> Option<SamplingReport> {
    let s = res.sampling?;
    let traced_ns: u64 = res.windows.iter().map(|w| w.end - w.start).sum();
    Some(SamplingReport {
        percent: s.traced_percent(),
        period_ms: s.period.as_secs_f64() * 1e3,
        windows: res.windows.len() as u64,
        traced_ms: traced_ns as f64 / 1e6,
        ios_outside_windows: unsampled,
    })
}

/// FIEMAP of a whole file: its extents, after flushing delayed allocation so
/// every written block has its final place.
fn fiemap(f: &std::fs::File) -> Result<Vec<Extent>> {
    use std::os::fd::AsRawFd;
    const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
    const FLAG_SYNC: u32 = 1;
    const LAST: u32 = 0x1;
    const UNKNOWN: u32 = 0x2;
    const DELALLOC: u32 = 0x4;
    const ENCODED: u32 = 0x8;
    const ENCRYPTED: u32 = 0x80;
    const NOT_ALIGNED: u32 = 0x100;
    const INLINE: u32 = 0x200;
    const UNWRITTEN: u32 = 0x800;
    const BATCH: usize = 256;
    // struct fiemap (32 bytes) followed by BATCH struct fiemap_extent (56 bytes),
    // as u64 words for alignment.
    const WORDS: usize = (32 + 56 * BATCH) / 8;
    let mut out: Vec<Extent> = Vec::new();
    let mut start = 0u64;
    loop {
        let mut buf = vec![0u64; WORDS];
        buf[0] = start;
        buf[1] = u64::MAX - start;
        // fm_flags (low half of word 2), fm_extent_count (low half of word 3).
        buf[2] = FLAG_SYNC as u64;
        buf[3] = BATCH as u64;
        // SAFETY: buf is a struct fiemap with room for BATCH extents, as
        // fm_extent_count says; the kernel writes only inside it.
        let rc = unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_FIEMAP, buf.as_mut_ptr()) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            bail!("FS_IOC_FIEMAP: {e} (the filesystem does not report extents)");
        }
        let mapped = (buf[2] >> 32) as usize;
        if mapped == 0 {
            break;
        }
        let mut last = false;
        for k in 0..mapped.min(BATCH) {
            let w = 4 + k * 7;
            let flags = buf[w + 5] as u32;
            let e = Extent {
                logical: buf[w],
                physical: buf[w + 1],
                len: buf[w + 2],
                unwritten: flags & UNWRITTEN != 0,
            };
            if flags & (UNKNOWN | DELALLOC | ENCODED | ENCRYPTED | NOT_ALIGNED | INLINE) != 0 {
                bail!(
                    "extent at file offset {} has flags {flags:#x} (unknown location, \
                     delayed, encoded, encrypted or inline data): no stable device sector",
                    e.logical
                );
            }
            start = e.logical + e.len;
            last |= flags & LAST != 0;
            out.push(e);
        }
        if last {
            break;
        }
    }
    if out.is_empty() {
        bail!("the file has no data extents (empty or all holes)");
    }
    Ok(out)
}

fn layer_split(b: &Breakdown, op: Option<Op>) -> LayerSplit {
    let mut l = LayerSplit::default();
    for j in b.joined.iter().filter(|j| op.is_none_or(|o| j.op == o)) {
        l.user.add(j.user_ns);
        if let Some(v) = j.block_ns {
            l.block.add(v);
        }
        if let Some(v) = j.device_ns {
            l.device.add(v);
        }
        l.q2c.add(j.q2c_ns);
        l.completion.add(j.completion_ns);
        l.total.add(j.total_ns);
    }
    l
}

#[allow(clippy::too_many_arguments)]
fn job_trace(
    dev: &str,
    trace_clock: &str,
    mapping: &Mapping,
    direct: bool,
    btt: &BttTable,
    st: &MatchStats,
    b: &Breakdown,
    dropped: u64,
    unmapped: u64,
    job: &JobSpec,
) -> JobTrace {
    let mut notes: Vec<String> = Vec::new();
    notes.push(format!(
        "btt table: every request on /dev/{dev} during the run (other tasks' too); \
         split: this job's requests joined by sector and time"
    ));
    if let Mapping::File(ex) = mapping {
        notes.push(format!(
            "file offsets mapped to device sectors with FIEMAP ({} extents)",
            ex.len()
        ));
    }
    if !direct {
        notes.push(
            "direct=0: I/O served from the page cache has no block request and stays \
             unmatched; use direct=1 for a full breakdown"
                .into(),
        );
    }
    if dropped > 0 {
        notes.push(format!(
            "{dropped} completions after the first {LOG_CAPACITY} per worker were not \
             logged and are not in the split"
        ));
    }
    if unmapped > 0 {
        notes.push(format!(
            "{unmapped} I/Os fell in holes or unwritten extents of the file (no device I/O)"
        ));
    }
    JobTrace {
        device: format!("/dev/{dev}"),
        job: job.name.clone(),
        clock: trace_clock.to_string(),
        engine_clock: clock::source().to_string(),
        btt: btt.clone(),
        events: EventCounts {
            total: st.events,
            by_action: ActionCounts::of(&st.by_action),
            lost: 0,
        },
        requests: RequestCounts::of(st),
        split: Split {
            all: layer_split(b, None),
            read: layer_split(b, Some(Op::Read)),
            write: layer_split(b, Some(Op::Write)),
        },
        joined: b.joined.len() as u64,
        unmatched_user: b.unmatched_user,
        unclaimed_requests: b.unclaimed_requests,
        not_logged: dropped,
        notes,
        sampling: None,
    }
}

/// The device byte offset a file offset maps to (tests, tools).
pub fn device_offset(path: &Path, off: u64) -> Result<Option<u64>> {
    let f = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    Ok(Mapping::File(fiemap(&f)?).map(off))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_ios_are_kept_only_inside_windows() {
        let w = [
            blktrace::Window { start: 10, end: 20 },
            blktrace::Window { start: 40, end: 50 },
        ];
        let inside: Vec<u64> = (0..60).filter(|&t| in_windows(&w, t, t)).collect();
        let want: Vec<u64> = (10..=20).chain(40..=50).collect();
        assert_eq!(inside, want);
        assert!(in_windows(&[], 7, 7), "no windows: everything was traced");
        assert!(in_windows(&w, 12, 20));
        assert!(!in_windows(&w, 15, 25), "completed after its window closed");
        assert!(!in_windows(&w, 15, 45), "spans a gap");
    }

    #[test]
    fn log_is_bounded_and_split_by_stream() {
        let mut h = Hooks::default();
        h.finished(0, 0, Op::Read, 0, 4096, 1, 2, 3);
        assert!(
            h.split_by_stream(1)[0].ios.is_empty(),
            "off: nothing logged"
        );
        h.enable_log(2, 3);
        for i in 0..5u16 {
            h.finished(0, i % 2, Op::Write, i as u64 * 4096, 4096, 10, 20, 30);
        }
        h.finished(0, 1, Op::Fsync, 0, 0, 10, 20, 30);
        let s = h.split_by_stream(2);
        assert_eq!(s[0].ios.len(), 2);
        assert_eq!(s[1].ios.len(), 1);
        assert_eq!(s[0].ios[1].offset, 8192);
        assert_eq!((s[0].dropped, s[1].dropped), (1, 1));
    }

    #[test]
    fn alloc_hook_holds_one_pdu_per_slot_in_flight() {
        let mut h = Hooks::default();
        h.enable_alloc(2, 512);
        h.dispatched(1);
        assert!(h.pdus[1].as_ref().is_some_and(|p| p.len() == 512));
        h.finished(1, 0, Op::Read, 0, 4096, 1, 2, 3);
        assert!(h.pdus[1].is_none());
        // Out-of-range slots are ignored rather than panicking.
        h.dispatched(7);
        h.finished(7, 0, Op::Read, 0, 4096, 1, 2, 3);
    }

    #[test]
    fn file_mapping_follows_extents_and_skips_holes() {
        let m = Mapping::File(vec![
            Extent {
                logical: 0,
                physical: 1 << 20,
                len: 8192,
                unwritten: false,
            },
            Extent {
                logical: 16384,
                physical: 4 << 20,
                len: 4096,
                unwritten: false,
            },
            Extent {
                logical: 20480,
                physical: 8 << 20,
                len: 4096,
                unwritten: true,
            },
        ]);
        assert_eq!(m.map(4096), Some((1 << 20) + 4096));
        assert_eq!(m.map(8192), None, "hole");
        assert_eq!(m.map(16384 + 512), Some((4 << 20) + 512));
        assert_eq!(m.map(20480), None, "unwritten");
        assert_eq!(m.map(1 << 30), None);
    }

    #[test]
    fn fiemap_of_a_written_file() {
        use std::io::Write;
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("f");
        let mut f = std::fs::File::create(&p).unwrap();
        f.write_all(&vec![7u8; 1 << 20]).unwrap();
        f.sync_all().unwrap();
        match device_offset(&p, 4096) {
            Ok(Some(off)) => assert_eq!(off % 4096, 0, "block-aligned"),
            Ok(None) => panic!("written data has a device offset"),
            // tmpfs and some filesystems have no FIEMAP: the error must say so.
            Err(e) => assert!(format!("{e:#}").contains("FIEMAP"), "{e:#}"),
        }
    }

    #[test]
    fn text_view_shows_table_and_split() {
        let mut b = Breakdown::default();
        b.joined.push(blktrace::JoinedIo {
            offset: 0,
            op: Op::Read,
            user_ns: 1_000,
            block_ns: None,
            device_ns: None,
            q2c_ns: 3_000,
            completion_ns: 500,
            total_ns: 4_500,
        });
        let mut btt = BttTable::default();
        btt.q2c.add(3_000);
        btt.q2c_hist.add_ns(3_000);
        let v = job_trace(
            "zram9",
            "mono",
            &Mapping::Device,
            true,
            &btt,
            &MatchStats::default(),
            &b,
            0,
            0,
            &JobSpec::default(),
        );
        let t = crate::report::text::trace_text("j", &v);
        assert!(t.contains("Q2C") && t.contains("3.000"), "{t}");
        assert!(t.contains("trace clock mono"), "{t}");
        assert!(
            t.contains("user (submit -> Q)") && t.contains("4.50"),
            "{t}"
        );
        assert_eq!(v.split.read.total.n, 1);
        assert_eq!(v.split.write.total.n, 0);
    }
}
