//! The option table: every option iolab knows, one entry each. An entry holds
//! the name and aliases, whether it may stand alone, how its value lands in a
//! [`JobSpec`](super::spec::JobSpec), the help text, the section of fio's HOWTO
//! it belongs to and how iolab's meaning relates to fio's. Lookup, "did you
//! mean", `iolab run --cmdhelp` and the table in docs/fio-compat.md all read
//! this one list, so adding an option is adding one entry.

use super::draft::{Ctx, Draft};
use super::error::JobError;
use super::parse;
use super::spec::*;
use super::units::{self, TimeUnit};
use crate::request::Class;

/// Whether an option may appear without `=value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    /// `opt=value` only.
    Value,
    /// `opt` alone means `opt=1` (fio's FIO_OPT_STR_SET; iolab also allows it for
    /// boolean options, where fio 3.33 demands a value).
    Flag,
    /// `opt` alone has a meaning of its own, given to the setter as
    /// [`Ctx::bare`] (a log option alone is named after the job).
    Bare,
}

/// The part of fio's HOWTO an option is described in (iolab's own options
/// have their own part).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Section {
    Description,
    Time,
    Target,
    IoType,
    BlockSize,
    Buffers,
    IoSize,
    Engine,
    Depth,
    Rate,
    Latency,
    Replay,
    Threads,
    Verify,
    SteadyState,
    Measurements,
    Errors,
    Iolab,
}

impl Section {
    pub const ALL: [Section; 18] = [
        Section::Description,
        Section::Time,
        Section::Target,
        Section::IoType,
        Section::BlockSize,
        Section::Buffers,
        Section::IoSize,
        Section::Engine,
        Section::Depth,
        Section::Rate,
        Section::Latency,
        Section::Replay,
        Section::Threads,
        Section::Verify,
        Section::SteadyState,
        Section::Measurements,
        Section::Errors,
        Section::Iolab,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Section::Description => "Job description",
            Section::Time => "Time related parameters",
            Section::Target => "Target file/device",
            Section::IoType => "I/O type",
            Section::BlockSize => "Block size",
            Section::Buffers => "Buffers and memory",
            Section::IoSize => "I/O size",
            Section::Engine => "I/O engine",
            Section::Depth => "I/O depth",
            Section::Rate => "I/O rate",
            Section::Latency => "I/O latency",
            Section::Replay => "I/O replay",
            Section::Threads => "Threads, processes and job synchronization",
            Section::Verify => "Verification",
            Section::SteadyState => "Steady state",
            Section::Measurements => "Measurements and reporting",
            Section::Errors => "Error handling",
            Section::Iolab => "iolab's own options",
        }
    }
}

/// How iolab's option relates to fio's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// fio's meaning.
    Same,
    /// fio's meaning, but some values fio takes are refused (why).
    Stricter(&'static str),
    /// Not a fio option.
    IolabOnly,
    /// fio's option is accepted, but iolab still does something fio would not
    /// (the note, printed once per run when the option is used).
    Noted(&'static str),
    /// A fio option iolab refuses (why, and what to do instead).
    Refused(&'static str),
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Same => "same",
            Status::Stricter(_) => "stricter",
            Status::IolabOnly => "iolab only",
            Status::Noted(_) => "accepted, with a note",
            Status::Refused(_) => "refused",
        }
    }
}

/// Applies one option's value to a job draft.
pub(crate) type Setter = fn(&mut Draft, &Ctx) -> Result<(), JobError>;

/// One option.
#[derive(Clone, Copy)]
pub struct OptionDef {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub arity: Arity,
    pub section: Section,
    pub status: Status,
    /// One line: what it does in iolab.
    pub help: &'static str,
    /// What a value looks like (for "needs a value" errors and help).
    pub expected: &'static str,
    pub(crate) set: Option<Setter>,
}

impl OptionDef {
    const fn new(name: &'static str, section: Section, help: &'static str) -> Self {
        OptionDef {
            name,
            aliases: &[],
            arity: Arity::Value,
            section,
            status: Status::Same,
            help,
            expected: "a value (see docs/fio-compat.md)",
            set: None,
        }
    }
    const fn alias(mut self, aliases: &'static [&'static str]) -> Self {
        self.aliases = aliases;
        self
    }
    const fn flag(mut self) -> Self {
        self.arity = Arity::Flag;
        self.expected = "0 or 1 (alone it means 1)";
        self
    }
    const fn bare(mut self) -> Self {
        self.arity = Arity::Bare;
        self
    }
    const fn expects(mut self, e: &'static str) -> Self {
        self.expected = e;
        self
    }
    const fn stricter(mut self, why: &'static str) -> Self {
        self.status = Status::Stricter(why);
        self
    }
    const fn noted(mut self, note: &'static str) -> Self {
        self.status = Status::Noted(note);
        self
    }
    const fn ours(mut self) -> Self {
        self.status = Status::IolabOnly;
        self
    }
    const fn set(mut self, f: Setter) -> Self {
        self.set = Some(f);
        self
    }

    /// Whether the option is implemented (refused ones have no setter).
    pub fn has_setter(&self) -> bool {
        self.set.is_some()
    }

    /// Every name it answers to.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.name).chain(self.aliases.iter().copied())
    }
}

const fn refused(name: &'static str, section: Section, why: &'static str) -> OptionDef {
    let mut o = OptionDef::new(name, section, "");
    o.status = Status::Refused(why);
    o
}

use Section as S;

const SIZE: &str = units::SIZE_EXPECTED;
const SIZE_OR_ZONES: &str = "a size: an integer with an optional suffix b, k, m, g, t, p \
     (also kb/ki, kib etc.; case-insensitive), e.g. 4k, 1m, 512; or a count of zones such as 2z \
     (with zonemode=strided or zbd)";
use super::zones_opts::or_zones as zones;
const TIME_S: &str = "a time, e.g. 30 (seconds) or 500ms";
const TIME_US: &str = "a time, e.g. 10 (microseconds) or 2ms";
const PROB: &str = "a probability: a number from 0 to 1 (e.g. 0.001) or a \
         percentage (e.g. 0.1%)";
const STRING: &str = "a non-empty string";
const NO_TRIM: &str = "iolab's verification does not trim blocks (rw=trim and friends trim)";
const ZONED: &str = "zonemode=zbd on a zoned block device (queue/zoned not none) is refused; a zbd job \
                     that writes needs a zone-aligned offset and size (fio rounds them); zbd write \
                     pointers are per job clone; zoneskip/zonerange/verify/sequential holes with zbd \
                     and backward rw=...:-N with strided are refused (docs/fio-compat.md, Zones)";
const BATCH_EXPECTED: &str = "a count, 0-65535";
const LOG_PREFIX: &str = "alone, the job's name is the prefix (as fio does in a job file; for a bare \
                          --write_*_log on its command line fio 3.33 writes no log); an empty or \
                          directory prefix is refused";
const LOG_PREFIX_EXPECTED: &str = "a file-name prefix (a path without the _type.N.log ending)";
const LOG_MSEC: &str = "milliseconds, 0 to 3600000 (one hour)";
const LOG_MSEC_MAX: u64 = 3_600_000;
const PCT_NOTE: &str = "iolab records every latency histogram whatever the *_percentiles options \
                        say; they choose, as in fio, which latencies show percentiles in the \
                        reports and bins in json+";
const EPOCH_CLOCK: &str = "a clock id clock_gettime(2) refuses is an error (fio logs garbage \
                           times); without log_unix_epoch or log_alternate_epoch it has no \
                           effect, as in fio (a note says so)";
const EPOCH_CLOCK_EXPECTED: &str = "a clock id clock_gettime(2) accepts: 0 CLOCK_REALTIME, 1 \
                                    CLOCK_MONOTONIC, 4 CLOCK_MONOTONIC_RAW, 7 CLOCK_BOOTTIME, 11 \
                                    CLOCK_TAI, ...";

/// A log prefix: non-empty, and not a directory (the type and index are appended).
fn log_prefix(c: &Ctx) -> Result<String, JobError> {
    if c.bare {
        // Named after the job when the job is finished (`LogSpec::name_bare_prefixes`).
        return Ok(String::new());
    }
    if c.value.is_empty() || c.value.ends_with('/') {
        return Err(c.bad(LOG_PREFIX_EXPECTED));
    }
    Ok(c.value.to_string())
}
const ALWAYS_LAT: &str = "iolab still records every latency (its clock reads cost little; the \
                          reports are built on them)";
const RW_VALID: &str = parse::RW_VALID;
const IOLOG_STRICT: &str = "a line fio skips with a message (an unknown action, a malformed line, wait in a \
                            version 3 log, an I/O on a file the log never added) is an error naming \
                            the file and line: a replay without it is not the logged workload";

/// Every option, implemented or refused. Order within a section is the order
/// of the docs table.
pub static OPTIONS: &[OptionDef] = &[
    // Job description.
    OptionDef::new(
        "name",
        S::Description,
        "job name (defaults to the section name)",
    )
    .expects(STRING)
    .set(|d, c| {
        d.spec.name = c.nonempty()?;
        Ok(())
    }),
    OptionDef::new(
        "loops",
        S::Description,
        "repeat the job's I/O this many times",
    )
    .expects("a count, 1 or more")
    .set(|d, c| {
        d.spec.loops = c.int(1, u64::from(u32::MAX))? as u32;
        Ok(())
    }),
    OptionDef::new(
        "numjobs",
        S::Description,
        "1-4096; the engine starts that many workers per job",
    )
    .stricter("numjobs=0 is an error (fio fails later, setting up shared memory)")
    .expects("a count, 1-4096")
    .set(|d, c| {
        d.spec.numjobs = c.int(1, 4096)? as u32;
        Ok(())
    }),
    OptionDef::new(
        "description",
        S::Description,
        "free text about the job; kept with the job's options in the report",
    )
    .expects(STRING)
    .set(|_, c| {
        c.nonempty()?;
        Ok(())
    }),
    // Time.
    OptionDef::new(
        "runtime",
        S::Time,
        "run time limit; runtime=0 means no limit",
    )
    .alias(&["timeout"])
    .stricter("time suffixes fio misreads (10sec) are errors")
    .expects(TIME_S)
    .set(|d, c| {
        let t = c.time(TimeUnit::Seconds, false)?;
        // fio: runtime=0 means "no limit".
        d.spec.runtime = (!t.is_zero()).then_some(t);
        Ok(())
    }),
    OptionDef::new(
        "time_based",
        S::Time,
        "repeat the workload until runtime ends",
    )
    .flag()
    .set(|d, c| {
        d.spec.time_based = c.boolean()?;
        Ok(())
    }),
    OptionDef::new("ramp_time", S::Time, "run this long before measuring")
        .expects(TIME_S)
        .set(|d, c| {
            d.spec.ramp_time = c.time(TimeUnit::Seconds, false)?;
            Ok(())
        }),
    OptionDef::new(
        "startdelay",
        S::Time,
        "wait this long after the group starts before starting the \
         job; a range (1s-5s) draws a delay per clone, repeatably \
         from randseed",
    )
    .expects("a time such as 10 (seconds) or 500ms, or a range such as 1s-5s")
    .set(|d, c| {
        d.spec.control.startdelay = super::control_opts::startdelay(c)?;
        Ok(())
    }),
    // Target.
    OptionDef::new(
        "filename",
        S::Target,
        "target file or device; the engine checks existence and size; \
         a block device is opened with O_NOATIME, as fio opens it",
    )
    .expects(STRING)
    .set(|d, c| {
        d.spec.filename = Some(c.nonempty()?);
        Ok(())
    }),
    OptionDef::new("directory", S::Target, "directory of the job's file")
        .expects(STRING)
        .set(|d, c| {
            d.spec.directory = Some(c.nonempty()?);
            Ok(())
        }),
    OptionDef::new(
        "offset_increment",
        S::Target,
        "clone N of a numjobs=N job starts at offset + N * \
         offset_increment; N% is that share of the target, rounded up \
         to offset_align",
    )
    .expects("a size such as 1g, a percentage such as 25%, or a count of zones such as 2z")
    .set(|d, c| {
        zones(
            d,
            c,
            |z| &mut z.offset_increment,
            super::target_opts::set_offset_increment,
        )
    }),
    OptionDef::new(
        "allow_file_create",
        S::Target,
        "create (and lay out) a missing or short regular file \
         (default 1); 0: such a file is an error before the first I/O",
    )
    .flag()
    .set(|d, c| {
        d.spec.files.allow_create = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "nrfiles",
        S::Target,
        "files per job clone, named by filename_format; size is \
         spread over them",
    )
    .alias(&["nr_files"])
    .expects("a count of files, 1-65536")
    .set(|d, c| {
        d.spec.files.nrfiles = c.int(1, 65536)? as u32;
        Ok(())
    }),
    OptionDef::new(
        "openfiles",
        S::Target,
        "files serviced at once, as fio: the first openfiles files, \
         each replaced by the next only when its I/O is done \
         (time_based: never)",
    )
    .noted(
        "iolab opens every file of the job before its clock starts \
         and keeps it open (no open/close on the measured path; fio \
         closes a done file and opens the next); with \
         file_service_type=random the window holds the first files in \
         file order, where fio's holds the first its random picks \
         reach",
    )
    .expects("a count of files, 1 or more")
    .set(|d, c| {
        d.spec.files.openfiles = c.int(1, u64::from(u32::MAX))? as u32;
        Ok(())
    }),
    OptionDef::new(
        "file_service_type",
        S::Target,
        "which file the next request goes to: roundrobin (default), \
         sequential or random, with :N requests per pick; or zipf, \
         pareto, normal/gauss[:P], a file drawn per request by that \
         distribution",
    )
    .expects(super::files_opts::SERVICE_VALID)
    .set(super::files_opts::set_service),
    OptionDef::new(
        "filename_format",
        S::Target,
        "file names when filename= is not given: $jobname, $jobnum, \
         $filenum, $clientuid (empty: iolab runs locally); default \
         $jobname.$jobnum.$filenum",
    )
    .expects(super::files_opts::FORMAT_VALID)
    .set(|d, c| {
        d.spec.files.filename_format = Some(super::files_opts::filename_format(c)?);
        Ok(())
    }),
    OptionDef::new(
        "fallocate",
        S::Target,
        "how a file's space is reserved before it is laid out: none, \
         native, posix, keep, truncate (0 = none, 1 = posix); iolab's \
         default is none where fio's is native, which changes no \
         measurement: the layout writes every block anyway",
    )
    .expects(super::files::Fallocate::VALID)
    .set(|d, c| {
        d.spec.files.fallocate = super::files_opts::fallocate(c)?;
        Ok(())
    }),
    OptionDef::new(
        "create_serialize",
        S::Target,
        "create the jobs' files one after another",
    )
    .flag()
    .noted(
        "iolab always creates and lays out files one job after \
         another, before the clock starts; =0 does not lay them out \
         in parallel",
    )
    .set(|_, c| {
        c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "fill_device",
        S::Target,
        "write until the target is full: a write that fails with \
         ENOSPC ends the job cleanly",
    )
    .alias(&["fill_fs"])
    .flag()
    .stricter(
        "on a regular file the job needs size= (or --max-size): iolab \
         will not fill a filesystem; read jobs are refused",
    )
    .set(|d, c| {
        d.spec.fill_device = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "create_on_open",
        S::Target,
        "create files when the job opens them",
    )
    .flag()
    .noted(
        "iolab creates and lays out every file while the job is set \
         up, before its clock starts",
    )
    .set(|_, c| {
        c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "pre_read",
        S::Target,
        "read the job's files into the page cache before the clock \
         starts (turns invalidate off)",
    )
    .flag()
    .set(|d, c| {
        d.spec.files.pre_read = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "unlink",
        S::Target,
        "delete the job's regular files when it is done",
    )
    .flag()
    .set(|d, c| {
        d.spec.files.unlink = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "filesize",
        S::Target,
        "size of each of the job's files; with size= too, size is the \
         default io_size (a larger size is clamped to what the files \
         hold, as fio does). A range LOW-HIGH draws each file's size \
         from fio's generator and seed (rounded down to the smallest \
         block size; an existing file whose size is in the range keeps \
         it); size=N% beside filesize makes each file N% of its size",
    )
    .expects("a size such as 128m, or a range such as 1m-8m")
    .set(|d, c| {
        match parse::filesize_range(c)? {
            (lo, hi) if lo == hi => {
                d.filesize = Some(lo);
                d.filesize_range = None;
            }
            (lo, hi) => {
                d.filesize = None;
                d.filesize_range = Some((lo, hi));
            }
        }
        Ok(())
    }),
    OptionDef::new(
        "zonemode",
        S::Target,
        "none; strided (zonesize bytes of every zonerange, then skip \
         zoneskip); zbd (writes at each zone's write pointer, reads \
         below it: regular files and non-zoned block devices get \
         emulated zones)",
    )
    .stricter(ZONED)
    .expects(super::zones::MODE_VALID)
    .set(|d, c| {
        d.spec.zones.mode = super::zones_opts::mode(c)?;
        Ok(())
    }),
    OptionDef::new(
        "zonesize",
        S::Target,
        "bytes per zone (strided: bytes issued in each zone before the next)",
    )
    .expects(SIZE)
    .set(|d, c| {
        d.spec.zones.size = parse::positive(c, c.size()?)?;
        Ok(())
    }),
    OptionDef::new(
        "zonerange",
        S::Target,
        "strided: bytes a zone spans (0 or not given: zonesize)",
    )
    .expects(SIZE)
    .set(|d, c| {
        // fio: 0 means zonesize.
        d.spec.zones.range = c.size()?;
        Ok(())
    }),
    OptionDef::new(
        "zoneskip",
        S::Target,
        "strided: bytes skipped after each zone",
    )
    .expects(SIZE_OR_ZONES)
    .set(|d, c| {
        zones(
            d,
            c,
            |z| &mut z.zoneskip,
            |d, c| {
                d.spec.zones.skip = c.size()?;
                Ok(())
            },
        )
    }),
    OptionDef::new(
        "max_open_zones",
        S::Target,
        "zbd: zones written at once (0: no limit); a write to another \
         zone goes to an open one",
    )
    .expects("a count of zones, 0-4096")
    .set(|d, c| {
        d.spec.zones.max_open = c.int(0, super::zones::MAX_OPEN_ZONES)? as u32;
        Ok(())
    }),
    OptionDef::new(
        "zone_reset_threshold",
        S::Target,
        "zbd: share of the region holding data (0-1) above which \
         zones are reset every 1/zone_reset_frequency writes",
    )
    .expects("a number from 0 to 1")
    .set(|d, c| {
        d.spec.zones.reset_threshold = super::zones_opts::share(c)?;
        Ok(())
    }),
    OptionDef::new(
        "zone_reset_frequency",
        S::Target,
        "zbd: reset the written zone every 1/N writes once \
         zone_reset_threshold is passed (0: never)",
    )
    .expects("a number from 0 to 1")
    .set(|d, c| {
        d.spec.zones.reset_frequency = super::zones_opts::share(c)?;
        Ok(())
    }),
    OptionDef::new(
        "read_beyond_wp",
        S::Target,
        "zbd: reads may go above a zone's write pointer (default 0: \
         only written data is read)",
    )
    .flag()
    .set(|d, c| {
        d.spec.zones.read_beyond_wp = c.boolean()?;
        Ok(())
    }),
    // Files, target, the job's process and its device (`job::files_opts`,
    // `job::target_opts`, `job::process_opts`).
    OptionDef::new(
        "overwrite",
        S::Target,
        "a write-only job lays out a missing or short file first, so \
         its writes overwrite written blocks; 0 (default): the file \
         is created and the job's writes fill it, as fio",
    )
    .flag()
    .set(super::files_opts::set_overwrite),
    OptionDef::new(
        "create_fsync",
        S::Target,
        "fsync a file after laying it out (default 1)",
    )
    .flag()
    .noted(
        "iolab flushes every file it lays out, whatever create_fsync \
         says, so that invalidate can drop it from the page cache \
         before the clock starts",
    )
    .set(super::files_opts::set_create_fsync),
    OptionDef::new(
        "create_only",
        S::Target,
        "create and lay out the job's files, then do no I/O",
    )
    .flag()
    .set(super::files_opts::set_create_only),
    OptionDef::new(
        "file_append",
        S::Target,
        "a regular file's region starts at its end: the job's writes \
         append (nothing is laid out)",
    )
    .flag()
    .set(super::files_opts::set_file_append),
    OptionDef::new(
        "opendir",
        S::Target,
        "every regular file below this directory (recursively, in \
         name order) is one of the job's files, beside any filename \
         list",
    )
    .expects(STRING)
    .set(super::files_opts::set_opendir),
    OptionDef::new(
        "unique_filename",
        S::Target,
        "fio's client/server mode prefixes file names with the \
         client's address; iolab runs locally, where fio adds nothing \
         either (default 1)",
    )
    .flag()
    .set(super::files_opts::set_unique_filename),
    OptionDef::new(
        "unlink_each_loop",
        S::Target,
        "delete the job's regular files before each loop after the \
         first, as fio 3.33 does: the next loop makes them again (a \
         write job's empty, a job that reads laid out), with no request \
         in flight; the last loop's files stay unless unlink=1",
    )
    .stricter(
        "with loops above 1, several files per job, verify, \
         ioengine=mmap and registerfiles=1 are refused: iolab's files \
         end their loops one by one, and verify and a mapped or \
         registered file would hold the deleted file",
    )
    .flag()
    .set(super::files_opts::set_unlink_each_loop),
    OptionDef::new(
        "invalidate",
        S::Target,
        "drop the job's region from the page cache (posix_fadvise \
         DONTNEED) before it starts and at each new pass (default 1); \
         buffered jobs only",
    )
    .flag()
    .set(super::target_opts::set_invalidate),
    OptionDef::new(
        "fadvise_hint",
        S::Target,
        "posix_fadvise before the job: 1 (default) random or \
         sequential from rw=, 0 none, or sequential / random; \
         buffered jobs only",
    )
    .expects(super::target::Fadvise::VALID)
    .set(super::target_opts::set_fadvise),
    OptionDef::new(
        "write_hint",
        S::Target,
        "the data's expected lifetime, set on each file with \
         fcntl(F_SET_RW_HINT): none, short, medium, long, extreme",
    )
    .expects(super::target_opts::WRITE_HINT_VALID)
    .set(super::target_opts::set_write_hint),
    OptionDef::new(
        "lockfile",
        S::Target,
        "per-file lock between jobs: none (default), exclusive, readwrite",
    )
    .stricter(
        "exclusive and readwrite are refused on a file other job \
         clones of the group use at the same time: iolab's workers \
         have no lock between their requests; alone on its file a job \
         runs as fio's would",
    )
    .expects(super::target::LockFile::VALID)
    .set(super::target_opts::set_lockfile),
    OptionDef::new(
        "allow_mounted_write",
        S::Target,
        "a write job may write to a block device that is mounted \
         (only that hazard: a holder, swap or an unmounted filesystem \
         still need --allow-destructive)",
    )
    .flag()
    .set(super::target_opts::set_allow_mounted_write),
    OptionDef::new(
        "offset_align",
        S::IoSize,
        "offset=N% and offset_increment=N% are rounded up to a \
         multiple of this (default: the smallest block size)",
    )
    .expects(SIZE)
    .set(super::target_opts::set_offset_align),
    OptionDef::new(
        "bs_unaligned",
        S::BlockSize,
        "block sizes need not be multiples of the smallest block size: \
         with a bsrange each size is any byte count in the range, as \
         fio draws it; with fixed sizes or bssplit every size is exact \
         anyway. With verify, a sequential job's blocks are each read \
         back and checked at their own offset and length, as fio's io \
         piece history does (the verifier's map then keeps one entry per \
         byte: regions up to 16 MiB)",
    )
    .stricter(
        "with a bsrange, verify and random offsets, refused: iolab's \
         random blocks of any byte count overlap earlier ones, which \
         verification then skips, where fio checks every block",
    )
    .flag()
    .set(super::target_opts::set_bs_unaligned),
    OptionDef::new(
        "zonecapacity",
        S::Target,
        "zbd: writable bytes of each zone (0: zonesize): a zone is full \
         at its capacity and reads stay below its write pointer; a \
         sequential write job moves from a zone's capacity to the next \
         zone, as fio's emulated zones do",
    )
    .expects(SIZE)
    .set(super::target_opts::set_zonecapacity),
    OptionDef::new(
        "job_max_open_zones",
        S::Target,
        "zbd: zones one clone writes at once (0: no limit); narrows \
         max_open_zones",
    )
    .expects("a count of zones, 0-4096")
    .set(super::target_opts::set_job_max_open_zones),
    OptionDef::new(
        "ignore_zone_limits",
        S::Target,
        "ignore the open/active zone limits a zoned device reports; \
         iolab's zones are emulated and report none, so there is \
         nothing to ignore",
    )
    .flag()
    .set(super::target_opts::set_ignore_zone_limits),
    OptionDef::new(
        "write_barrier",
        S::IoType,
        "mark every Nth write as a barrier write: fio 3.33 marks it, \
         and none of its Linux engines acts on the mark; iolab \
         accepts the count and, likewise, issues ordinary writes",
    )
    .expects("a count of writes, 0 = never")
    .set(|_, c| {
        c.int(0, u64::from(u32::MAX))?;
        Ok(())
    }),
    OptionDef::new(
        "mem",
        S::Buffers,
        "where I/O buffers come from: malloc (default), mmap, \
         mmap:FILE, mmapshared, mmaphuge, mmaphuge:FILE (hugetlbfs), \
         shm, shmhuge",
    )
    .alias(&["iomem"])
    .expects(crate::buf::Mem::VALID)
    .set(super::process_opts::set_mem),
    OptionDef::new(
        "hugepage-size",
        S::Buffers,
        "the size huge page memory comes in (mem=mmaphuge, shmhuge): \
         buffers are rounded up to whole pages of it; default the \
         system's (Hugepagesize in /proc/meminfo)",
    )
    .expects(
        "a size such as 2m or 1g: the system's huge page size or a \
         multiple of it",
    )
    .set(|d, c| {
        let b = c.size()?;
        if b == 0 || b % 4096 != 0 {
            return Err(c.bad("a size such as 2m or 1g: a multiple of the 4 KiB page"));
        }
        d.spec.process.hugepage_size = b;
        Ok(())
    }),
    OptionDef::new(
        "lockmem",
        S::Buffers,
        "mlock this many bytes for the job's duration (memory taken \
         from the page cache and other jobs)",
    )
    .expects(SIZE)
    .set(super::process_opts::set_lockmem),
    OptionDef::new(
        "exec_prerun",
        S::Threads,
        "run this command through the shell before the job starts \
         (after its cgroup, nice, uid/gid), its output in \
         JOBNAME.prerun.txt",
    )
    .stricter(
        "a command that fails stops the run (fio then does no I/O for \
         the job and reports success)",
    )
    .expects(STRING)
    .set(super::process_opts::set_exec_prerun),
    OptionDef::new(
        "exec_postrun",
        S::Threads,
        "run this command through the shell after the job, its output \
         in JOBNAME.postrun.txt",
    )
    .expects(STRING)
    .set(super::process_opts::set_exec_postrun),
    OptionDef::new(
        "ioscheduler",
        S::Threads,
        "switch the kernel I/O scheduler (elevator) of the target's \
         device (a file's: the disk holding it) for the job, restored \
         when it ends",
    )
    .expects("a kernel I/O scheduler such as none, mq-deadline, kyber or bfq")
    .set(super::process_opts::set_ioscheduler),
    OptionDef::new(
        "nice",
        S::Threads,
        "add this to the nice value of the job's worker thread (-20 to 19)",
    )
    .expects("a nice value, -20 to 19")
    .set(super::process_opts::set_nice),
    OptionDef::new(
        "uid",
        S::Threads,
        "the job's worker thread (and its exec commands) runs as this \
         user id: a per-thread setresuid",
    )
    .noted(
        "iolab opens and lays out the job's files before the switch, \
         as the user it runs as; fio switches first",
    )
    .expects("a numeric user id")
    .set(super::process_opts::set_uid),
    OptionDef::new(
        "gid",
        S::Threads,
        "the job's worker thread (and its exec commands) runs as this \
         group id: a per-thread setresgid",
    )
    .noted(
        "iolab opens and lays out the job's files before the switch, \
         as the user it runs as; fio switches first",
    )
    .expects("a numeric group id")
    .set(super::process_opts::set_gid),
    OptionDef::new(
        "cgroup",
        S::Threads,
        "run the job's worker thread in this control group (created \
         below the blkio v1 or the v2 hierarchy, as fio picks; \
         removed afterwards unless cgroup_nodelete)",
    )
    .stricter(
        "on cgroup v2 the whole process moves (the io controller \
         holds processes, as when fio runs jobs as threads), so jobs \
         running at once must name the same group",
    )
    .expects("a cgroup name such as fio1")
    .set(super::process_opts::set_cgroup),
    OptionDef::new(
        "cgroup_weight",
        S::Threads,
        "the cgroup's I/O weight, 100-1000: blkio.weight or BFQ's \
         blkio.bfq.weight (v1), io.weight (v2; fio 3.33 refuses it \
         there)",
    )
    .expects("a weight, 100-1000")
    .set(super::process_opts::set_cgroup_weight),
    OptionDef::new(
        "cgroup_nodelete",
        S::Threads,
        "keep the cgroup iolab created when the job is done",
    )
    .flag()
    .set(super::process_opts::set_cgroup_nodelete),
    refused(
        "profile",
        S::Description,
        "fio's built-in profiles (tiobench, act) are job generators \
         with options of their own; write the jobs they stand for \
         into a job file instead",
    ),
    // I/O type.
    OptionDef::new(
        "rw",
        S::IoType,
        "read write randread randwrite rw readwrite randrw trim \
         randtrim trimwrite randtrimwrite, with fio's :N suffix \
         (sequential: a hole of N bytes after each I/O, negative = \
         backwards; random: a new random offset every N I/Os); a trim \
         is BLKDISCARD on a block device and a punched hole in a \
         file, where fio 3.33's BLKDISCARD fails (docs/fio-compat.md, \
         Trims)",
    )
    .alias(&["readwrite"])
    .expects(RW_VALID)
    .set(|d, c| {
        (d.spec.rw, d.spec.rw_suffix) = parse::rw(c)?;
        Ok(())
    }),
    OptionDef::new(
        "rwmixread",
        S::IoType,
        "percentage of reads in a mixed job, 0-100; the later of \
         rwmixread/rwmixwrite wins. Each I/O's direction is drawn as fio draws \
         it (its generator, seeds and run rule), so a job goes each way in \
         fio's order for the same seed",
    )
    .expects("a percentage, 0-100")
    .set(|d, c| {
        d.spec.rwmixread = c.int(0, 100)? as u32;
        Ok(())
    }),
    OptionDef::new(
        "rwmixwrite",
        S::IoType,
        "percentage of writes in a mixed job, 0-100",
    )
    .expects("a percentage, 0-100")
    .set(|d, c| {
        d.spec.rwmixread = 100 - c.int(0, 100)? as u32;
        Ok(())
    }),
    OptionDef::new("direct", S::IoType, "O_DIRECT I/O")
        .flag()
        .set(|d, c| {
            d.spec.direct = c.boolean()?;
            Ok(())
        }),
    OptionDef::new("buffered", S::IoType, "the inverse of direct")
        .flag()
        .set(|d, c| {
            d.spec.direct = !c.boolean()?;
            Ok(())
        }),
    OptionDef::new(
        "randrepeat",
        S::IoType,
        "the same random sequence on every run (default 1), fio's: the \
         offsets, sizes and mix of fio 3.33 for the same job; randrepeat=0 \
         seeds from the OS unless randseed is given",
    )
    .flag()
    .set(|d, c| {
        d.spec.randrepeat = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "randseed",
        S::IoType,
        "seed of the random sizes and mix (fio's slots); set, it wins over \
         randrepeat=0, and with randrepeat=0 it seeds the offsets too (as \
         fio 3.33)",
    )
    .expects("an integer")
    .set(|d, c| {
        d.spec.randseed = c.int(0, u64::MAX)?;
        Ok(())
    }),
    OptionDef::new(
        "fsync",
        S::IoType,
        "fsync every N writes (0: never), before the next request: none \
         follows the job's last write",
    )
    .expects("a count of writes, 0 = never")
    .set(|d, c| {
        d.spec.fsync = c.int(0, u64::from(u32::MAX))? as u32;
        Ok(())
    }),
    OptionDef::new(
        "sync",
        S::IoType,
        "0 1 none sync dsync: open with O_SYNC (1, sync) or O_DSYNC (dsync)",
    )
    .flag()
    .expects("0, 1, none, sync or dsync")
    .set(|d, c| {
        (d.spec.sync, d.spec.target.dsync) = parse::sync(c)?;
        Ok(())
    }),
    OptionDef::new(
        "norandommap",
        S::IoType,
        "draw random offsets with replacement (blocks may repeat or \
         be missed in a pass) instead of visiting every block once",
    )
    .flag()
    .set(|d, c| {
        d.spec.norandommap = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "random_distribution",
        S::IoType,
        "random zipf:THETA[:CENTER] pareto:H[:CENTER] \
         normal:DEV[:CENTER] zoned:A/R:... zoned_abs:A/SIZE:... \
         ('READ,WRITE' zone sets); a non-uniform one turns the random \
         map off, as in fio; every distribution issues fio's own blocks",
    )
    .stricter("zipf theta <= 0 and a parameter after 'random' are refused (docs/fio-compat.md)")
    .expects(super::random::DIST_VALID)
    .set(|d, c| {
        d.spec.random_distribution = super::random::distribution(c)?;
        Ok(())
    }),
    OptionDef::new(
        "random_generator",
        S::IoType,
        "tausworthe (default) or tausworthe64: fio's generators, the \
         same offsets as fio (with norandommap, drawn with replacement); \
         lfsr: fio's register, every block of the region exactly once per \
         pass in fio's order, even with norandommap",
    )
    .expects(super::workload_opts::GENERATOR_VALID)
    .set(|d, c| {
        d.spec.workload.random_generator = super::workload_set::generator(c)?;
        Ok(())
    }),
    OptionDef::new(
        "percentage_random",
        S::IoType,
        "share of a random job's I/Os at random offsets, 0-100 per \
         direction ('read,write'); the rest continue sequentially",
    )
    .expects("a percentage 0-100, or 'read,write' such as 80,20")
    .set(|d, c| {
        let kb = c.kb;
        d.spec.percentage_random = parse::per_dir(c, d.spec.percentage_random, |p| {
            units::parse_int(p, kb, 0, 100).map(|v| v as u32)
        })?;
        Ok(())
    }),
    OptionDef::new(
        "fdatasync",
        S::IoType,
        "fdatasync every N writes (0: never), counted apart from \
         fsync=N: when both fall due on one write, that write is \
         followed by the fsync alone",
    )
    .expects("a count of writes, 0 = never")
    .set(|d, c| {
        d.spec.syncs.fdatasync = c.int(0, u64::from(u32::MAX))? as u32;
        Ok(())
    }),
    OptionDef::new(
        "end_fsync",
        S::IoType,
        "fsync the file once the job's I/O is done (not timed as an I/O)",
    )
    .flag()
    .set(|d, c| {
        d.spec.syncs.end_fsync = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "fsync_on_close",
        S::IoType,
        "fsync the file when the job closes it (at its end)",
    )
    .flag()
    .set(|d, c| {
        d.spec.syncs.fsync_on_close = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "sync_file_range",
        S::IoType,
        "sync_file_range(2) every N writes with flags wait_before, \
         write, wait_after (FLAGS:N), over the range of the file \
         written since its last sync; psync/sync engines, libaio (a \
         synchronous call) and io_uring",
    )
    .expects(super::control_opts::RANGE_VALID)
    .set(|d, c| {
        let (flags, every) = super::control_opts::sync_file_range(c)?;
        (d.spec.syncs.range_flags, d.spec.syncs.range_every) = (flags, every);
        Ok(())
    }),
    refused("trim_percentage", S::IoType, NO_TRIM),
    refused("trim_backlog", S::IoType, NO_TRIM),
    refused("trim_verify_zero", S::IoType, NO_TRIM),
    // Block size.
    OptionDef::new(
        "bs",
        S::BlockSize,
        "block size; 'read,write' or 'read,write,trim' sets each \
         direction (trims take the write value unless given their own)",
    )
    .alias(&["blocksize"])
    .stricter("bs=2k-8k (fio: read 2k, write 8k) is an error pointing to bsrange")
    .expects(SIZE)
    .set(|d, c| {
        (d.spec.bs, d.spec.bs_trim) = parse::bs(c, (d.spec.bs.clone(), d.spec.bs_trim.clone()))?;
        Ok(())
    }),
    OptionDef::new(
        "bsrange",
        S::BlockSize,
        "a range of block sizes, MIN-MAX; reversed ranges are swapped",
    )
    .alias(&["blocksize_range"])
    .expects("a range such as 4k-64k")
    .set(|d, c| {
        (d.spec.bs, d.spec.bs_trim) =
            parse::bsrange(c, (d.spec.bs.clone(), d.spec.bs_trim.clone()))?;
        Ok(())
    }),
    OptionDef::new(
        "bssplit",
        S::BlockSize,
        "size/percent pairs such as 4k/50:64k/50; an entry without a \
         percentage (or with 0) shares what is left of 100",
    )
    .expects("size/percent pairs such as 4k/50:64k/50")
    .set(|d, c| {
        (d.spec.bs, d.spec.bs_trim) =
            parse::bssplit(c, (d.spec.bs.clone(), d.spec.bs_trim.clone()))?;
        Ok(())
    }),
    // Buffers and memory.
    OptionDef::new(
        "zero_buffers",
        S::Buffers,
        "write buffers are all zeros (default: random data)",
    )
    .flag()
    .set(|d, c| {
        d.spec.buffers.zero = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "refill_buffers",
        S::Buffers,
        "new buffer content for every write; implied by \
         dedupe_percentage and buffer_compress_percentage below 100",
    )
    .flag()
    .set(|d, c| {
        d.spec.buffers.refill = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "scramble_buffers",
        S::Buffers,
        "stamp reused random buffers per write so they are not naive \
         duplicates (default 1)",
    )
    .stricter(
        "only random buffers are stamped: zeros, buffer_pattern and \
         compressible data stay as asked",
    )
    .flag()
    .set(|d, c| {
        d.spec.buffers.scramble = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "buffer_pattern",
        S::Buffers,
        "fill write buffers with this pattern: hex 0x..., decimal, \
         \"text\", 'file' (the file's first 4096 bytes), or a \
         concatenation of them",
    )
    .expects("a pattern such as 0xdeadbeef, \"abc\"0x00 or 'pattern.bin'")
    .set(super::buffers_opts::set_buffer_pattern),
    OptionDef::new(
        "buffer_compress_percentage",
        S::Buffers,
        "this percentage of every buffer_compress_chunk is fixed data \
         (zeros or buffer_pattern) that compresses away, the rest \
         random, 0-100",
    )
    .expects("a percentage, 0-100")
    .set(|d, c| {
        d.spec.buffers.compress_percentage = Some(c.int(0, 100)? as u32);
        Ok(())
    }),
    OptionDef::new(
        "buffer_compress_chunk",
        S::Buffers,
        "size of buffer_compress_percentage's random/fixed region \
         (default 512; 0 = the block size)",
    )
    .expects(SIZE)
    .set(|d, c| {
        d.spec.buffers.compress_chunk = u32::try_from(c.size()?)
            .map_err(|_| c.bad("a size below 4 GiB, e.g. 512 or 4k (0 = the block size)"))?;
        Ok(())
    }),
    OptionDef::new(
        "dedupe_percentage",
        S::Buffers,
        "this percentage of writes repeats the last unique write's \
         data (fio's dedupe_mode=repeat), 0-100",
    )
    .expects("a percentage, 0-100")
    .set(|d, c| {
        d.spec.buffers.dedupe_percentage = c.int(0, 100)? as u32;
        Ok(())
    }),
    OptionDef::new(
        "dedupe_mode",
        S::Buffers,
        "how dedupe_percentage's repeats are made: repeat (the last \
         unique write, fio's default) or working_set (a page drawn \
         from dedupe_working_set_percentage of size)",
    )
    .expects("repeat or working_set")
    .set(|d, c| {
        d.spec.buffers.dedupe_mode = match c.value {
            "repeat" => super::buffers::DedupeMode::Repeat,
            "working_set" => super::buffers::DedupeMode::WorkingSet,
            _ => return Err(c.bad("repeat or working_set")),
        };
        Ok(())
    }),
    OptionDef::new(
        "dedupe_working_set_percentage",
        S::Buffers,
        "dedupe_mode=working_set: the working set's share of size, \
         0-100 (default 5); with dedupe_percentage at most 100",
    )
    .expects("a percentage, 0-100")
    .set(|d, c| {
        d.spec.buffers.dedupe_working_set_percentage = c.int(0, 100)? as u32;
        Ok(())
    }),
    OptionDef::new(
        "dedupe_global",
        S::Buffers,
        "dedupe_mode=working_set: one working set shared by every job \
         that sets dedupe_global, spread evenly over them",
    )
    .flag()
    .set(|d, c| {
        d.spec.buffers.dedupe_global = c.boolean()?;
        Ok(())
    }),
    refused(
        "iomem_align",
        S::Buffers,
        "buffers are always aligned for O_DIRECT",
    ),
    // I/O size.
    OptionDef::new(
        "size",
        S::IoSize,
        "bytes or N% of the target (0: the whole target, as fio)",
    )
    .expects(SIZE_OR_ZONES)
    .set(|d, c| zones(d, c, |z| &mut z.size, parse::size)),
    OptionDef::new(
        "offset",
        S::IoSize,
        "start offset, bytes or N% of the target",
    )
    .expects(SIZE_OR_ZONES)
    .set(|d, c| zones(d, c, |z| &mut z.offset, parse::offset)),
    OptionDef::new(
        "number_ios",
        S::IoSize,
        "stop after this many I/Os; 0 = no limit",
    )
    .expects("a count, 0 = no limit")
    .set(|d, c| {
        let n = c.int(0, u64::MAX)?;
        d.spec.number_ios = (n != 0).then_some(n);
        Ok(())
    }),
    OptionDef::new(
        "blockalign",
        S::BlockSize,
        "alignment of random offsets per direction ('read,write' or \
         'read,write,trim'); default the smallest block size; turns the \
         random map off, as in fio",
    )
    .alias(&["ba"])
    .expects("a size such as 4k, or 'read,write' or 'read,write,trim'")
    .set(|d, c| {
        let kb = c.kb;
        let one = |p: &str| match units::parse_bytes(p, kb) {
            Ok(b) if b > 0 && b <= u64::from(u32::MAX) => Ok(b as u32),
            Ok(_) => Err(c.bad("an alignment from 1 byte to 4g-1")),
            Err(e) => Err(c.bad(e)),
        };
        let (parts, trim) = parse::split_dirs3(c, c.value)?;
        let old_write = d.spec.blockalign[1];
        for (slot, part) in d.spec.blockalign.iter_mut().zip(parts) {
            if let Some(p) = part {
                *slot = one(p)?;
            }
        }
        d.spec.blockalign_trim = parse::trim_value(trim, d.spec.blockalign_trim, &old_write, one)?;
        Ok(())
    }),
    OptionDef::new(
        "io_size",
        S::IoSize,
        "bytes of I/O the job does, independent of size= (passes over \
         the region until done, each at most size bytes; with loops, \
         as fio counts them); N% is that share of the region; \
         time_based runs by time instead",
    )
    .alias(&["io_limit"])
    .expects("a size such as 1g, a percentage such as 50%, or a count of zones such as 2z")
    .set(|d, c| zones(d, c, |z| &mut z.io_size, super::target_opts::set_io_size)),
    // I/O engine.
    OptionDef::new("ioengine", S::Engine, crate::device::engine::IOENGINE_HELP)
        .stricter("other fio engines are refused")
        .expects(parse::ENGINES_EXPECTED)
        .set(|d, c| {
            d.spec.ioengine = parse::engine(c)?;
            Ok(())
        }),
    OptionDef::new(
        "hipri",
        S::Engine,
        "polled completions; needs io_uring or pvsync2",
    )
    .flag()
    .set(|d, c| {
        d.spec.backend.flags.hipri = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "hybrid_iopoll",
        S::Engine,
        "io_uring hybrid IOPOLL (IORING_SETUP_HYBRID_IOPOLL, Linux \
         6.13): the kernel sleeps, then polls the device; implies \
         hipri; needs io_uring",
    )
    .ours()
    .flag()
    .set(|d, c| {
        d.spec.backend.uring.hybrid_iopoll = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "sqthread_poll",
        S::Engine,
        "io_uring submission-queue polling thread; needs io_uring",
    )
    .flag()
    .set(|d, c| {
        d.spec.backend.uring.sqthread_poll = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "fixedbufs",
        S::Engine,
        "io_uring registered buffers; needs io_uring",
    )
    .flag()
    .set(|d, c| {
        d.spec.backend.uring.fixedbufs = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "registerfiles",
        S::Engine,
        "io_uring registered files; needs io_uring",
    )
    .flag()
    .set(|d, c| {
        d.spec.backend.uring.registerfiles = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "count_punts",
        S::Engine,
        "count io_uring requests punted to io-wq workers (io-wq \
         punts= in the output), through a kernel tracepoint that \
         costs each punt about 0.5 us of CPU; needs io_uring and \
         tracefs",
    )
    .ours()
    .flag()
    .set(|d, c| {
        d.spec.backend.uring.count_punts = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "cmdprio_percentage",
        S::Engine,
        "share (0-100, or 'read,write') of requests issued with \
         cmdprio_class/cmdprio; the others keep prio/prioclass; \
         io_uring and libaio",
    )
    .expects("a percentage 0-100, or 'read,write'")
    .set(|d, c| {
        let cur = d.spec.control.cmdprio.percentage;
        d.spec.control.cmdprio.percentage = super::control_opts::cmdprio_field(c, cur, 0, 100)?;
        Ok(())
    }),
    OptionDef::new(
        "cmdprio_class",
        S::Engine,
        "ioprio class of cmdprio_percentage's requests: 1 real-time \
         (default), 2 best-effort, 3 idle; or 'read,write'",
    )
    .expects("a class 1-3, or 'read,write'")
    .set(|d, c| {
        let cur = d.spec.control.cmdprio.class;
        d.spec.control.cmdprio.class = super::control_opts::cmdprio_field(c, cur, 1, 3)?;
        Ok(())
    }),
    OptionDef::new(
        "cmdprio",
        S::Engine,
        "ioprio level 0-7 of cmdprio_percentage's requests (default \
         0); or 'read,write'",
    )
    .expects("a level 0-7, or 'read,write'")
    .set(|d, c| {
        let cur = d.spec.control.cmdprio.level;
        d.spec.control.cmdprio.level = super::control_opts::cmdprio_field(c, cur, 0, 7)?;
        Ok(())
    }),
    OptionDef::new(
        "userspace_reap",
        S::Engine,
        "libaio: with iodepth_batch_complete_min=0, reap completions \
         only from the AIO ring in user space, spinning (completion=poll; \
         another completion= is an error), never io_getevents; with a \
         larger minimum it has no effect, as in fio (a note says so); \
         0: every reap is io_getevents; unset: ring first, io_getevents \
         to sleep",
    )
    .flag()
    .set(|d, c| {
        d.spec.backend.libaio.userspace_reap = Some(c.boolean()?);
        Ok(())
    }),
    OptionDef::new(
        "cmdprio_bssplit",
        S::Engine,
        "command priority by block size: bs/percentage (class from \
         cmdprio_class/cmdprio) or bs/percentage/class/level entries \
         joined by ':', or 'read,write'; excludes cmdprio_percentage; \
         io_uring and libaio",
    )
    .expects(
        "bs/percentage[/class/level] entries such as \
         64k/25/1/1:64k/75/3/2, or 'read,write'",
    )
    .set(|d, c| {
        let cmdprio = &mut d.spec.control.cmdprio;
        cmdprio.bssplit = super::cmdprio::bssplit(c, &cmdprio.bssplit)?;
        Ok(())
    }),
    // Engine-specific options (fio's --enghelp lists; each backend's in device/).
    OptionDef::new(
        "sqthread_poll_cpu",
        S::Engine,
        "pin io_uring's SQ polling thread to this CPU \
         (IORING_SETUP_SQ_AFF); without sqthread_poll=1 there is no such \
         thread and it has no effect (a note says so)",
    )
    .expects("a CPU number")
    .set(|d, c| {
        d.spec.backend.uring.sqthread_poll_cpu = Some(c.int(0, 4095)? as u32);
        Ok(())
    }),
    OptionDef::new(
        "hipri_percentage",
        S::Engine,
        "pvsync2 with hipri=1: the share of requests (0-100) sent \
         with RWF_HIPRI; the rest are not polled. Without hipri=1 it \
         has no effect (a note says so)",
    )
    .expects("a percentage, 0-100")
    .set(|d, c| {
        d.spec.backend.pvsync2.hipri_percentage = c.int(0, 100)? as u32;
        Ok(())
    }),
    OptionDef::new(
        "nowait",
        S::Engine,
        "reads and writes carry RWF_NOWAIT: a request that would \
         block fails with EAGAIN instead (io_uring, libaio, pvsync2)",
    )
    .flag()
    .set(|d, c| {
        d.spec.backend.flags.nowait = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "uncached",
        S::Engine,
        "buffered reads and writes drop their pages from the page \
         cache once done: RWF_DONTCACHE (Linux 6.14) on io_uring and \
         pvsync2",
    )
    .noted(
        "fio 3.33 sends flag 0x40 (RWF_UNCACHED, never merged), which \
         Linux 6.11 and later read as RWF_ATOMIC, so its requests \
         fail with EOPNOTSUPP; iolab sends RWF_DONTCACHE (0x80), the \
         uncached buffered I/O the option was written for",
    )
    .flag()
    .set(|d, c| {
        d.spec.backend.flags.uncached = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "nonvectored",
        S::Engine,
        "io_uring: 1 (the default here, as fio picks on kernels that \
         have them) IORING_OP_READ/WRITE; 0 IORING_OP_READV/WRITEV \
         with one iovec",
    )
    .flag()
    .set(|d, c| {
        d.spec.backend.uring.nonvectored = Some(c.boolean()?);
        Ok(())
    }),
    OptionDef::new(
        "force_async",
        S::Engine,
        "io_uring: every N-th request carries IOSQE_ASYNC (the kernel \
         hands it to an io-wq worker instead of trying it inline); 0 \
         none",
    )
    .expects("a count, 0 or more")
    .set(|d, c| {
        d.spec.backend.uring.force_async = c.int(0, u64::from(u32::MAX))? as u32;
        Ok(())
    }),
    OptionDef::new(
        "cmd_type",
        S::Engine,
        "uring_cmd command set: nvme (the only one); it selects \
         io_uring_cmd's passthrough commands",
    )
    .noted(
        "it has effect only with ioengine=io_uring_cmd (NVMe \
         passthrough), which iolab does not run; with io_uring, fio \
         and iolab ignore it",
    )
    .expects("nvme")
    .set(|_, c| match c.value {
        "nvme" => Ok(()),
        _ => Err(c.bad("nvme")),
    }),
    OptionDef::new(
        "atomic",
        S::Engine,
        "atomic writes: O_DIRECT, and each write carries RWF_ATOMIC \
         (Linux 6.11), checked at setup against the target's atomic \
         write unit (statx); pvsync2, libaio, io_uring",
    )
    .stricter(
        "refused where the target cannot write atomically (statx \
         reports no atomic write unit, or the block size is outside \
         it) and on engines without per-call flags; fio 3.33 opens \
         with an O_ATOMIC flag Linux does not have and silently runs \
         plain O_DIRECT writes",
    )
    .flag()
    .set(|d, c| {
        d.spec.backend.flags.atomic = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "thp",
        S::Engine,
        "mmap: map privately and advise transparent huge pages \
         (MADV_HUGEPAGE), as fio does; writes then stay in the \
         process",
    )
    .expects("0 or 1")
    .set(|d, c| {
        d.spec.backend.mmap.thp = c.int(0, u64::from(u32::MAX))? != 0;
        Ok(())
    }),
    OptionDef::new(
        "stat_type",
        S::Engine,
        "filestat: the call timed per file: stat, lstat or statx",
    )
    .expects(crate::device::fileops::StatType::VALID)
    .set(|d, c| {
        d.spec.backend.filestat.stat_type = super::engine_set::stat_type(c)?;
        Ok(())
    }),
    OptionDef::new(
        "cpuload",
        S::Engine,
        "cpuio: percent of a CPU to burn (1-100; above 100 means 100, as fio)",
    )
    .expects("a percentage, 1-100")
    .set(|d, c| {
        d.spec.backend.cpuio.cpuload = c.int(1, u64::from(u32::MAX))?.min(100) as u32;
        Ok(())
    }),
    OptionDef::new(
        "cpuchunks",
        S::Engine,
        "cpuio: microseconds per burn cycle (default 50000); the \
         think time after each cycle keeps the load at cpuload",
    )
    .expects("microseconds, 1 or more")
    .set(|d, c| {
        d.spec.backend.cpuio.cpuchunks = c.int(1, u64::from(u32::MAX))? as u32;
        Ok(())
    }),
    OptionDef::new(
        "cpumode",
        S::Engine,
        "cpuio: noop spins, qsort sorts fio's 256 Ki numbers round \
         after round for each cycle",
    )
    .expects(crate::device::cpuio::CpuMode::VALID)
    .set(|d, c| {
        d.spec.backend.cpuio.cpumode = super::engine_set::cpumode(c)?;
        Ok(())
    }),
    OptionDef::new(
        "exit_on_io_done",
        S::Engine,
        "cpuio: end when the group's I/O jobs have ended (runtime= \
         still caps it)",
    )
    .flag()
    .set(|d, c| {
        d.spec.backend.cpuio.exit_on_io_done = c.boolean()?;
        Ok(())
    }),
    // I/O depth.
    OptionDef::new(
        "iodepth",
        S::Depth,
        "requests in flight per worker, 1-65535",
    )
    .expects("a depth, 1-65535")
    .set(|d, c| {
        d.spec.iodepth = c.int(1, 65535)? as u32;
        Ok(())
    }),
    OptionDef::new(
        "iodepth_batch_submit",
        S::Depth,
        "most requests per submit call (0 = iodepth; above iodepth \
         means iodepth)",
    )
    .alias(&["iodepth_batch"])
    .expects(BATCH_EXPECTED)
    .set(|d, c| {
        d.spec.depth_batch.submit = Some(c.int(0, 65535)? as u32);
        Ok(())
    }),
    OptionDef::new(
        "iodepth_batch_complete_min",
        S::Depth,
        "completions to wait for at least (0 = never sleep for them: peek)",
    )
    .alias(&["iodepth_batch_complete"])
    .expects(BATCH_EXPECTED)
    .set(|d, c| {
        d.spec.depth_batch.complete_min = Some(c.int(0, 65535)? as u32);
        Ok(())
    }),
    OptionDef::new(
        "iodepth_batch_complete_max",
        S::Depth,
        "most completions taken per wait (default and floor: \
         iodepth_batch_complete_min)",
    )
    .expects(BATCH_EXPECTED)
    .set(|d, c| {
        d.spec.depth_batch.complete_max = Some(c.int(0, 65535)? as u32);
        Ok(())
    }),
    OptionDef::new(
        "iodepth_low",
        S::Depth,
        "once the queue is full, let it drain to this before \
         refilling (0 = iodepth)",
    )
    .expects(BATCH_EXPECTED)
    .set(|d, c| {
        d.spec.depth_batch.low = Some(c.int(0, 65535)? as u32);
        Ok(())
    }),
    // I/O rate.
    OptionDef::new(
        "rate_iops",
        S::Rate,
        "IOPS cap, per direction ('read,write')",
    )
    .expects("an IOPS count, or 'read,write'")
    .set(|d, c| {
        let kb = c.kb;
        d.spec.rate_iops = parse::per_dir(c, d.spec.rate_iops, |p| {
            units::parse_int(p, kb, 0, u64::MAX)
        })?;
        Ok(())
    }),
    OptionDef::new("thinktime", S::Rate, "pause between I/Os")
        .expects(TIME_US)
        .set(|d, c| {
            d.spec.thinktime = c.time(TimeUnit::Micros, false)?;
            Ok(())
        }),
    OptionDef::new("thinktime_blocks", S::Rate, "I/Os between pauses")
        .expects("a count, 1 or more")
        .set(|d, c| {
            d.spec.thinktime_blocks = c.int(1, u64::from(u32::MAX))? as u32;
            d.spec.workload.thinktime_blocks_set = true;
            Ok(())
        }),
    OptionDef::new(
        "rate",
        S::Rate,
        "bandwidth cap in bytes/s: 'A' reads and writes, 'A,' reads \
         only, ',B' writes only, 'A,B' each; a cap below one block per \
         second issues one I/O every few seconds. With rate_iops (any \
         directions) it is an error, as in fio",
    )
    .expects("a rate in bytes/s such as 1m, or 'read,write'")
    .set(|d, c| {
        let kb = c.kb;
        d.spec.rate = super::random::rate_dirs(c, d.spec.rate, |p| units::parse_bytes(p, kb))?;
        Ok(())
    }),
    OptionDef::new(
        "rate_min",
        S::Rate,
        "minimum bandwidth in bytes/s per direction, averaged over \
         rate_cycle; a job below it ends with an error",
    )
    .alias(&["ratemin"])
    .expects("a rate in bytes/s such as 1m, or 'read,write'")
    .set(|d, c| {
        let kb = c.kb;
        let bytes = |p: &str| units::parse_bytes(p, kb);
        d.spec.rate_min = super::random::rate_dirs(c, d.spec.rate_min, bytes)?;
        Ok(())
    }),
    OptionDef::new(
        "rate_iops_min",
        S::Rate,
        "minimum IOPS per direction, averaged over rate_cycle; a job \
         below it ends with an error",
    )
    .expects("an IOPS count, or 'read,write'")
    .set(|d, c| {
        let kb = c.kb;
        d.spec.rate_iops_min = super::random::rate_dirs(c, d.spec.rate_iops_min, |p| {
            units::parse_int(p, kb, 0, u64::MAX)
        })?;
        Ok(())
    }),
    OptionDef::new(
        "rate_process",
        S::Rate,
        "linear (fixed gaps, the default) or poisson (exponential \
         gaps with the same mean)",
    )
    .expects("linear or poisson")
    .set(|d, c| {
        d.spec.rate_poisson = match c.value {
            "linear" => false,
            "poisson" => true,
            _ => return Err(c.bad("linear or poisson")),
        };
        Ok(())
    }),
    OptionDef::new(
        "rate_cycle",
        S::Rate,
        "window in milliseconds over which rate_min and rate_iops_min \
         are averaged (default 1000)",
    )
    .alias(&["ratecycle"])
    .expects("milliseconds, 1 or more")
    .set(|d, c| {
        d.spec.rate_cycle = std::time::Duration::from_millis(c.int(1, 3_600_000)?);
        Ok(())
    }),
    OptionDef::new(
        "flow",
        S::Rate,
        "weight 1-1000: jobs sharing a flow_id keep their issued I/O \
         counts in the ratio of their weights (0: no flow control)",
    )
    .stricter(
        "negative weights (older fio's signed flow) are refused; a \
         job ahead of its share holds new I/O without first draining \
         the I/O in flight",
    )
    .expects("a weight, 0-1000")
    .set(|d, c| {
        d.spec.control.flow.weight = c.int(0, 1000)? as u32;
        Ok(())
    }),
    OptionDef::new(
        "flow_id",
        S::Rate,
        "the flow a flow-controlled job belongs to (default 0)",
    )
    .expects("a flow number, 0-4294967295")
    .set(|d, c| {
        d.spec.control.flow.id = c.int(0, u64::from(u32::MAX))? as u32;
        Ok(())
    }),
    OptionDef::new(
        "flow_sleep",
        S::Rate,
        "how long a job ahead of its flow share waits before trying \
         again (default 0: it retries at once)",
    )
    .expects(TIME_US)
    .set(|d, c| {
        d.spec.control.flow.sleep = c.time(TimeUnit::Micros, false)?;
        Ok(())
    }),
    // I/O latency.
    OptionDef::new(
        "latency_target",
        S::Latency,
        "find the deepest queue whose I/Os meet this latency (starts \
         at depth 1, up to iodepth)",
    )
    .expects(super::lat_target::TARGET_EXPECTED)
    .set(|d, c| {
        let t = c.time(TimeUnit::Micros, true)?;
        if t.is_zero() {
            return Err(c.bad(super::lat_target::TARGET_EXPECTED));
        }
        d.spec.lat_target.target = Some(t);
        Ok(())
    }),
    OptionDef::new(
        "latency_window",
        S::Latency,
        "how long each depth runs before it is judged; unset, the \
         depth is judged at every pass of the job's loop, as in fio (a \
         note says so)",
    )
    .expects(super::lat_target::WINDOW_EXPECTED)
    .set(|d, c| {
        let t = c.time(TimeUnit::Micros, false)?;
        if t.is_zero() {
            return Err(c.bad(super::lat_target::WINDOW_EXPECTED));
        }
        d.spec.lat_target.window = Some(t);
        Ok(())
    }),
    OptionDef::new(
        "latency_percentile",
        S::Latency,
        "share of a window's I/Os, in percent, that must meet \
         latency_target (default 100)",
    )
    .expects(super::lat_target::PERCENTILE_EXPECTED)
    .set(|d, c| {
        d.spec.lat_target.percentile = super::lat_target::percentile(c.value)
            .ok_or_else(|| c.bad(super::lat_target::PERCENTILE_EXPECTED))?;
        Ok(())
    }),
    OptionDef::new(
        "latency_run",
        S::Latency,
        "keep adjusting the depth to latency_target for the whole \
         runtime instead of ending",
    )
    .flag()
    .set(|d, c| {
        d.spec.lat_target.keep_running = c.boolean()?;
        Ok(())
    }),
    // I/O replay.
    OptionDef::new(
        "write_iolog",
        S::Replay,
        "write the I/Os the job issues to FILE in fio's iolog version \
         3 (\"TIME FILE add|open|close\" and \"TIME FILE \
         read|write|trim|sync OFFSET LENGTH\", TIME in microseconds), \
         appended as fio does; clones of a job append to the same \
         file line by line",
    )
    .expects("a file name")
    .set(|d, c| {
        d.spec.iolog.write = Some(c.nonempty()?);
        Ok(())
    }),
    OptionDef::new(
        "read_iolog",
        S::Replay,
        "replay an fio iolog (version 2 or 3) or a blktrace binary \
         file (found by its magic): the log's I/Os in order, on the \
         log's files, at the log's times; A:B gives clone N the Nth \
         name",
    )
    .stricter(IOLOG_STRICT)
    .expects(
        "a file name, a ':'-separated list of them (one per clone), \
         or - for standard input",
    )
    .set(|d, c| {
        d.spec.iolog.read = Some(c.nonempty()?);
        Ok(())
    }),
    OptionDef::new(
        "read_iolog_chunked",
        S::Replay,
        "read the log in parts while replaying it",
    )
    .flag()
    .noted(
        "iolab reads the whole log before the clock starts (reading \
         it during the run would put file reads on the I/O path); the \
         replayed I/Os and their times are the same",
    )
    .set(|d, c| {
        d.spec.iolog.chunked = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "replay_no_stall",
        S::Replay,
        "issue the log's I/Os as fast as the depth allows, in the \
         log's order, instead of at the log's times",
    )
    .flag()
    .set(|d, c| {
        d.spec.iolog.no_stall = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "replay_time_scale",
        S::Replay,
        "percent of the log's rate: 50 replays at half the rate (gaps \
         twice as long), 200 at twice",
    )
    .expects("a percentage, 1 or more")
    .set(|d, c| {
        d.spec.iolog.time_scale = c.int(1, u32::MAX as u64)? as u32;
        Ok(())
    }),
    OptionDef::new(
        "replay_scale",
        S::Replay,
        "divide every logged offset by this factor (1: as logged)",
    )
    .expects("a factor, 1 or more")
    .set(|d, c| {
        d.spec.iolog.scale = c.int(1, u64::MAX)?;
        Ok(())
    }),
    OptionDef::new(
        "replay_align",
        S::Replay,
        "round every logged offset down to a multiple of this power of two",
    )
    .stricter(
        "a value that is not a power of two is refused (fio masks the \
         offset with value-1, which only aligns for a power of two)",
    )
    .expects("a power of two, e.g. 4k")
    .set(|d, c| {
        d.spec.iolog.align = super::iolog_opts::align(c)?;
        Ok(())
    }),
    OptionDef::new(
        "replay_redirect",
        S::Replay,
        "replay every I/O of the log on this file or device instead \
         of the ones the log names",
    )
    .expects("a file or device path")
    .set(|d, c| {
        d.spec.iolog.redirect = Some(c.nonempty()?);
        Ok(())
    }),
    OptionDef::new(
        "replay_skip",
        S::Replay,
        "leave these directions out of the replay: read, write, trim, \
         sync (fio 3.33 applies it to blktrace input only; iolab to \
         iologs as well)",
    )
    .expects(super::iolog_opts::SKIP_VALID)
    .set(|d, c| {
        d.spec.iolog.skip = super::iolog_opts::skip(c)?;
        Ok(())
    }),
    OptionDef::new(
        "merge_blktrace_file",
        S::Replay,
        "merge the blktraces read_iolog names into this file, in time \
         order, and replay it",
    )
    .expects("a file name")
    .set(|d, c| {
        d.spec.iolog.merge_file = Some(c.nonempty()?);
        Ok(())
    }),
    OptionDef::new(
        "merge_blktrace_scalars",
        S::Replay,
        "per read_iolog blktrace, percent of its time scale in the \
         merge (50: twice as fast)",
    )
    .expects(super::iolog_opts::FLOAT_LIST)
    .set(|d, c| {
        d.spec.iolog.merge_scalars = super::iolog_opts::float_list(c)?;
        Ok(())
    }),
    OptionDef::new(
        "merge_blktrace_iters",
        S::Replay,
        "per read_iolog blktrace, how many times it runs in the merge",
    )
    .expects(super::iolog_opts::FLOAT_LIST)
    .set(|d, c| {
        d.spec.iolog.merge_iters = super::iolog_opts::float_list(c)?;
        Ok(())
    }),
    // Threads, processes and job synchronization.
    OptionDef::new(
        "stonewall",
        S::Threads,
        "wait for every job before this one to finish; starts a new \
         reporting group",
    )
    .alias(&["wait_for_previous"])
    .flag()
    .set(|d, c| {
        d.spec.stonewall = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "prio",
        S::Threads,
        "I/O priority level 0-7; alone it means best-effort",
    )
    .expects("a level, 0-7")
    .set(|d, c| {
        d.prio = Some(c.int(0, 7)? as u16);
        Ok(())
    }),
    OptionDef::new("prioclass", S::Threads, "I/O priority class 0-3")
        .expects("a class, 0-3")
        .set(|d, c| {
            d.prioclass = Some(c.int(0, 3)? as u16);
            Ok(())
        }),
    OptionDef::new(
        "cpus_allowed",
        S::Threads,
        "CPU list such as 0,5,8-15; every CPU must be online",
    )
    .expects("a CPU list such as 0,5,8-15")
    .set(|d, c| {
        d.spec.cpus_allowed = parse::cpus_allowed(c)?;
        Ok(())
    }),
    OptionDef::new(
        "cpumask",
        S::Threads,
        "bit mask of CPUs, decimal or 0x hex; not with cpus_allowed",
    )
    .expects("a CPU bit mask such as 0x22")
    .set(|d, c| {
        d.spec.cpus_allowed = parse::cpumask(c)?;
        Ok(())
    }),
    OptionDef::new(
        "cpus_allowed_policy",
        S::Threads,
        "shared (every clone may use every CPU) or split (clone N \
         gets the N-th CPU)",
    )
    .expects("shared or split")
    .set(|d, c| {
        d.spec.cpus_allowed_split = match c.value {
            "shared" => false,
            "split" => true,
            _ => return Err(c.bad("shared or split")),
        };
        Ok(())
    }),
    OptionDef::new(
        "io_submit_mode",
        S::Engine,
        "inline (fio's default): a job ahead of its rate lets its I/O \
         in flight complete, then waits out the gap; offload: the \
         rate schedule is kept whatever the I/O in flight does",
    )
    .stricter(
        "offload with a synchronous engine (sync, psync, vsync, \
         pvsync, pvsync2) at iodepth above 1 is refused: iolab \
         performs such an engine's I/O on the worker thread, one at a \
         time, where fio's offload runs iodepth of them on iodepth \
         threads",
    )
    .expects("inline or offload")
    .set(|d, c| {
        d.spec.io_submit_offload = match c.value {
            "inline" => false,
            "offload" => true,
            _ => return Err(c.bad("inline or offload")),
        };
        Ok(())
    }),
    OptionDef::new(
        "thread",
        S::Threads,
        "run jobs as threads: iolab's workers always are",
    )
    .alias(&["threads"])
    .flag()
    .set(|_, c| {
        c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "new_group",
        S::Threads,
        "start a new reporting group; unlike stonewall, the job still \
         runs beside the jobs before it",
    )
    .flag()
    .set(|d, c| {
        d.spec.new_group = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "exitall",
        S::Threads,
        "when this job finishes, stop the jobs exit_what names \
         (default: its reporting group)",
    )
    .flag()
    .set(|d, c| {
        d.spec.control.exitall = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "exit_what",
        S::Threads,
        "which jobs exitall stops: group (the jobs of its reporting \
         group), stonewall (every job running), all (those and every \
         later group)",
    )
    .expects(super::control::ExitWhat::VALID)
    .set(|d, c| {
        d.spec.control.exit_what = super::control_opts::exit_what(c)?;
        Ok(())
    }),
    OptionDef::new(
        "exitall_on_error",
        S::Threads,
        "when this job stops on an error, stop every running job and \
         start no later group",
    )
    .flag()
    .set(|d, c| {
        d.spec.control.exitall_on_error = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "wait_for",
        S::Threads,
        "start this job only when every clone of the named earlier \
         job has finished",
    )
    .stricter(
        "the waitee may not share a worker with the waiter \
         (ioengine=null jobs on one filename)",
    )
    .expects("the name of an earlier job")
    .set(|d, c| {
        d.spec.control.wait_for = Some(c.nonempty()?);
        Ok(())
    }),
    OptionDef::new(
        "numa_cpu_nodes",
        S::Threads,
        "run the job's worker on the CPUs of these NUMA nodes (0-1, \
         0,2, all); every node must exist. With cpus_allowed or \
         cpumask the node mask wins, as in fio (a note says so)",
    )
    .expects("a list of NUMA nodes such as 0, 0-1, 0,2 or all")
    .set(|d, c| {
        let nodes = crate::sys::numa::Nodes::system();
        super::control_opts::numa_cpu_nodes(c, &mut d.spec.control.numa, &nodes)
    }),
    OptionDef::new(
        "numa_mem_policy",
        S::Threads,
        "memory policy of the job's worker and buffers: default, \
         local, prefer:N, bind:NODES, interleave:NODES",
    )
    .expects(super::control_opts::MEM_VALID)
    .set(|d, c| {
        let nodes = crate::sys::numa::Nodes::system();
        super::control_opts::numa_mem_policy(c, &mut d.spec.control.numa, &nodes)
    }),
    // Verification.
    OptionDef::new(
        "verify",
        S::Verify,
        "a checksum of fio's (crc32c, md5, crc64, crc32, crc16, crc7, \
         sha1, sha256, sha512, sha3-*, xxhash), meta, pattern, null \
         or 0/none: fio's header per block (or per verify_interval), \
         read back and checked; fio's on-device format, so each tool \
         checks what the other wrote; see docs/reliability.md",
    )
    .expects(parse::VERIFY_VALID)
    .set(|d, c| {
        d.spec.verify.kind = parse::verify(c)?;
        Ok(())
    }),
    OptionDef::new(
        "verify_pattern",
        S::Verify,
        "hex 0x..., decimal, quoted \"text\", or a concatenation; \
         alone, fio's header-plus-pattern check; with crc32c or meta the data \
         is the pattern and is checked too",
    )
    .stricter("fio's %o offset format is refused")
    .expects("a pattern such as 0xdeadbeef")
    .set(|d, c| {
        d.spec.verify.pattern = parse::verify_pattern(c.value).map_err(|e| c.bad(e))?;
        Ok(())
    }),
    OptionDef::new(
        "do_verify",
        S::Verify,
        "read back every written block after the write phase (default 1)",
    )
    .flag()
    .set(|d, c| {
        d.spec.verify.do_verify = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "verify_fatal",
        S::Verify,
        "stop the job at the first mismatch",
    )
    .flag()
    .set(|d, c| {
        d.spec.verify.fatal = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "verify_backlog",
        S::Verify,
        "verify the last N written blocks after every N writes",
    )
    .expects("a count of blocks")
    .set(|d, c| {
        d.spec.verify.backlog = c.int(0, u64::from(u32::MAX))?;
        Ok(())
    }),
    OptionDef::new(
        "verify_interval",
        S::Verify,
        "a header every N bytes of a block, each chunk checked on its \
         own (0 = one per block); as in fio, N longer than the \
         smallest block becomes that block's size, and N that does \
         not divide the smallest and largest write blocks becomes \
         their greatest common divisor",
    )
    .stricter(
        "once fitted, it must still divide every block size: a \
         bssplit size between the smallest and the largest may not be \
         a multiple (fio's last chunk of such a block is shorter than \
         its header says)",
    )
    .expects("a size of at least 64 bytes (at most 4 GiB)")
    .set(|d, c| {
        let v = c.size()?;
        d.spec.verify.interval =
            u32::try_from(v).map_err(|_| c.bad("a size of at least 64 bytes (at most 4 GiB)"))?;
        Ok(())
    }),
    OptionDef::new(
        "verify_offset",
        S::Verify,
        "swap the verify header with the data this many bytes into \
         each block (or verify_interval) before writing; swapped back \
         before the check",
    )
    .stricter(
        "the swapped ranges may not overlap: 0, or at least the \
         header's length (40 bytes plus the checksum's, 44 for crc32c; \
         fio swaps overlapping bytes too)",
    )
    .expects(
        "0, or a size of at least the header's length that leaves room \
         for the header in every block (or verify_interval)",
    )
    .set(|d, c| {
        let v = c.size()?;
        d.spec.verify.offset = u32::try_from(v).map_err(|_| {
            c.bad(
                "0, or a size of at least the header's length that leaves \
         room for the header (at most 4 GiB)",
            )
        })?;
        Ok(())
    }),
    OptionDef::new(
        "verify_async",
        S::Verify,
        "check blocks on N threads apart from the job's",
    )
    .noted(
        "iolab checks each block on the job's worker as its read \
         completes: the same checks and result, the CPU time stays on \
         the worker",
    )
    .expects("a number of threads, 0 or more")
    .set(|_, c| {
        c.int(0, u64::from(u32::MAX))?;
        Ok(())
    }),
    OptionDef::new(
        "verify_only",
        S::Verify,
        "a write job does not write: it walks its workload to learn \
         what it would have written, then reads that back and checks \
         it (what an earlier run of the same job, with the same \
         randseed, wrote)",
    )
    .flag()
    .set(|d, c| {
        d.spec.verify.only = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "verify_state_save",
        S::Verify,
        "save a write job's verify state when it stops early (fio's default 1)",
    )
    .flag()
    .noted(
        "iolab writes no state file: a write job's verify phase runs in the same run, over the \
         blocks its map says were written; to check them in a later run, run the job again with \
         verify_only=1",
    )
    .set(|_, c| {
        c.boolean()?;
        Ok(())
    }),
    refused(
        "verify_state_load",
        S::Verify,
        "iolab saves no verify state (verify_state_save): run the write job again with \
         verify_only=1, which re-reads and checks every block it writes",
    ),
    OptionDef::new(
        "experimental_verify",
        S::Verify,
        "verify by replaying the job's writes instead of from a record of them; either way the \
         blocks last written are read back and checked (iolab always works from its map of the \
         last write of each block)",
    )
    .flag()
    .set(|_, c| {
        c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "verify_dump",
        S::Verify,
        "write each mismatching block (or interval) as \
         FILE.OFFSET.received and FILE.OFFSET.expected in the working \
         directory; one whose header is bad as FILE.OFFSET.hdr_fail, \
         as read",
    )
    .flag()
    .set(|d, c| {
        d.spec.verify.dump = c.boolean()?;
        Ok(())
    }),
    // Steady state.
    OptionDef::new(
        "steadystate",
        S::SteadyState,
        "end the job once its IOPS or bandwidth, sampled every \
         second, meets the criterion over ss_dur; without an ss_dur of \
         a second or more it has no effect, as in fio (a note says so)",
    )
    .alias(&["ss"])
    .expects(super::steady::CRITERION_EXPECTED)
    .set(|d, c| {
        let crit = super::steady::criterion(c.value);
        let crit = crit.ok_or_else(|| c.bad(super::steady::CRITERION_EXPECTED))?;
        d.spec.steady.criterion = Some(crit);
        Ok(())
    }),
    OptionDef::new(
        "steadystate_duration",
        S::SteadyState,
        "the window of one-second samples the steadystate criterion \
         must hold over (default criterion iops_slope:0.01%), in whole \
         seconds as fio keeps them (2.5s is 2); 0 or less than a \
         second: off, and a steadystate criterion then has no effect \
         (a note says so). At most 86400",
    )
    .alias(&["ss_dur"])
    .expects(super::steady::DUR_EXPECTED)
    .set(|d, c| {
        let t = match c.time(TimeUnit::Seconds, false) {
            Ok(t) => t,
            Err(e) if c.value.contains('.') => {
                super::steady::fractional_duration(c.value).ok_or(e)?
            }
            Err(e) => return Err(e),
        };
        if !super::steady::duration_ok(t) {
            return Err(c.bad(super::steady::DUR_EXPECTED));
        }
        d.spec.steady.duration = t;
        Ok(())
    }),
    OptionDef::new(
        "steadystate_ramp_time",
        S::SteadyState,
        "time after the job starts (and after ramp_time) before \
         steady-state samples are taken",
    )
    .alias(&["ss_ramp"])
    .expects(TIME_S)
    .set(|d, c| {
        d.spec.steady.ramp = c.time(TimeUnit::Seconds, false)?;
        Ok(())
    }),
    // Measurements and reporting.
    OptionDef::new(
        "group_reporting",
        S::Measurements,
        "report the jobs of a reporting group (and their clones) as one",
    )
    .flag()
    .set(|d, c| {
        d.spec.group_reporting = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "percentile_list",
        S::Measurements,
        "up to 20 values in [0, 100], ':'-separated",
    )
    .alias(&["percentiles"])
    .expects("percentiles such as 50:99:99.9")
    .set(|d, c| {
        d.spec.percentile_list = units::parse_percentile_list(c.value).map_err(|e| c.bad(e))?;
        Ok(())
    }),
    OptionDef::new(
        "kb_base",
        S::Measurements,
        "1024 or 1000; applies to its whole section",
    )
    .expects("1024 or 1000")
    .set(|d, c| {
        d.spec.kb_base = match c.value {
            "1024" => 1024,
            "1000" => 1000,
            _ => return Err(c.bad("1024 or 1000")),
        };
        Ok(())
    }),
    OptionDef::new(
        "clat_percentiles",
        S::Measurements,
        "completion-latency percentiles in the reports, and clat_ns \
         bins in json+ (default 1)",
    )
    .flag()
    .noted(PCT_NOTE)
    .set(|d, c| {
        d.spec.lat_percentiles.clat = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "lat_percentiles",
        S::Measurements,
        "total-latency percentiles in the reports, and lat_ns bins in \
         json+ (default 0)",
    )
    .flag()
    .noted(PCT_NOTE)
    .set(|d, c| {
        d.spec.lat_percentiles.lat = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "slat_percentiles",
        S::Measurements,
        "submission-latency percentiles in the reports, and slat_ns \
         bins in json+ (default 0; synchronous engines have no slat)",
    )
    .flag()
    .noted(PCT_NOTE)
    .set(|d, c| {
        d.spec.lat_percentiles.slat = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "disable_lat",
        S::Measurements,
        "do not measure total latency",
    )
    .flag()
    .noted(ALWAYS_LAT)
    .set(|_, c| {
        c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "disable_clat",
        S::Measurements,
        "do not measure completion latency",
    )
    .flag()
    .noted(ALWAYS_LAT)
    .set(|_, c| {
        c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "disable_slat",
        S::Measurements,
        "do not measure submission latency",
    )
    .flag()
    .noted(ALWAYS_LAT)
    .set(|_, c| {
        c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "gtod_reduce",
        S::Measurements,
        "do not measure most time-of-day calls (disable_lat, clat and slat)",
    )
    .flag()
    .noted(ALWAYS_LAT)
    .set(|_, c| {
        c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "write_bw_log",
        S::Measurements,
        "write PREFIX_bw.N.log: bandwidth (KiB/s) per I/O or per \
         log_avg_msec window",
    )
    .bare()
    .stricter(LOG_PREFIX)
    .expects(LOG_PREFIX_EXPECTED)
    .set(|d, c| {
        d.spec.logs.bw = Some(log_prefix(c)?);
        Ok(())
    }),
    OptionDef::new(
        "write_lat_log",
        S::Measurements,
        "write PREFIX_slat/_clat/_lat.N.log: latency (ns) per I/O or \
         per log_avg_msec window",
    )
    .bare()
    .stricter(LOG_PREFIX)
    .expects(LOG_PREFIX_EXPECTED)
    .set(|d, c| {
        d.spec.logs.lat = Some(log_prefix(c)?);
        Ok(())
    }),
    OptionDef::new(
        "write_iops_log",
        S::Measurements,
        "write PREFIX_iops.N.log: IOPS per I/O (1) or per log_avg_msec window",
    )
    .bare()
    .stricter(LOG_PREFIX)
    .expects(LOG_PREFIX_EXPECTED)
    .set(|d, c| {
        d.spec.logs.iops = Some(log_prefix(c)?);
        Ok(())
    }),
    OptionDef::new(
        "write_hist_log",
        S::Measurements,
        "write PREFIX_clat_hist.N.log: fio's clat histogram per \
         log_hist_msec window",
    )
    .bare()
    .stricter(LOG_PREFIX)
    .expects(LOG_PREFIX_EXPECTED)
    .set(|d, c| {
        d.spec.logs.hist = Some(log_prefix(c)?);
        Ok(())
    }),
    OptionDef::new(
        "log_avg_msec",
        S::Measurements,
        "average log rows over this many ms (0 = a row per I/O)",
    )
    .expects(LOG_MSEC)
    .set(|d, c| {
        d.spec.logs.avg_msec = c.int(0, LOG_MSEC_MAX)? as u32;
        Ok(())
    }),
    OptionDef::new(
        "log_hist_msec",
        S::Measurements,
        "one histogram row per direction every this many ms (0 = none)",
    )
    .expects(LOG_MSEC)
    .set(|d, c| {
        d.spec.logs.hist_msec = c.int(0, LOG_MSEC_MAX)? as u32;
        Ok(())
    }),
    OptionDef::new(
        "log_hist_coarseness",
        S::Measurements,
        "0-6: each step halves the histogram log's 1856 bins",
    )
    .expects("an integer from 0 to 6")
    .set(|d, c| {
        d.spec.logs.hist_coarseness = c.int(0, 6)? as u8;
        Ok(())
    }),
    OptionDef::new(
        "log_max_value",
        S::Measurements,
        "log a window's maximum instead of its mean",
    )
    .flag()
    .set(|d, c| {
        d.spec.logs.max_value = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "log_drop_when_full",
        S::Measurements,
        "per-I/O logs: when the log writer falls behind, drop records (counted \
         and reported) instead of making the worker wait for it (the default \
         logs every I/O, as fio does, and reports the time waited)",
    )
    .ours()
    .flag()
    .set(|d, c| {
        d.spec.logs.drop_when_full = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "log_offset",
        S::Measurements,
        "add the I/O's offset column to the logs",
    )
    .flag()
    .set(|d, c| {
        d.spec.logs.offset = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "log_prio",
        S::Measurements,
        "log the ioprio value (hex) instead of the 0/1 high-priority flag",
    )
    .flag()
    .set(|d, c| {
        d.spec.logs.prio = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "per_job_logs",
        S::Measurements,
        "name logs PREFIX_type.N.log (1, default) or PREFIX_type.log \
         shared by the jobs (0)",
    )
    .flag()
    .set(|d, c| {
        d.spec.logs.per_job = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "log_unix_epoch",
        S::Measurements,
        "log timestamps in ms since the Unix epoch (CLOCK_REALTIME, \
         or log_alternate_epoch_clock_id's clock) instead of since \
         the job's start",
    )
    .flag()
    .set(|d, c| {
        d.spec.logs.unix_epoch = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "log_alternate_epoch",
        S::Measurements,
        "log timestamps in ms on log_alternate_epoch_clock_id's clock \
         instead of since the job's start",
    )
    .flag()
    .set(|d, c| {
        d.spec.logs.alternate_epoch = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "log_alternate_epoch_clock_id",
        S::Measurements,
        "clock_gettime(2) clock id of epoch timestamps (0 \
         CLOCK_REALTIME, 1 CLOCK_MONOTONIC, 7 CLOCK_BOOTTIME, 11 \
         CLOCK_TAI, ...)",
    )
    .stricter(EPOCH_CLOCK)
    .expects(EPOCH_CLOCK_EXPECTED)
    .set(|d, c| {
        d.spec.logs.epoch_clock_id = super::log_epoch::clock_id(c)?;
        Ok(())
    }),
    // Measurement, reporting and workload options of `job::report_opts` and
    // `job::workload_opts` (kept together so they merge as one block).
    OptionDef::new(
        "log_compression",
        S::Measurements,
        "compress the job's logs in memory in chunks of this many \
         bytes (0 = off); the files are written as plain text unless \
         log_store_compressed=1",
    )
    .expects(SIZE)
    .set(|d, c| {
        d.spec.reporting.log_compression = c.size()?;
        Ok(())
    }),
    OptionDef::new(
        "log_store_compressed",
        S::Measurements,
        "with log_compression, store each log zlib-compressed as fio \
         does (NAME.log.fz, read by fio --inflate-log)",
    )
    .flag()
    .set(|d, c| {
        d.spec.reporting.log_store_compressed = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "log_compression_cpus",
        S::Measurements,
        "CPUs fio's log compression threads may run on",
    )
    .noted(
        "iolab compresses a log when it is written at the end of the \
         job, on the job's own thread",
    )
    .expects("a CPU list such as 0-3,6")
    .set(|_, c| {
        parse::cpus_allowed(c)?;
        Ok(())
    }),
    OptionDef::new(
        "log_entries",
        S::Measurements,
        "fio's initial number of entries of a log's buffer",
    )
    .noted(
        "iolab's logs are written as the run goes by a writer thread; \
         there is no buffer to size",
    )
    .expects("a count, 1024 or more")
    .set(|_, c| {
        c.int(1024, u64::from(u32::MAX))?;
        Ok(())
    }),
    OptionDef::new(
        "unified_rw_reporting",
        S::Measurements,
        "none: reads, writes and trims apart; mixed: one 'mixed' \
         direction summing them; both: apart, then the mixed sum \
         (0/1/2 as fio); text, JSON and terse",
    )
    .expects(super::report_opts::UNIFIED_VALID)
    .set(|d, c| {
        d.spec.reporting.unified = super::report_set::unified(c)?;
        Ok(())
    }),
    OptionDef::new(
        "stats",
        S::Measurements,
        "stats=0: the job runs, but has no results in the reports (default 1)",
    )
    .flag()
    .set(|d, c| {
        d.spec.reporting.stats = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "unit_base",
        S::Measurements,
        "bandwidth in the text output in bytes (0 or 8, the default) \
         or bits (1) per second",
    )
    .expects(super::report_opts::UNIT_BASE_VALID)
    .set(|d, c| {
        d.spec.reporting.bits = super::report_set::unit_base(c)?;
        Ok(())
    }),
    OptionDef::new(
        "significant_figures",
        S::Measurements,
        "significant figures of the text output's scaled numbers \
         (IOPS=, BW=, io=), 1-10 (default 4)",
    )
    .expects("a count, 1-10")
    .set(|d, c| {
        d.spec.reporting.sig_figs = c.int(1, 10)? as u8;
        Ok(())
    }),
    OptionDef::new(
        "bwavgtime",
        S::Measurements,
        "window of each bandwidth sample of the 'bw (KiB/s): min=..., \
         samples=N' line and JSON \
         bw_min/bw_max/bw_mean/bw_dev/bw_samples, ms (default 500)",
    )
    .expects(super::report_opts::AVG_VALID)
    .set(|d, c| {
        d.spec.reporting.bw_avg_ms = c.int(1, LOG_MSEC_MAX)? as u32;
        Ok(())
    }),
    OptionDef::new(
        "iopsavgtime",
        S::Measurements,
        "window of each IOPS sample of the 'iops: min=..., samples=N' \
         line and JSON iops_min/.../iops_samples, ms (default 500)",
    )
    .expects(super::report_opts::AVG_VALID)
    .set(|d, c| {
        d.spec.reporting.iops_avg_ms = c.int(1, LOG_MSEC_MAX)? as u32;
        Ok(())
    }),
    OptionDef::new(
        "disable_bw_measurement",
        S::Measurements,
        "no bandwidth samples: the 'bw (KiB/s): min=...' line is left \
         out and the JSON bw_min/.../bw_samples are 0 (the BW= figure \
         stays)",
    )
    .alias(&["disable_bw"])
    .flag()
    .set(|d, c| {
        d.spec.reporting.disable_bw = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "disk_util",
        S::Measurements,
        "the 'Disk stats (read/write)' section (JSON disk_util) for \
         the job's block devices, from /proc/diskstats (default 1)",
    )
    .flag()
    .set(|d, c| {
        d.spec.reporting.disk_util = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "clocksource",
        S::Measurements,
        "fio's timing source: gettimeofday, clock_gettime or cpu",
    )
    .noted(
        "iolab times every job on one nanosecond clock per run, the \
         CPU's TSC where the kernel trusts it and CLOCK_MONOTONIC \
         otherwise (IOLAB_CLOCK=monotonic picks that one); the source \
         changes the cost of a reading, not what is measured",
    )
    .expects("gettimeofday, clock_gettime or cpu")
    .set(|_, c| match c.value {
        "gettimeofday" | "clock_gettime" | "cpu" => Ok(()),
        _ => Err(c.bad("gettimeofday, clock_gettime or cpu")),
    }),
    OptionDef::new(
        "gtod_cpu",
        S::Measurements,
        "fio: a thread on this CPU keeps the time for all jobs",
    )
    .noted(
        "iolab's workers read the clock themselves (vDSO or TSC, tens \
         of ns); no time-keeping thread is started",
    )
    .expects("a CPU number")
    .set(|_, c| {
        c.int(0, 65535)?;
        Ok(())
    }),
    OptionDef::new(
        "max_latency",
        S::Latency,
        "a completion whose total latency (issue to completion) \
         exceeds this ends the job with ETIMEDOUT, as fio; \
         'read,write,trim' values (microseconds by default)",
    )
    .expects("a time such as 10ms, or 'read,write,trim' times")
    .set(|d, c| {
        d.spec.reporting.max_latency = super::report_set::max_latency(c)?;
        Ok(())
    }),
    OptionDef::new(
        "block_error_percentiles",
        S::Measurements,
        "fio: histogram of how many trims each block took to fail",
    )
    .flag()
    .noted(
        "iolab keeps no per-block trim and error history, so no block \
         error histogram is printed (fio prints one only for trim \
         jobs whose blocks failed)",
    )
    .set(|_, c| {
        c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "thinktime_spin",
        S::Rate,
        "spin on the CPU for this long at the start of each think \
         time, sleep the rest",
    )
    .expects(TIME_US)
    .set(|d, c| {
        d.spec.workload.thinktime_spin = c.time(TimeUnit::Micros, false)?;
        Ok(())
    }),
    OptionDef::new(
        "thinktime_blocks_type",
        S::Rate,
        "what thinktime_blocks counts: complete (I/Os completed, \
         default) or issue (I/Os issued)",
    )
    .expects(super::workload_opts::THINK_COUNT_VALID)
    .set(|d, c| {
        d.spec.workload.think_count = super::workload_set::think_count(c)?;
        Ok(())
    }),
    OptionDef::new(
        "thinktime_iotime",
        S::Rate,
        "think after every this much time of I/O (with \
         thinktime_blocks too: whichever comes first)",
    )
    .expects(TIME_S)
    .set(|d, c| {
        d.spec.workload.thinktime_iotime = c.time(TimeUnit::Seconds, false)?;
        Ok(())
    }),
    OptionDef::new(
        "rate_ignore_thinktime",
        S::Rate,
        "the rate's schedule moves on during think time instead of \
         catching up after it",
    )
    .flag()
    .set(|d, c| {
        d.spec.workload.rate_ignore_thinktime = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "rw_sequencer",
        S::IoType,
        "with rw=rand...:N: sequential (default: N consecutive blocks \
         from each random offset) or identical (the same offset N \
         times)",
    )
    .expects(super::workload_opts::SEQUENCER_VALID)
    .set(|d, c| {
        d.spec.workload.seq_identical = super::workload_set::sequencer(c)?;
        Ok(())
    }),
    OptionDef::new(
        "serialize_overlap",
        S::IoType,
        "a request overlapping one of the job's requests in flight \
         waits for it to complete",
    )
    .flag()
    .set(|d, c| {
        d.spec.workload.serialize_overlap = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "allrandrepeat",
        S::IoType,
        "every random generator repeatable (offsets, sizes, mix, \
         buffers), whatever randrepeat says",
    )
    .flag()
    .set(|d, c| {
        d.spec.workload.allrandrepeat = c.boolean()?;
        Ok(())
    }),
    OptionDef::new(
        "verify_backlog_batch",
        S::Verify,
        "blocks read back at each verify_backlog check (default \
         verify_backlog); the rest are read back later",
    )
    .expects("a count of blocks")
    .set(|d, c| {
        d.spec.workload.verify_backlog_batch = c.int(0, u64::from(u32::MAX))?;
        Ok(())
    }),
    OptionDef::new(
        "trim_backlog_batch",
        S::IoType,
        "fio: trims issued at each trim_backlog point",
    )
    .noted(
        "it only paces trim_backlog, which iolab refuses (its \
         verification trims nothing), so it changes nothing",
    )
    .expects("a count of blocks")
    .set(|_, c| {
        c.int(0, u64::from(u32::MAX))?;
        Ok(())
    }),
    // Error handling.
    OptionDef::new(
        "continue_on_error",
        S::Errors,
        "none read write io verify all (0 = none, 1 = all); a job \
         that saw an error still exits 1",
    )
    .stricter("a job that saw any error exits with status 1")
    .expects(ContinueOnError::VALID)
    .set(|d, c| {
        d.spec.continue_on_error = ContinueOnError::parse(&c.value.to_ascii_lowercase())
            .ok_or_else(|| c.bad(ContinueOnError::VALID))?;
        Ok(())
    }),
    OptionDef::new(
        "ignore_error",
        S::Errors,
        "READ,WRITE lists of errnos (names or numbers, ':'-separated) \
         the job goes on after, where continue_on_error covers the \
         direction; other errnos stop it. A list for a direction \
         continue_on_error does not cover has no effect, as in fio (a \
         note says so)",
    )
    .stricter("a VERIFY list is refused (use continue_on_error=verify)")
    .expects(super::control_opts::IGNORE_VALID)
    .set(|d, c| {
        d.spec.control.ignore_error = super::control_opts::ignore_error(c)?;
        Ok(())
    }),
    OptionDef::new(
        "error_dump",
        S::Errors,
        "print every error, also those a job goes on after",
    )
    .flag()
    .noted(
        "iolab reports each job's first error and its error count, \
         not every error",
    )
    .set(|_, c| {
        c.boolean()?;
        Ok(())
    }),
    // iolab's own.
    OptionDef::new(
        "completion",
        S::Iolab,
        "sync interrupt poll hybrid hybrid-uring pas dpas adaptive \
         (default: the backend's choice)",
    )
    .ours()
    .expects(parse::COMPLETION_EXPECTED)
    .set(|d, c| {
        d.spec.completion = Some(parse::completion(c)?);
        Ok(())
    }),
    OptionDef::new(
        "ioclass",
        S::Iolab,
        "read syncwrite readahead asyncwrite (default: from the op \
         and sync flags)",
    )
    .ours()
    .expects("one of read, syncwrite, readahead, asyncwrite")
    .set(|d, c| {
        d.spec.ioclass = Some(
            Class::parse(c.value)
                .ok_or_else(|| c.bad("one of read, syncwrite, readahead, asyncwrite"))?,
        );
        Ok(())
    }),
    OptionDef::new(
        "readahead",
        S::Iolab,
        "read-ahead window of sequential readers (default 0, off)",
    )
    .ours()
    .expects(SIZE)
    .set(|d, c| {
        d.spec.readahead = c.size()?;
        Ok(())
    }),
    OptionDef::new("iosched", S::Iolab, "noop prio laq (default noop)")
        .ours()
        .expects("one of noop, prio, laq")
        .set(|d, c| {
            d.spec.scheduler = match c.value {
                "noop" => SchedKind::Noop,
                "prio" => SchedKind::Prio,
                "laq" => SchedKind::Laq,
                _ => return Err(c.bad("one of noop, prio, laq")),
            };
            Ok(())
        }),
    OptionDef::new(
        "ois_max",
        S::Iolab,
        "laq only: outstanding bytes cap (default 1m)",
    )
    .ours()
    .expects(SIZE)
    .set(|d, c| {
        d.spec.laq.ois_max = parse::positive(c, c.size()?)?;
        Ok(())
    }),
    OptionDef::new(
        "ois_min",
        S::Iolab,
        "laq only: at most ois_max (default ois_max/2)",
    )
    .ours()
    .expects(SIZE)
    .set(|d, c| {
        d.spec.laq.ois_min = c.size()?;
        Ok(())
    }),
    OptionDef::new("t_wait", S::Iolab, "laq only: wait time (default 1ms)")
        .ours()
        .expects(TIME_US)
        .set(|d, c| {
            d.spec.laq.t_wait = c.time(TimeUnit::Micros, true)?;
            Ok(())
        }),
    OptionDef::new(
        "null_lat",
        S::Iolab,
        "null device: fixed part of the service time (default 0)",
    )
    .ours()
    .expects(TIME_US)
    .set(|d, c| {
        d.spec.backend.null.lat = c.time(TimeUnit::Micros, true)?;
        Ok(())
    }),
    OptionDef::new(
        "null_bw",
        S::Iolab,
        "null device: bytes per second per channel; 0 = infinite",
    )
    .ours()
    .expects(SIZE)
    .set(|d, c| {
        d.spec.backend.null.bw = c.size()?;
        Ok(())
    }),
    OptionDef::new(
        "null_dist",
        S::Iolab,
        "null device: fixed, exp, uniform[:JITTER] (default fixed)",
    )
    .ours()
    .expects("fixed, exp, or uniform[:JITTER]")
    .set(|d, c| {
        d.spec.backend.null.dist = parse::lat_dist(c)?;
        Ok(())
    }),
    OptionDef::new(
        "null_channels",
        S::Iolab,
        "null device: commands serviced in parallel, 1-65535 (default 1)",
    )
    .ours()
    .expects("a count, 1-65535")
    .set(|d, c| {
        d.spec.backend.null.channels = c.int(1, 65535)? as u32;
        Ok(())
    }),
    OptionDef::new(
        "null_qd",
        S::Iolab,
        "null device: queue depth, 0 = unlimited (default 0)",
    )
    .ours()
    .expects("a depth, 0-65535")
    .set(|d, c| {
        d.spec.backend.null.qd = c.int(0, 65535)? as u32;
        Ok(())
    }),
    OptionDef::new(
        "null_order",
        S::Iolab,
        "null device: fifo readfirst (default fifo)",
    )
    .ours()
    .expects("fifo or readfirst")
    .set(|d, c| {
        d.spec.backend.null.order = match c.value {
            "fifo" => NullOrder::Fifo,
            "readfirst" => NullOrder::ReadFirst,
            _ => return Err(c.bad("fifo or readfirst")),
        };
        Ok(())
    }),
    OptionDef::new(
        "null_backing",
        S::Iolab,
        "null device: none mem (default none)",
    )
    .ours()
    .expects("none or mem")
    .set(|d, c| {
        d.spec.backend.null.backing_mem = match c.value {
            "none" => false,
            "mem" => true,
            _ => return Err(c.bad("none or mem")),
        };
        Ok(())
    }),
    OptionDef::new(
        "null_irqmode",
        S::Iolab,
        "null device: timer thread (default timer)",
    )
    .ours()
    .expects("timer or thread")
    .set(|d, c| {
        d.spec.backend.null.irqmode = match c.value {
            "timer" => IrqMode::Timer,
            "thread" => IrqMode::Thread,
            _ => return Err(c.bad("timer or thread")),
        };
        Ok(())
    }),
    OptionDef::new(
        "null_irq_batch",
        S::Iolab,
        "null device: interrupt after N completions (default 1)",
    )
    .ours()
    .expects("a count, 1-65535")
    .set(|d, c| {
        d.spec.backend.null.irq_coalesce_count = c.int(1, 65535)? as u32;
        Ok(())
    }),
    OptionDef::new(
        "null_irq_time",
        S::Iolab,
        "null device: or after this time (default 0)",
    )
    .ours()
    .expects(TIME_US)
    .set(|d, c| {
        d.spec.backend.null.irq_coalesce_time = c.time(TimeUnit::Micros, true)?;
        Ok(())
    }),
    OptionDef::new(
        "null_err_rate",
        S::Iolab,
        "null device: probability of an error (0.001 or 0.1%)",
    )
    .ours()
    .expects(PROB)
    .set(|d, c| {
        d.spec.backend.null.faults.error_rate = c.prob()?;
        Ok(())
    }),
    OptionDef::new(
        "null_corrupt_rate",
        S::Iolab,
        "null device: probability of corrupt data; needs null_backing=mem",
    )
    .ours()
    .expects(PROB)
    .set(|d, c| {
        d.spec.backend.null.faults.corrupt_rate = c.prob()?;
        Ok(())
    }),
    OptionDef::new(
        "null_hang_rate",
        S::Iolab,
        "null device: probability a request never completes; needs io_timeout",
    )
    .ours()
    .expects(PROB)
    .set(|d, c| {
        d.spec.backend.null.faults.hang_rate = c.prob()?;
        Ok(())
    }),
    OptionDef::new(
        "null_spike_rate",
        S::Iolab,
        "null device: probability of a latency spike",
    )
    .ours()
    .expects(PROB)
    .set(|d, c| {
        d.spec.backend.null.faults.spike_rate = c.prob()?;
        Ok(())
    }),
    OptionDef::new(
        "null_spike_lat",
        S::Iolab,
        "null device: time added by a spike (default 0)",
    )
    .ours()
    .expects(TIME_US)
    .set(|d, c| {
        d.spec.backend.null.faults.spike_lat = c.time(TimeUnit::Micros, true)?;
        Ok(())
    }),
    OptionDef::new(
        "null_fault_range",
        S::Iolab,
        "null device: START-END bytes; faults only there",
    )
    .ours()
    .expects("a range such as 4k-64k")
    .set(|d, c| {
        d.spec.backend.null.faults.range = Some(parse::fault_range(c)?);
        Ok(())
    }),
    OptionDef::new(
        "null_fault_limit",
        S::Iolab,
        "null device: stop injecting after N faults; 0 = unlimited",
    )
    .ours()
    .expects("a count, 0 = unlimited")
    .set(|d, c| {
        d.spec.backend.null.faults.limit = c.int(0, u64::MAX)?;
        Ok(())
    }),
    OptionDef::new(
        "io_timeout",
        S::Iolab,
        "abort a request not complete after this time (ETIMEDOUT); \
         ioengine=null only",
    )
    .ours()
    .expects("a time greater than zero, e.g. 500 (microseconds) or 10ms")
    .set(|d, c| {
        let t = c.time(TimeUnit::Micros, true)?;
        if t.is_zero() {
            return Err(c.bad("a time greater than zero, e.g. 500 (microseconds) or 10ms"));
        }
        d.spec.io_timeout = Some(t);
        Ok(())
    }),
    OptionDef::new(
        "placement",
        S::Iolab,
        "free bunch scatter colocate spread balance: study 001's \
         thread placement (docs/placement.md)",
    )
    .ours()
    .expects("one of free, bunch, scatter, colocate, spread, balance")
    .set(|d, c| {
        d.spec.placement = Some(
            crate::placement::Policy::parse(c.value)
                .map_err(|_| c.bad("one of free, bunch, scatter, colocate, spread, balance"))?,
        );
        Ok(())
    }),
    OptionDef::new(
        "balance_interval",
        S::Iolab,
        "tick of the live balancer, at least 1ms; placement=balance \
         only (default 50ms)",
    )
    .ours()
    .expects("a time, e.g. 50ms")
    .set(|d, c| {
        let t = c.time(TimeUnit::Micros, true)?;
        if t < std::time::Duration::from_millis(1) {
            return Err(c.bad(
                "a time of at least 1ms, e.g. 50ms (the balancer's tick; the study's \
                 balancer runs on the scheduler tick)",
            ));
        }
        d.spec.balance_interval = t;
        Ok(())
    }),
    OptionDef::new(
        "corunners",
        S::Iolab,
        "compute threads started beside each clone (default 0)",
    )
    .ours()
    .expects("a number of co-runner threads, 0-1024")
    .set(|d, c| {
        d.spec.corunners = c.int(0, 1024)? as u32;
        Ok(())
    }),
    OptionDef::new(
        "corunner_kernel",
        S::Iolab,
        "int or float: the co-runners' work; needs corunners",
    )
    .ours()
    .expects("int or float")
    .set(|d, c| {
        d.spec.corunner_kernel = crate::placement::corunner::Kernel::parse(c.value)
            .map_err(|_| c.bad("int or float"))?;
        Ok(())
    }),
];

/// Options that steer the whole run; fio only takes them on the command line.
pub(crate) const COMMAND_LINE_ONLY: &[&str] = &[
    "output-format",
    "status-interval",
    "output",
    "section",
    "parse-only",
    "cmdhelp",
    "max-runtime",
    "max-size",
    "scratch-dir",
];

/// The entry whose name or alias is `key`.
pub fn find(key: &str) -> Option<&'static OptionDef> {
    OPTIONS.iter().find(|o| o.names().any(|n| n == key))
}

/// The nearest known name, if it is near enough to be a typo.
pub fn closest(key: &str) -> Option<&'static str> {
    let limit = (key.chars().count() / 3).clamp(1, 3);
    OPTIONS
        .iter()
        .flat_map(OptionDef::names)
        .map(|n| (strsim::levenshtein(key, n), n))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

fn names_md(o: &OptionDef) -> String {
    let mut s = format!("`{}`", o.name);
    if !o.aliases.is_empty() {
        let a: Vec<String> = o.aliases.iter().map(|a| format!("`{a}`")).collect();
        s.push_str(&format!(" ({})", a.join(", ")));
    }
    s
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The docs table: one row per option, grouped by fio's HOWTO sections.
/// docs/fio-compat.md holds exactly this between its markers.
pub fn markdown() -> String {
    let mut out = String::new();
    for sec in Section::ALL {
        let rows: Vec<&OptionDef> = OPTIONS.iter().filter(|o| o.section == sec).collect();
        if rows.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "### {}\n\n| option | status | notes |\n| --- | --- | --- |\n",
            sec.title()
        ));
        for o in rows {
            let notes = match o.status {
                Status::Same | Status::IolabOnly => o.help.to_string(),
                Status::Stricter(why) => format!("{}. Stricter: {why}", o.help),
                Status::Noted(note) => format!("{}. Note: {note}", o.help),
                Status::Refused(why) => why.to_string(),
            };
            out.push_str(&format!(
                "| {} | {} | {} |\n",
                names_md(o),
                o.status.label(),
                cell(&notes)
            ));
        }
        out.push('\n');
    }
    out
}

/// `iolab run --cmdhelp[=OPTION|all]`: fio's flag. `None` or `all` lists every
/// option; a name (or alias) describes that option.
pub fn cmdhelp(which: Option<&str>) -> Result<String, JobError> {
    match which {
        None | Some("all") => {
            let mut out = String::new();
            for sec in Section::ALL {
                out.push_str(&format!("{}:\n", sec.title()));
                for o in OPTIONS.iter().filter(|o| o.section == sec) {
                    let what = match o.status {
                        Status::Refused(why) => format!("refused: {why}"),
                        _ => o.help.to_string(),
                    };
                    out.push_str(&format!("  {:<28} {what}\n", o.name));
                }
            }
            Ok(out)
        }
        Some("markdown") => Ok(markdown()),
        Some(key) => {
            let o = find(key).ok_or_else(|| JobError::UnknownOption {
                at: super::error::COMMAND_LINE.to_string(),
                option: key.to_string(),
                suggestion: closest(key).map(str::to_string),
            })?;
            let mut out = format!("{:<10}: {}\n", "name", o.name);
            if !o.aliases.is_empty() {
                out.push_str(&format!("{:<10}: {}\n", "alias", o.aliases.join(", ")));
            }
            out.push_str(&format!("{:<10}: {}\n", "section", o.section.title()));
            out.push_str(&format!("{:<10}: {}\n", "status", o.status.label()));
            match o.status {
                Status::Refused(why) => out.push_str(&format!("{:<10}: {why}\n", "why")),
                Status::Stricter(why) => {
                    out.push_str(&format!("{:<10}: {}\n", "help", o.help));
                    out.push_str(&format!("{:<10}: {why}\n", "stricter"));
                }
                Status::Noted(note) => {
                    out.push_str(&format!("{:<10}: {}\n", "help", o.help));
                    out.push_str(&format!("{:<10}: {note}\n", "note"));
                }
                _ => out.push_str(&format!("{:<10}: {}\n", "help", o.help)),
            }
            if o.set.is_some() {
                let v = match o.arity {
                    Arity::Flag | Arity::Bare => "optional",
                    Arity::Value => "required",
                };
                out.push_str(&format!("{:<10}: {v}: {}\n", "value", o.expected));
            }
            Ok(out)
        }
    }
}
