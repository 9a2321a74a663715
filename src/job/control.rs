//! fio's job-control and sync options, parsed: when a job starts
//! (`startdelay`), which jobs stop with it (`exitall`, `exit_what`,
//! `exitall_on_error`), which errors it survives (`ignore_error`), per-request
//! priorities (`cmdprio_percentage`, `cmdprio_class`, `cmdprio`) and the syncs
//! beside `fsync=N` (`fdatasync`, `end_fsync`, `fsync_on_close`).
//!
//! The engine side (sleeping the delay, the stop flag, the per-request choice)
//! is `engine::control`.

use std::time::Duration;

use super::draft::{Ctx, Draft};
use super::errno;
use super::error::JobError;
use super::parse;
use super::spec::Engine;
use super::units::{self, TimeUnit};

/// Which jobs `exitall` stops when this job finishes (fio's `exit_what`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExitWhat {
    /// The jobs running beside it (fio: its reporting group; iolab has no
    /// reporting groups inside a stonewall group, so the same as `stonewall`).
    #[default]
    Group,
    /// Every job running now; the next stonewall group still runs.
    Stonewall,
    /// Every job running now, and no later group starts.
    All,
}

impl ExitWhat {
    pub const VALID: &'static str = "group, stonewall or all";

    pub fn name(self) -> &'static str {
        match self {
            ExitWhat::Group => "group",
            ExitWhat::Stonewall => "stonewall",
            ExitWhat::All => "all",
        }
    }
}

/// `ignore_error`: per direction, the errnos a job goes on after. `None` for a
/// direction keeps `continue_on_error`'s own rule (any errno).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IgnoreError {
    pub lists: [Option<Vec<i32>>; 2],
}

/// `cmdprio_percentage` / `cmdprio_class` / `cmdprio`, per direction [read, write].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CmdPrioSpec {
    /// Share of requests (0-100) issued with the priority below; 0 = off.
    pub percentage: [u64; 2],
    /// ioprio class: 1 real-time, 2 best-effort, 3 idle (fio's default: 1).
    pub class: [u64; 2],
    /// Level within the class, 0-7 (fio's default: 0).
    pub level: [u64; 2],
}

impl Default for CmdPrioSpec {
    fn default() -> Self {
        CmdPrioSpec {
            percentage: [0; 2],
            class: [1; 2],
            level: [0; 2],
        }
    }
}

impl CmdPrioSpec {
    pub fn enabled(&self) -> bool {
        self.percentage.iter().any(|&p| p > 0)
    }

    /// The Linux ioprio value (class << 13 | level) of direction `dir`.
    pub fn ioprio(&self, dir: usize) -> u16 {
        ((self.class[dir] as u16) << 13) | self.level[dir] as u16
    }
}

/// Job control: start delay, exit policy, errors to ignore, per-request priority.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ControlSpec {
    /// `startdelay`: [low, high]; a fixed delay has low == high, a range draws
    /// one delay per clone (seeded by `randseed`, so runs repeat).
    pub startdelay: [Duration; 2],
    pub exitall: bool,
    pub exit_what: ExitWhat,
    pub exitall_on_error: bool,
    pub ignore_error: IgnoreError,
    pub cmdprio: CmdPrioSpec,
}

/// Syncs besides `fsync=N`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SyncSpec {
    /// `fdatasync=N`: the job's periodic syncs (spec.fsync) are fdatasync.
    pub datasync: bool,
    /// `end_fsync`: fsync the file once the job's I/O is done.
    pub end_fsync: bool,
    /// `fsync_on_close`: fsync the file when the job closes it.
    pub fsync_on_close: bool,
}

// ---- value parsers (called by the option table) ----

pub(crate) fn startdelay(c: &Ctx) -> Result<[Duration; 2], JobError> {
    const VALID: &str = "a time such as 10 (seconds) or 500ms, or a range such as 1s-5s";
    let parts: Vec<&str> = c.value.split(['-', ':']).map(str::trim).collect();
    let t = |s: &str| units::parse_time(s, TimeUnit::Seconds, false).map_err(|e| c.bad(e));
    match parts.as_slice() {
        [one] => {
            let d = t(one)?;
            Ok([d, d])
        }
        [a, b] if !a.is_empty() && !b.is_empty() => {
            let (a, b) = (t(a)?, t(b)?);
            Ok([a.min(b), a.max(b)])
        }
        _ => Err(c.bad(VALID)),
    }
}

pub(crate) fn exit_what(c: &Ctx) -> Result<ExitWhat, JobError> {
    Ok(match c.value.to_ascii_lowercase().as_str() {
        "group" => ExitWhat::Group,
        "stonewall" => ExitWhat::Stonewall,
        "all" => ExitWhat::All,
        _ => return Err(c.bad(ExitWhat::VALID)),
    })
}

pub(crate) const IGNORE_VALID: &str = "'READ,WRITE,VERIFY' lists of errno names or numbers, each \
     list ':'-separated, e.g. ignore_error=EAGAIN,ENOSPC:122 (iolab takes no VERIFY list: a \
     mismatch is EILSEQ; use continue_on_error=verify)";

pub(crate) fn ignore_error(c: &Ctx) -> Result<IgnoreError, JobError> {
    let lists: Vec<&str> = c.value.split(',').map(str::trim).collect();
    if lists.len() > 3 || lists.get(2).is_some_and(|v| !v.is_empty()) {
        return Err(c.bad(IGNORE_VALID));
    }
    let mut out = IgnoreError::default();
    for (slot, list) in out.lists.iter_mut().zip(&lists) {
        if list.is_empty() {
            continue;
        }
        let mut v = Vec::new();
        for e in list.split(':').map(str::trim) {
            match errno::parse(e) {
                Some(n) => v.push(n),
                None => {
                    return Err(c.bad(format!(
                        "{IGNORE_VALID}; '{e}' is not an errno name (such as ENOSPC) or number"
                    )));
                }
            }
        }
        *slot = Some(v);
    }
    if out.lists.iter().all(Option::is_none) {
        return Err(c.bad(IGNORE_VALID));
    }
    Ok(out)
}

pub(crate) fn cmdprio_field(
    c: &Ctx,
    current: [u64; 2],
    min: u64,
    max: u64,
) -> Result<[u64; 2], JobError> {
    parse::per_dir(c, current, |p| units::parse_int(p, c.kb, min, max))
}

// ---- cross-option checks ----

impl Draft {
    fn control_set_at(&self, name: &str) -> Option<&str> {
        self.set
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, at)| at.as_str())
    }

    /// Rules between the options of this module and the rest of the job, and
    /// what they derive (`fdatasync=N` becomes the job's periodic sync).
    pub(crate) fn check_control(&mut self, section_at: &str) -> Result<(), JobError> {
        let conflict = |at: Option<&str>, job: &str, problem: String| JobError::Conflict {
            at: at.unwrap_or(section_at).to_string(),
            job: job.to_string(),
            problem,
        };
        let name = self.spec.name.clone();
        if let Some(at) = self.control_set_at("fdatasync") {
            if self.control_set_at("fsync").is_some() && self.spec.fsync > 0 {
                return Err(conflict(
                    Some(at),
                    &name,
                    "fsync and fdatasync both set a periodic sync: iolab issues one kind per \
                     job; keep one of them"
                        .into(),
                ));
            }
            self.spec.fsync = self.fdatasync;
            self.spec.syncs.datasync = self.fdatasync > 0;
        }
        let s = &self.spec;
        if s.ioengine == Engine::Null {
            for opt in ["end_fsync", "fsync_on_close"] {
                if let Some(at) = self.control_set_at(opt) {
                    return Err(conflict(
                        Some(at),
                        &name,
                        format!(
                            "{opt} syncs the job's file, and ioengine=null has none: use a file \
                             with ioengine=psync, io_uring or another file engine"
                        ),
                    ));
                }
            }
        }
        if let Some(at) = self.control_set_at("exit_what")
            && !s.control.exitall
        {
            return Err(conflict(
                Some(at),
                &name,
                "exit_what says which jobs exitall stops, and this job does not set exitall: \
                 add exitall=1 or drop exit_what"
                    .into(),
            ));
        }
        let cp = &s.control.cmdprio;
        if !cp.enabled() {
            for opt in ["cmdprio_class", "cmdprio"] {
                if let Some(at) = self.control_set_at(opt) {
                    return Err(conflict(
                        Some(at),
                        &name,
                        format!(
                            "{opt} gives the priority of the share of requests \
                             cmdprio_percentage chooses: set cmdprio_percentage=1-100 too"
                        ),
                    ));
                }
            }
        } else if !matches!(s.ioengine, Engine::IoUring | Engine::Libaio) {
            return Err(conflict(
                self.control_set_at("cmdprio_percentage"),
                &name,
                format!(
                    "cmdprio_percentage sets a priority per request, which only io_uring and \
                     libaio requests carry; the job uses ioengine={}: use ioengine=io_uring or \
                     libaio, or prio/prioclass for the whole job",
                    s.ioengine.fio_name()
                ),
            ));
        }
        // fio's rule: an ignore_error list acts only for the directions
        // continue_on_error lets a job go on in.
        let coe = s.continue_on_error;
        for (dir, list) in s.control.ignore_error.lists.iter().enumerate() {
            let covered = match dir {
                0 => coe.covers_io(crate::request::Op::Read),
                _ => coe.covers_io(crate::request::Op::Write),
            };
            if list.is_some() && !covered {
                let d = if dir == 0 { "read" } else { "write" };
                return Err(conflict(
                    self.control_set_at("ignore_error"),
                    &name,
                    format!(
                        "ignore_error lists {d} errors, but continue_on_error={} stops the job \
                         at any {d} error (fio's rule: the list only acts where \
                         continue_on_error goes on): add continue_on_error={d} (or io, all)",
                        coe.name()
                    ),
                ));
            }
        }
        Ok(())
    }
}
