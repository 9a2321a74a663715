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
//! ([`contention`]), judged per window of requests from the thread's
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

pub mod contention;
mod explain;
mod hist;
mod rule;

pub use explain::Decision;

use self::contention::Contention;
#[cfg(any(test, feature = "testing"))]
use self::hist::Hist;
use self::rule::{
    CALIBRATION_SAMPLES, CALIBRATION_STEP, CLASSES, ClassStats, PROBE, Probe, RECHECK, REDECIDE,
    class_of,
};
use super::{CompletionStats, InFlight, Model, Needs, wait};
use crate::device::{DevResult, Queue};
use crate::job::CompletionModel;
use crate::measure::{calibration, clock};
use crate::request::Completion;

/// Adaptive's state: per size class its latency histograms and decision,
/// and the CPU-contention verdict over them all.
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

/// What adaptive did, counted for the report (JSON keys as named).
#[derive(
    schemars::JsonSchema,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct Counters {
    /// Requests whose model adaptive chose per request, by model.
    #[serde(rename = "adaptive_poll")]
    pub poll: u64,
    #[serde(rename = "adaptive_hybrid")]
    pub hybrid: u64,
    #[serde(rename = "adaptive_interrupt")]
    pub interrupt: u64,
    /// Requests adaptive performed inline, in the caller's context (no wait).
    #[serde(rename = "adaptive_sync")]
    pub inline: u64,
    /// Waits in which adaptive, with the CPU contended, stopped polling at its
    /// bound (p90 plus a wakeup) and slept for the interrupt instead.
    #[serde(default)]
    pub spin_bounded: u64,
}

merge_fields!(Counters {
    add: poll, hybrid, interrupt, inline, spin_bounded;
});

impl Counters {
    /// Adaptive's notes on the completion line (whatever model the line is
    /// for: a group may merge an adaptive job's counts into another's).
    pub fn describe(&self, line: &mut String) {
        use std::fmt::Write as _;
        if self.spin_bounded > 0 {
            let _ = write!(
                line,
                ", {} polls cut short for the interrupt (CPU contended)",
                self.spin_bounded
            );
        }
        if self.inline > 0 {
            let _ = write!(line, ", {} performed inline", self.inline);
        }
    }
}

impl Model for Adaptive {
    const NEEDS: Needs = Needs::SleepAndPeek;

    /// Measures this machine's wakeup cost (once per process) at setup.
    fn start() -> Adaptive {
        Adaptive::new(calibration::wakeup_cost_ns())
    }

    /// One wait of the model chosen now for the request's size class.
    #[inline]
    fn wait(
        &mut self,
        s: &mut CompletionStats,
        q: &mut dyn Queue,
        out: &mut [Completion],
        min: u32,
        req: InFlight,
        deadline_ns: u64,
    ) -> DevResult<usize> {
        let len = req.len;
        // `choose` gives poll, hybrid or interrupt.
        match self.choose(len) {
            CompletionModel::Poll => {
                s.adaptive.poll += 1;
                wait::poll(s, q, out, deadline_ns)
            }
            CompletionModel::Hybrid => {
                s.adaptive.hybrid += 1;
                self.nap_then_poll(s, q, out, min, req, deadline_ns)
            }
            _ => {
                s.adaptive.interrupt += 1;
                wait::sleep(s, q, out, min, deadline_ns)
            }
        }
    }

    /// Adaptive learns from issue-to-completion (some backends finish the
    /// I/O inside the submit call), and keeps percentiles, which outliers do
    /// not move.
    #[inline]
    fn observe(&mut self, req: InFlight, lat_ns: u64, _clat_ns: u64, inline: bool) {
        Adaptive::observe(self, req.len, lat_ns, inline);
    }

    /// Counts a request performed inline: a completion seen without a wait.
    #[inline]
    fn take_inline(&mut self, s: &mut CompletionStats, len: u32) -> bool {
        let go = Adaptive::take_inline(self, len);
        if go {
            s.adaptive.inline += 1;
            s.completions += 1;
        }
        go
    }
}

impl Adaptive {
    /// A hybrid class's wait: nap from the submit, then poll. Under CPU
    /// contention the nap lasts at least the shortest sleep that blocks
    /// ([`Adaptive::sleep_floor_ns`]), and the poll stops at its bound
    /// ([`Adaptive::spin_bound_ns`]) to sleep for the interrupt instead.
    #[inline]
    fn nap_then_poll(
        &mut self,
        s: &mut CompletionStats,
        q: &mut dyn Queue,
        out: &mut [Completion],
        min: u32,
        req: InFlight,
        deadline_ns: u64,
    ) -> DevResult<usize> {
        let (submit_ns, len) = (req.submit_ns, req.len);
        // The I/O may have completed inside the submit call (io-wq, inline
        // completion): never nap for something already done.
        let n = wait::peek(s, q, out)?;
        if n > 0 {
            return Ok(n);
        }
        let slept = wait::nap_from_submit(
            s,
            submit_ns,
            self.nap_ns(len),
            self.sleep_floor_ns(),
            deadline_ns,
        );
        let (empty_before, spin_before) = (s.polls_empty, s.spin_ns);
        let bound = if submit_ns != 0 {
            self.spin_bound_ns(len).map(|b| submit_ns + b)
        } else {
            None
        };
        let poll_deadline = bound.map_or(deadline_ns, |b| wait::by_deadline(b, deadline_ns));
        let n = wait::poll(s, q, out, poll_deadline)?;
        if n == 0 && bound.is_some() && (deadline_ns == 0 || clock::now_ns() < deadline_ns) {
            s.adaptive.spin_bounded += 1;
            return wait::sleep(s, q, out, min, deadline_ns);
        }
        if slept && n > 0 {
            // Correct the next nap by how this one ended.
            let overslept = s.polls_empty == empty_before;
            let spin = s.spin_ns - spin_before;
            self.after_nap(len, overslept, spin);
        }
        Ok(n)
    }
}

/// `samples` values spread evenly over `p50 +- spread` (synthetic calibrations).
#[cfg(any(test, feature = "testing"))]
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

impl Adaptive {
    pub fn new(wakeup_ns: u64) -> Adaptive {
        let block_ns = if wakeup_ns > 0 {
            calibration::blocking_sleep_ns()
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
    #[cfg(any(test, feature = "testing"))]
    pub fn calibrate(&mut self, len: u32, p50_ns: u64, spread_ns: u64, samples: u64) {
        let c = &mut self.classes[class_of(len)];
        *c = ClassStats::default();
        for v in spread(p50_ns, spread_ns, samples) {
            c.queued.record(v);
        }
        c.redecide(self.wakeup_ns, self.contention.crowded());
    }

    /// Seed a class's inline path the same way, and compare the two paths.
    #[cfg(any(test, feature = "testing"))]
    pub fn calibrate_inline(&mut self, len: u32, p50_ns: u64, spread_ns: u64, samples: u64) {
        let c = &mut self.classes[class_of(len)];
        c.inline = Hist::default();
        for v in spread(p50_ns, spread_ns, samples) {
            c.inline.record(v);
        }
        c.probe = 0;
        c.compare();
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
                    c.redecide(w, crowded);
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
            c.compare();
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
    ) -> super::contention::Window {
        let ios = super::contention::WINDOW as u64;
        super::contention::Window {
            ios,
            cpu_ns: ios * cpu,
            delay_ns: ios * delay,
            wall_ns: ios * wall,
            device_ns: ios * device,
            lat_ns: ios * lat,
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
        use super::contention::{WINDOW, Window};
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
        use super::contention::{WINDOW, Window};
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
        use super::contention::{WINDOW, Window};
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
}
