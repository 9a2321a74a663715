//! The engines iolab runs: the one list of them. Each row is a variant, its
//! fio `ioengine=` name and what it is; the enum, [`Engine::fio_name`],
//! [`Engine::from_fio_name`] (which `job::spec`'s `Engine::parse` reads a job
//! with), [`Engine::ALL`] and the texts that list the engines for messages
//! and help ([`ENGINE_NAMES`], [`ENGINES_EXPECTED`], [`IOENGINE_HELP`]) are
//! all derived from it. An engine's name is written here and in its own room
//! in `device/` only (`tests/it/architecture.rs` checks it).

/// The list, in the order messages and help show it. Builds the enum and
/// everything derived from the names.
macro_rules! engines {
    ($($(#[doc = $doc:literal])* $v:ident = $name:literal,)+) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
        #[serde(rename_all = "lowercase")]
        /// A device backend (fio's `ioengine=`): how requests reach the target.
        pub enum Engine {
            $($(#[doc = $doc])* $v,)+
        }

        impl Engine {
            /// Every engine, in the list's order.
            pub const ALL: &'static [Engine] = &[$(Engine::$v),+];

            /// The engine's fio name (`ioengine=` value).
            pub const fn fio_name(self) -> &'static str {
                match self {
                    $(Engine::$v => $name,)+
                }
            }

            /// The engine a name in the list stands for.
            fn by_name(name: &str) -> Option<Engine> {
                match name {
                    $($name => Some(Engine::$v),)+
                    _ => None,
                }
            }
        }

        /// The engines `ioengine=` accepts, for messages.
        pub const ENGINE_NAMES: &str = engines!(@join ", " $($name)+);

        /// `ioengine=`'s valid values, for the option table's "expects".
        pub const ENGINES_EXPECTED: &str = concat!("one of ", engines!(@join ", " $($name)+));

        /// The `ioengine` option's help line.
        pub const IOENGINE_HELP: &str = concat!(
            engines!(@join " " $($name)+),
            " (null is iolab's emulated device); linuxaio and aio are libaio, as in fio"
        );
    };
    (@join $sep:literal $first:literal $($rest:literal)*) => {
        concat!($first $(, $sep, $rest)*)
    };
}

engines! {
    /// iolab's emulated NVMe-like device: no disk, no root (docs/null-device.md).
    Null = "null",
    /// lseek + read/write.
    Sync = "sync",
    /// pread/pwrite.
    Psync = "psync",
    /// lseek + readv/writev.
    Vsync = "vsync",
    /// preadv/pwritev.
    Pvsync = "pvsync",
    /// preadv2/pwritev2 (per-call flags: hipri, nowait).
    Pvsync2 = "pvsync2",
    /// Linux kernel AIO (io_submit/io_getevents).
    Libaio = "libaio",
    /// io_uring: submission and completion rings shared with the kernel.
    IoUring = "io_uring",
    /// POSIX AIO through glibc (aio_read/aio_write), whose helper threads
    /// perform each request with pread/pwrite.
    Posixaio = "posixaio",
    /// The target mapped with mmap(2); reads and writes are memcpy.
    Mmap = "mmap",
    /// fallocate(2) as the I/O: writes allocate, reads allocate keeping the
    /// size, trims punch holes.
    Falloc = "falloc",
    /// ftruncate(2) to each write's offset as the I/O.
    Ftruncate = "ftruncate",
    /// Each file's open(O_CREAT), timed.
    FileCreate = "filecreate",
    /// Each file's stat/lstat/statx (`stat_type`), timed.
    FileStat = "filestat",
    /// Each file's unlink(2), timed.
    FileDelete = "filedelete",
    /// No I/O: burns CPU (`cpuload`, `cpuchunks`, `cpumode`).
    Cpuio = "cpuio",
}

impl Engine {
    /// The engine an `ioengine=` value names: a name in the list, or one of
    /// fio's other names for libaio (fio compares only their first letters).
    pub fn from_fio_name(name: &str) -> Option<Engine> {
        Engine::by_name(name).or_else(|| {
            (name.starts_with("linuxaio") || name.starts_with("aio")).then_some(Engine::Libaio)
        })
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
