//! The engine: worker threads running the per-request loop, and `iolab run`.
//!
//! [`run_jobs`] splits jobs into groups at `stonewall` (each holding one or
//! more reporting groups: `new_group` splits those without waiting), places job clones on
//! workers ([`setup::plan_workers`]), prepares every worker before any starts
//! (so a bad job fails the run before I/O begins), starts them together behind a
//! barrier, and collects per-job results.

pub mod agglog;
pub mod cli;
pub mod cmdprio;
pub mod control;
pub mod error;
pub mod files;
pub mod fill;
pub mod flow;
pub mod hooks;
pub mod iolog_setup;
pub mod joblogs;
pub mod lat_target;
pub mod numa;
pub mod place;
pub mod process;
pub mod progress;
pub mod setup;
pub mod steady;
pub mod summary;
pub mod trace;
pub mod verify_setup;
pub mod waitfor;
pub mod worker;

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Barrier};

pub use error::EngineError;
use error::Result;

use crate::job::JobSpec;
use crate::measure::cpu::ThreadUsage;
use crate::placement::PollSignal;
use crate::workload::verify::VerifyStats;

/// Options that apply to a whole run rather than a job.
#[derive(Clone, Debug, Default)]
pub struct EngineOptions {
    /// Write to block devices even when they hold data (see `sys::safety`).
    pub allow_destructive: bool,
    /// `--trace`: block-trace the targets' devices and join with per-request
    /// timestamps (see `trace`).
    pub trace: bool,
    /// `--trace-sample=PCT[/PERIOD]`: trace only that share of every period.
    pub trace_sampling: Option<crate::measure::blktrace::Sampling>,
    /// Bytes to allocate and free per request on the hot path (0 = never): only
    /// for study 002's preallocation comparison.
    pub alloc_per_request: usize,
}

// The engine's raw results are report's input type: the engine fills them,
// `report::assemble` folds them into fio's shape.
pub use crate::report::raw::{GroupRun, JobRun};

/// Split job indices into stonewall groups: a job with `stonewall` starts a new one.
pub fn groups(jobs: &[JobSpec]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (i, j) in jobs.iter().enumerate() {
        if out.is_empty() || j.stonewall {
            out.push(Vec::new());
        }
        out.last_mut().expect("pushed above").push(i);
    }
    out
}

/// Run all jobs, group after group. A stop request (SIGINT) ends the run early:
/// what was measured so far is still returned.
pub fn run_jobs(jobs: &[JobSpec], opts: &EngineOptions) -> Result<Vec<GroupRun>> {
    let mut results = Vec::new();
    let stops = control::StopFlags::default();
    // size=N%, offset=N%, ... as bytes of each job's target.
    let resolved = files::resolve_shares(jobs)?;
    let jobs = &resolved[..];
    let groups = groups(jobs);
    files::check_open_limit(jobs, &groups)?;
    files::check_group_rules(jobs, &groups)?;
    let reporting = crate::job::reporting_groups(jobs);
    for group in groups {
        // exit_what=all or exitall_on_error in an earlier group: no more groups.
        if crate::sys::cleanup::stop_requested() || stops.all_stopped() {
            break;
        }
        results.push(run_group(jobs, &group, &reporting, opts, &stops)?);
    }
    Ok(results)
}

/// Counts an I/O worker out of its group's `io_left` when dropped.
struct IoDone(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for IoDone {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One stonewall group, in phases: every worker prepared and placed
/// (`prepare_group`), started behind one barrier on its own thread
/// (`worker_thread`), the live balancer run while they work, and each
/// worker's streams turned into the group's `JobRun`s (`collect_worker`).
/// `reporting`: every job's reporting group (`job::reporting_groups`).
fn run_group(
    jobs: &[JobSpec],
    group: &[usize],
    reporting: &[u32],
    opts: &EngineOptions,
    stops: &control::StopFlags,
) -> Result<GroupRun> {
    // The placement report names the stonewall group by its first job's.
    let groupid = reporting[group[0]];
    let (mut prepared, placement, signals) = prepare_group(jobs, group, opts)?;
    // exitall's flags: exit_what=group stops the workers of a reporting group.
    let worker_groups = prepared.iter().map(|p| {
        let mut g: Vec<u32> = p.placed.iter().map(|pl| reporting[pl.job]).collect();
        g.sort_unstable();
        g.dedup();
        g
    });
    let flags = stops.for_workers(worker_groups.collect());
    let tids: Vec<Arc<AtomicI32>> = prepared.iter().map(|_| Arc::default()).collect();
    let tracer = trace::arm(opts, jobs, &mut prepared)?;
    for p in &prepared {
        progress::register(&p.worker.live);
    }
    let barrier = Arc::new(Barrier::new(prepared.len() + placement.corunners.len() + 1));
    // Co-runners first: should one fail to start, no worker (holding a device
    // queue) is left waiting at the barrier.
    let corunners = place::start(&placement, &barrier)?;
    // cpuio's exit_on_io_done: the group's I/O workers still running.
    let is_io = |p: &setup::Prepared| jobs[p.placed[0].job].ioengine != crate::job::Engine::Cpuio;
    let io_left = Arc::new(std::sync::atomic::AtomicUsize::new(
        prepared.iter().filter(|p| is_io(p)).count(),
    ));
    let t0 = crate::measure::clock::now_ns();
    let handles: Vec<_> = prepared
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let start = WorkerStart {
                barrier: barrier.clone(),
                tid_slot: tids[i].clone(),
                stops: flags[i].clone(),
                io_left: io_left.clone(),
                io_worker: is_io(&p),
                until_io_done: jobs[p.placed[0].job].backend.cpuio.exit_on_io_done,
            };
            std::thread::Builder::new()
                .name(format!("iolab-w{i}"))
                .spawn(move || worker_thread(p, start))
        })
        .collect::<std::io::Result<_>>()
        .map_err(EngineError::SpawnWorker)?;
    barrier.wait();
    // The barrier orders every worker's tid store before these loads.
    let worker_tids: Vec<i32> = tids.iter().map(|t| t.load(Ordering::Relaxed)).collect();
    let balanced = place::LiveBalancer::new(&placement, &worker_tids, &signals, &corunners.tids())
        .map(|mut b| {
            run_balancer(&mut b, &handles);
            b.finish()
        });
    let mut out = Vec::new();
    // Each stream's per-request timestamps (`--trace`), beside `out`.
    let mut logs = Vec::new();
    let mut seen = Vec::new();
    for (worker, h) in handles.into_iter().enumerate() {
        let ended = h.join().map_err(|_| EngineError::WorkerPanicked)?;
        let at = WorkerAt { worker, reporting };
        seen.push(collect_worker(jobs, at, ended, &mut out, &mut logs)?);
    }
    let wall_ns = crate::measure::clock::now_ns() - t0;
    let corunners = corunners.finish()?;
    if let Some(t) = tracer {
        t.finish(jobs, &mut out, &logs);
    }
    let placement = placement.is_active().then(|| {
        place::report(
            groupid, &placement, jobs, &seen, wall_ns, &corunners, balanced,
        )
    });
    Ok(GroupRun {
        jobs: out,
        wall_ns,
        placement,
    })
}

/// Every worker of the group prepared (devices opened, buffers allocated),
/// its `wait_for` gate and `flow` share attached, and placed on CPUs; with
/// the poll signals the live balancer (`placement=balance`) reads.
fn prepare_group(
    jobs: &[JobSpec],
    group: &[usize],
    opts: &EngineOptions,
) -> Result<(Vec<setup::Prepared>, place::GroupPlan, Vec<PollSignal>)> {
    let mut prepared = Vec::new();
    for placed in setup::plan_workers(jobs, group) {
        prepared.push(setup::prepare(jobs, placed, opts.allow_destructive)?);
    }
    let gates = waitfor::Gates::new(group);
    for p in &mut prepared {
        let js: Vec<usize> = p.placed.iter().map(|pl| pl.job).collect();
        p.control.gate = gates.gate(jobs, &js);
    }
    flow::attach(prepared.iter_mut().flat_map(|p| {
        let streams = p.worker.streams.iter_mut().map(|s| &mut s.flow);
        streams.zip(p.placed.iter().map(|pl| &jobs[pl.job]))
    }));
    let placement = place::plan(jobs, &prepared)?;
    // Poll signals for the live balancer, published before the start barrier.
    let signals: Vec<PollSignal> = prepared.iter().map(|_| PollSignal::new()).collect();
    for (i, (p, cpus)) in prepared.iter_mut().zip(&placement.workers).enumerate() {
        p.cpus = cpus.clone();
        if placement.live.is_some() {
            p.worker.poll_signal = Some(signals[i].clone());
        }
    }
    Ok((prepared, placement, signals))
}

/// What a worker thread is handed besides its prepared worker.
struct WorkerStart {
    barrier: Arc<Barrier>,
    /// Where the thread publishes its kernel thread id before the barrier.
    tid_slot: Arc<AtomicI32>,
    stops: control::StopFlags,
    /// cpuio's `exit_on_io_done`: the group's I/O workers still running.
    io_left: Arc<std::sync::atomic::AtomicUsize>,
    /// This worker does I/O (counts itself out of `io_left` when it ends).
    io_worker: bool,
    /// This worker (cpuio) ends when the group's I/O workers have.
    until_io_done: bool,
}

/// What a worker thread hands back: the worker, how its loop ended, its
/// CPU time and the CPU it last ran on.
type WorkerEnded = (
    setup::Prepared,
    std::result::Result<worker::LoopOutcome, crate::device::DeviceError>,
    ThreadUsage,
    Option<u32>,
);

/// One worker's thread: thread id, CPUs and the job's process settings
/// before the barrier, the loop after it, and the job's end (end sync,
/// files, exec_postrun) whatever the loop did.
fn worker_thread(mut p: setup::Prepared, start: WorkerStart) -> WorkerEnded {
    let WorkerStart {
        barrier,
        tid_slot,
        stops,
        io_left,
        io_worker,
        until_io_done,
    } = start;
    // However the worker ends, its wait_for waiters may start.
    let _ended = p.control.gate.ender();
    // However an I/O worker ends, exit_on_io_done burners see it.
    let _io_done = io_worker.then(|| IoDone(io_left.clone()));
    crate::measure::clock::set_thread_timer_slack_ns(1);
    let tid = crate::placement::affinity::gettid();
    tid_slot.store(tid, Ordering::Relaxed);
    let pinned = if p.cpus.is_empty() {
        Ok(())
    } else {
        crate::placement::affinity::set_affinity(tid, &p.cpus)
    };
    // cgroup, nice, uid/gid and exec_prerun, before the clock.
    let entered = p.process.enter();
    barrier.wait();
    if let Err(e) = entered {
        let err = crate::device::DeviceError::io(
            "setting up the job's thread",
            std::io::Error::other(e.to_string()),
        );
        p.worker.leave_flows();
        return (p, Err(err), ThreadUsage::default(), None);
    }
    if let Err(e) = pinned {
        let err = crate::device::DeviceError::io(
            format!(
                "pinning the worker to CPUs {}",
                crate::placement::topology::format_cpu_list(&p.cpus)
            ),
            e,
        );
        p.worker.leave_flows();
        return (p, Err(err), ThreadUsage::default(), None);
    }
    if let Err(e) = p.control.enter_mem_policy() {
        let err = crate::device::DeviceError::io("setting numa_mem_policy", e);
        p.worker.leave_flows();
        return (p, Err(err), ThreadUsage::default(), None);
    }
    p.worker.halt = control::Halt::watch(&stops);
    if until_io_done {
        p.worker.halt = std::mem::take(&mut p.worker.halt).until_io_done(io_left);
    }
    // create_only: the files are set up, the job issues nothing.
    let (outcome, cpu) = if !p.process.create_only && p.control.wait_start(&stops) {
        let cpu0 = ThreadUsage::now();
        let o = p.worker.run();
        (o, ThreadUsage::delta(&cpu0, &ThreadUsage::now()))
    } else {
        // Stopped during startdelay: the job issues nothing.
        (Ok(Default::default()), ThreadUsage::default())
    };
    p.worker.leave_flows();
    let fds = p.files.fds(p.target.as_ref());
    let failed = (p.worker.streams.iter()).any(|s| s.error.is_some() || s.acct.verify_failures > 0);
    if let Some(errno) =
        p.control
            .after_run(&fds, failed, &stops, p.worker.trace.tracelog.as_deref_mut())
    {
        // A failed end sync is the job's error.
        for s in &mut p.worker.streams {
            s.errors += 1;
            s.error.get_or_insert((0, errno));
        }
    }
    p.files.finish(p.target.as_ref());
    p.process.after();
    (p, outcome, cpu, crate::placement::affinity::current_cpu())
}

/// Which worker of its stonewall group a finished worker was, and every
/// job's reporting group: what its `JobRun`s say of where they ran.
struct WorkerAt<'a> {
    worker: usize,
    reporting: &'a [u32],
}

/// A finished worker's streams as the group's `JobRun`s (into `out`, their
/// `--trace` logs into `logs`), and what placement saw of its thread.
fn collect_worker(
    jobs: &[JobSpec],
    at: WorkerAt,
    (p, outcome, cpu, last_cpu): WorkerEnded,
    out: &mut Vec<JobRun>,
    logs: &mut Vec<crate::engine::hooks::StreamLog>,
) -> Result<place::WorkerSeen> {
    let setup::Prepared {
        mut worker,
        placed,
        model,
        backend,
        target,
        cpus: allowed,
        ..
    } = p;
    let seen = place::WorkerSeen {
        name: format!("{}.{}", jobs[placed[0].job].name, placed[0].jobnum),
        cpus: allowed,
        last_cpu,
        cpu_ns: cpu.user_ns + cpu.sys_ns,
    };
    let backend_stats = worker.queue.stats();
    let injected = worker.queue.device_time().map(|h| h.injected_faults());
    let device_in_flight = worker.queue.commands_in_flight();
    let slots_free = worker.slots_free();
    let decisions = worker.completer.decisions();
    let sched = worker.sched.stats(crate::measure::clock::now_ns());
    let nstreams = worker.streams.len();
    let (warning, log_counts) = worker.trace.close_logs()?;
    if let Some(w) = warning {
        eprintln!("iolab: warning: {w}");
    }
    let mut log_counts = log_counts.into_iter();
    let mut trace_logs = worker.trace.split_by_stream(nstreams).into_iter();
    let (outcome, loop_error) = match outcome {
        Ok(o) => (o, None),
        Err(e) => (Default::default(), Some(e.to_string())),
    };
    for (stream, pl) in worker.streams.into_iter().zip(placed) {
        let start = stream.ramp_end_ns;
        let end = if stream.finished_ns > start {
            stream.finished_ns
        } else {
            outcome.ended_ns
        };
        let job = &jobs[pl.job];
        let verify = stream.verify.as_ref().map(|v| v.stats);
        let error = loop_error
            .clone()
            .or_else(|| stream_error(job, &stream, verify.as_ref()));
        out.push(JobRun {
            job: pl.job,
            jobnum: pl.jobnum,
            groupid: at.reporting[pl.job],
            worker: at.worker,
            rec: stream.rec,
            runtime_ns: end.saturating_sub(start),
            cpu,
            worker_streams: nstreams,
            model,
            backend,
            completion: outcome.completion,
            backend_stats,
            sched,
            adaptive: decisions.clone(),
            error,
            interrupted: outcome.interrupted,
            acct: crate::report::raw::Accounting {
                zone_resets: stream.generator.zone_resets(),
                ..stream.acct
            },
            verify,
            slots_free,
            device_in_flight,
            injected,
            continue_on_error: job.continue_on_error,
            trace: None,
            steady: stream.steady.as_ref().map(steady::Detector::report),
            lat_target: stream
                .lat_target
                .as_ref()
                .map(lat_target::LatTarget::report),
            job_logs: log_counts
                .next()
                .filter(|c| *c != Default::default())
                .map(|c| crate::report::model::JobLogs {
                    records: c.sent,
                    dropped: c.dropped,
                    waits: c.waits,
                    wait_ns: c.wait_ns,
                }),
        });
        logs.push(trace_logs.next().unwrap_or_default());
    }
    drop(target);
    Ok(seen)
}

/// A stream's error message, when it ended in one: its I/O error, a rate or
/// latency limit it broke, and any verification failure.
fn stream_error(
    job: &JobSpec,
    stream: &worker::Stream,
    verify: Option<&VerifyStats>,
) -> Option<String> {
    let io = io_error_message(job, stream)
        .or_else(|| stream.pacer.min_rate_message(&setup::label(job)))
        .or_else(|| (stream.lat_target.as_ref()?).fatal_message(&setup::label(job)))
        .or_else(|| {
            let file = job.filename.as_deref().unwrap_or("");
            stream.max_lat.message(&setup::label(job), file)
        });
    let bad = verify.and_then(|v| verify_error_message(job, v));
    match (io, bad) {
        (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
        (a, b) => a.or(b),
    }
}

/// Tick the live balancer until every worker has finished. Checks for the end
/// every few milliseconds so the group's wall time is not stretched by a tick.
fn run_balancer<T>(b: &mut place::LiveBalancer, workers: &[std::thread::JoinHandle<T>]) {
    let step = b.interval.min(std::time::Duration::from_millis(5));
    let mut next = std::time::Instant::now() + b.interval;
    while !workers.iter().all(|h| h.is_finished()) {
        std::thread::sleep(step);
        if std::time::Instant::now() >= next {
            b.tick();
            next += b.interval;
        }
    }
}

/// The job's I/O error, as fio words it; with continue_on_error, how many.
fn io_error_message(job: &JobSpec, s: &worker::Stream) -> Option<String> {
    let (off, errno) = s.error?;
    let what = if errno == libc::ETIMEDOUT && s.acct.timeouts > 0 {
        format!(
            "request timed out (io_timeout={:?}) and was aborted",
            job.io_timeout.unwrap_or_default()
        )
    } else {
        std::io::Error::from_raw_os_error(errno).to_string()
    };
    let first = format!("I/O error at offset {off}: {what}");
    Some(
        if s.errors > 1 || job.continue_on_error != crate::job::ContinueOnError::None {
            format!(
                "{}: {} I/O errors (continue_on_error={}); first: {first}",
                setup::label(job),
                s.errors,
                job.continue_on_error.name()
            )
        } else {
            format!("{}: {first}", setup::label(job))
        },
    )
}

/// A verification failure fails the job: the count and the first mismatch.
fn verify_error_message(job: &JobSpec, v: &VerifyStats) -> Option<String> {
    let f = v.first_failure?;
    Some(format!(
        "{}: {} of {} blocks checked failed verification; first: {f}",
        setup::label(job),
        v.failures,
        v.checked
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stonewall_starts_a_new_group() {
        let mut jobs = vec![JobSpec::default(); 4];
        jobs[2].stonewall = true;
        assert_eq!(groups(&jobs), vec![vec![0, 1], vec![2, 3]]);
    }

    #[test]
    fn new_group_splits_reporting_groups_but_not_stonewall_groups() {
        let mut jobs = vec![JobSpec::default(); 5];
        // A first job's stonewall or new_group starts no group: none is before it.
        jobs[0].stonewall = true;
        jobs[0].new_group = true;
        jobs[2].new_group = true;
        jobs[3].stonewall = true;
        assert_eq!(crate::job::reporting_groups(&jobs), [0, 0, 1, 2, 2]);
        assert_eq!(groups(&jobs), vec![vec![0, 1, 2], vec![3, 4]]);
    }
}
