//! The backends iolab runs, by fio's `ioengine=` name: one variant per
//! backend. Its name is read from a job by `job::spec` (`Engine::parse`, with
//! the reasons fio's other engines are refused).

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
/// A device backend (fio's `ioengine=`): how requests reach the target.
pub enum Engine {
    /// iolab's emulated NVMe-like device: no disk, no root (docs/null-device.md).
    Null,
    /// pread/pwrite.
    Psync,
    /// preadv2/pwritev2 (per-call flags: hipri, nowait).
    Pvsync2,
    /// io_uring: submission and completion rings shared with the kernel.
    IoUring,
    /// lseek + read/write.
    Sync,
    /// lseek + readv/writev.
    Vsync,
    /// preadv/pwritev.
    Pvsync,
    /// Linux kernel AIO (io_submit/io_getevents).
    Libaio,
    /// The target mapped with mmap(2); reads and writes are memcpy.
    Mmap,
    /// POSIX AIO through glibc (aio_read/aio_write), whose helper threads
    /// perform each request with pread/pwrite.
    Posixaio,
    /// fallocate(2) as the I/O: writes allocate, reads allocate keeping the
    /// size, trims punch holes.
    Falloc,
    /// ftruncate(2) to each write's offset as the I/O.
    Ftruncate,
    /// Each file's open(O_CREAT), timed.
    FileCreate,
    /// Each file's stat/lstat/statx (`stat_type`), timed.
    FileStat,
    /// Each file's unlink(2), timed.
    FileDelete,
    /// No I/O: burns CPU (`cpuload`, `cpuchunks`, `cpumode`).
    Cpuio,
}

impl Engine {
    /// The engine's fio name (`ioengine=` value).
    pub fn fio_name(self) -> &'static str {
        match self {
            Engine::Null => "null",
            Engine::Psync => "psync",
            Engine::Pvsync2 => "pvsync2",
            Engine::IoUring => "io_uring",
            Engine::Sync => "sync",
            Engine::Vsync => "vsync",
            Engine::Pvsync => "pvsync",
            Engine::Libaio => "libaio",
            Engine::Mmap => "mmap",
            Engine::Posixaio => "posixaio",
            Engine::Falloc => "falloc",
            Engine::Ftruncate => "ftruncate",
            Engine::FileCreate => "filecreate",
            Engine::FileStat => "filestat",
            Engine::FileDelete => "filedelete",
            Engine::Cpuio => "cpuio",
        }
    }

    /// The engine performs each I/O inside the submitting system call
    /// (completion model `sync` only).
    pub fn is_sync(self) -> bool {
        matches!(
            self,
            Engine::Sync
                | Engine::Psync
                | Engine::Vsync
                | Engine::Pvsync
                | Engine::Pvsync2
                | Engine::Mmap
                | Engine::Falloc
                | Engine::Ftruncate
                | Engine::FileCreate
                | Engine::FileStat
                | Engine::FileDelete
                | Engine::Cpuio
        )
    }

    /// fio's file-operation engines: the timed operation is on the file as a
    /// whole (create, stat, delete), one request per file.
    pub fn is_file_op(self) -> bool {
        matches!(
            self,
            Engine::FileCreate | Engine::FileStat | Engine::FileDelete
        )
    }
}
