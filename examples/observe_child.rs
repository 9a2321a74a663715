//! Count the system calls of a child process: `iolab observe -- CMD` through
//! the front door. Runs `ls /` unless a command is given.
//!
//! ```text
//! sudo target/release/examples/observe_child [CMD ARGS...]
//! ```
//!
//! Counting needs root (eBPF or tracefs); without it the example says so and
//! exits 0 with a SKIPPED line.

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut cmd: Vec<String> = std::env::args().skip(1).collect();
    if cmd.is_empty() {
        cmd = vec!["ls".into(), "/".into()];
    }
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        println!(
            "SKIPPED: observe_child: counting system calls needs root (eBPF or tracefs); \
             run it as root, e.g. sudo target/release/examples/observe_child"
        );
        return ExitCode::SUCCESS;
    }
    match iolab::observe_command(&cmd, None) {
        Ok(seen) => {
            let r = &seen.report;
            println!(
                "`{}` exited {}: {} system calls ({} backend), {} voluntary and {} involuntary context switches",
                cmd.join(" "),
                seen.exit_status,
                r.syscalls_total,
                r.backend,
                r.tasks.voluntary,
                r.tasks.involuntary
            );
            for s in &r.syscalls {
                println!("{:>10} {}", s.calls, s.name);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("observe_child: {e}");
            ExitCode::FAILURE
        }
    }
}
