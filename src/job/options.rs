//! Applying options to a job: each `key[=value]` is looked up in the option
//! table ([`super::table`]), its value parsed by the entry's setter, and the
//! finished draft checked across options.

use super::draft::{Ctx, Draft};
use super::error::JobError;
use super::spec::*;
use super::table::{self, Arity, COMMAND_LINE_ONLY, Status};

#[cfg(any(test, feature = "testing"))]
pub use super::parse::verify_pattern as parse_verify_pattern;

pub(crate) enum Lookup {
    Known(&'static table::OptionDef),
    CommandLineOnly,
    Unsupported(&'static str),
    Unknown(Option<&'static str>),
}

pub(crate) fn lookup(key: &str) -> Lookup {
    if let Some(o) = table::find(key) {
        return match o.status {
            Status::Refused(why) => Lookup::Unsupported(why),
            _ => Lookup::Known(o),
        };
    }
    let dashed = key.replace('_', "-");
    if COMMAND_LINE_ONLY.contains(&dashed.as_str()) {
        return Lookup::CommandLineOnly;
    }
    Lookup::Unknown(table::closest(key))
}

/// Whether the command line should give `key` the next argument as its value.
pub(crate) fn takes_value(key: &str) -> bool {
    matches!(lookup(key), Lookup::Known(o) if o.arity == Arity::Value)
}

/// One `key[=value]` as written, with where it was written.
#[derive(Clone, Debug)]
pub(crate) struct RawOpt {
    pub key: String,
    pub value: Option<String>,
    pub at: String,
    /// Added to value errors, e.g. which `${VAR}` expanded to nothing.
    pub note: Option<String>,
}

impl Draft {
    /// Applies one option. `kb_base` must already hold this section's value
    /// (fio applies kb_base before the other options of a section).
    pub(crate) fn apply(&mut self, opt: &RawOpt) -> Result<(), JobError> {
        self.apply_inner(opt).map_err(|e| match (e, &opt.note) {
            (
                JobError::BadValue {
                    at,
                    option,
                    value,
                    expected,
                },
                Some(note),
            ) => JobError::BadValue {
                at,
                option,
                value,
                expected: format!("{expected} (note: {note})"),
            },
            (
                JobError::MissingValue {
                    at,
                    option,
                    expected,
                },
                Some(note),
            ) => JobError::MissingValue {
                at,
                option,
                expected: format!("{expected} (note: {note})"),
            },
            (e, _) => e,
        })
    }

    fn apply_inner(&mut self, opt: &RawOpt) -> Result<(), JobError> {
        let key = opt.key.trim();
        let def = match lookup(key) {
            Lookup::Known(def) => def,
            Lookup::CommandLineOnly => {
                return Err(JobError::WrongPlace {
                    at: opt.at.clone(),
                    option: key.to_string(),
                    reason: format!(
                        "it applies to the whole run and is only accepted on the command line \
                         (--{}=...)",
                        key.replace('_', "-")
                    ),
                });
            }
            Lookup::Unsupported(why) => {
                return Err(JobError::Unsupported {
                    at: opt.at.clone(),
                    option: key.to_string(),
                    reason: why.to_string(),
                });
            }
            Lookup::Unknown(suggestion) => {
                return Err(JobError::UnknownOption {
                    at: opt.at.clone(),
                    option: key.to_string(),
                    suggestion: suggestion.map(str::to_string),
                });
            }
        };
        let value = match (&opt.value, def.arity) {
            (Some(v), _) => v.trim(),
            (None, Arity::Flag) => "1",
            (None, Arity::Bare) => "",
            (None, Arity::Value) => {
                return Err(JobError::MissingValue {
                    at: opt.at.clone(),
                    option: def.name.to_string(),
                    expected: def.expected.to_string(),
                });
            }
        };
        let c = Ctx {
            name: def.name,
            value,
            at: &opt.at,
            kb: self.spec.kb_base,
            bare: opt.value.is_none(),
        };
        // Every entry that is not refused has a setter (a table test checks it).
        if let Some(set) = def.set {
            set(self, &c)?;
        }
        self.set.retain(|(n, _)| *n != def.name);
        self.set.push((def.name, opt.at.clone()));
        Ok(())
    }

    fn set_at(&self, name: &str) -> Option<&str> {
        self.set
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, at)| at.as_str())
    }

    /// Cross-option checks and derived values; turns the draft into a job.
    pub(crate) fn finish(
        mut self,
        section_at: &str,
    ) -> Result<(JobSpec, Vec<super::draft::OptionNote>), JobError> {
        let conflict = |at: Option<&str>, spec: &JobSpec, problem: String| JobError::Conflict {
            at: at.unwrap_or(section_at).to_string(),
            job: spec.name.clone(),
            problem,
        };
        // The backends' options first: an option of another engine is the
        // likeliest mistake, and its message says which engine has it.
        self.check_backend(section_at)?;
        self.resolve_zone_counts(section_at)?;
        let s = &self.spec;
        if s.scheduler != SchedKind::Laq
            && let Some((n, at)) = self
                .set
                .iter()
                .find(|(n, _)| matches!(*n, "ois_max" | "ois_min" | "t_wait"))
        {
            return Err(conflict(
                Some(at),
                s,
                format!("{n} only applies to iosched=laq"),
            ));
        }
        if self.set_at("ois_min").is_none() {
            self.spec.laq.ois_min = self.spec.laq.ois_max / 2;
        }
        let s = &self.spec;
        if s.laq.ois_min > s.laq.ois_max {
            return Err(conflict(
                self.set_at("ois_min"),
                s,
                format!(
                    "ois_min ({}) is larger than ois_max ({})",
                    s.laq.ois_min, s.laq.ois_max
                ),
            ));
        }
        // A filesize range, or filesize with size=N%: each file's size is
        // settled when the job starts (fio draws it then, from the job's
        // seed), so size= stays the job's own (a limit on its I/O when
        // smaller than the files hold, as fio's).
        let percent = self.spec.size_percent;
        let per_file = match (self.filesize_range, self.filesize, percent) {
            (Some((low, high)), _, _) => Some((low, high)),
            (None, Some(fs), Some(_)) => Some((fs, fs)),
            _ => None,
        };
        if let Some((low, high)) = per_file {
            self.spec.files.sizes = Some(super::files::FileSizes {
                low,
                high,
                percent: percent.filter(|&p| p != 100),
            });
            if percent.is_some() {
                self.spec.size = None;
                self.spec.size_percent = None;
            }
        } else if let Some(fs) = self.filesize {
            let s = &self.spec;
            let files = fs.saturating_mul(u64::from(s.files.nrfiles));
            match s.size {
                None => self.spec.size = Some(fs),
                Some(b) if b == fs => {}
                // size = every file's bytes (nrfiles files of filesize each).
                Some(b) if b == files => {}
                // fio's HOWTO (filesize): "size becomes merely the default for
                // io_size (and has no effect if io_size is set explicitly)".
                // The files are the region. fio clamps a size above what the
                // files hold to their total (filesize=1m size=4m reads 1 MiB,
                // checked with fio 3.33), so only a smaller size limits the I/O.
                Some(b) => {
                    self.spec.size = Some(files);
                    if b < files && self.spec.io_size.is_none() {
                        self.spec.io_size = Some(b);
                    }
                }
            }
        }
        self.check_verify(section_at)?;
        let s = &self.spec;
        if let Some(problem) = super::verify_opts::fill_device_problem(s) {
            return Err(conflict(self.set_at("fill_device"), s, problem));
        }
        if s.io_timeout.is_some() && s.ioengine != Engine::Null {
            return Err(conflict(
                self.set_at("io_timeout"),
                s,
                format!(
                    "io_timeout needs ioengine=null (the engine aborts a hung request there); \
                     with ioengine={} a request cannot be cancelled yet: psync performs the I/O \
                     inside the system call and the io_uring backend has no cancellation",
                    s.ioengine.fio_name()
                ),
            ));
        }
        if s.backend.null.faults.hang_rate > 0.0 && s.io_timeout.is_none() {
            return Err(conflict(
                self.set_at("null_hang_rate"),
                s,
                "null_hang_rate makes requests that never complete: set io_timeout= (e.g. \
                 io_timeout=10ms) so the engine aborts them and the job can end"
                    .to_string(),
            ));
        }
        self.check_engine(section_at)?;
        self.check_placement(section_at)?;
        self.check_control(section_at)?;
        self.check_dedupe(section_at)?;
        self.check_random_and_rate(section_at)?;
        self.check_files(section_at)?;
        self.check_log_epoch();
        self.check_zones(section_at)?;
        self.check_target(section_at)?;
        self.check_iolog(section_at)?;
        // A log option written alone takes the job's name as its prefix.
        self.spec.logs.name_bare_prefixes(&self.spec.name);
        self.check_steady_and_lat_target();
        // Linux ioprio: class in the top 3 bits of 16, level below. A level alone
        // means best-effort, as fio does.
        let class = match (self.prioclass, self.prio) {
            (Some(c), _) => c,
            (None, Some(_)) => 2,
            (None, None) => 0,
        };
        self.spec.ioprio = if class == 0 {
            0
        } else {
            (class << 13) | self.prio.unwrap_or(0)
        };
        let notes = self
            .notes
            .iter()
            .map(|(option, note)| super::draft::OptionNote {
                at: self.set_at(option).unwrap_or(section_at).to_string(),
                option: (*option).to_string(),
                note: format!("{option} is accepted, but {note}"),
            })
            .collect();
        Ok((self.spec, notes))
    }
}

impl Draft {
    /// Cross-option rules of thread placement: one way to choose CPUs per job, and
    /// no option that would have nothing to act on.
    fn check_placement(&self, section_at: &str) -> Result<(), JobError> {
        let s = &self.spec;
        let conflict = |opt: &str, problem: String| JobError::Conflict {
            at: self.set_at(opt).unwrap_or(section_at).to_string(),
            job: s.name.clone(),
            problem,
        };
        if self.set_at("cpus_allowed").is_some() && self.set_at("cpumask").is_some() {
            return Err(conflict(
                "cpumask",
                "cpumask and cpus_allowed both set the job's CPUs: keep one".to_string(),
            ));
        }
        let pinned = ["cpus_allowed", "cpumask"]
            .into_iter()
            .find(|o| self.set_at(o).is_some());
        if let (Some(p), Some(pin)) = (s.placement, pinned) {
            return Err(conflict(
                "placement",
                format!(
                    "placement={p} chooses the job's CPUs itself, and {pin} fixes them: \
                     keep one"
                ),
            ));
        }
        if self.set_at("balance_interval").is_some()
            && s.placement != Some(crate::placement::Policy::Balance)
        {
            return Err(conflict(
                "balance_interval",
                "balance_interval only applies with placement=balance (the live balancer)"
                    .to_string(),
            ));
        }
        // cpus_allowed_policy without a CPU list: fio 3.33 ignores it (the job
        // may use every CPU), and so does iolab.
        if self.set_at("corunner_kernel").is_some() && s.corunners == 0 {
            return Err(conflict(
                "corunner_kernel",
                "corunner_kernel only applies with corunners=N (N > 0)".to_string(),
            ));
        }
        Ok(())
    }

    /// Cross-option rules of data verification.
    fn check_verify(&mut self, section_at: &str) -> Result<(), JobError> {
        let v = &mut self.spec.verify;
        // fio: a pattern alone asks for pattern verification.
        if v.kind.is_none() && !v.pattern.is_empty() && self.set.iter().all(|(n, _)| *n != "verify")
        {
            v.kind = Some(VerifyKind::PatternHeader);
        }
        if v.kind.is_some() {
            super::verify_opts::fit_interval(&mut self.spec);
        }
        if self.spec.verify.kind.is_none() {
            // verify_only without a checksum: fio runs neither the writes nor
            // a check, so the job measures nothing of what was asked.
            if let Some(at) = self.set_at("verify_only") {
                return Err(JobError::Conflict {
                    at: at.to_string(),
                    job: self.spec.name.clone(),
                    problem: "verify_only has no effect without verify= (a checksum such as \
                              crc32c or md5, meta or pattern): fio would then neither write nor \
                              check anything"
                        .into(),
                });
            }
            // fio takes these without verify= and does nothing with them
            // (job templates often carry do_verify=0 or verify_fatal=0).
            for opt in [
                "do_verify",
                "verify_fatal",
                "verify_backlog",
                "verify_interval",
                "verify_offset",
                "verify_dump",
            ] {
                if self.set_at(opt).is_some() {
                    self.note(
                        opt,
                        "it has no effect without verify= (a checksum such as crc32c or md5, \
                         meta or pattern), as in fio",
                    );
                }
            }
            return Ok(());
        }
        let s = &self.spec;
        let conflict = |name: &str, problem: String| JobError::Conflict {
            at: self
                .set
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(section_at, |(_, at)| at.as_str())
                .to_string(),
            job: s.name.clone(),
            problem,
        };
        let kind = s.verify.kind.expect("checked above");
        if kind == VerifyKind::Pattern && s.verify.pattern.is_empty() {
            return Err(conflict(
                "verify",
                "verify=pattern needs verify_pattern= (e.g. verify_pattern=0xdeadbeef)".into(),
            ));
        }
        if s.ioengine == Engine::Null && !s.backend.null.backing_mem {
            return Err(conflict(
                "verify",
                "verify on ioengine=null needs null_backing=mem: without a memory image the \
                 emulated device returns no data to check"
                    .into(),
            ));
        }
        if s.rw.dir.issues()[2] {
            return Err(conflict(
                "verify",
                format!(
                    "verify checks what a job writes; rw={} trims, and iolab does not verify \
                     trims (fio's trim_verify_zero): verify a write job, then trim",
                    s.rw.fio_name()
                ),
            ));
        }
        if s.rw.dir == Direction::Read && s.verify.backlog > 0 {
            return Err(conflict(
                "verify_backlog",
                "verify_backlog applies to write jobs; a read job checks every block it reads"
                    .into(),
            ));
        }
        let min = s.bs[0].min().min(s.bs[1].min());
        if (min as usize) < s.verify.min_block() {
            return Err(conflict(
                "verify",
                format!(
                    "verify={} needs blocks of at least {} bytes (each carries a {}-byte header); the smallest block size is {min}",
                    kind.name(),
                    s.verify.min_block(),
                    s.verify.header_len()
                ),
            ));
        }
        if let Some(problem) = super::verify_opts::interval_problem(s) {
            return Err(conflict("verify_interval", problem));
        }
        if let Some(problem) = super::verify_opts::offset_problem(s) {
            return Err(conflict("verify_offset", problem));
        }
        Ok(())
    }
}

/// The supported options and their aliases, for docs and `--help`-like listings.
#[cfg(any(test, feature = "testing"))]
pub fn supported_options() -> impl Iterator<Item = (&'static str, &'static [&'static str])> {
    table::OPTIONS
        .iter()
        .filter(|o| !matches!(o.status, Status::Refused(_)))
        .map(|o| (o.name, o.aliases))
}

/// fio options iolab refuses, with the reason.
#[cfg(any(test, feature = "testing"))]
pub fn unsupported_options() -> Vec<(&'static str, &'static str)> {
    table::OPTIONS
        .iter()
        .filter_map(|o| match o.status {
            Status::Refused(why) => Some((o.name, why)),
            _ => None,
        })
        .collect()
}
