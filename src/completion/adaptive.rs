//! The adaptive completion model: measure, then choose per request size.
//!
//! Two measurements drive it:
//! * this machine's wakeup cost — how late a thread that sleeps on an hrtimer
//!   actually runs again (the price of any sleep-based model), measured once;
//! * the device's latency per size class (log2 of the request length), learned
//!   from completions while polling (polling adds no wakeup noise to the sample).
//!
//! Rule, per size class, from the class's latency percentiles (p10, p50, p90 of
//! a decaying log-bucket histogram: robust against the preemption outliers a
//! busy machine adds, which would drag a mean far off) and wakeup cost `W`:
//! * `p50 < 2W`: poll — a sleep would cost about as much as the whole wait.
//! * `p90 - p10 > p50/2`: interrupt — latency too unpredictable to time a nap;
//!   except while this process's adaptive threads crowd the CPUs, where the
//!   spread is the run queue's (a preempted poller's wait for a CPU) and an
//!   interrupt would not narrow it: hybrid.
//! * otherwise: hybrid — sleep until `p10 - 1.5W` after submit, then poll: the
//!   thread wakes before almost every completion and gives most of the wait
//!   back to other tasks.
//!
//! One more measurement overrides the rule for every class: CPU contention
//! ([`super::contention`]), judged per window of requests from the thread's
//! schedstat. When the thread waits for a CPU and spins far longer per I/O than
//! the device takes, its spinning holds the CPU the completions need (more
//! polling threads than CPUs, or a co-runner): a poll class then sleeps on its
//! own timer and polls what is left (a hybrid nap of the whole p50 when this
//! process's adaptive threads crowd the CPUs, of the p50 less one wakeup when
//! the CPU's holder is someone else, and never shorter than the shortest sleep
//! that really blocks here); a hybrid class naps from half its p50, learning
//! from how the naps end, and polls no later than its p90 plus a wakeup. It
//! looks again after a back-off.
//!
//! Where the backend can also perform a request synchronously in the caller's
//! context (io_uring: pread on the ring's descriptor) and the worker runs one
//! request at a time, a third measurement decides the submission path: after the
//! class is calibrated through the queue, the next requests go inline, and the
//! class keeps whichever path had the lower p50. On a target that punts every
//! queued request to an io-wq worker (zram: no NOWAIT) the inline path skips two
//! cross-thread handoffs; on a real device the queued path wins, since an inline
//! call sleeps for the device and pays the wakeup. Every `RECHECK` requests the
//! losing path is sampled again, so a change of regime is followed. At depth > 1
//! inline submission would serialise the queue, so it is not tried there.
//!
//! Every decision is kept with its numbers so a run can say why.

use std::sync::OnceLock;

use super::contention::Contention;
use crate::job::CompletionModel;
use crate::measure::clock;

/// Size classes: log2(len) from 2^9 (512 B) to 2^24 (16 MiB).
const MIN_SHIFT: u32 = 9;
const CLASSES: usize = 16;
/// Samples a class needs before it leaves calibration.
const CALIBRATION_SAMPLES: u64 = 64;
/// While calibrating, look at the samples this often: a slow device stops
/// being polled from submit on after the first look (see `redecide`).
const CALIBRATION_STEP: u64 = 8;
/// A calibrating class naps once its p10 is this many wakeup costs or more.
const CALIBRATION_NAP_WAKEUPS: f64 = 4.0;

/// Buckets per octave of the latency histogram (12.5% wide: ~6% error).
const SUB: u32 = 8;
/// Octaves covered: 64 ns .. 64 ns * 2^24 (~1 s); outside values clamp.
const OCTAVES: u32 = 24;
const BUCKETS: usize = (SUB * OCTAVES) as usize;
const BASE_SHIFT: u32 = 6;
/// Recompute a class's decision every this many samples.
const REDECIDE: u64 = 32;
/// Halve the histogram every this many samples so it follows a changing device.
const DECAY: u64 = 4096;
/// Re-sample the submission path not taken every this many requests of a class.
const RECHECK: u64 = 16_384;
/// Requests per path when both paths are re-sampled.
const PROBE: u32 = 32;
/// How much faster (fraction of p50) the other path must be to replace the one in force.
const SWITCH_MARGIN: f64 = 0.10;
/// Sleep lengths tried when looking for the shortest one that blocks (ns).
const BLOCK_TRIES_NS: [u64; 6] = [1_000, 2_000, 4_000, 8_000, 16_000, 32_000];
/// Sleeps per length, and how many of them must block.
const BLOCK_SAMPLES: u32 = 8;
const BLOCK_NEEDED: u32 = 7;

/// What a probe sends where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Probe {
    /// Every request inline (the first look at the inline path).
    Inline,
    /// Alternate inline and queued (rechecks).
    Both,
}

fn bucket_of(ns: u64) -> usize {
    let v = ns.max(1 << BASE_SHIFT);
    let oct = 63 - v.leading_zeros();
    // The three bits below the leading one pick the eighth of the octave.
    let sub = ((v >> (oct - 3)) & (SUB as u64 - 1)) as u32;
    (((oct - BASE_SHIFT) * SUB + sub) as usize).min(BUCKETS - 1)
}

fn bucket_value(b: usize) -> f64 {
    let oct = b as u32 / SUB + BASE_SHIFT;
    let sub = b as u32 % SUB;
    // Middle of the bucket.
    2f64.powi(oct as i32) * (1.0 + (sub as f64 + 0.5) / SUB as f64)
}

/// A decaying log-bucket latency histogram.
#[derive(Clone, Debug)]
struct Hist {
    /// Samples ever recorded.
    n: u64,
    counts: [u32; BUCKETS],
    /// Samples currently in `counts` (after decay).
    held: u64,
}

impl Default for Hist {
    fn default() -> Self {
        Hist {
            n: 0,
            counts: [0; BUCKETS],
            held: 0,
        }
    }
}

impl Hist {
    #[inline]
    fn record(&mut self, ns: u64) {
        self.n += 1;
        self.counts[bucket_of(ns)] += 1;
        self.held += 1;
        if self.n.is_multiple_of(DECAY) {
            self.held = 0;
            for h in self.counts.iter_mut() {
                *h /= 2;
                self.held += *h as u64;
            }
        }
    }

    /// Forget the shape (not the count): the next samples describe the path anew.
    fn clear(&mut self) {
        self.counts = [0; BUCKETS];
        self.held = 0;
    }

    fn percentiles(&self) -> [f64; 3] {
        let mut out = [0.0; 3];
        if self.held == 0 {
            return out;
        }
        let targets = [0.10, 0.50, 0.90].map(|q| (q * self.held as f64).ceil().max(1.0) as u64);
        let mut acc = 0u64;
        let mut k = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            acc += c as u64;
            while k < 3 && acc >= targets[k] {
                out[k] = bucket_value(b);
                k += 1;
            }
            if k == 3 {
                break;
            }
        }
        out
    }
}

/// Latency statistics and decisions of one size class.
#[derive(Clone, Debug)]
struct ClassStats {
    /// Requests that went through the queue (the completion model's samples).
    queued: Hist,
    /// Requests performed inline, in the caller's context.
    inline: Hist,
    /// Cached decision: (model, nap ns), and the percentiles behind it.
    model: CompletionModel,
    nap: u64,
    /// Correction of `nap` learned from how each nap ended (see
    /// [`Adaptive::after_nap`]), ns; kept within [-nap, p10 - nap].
    nap_adj: i64,
    /// The same correction for naps taken while the CPU is contended, which
    /// start from half the p50 (see [`Adaptive::nap_ns`]).
    contended_adj: i64,
    p: [f64; 3],
    /// Submission path in force: inline (synchronous) rather than queued.
    go_inline: bool,
    /// Requests still to send as the probe says (calibration or recheck).
    probe: u32,
    probe_kind: Probe,
    /// Samples of each path that complete the current probe.
    probe_target: u64,
    /// Requests since the paths were last compared.
    since: u64,
    /// p50s of (queued, inline) at the last comparison, ns.
    compared: Option<(f64, f64)>,
}

impl Default for ClassStats {
    fn default() -> Self {
        ClassStats {
            queued: Hist::default(),
            inline: Hist::default(),
            // Poll while calibrating: it adds no wakeup noise to the samples.
            model: CompletionModel::Poll,
            nap: 0,
            nap_adj: 0,
            contended_adj: 0,
            p: [0.0; 3],
            go_inline: false,
            probe: 0,
            probe_kind: Probe::Inline,
            probe_target: 0,
            since: 0,
            compared: None,
        }
    }
}

/// One decision, with the numbers behind it.
#[derive(schemars::JsonSchema, Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Decision {
    /// Requests of at most this many bytes (the class's upper bound).
    pub size_class: u64,
    pub model: CompletionModel,
    pub device_latency_ns: u64,
    pub latency_sd_ns: u64,
    pub wakeup_ns: u64,
    pub nap_ns: u64,
    pub samples: u64,
    /// p50 of requests performed inline (synchronously in the caller's context),
    /// where that path was measured.
    pub inline_latency_ns: Option<u64>,
    pub why: String,
}

#[derive(Clone, Debug)]
pub struct Adaptive {
    wakeup_ns: u64,
    /// The shortest sleep that gives the CPU away on this machine (ns):
    /// contended naps last at least this long from the moment they start.
    block_ns: u64,
    /// The backend can perform a request inline and the worker runs one at a time.
    inline_ok: bool,
    /// One entry per size class, allocated once.
    classes: Vec<ClassStats>,
    /// Whether spinning takes the CPU the completions need (checked per window).
    contention: Contention,
}

/// This machine's wakeup cost (ns): median lateness of a 20 us hrtimer sleep,
/// measured once per process with timer slack set to 1 ns.
pub fn wakeup_cost_ns() -> u64 {
    static COST: OnceLock<u64> = OnceLock::new();
    *COST.get_or_init(|| measure_wakeup_cost(41))
}

/// Measure wakeup lateness: sleep until a deadline `samples` times and take the
/// median of (time seen awake - deadline) plus the sleep's entry cost.
pub fn measure_wakeup_cost(samples: usize) -> u64 {
    clock::set_thread_timer_slack_ns(1);
    let mut late: Vec<u64> = (0..samples)
        .map(|_| {
            let start = clock::now_ns();
            let deadline = start + 20_000;
            clock::sleep_until(deadline);
            clock::now_ns().saturating_sub(deadline)
        })
        .collect();
    late.sort_unstable();
    late[late.len() / 2].max(1)
}

/// The shortest sleep (ns) that gives the CPU away on this machine, measured
/// once per process: 0 where no sleep is asked for (`wakeup_ns == 0`).
pub fn blocking_sleep_ns() -> u64 {
    static BLOCK: OnceLock<u64> = OnceLock::new();
    *BLOCK.get_or_init(|| measure_blocking_sleep(&BLOCK_TRIES_NS))
}

/// Voluntary context switches of this thread so far.
fn voluntary_switches() -> Option<i64> {
    // SAFETY: getrusage writes one rusage we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_THREAD is this thread only.
    (unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } == 0).then_some(ru.ru_nvcsw)
}

/// The first of `tries` (ns, ascending) at which at least `BLOCK_NEEDED` of
/// `BLOCK_SAMPLES` sleeps made a voluntary context switch; the last one if
/// none did. Why: a sleep whose timer is due before the thread reaches the
/// scheduler returns without blocking, yet still costs the timer's
/// programming. On this Firecracker VM sleeps of up to 5 us never blocked and
/// took 15-20 us each, holding the CPU all along; 8 us blocked. A nap meant to
/// hand the CPU to another thread must be at least this long.
pub fn measure_blocking_sleep(tries: &[u64]) -> u64 {
    clock::set_thread_timer_slack_ns(1);
    let last = tries.last().copied().unwrap_or(0);
    for &d in tries {
        let mut blocked = 0;
        for _ in 0..BLOCK_SAMPLES {
            let Some(before) = voluntary_switches() else {
                return last;
            };
            clock::sleep_until(clock::now_ns() + d);
            if voluntary_switches().is_some_and(|after| after > before) {
                blocked += 1;
            }
        }
        if blocked >= BLOCK_NEEDED {
            return d;
        }
    }
    last
}

/// `samples` values spread evenly over `p50 +- spread` (synthetic calibrations).
fn spread(p50_ns: u64, spread_ns: u64, samples: u64) -> impl Iterator<Item = u64> {
    (0..samples).map(move |i| {
        let f = if samples > 1 {
            i as f64 / (samples - 1) as f64 * 2.0 - 1.0
        } else {
            0.0
        };
        (p50_ns as f64 + f * spread_ns as f64).max(1.0) as u64
    })
}

fn class_of(len: u32) -> usize {
    let shift = 32 - len.max(1).saturating_sub(1).leading_zeros();
    (shift.saturating_sub(MIN_SHIFT) as usize).min(CLASSES - 1)
}

impl Adaptive {
    pub fn new(wakeup_ns: u64) -> Adaptive {
        let block_ns = if wakeup_ns > 0 {
            blocking_sleep_ns()
        } else {
            0
        };
        Adaptive::with_blocking_sleep(wakeup_ns, block_ns)
    }

    /// [`Adaptive::new`] with a given shortest blocking sleep (synthetic tests).
    pub fn with_blocking_sleep(wakeup_ns: u64, block_ns: u64) -> Adaptive {
        let mut contention = Contention::new(wakeup_ns);
        contention.set_block_ns(block_ns);
        Adaptive {
            wakeup_ns,
            block_ns,
            inline_ok: false,
            classes: vec![ClassStats::default(); CLASSES],
            contention,
        }
    }

    /// Let the submission path be chosen too: the backend can perform a request
    /// synchronously ([`crate::device::Caps::inline`]) and the worker's depth is 1.
    pub fn allow_inline(&mut self) {
        self.inline_ok = true;
    }

    /// Seed a class with a known latency distribution (synthetic calibrations,
    /// tests, `probe`): `samples` values spread evenly over p50 +- spread.
    pub fn calibrate(&mut self, len: u32, p50_ns: u64, spread_ns: u64, samples: u64) {
        let c = &mut self.classes[class_of(len)];
        *c = ClassStats::default();
        for v in spread(p50_ns, spread_ns, samples) {
            c.queued.record(v);
        }
        Self::redecide(c, self.wakeup_ns, self.contention.crowded());
    }

    /// Seed a class's inline path the same way, and compare the two paths.
    pub fn calibrate_inline(&mut self, len: u32, p50_ns: u64, spread_ns: u64, samples: u64) {
        let c = &mut self.classes[class_of(len)];
        c.inline = Hist::default();
        for v in spread(p50_ns, spread_ns, samples) {
            c.inline.record(v);
        }
        c.probe = 0;
        Self::compare(c);
    }

    /// Whether the next request of `len` bytes is to be performed inline. Called
    /// once per request, before submission, when inline is allowed.
    #[inline]
    pub fn take_inline(&mut self, len: u32) -> bool {
        if !self.inline_ok {
            return false;
        }
        let c = &mut self.classes[class_of(len)];
        c.since += 1;
        if c.probe > 0 {
            c.probe -= 1;
            return match c.probe_kind {
                Probe::Inline => true,
                // Alternate request by request: both paths see the same moment
                // of a noisy machine, so their medians compare fairly.
                Probe::Both => c.probe & 1 == 1,
            };
        }
        if c.since >= RECHECK && c.compared.is_some() {
            c.since = 0;
            c.queued.clear();
            c.inline.clear();
            c.probe = 2 * PROBE;
            c.probe_kind = Probe::Both;
            c.probe_target = PROBE as u64;
        }
        c.go_inline
    }

    /// Learn from one completed request: its issue-to-completion latency and the
    /// path it took.
    #[inline]
    pub fn observe(&mut self, len: u32, clat_ns: u64, inline: bool) {
        let w = self.wakeup_ns;
        let inline_ok = self.inline_ok;
        let crowded = self.contention.crowded();
        let c = &mut self.classes[class_of(len)];
        if inline {
            c.inline.record(clat_ns);
        } else {
            // While contended the latency measures our own nap (p50 plus the
            // wakeup), not the device: learning from it would lengthen the nap
            // by a wakeup at every redecision. Keep the device's figures. The
            // same while the depth trial waits for the interrupt.
            if !self.contention.contended() && !self.contention.asleep() {
                c.queued.record(clat_ns);
                let n = c.queued.n;
                if n.is_multiple_of(REDECIDE)
                    || (n < CALIBRATION_SAMPLES && n.is_multiple_of(CALIBRATION_STEP))
                {
                    Self::redecide(c, w, crowded);
                }
            }
            self.contention.tick(c.p[1] as u64, clat_ns);
            if inline_ok && c.queued.n == CALIBRATION_SAMPLES && c.compared.is_none() {
                // The queued path is calibrated (polled: its best case); now
                // measure the inline one.
                c.probe = CALIBRATION_SAMPLES as u32;
                c.probe_kind = Probe::Inline;
                c.probe_target = CALIBRATION_SAMPLES;
            }
        }
        if c.probe == 0 && c.probe_target > 0 && c.queued.held.min(c.inline.held) >= c.probe_target
        {
            c.probe_target = 0;
            Self::compare(c);
        }
    }

    /// Keep the submission path with the lower median latency. Once a path is in
    /// force the other must beat it by `SWITCH_MARGIN`, so noise does not flip it.
    fn compare(c: &mut ClassStats) {
        let q = c.queued.percentiles()[1];
        let i = c.inline.percentiles()[1];
        if q > 0.0 && i > 0.0 {
            c.go_inline = match c.compared {
                None => i < q,
                Some(_) if c.go_inline => i <= q * (1.0 + SWITCH_MARGIN),
                Some(_) => i * (1.0 + SWITCH_MARGIN) < q,
            };
            c.compared = Some((q, i));
            c.since = 0;
        }
    }

    /// The model for a request of `len` bytes (a cached decision: no work here).
    #[inline]
    pub fn choose(&self, len: u32) -> CompletionModel {
        let c = &self.classes[class_of(len)];
        let m = c.model;
        if self.contention.asleep() {
            // At depth, short of CPU, a trial window found waiting for the
            // interrupt faster than spinning (or is measuring it): every class
            // waits for the interrupt (contention.rs, "At depth").
            return CompletionModel::Interrupt;
        }
        if self.contention.contended() {
            // Spinning would take the CPU the completions need. A fast device
            // (poll class): sleep through the device time on our own timer (one
            // wakeup, no CPU needed on the completion side to wake us), then
            // poll what is left. A slower one (hybrid class) keeps napping,
            // from half its p50 as Linux's classic hybrid does, learning from
            // how each nap ends, and polls no later than p90 plus a wakeup
            // ([`Adaptive::spin_bound_ns`]). Waiting for the interrupt
            // instead, as adaptive did before, woke each thread at the
            // completion and then left it queueing for a CPU; a nap that ends
            // earlier queues during the device's time (quiet 5-round grid,
            // 50 us, 4 threads on 2 CPUs: classic hybrid 59.2K IOPS at 3.62 us
            // CPU/IO and p99 107 us against adaptive's 49.1K, 4.50, 133).
            // But a device faster than the shortest sleep that blocks here
            // keeps polling: a nap that short cannot give the CPU away, and one
            // stretched to the floor costs more than the whole wait (quiet
            // grid, 5 us, 4 threads on 2 CPUs: napping 1.7% of requests cost
            // 7% CPU per I/O and a 25 us p99 against polling's 5 us).
            // Beside a co-runner (our threads do not crowd the CPUs) a poll
            // class whose p50 is within one wakeup keeps polling too: its nap
            // (p50 less a wakeup, see `nap_ns`) would be over before it began,
            // and the floor would stretch it past the completion, adding a
            // wakeup to the request for no CPU saved (lab, 10 us with a
            // co-runner: 9% of requests napped, p99 32 us against polling's
            // 10.4 at 5.6% more CPU per I/O).
            return match m {
                CompletionModel::Poll if (c.p[1] as u64) < self.block_ns => CompletionModel::Poll,
                CompletionModel::Poll
                    if !self.contention.crowded() && c.p[1] as u64 <= self.wakeup_ns =>
                {
                    CompletionModel::Poll
                }
                CompletionModel::Poll => CompletionModel::Hybrid,
                m => m,
            };
        }
        m
    }

    /// How long hybrid sleeps after submit for a request of `len` bytes. While
    /// the CPU is contended: a hybrid class's learned contended nap, and a poll
    /// class's whole p50 when our own pollers crowd the CPUs (the wakeup, late
    /// by about the wakeup cost, nearly always finds the completion, so no
    /// thread spins on a CPU its siblings queue for), or its p50 less one
    /// wakeup when they do not (a compute co-runner holds the CPU: the timer
    /// preempts it, and a nap through the whole p50 added a wakeup to every
    /// request: quiet 5-round grid, 20 us with a co-runner, p99 35 us against
    /// io_uring's hybrid's 27). Ending the nap early beside a crowd instead
    /// spun on a crowded CPU (20 us, 4 threads on 2 CPUs: p99 167 us against
    /// 51). [`Adaptive::sleep_floor_ns`] keeps any contended nap long enough
    /// to give the CPU away.
    #[inline]
    pub fn nap_ns(&self, len: u32) -> u64 {
        let c = &self.classes[class_of(len)];
        if self.contention.contended() {
            return match c.model {
                CompletionModel::Hybrid => Self::contended_nap(c) as u64,
                _ if self.contention.crowded() => c.p[1] as u64,
                _ => (c.p[1] as u64).saturating_sub(self.wakeup_ns),
            };
        }
        (c.nap as i64 + c.nap_adj).max(0) as u64
    }

    /// How a hybrid nap of a request of `len` bytes ended: `overslept` (the
    /// completion was there when the thread woke) or found after `spin_ns` of
    /// polling. The nap's margin (1.5 wakeup costs before the p10) assumes
    /// the wakeup is as late as the one measured at start, on an idle CPU; a
    /// busy CPU (a co-runner) takes the timer interrupt without leaving a
    /// halted vCPU and wakes the thread much sooner, so the margin became
    /// spinning (quiet grid, 50 us with a co-runner: 23 us CPU per I/O
    /// against PAS's 16). So, as PAS does with its sleep, each nap that ended
    /// in a spin lengthens the next by a quarter of that spin, and each
    /// oversleep shortens it by an eighth of a wakeup; never past the p10,
    /// never below zero. While the CPU is contended the same steps correct
    /// the contended nap instead, which starts from half the p50.
    ///
    /// While this process's adaptive threads crowd the CPUs the correction
    /// never takes the nap below its rule (p10 - 1.5 wakeups): there a late
    /// wake is mostly the run queue's delay, which a shorter nap does not
    /// cure; it moves the spin earlier, onto a CPU the others queue for
    /// (3-round overloaded sweep, 50 us: 21.1 us CPU per I/O against classic
    /// hybrid's 13.5 with a shortening nap, 13.9 without, at p99 76 us
    /// against its 88; from 100 us up the nap is longer than its rule anyway).
    #[inline]
    pub fn after_nap(&mut self, len: u32, overslept: bool, spin_ns: u64) {
        let contended = self.contention.contended();
        let crowded = self.contention.crowded();
        let w = self.wakeup_ns as i64;
        let c = &mut self.classes[class_of(len)];
        if c.model != CompletionModel::Hybrid {
            return;
        }
        let step = if overslept {
            -(w / 8).max(500)
        } else {
            spin_ns as i64 / 4
        };
        let p10 = c.p[0] as i64;
        if contended {
            let base = c.p[1] as i64 / 2;
            c.contended_adj = (c.contended_adj + step).clamp(-base, (p10 - base).max(0));
            return;
        }
        let nap = c.nap as i64;
        let most = (p10 - nap).max(0);
        let least = if crowded { 0 } else { -nap };
        c.nap_adj = (c.nap_adj + step).clamp(least, most);
    }

    /// While the CPU is contended, how long after submit a hybrid class's
    /// request may be polled for (its p90 plus a wakeup) before the wait
    /// sleeps for the device's interrupt instead: a request in a slow spell
    /// (a latency spike) would otherwise spin through it on a CPU that other
    /// threads are queueing for. None: no bound (uncontended, or not hybrid).
    #[inline]
    pub fn spin_bound_ns(&self, len: u32) -> Option<u64> {
        let c = &self.classes[class_of(len)];
        (self.contention.contended() && c.model == CompletionModel::Hybrid)
            .then(|| c.p[2] as u64 + self.wakeup_ns)
    }

    /// A hybrid class's nap while the CPU is contended: from half the p50
    /// (Linux's classic hybrid rule), corrected by how contended naps ended,
    /// within [0, p10].
    fn contended_nap(c: &ClassStats) -> i64 {
        let base = c.p[1] as i64 / 2;
        (base + c.contended_adj).clamp(0, (c.p[0] as i64).max(0))
    }

    /// The shortest sleep, from the moment it starts, a napping wait must take:
    /// 0 normally (a nap already over is skipped and the wait polls); while the
    /// CPU is contended, the shortest sleep that blocks on this machine. Then
    /// the sleep is the point: it hands the CPU to the threads queueing for
    /// it. A shorter one returns without blocking yet still costs the timer
    /// (on this VM 15-20 us holding the CPU: adaptive with a 1 us floor at
    /// 10 us, 4 threads on 2 CPUs, made 0.01 context switches per I/O and
    /// fell to 0.4x the IOPS of napping through the p50).
    #[inline]
    pub fn sleep_floor_ns(&self) -> u64 {
        if self.contention.contended() {
            self.block_ns
        } else {
            0
        }
    }

    /// `crowded`: this process's adaptive threads outnumber their CPUs (see
    /// [`Contention::crowded`]). There a wide spread is mostly the run queue's:
    /// a poller preempted by a sibling sees the device's time plus its wait
    /// for a CPU. Waiting for the interrupt does not narrow it (the woken
    /// thread queues for a CPU just the same), and it added a wakeup to every
    /// request of the threads that chose it: 20 us device, 4 threads on 2
    /// CPUs, 5-round runs in which some threads went to interrupt had p99
    /// 66.6 us against 46-56 in runs where none did, behind interrupt's own
    /// 60-65. So a crowded class with a wide spread naps (hybrid) instead.
    fn redecide(c: &mut ClassStats, wakeup_ns: u64, crowded: bool) {
        c.p = c.queued.percentiles();
        let [p10, p50, p90] = c.p;
        let w = wakeup_ns as f64;
        (c.model, c.nap) = if c.queued.n < CALIBRATION_SAMPLES {
            // Calibration samples are found by polling, so no wakeup adds its
            // noise. On a slow device polling from submit costs the whole
            // latency in CPU per sample (64 ms for the 64 samples of a 1 ms
            // device; with a co-runner on the CPU each spin can also lose a
            // whole time slice, which put 5 ms into adaptive's p99 at 1 ms).
            // So once the first samples show even the fastest tenth far
            // beyond what polling is chosen for, the rest nap until 1.5
            // wakeups before that p10 and poll from there: still found by
            // polling, at a fraction of the CPU.
            if c.queued.n >= CALIBRATION_STEP && p10 >= CALIBRATION_NAP_WAKEUPS * w && w > 0.0 {
                (CompletionModel::Hybrid, (p10 - 1.5 * w) as u64)
            } else {
                (CompletionModel::Poll, 0)
            }
        } else if p50 < 2.0 * w {
            (CompletionModel::Poll, 0)
        } else if p90 - p10 > p50 / 2.0 && !crowded {
            (CompletionModel::Interrupt, 0)
        } else {
            (CompletionModel::Hybrid, (p10 - 1.5 * w).max(0.0) as u64)
        };
    }

    /// The decisions for every size class that has seen requests, with reasons.
    pub fn decisions(&self) -> Vec<Decision> {
        (0..CLASSES)
            .filter(|&i| self.classes[i].queued.n + self.classes[i].inline.n > 0)
            .map(|i| {
                let c = &self.classes[i];
                let [p10, p50, p90] = c.queued.percentiles();
                let w = self.wakeup_ns as f64;
                let n = c.queued.n + c.inline.n;
                let path = match c.compared {
                    Some((q, i)) if c.go_inline => Some(format!(
                        "inline in the caller's context p50 {:.1} us < queued p50 {:.1} us: performing requests inline",
                        i / 1e3,
                        q / 1e3
                    )),
                    Some((q, i)) => Some(format!(
                        "queued p50 {:.1} us <= inline p50 {:.1} us: keeping the queue; ",
                        q / 1e3,
                        i / 1e3
                    )),
                    None => None,
                };
                let why = if c.queued.n < CALIBRATION_SAMPLES && c.nap > 0 {
                    format!(
                        "calibrating: {} of {CALIBRATION_SAMPLES} samples, napping {:.1} us (p10 - 1.5 x wakeup) then polling meanwhile",
                        c.queued.n,
                        c.nap as f64 / 1e3
                    )
                } else if c.queued.n < CALIBRATION_SAMPLES {
                    format!(
                        "calibrating: {} of {CALIBRATION_SAMPLES} samples, polling meanwhile",
                        c.queued.n
                    )
                } else if c.go_inline {
                    path.clone().unwrap_or_default()
                } else if self.inline_ok && c.compared.is_none() {
                    format!(
                        "calibrating the inline path: {} of {CALIBRATION_SAMPLES} samples",
                        c.inline.n
                    )
                } else {
                    match c.model {
                        CompletionModel::Poll => format!(
                            "device latency p50 {:.1} us < 2 x wakeup cost {:.1} us: sleeping costs about as much as waiting",
                            p50 / 1e3,
                            2.0 * w / 1e3
                        ),
                        CompletionModel::Interrupt => format!(
                            "latency p10-p90 spread {:.1} us > half the p50 {:.1} us: too unpredictable to time a nap",
                            (p90 - p10) / 1e3,
                            p50 / 1e3
                        ),
                        _ => {
                            let crowd = if p90 - p10 > p50 / 2.0 && self.contention.crowded() {
                                format!(
                                    " (its p10-p90 spread {:.1} us is our own threads queueing for CPUs, which waiting for the interrupt would not shorten)",
                                    (p90 - p10) / 1e3
                                )
                            } else {
                                String::new()
                            };
                            format!(
                                "device latency p50 {:.1} us >= 2 x wakeup cost {:.1} us: nap {:.1} us (p10 - 1.5 x wakeup) then poll{crowd}",
                                p50 / 1e3,
                                2.0 * w / 1e3,
                                c.nap as f64 / 1e3
                            )
                        }
                    }
                };
                let why = match (&path, c.go_inline) {
                    (Some(p), false) => format!("{p}{why}"),
                    _ => why,
                };
                let why = match self.contention.note() {
                    Some(n) if !c.go_inline && c.model == CompletionModel::Poll && p50 < self.block_ns as f64 => format!(
                        "{why}; {n}; but the p50 {:.1} us is under the shortest sleep that blocks here ({:.1} us): a nap could not give the CPU away, so it keeps polling",
                        p50 / 1e3,
                        self.block_ns as f64 / 1e3
                    ),
                    Some(n) if !c.go_inline => format!(
                        "{why}; {n}; each contended nap lasts at least {:.1} us, the shortest sleep that blocks here",
                        self.block_ns as f64 / 1e3
                    ),
                    _ => why,
                };
                let why = match self.contention.depth_note() {
                    Some(n) if !c.go_inline => format!("{why}; {n}"),
                    _ => why,
                };
                Decision {
                    size_class: 1u64 << (i as u32 + MIN_SHIFT),
                    model: if c.go_inline {
                        CompletionModel::Sync
                    } else {
                        c.model
                    },
                    device_latency_ns: p50 as u64,
                    latency_sd_ns: (p90 - p10).max(0.0) as u64,
                    wakeup_ns: self.wakeup_ns,
                    nap_ns: c.nap,
                    samples: n,
                    inline_latency_ns: (c.inline.held > 0)
                        .then(|| c.inline.percentiles()[1] as u64),
                    why,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A contention window of `WINDOW` requests, each with these times (ns):
    /// on a CPU, waiting for one, wall, the class p50, the observed latency.
    fn per_io_window(
        cpu: u64,
        delay: u64,
        wall: u64,
        device: u64,
        lat: u64,
    ) -> crate::completion::contention::Window {
        let ios = crate::completion::contention::WINDOW as u64;
        crate::completion::contention::Window {
            ios,
            cpu_ns: ios * cpu,
            delay_ns: ios * delay,
            wall_ns: ios * wall,
            device_ns: ios * device,
            lat_ns: ios * lat,
        }
    }

    #[test]
    fn size_classes_are_log2() {
        assert_eq!(class_of(512), 0);
        assert_eq!(class_of(513), 1);
        assert_eq!(class_of(4096), 3);
        assert_eq!(class_of(1 << 30), CLASSES - 1);
        assert_eq!(class_of(1), 0);
    }

    #[test]
    fn buckets_are_monotonic_and_within_error() {
        let mut prev = 0;
        for ns in [64u64, 100, 1_000, 4_100, 50_000, 200_000, 1_000_000] {
            let b = bucket_of(ns);
            assert!(b >= prev);
            prev = b;
            let v = bucket_value(b);
            assert!((v - ns as f64).abs() / (ns as f64) < 0.13, "{ns} -> {v}");
        }
    }

    #[test]
    fn polls_while_calibrating_then_decides_by_numbers() {
        let mut a = Adaptive::new(15_000);
        assert_eq!(a.choose(4096), CompletionModel::Poll);
        // Fast device: 4 us << 2 x 15 us wakeup.
        a.calibrate(4096, 4_000, 200, 100);
        assert_eq!(a.choose(4096), CompletionModel::Poll);
        // Slow, steady device: 200 us +- 10 us, nap until ~190 - 22.5 us.
        a.calibrate(65536, 200_000, 10_000, 100);
        assert_eq!(a.choose(65536), CompletionModel::Hybrid);
        let nap = a.nap_ns(65536) as f64;
        assert!((nap - 170_000.0).abs() < 15_000.0, "nap {nap}");
        // Slow, erratic device: interrupt.
        a.calibrate(1 << 20, 200_000, 150_000, 100);
        assert_eq!(a.choose(1 << 20), CompletionModel::Interrupt);
        let d = a.decisions();
        assert_eq!(d.len(), 3);
        assert!(d[1].why.contains("nap"), "{:?}", d[1]);
    }

    #[test]
    fn beside_a_crowd_a_wide_spread_naps_instead_of_waiting_for_the_interrupt() {
        // 35 us +- 15 us, as a 20 us device measures when four pollers share
        // two CPUs: alone that spread would mean interrupt.
        let mut a = Adaptive::new(15_000);
        a.calibrate(4096, 35_000, 15_000, 100);
        assert_eq!(a.choose(4096), CompletionModel::Interrupt);
        a.contention.set_crowded(true);
        a.calibrate(4096, 35_000, 15_000, 100);
        assert_eq!(a.choose(4096), CompletionModel::Hybrid);
        // Its nap keeps the rule (p10 - 1.5 x wakeup): about 1 us here, so it
        // polls nearly from submit until contention is judged.
        let nap = a.nap_ns(4096);
        assert!(nap < 5_000, "nap {nap}");
        let d = a.decisions();
        assert!(d[0].why.contains("our own threads queueing"), "{:?}", d[0]);
        // A steady device is decided as before.
        a.calibrate(65536, 200_000, 10_000, 100);
        assert_eq!(a.choose(65536), CompletionModel::Hybrid);
        a.calibrate(8192, 4_000, 200, 100);
        assert_eq!(a.choose(8192), CompletionModel::Poll);
    }

    #[test]
    fn a_slow_device_is_calibrated_with_naps_after_the_first_samples() {
        let mut a = Adaptive::with_blocking_sleep(15_000, 0);
        // 1 ms device: the first CALIBRATION_STEP samples are polled from submit.
        for _ in 0..CALIBRATION_STEP - 1 {
            a.observe(4096, 1_000_000, false);
            assert_eq!((a.choose(4096), a.nap_ns(4096)), (CompletionModel::Poll, 0));
        }
        a.observe(4096, 1_000_000, false);
        // Then the rest nap until 1.5 wakeups before the p10, and poll.
        assert_eq!(a.choose(4096), CompletionModel::Hybrid);
        let nap = a.nap_ns(4096) as f64;
        assert!((nap - 977_500.0).abs() < 70_000.0, "nap {nap}");
        assert!(
            a.decisions()[0]
                .why
                .contains("calibrating: 8 of 64 samples, napping")
        );
        // A 40 us device (under 4 wakeups) stays polled through calibration.
        for _ in 0..CALIBRATION_SAMPLES - 1 {
            a.observe(65536, 40_000, false);
            assert_eq!(a.choose(65536), CompletionModel::Poll);
        }
        // No wakeup cost measured (no sleeps asked for): never naps.
        let mut b = Adaptive::with_blocking_sleep(0, 0);
        for _ in 0..CALIBRATION_SAMPLES - 1 {
            b.observe(4096, 1_000_000, false);
            assert_eq!(b.choose(4096), CompletionModel::Poll);
        }
    }

    #[test]
    fn naps_follow_how_they_ended_within_the_p10() {
        let mut a = Adaptive::with_blocking_sleep(15_000, 0);
        // 100 us +- 5 us: hybrid, nap ~95 - 22.5 us.
        a.calibrate(65536, 100_000, 5_000, 200);
        assert_eq!(a.choose(65536), CompletionModel::Hybrid);
        let base = a.nap_ns(65536);
        // Each nap ended in a 20 us spin: the nap grows by 5 us a time, up to
        // the p10 and no further.
        a.after_nap(65536, false, 20_000);
        assert_eq!(a.nap_ns(65536), base + 5_000);
        for _ in 0..100 {
            a.after_nap(65536, false, 20_000);
        }
        let p10 = a.classes[class_of(65536)].p[0] as u64;
        assert_eq!(a.nap_ns(65536), p10);
        // Oversleeps shorten it by an eighth of a wakeup each.
        a.after_nap(65536, true, 0);
        assert_eq!(a.nap_ns(65536), p10 - 1_875);
        for _ in 0..1000 {
            a.after_nap(65536, true, 0);
        }
        assert_eq!(a.nap_ns(65536), 0);
        // Only hybrid classes learn: a polled class keeps no nap.
        a.calibrate(4096, 4_000, 200, 100);
        a.after_nap(4096, false, 50_000);
        assert_eq!(a.nap_ns(4096), 0);
    }

    #[test]
    fn outliers_do_not_move_the_decision() {
        // A steady 100 us device with 3% of samples hit by 5 ms preemptions: a
        // mean-based rule would call it erratic; the percentiles do not.
        let mut a = Adaptive::new(10_000);
        for i in 0..2000 {
            a.observe(4096, if i % 33 == 0 { 5_000_000 } else { 100_000 }, false);
        }
        assert_eq!(a.choose(4096), CompletionModel::Hybrid);
        let d = &a.decisions()[0];
        assert!(
            (d.device_latency_ns as f64 - 100_000.0).abs() < 7_000.0,
            "{d:?}"
        );
    }

    /// Drive a class the way the worker does: ask for the path, then report a
    /// latency for it. Returns how many of `n` requests went inline.
    fn drive(a: &mut Adaptive, n: u64, queued_ns: u64, inline_ns: u64) -> u64 {
        let mut inline = 0;
        for _ in 0..n {
            let go = a.take_inline(4096);
            inline += go as u64;
            a.observe(4096, if go { inline_ns } else { queued_ns }, go);
        }
        inline
    }

    #[test]
    fn inline_path_wins_where_the_queue_detours() {
        // zram-like: 12 us through io-wq, 3 us in the caller's context.
        let mut a = Adaptive::new(15_000);
        a.allow_inline();
        assert_eq!(drive(&mut a, CALIBRATION_SAMPLES, 12_000, 3_000), 0);
        // Then the inline path is sampled and wins.
        assert_eq!(
            drive(&mut a, CALIBRATION_SAMPLES, 12_000, 3_000),
            CALIBRATION_SAMPLES
        );
        assert_eq!(drive(&mut a, 1000, 12_000, 3_000), 1000);
        let d = &a.decisions()[0];
        assert_eq!(d.model, CompletionModel::Sync);
        assert!(d.why.contains("performing requests inline"), "{d:?}");
        assert!(d.inline_latency_ns.is_some_and(|v| v < 4_000), "{d:?}");
    }

    #[test]
    fn queue_kept_where_inline_waits_longer() {
        // A real device: polled queue 80 us, inline pread sleeps and pays the wakeup.
        let mut a = Adaptive::new(15_000);
        a.allow_inline();
        drive(&mut a, 2 * CALIBRATION_SAMPLES, 80_000, 100_000);
        assert_eq!(drive(&mut a, 1000, 80_000, 100_000), 0);
        let d = &a.decisions()[0];
        assert_ne!(d.model, CompletionModel::Sync);
        assert!(d.why.contains("keeping the queue"), "{d:?}");
    }

    #[test]
    fn rechecks_follow_a_change_but_not_noise() {
        let mut a = Adaptive::new(15_000);
        a.allow_inline();
        drive(&mut a, 2 * CALIBRATION_SAMPLES, 12_000, 3_000);
        // The queue gets slightly faster than inline (within the margin): stay.
        let n = RECHECK + 2 * PROBE as u64;
        assert_eq!(drive(&mut a, n, 2_900, 3_000), n - PROBE as u64);
        // Then much faster: the recheck switches to the queue.
        drive(&mut a, n, 1_000, 3_000);
        assert_eq!(drive(&mut a, 1000, 1_000, 3_000), 0);
    }

    #[test]
    fn inline_never_chosen_unless_allowed() {
        let mut a = Adaptive::new(15_000);
        assert_eq!(drive(&mut a, 5000, 12_000, 3_000), 0);
    }

    #[test]
    fn a_won_depth_trial_waits_for_the_interrupt_and_keeps_the_device_figures() {
        use crate::completion::contention::{WINDOW, Window};
        let mut a = Adaptive::with_blocking_sleep(15_000, 8_000);
        a.calibrate(4096, 10_000, 1_000, 100);
        assert_eq!(a.choose(4096), CompletionModel::Poll);
        let ios = WINDOW as u64;
        // Depth 4, 10 us per I/O spinning, 40% of it waiting for a CPU.
        let spinning = per_io_window(6_000, 4_000, 10_000, 10_000, 40_000);
        a.contention.judge(&spinning);
        assert_eq!(
            a.choose(4096),
            CompletionModel::Interrupt,
            "the trial window"
        );
        // Latencies measured asleep (device plus wakeup) are not learnt.
        let before = a.classes[class_of(4096)].queued.n;
        a.observe(4096, 40_000, false);
        assert_eq!(a.classes[class_of(4096)].queued.n, before);
        a.contention.judge(&Window {
            wall_ns: ios * 6_000,
            cpu_ns: ios * 6_000,
            delay_ns: 0,
            lat_ns: ios * 24_000,
            ..spinning
        });
        assert_eq!(a.choose(4096), CompletionModel::Interrupt, "the trial won");
        let d = &a.decisions()[0];
        assert!(
            d.why.contains("waiting for the interrupt won 1 of 1"),
            "{d:?}"
        );
        // The class's own decision is kept for when the back-off ends.
        assert_eq!(a.classes[class_of(4096)].model, CompletionModel::Poll);
    }

    #[test]
    fn contention_turns_spinning_classes_to_naps_and_back() {
        use crate::completion::contention::{WINDOW, Window};
        let mut a = Adaptive::new(15_000);
        a.calibrate(4096, 20_000, 1_000, 100);
        assert_eq!(a.choose(4096), CompletionModel::Poll);
        let ios = WINDOW as u64;
        // 122 us per 20 us I/O, half the time waiting for a CPU.
        let overloaded = per_io_window(61_000, 61_000, 122_000, 20_000, 20_000);
        // Judged as a crowd, where one window is a verdict (beside a co-runner
        // it takes two in a row: contention's tests).
        a.contention.set_crowded(true);
        a.contention.judge(&overloaded);
        assert_eq!(a.choose(4096), CompletionModel::Hybrid);
        // Our own pollers crowd the CPUs: the whole p50.
        a.contention.set_crowded(true);
        let nap = a.nap_ns(4096) as f64;
        assert!((nap - 20_000.0).abs() < 2_000.0, "nap {nap}: the whole p50");
        // Someone else holds the CPU (a co-runner): one wakeup less.
        a.contention.set_crowded(false);
        let early = a.nap_ns(4096) as f64;
        assert!(
            (early - (nap - 15_000.0)).abs() < 1.0,
            "nap {early}: p50 - wakeup"
        );
        assert!(
            a.decisions()[0]
                .why
                .contains("nap to one wakeup before their p50"),
            "{:?}",
            a.decisions()[0]
        );
        a.contention.set_crowded(true);
        // The per-class decision is kept, and the report says why it is overridden.
        assert_eq!(a.classes[class_of(4096)].model, CompletionModel::Poll);
        let d = &a.decisions()[0];
        assert!(d.why.contains("CPU contention in 1 of 1 windows"), "{d:?}");
        assert!(d.why.contains("122.0 us per I/O"), "{d:?}");
        // A hybrid class (200 us, steady) naps from half its p50, learns from
        // how contended naps end (not touching its uncontended nap), and
        // polls no later than its p90 plus a wakeup.
        a.calibrate(65536, 200_000, 10_000, 100);
        assert_eq!(a.choose(65536), CompletionModel::Hybrid);
        let half = a.nap_ns(65536) as f64;
        assert!(
            (half - 100_000.0).abs() < 5_000.0,
            "nap {half}: half the p50"
        );
        let p90 = a.classes[class_of(65536)].p[2];
        let bound = a.spin_bound_ns(65536).unwrap() as f64;
        assert!((bound - (p90 + 15_000.0)).abs() < 1.0, "bound {bound}");
        a.after_nap(65536, false, 40_000);
        assert_eq!(
            a.nap_ns(65536) as f64,
            half + 10_000.0,
            "a spin lengthens it"
        );
        a.after_nap(65536, true, 0);
        assert_eq!(
            a.nap_ns(65536) as f64,
            half + 10_000.0 - 1_875.0,
            "an oversleep shortens it"
        );
        for _ in 0..100 {
            a.after_nap(65536, false, 1_000_000);
        }
        let p10 = a.classes[class_of(65536)].p[0];
        assert_eq!(a.nap_ns(65536) as f64, p10.floor(), "never past the p10");
        assert_eq!(a.classes[class_of(65536)].nap_adj, 0);
        assert_eq!(a.spin_bound_ns(4096), None, "a poll class is not bounded");
        // Latencies seen while contended are our naps, not the device: the
        // nap does not ratchet up by a wakeup per redecision.
        for _ in 0..500 {
            a.observe(4096, 20_000 + 15_000, false);
        }
        // (Window ends in observe recount this process's adaptive threads.)
        a.contention.set_crowded(true);
        let nap = a.nap_ns(4096) as f64;
        assert!(
            (nap - 20_000.0).abs() < 2_000.0,
            "nap {nap} grew while contended"
        );
        // Once the back-off has run out and a look finds no contention: poll again.
        let quiet = Window {
            delay_ns: 0,
            cpu_ns: ios * 21_000,
            wall_ns: ios * 21_000,
            ..overloaded
        };
        while a.contention.contended() {
            a.contention.judge(&quiet);
        }
        a.contention.judge(&quiet);
        assert_eq!(a.choose(4096), CompletionModel::Poll);
        assert_eq!(a.nap_ns(4096), 0);
        assert_eq!(a.spin_bound_ns(65536), None, "unbounded once uncontended");
    }

    #[test]
    fn beside_a_crowd_oversleeps_do_not_shorten_the_nap_below_its_rule() {
        // A 200 us device: a hybrid class, nap p10 - 1.5 wakeups.
        let mut a = Adaptive::new(15_000);
        a.calibrate(4096, 200_000, 10_000, 100);
        assert_eq!(a.choose(4096), CompletionModel::Hybrid);
        let rule = a.nap_ns(4096);
        // Alone: oversleeps shorten it, an eighth of a wakeup each.
        a.after_nap(4096, true, 0);
        assert_eq!(a.nap_ns(4096), rule - 1_875);
        // Beside a crowd of our own threads: no further than the rule...
        a.contention.set_crowded(true);
        for _ in 0..10 {
            a.after_nap(4096, true, 0);
        }
        assert_eq!(a.nap_ns(4096), rule);
        // ...while spins still lengthen it, and oversleeps take that back.
        a.after_nap(4096, false, 8_000);
        assert_eq!(a.nap_ns(4096), rule + 2_000);
        a.after_nap(4096, true, 0);
        assert_eq!(a.nap_ns(4096), rule + 125);
        a.after_nap(4096, true, 0);
        assert_eq!(a.nap_ns(4096), rule);
    }

    #[test]
    fn contended_naps_are_long_enough_to_block() {
        use crate::completion::contention::{WINDOW, Window};
        // Wakeup cost 15 us; on this machine sleeps under 8 us return without
        // giving the CPU away.
        let mut a = Adaptive::with_blocking_sleep(15_000, 8_000);
        // A 10 us device: a poll class (10 us < 2 x 15 us); and a 5 us one
        // (512-byte requests), under the 8 us that blocks.
        a.calibrate(4096, 10_000, 200, 100);
        a.calibrate(512, 5_000, 200, 100);
        assert_eq!(a.choose(4096), CompletionModel::Poll);
        assert_eq!((a.nap_ns(4096), a.sleep_floor_ns()), (0, 0), "polling");
        let ios = WINDOW as u64;
        let overloaded = per_io_window(10_000, 50_000, 60_000, 10_000, 10_000);
        a.contention.set_crowded(true);
        a.contention.judge(&overloaded);
        // Contended by our own pollers: nap through the p50 (10 us), and
        // sleep at least 8 us from the moment the nap starts.
        assert_eq!(a.choose(4096), CompletionModel::Hybrid);
        let nap = a.nap_ns(4096) as f64;
        assert!((nap - 10_000.0).abs() < 1_000.0, "nap {nap}: the p50");
        assert_eq!(a.sleep_floor_ns(), 8_000);
        // By a co-runner: the nap (10 - 15 us) would be over before it began,
        // so the class keeps polling; a 20 us class naps 20 - 15 us, and the
        // floor makes that sleep last 8 us.
        a.contention.set_crowded(false);
        assert_eq!(a.choose(4096), CompletionModel::Poll);
        a.calibrate(16384, 20_000, 200, 100);
        assert_eq!(a.choose(16384), CompletionModel::Hybrid);
        let early = a.nap_ns(16384) as f64;
        assert!(
            (early - 5_000.0).abs() < 1_000.0,
            "nap {early}: p50 - wakeup"
        );
        assert_eq!(a.sleep_floor_ns(), 8_000);
        a.contention.set_crowded(true);
        // The 5 us class keeps polling: no nap that short gives the CPU away.
        assert_eq!(a.choose(512), CompletionModel::Poll);
        let d = &a.decisions()[0];
        assert!(
            d.why
                .contains("under the shortest sleep that blocks here (8.0 us)")
                && d.why.contains("keeps polling"),
            "{d:?}"
        );
        let d = &a.decisions()[1];
        assert!(
            d.why
                .contains("at least 8.0 us, the shortest sleep that blocks"),
            "{d:?}"
        );
        // The look after the back-off finds the CPU free: no floor, no nap.
        let quiet = Window {
            delay_ns: 0,
            wall_ns: ios * 6_000,
            cpu_ns: ios * 6_000,
            ..overloaded
        };
        while a.contention.contended() {
            a.contention.judge(&quiet);
        }
        a.contention.judge(&quiet);
        assert_eq!(a.choose(4096), CompletionModel::Poll);
        assert_eq!((a.nap_ns(4096), a.sleep_floor_ns()), (0, 0));
        // Nothing asks for sleeps: nothing is measured.
        assert_eq!(Adaptive::new(0).block_ns, 0);
    }

    #[test]
    fn the_shortest_blocking_sleep_is_measured() {
        // A sleep already due returns at once (no context switch); 2 ms
        // always blocks. So the second length is the answer.
        assert_eq!(measure_blocking_sleep(&[1, 2_000_000]), 2_000_000);
        // None blocks: the longest tried.
        assert_eq!(measure_blocking_sleep(&[1, 2]), 2);
    }

    #[test]
    fn wakeup_cost_is_measured_not_assumed() {
        let w = measure_wakeup_cost(5);
        assert!(w > 0);
    }
}
