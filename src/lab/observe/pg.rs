//! The PostgreSQL side of study 004: finding the install and the `postgres` user,
//! making a cluster and running the server as that user (inside the study's
//! cgroup), loading pgbench's tables, and reading pgbench's summary.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

use super::bench::BenchOut;
use super::cgroup::ServerCgroup;
use super::cmd::run_cmd;
use super::runas::{as_user, user_ids};
use super::server::{ServerProcess, StopWith};

/// SIGQUIT = immediate shutdown: no shutdown checkpoint through a throttled
/// device; the cluster is thrown away anyway.
const STOP: StopWith = StopWith {
    program: "postgres",
    signal: libc::SIGQUIT,
    signal_name: "SIGQUIT",
};

/// The PostgreSQL installation and the user it runs as.
#[derive(Clone, Debug)]
pub(super) struct PgInstall {
    pub(super) bindir: PathBuf,
    pub(super) pgbench: PathBuf,
    pub(super) version: String,
    pub(super) uid: u32,
    pub(super) gid: u32,
}

/// Newest `/usr/lib/postgresql/N/bin` with initdb, postgres, psql and pgbench.
pub(super) fn find_postgres() -> Result<PgInstall> {
    let root = Path::new("/usr/lib/postgresql");
    let mut found: Vec<(u32, PathBuf)> = fs::read_dir(root)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let v: u32 = e.file_name().to_str()?.parse().ok()?;
                    let bin = e.path().join("bin");
                    ["initdb", "postgres", "psql"]
                        .iter()
                        .all(|b| bin.join(b).is_file())
                        .then_some((v, bin))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    let Some((v, bindir)) = found.pop() else {
        bail!(
            "install postgresql: PostgreSQL not found (no {}/N/bin with initdb, postgres \
             and psql; Debian/Ubuntu: apt-get install postgresql postgresql-contrib)",
            root.display()
        );
    };
    let pgbench = [bindir.join("pgbench"), PathBuf::from("/usr/bin/pgbench")]
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| {
            anyhow!(
                "install postgresql-contrib: pgbench not found in {} or /usr/bin",
                bindir.display()
            )
        })?;
    let (uid, gid) = user_ids("postgres", "the Debian package postgresql")?;
    Ok(PgInstall {
        bindir,
        pgbench,
        version: v.to_string(),
        uid,
        gid,
    })
}

/// A command that runs as the postgres user, optionally inside the cgroup.
pub(super) fn pg_command(
    pg: &PgInstall,
    prog: &Path,
    cwd: &Path,
    cg: Option<&ServerCgroup>,
) -> Command {
    let mut c = as_user(prog, cwd, cg, pg.uid, pg.gid);
    c.env_remove("PGDATA");
    c
}

/// Make a cluster in `dir` (owned by postgres), start the server on it with its
/// socket there, load pgbench's tables of `scale` and checkpoint, so the
/// measured runs start with no load backlog.
pub(super) fn setup(
    pg: &PgInstall,
    dir: &Path,
    log: &Path,
    cg: Option<&ServerCgroup>,
    scale: u32,
) -> Result<Server> {
    run_cmd(
        pg_command(pg, &pg.bindir.join("initdb"), dir, None)
            .arg("-D")
            .arg(dir.join("data"))
            .args([
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ]),
        "initdb",
    )?;
    let srv = Server::start(pg, dir, log, cg)?;
    run_cmd(
        Command::new(&pg.pgbench)
            .args(srv.conn_args())
            .args(["-i", "-q", "-s", &scale.to_string()])
            .arg("postgres")
            .env("LC_ALL", "C"),
        "pgbench -i",
    )?;
    run_cmd(
        Command::new(pg.bindir.join("psql"))
            .args(srv.conn_args())
            .args(["-X", "-q", "-d", "postgres", "-c", "CHECKPOINT"])
            .env("LC_ALL", "C"),
        "psql CHECKPOINT",
    )?;
    Ok(srv)
}

/// pgbench's TPC-B-like run for `secs` with `clients` clients on 2 threads.
pub(super) fn pgbench_command(pg: &PgInstall, srv: &Server, clients: u32, secs: u32) -> Command {
    let mut c = Command::new(&pg.pgbench);
    c.args(srv.conn_args())
        .args([
            "-n",
            "-c",
            &clients.to_string(),
            "-j",
            "2",
            "-T",
            &secs.to_string(),
        ])
        .arg("postgres");
    c
}

/// A running postmaster; shut down (immediate mode) when dropped.
pub(super) struct Server {
    pub(super) process: ServerProcess,
    sock: PathBuf,
}

impl Server {
    fn start(pg: &PgInstall, dir: &Path, log: &Path, cg: Option<&ServerCgroup>) -> Result<Server> {
        let data = dir.join("data");
        let logf = fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let child = pg_command(pg, &pg.bindir.join("postgres"), dir, cg)
            .arg("-D")
            .arg(&data)
            .args([
                "-c",
                "listen_addresses=",
                "-c",
                "port=5432",
                "-c",
                "fsync=on",
                "-c",
                "synchronous_commit=on",
                // Small, so pages leave the server for the kernel and the device.
                "-c",
                "shared_buffers=16MB",
                "-c",
                "max_connections=40",
                // No background vacuum or timed checkpoint inside a measured run.
                "-c",
                "autovacuum=off",
                "-c",
                "checkpoint_timeout=1h",
                "-c",
                "max_wal_size=2GB",
            ])
            .arg("-c")
            .arg(format!("unix_socket_directories={}", dir.display()))
            .stdout(Stdio::null())
            .stderr(logf)
            .spawn()
            .context("starting postgres")?;
        let mut s = Server {
            process: ServerProcess::adopt(child, log, STOP),
            sock: dir.to_path_buf(),
        };
        s.wait_ready(&data.join("postmaster.pid"))?;
        Ok(s)
    }

    /// postmaster.pid's 8th line turns "ready" when connections are accepted.
    fn wait_ready(&mut self, pidfile: &Path) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(st) = self.process.exited()? {
                bail!(
                    "postgres exited during startup ({st}): {}",
                    self.process.log_tail()
                );
            }
            if fs::read_to_string(pidfile)
                .ok()
                .and_then(|s| s.lines().nth(7).map(|l| l.trim() == "ready"))
                .unwrap_or(false)
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!("postgres not ready after 30 s: {}", self.process.log_tail());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(super) fn conn_args(&self) -> Vec<String> {
        vec![
            "-h".into(),
            self.sock.display().to_string(),
            "-p".into(),
            "5432".into(),
            "-U".into(),
            "postgres".into(),
        ]
    }
}

/// Parse pgbench's summary (PostgreSQL 10-17 wording).
pub fn parse_pgbench(out: &str) -> Result<BenchOut> {
    let after = |key: &str| -> Option<&str> {
        out.lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .map(str::trim)
    };
    let first_num = |s: &str| -> Option<f64> { s.split_whitespace().next()?.parse().ok() };
    let tps = after("tps =")
        .and_then(first_num)
        .ok_or_else(|| anyhow!("pgbench output has no 'tps = N' line: {}", out.trim()))?;
    let latency_ms = after("latency average =")
        .and_then(first_num)
        .ok_or_else(|| anyhow!("pgbench output has no 'latency average = N ms' line"))?;
    let transactions = after("number of transactions actually processed:")
        .and_then(|s| s.split(['/', ' ']).next()?.parse().ok())
        .ok_or_else(|| {
            anyhow!("pgbench output has no 'number of transactions actually processed' line")
        })?;
    let failed = after("number of failed transactions:")
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

    const PG15: &str = "pgbench (15.8 (Debian 15.8-0+deb12u1))
transaction type: <builtin: TPC-B (sort of)>
scaling factor: 1
query mode: simple
number of clients: 16
number of threads: 2
maximum number of tries: 1
duration: 4 s
number of transactions actually processed: 5123
number of failed transactions: 0 (0.000%)
latency average = 12.345 ms
initial connection time = 20.5 ms
tps = 1296.1234 (without initial connection time)
";

    #[test]
    fn parses_pgbench_summary() {
        let p = parse_pgbench(PG15).unwrap();
        assert_eq!(p.transactions, 5123);
        assert_eq!(p.failed, 0);
        assert!((p.tps - 1296.1234).abs() < 1e-9);
        assert!((p.latency_ms - 12.345).abs() < 1e-9);
    }

    #[test]
    fn pgbench_without_tps_is_an_error_naming_the_line() {
        let e = parse_pgbench("number of transactions actually processed: 3\n").unwrap_err();
        assert!(e.to_string().contains("tps = N"), "{e}");
    }

    #[test]
    fn pgbench_count_with_limit_suffix() {
        // With -t, pgbench prints "N/M".
        let s = PG15.replace("processed: 5123", "processed: 160/160");
        assert_eq!(parse_pgbench(&s).unwrap().transactions, 160);
    }
}
