//! CPU contention, as adaptive sees it: is our spinning taking the CPU that the
//! completion itself needs?
//!
//! Adaptive's latency rule (poll below twice the wakeup cost) assumes the
//! polling thread has a CPU to itself. With more polling threads than CPUs that
//! fails in a way the latency percentiles hardly show: the thread that spins
//! holds the CPU that the device's completion (an interrupt thread, a softirq,
//! the null device's completion thread) or the sibling thread whose request is
//! already done would need, so each I/O costs far more spinning than the device
//! takes. Measured per window of at least [`WINDOW`] requests and
//! [`MIN_WINDOW_NS`], never per request: the thread's CPU clock (exact, where
//! schedstat's CPU time moves only at ticks), one pread of
//! `/proc/thread-self/schedstat` (time spent runnable but waiting for a CPU) and
//! one clock read.
//!
//! Rule: a window is contended when the thread spent more than a tenth of it
//! waiting for a CPU *and* its wall time per I/O exceeds what sleeping would
//! cost: the device's time (the class p50) plus two wakeups (`2 x` the measured
//! wakeup cost) plus [`ALLOWANCE_NS`] of submission and bookkeeping. Both are
//! needed: pollers that merely time-share CPUs (a 5 us device whose completions
//! need no CPU) wait for a CPU too, yet each I/O still takes less than a sleep
//! would, and there polling remains the fastest model; a slow window without a
//! CPU shortage is the device's doing, which sleeping would not cure. Beside
//! a co-runner (below) the verdict takes two contended windows in a row, since
//! one window there is a draw of whose time slices it caught. While
//! contended, adaptive sleeps (a poll class through its p50, a hybrid class
//! from half its p50, both then polling briefly) for `backoff` windows, then spins
//! again for one window to look; each look that finds contention again doubles
//! `backoff` (8 to 512 windows), so a lasting overload costs at most one
//! spinning window in 512.
//!
//! What a contended poll class sleeps for depends on *who* holds the CPU.
//! Every thread running adaptive in this process is counted on the CPUs its
//! affinity mask allows, each CPU getting an equal share of the thread
//! ([`Contention::crowded`]): when the CPUs this thread may run on carry more
//! than one adaptive thread each on average, the contention is a crowd of
//! pollers (each other: more threads than CPUs, or several pinned to one CPU,
//! but not threads pinned one per CPU), and a nap through
//! the whole p50 lets the wakeup find the completion without spinning on a CPU
//! the others queue for. Otherwise the contention comes from outside the
//! crowd, e.g. a compute co-runner: a timer wakeup preempts it, so the nap
//! ends one wakeup before the p50 and polls the rest (see
//! [`super::Adaptive::nap_ns`]). Threads of other processes are not
//! counted: a crowd of someone else's pollers looks like a co-runner.
//!
//! **At depth** (a window whose mean number of requests in flight, by Little's
//! law its summed latency over its wall time, is [`QUEUE_DEPTH`] or more) the
//! rule above cannot fire: a poller's wall time per I/O is its latency over the
//! depth, far under one request's sleeping cost, and a model of sleeping at
//! depth would have to know how far completions' wakeups overlap the device's
//! work. So there the choice is measured instead: a window at depth in which
//! the thread waited for a CPU more than a tenth of the time starts a trial,
//! one window waiting for the interrupt ([`Contention::asleep`]); if that
//! window's wall time per I/O beats the spinning one's by [`DEPTH_MARGIN`] (a
//! quarter), the thread keeps sleeping for a back-off of windows, then spins one window
//! to look (a look that finds a CPU shortage trials again); if not, it spins
//! and trials no more for the back-off. Each trial doubles the back-off (8 to
//! 512 windows), so a lasting verdict costs at most two windows in 512. The
//! case that asked for it: io_uring at QD4 on zram with two jobs on two CPUs,
//! where two pollers share the CPUs with the io-wq workers doing the reads, and
//! polling ran at 147-161K IOPS in some runs against interrupt's 318-348K. A
//! class whose p50 is under the shortest sleep that blocks here is never
//! trialled, as a contended poll class keeps polling at depth 1. The trials
//! are not free: each is a window of wakeups, which shows at the p99 where
//! polling wins (5 us null device, QD4, four jobs on two CPUs: p99 about 23
//! us against 20 without trials, at the same IOPS).

use std::sync::atomic::{AtomicU32, Ordering};

/// Requests per window, at least.
pub const WINDOW: u32 = 128;
/// Shortest window: a few scheduler slices, so one preemption is not a verdict.
pub const MIN_WINDOW_NS: u64 = 5_000_000;
/// Per-I/O CPU that is not waiting for the device (submit, reap, accounting).
pub const ALLOWANCE_NS: u64 = 5_000;
/// Mean requests in flight from which a window is judged by the depth trial.
pub const QUEUE_DEPTH: f64 = 1.5;
/// How much less wall time per I/O a trial asleep must take to keep sleeping:
/// one window against one is a noisy comparison (5 us null device, QD4, four
/// jobs on two CPUs: trials asleep 10.7-15.6 us per I/O against 9.5 spinning,
/// and one in four won at a 10% margin), while the wins that matter are large
/// (zram QD4, two jobs: 14.1 -> 6.2 us, 43.5 -> 7.5).
pub const DEPTH_MARGIN: f64 = 0.25;
const BACKOFF_MIN: u32 = 8;
const BACKOFF_MAX: u32 = 512;
/// Uncontended windows in a row after which a later detection starts the
/// back-off afresh.
const CLEAN_RESET: u32 = 64;

/// CPUs the per-CPU account covers (a cpu_set_t's worth).
const MAX_CPUS: usize = 1024;
/// One adaptive thread's worth of load on a CPU.
const ONE_THREAD: u32 = 1 << 16;
/// Adaptive threads of this process per CPU, in `ONE_THREAD` units: a thread
/// that opened a contention account adds `ONE_THREAD / n` to each of the `n`
/// CPUs its mask allows, until it drops the account.
static CPU_LOAD: [AtomicU32; MAX_CPUS] = [const { AtomicU32::new(0) }; MAX_CPUS];

/// One window's account.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Window {
    pub ios: u64,
    /// Time on a CPU (ns).
    pub cpu_ns: u64,
    /// Time runnable but waiting for a CPU (ns).
    pub delay_ns: u64,
    pub wall_ns: u64,
    /// The device's time for these requests: the sum of their class p50.
    pub device_ns: u64,
    /// Their observed latencies, summed: over `wall_ns`, the mean number in
    /// flight (Little's law).
    pub lat_ns: u64,
}

impl Window {
    /// Mean requests in flight over the window (Little's law).
    pub fn depth(&self) -> f64 {
        self.lat_ns as f64 / self.wall_ns.max(1) as f64
    }

    /// Wall time per I/O (ns).
    pub fn per_io_ns(&self) -> f64 {
        self.wall_ns as f64 / self.ios.max(1) as f64
    }

    /// The thread waited for a CPU more than a tenth of the window.
    pub fn short_of_cpu(&self) -> bool {
        self.delay_ns * 10 > self.wall_ns
    }

    /// The rule above, with this machine's wakeup cost (ns).
    pub fn contended(&self, wakeup_ns: u64) -> bool {
        let sleeping = self.device_ns + self.ios * (2 * wakeup_ns + ALLOWANCE_NS);
        self.short_of_cpu() && self.wall_ns > sleeping
    }
}

/// The depth trial's state (module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Depth {
    /// Spinning; the next window at depth short of CPU starts a trial once
    /// `depth_left` windows have passed.
    Spin,
    /// One window waiting for the interrupt, against a spinning window's wall
    /// time per I/O (ns) and its share spent waiting for a CPU.
    Trial { spin_ns: f64, spin_delay: f64 },
    /// The trial won: waiting for the interrupt for `depth_left` windows.
    Asleep,
}

/// What the depth trials found, for the decision report.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DepthTrials {
    /// Trials run, and how many sleeping won.
    pub trials: u64,
    pub won: u64,
    /// The last trial: spinning and asleep wall time per I/O (ns), the
    /// spinning window's share waiting for a CPU, and the mean depth.
    pub spin_ns: f64,
    pub asleep_ns: f64,
    pub spin_delay: f64,
    pub depth: f64,
}

/// The per-thread contention state. Its descriptor belongs to the thread that
/// opened it, so a clone starts without one and opens its own.
#[derive(Debug)]
pub struct Contention {
    /// `/proc/thread-self/schedstat`: -1 not yet opened, -2 unavailable.
    fd: i32,
    /// This machine's wakeup cost (ns): what a sleep adds to each I/O.
    wakeup_ns: u64,
    /// The shortest sleep that blocks here (ns; 0: unknown): a device faster
    /// than that is not trialled asleep at depth.
    block_ns: u64,
    ios: u32,
    device_ns: u64,
    lat_ns: u64,
    /// Counters at the start of the window: CPU, delay, wall (ns).
    start: Option<(u64, u64, u64)>,
    /// The first window has been opened (or tried: a failed read is not
    /// retried per request).
    opened: bool,
    contended: bool,
    /// The CPUs this thread may run on (its affinity mask, read at its first
    /// window end), each carrying `share` of [`CPU_LOAD`] for it (undone on
    /// drop); empty: not counted.
    cpus: Vec<u32>,
    share: u32,
    /// Its CPUs carry more than one adaptive thread each, as of the last
    /// window end.
    crowded: bool,
    /// Beside a co-runner, the last window judged was contended but awaits a
    /// second in a row before it counts (see [`Contention::judge`]).
    suspect: bool,
    /// Windows left before the next look while contended.
    left: u32,
    backoff: u32,
    clean: u32,
    /// The depth trial (module docs): state, windows left in it, back-off,
    /// and what the trials found.
    depth: Depth,
    depth_left: u32,
    depth_backoff: u32,
    pub depth_trials: DepthTrials,
    /// Windows judged, found contended, and the last contended one.
    pub judged: u64,
    pub detections: u64,
    pub last: Option<Window>,
}

impl Clone for Contention {
    fn clone(&self) -> Self {
        // A fresh account: no descriptor, not counted on any CPU.
        let mut c = Contention::new(self.wakeup_ns);
        c.block_ns = self.block_ns;
        c
    }
}

impl Drop for Contention {
    fn drop(&mut self) {
        if self.fd >= 0 {
            // SAFETY: our own descriptor, closed once.
            unsafe { libc::close(self.fd) };
        }
        for &c in &self.cpus {
            CPU_LOAD[c as usize].fetch_sub(self.share, Ordering::Relaxed);
        }
    }
}

impl Contention {
    pub const fn new(wakeup_ns: u64) -> Contention {
        Contention {
            fd: -1,
            wakeup_ns,
            block_ns: 0,
            ios: 0,
            device_ns: 0,
            lat_ns: 0,
            start: None,
            opened: false,
            contended: false,
            cpus: Vec::new(),
            share: 0,
            crowded: false,
            suspect: false,
            left: 0,
            backoff: BACKOFF_MIN,
            clean: 0,
            depth: Depth::Spin,
            depth_left: 0,
            depth_backoff: BACKOFF_MIN,
            depth_trials: DepthTrials {
                trials: 0,
                won: 0,
                spin_ns: 0.0,
                asleep_ns: 0.0,
                spin_delay: 0.0,
                depth: 0.0,
            },
            judged: 0,
            detections: 0,
            last: None,
        }
    }

    /// Whether adaptive should sleep instead of spinning now.
    #[inline]
    pub fn contended(&self) -> bool {
        self.contended
    }

    /// Set the shortest sleep that blocks here (adaptive measures it once).
    pub fn set_block_ns(&mut self, block_ns: u64) {
        self.block_ns = block_ns;
    }

    /// Whether the depth trial has this thread wait for the interrupt now (a
    /// trial window, or a won trial's back-off).
    #[inline]
    pub fn asleep(&self) -> bool {
        self.depth != Depth::Spin
    }

    /// Set the crowd verdict (tests on synthetic windows, which never reach a
    /// window end).
    #[cfg(test)]
    pub fn set_crowded(&mut self, crowded: bool) {
        self.crowded = crowded;
    }

    /// Whether the CPUs this thread may run on carry more than one adaptive
    /// thread of this process each: contention among our own pollers rather
    /// than from a co-runner (as of the last window end; false before the first).
    #[inline]
    pub fn crowded(&self) -> bool {
        self.crowded
    }

    /// Count one completed request, its class's device time (p50) and its
    /// observed latency; at a window's end, read the thread's counters and judge.
    #[inline]
    pub fn tick(&mut self, device_ns: u64, lat_ns: u64) {
        self.ios += 1;
        self.device_ns += device_ns;
        self.lat_ns += lat_ns;
        // The first request opens the first window: the verdict on a crowded
        // CPU comes after WINDOW spinning requests, not 2 x WINDOW.
        if self.ios.is_multiple_of(WINDOW) || !self.opened {
            self.window_end();
        }
    }

    #[cold]
    fn window_end(&mut self) {
        self.opened = true;
        if !self.opened_account() {
            self.count_in();
        }
        self.crowded = self.load_per_cpu() > ONE_THREAD;
        let wall = crate::measure::clock::now_ns();
        if let Some(s) = self.start
            && wall.saturating_sub(s.2) < MIN_WINDOW_NS
        {
            // Too short to judge: count on (checked again WINDOW requests later).
            return;
        }
        let now = self.read().map(|(cpu, delay)| (cpu, delay, wall));
        if let (Some(s), Some(n)) = (self.start, now) {
            let w = Window {
                ios: self.ios as u64,
                cpu_ns: n.0.saturating_sub(s.0),
                delay_ns: n.1.saturating_sub(s.1),
                wall_ns: n.2.saturating_sub(s.2),
                device_ns: self.device_ns,
                lat_ns: self.lat_ns,
            };
            self.judge(&w);
        }
        self.start = now;
        self.ios = 0;
        self.device_ns = 0;
        self.lat_ns = 0;
    }

    fn opened_account(&self) -> bool {
        !self.cpus.is_empty()
    }

    /// Count this thread on the CPUs its mask allows (once, at its first
    /// window end; a mask that cannot be read counts it on CPU 0).
    fn count_in(&mut self) {
        let mut cpus = crate::placement::affinity::get_affinity(0).unwrap_or_default();
        cpus.retain(|&c| (c as usize) < MAX_CPUS);
        if cpus.is_empty() {
            cpus.push(0);
        }
        self.share = ONE_THREAD / cpus.len() as u32;
        for &c in &cpus {
            CPU_LOAD[c as usize].fetch_add(self.share, Ordering::Relaxed);
        }
        self.cpus = cpus;
    }

    /// Adaptive threads per CPU over this thread's CPUs, in `ONE_THREAD` units.
    fn load_per_cpu(&self) -> u32 {
        let sum: u64 = self
            .cpus
            .iter()
            .map(|&c| CPU_LOAD[c as usize].load(Ordering::Relaxed) as u64)
            .sum();
        (sum / self.cpus.len().max(1) as u64) as u32
    }

    /// Decide from one window (public for tests on synthetic windows).
    pub fn judge(&mut self, w: &Window) {
        // A contended verdict in force (depth 1) runs its back-off out first.
        if !self.contended && self.judge_depth(w) {
            return;
        }
        if self.contended {
            // Asleep: the window says nothing about spinning. Count down to a look.
            self.left = self.left.saturating_sub(1);
            if self.left == 0 {
                self.contended = false;
            }
            return;
        }
        self.judged += 1;
        if w.contended(self.wakeup_ns) {
            if !self.crowded && !self.suspect {
                // Beside a co-runner one window is a draw from the time-slice
                // lottery: a 5 ms window that caught the co-runner's whole slice
                // shows 60-85 us per I/O where its neighbours show 36-52 (20 us
                // device, one poller and a compute co-runner on CPU 0; sleeping
                // would cost 59), and acting on each such draw mixed polling
                // windows with napping ones, which has napping's p99 at nearly
                // polling's CPU (5-round grid: 17.6 us CPU per I/O, p99 32 us,
                // beaten by io_uring's hybrid). So it takes two contended windows
                // in a row; none came in 80 windows there. A crowd of our own
                // pollers is judged on one window: there every window is the
                // crowd's, and each spinning one costs the siblings their CPU.
                self.suspect = true;
                return;
            }
            self.suspect = false;
            self.detections += 1;
            self.last = Some(*w);
            if self.clean >= CLEAN_RESET {
                self.backoff = BACKOFF_MIN;
            } else if self.detections > 1 {
                self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
            }
            self.clean = 0;
            self.contended = true;
            self.left = self.backoff;
        } else {
            self.suspect = false;
            self.clean = self.clean.saturating_add(1);
        }
    }

    /// The depth trial (module docs); false when the window is not one for it
    /// (spinning at a depth under [`QUEUE_DEPTH`]: the rule above judges).
    fn judge_depth(&mut self, w: &Window) -> bool {
        match self.depth {
            Depth::Spin if w.depth() < QUEUE_DEPTH => false,
            Depth::Spin => {
                if self.depth_left > 0 {
                    self.depth_left -= 1;
                } else if w.short_of_cpu() && w.device_ns / w.ios.max(1) >= self.block_ns {
                    self.depth = Depth::Trial {
                        spin_ns: w.per_io_ns(),
                        spin_delay: w.delay_ns as f64 / w.wall_ns.max(1) as f64,
                    };
                }
                true
            }
            Depth::Trial {
                spin_ns,
                spin_delay,
            } => {
                let asleep_ns = w.per_io_ns();
                let t = &mut self.depth_trials;
                t.trials += 1;
                t.spin_ns = spin_ns;
                t.asleep_ns = asleep_ns;
                t.spin_delay = spin_delay;
                t.depth = w.depth();
                self.depth = if asleep_ns < spin_ns * (1.0 - DEPTH_MARGIN) {
                    t.won += 1;
                    Depth::Asleep
                } else {
                    Depth::Spin
                };
                // Either way the verdict holds for the back-off: asleep until
                // a look, or spinning without another trial.
                self.depth_left = self.depth_backoff;
                self.depth_backoff = (self.depth_backoff * 2).min(BACKOFF_MAX);
                true
            }
            Depth::Asleep => {
                self.depth_left = self.depth_left.saturating_sub(1);
                if self.depth_left == 0 {
                    // Look: spin one window (a shortage there trials again).
                    self.depth = Depth::Spin;
                }
                true
            }
        }
    }

    /// One line for the decision report, if a depth trial was ever run.
    pub fn depth_note(&self) -> Option<String> {
        let t = self.depth_trials;
        (t.trials > 0).then(|| {
            format!(
                "at depth (mean {:.1} in flight) short of CPU, waiting for the interrupt won {} \
                 of {} trial windows (last: {:.1} us per I/O spinning, {:.0}% of it waiting for \
                 a CPU, against {:.1} us asleep): {}",
                t.depth,
                t.won,
                t.trials,
                t.spin_ns / 1e3,
                100.0 * t.spin_delay,
                t.asleep_ns / 1e3,
                if self.asleep() {
                    "waiting for the interrupt"
                } else {
                    "spinning"
                }
            )
        })
    }

    /// CPU time and run-queue wait of this thread (ns), or None where the kernel
    /// has no schedstat (CONFIG_SCHED_INFO off): then nothing is ever judged.
    fn read(&mut self) -> Option<(u64, u64)> {
        if self.fd == -1 {
            // SAFETY: NUL-terminated path; the descriptor is ours (closed in Drop).
            let fd = unsafe {
                libc::open(
                    c"/proc/thread-self/schedstat".as_ptr(),
                    libc::O_RDONLY | libc::O_CLOEXEC,
                )
            };
            self.fd = if fd < 0 { -2 } else { fd };
        }
        if self.fd < 0 {
            return None;
        }
        let mut buf = [0u8; 96];
        // SAFETY: reads at most buf.len() bytes into our stack buffer.
        let n = unsafe { libc::pread(self.fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n <= 0 {
            return None;
        }
        let (_, delay) = parse_schedstat(&buf[..n as usize])?;
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec we own.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
            return None;
        }
        Some((ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64, delay))
    }

    /// One line for the decision report, if contention was ever found.
    pub fn note(&self) -> Option<String> {
        let w = self.last?;
        let ios = w.ios.max(1) as f64;
        Some(format!(
            "CPU contention in {} of {} windows of {WINDOW}+ requests (last: {:.1} us per I/O \
             spinning, {:.1} us of it on a CPU, against a {:.1} us device, {:.0}% of the time \
             waiting for a CPU): slept instead of spinning. {}; \
             hybrid classes nap from half their p50 and poll no later than p90 + a wakeup. \
             Looking again after {} windows",
            self.detections,
            self.judged,
            w.wall_ns as f64 / ios / 1e3,
            w.cpu_ns as f64 / ios / 1e3,
            w.device_ns as f64 / ios / 1e3,
            100.0 * w.delay_ns as f64 / w.wall_ns.max(1) as f64,
            if self.crowded {
                "Our adaptive threads outnumber the CPUs they may run on (a crowd): poll classes \
                 nap through their p50"
            } else {
                "Our adaptive threads do not outnumber the CPUs they may run on, so something \
                 else holds them (a co-runner): poll classes nap to one wakeup before their p50"
            },
            self.backoff
        ))
    }
}

/// "cpu_ns delay_ns timeslices\n".
fn parse_schedstat(b: &[u8]) -> Option<(u64, u64)> {
    let s = std::str::from_utf8(b).ok()?;
    let mut it = s.split_ascii_whitespace();
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: u64 = 15_000;

    /// A window of `WINDOW` requests: `wall_us` and `device_us` per I/O, `delay`
    /// the share of the wall time spent waiting for a CPU.
    fn w(wall_us: u64, device_us: u64, delay: f64) -> Window {
        let ios = WINDOW as u64;
        let wall = ios * wall_us * 1000;
        Window {
            ios,
            cpu_ns: (wall as f64 * (1.0 - delay)) as u64,
            delay_ns: (wall as f64 * delay) as u64,
            wall_ns: wall,
            device_ns: ios * device_us * 1000,
            lat_ns: ios * device_us * 1000,
        }
    }

    #[test]
    fn the_rule_needs_both_the_wait_and_the_cost_over_a_sleep() {
        // Alone, polling a 20 us device.
        assert!(!w(22, 20, 0.0).contended(W));
        // Four pollers on two CPUs, a 5 us device whose completions need no
        // CPU: half the time waiting, but 10 us per I/O beats 5 + 2 x 15 + 5.
        assert!(!w(10, 5, 0.5).contended(W));
        // Four pollers, a 20 us device whose completion needs the CPU they hold:
        // 327 us per I/O, half of it waiting.
        assert!(w(327, 20, 0.5).contended(W));
        // Just over a sleep's cost (20 + 30 + 5 = 55 us) with 20% waiting: sleep.
        assert!(w(60, 20, 0.2).contended(W));
        assert!(!w(54, 20, 0.2).contended(W));
        // Slow without a CPU shortage (the device slowed down): not contention.
        assert!(!w(327, 20, 0.05).contended(W));
    }

    #[test]
    fn backs_off_while_overloaded_and_returns_when_it_ends() {
        let mut c = Contention::new(W);
        // A crowd: each contended window is a verdict.
        c.set_crowded(true);
        let bad = w(327, 20, 0.5);
        let good = w(22, 20, 0.0);
        c.judge(&good);
        assert!(!c.contended());
        c.judge(&bad);
        assert!(c.contended());
        // Asleep for BACKOFF_MIN windows, whatever they show.
        for _ in 0..BACKOFF_MIN - 1 {
            c.judge(&good);
            assert!(c.contended());
        }
        c.judge(&good);
        assert!(!c.contended(), "looks again after the back-off");
        // Still overloaded: the back-off doubles each time, up to the cap.
        let mut expect = BACKOFF_MIN;
        for _ in 0..10 {
            c.judge(&bad);
            expect = (expect * 2).min(BACKOFF_MAX);
            let mut n = 0;
            while c.contended() {
                c.judge(&bad);
                n += 1;
            }
            assert_eq!(n, expect);
        }
        // Spinning windows stay rare: one look per BACKOFF_MAX windows.
        assert_eq!(c.detections, 11);
        // The overload ends: spinning stays, and after CLEAN_RESET clean windows a
        // new overload starts the back-off afresh.
        for _ in 0..CLEAN_RESET {
            c.judge(&good);
            assert!(!c.contended());
        }
        c.judge(&bad);
        assert_eq!(c.left, BACKOFF_MIN);
        assert!(c.note().unwrap().contains("CPU contention in 12 of"));
    }

    #[test]
    fn beside_a_co_runner_one_slow_window_is_not_a_verdict() {
        let mut c = Contention::new(W);
        assert!(!c.crowded());
        let bad = w(327, 20, 0.5);
        let good = w(22, 20, 0.0);
        // Slow windows scattered among ordinary ones: never contended.
        for _ in 0..20 {
            c.judge(&bad);
            assert!(!c.contended());
            c.judge(&good);
            assert!(!c.contended());
        }
        assert_eq!(c.detections, 0);
        assert_eq!(c.judged, 40);
        // Two in a row are.
        c.judge(&bad);
        assert!(!c.contended());
        c.judge(&bad);
        assert!(c.contended());
        assert_eq!(c.detections, 1);
        // The look after the back-off needs two again.
        for _ in 0..BACKOFF_MIN {
            c.judge(&bad);
        }
        assert!(!c.contended(), "looks after the back-off");
        c.judge(&bad);
        assert!(!c.contended(), "one slow look is not yet a verdict");
        c.judge(&bad);
        assert!(c.contended());
        assert_eq!(c.detections, 2);
    }

    /// A window at depth: `per_io_us` wall time per I/O, `depth` requests in
    /// flight on average, `delay` the share of it waiting for a CPU.
    fn at_depth(per_io_us: f64, depth: f64, delay: f64) -> Window {
        let ios = WINDOW as u64;
        let wall = (ios as f64 * per_io_us * 1000.0) as u64;
        Window {
            ios,
            cpu_ns: (wall as f64 * (1.0 - delay)) as u64,
            delay_ns: (wall as f64 * delay) as u64,
            wall_ns: wall,
            device_ns: ios * 10_000,
            lat_ns: (wall as f64 * depth) as u64,
        }
    }

    #[test]
    fn depth_is_the_windows_latency_over_its_wall_time() {
        let w = at_depth(10.0, 4.0, 0.0);
        assert!((w.depth() - 4.0).abs() < 1e-9);
        assert!((w.per_io_ns() - 10_000.0).abs() < 1e-9);
        // The depth-1 rule cannot fire at depth: 10 us per I/O spinning is far
        // under one request's sleep (10 + 2 x 15 + 5 us), however short of CPU.
        assert!(!at_depth(10.0, 4.0, 0.5).contended(W));
    }

    #[test]
    fn at_depth_short_of_cpu_a_trial_asleep_decides() {
        let mut c = Contention::new(W);
        // Spinning at depth 4 without a CPU shortage: no trial.
        c.judge(&at_depth(10.0, 4.0, 0.05));
        assert!(!c.asleep());
        // Short of CPU: the next window waits for the interrupt.
        c.judge(&at_depth(10.0, 4.0, 0.4));
        assert!(c.asleep(), "a trial window asleep");
        assert!(!c.contended(), "the depth-1 verdict is not touched");
        // Asleep it took 6 us per I/O against spinning's 10: keep sleeping.
        c.judge(&at_depth(6.0, 4.0, 0.0));
        assert!(c.asleep());
        assert_eq!((c.depth_trials.trials, c.depth_trials.won), (1, 1));
        let note = c.depth_note().unwrap();
        assert!(
            note.contains("won 1 of 1 trial windows")
                && note.contains("10.0 us per I/O spinning, 40% of it waiting")
                && note.contains("against 6.0 us asleep")
                && note.ends_with("waiting for the interrupt"),
            "{note}"
        );
        // For the back-off (8 windows), then one spinning window to look.
        for _ in 0..BACKOFF_MIN {
            assert!(c.asleep());
            c.judge(&at_depth(6.0, 4.0, 0.0));
        }
        assert!(!c.asleep(), "looks after the back-off");
        // The look is short of CPU again: another trial, which loses this time
        // (8 us asleep is not a quarter under 10): spin, and no trial for the
        // doubled back-off however short of CPU.
        c.judge(&at_depth(10.0, 4.0, 0.4));
        assert!(c.asleep());
        c.judge(&at_depth(8.0, 4.0, 0.0));
        assert!(!c.asleep());
        assert_eq!((c.depth_trials.trials, c.depth_trials.won), (2, 1));
        for _ in 0..2 * BACKOFF_MIN {
            c.judge(&at_depth(10.0, 4.0, 0.4));
            assert!(!c.asleep(), "no trial during the back-off");
        }
        c.judge(&at_depth(10.0, 4.0, 0.4));
        assert!(c.asleep(), "then a trial again");
    }

    #[test]
    fn a_device_faster_than_the_shortest_blocking_sleep_is_never_trialled() {
        let mut c = Contention::new(W);
        // The windows' device is 10 us; sleeps under 16 us do not block here.
        c.set_block_ns(16_000);
        for _ in 0..20 {
            c.judge(&at_depth(10.0, 4.0, 0.5));
        }
        assert!(!c.asleep());
        assert_eq!(c.depth_trials.trials, 0);
        // Under 10 us they do: the first short window trials.
        c.set_block_ns(8_000);
        c.judge(&at_depth(10.0, 4.0, 0.5));
        assert!(c.asleep());
    }

    #[test]
    fn at_depth_one_the_trial_never_starts() {
        // Polling alone at QD1, short of CPU (a co-runner): the depth-1 rule
        // judges, and a window under its sleeping cost is not contention.
        let mut c = Contention::new(W);
        for _ in 0..20 {
            c.judge(&at_depth(22.0, 0.9, 0.4));
        }
        assert!(!c.asleep());
        assert_eq!(c.depth_trials.trials, 0);
        assert_eq!(c.judged, 20);
    }

    #[test]
    fn the_first_request_opens_the_first_window() {
        let mut c = Contention::new(W);
        c.tick(1_000_000, 0);
        if c.fd < 0 {
            println!("SKIPPED: no /proc/thread-self/schedstat (CONFIG_SCHED_INFO off)");
            return;
        }
        assert!(c.start.is_some(), "the window opens at the first request");
        assert_eq!(c.ios, 0);
        std::thread::sleep(std::time::Duration::from_nanos(MIN_WINDOW_NS));
        // One window of spinning requests decides, not two.
        for _ in 0..WINDOW {
            c.tick(1_000_000, 0);
        }
        assert_eq!(c.judged, 1);
    }

    #[test]
    fn more_adaptive_threads_than_their_cpus_are_a_crowd() {
        // Three threads that may run only on CPU 0 (whichever CPUs the machine
        // has): each counts itself at its first request, and the next window
        // end sees three adaptive threads for one CPU. Other tests running at
        // the same time can only add to the count.
        let ready = std::sync::Arc::new(std::sync::Barrier::new(3));
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let ready = ready.clone();
                std::thread::spawn(move || {
                    let pinned = crate::placement::affinity::set_affinity(0, &[0]).is_ok();
                    let mut c = Contention::new(W);
                    c.tick(1_000_000, 0);
                    ready.wait();
                    for _ in 0..WINDOW {
                        c.tick(1_000_000, 0);
                    }
                    // Stay counted until all three have judged.
                    ready.wait();
                    (pinned, c.cpus.clone(), c.crowded())
                })
            })
            .collect();
        for t in threads {
            let (pinned, cpus, crowded) = t.join().unwrap();
            assert!(pinned, "sched_setaffinity to CPU 0 failed");
            assert_eq!(cpus, vec![0]);
            assert!(crowded, "3 adaptive threads on 1 CPU are not a crowd");
        }
        // A thread that is not counted yet was never judged a crowd.
        assert!(!Contention::new(W).crowded());
    }

    #[test]
    fn reads_this_threads_schedstat() {
        let mut c = Contention::new(W);
        match c.read() {
            Some((cpu, _delay)) => assert!(cpu > 0, "the thread's CPU clock reads 0"),
            None => println!("SKIPPED: no /proc/thread-self/schedstat (CONFIG_SCHED_INFO off)"),
        }
        assert_eq!(
            parse_schedstat(b"767156 2312767 2\n"),
            Some((767156, 2312767))
        );
        assert_eq!(parse_schedstat(b"x"), None);
        if c.fd < 0 {
            return;
        }
        // Real counters: the first window end starts the account; windows
        // shorter than MIN_WINDOW_NS are not judged, longer ones are. A 1 ms
        // "device" is far slower than this loop: never contention.
        for _ in 0..3 * WINDOW {
            c.tick(1_000_000, 0);
        }
        let before = c.judged;
        std::thread::sleep(std::time::Duration::from_nanos(MIN_WINDOW_NS));
        for _ in 0..WINDOW {
            c.tick(1_000_000, 0);
        }
        assert_eq!(c.judged, before + 1);
        assert!(!c.contended());
    }
}
