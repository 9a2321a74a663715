//! The MariaDB side of study 004: the paper's MySQL family, a server of threads
//! that wait on mutexes and condition variables (futex). Finding the install
//! and the `mysql` user, making a data directory with `mariadb-install-db`,
//! running `mariadbd` as that user inside the study's cgroup with its own socket
//! and no network port, durable like the paper's (`innodb_flush_log_at_trx_commit=1`,
//! binary log on with `sync_binlog=1`), and loading sysbench's table.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::cgroup::ServerCgroup;
use super::cmd::run_cmd;
use super::runas::{as_user, user_ids};
use super::sysbench;
use crate::sys::cleanup;

use super::server::{ServerProcess, StopWith};

/// SIGTERM: a clean exit that skips flushing (see SETTINGS).
const STOP: StopWith = StopWith {
    program: "mariadbd",
    signal: libc::SIGTERM,
    signal_name: "SIGTERM",
};

/// The MariaDB installation, sysbench and the user the server runs as.
#[derive(Clone, Debug)]
pub(super) struct MariaInstall {
    pub(super) mariadbd: PathBuf,
    install_db: PathBuf,
    client: PathBuf,
    pub(super) sysbench: PathBuf,
    /// `mariadbd --version`'s version word, e.g. `10.11.6-MariaDB-0+deb12u1`.
    pub(super) version: String,
    pub(super) uid: u32,
    pub(super) gid: u32,
}

/// The first of `names` that is a file in one of `dirs`.
fn find_in(dirs: &[&Path], names: &[&str]) -> Option<PathBuf> {
    names
        .iter()
        .flat_map(|n| dirs.iter().map(move |d| d.join(n)))
        .find(|p| p.is_file())
}

/// MariaDB's server, installer and client, and sysbench, in the system's sbin
/// and bin directories.
pub(super) fn find_mariadb() -> Result<MariaInstall> {
    find_mariadb_in(&[
        Path::new("/usr/sbin"),
        Path::new("/usr/bin"),
        Path::new("/sbin"),
        Path::new("/bin"),
    ])
}

/// As [`find_mariadb`], in `dirs`. Each error starts with the package to install.
pub(super) fn find_mariadb_in(dirs: &[&Path]) -> Result<MariaInstall> {
    let shown = || {
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(mariadbd) = find_in(dirs, &["mariadbd", "mysqld"]) else {
        bail!(
            "install mariadb-server: no mariadbd (or mysqld) in {} (Debian/Ubuntu: apt-get \
             install mariadb-server)",
            shown()
        );
    };
    let Some(install_db) = find_in(dirs, &["mariadb-install-db", "mysql_install_db"]) else {
        bail!(
            "install mariadb-server: {} is there but no mariadb-install-db in {}",
            mariadbd.display(),
            shown()
        );
    };
    let Some(client) = find_in(dirs, &["mariadb", "mysql"]) else {
        bail!(
            "install mariadb-client: no mariadb (or mysql) client in {}",
            shown()
        );
    };
    let Some(sysbench) = find_in(dirs, &["sysbench"]) else {
        bail!(
            "install sysbench: MariaDB is driven by sysbench oltp_read_write, not found in {} \
             (Debian/Ubuntu: apt-get install sysbench)",
            shown()
        );
    };
    let (uid, gid) = user_ids("mysql", "the Debian package mariadb-server")?;
    let out = Command::new(&mariadbd)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {} --version", mariadbd.display()))?;
    let version = parse_version(&String::from_utf8_lossy(&out.stdout))
        .unwrap_or_else(|| "(version unknown)".into());
    Ok(MariaInstall {
        mariadbd,
        install_db,
        client,
        sysbench,
        version,
        uid,
        gid,
    })
}

/// `mariadbd  Ver 10.11.6-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)`.
fn parse_version(s: &str) -> Option<String> {
    let mut w = s.split_whitespace();
    w.find(|x| *x == "Ver")?;
    w.next().map(str::to_string)
}

/// The server's settings beyond the data directory and socket, for the setup table
/// and the command line alike.
pub(super) const SETTINGS: [&str; 7] = [
    // The paper's durability: every commit is on the device before it returns,
    // in both InnoDB's redo log and the binary log (two-phase commit).
    "--innodb-flush-log-at-trx-commit=1",
    "--sync-binlog=1",
    "--server-id=1",
    "--max-connections=64",
    // Shutdown is a kill in effect (the data is thrown away) but a clean exit:
    // no buffer pool flush through an HDD-like throttle.
    "--innodb-fast-shutdown=3",
    "--skip-name-resolve",
    // Nothing listens on the network: clients come through the socket only.
    "--skip-networking",
];

/// A running mariadbd; stopped when dropped (or by the cleanup registry).
pub(super) struct Server {
    pub(super) process: ServerProcess,
    pub(super) sock: PathBuf,
}

/// The statement client as root over the socket (unix_socket authentication: the
/// lab runs as root, so no password exists anywhere).
fn sql(m: &MariaInstall, sock: &Path, stmt: &str) -> Result<String> {
    run_cmd(
        Command::new(&m.client)
            .args([
                "--no-defaults",
                "--batch",
                "--skip-column-names",
                "-u",
                "root",
            ])
            .arg(format!("--socket={}", sock.display()))
            .args(["-e", stmt])
            .env("LC_ALL", "C"),
        &format!("mariadb -e {stmt:?}"),
    )
}

/// Make a data directory in `dir` (owned by mysql), start the server on it with
/// its socket there, create sysbench's table of `rows` rows and flush every dirty
/// page, so the measured runs start with no load backlog.
pub(super) fn setup(
    m: &MariaInstall,
    dir: &Path,
    log: &Path,
    cg: Option<&ServerCgroup>,
    rows: u32,
    pool_mb: u32,
) -> Result<Server> {
    let data = dir.join("data");
    run_cmd(
        as_user(&m.install_db, dir, None, m.uid, m.gid)
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", dir.display()))
            .args([
                // Root logs in through the socket as the unix user root; no password.
                "--auth-root-authentication-method=socket",
                "--skip-test-db",
                "--skip-name-resolve",
            ]),
        "mariadb-install-db",
    )?;
    let srv = Server::start(m, dir, log, cg, pool_mb)?;
    sql(m, &srv.sock, &format!("CREATE DATABASE {}", sysbench::DB))?;
    run_cmd(
        &mut sysbench::command(&m.sysbench, &srv.sock, rows, sysbench::Phase::Prepare),
        "sysbench prepare",
    )?;
    flush_dirty(m, &srv.sock)?;
    Ok(srv)
}

/// InnoDB's checkpoint: with no dirty page allowed the page cleaner writes them
/// all; then the default (90%) comes back for the measured runs.
fn flush_dirty(m: &MariaInstall, sock: &Path) -> Result<()> {
    sql(m, sock, "SET GLOBAL innodb_max_dirty_pages_pct=0")?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = sql(
            m,
            sock,
            "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
             WHERE VARIABLE_NAME='INNODB_BUFFER_POOL_PAGES_DIRTY'",
        )?;
        let dirty: u64 = out.trim().parse().with_context(|| {
            format!(
                "Innodb_buffer_pool_pages_dirty: not a number: {:?}",
                out.trim()
            )
        })?;
        if dirty == 0 {
            break;
        }
        if Instant::now() >= deadline {
            bail!("InnoDB still had {dirty} dirty pages 60 s after loading");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    sql(m, sock, "SET GLOBAL innodb_max_dirty_pages_pct=90")?;
    Ok(())
}

impl Server {
    fn start(
        m: &MariaInstall,
        dir: &Path,
        log: &Path,
        cg: Option<&ServerCgroup>,
        pool_mb: u32,
    ) -> Result<Server> {
        let data = dir.join("data");
        let sock = dir.join("mysqld.sock");
        let logf = fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let child = as_user(&m.mariadbd, dir, cg, m.uid, m.gid)
            // First: no /etc/mysql option file changes what the study runs.
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--socket={}", sock.display()))
            .arg(format!("--pid-file={}", dir.join("mysqld.pid").display()))
            .arg(format!("--tmpdir={}", dir.display()))
            .arg(format!("--log-bin={}", data.join("binlog").display()))
            .args(SETTINGS)
            .arg(format!("--innodb-buffer-pool-size={pool_mb}M"))
            .stdout(Stdio::null())
            .stderr(logf)
            .spawn()
            .context("starting mariadbd")?;
        let mut s = Server {
            process: ServerProcess::adopt(child, log, STOP),
            sock,
        };
        s.wait_ready()?;
        Ok(s)
    }

    /// The error log says "ready for connections" once the socket listens.
    fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(st) = self.process.exited()? {
                bail!(
                    "mariadbd exited during startup ({st}): {}",
                    self.process.log_tail()
                );
            }
            if self.sock.exists()
                && self
                    .process
                    .log()
                    .is_some_and(|s| s.contains("ready for connections"))
            {
                return Ok(());
            }
            if cleanup::stop_requested() {
                bail!("interrupted");
            }
            if Instant::now() >= deadline {
                bail!("mariadbd not ready after 60 s: {}", self.process.log_tail());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_word_after_ver() {
        assert_eq!(
            parse_version(
                "/usr/sbin/mariadbd  Ver 10.11.6-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)\n"
            )
            .as_deref(),
            Some("10.11.6-MariaDB-0+deb12u1")
        );
        assert_eq!(parse_version("garbage"), None);
    }

    #[test]
    fn missing_server_names_the_package() {
        let empty = tempfile::tempdir().unwrap();
        let e = find_mariadb_in(&[empty.path()]).unwrap_err().to_string();
        assert!(e.starts_with("install mariadb-server: no mariadbd"), "{e}");
    }

    #[test]
    fn missing_sysbench_names_its_package() {
        let d = tempfile::tempdir().unwrap();
        for f in ["mariadbd", "mariadb-install-db", "mariadb"] {
            fs::write(d.path().join(f), "").unwrap();
        }
        let e = find_mariadb_in(&[d.path()]).unwrap_err().to_string();
        assert!(e.starts_with("install sysbench:"), "{e}");
    }
}
