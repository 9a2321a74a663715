//! fio's options about a job's target beyond the file set (`job::files`):
//! how its region is placed when given as a share of the target
//! (`offset_align`, `io_size=N%`, `offset_increment=N%`), the hints given to the
//! kernel about it (`fadvise_hint`, `write_hint`), the per-file locks between
//! jobs (`lockfile`), zone limits (`job_max_open_zones`, `zonecapacity`,
//! `ignore_zone_limits`) and `bs_unaligned`: value parsers, setters and the
//! checks between them (their types: `job::target`).

use super::draft::{Ctx, Draft};
use super::error::JobError;
use super::target::{Fadvise, LockFile};

pub(crate) fn set_invalidate(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.target.invalidate = c.boolean()?;
    Ok(())
}

pub(crate) fn set_fadvise(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.target.fadvise = match c.value.to_ascii_lowercase().as_str() {
        "0" => Fadvise::None,
        "1" => Fadvise::Pattern,
        "sequential" => Fadvise::Sequential,
        "random" => Fadvise::Random,
        _ => return Err(c.bad(Fadvise::VALID)),
    };
    Ok(())
}

pub(crate) const WRITE_HINT_VALID: &str = "none, short, medium, long or extreme";

pub(crate) fn set_write_hint(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    // linux/fcntl.h: RWH_WRITE_LIFE_NONE = 1 ... EXTREME = 5.
    d.spec.target.write_hint = Some(match c.value.to_ascii_lowercase().as_str() {
        "none" => 1,
        "short" => 2,
        "medium" => 3,
        "long" => 4,
        "extreme" => 5,
        _ => return Err(c.bad(WRITE_HINT_VALID)),
    });
    Ok(())
}

pub(crate) fn set_lockfile(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    // fio's value may carry a ':N' batch count (older fio); the lock is the same.
    let kind = c.value.split(':').next().unwrap_or("");
    d.spec.target.lockfile = match kind.to_ascii_lowercase().as_str() {
        "none" => LockFile::None,
        "exclusive" => LockFile::Exclusive,
        "readwrite" => LockFile::ReadWrite,
        _ => return Err(c.bad(LockFile::VALID)),
    };
    Ok(())
}

pub(crate) fn set_allow_mounted_write(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.target.allow_mounted_write = c.boolean()?;
    Ok(())
}

pub(crate) fn set_offset_align(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.target.offset_align = c.size()?;
    Ok(())
}

pub(crate) fn set_job_max_open_zones(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.target.job_max_open_zones = c.int(0, super::zones::MAX_OPEN_ZONES)? as u32;
    Ok(())
}

pub(crate) fn set_bs_unaligned(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.target.bs_unaligned = c.boolean()?;
    Ok(())
}

pub(crate) fn set_ignore_zone_limits(_: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    c.boolean()?;
    Ok(())
}

/// `zonecapacity`: the writable bytes of each emulated zone (0: the zone
/// size); checked against `zonesize` once the job is complete.
pub(crate) fn set_zonecapacity(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.target.zonecapacity = Some(c.size()?);
    Ok(())
}

/// A percentage (`N%`, 1-100) or `None` when the value is not one.
fn percent(c: &Ctx) -> Result<Option<u32>, JobError> {
    let Some(n) = c.value.trim().strip_suffix('%') else {
        return Ok(None);
    };
    match n.trim().parse::<u32>() {
        Ok(p) if (1..=100).contains(&p) => Ok(Some(p)),
        _ => Err(c.bad("a percentage from 1% to 100%, or a size such as 1g")),
    }
}

pub(crate) fn set_offset_increment(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    match percent(c)? {
        Some(p) => {
            d.spec.target.offset_increment_percent = Some(p);
            d.spec.offset_increment = 0;
        }
        None => {
            d.spec.target.offset_increment_percent = None;
            d.spec.offset_increment = c.size()?;
        }
    }
    Ok(())
}

pub(crate) fn set_io_size(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    match percent(c)? {
        Some(p) => {
            d.spec.target.io_size_percent = Some(p);
            d.spec.io_size = None;
        }
        None => {
            let b = c.size()?;
            d.spec.io_size = Some(super::parse::positive(c, b)?);
            d.spec.target.io_size_percent = None;
        }
    }
    Ok(())
}

impl Draft {
    fn target_set_at(&self, name: &str) -> Option<&str> {
        self.set
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, at)| at.as_str())
    }

    /// Rules between the target options and the rest of the job.
    pub(crate) fn check_target(&mut self, section_at: &str) -> Result<(), JobError> {
        let conflict = |at: Option<&str>, job: &str, problem: String| JobError::Conflict {
            at: at.unwrap_or(section_at).to_string(),
            job: job.to_string(),
            problem,
        };
        let name = self.spec.name.clone();
        // fio refuses a capacity above the zone size, and stops a job whose
        // zone capacity cannot hold one smallest block.
        let min_bs = u64::from(self.spec.bs[0].min().min(self.spec.bs[1].min()));
        if let Some(cap) = self.spec.target.zonecapacity
            && cap != 0
            && self.spec.zones.mode == super::zones::ZoneMode::Zbd
            && (cap > self.spec.zones.size || cap < min_bs)
        {
            return Err(conflict(
                self.target_set_at("zonecapacity"),
                &name,
                format!(
                    "zonecapacity={cap} must lie between the smallest block size ({min_bs}) and \
                     zonesize={} (0: the zone size)",
                    self.spec.zones.size
                ),
            ));
        }
        if self.spec.target.bs_unaligned
            && self.spec.verify.kind.is_some()
            && self.spec.rw.pattern == super::Pattern::Rand
            && self
                .spec
                .bs
                .iter()
                .any(|b| matches!(b, super::spec::BlockSizes::Range { min, max } if min != max))
        {
            // A sequential job's blocks follow one another and each is
            // verified at its own offset and length; iolab's random offsets
            // with sizes of any byte count overlap earlier blocks, which the
            // verifier then skips, so it would check fewer blocks than fio.
            return Err(conflict(
                self.target_set_at("bs_unaligned"),
                &name,
                "bs_unaligned=1 with a bsrange, verify and random offsets: iolab's random \
                 blocks of any byte count overlap earlier ones, which verification then \
                 skips (fio checks every block); use a sequential rw=, drop bs_unaligned, or \
                 list the sizes with bssplit="
                    .into(),
            ));
        }
        // One clone's write pointers are its own (docs/fio-compat.md, Zones):
        // the per-job limit narrows the per-device one.
        let j = self.spec.target.job_max_open_zones;
        if j > 0 {
            let z = &mut self.spec.zones.max_open;
            *z = if *z == 0 { j } else { (*z).min(j) };
        }
        Ok(())
    }
}
