//! fio's options about a job's thread rather than its I/O: its priority
//! (`nice`), credentials (`uid`, `gid`), control group (`cgroup`,
//! `cgroup_weight`, `cgroup_nodelete`), the commands run before and after it
//! (`exec_prerun`, `exec_postrun`), the kernel I/O scheduler of its device
//! (`ioscheduler`), and its memory (`mem`/`iomem`, `lockmem`): value parsers
//! and setters (the type: `job::process`; the engine applies them in
//! `engine::process`).

use super::draft::{Ctx, Draft};
use super::error::JobError;
use crate::buf::Mem;

pub(crate) fn set_nice(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.process.nice = match c.value.trim().parse::<i32>() {
        Ok(n) if (-20..=19).contains(&n) => n,
        _ => return Err(c.bad("a nice value from -20 to 19")),
    };
    Ok(())
}

fn id(c: &Ctx) -> Result<u32, JobError> {
    let v = c.value.trim();
    // fio takes a number; a name is a convenience fio lacks.
    if let Ok(n) = v.parse::<u32>() {
        return Ok(n);
    }
    let what = if c.name == "uid" { "user" } else { "group" };
    Err(c.bad(format!("a numeric {what} id such as 1000")))
}

pub(crate) fn set_uid(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.process.uid = Some(id(c)?);
    Ok(())
}

pub(crate) fn set_gid(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.process.gid = Some(id(c)?);
    Ok(())
}

pub(crate) fn set_cgroup(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    let v = c.nonempty()?;
    if v.split('/').any(|p| p == "..") || v.starts_with('/') {
        return Err(c.bad(
            "a cgroup name below the cgroup mount, such as fio1 or iolab/a (no leading / or ..)",
        ));
    }
    d.spec.process.cgroup = Some(v);
    Ok(())
}

pub(crate) fn set_cgroup_weight(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.process.cgroup_weight = c.int(100, 1000)? as u32;
    Ok(())
}

pub(crate) fn set_cgroup_nodelete(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.process.cgroup_nodelete = c.boolean()?;
    Ok(())
}

pub(crate) fn set_exec_prerun(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.process.exec_prerun = Some(c.nonempty()?);
    Ok(())
}

pub(crate) fn set_exec_postrun(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.process.exec_postrun = Some(c.nonempty()?);
    Ok(())
}

pub(crate) fn set_ioscheduler(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    let v = c.nonempty()?;
    if v.contains(char::is_whitespace) || v.contains('/') {
        return Err(c.bad("a kernel I/O scheduler name such as none, mq-deadline, kyber or bfq"));
    }
    d.spec.process.ioscheduler = Some(v);
    Ok(())
}

pub(crate) fn set_lockmem(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.process.lockmem = c.size()?;
    Ok(())
}

pub(crate) fn set_mem(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.process.mem = Mem::parse(c.value).map_err(|e| c.bad(e))?;
    Ok(())
}
