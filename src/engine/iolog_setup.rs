//! fio's I/O replay options, set up before the clock starts: the log a clone
//! replays (`read_iolog`, merged first with `merge_blktrace_file`), read whole
//! into a `workload::replay::Trace`; and the iolog it writes (`write_iolog`)
//! as a `measure::iolog::trace_log::TracePlan`.

use std::path::{Path, PathBuf};

use crate::engine::error::{EngineError, Result, label};
use crate::job::JobSpec;
use crate::measure::iolog::trace_log::TracePlan;
use crate::workload::replay::{self, ReplayOptions, Trace};

/// The log clone `jobnum` of `job` replays, read and checked; None when the
/// job replays nothing.
pub fn load_replay(job: &JobSpec, jobnum: u32) -> Result<Option<Trace>> {
    let l = &job.iolog;
    let err = |err| EngineError::Replay {
        job: label(job),
        err,
    };
    let path = match &l.merge_file {
        Some(out) => {
            let inputs: Vec<PathBuf> = l.read_names().into_iter().map(PathBuf::from).collect();
            replay::blktrace::merge(&inputs, &l.merge_scalars, &l.merge_iters, Path::new(out))
                .map_err(err)?;
            PathBuf::from(out)
        }
        None => match l.read_for_clone(jobnum) {
            Some(p) => PathBuf::from(p),
            None => return Ok(None),
        },
    };
    let trace = replay::load(&path, &ReplayOptions::from_spec(l)).map_err(err)?;
    Ok(Some(trace))
}

/// The files a replaying worker opens: the log's, in its order (the
/// requests carry indexes into them).
pub fn replay_paths(trace: &Trace) -> Vec<PathBuf> {
    trace.files.clone()
}

/// The bytes a replay needs of its files: to the end of its furthest I/O
/// (a file that is missing or shorter is laid out to there, as fio sizes a
/// replay by its log); None where the target is a block device or already
/// long enough (then the whole of it).
pub fn replay_size(trace: &Trace) -> Option<u64> {
    let end = trace.file_ends().into_iter().max().unwrap_or(0);
    let short = trace.files.iter().any(|p| match std::fs::metadata(p) {
        Ok(m) => {
            use std::os::unix::fs::FileTypeExt;
            !m.file_type().is_block_device() && m.len() < end
        }
        Err(_) => true,
    });
    short.then_some(end)
}

/// The iolog clone `jobnum` of `job` writes, naming its files as the job
/// named them (`files`); None without `write_iolog`.
pub fn trace_plan(job: &JobSpec, files: &[PathBuf]) -> Option<TracePlan> {
    let path = job.iolog.write.as_ref()?;
    Some(TracePlan {
        job: job.name.clone(),
        path: PathBuf::from(path),
        files: files.iter().map(|p| p.display().to_string()).collect(),
    })
}
