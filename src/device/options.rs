//! Each backend's own options (fio's per-engine options, iolab's own), held
//! together as the one value a job carries ([`BackendOptions`], the job's
//! `backend`), and their checks against the job's engine.
//!
//! A backend's options live beside it (`uring/options.rs`, `libaio/options.rs`,
//! `null/options.rs`, or a struct in the backend's file); the option table's
//! setters write into them, `check` refuses what the chosen engine would not
//! use, and the engine's setup reads its backend's part.

use super::engine::Engine;
pub use super::option_facts::{CallFlags, JobFacts, OptionError, OptionNote};
use super::{cpuio, fileops, libaio, mmap, null, psync, uring};

/// Every backend's options as a job set them (defaults are fio's); only the
/// chosen engine's part is used, the checks refuse the others' being set.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct BackendOptions {
    pub flags: CallFlags,
    pub uring: uring::options::UringOptions,
    pub libaio: libaio::options::LibaioOptions,
    pub pvsync2: psync::Pvsync2Options,
    pub mmap: mmap::MmapOptions,
    pub filestat: fileops::FileStatOptions,
    pub cpuio: cpuio::CpuioOptions,
    /// The emulated device's parameters (`null_*`).
    pub null: null::options::NullParams,
}

/// The options each engine owns among fio's per-engine lists (`--enghelp`):
/// one set with an engine that does not own it is refused. Engines in the
/// order an error names them.
const OWNED: &[(Engine, &[&str])] = &[
    (Engine::IoUring, uring::options::OWNED),
    (Engine::Libaio, libaio::options::OWNED),
    (Engine::Pvsync2, psync::PVSYNC2_OWNED),
    (Engine::Mmap, mmap::OWNED),
    (Engine::FileStat, fileops::OWNED),
    (Engine::Cpuio, cpuio::OWNED),
];

/// `ioengine=a, b or c`.
fn engine_names(engines: &[Engine]) -> String {
    let v: Vec<&str> = engines.iter().map(|e| e.fio_name()).collect();
    match v.as_slice() {
        [one] => format!("ioengine={one}"),
        [rest @ .., last] => format!("ioengine={} or {last}", rest.join(", ")),
        [] => String::new(),
    }
}

impl BackendOptions {
    /// Check the options against the job's engine and each other, and derive
    /// what they imply (`hybrid_iopoll` is `hipri` too). First the options
    /// the engine does not have, then each backend's own conflicts. An option
    /// that has no effect in this combination (fio ignores it too) is not an
    /// error: `notes` gets a line saying so.
    pub fn check(
        &mut self,
        job: &JobFacts,
        notes: &mut Vec<OptionNote>,
    ) -> Result<(), OptionError> {
        self.uring.check_engine(job)?;
        // Hybrid IOPOLL is IOPOLL with a kernel sleep first: everything hipri
        // means (O_DIRECT, poll queues, completion=poll) applies to it.
        if self.uring.hybrid_iopoll {
            self.flags.hipri = true;
        }
        if self.flags.hipri && !matches!(job.engine, Engine::IoUring | Engine::Pvsync2) {
            return Err(OptionError::new(
                "hipri",
                format!(
                    "hipri needs ioengine=io_uring or pvsync2, but {}",
                    job.uses()
                ),
            ));
        }
        self.null.check_engine(job)?;
        check_owned(job)?;
        self.null.check()?;
        self.uring.check(job, notes);
        self.pvsync2.check(job, &self.flags, notes);
        if self.flags.atomic
            && !matches!(
                job.engine,
                Engine::Pvsync2 | Engine::IoUring | Engine::Libaio
            )
        {
            return Err(OptionError::new(
                "atomic",
                format!(
                    "atomic=1 sends each write with RWF_ATOMIC, a per-call flag that \
                     ioengine={} cannot carry: use pvsync2, libaio or io_uring",
                    job.engine.fio_name()
                ),
            ));
        }
        self.libaio.check(job, notes)
    }

    /// The job must be opened O_DIRECT (fio: `atomic` implies it).
    pub fn implies_direct(&self) -> bool {
        self.flags.atomic
    }
}

/// Engine options set with an engine that does not own them.
fn check_owned(job: &JobFacts) -> Result<(), OptionError> {
    let mut seen: Vec<&'static str> = Vec::new();
    for opt in OWNED.iter().flat_map(|(_, opts)| opts.iter().copied()) {
        if seen.contains(&opt) {
            continue;
        }
        seen.push(opt);
        let owners: Vec<Engine> = OWNED
            .iter()
            .filter(|(_, opts)| opts.contains(&opt))
            .map(|(e, _)| *e)
            .collect();
        if job.is_set(opt) && !owners.contains(&job.engine) {
            return Err(OptionError::new(
                opt,
                format!(
                    "{opt} is an option of {}, but {}",
                    engine_names(&owners),
                    job.uses()
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts<'a>(engine: Engine, set: &'a [&'static str]) -> JobFacts<'a> {
        JobFacts {
            engine,
            set,
            complete_min: None,
            completion: None,
        }
    }

    #[test]
    fn an_option_names_every_engine_that_owns_it() {
        let e = check_owned(&facts(Engine::Psync, &["nowait"])).unwrap_err();
        assert_eq!(e.option, "nowait");
        assert_eq!(
            e.problem,
            "nowait is an option of ioengine=io_uring, libaio or pvsync2, but the job uses \
             ioengine=psync"
        );
        assert!(check_owned(&facts(Engine::Libaio, &["nowait"])).is_ok());
    }

    #[test]
    fn hybrid_iopoll_implies_hipri() {
        let mut o = BackendOptions::default();
        o.uring.hybrid_iopoll = true;
        o.check(&facts(Engine::IoUring, &["hybrid_iopoll"]), &mut vec![])
            .unwrap();
        assert!(o.flags.hipri);
    }
}
