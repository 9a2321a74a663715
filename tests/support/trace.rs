//! Helpers shared by the live block-tracing tests (each its own binary: one
//! runs on the TSC engine clock, the other on CLOCK_MONOTONIC).

use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

use crate::support::needs::{Need, ready, skip};
use iolab::measure::blktrace::{BlockTraceOptions, UserIo};
use iolab::measure::clock;
use iolab::request::Op;

pub fn root() -> bool {
    ready(&[Need::Root])
}

pub fn opts() -> BlockTraceOptions {
    BlockTraceOptions {
        buffer_kb: 2048,
        drain_every: Duration::from_millis(20),
        sampling: None,
    }
}

/// O_DIRECT 4 KiB reads, each stamped on the engine clock and on CLOCK_MONOTONIC.
pub fn direct_reads(dev: &Path, n: u64) -> (Vec<UserIo>, Vec<(u64, u64)>) {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)
        .unwrap();
    let layout = std::alloc::Layout::from_size_align(4096, 4096).unwrap();
    // SAFETY: non-zero size; freed below.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    // SAFETY: p is valid for 4096 bytes until dealloc.
    let buf = unsafe { std::slice::from_raw_parts_mut(p, 4096) };
    let (mut user, mut mono) = (Vec::new(), Vec::new());
    for i in 0..n {
        let offset = (i * 13 % 1024) * 4096;
        let m0 = clock::monotonic_ns();
        let t0 = clock::now_ns();
        let r = f.read_at(buf, offset).unwrap();
        let t1 = clock::now_ns();
        let m1 = clock::monotonic_ns();
        assert_eq!(r, 4096);
        user.push(UserIo {
            offset,
            len: 4096,
            op: Op::Read,
            t_submit_start: t0,
            t_submit_end: t1,
            t_complete_seen: t1,
        });
        mono.push((m0, m1));
    }
    // SAFETY: allocated above with this layout.
    unsafe { std::alloc::dealloc(p, layout) };
    (user, mono)
}

/// A hot-added 16 MiB zram, or None after saying why the test skips.
pub fn zram_16m() -> Option<iolab::sys::zram::Zram> {
    iolab::sys::zram::Zram::create(16 << 20)
        .map_err(|e| skip(format_args!("no zram: {e:#} (modprobe zram)")))
        .ok()
}

/// A direct-I/O loop device over `file`, or None after saying why the test skips.
pub fn loop_on(file: &Path) -> Option<iolab::sys::loopdev::LoopDev> {
    iolab::sys::loopdev::LoopDev::attach(file, true)
        .map_err(|e| skip(format_args!("no loop device: {e:#} (modprobe loop)")))
        .ok()
}
