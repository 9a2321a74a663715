//! Target probing against what sysfs and the kernel say directly.

use crate::backend_common;

use std::fs;

use backend_common::*;
use iolab::probe::caps::{NodeKind, Outcome, probe_target};

fn sysfs(disk: &str, attr: &str) -> String {
    fs::read_to_string(format!("/sys/block/{disk}/queue/{attr}"))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn regular_file_on_the_system_disk() {
    let t = TempTarget::new(12345, false);
    let c = probe_target(&t.path).unwrap();
    assert_eq!(c.kind, NodeKind::RegularFile);
    assert_eq!(c.size, 12345);
    let q = c
        .block_device
        .as_ref()
        .expect("/tmp is on a block device here");
    let disk = &q.disk;
    assert!(!disk.is_empty() && fs::metadata(format!("/sys/block/{disk}")).is_ok());
    assert_eq!(
        c.logical_block_size.unwrap().to_string(),
        sysfs(disk, "logical_block_size")
    );
    assert_eq!(
        c.physical_block_size.unwrap().to_string(),
        sysfs(disk, "physical_block_size")
    );
    assert_eq!(c.io_poll, Some(sysfs(disk, "io_poll") == "1"));
    assert_eq!(c.rotational, Some(sysfs(disk, "rotational") == "1"));
    assert_eq!(
        c.nr_requests.unwrap().to_string(),
        sysfs(disk, "nr_requests")
    );
    let sched = c.scheduler.as_ref().unwrap();
    assert!(sysfs(disk, "scheduler").contains(&format!("[{}]", sched.current)));
    assert_eq!(c.o_direct_ok, Outcome::Yes);
    // ext4 reports its direct I/O alignment through statx.
    assert!(c.dio_offset_align.unwrap() >= 512);
    // Reading a hole never blocks.
    assert_eq!(c.nowait.rwf_nowait, Outcome::Yes);
    eprintln!("{}", serde_json::to_string_pretty(&c).unwrap());
}

#[test]
fn missing_target_is_an_error_naming_it() {
    let e = probe_target("/nonexistent/iolab-probe")
        .unwrap_err()
        .to_string();
    assert!(e.contains("/nonexistent/iolab-probe"), "{e}");
}

#[test]
fn char_device_is_recognised() {
    let c = probe_target("/dev/null").unwrap();
    assert_eq!(c.kind, NodeKind::CharDevice);
    assert!(c.block_device.is_err());
    assert!(matches!(c.nowait.uring_punted, Outcome::Unknown(_)));
}

#[test]
fn zram_block_device() {
    let Some(z) = ZramGuard::new(32 << 20) else {
        return;
    };
    let c = probe_target(z.path()).unwrap();
    eprintln!("{}", serde_json::to_string_pretty(&c).unwrap());
    assert_eq!(c.kind, NodeKind::BlockDevice);
    assert_eq!(c.size, 32 << 20);
    let q = c.block_device.as_ref().unwrap();
    assert_eq!(
        (q.disk.as_str(), q.partition.as_deref()),
        (z.name().as_str(), None)
    );
    assert_eq!(
        c.logical_block_size.unwrap().to_string(),
        sysfs(&z.name(), "logical_block_size")
    );
    assert_eq!(c.io_poll, Some(false));
    assert_eq!(c.o_direct_ok, Outcome::Yes);
    // zram lacks NOWAIT: io_uring has to hand its I/O to io-wq workers.
    assert_eq!(c.nowait.uring_punted, Outcome::Yes);
    drop(c);
    drop(z);
}
