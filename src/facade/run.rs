//! Running [`Jobs`]: the engine's groups, assembled into fio's result shape
//! (`report::assemble`), exactly as `iolab run` does before it renders.

use crate::engine::{EngineOptions, run_jobs};
use crate::measure::clock;
use crate::measure::cpu::SystemSnapshot;
use crate::report::assemble::{self, RunContext};
use crate::report::model::{JobResult, RunResult};

use super::error::{Error, Result};
use super::job::Jobs;

/// How to run: what `iolab run`'s flags beyond fio's job options choose.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunOptions {
    /// Write to block devices even when they hold a filesystem, are mounted or
    /// in use (`--allow-destructive`). Off: such a target is refused.
    pub allow_destructive: bool,
    /// Block-trace the targets' devices and join the trace with per-request
    /// timestamps (`--trace`; root and tracefs).
    pub trace: bool,
}

impl RunOptions {
    /// The defaults: nothing destructive, no tracing.
    pub fn new() -> RunOptions {
        RunOptions::default()
    }

    /// Allow writing to block devices that hold data (`--allow-destructive`).
    pub fn allow_destructive(mut self, yes: bool) -> RunOptions {
        self.allow_destructive = yes;
        self
    }

    /// Trace the block device under each job (`--trace`).
    pub fn trace(mut self, yes: bool) -> RunOptions {
        self.trace = yes;
        self
    }
}

impl Jobs {
    /// Run the jobs with [`RunOptions::default`].
    pub fn run(&self) -> Result<RunResult> {
        self.run_with(&RunOptions::default())
    }

    /// Run the jobs and return what they measured, in fio's JSON shape plus
    /// iolab's `iolab` objects. A job that failed part-way is in the result
    /// with its `error` (errno) and `iolab.engine.error_message`; an error
    /// here means the run could not start or finish at all.
    ///
    /// The calling thread blocks until every job is done. No signal handler
    /// is installed and nothing exits the process: a caller that wants
    /// Ctrl-C to end a run early installs its own handler.
    pub fn run_with(&self, opts: &RunOptions) -> Result<RunResult> {
        clock::init();
        let plan = &self.plan;
        let engine = EngineOptions {
            allow_destructive: opts.allow_destructive,
            trace: opts.trace,
            ..Default::default()
        };
        let clock_check = clock::self_check();
        let before = SystemSnapshot::take();
        let groups = run_jobs(&plan.jobs, &engine)?;
        let after = SystemSnapshot::take();
        if plan.flags.bandwidth_log {
            crate::engine::agglog::write(&groups, std::path::Path::new(".")).map_err(|err| {
                Error::Io {
                    what: "--bandwidth-log: agg-*_bw.log in the current directory".into(),
                    err,
                }
            })?;
        }
        let cx = RunContext {
            clock: clock_check,
            before: &before,
            after: &after,
            global_options: &plan.global_options,
            fio_bins: plan.output_format.json_plus,
        };
        Ok(assemble::run_result(&plan.jobs, &groups, &cx))
    }
}

/// A job's headline figures, read from its [`JobResult`]: what most callers
/// print first.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Summary {
    /// Completed I/Os, all directions.
    pub ios: u64,
    /// I/Os per second, all directions.
    pub iops: f64,
    /// Median completion latency (ns) of the busiest direction.
    pub p50_ns: u64,
    /// 99th-percentile completion latency (ns) of the busiest direction.
    pub p99_ns: u64,
    /// The job's threads' user + system CPU time per completed I/O (ns).
    pub cpu_ns_per_io: f64,
}

impl Summary {
    /// The summary of one job. Percentiles are 0 when the job completed no
    /// I/O or its `percentile_list` left out 50 or 99.
    pub fn of(job: &JobResult) -> Summary {
        let dirs = [&job.read, &job.write, &job.trim];
        let ios: u64 = dirs.iter().map(|d| d.total_ios).sum();
        let iops = dirs.iter().map(|d| d.iops).sum();
        let busiest = dirs
            .iter()
            .max_by_key(|d| d.total_ios)
            .expect("three directions");
        // iolab's own percentiles (finer than fio's bins) where the result
        // has them, else the fio object's.
        let name = ["read", "write", "trim"][dirs
            .iter()
            .position(|d| std::ptr::eq(*d, *busiest))
            .unwrap_or(0)];
        let own = job
            .iolab
            .clat_percentile
            .get(name)
            .or(busiest.clat_ns.percentile.as_ref());
        let pct = |p: f64| {
            own.and_then(|l| l.0.iter().find(|(q, _)| (q - p).abs() < 1e-9))
                .map_or(0, |&(_, v)| v)
        };
        let cpu = &job.iolab.cpu;
        Summary {
            ios,
            iops,
            p50_ns: pct(50.0),
            p99_ns: pct(99.0),
            cpu_ns_per_io: if ios == 0 {
                0.0
            } else {
                (cpu.user_ns + cpu.sys_ns) as f64 / ios as f64
            },
        }
    }
}
