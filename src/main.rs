//! iolab command line: parse arguments and dispatch to the library.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "iolab",
    version,
    about = "The low-latency storage I/O path, measured"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run fio-compatible jobs (job files and/or --key=value options).
    Run(iolab::engine::cli::RunArgs),
    /// Reproduce the studies on this machine; write an HTML report and results.json.
    Lab(iolab::lab::cli::LabArgs),
    /// What a device or file supports, and which completion model pays there (measured).
    Probe(iolab::probe::cli::ProbeArgs),
    /// Render saved lab results (results.json) as an HTML report.
    Report(iolab::report::cli::ReportArgs),
    /// Print CPUs, cores and SMT siblings as iolab sees them.
    Topology(iolab::placement::cli::TopologyArgs),
    /// Count system calls, context switches and interrupts of a process or command.
    Observe(iolab::observe::cli::ObserveArgs),
    /// Is NEW faster than BASE? Run results (iolab's or fio's JSON) compared with statistics; CI gate.
    Compare(Box<iolab::compare::cli::CompareArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    quiet_broken_pipe_panics();
    // Choose the engine clock before anything takes a timestamp. observe times
    // nothing per request: it skips the ~20 ms TSC calibration (CLOCK_MONOTONIC).
    if !matches!(cli.cmd, Cmd::Observe(_)) {
        iolab::measure::clock::init();
    }
    // Unwinding (not exiting) on a closed stdout lets every cleanup guard run:
    // `iolab lab | head -1` must still remove its zram and loop devices.
    let result = std::panic::catch_unwind(move || match cli.cmd {
        Cmd::Run(a) => iolab::engine::cli::main(a),
        Cmd::Lab(a) => iolab::lab::cli::main(a),
        Cmd::Probe(a) => iolab::probe::cli::main(a),
        Cmd::Report(a) => iolab::report::cli::main(a),
        Cmd::Topology(a) => iolab::placement::cli::main(a),
        Cmd::Observe(a) => iolab::observe::cli::main(a),
        Cmd::Compare(a) => iolab::compare::cli::main(*a),
    });
    let result = match result {
        Ok(r) => r,
        Err(p) if panic_is_broken_pipe(p.as_ref()) => return ExitCode::from(SIGPIPE_STATUS),
        Err(p) => std::panic::resume_unwind(p),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) if error_is_broken_pipe(&e) => ExitCode::from(SIGPIPE_STATUS),
        Err(e) => {
            eprintln!("iolab: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

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
