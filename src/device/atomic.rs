//! Atomic writes (fio `atomic=1`): each write carries RWF_ATOMIC (Linux
//! 6.11), which the kernel honours only where the file or device reports an
//! atomic write unit (statx STATX_WRITE_ATOMIC) and each write's length is a
//! power of two within [unit min, unit max], aligned to its length. Checked
//! here before the clock starts, so a job that cannot write atomically is
//! refused with the target's limits instead of failing every write with
//! EINVAL or EOPNOTSUPP.

use std::os::fd::RawFd;

use super::{DevResult, DeviceError};

/// The target's atomic write unit (min, max) in bytes, from statx; `None`
/// where it reports none.
pub fn write_unit(fd: RawFd) -> DevResult<Option<(u32, u32)>> {
    // SAFETY: a zeroed statx is a valid out-parameter.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: statx on the descriptor itself (AT_EMPTY_PATH, empty name).
    let rc = unsafe {
        libc::statx(
            fd,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_WRITE_ATOMIC,
            &mut stx,
        )
    };
    if rc < 0 {
        return Err(DeviceError::last_os("atomic: statx(STATX_WRITE_ATOMIC)"));
    }
    let known = stx.stx_mask & libc::STATX_WRITE_ATOMIC != 0;
    let (min, max) = (stx.stx_atomic_write_unit_min, stx.stx_atomic_write_unit_max);
    Ok((known && max > 0).then_some((min, max)))
}

/// Can every write of `min_bs..=max_bs` bytes be atomic on `fd`?
pub fn check(fd: RawFd, min_bs: u32, max_bs: u32) -> DevResult<()> {
    match write_unit(fd)? {
        None => Err(DeviceError::Unsupported(
            "atomic=1: the target reports no atomic write unit (statx STATX_WRITE_ATOMIC: \
             none), so the kernel refuses RWF_ATOMIC writes; it needs Linux 6.11 and a device \
             or file system with atomic write support (queue/atomic_write_max_bytes above 0)"
                .into(),
        )),
        Some((lo, hi))
            if min_bs < lo
                || max_bs > hi
                || !min_bs.is_power_of_two()
                || !max_bs.is_power_of_two() =>
        {
            Err(DeviceError::Unsupported(format!(
                "atomic=1: writes of {min_bs}-{max_bs} bytes cannot be atomic here: the target's \
                 atomic write unit is {lo}-{hi} bytes and each write must be a power of two \
                 within it; use bs= in that range"
            )))
        }
        Some(_) => Ok(()),
    }
}
