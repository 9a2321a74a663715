//! The command line's conventions (iolab(1)): one generated help per command
//! (`iolab help run` is `iolab run --help`, and lists every run-wide flag);
//! usage errors on stderr with status 2; iolab's run flags anywhere among
//! fio's options; every environment variable the code reads listed in `iolab
//! --help` and docs/install.md.

use std::path::Path;
use std::process::{Command, Output};

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

fn iolab(args: &[&str]) -> Output {
    Command::new(IOLAB).args(args).output().expect("run iolab")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn run_has_one_generated_help_listing_every_run_wide_flag() {
    let help = iolab(&["run", "--help"]);
    assert!(help.status.success());
    assert_eq!(
        help.stdout,
        iolab(&["help", "run"]).stdout,
        "iolab help run"
    );
    let h = text(&help.stdout);
    for flag in [
        "--output-format",
        "--output ",
        "--status-interval",
        "--section",
        "--parse-only",
        "--cmdhelp",
        "--max-runtime",
        "--max-size",
        "--scratch-dir",
        "--allow-destructive",
        "--report",
        "--trace ",
        "--trace-sample",
        "--notes",
    ] {
        assert!(h.contains(flag), "iolab run --help lacks {flag}:\n{h}");
    }
    // fio's options are pointed at, not listed.
    let words = h.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("`iolab run --cmdhelp` lists them"), "{h}");
    // -h anywhere among fio's options is the same help.
    let late = iolab(&["run", "--name=t", "--rw=read", "-h"]);
    assert!(late.status.success());
    assert!(text(&late.stdout).contains("--max-runtime"));
}

/// A note on an option iolab runs otherwise than fio (here `disable_slat`) is
/// in the JSON's `iolab.notes`; on stderr only for a terminal or with
/// `--notes` (fio prints nothing there, and scripts written for it, fio's own
/// test suite among them, take any stderr as a failure).
#[test]
fn option_notes_go_to_the_json_and_to_stderr_only_when_asked_off_a_terminal() {
    let job = [
        "run",
        "--name=t",
        "--ioengine=null",
        "--rw=read",
        "--size=64k",
        "--disable_slat",
        "--output-format=json",
    ];
    let quiet = iolab(&job);
    assert!(quiet.status.success(), "{}", text(&quiet.stderr));
    assert_eq!(text(&quiet.stderr), "", "stderr is a pipe here: no note");
    let v: serde_json::Value = serde_json::from_slice(&quiet.stdout).expect("JSON report");
    let note = v["iolab"]["notes"]["disable_slat"]
        .as_str()
        .unwrap_or_default();
    assert!(
        note.contains("records every latency"),
        "{}",
        v["iolab"]["notes"]
    );
    let mut asked = job.to_vec();
    asked.push("--notes");
    let loud = iolab(&asked);
    assert!(loud.status.success());
    let err = text(&loud.stderr);
    assert!(
        err.starts_with("iolab: note: command line: disable_slat is accepted, but ")
            && err.contains(note),
        "{err}"
    );
}

#[test]
fn usage_errors_go_to_stderr_with_status_2() {
    for args in [
        &["run"][..],
        &["run", "--name=t", "--report"],
        &["run", "--output-format", "--name=t"],
        &["no-such-command"],
        &["observe", "--interval"],
        &[],
    ] {
        let o = iolab(args);
        assert_eq!(o.status.code(), Some(2), "iolab {args:?}: {o:?}");
        assert!(o.stdout.is_empty(), "iolab {args:?} wrote to stdout");
        let err = text(&o.stderr);
        assert!(
            err.contains("Usage: iolab") || err.starts_with("error: "),
            "iolab {args:?}: {err}"
        );
    }
    let o = iolab(&["run", "--name=t", "--report"]);
    assert!(text(&o.stderr).contains("a value is required for '--report <DIR>'"));
    // A bad fio option is the job's error, as in fio: status 1.
    let o = iolab(&["run", "--name=t", "--bogus=1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("unknown option 'bogus'"));
}

#[test]
fn run_flags_may_stand_anywhere_among_fio_options() {
    let job = [
        "--name=t",
        "--ioengine=null",
        "--size=64k",
        "--bs=4k",
        "--rw=read",
    ];
    // A flag and its value as two arguments after the job's options.
    let mut args = vec!["run"];
    args.extend(job);
    args.extend(["--output-format", "json", "--max-size=16k"]);
    let o = iolab(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 16 << 10);
    // --parse-only last: nothing runs, nothing printed.
    let mut args = vec!["run"];
    args.extend(job);
    args.push("--parse-only");
    let o = iolab(&args);
    assert!(o.status.success() && o.stdout.is_empty(), "{o:?}");
    // --cmdhelp=OPTION after a job option.
    let o = iolab(&["run", "--name=t", "--cmdhelp=bs"]);
    assert!(text(&o.stdout).contains("alias     : blocksize"));
}

/// The names of the environment variables `src/` reads with `env::var` or
/// `env::var_os` and a literal name.
fn variables_read_by_the_code() -> Vec<String> {
    let mut names = Vec::new();
    let mut todo = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
                continue;
            }
            let src = std::fs::read_to_string(&p).unwrap();
            for call in ["env::var(\"", "env::var_os(\""] {
                for (i, _) in src.match_indices(call) {
                    let rest = &src[i + call.len()..];
                    let name = &rest[..rest.find('"').unwrap()];
                    if !names.iter().any(|n| n == name) {
                        names.push(name.to_string());
                    }
                }
            }
        }
    }
    names.sort();
    names
}

#[test]
fn every_environment_variable_read_is_in_the_help_and_the_docs() {
    let names = variables_read_by_the_code();
    for expected in ["IOLAB_CLOCK", "IOLAB_QD1_PATH", "IOLAB_TMPDIR"] {
        assert!(names.iter().any(|n| n == expected), "{names:?}");
    }
    let help = text(&iolab(&["--help"]).stdout);
    let footer = help
        .split_once("Environment:")
        .map(|(_, f)| f)
        .unwrap_or_else(|| panic!("no Environment: footer in iolab --help:\n{help}"));
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/install.md"))
            .unwrap();
    for n in &names {
        assert!(
            footer.contains(n.as_str()),
            "iolab --help lacks {n}:\n{help}"
        );
        assert!(docs.contains(&format!("`{n}")), "docs/install.md lacks {n}");
    }
    for code in ["0", "1", "2", "130", "141"] {
        assert!(
            footer.lines().any(|l| l.trim_start().starts_with(code)),
            "exit status {code} not in iolab --help"
        );
    }
}
