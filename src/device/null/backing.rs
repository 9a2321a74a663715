//! Memory image behind the null device (`backing_mem = true`).
//!
//! An anonymous private mapping with MAP_NORESERVE: pages read as zero and only
//! cost memory once written, so a large emulated device is cheap until used, and
//! a failed allocation is an error we can report instead of an abort.

use super::super::{DevResult, DeviceError};

pub(super) struct Backing {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned exclusively by this value and only reached through
// `&mut self` of the device that owns it.
unsafe impl Send for Backing {}

impl Backing {
    pub(super) fn new(len: u64) -> DevResult<Backing> {
        let len = usize::try_from(len).map_err(|_| {
            DeviceError::Unsupported(format!(
                "null_backing=mem: size {len} does not fit in memory"
            ))
        })?;
        if len == 0 {
            return Err(DeviceError::Unsupported(
                "null_backing=mem needs size > 0 (the memory image has the device's size)".into(),
            ));
        }
        // SAFETY: anonymous mapping, no fd; the result is checked against MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(DeviceError::last_os(format!(
                "null_backing=mem: mapping {len} bytes for the device image"
            )));
        }
        Ok(Backing { ptr: p.cast(), len })
    }

    /// Copy `len` bytes at `offset` of the image into `dst`.
    ///
    /// # Safety
    /// `dst` must be valid for `len` bytes; `offset + len <= self.len()`.
    #[inline]
    pub(super) unsafe fn read(&self, offset: u64, dst: *mut u8, len: u32) {
        // SAFETY: bounds checked by the caller per the contract above; the
        // worker's buffer never aliases our private mapping.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(offset as usize), dst, len as usize) }
    }

    /// Copy `len` bytes from `src` into the image at `offset`.
    ///
    /// # Safety
    /// `src` must be valid for `len` bytes; `offset + len <= self.len()`.
    #[inline]
    pub(super) unsafe fn write(&mut self, offset: u64, src: *const u8, len: u32) {
        // SAFETY: as in `read`.
        unsafe { std::ptr::copy_nonoverlapping(src, self.ptr.add(offset as usize), len as usize) }
    }

    /// Zero `len` bytes of the image at `offset` (a trim: the range reads back
    /// as zeros, as after a discard on a device that zeroes discarded blocks).
    ///
    /// # Safety
    /// `offset + len <= self.len()`.
    #[inline]
    pub(super) unsafe fn zero(&mut self, offset: u64, len: u32) {
        // SAFETY: in bounds per the contract above; the mapping is ours.
        unsafe { std::ptr::write_bytes(self.ptr.add(offset as usize), 0, len as usize) }
    }
}

impl Drop for Backing {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping created in `new`.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}
