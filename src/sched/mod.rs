//! The host-side scheduler: between the workload and the device queue.
//!
//! Three policies (docs/scheduler.md; ARCHITECTURE.md places this module):
//! - `noop`: one FIFO over all classes, no limit on OIS.
//! - `prio`: strict class priority. `read` and `syncwrite` form one high group
//!   served in arrival order (both are awaited by someone, and the study gives
//!   them one priority); then `readahead`; `asyncwrite` only when nothing else waits.
//! - `laq`: `prio`'s order plus LAT throttling ([`laq`]): OIS capped at `ois_max`
//!   for every class; for `t_wait` after a high-priority arrival, low classes are
//!   held to `ois_min`.
//!
//! One concrete type with the policy as an enum field, not a trait object: the
//! worker loop calls `dispatch` once per request, and a match on a 3-valued enum
//! is a predictable branch the compiler can inline, where a `dyn` call cannot be
//! inlined and a generic worker would triple the engine's code for no gain.
//! Per-class FIFO rings are allocated in [`Scheduler::new`]; the per-request
//! calls never allocate, lock or make system calls.

pub(crate) mod laq;
pub mod sim;

use crate::job::spec::{JobSpec, LaqParams, SchedKind};
use crate::request::Class;
use crate::ring::Ring;

/// One request as the scheduler sees it: small and `Copy`, the worker keeps the
/// rest (offset, buffer) in its slot table under `slot`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedReq {
    pub slot: u32,
    pub class: Class,
    pub bytes: u32,
    /// Which job stream of this worker issued it.
    pub stream: u16,
    /// When the workload produced it (engine clock, ns).
    pub arrival_ns: u64,
}

/// Errors building a scheduler; each names the option at fault.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SchedError {
    #[error("scheduler capacity must be at least 1 request (got 0); it is the worker's iodepth")]
    ZeroCapacity,
    #[error("ois_max must be greater than 0 bytes (e.g. ois_max=1m)")]
    ZeroOisMax,
    #[error("ois_min must be greater than 0 bytes (e.g. ois_min=512k)")]
    ZeroOisMin,
    #[error("ois_min ({min} bytes) must not exceed ois_max ({max} bytes)")]
    MinAboveMax { min: u64, max: u64 },
}

/// A per-class counter set, serialized with the class names.
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
pub struct PerClass {
    pub read: u64,
    pub syncwrite: u64,
    pub readahead: u64,
    pub asyncwrite: u64,
}

impl PerClass {
    pub fn get(&self, c: Class) -> u64 {
        match c {
            Class::Read => self.read,
            Class::SyncWrite => self.syncwrite,
            Class::Readahead => self.readahead,
            Class::AsyncWrite => self.asyncwrite,
        }
    }

    #[inline]
    fn add(&mut self, c: Class, v: u64) {
        let f = match c {
            Class::Read => &mut self.read,
            Class::SyncWrite => &mut self.syncwrite,
            Class::Readahead => &mut self.readahead,
            Class::AsyncWrite => &mut self.asyncwrite,
        };
        *f += v;
    }

    pub fn total(&self) -> u64 {
        self.read + self.syncwrite + self.readahead + self.asyncwrite
    }
}

/// What the scheduler did, for the `iolab` JSON object and the study.
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
pub struct SchedStats {
    /// Requests dispatched to the device, per class.
    pub dispatched: PerClass,
    /// Bytes dispatched to the device, per class.
    pub dispatched_bytes: PerClass,
    /// Requests completed, per class.
    pub completed: PerClass,
    /// Requests that had to wait at the head of the queue because OIS was at
    /// `ois_max` (counted once per request, however often the loop looked).
    pub held_by_ois_max: u64,
    /// Requests of low classes held only by the `ois_min` window.
    pub held_by_ois_min: u64,
    /// Requests larger than their cap, let through alone on an empty device.
    pub oversize: u64,
    /// Throttle windows opened (overlapping ones count once).
    pub windows: u64,
    /// Time low classes were held to `ois_min` ...
    pub time_at_ois_min_ns: u64,
    /// ... and the rest of the time since the first request (at `ois_max`).
    pub time_at_ois_max_ns: u64,
    /// The most bytes outstanding at once (OIS, outstanding I/O size).
    pub ois_peak: u64,
    /// Requests refused because the scheduler was full (capacity too small).
    pub rejected_full: u64,
    /// Completions reported for more bytes than were outstanding: an engine bug,
    /// counted rather than hidden (OIS is clamped at 0).
    pub unmatched_completions: u64,
    /// Requests a cap had held that went to the device from the completion path:
    /// dated at the completion (or window end) that released them rather than
    /// when the worker next ran (`engine::worker`'s completion path; backends
    /// that keep device time, the null device).
    #[serde(default)]
    pub completion_path: u64,
}

#[derive(Clone, Copy)]
struct Entry {
    req: SchedReq,
    /// Global arrival order, to keep FIFO across rings (noop, high group).
    seq: u64,
}

const NO_HOLD: u64 = u64::MAX;

/// The scheduler of one worker (see the module docs for the policies).
pub struct Scheduler {
    kind: SchedKind,
    rings: [Ring<Entry>; Class::COUNT],
    /// Requests waiting per class (noop queues all classes in ring 0).
    waiting: [u32; Class::COUNT],
    next_seq: u64,
    ois: u64,
    lat: laq::Lat,
    /// Per class, `seq` of the head request already counted as held, so a
    /// request is counted once however often the loop looks and whatever other
    /// class goes in between.
    held_seq: [u64; Class::COUNT],
    /// The head request is held only by the `ois_min` window.
    held_by_window: bool,
    first_ns: Option<u64>,
    /// The latest time given to `enqueue` or `dispatch`: what the scheduler
    /// holds and decided is as of this time, so nothing may be dated earlier.
    clock_ns: u64,
    stats: SchedStats,
}

impl Scheduler {
    /// A scheduler holding up to `capacity` pending requests per class (noop: in all) (use the
    /// worker's total iodepth: a request can only be pending once).
    pub fn new(kind: SchedKind, params: LaqParams, capacity: usize) -> Result<Self, SchedError> {
        if capacity == 0 {
            return Err(SchedError::ZeroCapacity);
        }
        if params.ois_max == 0 {
            return Err(SchedError::ZeroOisMax);
        }
        if params.ois_min == 0 {
            return Err(SchedError::ZeroOisMin);
        }
        if params.ois_min > params.ois_max {
            return Err(SchedError::MinAboveMax {
                min: params.ois_min,
                max: params.ois_max,
            });
        }
        let fill = Entry {
            req: SchedReq {
                slot: 0,
                class: Class::Read,
                bytes: 0,
                stream: 0,
                arrival_ns: 0,
            },
            seq: 0,
        };
        Ok(Scheduler {
            kind,
            rings: std::array::from_fn(|_| Ring::new(capacity, fill)),
            waiting: [0; Class::COUNT],
            next_seq: 0,
            ois: 0,
            lat: laq::Lat::new(&params),
            held_seq: [NO_HOLD; Class::COUNT],
            held_by_window: false,
            first_ns: None,
            clock_ns: 0,
            stats: SchedStats::default(),
        })
    }

    /// The scheduler a job asks for (`iosched=`, `ois_max`, `ois_min`, `t_wait`).
    pub fn for_job(job: &JobSpec, capacity: usize) -> Result<Self, SchedError> {
        Self::new(job.scheduler, job.laq, capacity)
    }

    pub fn kind(&self) -> SchedKind {
        self.kind
    }

    /// Accept a request. A full scheduler hands the request back (the caller
    /// sized it too small); it never grows.
    #[inline]
    pub fn enqueue(&mut self, r: SchedReq, now_ns: u64) -> Result<(), SchedReq> {
        let e = Entry {
            req: r,
            seq: self.next_seq,
        };
        if self.rings[self.ring_of(r.class)].push(e).is_err() {
            self.stats.rejected_full += 1;
            return Err(r);
        }
        self.next_seq += 1;
        self.clock_ns = self.clock_ns.max(now_ns);
        self.waiting[r.class.index()] += 1;
        self.first_ns.get_or_insert(now_ns);
        if self.kind == SchedKind::Laq && r.class.is_high() {
            self.lat.on_high_arrival(now_ns);
        }
        Ok(())
    }

    /// A request that noop, with nothing waiting, dispatches at once: the
    /// counts and OIS of [`enqueue`](Self::enqueue) then
    /// [`dispatch`](Self::dispatch), without the trip through the ring (the
    /// worker's QD1 path, `engine/worker/qd1.rs`).
    #[inline]
    pub fn pass_through(&mut self, r: SchedReq, now_ns: u64) {
        debug_assert!(self.kind == SchedKind::Noop && self.pending() == 0);
        self.next_seq += 1;
        self.clock_ns = self.clock_ns.max(now_ns);
        self.first_ns.get_or_insert(now_ns);
        self.admitted(r.class, r.bytes);
    }

    /// A request leaves for the device: its bytes join OIS, and the counts.
    #[inline(always)]
    fn admitted(&mut self, class: Class, bytes: u32) {
        self.held_by_window = false;
        self.ois += bytes as u64;
        self.stats.ois_peak = self.stats.ois_peak.max(self.ois);
        self.stats.dispatched.add(class, 1);
        self.stats.dispatched_bytes.add(class, bytes as u64);
    }

    /// Which ring a class queues in: noop keeps one FIFO for everything, so its
    /// dispatch looks at one ring head instead of comparing four.
    #[inline]
    fn ring_of(&self, class: Class) -> usize {
        if self.kind == SchedKind::Noop {
            0
        } else {
            class.index()
        }
    }

    /// The ring whose head goes next under the policy's order (ignoring caps).
    #[inline]
    fn pick(&self) -> Option<usize> {
        match self.kind {
            SchedKind::Noop => (!self.rings[0].is_empty()).then_some(0),
            SchedKind::Prio | SchedKind::Laq => {
                let r = Class::Read.index();
                let w = Class::SyncWrite.index();
                match (self.rings[r].front(), self.rings[w].front()) {
                    (Some(a), Some(b)) => Some(if a.seq <= b.seq { r } else { w }),
                    (Some(_), None) => Some(r),
                    (None, Some(_)) => Some(w),
                    (None, None) => [Class::Readahead, Class::AsyncWrite]
                        .into_iter()
                        .map(Class::index)
                        .find(|&i| !self.rings[i].is_empty()),
                }
            }
        }
    }

    /// The next request allowed to go to the device at `now_ns`, if any. `None`
    /// with requests pending means a cap holds the head; look again after a
    /// completion or at [`next_event_ns`](Self::next_event_ns).
    /// Inlined into the worker's loop, which calls it once per request and once
    /// more to find nothing: a call was a visible share of a QD1 request.
    #[inline(always)]
    pub fn dispatch(&mut self, now_ns: u64) -> Option<SchedReq> {
        self.clock_ns = self.clock_ns.max(now_ns);
        let ring = self.pick()?;
        let head = *self.rings[ring].front()?;
        let class = head.req.class;
        let bytes = head.req.bytes;
        let mut cap = u64::MAX;
        if self.kind == SchedKind::Laq {
            cap = if class.is_high() {
                self.lat.ois_max
            } else {
                self.lat.low_cap(now_ns)
            };
            if !laq::admits(self.ois, bytes, cap) {
                let window_only = laq::admits(self.ois, bytes, self.lat.ois_max);
                self.held_by_window = window_only;
                if self.held_seq[class.index()] != head.seq {
                    self.held_seq[class.index()] = head.seq;
                    if window_only {
                        self.stats.held_by_ois_min += 1;
                    } else {
                        self.stats.held_by_ois_max += 1;
                    }
                }
                return None;
            }
        }
        self.rings[ring].pop();
        self.waiting[class.index()] -= 1;
        if bytes as u64 > cap {
            self.stats.oversize += 1;
        }
        self.admitted(class, bytes);
        Some(head.req)
    }

    /// A dispatched request finished: its bytes leave OIS.
    #[inline]
    pub fn complete(&mut self, class: Class, bytes: u32, _now_ns: u64) {
        let b = bytes as u64;
        if b > self.ois {
            self.stats.unmatched_completions += 1;
            self.ois = 0;
        } else {
            self.ois -= b;
        }
        self.stats.completed.add(class, 1);
    }

    /// Whether a cap holds requests back (laq with requests waiting): only then
    /// can a completion or the window's end release one.
    #[inline]
    pub fn holds(&self) -> bool {
        self.kind == SchedKind::Laq && self.pending() > 0
    }

    /// The time at which the completion path may dispatch what an event at
    /// `event_ns` (a completion, the window's end) released: the event's own
    /// time, unless the scheduler has already seen a later one (a request that
    /// arrived after it, a dispatch decided after it). Dating a dispatch before
    /// that would use state the scheduler did not have yet.
    #[inline]
    pub fn completion_time(&self, event_ns: u64) -> u64 {
        event_ns.max(self.clock_ns)
    }

    /// `n` requests went out from the completion path (see [`SchedStats`]).
    #[inline]
    pub fn note_completion_path(&mut self, n: u64) {
        self.stats.completion_path += n;
    }

    /// Requests waiting in the scheduler (not yet dispatched).
    #[inline]
    pub fn pending(&self) -> usize {
        self.rings.iter().map(|r| r.len()).sum()
    }

    /// Requests of one class waiting in the scheduler.
    #[cfg(any(test, feature = "testing"))]
    pub fn pending_class(&self, class: Class) -> usize {
        self.waiting[class.index()] as usize
    }

    /// Outstanding I/O size: bytes dispatched and not yet completed.
    #[inline]
    #[cfg(any(test, feature = "testing"))]
    pub fn ois(&self) -> u64 {
        self.ois
    }

    /// When a throttle that holds the head request expires by itself (the end
    /// of the `ois_min` window), so an idle loop knows when to look again.
    /// `None` when nothing is held by time: either nothing waits, or only a
    /// completion can free room.
    #[inline]
    pub fn next_event_ns(&self) -> Option<u64> {
        if self.held_by_window {
            self.lat.window_until()
        } else {
            None
        }
    }

    /// When a worker with requests in flight must look again even if nothing
    /// completes: the earlier of `paced_due` (a paced stream falls due) and
    /// [`next_event_ns`](Self::next_event_ns) (the window that holds the head
    /// request closes). 0 = no deadline, the completer's convention.
    ///
    /// Why the window end counts while requests are in flight: the `ois_min`
    /// window holds read-ahead to half the channels; when it closes, the other
    /// half may be filled at once. A worker that waited only for the next
    /// completion left them idle for up to one service time after every window
    /// (at the study's defaults, a 2 ms period and 256 KiB at 0.72 ms, that was
    /// most of the bandwidth laq lost against `sched::sim`, which refills at the
    /// window end).
    #[inline]
    pub fn wake_deadline(&self, paced_due: Option<u64>) -> u64 {
        match (paced_due, self.next_event_ns()) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(0),
        }
    }

    /// The cap a low-priority request faces at `now_ns` (`None` for noop/prio).
    #[cfg(any(test, feature = "testing"))]
    pub fn low_cap(&self, now_ns: u64) -> Option<u64> {
        (self.kind == SchedKind::Laq).then(|| self.lat.low_cap(now_ns))
    }

    /// The cap a request of `class` faces at `now_ns` (`None` for noop/prio).
    #[cfg(any(test, feature = "testing"))]
    pub fn cap_for(&self, class: Class, now_ns: u64) -> Option<u64> {
        (self.kind == SchedKind::Laq).then(|| {
            if class.is_high() {
                self.lat.ois_max
            } else {
                self.lat.low_cap(now_ns)
            }
        })
    }

    /// Counters, with the time split between the caps accounted up to `now_ns`.
    pub fn stats(&self, now_ns: u64) -> SchedStats {
        let mut s = self.stats;
        if self.kind == SchedKind::Laq {
            let elapsed = self.first_ns.map_or(0, |f| now_ns.saturating_sub(f));
            s.windows = self.lat.windows;
            s.time_at_ois_min_ns = self.lat.time_at_min_ns(now_ns).min(elapsed);
            s.time_at_ois_max_ns = elapsed - s.time_at_ois_min_ns;
        }
        s
    }
}

/// The name used in options and output.
pub fn kind_name(kind: SchedKind) -> &'static str {
    match kind {
        SchedKind::Noop => "noop",
        SchedKind::Prio => "prio",
        SchedKind::Laq => "laq",
    }
}

#[cfg(test)]
mod tests;
