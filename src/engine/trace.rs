//! `iolab run --trace`, the run side: block tracing of the devices under a
//! group's jobs from before the workers start until after they end, then the join
//! of each job's user timestamps (the log [`crate::engine::hooks`] keeps per
//! worker) with its device's requests into btt's stage table and the user / block
//! layer / driver+device / completion-delivery split (study 002): a typed
//! `report::trace::JobTrace` per job, which report renders.
//!
//! The hooks (hot path) are a file of their own so that the worker, which calls
//! them, does not depend on the tracer, which depends on worker set-up.

use std::collections::HashMap;
use std::path::Path;

use crate::engine::error::{EngineError, Result};

use crate::engine::hooks::{LOG_CAPACITY, StreamLog};
use crate::engine::setup::{Prepared, label};
use crate::engine::{EngineOptions, JobRun};
use crate::job::JobSpec;
use crate::measure::blktrace::{self, BlockTrace, BlockTraceOptions, UserIo};
use crate::measure::clock;
use crate::report::trace::{JobTrace, SamplingReport, TraceJoin};
use crate::sys::fiemap::{self, Extent};

/// How a job's file offsets become byte offsets on the traced device.
#[derive(Clone, Debug)]
enum Mapping {
    /// The job addresses the device itself.
    Device,
    /// A file: its extents (logical, physical, length, unwritten), sorted.
    File(Vec<Extent>),
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
pub struct GroupTracer {
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
) -> Result<Option<GroupTracer>> {
    if opts.alloc_per_request > 0 {
        for p in prepared.iter_mut() {
            let slots = p.worker.slots_free().1;
            p.worker.trace.enable_alloc(slots, opts.alloc_per_request);
        }
    }
    if !opts.trace {
        return Ok(None);
    }
    let mut t = GroupTracer {
        devices: Vec::new(),
        by_job: HashMap::new(),
    };
    for p in prepared.iter_mut() {
        let job = &jobs[p.placed[0].job];
        let Some(target) = &p.target else {
            return Err(EngineError::TraceNull { job: label(job) });
        };
        let (major, minor, mapping) = match target.kind {
            crate::device::target::TargetKind::BlockDevice => {
                let (ma, mi) =
                    crate::sys::blockdev::block_dev_numbers(&target.path).map_err(|err| {
                        EngineError::TraceDevice {
                            job: label(job),
                            err,
                        }
                    })?;
                (ma, mi, Mapping::Device)
            }
            crate::device::target::TargetKind::File => {
                use std::os::unix::fs::MetadataExt;
                let md = target
                    .file
                    .metadata()
                    .map_err(|err| EngineError::TraceStat {
                        job: label(job),
                        err,
                    })?;
                let ex = fiemap::extents(&target.file).map_err(|err| EngineError::TraceFiemap {
                    job: label(job),
                    path: target.path.clone(),
                    err,
                })?;
                (
                    libc::major(md.dev()),
                    libc::minor(md.dev()),
                    Mapping::File(ex),
                )
            }
        };
        let Ok(dev) = crate::sys::blockdev::BlockDev::from_dev(major, minor) else {
            return Err(EngineError::TraceNotBlock {
                job: label(job),
                path: target.path.clone(),
                major,
                minor,
            });
        };
        if dev.partition {
            return Err(EngineError::TracePartition {
                job: label(job),
                path: target.path.clone(),
                major,
                minor,
            });
        }
        let name = dev.name;
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
    let tfs = crate::measure::tracefs::Tracefs::open().map_err(EngineError::TraceMount)?;
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
            .map_err(|err| EngineError::TraceStart {
                dev: d.name.clone(),
                err: Box::new(err),
            })?,
        );
    }
    Ok(Some(t))
}

impl GroupTracer {
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
                let v = JobTrace::join(&TraceJoin {
                    device: &d.name,
                    clock: trace_clock,
                    job: &jobs[j].name,
                    file_extents: match mapping {
                        Mapping::Device => None,
                        Mapping::File(ex) => Some(ex.len()),
                    },
                    direct: *direct,
                    btt: &btt,
                    matched: &st,
                    breakdown: &b,
                    not_logged: dropped,
                    log_capacity: LOG_CAPACITY,
                    unmapped,
                    sampling: SamplingReport::of(&res, unsampled),
                });
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

/// The device byte offset a file offset maps to (tests, tools).
pub fn device_offset(path: &Path, off: u64) -> Result<Option<u64>> {
    let f = std::fs::File::open(path).map_err(|err| EngineError::Open {
        path: path.to_path_buf(),
        err,
    })?;
    Ok(Mapping::File(fiemap::extents(&f)?).map(off))
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
}
