//! `iolab completions SHELL` and `iolab man [COMMAND] [--out DIR]`. Unlike the
//! other commands' entries, these take the whole command-line definition too
//! (`main.rs` owns it): it is what they print.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use super::man::pages;

#[derive(clap::Args, Debug)]
#[command(
    about = "Print the shell completion script for SHELL",
    long_about = "Print the shell completion script for SHELL (generated from the command \
line's definition). The Debian package installs bash's, zsh's and fish's where those \
shells look; elsewhere, e.g.:\n  \
iolab completions bash > ~/.local/share/bash-completion/completions/iolab\n  \
iolab completions zsh > ~/.zfunc/_iolab   (with fpath+=~/.zfunc)\n  \
iolab completions fish > ~/.config/fish/completions/iolab.fish"
)]
pub struct CompletionsArgs {
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(clap::Args, Debug)]
#[command(
    about = "Print a man page in roff (iolab's, or a command's), or write them all to a directory",
    long_about = "Print a man page in roff: iolab(1), or COMMAND's (iolab-run(1), ...). \
With --out, write every page to DIR instead (iolab.1, iolab-run.1, ...), as the Debian \
package installs them; for an install from source, e.g.:\n  \
iolab man --out ~/.local/share/man/man1\n  \
iolab man run | man -l -"
)]
pub struct ManArgs {
    /// The command whose page to print (run, lab, ...); default: iolab(1).
    #[arg(value_name = "COMMAND", conflicts_with = "out")]
    pub command: Option<String>,
    /// Write every page to DIR (created if missing) instead of printing one.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn completions(a: CompletionsArgs, mut cli: clap::Command) -> Result<u8> {
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut cli, "iolab", &mut script);
    let mut out = std::io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(0)
}

pub fn man(a: ManArgs, cli: clap::Command) -> Result<u8> {
    let pages = pages(cli);
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).with_context(|| format!("--out {}", dir.display()))?;
        for p in &pages {
            let path = dir.join(&p.file);
            std::fs::write(&path, &p.roff)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        return Ok(0);
    }
    let want = match &a.command {
        None => "iolab.1".to_string(),
        Some(c) => format!("iolab-{c}.1"),
    };
    let Some(page) = pages.iter().find(|p| p.file == want) else {
        let names: Vec<&str> = pages
            .iter()
            .filter_map(|p| p.file.strip_prefix("iolab-")?.strip_suffix(".1"))
            .collect();
        bail!(
            "no man page for command '{}'; the commands are: {}",
            a.command.as_deref().unwrap_or_default(),
            names.join(", ")
        );
    };
    let mut out = std::io::stdout().lock();
    out.write_all(page.roff.as_bytes())?;
    out.flush()?;
    Ok(0)
}
