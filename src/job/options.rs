//! The option table: which names iolab knows, which fio names it refuses and
//! why, and how each value lands in a [`JobSpec`].

use super::error::JobError;
use super::spec::*;
use super::units::{self, SizeVal, TimeUnit};
use crate::request::Class;

/// Whether an option may appear without `=value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arity {
    /// `opt=value` only.
    Value,
    /// `opt` alone means `opt=1` (fio's FIO_OPT_STR_SET; iolab also allows it for
    /// boolean options, where fio 3.33 demands a value).
    Flag,
}

/// (canonical name, aliases, arity) of every option iolab implements.
pub(crate) const OPTIONS: &[(&str, &[&str], Arity)] = &[
    ("name", &[], Arity::Value),
    ("filename", &[], Arity::Value),
    ("directory", &[], Arity::Value),
    ("size", &[], Arity::Value),
    ("offset", &[], Arity::Value),
    ("rw", &["readwrite"], Arity::Value),
    ("rwmixread", &[], Arity::Value),
    ("rwmixwrite", &[], Arity::Value),
    ("bs", &["blocksize"], Arity::Value),
    ("bsrange", &["blocksize_range"], Arity::Value),
    ("bssplit", &[], Arity::Value),
    ("direct", &[], Arity::Flag),
    ("buffered", &[], Arity::Flag),
    ("iodepth", &[], Arity::Value),
    ("numjobs", &[], Arity::Value),
    ("runtime", &["timeout"], Arity::Value),
    ("time_based", &[], Arity::Flag),
    ("ramp_time", &[], Arity::Value),
    ("loops", &[], Arity::Value),
    ("number_ios", &[], Arity::Value),
    ("rate_iops", &[], Arity::Value),
    ("thinktime", &[], Arity::Value),
    ("thinktime_blocks", &[], Arity::Value),
    ("randrepeat", &[], Arity::Flag),
    ("randseed", &[], Arity::Value),
    ("ioengine", &[], Arity::Value),
    ("hipri", &[], Arity::Flag),
    ("sqthread_poll", &[], Arity::Flag),
    ("fixedbufs", &[], Arity::Flag),
    ("registerfiles", &[], Arity::Flag),
    ("fsync", &[], Arity::Value),
    ("sync", &[], Arity::Flag),
    ("group_reporting", &[], Arity::Flag),
    ("percentile_list", &["percentiles"], Arity::Value),
    ("stonewall", &["wait_for_previous"], Arity::Flag),
    ("kb_base", &[], Arity::Value),
    ("prio", &[], Arity::Value),
    ("prioclass", &[], Arity::Value),
    ("cpus_allowed", &[], Arity::Value),
    ("cpumask", &[], Arity::Value),
    ("cpus_allowed_policy", &[], Arity::Value),
    // iolab's own.
    ("completion", &[], Arity::Value),
    ("ioclass", &[], Arity::Value),
    ("readahead", &[], Arity::Value),
    ("iosched", &[], Arity::Value),
    ("ois_max", &[], Arity::Value),
    ("ois_min", &[], Arity::Value),
    ("t_wait", &[], Arity::Value),
    ("null_lat", &[], Arity::Value),
    ("null_bw", &[], Arity::Value),
    ("null_dist", &[], Arity::Value),
    ("null_channels", &[], Arity::Value),
    ("null_qd", &[], Arity::Value),
    ("null_order", &[], Arity::Value),
    ("null_backing", &[], Arity::Value),
    ("null_irqmode", &[], Arity::Value),
    ("null_irq_batch", &[], Arity::Value),
    ("null_irq_time", &[], Arity::Value),
    ("null_err_rate", &[], Arity::Value),
    ("null_corrupt_rate", &[], Arity::Value),
    ("null_hang_rate", &[], Arity::Value),
    ("null_spike_rate", &[], Arity::Value),
    ("null_spike_lat", &[], Arity::Value),
    ("null_fault_range", &[], Arity::Value),
    ("null_fault_limit", &[], Arity::Value),
    ("verify", &[], Arity::Value),
    ("verify_pattern", &[], Arity::Value),
    ("do_verify", &[], Arity::Flag),
    ("verify_fatal", &[], Arity::Flag),
    ("verify_backlog", &[], Arity::Value),
    ("continue_on_error", &[], Arity::Value),
    ("io_timeout", &[], Arity::Value),
    ("placement", &[], Arity::Value),
    ("balance_interval", &[], Arity::Value),
    ("corunners", &[], Arity::Value),
    ("corunner_kernel", &[], Arity::Value),
];

/// Options that steer the whole run; fio only takes them on the command line.
pub(crate) const COMMAND_LINE_ONLY: &[&str] = &["output-format", "output", "section", "parse-only"];

/// fio options iolab deliberately lacks, with the reason. Listed in
/// docs/fio-compat.md; keep the two in step.
pub const UNSUPPORTED: &[(&str, &str)] = &[
    (
        "verify_interval",
        "a block is verified as a whole: one header and checksum per written block",
    ),
    (
        "verify_offset",
        "the verify header always sits at the start of the block",
    ),
    (
        "verify_async",
        "blocks are checked on the worker as their reads complete",
    ),
    (
        "verify_only",
        "run a read job with verify=crc32c (or pattern) over the same region and block size: it checks every block's header and data",
    ),
    (
        "verify_state_save",
        "what was written is kept in memory for the run only",
    ),
    (
        "trim_percentage",
        "iolab issues no trims (rw=trim and friends are refused too)",
    ),
    ("trim_backlog", "iolab issues no trims"),
    ("trim_verify_zero", "iolab issues no trims"),
    ("zonemode", "zoned block devices are out of scope"),
    ("zonesize", "zoned block devices are out of scope"),
    ("zonerange", "zoned block devices are out of scope"),
    ("zoneskip", "zoned block devices are out of scope"),
    ("max_open_zones", "zoned block devices are out of scope"),
    (
        "zone_reset_threshold",
        "zoned block devices are out of scope",
    ),
    (
        "zone_reset_frequency",
        "zoned block devices are out of scope",
    ),
    (
        "numa_cpu_nodes",
        "iolab does not bind memory or NUMA nodes; use cpus_allowed= or placement=",
    ),
    (
        "numa_mem_policy",
        "iolab does not bind memory or NUMA nodes; use cpus_allowed= or placement=",
    ),
    (
        "cpuload",
        "use iolab's compute co-runners (corunners=N, corunner_kernel=int|float) instead of fio's cpuio engine",
    ),
    ("rate", "bandwidth caps are not implemented; use rate_iops"),
    ("rate_min", "minimum-rate enforcement is not implemented"),
    (
        "rate_iops_min",
        "minimum-rate enforcement is not implemented",
    ),
    (
        "rate_process",
        "only the linear rate process is implemented (it is the default)",
    ),
    ("rate_cycle", "minimum-rate enforcement is not implemented"),
    (
        "latency_target",
        "latency-target depth search is not implemented",
    ),
    (
        "latency_window",
        "latency-target depth search is not implemented",
    ),
    (
        "latency_percentile",
        "latency-target depth search is not implemented",
    ),
    (
        "iodepth_batch",
        "the worker submits everything the scheduler releases in one batch",
    ),
    (
        "iodepth_batch_submit",
        "the worker submits everything the scheduler releases in one batch",
    ),
    (
        "iodepth_batch_complete",
        "the completion model decides how many completions to wait for",
    ),
    (
        "iodepth_batch_complete_min",
        "the completion model decides how many completions to wait for",
    ),
    (
        "iodepth_batch_complete_max",
        "the completion model decides how many completions to wait for",
    ),
    ("iodepth_low", "the worker refills to iodepth on every loop"),
    ("io_size", "use size, loops or number_ios"),
    ("io_limit", "use size, loops or number_ios"),
    ("filesize", "one file per job: use size"),
    ("nrfiles", "one file per job"),
    ("openfiles", "one file per job"),
    ("file_service_type", "one file per job"),
    ("fallocate", "files are laid out by writing them"),
    ("fadvise_hint", "iolab does not call posix_fadvise"),
    (
        "create_on_open",
        "files are created before the clock starts",
    ),
    ("pre_read", "page-cache warming is not implemented"),
    (
        "invalidate",
        "buffered jobs always start with their region dropped from the page cache (fio's default invalidate=1); it cannot be turned off",
    ),
    (
        "norandommap",
        "with one block size random offsets always use a coverage map (every block once per pass, like fio's default); drawing with replacement is used only for variable block sizes",
    ),
    (
        "random_distribution",
        "only uniform random offsets are implemented",
    ),
    (
        "random_generator",
        "iolab uses its own generator seeded by randseed",
    ),
    (
        "percentage_random",
        "mixing sequential and random I/O in one job is not implemented",
    ),
    (
        "ioscheduler",
        "iolab does not switch the kernel's scheduler; use iosched= for iolab's own",
    ),
    (
        "write_bw_log",
        "per-I/O logs are not implemented; see the JSON and HTML reports",
    ),
    (
        "write_lat_log",
        "per-I/O logs are not implemented; see the JSON and HTML reports",
    ),
    (
        "write_iops_log",
        "per-I/O logs are not implemented; see the JSON and HTML reports",
    ),
    (
        "write_hist_log",
        "per-I/O logs are not implemented; see the JSON and HTML reports",
    ),
    ("log_avg_msec", "per-I/O logs are not implemented"),
    (
        "exec_prerun",
        "iolab runs no external commands from job files",
    ),
    (
        "exec_postrun",
        "iolab runs no external commands from job files",
    ),
    ("zero_buffers", "buffer contents are not configurable"),
    ("refill_buffers", "buffer contents are not configurable"),
    ("scramble_buffers", "buffer contents are not configurable"),
    ("buffer_pattern", "buffer contents are not configurable"),
    (
        "buffer_compress_percentage",
        "buffer contents are not configurable",
    ),
    ("dedupe_percentage", "buffer contents are not configurable"),
    (
        "ignore_error",
        "use continue_on_error=none|read|write|io|verify|all",
    ),
    ("thread", "iolab workers are always threads"),
    ("mem", "buffers are always aligned anonymous memory"),
    ("iomem", "buffers are always aligned anonymous memory"),
    ("iomem_align", "buffers are always aligned for O_DIRECT"),
    ("startdelay", "jobs start together (or after a stonewall)"),
    ("new_group", "use stonewall"),
    ("steadystate", "steady-state detection is not implemented"),
    ("flow", "flow control between jobs is not implemented"),
    (
        "unified_rw_reporting",
        "reads and writes are always reported separately",
    ),
    (
        "clat_percentiles",
        "slat, clat and lat percentiles are always reported",
    ),
    (
        "lat_percentiles",
        "slat, clat and lat percentiles are always reported",
    ),
    (
        "slat_percentiles",
        "slat, clat and lat percentiles are always reported",
    ),
    ("disable_lat", "latencies are always recorded"),
    ("disable_clat", "latencies are always recorded"),
    ("disable_slat", "latencies are always recorded"),
    ("gtod_reduce", "latencies are always recorded"),
    (
        "cmdprio_percentage",
        "use prio/prioclass for the whole job, or ioclass with iosched=prio|laq",
    ),
    (
        "cmdprio_class",
        "use prio/prioclass for the whole job, or ioclass with iosched=prio|laq",
    ),
    (
        "cmdprio",
        "use prio/prioclass for the whole job, or ioclass with iosched=prio|laq",
    ),
    ("fdatasync", "only fsync=N is implemented"),
    ("end_fsync", "only fsync=N is implemented"),
    ("fsync_on_close", "only fsync=N is implemented"),
    ("write_barrier", "only fsync=N is implemented"),
    ("nice", "use prio/prioclass or iolab's placement"),
    ("uid", "jobs run as the invoking user"),
    ("gid", "jobs run as the invoking user"),
];

/// Every name iolab recognises in any role, for "did you mean".
fn all_names() -> impl Iterator<Item = &'static str> {
    OPTIONS
        .iter()
        .flat_map(|(n, a, _)| std::iter::once(*n).chain(a.iter().copied()))
        .chain(UNSUPPORTED.iter().map(|(n, _)| *n))
}

pub(crate) enum Lookup {
    Known(&'static str, Arity),
    CommandLineOnly,
    Unsupported(&'static str),
    Unknown(Option<&'static str>),
}

pub(crate) fn lookup(key: &str) -> Lookup {
    for (name, aliases, arity) in OPTIONS {
        if *name == key || aliases.contains(&key) {
            return Lookup::Known(name, *arity);
        }
    }
    let dashed = key.replace('_', "-");
    if COMMAND_LINE_ONLY.contains(&dashed.as_str()) {
        return Lookup::CommandLineOnly;
    }
    if let Some((_, why)) = UNSUPPORTED.iter().find(|(n, _)| *n == key) {
        return Lookup::Unsupported(why);
    }
    Lookup::Unknown(closest(key))
}

/// The nearest known name, if it is near enough to be a typo.
fn closest(key: &str) -> Option<&'static str> {
    let limit = (key.chars().count() / 3).clamp(1, 3);
    all_names()
        .map(|n| (levenshtein(key, n), n))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// One `key[=value]` as written, with where it was written.
#[derive(Clone, Debug)]
pub(crate) struct RawOpt {
    pub key: String,
    pub value: Option<String>,
    pub at: String,
    /// Added to value errors, e.g. which `${VAR}` expanded to nothing.
    pub note: Option<String>,
}

/// A job (or the global defaults) while its options are being applied.
#[derive(Clone, Debug, Default)]
pub(crate) struct Draft {
    pub spec: JobSpec,
    /// Canonical names set explicitly, with where: cross-option checks point there.
    set: Vec<(&'static str, String)>,
    prio: Option<u16>,
    prioclass: Option<u16>,
}

const VERIFY_VALID: &str = "crc32c, pattern, or 0/none";
const RW_VALID: &str = "read, write, randread, randwrite, rw (or readwrite), randrw";

struct Ctx<'a> {
    name: &'static str,
    value: &'a str,
    at: &'a str,
}

impl Ctx<'_> {
    fn bad(&self, expected: impl Into<String>) -> JobError {
        JobError::BadValue {
            at: self.at.to_string(),
            option: self.name.to_string(),
            value: self.value.to_string(),
            expected: expected.into(),
        }
    }
}

impl Draft {
    /// Applies one option. `kb_base` must already hold this section's value
    /// (fio applies kb_base before the other options of a section).
    pub(crate) fn apply(&mut self, opt: &RawOpt) -> Result<(), JobError> {
        self.apply_inner(opt).map_err(|e| match (e, &opt.note) {
            (
                JobError::BadValue {
                    at,
                    option,
                    value,
                    expected,
                },
                Some(note),
            ) => JobError::BadValue {
                at,
                option,
                value,
                expected: format!("{expected} (note: {note})"),
            },
            (
                JobError::MissingValue {
                    at,
                    option,
                    expected,
                },
                Some(note),
            ) => JobError::MissingValue {
                at,
                option,
                expected: format!("{expected} (note: {note})"),
            },
            (e, _) => e,
        })
    }

    fn apply_inner(&mut self, opt: &RawOpt) -> Result<(), JobError> {
        let key = opt.key.trim();
        let (name, arity) = match lookup(key) {
            Lookup::Known(n, a) => (n, a),
            Lookup::CommandLineOnly => {
                return Err(JobError::WrongPlace {
                    at: opt.at.clone(),
                    option: key.to_string(),
                    reason: format!(
                        "it applies to the whole run and is only accepted on the command line \
                         (--{}=...)",
                        key.replace('_', "-")
                    ),
                });
            }
            Lookup::Unsupported(why) => {
                return Err(JobError::Unsupported {
                    at: opt.at.clone(),
                    option: key.to_string(),
                    reason: why.to_string(),
                });
            }
            Lookup::Unknown(suggestion) => {
                return Err(JobError::UnknownOption {
                    at: opt.at.clone(),
                    option: key.to_string(),
                    suggestion: suggestion.map(str::to_string),
                });
            }
        };
        let value = match (&opt.value, arity) {
            (Some(v), _) => v.trim(),
            (None, Arity::Flag) => "1",
            (None, Arity::Value) => {
                return Err(JobError::MissingValue {
                    at: opt.at.clone(),
                    option: name.to_string(),
                    expected: expected_for(name),
                });
            }
        };
        let c = Ctx {
            name,
            value,
            at: &opt.at,
        };
        self.apply_value(&c)?;
        self.set.retain(|(n, _)| *n != name);
        self.set.push((name, opt.at.clone()));
        Ok(())
    }

    fn apply_value(&mut self, c: &Ctx) -> Result<(), JobError> {
        let kb = self.spec.kb_base;
        let v = c.value;
        let s = &mut self.spec;
        let size = |v: &str| units::parse_bytes(v, kb).map_err(|e| c.bad(e));
        let int = |min: u64, max: u64| units::parse_int(v, kb, min, max).map_err(|e| c.bad(e));
        let boolean = || units::parse_bool(v).map_err(|e| c.bad(e));
        let time = |unit: TimeUnit, ns: bool| units::parse_time(v, unit, ns).map_err(|e| c.bad(e));
        let prob = || units::parse_probability(v).map_err(|e| c.bad(e));
        let nonempty = || {
            if v.is_empty() {
                Err(c.bad("a non-empty string"))
            } else {
                Ok(v.to_string())
            }
        };
        match c.name {
            "name" => s.name = nonempty()?,
            "filename" => s.filename = Some(nonempty()?),
            "directory" => s.directory = Some(nonempty()?),
            "size" => match units::parse_size(v, kb, true).map_err(|e| c.bad(e))? {
                SizeVal::Bytes(0) | SizeVal::Percent(0) => {
                    return Err(c.bad(format!("{} greater than zero", units::SIZE_EXPECTED)));
                }
                SizeVal::Bytes(b) => {
                    s.size = Some(b);
                    s.size_percent = None;
                }
                SizeVal::Percent(p) => {
                    s.size = None;
                    s.size_percent = Some(p as u32);
                }
            },
            "offset" => match units::parse_size(v, kb, true).map_err(|e| c.bad(e))? {
                SizeVal::Bytes(b) => {
                    s.offset = b;
                    s.offset_percent = None;
                }
                SizeVal::Percent(p) => {
                    s.offset = 0;
                    s.offset_percent = Some(p as u32);
                }
            },
            "rw" => s.rw = parse_rw(c)?,
            "rwmixread" => s.rwmixread = int(0, 100)? as u32,
            "rwmixwrite" => s.rwmixread = 100 - int(0, 100)? as u32,
            "bs" => s.bs = parse_bs(c, kb, s.bs.clone())?,
            "bsrange" => s.bs = parse_bsrange(c, kb, s.bs.clone())?,
            "bssplit" => s.bs = parse_bssplit(c, kb, s.bs.clone())?,
            "direct" => s.direct = boolean()?,
            "buffered" => s.direct = !boolean()?,
            "iodepth" => s.iodepth = int(1, 65535)? as u32,
            "numjobs" => s.numjobs = int(1, 4096)? as u32,
            "runtime" => {
                let t = time(TimeUnit::Seconds, false)?;
                // fio: runtime=0 means "no limit".
                s.runtime = (!t.is_zero()).then_some(t);
            }
            "time_based" => s.time_based = flag(c)?,
            "ramp_time" => s.ramp_time = time(TimeUnit::Seconds, false)?,
            "loops" => s.loops = int(1, u64::from(u32::MAX))? as u32,
            "number_ios" => {
                let n = int(0, u64::MAX)?;
                s.number_ios = (n != 0).then_some(n);
            }
            "rate_iops" => {
                s.rate_iops =
                    parse_per_dir(c, s.rate_iops, |p| units::parse_int(p, kb, 0, u64::MAX))?
            }
            "thinktime" => s.thinktime = time(TimeUnit::Micros, false)?,
            "thinktime_blocks" => s.thinktime_blocks = int(1, u64::from(u32::MAX))? as u32,
            "randrepeat" => s.randrepeat = boolean()?,
            "randseed" => s.randseed = int(0, u64::MAX)?,
            "ioengine" => s.ioengine = Engine::parse(v).map_err(|why| c.bad(why))?,
            "hipri" => s.hipri = flag(c)?,
            "sqthread_poll" => s.sqthread_poll = flag(c)?,
            "fixedbufs" => s.fixedbufs = flag(c)?,
            "registerfiles" => s.registerfiles = flag(c)?,
            "fsync" => s.fsync = int(0, u64::from(u32::MAX))? as u32,
            "sync" => {
                s.sync = match v.to_ascii_lowercase().as_str() {
                    "sync" => true,
                    "none" => false,
                    "dsync" => {
                        return Err(c.bad("0, 1, none or sync (O_DSYNC is not supported by iolab)"));
                    }
                    _ => units::parse_bool(v).map_err(|_| c.bad("0, 1, none or sync"))?,
                }
            }
            "group_reporting" => s.group_reporting = flag(c)?,
            "percentile_list" => {
                s.percentile_list = units::parse_percentile_list(v).map_err(|e| c.bad(e))?
            }
            "stonewall" => s.stonewall = flag(c)?,
            "kb_base" => {
                s.kb_base = match v {
                    "1024" => 1024,
                    "1000" => 1000,
                    _ => return Err(c.bad("1024 or 1000")),
                }
            }
            "prio" => self.prio = Some(int(0, 7)? as u16),
            "prioclass" => self.prioclass = Some(int(0, 3)? as u16),
            "cpus_allowed" => s.cpus_allowed = parse_cpus_allowed(c)?,
            "cpumask" => s.cpus_allowed = parse_cpumask(c)?,
            "cpus_allowed_policy" => {
                s.cpus_allowed_split = match v {
                    "shared" => false,
                    "split" => true,
                    _ => return Err(c.bad("shared or split")),
                }
            }
            "placement" => {
                s.placement =
                    Some(crate::placement::Policy::parse(v).map_err(|_| {
                        c.bad("one of free, bunch, scatter, colocate, spread, balance")
                    })?)
            }
            "balance_interval" => {
                let t = time(TimeUnit::Micros, true)?;
                if t < std::time::Duration::from_millis(1) {
                    return Err(c.bad(
                        "a time of at least 1ms, e.g. 50ms (the balancer's tick; the study's \
                         balancer runs on the scheduler tick)",
                    ));
                }
                s.balance_interval = t;
            }
            "corunners" => s.corunners = int(0, 1024)? as u32,
            "corunner_kernel" => {
                s.corunner_kernel = crate::placement::corunner::Kernel::parse(v)
                    .map_err(|_| c.bad("int or float"))?
            }
            "completion" => {
                s.completion = Some(match v {
                    "sync" => CompletionModel::Sync,
                    "interrupt" => CompletionModel::Interrupt,
                    "poll" => CompletionModel::Poll,
                    "hybrid" => CompletionModel::Hybrid,
                    "hybrid-uring" => CompletionModel::HybridUring,
                    "pas" => CompletionModel::Pas,
                    "dpas" => CompletionModel::Dpas,
                    "adaptive" => CompletionModel::Adaptive,
                    _ => {
                        return Err(c.bad(
                            "one of sync, interrupt, poll, hybrid, hybrid-uring, pas, dpas, adaptive",
                        ));
                    }
                })
            }
            "ioclass" => {
                s.ioclass = Some(
                    Class::parse(v)
                        .ok_or_else(|| c.bad("one of read, syncwrite, readahead, asyncwrite"))?,
                )
            }
            "readahead" => s.readahead = size(v)?,
            "iosched" => {
                s.scheduler = match v {
                    "noop" => SchedKind::Noop,
                    "prio" => SchedKind::Prio,
                    "laq" => SchedKind::Laq,
                    _ => return Err(c.bad("one of noop, prio, laq")),
                }
            }
            "ois_max" => s.laq.ois_max = positive(c, size(v)?)?,
            "ois_min" => s.laq.ois_min = size(v)?,
            "t_wait" => s.laq.t_wait = time(TimeUnit::Micros, true)?,
            "null_lat" => s.null.lat = time(TimeUnit::Micros, true)?,
            "null_bw" => s.null.bw = size(v)?,
            "null_dist" => s.null.dist = parse_dist(c)?,
            "null_channels" => s.null.channels = int(1, 65535)? as u32,
            "null_qd" => s.null.qd = int(0, 65535)? as u32,
            "null_order" => {
                s.null.order = match v {
                    "fifo" => NullOrder::Fifo,
                    "readfirst" => NullOrder::ReadFirst,
                    _ => return Err(c.bad("fifo or readfirst")),
                }
            }
            "null_backing" => {
                s.null.backing_mem = match v {
                    "none" => false,
                    "mem" => true,
                    _ => return Err(c.bad("none or mem")),
                }
            }
            "null_irqmode" => {
                s.null.irqmode = match v {
                    "timer" => IrqMode::Timer,
                    "thread" => IrqMode::Thread,
                    _ => return Err(c.bad("timer or thread")),
                }
            }
            "null_irq_batch" => s.null.irq_coalesce_count = int(1, 65535)? as u32,
            "null_irq_time" => s.null.irq_coalesce_time = time(TimeUnit::Micros, true)?,
            "null_err_rate" => s.null.faults.error_rate = prob()?,
            "null_corrupt_rate" => s.null.faults.corrupt_rate = prob()?,
            "null_hang_rate" => s.null.faults.hang_rate = prob()?,
            "null_spike_rate" => s.null.faults.spike_rate = prob()?,
            "null_spike_lat" => s.null.faults.spike_lat = time(TimeUnit::Micros, true)?,
            "null_fault_range" => s.null.faults.range = Some(parse_fault_range(c, kb)?),
            "null_fault_limit" => s.null.faults.limit = int(0, u64::MAX)?,
            "verify" => {
                s.verify.kind = match v {
                    "0" | "none" => None,
                    "crc32c" | "crc32c-intel" => Some(VerifyKind::Crc32c),
                    "pattern" => Some(VerifyKind::Pattern),
                    "md5" | "crc64" | "crc32" | "crc16" | "crc7" | "sha1" | "sha256" | "sha512"
                    | "sha3-224" | "sha3-256" | "sha3-384" | "sha3-512" | "xxhash" | "meta"
                    | "null" => {
                        return Err(c.bad(format!(
                            "{VERIFY_VALID} ({v} is fio's, not implemented by iolab)"
                        )));
                    }
                    _ => return Err(c.bad(VERIFY_VALID)),
                }
            }
            "verify_pattern" => {
                s.verify.pattern = parse_verify_pattern(v).map_err(|e| c.bad(e))?;
            }
            "do_verify" => s.verify.do_verify = boolean()?,
            "verify_fatal" => s.verify.fatal = boolean()?,
            "verify_backlog" => s.verify.backlog = int(0, u64::from(u32::MAX))?,
            "continue_on_error" => {
                s.continue_on_error = ContinueOnError::parse(&v.to_ascii_lowercase())
                    .ok_or_else(|| c.bad(ContinueOnError::VALID))?
            }
            "io_timeout" => {
                let t = time(TimeUnit::Micros, true)?;
                if t.is_zero() {
                    return Err(c.bad("a time greater than zero, e.g. 500 (microseconds) or 10ms"));
                }
                s.io_timeout = Some(t);
            }
            other => unreachable!("option '{other}' is in OPTIONS but has no parser"),
        }
        Ok(())
    }

    fn set_at(&self, name: &str) -> Option<&str> {
        self.set
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, at)| at.as_str())
    }

    /// Cross-option checks and derived values; turns the draft into a job.
    pub(crate) fn finish(mut self, section_at: &str) -> Result<JobSpec, JobError> {
        let conflict = |at: Option<&str>, spec: &JobSpec, problem: String| JobError::Conflict {
            at: at.unwrap_or(section_at).to_string(),
            job: spec.name.clone(),
            problem,
        };
        let s = &self.spec;

        let uring_only = [
            ("sqthread_poll", s.sqthread_poll),
            ("fixedbufs", s.fixedbufs),
            ("registerfiles", s.registerfiles),
        ];
        for (opt, on) in uring_only {
            if on && s.ioengine != Engine::IoUring {
                return Err(conflict(
                    self.set_at(opt),
                    s,
                    format!(
                        "{opt} needs ioengine=io_uring, but the job uses ioengine={}",
                        s.ioengine.fio_name()
                    ),
                ));
            }
        }
        if s.hipri && !matches!(s.ioengine, Engine::IoUring | Engine::Pvsync2) {
            return Err(conflict(
                self.set_at("hipri"),
                s,
                format!(
                    "hipri needs ioengine=io_uring or pvsync2, but the job uses ioengine={}",
                    s.ioengine.fio_name()
                ),
            ));
        }
        if s.ioengine != Engine::Null
            && let Some((n, at)) = self.set.iter().find(|(n, _)| n.starts_with("null_"))
        {
            return Err(conflict(
                Some(at),
                s,
                format!(
                    "{n} configures the emulated device and needs ioengine=null, \
                     but the job uses ioengine={}",
                    s.ioengine.fio_name()
                ),
            ));
        }
        if s.null.faults.corrupt_rate > 0.0 && !s.null.backing_mem {
            return Err(conflict(
                self.set_at("null_corrupt_rate"),
                s,
                "null_corrupt_rate needs null_backing=mem (there is no data to corrupt otherwise)"
                    .to_string(),
            ));
        }
        if s.scheduler != SchedKind::Laq
            && let Some((n, at)) = self
                .set
                .iter()
                .find(|(n, _)| matches!(*n, "ois_max" | "ois_min" | "t_wait"))
        {
            return Err(conflict(
                Some(at),
                s,
                format!("{n} only applies to iosched=laq"),
            ));
        }
        if self.set_at("ois_min").is_none() {
            self.spec.laq.ois_min = self.spec.laq.ois_max / 2;
        }
        let s = &self.spec;
        if s.laq.ois_min > s.laq.ois_max {
            return Err(conflict(
                self.set_at("ois_min"),
                s,
                format!(
                    "ois_min ({}) is larger than ois_max ({})",
                    s.laq.ois_min, s.laq.ois_max
                ),
            ));
        }
        self.check_verify(section_at)?;
        let s = &self.spec;
        if s.io_timeout.is_some() && s.ioengine != Engine::Null {
            return Err(conflict(
                self.set_at("io_timeout"),
                s,
                format!(
                    "io_timeout needs ioengine=null (the engine aborts a hung request there); \
                     with ioengine={} a request cannot be cancelled yet: psync performs the I/O \
                     inside the system call and the io_uring backend has no cancellation",
                    s.ioengine.fio_name()
                ),
            ));
        }
        if s.null.faults.hang_rate > 0.0 && s.io_timeout.is_none() {
            return Err(conflict(
                self.set_at("null_hang_rate"),
                s,
                "null_hang_rate makes requests that never complete: set io_timeout= (e.g. \
                 io_timeout=10ms) so the engine aborts them and the job can end"
                    .to_string(),
            ));
        }
        self.check_placement(section_at)?;
        // Linux ioprio: class in the top 3 bits of 16, level below. A level alone
        // means best-effort, as fio does.
        let class = match (self.prioclass, self.prio) {
            (Some(c), _) => c,
            (None, Some(_)) => 2,
            (None, None) => 0,
        };
        self.spec.ioprio = if class == 0 {
            0
        } else {
            (class << 13) | self.prio.unwrap_or(0)
        };
        Ok(self.spec)
    }
}

impl Draft {
    /// Cross-option rules of thread placement: one way to choose CPUs per job, and
    /// no option that would have nothing to act on.
    fn check_placement(&self, section_at: &str) -> Result<(), JobError> {
        let s = &self.spec;
        let conflict = |opt: &str, problem: String| JobError::Conflict {
            at: self.set_at(opt).unwrap_or(section_at).to_string(),
            job: s.name.clone(),
            problem,
        };
        if self.set_at("cpus_allowed").is_some() && self.set_at("cpumask").is_some() {
            return Err(conflict(
                "cpumask",
                "cpumask and cpus_allowed both set the job's CPUs: keep one".to_string(),
            ));
        }
        let pinned = ["cpus_allowed", "cpumask"]
            .into_iter()
            .find(|o| self.set_at(o).is_some());
        if let (Some(p), Some(pin)) = (s.placement, pinned) {
            return Err(conflict(
                "placement",
                format!(
                    "placement={p} chooses the job's CPUs itself, and {pin} fixes them: \
                     keep one"
                ),
            ));
        }
        if self.set_at("balance_interval").is_some()
            && s.placement != Some(crate::placement::Policy::Balance)
        {
            return Err(conflict(
                "balance_interval",
                "balance_interval only applies with placement=balance (the live balancer)"
                    .to_string(),
            ));
        }
        if self.set_at("cpus_allowed_policy").is_some() && pinned.is_none() {
            return Err(conflict(
                "cpus_allowed_policy",
                "cpus_allowed_policy only applies with cpus_allowed= or cpumask=".to_string(),
            ));
        }
        if self.set_at("corunner_kernel").is_some() && s.corunners == 0 {
            return Err(conflict(
                "corunner_kernel",
                "corunner_kernel only applies with corunners=N (N > 0)".to_string(),
            ));
        }
        Ok(())
    }

    /// Cross-option rules of data verification.
    fn check_verify(&mut self, section_at: &str) -> Result<(), JobError> {
        let v = &mut self.spec.verify;
        // fio: a pattern alone asks for pattern verification.
        if v.kind.is_none() && !v.pattern.is_empty() && self.set.iter().all(|(n, _)| *n != "verify")
        {
            v.kind = Some(VerifyKind::Pattern);
        }
        let s = &self.spec;
        let conflict = |name: &str, problem: String| JobError::Conflict {
            at: self
                .set
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(section_at, |(_, at)| at.as_str())
                .to_string(),
            job: s.name.clone(),
            problem,
        };
        let Some(kind) = s.verify.kind else {
            for opt in ["do_verify", "verify_fatal", "verify_backlog"] {
                if self.set_at(opt).is_some() {
                    return Err(conflict(
                        opt,
                        format!("{opt} has no effect without verify=crc32c or verify=pattern"),
                    ));
                }
            }
            return Ok(());
        };
        if kind == VerifyKind::Pattern && s.verify.pattern.is_empty() {
            return Err(conflict(
                "verify",
                "verify=pattern needs verify_pattern= (e.g. verify_pattern=0xdeadbeef)".into(),
            ));
        }
        if s.ioengine == Engine::Null && !s.null.backing_mem {
            return Err(conflict(
                "verify",
                "verify on ioengine=null needs null_backing=mem: without a memory image the \
                 emulated device returns no data to check"
                    .into(),
            ));
        }
        if s.rw.dir == Direction::Mixed {
            return Err(conflict(
                "verify",
                format!(
                    "verify works on write jobs (write, then read back and check) and read jobs \
                     (check blocks an earlier write job left); rw={} mixes both",
                    s.rw.fio_name()
                ),
            ));
        }
        if s.rw.dir == Direction::Read && s.verify.backlog > 0 {
            return Err(conflict(
                "verify_backlog",
                "verify_backlog applies to write jobs; a read job checks every block it reads"
                    .into(),
            ));
        }
        let min = s.bs[0].min().min(s.bs[1].min());
        if (min as usize) < crate::workload::verify::MIN_BLOCK {
            return Err(conflict(
                "verify",
                format!(
                    "verify needs blocks of at least {} bytes (each carries a {}-byte header); the smallest block size is {min}",
                    crate::workload::verify::MIN_BLOCK,
                    crate::workload::verify::HEADER_LEN
                ),
            ));
        }
        Ok(())
    }
}

/// fio's `verify_pattern`: hex (`0x...`, bytes in written order), decimal (the
/// fewest little-endian bytes that hold it, at most 4), or quoted text, and any
/// concatenation of those.
pub(crate) fn parse_verify_pattern(v: &str) -> Result<Vec<u8>, String> {
    const EXPECTED: &str = "a hex number (0xdeadbeef), a decimal number up to 4294967295, \
         a quoted string (\"abc\"), or a concatenation of those";
    let mut out = Vec::new();
    let mut rest = v.trim();
    if rest.is_empty() {
        return Err(EXPECTED.into());
    }
    while !rest.is_empty() {
        if let Some(hex) = rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X")) {
            let n = hex
                .find(|ch: char| !ch.is_ascii_hexdigit())
                .unwrap_or(hex.len());
            if n == 0 {
                return Err(EXPECTED.into());
            }
            let digits = &hex[..n];
            // An odd digit count gets a leading zero nibble, as in 0xabc = 0a bc.
            let padded = if n % 2 == 1 {
                format!("0{digits}")
            } else {
                digits.to_string()
            };
            for i in (0..padded.len()).step_by(2) {
                out.push(u8::from_str_radix(&padded[i..i + 2], 16).map_err(|_| EXPECTED)?);
            }
            rest = &hex[n..];
        } else if let Some(q) = rest.chars().next().filter(|ch| *ch == '"' || *ch == '\'') {
            let body = &rest[1..];
            let end = body
                .find(q)
                .ok_or_else(|| format!("{EXPECTED}; a quote is not closed"))?;
            if end == 0 {
                return Err(format!("{EXPECTED}; an empty string adds nothing"));
            }
            out.extend_from_slice(&body.as_bytes()[..end]);
            rest = &body[end + 1..];
        } else if rest.starts_with(|ch: char| ch.is_ascii_digit()) {
            let n = rest
                .find(|ch: char| !ch.is_ascii_digit())
                .unwrap_or(rest.len());
            let x: u32 = rest[..n].parse().map_err(|_| EXPECTED)?;
            let width = (4 - x.leading_zeros() as usize / 8).max(1);
            out.extend_from_slice(&x.to_le_bytes()[..width]);
            rest = &rest[n..];
        } else if rest.starts_with('%') {
            return Err(format!(
                "{EXPECTED} (fio's %o offset format is not supported by iolab)"
            ));
        } else {
            return Err(EXPECTED.into());
        }
        if out.len() > 4096 {
            return Err(format!("{EXPECTED}, at most 4096 bytes"));
        }
    }
    Ok(out)
}

fn flag(c: &Ctx) -> Result<bool, JobError> {
    units::parse_bool(c.value).map_err(|e| c.bad(e))
}

fn positive(c: &Ctx, v: u64) -> Result<u64, JobError> {
    if v == 0 {
        Err(c.bad(format!("{} greater than zero", units::SIZE_EXPECTED)))
    } else {
        Ok(v)
    }
}

/// What to tell a user who gave an option no value.
fn expected_for(name: &str) -> String {
    match name {
        "rw" => RW_VALID.to_string(),
        "ioengine" => format!("one of {}", super::spec::ENGINE_NAMES),
        "size" | "offset" | "bs" | "readahead" | "ois_max" | "ois_min" | "null_bw" => {
            units::SIZE_EXPECTED.to_string()
        }
        "runtime" | "ramp_time" => "a time, e.g. 30 (seconds) or 500ms".to_string(),
        "thinktime" | "t_wait" | "null_lat" | "null_irq_time" | "null_spike_lat" => {
            "a time, e.g. 10 (microseconds) or 2ms".to_string()
        }
        "bsrange" | "null_fault_range" => "a range such as 4k-64k".to_string(),
        "bssplit" => "size/percent pairs such as 4k/50:64k/50".to_string(),
        "name" | "filename" | "directory" => "a non-empty string".to_string(),
        "cpus_allowed" => "a CPU list such as 0,5,8-15".to_string(),
        "cpumask" => "a CPU bit mask such as 0x22".to_string(),
        "cpus_allowed_policy" => "shared or split".to_string(),
        "placement" => "one of free, bunch, scatter, colocate, spread, balance".to_string(),
        "corunners" => "a number of co-runner threads, 0-1024".to_string(),
        "balance_interval" => "a time, e.g. 50ms".to_string(),
        "corunner_kernel" => "int or float".to_string(),
        _ => "a value (see docs/fio-compat.md)".to_string(),
    }
}

fn parse_rw(c: &Ctx) -> Result<RwMode, JobError> {
    let (mode, suffix) = match c.value.split_once(':') {
        Some((m, s)) => (m, Some(s)),
        None => (c.value, None),
    };
    if suffix.is_some() {
        return Err(c.bad(format!(
            "{RW_VALID} (the ':N' offset-modifier suffix is not supported by iolab)"
        )));
    }
    let (pattern, dir) = match mode {
        "read" => (Pattern::Seq, Direction::Read),
        "write" => (Pattern::Seq, Direction::Write),
        "rw" | "readwrite" => (Pattern::Seq, Direction::Mixed),
        "randread" => (Pattern::Rand, Direction::Read),
        "randwrite" => (Pattern::Rand, Direction::Write),
        "randrw" => (Pattern::Rand, Direction::Mixed),
        "trim" | "randtrim" | "trimwrite" | "randtrimwrite" => {
            return Err(c.bad(format!("{RW_VALID} (iolab issues no trims)")));
        }
        _ => return Err(c.bad(RW_VALID)),
    };
    Ok(RwMode { pattern, dir })
}

/// fio's `read,write[,trim]` form: one value sets both directions, an empty
/// part keeps that direction's current value, a trim part is refused.
fn split_dirs<'a>(c: &Ctx, v: &'a str) -> Result<[Option<&'a str>; 2], JobError> {
    // fio drops one trailing comma.
    let v = v.strip_suffix(',').unwrap_or(v);
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    let opt = |p: &'a str| (!p.is_empty()).then_some(p);
    match parts.as_slice() {
        [one] => Ok([opt(one), opt(one)]),
        [r, w] => Ok([opt(r), opt(w)]),
        [r, w, ""] => Ok([opt(r), opt(w)]),
        _ => Err(c.bad(
            "one value for both directions, or 'read,write' (iolab issues no trims, so no third value)",
        )),
    }
}

fn parse_per_dir<T: Copy>(
    c: &Ctx,
    current: [T; 2],
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<[T; 2], JobError> {
    let parts = split_dirs(c, c.value)?;
    let mut out = current;
    for (slot, part) in out.iter_mut().zip(parts) {
        if let Some(p) = part {
            *slot = parse(p).map_err(|e| c.bad(e))?;
        }
    }
    Ok(out)
}

fn block_size(c: &Ctx, s: &str, kb: u32) -> Result<u32, JobError> {
    let b = units::parse_bytes(s, kb).map_err(|e| c.bad(e))?;
    if b == 0 || b > u64::from(u32::MAX) {
        return Err(c.bad("a block size from 1 byte to 4g-1"));
    }
    Ok(b as u32)
}

fn parse_bs(c: &Ctx, kb: u32, current: [BlockSizes; 2]) -> Result<[BlockSizes; 2], JobError> {
    if c.value.contains(['-', ':']) {
        // fio 3.33 reads bs=2k-8k as read=2k,write=8k: almost never what was meant.
        return Err(c.bad(
            "one block size, or 'read,write' such as 4k,64k (for a range of sizes use bsrange=2k-8k)",
        ));
    }
    let parts = split_dirs(c, c.value)?;
    let mut out = current;
    for (slot, part) in out.iter_mut().zip(parts) {
        if let Some(p) = part {
            *slot = BlockSizes::Fixed(block_size(c, p, kb)?);
        }
    }
    Ok(out)
}

fn parse_bsrange(c: &Ctx, kb: u32, current: [BlockSizes; 2]) -> Result<[BlockSizes; 2], JobError> {
    let parts = split_dirs(c, c.value)?;
    let mut out = current;
    for (slot, part) in out.iter_mut().zip(parts) {
        if let Some(p) = part {
            let (lo, hi) = p
                .split_once(['-', ':'])
                .ok_or_else(|| c.bad("a range MIN-MAX such as 4k-64k, or 'read,write' ranges"))?;
            let (a, b) = (block_size(c, lo, kb)?, block_size(c, hi, kb)?);
            // fio swaps a reversed range.
            let (min, max) = (a.min(b), a.max(b));
            *slot = if min == max {
                BlockSizes::Fixed(min)
            } else {
                BlockSizes::Range { min, max }
            };
        }
    }
    Ok(out)
}

fn parse_bssplit(c: &Ctx, kb: u32, current: [BlockSizes; 2]) -> Result<[BlockSizes; 2], JobError> {
    let parts = split_dirs(c, c.value)?;
    let mut out = current;
    for (slot, part) in out.iter_mut().zip(parts) {
        if let Some(p) = part {
            *slot = BlockSizes::Split(parse_split_list(c, kb, p)?);
        }
    }
    Ok(out)
}

/// `4k/50:64k/` -> [(4096, 50), (65536, 50)]. Like fio, an entry without a
/// percentage (or with 0) shares what the others leave of 100.
fn parse_split_list(c: &Ctx, kb: u32, list: &str) -> Result<Vec<(u32, u32)>, JobError> {
    const EXPECTED: &str = "size/percent pairs separated by ':' such as 4k/50:64k/50 \
         (percentages add up to 100; an entry without one gets a share of the rest)";
    let mut entries: Vec<(u32, Option<u32>)> = Vec::new();
    for e in list.split(':') {
        let (sz, pct) = match e.split_once('/') {
            Some((s, p)) => (s, p.trim()),
            None => (e, ""),
        };
        let size = block_size(c, sz.trim(), kb)?;
        let pct = if pct.is_empty() {
            None
        } else {
            match pct.parse::<u32>() {
                Ok(0) => None,
                Ok(p) if p <= 100 => Some(p),
                _ => return Err(c.bad(EXPECTED)),
            }
        };
        entries.push((size, pct));
    }
    let given: u32 = entries.iter().filter_map(|e| e.1).sum();
    let missing = entries.iter().filter(|e| e.1.is_none()).count() as u32;
    if given > 100 || (missing == 0 && given != 100) || (missing > 0 && given >= 100) {
        return Err(c.bad(format!("{EXPECTED}; these add up to {given}%")));
    }
    let mut left = 100 - given;
    let mut out = Vec::with_capacity(entries.len());
    let mut missing_seen = 0;
    for (size, pct) in entries {
        let p = match pct {
            Some(p) => p,
            None => {
                missing_seen += 1;
                // The last unspecified entry takes the rounding remainder.
                let share = if missing_seen == missing {
                    left
                } else {
                    (100 - given) / missing
                };
                left -= share;
                share
            }
        };
        out.push((size, p));
    }
    Ok(out)
}

/// fio's `cpus_allowed`: a CPU list such as `0,5,8-15`.
fn parse_cpus_allowed(c: &Ctx) -> Result<Vec<u32>, JobError> {
    let cpus =
        crate::placement::topology::parse_cpu_list(c.value).map_err(|e| c.bad(e.to_string()))?;
    if cpus.is_empty() {
        return Err(c.bad("a CPU list such as 0,5,8-15"));
    }
    Ok(cpus)
}

/// fio's `cpumask`: a bit mask of allowed CPUs, decimal or `0x` hex (bit N = cpuN).
fn parse_cpumask(c: &Ctx) -> Result<Vec<u32>, JobError> {
    let v = c.value;
    let expected = "a non-zero CPU bit mask, decimal or 0x hex (e.g. 34 or 0x22 = cpu1 and cpu5)";
    let mask = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse::<u64>(),
    }
    .map_err(|_| c.bad(expected))?;
    if mask == 0 {
        return Err(c.bad(expected));
    }
    Ok((0..64).filter(|b| mask & (1u64 << b) != 0).collect())
}

fn parse_dist(c: &Ctx) -> Result<LatDist, JobError> {
    const EXPECTED: &str = "fixed, exp, or uniform[:JITTER] with JITTER in [0, 1] (default 0.5)";
    match c.value.split_once(':') {
        None => match c.value {
            "fixed" => Ok(LatDist::Fixed),
            "exp" => Ok(LatDist::Exp),
            "uniform" => Ok(LatDist::Uniform { jitter: 0.5 }),
            _ => Err(c.bad(EXPECTED)),
        },
        Some(("uniform", j)) => {
            let jitter = units::parse_f64(j, 0.0, 1.0).map_err(|_| c.bad(EXPECTED))?;
            Ok(LatDist::Uniform { jitter })
        }
        Some(_) => Err(c.bad(EXPECTED)),
    }
}

fn parse_fault_range(c: &Ctx, kb: u32) -> Result<(u64, u64), JobError> {
    const EXPECTED: &str = "START-END byte offsets with START < END, such as 0-1m";
    let (a, b) = c.value.split_once('-').ok_or_else(|| c.bad(EXPECTED))?;
    let a = units::parse_bytes(a, kb).map_err(|_| c.bad(EXPECTED))?;
    let b = units::parse_bytes(b, kb).map_err(|_| c.bad(EXPECTED))?;
    if a >= b {
        return Err(c.bad(EXPECTED));
    }
    Ok((a, b))
}

/// The supported options and their aliases, for docs and `--help`-like listings.
pub fn supported_options() -> impl Iterator<Item = (&'static str, &'static [&'static str])> {
    OPTIONS.iter().map(|(n, a, _)| (*n, *a))
}
