//! fio's options about a job's target beyond the file set (`job::files`),
//! as types: the hints given to the kernel (`fadvise_hint`, `write_hint`), the
//! per-file locks between jobs (`lockfile`), shares of the target
//! (`offset_align`, `io_size=N%`, `offset_increment=N%`), zone limits and
//! `bs_unaligned`. Parsers and setters: `job::target_opts`.

/// fio's `fadvise_hint`: what posix_fadvise tells the kernel before the job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Fadvise {
    /// No hint (`0`).
    None,
    /// From the job's pattern: random or sequential (`1`, fio's default).
    #[default]
    Pattern,
    Sequential,
    Random,
}

impl Fadvise {
    pub const VALID: &'static str =
        "0 (no hint), 1 (from rw=: random or sequential), sequential or random";
}

/// fio's `lockfile`: the lock a job takes on a file it shares with other jobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LockFile {
    #[default]
    None,
    Exclusive,
    ReadWrite,
}

impl LockFile {
    pub const VALID: &'static str = "none, exclusive or readwrite";
}

impl std::fmt::Display for LockFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LockFile::None => "none",
            LockFile::Exclusive => "exclusive",
            LockFile::ReadWrite => "readwrite",
        })
    }
}

/// The target options of one job.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TargetOpts {
    /// `invalidate`: drop the region from the page cache before the job (default 1).
    pub invalidate: bool,
    /// `sync=dsync`: open with O_DSYNC.
    pub dsync: bool,
    pub fadvise: Fadvise,
    /// `write_hint`: the F_SET_RW_HINT value (RWH_WRITE_LIFE_*); `None` = not set.
    pub write_hint: Option<u64>,
    pub lockfile: LockFile,
    /// `allow_mounted_write`: a write job may write to a mounted block device.
    pub allow_mounted_write: bool,
    /// `offset_align`: a percentage offset is rounded up to this (0 = the
    /// smallest block size, fio's default).
    pub offset_align: u64,
    /// `offset_increment=N%`: N percent of the target per clone.
    pub offset_increment_percent: Option<u32>,
    /// `io_size=N%`: N percent of the region's bytes.
    pub io_size_percent: Option<u32>,
    /// `job_max_open_zones`: zbd zones one clone writes at once (0 = no limit).
    pub job_max_open_zones: u32,
    /// `bs_unaligned`: fio's flag; iolab's sizes within a range are drawn as
    /// multiples of the smallest size either way (see the table's note).
    pub bs_unaligned: bool,
    /// `zonecapacity` as given (checked against `zonesize`).
    pub zonecapacity: Option<u64>,
    /// Offsets of a job placed by a percentage are rounded up to this
    /// (`offset_align`, or the smallest block size); set by the engine when it
    /// resolves the percentage (`engine::files::resolve_shares`). 0 = exact.
    pub clone_align: u64,
}

impl Default for TargetOpts {
    fn default() -> Self {
        TargetOpts {
            invalidate: true,
            dsync: false,
            fadvise: Fadvise::Pattern,
            write_hint: None,
            lockfile: LockFile::None,
            allow_mounted_write: false,
            offset_align: 0,
            offset_increment_percent: None,
            io_size_percent: None,
            job_max_open_zones: 0,
            bs_unaligned: false,
            zonecapacity: None,
            clone_align: 0,
        }
    }
}
