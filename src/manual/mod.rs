//! `iolab man` and `iolab completions`: the manual of the command line,
//! generated from its clap definition (clap_mangen, clap_complete) and, for
//! `iolab run`'s job options, from the option table (`job::table`). The Debian
//! package ships what these print (packaging/build-deb.sh runs them on the
//! binary it packages), so the pages cannot drift from the code.
//!
//! The environment variables and exit statuses are listed here once: `iolab
//! --help`'s footer, iolab(1) and docs/install.md say the same.

pub mod cli;
pub mod man;

/// One environment variable iolab reads.
pub struct EnvVar {
    /// As written in the help: the name, and a value where only one means something.
    pub name: &'static str,
    pub meaning: &'static str,
}

/// Every environment variable iolab reads (a test holds this list to the
/// code's `env::var` calls).
pub const ENVIRONMENT: &[EnvVar] = &[
    EnvVar {
        name: "IOLAB_CLOCK=monotonic",
        meaning: "time with CLOCK_MONOTONIC instead of the TSC (the default where the TSC is \
                  trustworthy)",
    },
    EnvVar {
        name: "IOLAB_QD1_PATH=0",
        meaning: "run depth-1 null-device jobs through the general worker loop instead of its \
                  QD1 path (to compare the two)",
    },
    EnvVar {
        name: "IOLAB_TMPDIR=DIR",
        meaning: "where `iolab lab poll` lays out its temp file (default /var/tmp; a filesystem \
                  that takes O_DIRECT)",
    },
    EnvVar {
        name: "PATH",
        meaning: "where `iolab observe -- CMD` looks for CMD",
    },
    EnvVar {
        name: "${NAME} in job files",
        meaning: "replaced by the variable's value, as fio does",
    },
];

/// One exit status.
pub struct ExitStatus {
    pub code: &'static str,
    pub meaning: &'static str,
}

/// What iolab's exit status means (main.rs makes it so).
pub const EXIT_STATUS: &[ExitStatus] = &[
    ExitStatus {
        code: "0",
        meaning: "success",
    },
    ExitStatus {
        code: "1",
        meaning: "a job failed (an I/O error, a verification mismatch: corruption), or an error \
                  stopped the command (a bad job option or job file, as in fio; a missing \
                  target; no study could run); `iolab compare`: a --fail-if rule was crossed",
    },
    ExitStatus {
        code: "2",
        meaning: "the command line does not parse (an unknown command or flag, a missing \
                  value; `iolab run` without arguments); `iolab compare`: bad input",
    },
    ExitStatus {
        code: "3",
        meaning: "`iolab compare` only: inconclusive: something a --fail-if rule covers could \
                  not be judged (a job not compared or on one side only, too few rounds, an \
                  interval reaching past the threshold), or without rules a job was not \
                  compared; --allow-inconclusive makes it 0",
    },
    ExitStatus {
        code: "130",
        meaning: "interrupted (Ctrl-C or SIGTERM): what was measured so far is reported; a \
                  second signal stops at once (128 + the signal) after undoing what iolab \
                  changed on the machine",
    },
    ExitStatus {
        code: "141",
        meaning: "stdout was closed early (`iolab ... | head`): iolab stops quietly, as a \
                  command killed by SIGPIPE",
    },
    ExitStatus {
        code: "observe",
        meaning: "`iolab observe -- CMD` exits with CMD's status (128 + N if a signal N \
                  killed it)",
    },
];

/// `iolab --help`'s footer: the environment and the exit statuses, each
/// meaning wrapped under itself to fit 80 columns.
pub fn help_footer() -> String {
    let mut s = String::from("Environment:\n");
    let w = ENVIRONMENT.iter().map(|e| e.name.len()).max().unwrap_or(0);
    for e in ENVIRONMENT {
        s += &hanging(e.name, w, e.meaning);
    }
    s += "\nExit status:\n";
    let w = EXIT_STATUS.iter().map(|e| e.code.len()).max().unwrap_or(0);
    for e in EXIT_STATUS {
        s += &hanging(e.code, w, e.meaning);
    }
    s += "\nEach command's options: iolab help COMMAND, man iolab-COMMAND.";
    s
}

/// `  term  meaning...` with the meaning's further lines indented under it.
fn hanging(term: &str, width: usize, meaning: &str) -> String {
    const COLUMNS: usize = 80;
    let indent = 2 + width + 2;
    let mut out = format!("  {term:<width$}  ");
    let mut col = indent;
    for (i, word) in meaning.split_whitespace().enumerate() {
        if i > 0 && col + 1 + word.len() > COLUMNS {
            out += &format!("\n{:indent$}", "");
            col = indent;
        } else if i > 0 {
            out.push(' ');
            col += 1;
        }
        out += word;
        col += word.len();
    }
    out.push('\n');
    out
}

/// The constants above are wrapped in the source; the help is not.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footer_lists_every_variable_and_status_within_80_columns() {
        let f = help_footer();
        for e in ENVIRONMENT {
            let lines = f.lines().filter(|l| l.trim_start().starts_with(e.name));
            assert_eq!(lines.count(), 1, "{f}");
        }
        for e in EXIT_STATUS {
            assert!(f.lines().any(|l| l.trim_start().starts_with(e.code)), "{f}");
        }
        for l in f.lines() {
            assert!(l.len() <= 80 && !l.ends_with(' '), "{l:?}");
        }
    }
}
