//! The `iolab` command line: its clap definition, dispatch to each command's
//! room (`<room>::cli`), and the exit-status policy. `src/main.rs` calls
//! [`main`] through the crate root's hidden `command_line` entry; nothing here
//! is part of the library's API.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "iolab",
    version,
    about = "The low-latency storage I/O path, measured",
    long_about = "The low-latency storage I/O path, measured. iolab runs fio-compatible I/O \
jobs through a user-space I/O stack in which every stage can be chosen (the device backend, \
the completion model, the host scheduler, where threads run) and measures where every \
microsecond and CPU cycle goes; it reproduces five published storage studies on the machine \
it runs on (iolab lab), says which completion model pays on a device (iolab probe) and counts \
what a process asks of the kernel (iolab observe).",
    after_help = crate::manual::help_footer()
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    // run, probe, observe, completions and man: the about and long help
    // are their Args' own (a doc comment here would replace them).
    Run(crate::engine::cli::RunArgs),
    /// Reproduce the studies on this machine; write an HTML report and results.json.
    Lab(crate::lab::cli::LabArgs),
    Probe(crate::probe::cli::ProbeArgs),
    /// Render saved lab results (results.json) as an HTML report.
    Report(crate::report::cli::ReportArgs),
    /// Print CPUs, cores and SMT siblings as iolab sees them.
    Topology(crate::placement::cli::TopologyArgs),
    Observe(crate::observe::cli::ObserveArgs),
    /// Is NEW faster than BASE? Run results (iolab's or fio's JSON) compared with statistics; CI gate.
    Compare(Box<crate::compare::cli::CompareArgs>),
    Completions(crate::manual::cli::CompletionsArgs),
    Man(crate::manual::cli::ManArgs),
}

/// Parse `std::env::args_os`, run the command, and return its exit status.
pub fn main() -> ExitCode {
    // Usage errors go to stderr with status 2 (clap's convention).
    let cli = Cli::parse_from(crate::engine::cli::own_flags_first(
        &Cli::command(),
        std::env::args_os().collect(),
    ));
    quiet_broken_pipe_panics();
    // Choose the engine clock before anything takes a timestamp. observe times
    // nothing per request: it skips the ~20 ms TSC calibration (CLOCK_MONOTONIC),
    // as do the commands that only print the manual.
    if !matches!(cli.cmd, Cmd::Observe(_) | Cmd::Completions(_) | Cmd::Man(_)) {
        crate::measure::clock::init();
    }
    // observe's status is the observed command's; Ctrl-C is how a watch of
    // --pid ends, not a failure.
    let own_status = !matches!(cli.cmd, Cmd::Observe(_));
    // Unwinding (not exiting) on a closed stdout lets every cleanup guard run:
    // `iolab lab | head -1` must still remove its zram and loop devices.
    let result = std::panic::catch_unwind(move || match cli.cmd {
        Cmd::Run(a) => crate::engine::cli::main(a),
        Cmd::Lab(a) => crate::lab::cli::main(a),
        Cmd::Probe(a) => crate::probe::cli::main(a),
        Cmd::Report(a) => crate::report::cli::main(a),
        Cmd::Topology(a) => crate::placement::cli::main(a),
        Cmd::Observe(a) => crate::observe::cli::main(a),
        Cmd::Compare(a) => crate::compare::cli::main(*a),
        Cmd::Completions(a) => crate::manual::cli::completions(a, Cli::command()),
        Cmd::Man(a) => crate::manual::cli::man(a, Cli::command()),
    });
    let result = match result {
        Ok(r) => r,
        Err(p) if panic_is_broken_pipe(p.as_ref()) => return ExitCode::from(SIGPIPE_STATUS),
        Err(p) => std::panic::resume_unwind(p),
    };
    // A command the user interrupted (first SIGINT/SIGTERM) reports what it
    // has and exits 130, whether it then finished or stopped with an error.
    let interrupted = own_status && crate::sys::cleanup::stop_requested();
    match result {
        Ok(_) if interrupted => ExitCode::from(INTERRUPTED_STATUS),
        Ok(code) => ExitCode::from(code),
        Err(e) if error_is_broken_pipe(&e) => ExitCode::from(SIGPIPE_STATUS),
        Err(e) => {
            eprintln!("iolab: error: {e:#}");
            ExitCode::from(if interrupted { INTERRUPTED_STATUS } else { 1 })
        }
    }
}

/// What a shell reports for a command stopped by Ctrl-C (128 + SIGINT).
const INTERRUPTED_STATUS: u8 = 128 + 2;

/// What a shell reports for a tool killed by SIGPIPE (128 + 13). Rust ignores
/// SIGPIPE, so a reader that goes away (`iolab topology | head -1`) shows up as
/// a write error instead; iolab then stops quietly with the status the reader's
/// shell would expect, as `cat` or `seq` do.
const SIGPIPE_STATUS: u8 = 128 + 13;

fn error_is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// `println!` panics when stdout is a closed pipe; its message names the cause.
fn panic_is_broken_pipe(payload: &(dyn std::any::Any + Send)) -> bool {
    let msg = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("");
    msg.starts_with("failed printing to std") && msg.contains("Broken pipe")
}

/// Keep the default panic message for real bugs, but say nothing when the only
/// trouble is that the reader of stdout left.
fn quiet_broken_pipe_panics() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !panic_is_broken_pipe(info.payload()) {
            default_hook(info);
        }
    }));
}
