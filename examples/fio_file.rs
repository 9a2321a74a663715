//! Run the fio job file named on the command line and print each job's
//! figures: what `iolab run FILE` measures, read back as typed values.
//!
//! ```text
//! cargo run --release --example fio_file -- docs/examples/poll-vs-interrupt.fio
//! ```
//!
//! Further arguments are fio's run-wide flags, e.g. `--max-runtime=1s`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprintln!("usage: fio_file JOBFILE [--max-runtime=TIME ...]");
        return ExitCode::from(2);
    }
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fio_file: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<(), iolab::Error> {
    let jobs = iolab::Jobs::from_args(args)?;
    for w in jobs.warnings() {
        eprintln!("warning: {w}");
    }
    println!(
        "{}: {} job(s): {}",
        args[0],
        jobs.names().len(),
        jobs.names().join(", ")
    );
    let run = jobs.run()?;
    for job in &run.jobs {
        let s = iolab::Summary::of(job);
        println!(
            "{}: {} I/Os, {:.0} IOPS, p50 {} ns, p99 {} ns, CPU {:.0} ns per I/O",
            job.jobname, s.ios, s.iops, s.p50_ns, s.p99_ns, s.cpu_ns_per_io
        );
    }
    Ok(())
}
