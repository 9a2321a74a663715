//! `completion=dpas`: DPAS (FAST '26), run in user space with iolab's own
//! sleeps: PAS with self-tuning steps ([`super::pas`]), plus a per-CPU switch
//! among four modes by measured load.
//!
//! Source: the paper's artifact, repository `DongDongJu/DPAS_FAST26`,
//! `kernel/block/blk-mq.c`: `blk_mq_poll_pas_nsecs` (the switch and the queue
//! depth it measures), `blk_mq_poll_hybrid` (the depth is released after the
//! sleep), `blk_mq_init` and `blk_mq_init_allocated_queue` (`switch_param1..7`
//! defaults). The INT -> OL return is in the artifact's submission hooks
//! (`block/fops.c`, `fs/iomap/direct-io.c`), which we read as quoted in a
//! third-party porting note, not in the artifact itself.
//!
//! The modes, per CPU (the artifact's `irq_poll_switch`):
//! * **CP**, classic polling: no sleep, spin until the completion;
//! * **PAS**: PAS's sleep, then poll (the starting mode);
//! * **OL**, overloaded: the same sleep-then-poll, entered when the timer has
//!   proved unable to wake the waiter in time, and used to decide whether the
//!   CPU is crowded;
//! * **INT**, interrupts: the request completes through the interrupt path.
//!
//! What is measured: in PAS and OL each request adds one to the CPU's count of
//! waiters (`qd`), adds the count to `qd_sum`, and gives it back after its sleep;
//! `tf` counts PAS updates that hit the duration floor (timer failures). Every
//! mode counts its requests; when a mode's window is full the switch decides
//! (with `avg` = `qd_sum / count`, in tenths as the artifact computes it):
//! * CP after 1000 requests -> PAS (re-measure; PAS recomputes its duration);
//! * PAS after 100: `tf > 0` -> OL; else `avg == 1.0` (alone on the CPU) -> CP;
//!   else stay PAS;
//! * OL after 100: `avg <= 1.0` -> PAS; `avg > 1.0` -> INT;
//! * INT after 10000 -> OL (re-measure).
//!
//! The evaluation runs under a try-lock per CPU: a waiter that finds it taken
//! skips the evaluation rather than waiting (as the artifact's `N_POLL` flag).
//!
//! Ours: user-space threads stand for the kernel's requests on a CPU; the CPU
//! is the one the waiter runs on when it starts waiting (`sched_getcpu`, a vDSO
//! read). The per-CPU table is shared by the workers of the runs alive at the
//! same time and starts fresh when none is (the kernel's is machine-wide).

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use super::nap;
use super::pas::Pas;
use super::{CompletionStats, InFlight, Model, Needs, wait};
use crate::device::{DevResult, Queue};
use crate::job::CompletionModel;
use crate::measure::clock;
use crate::request::Completion;

/// A DPAS mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Interrupts.
    Int,
    /// Classic polling.
    Cp,
    /// PAS sleep, then poll.
    #[default]
    Pas,
    /// Overloaded: PAS sleep while measuring whether the CPU is crowded.
    Ol,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Int => "int",
            Mode::Cp => "cp",
            Mode::Pas => "pas",
            Mode::Ol => "ol",
        }
    }

    fn from_u8(v: u8) -> Mode {
        match v {
            0 => Mode::Int,
            1 => Mode::Cp,
            3 => Mode::Ol,
            _ => Mode::Pas,
        }
    }

    fn as_u8(self) -> u8 {
        match self {
            Mode::Int => 0,
            Mode::Cp => 1,
            Mode::Pas => 2,
            Mode::Ol => 3,
        }
    }

    /// Whether requests in this mode count as waiters (`qd`).
    pub fn counts_waiters(self) -> bool {
        matches!(self, Mode::Pas | Mode::Ol)
    }
}

/// The switch's thresholds (artifact `switch_param1..7` defaults).
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// PAS -> OL when timer failures in a window exceed this (`param1` = 0).
    pub tf_limit: u64,
    /// OL -> PAS when the average waiters, in tenths, is at most this (`param2` = 10).
    pub ol_to_pas_qd10: u64,
    /// OL -> INT when the average waiters, in tenths, exceeds this (`param3` = 10).
    pub ol_to_int_qd10: u64,
    /// PAS -> CP allowed (`param4` = 1).
    pub pas_to_cp: bool,
    /// Window of PAS and OL, requests (`param5` = 100).
    pub pas_window: u64,
    /// Window of CP, requests (`param6` = 1000).
    pub cp_window: u64,
    /// Window of INT, requests (`param7` = 10000).
    pub int_window: u64,
}

pub const PARAMS: Params = Params {
    tf_limit: 0,
    ol_to_pas_qd10: 10,
    ol_to_int_qd10: 10,
    pas_to_cp: true,
    pas_window: 100,
    cp_window: 1000,
    int_window: 10_000,
};

/// What a CPU has measured in its current window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    pub mode: Mode,
    /// Requests seen in this mode since the window began.
    pub count: u64,
    /// Sum of the waiter counts those requests saw (PAS, OL).
    pub qd_sum: u64,
    /// PAS updates that hit the duration floor.
    pub tf: u64,
}

/// The verdict on a full window: the next mode (may be the same), the rule
/// that decided, and the number it decided on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub next: Mode,
    pub rule: &'static str,
    /// What `measured` is.
    pub measure: &'static str,
    pub measured: u64,
}

/// The rules [`evaluate`] fires, each with what its number measures.
const CP_DONE: (&str, &str) = (
    "classic-polling window done: re-measure with PAS",
    "requests",
);
const TIMER_LATE: (&str, &str) = (
    "PAS sleeps hit their floor: the timer wakes too late",
    "timer failures",
);
const ALONE: (&str, &str) = (
    "alone on the CPU: average waiters 1.0",
    "average waiters x10",
);
const PAS_KEEPS_UP: (&str, &str) = ("PAS keeps up", "average waiters x10");
const NOT_CROWDED: (&str, &str) = (
    "CPU not crowded: average waiters <= 1.0",
    "average waiters x10",
);
const CROWDED: (&str, &str) = ("CPU crowded: average waiters > 1.0", "average waiters x10");
const STAY_OL: (&str, &str) = ("stay overloaded", "average waiters x10");
const INT_DONE: (&str, &str) = ("interrupt window done: re-measure", "requests");

/// Every rule with its measure: a saved report's mode switches are read back
/// to these names ([`rule_named`], [`measure_named`]).
pub const RULES: [(&str, &str); 8] = [
    CP_DONE,
    TIMER_LATE,
    ALONE,
    PAS_KEEPS_UP,
    NOT_CROWDED,
    CROWDED,
    STAY_OL,
    INT_DONE,
];

/// Reads a saved mode name (`int`, `cp`, `pas`, `ol`) back as [`Mode::name`].
pub fn mode_named<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    let s = <String as serde::Deserialize>::deserialize(d)?;
    [Mode::Int, Mode::Cp, Mode::Pas, Mode::Ol]
        .into_iter()
        .map(Mode::name)
        .find(|n| *n == s)
        .ok_or_else(|| {
            serde::de::Error::custom(format!("unknown DPAS mode `{s}` (valid: int, cp, pas, ol)"))
        })
}

/// Reads a saved rule back as the one in [`RULES`].
pub fn rule_named<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    known(d, RULES.map(|r| r.0), "DPAS rule")
}

/// Reads a saved measure back as the one in [`RULES`].
pub fn measure_named<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    known(d, RULES.map(|r| r.1), "DPAS measure")
}

fn known<'de, D: serde::Deserializer<'de>>(
    d: D,
    names: [&'static str; RULES.len()],
    what: &str,
) -> Result<&'static str, D::Error> {
    let s = <String as serde::Deserialize>::deserialize(d)?;
    names.into_iter().find(|n| *n == s).ok_or_else(|| {
        let mut valid = names.to_vec();
        valid.sort_unstable();
        valid.dedup();
        serde::de::Error::custom(format!(
            "unknown {what} `{s}`: not one this iolab's DPAS writes (valid: {})",
            valid.join("; ")
        ))
    })
}

/// DPAS's switch rule. `None` while the window is not full; otherwise the
/// window ends (its counters restart) whatever the verdict.
pub fn evaluate(p: &Params, w: &Window) -> Option<Verdict> {
    let avg10 = |n: u64| w.qd_sum * 10 / n.max(1);
    match w.mode {
        Mode::Cp if w.count >= p.cp_window => Some(Verdict {
            next: Mode::Pas,
            rule: CP_DONE.0,
            measure: CP_DONE.1,
            measured: w.count,
        }),
        Mode::Pas if w.count >= p.pas_window => {
            let a = avg10(w.count);
            Some(if w.tf > p.tf_limit {
                Verdict {
                    next: Mode::Ol,
                    rule: TIMER_LATE.0,
                    measure: TIMER_LATE.1,
                    measured: w.tf,
                }
            } else if p.pas_to_cp && a == 10 {
                Verdict {
                    next: Mode::Cp,
                    rule: ALONE.0,
                    measure: ALONE.1,
                    measured: a,
                }
            } else {
                Verdict {
                    next: Mode::Pas,
                    rule: PAS_KEEPS_UP.0,
                    measure: PAS_KEEPS_UP.1,
                    measured: a,
                }
            })
        }
        Mode::Ol if w.count >= p.pas_window => {
            let a = avg10(w.count);
            Some(if a <= p.ol_to_pas_qd10 {
                Verdict {
                    next: Mode::Pas,
                    rule: NOT_CROWDED.0,
                    measure: NOT_CROWDED.1,
                    measured: a,
                }
            } else if a > p.ol_to_int_qd10 {
                Verdict {
                    next: Mode::Int,
                    rule: CROWDED.0,
                    measure: CROWDED.1,
                    measured: a,
                }
            } else {
                Verdict {
                    next: Mode::Ol,
                    rule: STAY_OL.0,
                    measure: STAY_OL.1,
                    measured: a,
                }
            })
        }
        Mode::Int if w.count >= p.int_window => Some(Verdict {
            next: Mode::Ol,
            rule: INT_DONE.0,
            measure: INT_DONE.1,
            measured: w.count,
        }),
        _ => None,
    }
}

/// One CPU's switch.
#[derive(Debug)]
struct CpuSwitch {
    mode: AtomicU8,
    count: AtomicU64,
    qd: AtomicU64,
    qd_sum: AtomicU64,
    tf: AtomicU64,
    busy: AtomicBool,
}

impl CpuSwitch {
    fn new() -> CpuSwitch {
        CpuSwitch {
            mode: AtomicU8::new(Mode::Pas.as_u8()),
            count: AtomicU64::new(0),
            qd: AtomicU64::new(0),
            qd_sum: AtomicU64::new(0),
            tf: AtomicU64::new(0),
            busy: AtomicBool::new(false),
        }
    }
}

/// The per-CPU switches of the runs alive now.
#[derive(Debug)]
pub struct Switches {
    cpus: Box<[CpuSwitch]>,
}

static LIVE: Mutex<Weak<Switches>> = Mutex::new(Weak::new());

impl Switches {
    /// The table shared by the DPAS workers alive now, or a fresh one.
    /// Called when a worker is set up, never per request.
    pub fn shared() -> Arc<Switches> {
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = live.upgrade() {
            return s;
        }
        // SAFETY: sysconf has no preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as usize;
        let s = Arc::new(Switches {
            cpus: (0..n).map(|_| CpuSwitch::new()).collect(),
        });
        *live = Arc::downgrade(&s);
        s
    }

    fn cpu(&self, i: usize) -> &CpuSwitch {
        &self.cpus[i % self.cpus.len()]
    }
}

/// The CPU this thread runs on (vDSO / rseq read, no system call on x86-64).
#[inline]
pub fn current_cpu() -> usize {
    // SAFETY: sched_getcpu has no preconditions; -1 (unsupported) maps to CPU 0.
    let c = unsafe { libc::sched_getcpu() };
    c.max(0) as usize
}

/// One request's entry into the switch: the mode to use and what it holds.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub mode: Mode,
    /// CPU whose waiter count this request holds (release with [`Dpas::leave`]).
    pub holds_qd: Option<usize>,
    /// A switch this request's evaluation made: (from, verdict).
    pub switched: Option<(Mode, Verdict)>,
}

/// A worker's handle on the shared switches.
#[derive(Debug)]
pub struct Dpas {
    switches: Arc<Switches>,
}

impl Dpas {
    pub fn new(switches: Arc<Switches>) -> Dpas {
        Dpas { switches }
    }

    /// Count one request on `cpu`, evaluate the window if this waiter gets the
    /// try-lock, and say which mode serves the request.
    #[inline]
    pub fn enter(&self, cpu: usize) -> Entry {
        let sw = self.switches.cpu(cpu);
        let mode = Mode::from_u8(sw.mode.load(Ordering::Relaxed));
        let count = sw.count.fetch_add(1, Ordering::Relaxed) + 1;
        let mut holds_qd = None;
        if mode.counts_waiters() {
            let qd = sw.qd.fetch_add(1, Ordering::Relaxed) + 1;
            sw.qd_sum.fetch_add(qd, Ordering::Relaxed);
            holds_qd = Some(cpu);
        }
        let mut switched = None;
        if !sw.busy.swap(true, Ordering::Acquire) {
            let w = Window {
                mode: Mode::from_u8(sw.mode.load(Ordering::Relaxed)),
                count: count.max(sw.count.load(Ordering::Relaxed)),
                qd_sum: sw.qd_sum.load(Ordering::Relaxed),
                tf: sw.tf.load(Ordering::Relaxed),
            };
            if let Some(v) = evaluate(&PARAMS, &w) {
                sw.count.store(0, Ordering::Relaxed);
                sw.qd_sum.store(0, Ordering::Relaxed);
                sw.tf.store(0, Ordering::Relaxed);
                if v.next != w.mode {
                    sw.mode.store(v.next.as_u8(), Ordering::Relaxed);
                    switched = Some((w.mode, v));
                }
            }
            sw.busy.store(false, Ordering::Release);
        }
        Entry {
            mode: Mode::from_u8(sw.mode.load(Ordering::Relaxed)),
            holds_qd,
            switched,
        }
    }

    /// The request's sleep is over: give its waiter count back.
    #[inline]
    pub fn leave(&self, e: &Entry) {
        if let Some(cpu) = e.holds_qd {
            let _ =
                self.switches
                    .cpu(cpu)
                    .qd
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |q| {
                        Some(q.saturating_sub(1))
                    });
        }
    }

    /// PAS's update hit its floor on `cpu`: one timer failure.
    #[inline]
    pub fn timer_failure(&self, cpu: usize) {
        self.switches.cpu(cpu).tf.fetch_add(1, Ordering::Relaxed);
    }

    /// Current mode of `cpu` (for tests and reports).
    #[cfg(any(test, feature = "testing"))]
    pub fn mode(&self, cpu: usize) -> Mode {
        Mode::from_u8(self.switches.cpu(cpu).mode.load(Ordering::Relaxed))
    }
}

/// What DPAS did, counted for the report (JSON keys as named).
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
    /// Requests served in each mode (interrupt, classic poll, PAS, overloaded).
    #[serde(rename = "dpas_int")]
    pub int: u64,
    #[serde(rename = "dpas_cp")]
    pub cp: u64,
    #[serde(rename = "dpas_pas")]
    pub pas: u64,
    #[serde(rename = "dpas_ol")]
    pub ol: u64,
    /// Mode switches this run made.
    pub mode_switches: u64,
    /// The last few mode switches, oldest first.
    #[serde(
        serialize_with = "serialize_switches",
        deserialize_with = "deserialize_switches"
    )]
    #[schemars(with = "Vec<ModeSwitch>")]
    pub recent_switches: [ModeSwitch; RECENT_SWITCHES],
}

merge_fields!(Counters {
    add: int, cp, pas, ol, mode_switches;
    with: recent_switches => merge_switches;
});

/// The newest switches of both, by time.
fn merge_switches(
    mine: &mut [ModeSwitch; RECENT_SWITCHES],
    theirs: &[ModeSwitch; RECENT_SWITCHES],
) {
    let mut all = [ModeSwitch::default(); 2 * RECENT_SWITCHES];
    all[..RECENT_SWITCHES].copy_from_slice(mine);
    all[RECENT_SWITCHES..].copy_from_slice(theirs);
    all.sort_by_key(|m| (!m.to.is_empty(), m.at_us));
    *mine = [ModeSwitch::default(); RECENT_SWITCHES];
    let used = all.iter().filter(|m| !m.to.is_empty()).count();
    for m in all[2 * RECENT_SWITCHES - used..]
        .iter()
        .skip(used.saturating_sub(RECENT_SWITCHES))
    {
        push_switch(mine, *m);
    }
}

/// A name from one of DPAS's fixed sets. Spelt as an alias because serde's
/// derive takes a literal `&'static str` field for a borrow of the input (and
/// would then only read from `'static` input); each such field reads back
/// through its set with `deserialize_with` instead.
type StaticName = &'static str;

/// How many mode switches a run keeps for its report.
pub const RECENT_SWITCHES: usize = 4;

/// One DPAS mode switch: when, from and to which mode, and why. The names are
/// DPAS's own (static: the hot path records a switch without allocating), so a
/// saved switch reads back through them.
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
pub struct ModeSwitch {
    /// Microseconds since the worker started waiting for completions.
    pub at_us: u64,
    #[serde(deserialize_with = "mode_named")]
    pub from: StaticName,
    #[serde(deserialize_with = "mode_named")]
    pub to: StaticName,
    /// The rule that fired.
    #[serde(deserialize_with = "rule_named")]
    pub rule: StaticName,
    /// What `measured` is.
    #[serde(deserialize_with = "measure_named")]
    pub measure: StaticName,
    pub measured: u64,
}

fn serialize_switches<S: serde::Serializer>(
    v: &[ModeSwitch; RECENT_SWITCHES],
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let used = v.iter().filter(|m| !m.to.is_empty());
    let mut seq = s.serialize_seq(Some(used.clone().count()))?;
    for m in used {
        seq.serialize_element(m)?;
    }
    seq.end()
}

/// The reverse of [`serialize_switches`]: the used switches, then unused slots.
fn deserialize_switches<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<[ModeSwitch; RECENT_SWITCHES], D::Error> {
    let used = <Vec<ModeSwitch> as serde::Deserialize>::deserialize(d)?;
    if used.len() > RECENT_SWITCHES {
        return Err(serde::de::Error::invalid_length(
            used.len(),
            &format!("at most {RECENT_SWITCHES} recent mode switches").as_str(),
        ));
    }
    let mut out = [ModeSwitch::default(); RECENT_SWITCHES];
    out[..used.len()].copy_from_slice(&used);
    Ok(out)
}

/// Keep `m` as the newest of the recent switches (fixed array: no allocation).
pub(super) fn push_switch(recent: &mut [ModeSwitch; RECENT_SWITCHES], m: ModeSwitch) {
    if let Some(free) = recent.iter_mut().find(|s| s.to.is_empty()) {
        *free = m;
    } else {
        recent.rotate_left(1);
        recent[RECENT_SWITCHES - 1] = m;
    }
}

/// DPAS's state in a worker: PAS's table with adaptive steps, and a handle
/// on the per-CPU switches shared with the other DPAS workers.
#[derive(Debug)]
pub struct DpasModel {
    pas: Pas,
    switches: Dpas,
    /// When this worker's DPAS started (mode switches are timed from it).
    t0_ns: u64,
}

impl Model for DpasModel {
    const NEEDS: Needs = Needs::SleepAndPeek;

    fn start() -> DpasModel {
        DpasModel {
            pas: Pas::new(true),
            switches: Dpas::new(Switches::shared()),
            t0_ns: clock::now_ns(),
        }
    }

    /// The CPU's mode decides how this request is waited for.
    #[inline]
    fn wait(
        &mut self,
        s: &mut CompletionStats,
        q: &mut dyn Queue,
        out: &mut [Completion],
        _min: u32,
        req: InFlight,
        deadline_ns: u64,
    ) -> DevResult<usize> {
        let len = req.len;
        let d = &self.switches;
        let cpu = current_cpu();
        let e = d.enter(cpu);
        if let Some((from, v)) = e.switched {
            s.dpas.mode_switches += 1;
            push_switch(
                &mut s.dpas.recent_switches,
                ModeSwitch {
                    at_us: clock::now_ns().saturating_sub(self.t0_ns) / 1000,
                    from: from.name(),
                    to: v.next.name(),
                    rule: v.rule,
                    measure: v.measure,
                    measured: v.measured,
                },
            );
            if from == Mode::Cp {
                // Back from classic polling: PAS recomputes its duration.
                self.pas.request_update(len);
            }
        }
        match e.mode {
            Mode::Cp => {
                s.dpas.cp += 1;
                d.leave(&e);
                wait::poll(s, q, out, deadline_ns)
            }
            Mode::Int => {
                s.dpas.int += 1;
                // The mode may have changed under a request that counted as a
                // waiter: give the count back before sleeping.
                d.leave(&e);
                wait::sleep(s, q, out, 1, deadline_ns)
            }
            m => {
                if m == Mode::Pas {
                    s.dpas.pas += 1;
                } else {
                    s.dpas.ol += 1;
                }
                // PAS's sleep; the request's waiter count is given back when
                // the sleep ends.
                let p = self.pas.nap(len);
                if p.floor_hit {
                    d.timer_failure(cpu);
                }
                let napped = nap::nap(s, q, out, p.dur_ns, deadline_ns)?;
                d.leave(&e);
                self.pas.after_nap(s, q, out, len, p, napped, deadline_ns)
            }
        }
    }

    /// PAS's line, then the requests by mode and the last switches.
    fn policy_line(s: &CompletionStats) -> Option<String> {
        use std::fmt::Write as _;
        let c = &s.dpas;
        let mut line = nap::policy_line(CompletionModel::Dpas.name(), s);
        let _ = write!(
            line,
            "; requests by mode: interrupt {}, classic poll {}, pas {}, overloaded {}; {} mode switches",
            c.int, c.cp, c.pas, c.ol, c.mode_switches
        );
        let recent: Vec<String> = c
            .recent_switches
            .iter()
            .filter(|m| !m.to.is_empty())
            .map(|m| {
                format!(
                    "at {:.1} ms {}->{}: {} ({} = {})",
                    m.at_us as f64 / 1e3,
                    m.from,
                    m.to,
                    m.rule,
                    m.measure,
                    m.measured
                )
            })
            .collect();
        if !recent.is_empty() {
            let _ = write!(line, ", last: {}", recent.join("; "));
        }
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(mode: Mode, count: u64, qd_sum: u64, tf: u64) -> Window {
        Window {
            mode,
            count,
            qd_sum,
            tf,
        }
    }

    #[test]
    fn windows_must_fill_before_a_verdict() {
        assert_eq!(evaluate(&PARAMS, &w(Mode::Pas, 99, 99, 5)), None);
        assert_eq!(evaluate(&PARAMS, &w(Mode::Ol, 99, 500, 0)), None);
        assert_eq!(evaluate(&PARAMS, &w(Mode::Cp, 999, 0, 0)), None);
        assert_eq!(evaluate(&PARAMS, &w(Mode::Int, 9_999, 0, 0)), None);
    }

    #[test]
    fn pas_goes_overloaded_on_a_timer_failure_and_polls_when_alone() {
        let v = evaluate(&PARAMS, &w(Mode::Pas, 100, 100, 1)).unwrap();
        assert_eq!((v.next, v.measured), (Mode::Ol, 1));
        // Alone: every request saw exactly one waiter (itself).
        let v = evaluate(&PARAMS, &w(Mode::Pas, 100, 100, 0)).unwrap();
        assert_eq!((v.next, v.measured), (Mode::Cp, 10));
        // Shared CPU without timer failures: stay PAS.
        let v = evaluate(&PARAMS, &w(Mode::Pas, 100, 150, 0)).unwrap();
        assert_eq!((v.next, v.measured), (Mode::Pas, 15));
        // Average just under 1.0 x10 truncates to 9: not "alone", stay PAS.
        let v = evaluate(&PARAMS, &w(Mode::Pas, 100, 99, 0)).unwrap();
        assert_eq!(v.next, Mode::Pas);
    }

    #[test]
    fn overloaded_goes_to_interrupts_when_crowded_and_back_when_not() {
        let v = evaluate(&PARAMS, &w(Mode::Ol, 100, 111, 0)).unwrap();
        assert_eq!(v.next, Mode::Int, "{v:?}");
        let v = evaluate(&PARAMS, &w(Mode::Ol, 100, 100, 0)).unwrap();
        assert_eq!(v.next, Mode::Pas);
        let v = evaluate(&PARAMS, &w(Mode::Ol, 100, 200, 0)).unwrap();
        assert_eq!((v.next, v.measured), (Mode::Int, 20));
    }

    #[test]
    fn polling_and_interrupts_come_back_to_measure() {
        let v = evaluate(&PARAMS, &w(Mode::Cp, 1000, 0, 0)).unwrap();
        assert_eq!(v.next, Mode::Pas);
        let v = evaluate(&PARAMS, &w(Mode::Int, 10_000, 0, 0)).unwrap();
        assert_eq!(v.next, Mode::Ol);
    }

    #[test]
    fn the_shared_switch_follows_the_rule() {
        // A private table (not the process-wide one) so parallel tests cannot
        // interfere.
        let d = Dpas::new(Arc::new(Switches {
            cpus: vec![CpuSwitch::new()].into_boxed_slice(),
        }));
        // Alone: each request enters, sleeps, leaves -> qd is 1 every time.
        let mut seen = None;
        for _ in 0..100 {
            let e = d.enter(0);
            assert_eq!(e.holds_qd, Some(0), "PAS counts waiters");
            if let Some(s) = e.switched {
                seen = Some(s);
            }
            d.leave(&e);
        }
        let (from, v) = seen.expect("PAS -> CP after 100 requests alone");
        assert_eq!((from, v.next), (Mode::Pas, Mode::Cp));
        assert_eq!(d.mode(0), Mode::Cp);
        // CP does not count waiters; after 1000 requests it re-measures.
        for i in 0..1000 {
            let e = d.enter(0);
            assert!(e.holds_qd.is_none());
            if i == 999 {
                assert_eq!(e.switched.map(|s| s.1.next), Some(Mode::Pas));
            }
            d.leave(&e);
        }
        // A timer failure during a PAS window -> OL; two waiters at once -> INT.
        d.timer_failure(0);
        let mut last = None;
        for _ in 0..100 {
            let e = d.enter(0);
            last = e.switched.or(last);
            d.leave(&e);
        }
        assert_eq!(last.map(|s| s.1.next), Some(Mode::Ol));
        for _ in 0..50 {
            // Two waiters overlap: they see 1 and 2 waiters, average 1.5.
            let a = d.enter(0);
            let b = d.enter(0);
            last = a.switched.or(b.switched).or(last);
            d.leave(&a);
            d.leave(&b);
        }
        assert_eq!(last.map(|s| s.1.next), Some(Mode::Int));
        assert_eq!(d.mode(0), Mode::Int);
    }
}
