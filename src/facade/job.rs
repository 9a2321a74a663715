//! Jobs as fio writes them: a builder taking fio's option names, or fio job
//! text, a job file or an `iolab run` argument list. Every form goes through
//! the one option table (`job::table`) and the same parser as `iolab run`, so
//! a job means the same thing whichever way it was written.

use std::path::Path;

use crate::job::error::JobError;
use crate::job::ini::{Keywords, ParseCtx};
use crate::job::options::{Lookup, lookup};
use crate::job::plan::{self, RunPlan};
#[cfg(any(test, feature = "testing"))]
use crate::job::spec::JobSpec;

use super::error::{Error, Result};

/// One fio job, built option by option with fio's names.
///
/// Each [`option`](Job::option) is checked against iolab's option table at
/// once: an unknown name fails with the closest known one, a refused fio
/// option with the reason. Values are checked together, when the job is
/// turned into [`Jobs`] (or run), since fio's options constrain one another.
///
/// ```
/// let job = iolab::Job::new("reads")
///     .option("ioengine", "null")?
///     .option("rw", "randread")?
///     .option("bs", "4k")?
///     .option("size", "64m")?
///     .option("number_ios", "2000")?;
/// let run = job.run()?;
/// assert_eq!(run.jobs[0].read.total_ios, 2000);
/// # Ok::<(), iolab::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    name: String,
    options: Vec<(String, Option<String>)>,
}

impl Job {
    /// A job named `name` (fio's `--name=`), with fio's defaults for every option.
    pub fn new(name: impl Into<String>) -> Job {
        Job {
            name: name.into(),
            options: Vec::new(),
        }
    }

    /// The job's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Set fio option `key` (or one of its aliases) to `value`, as
    /// `--key=value` would on fio's command line.
    pub fn option(self, key: &str, value: impl ToString) -> Result<Job> {
        self.push(key, Some(value.to_string()))
    }

    /// Set an option that takes no value (fio's `time_based`, `group_reporting`).
    pub fn flag(self, key: &str) -> Result<Job> {
        self.push(key, None)
    }

    fn push(mut self, key: &str, value: Option<String>) -> Result<Job> {
        let at = format!("job '{}'", self.name);
        let key = key.trim();
        match lookup(key) {
            Lookup::Known(_) => {}
            Lookup::CommandLineOnly => {
                return Err(JobError::WrongPlace {
                    at,
                    option: key.to_string(),
                    reason: "it applies to the whole run: give it to Jobs::from_args".into(),
                }
                .into());
            }
            Lookup::Unsupported(why) => {
                return Err(JobError::Unsupported {
                    at,
                    option: key.to_string(),
                    reason: why.to_string(),
                }
                .into());
            }
            Lookup::Unknown(suggestion) => {
                return Err(JobError::UnknownOption {
                    at,
                    option: key.to_string(),
                    suggestion: suggestion.map(str::to_string),
                }
                .into());
            }
        }
        if key == "name" {
            return Err(Error::Usage(format!(
                "{at}: the name is Job::new's argument; start another job with Job::new"
            )));
        }
        self.options.push((key.to_string(), value));
        Ok(self)
    }

    /// The job as fio's command-line arguments (`--name=NAME`, `--key=value`...).
    pub fn to_args(&self) -> Vec<String> {
        std::iter::once(format!("--name={}", self.name))
            .chain(self.options.iter().map(|(k, v)| match v {
                Some(v) => format!("--{k}={v}"),
                None => format!("--{k}"),
            }))
            .collect()
    }

    /// Check every value and the options together: the job ready to run.
    pub fn into_jobs(self) -> Result<Jobs> {
        Jobs::from_args(&self.to_args())
    }

    /// Run this job alone with [`RunOptions::default`](super::RunOptions) and
    /// return what it measured.
    pub fn run(&self) -> Result<crate::report::model::RunResult> {
        self.clone().into_jobs()?.run()
    }
}

/// A set of checked jobs, in fio's run order (a job with `stonewall` waits for
/// the ones before it): what one fio job file or command line describes.
///
/// ```
/// let jobs = iolab::Jobs::parse(
///     "[global]\nioengine=null\nsize=16m\nbs=4k\n\n[a]\nrw=read\nnumber_ios=500\n",
/// )?;
/// assert_eq!(jobs.names(), ["a"]);
/// let run = jobs.run()?;
/// assert_eq!(run.jobs[0].read.total_ios, 500);
/// # Ok::<(), iolab::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Jobs {
    pub(super) plan: RunPlan,
}

/// `${VAR}` in job text reads the process environment, as fio does.
fn env(key: &str) -> Option<String> {
    std::env::var(key).ok()
}

impl Jobs {
    /// fio job-file text (`[global]`, `[job]` sections, `include`, `${VAR}`).
    /// Messages name lines as `job text:LINE`; relative includes resolve
    /// against the current directory.
    pub fn parse(text: &str) -> Result<Jobs> {
        Self::parse_named(text, "job text")
    }

    /// Like [`parse`](Jobs::parse), with `label` naming the text in messages
    /// (`label:LINE`) and anchoring relative includes.
    pub fn parse_named(text: &str, label: &str) -> Result<Jobs> {
        let read = |p: &Path| std::fs::read_to_string(p);
        let ctx = ParseCtx {
            env: &env,
            keywords: Keywords::from_system(),
            read_file: &read,
        };
        Ok(Jobs {
            plan: plan::parse_job_file_str(text, label, &ctx)?,
        })
    }

    /// A fio job file on disk.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Jobs> {
        Self::from_args(&[path.as_ref().display().to_string()])
    }

    /// `iolab run`'s (and fio's) argument list: job files and `--option=value`
    /// in fio's order, with fio's run-wide flags (`--section=`, `--max-runtime=`,
    /// `--readonly`...). Output flags (`--output-format=`, `--output=`) are
    /// accepted but the caller renders the result itself.
    pub fn from_args<S: AsRef<str>>(args: &[S]) -> Result<Jobs> {
        let args: Vec<String> = args.iter().map(|a| a.as_ref().to_string()).collect();
        Ok(Jobs {
            plan: plan::parse_run_args(&args, &env)?,
        })
    }

    /// The jobs' names, in run order.
    pub fn names(&self) -> Vec<&str> {
        self.plan.jobs.iter().map(|j| j.name.as_str()).collect()
    }

    /// Each job's typed options, in run order (an internal type: for iolab's
    /// own tests, which compare how two spellings of a job parse).
    #[cfg(any(test, feature = "testing"))]
    #[doc(hidden)]
    pub fn specs(&self) -> &[JobSpec] {
        &self.plan.jobs
    }

    /// What parsing noticed that is not an error (an unset `${VAR}`, an
    /// option accepted with a note), as `iolab run` prints them.
    pub fn warnings(&self) -> &[String] {
        &self.plan.warnings
    }
}

impl TryFrom<Job> for Jobs {
    type Error = Error;

    fn try_from(job: Job) -> Result<Jobs> {
        job.into_jobs()
    }
}
