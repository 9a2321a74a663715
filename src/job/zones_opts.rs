//! Parsing the zone options and the rules between them and the rest of a job
//! (`job::zones` holds what they mean).

use super::draft::{Ctx, Draft};
use super::error::JobError;
use super::spec::{Direction, Pattern, RwSuffix};
use super::zones::{MODE_VALID, ZoneCounts, ZoneMode};

pub(crate) fn mode(c: &Ctx) -> Result<ZoneMode, JobError> {
    match c.value {
        "none" => Ok(ZoneMode::None),
        "strided" => Ok(ZoneMode::Strided),
        "zbd" => Ok(ZoneMode::Zbd),
        _ => Err(c.bad(MODE_VALID)),
    }
}

/// A zone share (`zone_reset_threshold`, `zone_reset_frequency`): 0 to 1, as
/// fio's parser takes it.
pub(crate) fn share(c: &Ctx) -> Result<f64, JobError> {
    super::units::parse_f64(c.value, 0.0, 1.0).map_err(|e| c.bad(e))
}

/// `Nz` (a whole number then `z`): N zones.
pub(crate) fn zone_count(c: &Ctx) -> Option<u64> {
    let n = c.value.trim().strip_suffix(['z', 'Z'])?;
    n.parse().ok()
}

/// An option that takes fio's zone counts: `Nz` is kept in the draft's
/// [`ZoneCounts`] (through `slot`), anything else goes to the option's own
/// parser and clears the count.
pub(crate) fn or_zones(
    d: &mut Draft,
    c: &Ctx,
    slot: fn(&mut ZoneCounts) -> &mut Option<u64>,
    bytes: fn(&mut Draft, &Ctx) -> Result<(), JobError>,
) -> Result<(), JobError> {
    if let Some(n) = zone_count(c) {
        *slot(&mut d.zone_counts) = Some(n);
        return Ok(());
    }
    *slot(&mut d.zone_counts) = None;
    bytes(d, c)
}

impl Draft {
    /// Zone counts as bytes: N times `zonesize` (the emulated zones' size; a
    /// zoned device's own zone size is refused elsewhere). Without a zone
    /// mode there is no zone size, where fio would silently leave the option
    /// at 0: an error naming the option.
    pub(crate) fn resolve_zone_counts(&mut self, section_at: &str) -> Result<(), JobError> {
        let zc = self.zone_counts;
        let named = [
            ("size", zc.size),
            ("io_size", zc.io_size),
            ("offset", zc.offset),
            ("offset_increment", zc.offset_increment),
            ("zoneskip", zc.zoneskip),
        ];
        let Some(&(first, _)) = named.iter().find(|(_, n)| n.is_some()) else {
            return Ok(());
        };
        let zs = self.spec.zones.size;
        if self.spec.zones.mode == ZoneMode::None {
            return Err(JobError::Conflict {
                at: self.zones_set_at(first).unwrap_or(section_at).to_string(),
                job: self.spec.name.clone(),
                problem: format!(
                    "{first} is a count of zones (Nz), which needs zonemode=strided or \
                     zonemode=zbd with zonesize= (or give {first} in bytes)"
                ),
            });
        }
        if zs == 0 {
            return Ok(()); // check_zones asks for zonesize=
        }
        let s = &mut self.spec;
        if let Some(n) = zc.size {
            s.size = (n > 0).then(|| n.saturating_mul(zs));
            s.size_percent = None;
        }
        if let Some(n) = zc.io_size {
            s.io_size = (n > 0).then(|| n.saturating_mul(zs));
            s.target.io_size_percent = None;
        }
        if let Some(n) = zc.offset {
            s.offset = n.saturating_mul(zs);
            s.offset_percent = None;
        }
        if let Some(n) = zc.offset_increment {
            s.offset_increment = n.saturating_mul(zs);
            s.target.offset_increment_percent = None;
        }
        if let Some(n) = zc.zoneskip {
            s.zones.skip = n.saturating_mul(zs);
        }
        Ok(())
    }

    fn zones_set_at(&self, name: &str) -> Option<&str> {
        self.set
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, at)| at.as_str())
    }

    /// Rules between the zone options and the rest of the job (fio's where it
    /// has one; iolab's stricter ones say so).
    pub(crate) fn check_zones(&self, section_at: &str) -> Result<(), JobError> {
        let s = &self.spec;
        let z = &s.zones;
        let conflict = |opt: &str, problem: String| JobError::Conflict {
            at: self.zones_set_at(opt).unwrap_or(section_at).to_string(),
            job: s.name.clone(),
            problem,
        };
        let given = |opt: &str| self.zones_set_at(opt).is_some();
        match z.mode {
            ZoneMode::None => {
                // fio 3.33: "--zonemode=none and --zonesize are not compatible",
                // also when zonemode is not given (no legacy strided meaning).
                for opt in ["zonesize", "zonerange", "zoneskip"] {
                    if given(opt) {
                        return Err(conflict(
                            opt,
                            format!(
                                "{opt} needs zonemode=strided or zonemode=zbd (fio refuses \
                                 zonesize with zonemode=none, which is the default)"
                            ),
                        ));
                    }
                }
            }
            ZoneMode::Zbd
                if z.size == 0
                    && s.filename
                        .as_deref()
                        .is_some_and(|f| f.starts_with("/dev/")) =>
            {
                // fio reads a zoned device's zone size from the device; iolab
                // emulates zones and does not drive zoned devices.
                return Err(conflict(
                    "zonemode",
                    "zonemode=zbd without zonesize= takes the zone size of a zoned block \
                     device, and iolab does not drive zoned devices (it emulates zones): give \
                     zonesize= (e.g. zonesize=256m) to emulate zones on a regular file or a \
                     block device that is not zoned"
                        .into(),
                ));
            }
            ZoneMode::Strided | ZoneMode::Zbd if z.size == 0 => {
                return Err(conflict(
                    "zonemode",
                    "zonemode=strided and zonemode=zbd need zonesize= (e.g. zonesize=256m)".into(),
                ));
            }
            _ => {}
        }
        if z.mode != ZoneMode::Zbd {
            for opt in [
                "max_open_zones",
                "zone_reset_threshold",
                "zone_reset_frequency",
                "read_beyond_wp",
            ] {
                if given(opt) {
                    return Err(conflict(opt, format!("{opt} only applies to zonemode=zbd")));
                }
            }
        }
        if let (ZoneMode::Strided | ZoneMode::Zbd, Pattern::Seq, RwSuffix::Add(n)) =
            (z.mode, s.rw.pattern, s.rw_suffix)
            && (n < 0 || z.mode == ZoneMode::Zbd)
        {
            return Err(conflict(
                "rw",
                format!(
                    "rw=...:{n} with zonemode={} is not implemented by iolab (zones are walked \
                     forwards{})",
                    if z.mode == ZoneMode::Zbd {
                        "zbd"
                    } else {
                        "strided"
                    },
                    if z.mode == ZoneMode::Zbd {
                        ", writes at the write pointer"
                    } else {
                        ""
                    }
                ),
            ));
        }
        if z.mode != ZoneMode::Zbd {
            return Ok(());
        }
        if given("zonerange") && z.range != z.size {
            return Err(conflict(
                "zonerange",
                "zonerange applies to zonemode=strided; with zonemode=zbd every zone spans \
                 zonesize bytes (drop zonerange)"
                    .into(),
            ));
        }
        if z.skip > 0 {
            return Err(conflict(
                "zoneskip",
                "zoneskip with zonemode=zbd is not implemented by iolab; use zonemode=strided \
                 to skip between zones"
                    .into(),
            ));
        }
        let (min_bs, max_bs) = (
            u64::from(s.bs[0].min().min(s.bs[1].min()).max(1)),
            u64::from(s.bs[0].max().max(s.bs[1].max())),
        );
        if max_bs > z.size {
            return Err(conflict(
                "zonesize",
                format!(
                    "a block of {max_bs} bytes does not fit a zone of zonesize={}: use a \
                     zonesize of at least the largest block size",
                    z.size
                ),
            ));
        }
        if !z.size.is_multiple_of(min_bs) {
            return Err(conflict(
                "zonesize",
                format!(
                    "zonesize={} is not a multiple of the smallest block size ({min_bs}): writes \
                     at the write pointer would leave a zone's tail unwritable",
                    z.size
                ),
            ));
        }
        if s.rw.dir.issues()[2] {
            return Err(conflict(
                "zonemode",
                format!(
                    "rw={} with zonemode=zbd is not implemented by iolab (fio trims a zoned \
                     target by resetting its zones); trim without zonemode, or write with it",
                    s.rw.fio_name()
                ),
            ));
        }
        if s.verify.kind.is_some() && s.rw.dir != Direction::Read {
            return Err(conflict(
                "zonemode",
                "verify with zonemode=zbd is not implemented by iolab (zone resets overwrite \
                 what was written)"
                    .into(),
            ));
        }
        Ok(())
    }
}
