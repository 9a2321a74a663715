//! Counting io_uring requests punted to io-wq workers.
//!
//! A request is punted when io_uring cannot issue it without blocking (the file or
//! device lacks NOWAIT support, as zram does, or a non-blocking attempt returned
//! EAGAIN) and hands it to an `iou-wrk-<tid>` kernel worker thread instead: study
//! 000's asynchronous model, happening inside the kernel. The kernel announces each
//! punt with the `io_uring:io_uring_queue_async_work` tracepoint, fired in the
//! context of the task that submits (the owner thread, or the SQPOLL thread). We
//! enable that one event in a tracefs instance of our own, filtered to those
//! thread ids, and read the per-CPU event counts at the end; nothing is parsed and
//! the submit path is untouched. Where tracefs is unavailable the count is reported
//! as unavailable with the reason, never as zero.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

const EVENT: &str = "events/io_uring/io_uring_queue_async_work";
/// Instance names are `iolab-punt-<pid>-<seq>`, so leftovers of dead processes
/// (killed before their destructors ran) can be recognised and removed.
const PREFIX: &str = "iolab-punt-";

/// Remove punt-counting instances whose process no longer exists.
fn sweep_stale(instances: &Path) {
    let Ok(dir) = fs::read_dir(instances) else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::write(e.path().join(EVENT).join("enable"), "0");
            let _ = fs::remove_dir(e.path());
        }
    }
}

/// How many requests were punted to io-wq, or why that cannot be known here.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PuntCount {
    Counted(u64),
    Unavailable(String),
}

/// A tracefs instance counting `io_uring_queue_async_work` for some thread ids.
#[derive(Debug)]
pub(crate) struct PuntTrace {
    dir: PathBuf,
}

/// Why punts cannot be counted here.
// The io::Error is in the message and deliberately not a `source`: error chains
// printed with `{:#}` would say it twice.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PuntError {
    #[error(
        "punts are counted only with count_punts=1 (a tracepoint that costs each punt about 0.5 us of CPU)"
    )]
    NotAsked,
    #[error("tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing as root)")]
    NoTracefs,
    #[error("{}/{EVENT} is missing: this kernel lacks io_uring tracepoints", root.display())]
    NoEvent { root: PathBuf },
    #[error("creating tracefs instance {}: {err}{hint}", dir.display())]
    CreateInstance {
        dir: PathBuf,
        err: std::io::Error,
        hint: &'static str,
    },
    #[error("{}: {err}", path.display())]
    Io { path: PathBuf, err: std::io::Error },
    #[error("{}: no entries/overrun lines", path.display())]
    NoStats { path: PathBuf },
}

fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> PuntError + '_ {
    move |err| PuntError::Io {
        path: path.to_path_buf(),
        err,
    }
}

fn tracefs_root() -> Result<PathBuf, PuntError> {
    for root in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        if Path::new(root).join("instances").is_dir() {
            return Ok(PathBuf::from(root));
        }
    }
    Err(PuntError::NoTracefs)
}

fn write(path: &Path, value: &str) -> Result<(), PuntError> {
    fs::write(path, value).map_err(io_at(path))
}

impl PuntTrace {
    /// Start counting punts submitted by any of `tids`.
    pub(crate) fn start(tids: &[i32]) -> Result<PuntTrace, PuntError> {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let root = tracefs_root()?;
        if !root.join(EVENT).is_dir() {
            return Err(PuntError::NoEvent { root });
        }
        sweep_stale(&root.join("instances"));
        let name = format!(
            "{PREFIX}{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let dir = root.join("instances").join(name);
        fs::create_dir(&dir).map_err(|err| {
            let hint = if err.kind() == std::io::ErrorKind::PermissionDenied {
                " (needs root)"
            } else {
                ""
            };
            PuntError::CreateInstance {
                dir: dir.clone(),
                err,
                hint,
            }
        })?;
        // From here on the instance exists, so Drop must remove it on any error.
        let t = PuntTrace { dir };
        // Only counts are read, so the smallest per-CPU buffer suffices: overruns
        // are counted too.
        write(&t.dir.join("buffer_size_kb"), "4")?;
        t.set_tids(tids)?;
        write(&t.dir.join(EVENT).join("enable"), "1")?;
        Ok(t)
    }

    /// Count punts of these thread ids from now on (the filter replaces the old one).
    pub(crate) fn set_tids(&self, tids: &[i32]) -> Result<(), PuntError> {
        let filter = tids
            .iter()
            .map(|t| format!("common_pid == {t}"))
            .collect::<Vec<_>>()
            .join(" || ");
        write(&self.dir.join(EVENT).join("filter"), &filter)
    }

    /// Events recorded so far: per CPU, those still in the buffer plus overruns.
    pub(crate) fn count(&self) -> Result<u64, PuntError> {
        let per_cpu = self.dir.join("per_cpu");
        let entries = fs::read_dir(&per_cpu).map_err(io_at(&per_cpu))?;
        let mut total = 0u64;
        for cpu in entries.flatten() {
            let stats = cpu.path().join("stats");
            let text = fs::read_to_string(&stats).map_err(io_at(&stats))?;
            total += parse_stats(&text).ok_or(PuntError::NoStats { path: stats })?;
        }
        Ok(total)
    }
}

/// `entries` + `overrun` from a per-CPU `stats` file.
fn parse_stats(text: &str) -> Option<u64> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<u64>().ok())
    };
    Some(field("entries:")? + field("overrun:")?)
}

impl Drop for PuntTrace {
    fn drop(&mut self) {
        let _ = fs::write(self.dir.join(EVENT).join("enable"), "0");
        // rmdir fails only if a file of the instance is still open, which we never
        // leave so; nothing more can be done in a destructor.
        let _ = fs::remove_dir(&self.dir);
    }
}

/// Thread ids in this process whose `comm` equals `name`.
pub(crate) fn threads_named(name: &str) -> Vec<i32> {
    let Ok(tasks) = fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| {
            let tid: i32 = t.file_name().to_str()?.parse().ok()?;
            let comm = fs::read_to_string(t.path().join("comm")).ok()?;
            (comm.trim_end() == name).then_some(tid)
        })
        .collect()
}

pub(crate) fn gettid() -> i32 {
    // SAFETY: gettid cannot fail.
    unsafe { libc::gettid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_sum_entries_and_overrun() {
        let text = "entries: 3\noverrun: 4\ncommit overrun: 0\nbytes: 96\n";
        assert_eq!(parse_stats(text), Some(7));
        assert_eq!(parse_stats("bytes: 1\n"), None);
    }
}
