//! fio's file-set options, parsed: how many files a job uses (`nrfiles`, a
//! `filename` list `a:b:c`), what they are called (`filename_format`,
//! `directory` with a `:` list), which one each request goes to
//! (`file_service_type`), and how they are prepared (`fallocate`, `pre_read`,
//! `create_on_open`) and left (`unlink`).
//!
//! Parsers, checks and file names are `job::files_opts`; the engine opens
//! the set (`engine::files`).

/// fio's `file_service_type`: which file the next request goes to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ServiceKind {
    /// The next file every `every` requests (fio's default).
    #[default]
    RoundRobin,
    /// Each file to its end before the next.
    Sequential,
    /// A file drawn uniformly every `every` requests.
    Random,
    /// A file drawn per request by fio's zipf, pareto or normal (gauss)
    /// distribution over the files (`JobSpec::file_service_dist`), the hot
    /// files placed as `random_distribution` places hot blocks.
    Distributed,
}

// fio's `fallocate` is how the target lays a file out (device::target).
pub use crate::device::target::Fallocate;

/// The job's files.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FileSpec {
    /// Files per job clone.
    pub nrfiles: u32,
    /// `openfiles`: files open at once (0 = all); iolab needs all.
    pub openfiles: u32,
    pub service: ServiceKind,
    /// Requests to one file before the service picks again (`:N`).
    pub service_every: u32,
    /// `filename_format`; `None` = fio's `$jobname.$jobnum.$filenum`.
    pub filename_format: Option<String>,
    pub fallocate: Fallocate,
    pub pre_read: bool,
    pub unlink: bool,
    /// fio's `allow_file_create`: false = never create or extend a file; a
    /// missing or short one is an error before the first I/O.
    pub allow_create: bool,
    /// fio's `overwrite`: a write-only job lays its file out first, so its
    /// writes overwrite written blocks (default 0: a missing or short file is
    /// created and the job's writes fill it).
    pub overwrite: bool,
    /// fio's `create_fsync`: fsync a file after laying it out (default 1).
    pub create_fsync: bool,
    /// fio's `create_only`: set the files up and do no I/O.
    pub create_only: bool,
    /// fio's `file_append`: a regular file's region starts at its end.
    pub file_append: bool,
    /// fio's `opendir`: every regular file below this directory is a file of the job.
    pub opendir: Option<String>,
    /// fio's `unlink_each_loop`: delete the files before each loop after the
    /// first, to be made again (`engine::files::Relayout`).
    pub unlink_each_loop: bool,
    /// Each file's own size, settled when the job starts
    /// (`engine::files::file_sizes`): fio's `filesize` range (low, high; a
    /// size drawn per file), or a fixed `filesize` with `size=N%`. `None`:
    /// every file is `size` / `nrfiles` (today's fixed `filesize` included).
    pub sizes: Option<FileSizes>,
}

/// fio's per-file sizes (`filesize=LOW-HIGH`, or `filesize` with `size=N%`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FileSizes {
    /// The range a file's size is drawn from (`low == high`: fixed).
    pub low: u64,
    pub high: u64,
    /// `size=N%`: each file's I/O covers N% of its size (fio's per-file rule).
    pub percent: Option<u32>,
}

impl Default for FileSpec {
    fn default() -> Self {
        FileSpec {
            nrfiles: 1,
            openfiles: 0,
            service: ServiceKind::RoundRobin,
            service_every: 1,
            filename_format: None,
            fallocate: Fallocate::None,
            pre_read: false,
            unlink: false,
            allow_create: true,
            overwrite: false,
            create_fsync: true,
            create_only: false,
            file_append: false,
            opendir: None,
            unlink_each_loop: false,
            sizes: None,
        }
    }
}
