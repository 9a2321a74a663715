//! Parsers of the backends' option values that have a grammar of their own,
//! and the checks of the backends' options on a job: the rules are each
//! backend's (`device::options`), the job says where an option was set.

use super::draft::{Ctx, Draft};
use super::error::JobError;
use super::spec::Engine;
use crate::device::cpuio::CpuMode;
use crate::device::fileops::StatType;
use crate::device::options::JobFacts;
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

impl Draft {
    /// The backends' options against the job's engine and each other
    /// (`device::options`, each backend's rules beside it), and what they
    /// imply for the job (atomic's O_DIRECT, cpuio's think time).
    pub(crate) fn check_backend(&mut self, section_at: &str) -> Result<(), JobError> {
        let set: Vec<&'static str> = self.set.iter().map(|(n, _)| *n).collect();
        let facts = JobFacts {
            engine: self.spec.ioengine,
            set: &set,
            complete_min: self.spec.depth_batch.complete_min,
            completion: self.spec.completion.map(|m| m.name()),
        };
        let mut notes = Vec::new();
        let checked = self.spec.backend.check(&facts, &mut notes);
        for (option, note) in notes {
            self.note(option, note);
        }
        if let Err(e) = checked {
            return Err(JobError::Conflict {
                at: self
                    .set
                    .iter()
                    .find(|(n, _)| *n == e.option)
                    .map_or(section_at, |(_, at)| at.as_str())
                    .to_string(),
                job: self.spec.name.clone(),
                problem: e.problem,
            });
        }
        // fio: atomic implies O_DIRECT.
        if self.spec.backend.implies_direct() {
            self.spec.direct = true;
        }
        Ok(())
    }

    /// What the engines that are not data paths imply for the job: cpuio's
    /// think time.
    pub(crate) fn check_engine(&mut self, section_at: &str) -> Result<(), JobError> {
        if self.spec.ioengine == Engine::Cpuio {
            self.finish_cpuio(section_at)?;
        }
        Ok(())
    }

    /// cpuio: fio requires cpuload, caps it at 100, and paces the cycles with
    /// a think time of `cycle x (100 - load) / load` after each one.
    fn finish_cpuio(&mut self, section_at: &str) -> Result<(), JobError> {
        let s = &mut self.spec;
        if s.backend.cpuio.cpuload == 0 {
            return Err(JobError::Conflict {
                at: section_at.to_string(),
                job: s.name.clone(),
                problem: "ioengine=cpuio needs cpuload= (the percentage of a CPU to use, 1-100)"
                    .into(),
            });
        }
        if s.runtime.is_none() && !s.backend.cpuio.exit_on_io_done {
            return Err(JobError::Conflict {
                at: section_at.to_string(),
                job: s.name.clone(),
                problem: "ioengine=cpuio burns until runtime= ends or, with exit_on_io_done=1, \
                          until the group's I/O jobs end: set one of them"
                    .into(),
            });
        }
        let load = u64::from(s.backend.cpuio.cpuload.min(100));
        let cycle = u64::from(s.backend.cpuio.cpuchunks);
        s.thinktime = Duration::from_micros(cycle * (100 - load) / load);
        s.thinktime_blocks = 1;
        // A burner runs for its time, never out of "blocks": one block of
        // region, passed over and over.
        s.time_based = true;
        Ok(())
    }
}
