//! zram, loop devices and the scheduler guard on devices these tests create.
//! Needs root (as in CI); without it each test says why it skips.

use crate::support;

use support::needs::{Need, ready};

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;

use iolab::sys::blockdev::{BlockDev, ElevatorGuard};
use iolab::sys::cleanup;
use iolab::sys::loopdev::LoopDev;
use iolab::sys::zram::Zram;

fn root_or_skip(what: &str) -> bool {
    ready(&[match what {
        w if w.contains("zram") => Need::Zram,
        w if w.contains("loop") => Need::Loop,
        _ => Need::Root,
    }])
}

fn backing_file(bytes: usize) -> tempfile::NamedTempFile {
    // On the system disk's filesystem (not tmpfs) so the loop driver can use O_DIRECT.
    let mut f = tempfile::Builder::new()
        .prefix("iolab-sys-test")
        .tempfile_in(std::env::temp_dir())
        .unwrap();
    f.write_all(&vec![0u8; bytes]).unwrap();
    f.as_file().sync_all().unwrap();
    f
}

#[test]
fn zram_is_created_sized_and_removed() {
    if !root_or_skip("zram") {
        return;
    }
    let z = Zram::create(64 << 20).unwrap();
    let sys = format!("/sys/block/{}", z.name());
    assert!(Path::new(&sys).exists());
    let dev = BlockDev::from_path(&z.path()).unwrap();
    assert_eq!(dev.name, z.name());
    assert_eq!(dev.size_bytes().unwrap(), 64 << 20);
    assert!(
        cleanup::pending()
            .iter()
            .any(|p| p == &format!("remove {}", z.name()))
    );
    // It is a working block device: write and read back a block.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(z.path())
        .unwrap();
    f.write_all_at(&[0xA5u8; 4096], 8192).unwrap();
    let mut back = [0u8; 4096];
    f.read_exact_at(&mut back, 8192).unwrap();
    assert_eq!(back, [0xA5u8; 4096]);
    drop(f);
    let name = z.name();
    drop(z);
    assert!(!Path::new(&sys).exists(), "{sys} still exists after drop");
    assert!(
        !cleanup::pending()
            .iter()
            .any(|p| p == &format!("remove {name}"))
    );
}

#[test]
fn zram_of_zero_bytes_is_refused() {
    let e = Zram::create(0).unwrap_err().to_string();
    assert!(e.contains("size must be > 0"), "{e}");
}

#[test]
fn loop_attaches_with_direct_io_and_detaches() {
    if !root_or_skip("loop") {
        return;
    }
    let f = backing_file(8 << 20);
    let l = LoopDev::attach(f.path(), true).unwrap();
    let sys = format!("/sys/block/{}", l.name());
    assert!(l.dio_active().unwrap());
    let backing = std::fs::read_to_string(format!("{sys}/loop/backing_file")).unwrap();
    assert_eq!(Path::new(backing.trim()), f.path().canonicalize().unwrap());
    let dev = BlockDev::from_path(&l.path()).unwrap();
    assert_eq!(dev.size_bytes().unwrap(), 8 << 20);
    // Data written through the loop device lands in the file.
    l.file().write_all_at(&[7u8; 4096], 4096).unwrap();
    l.file().sync_all().unwrap();
    let mut back = [0u8; 4096];
    f.as_file().read_exact_at(&mut back, 4096).unwrap();
    assert_eq!(back, [7u8; 4096]);
    drop(l);
    // Detach is visible as the loop attributes going away.
    let gone = (0..100).any(|_| {
        let g = !Path::new(&format!("{sys}/loop/backing_file")).exists();
        if !g {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        g
    });
    assert!(gone, "{sys} still attached after drop");
}

#[test]
fn loop_without_direct_io_runs_buffered() {
    if !root_or_skip("loop") {
        return;
    }
    let f = backing_file(1 << 20);
    let l = LoopDev::attach(f.path(), false).unwrap();
    assert!(!l.dio_active().unwrap());
}

#[test]
fn scheduler_guard_restores_previous() {
    if !root_or_skip("scheduler") {
        return;
    }
    let f = backing_file(1 << 20);
    let l = LoopDev::attach(f.path(), true).unwrap();
    let dev = BlockDev::from_path(&l.path()).unwrap();
    let before = dev.scheduler().unwrap();
    let before_cur = before.current.clone().unwrap();
    let other = before
        .available
        .iter()
        .find(|s| **s != before_cur)
        .expect("a blk-mq loop device offers more than one scheduler")
        .clone();
    {
        let g = ElevatorGuard::set(&dev, &other).unwrap();
        assert_eq!(g.previous(), before_cur);
        assert_eq!(
            dev.scheduler().unwrap().current.as_deref(),
            Some(other.as_str())
        );
    }
    assert_eq!(dev.scheduler().unwrap().current, Some(before_cur));
    let e = ElevatorGuard::set(&dev, "no-such-sched")
        .unwrap_err()
        .to_string();
    assert!(e.contains("not available") && e.contains(&l.name()), "{e}");
}

#[test]
fn zram_offers_no_scheduler_choice() {
    if !root_or_skip("zram scheduler") {
        return;
    }
    let z = Zram::create(16 << 20).unwrap();
    let dev = BlockDev::from_path(&z.path()).unwrap();
    let e = ElevatorGuard::set(&dev, "bfq").unwrap_err().to_string();
    assert!(
        e.contains("no I/O scheduler") && e.contains(&z.name()),
        "{e}"
    );
}
