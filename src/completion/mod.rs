//! Completion models: how a worker learns that its I/O finished.
//!
//! * `sync` — the backend performed the I/O inside `queue` (pread): nothing to wait for.
//! * `interrupt` — sleep in the backend's interrupt mechanism until a completion.
//! * `poll` — spin on the completion queue (`Wait::Peek`) and never sleep.
//! * `hybrid` — see [`classic_hybrid`]: sleep for half the mean completion
//!   time of the request's size and direction bucket, then poll (Linux's
//!   classic hybrid polling: `blk_mq_poll_nsecs` and `blk_mq_poll_hybrid`, named
//!   `blk_mq_poll_hybrid_sleep` in older kernels; removed in Linux 6.4).
//! * `hybrid-uring` — see [`hybrid_uring`]: io_uring's hybrid IOPOLL rule (6.13).
//! * `pas` — see [`pas`]: PAS's self-correcting sleep (FAST '26).
//! * `dpas` — see [`dpas`]: DPAS, switching among polling, PAS, overloaded and
//!   interrupts by measured load (FAST '26).
//! * `adaptive` — see [`adaptive`]: chooses between the others from measurements.
//!
//! Whatever the model, [`CompletionStats`] records how completions were actually
//! observed, so a run that asked for polling and slept is visible in the report.

pub mod adaptive;
pub mod classic_hybrid;
pub mod contention;
pub mod dpas;
pub mod hybrid_uring;
pub mod pas;

use crate::device::{Caps, DevResult, Queue, Wait};
use crate::job::CompletionModel;
use crate::measure::clock;
use crate::request::Completion;

/// `t`, or the engine's deadline if that comes first (0: no deadline).
#[inline(always)]
fn by_deadline(t: u64, deadline_ns: u64) -> u64 {
    if deadline_ns != 0 {
        t.min(deadline_ns)
    } else {
        t
    }
}

/// A queue [`Completer::wait_for`] can take either by its own type (its calls
/// then inline) or as a trait object; the models other than poll get the trait
/// object from it.
pub trait AsDynQueue: Queue {
    /// The same queue as a trait object.
    fn as_dyn(&mut self) -> &mut dyn Queue;
}

impl<T: Queue> AsDynQueue for T {
    #[inline(always)]
    fn as_dyn(&mut self) -> &mut dyn Queue {
        self
    }
}

impl AsDynQueue for dyn Queue {
    #[inline(always)]
    fn as_dyn(&mut self) -> &mut dyn Queue {
        self
    }
}

/// How completions were observed during a run.
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
pub struct CompletionStats {
    /// Completions handed back to the engine.
    pub completions: u64,
    /// Peeks of the completion queue that found at least one completion.
    pub polls_hit: u64,
    /// Peeks that found nothing (each one a spin iteration).
    pub polls_empty: u64,
    /// Times the thread slept waiting for the device (interrupt, hybrid's nap).
    pub sleeps: u64,
    /// Wall time spent spinning in poll loops, ns.
    pub spin_ns: u64,
    /// Wall time spent asleep waiting for completions, ns.
    pub sleep_ns: u64,
    /// Requests whose model was chosen per request by `adaptive`, by model.
    pub adaptive_poll: u64,
    pub adaptive_hybrid: u64,
    pub adaptive_interrupt: u64,
    /// Requests adaptive performed inline, in the caller's context (no wait).
    pub adaptive_sync: u64,
    /// Waits in which adaptive, with the CPU contended, stopped polling at its
    /// bound (p90 plus a wakeup) and slept for the interrupt instead.
    #[serde(default)]
    pub spin_bounded: u64,
    /// Sleeps (hybrid-uring, pas, dpas) after which the completion was already
    /// there on the first poll: the thread woke late.
    pub oversleeps: u64,
    /// Sleeps after which the thread still had to poll: it woke early.
    pub undersleeps: u64,
    /// The policy's last chosen sleep, ns (hybrid-uring, pas, dpas).
    pub last_nap_ns: u64,
    /// DPAS: requests served in each mode (interrupt, classic poll, PAS, overloaded).
    pub dpas_int: u64,
    pub dpas_cp: u64,
    pub dpas_pas: u64,
    pub dpas_ol: u64,
    /// DPAS: mode switches this run made.
    pub mode_switches: u64,
    /// Waits the worker made for completions (calls of [`Completer::wait_for`]).
    #[serde(default)]
    pub waits: u64,
    /// The most completions one wait handed back (bounded by
    /// `iodepth_batch_complete_max`).
    #[serde(default)]
    pub most_per_wait: u64,
    /// Waits entered while a free request slot and a request ready to go were
    /// both there: the worker waited instead of keeping the queue full. The
    /// loop refills before it waits, so anything but 0 is an engine bug
    /// (draining to `iodepth_low` is not counted: that wait is asked for).
    #[serde(default)]
    pub waits_with_room: u64,
    /// Requests the worker's QD1 polling path carried from issue to
    /// completion (`engine/worker/qd1.rs`); the rest went through the
    /// general loop.
    #[serde(default)]
    pub qd1_path: u64,
    /// The last few mode switches, oldest first.
    #[serde(
        serialize_with = "serialize_switches",
        deserialize_with = "deserialize_switches"
    )]
    #[schemars(with = "Vec<ModeSwitch>")]
    pub recent_switches: [ModeSwitch; RECENT_SWITCHES],
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
    #[serde(deserialize_with = "dpas::mode_named")]
    pub from: StaticName,
    #[serde(deserialize_with = "dpas::mode_named")]
    pub to: StaticName,
    /// The rule that fired.
    #[serde(deserialize_with = "dpas::rule_named")]
    pub rule: StaticName,
    /// What `measured` is.
    #[serde(deserialize_with = "dpas::measure_named")]
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
fn push_switch(recent: &mut [ModeSwitch; RECENT_SWITCHES], m: ModeSwitch) {
    if let Some(free) = recent.iter_mut().find(|s| s.to.is_empty()) {
        *free = m;
    } else {
        recent.rotate_left(1);
        recent[RECENT_SWITCHES - 1] = m;
    }
}

impl CompletionStats {
    pub fn merge(&mut self, o: &CompletionStats) {
        self.completions += o.completions;
        self.polls_hit += o.polls_hit;
        self.polls_empty += o.polls_empty;
        self.sleeps += o.sleeps;
        self.spin_ns += o.spin_ns;
        self.sleep_ns += o.sleep_ns;
        self.adaptive_poll += o.adaptive_poll;
        self.adaptive_hybrid += o.adaptive_hybrid;
        self.adaptive_interrupt += o.adaptive_interrupt;
        self.adaptive_sync += o.adaptive_sync;
        self.spin_bounded += o.spin_bounded;
        self.oversleeps += o.oversleeps;
        self.undersleeps += o.undersleeps;
        self.last_nap_ns = self.last_nap_ns.max(o.last_nap_ns);
        self.dpas_int += o.dpas_int;
        self.dpas_cp += o.dpas_cp;
        self.dpas_pas += o.dpas_pas;
        self.dpas_ol += o.dpas_ol;
        self.mode_switches += o.mode_switches;
        self.waits += o.waits;
        self.most_per_wait = self.most_per_wait.max(o.most_per_wait);
        self.waits_with_room += o.waits_with_room;
        self.qd1_path += o.qd1_path;
        // The newest switches of both, by time.
        let mut all = [ModeSwitch::default(); 2 * RECENT_SWITCHES];
        all[..RECENT_SWITCHES].copy_from_slice(&self.recent_switches);
        all[RECENT_SWITCHES..].copy_from_slice(&o.recent_switches);
        all.sort_by_key(|m| (!m.to.is_empty(), m.at_us));
        self.recent_switches = [ModeSwitch::default(); RECENT_SWITCHES];
        let used = all.iter().filter(|m| !m.to.is_empty()).count();
        for m in all[2 * RECENT_SWITCHES - used..]
            .iter()
            .skip(used.saturating_sub(RECENT_SWITCHES))
        {
            push_switch(&mut self.recent_switches, *m);
        }
    }

    /// What a sleep-then-poll policy (hybrid-uring, pas, dpas) did, in one
    /// line; `None` for the other models.
    pub fn describe_policy(&self, asked: CompletionModel) -> Option<String> {
        use std::fmt::Write as _;
        if !matches!(
            asked,
            CompletionModel::HybridUring | CompletionModel::Pas | CompletionModel::Dpas
        ) {
            return None;
        }
        let mut s = format!(
            "{}: {} sleeps ({} woke late: completion already there, {} woke early: polled on), {} polls hit, {} empty polls, last sleep {:.1} us",
            asked.name(),
            self.sleeps,
            self.oversleeps,
            self.undersleeps,
            self.polls_hit,
            self.polls_empty,
            self.last_nap_ns as f64 / 1e3
        );
        if asked == CompletionModel::Dpas {
            let _ = write!(
                s,
                "; requests by mode: interrupt {}, classic poll {}, pas {}, overloaded {}; {} mode switches",
                self.dpas_int, self.dpas_cp, self.dpas_pas, self.dpas_ol, self.mode_switches
            );
            let recent: Vec<String> = self
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
                let _ = write!(s, ", last: {}", recent.join("; "));
            }
        }
        Some(s)
    }

    /// A one-line, honest account of how completions were seen.
    pub fn describe(&self, asked: CompletionModel) -> String {
        let mut s = format!(
            "completion={}: {} completions, {} polls hit, {} empty polls, {} sleeps, spin {:.3} ms, asleep {:.3} ms",
            asked.name(),
            self.completions,
            self.polls_hit,
            self.polls_empty,
            self.sleeps,
            self.spin_ns as f64 / 1e6,
            self.sleep_ns as f64 / 1e6
        );
        if self.spin_bounded > 0 {
            s.push_str(&format!(
                ", {} polls cut short for the interrupt (CPU contended)",
                self.spin_bounded
            ));
        }
        if self.adaptive_sync > 0 {
            s.push_str(&format!(", {} performed inline", self.adaptive_sync));
        }
        if self.qd1_path > 0 {
            s.push_str(&format!(", {} by the QD1 path", self.qd1_path));
        }
        if asked == CompletionModel::Poll && self.sleeps > 0 {
            s.push_str(" — WARNING: asked to poll but slept");
        }
        if matches!(
            asked,
            CompletionModel::Poll
                | CompletionModel::Hybrid
                | CompletionModel::HybridUring
                | CompletionModel::Pas
        ) && self.completions > 0
            && self.polls_hit == 0
        {
            s.push_str(" — WARNING: asked to poll but no completion was found by polling");
        }
        s
    }
}

/// Why a completion model cannot serve a job on its backend. Each message
/// names the model that would work instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompletionError {
    #[error(
        "backend {backend} completes I/O asynchronously; completion=sync needs a synchronous backend (sync, psync, vsync, pvsync, pvsync2)"
    )]
    SyncOnAsync { backend: String },
    #[error(
        "backend {backend} performs each I/O inside the submitting call, so there is no completion to {verb} for; use completion=sync (or ioengine=io_uring / libaio / null)"
    )]
    NothingToWaitFor { backend: String, verb: &'static str },
    #[error("backend {backend} cannot sleep for completions; {instead}")]
    CannotSleep {
        backend: String,
        instead: &'static str,
    },
    #[error("backend {backend} cannot be polled; {instead}")]
    CannotPoll {
        backend: String,
        instead: &'static str,
    },
    #[error(
        "completion={model} needs a backend that can both sleep and poll; {backend} cannot: {instead}"
    )]
    NeedsSleepAndPoll {
        model: &'static str,
        backend: String,
        instead: &'static str,
    },
}

/// What to ask for instead when a backend lacks sleeping, polling or both. The
/// one backend here that polls but cannot sleep is io_uring with IOPOLL (hipri=1).
fn instead(caps: Caps) -> &'static str {
    match (caps.can_sleep, caps.can_peek) {
        (true, _) => {
            "use completion=interrupt, or ioengine=io_uring / libaio / null, which can poll"
        }
        (false, true) => "use completion=poll, or drop hipri=1 so the ring can sleep",
        (false, false) => "use ioengine=io_uring / libaio / null, which can both sleep and poll",
    }
}

/// Pick the model a job gets when it names none, and refuse impossible pairs.
pub fn resolve(
    asked: Option<CompletionModel>,
    caps: Caps,
    backend: &str,
) -> Result<CompletionModel, CompletionError> {
    use CompletionModel::*;
    let model = match asked {
        Some(m) => m,
        None if caps.sync => Sync,
        None => Interrupt,
    };
    let backend = backend.to_string();
    match model {
        Sync if !caps.sync => Err(CompletionError::SyncOnAsync { backend }),
        Interrupt | Poll | Hybrid | HybridUring | Pas | Dpas | Adaptive if caps.sync => {
            Err(CompletionError::NothingToWaitFor {
                backend,
                verb: match model {
                    Interrupt => "sleep",
                    _ => "poll",
                },
            })
        }
        Interrupt if !caps.can_sleep => Err(CompletionError::CannotSleep {
            backend,
            instead: instead(caps),
        }),
        Poll if !caps.can_peek => Err(CompletionError::CannotPoll {
            backend,
            instead: instead(caps),
        }),
        Hybrid | HybridUring | Pas | Dpas | Adaptive if !(caps.can_peek && caps.can_sleep) => {
            Err(CompletionError::NeedsSleepAndPoll {
                model: model.name(),
                backend,
                instead: instead(caps),
            })
        }
        _ => Ok(model),
    }
}

/// The in-flight request a wait is timed for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InFlight {
    /// When it was submitted (0: none, or not to be timed from).
    pub submit_ns: u64,
    pub len: u32,
    pub write: bool,
}

/// Waits for completions according to one model and keeps the account.
#[derive(Debug)]
pub struct Completer {
    model: CompletionModel,
    pub stats: CompletionStats,
    /// Classic hybrid's per-bucket means (hybrid only).
    classic: classic_hybrid::ClassicHybrid,
    adaptive: adaptive::Adaptive,
    /// hybrid-uring's one number.
    uring: hybrid_uring::HybridUring,
    /// PAS's table (pas; dpas with adaptive steps).
    pas: pas::Pas,
    /// DPAS's handle on the per-CPU switches (dpas only).
    dpas: Option<dpas::Dpas>,
    /// When this completer was made (mode switches are timed from it).
    t0_ns: u64,
}

/// What a policy's sleep came to.
enum Nap {
    /// Completions were already there: no sleep.
    Ready(usize),
    /// Slept this long, ns (0: no sleep was due).
    Slept(u64),
}

impl Completer {
    pub fn new(model: CompletionModel, adaptive: adaptive::Adaptive) -> Completer {
        Completer {
            model,
            stats: CompletionStats::default(),
            classic: classic_hybrid::ClassicHybrid::default(),
            adaptive,
            uring: hybrid_uring::HybridUring::default(),
            pas: pas::Pas::new(model == CompletionModel::Dpas),
            dpas: (model == CompletionModel::Dpas)
                .then(|| dpas::Dpas::new(dpas::Switches::shared())),
            t0_ns: clock::now_ns(),
        }
    }

    /// Let adaptive perform requests inline: the backend can
    /// ([`crate::device::Caps::inline`]) and the worker runs one request at a time.
    pub fn allow_inline(&mut self) {
        self.adaptive.allow_inline();
    }

    pub fn model(&self) -> CompletionModel {
        self.model
    }

    pub fn adaptive(&self) -> &adaptive::Adaptive {
        &self.adaptive
    }

    /// Feed one completed request: `lat_ns` from issue, `clat_ns` from submit.
    /// Adaptive learns from issue-to-completion (some backends finish the I/O
    /// inside the submit call); classic hybrid from submit-to-completion, the
    /// device time the kernel's rule averages, since its nap is timed from the
    /// submit (time a scheduler held the request must not lengthen the nap).
    /// `inline`: the request was performed in the caller's context
    /// ([`Completer::take_inline`]).
    #[inline]
    pub fn observe(&mut self, req: InFlight, lat_ns: u64, clat_ns: u64, inline: bool) {
        match self.model {
            // Adaptive keeps percentiles, which outliers do not move.
            CompletionModel::Adaptive => self.adaptive.observe(req.len, lat_ns, inline),
            CompletionModel::Hybrid => self.classic.observe(req.len, req.write, clat_ns),
            _ => {}
        }
    }

    /// Which in-flight request a wait is for, as an ordering key: the earliest
    /// classic-hybrid wake under `hybrid` (each size naps its own bucket's
    /// time), the oldest submit under every other model.
    #[inline]
    pub fn wait_key(&self, req: InFlight) -> u64 {
        match self.model {
            CompletionModel::Hybrid => self.classic.wake_ns(req.submit_ns, req.len, req.write),
            _ => req.submit_ns,
        }
    }

    /// Whether the next request of `len` bytes should be performed inline, in
    /// the caller's context, instead of queued (adaptive, where allowed). Counts
    /// it: an inline request is a completion observed without any wait.
    #[inline]
    pub fn take_inline(&mut self, len: u32) -> bool {
        if self.model != CompletionModel::Adaptive {
            return false;
        }
        let go = self.adaptive.take_inline(len);
        if go {
            self.stats.adaptive_sync += 1;
            self.stats.completions += 1;
        }
        go
    }

    /// Wait until at least one in-flight request completes and move completions to
    /// `out`. `req` is the in-flight request the wait is timed for (the oldest,
    /// or under hybrid the earliest due: [`Completer::wait_key`]; hybrid and
    /// adaptive time their nap from its submit, with its size);
    /// `deadline_ns` (0 = none) is when the engine must regain control even if
    /// nothing completed (a paced stream falls due).
    #[inline]
    pub fn wait(
        &mut self,
        q: &mut dyn Queue,
        out: &mut [Completion],
        req: InFlight,
        deadline_ns: u64,
    ) -> DevResult<usize> {
        self.wait_for(q, out, 1, req, deadline_ns)
    }

    /// [`Completer::wait`] for at least `min` completions (fio's
    /// `iodepth_batch_complete_min`; the caller bounds it by what is in flight)
    /// and at most `out.len()` (its `iodepth_batch_complete_max`). `min = 0`
    /// never sleeps: one look at the completion queue, whatever it holds.
    ///
    /// Generic over the queue so that the worker's statically held null device
    /// (`device::worker_queue`) polls with its `reap` inlined: at QD1 the poll
    /// is most of a wait. Every model but poll takes the queue as a trait object.
    #[inline]
    pub fn wait_for<Q: AsDynQueue + ?Sized>(
        &mut self,
        q: &mut Q,
        out: &mut [Completion],
        min: u32,
        req: InFlight,
        deadline_ns: u64,
    ) -> DevResult<usize> {
        self.stats.waits += 1;
        let n = if min == 0 {
            let n = q.reap(Wait::Peek, out)?;
            if n > 0 {
                self.stats.polls_hit += 1;
            } else {
                self.stats.polls_empty += 1;
            }
            n
        } else {
            // Polling needs none of wait_model's choices: calling it directly
            // saves a call per wait on the shortest path there is (QD1 polling).
            let mut n = if self.model == CompletionModel::Poll {
                self.poll(q, out, deadline_ns)?
            } else {
                self.wait_model(q.as_dyn(), out, min, req, deadline_ns)?
            };
            // Models other than interrupt return what one wakeup brought: wait
            // again (same model) until `min` are in, or the deadline ends it.
            let want = (min as usize).min(out.len());
            while n > 0 && n < want {
                let again = InFlight {
                    submit_ns: 0,
                    ..req
                };
                let more = self.wait_model(
                    q.as_dyn(),
                    &mut out[n..],
                    min - n as u32,
                    again,
                    deadline_ns,
                )?;
                if more == 0 {
                    break;
                }
                n += more;
            }
            n
        };
        Ok(self.counted(n))
    }

    /// Count the completions one wait handed back.
    #[inline(always)]
    fn counted(&mut self, n: usize) -> usize {
        self.stats.completions += n as u64;
        self.stats.most_per_wait = self.stats.most_per_wait.max(n as u64);
        n
    }

    /// [`wait_for`](Self::wait_for) under `poll` for one request, no deadline
    /// (the worker's QD1 path, `engine/worker/qd1.rs`): the same counts, with
    /// the first peek inlined into the caller and the spin, if the first peek
    /// finds nothing, in [`Completer::poll`].
    #[inline(always)]
    pub fn poll_one<Q: Queue + ?Sized>(
        &mut self,
        q: &mut Q,
        out: &mut [Completion],
    ) -> DevResult<usize> {
        debug_assert_eq!(self.model, CompletionModel::Poll);
        self.stats.waits += 1;
        let mut n = q.reap(Wait::Peek, out)?;
        if n > 0 {
            self.stats.polls_hit += 1;
        } else {
            n = self.poll(q, out, 0)?;
        }
        Ok(self.counted(n))
    }

    /// [`wait_for`](Self::wait_for) under `interrupt` for one request, no
    /// deadline (the worker's QD1 path): the interrupt model's own first look
    /// ([`Completer::sleep`] takes a completion already there without a
    /// sleep, counting nothing for the look) inlined into the caller; only a
    /// wait that must sleep goes the general way. The same counts.
    #[inline(always)]
    pub fn interrupt_one<Q: AsDynQueue + ?Sized>(
        &mut self,
        q: &mut Q,
        out: &mut [Completion],
        req: InFlight,
    ) -> DevResult<usize> {
        debug_assert_eq!(self.model, CompletionModel::Interrupt);
        let n = q.reap(Wait::Peek, out)?;
        if n == 0 {
            return self.wait_for(q, out, 1, req, 0);
        }
        self.stats.waits += 1;
        Ok(self.counted(n))
    }

    /// One wait of the job's model (adaptive: of the model it picks now).
    #[inline]
    fn wait_model(
        &mut self,
        q: &mut dyn Queue,
        out: &mut [Completion],
        min: u32,
        req: InFlight,
        deadline_ns: u64,
    ) -> DevResult<usize> {
        let (oldest_submit_ns, len) = (req.submit_ns, req.len);
        let model = match self.model {
            CompletionModel::Adaptive => {
                let m = self.adaptive.choose(len);
                match m {
                    CompletionModel::Poll => self.stats.adaptive_poll += 1,
                    CompletionModel::Hybrid => self.stats.adaptive_hybrid += 1,
                    _ => self.stats.adaptive_interrupt += 1,
                }
                m
            }
            m => m,
        };
        let n = match model {
            CompletionModel::Sync => q.reap(Wait::Peek, out)?,
            CompletionModel::Poll => self.poll(q, out, deadline_ns)?,
            CompletionModel::Interrupt => self.sleep(q, out, min, deadline_ns)?,
            CompletionModel::HybridUring => {
                self.wait_uring(q, out, oldest_submit_ns, deadline_ns)?
            }
            CompletionModel::Pas => self.wait_pas(q, out, len, deadline_ns, None)?,
            CompletionModel::Dpas => self.wait_dpas(q, out, len, deadline_ns)?,
            CompletionModel::Hybrid | CompletionModel::Adaptive => {
                // The I/O may have completed inside the submit call (io-wq,
                // inline completion): never nap for something already done.
                let n = q.reap(Wait::Peek, out)?;
                if n > 0 {
                    self.stats.polls_hit += 1;
                    return Ok(n);
                }
                // Adaptive under CPU contention sleeps at least `floor` from
                // now, even when its nap is already over: a sleep that short
                // would not give the CPU away (adaptive::sleep_floor_ns).
                let (nap, floor) = match self.model {
                    CompletionModel::Adaptive => {
                        (self.adaptive.nap_ns(len), self.adaptive.sleep_floor_ns())
                    }
                    _ => (self.classic.nap_ns(len, req.write), 0),
                };
                let mut wake = oldest_submit_ns + nap;
                if floor > 0 {
                    wake = wake.max(clock::now_ns() + floor);
                }
                let wake = by_deadline(wake, deadline_ns);
                let mut slept = false;
                if (nap > 0 || floor > 0) && clock::now_ns() < wake {
                    let t0 = clock::now_ns();
                    clock::sleep_until(wake);
                    self.stats.sleeps += 1;
                    self.stats.sleep_ns += clock::now_ns() - t0;
                    slept = true;
                }
                let (empty_before, spin_before) = (self.stats.polls_empty, self.stats.spin_ns);
                // Adaptive under contention polls a hybrid class only so long
                // (Adaptive::spin_bound_ns), then sleeps for the interrupt.
                let bound = match self.model {
                    CompletionModel::Adaptive if oldest_submit_ns != 0 => self
                        .adaptive
                        .spin_bound_ns(len)
                        .map(|b| oldest_submit_ns + b),
                    _ => None,
                };
                let poll_deadline = bound.map_or(deadline_ns, |b| by_deadline(b, deadline_ns));
                let n = self.poll(q, out, poll_deadline)?;
                if n == 0 && bound.is_some() && (deadline_ns == 0 || clock::now_ns() < deadline_ns)
                {
                    self.stats.spin_bounded += 1;
                    return self.sleep(q, out, min, deadline_ns);
                }
                if slept && n > 0 && self.model == CompletionModel::Adaptive {
                    // Adaptive corrects its next nap by how this one ended.
                    let overslept = self.stats.polls_empty == empty_before;
                    let spin = self.stats.spin_ns - spin_before;
                    self.adaptive.after_nap(len, overslept, spin);
                }
                n
            }
        };
        Ok(n)
    }

    /// Sleep `nap_ns` from now (ending at the deadline if that comes first),
    /// unless completions are already there.
    #[inline]
    fn nap(
        &mut self,
        q: &mut dyn Queue,
        out: &mut [Completion],
        nap_ns: u64,
        deadline_ns: u64,
    ) -> DevResult<Nap> {
        let n = q.reap(Wait::Peek, out)?;
        if n > 0 {
            self.stats.polls_hit += 1;
            return Ok(Nap::Ready(n));
        }
        self.stats.last_nap_ns = nap_ns;
        if nap_ns == 0 {
            return Ok(Nap::Slept(0));
        }
        let t0 = clock::now_ns();
        let wake = t0 + nap_ns;
        let wake = by_deadline(wake, deadline_ns);
        clock::sleep_until(wake);
        let slept = clock::now_ns() - t0;
        self.stats.sleeps += 1;
        self.stats.sleep_ns += slept;
        Ok(Nap::Slept(slept))
    }

    /// Poll after a nap; also says whether the first peek found a completion
    /// (the sleep overslept) and counts the outcome if there was a sleep.
    #[inline]
    fn poll_after_nap(
        &mut self,
        q: &mut dyn Queue,
        out: &mut [Completion],
        slept_ns: u64,
        deadline_ns: u64,
    ) -> DevResult<(usize, bool)> {
        let empty_before = self.stats.polls_empty;
        let n = self.poll(q, out, deadline_ns)?;
        let overslept = self.stats.polls_empty == empty_before;
        if n > 0 && slept_ns > 0 {
            if overslept {
                self.stats.oversleeps += 1;
            } else {
                self.stats.undersleeps += 1;
            }
        }
        Ok((n, overslept))
    }

    /// io_uring 6.13's hybrid IOPOLL rule ([`hybrid_uring`]).
    #[inline]
    fn wait_uring(
        &mut self,
        q: &mut dyn Queue,
        out: &mut [Completion],
        oldest_submit_ns: u64,
        deadline_ns: u64,
    ) -> DevResult<usize> {
        let (n, slept) = match self.nap(q, out, self.uring.nap_ns(), deadline_ns)? {
            Nap::Ready(n) => (n, 0),
            Nap::Slept(slept) => (
                self.poll_after_nap(q, out, slept, deadline_ns)?.0,
                // The kernel subtracts the sleep it asked for, not the one it
                // got: a late wakeup counts as running time.
                if slept > 0 { self.uring.nap_ns() } else { 0 },
            ),
        };
        if n > 0 && oldest_submit_ns != 0 {
            let elapsed = clock::now_ns().saturating_sub(oldest_submit_ns);
            self.uring.observe(elapsed, slept);
        }
        Ok(n)
    }

    /// PAS's sleep ([`pas`]); with `entry`, one DPAS request in PAS or OL mode
    /// whose waiter count is given back when the sleep ends.
    #[inline]
    fn wait_pas(
        &mut self,
        q: &mut dyn Queue,
        out: &mut [Completion],
        len: u32,
        deadline_ns: u64,
        entry: Option<(dpas::Entry, usize)>,
    ) -> DevResult<usize> {
        let p = self.pas.nap(len);
        if let (true, Some(d), Some((_, cpu))) = (p.floor_hit, &self.dpas, entry) {
            d.timer_failure(cpu);
        }
        let napped = self.nap(q, out, p.dur_ns, deadline_ns)?;
        if let (Some(d), Some((e, _))) = (&self.dpas, entry) {
            d.leave(&e);
        }
        match napped {
            // Done before the sleep began: as the artifact, a sleep this long
            // would have overslept.
            Nap::Ready(n) => {
                self.pas.feedback(len, p.version, true);
                Ok(n)
            }
            Nap::Slept(slept) => {
                let (n, overslept) = self.poll_after_nap(q, out, slept, deadline_ns)?;
                if n > 0 && slept > 0 {
                    self.pas.feedback(len, p.version, overslept);
                }
                Ok(n)
            }
        }
    }

    /// DPAS ([`dpas`]): the CPU's mode decides how this request is waited for.
    #[inline]
    fn wait_dpas(
        &mut self,
        q: &mut dyn Queue,
        out: &mut [Completion],
        len: u32,
        deadline_ns: u64,
    ) -> DevResult<usize> {
        let Some(d) = &self.dpas else {
            return self.wait_pas(q, out, len, deadline_ns, None);
        };
        let cpu = dpas::current_cpu();
        let e = d.enter(cpu);
        if let Some((from, v)) = e.switched {
            self.stats.mode_switches += 1;
            push_switch(
                &mut self.stats.recent_switches,
                ModeSwitch {
                    at_us: clock::now_ns().saturating_sub(self.t0_ns) / 1000,
                    from: from.name(),
                    to: v.next.name(),
                    rule: v.rule,
                    measure: v.measure,
                    measured: v.measured,
                },
            );
            if from == dpas::Mode::Cp {
                // Back from classic polling: PAS recomputes its duration.
                self.pas.request_update(len);
            }
        }
        match e.mode {
            dpas::Mode::Cp => {
                self.stats.dpas_cp += 1;
                d.leave(&e);
                self.poll(q, out, deadline_ns)
            }
            dpas::Mode::Int => {
                self.stats.dpas_int += 1;
                // The mode may have changed under a request that counted as a
                // waiter: give the count back before sleeping.
                d.leave(&e);
                self.sleep(q, out, 1, deadline_ns)
            }
            m => {
                if m == dpas::Mode::Pas {
                    self.stats.dpas_pas += 1;
                } else {
                    self.stats.dpas_ol += 1;
                }
                self.wait_pas(q, out, len, deadline_ns, Some((e, cpu)))
            }
        }
    }

    #[inline]
    fn poll<Q: Queue + ?Sized>(
        &mut self,
        q: &mut Q,
        out: &mut [Completion],
        deadline_ns: u64,
    ) -> DevResult<usize> {
        let n = q.reap(Wait::Peek, out)?;
        if n > 0 {
            self.stats.polls_hit += 1;
            return Ok(n);
        }
        // Only time the spin when there is a spin: a hit on the first peek costs
        // no clock read.
        let t0 = clock::now_ns();
        let mut empty = 1u64;
        let n = loop {
            let n = q.reap(Wait::Peek, out)?;
            if n > 0 {
                self.stats.polls_hit += 1;
                break n;
            }
            empty += 1;
            // Check the deadline only every 64 spins: a clock read per spin would
            // double the cost of an empty poll.
            if deadline_ns != 0 && empty.is_multiple_of(64) && clock::now_ns() >= deadline_ns {
                break 0;
            }
            std::hint::spin_loop();
        };
        self.stats.polls_empty += empty;
        self.stats.spin_ns += clock::now_ns() - t0;
        Ok(n)
    }

    #[inline]
    fn sleep(
        &mut self,
        q: &mut dyn Queue,
        out: &mut [Completion],
        min: u32,
        deadline_ns: u64,
    ) -> DevResult<usize> {
        // Completions may already be there (a fast device, or a batch): taking
        // them costs no sleep, as an interrupt handler finding work would.
        let n = q.reap(Wait::Peek, out)?;
        if n > 0 {
            return Ok(n);
        }
        let min = min.max(1);
        let t0 = clock::now_ns();
        let n = if deadline_ns != 0
            && q.caps().predicts_completion
            && q.next_completion_at().is_none_or(|t| t > deadline_ns)
        {
            // The device will not finish before the engine must act: sleep on a
            // timer to the deadline instead of in the device's interrupt path.
            clock::sleep_until(deadline_ns);
            q.reap(Wait::Peek, out)?
        } else if deadline_ns != 0 {
            // Bounded: a paced stream falls due at the deadline.
            q.sleep_until(min, deadline_ns, out)?
        } else {
            q.reap(Wait::Sleep { min }, out)?
        };
        self.stats.sleeps += 1;
        self.stats.sleep_ns += clock::now_ns() - t0;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ASYNC: Caps = Caps {
        sync: false,
        can_peek: true,
        can_sleep: true,
        device_poll: false,
        predicts_completion: false,
        inline: false,
    };
    const SYNC: Caps = Caps {
        sync: true,
        can_peek: false,
        can_sleep: false,
        device_poll: false,
        predicts_completion: false,
        inline: false,
    };

    #[test]
    fn defaults_follow_the_backend() {
        assert_eq!(resolve(None, SYNC, "psync"), Ok(CompletionModel::Sync));
        assert_eq!(
            resolve(None, ASYNC, "io_uring"),
            Ok(CompletionModel::Interrupt)
        );
    }

    #[test]
    fn impossible_pairs_are_refused_with_reason() {
        let e = resolve(Some(CompletionModel::Poll), SYNC, "psync")
            .unwrap_err()
            .to_string();
        assert!(e.contains("psync") && e.contains("completion=sync"), "{e}");
        let e = resolve(Some(CompletionModel::Sync), ASYNC, "io_uring")
            .unwrap_err()
            .to_string();
        assert!(e.contains("asynchronously"), "{e}");
        let no_sleep = Caps {
            can_sleep: false,
            ..ASYNC
        };
        assert!(resolve(Some(CompletionModel::Hybrid), no_sleep, "x").is_err());
        assert!(resolve(Some(CompletionModel::Poll), no_sleep, "x").is_ok());
    }

    #[test]
    fn describe_flags_a_poll_run_that_slept() {
        let s = CompletionStats {
            completions: 10,
            sleeps: 3,
            ..Default::default()
        };
        let d = s.describe(CompletionModel::Poll);
        assert!(d.contains("asked to poll but slept"), "{d}");
        let ok = CompletionStats {
            completions: 10,
            polls_hit: 10,
            ..Default::default()
        };
        assert!(!ok.describe(CompletionModel::Poll).contains("WARNING"));
    }

    fn switch(at_us: u64) -> ModeSwitch {
        ModeSwitch {
            at_us,
            from: "pas",
            to: "ol",
            rule: "r",
            measure: "m",
            measured: 1,
        }
    }

    #[test]
    fn recent_switches_keep_the_newest_and_serialize_only_used_entries() {
        let mut a = CompletionStats::default();
        for t in [10, 20, 30] {
            push_switch(&mut a.recent_switches, switch(t));
        }
        a.mode_switches = 3;
        let j = serde_json::to_value(a).unwrap();
        assert_eq!(j["recent_switches"].as_array().unwrap().len(), 3, "{j}");
        assert_eq!(j["recent_switches"][2]["at_us"], 30);
        let mut b = CompletionStats::default();
        for t in [5, 25, 35] {
            push_switch(&mut b.recent_switches, switch(t));
        }
        b.mode_switches = 3;
        a.merge(&b);
        assert_eq!(a.mode_switches, 6);
        let at: Vec<u64> = a.recent_switches.iter().map(|m| m.at_us).collect();
        assert_eq!(at, [20, 25, 30, 35]);
        // A full list drops its oldest.
        push_switch(&mut a.recent_switches, switch(40));
        assert_eq!(a.recent_switches[0].at_us, 25);
        assert_eq!(a.recent_switches[3].at_us, 40);
    }

    #[test]
    fn policies_are_refused_where_they_cannot_sleep_and_poll() {
        for m in [
            CompletionModel::HybridUring,
            CompletionModel::Pas,
            CompletionModel::Dpas,
        ] {
            assert_eq!(resolve(Some(m), ASYNC, "null"), Ok(m));
            let e = resolve(Some(m), SYNC, "psync").unwrap_err().to_string();
            assert!(e.contains("completion=sync"), "{e}");
            let no_sleep = Caps {
                can_sleep: false,
                ..ASYNC
            };
            let e = resolve(Some(m), no_sleep, "x").unwrap_err().to_string();
            assert!(e.contains(m.name()), "{e}");
        }
    }

    #[test]
    fn only_the_policies_describe_a_policy_line() {
        let s = CompletionStats {
            sleeps: 5,
            oversleeps: 2,
            undersleeps: 3,
            ..Default::default()
        };
        assert!(s.describe_policy(CompletionModel::Hybrid).is_none());
        let l = s.describe_policy(CompletionModel::Pas).unwrap();
        assert!(
            l.contains("5 sleeps (2 woke late") && l.contains("3 woke early"),
            "{l}"
        );
        let d = s.describe_policy(CompletionModel::Dpas).unwrap();
        assert!(d.contains("requests by mode"), "{d}");
    }
}
