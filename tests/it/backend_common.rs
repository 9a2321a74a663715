//! Test resources for the backend tests: aligned buffers, temp files on the system
//! disk, and hot-added zram devices that are always removed (Drop guards).

#![allow(dead_code)]

use std::alloc::Layout;
use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use iolab::request::{Class, IoCmd, Op};

/// A zeroed, 4096-aligned buffer (O_DIRECT needs aligned memory).
pub struct AlignedBuf {
    ptr: *mut u8,
    layout: Layout,
}

impl AlignedBuf {
    pub fn new(len: usize) -> AlignedBuf {
        let layout = Layout::from_size_align(len, 4096).unwrap();
        // SAFETY: non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null());
        AlignedBuf { ptr, layout }
    }
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }
    pub fn len(&self) -> usize {
        self.layout.size()
    }
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: owned allocation of this size.
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: owned allocation of this size.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
    /// Fill with a pattern that identifies `tag` at every byte position.
    pub fn fill(&mut self, tag: u64) {
        for (i, b) in self.as_mut_slice().iter_mut().enumerate() {
            *b = pattern(tag, i);
        }
    }
    pub fn check(&self, tag: u64) -> bool {
        self.as_slice()
            .iter()
            .enumerate()
            .all(|(i, &b)| b == pattern(tag, i))
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

pub fn pattern(tag: u64, i: usize) -> u8 {
    (tag.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 24) as u8 ^ (i as u8).wrapping_mul(31)
}

pub fn cmd(op: Op, offset: u64, buf: &AlignedBuf, slot: u32) -> IoCmd {
    IoCmd::new(op, offset, buf.len() as u32, slot, buf.ptr())
        .with_buf_index(slot as u16)
        .with_class(Class::Read)
}

/// A 4 KiB read of `class` with no buffer, for the null device without a
/// backing (it moves no data).
pub fn null_read(slot: u32, offset: u64, class: Class) -> IoCmd {
    IoCmd::new(Op::Read, offset, 4096, slot, std::ptr::null_mut()).with_class(class)
}

/// A temp file on the system disk (ext4 on vda), removed on drop.
pub struct TempTarget {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
    pub file: File,
}

impl TempTarget {
    /// A file of `size` bytes opened read-write, with O_DIRECT when `direct`.
    pub fn new(size: u64, direct: bool) -> TempTarget {
        // /tmp lives on vda here; a file system with a block device under it is
        // what the backends are meant for.
        let dir = tempfile::Builder::new()
            .prefix("iolab-backend-")
            .tempdir_in(std::env::temp_dir())
            .unwrap();
        let path = dir.path().join("target");
        File::create(&path).unwrap().set_len(size).unwrap();
        let file = open(&path, direct, true);
        TempTarget { dir, path, file }
    }
    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

pub fn open(path: &Path, direct: bool, write: bool) -> File {
    let mut o = OpenOptions::new();
    o.read(true).write(write);
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
}

use crate::support::needs::{Need, ready, skip};

/// A zram device this test hot-added; reset and removed on drop, also on panic.
pub struct ZramGuard {
    pub id: u32,
}

impl ZramGuard {
    /// `None` (reported as skipped) where zram cannot be created.
    pub fn new(size: u64) -> Option<ZramGuard> {
        if !ready(&[Need::Zram]) {
            return None;
        }
        let id: u32 = match std::fs::read_to_string("/sys/class/zram-control/hot_add") {
            Ok(s) => s.trim().parse().ok()?,
            Err(e) => {
                skip(format_args!("zram hot_add failed: {e} (modprobe zram)"));
                return None;
            }
        };
        let g = ZramGuard { id };
        std::fs::write(format!("/sys/block/zram{id}/disksize"), size.to_string()).unwrap();
        // udev may create the node a little after the disk appears.
        for _ in 0..200 {
            if g.path().exists() {
                return Some(g);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        panic!("{} did not appear", g.path().display());
    }
    pub fn path(&self) -> PathBuf {
        PathBuf::from(format!("/dev/zram{}", self.id))
    }
    pub fn name(&self) -> String {
        format!("zram{}", self.id)
    }
}

impl Drop for ZramGuard {
    fn drop(&mut self) {
        let _ = std::fs::write(format!("/sys/block/zram{}/reset", self.id), "1");
        for _ in 0..100 {
            if std::fs::write("/sys/class/zram-control/hot_remove", self.id.to_string()).is_ok() {
                return;
            }
            // Busy while a descriptor is still being closed.
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        eprintln!("warning: could not remove zram{}", self.id);
    }
}
