//! fio's ini-style job files: sections, comments, `include`, `${ENV}` and
//! `$ncpus`-style keywords. Produces sections of raw options; applying them
//! to jobs is the plan's business.

use std::path::{Path, PathBuf};

use super::error::JobError;
use super::options::RawOpt;

/// Values fio substitutes for `$pagesize`, `$mb_memory` and `$ncpus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keywords {
    pub pagesize: u64,
    pub mb_memory: u64,
    pub ncpus: u64,
}

impl Keywords {
    /// This machine's values (sysconf), as fio computes them.
    pub fn from_system() -> Keywords {
        // SAFETY: sysconf has no preconditions; it returns -1 for unknown names.
        let conf = |name| unsafe { libc::sysconf(name) }.max(0) as u64;
        let pagesize = conf(libc::_SC_PAGESIZE);
        let pages = conf(libc::_SC_PHYS_PAGES);
        Keywords {
            pagesize,
            mb_memory: pages.saturating_mul(pagesize) / (1024 * 1024),
            ncpus: conf(libc::_SC_NPROCESSORS_ONLN),
        }
    }
}

/// What parsing may consult outside the text: environment variables, keyword
/// values, and the file system (for `include` and job files).
pub struct ParseCtx<'a> {
    pub env: &'a dyn Fn(&str) -> Option<String>,
    pub keywords: Keywords,
    pub read_file: &'a dyn Fn(&Path) -> std::io::Result<String>,
}

/// One `[name]` section (or the command line's implicit global part).
#[derive(Clone, Debug)]
pub(crate) struct Section {
    pub name: String,
    pub at: String,
    pub opts: Vec<RawOpt>,
}

impl Section {
    pub(crate) fn is_global(&self) -> bool {
        self.name == "global"
    }
}

/// Nesting limit for `include`, so a cycle ends in an error rather than a hang.
const MAX_INCLUDE_DEPTH: usize = 16;

/// fio treats a line whose first non-blank character is `;` or `#` as a comment,
/// and cuts any other line at its first `;` and then its first `#`.
fn strip_comment(line: &str) -> &str {
    let line = line.trim_start();
    if line.starts_with([';', '#']) {
        return "";
    }
    let line = line.split(';').next().unwrap_or("");
    let line = line.split('#').next().unwrap_or("");
    line.trim_end()
}

/// Replaces `${VAR}` with the environment's value (empty when unset, as fio does)
/// and fio's keywords. Returns the names of unset variables.
fn expand(line: &str, ctx: &ParseCtx) -> (String, Vec<String>) {
    let mut out = String::with_capacity(line.len());
    let mut unset = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => {
                let name = &after[..end];
                match (ctx.env)(name) {
                    Some(v) => out.push_str(&v),
                    None => unset.push(name.to_string()),
                }
                rest = &after[end + 1..];
            }
            None => {
                // fio copies an unterminated "${" literally.
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    let k = ctx.keywords;
    for (word, val) in [
        ("$pagesize", k.pagesize),
        ("$mb_memory", k.mb_memory),
        ("$ncpus", k.ncpus),
    ] {
        if out.contains(word) {
            out = out.replace(word, &val.to_string());
        }
    }
    (out, unset)
}

/// Splits `key=value` (or a bare `key`) with blanks around both trimmed.
pub(crate) fn split_option(text: &str) -> (String, Option<String>) {
    match text.split_once('=') {
        Some((k, v)) => (k.trim().to_string(), Some(v.trim().to_string())),
        None => (text.trim().to_string(), None),
    }
}

pub(crate) struct IniReader<'a, 'c> {
    ctx: &'a ParseCtx<'c>,
    pub sections: Vec<Section>,
    pub warnings: Vec<String>,
}

impl<'a, 'c> IniReader<'a, 'c> {
    pub(crate) fn new(ctx: &'a ParseCtx<'c>) -> Self {
        IniReader {
            ctx,
            sections: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Reads a whole job file. `path` resolves relative `include`s.
    pub(crate) fn read(
        &mut self,
        text: &str,
        label: &str,
        path: Option<&Path>,
    ) -> Result<(), JobError> {
        self.read_lines(text, label, path, 0)
    }

    fn read_lines(
        &mut self,
        text: &str,
        label: &str,
        path: Option<&Path>,
        depth: usize,
    ) -> Result<(), JobError> {
        // An included file adds options to the section that includes it.
        let nested = depth > 0;
        for (i, raw) in text.lines().enumerate() {
            let at = format!("{label}:{}", i + 1);
            let line = strip_comment(raw);
            if line.is_empty() {
                continue;
            }
            if line.starts_with('[') {
                if nested {
                    return Err(JobError::WrongPlace {
                        at,
                        option: line.to_string(),
                        reason: "an included file may only hold options, not sections".into(),
                    });
                }
                let name = section_name(line).ok_or_else(|| JobError::BadSection {
                    at: at.clone(),
                    text: line.to_string(),
                    problem: "expected [name] on a line of its own".into(),
                })?;
                if name.starts_with("global") && name != "global" {
                    return Err(JobError::BadSection {
                        at,
                        text: line.to_string(),
                        problem: "fio treats every section whose name starts with 'global' as \
                                  [global]; rename the job, or write [global]"
                            .into(),
                    });
                }
                self.sections.push(Section {
                    name: name.to_string(),
                    at,
                    opts: Vec::new(),
                });
                continue;
            }
            if self.sections.is_empty() {
                return Err(JobError::OutsideSection {
                    at,
                    text: line.to_string(),
                });
            }
            if let Some(target) = line
                .strip_prefix("include")
                .filter(|r| r.starts_with([' ', '\t']))
            {
                if depth >= MAX_INCLUDE_DEPTH {
                    return Err(JobError::WrongPlace {
                        at,
                        option: "include".into(),
                        reason: format!("includes nest deeper than {MAX_INCLUDE_DEPTH} (a cycle?)"),
                    });
                }
                self.include(target.trim(), &at, path, depth)?;
                continue;
            }
            let (expanded, unset) = expand(line, self.ctx);
            for var in &unset {
                self.warnings.push(format!(
                    "{at}: environment variable '{var}' is not set; substituted an empty string \
                     (as fio does)"
                ));
            }
            let (key, value) = split_option(&expanded);
            let note = (!unset.is_empty()).then(|| {
                let vars: Vec<String> = unset.iter().map(|v| format!("${{{v}}}")).collect();
                format!(
                    "{} not set, substituted by an empty string",
                    vars.join(", ")
                )
            });
            let section = self.sections.last_mut().expect("checked non-empty");
            section.opts.push(RawOpt {
                key,
                value,
                at,
                note,
            });
        }
        Ok(())
    }

    fn include(
        &mut self,
        target: &str,
        at: &str,
        including: Option<&Path>,
        depth: usize,
    ) -> Result<(), JobError> {
        let mut file = PathBuf::from(target);
        // fio: a relative name that does not exist as given is looked up next to
        // the including file.
        if file.is_relative()
            && !file.exists()
            && let Some(dir) = including.and_then(Path::parent)
        {
            file = dir.join(target);
        }
        let text = (self.ctx.read_file)(&file).map_err(|e| JobError::Read {
            at: at.to_string(),
            path: file.clone(),
            reason: e.to_string(),
        })?;
        let label = file.display().to_string();
        self.read_lines(&text, &label, Some(&file), depth + 1)
    }
}

fn section_name(line: &str) -> Option<&str> {
    let inner = line.strip_prefix('[')?.strip_suffix(']')?.trim();
    if inner.is_empty() || inner.contains(['[', ']']) {
        return None;
    }
    Some(inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx_with<'a>(
        env: &'a dyn Fn(&str) -> Option<String>,
        read: &'a dyn Fn(&Path) -> std::io::Result<String>,
    ) -> ParseCtx<'a> {
        ParseCtx {
            env,
            keywords: Keywords {
                pagesize: 4096,
                mb_memory: 24000,
                ncpus: 2,
            },
            read_file: read,
        }
    }

    #[test]
    fn comments_as_fio_cuts_them() {
        assert_eq!(strip_comment("  # whole"), "");
        assert_eq!(strip_comment("; whole"), "");
        assert_eq!(strip_comment("size=1m ; trailing"), "size=1m");
        assert_eq!(strip_comment("filename=a#b"), "filename=a");
        assert_eq!(strip_comment("  bs=4k  "), "bs=4k");
    }

    #[test]
    fn env_and_keywords() {
        let env = |k: &str| (k == "SZ").then(|| "64m".to_string());
        let read = |_: &Path| Err(std::io::Error::other("no files"));
        let ctx = ctx_with(&env, &read);
        assert_eq!(expand("size=${SZ}", &ctx), ("size=64m".into(), vec![]));
        assert_eq!(
            expand("size=${NOPE}1m", &ctx),
            ("size=1m".into(), vec!["NOPE".to_string()])
        );
        assert_eq!(expand("numjobs=$ncpus", &ctx).0, "numjobs=2");
        assert_eq!(expand("bs=$pagesize", &ctx).0, "bs=4096");
        assert_eq!(expand("x=${UNTERMINATED", &ctx).0, "x=${UNTERMINATED");
    }

    #[test]
    fn includes_splice_options_into_the_section() {
        let env = |_: &str| None;
        let read = |p: &Path| {
            if p == Path::new("/jobs/common.fio") {
                Ok("bs=8k\n; comment\niodepth=4\n".to_string())
            } else if p == Path::new("/jobs/bad.fio") {
                Ok("[x]\n".to_string())
            } else {
                Err(std::io::Error::from(std::io::ErrorKind::NotFound))
            }
        };
        let ctx = ctx_with(&env, &read);
        let mut r = IniReader::new(&ctx);
        r.read(
            "[j]\ninclude common.fio\nrw=write\n",
            "/jobs/main.fio",
            Some(Path::new("/jobs/main.fio")),
        )
        .unwrap();
        let keys: Vec<(&str, &str)> = r.sections[0]
            .opts
            .iter()
            .map(|o| (o.key.as_str(), o.at.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("bs", "/jobs/common.fio:1"),
                ("iodepth", "/jobs/common.fio:3"),
                ("rw", "/jobs/main.fio:3")
            ]
        );
        let mut r = IniReader::new(&ctx);
        let e = r
            .read(
                "[j]\ninclude bad.fio\n",
                "/jobs/main.fio",
                Some(Path::new("/jobs/main.fio")),
            )
            .unwrap_err();
        assert!(e.to_string().contains("/jobs/bad.fio:1"), "{e}");
        let mut r = IniReader::new(&ctx);
        let e = r
            .read("[j]\ninclude missing.fio\n", "m.fio", None)
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("m.fio:2: cannot read job file 'missing.fio'"),
            "{e}"
        );
    }
}
