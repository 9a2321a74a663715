//! What a test needs that a machine may lack (root, zram, loop devices, fio,
//! Chromium, PostgreSQL, strace, enough CPUs), checked one way for every test.
//!
//! A test that cannot run here returns early, and says so where it cannot be
//! missed: `SKIPPED: <test>: <why, and how to get it>` goes straight to the
//! terminal's stderr (not through libtest's capture, which hides the output of
//! passing tests), so a skip never passes silently. With `IOLAB_TEST_STRICT=1`
//! (CI sets it: `.ci/run`) a skip fails the test instead, for a machine that
//! must run everything, with one exception: what CI's kind of machine (a small
//! virtual machine) cannot have at all. Those skips go through
//! [`skip_lacking`] with the hardware or kernel feature that is missing, and
//! are allowed in strict mode only for the tests named in [`MACHINE_KIND`],
//! each for its one reason: a test skipping for any other reason still fails.

use std::fmt::Display;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One thing a test needs.
#[derive(Clone, Copy, Debug)]
pub enum Need {
    /// Effective uid 0 (devices, tracefs, mounts, cgroups).
    Root,
    /// zram hot-add (`/sys/class/zram-control`), which also needs root.
    Zram,
    /// Loop devices (`/dev/loop-control`), which also needs root.
    Loop,
    /// The `fio` command.
    Fio,
    /// A Chromium binary (see [`chromium`]).
    Chromium,
    /// PostgreSQL 15's server binaries and pgbench.
    Postgres,
    /// The `strace` command.
    Strace,
    /// A command on PATH, with the package that provides it.
    Tool {
        cmd: &'static str,
        package: &'static str,
    },
    /// At least this many online CPUs.
    Cpus(usize),
}

impl Need {
    /// `None` when the need is met here; otherwise why not and how to meet it.
    pub fn missing(self) -> Option<String> {
        match self {
            Need::Root => {
                (!is_root()).then(|| "needs root (run the tests as root, as CI does)".into())
            }
            Need::Zram => Need::Root.missing().or_else(|| {
                (!Path::new("/sys/class/zram-control/hot_add").exists())
                    .then(|| "needs zram hot-add (modprobe zram)".into())
            }),
            Need::Loop => Need::Root.missing().or_else(|| {
                (!Path::new("/dev/loop-control").exists())
                    .then(|| "needs loop devices (modprobe loop)".into())
            }),
            Need::Fio => (!runs("fio", "--version"))
                .then(|| "needs fio (apt-get install fio; the golden files are fio 3.33's)".into()),
            Need::Chromium => chromium().is_none().then(|| {
                "needs Chromium (apt-get install chromium, or set IOLAB_CHROMIUM to its binary)"
                    .into()
            }),
            Need::Postgres => ["postgres", "initdb", "pgbench"]
                .iter()
                .any(|b| !Path::new("/usr/lib/postgresql/15/bin").join(b).exists())
                .then(|| "needs PostgreSQL 15 and pgbench (apt-get install postgresql-15)".into()),
            Need::Strace => {
                (!runs("strace", "-V")).then(|| "needs strace (apt-get install strace)".into())
            }
            Need::Tool { cmd, package } => {
                (!on_path(cmd)).then(|| format!("needs {cmd} (apt-get install {package})"))
            }
            Need::Cpus(n) => {
                let have = std::thread::available_parallelism().map_or(1, |n| n.get());
                (have < n).then(|| format!("needs {n} CPUs, this machine has {have}"))
            }
        }
    }
}

/// Something a virtual machine of CI's kind lacks: no package or setup step
/// can provide it, so a test that needs it cannot run there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lack {
    /// A block device with poll queues (`io_poll = 1`: NVMe with
    /// `nvme.poll_queues=N`); a virtio disk has none.
    PollQueues,
    /// A stacking block driver (device-mapper, `CONFIG_BLK_DEV_DM`) to make
    /// one device hold another.
    DeviceMapper,
    /// blktrace's debugfs files (a kernel in lockdown refuses them).
    BlockTracing,
}

impl Lack {
    fn why(self) -> &'static str {
        match self {
            Lack::PollQueues => "no block device with poll queues",
            Lack::DeviceMapper => "no device-mapper in the kernel",
            Lack::BlockTracing => "the kernel refuses blktrace's debugfs files",
        }
    }
}

/// The tests allowed to skip under `IOLAB_TEST_STRICT`, each with the one
/// [`Lack`] that excuses it: what CI's virtual machine cannot have. A test is
/// named as libtest names its thread (its module path inside the test binary).
pub const MACHINE_KIND: &[(&str, Lack)] = &[
    // Only the refusal is tested without poll queues; the polled read is not.
    (
        "hybrid_iopoll::refused_naming_the_device_and_the_remedy_or_reads_where_polled",
        Lack::PollQueues,
    ),
    ("safety_blockdev::holder_is_refused", Lack::DeviceMapper),
    (
        "iolog_replay::a_blktrace_captured_here_replays_with_the_same_ios",
        Lack::BlockTracing,
    ),
];

/// Whether every need is met. If one is not, reports the test as skipped (see
/// [`skip`]) with the first missing need and returns false: the test returns.
#[must_use]
pub fn ready(needs: &[Need]) -> bool {
    match needs.iter().find_map(|n| n.missing()) {
        Some(why) => {
            skip(why);
            false
        }
        None => true,
    }
}

/// Whether `need` is met, for a test that can do `part` of its work only
/// with it: if not, reports that part as skipped (see [`skip`]) and returns
/// false; the test goes on without it.
#[must_use]
pub fn has(need: Need, part: &str) -> bool {
    match need.missing() {
        Some(why) => {
            skip(format_args!("{part}: {why}"));
            false
        }
        None => true,
    }
}

/// Report the calling test as skipped, for a reason found while it runs (a
/// device that could not be created, a kernel feature missing). The caller
/// returns right after.
pub fn skip(why: impl Display) {
    let line = format!("SKIPPED: {}: {why}", test_name());
    assert!(
        !strict(),
        "{line} (IOLAB_TEST_STRICT is set: every test must run)"
    );
    say(&line);
}

/// Report the calling test as skipped (or, where [`Lack::PollQueues`] and the
/// like only cut a part of it, that part) because this machine lacks `lack`.
/// Under `IOLAB_TEST_STRICT` this fails the test unless [`MACHINE_KIND`]
/// names it with this very lack.
pub fn skip_lacking(lack: Lack, why: impl Display) {
    let test = test_name();
    let line = format!("SKIPPED: {test}: {}: {why}", lack.why());
    if strict() {
        assert!(
            MACHINE_KIND.contains(&(test.as_str(), lack)),
            "{line} (IOLAB_TEST_STRICT is set, and needs::MACHINE_KIND does not \
             allow {test} to skip for {lack:?})"
        );
    }
    say(&line);
}

fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("(unnamed test)")
        .to_string()
}

fn strict() -> bool {
    std::env::var_os("IOLAB_TEST_STRICT").is_some_and(|v| !v.is_empty() && v != "0")
}

fn say(line: &str) {
    // Straight to the process's stderr: libtest captures print!/eprint! and
    // shows them only for failed tests.
    let _ = writeln!(std::io::stderr(), "{line}");
    // And in the captured output too, for `--nocapture` readers and failures.
    println!("{line}");
}

pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The Chromium binary: `IOLAB_CHROMIUM`, else Debian's.
pub fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("IOLAB_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// `cmd` is an executable file in a PATH directory.
pub fn on_path(cmd: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|d| {
            std::fs::metadata(d.join(cmd)).is_ok_and(|m| {
                m.is_file()
                    && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
            })
        })
    })
}

fn runs(cmd: &str, arg: &str) -> bool {
    Command::new(cmd)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}
