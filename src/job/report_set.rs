//! Parsers of the reporting options (`job::report_opts` holds their types;
//! kept apart so the job spec does not import the draft).

use super::draft::Ctx;
use super::error::JobError;
use super::report_opts::*;
use super::units::{self, TimeUnit};
use std::time::Duration;

pub(crate) fn unified(c: &Ctx) -> Result<Unified, JobError> {
    match c.value {
        "none" | "0" => Ok(Unified::None),
        "mixed" | "1" => Ok(Unified::Mixed),
        "both" | "2" => Ok(Unified::Both),
        _ => Err(c.bad(UNIFIED_VALID)),
    }
}

pub(crate) fn unit_base(c: &Ctx) -> Result<bool, JobError> {
    match c.value {
        "0" | "8" => Ok(false),
        "1" => Ok(true),
        _ => Err(c.bad(UNIT_BASE_VALID)),
    }
}

/// `max_latency=R[,W[,T]]`: microseconds by default, per direction as fio's
/// other `read,write,trim` options (one value for all; an empty field keeps
/// the default of none).
pub(crate) fn max_latency(c: &Ctx) -> Result<[Duration; 3], JobError> {
    let parts: Vec<&str> = c.value.split(',').collect();
    if parts.is_empty() || parts.len() > 3 || c.value.is_empty() {
        return Err(c.bad("a time such as 10ms, or 'read,write,trim' times"));
    }
    let mut out = [Duration::ZERO; 3];
    for (i, p) in parts.iter().enumerate() {
        if !p.is_empty() {
            out[i] = units::parse_time(p, TimeUnit::Micros, true).map_err(|e| c.bad(e))?;
        }
    }
    match parts.len() {
        1 => out = [out[0]; 3],
        2 => out[2] = out[1],
        _ => {}
    }
    Ok(out)
}
