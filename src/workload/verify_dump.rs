//! fio's `verify_dump`: a mismatching block (or `verify_interval` chunk) is
//! written to two files, what was read and what should have been there, named
//! as fio names them: `<file's base name>.<offset>.received` and
//! `<...>.expected`, in the working directory (fio's, without `--aux-path`).
//!
//! A mismatch is rare and already fails the job, so writing here, on the
//! worker, costs nothing the healthy path pays. A device that returns garbage
//! everywhere would make one file pair per block: after [`MAX_DUMPS`] pairs
//! the rest are counted and the job's end says how many were left out.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Mismatches one job writes to files; later ones are counted only.
pub const MAX_DUMPS: u32 = 64;

/// Where a job's mismatches go.
#[derive(Debug)]
pub struct Dumper {
    dir: PathBuf,
    /// The target's base name (`/dev/sdb` → `sdb`), as fio's dump names use.
    base: String,
    /// Job label for the messages.
    job: String,
    dumped: u32,
    left_out: u64,
}

impl Dumper {
    /// Dumps for `target` into `dir`.
    pub fn new(dir: PathBuf, target: &Path, job: String) -> Dumper {
        let base = target.file_name().map_or_else(
            || "target".to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Dumper {
            dir,
            base,
            job,
            dumped: 0,
            left_out: 0,
        }
    }

    /// The file a dump of `kind` ("received" or "expected") at `offset` goes to.
    pub fn path(&self, offset: u64, kind: &str) -> PathBuf {
        self.dir.join(format!("{}.{offset}.{kind}", self.base))
    }

    /// Write both sides of the mismatch at `offset`. A file that cannot be
    /// written is reported on stderr and the job goes on (the mismatch is
    /// already counted and reported; the dump is an aid).
    #[cold]
    pub fn dump(&mut self, offset: u64, received: &[u8], expected: &[u8]) {
        if self.dumped >= MAX_DUMPS {
            if self.left_out == 0 {
                eprintln!(
                    "iolab: warning: {}: verify_dump: {MAX_DUMPS} mismatches written to files; \
                     later ones are counted in the job's verify failures, not dumped",
                    self.job
                );
            }
            self.left_out += 1;
            return;
        }
        self.dumped += 1;
        for (kind, bytes) in [("received", received), ("expected", expected)] {
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
    fn names_follow_fio_and_the_cap_holds() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = Dumper::new(
            dir.path().to_path_buf(),
            Path::new("/dev/sdb"),
            "job x".into(),
        );
        assert_eq!(
            d.path(4096, "received"),
            dir.path().join("sdb.4096.received")
        );
        for i in 0..(MAX_DUMPS as u64 + 3) {
            d.dump(i * 512, &[1, 2], &[1, 3]);
        }
        assert_eq!(
            std::fs::read(dir.path().join("sdb.0.expected")).unwrap(),
            [1, 3]
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            2 * MAX_DUMPS as usize
        );
        assert_eq!(d.left_out, 3);
    }
}
