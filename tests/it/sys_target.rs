//! open_target on files (always) and block devices (zram, root only).

use crate::support;

use support::needs::{Need, ready, skip};

use std::os::unix::fs::FileExt;

use iolab::device::target::{Layout, TargetErrorKind, TargetKind, TargetSpec, open_target};
use iolab::sys::zram::Zram;

fn dir() -> tempfile::TempDir {
    // The system disk's filesystem supports O_DIRECT; tmpfs may not.
    tempfile::Builder::new()
        .prefix("iolab-target")
        .tempdir_in(std::env::temp_dir())
        .unwrap()
}

#[test]
fn missing_file_is_created_and_laid_out_with_data() {
    let d = dir();
    let p = d.path().join("job.0.0");
    let mut s = TargetSpec::new("lay", &p);
    s.size = Some(3 << 20);
    s.offset = 4096;
    let t = open_target(&s).unwrap();
    assert_eq!(t.kind, TargetKind::File);
    assert_eq!(t.size, 3 << 20);
    assert_eq!(t.laid_out, (3 << 20) + 4096);
    assert_eq!(std::fs::metadata(&p).unwrap().len(), (3 << 20) + 4096);
    // Laid out with real (random) data: no block reads back as zeroes.
    let mut b = vec![0u8; 4096];
    for off in (0..(3u64 << 20)).step_by(1 << 18) {
        t.file.read_exact_at(&mut b, off).unwrap();
        assert!(b.iter().any(|&x| x != 0), "zero block at {off}");
    }
    // Blocks are allocated, not holes.
    let md = std::fs::metadata(&p).unwrap();
    assert!(std::os::unix::fs::MetadataExt::blocks(&md) * 512 >= (3 << 20));
    // Opening again finds it long enough: no second layout.
    assert_eq!(open_target(&s).unwrap().laid_out, 0);
}

#[test]
fn short_file_is_extended_and_zero_layout_writes_zeroes() {
    let d = dir();
    let p = d.path().join("short");
    std::fs::write(&p, vec![1u8; 8192]).unwrap();
    let mut s = TargetSpec::new("ext", &p);
    s.size = Some(1 << 20);
    s.layout = Layout::Zero;
    s.writes = true;
    let t = open_target(&s).unwrap();
    assert_eq!(t.laid_out, (1 << 20) - 8192);
    let mut b = [9u8; 512];
    t.file.read_exact_at(&mut b, 0).unwrap();
    assert_eq!(b, [1u8; 512], "existing data kept");
    t.file.read_exact_at(&mut b, 1 << 19).unwrap();
    assert_eq!(b, [0u8; 512]);
}

#[test]
fn read_of_missing_file_without_size_names_file_and_size() {
    let d = dir();
    let p = d.path().join("nope");
    let e = open_target(&TargetSpec::new("reader", &p)).unwrap_err();
    assert!(matches!(e.kind, TargetErrorKind::NeedSize));
    let m = e.to_string();
    assert!(m.starts_with("job reader: "), "{m}");
    assert!(
        m.contains(&p.display().to_string()) && m.contains("size="),
        "{m}"
    );
    assert!(!p.exists(), "a failed open must not create the file");
}

#[test]
fn existing_file_without_size_uses_the_rest_after_offset() {
    let d = dir();
    let p = d.path().join("have");
    std::fs::write(&p, vec![3u8; 64 << 10]).unwrap();
    let mut s = TargetSpec::new("r", &p);
    s.offset = 16 << 10;
    let t = open_target(&s).unwrap();
    assert_eq!((t.offset, t.size, t.laid_out), (16 << 10, 48 << 10, 0));
    s.offset = 64 << 10;
    let e = open_target(&s).unwrap_err().to_string();
    assert!(e.contains("offset=65536") && e.contains("size="), "{e}");
}

#[test]
fn direct_needs_aligned_bs_and_offset() {
    let d = dir();
    let p = d.path().join("dio");
    let mut s = TargetSpec::new("dio", &p);
    s.size = Some(1 << 20);
    s.direct = true;
    let t = open_target(&s).unwrap();
    assert!(t.logical_block_size >= 512 && t.mem_align >= 1);
    let lbs = t.logical_block_size;
    s.min_bs = 1000;
    let e = open_target(&s).unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("bs=1000") && m.contains(&format!("logical block size {lbs}")),
        "{m}"
    );
    s.min_bs = 4096;
    s.offset = 100;
    let m = open_target(&s).unwrap_err().to_string();
    assert!(m.contains("offset=100"), "{m}");
    // Buffered I/O has no such requirement.
    s.direct = false;
    s.min_bs = 1000;
    open_target(&s).unwrap();
}

#[test]
fn direct_on_tmpfs_opens_or_says_why_not() {
    let shm = std::path::Path::new("/dev/shm");
    if !shm.is_dir() {
        skip("needs tmpfs at /dev/shm (mount -t tmpfs tmpfs /dev/shm)");
        return;
    }
    let d = tempfile::tempdir_in(shm).unwrap();
    let mut s = TargetSpec::new("shm", d.path().join("f"));
    s.size = Some(64 << 10);
    s.direct = true;
    match open_target(&s) {
        // tmpfs gained O_DIRECT in Linux 6.6.
        Ok(t) => assert!(t.logical_block_size > 0),
        Err(e) => {
            let m = e.to_string();
            assert!(
                m.contains("does not support O_DIRECT") && m.contains("direct=0"),
                "{m}"
            );
        }
    }
}

#[test]
fn directory_is_refused() {
    let d = dir();
    let e = open_target(&TargetSpec::new("d", d.path()))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("is a directory") && e.contains("filename="),
        "{e}"
    );
}

#[test]
fn block_device_sizes_and_alignment() {
    if !ready(&[Need::Zram]) {
        return;
    }
    let z = Zram::create(32 << 20).unwrap();
    let mut s = TargetSpec::new("zr", z.path());
    let t = open_target(&s).unwrap();
    assert_eq!(t.kind, TargetKind::BlockDevice);
    assert_eq!(t.size, 32 << 20);
    assert_eq!(t.laid_out, 0);
    let lbs = t.logical_block_size;
    assert!(lbs >= 512);
    drop(t);
    s.offset = 1 << 20;
    assert_eq!(open_target(&s).unwrap().size, 31 << 20);
    s.size = Some(32 << 20);
    let m = open_target(&s).unwrap_err().to_string();
    assert!(
        m.contains(&format!("{} bytes", 33u64 << 20))
            && m.contains(&format!("{} bytes", 32u64 << 20)),
        "{m}"
    );
    s.size = None;
    s.offset = 0;
    s.direct = true;
    s.max_bs = lbs / 2;
    let m = open_target(&s).unwrap_err().to_string();
    assert!(
        m.contains(&format!("bs={}", lbs / 2)) && m.contains(&format!("{lbs}")),
        "{m}"
    );
    // A blank zram passes the safety check for a write job.
    s.max_bs = lbs;
    s.writes = true;
    open_target(&s).unwrap();
}

/// The status flags the kernel keeps for an open file (fcntl F_GETFL).
fn status_flags(f: &std::fs::File) -> i32 {
    use std::os::fd::AsRawFd;
    // SAFETY: F_GETFL on a descriptor this File owns.
    unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) }
}

#[test]
fn block_devices_are_opened_without_atime_updates_as_fio_opens_them() {
    // A regular file keeps its access time, as with fio (it adds O_NOATIME
    // only for targets that are not regular files).
    let d = dir();
    let mut s = TargetSpec::new("f", d.path().join("f"));
    s.size = Some(1 << 20);
    let t = open_target(&s).unwrap();
    assert_eq!(status_flags(&t.file) & libc::O_NOATIME, 0);
    if !ready(&[Need::Zram]) {
        return;
    }
    let z = Zram::create(8 << 20).unwrap();
    let t = open_target(&TargetSpec::new("zr", z.path())).unwrap();
    assert_ne!(
        status_flags(&t.file) & libc::O_NOATIME,
        0,
        "a block device read must not update the node's atime on every read"
    );
}
