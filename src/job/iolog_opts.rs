//! Parsing the I/O replay options (`job::iolog` holds what they mean) and the
//! rules between them.

use super::draft::{Ctx, Draft};
use super::error::JobError;
use super::iolog::ReplaySkip;

pub(crate) const SKIP_VALID: &str = "a comma-separated list of read, write, trim, sync";
pub(crate) const FLOAT_LIST: &str = "a ':'-separated list of numbers, one per read_iolog file";

/// `replay_skip=read,write,trim,sync` (fio's list; each name adds to the set).
pub(crate) fn skip(c: &Ctx) -> Result<ReplaySkip, JobError> {
    let mut s = ReplaySkip::default();
    for name in c.value.trim().split(',').map(str::trim) {
        match name {
            "read" => s.read = true,
            "write" => s.write = true,
            "trim" => s.trim = true,
            "sync" => s.sync = true,
            _ => return Err(c.bad(SKIP_VALID)),
        }
    }
    Ok(s)
}

/// `replay_align`: fio rounds offsets down with a mask, so only a power of
/// two means what it says (fio does not check; another value masks bits at
/// random).
pub(crate) fn align(c: &Ctx) -> Result<u64, JobError> {
    let v = c.size()?;
    if v != 0 && !v.is_power_of_two() {
        return Err(c.bad("a power of two, e.g. 4096 or 4k (0: offsets as logged)"));
    }
    Ok(v)
}

/// `merge_blktrace_scalars` / `merge_blktrace_iters`: positive numbers.
pub(crate) fn float_list(c: &Ctx) -> Result<Vec<f64>, JobError> {
    c.value
        .split(':')
        .map(|v| match v.trim().parse::<f64>() {
            Ok(f) if f.is_finite() && f > 0.0 => Ok(f),
            _ => Err(c.bad(FLOAT_LIST)),
        })
        .collect()
}

impl Draft {
    fn iolog_set_at(&self, name: &str) -> Option<&str> {
        self.set
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, at)| at.as_str())
    }

    /// Rules between the replay options (fio's where it has them).
    pub(crate) fn check_iolog(&self, section_at: &str) -> Result<(), JobError> {
        let l = &self.spec.iolog;
        let conflict = |opt: &str, problem: String| JobError::Conflict {
            at: self.iolog_set_at(opt).unwrap_or(section_at).to_string(),
            job: self.spec.name.clone(),
            problem,
        };
        if l.merge_file.is_some() && l.read.is_none() {
            return Err(conflict(
                "merge_blktrace_file",
                "merge_blktrace_file merges the blktraces read_iolog names: give read_iolog=A:B"
                    .into(),
            ));
        }
        let n = l.read_names().len();
        for (opt, list) in [
            ("merge_blktrace_scalars", &l.merge_scalars),
            ("merge_blktrace_iters", &l.merge_iters),
        ] {
            if list.is_empty() {
                continue;
            }
            if l.merge_file.is_none() {
                return Err(conflict(
                    opt,
                    format!("{opt} applies when blktraces are merged: give merge_blktrace_file="),
                ));
            }
            if list.len() != n {
                // fio: "merge_blktrace_scalars(N) != nr_logs(M)".
                return Err(conflict(
                    opt,
                    format!(
                        "{opt} has {} values for {n} read_iolog files: give one per file",
                        list.len()
                    ),
                ));
            }
        }
        if l.read.is_some() && self.spec.verify.kind.is_some() {
            return Err(conflict(
                "read_iolog",
                "verify with read_iolog is not supported: a replay's writes are the log's, \
                 not a verify pattern's; replay without verify"
                    .into(),
            ));
        }
        Ok(())
    }
}
