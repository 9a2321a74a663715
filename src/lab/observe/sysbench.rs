//! sysbench `oltp_read_write` against the study's MariaDB: its command lines
//! (prepare, run) and its summary, in the terms pgbench's is read in.

use std::path::Path;
use std::process::Command;

use anyhow::{Result, anyhow};

use super::bench::BenchOut;

/// The database sysbench's table lives in.
pub(super) const DB: &str = "sbtest";
/// sysbench's own workload: 10 point selects, 4 range selects, 2 updates, a
/// delete and an insert per transaction (BEGIN ... COMMIT).
pub(super) const TEST: &str = "oltp_read_write";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Create and fill the table.
    Prepare,
    /// Run for this many seconds with this many threads.
    Run { secs: u32, threads: u32 },
}

/// sysbench over the socket as root (the server's unix_socket login), one table
/// of `rows` rows.
pub(super) fn command(sysbench: &Path, sock: &Path, rows: u32, phase: Phase) -> Command {
    let mut c = Command::new(sysbench);
    c.arg(TEST)
        .args(["--db-driver=mysql", "--mysql-user=root"])
        .arg(format!("--mysql-socket={}", sock.display()))
        .arg(format!("--mysql-db={DB}"))
        .args(["--tables=1", &format!("--table-size={rows}")])
        .env("LC_ALL", "C");
    match phase {
        Phase::Prepare => {
            c.arg("prepare");
        }
        Phase::Run { secs, threads } => {
            c.args([
                format!("--threads={threads}"),
                format!("--time={secs}"),
                // Time-bounded only, and no interim reports.
                "--events=0".into(),
                "--report-interval=0".into(),
                "run".into(),
            ]);
        }
    }
    c
}

/// Parse sysbench 1.0's summary of a run.
pub fn parse_sysbench(out: &str) -> Result<BenchOut> {
    let after = |key: &str| -> Option<&str> {
        out.lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .map(str::trim)
    };
    // "transactions:   1587   (391.89 per sec.)"
    let trx = after("transactions:").ok_or_else(|| {
        anyhow!(
            "sysbench output has no 'transactions: N (R per sec.)' line: {}",
            out.trim()
        )
    })?;
    let transactions: u64 = trx
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("sysbench 'transactions:' line has no count: {trx:?}"))?;
    let tps: f64 = trx
        .split_once('(')
        .and_then(|(_, r)| r.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| anyhow!("sysbench 'transactions:' line has no '(R per sec.)': {trx:?}"))?;
    // The "avg:" under "Latency (ms):".
    let latency_ms = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("Latency (ms):"))
        .find_map(|l| l.trim().strip_prefix("avg:"))
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| anyhow!("sysbench output has no 'avg:' line under 'Latency (ms):'"))?;
    let failed = after("ignored errors:")
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    Ok(BenchOut {
        tps,
        latency_ms,
        transactions,
        failed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// sysbench 1.0.20 against MariaDB 10.11 on this machine.
    const RUN: &str = "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

Running the test with following options:
Number of threads: 16
Initializing random number generator from current time


Initializing worker threads...

Threads started!

SQL statistics:
    queries performed:
        read:                            22232
        write:                           6349
        other:                           3175
        total:                           31756
    transactions:                        1587   (391.89 per sec.)
    queries:                             31756  (7841.77 per sec.)
    ignored errors:                      1      (0.25 per sec.)
    reconnects:                          0      (0.00 per sec.)

General statistics:
    total time:                          4.0489s
    total number of events:              1587

Latency (ms):
         min:                                    2.57
         avg:                                   40.46
         max:                                  185.56
         95th percentile:                       82.96
         sum:                                64211.18

Threads fairness:
    events (avg/stddev):           99.1875/4.07
    execution time (avg/stddev):   4.0132/0.01
";

    #[test]
    fn parses_sysbench_summary() {
        let b = parse_sysbench(RUN).unwrap();
        assert_eq!(b.transactions, 1587);
        assert_eq!(b.failed, 1);
        assert!((b.tps - 391.89).abs() < 1e-9);
        assert!((b.latency_ms - 40.46).abs() < 1e-9);
    }

    #[test]
    fn sysbench_without_transactions_is_an_error_naming_the_line() {
        let e = parse_sysbench("FATAL: unable to connect\n").unwrap_err();
        assert!(e.to_string().contains("transactions: N"), "{e}");
    }

    #[test]
    fn sysbench_latency_must_be_the_latency_sections_avg() {
        // "events (avg/stddev)" must not be taken for the latency.
        let s = RUN.replace("avg:                                   40.46", "mean: 1");
        let e = parse_sysbench(&s).unwrap_err();
        assert!(e.to_string().contains("Latency (ms)"), "{e}");
    }

    #[test]
    fn run_command_is_time_bounded_with_the_asked_threads() {
        let c = command(
            Path::new("/usr/bin/sysbench"),
            Path::new("/x/mysqld.sock"),
            10_000,
            Phase::Run {
                secs: 4,
                threads: 16,
            },
        );
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        for want in [
            "oltp_read_write",
            "--mysql-socket=/x/mysqld.sock",
            "--threads=16",
            "--time=4",
            "--table-size=10000",
            "run",
        ] {
            assert!(args.iter().any(|a| a == want), "{want} missing: {args:?}");
        }
    }
}
