//! Value parsers, cross-option checks and file names of the file-set options
//! (their types: `job::files`).

use std::path::PathBuf;

use super::draft::{Ctx, Draft};
use super::error::JobError;
use super::files::{Fallocate, ServiceKind};
use super::spec::{Engine, JobSpec};

pub(crate) const SERVICE_VALID: &str = "random, roundrobin or sequential, optionally with :N \
     (requests to one file before switching), e.g. roundrobin:4; or zipf, pareto, normal or \
     gauss, optionally with :P (the distribution's parameter, as in random_distribution)";

/// `file_service_type=`, with fio's zipf/pareto/normal/gauss choices parsed
/// as `random_distribution` parses them.
pub(crate) fn set_service(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    let kind = c.value.split(':').next().unwrap_or("").to_ascii_lowercase();
    if matches!(kind.as_str(), "zipf" | "pareto" | "normal" | "gauss") {
        let value = match c.value.split_once(':') {
            Some((_, p)) => format!("{}:{p}", if kind == "gauss" { "normal" } else { &kind }),
            None => {
                if kind == "gauss" {
                    "normal".to_string()
                } else {
                    kind.clone()
                }
            }
        };
        let sub = Ctx {
            name: c.name,
            value: &value,
            at: c.at,
            kb: c.kb,
            bare: c.bare,
        };
        d.spec.file_service_dist = super::random::distribution(&sub)?;
        d.spec.files.service = ServiceKind::Distributed;
        d.spec.files.service_every = 1;
        return Ok(());
    }
    (d.spec.files.service, d.spec.files.service_every) = service(c)?;
    Ok(())
}

pub(crate) fn service(c: &Ctx) -> Result<(ServiceKind, u32), JobError> {
    let (kind, n) = match c.value.split_once(':') {
        Some((k, n)) => (k, Some(n)),
        None => (c.value, None),
    };
    let kind = match kind.to_ascii_lowercase().as_str() {
        "roundrobin" => ServiceKind::RoundRobin,
        "sequential" => ServiceKind::Sequential,
        "random" => ServiceKind::Random,
        _ => return Err(c.bad(SERVICE_VALID)),
    };
    let every = match n {
        None => 1,
        Some(n) => match n.trim().parse::<u32>() {
            Ok(v) if v >= 1 => v,
            _ => return Err(c.bad(SERVICE_VALID)),
        },
    };
    Ok((kind, every))
}

pub(crate) fn fallocate(c: &Ctx) -> Result<Fallocate, JobError> {
    Ok(match c.value.to_ascii_lowercase().as_str() {
        "none" | "0" => Fallocate::None,
        "native" => Fallocate::Native,
        "posix" | "1" => Fallocate::Posix,
        "keep" => Fallocate::Keep,
        "truncate" => Fallocate::Truncate,
        _ => return Err(c.bad(Fallocate::VALID)),
    })
}

pub(crate) const FORMAT_VALID: &str =
    "a file name pattern using $jobname, $jobnum, $filenum and $clientuid, e.g. $jobname.$filenum";

pub(crate) fn filename_format(c: &Ctx) -> Result<String, JobError> {
    let v = c.value;
    if v.is_empty() || v.contains('/') && v.ends_with('/') {
        return Err(c.bad(FORMAT_VALID));
    }
    // Any other `$word` is most likely a typo of one of the four.
    let mut rest = v;
    while let Some(i) = rest.find('$') {
        let after = &rest[i + 1..];
        let known = ["jobname", "jobnum", "filenum", "clientuid"]
            .iter()
            .find(|k| after.starts_with(*k));
        match known {
            Some(k) => rest = &after[k.len()..],
            None => {
                return Err(c.bad(format!(
                    "{FORMAT_VALID}; '${}' is not one of them",
                    after
                        .split(|ch: char| !ch.is_ascii_alphanumeric())
                        .next()
                        .unwrap_or("")
                )));
            }
        }
    }
    Ok(v.to_string())
}

/// fio's `filename=a:b:c` list (a `\:` is a colon inside a name).
pub fn filename_list(v: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = v.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' if chars.peek() == Some(&':') => {
                out.last_mut().unwrap().push(':');
                chars.next();
            }
            ':' => out.push(String::new()),
            _ => out.last_mut().unwrap().push(ch),
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

pub(crate) fn set_overwrite(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.files.overwrite = c.boolean()?;
    Ok(())
}

pub(crate) fn set_create_fsync(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.files.create_fsync = c.boolean()?;
    Ok(())
}

pub(crate) fn set_create_only(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.files.create_only = c.boolean()?;
    Ok(())
}

pub(crate) fn set_file_append(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.files.file_append = c.boolean()?;
    Ok(())
}

pub(crate) fn set_opendir(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.files.opendir = Some(c.nonempty()?);
    Ok(())
}

pub(crate) fn set_unlink_each_loop(d: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    d.spec.files.unlink_each_loop = c.boolean()?;
    Ok(())
}

/// `unique_filename`: fio prefixes file names with the client's address in
/// client/server mode; iolab always runs locally, where fio adds nothing either.
pub(crate) fn set_unique_filename(_: &mut Draft, c: &Ctx) -> Result<(), JobError> {
    c.boolean()?;
    Ok(())
}

/// The regular files below `dir`, recursively, in name order (fio's
/// `opendir`; fio takes them in directory order, which no user controls).
pub fn dir_files(dir: &std::path::Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&d)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let ft = e.file_type()?;
            if ft.is_dir() {
                todo.push(e.path());
            } else if ft.is_file() {
                out.push(e.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The files of clone `jobnum` of `job`, in file-number order.
///
/// As fio: a `filename` list names them (relative names under `directory`);
/// otherwise `nrfiles` names from `filename_format` (default
/// `$jobname.$jobnum.$filenum`), in the directory `directory`'s list gives
/// this clone (clone N takes the N-th, wrapping around).
pub fn paths(job: &JobSpec, jobnum: u32) -> Vec<PathBuf> {
    let dirs: Vec<String> = job
        .directory
        .as_deref()
        .map(filename_list)
        .unwrap_or_default();
    let dir = (!dirs.is_empty()).then(|| &dirs[jobnum as usize % dirs.len()]);
    let place = |name: String| -> PathBuf {
        match dir {
            Some(d) if !name.starts_with('/') => PathBuf::from(d).join(name),
            _ => PathBuf::from(name),
        }
    };
    if let Some(d) = &job.files.opendir {
        // A directory that cannot be listed yields no file here; the engine
        // lists it again and reports the error (`engine::files::check_opendir`).
        let mut out: Vec<PathBuf> = job
            .filename
            .as_deref()
            .map(filename_list)
            .unwrap_or_default()
            .into_iter()
            .map(place)
            .collect();
        out.extend(dir_files(std::path::Path::new(d)).unwrap_or_default());
        return out;
    }
    if let Some(f) = &job.filename {
        return filename_list(f).into_iter().map(place).collect();
    }
    let format = job
        .files
        .filename_format
        .as_deref()
        .unwrap_or("$jobname.$jobnum.$filenum");
    (0..job.files.nrfiles.max(1))
        .map(|i| {
            place(
                format
                    // The section header's name, as fio's: `name=` renames
                    // the job in reports, never its files.
                    .replace("$jobname", job.file_jobname())
                    .replace("$jobnum", &jobnum.to_string())
                    .replace("$filenum", &i.to_string())
                    // fio's client address in client/server mode; empty when
                    // run locally, as iolab always is.
                    .replace("$clientuid", ""),
            )
        })
        .collect()
}

impl Draft {
    fn files_set_at(&self, name: &str) -> Option<&str> {
        self.set
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, at)| at.as_str())
    }

    /// Rules between the file-set options and the rest of the job.
    pub(crate) fn check_files(&mut self, section_at: &str) -> Result<(), JobError> {
        let name = self.spec.name.clone();
        let conflict = |at: Option<&str>, problem: String| JobError::Conflict {
            at: at.unwrap_or(section_at).to_string(),
            job: name.clone(),
            problem,
        };
        let listed = self.spec.filename.as_deref().map(filename_list);
        if let Some(list) = &listed {
            let n = list.len() as u32;
            if n == 0 {
                return Err(conflict(
                    self.files_set_at("filename"),
                    "filename names no file: give a path, or several separated by ':'".into(),
                ));
            }
            // fio lowers nrfiles to the list's length (fixup_options), so
            // `nrfiles=3` beside one file runs that one file; a list longer
            // than nrfiles is refused: fio would size each of its files as
            // size / nrfiles yet use them all.
            if self.files_set_at("nrfiles").is_some() && self.spec.files.nrfiles < n {
                return Err(conflict(
                    self.files_set_at("nrfiles"),
                    format!(
                        "filename lists {n} file(s) and nrfiles={} is fewer: drop nrfiles (the \
                         list sets it) or list that many files",
                        self.spec.files.nrfiles
                    ),
                ));
            }
            self.spec.files.nrfiles = n;
        }
        if let Some(at) = self.files_set_at("filename_format")
            && self.spec.filename.is_some()
        {
            return Err(conflict(
                Some(at),
                "filename_format names files when filename= does not; this job sets both: keep \
                 one"
                .into(),
            ));
        }
        let s = &self.spec;
        let n = s.files.nrfiles;
        if s.ioengine == Engine::Null && (n > 1 || self.files_set_at("directory").is_some()) {
            return Err(conflict(
                self.files_set_at("nrfiles")
                    .or(self.files_set_at("directory")),
                "ioengine=null emulates one device and has no files: use a file engine (psync, \
                 io_uring, ...) for nrfiles/directory/filename lists"
                    .into(),
            ));
        }
        if n > 1 {
            if s.verify.kind.is_some() {
                return Err(conflict(
                    self.files_set_at("verify"),
                    format!(
                        "verify checks one file's blocks and this job has {n} files: use one \
                         file per job to verify"
                    ),
                ));
            }
            // fio: size is the job's total, spread over its files; filesize is
            // each file's.
            if let Some(fs) = self.filesize
                && self.files_set_at("size").is_none()
            {
                self.spec.size = Some(fs.saturating_mul(u64::from(n)));
            }
        }
        // unlink_each_loop: as fio 3.33, the files are deleted before each
        // pass after the first (engine::files::Relayout); the last pass's
        // files stay unless unlink=1, and with one pass nothing is deleted.
        let s = &self.spec;
        if s.files.unlink_each_loop && s.loops > 1 {
            let why = if n > 1 {
                Some(format!(
                    "this job has {n} files, and iolab's files pass on to their next loop one by \
                     one (each file's offsets are its own), with no point where every file's \
                     loop has ended to delete them at: use one file per job"
                ))
            } else if s.verify.kind.is_some() {
                Some(
                    "verify reads a loop's writes back while the next loop begins, and the \
                     files would be deleted under it: drop verify, or unlink_each_loop"
                        .to_string(),
                )
            } else if s.ioengine == Engine::Mmap {
                Some(
                    "ioengine=mmap maps the file once; a file made again would not be the one \
                     mapped: use psync, libaio or io_uring"
                        .to_string(),
                )
            } else if s.backend.uring.registerfiles {
                Some(
                    "registerfiles=1 registers the files once; a file made again would not be \
                     the one registered: drop registerfiles"
                        .to_string(),
                )
            } else {
                None
            };
            if let Some(why) = why {
                return Err(conflict(
                    self.files_set_at("unlink_each_loop"),
                    format!(
                        "unlink_each_loop with loops={} deletes and makes the files again \
                         between loops, and {why}",
                        s.loops
                    ),
                ));
            }
        }
        if self.spec.files.opendir.is_some() && self.spec.ioengine == Engine::Null {
            return Err(conflict(
                self.files_set_at("opendir"),
                "ioengine=null emulates one device and has no files: use a file engine for opendir"
                    .into(),
            ));
        }
        let s = &self.spec;
        if s.files.pre_read && s.direct {
            return Err(conflict(
                self.files_set_at("pre_read"),
                "pre_read fills the page cache, which direct=1 bypasses: drop one of them".into(),
            ));
        }
        Ok(())
    }
}
