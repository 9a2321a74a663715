//! Ring setup for flags the `io-uring` crate's builder cannot set.
//!
//! io-uring 0.7.15 has no builder call for `IORING_SETUP_HYBRID_IOPOLL`
//! (Linux 6.13: with IOPOLL, the kernel sleeps once per request before it polls
//! the device, for half the ring's smallest observed "completion time minus
//! sleep"). It does take a ring made elsewhere (`IoUring::from_fd` with the
//! parameters the kernel filled in), so here we call io_uring_setup(2) ourselves
//! with the flags the job asks for and hand the ring to the crate; everything
//! after setup (mapping the rings, submitting, reaping) stays the crate's.

use std::os::fd::RawFd;

use io_uring::IoUring;

/// include/uapi/linux/io_uring.h.
pub const SETUP_IOPOLL: u32 = 1 << 0;
pub const SETUP_SQPOLL: u32 = 1 << 1;
pub const SETUP_SQ_AFF: u32 = 1 << 2;
pub const SETUP_CQSIZE: u32 = 1 << 3;
pub const SETUP_HYBRID_IOPOLL: u32 = 1 << 17;

/// `struct io_uring_params` as the kernel lays it out (120 bytes): the scalar
/// fields we set, and the two offset blocks (`io_sqring_offsets`,
/// `io_cqring_offsets`, 40 bytes each) the kernel fills in and the crate reads.
#[repr(C, align(8))]
#[derive(Clone, Copy, Default)]
struct RawParams {
    sq_entries: u32,
    cq_entries: u32,
    flags: u32,
    sq_thread_cpu: u32,
    sq_thread_idle: u32,
    features: u32,
    wq_fd: u32,
    resv: [u32; 3],
    sq_off: [u32; 10],
    cq_off: [u32; 10],
}

/// What the ring is to be set up with.
#[derive(Clone, Copy, Debug)]
pub struct RawSetup {
    pub entries: u32,
    pub cq_entries: u32,
    pub flags: u32,
    pub sq_thread_idle_ms: u32,
    pub sq_thread_cpu: Option<u32>,
}

/// io_uring_setup(2) with `s.flags`, then the crate's ring over the new fd.
pub fn build(s: &RawSetup) -> std::io::Result<IoUring> {
    let mut p = RawParams {
        cq_entries: s.cq_entries,
        flags: s.flags | SETUP_CQSIZE,
        sq_thread_idle: s.sq_thread_idle_ms,
        ..RawParams::default()
    };
    if let Some(cpu) = s.sq_thread_cpu {
        p.flags |= SETUP_SQ_AFF;
        p.sq_thread_cpu = cpu;
    }
    // SAFETY: io_uring_setup reads and writes exactly one io_uring_params, which
    // RawParams mirrors field for field (size checked by the transmute below).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_io_uring_setup,
            s.entries as libc::c_long,
            &mut p as *mut RawParams,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `Parameters` is a transparent wrapper of the crate's copy of
    // io_uring_params, documented as constructible from any properly laid-out
    // value; transmute refuses to compile if the sizes differ. `fd` is a ring we
    // just created and own; `from_fd` takes it over (and closes it on error).
    unsafe {
        let params: io_uring::Parameters = std::mem::transmute::<RawParams, _>(p);
        IoUring::from_fd(fd as RawFd, params)
    }
}

/// The running kernel's (major, minor), from uname(2).
pub fn kernel_version() -> Option<(u32, u32)> {
    // SAFETY: a zeroed utsname is a valid out-parameter for uname.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: uname fills the struct we own.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    // SAFETY: uname NUL-terminates `release`.
    let rel = unsafe { std::ffi::CStr::from_ptr(u.release.as_ptr()) };
    parse_version(&rel.to_string_lossy())
}

fn parse_version(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// Why this kernel cannot set up a ring with `IORING_SETUP_HYBRID_IOPOLL`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HybridIopollUnsupported {
    #[error("kernel {major}.{minor} is older than 6.13, the first with IORING_SETUP_HYBRID_IOPOLL")]
    KernelTooOld { major: u32, minor: u32 },
    #[error("the kernel version cannot be read (uname failed)")]
    UnknownKernel,
}

/// Whether this kernel knows `IORING_SETUP_HYBRID_IOPOLL` (Linux 6.13), or why not.
pub fn hybrid_iopoll_kernel() -> Result<(), HybridIopollUnsupported> {
    match kernel_version() {
        Some(v) if v >= (6, 13) => Ok(()),
        Some((major, minor)) => Err(HybridIopollUnsupported::KernelTooOld { major, minor }),
        None => Err(HybridIopollUnsupported::UnknownKernel),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions_parse() {
        assert_eq!(parse_version("6.18.0-rc1"), Some((6, 18)));
        assert_eq!(parse_version("6.13"), Some((6, 13)));
        assert_eq!(parse_version("5.4.0-150-generic"), Some((5, 4)));
        assert_eq!(parse_version("garbage"), None);
        assert!(kernel_version().is_some());
    }

    #[test]
    fn hybrid_iopoll_flag_reaches_the_kernel() {
        // Setting up the ring needs no device; the kernel checks the flags here.
        let r = build(&RawSetup {
            entries: 4,
            cq_entries: 8,
            flags: SETUP_IOPOLL | SETUP_HYBRID_IOPOLL,
            sq_thread_idle_ms: 0,
            sq_thread_cpu: None,
        });
        match (hybrid_iopoll_kernel(), r) {
            (Ok(()), Ok(ring)) => assert!(ring.params().is_setup_iopoll()),
            (Ok(()), Err(e)) => panic!("Linux >= 6.13 refused HYBRID_IOPOLL: {e}"),
            (Err(why), r) => {
                println!("SKIPPED: {why}");
                assert!(
                    r.is_err(),
                    "a pre-6.13 kernel accepted an unknown setup flag"
                );
            }
        }
        // Without IOPOLL the flag is meaningless and the kernel says so.
        let lone = build(&RawSetup {
            entries: 4,
            cq_entries: 8,
            flags: SETUP_HYBRID_IOPOLL,
            sq_thread_idle_ms: 0,
            sq_thread_cpu: None,
        });
        assert_eq!(
            lone.err().and_then(|e| e.raw_os_error()),
            Some(libc::EINVAL)
        );
    }

    #[test]
    fn raw_params_match_the_kernel_layout() {
        assert_eq!(std::mem::size_of::<RawParams>(), 120);
        assert_eq!(std::mem::align_of::<RawParams>(), 8);
    }

    #[test]
    fn builds_a_working_ring_without_special_flags() {
        let ring = match build(&RawSetup {
            entries: 4,
            cq_entries: 8,
            flags: 0,
            sq_thread_idle_ms: 0,
            sq_thread_cpu: None,
        }) {
            Ok(r) => r,
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                println!("SKIPPED: no io_uring in this kernel ({e})");
                return;
            }
            Err(e) => panic!("io_uring_setup: {e}"),
        };
        assert_eq!(ring.params().cq_entries(), 8);
        assert!(!ring.params().is_setup_iopoll());
        // A NOP goes round the ring: the crate drives our ring as its own.
        let mut ring = ring;
        let nop = io_uring::opcode::Nop::new().build().user_data(7);
        // SAFETY: a NOP refers to no memory.
        unsafe { ring.submission().push(&nop).unwrap() };
        ring.submit_and_wait(1).unwrap();
        let cqe = ring.completion().next().unwrap();
        assert_eq!((cqe.user_data(), cqe.result()), (7, 0));
    }
}
