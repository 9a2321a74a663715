//! Building a worker before the clock starts: open the target, make the backend's
//! queue, resolve the completion model, the scheduler, buffers and recorders.
//!
//! Every check that can fail happens here, with a message naming the job and the
//! option, so a run either starts whole or not at all.

use std::os::fd::AsRawFd;

use crate::engine::error::{EngineError, Result};

use crate::buf::Buffers;
use crate::completion::{self, Completer};
use crate::device::cpuio::CpuBurn;
use crate::device::fileops::{FileOp, FileOps};
use crate::device::libaio::{Libaio, LibaioOpts};
use crate::device::mmap::{Mmap, MmapOpts};
use crate::device::null::NullDevice;
use crate::device::posixaio::Posixaio;
use crate::device::psync::{Psync, PsyncFlags};
use crate::device::space::{Space, SpaceKind};
use crate::device::sync::{SyncIo, SyncKind};
use crate::device::target::{Target, TargetSpec, open_target};
use crate::device::uring::{Uring, UringOpts};
use crate::device::{Caps, Queue};
use crate::engine::files::Relayout;
use crate::engine::worker::{Stream, Worker};
use crate::engine::{iolog_setup, joblogs};
use crate::job::{CompletionModel, Direction, Engine, JobSpec};
use crate::measure::clock;
use crate::measure::iolog::Logger;
use crate::measure::iolog::trace_log::TraceLog;
use crate::measure::recorder::{Recorder, RecorderConfig};
use crate::sched::Scheduler;
use crate::workload::buffers::BufferFill;
use crate::workload::dedupe;
use crate::workload::replay::{Replay, Trace};
use crate::workload::verify::Verifier;
use crate::workload::{Generator, Pacer, dur_ns};

/// One job clone placed on a worker.
#[derive(Clone, Debug)]
pub struct Placed {
    pub job: usize,
    pub jobnum: u32,
}

/// A worker ready to run, with what it must keep alive (the open target).
pub struct Prepared {
    pub worker: Worker,
    /// Owns the file descriptor the queue uses; dropped after the queue.
    pub target: Option<Target>,
    pub placed: Vec<Placed>,
    pub model: CompletionModel,
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub caps: Caps,
    pub backend: &'static str,
    /// Bytes the jobs may address on the target.
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub region_len: u64,
    /// CPUs to pin the worker thread to (empty = leave it to the kernel).
    pub cpus: Vec<u32>,
    /// The job's other files (`nrfiles`), kept open with the target.
    pub files: crate::engine::files::OpenSet,
    /// Start delay, exitall, end syncs (`engine::control`).
    pub control: crate::engine::control::WorkerControl,
    /// cgroup, nice, uid/gid, exec_prerun/postrun, create_only (`engine::process`).
    pub process: crate::engine::process::ThreadSetup,
    /// The device's elevator and locked memory, undone when dropped.
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub held: crate::engine::process::Held,
}

// Defined with the errors it starts, so modules setup uses can use it too.
pub use crate::engine::error::label;

/// Which job clones share one worker thread (one queue pair, one scheduler).
///
/// Null-device jobs of a group that name the same `filename` share one emulated
/// device, so they share its worker: that is how background reads get to delay
/// a foreground read on it. On real targets jobs share a worker only when they
/// name the same file and an iolab scheduler (`iosched=prio|laq`), because that
/// scheduler must see all of them; otherwise every clone has its own worker and
/// queue pair, as fio's processes do.
pub fn plan_workers(jobs: &[JobSpec], group: &[usize]) -> Vec<Vec<Placed>> {
    let mut workers: Vec<(Option<String>, Vec<Placed>)> = Vec::new();
    for &j in group {
        let job = &jobs[j];
        let shared_key = match (&job.filename, job.ioengine) {
            (Some(f), Engine::Null) => Some(format!("null:{f}")),
            (Some(f), _) if job.scheduler != crate::job::SchedKind::Noop => {
                Some(format!("file:{f}"))
            }
            _ => None,
        };
        for n in 0..job.numjobs {
            let placed = Placed { job: j, jobnum: n };
            match shared_key
                .as_ref()
                .and_then(|k| workers.iter_mut().find(|w| w.0.as_ref() == Some(k)))
            {
                Some(w) => w.1.push(placed),
                None => workers.push((shared_key.clone(), vec![placed])),
            }
        }
    }
    workers.into_iter().map(|w| w.1).collect()
}

/// The completion model a job asks for: `completion=` wins, `hipri=1` means poll.
fn asked_model(job: &JobSpec) -> Option<CompletionModel> {
    // fio's userspace_reap=1 spins on the AIO ring: iolab's poll model.
    job.completion.or(
        if job.backend.flags.hipri || job.backend.libaio.ring_only() {
            Some(CompletionModel::Poll)
        } else {
            None
        },
    )
}

/// Check that jobs sharing a worker agree on what the worker is.
fn check_shared(jobs: &[JobSpec], placed: &[Placed]) -> Result<()> {
    let first = &jobs[placed[0].job];
    for p in &placed[1..] {
        let j = &jobs[p.job];
        let clash = if j.ioengine != first.ioengine {
            Some("ioengine")
        } else if j.scheduler != first.scheduler || j.laq != first.laq {
            Some("iosched/ois_max/ois_min/t_wait")
        } else if asked_model(j) != asked_model(first) {
            Some("completion/hipri")
        } else if j.ioengine == Engine::Null && j.backend.null != first.backend.null {
            Some("null_* device options")
        } else if j.direct != first.direct {
            Some("direct")
        } else {
            crate::engine::control::WorkerControl::disagreement(first, j)
        };
        if let Some(what) = clash {
            return Err(EngineError::SharedDevice {
                job: label(first),
                other: label(j),
                device: first.filename.clone().unwrap_or_default(),
                what,
            });
        }
    }
    Ok(())
}

/// RWF_* flags every read and write of the job carries.
fn engine_rw_flags(job: &JobSpec) -> u32 {
    job.backend.flags.rw_flags(job.direct)
}

/// The files of a file-operation engine (filecreate, filestat, filedelete)
/// and the block each one's request counts. filestat and filedelete find
/// their files laid out first, as fio lays them out (then closed: the timed
/// call names the file by path); filecreate creates them, timed.
fn file_op_paths(
    jobs: &[JobSpec],
    p: &Placed,
    writes: bool,
    allow_destructive: bool,
) -> Result<(Vec<std::path::PathBuf>, u64)> {
    let job = &jobs[p.job];
    let paths = crate::job::files_opts::paths(job, p.jobnum);
    let block = u64::from(job.bs[0].min().max(job.bs[1].min()).max(1));
    if job.ioengine == Engine::FileCreate {
        // The directory must exist: fio does not create it either.
        return Ok((paths, block));
    }
    crate::engine::files::make_dirs(job, &paths)?;
    let nfiles = paths.len().max(1) as u64;
    let sizes = crate::engine::files::file_sizes(jobs, p.job, p.jobnum, &paths)?;
    for (i, path) in paths.iter().enumerate() {
        let spec = TargetSpec {
            size: match &sizes {
                Some(s) => Some(s[i]),
                None => job.size.map(|s| s / nfiles),
            },
            prealloc: job.files.fallocate,
            allow_create: job.files.allow_create,
            writes,
            min_bs: block as u32,
            max_bs: block as u32,
            allow_destructive,
            ..TargetSpec::new(job.name.clone(), path.clone())
        };
        drop(open_target(&spec)?);
    }
    Ok((paths, block))
}

/// Build one worker. `planned_runtime_ns` sizes the interval logs.
pub fn prepare(jobs: &[JobSpec], placed: Vec<Placed>, allow_destructive: bool) -> Result<Prepared> {
    check_shared(jobs, &placed)?;
    // read_iolog: each clone's log, read whole before anything else, so a
    // log that cannot be read fails the run before the target is touched.
    let replays: Vec<Option<Trace>> = placed
        .iter()
        .map(|p| iolog_setup::load_replay(&jobs[p.job], p.jobnum))
        .collect::<Result<_>>()?;
    // Log files first: a directory that cannot be written fails the run before
    // the target is touched (a logger dropped unstarted removes its files).
    let mut iolog = Logger::open(
        placed
            .iter()
            .map(|p| joblogs::plan(jobs, p.job, p.jobnum))
            .collect(),
    )?;
    let control =
        crate::engine::control::WorkerControl::new(&jobs[placed[0].job], placed[0].jobnum);
    let first = &jobs[placed[0].job];
    let nslots: u32 = placed.iter().map(|p| jobs[p.job].iodepth).sum();
    let fill = crate::engine::fill::Fill::resolve(&first.depth_batch, first.ioengine, nslots);
    if nslots == 0 {
        return Err(EngineError::NoDepth { job: label(first) });
    }
    let max_bs = placed
        .iter()
        .map(|p| jobs[p.job].max_bs())
        .max()
        .unwrap_or(4096)
        .max(
            replays
                .iter()
                .flatten()
                .map(Trace::max_len)
                .max()
                .unwrap_or(0),
        ) as usize;
    // falloc changes the file whatever the direction (fio opens it O_RDWR).
    let writes = first.ioengine == Engine::Falloc
        || placed
            .iter()
            .any(|p| jobs[p.job].rw.dir != Direction::Read || jobs[p.job].syncs_writes())
        || replays.iter().flatten().any(Trace::writes);

    // numa_mem_policy: the buffers are first touched under the job's policy.
    let policy = crate::engine::numa::buffer_policy(first)?;
    let mut bufs = Buffers::with_mem(
        nslots as usize,
        max_bs,
        4096,
        &first.process.mem,
        first.process.hugepage_size as usize,
    )
    .map_err(|err| EngineError::Buffers {
        job: label(first),
        err,
    })?;
    // What writes carry: fio's buffer options (random data by default).
    BufferFill::new(&first.buffers, first.randseed).prepare(&mut bufs);
    drop(policy);

    let cx = Worker1 {
        jobs,
        placed: &placed,
        first,
        replay: replays[0].as_ref(),
        writes,
        allow_destructive,
        nslots,
        max_bs,
        fill: &fill,
    };
    let Opened {
        target,
        region_len,
        queue,
        files,
        op_regions,
        relayout,
    } = open_backend(&cx, &bufs)?;
    let regions = file_regions(
        first,
        placed[0].jobnum,
        target.as_ref(),
        &files,
        op_regions,
        region_len,
    )?;

    let caps = queue.caps();
    let backend = queue.name();
    let (model, completer) = completion_for(first, caps, backend, nslots)?;
    let sched =
        Scheduler::for_job(first, nslots as usize).map_err(|err| EngineError::Scheduler {
            job: label(first),
            err,
        })?;

    // write_iolog: the files by the names the job gave them.
    let names: Vec<std::path::PathBuf> = match target.as_ref() {
        Some(t) => files.all(Some(t)).map(|t| t.path.clone()).collect(),
        None => vec![first.filename.clone().map_or_else(
            || format!("{}.{}.0", first.name, placed[0].jobnum).into(),
            Into::into,
        )],
    };
    let tracelog = TraceLog::open(
        placed
            .iter()
            .map(|p| iolog_setup::trace_plan(&jobs[p.job], &names))
            .collect(),
    )?;
    // fio's null engine is synchronous at iodepth=1: no submission latency.
    let fio_sync_null = fio_synchronous_null(jobs, &placed);
    let no_slat = caps.sync || fio_sync_null;
    let mut streams = Vec::with_capacity(placed.len());
    for (pi, p) in placed.iter().enumerate() {
        let replay = replays[pi].as_ref();
        let stream = prepare_stream(
            &cx,
            p,
            replay,
            target.as_ref(),
            JobFiles {
                regions: &regions,
                paths: &names,
            },
            region_len,
            no_slat,
        )?;
        streams.push(stream);
    }
    if let Some(s) = streams.first_mut() {
        s.relayout = relayout.map(Box::new);
    }
    let mut worker = Worker::new(queue, sched, completer, streams, bufs);
    worker.fill = fill;
    worker.submit_in_clat = fio_sync_null;
    if let Some(l) = iolog.as_mut() {
        l.start(!no_slat)?;
    }
    worker.trace.iolog = iolog.map(Box::new);
    worker.trace.tracelog = tracelog.map(Box::new);
    worker.io_timeout_ns = placed
        .iter()
        .filter_map(|p| jobs[p.job].io_timeout.map(dur_ns))
        .min()
        .unwrap_or(0);
    let cpus = worker_cpus(first, placed[0].jobnum);
    let jobs_of_worker: Vec<&JobSpec> = placed.iter().map(|p| &jobs[p.job]).collect();
    let (process, held) = crate::engine::process::prepare(first, &jobs_of_worker, target.as_ref())
        .map_err(|err| EngineError::Process {
            job: label(first),
            err,
        })?;
    Ok(Prepared {
        process,
        held,
        files,
        control,
        cpus,
        worker,
        target,
        placed,
        model,
        caps,
        backend,
        region_len,
    })
}

/// Each file's (first byte, bytes to address), for one generator per file
/// (none for the emulated device), with the job's zones checked against them.
fn file_regions(
    first: &JobSpec,
    jobnum: u32,
    target: Option<&Target>,
    files: &crate::engine::files::OpenSet,
    op_regions: Option<Vec<(u64, u64)>>,
    region_len: u64,
) -> Result<Vec<(u64, u64)>> {
    let regions: Vec<(u64, u64)> =
        op_regions.unwrap_or_else(|| files.all(target).map(|t| (t.offset, t.size)).collect());
    if region_len == 0 {
        return Err(EngineError::EmptyRegion { job: label(first) });
    }
    // The emulated device has no files: its one region is the job's.
    let zone_regions = match regions.is_empty() {
        true => vec![(first.clone_offset(jobnum), region_len)],
        false => regions.clone(),
    };
    crate::workload::zones::check_target(first, target, &zone_regions).map_err(|err| {
        EngineError::Zones {
            job: label(first),
            err,
        }
    })?;
    Ok(regions)
}

/// The completion model the job gets on this backend (what it asked for,
/// checked against the backend's capabilities), and its completer.
fn completion_for(
    first: &JobSpec,
    caps: crate::device::Caps,
    backend: &'static str,
    nslots: u32,
) -> Result<(CompletionModel, Completer)> {
    // psync with hipri polls inside the kernel (RWF_HIPRI): the model is still sync.
    let asked = if caps.sync && first.backend.flags.hipri && first.completion.is_none() {
        None
    } else {
        asked_model(first)
    };
    let model =
        completion::resolve(asked, caps, backend).map_err(|err| EngineError::Completion {
            job: label(first),
            err,
        })?;
    if model.naps() || model == CompletionModel::Interrupt {
        // hrtimer naps must end on time: the default 50 us slack would swamp
        // microsecond device latencies. Set again on the worker thread itself.
        clock::set_thread_timer_slack_ns(1);
    }
    // Adaptive measures this machine's wakeup cost here (once per process).
    let mut completer = Completer::new(model);
    // Inline submission runs one request at a time: only where that is the
    // worker's whole depth, or it would serialise a deeper queue.
    if model == CompletionModel::Adaptive && caps.inline && nslots == 1 {
        completer.allow_inline();
    }
    Ok((model, completer))
}

/// The CPUs a worker may run on: `numa_cpu_nodes`', or `cpus_allowed` (one
/// of them per clone with `cpus_allowed_policy=split`).
fn worker_cpus(first: &JobSpec, jobnum: u32) -> Vec<u32> {
    if !first.control.numa.cpus.is_empty() {
        first.control.numa.cpus.clone() // numa_cpu_nodes
    } else if first.cpus_allowed_split && !first.cpus_allowed.is_empty() {
        let n = first.cpus_allowed.len();
        vec![first.cpus_allowed[jobnum as usize % n]]
    } else {
        first.cpus_allowed.clone()
    }
}

/// Whether the worker's jobs are fio's synchronous null engine: `ioengine=null`
/// at `iodepth=1` with no iolab completion model asked for. fio's null engine
/// completes each I/O inside its queue call at depth 1 and so records no
/// submission latency (clat is the whole latency); iolab reports such a job
/// the same way. A job naming a completion model studies the emulated queue
/// (the lab's null-device studies do) and keeps slat and clat apart.
fn fio_synchronous_null(jobs: &[JobSpec], placed: &[Placed]) -> bool {
    placed.iter().all(|p| {
        let j = &jobs[p.job];
        j.ioengine == Engine::Null && j.iodepth == 1 && j.completion.is_none()
    })
}

/// One stream of a worker (a job clone): its generator over its part of the
/// worker's region (`worker_region` bytes; `regions` per file), recorder,
/// pacer, verification and per-stream limits. `sync`: the backend completes
/// I/O inside the submitting call (no submission latency to record).
/// The job's files as the stream needs them: each file's (first byte, bytes
/// to address), and their paths (for what fio seeds from a file's name).
#[derive(Clone, Copy)]
struct JobFiles<'a> {
    regions: &'a [(u64, u64)],
    paths: &'a [std::path::PathBuf],
}

fn prepare_stream(
    cx: &Worker1,
    p: &Placed,
    replay: Option<&Trace>,
    target: Option<&Target>,
    files: JobFiles,
    worker_region: u64,
    sync: bool,
) -> Result<Stream> {
    let JobFiles { regions, paths } = files;
    let Worker1 {
        jobs,
        placed,
        first,
        ..
    } = *cx;
    let job = &jobs[p.job];
    // Files sized one by one (a filesize range): a size= smaller than they
    // hold limits the job's I/O, as fio's does (a larger one is clamped).
    let limited;
    let job = match job.size {
        Some(b)
            if job.files.sizes.is_some()
                && job.io_size.is_none()
                && b < regions.iter().map(|r| r.1).sum::<u64>() =>
        {
            limited = JobSpec {
                io_size: Some(b),
                ..job.clone()
            };
            &limited
        }
        _ => job,
    };
    if job.size.is_some_and(|s| s > 0)
        && job.bs[0].max() as u64 > worker_region
        && job.bs[1].max() as u64 > worker_region
    {
        return Err(EngineError::BlockTooLarge {
            job: label(job),
            bs: job.bs[0].max(),
            region: worker_region,
        });
    }
    let seed = if job.randrepeat || job.workload.allrandrepeat {
        job.randseed.wrapping_add(p.jobnum as u64)
    } else {
        clock::now_ns() ^ (p.jobnum as u64) << 32
    };
    // A mixed job draws its directions from fio's generator, seeded as fio
    // seeds this clone (its thread number counts every clone before it).
    let thread = crate::workload::fio_rand::thread_number(jobs, p.job, p.jobnum);
    let mix_seed = crate::workload::fio_rand::rwmix_seed(job, thread).unwrap_or(seed as u32);
    // Random offsets too, from fio's seeds of this clone.
    let seeded = crate::workload::fio_rand::as_seeded_clone(job, p.jobnum);
    let fio_seeds = crate::workload::fio_rand::job_seeds(&seeded, thread);
    // (fio re-seeds between loops only while randrepeat holds, which
    // `randseed=` ends once the seeds are filled.)
    let reseed = crate::workload::fio_rand::offsets_repeat(&seeded) && !job.workload.randseed_given;
    // offset_increment: a clone sharing this worker starts further in and
    // ends where the worker's region ends.
    let start = job.clone_offset(p.jobnum);
    let first_start = first.clone_offset(placed[0].jobnum);
    let region_len = (first_start + worker_region).saturating_sub(start);
    if region_len == 0 {
        return Err(EngineError::EmptyRegion { job: label(job) });
    }
    crate::workload::distribution::check(&job.random_distribution, region_len).map_err(|err| {
        EngineError::Distribution {
            job: label(job),
            err,
        }
    })?;
    if replay.is_none() {
        for len in std::iter::once(region_len).chain(regions.iter().map(|r| r.1)) {
            crate::workload::generator::check_random_map(job, len).map_err(|err| {
                EngineError::RandomMap {
                    job: label(job),
                    err,
                }
            })?;
        }
        let lens: Vec<u64> = std::iter::once(region_len)
            .chain(regions.iter().map(|r| r.1))
            .collect();
        let block_seed = fio_seeds[crate::workload::fio_rand::SLOT_BLOCK];
        crate::workload::lfsr::check(job, &lens, block_seed).map_err(|err| EngineError::Lfsr {
            job: label(job),
            err,
        })?;
    }
    let generator = if let Some(t) = replay {
        crate::engine::files::Source::Replay(Box::new(Replay::new(t)))
    } else if regions.len() > 1 {
        crate::engine::files::Source::Many(Box::new(
            crate::engine::files::FileService::new(job, regions, seed, mix_seed)
                .with_fio_seeds(&fio_seeds, reseed)
                // Each file's distribution state from its own name, as fio's.
                .with_dist_seeds(paths.iter().map(|p| {
                    use std::os::unix::ffi::OsStrExt;
                    crate::workload::fio_dist::seed(
                        &seeded,
                        thread,
                        p.as_os_str().as_bytes(),
                        &fio_seeds,
                    )
                })),
        ))
    } else {
        Generator::new(job, start, region_len, seed)
            .with_rwmix_seed(mix_seed)
            .with_fio_seeds(&fio_seeds, reseed)
            .with_dist_seed(target.map(|t| {
                use std::os::unix::ffi::OsStrExt;
                crate::workload::fio_dist::seed(
                    &seeded,
                    thread,
                    t.path.as_os_str().as_bytes(),
                    &fio_seeds,
                )
            }))
            .with_zone_end(crate::workload::zones::file_end(target, start))
            .with_file_end(crate::workload::target_end(target, start))
            .into()
    };
    let planned = job.runtime.map(|r| dur_ns(r) + dur_ns(job.ramp_time));
    let slat = !sync;
    let windows = crate::measure::recorder::SampleWindows::fio(
        job.reporting.bw_avg_ms,
        job.reporting.iops_avg_ms,
        !job.reporting.disable_bw,
    );
    let mut rec = Recorder::new(RecorderConfig {
        classes: first.scheduler != crate::job::SchedKind::Noop || placed.len() > 1,
        ..RecorderConfig::for_runtime(slat, planned).with_windows(&windows)
    });
    rec.windows = windows;
    let pacer = Pacer::new(job, 0);
    let mut stream = Stream::new(generator, pacer, job.iodepth, job.ioprio, rec);
    stream.runtime_ns = job.runtime.map(dur_ns);
    stream.track_files(regions.len());
    // A file set is invalidated once, above; pre_read keeps the cache warm.
    if let (Some(t), false, 1, false, true) = (
        target,
        job.direct,
        regions.len(),
        job.files.pre_read,
        job.target.invalidate,
    ) {
        stream.invalidate = Some((t.file.as_raw_fd(), t.offset, region_len));
    }
    stream.ramp_ns = dur_ns(job.ramp_time);
    stream.steady = crate::engine::steady::Detector::new(&job.steady, stream.ramp_ns);
    stream.lat_target = crate::engine::lat_target::LatTarget::new(&job.lat_target, job.iodepth);
    stream.max_lat =
        crate::measure::max_latency::MaxLatency::new(job.reporting.max_latency.map(dur_ns));
    stream.serialize_overlap = job.workload.serialize_overlap;
    stream.verify =
        Verifier::new(job, start, region_len, seed).map_err(|err| EngineError::Verify {
            job: label(job),
            err,
        })?;
    if let Some(v) = stream.verify.as_mut() {
        crate::engine::verify_setup::verify_origin(v, job, thread, p.jobnum);
    }
    stream.fill_device = job.fill_device;
    stream.continue_on_error = job.continue_on_error;
    stream.ignore_error = job.control.ignore_error.clone();
    stream.cmdprio = crate::engine::control::CmdPrio::new(&job.control.cmdprio, seed);
    if stream.cmdprio.active() {
        // fio's per-priority latencies: total latency with lat_percentiles.
        stream.rec.prios = Some(Box::new(crate::measure::recorder::PrioStats::new(
            &stream.cmdprio.values(job.ioprio),
            job.lat_percentiles.lat,
        )));
    }
    stream.fill = Some(
        BufferFill::new(&job.buffers, dedupe::buffer_seed(jobs, p.job, p.jobnum))
            .with_working_set(dedupe::WorkingSet::new(jobs, p.job, p.jobnum)),
    )
    .filter(|f| f.per_write());
    Ok(stream)
}

/// What `prepare` knows of a worker before its backend is opened.
struct Worker1<'a> {
    jobs: &'a [JobSpec],
    /// The worker's streams (one job clone each); the first decides the backend.
    placed: &'a [Placed],
    first: &'a JobSpec,
    /// The first stream's read_iolog replay, if any.
    replay: Option<&'a Trace>,
    /// Some stream writes (the target is opened for writing).
    writes: bool,
    allow_destructive: bool,
    /// Request slots: the streams' iodepths summed.
    nslots: u32,
    /// The largest request of any stream (buffer size).
    max_bs: usize,
    fill: &'a crate::engine::fill::Fill,
}

/// A worker's opened backend: the target (none for null, cpuio and the
/// file-operation engines), the bytes its region spans, the queue, the job's
/// other files, and the file-operation engines' per-file regions.
struct Opened {
    target: Option<Target>,
    region_len: u64,
    queue: Box<dyn Queue>,
    files: crate::engine::files::OpenSet,
    op_regions: Option<Vec<(u64, u64)>>,
    /// `unlink_each_loop` over several passes (the worker's one stream).
    relayout: Option<Relayout>,
}

/// The backend the first stream's `ioengine` names, opened on its target.
fn open_backend(cx: &Worker1, bufs: &Buffers) -> Result<Opened> {
    let Worker1 {
        jobs: _,
        placed,
        first,
        writes,
        allow_destructive,
        nslots,
        max_bs,
        ..
    } = *cx;
    // The job's files besides the first (nrfiles, a filename list).
    let mut files = crate::engine::files::OpenSet::default();
    // File-operation engines address files by path, one block each.
    let mut op_regions: Option<Vec<(u64, u64)>> = None;
    let mut relayout = None;
    let (target, region_len, queue): (Option<Target>, u64, Box<dyn Queue>) = match first.ioengine {
        Engine::Cpuio => {
            // No target: one block of region, burned over and over.
            let burn = CpuBurn::new(first.backend.cpuio.cpuchunks, first.backend.cpuio.cpumode);
            (None, max_bs as u64, Box::new(burn))
        }
        engine if engine.is_file_op() => {
            let (paths, block) = file_op_paths(cx.jobs, &placed[0], writes, allow_destructive)?;
            let op = match engine {
                Engine::FileCreate => FileOp::Create,
                Engine::FileStat => FileOp::Stat(first.backend.filestat.stat_type),
                _ => FileOp::Delete,
            };
            let q = FileOps::new(op, &paths).map_err(|err| EngineError::Backend {
                job: label(first),
                err,
            })?;
            op_regions = Some(vec![(0, block); paths.len()]);
            (None, block, Box::new(q))
        }
        Engine::Null => {
            let size = first
                .size
                .ok_or_else(|| EngineError::NullNeedsSize { job: label(first) })?;
            let dev = NullDevice::new(&first.backend.null, size, nslots, first.randseed).map_err(
                |err| EngineError::NullDevice {
                    job: label(first),
                    err,
                },
            )?;
            (
                None,
                size.saturating_sub(first.clone_offset(placed[0].jobnum)),
                Box::new(dev),
            )
        }
        engine => {
            let (target, others, again) = open_files(cx)?;
            files = others;
            relayout = again;
            let region = target.size;
            let queue = file_queue(cx, engine, &target, &files, bufs)?;
            (Some(target), region, queue)
        }
    };
    Ok(Opened {
        target,
        region_len,
        queue,
        files,
        op_regions,
        relayout,
    })
}

/// A file-backed job's target and its other files, opened as the job asks
/// (created, preallocated, pre-read), with fio's cache advice and write hints.
fn open_files(cx: &Worker1) -> Result<(Target, crate::engine::files::OpenSet, Option<Relayout>)> {
    let Worker1 {
        jobs,
        placed,
        first,
        writes,
        allow_destructive,
        max_bs,
        ..
    } = *cx;
    // A replay opens the log's files (or replay_redirect's).
    let paths = match cx.replay {
        Some(t) => iolog_setup::replay_paths(t),
        None => {
            let paths = crate::job::files_opts::paths(first, placed[0].jobnum);
            crate::engine::files::check_opendir(first, &paths)?;
            crate::engine::files::make_dirs(first, &paths)?;
            paths
        }
    };
    let nfiles = paths.len().max(1) as u64;
    // filesize range (or filesize with size=N%): each file its own size.
    let sizes = match cx.replay {
        Some(_) => None,
        None => crate::engine::files::file_sizes(jobs, placed[0].job, placed[0].jobnum, &paths)?,
    };
    let min_bs = placed
        .iter()
        .map(|p| jobs[p.job].bs[0].min().min(jobs[p.job].bs[1].min()))
        .min()
        .unwrap_or(4096);
    let spec = TargetSpec {
        // fio: size is the job's total, spread over its files.
        size: match cx.replay {
            Some(t) => iolog_setup::replay_size(t),
            None => match &sizes {
                Some(s) => Some(s[0]),
                None => first.size.map(|s| s / nfiles),
            },
        },
        prealloc: first.files.fallocate,
        allow_create: first.files.allow_create,
        // A log's offsets are from the start of its files.
        offset: match cx.replay {
            Some(_) => 0,
            None => first.clone_offset(placed[0].jobnum),
        },
        writes,
        direct: first.direct,
        sync: first.sync,
        dsync: first.target.dsync,
        min_bs,
        max_bs: max_bs as u32,
        allow_destructive,
        allow_mounted_write: first.target.allow_mounted_write,
        layout: crate::engine::files::layout(first, placed.iter().map(|p| &jobs[p.job])),
        ..TargetSpec::new(first.name.clone(), paths[0].clone())
    };
    crate::engine::verify_setup::check_bounded(first, &spec.path)?;
    let target = open_target(&spec)?;
    let files = crate::engine::files::OpenSet::open(first, &spec, &paths, sizes.as_deref())?;
    if first.files.pre_read {
        for t in files.all(Some(&target)) {
            crate::engine::files::pre_read(first, t)?;
        }
    }
    for t in files
        .all(Some(&target))
        .filter(|_| !first.direct && !first.files.pre_read)
    {
        let (fd, region) = (t.file.as_raw_fd(), t.size);
        // fio's invalidate=1 (its default): start buffered jobs with the
        // region out of the page cache, so reads reach the device and runs
        // do not inherit each other's cache. Advisory: failure is harmless.
        if first.target.invalidate {
            // SAFETY: fd is open; fadvise only drops clean cached pages.
            unsafe {
                libc::posix_fadvise(
                    fd,
                    t.offset as i64,
                    region as i64,
                    libc::POSIX_FADV_DONTNEED,
                )
            };
        }
        // fio's fadvise_hint (1 by default: from the pattern, which turns
        // read-ahead off for random jobs).
        use crate::job::target::Fadvise;
        let hint = match (first.target.fadvise, first.rw.pattern) {
            (Fadvise::None, _) => None,
            (Fadvise::Random, _) | (Fadvise::Pattern, crate::job::Pattern::Rand) => {
                Some(libc::POSIX_FADV_RANDOM)
            }
            _ => Some(libc::POSIX_FADV_SEQUENTIAL),
        };
        if let Some(hint) = hint {
            // SAFETY: as above; an advisory hint on an open fd.
            unsafe { libc::posix_fadvise(fd, t.offset as i64, region as i64, hint) };
        }
    }
    if let Some(hint) = first.target.write_hint {
        for t in files.all(Some(&target)) {
            crate::engine::process::set_write_hint(hint, t).map_err(|err| {
                EngineError::Process {
                    job: label(first),
                    err,
                }
            })?;
        }
    }
    // unlink_each_loop over several passes: one job clone per worker, as
    // the files are made again between its passes.
    let relayout = files.relayout(first, &spec, &target);
    if relayout.is_some() && placed.len() > 1 {
        return Err(EngineError::JobFailed(format!(
            "{}: unlink_each_loop with loops={} makes the files again between passes, and this \
             worker runs {} job clones on them: give each job its own files",
            label(first),
            first.loops,
            placed.len()
        )));
    }
    Ok((target, files, relayout))
}

/// The queue of a file-backed engine on `target` (and the job's other files).
fn file_queue(
    cx: &Worker1,
    engine: Engine,
    target: &Target,
    files: &crate::engine::files::OpenSet,
    bufs: &Buffers,
) -> Result<Box<dyn Queue>> {
    let Worker1 {
        jobs,
        placed,
        first,
        writes,
        nslots,
        fill,
        ..
    } = *cx;
    let fd = target.file.as_raw_fd();
    let backend_err = |err| EngineError::Backend {
        job: label(first),
        err,
    };
    let queue: Box<dyn Queue> = match engine {
        Engine::Psync | Engine::Pvsync2 => Box::new(
            Psync::new(
                fd,
                engine == Engine::Pvsync2,
                PsyncFlags {
                    hipri: first.backend.flags.hipri,
                    nowait: first.backend.flags.nowait,
                    uncached: first.backend.flags.uncached && !first.direct,
                    hipri_percentage: Some(first.backend.pvsync2.hipri_percentage),
                    atomic: first.backend.flags.atomic,
                },
            )
            .map_err(backend_err)?,
        ),
        Engine::Sync | Engine::Vsync | Engine::Pvsync => {
            let kind = match engine {
                Engine::Sync => SyncKind::Lseek,
                Engine::Vsync => SyncKind::LseekVectored,
                _ => SyncKind::Vectored,
            };
            Box::new(SyncIo::new(fd, kind).map_err(backend_err)?)
        }
        Engine::Mmap => {
            let job_reads = placed.iter().any(|p| jobs[p.job].rw.dir.issues()[0]);
            let opts = MmapOpts {
                write: writes,
                read: job_reads || first.verify.kind.is_some(),
                random: first.rw.pattern == crate::job::Pattern::Rand,
                thp: first.backend.mmap.thp,
                sync_each: first.direct,
            };
            Box::new(Mmap::new(fd, opts).map_err(backend_err)?)
        }
        Engine::Posixaio => Box::new(Posixaio::new(fd, nslots).map_err(backend_err)?),
        Engine::Falloc | Engine::Ftruncate => {
            let kind = if engine == Engine::Falloc {
                SpaceKind::Falloc
            } else {
                SpaceKind::Ftruncate
            };
            Box::new(Space::new(fd, kind).map_err(backend_err)?)
        }
        Engine::Libaio => {
            // Completions are read from the AIO ring in user space
            // wherever the ring can be read, io_getevents sleeps for
            // the rest; userspace_reap=1 reads only the ring (fio),
            // userspace_reap=0 only io_getevents (fio's default).
            let opts = LibaioOpts {
                entries: nslots,
                // The worker commits and reaps in these sizes already;
                // the context holds each call to them as well.
                batch_submit: fill.submit,
                batch_complete_max: fill.complete_max,
                userspace_reap: first.backend.libaio.reaps_in_user_space(),
                ring_only: first.backend.libaio.ring_only(),
                rw_flags: engine_rw_flags(first),
                atomic_writes: first.backend.flags.atomic,
            };
            Box::new(Libaio::new(fd, &opts).map_err(backend_err)?)
        }
        // io_uring (ioengine=null never reaches here).
        _ => {
            let iov = bufs.iovecs();
            let opts = UringOpts {
                entries: nslots,
                options: first.backend.uring,
                iopoll: first.backend.flags.hipri,
                bufs: Some(&iov),
                rw_flags: engine_rw_flags(first),
                atomic_writes: first.backend.flags.atomic,
                ..Default::default()
            };
            Box::new(Uring::new(fd, &opts).map_err(backend_err)?)
        }
    };
    if first.backend.flags.atomic {
        let min_w = placed
            .iter()
            .map(|p| jobs[p.job].bs[1].min())
            .min()
            .unwrap_or(0);
        let max_w = placed
            .iter()
            .map(|p| jobs[p.job].bs[1].max())
            .max()
            .unwrap_or(0);
        crate::device::atomic::check(fd, min_w, max_w).map_err(backend_err)?;
    }
    let mut queue = queue;
    if !files.rest.is_empty() {
        queue
            .set_files(&files.fds(Some(target)))
            .map_err(backend_err)?;
    }
    Ok(queue)
}
