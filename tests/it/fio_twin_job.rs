//! The job file both tools run in `fio_twin`, and what each run left behind.
//!
//! A job file found in the wild names devices, mount points and sizes of
//! gigabytes, and runs for minutes. [`capped`] rewrites a copy of it so that
//! fio 3.33 and iolab run the very same text on a scratch directory, small and
//! size-bound: every file lands in the scratch directory (a device path becomes
//! a scratch file of the same base name), sizes are capped, time-based options
//! and pacing are dropped, and each job section gets its own `write_iolog`.
//! Both tools read the same rewritten file, so a difference between their runs
//! is a difference between the tools, never between their command lines.

use std::collections::BTreeMap;
use std::path::Path;

/// Per-job size cap: big enough for a few hundred I/Os of the usual block
/// sizes, small enough that the three sets run in minutes.
pub const CAP: u64 = 2 << 20;
/// Clones per job at most: each clone's I/O is compared, a few show clone
/// offsets and seeds as well as sixty-four would.
const MAX_NUMJOBS: u64 = 4;
const MAX_LOOPS: u64 = 2;
const MAX_NRFILES: u64 = 16;

/// Options dropped from the copy, and why (printed with the run's notes).
const DROPPED: &[(&str, &str)] = &[
    ("time_based", "size-bound runs"),
    ("runtime", "size-bound runs"),
    ("timeout", "size-bound runs"),
    (
        "ramp_time",
        "size-bound runs: a ramp cuts the counts at a moment",
    ),
    ("startdelay", "no waiting"),
    ("directory", "the scratch directory"),
    ("opendir", "the scratch directory"),
    ("write_iolog", "each job gets its own"),
    ("exec_prerun", "no commands from job files"),
    ("exec_postrun", "no commands from job files"),
    ("trigger", "no commands from job files"),
    ("trigger_cmd", "no commands from job files"),
    ("trigger_file", "no commands from job files"),
    ("fill_device", "writes until the disk is full"),
    ("fill_fs", "writes until the disk is full"),
    (
        "ioscheduler",
        "would switch the scheduler of this machine's disk",
    ),
    ("cgroup", "would make cgroups on this machine"),
    ("cgroup_weight", "would make cgroups on this machine"),
    ("rate", "pacing only delays a size-bound job"),
    ("rate_iops", "pacing only delays a size-bound job"),
    ("rate_min", "pacing only delays a size-bound job"),
    ("rate_iops_min", "pacing only delays a size-bound job"),
    ("thinktime", "pacing only delays a size-bound job"),
    ("thinktime_spin", "pacing only delays a size-bound job"),
    ("thinktime_blocks", "pacing only delays a size-bound job"),
    ("thinktime_iotime", "pacing only delays a size-bound job"),
];

/// Engines that cannot run here at all: they need a peer on the network, a
/// cluster, a plugin, or they run until stopped by time (`cpuio`).
pub const NOT_HERE: &[&str] = &[
    "net",
    "netsplice",
    "rdma",
    "rados",
    "rbd",
    "http",
    "nbd",
    "libhdfs",
    "spdk",
    "spdk_bdev",
    "dfs",
    "nfs",
    "gfapi",
    "gfapi_async",
    "exec",
    "cpuio",
    "xnvme",
    "libcufile",
];

/// The rewritten job file and what was changed.
pub struct Capped {
    pub text: String,
    /// Job sections in order (not `[global]`), their iolog is `iolog.N`.
    pub jobs: Vec<String>,
    /// An engine from [`NOT_HERE`], if the file uses one.
    pub not_here: Option<String>,
    pub notes: Vec<String>,
}

/// A size value in bytes when it is a plain number with an optional unit
/// (`4g`, `512KiB`, `1m`), else None (`50%`, `${SIZE}`, a range).
fn bytes(v: &str) -> Option<u64> {
    let v = v.trim().to_ascii_lowercase();
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let n: u64 = v[..digits].parse().ok()?;
    let unit = v[digits..].trim();
    let shift = match unit.trim_end_matches("ib").trim_end_matches('b') {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        "p" => 50,
        _ => return None,
    };
    n.checked_mul(1 << shift)
}

/// A value without an inline comment (`size=10g # big`).
fn bare(v: &str) -> &str {
    let cut = [" #", "\t#", " ;", "\t;"]
        .iter()
        .filter_map(|c| v.find(c))
        .min()
        .unwrap_or(v.len());
    v[..cut].trim()
}

/// A file name (or a `:`-separated list of them) reduced to base names, so
/// that with `directory=` every file is in the scratch directory.
fn base_names(v: &str) -> String {
    // fio escapes a ':' inside a name as '\:'; keep those escapes whole.
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek() == Some(&':') {
            cur.push_str("\\:");
            chars.next();
        } else if c == ':' {
            parts.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    parts.push(cur);
    parts
        .iter()
        .map(|p| {
            let p = p.trim_end_matches('/');
            match p.rfind('/') {
                Some(i) if !p[i + 1..].is_empty() => p[i + 1..].to_string(),
                _ => p.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(":")
}

/// `text` rewritten to run in `dir` (see the module's comment).
pub fn capped(text: &str, dir: &Path) -> Capped {
    let d = dir.display();
    let sized = text.lines().any(|l| {
        let k = l
            .split('=')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        ["size", "filesize", "io_size", "io_limit"].contains(&k.as_str())
    });
    // The null engine has no files (iolab refuses a directory for it).
    let mut out = if text.contains("ioengine=null") {
        "[global]\n".to_string()
    } else {
        format!("[global]\ndirectory={d}\n")
    };
    if !sized {
        out += &format!("size={CAP}\n");
    }
    let mut jobs = Vec::new();
    let mut notes: BTreeMap<String, ()> = BTreeMap::new();
    let mut not_here = None;
    for raw in text.lines() {
        let line = raw.trim_end_matches('\r');
        let t = line.trim();
        if t.starts_with('[')
            && let Some(end) = t.find(']')
        {
            let name = &t[1..end];
            out += line;
            out.push('\n');
            if !name.eq_ignore_ascii_case("global") {
                out += &format!("write_iolog={d}/iolog.{}\n", jobs.len());
                jobs.push(name.to_string());
            }
            continue;
        }
        if t.is_empty() || t.starts_with(';') || t.starts_with('#') || t.starts_with("include ") {
            out += line;
            out.push('\n');
            continue;
        }
        let (key, value) = match t.split_once('=') {
            Some((k, v)) => (k.trim().to_ascii_lowercase(), Some(v.trim())),
            None => (bare(t).to_ascii_lowercase(), None),
        };
        if let Some((_, why)) = DROPPED.iter().find(|(k, _)| *k == key) {
            notes.insert(format!("dropped {key} ({why})"), ());
            continue;
        }
        let Some(value) = value else {
            out += line;
            out.push('\n');
            continue;
        };
        let v = bare(value);
        let replaced = match key.as_str() {
            "ioengine" => {
                let engine = v.to_ascii_lowercase();
                if NOT_HERE.contains(&engine.as_str()) {
                    not_here = Some(engine);
                }
                None
            }
            "filename" | "filename_format" if !v.contains('$') || v.starts_with('/') => {
                let b = base_names(v);
                (b != v).then_some(b)
            }
            "size" | "filesize" | "io_size" | "io_limit" | "offset" | "offset_increment" => {
                if v.contains('$') || v.ends_with('%') && key.starts_with("offset") {
                    None
                } else if v.contains('-') && key == "filesize" {
                    // A range: each end capped.
                    let ends: Vec<Option<u64>> = v.split('-').map(bytes).collect();
                    ends.iter()
                        .any(|e| e.is_none_or(|n| n > CAP))
                        .then(|| format!("{}-{CAP}", CAP / 4))
                } else {
                    match bytes(v) {
                        Some(n) if n <= CAP => None,
                        _ => Some(CAP.to_string()),
                    }
                }
            }
            "numjobs" => bytes(v)
                .filter(|&n| n > MAX_NUMJOBS)
                .map(|_| MAX_NUMJOBS.to_string()),
            "loops" => bytes(v)
                .filter(|&n| n > MAX_LOOPS)
                .map(|_| MAX_LOOPS.to_string()),
            "nrfiles" | "nr_files" => bytes(v)
                .filter(|&n| n > MAX_NRFILES)
                .map(|_| MAX_NRFILES.to_string()),
            _ => None,
        };
        match replaced {
            Some(new) => {
                notes.insert(format!("{key}={v} -> {new}"), ());
                let k = t.split_once('=').map_or(t, |(k, _)| k).trim();
                out += &format!("{k}={new}\n");
            }
            None => {
                out += line;
                out.push('\n');
            }
        }
    }
    Capped {
        text: out,
        jobs,
        not_here,
        notes: notes.into_keys().collect(),
    }
}

/// One I/O of an iolog: (action, file relative to the scratch directory,
/// offset, length).
pub type Io = (String, String, u64, u64);

/// A job's `write_iolog`: its I/Os in order, how many writers opened it (one
/// version line each: clones append to the same log), and whether a line is
/// torn (fio's clones write through their own 8 KiB stdio buffers, so their
/// lines can interleave mid-line).
pub struct Iolog {
    pub ios: Vec<Io>,
    pub writers: usize,
    pub torn: Option<String>,
}

pub fn read_iolog(path: &Path, dir: &Path) -> Option<Iolog> {
    let text = std::fs::read_to_string(path).ok()?;
    let prefix = format!("{}/", dir.display());
    let mut log = Iolog {
        ios: Vec::new(),
        writers: 0,
        torn: None,
    };
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["fio", "version", "3", "iolog"] => log.writers += 1,
            [_, _, "add" | "open" | "close"] => {}
            [t, file, action, off, len]
                if t.parse::<u64>().is_ok()
                    && ["read", "write", "trim", "sync", "datasync"].contains(action) =>
            {
                let (Ok(off), Ok(len)) = (off.parse(), len.parse()) else {
                    log.torn.get_or_insert_with(|| line.to_string());
                    continue;
                };
                let file = file.strip_prefix(&prefix).unwrap_or(file).to_string();
                // An fsync or fdatasync has no range: fio's line repeats the
                // offset its reused request last held (the previous I/O's at
                // depth 1), iolab's says 0. Compared by action and file.
                let (off, len) = if matches!(*action, "sync" | "datasync") {
                    (0, 0)
                } else {
                    (off, len)
                };
                log.ios.push((action.to_string(), file, off, len));
            }
            _ => {
                log.torn.get_or_insert_with(|| line.to_string());
            }
        }
    }
    Some(log)
}

/// Per job in the JSON output, in order: name and, per direction, (I/Os,
/// bytes).
pub type Counts = Vec<(String, [(u64, u64); 3])>;

pub fn json_counts(text: &str) -> Result<Counts, String> {
    // fio may print notes before the JSON document in the same file.
    let start = text.find('{').ok_or("no JSON in the output")?;
    let v: serde_json::Value =
        serde_json::from_str(&text[start..]).map_err(|e| format!("bad JSON: {e}"))?;
    let jobs = v["jobs"].as_array().ok_or("no \"jobs\" in the JSON")?;
    Ok(jobs
        .iter()
        .map(|j| {
            let dir = |d: &str| {
                (
                    j[d]["total_ios"].as_u64().unwrap_or(0),
                    j[d]["io_bytes"].as_u64().unwrap_or(0),
                )
            };
            (
                j["jobname"].as_str().unwrap_or("?").to_string(),
                [dir("read"), dir("write"), dir("trim")],
            )
        })
        .collect())
}

#[test]
fn capping_rewrites_devices_sizes_and_time() {
    let dir = Path::new("/scratch");
    let c = capped(
        "[global]\nfilename=/dev/sdb:/dev/sdc\nsize=10g # big\nruntime=60\ntime_based\n\
         [a]\nrw=randread\nnumjobs=16\n[b]\nfilesize=1k-16g\n",
        dir,
    );
    assert_eq!(
        c.text,
        format!(
            "[global]\ndirectory=/scratch\n[global]\nfilename=sdb:sdc\nsize={CAP}\n\
             [a]\nwrite_iolog=/scratch/iolog.0\nrw=randread\nnumjobs=4\n\
             [b]\nwrite_iolog=/scratch/iolog.1\nfilesize={}-{CAP}\n",
            CAP / 4
        )
    );
    assert_eq!(c.jobs, ["a", "b"]);
    assert!(c.notes.iter().any(|n| n.starts_with("dropped runtime")));
    // No size anywhere: the scratch file gets one.
    let c = capped("[x]\nrw=read\nioengine=net\n", dir);
    assert!(
        c.text
            .starts_with(&format!("[global]\ndirectory=/scratch\nsize={CAP}\n"))
    );
    assert_eq!(c.not_here.as_deref(), Some("net"));
    assert_eq!(bytes("512KiB"), Some(512 << 10));
    assert_eq!(bytes("50%"), None);
}
