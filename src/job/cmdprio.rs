//! fio's `cmdprio_bssplit`: command priorities chosen by block size.
//!
//! Each direction ('read,write', or one list for both) is a ':'-separated
//! list of entries. The simple form `bs/percentage` gives `percentage` of the
//! requests of size `bs` the priority of `cmdprio_class`/`cmdprio`; the
//! advanced form `bs/percentage/class/level` names the priority in the entry,
//! so one block size may be split over several priorities
//! (`64k/25/1/1:64k/75/3/2`). Requests of a size the list does not name, and
//! the share of a size its entries leave, keep the job's `prio`/`prioclass`.
//! The parsed entries are `job::control::BsPrio`; the engine side (a table
//! looked up per request) is `engine::cmdprio`.

use super::control::BsPrio;
use super::draft::Ctx;
use super::error::JobError;
use super::parse;
use super::units;

const EXPECTED: &str = "':'-separated entries bs/percentage (priority from cmdprio_class and \
     cmdprio) or bs/percentage/class/level (class 1-3, level 0-7), such as 64k/40:1m/0 or \
     64k/25/1/1:64k/75/3/2; 'read,write' for one list per direction; the percentages of one \
     block size add up to at most 100";

/// Parse `cmdprio_bssplit`; an empty part keeps that direction's list.
pub(crate) fn bssplit(c: &Ctx, current: &[Vec<BsPrio>; 2]) -> Result<[Vec<BsPrio>; 2], JobError> {
    let parts = parse::split_dirs(c, c.value)?;
    let mut out = current.clone();
    for (slot, part) in out.iter_mut().zip(parts) {
        if let Some(p) = part {
            *slot = list(c, p)?;
        }
    }
    Ok(out)
}

fn list(c: &Ctx, list: &str) -> Result<Vec<BsPrio>, JobError> {
    let mut out: Vec<BsPrio> = Vec::new();
    for entry in list.split(':').map(str::trim) {
        let f: Vec<&str> = entry.split('/').map(str::trim).collect();
        if f.len() != 2 && f.len() != 4 {
            return Err(c.bad(format!("{EXPECTED}; '{entry}' has {} fields", f.len())));
        }
        let bs = units::parse_bytes(f[0], c.kb).map_err(|e| c.bad(format!("{EXPECTED}; {e}")))?;
        if bs == 0 || bs > u64::from(u32::MAX) {
            return Err(c.bad(format!("{EXPECTED}; '{}' is not a block size", f[0])));
        }
        let num = |s: &str, max: u32, what: &str| match s.parse::<u32>() {
            Ok(v) if v <= max => Ok(v),
            _ => Err(c.bad(format!("{EXPECTED}; '{s}' is not a {what}"))),
        };
        let percentage = num(f[1], 100, "percentage 0-100")?;
        let prio = if f.len() == 4 {
            let class = num(f[2], 3, "class 1-3")?;
            if class == 0 {
                return Err(c.bad(format!("{EXPECTED}; '{}' is not a class 1-3", f[2])));
            }
            Some((class as u8, num(f[3], 7, "level 0-7")? as u8))
        } else {
            None
        };
        out.push(BsPrio {
            bs: bs as u32,
            percentage,
            prio,
        });
    }
    // fio's rule: the shares of one block size cannot exceed its requests.
    for e in &out {
        let total: u32 = out
            .iter()
            .filter(|o| o.bs == e.bs)
            .map(|o| o.percentage)
            .sum();
        if total > 100 {
            return Err(c.bad(format!(
                "{EXPECTED}; the entries for block size {} add up to {total}%",
                e.bs
            )));
        }
    }
    Ok(out)
}
