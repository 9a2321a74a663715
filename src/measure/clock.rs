//! The engine clock, in nanoseconds.
//!
//! Every timestamp in iolab (request issue, submit, device start/finish on the null
//! device, completion seen) is on this clock, so differences between stages are
//! exact. Two sources, like fio's `clocksource`:
//!
//! * `tsc` — the CPU's invariant time-stamp counter, scaled to ns by a factor
//!   calibrated against CLOCK_MONOTONIC at start. About half the cost of a vDSO
//!   `clock_gettime` on this kind of machine, which matters when a request takes
//!   a few hundred nanoseconds and is timestamped three times. Chosen only when the
//!   CPU says the TSC is constant and non-stop and the kernel itself uses it.
//! * `monotonic` — CLOCK_MONOTONIC through the vDSO. Used when the TSC is not
//!   trustworthy, or when asked (`IOLAB_CLOCK=monotonic`, `use_monotonic`).
//!
//! Kernel trace stamps join engine stamps on either source: with the TSC, a trace
//! instance stamps events with the raw TSC (`x86-tsc`) and [`tsc_scale`] converts
//! them with the engine's own factor and anchor, so both sides drift together.
//!
//! Both read the same timescale (the TSC source is anchored to CLOCK_MONOTONIC), so
//! sleeps use relative CLOCK_MONOTONIC timeouts computed from engine time.

use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

/// 0 = monotonic; otherwise the TSC factor: ns per tick in 32.32 fixed point.
static TSC_MULT: AtomicU64 = AtomicU64::new(0);
static TSC_BASE: AtomicU64 = AtomicU64::new(0);
static NS_BASE: AtomicU64 = AtomicU64::new(0);
static INIT: Once = Once::new();

/// CLOCK_MONOTONIC in ns (the engine clock's reference).
#[inline(always)]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tsc() -> u64 {
    // SAFETY: rdtsc has no preconditions on x86_64.
    unsafe { std::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn tsc() -> u64 {
    0
}

/// Nanoseconds on the engine clock.
#[inline(always)]
pub fn now_ns() -> u64 {
    let mult = TSC_MULT.load(Ordering::Relaxed);
    if mult == 0 {
        return monotonic_ns();
    }
    let d = tsc().wrapping_sub(TSC_BASE.load(Ordering::Relaxed));
    NS_BASE.load(Ordering::Relaxed) + ((d as u128 * mult as u128) >> 32) as u64
}

/// `hint` (a backend's `clock_hint`: the engine-clock value it read at its
/// last commit or completing peek), or now when it read none: the same instant
/// is not read twice.
#[inline(always)]
pub fn hint_or_now(hint: u64) -> u64 {
    match hint {
        0 => now_ns(),
        t => t,
    }
}

/// Pick the clock source once per process: the TSC where it is trustworthy,
/// unless `IOLAB_CLOCK=monotonic` says otherwise. Call at program start, before
/// any timestamp is taken (the binary's `main` does); later calls do nothing.
/// Without it the engine clock is CLOCK_MONOTONIC.
pub fn init() {
    INIT.call_once(|| {
        if std::env::var("IOLAB_CLOCK").as_deref() == Ok("monotonic") {
            return;
        }
        if let Some((mult, tsc0, ns0)) = calibrate_tsc() {
            TSC_BASE.store(tsc0, Ordering::Relaxed);
            NS_BASE.store(ns0, Ordering::Relaxed);
            TSC_MULT.store(mult, Ordering::Release);
        }
    });
}

/// Switch to CLOCK_MONOTONIC for the rest of the process. Call before any
/// worker starts.
pub fn use_monotonic() {
    INIT.call_once(|| {});
    TSC_MULT.store(0, Ordering::Release);
}

/// The engine clock's TSC calibration, when it reads the TSC: lets raw TSC
/// values taken elsewhere (the kernel's `x86-tsc` trace clock) be put on the
/// engine's timescale with the very factor and anchor `now_ns` uses, so the two
/// agree exactly rather than to within two calibrations' error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TscScale {
    /// ns per tick, 32.32 fixed point.
    pub mult: u64,
    pub tsc_base: u64,
    pub ns_base: u64,
}

impl TscScale {
    /// Engine-clock ns of a raw TSC value. Ticks before the anchor (a kernel
    /// event stamped just before calibration) are scaled backwards, not wrapped.
    #[inline]
    pub fn to_ns(self, ticks: u64) -> u64 {
        let d = ticks.wrapping_sub(self.tsc_base) as i64 as i128;
        let ns = self.ns_base as i128 + ((d * self.mult as i128) >> 32);
        ns.clamp(0, u64::MAX as i128) as u64
    }
}

/// The TSC calibration `now_ns` uses, or None when the engine clock is
/// CLOCK_MONOTONIC.
pub fn tsc_scale() -> Option<TscScale> {
    let mult = TSC_MULT.load(Ordering::Acquire);
    (mult != 0).then(|| TscScale {
        mult,
        tsc_base: TSC_BASE.load(Ordering::Relaxed),
        ns_base: NS_BASE.load(Ordering::Relaxed),
    })
}

/// The sources `now_ns` may read, by the names reports give them.
pub const SOURCES: [&str; 2] = [
    "clock_gettime(CLOCK_MONOTONIC)",
    "tsc (calibrated against CLOCK_MONOTONIC)",
];

/// Which source `now_ns` reads.
pub fn source() -> &'static str {
    if TSC_MULT.load(Ordering::Relaxed) == 0 {
        SOURCES[0]
    } else {
        SOURCES[1]
    }
}

/// One of [`SOURCES`]. Spelt as an alias because serde's derive takes a literal
/// `&'static str` field for a borrow of the input (and would then only read
/// from `'static` input); the field reads back through `source_named` instead.
type SourceName = &'static str;

/// Reads a saved clock source back as one of [`SOURCES`].
fn source_named<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    let s = <String as serde::Deserialize>::deserialize(d)?;
    SOURCES.into_iter().find(|n| *n == s).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "unknown clock source `{s}` (valid: {})",
            SOURCES.join(", ")
        ))
    })
}

/// The TSC is usable when the CPU flags it constant-rate and non-stop and the
/// kernel's own clocksource is the TSC (so it found it stable across CPUs).
fn tsc_trustworthy() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .unwrap_or("");
    let has = |f: &str| flags.split_whitespace().any(|x| x == f);
    let cs =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default();
    has("constant_tsc") && has("nonstop_tsc") && cs.trim() == "tsc"
}

/// A (tsc, monotonic ns) pair read as close together as possible: the pair with
/// the narrowest TSC bracket around the clock_gettime call of 16 tries.
fn anchor() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..16 {
        let a = tsc();
        let ns = monotonic_ns();
        let b = tsc();
        if b.wrapping_sub(a) < best.0 {
            best = (b.wrapping_sub(a), a + (b.wrapping_sub(a)) / 2, ns);
        }
    }
    (best.1, best.2)
}

/// Ticks-to-ns factor from two anchors 20 ms apart (a few ppm of error).
fn calibrate_tsc() -> Option<(u64, u64, u64)> {
    if !tsc_trustworthy() {
        return None;
    }
    let (t0, n0) = anchor();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (t1, n1) = anchor();
    let (dt, dn) = (t1.checked_sub(t0)?, n1.checked_sub(n0)?);
    if dt == 0 || dn == 0 {
        return None;
    }
    let mult = ((dn as u128) << 32) / dt as u128;
    // A TSC under 100 MHz or over 10 GHz means something is off: do not use it.
    if !(100_000_000..=10_000_000_000).contains(&(dt as u128 * 1_000_000_000 / dn as u128)) {
        return None;
    }
    Some((mult as u64, t0, n0))
}

/// Cost of one clock reading, measured.
#[derive(schemars::JsonSchema, Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct ClockCheck {
    /// Median over batches of the cost of one `now_ns()` call, in ns.
    pub cost_ns: f64,
    /// Smallest non-zero step seen between consecutive readings, in ns.
    pub resolution_ns: u64,
    #[serde(deserialize_with = "source_named")]
    pub source: SourceName,
    /// Engine clock minus CLOCK_MONOTONIC right now, ns (TSC drift since start).
    pub offset_from_monotonic_ns: i64,
}

/// Measure the clock: 9 batches of 20k readings; the median batch gives the cost.
pub fn self_check() -> ClockCheck {
    const N: u64 = 20_000;
    let mut per_call = Vec::with_capacity(9);
    let mut resolution = u64::MAX;
    for _ in 0..9 {
        let start = now_ns();
        let mut prev = start;
        for _ in 0..N {
            let t = now_ns();
            if t > prev {
                resolution = resolution.min(t - prev);
            }
            prev = t;
        }
        per_call.push(prev.saturating_sub(start) as f64 / N as f64);
    }
    per_call.sort_by(|a, b| a.total_cmp(b));
    let offset = now_ns() as i64 - monotonic_ns() as i64;
    ClockCheck {
        cost_ns: per_call[per_call.len() / 2],
        resolution_ns: if resolution == u64::MAX {
            0
        } else {
            resolution
        },
        source: source(),
        offset_from_monotonic_ns: offset,
    }
}

/// Sleep until the engine-clock time `deadline_ns` (an hrtimer sleep). Relative
/// to now, so the TSC's small rate error only scales the nap, never shifts it.
pub fn sleep_until(deadline_ns: u64) {
    let now = now_ns();
    if deadline_ns <= now {
        return;
    }
    let d = deadline_ns - now;
    let ts = libc::timespec {
        tv_sec: (d / 1_000_000_000) as libc::time_t,
        tv_nsec: (d % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: valid timespec; EINTR simply returns early, which callers tolerate
    // because they re-check the clock.
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &ts, std::ptr::null_mut()) };
}

/// Spin on the CPU until `deadline_ns` on the engine clock (fio's
/// `thinktime_spin`: a pause that keeps the CPU busy).
pub fn spin_until(deadline_ns: u64) {
    while now_ns() < deadline_ns {
        std::hint::spin_loop();
    }
}

/// Make hrtimer sleeps of this thread expire on time: the default 50 us slack
/// would swamp microsecond-scale device latencies.
pub fn set_thread_timer_slack_ns(ns: u64) {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic_and_cheap_enough_to_report() {
        init();
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a);
        let c = self_check();
        assert!(c.cost_ns > 0.0, "a clock read cannot be free: {c:?}");
        assert!(c.resolution_ns > 0);
    }

    #[test]
    fn engine_clock_tracks_monotonic() {
        init();
        // Over 50 ms the calibrated TSC must agree with CLOCK_MONOTONIC to within
        // 0.1% of the interval (a wrong factor would be off by far more).
        let (e0, m0) = (now_ns(), monotonic_ns());
        std::thread::sleep(std::time::Duration::from_millis(50));
        let (e1, m1) = (now_ns(), monotonic_ns());
        let (de, dm) = ((e1 - e0) as f64, (m1 - m0) as f64);
        assert!(
            (de - dm).abs() < dm * 1e-3,
            "engine {de} ns vs monotonic {dm} ns ({})",
            source()
        );
        let off = (now_ns() as i64 - monotonic_ns() as i64).abs();
        assert!(
            off < 1_000_000,
            "engine clock {off} ns away from CLOCK_MONOTONIC"
        );
    }

    #[test]
    fn tsc_scale_matches_now_ns() {
        init();
        let Some(sc) = tsc_scale() else {
            eprintln!("skipped: engine clock is {} (no TSC scale)", source());
            return;
        };
        // The same tick value through both paths gives the same ns.
        let t = tsc();
        let d = t.wrapping_sub(sc.tsc_base);
        let direct = sc.ns_base + ((d as u128 * sc.mult as u128) >> 32) as u64;
        assert_eq!(sc.to_ns(t), direct);
        // A raw reading lands between two engine readings around it.
        let a = now_ns();
        let v = sc.to_ns(tsc());
        let b = now_ns();
        assert!(a <= v && v <= b, "{a} <= {v} <= {b}");
    }

    #[test]
    fn tsc_scale_goes_backwards_before_the_anchor() {
        // 1 ns per tick: 1 << 32 in 32.32.
        let sc = TscScale {
            mult: 1 << 32,
            tsc_base: 1_000,
            ns_base: 5_000,
        };
        assert_eq!(sc.to_ns(1_500), 5_500);
        assert_eq!(sc.to_ns(400), 4_400);
        assert_eq!(sc.to_ns(0), 4_000);
        let half = TscScale {
            mult: 1 << 31,
            ..sc
        };
        assert_eq!(half.to_ns(3_000), 6_000);
        let early = TscScale { ns_base: 10, ..sc };
        assert_eq!(early.to_ns(0), 0, "clamped, not wrapped");
    }

    #[test]
    fn sleep_until_waits_at_least_until_deadline() {
        init();
        set_thread_timer_slack_ns(1);
        let deadline = now_ns() + 200_000;
        sleep_until(deadline);
        assert!(now_ns() >= deadline);
    }
}
