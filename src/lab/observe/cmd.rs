//! Setup commands of study 004 (mkfs, mount, initdb, pgbench -i): where a tool
//! is, and running one to completion with its output kept for the error.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// A system tool by name, from the sbin and bin directories.
pub(super) fn tool(name: &str) -> Result<PathBuf> {
    for dir in ["/usr/sbin", "/sbin", "/usr/bin", "/bin"] {
        let p = Path::new(dir).join(name);
        if p.is_file() {
            return Ok(p);
        }
    }
    bail!(
        "{name} not found in /usr/sbin, /sbin, /usr/bin, /bin (Debian: apt-get install e2fsprogs)"
    )
}

/// Run a setup command to completion; its output goes into the error if it fails.
pub(super) fn run_cmd(cmd: &mut Command, what: &str) -> Result<String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("{what}: cannot start {:?}", cmd.get_program()))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            String::from_utf8_lossy(&out.stdout).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
