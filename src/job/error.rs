//! Errors of the option language. Every one says where (`file:line` or
//! `command line`), what (option, value) and what would have been valid.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JobError {
    #[error("{at}: option '{option}': bad value '{value}': expected {expected}")]
    BadValue {
        at: String,
        option: String,
        value: String,
        expected: String,
    },
    #[error("{at}: option '{option}' needs a value: expected {expected}")]
    MissingValue {
        at: String,
        option: String,
        expected: String,
    },
    #[error("{at}: unknown option '{option}'{}", suggestion_text(.suggestion))]
    UnknownOption {
        at: String,
        option: String,
        suggestion: Option<String>,
    },
    #[error("{at}: option '{option}' is ambiguous: it begins {candidates}; write more of the name")]
    AmbiguousOption {
        at: String,
        option: String,
        candidates: String,
    },
    #[error("{at}: fio option '{option}' is not supported by iolab: {reason}")]
    Unsupported {
        at: String,
        option: String,
        reason: String,
    },
    #[error("{at}: option '{option}' is not valid here: {reason}")]
    WrongPlace {
        at: String,
        option: String,
        reason: String,
    },
    #[error(
        "{at}: '{text}' is outside any section: put options under [global] or a [jobname] header"
    )]
    OutsideSection { at: String, text: String },
    #[error("{at}: bad section header '{text}': {problem}")]
    BadSection {
        at: String,
        text: String,
        problem: String,
    },
    #[error("{at}: job '{job}': {problem}")]
    Conflict {
        at: String,
        job: String,
        problem: String,
    },
    #[error("{at}: cannot read job file '{}': {reason}; name a job file that exists and can be read", .path.display())]
    Read {
        at: String,
        path: PathBuf,
        reason: String,
    },
    /// `--warnings-fatal`: the first warning, as an error.
    #[error("{warning} (--warnings-fatal makes every parser warning an error)")]
    Fatal { at: String, warning: String },
    #[error(
        "{at}: no jobs defined: add a [jobname] section to a job file or --name=NAME on the command line"
    )]
    NoJobs { at: String },
}

fn suggestion_text(s: &Option<String>) -> String {
    match s {
        Some(s) => format!("; did you mean '{s}'?"),
        None => String::new(),
    }
}

/// Where the command line is, in messages.
pub const COMMAND_LINE: &str = "command line";
