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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Choose the engine clock before anything takes a timestamp. observe times
    // nothing per request: it skips the ~20 ms TSC calibration (CLOCK_MONOTONIC).
    if !matches!(cli.cmd, Cmd::Observe(_)) {
        iolab::measure::clock::init();
    }
    let result = match cli.cmd {
        Cmd::Run(a) => iolab::engine::cli::main(a),
        Cmd::Lab(a) => iolab::lab::cli::main(a),
        Cmd::Probe(a) => iolab::probe::cli::main(a),
        Cmd::Report(a) => iolab::report::cli::main(a),
        Cmd::Topology(a) => iolab::placement::cli::main(a),
        Cmd::Observe(a) => iolab::observe::cli::main(a),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("iolab: error: {e:#}");
            ExitCode::from(1)
        }
    }
}
