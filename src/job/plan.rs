//! From `iolab run` arguments (fio's command-line semantics) and job files to a
//! [`RunPlan`]: the jobs in order plus run-wide options.
//!
//! fio's order is kept: options before the first `--name` are global and also
//! apply to the jobs of job files; command-line jobs come first, then each job
//! file in turn, and the first job of every file after the first gets a
//! stonewall.

use std::path::{Path, PathBuf};

use super::draft::Draft;
use super::error::{COMMAND_LINE, JobError};
use super::flags::{Effect, RunFlags};
use super::ini::{IniReader, Keywords, ParseCtx, Section, split_option};
use super::options::{RawOpt, takes_value};
use super::spec::{JobSpec, Origin};

/// One of `--output-format=`'s formats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputFormat {
    #[default]
    Normal,
    Json,
    /// fio's `json+`: json with the latency bins.
    #[serde(rename = "json+")]
    JsonPlus,
    /// fio's terse (semicolon) format, version 3.
    Terse,
}

/// `--output-format=` as fio takes it: a comma list of formats, each written
/// once (json and json+ together give the json+ document).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutputFormats {
    pub normal: bool,
    pub json: bool,
    pub json_plus: bool,
    pub terse: bool,
}

impl OutputFormats {
    pub fn only(f: OutputFormat) -> OutputFormats {
        let mut s = OutputFormats::default();
        s.add(f);
        s
    }

    fn add(&mut self, f: OutputFormat) {
        match f {
            OutputFormat::Normal => self.normal = true,
            OutputFormat::Json => self.json = true,
            OutputFormat::JsonPlus => self.json_plus = true,
            OutputFormat::Terse => self.terse = true,
        }
    }
}

/// Shortest `--status-interval`: the status is read from counters the workers
/// publish, and printing it much more often would only flood the output.
pub const MIN_STATUS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// What `iolab run` was asked to do.
#[derive(Clone, Debug, PartialEq)]
pub struct RunPlan {
    /// In run order; `stonewall` marks where a job waits for all before it.
    pub jobs: Vec<JobSpec>,
    pub output_format: OutputFormats,
    /// `--status-interval=T`: print the cumulative status every T.
    pub status_interval: Option<std::time::Duration>,
    /// `--output=FILE`: write the report there instead of stdout.
    pub output: Option<PathBuf>,
    /// `--parse-only`: validate and print nothing but errors; run no I/O.
    pub parse_only: bool,
    /// Things the user should see that are not errors (e.g. unset `${VAR}`s).
    pub warnings: Vec<String>,
    /// fio options of the jobs that iolab runs otherwise than fio (the option
    /// table's notes), once per option. Not warnings: fio accepts these
    /// options silently, so they do not trip `--warnings-fatal`.
    pub notes: Vec<OptionNote>,
    /// Options of the [global] sections as written (fio's `global options`).
    pub global_options: Vec<(String, String)>,
    /// `--max-runtime`, `--max-size`, `--scratch-dir` as given (already applied
    /// to `jobs`).
    pub caps: RunCaps,
    /// fio's run-wide flags (`--eta`, `--readonly`, `--showcmd`, ...).
    pub flags: RunFlags,
    /// `--showcmd`: each job file as one fio command line.
    pub showcmd: Vec<String>,
    /// `--debug=parse,job`: fio-style debug lines, printed before the run.
    pub debug: Vec<String>,
}

/// Applies `o`, or, when its value is refused and ends in closing
/// parentheses it never opened (`--filesize=65536)`, a typo in fio's own
/// t/strided.py), the value without them, with a note that says so (a note,
/// not a warning: fio takes the value silently, and its suite wants an empty
/// stderr). fio reads a number and its unit and ignores whatever follows;
/// iolab ignores only stray `)`s, and only where the value is otherwise
/// valid, so no value it takes changes meaning and other trailing text is
/// still refused.
fn apply_lenient(d: &mut Draft, o: &RawOpt) -> Result<Option<OptionNote>, JobError> {
    let err = match d.apply(o) {
        Ok(()) => return Ok(None),
        Err(e @ JobError::BadValue { .. }) => e,
        Err(e) => return Err(e),
    };
    let Some(value) = o.value.as_deref() else {
        return Err(err);
    };
    let trimmed = value.trim_end();
    let kept = trimmed.trim_end_matches(')');
    let opened = kept.matches('(').count();
    let closed = kept.matches(')').count();
    if kept.len() == trimmed.len() || kept.trim().is_empty() || closed != opened {
        return Err(err);
    }
    let retry = RawOpt {
        value: Some(kept.to_string()),
        ..o.clone()
    };
    if d.apply(&retry).is_err() {
        return Err(err);
    }
    let option = o.key.trim().to_string();
    Ok(Some(OptionNote {
        at: o.at.clone(),
        note: format!(
            "{option}={value} is read as {option}={kept}: the unmatched '{}' is ignored, as fio \
             ignores what follows a number",
            &trimmed[kept.len()..]
        ),
        option,
    }))
}

pub use super::draft::OptionNote;

/// iolab's run-wide overrides for running someone else's job files safely and
/// briefly (fio's examples in CI, a user's file on a test box): they apply to
/// every job, whatever the job files say.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunCaps {
    /// `--max-runtime=TIME`: no job runs longer, time- or size-bounded.
    pub max_runtime: Option<std::time::Duration>,
    /// `--max-size=SIZE`: no job covers more bytes (and one without a size
    /// gets this one, so a scratch file can be created for it).
    pub max_size: Option<u64>,
    /// `--scratch-dir=DIR`: every job's files live in DIR instead (a named
    /// file or device keeps its last path component as its name there).
    pub scratch_dir: Option<PathBuf>,
}

impl RunCaps {
    fn apply(&self, job: &mut JobSpec) {
        if let Some(cap) = self.max_runtime {
            job.runtime = Some(job.runtime.map_or(cap, |r| r.min(cap)));
            job.ramp_time = job.ramp_time.min(cap);
            // A job file's start delays (1mbs_clients.fio adds a job every
            // 4 s, up to 124 s) would otherwise outlast the capped run.
            job.control.startdelay = job.control.startdelay.map(|d| d.min(cap));
        }
        if let Some(cap) = self.max_size {
            job.size = Some(job.size.map_or(cap, |s| s.min(cap)));
            job.size_percent = None;
            // An offset beyond the capped size would leave no region.
            job.offset = job.offset.min(cap);
            job.offset_percent = None;
            // Clones a capped size apart, and no more I/O than one capped region.
            job.offset_increment = job.offset_increment.min(cap);
            job.io_size = job.io_size.map(|s| s.min(cap));
            // A zone no larger than the capped region, so zbd jobs keep a whole zone.
            job.zones.size = job.zones.size.min(cap);
        }
        if let Some(dir) = &self.scratch_dir
            && job.ioengine != super::spec::Engine::Null
        {
            let dir = dir.display().to_string();
            match &job.filename {
                Some(f) => {
                    // fio's `a:b` lists files; `/dev/sdb` becomes `sdb` here.
                    let base: String = f
                        .rsplit('/')
                        .next()
                        .unwrap_or(f)
                        .chars()
                        .map(|ch| if ch == ':' { '_' } else { ch })
                        .collect();
                    let base = if base.is_empty() {
                        job.name.clone()
                    } else {
                        base
                    };
                    job.filename = Some(format!("{dir}/{base}"));
                    // The file is in the scratch directory now: the job's
                    // own directory= (a path on the machine it was written
                    // for) no longer applies.
                    job.directory = None;
                }
                None => job.directory = Some(dir),
            }
        }
        if let Some(dir) = &self.scratch_dir {
            // Logs are the job's files too (also of null-device jobs).
            job.logs.move_into(dir);
        }
    }
}

/// `--cmdhelp[=OPTION|all|markdown]` anywhere among `iolab run`'s arguments:
/// the help text to print instead of running (fio's flag).
#[cfg(any(test, feature = "testing"))]
pub fn cmdhelp(args: &[String]) -> Result<Option<String>, JobError> {
    let Some(arg) = args
        .iter()
        .find(|a| *a == "--cmdhelp" || a.starts_with("--cmdhelp="))
    else {
        return Ok(None);
    };
    let which = arg.strip_prefix("--cmdhelp=");
    super::table::cmdhelp(which).map(Some)
}

/// Parses everything after `iolab run`: job file paths and `--key[=value]`
/// options. Job files are read from disk; `env` answers `${VAR}` lookups.
pub fn parse_run_args(
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<RunPlan, JobError> {
    let read = |p: &Path| std::fs::read_to_string(p);
    let ctx = ParseCtx {
        env,
        keywords: Keywords::from_system(),
        read_file: &read,
    };
    parse_run_args_with(args, &ctx)
}

/// [`parse_run_args`] with every outside lookup supplied (for tests).
pub fn parse_run_args_with(args: &[String], ctx: &ParseCtx) -> Result<RunPlan, JobError> {
    let cl = CommandLine::parse(args)?;
    let mut b = Builder::new(cl.sections_filter.clone());
    b.debug_parse = cl.flags.debug.parse;
    for s in &cl.sections {
        b.apply(s, false)?;
    }
    let mut showcmd = Vec::new();
    for (i, file) in cl.job_files.iter().enumerate() {
        let text = (ctx.read_file)(file).map_err(|e| JobError::Read {
            at: COMMAND_LINE.to_string(),
            path: file.clone(),
            reason: e.to_string(),
        })?;
        let mut r = IniReader::new(ctx);
        r.read(&text, &file.display().to_string(), Some(file))?;
        b.warnings.append(&mut r.warnings);
        if cl.flags.showcmd {
            showcmd.push(super::flags::command_line(&r.sections));
        }
        b.apply_file(&r.sections, i > 0)?;
    }
    b.check_filter()?;
    // fio's --parse-only with options but no job parses them (printing what
    // --debug=parse says of them) and succeeds; a run needs a job.
    if b.jobs.is_empty() && !cl.parse_only {
        return Err(JobError::NoJobs {
            at: COMMAND_LINE.to_string(),
        });
    }
    for job in &mut b.jobs {
        cl.caps.apply(job);
    }
    if cl.flags.readonly {
        super::flags::check_readonly(&mut b.jobs)?;
    }
    if let Some(v) = &cl.debug_raw {
        for c in super::flags::debug_silent(v) {
            b.warnings.push(format!(
                "{COMMAND_LINE}: --debug={c} is accepted, but iolab prints debug output \
                 only for {}",
                super::flags::DEBUG_IMPLEMENTED.join(" and ")
            ));
        }
    }
    if cl.flags.debug.job {
        for j in &b.jobs {
            b.debug
                .push(super::flags::debug_line("job", &super::flags::job_debug(j)));
        }
    }
    if cl.flags.warnings_fatal && !b.warnings.is_empty() {
        return Err(JobError::Fatal {
            at: COMMAND_LINE.to_string(),
            warning: b.warnings.remove(0),
        });
    }
    Ok(RunPlan {
        flags: cl.flags.clone(),
        showcmd,
        debug: b.debug,
        caps: cl.caps.clone(),
        jobs: b.jobs,
        output_format: cl.output_format,
        status_interval: cl.status_interval,
        output: cl.output,
        parse_only: cl.parse_only,
        warnings: b.warnings,
        notes: b.notes,
        global_options: b.global_raw,
    })
}

/// Parses one job file's text on its own (no command-line globals).
/// `file_label` names it in messages (`label:line`); relative includes
/// resolve against it.
pub fn parse_job_file_str(
    text: &str,
    file_label: &str,
    ctx: &ParseCtx,
) -> Result<RunPlan, JobError> {
    let mut r = IniReader::new(ctx);
    r.read(text, file_label, Some(Path::new(file_label)))?;
    let mut b = Builder::new(Vec::new());
    b.warnings.append(&mut r.warnings);
    b.apply_file(&r.sections, false)?;
    if b.jobs.is_empty() {
        return Err(JobError::NoJobs {
            at: file_label.to_string(),
        });
    }
    Ok(RunPlan {
        jobs: b.jobs,
        output_format: OutputFormats::only(OutputFormat::Normal),
        status_interval: None,
        output: None,
        parse_only: false,
        warnings: b.warnings,
        notes: b.notes,
        global_options: b.global_raw,
        caps: RunCaps::default(),
        flags: RunFlags::default(),
        showcmd: Vec::new(),
        debug: Vec::new(),
    })
}

/// Applies sections in order to the global defaults and the job list.
struct Builder {
    global: Draft,
    /// [global] options as written, in order (a later value replaces an earlier one).
    global_raw: Vec<(String, String)>,
    jobs: Vec<JobSpec>,
    warnings: Vec<String>,
    /// The notes of the options used, each once per run.
    notes: Vec<OptionNote>,
    /// `--section=`: only these job sections run (fio keeps every [global]).
    filter: Vec<String>,
    filter_hits: Vec<bool>,
    /// `--debug=parse`: log each option as it is applied.
    debug_parse: bool,
    debug: Vec<String>,
}

impl Builder {
    fn new(filter: Vec<String>) -> Self {
        let hits = vec![false; filter.len()];
        Builder {
            global: Draft::default(),
            global_raw: Vec::new(),
            jobs: Vec::new(),
            warnings: Vec::new(),
            notes: Vec::new(),
            filter,
            filter_hits: hits,
            debug_parse: false,
            debug: Vec::new(),
        }
    }

    fn apply_file(&mut self, sections: &[Section], stonewall_first: bool) -> Result<(), JobError> {
        let mut stonewall = stonewall_first;
        for s in sections {
            if !s.is_global() && !self.selected(&s.name) {
                continue;
            }
            let added = self.apply(s, stonewall)?;
            stonewall &= !added;
        }
        Ok(())
    }

    fn selected(&mut self, name: &str) -> bool {
        if self.filter.is_empty() {
            return true;
        }
        match self.filter.iter().position(|f| f == name) {
            Some(i) => {
                self.filter_hits[i] = true;
                true
            }
            None => false,
        }
    }

    /// Returns whether a job was added.
    fn apply(&mut self, s: &Section, stonewall: bool) -> Result<bool, JobError> {
        // fio parses ioengine before a section's other options (an engine's own
        // options exist only once it is chosen): a refused engine is the error,
        // not the first of its options.
        if let Some(e) = s.opts.iter().find(|o| o.key.trim() == "ioengine") {
            Draft::default().apply(e)?;
        }
        for o in &s.opts {
            if let Some(def) = super::table::find(o.key.trim())
                && let super::table::Status::Noted(note) = def.status
                && !self.notes.iter().any(|n| n.option == def.name)
            {
                self.notes.push(OptionNote {
                    at: o.at.clone(),
                    option: def.name.to_string(),
                    note: format!("{} is accepted, but {note}", def.name),
                });
            }
            if let Some(def) = super::table::find(o.key.trim())
                && def.name == "bsrange"
                && let Some(note) = super::parse::bsrange_note(o.value.as_deref().unwrap_or(""))
            {
                self.notes.push(OptionNote {
                    at: o.at.clone(),
                    option: def.name.to_string(),
                    note,
                });
            }
        }
        // fio applies kb_base before a section's other options, wherever it stands.
        let (kb, rest): (Vec<&RawOpt>, Vec<&RawOpt>) =
            s.opts.iter().partition(|o| o.key == "kb_base");
        if self.debug_parse {
            for o in kb.iter().chain(&rest) {
                self.debug.push(super::flags::debug_line(
                    "parse",
                    &format!(
                        "handle_option={}, ptr={} (section {}, {})",
                        o.key.trim(),
                        o.value.as_deref().unwrap_or("").trim(),
                        s.name,
                        o.at
                    ),
                ));
                if let Some(line) = steady_debug(o) {
                    self.debug.push(super::flags::debug_line("parse", &line));
                }
            }
        }
        if s.is_global() {
            for o in kb.into_iter().chain(rest) {
                if let Some(n) = apply_lenient(&mut self.global, o)? {
                    self.notes.push(n);
                }
                // fio lists a job file's [global] and the command line's
                // options before the first --name alike.
                set_raw(&mut self.global_raw, o);
            }
            return Ok(false);
        }
        let mut d = self.global.clone();
        d.spec.name = s.name.clone();
        d.spec.section = s.name.clone();
        d.spec.origin = Origin(s.at.clone());
        if stonewall {
            d.spec.stonewall = true;
        }
        // fio names a command-line job among its options (`--name` is one there).
        let mut raw = if s.at == COMMAND_LINE {
            vec![("name".to_string(), s.name.clone())]
        } else {
            Vec::new()
        };
        for o in kb.into_iter().chain(rest) {
            if let Some(n) = apply_lenient(&mut d, o)? {
                self.notes.push(n);
            }
            set_raw(&mut raw, o);
        }
        let wait_at = d
            .set
            .iter()
            .find(|o| o.0 == "wait_for")
            .map(|o| o.1.clone());
        let (mut spec, notes) = d.finish(&s.at)?;
        for n in notes {
            if !self.notes.iter().any(|m| m.option == n.option) {
                self.notes.push(n);
            }
        }
        super::control_opts::check_wait_for(&spec, wait_at.as_deref(), &self.jobs)?;
        super::report_opts::check_group_percentiles(&spec, &self.jobs)?;
        spec.options = raw;
        self.jobs.push(spec);
        Ok(true)
    }

    fn check_filter(&self) -> Result<(), JobError> {
        if let Some(i) = self.filter_hits.iter().position(|h| !h) {
            return Err(JobError::BadValue {
                at: COMMAND_LINE.to_string(),
                option: "section".into(),
                value: self.filter[i].clone(),
                expected: "the name of a job section in the given job files".into(),
            });
        }
        Ok(())
    }
}

/// Keep an option as written for the report (fio's `job options` / `global
/// options`: key -> value), a repeated key taking its last value in its
/// first place. fio lists only options written with a value: a flag written
/// alone (`time_based`, `group_reporting`) has none, and fio 3.33 leaves it
/// out.
fn set_raw(raw: &mut Vec<(String, String)>, o: &RawOpt) {
    let key = o.key.trim().to_string();
    let Some(value) = o.value.as_deref().map(|v| v.trim().to_string()) else {
        return;
    };
    match raw.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = value,
        None => raw.push((key, value)),
    }
}

/// The command line split into fio's parts.
struct CommandLine {
    /// The implicit global part first, then one section per `--name`.
    sections: Vec<Section>,
    job_files: Vec<PathBuf>,
    output_format: OutputFormats,
    status_interval: Option<std::time::Duration>,
    output: Option<PathBuf>,
    parse_only: bool,
    sections_filter: Vec<String>,
    caps: RunCaps,
    flags: RunFlags,
    /// `--debug=`'s value as written.
    debug_raw: Option<String>,
}

impl CommandLine {
    fn parse(args: &[String]) -> Result<CommandLine, JobError> {
        let at = || COMMAND_LINE.to_string();
        let mut cl = CommandLine {
            sections: vec![Section {
                name: "global".into(),
                at: at(),
                opts: Vec::new(),
            }],
            job_files: Vec::new(),
            output_format: OutputFormats::only(OutputFormat::Normal),
            status_interval: None,
            output: None,
            parse_only: false,
            sections_filter: Vec::new(),
            caps: RunCaps::default(),
            flags: RunFlags::default(),
            debug_raw: None,
        };
        // fio reads its command line with getopt_long_only: `-name=x` and
        // `-iodepth 1` are `--name=x` and `--iodepth 1`.
        let args: Vec<String> = args.iter().map(|a| long_form(a)).collect();
        let mut it = args.iter().peekable();
        while let Some(arg) = it.next() {
            let Some(opt) = arg.strip_prefix("--") else {
                if arg == "-" {
                    return Err(JobError::Unsupported {
                        at: at(),
                        option: "-".into(),
                        reason: "reading a job file from stdin is not supported; give a path"
                            .into(),
                    });
                }
                if arg.starts_with('-') && arg.len() > 1 {
                    // Not a long option of fio's or iolab's (long_form knew
                    // none): a near miss gets the name meant.
                    let (key, _) = split_option(arg.trim_start_matches('-'));
                    return Err(JobError::UnknownOption {
                        at: at(),
                        option: arg.clone(),
                        suggestion: super::table::closest(&key).map(|k| format!("--{k}")),
                    });
                }
                cl.job_files.push(PathBuf::from(arg));
                continue;
            };
            let (key, mut value) = split_option(opt);
            // getopt_long_only's rule: a unique beginning of a long name is
            // that option (`--runt=5`), a shared one an error.
            let key = match super::prefix::complete(&key, is_known(&key))? {
                Some(full) => full.to_string(),
                None => key,
            };
            let needs_value = match key.as_str() {
                "output-format" | "status-interval" | "output" | "section" | "name"
                | "max-runtime" | "max-size" | "scratch-dir" => true,
                "parse-only" => false,
                k => super::flags::takes_value(k).unwrap_or_else(|| takes_value(k)),
            };
            // Like getopt_long, an option that needs a value takes the next
            // argument (fio's flags too: `--eta never`).
            if value.is_none()
                && needs_value
                && let Some(next) = it.next_if(|n| !n.starts_with("--"))
            {
                value = Some(next.clone());
            }
            if key == "debug" {
                cl.debug_raw = value.clone();
            }
            match super::flags::take(&key, value.as_deref(), &mut cl.flags)? {
                Some(Effect::TerseOnly) => {
                    cl.output_format = OutputFormats::only(OutputFormat::Terse);
                    continue;
                }
                Some(Effect::AddTerse) => {
                    cl.output_format.terse = true;
                    continue;
                }
                Some(Effect::Flags) => continue,
                None => {}
            }
            match key.as_str() {
                "output-format" => cl.output_format = parse_output_format(value.as_deref())?,
                "status-interval" => {
                    const E: &str = "a time of at least 100ms, e.g. 1 (second), 500ms or 2s";
                    let v = required(&key, value, E)?;
                    let t = super::units::parse_time(&v, super::units::TimeUnit::Seconds, false)
                        .ok()
                        .filter(|t| *t >= MIN_STATUS_INTERVAL)
                        .ok_or_else(|| bad(&key, &v, E))?;
                    cl.status_interval = Some(t);
                }
                "output" => cl.output = Some(PathBuf::from(required(&key, value, "a file path")?)),
                "max-runtime" => {
                    const E: &str = "a time greater than zero, e.g. 500ms or 2 (seconds)";
                    let v = required(&key, value, E)?;
                    let t = super::units::parse_time(&v, super::units::TimeUnit::Seconds, false)
                        .ok()
                        .filter(|t| !t.is_zero())
                        .ok_or_else(|| bad(&key, &v, E))?;
                    cl.caps.max_runtime = Some(t);
                }
                "max-size" => {
                    const E: &str = "a size greater than zero, e.g. 1m";
                    let v = required(&key, value, E)?;
                    let b = super::units::parse_bytes(&v, 1024)
                        .ok()
                        .filter(|b| *b > 0)
                        .ok_or_else(|| bad(&key, &v, E))?;
                    cl.caps.max_size = Some(b);
                }
                "scratch-dir" => {
                    let v = required(&key, value, "a directory path")?;
                    cl.caps.scratch_dir = Some(PathBuf::from(v));
                }
                "section" => cl
                    .sections_filter
                    .push(required(&key, value, "a job section name")?),
                "parse-only" => {
                    if let Some(v) = value {
                        return Err(JobError::BadValue {
                            at: at(),
                            option: key,
                            value: v,
                            expected: "no value (--parse-only is a flag)".into(),
                        });
                    }
                    cl.parse_only = true;
                }
                "name" => {
                    let name = required(&key, value, "a job name")?;
                    cl.sections.push(Section {
                        // fio: --name=global opens a global part, as [global] does.
                        name: if name.starts_with("global") {
                            "global".into()
                        } else {
                            name
                        },
                        at: at(),
                        opts: Vec::new(),
                    });
                }
                _ => {
                    let section = cl.sections.last_mut().expect("global part always present");
                    section.opts.push(RawOpt {
                        key,
                        value,
                        at: at(),
                        note: None,
                    });
                }
            }
        }
        Ok(cl)
    }
}

/// The names the command line knows besides the option table's and the flags'.
const OWN_KEYS: &[&str] = &[
    "output-format",
    "status-interval",
    "output",
    "section",
    "name",
    "max-runtime",
    "max-size",
    "scratch-dir",
    "parse-only",
];

/// fio's --debug=parse line for a steady-state criterion (`ss=iops:10`):
/// the threshold as fio's parser read it. `None` for other options and
/// values that are not a criterion (their error comes when applied).
fn steady_debug(o: &RawOpt) -> Option<String> {
    let def = super::table::find(o.key.trim())?;
    if def.name != "steadystate" {
        return None;
    }
    let c = super::steady::criterion(o.value.as_deref()?)?;
    Some(match (c.percent, c.metric) {
        (true, _) => format!("set steady state threshold to {:.6}%", c.limit),
        (false, super::steady::SteadyMetric::Iops) => {
            format!("set steady state IOPS threshold to {:.6}", c.limit)
        }
        (false, super::steady::SteadyMetric::Bw) => {
            format!("set steady state BW threshold to {}", c.limit as i64)
        }
    })
}

/// Whether `key` is, written in full, a command-line option fio or iolab knows.
fn is_known(key: &str) -> bool {
    OWN_KEYS.contains(&key)
        || super::flags::takes_value(key).is_some()
        || !matches!(
            super::options::lookup(key),
            super::options::Lookup::Unknown(_)
        )
}

/// `-key[=value]` as `--key[=value]` when `key` is a long option fio or iolab
/// knows (getopt_long_only's rule); anything else is kept as written, so a job
/// file named `-x`, a lone `-` and unknown names still get their own errors.
pub(crate) fn long_form(arg: &str) -> String {
    let Some(rest) = arg.strip_prefix('-') else {
        return arg.to_string();
    };
    if rest.starts_with('-') || rest.len() < 2 {
        return arg.to_string();
    }
    let key = rest.split('=').next().unwrap_or(rest);
    if is_known(key) {
        format!("-{arg}")
    } else {
        arg.to_string()
    }
}

fn bad(key: &str, value: &str, expected: &str) -> JobError {
    JobError::BadValue {
        at: COMMAND_LINE.to_string(),
        option: key.to_string(),
        value: value.to_string(),
        expected: expected.to_string(),
    }
}

fn required(key: &str, value: Option<String>, expected: &str) -> Result<String, JobError> {
    match value {
        Some(v) if !v.is_empty() => Ok(v),
        _ => Err(JobError::MissingValue {
            at: COMMAND_LINE.to_string(),
            option: key.to_string(),
            expected: expected.to_string(),
        }),
    }
}

fn parse_output_format(value: Option<&str>) -> Result<OutputFormats, JobError> {
    const EXPECTED: &str =
        "normal, json, json+ or terse, or a comma list of them (e.g. normal,json)";
    let v = required("output-format", value.map(str::to_string), EXPECTED)?;
    let mut set = OutputFormats::default();
    for part in v.split(',') {
        let f = match part.trim() {
            "normal" => OutputFormat::Normal,
            "json" => OutputFormat::Json,
            "json+" => OutputFormat::JsonPlus,
            // fio's other names for its semicolon format.
            "terse" | "minimal" | "csv" => OutputFormat::Terse,
            other => {
                let why = if other.is_empty() {
                    format!("{EXPECTED}; the list has an empty entry")
                } else {
                    EXPECTED.to_string()
                };
                return Err(JobError::BadValue {
                    at: COMMAND_LINE.to_string(),
                    option: "output-format".into(),
                    value: v.clone(),
                    expected: why,
                });
            }
        };
        set.add(f);
    }
    Ok(set)
}
