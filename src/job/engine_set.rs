//! Parsers and cross-option checks of the engine options (`job::engine_opts`
//! holds their types; kept apart so the job spec does not import the draft).

use super::draft::{Ctx, Draft};
use super::engine_opts::*;
use super::error::JobError;
use super::spec::Engine;
use std::time::Duration;

pub(crate) fn stat_type(c: &Ctx) -> Result<StatType, JobError> {
    Ok(match c.value {
        "stat" => StatType::Stat,
        "lstat" => StatType::Lstat,
        "statx" => StatType::Statx,
        _ => return Err(c.bad(StatType::VALID)),
    })
}

pub(crate) fn cpumode(c: &Ctx) -> Result<CpuMode, JobError> {
    Ok(match c.value {
        "noop" => CpuMode::Noop,
        "qsort" => CpuMode::Qsort,
        _ => return Err(c.bad(CpuMode::VALID)),
    })
}

/// Which engines each engine option belongs to, as fio's `--enghelp` lists them.
const OWNERS: &[(&str, &[Engine])] = &[
    ("sqthread_poll_cpu", &[Engine::IoUring]),
    ("hipri_percentage", &[Engine::Pvsync2]),
    (
        "nowait",
        &[Engine::IoUring, Engine::Libaio, Engine::Pvsync2],
    ),
    ("uncached", &[Engine::IoUring, Engine::Pvsync2]),
    ("nonvectored", &[Engine::IoUring]),
    ("force_async", &[Engine::IoUring]),
    ("cmd_type", &[Engine::IoUring]),
    ("thp", &[Engine::Mmap]),
    ("stat_type", &[Engine::FileStat]),
    ("cpuload", &[Engine::Cpuio]),
    ("cpuchunks", &[Engine::Cpuio]),
    ("cpumode", &[Engine::Cpuio]),
    ("exit_on_io_done", &[Engine::Cpuio]),
];

fn names(engines: &[Engine]) -> String {
    let v: Vec<&str> = engines.iter().map(|e| e.fio_name()).collect();
    match v.as_slice() {
        [one] => format!("ioengine={one}"),
        [rest @ .., last] => format!("ioengine={} or {last}", rest.join(", ")),
        [] => String::new(),
    }
}

impl Draft {
    fn engine_set_at(&self, name: &str) -> Option<&str> {
        self.set
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, at)| at.as_str())
    }

    /// Engine options against the job's engine, and what the engines that
    /// are not data paths imply (cpuio's think time, atomic's O_DIRECT).
    pub(crate) fn check_engine(&mut self, section_at: &str) -> Result<(), JobError> {
        let engine = self.spec.ioengine;
        let conflict = |at: Option<&str>, job: &str, problem: String| JobError::Conflict {
            at: at.unwrap_or(section_at).to_string(),
            job: job.to_string(),
            problem,
        };
        let job = self.spec.name.clone();
        for (opt, owners) in OWNERS {
            if let Some(at) = self.engine_set_at(opt)
                && !owners.contains(&engine)
            {
                return Err(conflict(
                    Some(at),
                    &job,
                    format!(
                        "{opt} is an option of {}, but the job uses ioengine={}",
                        names(owners),
                        engine.fio_name()
                    ),
                ));
            }
        }
        let o = self.spec.engine;
        if o.sqthread_poll_cpu.is_some() && !self.spec.sqthread_poll {
            // fio sets IORING_SETUP_SQ_AFF only with an SQ thread.
            self.spec.engine.sqthread_poll_cpu = None;
            self.note(
                "sqthread_poll_cpu",
                "has no effect: it pins the SQ polling thread, which only sqthread_poll=1 \
                 starts (fio ignores it too)",
            );
        }
        if self.engine_set_at("hipri_percentage").is_some() && !self.spec.hipri {
            self.note(
                "hipri_percentage",
                "has no effect: it is the share of requests sent with RWF_HIPRI when hipri=1, \
                 and no request is polled without it (fio ignores it too)",
            );
        }
        if o.atomic {
            if !matches!(engine, Engine::Pvsync2 | Engine::IoUring | Engine::Libaio) {
                return Err(conflict(
                    self.engine_set_at("atomic"),
                    &job,
                    format!(
                        "atomic=1 sends each write with RWF_ATOMIC, a per-call flag that \
                         ioengine={} cannot carry: use pvsync2, libaio or io_uring",
                        engine.fio_name()
                    ),
                ));
            }
            // fio: atomic implies O_DIRECT.
            self.spec.direct = true;
        }
        if engine == Engine::Cpuio {
            self.finish_cpuio(section_at)?;
        }
        Ok(())
    }

    /// cpuio: fio requires cpuload, caps it at 100, and paces the cycles with
    /// a think time of `cycle x (100 - load) / load` after each one.
    fn finish_cpuio(&mut self, section_at: &str) -> Result<(), JobError> {
        let s = &mut self.spec;
        if s.engine.cpuload == 0 {
            return Err(JobError::Conflict {
                at: section_at.to_string(),
                job: s.name.clone(),
                problem: "ioengine=cpuio needs cpuload= (the percentage of a CPU to use, 1-100)"
                    .into(),
            });
        }
        if s.runtime.is_none() && !s.engine.exit_on_io_done {
            return Err(JobError::Conflict {
                at: section_at.to_string(),
                job: s.name.clone(),
                problem: "ioengine=cpuio burns until runtime= ends or, with exit_on_io_done=1, \
                          until the group's I/O jobs end: set one of them"
                    .into(),
            });
        }
        let load = u64::from(s.engine.cpuload.min(100));
        let cycle = u64::from(s.engine.cpuchunks);
        s.thinktime = Duration::from_micros(cycle * (100 - load) / load);
        s.thinktime_blocks = 1;
        // A burner runs for its time, never out of "blocks": one block of
        // region, passed over and over.
        s.time_based = true;
        Ok(())
    }
}
