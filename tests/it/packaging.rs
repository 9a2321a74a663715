//! How iolab is installed (docs/install.md). The Debian package is built once
//! per test run by `packaging/build-deb.sh --no-build` from the release binary
//! these tests run: its contents are checked (a stripped binary of at most
//! 10 MB whose debug info is in the -dbgsym package, man pages and completion
//! scripts equal to what iolab prints now, docs and example job files,
//! Recommends and not Depends); as root it is installed with apt-get, used
//! from /usr/bin (`--version`, `man -w`, `lab poll --quick`, bash
//! completion), purged, and nothing of it may be left. And the crate packages
//! (`cargo package --list`) with what `cargo install` needs and nothing big.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use support::needs::{Need, is_root, ready, skip};

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");
const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The largest the shipped binary may be (stripped).
const MAX_BINARY: u64 = 10 << 20;

fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"))
}

fn ok(cmd: &mut Command) -> String {
    let o = run(cmd);
    assert!(
        o.status.success(),
        "{cmd:?}: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The package and its -dbgsym companion.
struct Built {
    deb: PathBuf,
    ddeb: PathBuf,
}

/// Build the package once for every test here, or say why it cannot be.
fn built() -> Result<&'static Built, String> {
    static BUILT: OnceLock<Result<Built, String>> = OnceLock::new();
    BUILT.get_or_init(build).as_ref().map_err(Clone::clone)
}

fn build() -> Result<Built, String> {
    // The script packages target/release/iolab: the binary under test only
    // when the tests run --release.
    let release = repo("target/release/iolab");
    if Path::new(IOLAB).canonicalize().ok() != release.canonicalize().ok() {
        return Err(format!(
            "the package is built from {}, and these tests run {IOLAB}: run cargo test --release",
            release.display()
        ));
    }
    let has_deb = Command::new("cargo")
        .args(["deb", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_deb {
        return Err("needs cargo-deb (cargo install cargo-deb --locked; .ci/run does)".into());
    }
    let dpkg_deb = Need::Tool {
        cmd: "dpkg-deb",
        package: "dpkg",
    };
    if let Some(why) = dpkg_deb.missing() {
        return Err(why);
    }
    let out = run(Command::new(repo("packaging/build-deb.sh")).arg("--no-build"));
    assert!(
        out.status.success(),
        "packaging/build-deb.sh failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let arch = ok(Command::new("dpkg").arg("--print-architecture"));
    let name = |pkg: &str, ext: &str| {
        repo(&format!(
            "target/debian/{pkg}_{VERSION}-1_{}.{ext}",
            arch.trim()
        ))
    };
    let b = Built {
        deb: name("iolab", "deb"),
        ddeb: name("iolab-dbgsym", "ddeb"),
    };
    assert!(
        b.deb.exists() && b.ddeb.exists(),
        "{:?} {:?}",
        b.deb,
        b.ddeb
    );
    Ok(b)
}

/// The package's files, extracted into a temp dir.
fn extract(deb: &Path) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    ok(Command::new("dpkg-deb").arg("-x").arg(deb).arg(d.path()));
    d
}

/// Every file below `dir`, by path relative to it, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut child = Command::new("gzip")
        .arg("-dc")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("gzip");
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    o.stdout
}

/// What `iolab man --out` and `iolab completions` print now, under the names
/// and places the package gives them (man pages uncompressed).
fn manual_now(iolab: &Path) -> BTreeMap<String, Vec<u8>> {
    let d = tempfile::tempdir().unwrap();
    ok(Command::new(iolab).arg("man").arg("--out").arg(d.path()));
    let mut out: BTreeMap<String, Vec<u8>> = files(d.path())
        .into_iter()
        .map(|(f, b)| (format!("usr/share/man/man1/{f}"), b))
        .collect();
    for (shell, place) in [
        ("bash", "usr/share/bash-completion/completions/iolab"),
        ("zsh", "usr/share/zsh/vendor-completions/_iolab"),
        ("fish", "usr/share/fish/vendor_completions.d/iolab.fish"),
    ] {
        let script = run(Command::new(iolab).args(["completions", shell]));
        assert!(script.status.success(), "completions {shell}");
        out.insert(place.to_string(), script.stdout);
    }
    out
}

/// The package's man pages (uncompressed) and completion scripts.
fn manual_shipped(root: &Path) -> BTreeMap<String, Vec<u8>> {
    files(root)
        .into_iter()
        .filter_map(|(f, b)| {
            if let Some(page) = f.strip_suffix(".gz") {
                page.starts_with("usr/share/man/")
                    .then(|| (page.to_string(), gunzip(&b)))
            } else {
                let completion = f.contains("completions/") || f.contains("vendor_completions.d/");
                completion.then_some((f, b))
            }
        })
        .collect()
}

fn assert_same_manual(shipped: &BTreeMap<String, Vec<u8>>, now: &BTreeMap<String, Vec<u8>>) {
    let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(shipped),
        names(now),
        "the package's man pages and completions"
    );
    for (f, bytes) in now {
        assert!(
            shipped[f] == *bytes,
            "{f} in the package differs from what iolab prints now"
        );
    }
}

fn build_id(elf: &Path) -> String {
    let notes = ok(Command::new("readelf").arg("-n").arg(elf));
    notes
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .unwrap_or_else(|| panic!("{}: no build id:\n{notes}", elf.display()))
        .trim()
        .to_string()
}

fn sections(elf: &Path) -> String {
    ok(Command::new("readelf").args(["-S", "-W"]).arg(elf))
}

#[test]
fn deb_ships_a_stripped_binary_its_manual_and_docs() {
    let b = match built() {
        Ok(b) => b,
        Err(why) => return skip(why),
    };
    if !ready(&[Need::Tool {
        cmd: "readelf",
        package: "binutils",
    }]) {
        return;
    }
    // Control fields: what the studies compare with is recommended only.
    let field = |f: &str| ok(Command::new("dpkg-deb").arg("-f").arg(&b.deb).arg(f));
    assert_eq!(field("Package").trim(), "iolab");
    assert_eq!(field("Version").trim(), format!("{VERSION}-1"));
    assert_eq!(field("Recommends").trim(), "fio, strace, postgresql");
    let depends = field("Depends");
    for peer in ["fio", "strace", "postgresql"] {
        assert!(!depends.contains(peer), "Depends: {depends}");
    }

    let root = extract(&b.deb);
    let bin = root.path().join("usr/bin/iolab");
    let size = std::fs::metadata(&bin).unwrap().len();
    assert!(size <= MAX_BINARY, "usr/bin/iolab is {size} bytes");
    assert!(
        !sections(&bin).contains(".debug_info"),
        "usr/bin/iolab is not stripped"
    );
    assert_eq!(
        ok(Command::new(&bin).arg("--version")).trim(),
        format!("iolab {VERSION}")
    );
    // The debug info is split out, not lost: -dbgsym holds it under the
    // binary's build id, where gdb and perf look.
    let id = build_id(&bin);
    let dbg = extract(&b.ddeb);
    let debug_file = dbg.path().join(format!(
        "usr/lib/debug/.build-id/{}/{}.debug",
        &id[..2],
        &id[2..]
    ));
    assert!(debug_file.exists(), "{} missing", debug_file.display());
    assert!(sections(&debug_file).contains(".debug_info"));
    assert_eq!(build_id(&debug_file), id);

    // The manual is what the binary prints, the shipped one and the tree's.
    let shipped = manual_shipped(root.path());
    assert_same_manual(&shipped, &manual_now(&bin));
    assert_same_manual(&shipped, &manual_now(Path::new(IOLAB)));
    for page in [
        "iolab",
        "iolab-run",
        "iolab-lab",
        "iolab-probe",
        "iolab-report",
    ] {
        assert!(shipped.contains_key(&format!("usr/share/man/man1/{page}.1")));
    }
    for page in [
        "iolab-observe",
        "iolab-topology",
        "iolab-completions",
        "iolab-man",
    ] {
        assert!(shipped.contains_key(&format!("usr/share/man/man1/{page}.1")));
    }
    // iolab-run(1) carries the option table, as fio(1) lists fio's options.
    let run_page = String::from_utf8_lossy(&shipped["usr/share/man/man1/iolab-run.1"]).into_owned();
    for o in iolab::job::table::OPTIONS {
        assert!(
            run_page.contains(&format!("\\fB{}\\fR", o.name.replace('-', "\\-"))),
            "iolab-run(1) lacks job option {}",
            o.name
        );
    }

    // Docs and example job files; each example parses.
    let doc = root.path().join("usr/share/doc/iolab");
    for f in [
        "README.md",
        "copyright",
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "docs/install.md",
        "docs/fio-compat.md",
    ] {
        assert!(doc.join(f).exists(), "/usr/share/doc/iolab/{f} missing");
    }
    let examples: Vec<PathBuf> = std::fs::read_dir(doc.join("examples"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(examples.len() >= 3, "{examples:?}");
    for ex in &examples {
        ok(Command::new(&bin).arg("run").arg("--parse-only").arg(ex));
    }
}

/// Purges the package when dropped, so a failing test leaves no iolab in
/// /usr/bin.
struct Installed {
    armed: bool,
}

impl Drop for Installed {
    fn drop(&mut self) {
        if self.armed {
            let _ = apt(&["purge", "-y", "iolab"]);
        }
    }
}

fn apt(args: &[&str]) -> Output {
    run(Command::new("apt-get")
        // Wait for another apt or dpkg instead of failing at once.
        .args(["-o", "DPkg::Lock::Timeout=300", "-q"])
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive"))
}

fn installed_version() -> Option<String> {
    let o = Command::new("dpkg-query")
        .args(["-W", "-f=${Status} ${Version}", "iolab"])
        .output()
        .ok()?;
    let s = String::from_utf8_lossy(&o.stdout).into_owned();
    s.starts_with("install ok installed").then_some(s)
}

#[test]
fn deb_installs_works_from_usr_bin_and_purges_clean() {
    if !is_root() {
        return skip("needs root to install the package (run the tests as root, as CI does)");
    }
    if !ready(&[
        Need::Tool {
            cmd: "apt-get",
            package: "apt",
        },
        Need::Tool {
            cmd: "man",
            package: "man-db",
        },
        Need::Tool {
            cmd: "bash",
            package: "bash",
        },
    ]) {
        return;
    }
    let b = match built() {
        Ok(b) => b,
        Err(why) => return skip(why),
    };
    if let Some(v) = installed_version() {
        return skip(format_args!(
            "iolab is installed on this machine already ({v}); this test would remove it: \
             apt-get purge iolab to run it"
        ));
    }
    // lab poll loads the CPUs; nothing timed may run beside it.
    let _one = support::serial::one_at_a_time();
    let mut guard = Installed { armed: true };
    let o = apt(&[
        "install",
        "-y",
        "--no-install-recommends",
        b.deb.to_str().unwrap(),
    ]);
    assert!(
        o.status.success(),
        "apt-get install {}: {}",
        b.deb.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let files: Vec<PathBuf> = ok(Command::new("dpkg").args(["-L", "iolab"]))
        .lines()
        .map(PathBuf::from)
        .collect();
    let was_dir: Vec<bool> = files.iter().map(|f| f.is_dir()).collect();
    assert!(files.contains(&PathBuf::from("/usr/bin/iolab")));

    let iolab = Path::new("/usr/bin/iolab");
    assert_eq!(
        ok(Command::new(iolab).arg("--version")).trim(),
        format!("iolab {VERSION}")
    );
    for page in ["iolab", "iolab-run"] {
        let at = ok(Command::new("man").args(["-w", page]));
        assert_eq!(at.trim(), format!("/usr/share/man/man1/{page}.1.gz"));
    }
    let out = tempfile::tempdir_in("/var/tmp").unwrap();
    let lab = run(Command::new(iolab)
        .args(["lab", "poll", "--quick", "--out"])
        .arg(out.path()));
    assert!(
        lab.status.success(),
        "iolab lab poll --quick: {}",
        String::from_utf8_lossy(&lab.stderr)
    );
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("results.json")).unwrap()).unwrap();
    assert_eq!(results["studies"][0]["id"], "poll", "{results}");
    assert!(out.path().join("index.html").exists());
    // bash completes `iolab r` from the installed script, as the
    // bash-completion loader would call it: _iolab COMMAND CUR PREV.
    let words = ok(Command::new("bash").arg("-c").arg(
        "source /usr/share/bash-completion/completions/iolab && \
         COMP_WORDS=(iolab r) && COMP_CWORD=1 && COMP_LINE='iolab r' && COMP_POINT=7 && \
         _iolab iolab r iolab && printf '%s\\n' \"${COMPREPLY[@]}\"",
    ));
    let mut words: Vec<&str> = words.lines().collect();
    words.sort();
    assert_eq!(words, ["report", "run"]);

    let o = apt(&["purge", "-y", "iolab"]);
    assert!(
        o.status.success(),
        "apt-get purge iolab: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    guard.armed = false;
    assert_eq!(
        installed_version(),
        None,
        "iolab still installed after purge"
    );
    for (f, dir) in files.iter().zip(was_dir) {
        if !dir {
            assert!(!f.exists(), "{} left after purge", f.display());
        } else if f.exists() {
            // A directory may stay only while others use it.
            let shared = std::fs::read_dir(f).unwrap().next().is_some()
                || Command::new("dpkg")
                    .arg("-S")
                    .arg(f)
                    .output()
                    .is_ok_and(|o| o.status.success());
            assert!(shared, "{} left after purge", f.display());
        }
    }
}

#[test]
fn crate_packages_with_what_cargo_install_needs() {
    let o = run(Command::new("cargo")
        .args([
            "package",
            "--list",
            "--locked",
            "--allow-dirty",
            "--offline",
        ])
        .current_dir(repo("")));
    assert!(
        o.status.success(),
        "cargo package --list: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let list = String::from_utf8_lossy(&o.stdout).into_owned();
    let listed: Vec<&str> = list.lines().collect();
    for f in [
        "Cargo.toml",
        "Cargo.lock",
        "README.md",
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "src/main.rs",
        "src/lib.rs",
        "docs/install.md",
    ] {
        assert!(listed.contains(&f), "{f} not packaged:\n{list}");
    }
    // Every source file the build reads is packaged (cargo install builds
    // from the package); nothing from target/, the fuzz corpus or the tests.
    for f in files(&repo("src")).keys() {
        let f = format!("src/{f}");
        assert!(listed.contains(&f.as_str()), "{f} not packaged");
    }
    for f in &listed {
        assert!(
            !["target/", "fuzz/", "tests/", "bench/", ".ci/"]
                .iter()
                .any(|p| f.starts_with(p)),
            "{f} should not be packaged"
        );
    }
    let bytes: u64 = listed
        .iter()
        .filter_map(|f| std::fs::metadata(repo(f)).ok())
        .map(|m| m.len())
        .sum();
    assert!(bytes < 8 << 20, "the package holds {bytes} bytes");
}
