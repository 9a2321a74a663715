//! Values of the random-offset and rate options: `random_distribution`
//! (`zipf:1.2:0.25`, `zoned:60/10:30/20:10/`, ...) and fio's per-direction
//! lists (`rate=1m,500k`), whose trailing comma means "reads only".

use super::draft::Ctx;
use super::error::JobError;
use super::spec::RandomDist;
use super::units;

pub(crate) const DIST_VALID: &str = "random, zipf[:THETA[:CENTER]] (THETA > 0, not 1; default \
     1.1), pareto[:H[:CENTER]] (0 < H < 1; default 0.2), normal[:DEV[:CENTER]] (0 <= DEV < 100, \
     percent of the region), zoned:ACCESS%/RANGE%:... or zoned_abs:ACCESS%/SIZE:... (access \
     percentages add up to 100; an empty range takes what is left), with CENTER from 0 to 1";

/// fio allows up to 256 zones per direction.
pub const MAX_ZONES: usize = 256;

/// `random_distribution=`.
pub(crate) fn distribution(c: &Ctx) -> Result<RandomDist, JobError> {
    let v = c.value.trim();
    let (kind, rest) = match v.split_once(':') {
        Some((k, r)) => (k.trim(), Some(r.trim())),
        None => (v, None),
    };
    match kind {
        "random" => match rest {
            None => Ok(RandomDist::Random),
            Some(_) => Err(c.bad(format!(
                "'random' alone: the uniform distribution takes no parameter (fio ignores one); \
                 valid: {DIST_VALID}"
            ))),
        },
        "zipf" | "pareto" | "normal" => {
            let (p, center) = params(c, kind, rest)?;
            Ok(match kind {
                "zipf" => {
                    let theta = p.unwrap_or(1.1);
                    // fio refuses exactly 1 (its generator divides by 1 - theta);
                    // theta <= 0 is no skew at all, or a reversed one.
                    if theta <= 0.0 || theta == 1.0 || !theta.is_finite() {
                        return Err(c.bad(format!(
                            "a zipf theta greater than 0 and not 1, e.g. zipf:1.2 (theta 0 \
                             would be uniform: use random), got {theta}"
                        )));
                    }
                    RandomDist::Zipf { theta, center }
                }
                "pareto" => {
                    let h = p.unwrap_or(0.2);
                    if !(h > 0.0 && h < 1.0) {
                        return Err(c.bad(format!(
                            "a pareto power between 0 and 1 exclusive, e.g. pareto:0.2 (20% of \
                             the blocks take 80% of the accesses), got {h}"
                        )));
                    }
                    RandomDist::Pareto { h, center }
                }
                _ => {
                    let dev = p.unwrap_or(0.0);
                    if !(0.0..100.0).contains(&dev) {
                        return Err(c.bad(format!(
                            "a normal deviation from 0 to less than 100 (percent of the region), \
                             e.g. normal:10, got {dev}"
                        )));
                    }
                    RandomDist::Normal { dev, center }
                }
            })
        }
        "zoned" | "zoned_abs" => {
            let Some(rest) = rest.filter(|r| !r.is_empty()) else {
                return Err(c.bad(format!(
                    "{kind} needs zones, e.g. {kind}:{}",
                    if kind == "zoned" {
                        "60/10:30/20:10/"
                    } else {
                        "60/20g:40/100g"
                    }
                )));
            };
            let rest = rest.strip_suffix(',').unwrap_or(rest);
            let sets: Vec<&str> = rest.split(',').map(str::trim).collect();
            let (r, w) = match sets.as_slice() {
                [one] => (*one, *one),
                [r, w] => (*r, *w),
                [r, w, ""] => (*r, *w),
                _ => {
                    return Err(c.bad(format!(
                        "one set of zones for both directions, or 'READZONES,WRITEZONES' \
                         (trims take the write set, so no third set); valid: {DIST_VALID}"
                    )));
                }
            };
            // fio's per-direction form may repeat the kind on the second set.
            let prefix = format!("{kind}:");
            let w = w.strip_prefix(prefix.as_str()).unwrap_or(w);
            if kind == "zoned" {
                let (r, w) = (zones(c, r, None)?, zones(c, w, None)?);
                Ok(RandomDist::Zoned([
                    r.into_iter().map(|(a, z)| (a, z as u32)).collect(),
                    w.into_iter().map(|(a, z)| (a, z as u32)).collect(),
                ]))
            } else {
                Ok(RandomDist::ZonedAbs([
                    zones(c, r, Some(c.kb))?,
                    zones(c, w, Some(c.kb))?,
                ]))
            }
        }
        _ => Err(c.bad(DIST_VALID)),
    }
}

/// `THETA[:CENTER]` after the kind.
fn params(c: &Ctx, kind: &str, rest: Option<&str>) -> Result<(Option<f64>, Option<f64>), JobError> {
    let Some(rest) = rest else {
        return Ok((None, None));
    };
    let mut it = rest.split(':');
    let num = |s: &str| -> Result<f64, JobError> {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| {
                c.bad(format!(
                    "a number after '{kind}:', e.g. {kind}:{}; valid: {DIST_VALID}",
                    match kind {
                        "zipf" => "1.2",
                        "pareto" => "0.2",
                        _ => "10",
                    }
                ))
            })
    };
    let p = num(it.next().unwrap_or(""))?;
    let center = match it.next() {
        None => None,
        Some(s) => {
            let x = num(s)?;
            if !(0.0..=1.0).contains(&x) {
                return Err(c.bad(format!(
                    "a center from 0 to 1 (where the hottest block lies in the region), got {x}"
                )));
            }
            Some(x)
        }
    };
    if it.next().is_some() {
        return Err(c.bad(format!(
            "at most two numbers after '{kind}:' (the parameter and a center); valid: {DIST_VALID}"
        )));
    }
    Ok((Some(p), center))
}

/// `60/10:30/20:10/`: (access %, range) pairs. `abs_kb` is `Some(kb_base)` for
/// `zoned_abs` (ranges are sizes) and `None` for `zoned` (ranges are percent).
/// Access percentages must add up to 100; ranges given may add up to at most
/// 100% (zoned); ranges left empty share what is left, as in fio.
fn zones(c: &Ctx, list: &str, abs_kb: Option<u32>) -> Result<Vec<(u32, u64)>, JobError> {
    let what = if abs_kb.is_some() {
        "ACCESS%/SIZE pairs separated by ':' such as 60/20g:40/100g"
    } else {
        "ACCESS%/RANGE% pairs separated by ':' such as 60/10:30/20:10/ (an empty range takes \
         what is left of 100%)"
    };
    let mut out: Vec<(u32, Option<u64>)> = Vec::new();
    for e in list.split(':') {
        let Some((a, r)) = e.split_once('/') else {
            return Err(c.bad(format!("{what}; '{e}' has no '/'")));
        };
        let a = a
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|a| *a <= 100)
            .ok_or_else(|| c.bad(format!("{what}; '{e}': the access share is 0-100")))?;
        let r = r.trim();
        let r = if r.is_empty() {
            None
        } else if let Some(kb) = abs_kb {
            let b =
                units::parse_bytes(r, kb).map_err(|err| c.bad(format!("{what}; '{e}': {err}")))?;
            if b == 0 {
                return Err(c.bad(format!("{what}; '{e}': a zone of 0 bytes")));
            }
            Some(b)
        } else {
            Some(
                r.parse::<u64>()
                    .ok()
                    .filter(|p| (1..=100).contains(p))
                    .ok_or_else(|| c.bad(format!("{what}; '{e}': the range is 1-100 percent")))?,
            )
        };
        out.push((a, r));
    }
    if out.len() > MAX_ZONES {
        return Err(c.bad(format!(
            "at most {MAX_ZONES} zones (fio's limit); got {}",
            out.len()
        )));
    }
    let access: u32 = out.iter().map(|z| z.0).sum();
    if access != 100 {
        return Err(c.bad(format!(
            "{what}; the access percentages add up to {access}%, not 100%"
        )));
    }
    let missing = out.iter().filter(|z| z.1.is_none()).count() as u64;
    if abs_kb.is_some() {
        if missing > 0 {
            return Err(c.bad(format!("{what}; every zone_abs zone needs a size")));
        }
        return Ok(out.into_iter().map(|(a, r)| (a, r.unwrap_or(0))).collect());
    }
    let given: u64 = out.iter().filter_map(|z| z.1).sum();
    if given > 100 || (missing > 0 && given + missing > 100) {
        return Err(c.bad(format!(
            "{what}; the ranges add up to more than 100% ({given}% given{})",
            if missing > 0 {
                " before the empty ones"
            } else {
                ""
            }
        )));
    }
    // Empty ranges share what is left; the last takes the remainder.
    let mut left = 100 - given;
    let mut seen = 0;
    Ok(out
        .into_iter()
        .map(|(a, r)| {
            let r = r.unwrap_or_else(|| {
                seen += 1;
                let share = if seen == missing {
                    left
                } else {
                    (100 - given) / missing
                };
                left -= share;
                share
            });
            (a, r)
        })
        .collect())
}

/// fio's per-direction list for rates: `A` sets reads and writes, `A,` reads
/// only, `,B` writes only, `A,B` each. Trims are paced by the write value (as
/// fio paces them when no third value is set), so a third value is accepted
/// only where it says the same (fio's examples write `rate=300,300,300`).
pub(crate) fn rate_dirs(
    c: &Ctx,
    current: [u64; 2],
    parse: impl Fn(&str) -> Result<u64, units::UnitError>,
) -> Result<[u64; 2], JobError> {
    super::parse::refuse_all_empty(c, c.value)?;
    let parts: Vec<&str> = c.value.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(c.bad(
            "one value for reads and writes, or 'read,write' ('A,' caps reads only, ',B' writes only)",
        ));
    }
    let mut out = current;
    let mut vals = [None; 3];
    for (i, p) in parts.iter().enumerate() {
        if !p.is_empty() {
            vals[i] = Some(parse(p).map_err(|e| c.bad(e))?);
        }
    }
    if let Some(t) = vals[2]
        && Some(t) != vals[1].or(Some(current[1]))
    {
        return Err(c.bad(
            "one value for reads and writes, or 'read,write' (trims are paced by the write \
             value, so a third value must equal it: a separate trim rate is not supported by \
             iolab)",
        ));
    }
    if parts.len() == 1 {
        out = [vals[0].unwrap_or(0); 2];
    } else {
        for (slot, v) in out.iter_mut().zip(vals) {
            if let Some(v) = v {
                *slot = v;
            }
        }
    }
    Ok(out)
}

/// A `read,write` pair as written back in messages (`1000,0`).
fn fmt_pair(v: [u64; 2]) -> String {
    format!("{},{}", v[0], v[1])
}

impl super::draft::Draft {
    /// Options that only shape random offsets, on a sequential job: fio takes
    /// them and ignores them, so they run as fio runs them, with a note.
    fn note_random_on_sequential(&mut self) {
        let s = &self.spec;
        if s.rw.pattern != super::spec::Pattern::Seq {
            return;
        }
        let is_set = |name: &str| self.set.iter().any(|(n, _)| *n == name);
        let mut notes = Vec::new();
        for (name, what) in [
            ("random_distribution", "spreads random offsets"),
            (
                "percentage_random",
                "mixes random offsets into a random job",
            ),
            ("blockalign", "aligns random offsets"),
        ] {
            if is_set(name) {
                notes.push((
                    name,
                    format!(
                        "has no effect: it {what}, and rw={} is sequential (fio ignores it \
                         too; rw=randread, randwrite or randrw would use it)",
                        s.rw.fio_name()
                    ),
                ));
            }
        }
        for (name, note) in notes {
            self.note(name, note);
        }
    }

    /// Cross-option rules of random offsets and rates; `randseed` given wins
    /// over `randrepeat=0`, as in fio.
    pub(crate) fn check_random_and_rate(&mut self, section_at: &str) -> Result<(), JobError> {
        self.note_random_on_sequential();
        let at = |name: &str| {
            self.set
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(section_at, |(_, at)| at.as_str())
                .to_string()
        };
        let is_set = |name: &str| self.set.iter().any(|(n, _)| *n == name);
        let s = &self.spec;
        let conflict = |name: &str, problem: String| JobError::Conflict {
            at: at(name),
            job: s.name.clone(),
            problem,
        };
        let dirs = ["read", "write"];
        // Only directions the job issues: `rate=1m` caps both, and a read job
        // has no writes for it to slow.
        let active = {
            // Trims take the write slot of `read,write` options.
            let [r, w, t] = s.rw.dir.issues();
            [r, w || t]
        };
        // fio refuses a bandwidth cap beside an IOPS cap (and a bandwidth
        // minimum beside an IOPS minimum) on any directions, used or not.
        let any = |v: [u64; 2]| v != [0, 0];
        if any(s.rate) && any(s.rate_iops) {
            return Err(conflict(
                "rate_iops",
                format!(
                    "rate ({} bytes/s) and rate_iops ({} IOPS) are mutually exclusive, \
                     whichever directions they cap (as in fio): keep one",
                    fmt_pair(s.rate),
                    fmt_pair(s.rate_iops)
                ),
            ));
        }
        if any(s.rate_min) && any(s.rate_iops_min) {
            return Err(conflict(
                "rate_iops_min",
                format!(
                    "rate_min ({} bytes/s) and rate_iops_min ({} IOPS) are mutually exclusive \
                     (as in fio): keep one",
                    fmt_pair(s.rate_min),
                    fmt_pair(s.rate_iops_min)
                ),
            ));
        }
        for d in (0..2).filter(|d| active[*d]) {
            // A cap below one I/O per second is paced as any other: one I/O
            // every bs/rate seconds, the first at once (as fio does).
            let (rate, iops, bs) = (s.rate[d], s.rate_iops[d], s.bs[d].min() as u64);
            let cap = if rate > 0 { rate } else { iops * bs };
            if s.rate_min[d] > 0 && cap > 0 && s.rate_min[d] > cap {
                return Err(conflict(
                    "rate_min",
                    format!(
                        "rate_min={} for {}s is above the job's own cap of {cap} bytes/s: it \
                         could never be met",
                        s.rate_min[d], dirs[d]
                    ),
                ));
            }
            if s.rate_iops_min[d] > 0 && iops > 0 && s.rate_iops_min[d] > iops {
                return Err(conflict(
                    "rate_iops_min",
                    format!(
                        "rate_iops_min={} for {}s is above rate_iops={iops}: it could never be met",
                        s.rate_iops_min[d], dirs[d]
                    ),
                ));
            }
        }
        if s.rate_poisson && s.rate == [0, 0] && s.rate_iops == [0, 0] {
            return Err(conflict(
                "rate_process",
                "rate_process=poisson shapes the gaps of a capped job: add rate= or rate_iops="
                    .to_string(),
            ));
        }
        if is_set("rate_cycle") && s.rate_min == [0, 0] && s.rate_iops_min == [0, 0] {
            return Err(conflict(
                "rate_cycle",
                "rate_cycle is the window of rate_min and rate_iops_min (iolab's rate and \
                 rate_iops keep an exact cadence without one): add rate_min= or rate_iops_min="
                    .to_string(),
            ));
        }
        if s.io_submit_offload && s.ioengine.is_sync() && s.iodepth > 1 {
            return Err(conflict(
                "io_submit_mode",
                format!(
                    "io_submit_mode=offload with ioengine={e} at iodepth={d}: fio would run {d} \
                     {e} calls at once on {d} submit threads, but an iolab worker performs a \
                     synchronous engine's I/O on its own thread, one at a time. Use \
                     ioengine=libaio or io_uring at iodepth={d} ({d} I/Os in flight from one \
                     thread), or numjobs={d} at iodepth=1",
                    e = s.ioengine.fio_name(),
                    d = s.iodepth
                ),
            ));
        }
        if is_set("randseed") {
            self.spec.workload.offsets_from_randseed = !self.spec.randrepeat;
            self.spec.workload.randseed_given = true;
            self.spec.randrepeat = true;
        }
        Ok(())
    }
}
