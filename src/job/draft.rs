//! A job while its options are applied ([`Draft`]), and one option's value with
//! where it was written ([`Ctx`]): what the option table's setters (`table`),
//! the value parsers (`parse`) and the cross-option checks (`options`) share.

use super::error::JobError;
use super::spec::JobSpec;
use super::units::{self, TimeUnit};

/// A job (or the global defaults) while its options are being applied.
#[derive(Clone, Debug, Default)]
pub(crate) struct Draft {
    pub spec: JobSpec,
    /// Canonical names set explicitly, with where: cross-option checks point there.
    pub(crate) set: Vec<(&'static str, String)>,
    pub(crate) prio: Option<u16>,
    pub(crate) prioclass: Option<u16>,
    /// `filesize=`: each file's size unless `size=` is given.
    pub(crate) filesize: Option<u64>,
    /// `filesize=LOW-HIGH`: the range each file's size is drawn from.
    pub(crate) filesize_range: Option<(u64, u64)>,
    /// Sizes given as a count of zones (`size=4z`), made bytes in
    /// `resolve_zone_counts` once the zone size is known.
    pub(crate) zone_counts: super::zones::ZoneCounts,
    /// Notes of the cross-option checks: (option, the sentence after
    /// "OPTION is accepted, but "), where fio takes a combination silently
    /// and iolab runs it as fio does (`Draft::note`).
    pub(crate) notes: Vec<(&'static str, String)>,
}

impl Draft {
    /// A combination fio accepts silently: iolab runs it as fio does, and
    /// says what happens through the option-notes channel.
    pub(crate) fn note(&mut self, option: &'static str, note: impl Into<String>) {
        self.notes.push((option, note.into()));
    }
}

/// One option's value while it is applied: what the table's setters see.
pub(crate) struct Ctx<'a> {
    pub name: &'static str,
    pub value: &'a str,
    pub at: &'a str,
    /// The section's `kb_base`.
    pub kb: u32,
    /// Written alone (no `=value`) where the option allows that.
    pub bare: bool,
}

impl Ctx<'_> {
    /// The value is wrong: `expected` says what would have been valid (a phrase,
    /// or a parser's error such as [`units::UnitError`], whose message is one).
    pub(crate) fn bad(&self, expected: impl std::fmt::Display) -> JobError {
        JobError::BadValue {
            at: self.at.to_string(),
            option: self.name.to_string(),
            value: self.value.to_string(),
            expected: expected.to_string(),
        }
    }
    pub(crate) fn size(&self) -> Result<u64, JobError> {
        units::parse_bytes(self.value, self.kb).map_err(|e| self.bad(e))
    }
    pub(crate) fn int(&self, min: u64, max: u64) -> Result<u64, JobError> {
        units::parse_int(self.value, self.kb, min, max).map_err(|e| self.bad(e))
    }
    pub(crate) fn boolean(&self) -> Result<bool, JobError> {
        units::parse_bool(self.value).map_err(|e| self.bad(e))
    }
    pub(crate) fn time(&self, unit: TimeUnit, ns: bool) -> Result<std::time::Duration, JobError> {
        units::parse_time(self.value, unit, ns).map_err(|e| self.bad(e))
    }
    pub(crate) fn prob(&self) -> Result<f64, JobError> {
        units::parse_probability(self.value).map_err(|e| self.bad(e))
    }
    pub(crate) fn nonempty(&self) -> Result<String, JobError> {
        if self.value.is_empty() {
            Err(self.bad("a non-empty string"))
        } else {
            Ok(self.value.to_string())
        }
    }
}

/// An fio option the run uses that iolab accepts but runs otherwise than fio
/// (the option table's note), where it was first given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionNote {
    pub at: String,
    pub option: String,
    /// The whole sentence (`OPTION is accepted, but ...`).
    pub note: String,
}

impl std::fmt::Display for OptionNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.note)
    }
}
