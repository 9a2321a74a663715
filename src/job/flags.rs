//! fio's command-line flags (`fio --help`): the ones that are not job options.
//!
//! Every flag fio 3.33 knows is known here: it does what fio does, or it is
//! refused with the reason and what to use instead. `plan.rs` hands each
//! `--flag[=value]` of the command line to [`take`] before treating it as a job
//! option.

use std::time::Duration;

use super::error::{COMMAND_LINE, JobError};
use super::ini::Section;
use super::spec::JobSpec;
use super::units::{TimeUnit, parse_time};

/// `--eta=`: when the progress line is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Eta {
    /// On a terminal only (fio's default).
    #[default]
    Auto,
    Always,
    Never,
}

/// fio's `--debug=` categories, in fio's order.
pub const DEBUG_CATEGORIES: [&str; 19] = [
    "process",
    "file",
    "io",
    "mem",
    "blktrace",
    "verify",
    "random",
    "parse",
    "diskutil",
    "job",
    "mutex",
    "profile",
    "time",
    "net",
    "rate",
    "compress",
    "steadystate",
    "helperthread",
    "zbd",
];

/// The categories that print something in iolab: what the option parser did
/// with each option (`parse`), and each job as it was resolved (`job`).
pub const DEBUG_IMPLEMENTED: [&str; 2] = ["parse", "job"];

/// What `--debug=` asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Debug {
    pub parse: bool,
    pub job: bool,
}

/// The run-wide flags of fio's command line.
#[derive(Clone, Debug, PartialEq)]
pub struct RunFlags {
    pub eta: Eta,
    /// `--eta-newline=T`: start a new progress line every T instead of
    /// redrawing the same one.
    pub eta_newline: Option<Duration>,
    /// `--eta-interval=T`: how often the progress line is redrawn.
    pub eta_interval: Duration,
    /// `--readonly`: refuse every job that writes or trims, and never create
    /// or extend a file.
    pub readonly: bool,
    /// `--warnings-fatal`: a parser warning ends the run before any I/O.
    pub warnings_fatal: bool,
    /// `--showcmd`: print each job file as one command line; run nothing.
    pub showcmd: bool,
    /// `--bandwidth-log`: write fio's aggregate bandwidth logs
    /// (`agg-read_bw.log`, `agg-write_bw.log`, `agg-trim_bw.log`).
    pub bandwidth_log: bool,
    pub debug: Debug,
    /// `--version`: print the version line and exit.
    pub version: bool,
}

/// fio's default `--eta-interval` (1 s) and its floor (fio's DISK_UTIL_MSEC).
pub const ETA_INTERVAL: Duration = Duration::from_millis(1000);
pub const MIN_ETA_INTERVAL: Duration = Duration::from_millis(250);

impl Default for RunFlags {
    fn default() -> Self {
        RunFlags {
            eta: Eta::Auto,
            eta_newline: None,
            eta_interval: ETA_INTERVAL,
            readonly: false,
            warnings_fatal: false,
            showcmd: false,
            bandwidth_log: false,
            debug: Debug::default(),
            version: false,
        }
    }
}

/// What a flag changes beyond [`RunFlags`]: the output formats, which
/// `plan.rs` owns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Only [`RunFlags`] (or nothing) changed.
    Flags,
    /// `--minimal`: the terse format only.
    TerseOnly,
    /// `--append-terse`: terse in addition to the formats asked for.
    AddTerse,
}

/// Flags that never take a value (getopt_long's `no_argument`).
const NO_VALUE: [&str; 10] = [
    "minimal",
    "append-terse",
    "readonly",
    "warnings-fatal",
    "showcmd",
    "bandwidth-log",
    "version",
    "cpuclock-test",
    "merge-blktrace-only",
    "latency-log",
];

/// Flags whose value may be left out (getopt_long's `optional_argument`).
const OPTIONAL_VALUE: [&str; 3] = ["server", "crctest", "memcpytest"];

/// Flags that need a value.
const VALUE: [&str; 16] = [
    "eta",
    "eta-newline",
    "eta-interval",
    "terse-version",
    "max-jobs",
    "alloc-size",
    "debug",
    "daemonize",
    "client",
    "remote-config",
    "idle-prof",
    "inflate-log",
    "trigger-file",
    "trigger-timeout",
    "trigger",
    "trigger-remote",
];

/// `aux-path` and `profile` are handled below too.
const VALUE_MORE: [&str; 2] = ["aux-path", "profile"];

/// `Some(true)` if `key` is one of fio's flags that takes the next argument
/// as its value when written without `=`, `Some(false)` for a flag that
/// never does, `None` if `key` is not a flag of this module.
pub fn takes_value(key: &str) -> Option<bool> {
    if VALUE.contains(&key) || VALUE_MORE.contains(&key) {
        Some(true)
    } else if NO_VALUE.contains(&key) || OPTIONAL_VALUE.contains(&key) {
        Some(false)
    } else {
        None
    }
}

/// Applies one command-line flag. `Ok(None)`: `key` is not a flag of this
/// module (it is a job option or one of plan.rs's own).
pub fn take(
    key: &str,
    value: Option<&str>,
    flags: &mut RunFlags,
) -> Result<Option<Effect>, JobError> {
    if takes_value(key).is_none() {
        return Ok(None);
    }
    if NO_VALUE.contains(&key)
        && let Some(v) = value
    {
        return Err(bad(key, v, &format!("no value (--{key} is a flag)")));
    }
    let need = |expected: &str| -> Result<&str, JobError> {
        match value {
            Some(v) if !v.trim().is_empty() => Ok(v.trim()),
            _ => Err(JobError::MissingValue {
                at: COMMAND_LINE.to_string(),
                option: key.to_string(),
                expected: expected.to_string(),
            }),
        }
    };
    match key {
        "minimal" => return Ok(Some(Effect::TerseOnly)),
        "append-terse" => return Ok(Some(Effect::AddTerse)),
        "readonly" => flags.readonly = true,
        "warnings-fatal" => flags.warnings_fatal = true,
        "showcmd" => flags.showcmd = true,
        "bandwidth-log" => flags.bandwidth_log = true,
        "version" => flags.version = true,
        "eta" => {
            const E: &str = "always, never or auto";
            flags.eta = match need(E)? {
                "always" => Eta::Always,
                "never" => Eta::Never,
                "auto" => Eta::Auto,
                v => return Err(bad(key, v, E)),
            };
        }
        "eta-newline" => {
            const E: &str = "a time of at least 1ms, e.g. 5 (seconds) or 500ms";
            let v = need(E)?;
            let t = parse_time(v, TimeUnit::Seconds, false)
                .ok()
                .filter(|t| *t >= Duration::from_millis(1))
                .ok_or_else(|| bad(key, v, E))?;
            flags.eta_newline = Some(t);
        }
        "eta-interval" => {
            const E: &str = "a time of at least 250ms (fio's floor), e.g. 1 (second) or 500ms";
            let v = need(E)?;
            let t = parse_time(v, TimeUnit::Seconds, false)
                .ok()
                .filter(|t| *t >= MIN_ETA_INTERVAL)
                .ok_or_else(|| bad(key, v, E))?;
            flags.eta_interval = t;
        }
        "terse-version" => {
            const E: &str = "3 (fio also knows 2, 4 and 5; iolab writes version 3 only)";
            let v = need(E)?;
            match v {
                "3" => {}
                "2" | "4" | "5" => {
                    return Err(unsupported(
                        key,
                        &format!(
                            "iolab writes terse version 3 only, not {v}; \
                             use --terse-version=3 or --output-format=json"
                        ),
                    ));
                }
                _ => return Err(bad(key, v, E)),
            }
        }
        "max-jobs" => {
            // fio 3.33 parses and ignores it ("we don't track/need this
            // anymore"); iolab checks it is a number and ignores it too.
            const E: &str = "a positive integer (fio ignores its value, as iolab does)";
            let v = need(E)?;
            if !v.parse::<u64>().is_ok_and(|n| n > 0) {
                return Err(bad(key, v, E));
            }
        }
        "alloc-size" => {
            // fio sizes its shared-memory pool (smalloc) with this; iolab's
            // jobs are threads of one process and allocate before the clock
            // starts, so there is no pool to size.
            const E: &str = "a size in KiB, e.g. 16384 (iolab has no shared-memory pool to size)";
            let v = need(E)?;
            if !v.parse::<u64>().is_ok_and(|n| n > 0) {
                return Err(bad(key, v, E));
            }
        }
        "debug" => {
            let v = need("a comma list of categories; --debug=? lists them")?;
            flags.debug = parse_debug(v)?;
        }
        "aux-path" => {
            // fio keeps its state files (verify state) there; iolab writes none.
            let v = need("a directory path")?;
            if !std::path::Path::new(v).is_dir() {
                return Err(bad(key, v, "an existing directory"));
            }
        }
        _ => match refusal(key) {
            Some(e) => return Err(e),
            None => unreachable!("every flag of takes_value is handled: {key}"),
        },
    }
    Ok(Some(Effect::Flags))
}

/// fio's flags iolab refuses, with why and what to use instead.
fn refusal(key: &str) -> Option<JobError> {
    match key {
        "latency-log" => Some(unsupported(
            key,
            "fio removed it too (deprecated); use the per-job write_lat_log=NAME",
        )),
        "server" | "daemonize" | "client" | "remote-config" => Some(unsupported(
            key,
            "iolab has no client/server mode; run `iolab run` on each host \
                 (deploy/ has an Ansible playbook that does) and compare the JSON",
        )),
        "trigger-file" | "trigger-timeout" | "trigger" | "trigger-remote" => Some(unsupported(
            key,
            "fio's triggers run a command (e.g. a power cut) during a run, \
                 mostly through its client/server mode; iolab has neither: \
                 start the command yourself beside `iolab run`",
        )),
        "idle-prof" => Some(unsupported(
            key,
            "iolab does not calibrate idle loops; the report's cpu line \
                 (usr/sys per job) and `iolab observe` show where CPU time goes",
        )),
        // `iolab run --inflate-log=FILE` is answered before any job is parsed
        // (engine::cli); among job options it runs none.
        "inflate-log" => Some(unsupported(
            key,
            "--inflate-log=FILE prints a compressed log and runs no job: give it alone",
        )),
        "merge-blktrace-only" => Some(unsupported(
            key,
            "iolab does not merge blktrace files; blkparse -i A -i B merges \
                 traces, and `iolab run --trace` joins a job with its own trace",
        )),
        "profile" => Some(unsupported(
            key,
            "fio's built-in profiles (tiobench, act) are not in iolab; \
                 write the profile's jobs as a job file",
        )),
        "cpuclock-test" | "crctest" | "memcpytest" => Some(unsupported(
            key,
            "fio's self-tests of its own clock, checksum and memcpy code \
                 test fio's C code, not a storage path; iolab checks its clock \
                 at every run (the report's clock line)",
        )),
        _ => None,
    }
}

/// `--debug=a,b,...`: fio's categories (and `all`). `?` (or `help`) is an
/// error whose text lists them.
pub fn parse_debug(v: &str) -> Result<Debug, JobError> {
    let expected = format!(
        "a comma list of fio's categories ({}) or all; iolab prints {} and \
         accepts the others without output",
        DEBUG_CATEGORIES.join(", "),
        DEBUG_IMPLEMENTED.join(" and ")
    );
    let mut d = Debug::default();
    for part in v.split(',') {
        match part.trim() {
            "all" => {
                d.parse = true;
                d.job = true;
            }
            "parse" => d.parse = true,
            "job" => d.job = true,
            p if DEBUG_CATEGORIES.contains(&p) => {}
            _ => return Err(bad("debug", v, &expected)),
        }
    }
    Ok(d)
}

/// The categories of a `--debug=` value that iolab accepts but prints
/// nothing for (said once at start, so nobody waits for output that never comes).
pub fn debug_silent(v: &str) -> Vec<&str> {
    v.split(',')
        .map(str::trim)
        .filter(|p| DEBUG_CATEGORIES.contains(p) && !DEBUG_IMPLEMENTED.contains(p))
        .collect()
}

/// A `--debug` line as fio prints one: category, process id, message.
pub fn debug_line(category: &str, message: &str) -> String {
    format!("{category:<8} {} {message}", std::process::id())
}

/// `--showcmd`: one job file's sections as the fio command line that runs
/// the same jobs, as fio prints it (`fio --global-opt --name=job --opt=v `).
pub(crate) fn command_line(sections: &[Section]) -> String {
    let mut out = String::from("fio ");
    for s in sections {
        if !s.is_global() {
            out += &format!("--name={} ", s.name);
        }
        for o in &s.opts {
            match &o.value {
                Some(v) => out += &format!("--{}={} ", o.key.trim(), v.trim()),
                None => out += &format!("--{} ", o.key.trim()),
            }
        }
    }
    out
}

/// `--readonly`, as fio: a job that writes or trims is an error, and no job
/// may create or extend a file.
pub(crate) fn check_readonly(jobs: &mut [JobSpec]) -> Result<(), JobError> {
    for j in jobs.iter_mut() {
        if j.rw.dir.modifies() {
            return Err(JobError::Conflict {
                at: j.origin.0.clone(),
                job: j.name.clone(),
                problem: format!(
                    "rw={} writes or trims, but --readonly allows only reads \
                     (drop --readonly, or use rw=read/randread)",
                    j.rw.fio_name()
                ),
            });
        }
        j.files.allow_create = false;
    }
    Ok(())
}

/// `--debug=job`: a job as iolab resolved it.
pub(crate) fn job_debug(j: &JobSpec) -> String {
    let target = match (&j.filename, &j.directory) {
        (Some(f), _) => format!("filename={f}"),
        (None, Some(d)) => format!("directory={d}"),
        (None, None) => "files in the current directory".into(),
    };
    format!(
        "add job {}: rw={}, bs={}-{}/{}-{}, size={}, offset={}, ioengine={}, \
         iodepth={}, numjobs={}, {target}{}",
        j.name,
        j.rw.fio_name(),
        j.bs[0].min(),
        j.bs[0].max(),
        j.bs[1].min(),
        j.bs[1].max(),
        j.size.map_or("unset".into(), |s| s.to_string()),
        j.offset,
        j.ioengine.fio_name(),
        j.iodepth,
        j.numjobs,
        if j.stonewall { ", stonewall" } else { "" }
    )
}

fn bad(key: &str, value: &str, expected: &str) -> JobError {
    JobError::BadValue {
        at: COMMAND_LINE.to_string(),
        option: key.to_string(),
        value: value.to_string(),
        expected: expected.to_string(),
    }
}

fn unsupported(key: &str, reason: &str) -> JobError {
    JobError::Unsupported {
        at: COMMAND_LINE.to_string(),
        option: format!("--{key}"),
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(key: &str, value: Option<&str>) -> Result<(RunFlags, Option<Effect>), JobError> {
        let mut f = RunFlags::default();
        let e = take(key, value, &mut f)?;
        Ok((f, e))
    }

    #[test]
    fn eta_values() {
        assert_eq!(run("eta", Some("never")).unwrap().0.eta, Eta::Never);
        assert_eq!(run("eta", Some("always")).unwrap().0.eta, Eta::Always);
        let e = run("eta", Some("sometimes")).unwrap_err().to_string();
        assert!(e.contains("always, never or auto"), "{e}");
        let f = run("eta-newline", Some("2")).unwrap().0;
        assert_eq!(f.eta_newline, Some(Duration::from_secs(2)));
        let e = run("eta-interval", Some("100ms")).unwrap_err().to_string();
        assert!(e.contains("250ms"), "{e}");
        assert_eq!(
            run("eta-interval", Some("500ms")).unwrap().0.eta_interval,
            Duration::from_millis(500)
        );
    }

    #[test]
    fn flags_without_values() {
        assert_eq!(run("minimal", None).unwrap().1, Some(Effect::TerseOnly));
        assert_eq!(run("append-terse", None).unwrap().1, Some(Effect::AddTerse));
        assert!(run("readonly", None).unwrap().0.readonly);
        let e = run("readonly", Some("1")).unwrap_err().to_string();
        assert!(e.contains("is a flag"), "{e}");
        assert_eq!(run("rw", Some("read")).unwrap().1, None);
    }

    #[test]
    fn refusals_name_why() {
        for k in ["server", "client", "idle-prof", "crctest", "latency-log"] {
            let v = if k == "latency-log" { None } else { Some("x") };
            let e = run(k, v).unwrap_err().to_string();
            assert!(e.contains(&format!("--{k}")), "{e}");
            assert!(e.contains("not supported by iolab"), "{e}");
        }
        let e = run("terse-version", Some("4")).unwrap_err().to_string();
        assert!(e.contains("version 3 only"), "{e}");
        assert!(run("terse-version", Some("3")).is_ok());
        assert!(run("terse-version", Some("9")).is_err());
    }

    #[test]
    fn debug_categories() {
        let d = parse_debug("parse,io").unwrap();
        assert!(d.parse && !d.job);
        assert_eq!(debug_silent("parse,io,job"), vec!["io"]);
        let e = parse_debug("?").unwrap_err().to_string();
        assert!(
            e.contains("helperthread") && e.contains("parse and job"),
            "{e}"
        );
        assert!(parse_debug("all").unwrap().job);
        assert!(parse_debug("bogus").is_err());
    }

    #[test]
    fn max_jobs_is_checked_and_ignored() {
        assert_eq!(run("max-jobs", Some("16")).unwrap().0, RunFlags::default());
        assert!(run("max-jobs", Some("x")).is_err());
    }
}
