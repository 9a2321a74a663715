//! Completion models: how a worker learns that its I/O finished.
//!
//! * `sync` — see [`sync`]: the backend performed the I/O inside `queue`
//!   (pread): nothing to wait for.
//! * `interrupt` — see [`interrupt`]: sleep in the backend's interrupt
//!   mechanism until a completion.
//! * `poll` — see [`poll`]: spin on the completion queue (`Wait::Peek`) and
//!   never sleep.
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
//! Each model is one file (or folder) here: a type holding its state that
//! implements [`Model`] (how it waits, what it learns from a completion, what
//! it needs of the backend, what it adds to the report), and one line in the
//! `models!` list below. A [`Completer`] holds the state of the one model
//! its worker runs, chosen at setup. The waits every model is built from
//! (peek, poll, sleep) are in [`wait`]; the sleep-then-poll policies' nap in
//! [`nap`].
//!
//! Whatever the model, [`CompletionStats`] records how completions were actually
//! observed, so a run that asked for polling and slept is visible in the report.

/// `impl $T { pub fn merge(&mut self, o: &$T) }` adding up two workers'
/// counters field by field: `add` fields are summed, `max` fields keep the
/// larger, `merge` fields merge by their own `merge`, and `with` fields by the
/// function named. Every field must be listed: the macro destructures `o`
/// without `..`, so a field added to the struct and forgotten here does not
/// compile (a counter that stays at one worker's value in a group report).
macro_rules! merge_fields {
    ($t:ident {
        add: $($add:ident),* ;
        $(max: $($max:ident),* ;)?
        $(merge: $($sub:ident),* ;)?
        $(with: $($wf:ident => $wfn:path),* ;)?
    }) => {
        impl $t {
            /// Add another worker's counts to these.
            pub fn merge(&mut self, o: &$t) {
                let $t {
                    $($add,)*
                    $($($max,)*)?
                    $($($sub,)*)?
                    $($($wf,)*)?
                } = o;
                $(self.$add += *$add;)*
                $($(self.$max = self.$max.max(*$max);)*)?
                $($(self.$sub.merge($sub);)*)?
                $($($wfn(&mut self.$wf, $wf);)*)?
            }
        }
    };
}

pub mod adaptive;
pub mod classic_hybrid;
pub mod dpas;
pub mod hybrid_uring;
pub mod interrupt;
pub mod nap;
pub mod pas;
pub mod poll;
mod resolve;
pub mod sync;
mod wait;

#[cfg(any(test, feature = "testing"))]
pub use dpas::{ModeSwitch, RECENT_SWITCHES};
pub use resolve::{CompletionError, Needs, resolve};

use crate::device::{DevResult, Queue, Wait};
use crate::job::CompletionModel;
use crate::request::Completion;

/// One completion model: the state a worker keeps for it, and what the model
/// does with it. Everything but [`Model::wait`] has a default for models
/// that neither learn nor count anything of their own.
trait Model: std::fmt::Debug + Sized {
    /// What the backend must be able to do ([`resolve`] checks it).
    const NEEDS: Needs;

    /// The model's state when a worker is set up (before the clock starts:
    /// any measuring or allocating happens here, never per request).
    fn start() -> Self;

    /// One wait: at least one completion (`min` is the most worth waiting
    /// for, `out.len()` the most taken) unless `deadline_ns` (0: none) comes
    /// first. `req` is the in-flight request the wait is timed for.
    fn wait(
        &mut self,
        s: &mut CompletionStats,
        q: &mut dyn Queue,
        out: &mut [Completion],
        min: u32,
        req: InFlight,
        deadline_ns: u64,
    ) -> DevResult<usize>;

    /// One completed request: `lat_ns` from issue, `clat_ns` from submit,
    /// `inline` if it was performed in the caller's context.
    #[inline]
    fn observe(&mut self, _req: InFlight, _lat_ns: u64, _clat_ns: u64, _inline: bool) {}

    /// The ordering key of an in-flight request: the one with the smallest
    /// is the one a wait is timed for.
    #[inline]
    fn wait_key(&self, req: InFlight) -> u64 {
        req.submit_ns
    }

    /// Whether the next request of `len` bytes is performed inline instead
    /// of queued (counting it as a completion if so).
    #[inline]
    fn take_inline(&mut self, _s: &mut CompletionStats, _len: u32) -> bool {
        false
    }

    /// Warnings for the completion line of a run that asked for this model.
    fn warnings(_s: &CompletionStats, _line: &mut String) {}

    /// The model's own line in the report, if it has one.
    fn policy_line(_s: &CompletionStats) -> Option<String> {
        None
    }
}

/// The registry: each `CompletionModel` a job can name, and the type that
/// implements it. Generates [`Active`] (the state of the model a worker
/// runs) and the dispatch by model.
macro_rules! models {
    ($($name:ident => $ty:ty),* $(,)?) => {
        /// The state of the one model a worker runs (chosen once, at setup).
        #[derive(Debug)]
        enum Active {
            $($name($ty),)*
        }

        impl Active {
            fn start(model: CompletionModel) -> Active {
                match model {
                    $(CompletionModel::$name => Active::$name(<$ty as Model>::start()),)*
                }
            }

            #[inline]
            fn model(&self) -> CompletionModel {
                match self {
                    $(Active::$name(_) => CompletionModel::$name,)*
                }
            }

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
                match self {
                    $(Active::$name(m) => m.wait(s, q, out, min, req, deadline_ns),)*
                }
            }

            #[inline]
            fn observe(&mut self, req: InFlight, lat_ns: u64, clat_ns: u64, inline: bool) {
                match self {
                    $(Active::$name(m) => Model::observe(m, req, lat_ns, clat_ns, inline),)*
                }
            }

            #[inline]
            fn wait_key(&self, req: InFlight) -> u64 {
                match self {
                    $(Active::$name(m) => m.wait_key(req),)*
                }
            }

            #[inline]
            fn take_inline(&mut self, s: &mut CompletionStats, len: u32) -> bool {
                match self {
                    $(Active::$name(m) => Model::take_inline(m, s, len),)*
                }
            }
        }

        /// What `model` needs of its backend.
        fn needs(model: CompletionModel) -> Needs {
            match model {
                $(CompletionModel::$name => <$ty as Model>::NEEDS,)*
            }
        }

        /// `model`'s warnings on the completion line.
        fn warnings(model: CompletionModel, s: &CompletionStats, line: &mut String) {
            match model {
                $(CompletionModel::$name => <$ty as Model>::warnings(s, line),)*
            }
        }

        /// `model`'s own line in the report.
        fn policy_line(model: CompletionModel, s: &CompletionStats) -> Option<String> {
            match model {
                $(CompletionModel::$name => <$ty as Model>::policy_line(s),)*
            }
        }
    };
}

models! {
    Sync => sync::Synchronous,
    Interrupt => interrupt::Interrupt,
    Poll => poll::Poll,
    Hybrid => classic_hybrid::ClassicHybrid,
    HybridUring => hybrid_uring::HybridUring,
    Pas => pas::Pas,
    Dpas => dpas::DpasModel,
    Adaptive => adaptive::Adaptive,
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

/// How completions were observed during a run: the counts every model keeps,
/// and each model's own (flattened: the JSON object has one level).
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
#[non_exhaustive]
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
    /// Adaptive's choices (`adaptive::Counters`).
    #[serde(flatten)]
    pub adaptive: adaptive::Counters,
    /// How the sleep-then-poll policies' naps ended (`nap::Counters`).
    #[serde(flatten)]
    pub nap: nap::Counters,
    /// DPAS's modes and switches (`dpas::Counters`).
    #[serde(flatten)]
    pub dpas: dpas::Counters,
    /// Waits the worker made for completions (calls of `Completer::wait_for`).
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
}

merge_fields!(CompletionStats {
    add: completions, polls_hit, polls_empty, sleeps, spin_ns, sleep_ns, waits,
        waits_with_room, qd1_path;
    max: most_per_wait;
    merge: adaptive, nap, dpas;
});

impl CompletionStats {
    /// The line of the model asked for, if it has one of its own (the
    /// sleep-then-poll policies: hybrid-uring, pas, dpas).
    pub fn describe_policy(&self, asked: CompletionModel) -> Option<String> {
        policy_line(asked, self)
    }

    /// A one-line, honest account of how completions were seen.
    pub fn describe(&self, asked: CompletionModel) -> String {
        use std::fmt::Write as _;
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
        self.adaptive.describe(&mut s);
        if self.qd1_path > 0 {
            let _ = write!(s, ", {} by the QD1 path", self.qd1_path);
        }
        warnings(asked, self, &mut s);
        s
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
    pub stats: CompletionStats,
    /// The state of the model this completer runs.
    active: Active,
}

impl Completer {
    /// A completer for `model` (measuring what it needs: adaptive measures
    /// this machine's wakeup cost once per process).
    pub fn new(model: CompletionModel) -> Completer {
        Completer {
            stats: CompletionStats::default(),
            active: Active::start(model),
        }
    }

    /// An adaptive completer with the given state (synthetic calibrations).
    #[cfg(any(test, feature = "testing"))]
    pub fn adaptive_with(a: adaptive::Adaptive) -> Completer {
        Completer {
            stats: CompletionStats::default(),
            active: Active::Adaptive(a),
        }
    }

    /// Let adaptive perform requests inline: the backend can
    /// ([`crate::device::Caps::inline`]) and the worker runs one request at a
    /// time. No effect under the other models.
    pub fn allow_inline(&mut self) {
        if let Active::Adaptive(a) = &mut self.active {
            a.allow_inline();
        }
    }

    #[inline]
    pub fn model(&self) -> CompletionModel {
        self.active.model()
    }

    /// Adaptive's state, under adaptive.
    pub fn adaptive(&self) -> Option<&adaptive::Adaptive> {
        match &self.active {
            Active::Adaptive(a) => Some(a),
            _ => None,
        }
    }

    /// Adaptive's decisions with their reasons (none under the other models).
    pub fn decisions(&self) -> Vec<adaptive::Decision> {
        self.adaptive()
            .map(adaptive::Adaptive::decisions)
            .unwrap_or_default()
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
        self.active.observe(req, lat_ns, clat_ns, inline);
    }

    /// Which in-flight request a wait is for, as an ordering key: the earliest
    /// classic-hybrid wake under `hybrid` (each size naps its own bucket's
    /// time), the oldest submit under every other model.
    #[inline]
    pub fn wait_key(&self, req: InFlight) -> u64 {
        self.active.wait_key(req)
    }

    /// Whether the next request of `len` bytes should be performed inline, in
    /// the caller's context, instead of queued (adaptive, where allowed). Counts
    /// it: an inline request is a completion observed without any wait.
    #[inline]
    pub fn take_inline(&mut self, len: u32) -> bool {
        self.active.take_inline(&mut self.stats, len)
    }

    /// Wait until at least one in-flight request completes and move completions to
    /// `out`. `req` is the in-flight request the wait is timed for (the oldest,
    /// or under hybrid the earliest due: [`Completer::wait_key`]; hybrid and
    /// adaptive time their nap from its submit, with its size);
    /// `deadline_ns` (0 = none) is when the engine must regain control even if
    /// nothing completed (a paced stream falls due).
    #[inline]
    #[cfg(any(test, feature = "testing"))]
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
            // Polling needs none of a model's choices: calling it directly
            // saves a call per wait on the shortest path there is (QD1 polling).
            let mut n = if let Active::Poll(_) = self.active {
                wait::poll(&mut self.stats, q, out, deadline_ns)?
            } else {
                self.active
                    .wait(&mut self.stats, q.as_dyn(), out, min, req, deadline_ns)?
            };
            // Models other than interrupt return what one wakeup brought: wait
            // again (same model) until `min` are in, or the deadline ends it.
            let want = (min as usize).min(out.len());
            while n > 0 && n < want {
                let again = InFlight {
                    submit_ns: 0,
                    ..req
                };
                let more = self.active.wait(
                    &mut self.stats,
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
    /// finds nothing, in [`wait::poll`].
    #[inline(always)]
    pub fn poll_one<Q: Queue + ?Sized>(
        &mut self,
        q: &mut Q,
        out: &mut [Completion],
    ) -> DevResult<usize> {
        debug_assert_eq!(self.model(), CompletionModel::Poll);
        self.stats.waits += 1;
        let mut n = q.reap(Wait::Peek, out)?;
        if n > 0 {
            self.stats.polls_hit += 1;
        } else {
            n = wait::poll(&mut self.stats, q, out, 0)?;
        }
        Ok(self.counted(n))
    }

    /// [`wait_for`](Self::wait_for) under `interrupt` for one request, no
    /// deadline (the worker's QD1 path): the interrupt model's own first look
    /// ([`wait::sleep`] takes a completion already there without a
    /// sleep, counting nothing for the look) inlined into the caller; only a
    /// wait that must sleep goes the general way. The same counts.
    #[inline(always)]
    pub fn interrupt_one<Q: AsDynQueue + ?Sized>(
        &mut self,
        q: &mut Q,
        out: &mut [Completion],
        req: InFlight,
    ) -> DevResult<usize> {
        debug_assert_eq!(self.model(), CompletionModel::Interrupt);
        let n = q.reap(Wait::Peek, out)?;
        if n == 0 {
            return self.wait_for(q, out, 1, req, 0);
        }
        self.stats.waits += 1;
        Ok(self.counted(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            dpas::push_switch(&mut a.dpas.recent_switches, switch(t));
        }
        a.dpas.mode_switches = 3;
        let j = serde_json::to_value(a).unwrap();
        assert_eq!(j["recent_switches"].as_array().unwrap().len(), 3, "{j}");
        assert_eq!(j["recent_switches"][2]["at_us"], 30);
        let mut b = CompletionStats::default();
        for t in [5, 25, 35] {
            dpas::push_switch(&mut b.dpas.recent_switches, switch(t));
        }
        b.dpas.mode_switches = 3;
        a.merge(&b);
        assert_eq!(a.dpas.mode_switches, 6);
        let at: Vec<u64> = a.dpas.recent_switches.iter().map(|m| m.at_us).collect();
        assert_eq!(at, [20, 25, 30, 35]);
        // A full list drops its oldest.
        dpas::push_switch(&mut a.dpas.recent_switches, switch(40));
        assert_eq!(a.dpas.recent_switches[0].at_us, 25);
        assert_eq!(a.dpas.recent_switches[3].at_us, 40);
    }

    #[test]
    fn only_the_policies_describe_a_policy_line() {
        let s = CompletionStats {
            sleeps: 5,
            nap: nap::Counters {
                oversleeps: 2,
                undersleeps: 3,
                ..Default::default()
            },
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

    /// The JSON object a run writes under `iolab.engine.completion`: one
    /// level, these keys, whichever model owns a counter.
    const KEYS: [&str; 24] = [
        "completions",
        "polls_hit",
        "polls_empty",
        "sleeps",
        "spin_ns",
        "sleep_ns",
        "adaptive_poll",
        "adaptive_hybrid",
        "adaptive_interrupt",
        "adaptive_sync",
        "spin_bounded",
        "oversleeps",
        "undersleeps",
        "last_nap_ns",
        "dpas_int",
        "dpas_cp",
        "dpas_pas",
        "dpas_ol",
        "mode_switches",
        "recent_switches",
        "waits",
        "most_per_wait",
        "waits_with_room",
        "qd1_path",
    ];

    #[test]
    fn the_counters_keep_their_json_keys_and_read_back() {
        let j = serde_json::to_value(CompletionStats::default()).unwrap();
        let mut got: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
        let mut want = KEYS.to_vec();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want);
        // Every counter by its key: a distinct value each, read back in place.
        let mut obj = serde_json::Map::new();
        for (i, k) in KEYS.iter().enumerate() {
            obj.insert(k.to_string(), serde_json::json!(i as u64 + 1));
        }
        obj.insert("recent_switches".into(), serde_json::json!([]));
        let s: CompletionStats = serde_json::from_value(serde_json::Value::Object(obj)).unwrap();
        assert_eq!((s.completions, s.sleep_ns), (1, 6));
        assert_eq!(
            (s.adaptive.poll, s.adaptive.hybrid, s.adaptive.interrupt),
            (7, 8, 9)
        );
        assert_eq!((s.adaptive.inline, s.adaptive.spin_bounded), (10, 11));
        assert_eq!(
            (s.nap.oversleeps, s.nap.undersleeps, s.nap.last_nap_ns),
            (12, 13, 14)
        );
        assert_eq!(
            (s.dpas.int, s.dpas.cp, s.dpas.pas, s.dpas.ol),
            (15, 16, 17, 18)
        );
        assert_eq!(s.dpas.mode_switches, 19);
        assert_eq!(
            (s.waits, s.most_per_wait, s.waits_with_room, s.qd1_path),
            (21, 22, 23, 24)
        );
        let again: CompletionStats =
            serde_json::from_value(serde_json::to_value(s).unwrap()).unwrap();
        assert_eq!(again, s);
    }

    #[test]
    fn a_completer_holds_the_model_it_was_made_for() {
        for m in [
            CompletionModel::Sync,
            CompletionModel::Interrupt,
            CompletionModel::Poll,
            CompletionModel::Hybrid,
            CompletionModel::HybridUring,
            CompletionModel::Pas,
            CompletionModel::Dpas,
        ] {
            let c = Completer::new(m);
            assert_eq!(c.model(), m);
            assert!(c.adaptive().is_none() && c.decisions().is_empty());
        }
        let c = Completer::adaptive_with(adaptive::Adaptive::new(0));
        assert_eq!(c.model(), CompletionModel::Adaptive);
    }
}
