//! Process-wide undo registry and the SIGINT/SIGTERM policy.
//!
//! Anything iolab changes on the machine (a scheduler, a tracefs instance, a
//! thread's affinity, a hot-added zram or an attached loop device) registers its
//! undo here while it lives. Each undo runs exactly once: by its guard's `Drop`
//! ([`run`]), by [`run_cleanups`] on the normal exit path, or by the signal watcher
//! when the user presses Ctrl-C a second time. Taking the entry out of the registry
//! under the lock is what makes "exactly once" hold between those three paths.
//!
//! Signals: the handler only stores to an atomic and writes one byte to a pipe
//! (both async-signal-safe). A watcher thread reads the pipe; the first signal asks
//! the engine to stop ([`stop_requested`]), the second runs every registered undo
//! and then does what the installer chose ([`SecondSignal`]): the `iolab`
//! command exits with 128+signal (130 for SIGINT) without waiting for the engine.
//!
//! Nothing in the library installs the handlers: whoever owns the process does
//! (the command line at its edge, in each command's `cli.rs`), and only then
//! can a signal end the process on iolab's account.

use std::io;
use std::sync::Mutex;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What a failed undo action reports: any error type, with its causes.
pub type UndoError = Box<dyn std::error::Error + Send + Sync>;

type Undo = Box<dyn FnOnce() -> Result<(), UndoError> + Send>;

struct Entry {
    id: u64,
    what: String,
    undo: Undo,
}

struct Registry {
    next_id: u64,
    entries: Vec<Entry>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    next_id: 1,
    entries: Vec::new(),
});
/// Undos taken out of the registry and still running; the abort path waits for
/// them so it does not exit in the middle of, say, a zram reset.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
static STOP: AtomicBool = AtomicBool::new(false);
static PIPE_WR: AtomicI32 = AtomicI32::new(-1);
/// What the watcher does on a second signal: [`SecondSignal`] as a number.
static ON_SECOND: AtomicU8 = AtomicU8::new(SecondSignal::UndoAndExit as u8);
static INSTALLED: OnceLock<Result<(), std::sync::Arc<io::Error>>> = OnceLock::new();

/// Handle to one registered undo action.
#[derive(Debug, PartialEq, Eq, Hash)]
#[must_use = "a registered undo must be run or forgotten by its owner"]
pub struct CleanupId(u64);

/// An undo action that failed; reported, never fatal.
#[derive(Debug, thiserror::Error)]
#[error("undo '{what}' failed: {}", chain(error.as_ref()))]
pub struct CleanupFailure {
    pub what: String,
    pub error: UndoError,
}

/// An error and its causes, `: `-separated (what `anyhow` prints with `{:#}`).
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    // A panic inside the lock cannot leave the Vec half-modified in a way that
    // matters here, so a poisoned lock is still usable (and cleanup must go on).
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// Register an undo action; `what` names it in messages ("restore scheduler of loop3").
pub fn register<E: Into<UndoError>>(
    what: impl Into<String>,
    undo: impl FnOnce() -> Result<(), E> + Send + 'static,
) -> CleanupId {
    let mut r = registry();
    let id = r.next_id;
    r.next_id += 1;
    r.entries.push(Entry {
        id,
        what: what.into(),
        undo: Box::new(move || undo().map_err(Into::into)),
    });
    CleanupId(id)
}

fn take(pred: impl Fn(&Entry) -> bool) -> Option<Entry> {
    let mut r = registry();
    let pos = r.entries.iter().rposition(pred)?;
    IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
    Some(r.entries.remove(pos))
}

fn execute(e: Entry) -> Result<(), CleanupFailure> {
    struct Done;
    impl Drop for Done {
        fn drop(&mut self) {
            IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
        }
    }
    let _done = Done;
    (e.undo)().map_err(|error| CleanupFailure {
        what: e.what,
        error,
    })
}

/// Run one undo now (a guard's `Drop`). `None` if it already ran elsewhere (the
/// signal path or [`run_cleanups`]).
pub fn run(id: CleanupId) -> Option<Result<(), CleanupFailure>> {
    take(|e| e.id == id.0).map(execute)
}

/// Deregister without running (the guard's owner decided to keep the change).
/// Returns whether it was still registered.
#[cfg(any(test, feature = "testing"))]
pub fn forget(id: CleanupId) -> bool {
    match take(|e| e.id == id.0) {
        Some(_) => {
            IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
            true
        }
        None => false,
    }
}

/// What is registered now, oldest first.
pub fn pending() -> Vec<String> {
    registry().entries.iter().map(|e| e.what.clone()).collect()
}

/// Run every registered undo, newest first (undo in reverse order of doing), and
/// return the failures. For the normal exit path and the abort path.
pub fn run_cleanups() -> Vec<CleanupFailure> {
    let mut failures = Vec::new();
    while let Some(e) = take(|_| true) {
        if let Err(f) = execute(e) {
            failures.push(f);
        }
    }
    failures
}

/// Whether the user asked to stop (first SIGINT/SIGTERM) or [`request_stop`] was called.
/// One relaxed atomic load: cheap enough to poll per request.
#[inline]
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Ask the engine to stop, as a first SIGINT would.
#[cfg(any(test, feature = "testing"))]
pub fn request_stop() {
    STOP.store(true, Ordering::Relaxed);
}

extern "C" fn on_signal(sig: libc::c_int) {
    // Only async-signal-safe operations: an atomic store and write(2). errno is
    // saved because write may clobber it under the interrupted code's feet.
    // SAFETY: __errno_location returns this thread's errno slot.
    let errno = unsafe { *libc::__errno_location() };
    STOP.store(true, Ordering::SeqCst);
    let fd = PIPE_WR.load(Ordering::SeqCst);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: one byte from a valid stack location to a non-blocking pipe; if the
        // pipe is full the byte is dropped, which only loses a repeated signal.
        unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// What a second SIGINT/SIGTERM does, after every registered undo has run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum SecondSignal {
    /// Exit the process with 128+signal (130 for SIGINT), as a shell reports a
    /// command a signal stopped: the `iolab` command's policy.
    UndoAndExit = 0,
    /// Keep the process: the stop flag stays set and the program decides.
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests construct it")
    )]
    UndoOnly = 1,
}

/// Install the SIGINT/SIGTERM handlers and start the watcher thread: the
/// first signal sets the stop flag, the second runs every registered undo and
/// then does what `on_second` says. Idempotent; a later call's `on_second`
/// replaces an earlier one's.
pub fn install_signal_handlers(on_second: SecondSignal) -> io::Result<()> {
    ON_SECOND.store(on_second as u8, Ordering::SeqCst);
    INSTALLED
        .get_or_init(|| install().map_err(std::sync::Arc::new))
        .clone()
        .map_err(|e| io::Error::other(format!("installing SIGINT/SIGTERM handlers: {e}")))
}

fn install() -> io::Result<()> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let (rd, wr) = (fds[0], fds[1]);
    // The handler must never block, so only the write end is non-blocking.
    // SAFETY: wr is a descriptor we own.
    unsafe {
        let fl = libc::fcntl(wr, libc::F_GETFL);
        libc::fcntl(wr, libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
    PIPE_WR.store(wr, Ordering::SeqCst);
    std::thread::Builder::new()
        .name("iolab-signals".into())
        .spawn(move || watch(rd))?;
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is valid; we set the handler and an empty mask.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

fn watch(rd: libc::c_int) {
    let mut seen = 0u32;
    loop {
        let mut b = 0u8;
        // SAFETY: reading one byte into a stack variable from our pipe.
        let n = unsafe { libc::read(rd, (&mut b as *mut u8).cast(), 1) };
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if n != 1 {
            return;
        }
        seen += 1;
        let sig = b as i32;
        if seen == 1 {
            eprintln!(
                "iolab: {} received, stopping; send it again to abort now (undo actions still run)",
                signal_name(sig)
            );
            continue;
        }
        abort_now(sig);
        if ON_SECOND.load(Ordering::SeqCst) == SecondSignal::UndoAndExit as u8 {
            std::process::exit(128 + sig)
        }
    }
}

/// Run every undo now (and wait a bounded moment for those already running
/// on other threads): the second signal's work before its [`SecondSignal`].
fn abort_now(sig: i32) {
    let pending = pending();
    if !pending.is_empty() {
        eprintln!(
            "iolab: {} again: aborting; undoing {} change(s): {}",
            signal_name(sig),
            pending.len(),
            pending.join(", ")
        );
    }
    for f in run_cleanups() {
        eprintln!("iolab: {f}");
    }
    // A guard on another thread may be mid-undo; give it a bounded moment.
    let deadline = Instant::now() + Duration::from_secs(5);
    while IN_FLIGHT.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn guard_runs_once_then_is_gone() {
        let n = Arc::new(AtomicU32::new(0));
        let n2 = n.clone();
        let id = register("count once", move || {
            n2.fetch_add(1, Ordering::SeqCst);
            Ok::<(), UndoError>(())
        });
        let again = CleanupId(id.0);
        assert!(matches!(run(id), Some(Ok(()))));
        assert!(run(again).is_none(), "second run must find nothing");
        assert_eq!(n.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn forget_drops_without_running() {
        let n = Arc::new(AtomicU32::new(0));
        let n2 = n.clone();
        let id = register("never", move || {
            n2.fetch_add(1, Ordering::SeqCst);
            Ok::<(), UndoError>(())
        });
        let again = CleanupId(id.0);
        assert!(forget(id));
        assert!(run(again).is_none());
        assert_eq!(n.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn failure_is_reported_with_its_name() {
        let id = register("restore nothing", || anyhow::bail!("device gone"));
        let f = run(id).unwrap().unwrap_err();
        assert_eq!(f.to_string(), "undo 'restore nothing' failed: device gone");
    }
}
