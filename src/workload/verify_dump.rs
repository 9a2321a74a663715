//! fio's `verify_dump`: a mismatching block (or `verify_interval` chunk) is
//! written to two files, what was read and what should have been there, named
//! as fio names them: `<file's base name>.<offset>.received` and
//! `<...>.expected`, in the working directory (fio's, without `--aux-path`).
//! A chunk whose header is bad is written as read only, to
//! `<...>.<offset>.hdr_fail`, as fio does: without a sound header there is
//! no telling what should have been there.
//!
//! A mismatch is rare and already fails the job, so writing here, on the
//! worker, costs nothing the healthy path pays. Every mismatch is dumped, as
//! fio dumps every one: a device that returns garbage everywhere makes one
//! file pair per block (`verify_fatal=1` stops at the first).

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Where a job's mismatches go.
#[derive(Debug)]
pub struct Dumper {
    dir: PathBuf,
    /// The target's base name (`/dev/sdb` → `sdb`), as fio's dump names use.
    base: String,
    /// Job label for the messages.
    job: String,
}

impl Dumper {
    /// Dumps for `target` into `dir`.
    pub fn new(dir: PathBuf, target: &Path, job: String) -> Dumper {
        let base = target.file_name().map_or_else(
            || "target".to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Dumper { dir, base, job }
    }

    /// The file a dump of `kind` ("received" or "expected") at `offset` goes to.
    pub fn path(&self, offset: u64, kind: &str) -> PathBuf {
        self.dir.join(format!("{}.{offset}.{kind}", self.base))
    }

    /// Write both sides of the mismatch at `offset`. A file that cannot be
    /// written is reported on stderr and the job goes on (the mismatch is
    /// already counted and reported; the dump is an aid).
    #[cold]
    pub fn dump(&self, offset: u64, received: &[u8], expected: &[u8]) {
        self.write(offset, &[("received", received), ("expected", expected)]);
    }

    /// A block (or interval) whose header is bad: only what was read, as
    /// `<...>.<offset>.hdr_fail` (fio's name).
    #[cold]
    pub fn dump_header(&self, offset: u64, received: &[u8]) {
        self.write(offset, &[("hdr_fail", received)]);
    }

    fn write(&self, offset: u64, files: &[(&str, &[u8])]) {
        for &(kind, bytes) in files {
            let path = self.path(offset, kind);
            let res = std::fs::File::create(&path).and_then(|mut f| f.write_all(bytes));
            match res {
                Ok(()) => eprintln!(
                    "iolab: warning: {}: verify_dump: {kind} data at offset {offset} written to {}",
                    self.job,
                    path.display()
                ),
                Err(e) => eprintln!(
                    "iolab: warning: {}: verify_dump: cannot write {}: {e}; run from a writable \
                     directory to keep dumps",
                    self.job,
                    path.display()
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_fio_and_every_mismatch_is_dumped() {
        let dir = tempfile::tempdir().unwrap();
        let d = Dumper::new(
            dir.path().to_path_buf(),
            Path::new("/dev/sdb"),
            "job x".into(),
        );
        assert_eq!(
            d.path(4096, "received"),
            dir.path().join("sdb.4096.received")
        );
        // fio dumps every mismatch, however many there are.
        for i in 0..100u64 {
            d.dump(i * 512, &[1, 2], &[1, 3]);
        }
        assert_eq!(
            std::fs::read(dir.path().join("sdb.0.expected")).unwrap(),
            [1, 3]
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 200);
        assert_eq!(
            std::fs::read(dir.path().join("sdb.50688.received")).unwrap(),
            [1, 2]
        );
    }
}
