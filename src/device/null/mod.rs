//! null backend: an emulated NVMe-like device computed in virtual time.
//!
//! There is no device thread doing the work. When commands reach the device
//! (`commit`, the doorbell) they get a service time (`lat`, fixed or drawn, plus
//! bytes/bw) and wait for one of `channels` parallel channels; a command starts at
//! max(its commit time, the time a channel frees) and finishes `service` later, all
//! on the engine clock ([`now_ns`]). A completion is visible once the clock has
//! passed its finish time, so what the host sees does not depend on when it looks:
//! a host that looks late still gets the true finish time in `dev_done`.
//!
//! The simulation advances lazily: every entry point first processes the device
//! events up to "now". Which waiting command a freed channel takes is decided at
//! the virtual time the channel frees, among the commands committed by then, so
//! `order=readfirst` lets a read committed later overtake writes still waiting.
//! Deciding only up to "now" is what keeps that exact: no command committed in
//! the future can exist yet. The one exception is a sleeping host (below): it
//! cannot commit while it sleeps, so the device may run ahead to the wake time.
//!
//! Interrupts (`reap(Wait::Sleep)`) work like null_blk's `irqmode` with NVMe-style
//! coalescing. The coalescer is armed when the host goes to sleep and counts the
//! completions posted after that; an interrupt fires after `irq_coalesce_count` of
//! them or once the oldest is `irq_coalesce_time` old. The host wakes at the first
//! interrupt that makes `min` completions available (`min` is capped at `out.len()`
//! and at what can still complete: committed, not hung; when nothing can, the call
//! returns at once instead of sleeping forever, and the engine's io_timeout and
//! [`NullDevice::abort`] deal with hung commands):
//! - `timer`: the host thread itself sleeps on an hrtimer (absolute
//!   `clock_nanosleep`) until that interrupt. Its timer slack is set to 1 ns on the
//!   first such sleep in each thread (the default 50 us slack would dwarf the
//!   device); note that this stays in effect for that thread afterwards.
//! - `thread`: a device thread, started in [`NullDevice::new`], sleeps until the
//!   interrupt time and wakes the host, which is blocked on a futex: a real
//!   cross-CPU wakeup. [`NullDevice::irq_thread_tid`] lets placement pin it.
//!
//! Every interrupt that fires while the host sleeps is counted in
//! `BackendStats::interrupts` (a polling host that only peeks gets none, like an
//! NVMe poll queue); each sleep counts in `wait_calls`.
//!
//! Memory: all command, channel and completion arrays are sized in `new` to the
//! most commands that can be outstanding (`qd`, or the engine's queue depth when
//! `qd=0`); `queue`/`commit`/`reap(Peek)` never allocate, lock or make syscalls.
//!
//! Faults (rules in `fault.rs`): `error` completes with -EIO after its service time;
//! `corrupt` flips one byte of a read's returned data (needs `backing_mem`, since
//! without a memory image there is no data to corrupt or verify); `hang` never
//! completes on its own and keeps its queue slot until [`NullDevice::abort`];
//! `spike` adds `spike_lat` to the service time.

mod backing;
mod fault;
mod irq;
pub mod options;
mod service;

use std::cell::Cell;

pub use fault::FaultCounts;

use self::backing::Backing;
use self::fault::{Fault, FaultInjector};
use self::irq::{Coalescer, IrqThread};
use self::service::ServiceModel;
use super::{
    BackendStats, Caps, Completion, DevResult, DeviceError, DeviceTime, Queue, Queued, Wait,
};
use crate::measure::clock::{now_ns, set_thread_timer_slack_ns, sleep_until};
use crate::request::{IoCmd, Op};
use crate::ring::Ring;
use options::{IrqMode, LatDist, NullOrder, NullParams};

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Free,
    /// Queued, waiting for `commit`.
    Staged,
    /// At the device: waiting for a channel or being serviced.
    Device,
    Hung,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    state: State,
    slot: u32,
    op: Op,
    offset: u64,
    len: u32,
    buf: *mut u8,
    /// Arrival order, for `order=fifo`.
    seq: u64,
    commit: u64,
    start: u64,
    service: u64,
    /// Result to report: bytes, or a negative errno decided at queue time.
    result: i64,
    fault: Fault,
}

const FREE_ENTRY: Entry = Entry {
    state: State::Free,
    slot: 0,
    op: Op::Read,
    offset: 0,
    len: 0,
    buf: std::ptr::null_mut(),
    seq: 0,
    commit: 0,
    start: 0,
    service: 0,
    result: 0,
    fault: Fault::None,
};

#[derive(Clone, Copy, Debug)]
struct Channel {
    /// Entry being serviced, or NONE when idle.
    cmd: u32,
    /// When `cmd` finishes.
    done: u64,
}

thread_local! {
    static SLACK_SET: Cell<bool> = const { Cell::new(false) };
}

/// The emulated device: one queue pair, owned by one worker thread.
pub struct NullDevice {
    /// Clock value read by the last commit or completing peek (`clock_hint`).
    last_now: u64,
    entries: Box<[Entry]>,
    free: Ring<u32>,
    staged: Ring<u32>,
    /// Commands at the device waiting for a channel, in commit order. Reads and
    /// non-reads are kept apart so `readfirst` can pick either head.
    wait_reads: Ring<u32>,
    wait_writes: Ring<u32>,
    channels: Box<[Channel]>,
    /// Completions posted and not yet reaped, in finish-time order.
    done: Ring<Completion>,
    /// Earliest finish time among busy channels (u64::MAX if none) and its channel:
    /// a peek with nothing ready is one clock read and one compare against this.
    next_event: u64,
    next_chan: usize,
    /// Queued and not yet reaped; `queue` answers Busy at `limit`.
    outstanding: u32,
    limit: u32,
    hung: u32,
    seq: u64,
    order: NullOrder,
    coalescer: Coalescer,
    service: ServiceModel,
    faults: FaultInjector,
    backing: Option<Backing>,
    size: u64,
    irq_thread: Option<IrqThread>,
    stats: BackendStats,
}

// SAFETY: the raw buffer pointers held in `entries` point into the buffer pool of
// the worker that owns this queue (the same reasoning as for `IoCmd`); the device
// thread of irqmode=thread shares only atomics with it.
unsafe impl Send for NullDevice {}

fn bad(msg: String) -> DeviceError {
    DeviceError::Unsupported(msg)
}

impl NullDevice {
    /// Build the device. `size_bytes` is the device size (and of the memory image
    /// with `backing_mem`); `queue_depth_hint` is the most commands the engine will
    /// keep outstanding, used to size everything when `qd=0`; `seed` drives the
    /// service-time draws and fault decisions.
    pub fn new(
        params: &NullParams,
        size_bytes: u64,
        queue_depth_hint: u32,
        seed: u64,
    ) -> DevResult<NullDevice> {
        if params.channels == 0 {
            return Err(bad(
                "null_channels=0: the device needs at least 1 channel".into()
            ));
        }
        let cap = if params.qd > 0 {
            params.qd
        } else {
            queue_depth_hint
        };
        if cap == 0 {
            return Err(bad(
                "null device: null_qd=0 and an iodepth of 0 leave no room for any command; \
                 set iodepth >= 1 or null_qd >= 1"
                    .into(),
            ));
        }
        if size_bytes == 0 {
            return Err(bad(
                "null device: size=0; give the emulated device a size (e.g. size=1g)".into(),
            ));
        }
        if let LatDist::Uniform { jitter } = params.dist
            && !(0.0..=1.0).contains(&jitter)
        {
            return Err(bad(format!(
                "null_dist=uniform:{jitter}: must be in [0, 1] (a fraction of null_lat)"
            )));
        }
        if params.irq_coalesce_count == 0 {
            return Err(bad(
                "null_irq_batch=0: must be >= 1 (1 = one interrupt per completion)".into(),
            ));
        }
        let coalesce_ns = u64::try_from(params.irq_coalesce_time.as_nanos()).unwrap_or(u64::MAX);
        if params.irq_coalesce_count > 1 && coalesce_ns == 0 {
            return Err(bad(format!(
                "null_irq_batch={} needs null_irq_time > 0: without a time \
                 limit, completions that never reach the count would never be signalled",
                params.irq_coalesce_count
            )));
        }
        let faults = FaultInjector::new(&params.faults, params.backing_mem, seed ^ 0xFA17_5EED)
            .map_err(|e| bad(e.to_string()))?;
        let backing = if params.backing_mem {
            Some(Backing::new(size_bytes)?)
        } else {
            None
        };
        let irq_thread = match params.irqmode {
            IrqMode::Thread => Some(IrqThread::spawn()?),
            IrqMode::Timer => None,
        };
        let n = cap as usize;
        let mut free = Ring::new(n, 0u32);
        for i in 0..cap {
            // Sized to `cap`: cannot be full.
            let _ = free.push(i);
        }
        Ok(NullDevice {
            last_now: 0,
            entries: vec![FREE_ENTRY; n].into_boxed_slice(),
            free,
            staged: Ring::new(n, 0),
            wait_reads: Ring::new(n, 0),
            wait_writes: Ring::new(n, 0),
            channels: vec![Channel { cmd: NONE, done: 0 }; params.channels as usize]
                .into_boxed_slice(),
            done: Ring::new(n, Completion::default()),
            next_event: u64::MAX,
            next_chan: 0,
            outstanding: 0,
            limit: cap,
            hung: 0,
            seq: 0,
            order: params.order,
            coalescer: Coalescer::new(params.irq_coalesce_count, coalesce_ns),
            service: ServiceModel::new(params, seed),
            faults,
            backing,
            size: size_bytes,
            irq_thread,
            stats: BackendStats::default(),
        })
    }

    /// Commands accepted by `queue` and not yet reaped (staged, at the device,
    /// hung, or completed but unreaped). Conservation: queued = reaped + in_flight.
    pub fn in_flight(&self) -> u32 {
        self.outstanding
    }

    /// Commands that hung (fault injection) and have not been aborted.
    #[cfg(any(test, feature = "testing"))]
    pub fn hung(&self) -> u32 {
        self.hung
    }

    /// Most commands accepted before `queue` answers Busy.
    #[cfg(any(test, feature = "testing"))]
    pub fn capacity(&self) -> u32 {
        self.limit
    }

    pub fn fault_counts(&self) -> FaultCounts {
        self.faults.counts()
    }

    /// Kernel thread id of the interrupt thread (irqmode=thread), for pinning.
    #[cfg(any(test, feature = "testing"))]
    pub fn irq_thread_tid(&self) -> Option<i32> {
        self.irq_thread.as_ref().map(|t| t.tid())
    }

    /// Abort a hung command (like NVMe's Abort, after the engine's io_timeout):
    /// it completes with -ECANCELED on the next reap and frees its queue slot.
    /// Returns false if no hung command carries `slot` (it may just be slow).
    pub fn abort(&mut self, slot: u32) -> bool {
        let Some(i) = self
            .entries
            .iter()
            .position(|e| e.state == State::Hung && e.slot == slot)
        else {
            return false;
        };
        let now = now_ns();
        self.advance(now);
        self.entries[i].state = State::Free;
        // The free ring holds every entry: a freed one always fits.
        let _ = self.free.push(i as u32);
        self.hung -= 1;
        let pushed = self.done.push(Completion {
            slot,
            result: -(libc::ECANCELED as i64),
            dev_start: 0,
            dev_done: now,
        });
        debug_assert!(pushed.is_ok(), "completion ring sized to the queue limit");
        true
    }

    /// Process device events (channel completions and the dispatches they cause)
    /// up to and including `t`.
    #[inline]
    fn advance(&mut self, t: u64) {
        while self.step(t) {}
    }

    /// Process the earliest device event if it happens at or before `limit`.
    /// Inlined: at QD1 every commit and every completing peek runs it, and the
    /// call itself was a visible share of a null-device I/O.
    #[inline(always)]
    fn step(&mut self, limit: u64) -> bool {
        match self.next_done(limit) {
            Some(c) => {
                let pushed = self.done.push(c);
                debug_assert!(pushed.is_ok(), "completion ring sized to the queue limit");
                true
            }
            None => false,
        }
    }

    /// Process the earliest device event if it happens at or before `limit` and
    /// hand back the completion it produces, not yet posted.
    #[inline(always)]
    fn next_done(&mut self, limit: u64) -> Option<Completion> {
        let t = self.next_event;
        if t > limit || t == u64::MAX {
            return None;
        }
        let c = self.next_chan;
        let i = self.channels[c].cmd;
        let done = self.complete(i as usize, t);
        self.channels[c].cmd = NONE;
        if let Some(n) = self.pick(t) {
            let e = &mut self.entries[n as usize];
            e.start = e.commit.max(t);
            self.channels[c] = Channel {
                cmd: n,
                done: e.start.saturating_add(e.service),
            };
        }
        self.refresh_next();
        Some(done)
    }

    #[inline]
    fn refresh_next(&mut self) {
        let mut best = u64::MAX;
        let mut at = 0;
        for (k, ch) in self.channels.iter().enumerate() {
            if ch.cmd != NONE && ch.done < best {
                best = ch.done;
                at = k;
            }
        }
        self.next_event = best;
        self.next_chan = at;
    }

    /// The waiting command a channel freed at `t` takes: reads before writes under
    /// readfirst, arrival order under fifo. Because `commit` advances the device to
    /// its own time before adding arrivals, every waiting command was committed by
    /// `t`; the `r.commit <= w.commit` arm only keeps the rule right (earliest
    /// arrival first, reads winning ties) should that ever change.
    #[inline]
    fn pick(&mut self, t: u64) -> Option<u32> {
        let take_read = match (self.wait_reads.front(), self.wait_writes.front()) {
            (None, None) => return None,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(&r), Some(&w)) => {
                let (r, w) = (&self.entries[r as usize], &self.entries[w as usize]);
                match self.order {
                    NullOrder::Fifo => r.seq < w.seq,
                    NullOrder::ReadFirst => r.commit <= t || r.commit <= w.commit,
                }
            }
        };
        if take_read {
            self.wait_reads.pop()
        } else {
            self.wait_writes.pop()
        }
    }

    /// Command `i` finishes at `t`: move its data, free it, and return its
    /// completion for the caller to post.
    #[inline]
    fn complete(&mut self, i: usize, t: u64) -> Completion {
        let e = &mut self.entries[i];
        e.state = State::Free;
        let e = *e;
        if e.result > 0
            && let Some(b) = self.backing.as_mut()
        {
            // SAFETY: offset+len was checked against the size at queue time, and
            // the worker keeps `buf` valid and untouched until this completion is
            // reaped (the IoCmd contract).
            unsafe {
                match e.op {
                    Op::Read => {
                        b.read(e.offset, e.buf, e.len);
                        if let Fault::Corrupt(p) = e.fault {
                            *e.buf.add(p as usize) ^= 0xFF;
                        }
                    }
                    Op::Write => b.write(e.offset, e.buf, e.len),
                    // Zeroed when queued (see `queue`).
                    Op::Trim | Op::Fsync => {}
                }
            }
        }
        // The free ring holds every entry: a freed one always fits.
        let _ = self.free.push(i as u32);
        Completion {
            slot: e.slot,
            result: e.result,
            dev_start: e.start,
            dev_done: t,
        }
    }

    /// Give idle channels to waiting commands (after a commit).
    fn dispatch_idle(&mut self, now: u64) {
        for c in 0..self.channels.len() {
            if self.channels[c].cmd != NONE {
                continue;
            }
            let Some(n) = self.pick(now) else { break };
            let e = &mut self.entries[n as usize];
            e.start = e.commit.max(now);
            self.channels[c] = Channel {
                cmd: n,
                done: e.start.saturating_add(e.service),
            };
        }
        self.refresh_next();
    }

    #[inline]
    fn drain(&mut self, out: &mut [Completion]) -> usize {
        let mut n = 0;
        while n < out.len() {
            let Some(c) = self.done.pop() else { break };
            out[n] = c;
            n += 1;
        }
        self.outstanding -= n as u32;
        n
    }

    /// Commands that will complete without outside help: waiting or in service.
    fn completable(&self) -> usize {
        let busy = self.channels.iter().filter(|c| c.cmd != NONE).count();
        busy + self.wait_reads.len() + self.wait_writes.len()
    }

    /// Run the device ahead (the host is about to sleep and cannot commit) until the
    /// interrupt that signals `need` more completions. Returns its time and how
    /// many interrupts fired on the way.
    fn plan_wakeup(&mut self, need: usize) -> (u64, u64) {
        self.coalescer.reset();
        let mut signalled = 0usize;
        let mut irqs = 0u64;
        loop {
            let deadline = self.coalescer.deadline();
            let ev = self.next_event;
            if deadline < ev {
                irqs += 1;
                signalled += self.coalescer.fire() as usize;
                if signalled >= need {
                    return (deadline, irqs);
                }
                continue;
            }
            if ev == u64::MAX {
                // Unreachable while `need <= completable()`; never sleep forever.
                return (0, irqs);
            }
            self.step(ev);
            let k = self.coalescer.post(ev);
            if k > 0 {
                irqs += 1;
                signalled += k as usize;
                if signalled >= need {
                    return (ev, irqs);
                }
            }
        }
    }

    fn sleep(&mut self, min: u32, out: &mut [Completion]) -> usize {
        self.advance(now_ns());
        let have = self.done.len();
        let target = (min as usize).min(out.len()).min(have + self.completable());
        if have >= target {
            return self.drain(out);
        }
        let (at, irqs) = self.plan_wakeup(target - have);
        match self.irq_thread.as_ref() {
            Some(t) => t.wait_for_irq(at),
            None => {
                if !SLACK_SET.get() {
                    set_thread_timer_slack_ns(1);
                    SLACK_SET.set(true);
                }
                // clock_nanosleep returns early on a signal: sleep again, since the
                // device already ran ahead to `at`.
                while now_ns() < at {
                    sleep_until(at);
                }
            }
        }
        self.stats.wait_calls += 1;
        self.stats.interrupts += irqs;
        self.advance(now_ns());
        self.drain(out)
    }
}

impl NullDevice {
    /// Command `i` reaches the device at `at_ns` (its commit): false if an
    /// injected hang keeps it from ever being served.
    #[inline(always)]
    fn arrive(&mut self, i: u32, at_ns: u64) -> bool {
        let e = &mut self.entries[i as usize];
        e.commit = at_ns;
        if e.fault == Fault::Hang {
            e.state = State::Hung;
            self.hung += 1;
            return false;
        }
        e.state = State::Device;
        true
    }

    /// Command `i` waits for a channel, in its direction's queue.
    #[inline(always)]
    fn wait(&mut self, i: u32) {
        if self.entries[i as usize].op == Op::Read {
            let _ = self.wait_reads.push(i);
        } else {
            let _ = self.wait_writes.push(i);
        }
    }
}

/// The emulated device keeps device time: its own calls beyond [`Queue`],
/// for a completion model that holds it as a `dyn Queue`.
impl DeviceTime for NullDevice {
    #[inline]
    fn commit_at(&mut self, at_ns: u64) -> DevResult<u32> {
        NullDevice::commit_at(self, at_ns)
    }
    #[inline]
    fn next_completion_at(&self) -> Option<u64> {
        NullDevice::next_completion_at(self)
    }
    fn injected_faults(&self) -> FaultCounts {
        self.fault_counts()
    }
}

impl NullDevice {
    /// A commit dated `at_ns` in the past: each command starts on the idle
    /// channel that freed first, at `at_ns` or when that channel freed if later.
    /// Exact only while no command waits at the device: the channel picks made
    /// between `at_ns` and now took no account of these arrivals, so with a
    /// backlog (which also means no channel idles) it commits now.
    pub fn commit_at(&mut self, at_ns: u64) -> DevResult<u32> {
        let now = now_ns();
        // Bring the device up to now: channels freed since `at_ns` are then
        // idle, and their `done` says when they freed.
        self.advance(now);
        if at_ns >= now || !self.wait_reads.is_empty() || !self.wait_writes.is_empty() {
            return self.commit();
        }
        if self.staged.is_empty() {
            return Ok(0);
        }
        self.last_now = at_ns;
        let n = self.staged.len() as u32;
        while let Some(i) = self.staged.pop() {
            if !self.arrive(i, at_ns) {
                continue;
            }
            let idle = self
                .channels
                .iter()
                .enumerate()
                .filter(|(_, ch)| ch.cmd == NONE)
                .min_by_key(|(_, ch)| ch.done)
                .map(|(k, ch)| (k, ch.done));
            match idle {
                Some((k, freed)) => {
                    let e = &mut self.entries[i as usize];
                    e.start = at_ns.max(freed);
                    self.channels[k] = Channel {
                        cmd: i,
                        done: e.start.saturating_add(e.service),
                    };
                }
                // Every channel busy: it waits like any arrival of `at_ns`.
                None => self.wait(i),
            }
        }
        self.refresh_next();
        Ok(n)
    }

    /// Engine-clock time (ns) at which the earliest in-flight command
    /// completes (the device keeps device time: [`Caps::predicts_completion`]).
    pub fn next_completion_at(&self) -> Option<u64> {
        match self.done.front() {
            Some(c) => Some(c.dev_done),
            None if self.next_event != u64::MAX => Some(self.next_event),
            None => None,
        }
    }
}

impl Queue for NullDevice {
    fn name(&self) -> &'static str {
        "null"
    }

    fn caps(&self) -> Caps {
        Caps {
            sync: false,
            can_peek: true,
            can_sleep: true,
            device_poll: true,
            predicts_completion: true,
            // Device time is emulated on the queue's clock: there is no
            // caller-context path to take instead.
            inline: false,
        }
    }

    #[inline(always)]
    fn queue(&mut self, cmd: &IoCmd) -> DevResult<Queued> {
        if self.outstanding >= self.limit {
            return Ok(Queued::Busy);
        }
        let Some(i) = self.free.pop() else {
            return Err(bad(
                "null device: no free command slot below the queue limit (accounting bug)".into(),
            ));
        };
        let service = self.service.draw(cmd.len);
        let mut result = match cmd.op {
            Op::Read | Op::Write | Op::Trim => cmd.len as i64,
            Op::Fsync => 0,
        };
        let moves_data = cmd.op != Op::Fsync;
        if moves_data && cmd.offset.saturating_add(cmd.len as u64) > self.size {
            result = -(libc::EINVAL as i64);
        } else if moves_data && self.backing.is_some() && cmd.len > 0 && cmd.buf.is_null() {
            result = -(libc::EFAULT as i64);
        }
        let mut fault = Fault::None;
        let mut service = service;
        if result >= 0 {
            fault = self.faults.decide(cmd.op, cmd.offset, cmd.len);
            match fault {
                Fault::Error => result = -(libc::EIO as i64),
                Fault::Spike => service = service.saturating_add(self.faults.spike_ns),
                Fault::None | Fault::Corrupt(_) | Fault::Hang => {}
            }
        }
        if cmd.op == Op::Trim
            && result >= 0
            && let Some(b) = self.backing.as_mut()
        {
            // The image forgets the range when the trim arrives (as a device
            // drops its mapping), so a write queued after it (trimwrite) lands
            // on zeros whichever of the two completes first.
            // SAFETY: offset + len was checked against the size above.
            unsafe { b.zero(cmd.offset, cmd.len) };
        }
        self.entries[i as usize] = Entry {
            state: State::Staged,
            slot: cmd.slot,
            op: cmd.op,
            offset: cmd.offset,
            len: cmd.len,
            buf: cmd.buf,
            seq: self.seq,
            commit: 0,
            start: 0,
            service,
            result,
            fault,
        };
        self.seq += 1;
        let _ = self.staged.push(i);
        self.outstanding += 1;
        Ok(Queued::Pending)
    }

    #[inline(always)]
    fn commit(&mut self) -> DevResult<u32> {
        if self.staged.is_empty() {
            return Ok(0);
        }
        let now = now_ns();
        self.last_now = now;
        // Bring the device up to now first, so these arrivals are ordered after
        // every decision taken before them.
        self.advance(now);
        let n = self.staged.len() as u32;
        // With nobody waiting, arrivals go straight to idle channels in commit
        // order: what `dispatch_idle` would pick from the wait queues anyway
        // under fifo (arrival order), and for a single arrival under either
        // order. It saves a wait-queue round trip per command at low depth.
        let direct = self.wait_reads.is_empty()
            && self.wait_writes.is_empty()
            && (n == 1 || self.order == NullOrder::Fifo);
        let mut idle = 0;
        while let Some(i) = self.staged.pop() {
            if !self.arrive(i, now) {
                continue;
            }
            let e = &mut self.entries[i as usize];
            if direct {
                while idle < self.channels.len() && self.channels[idle].cmd != NONE {
                    idle += 1;
                }
                if let Some(ch) = self.channels.get_mut(idle) {
                    // Committed now: it starts now.
                    e.start = now;
                    *ch = Channel {
                        cmd: i,
                        done: now.saturating_add(e.service),
                    };
                    continue;
                }
            }
            self.wait(i);
        }
        if self.wait_reads.is_empty() && self.wait_writes.is_empty() {
            // Every arrival went straight to a channel: no idle channel has a
            // command to take, only the next event to find (at QD1 a third of
            // commit's own time went to the empty search).
            self.refresh_next();
        } else {
            self.dispatch_idle(now);
        }
        Ok(n)
    }

    #[inline(always)]
    fn reap(&mut self, wait: Wait, out: &mut [Completion]) -> DevResult<usize> {
        match wait {
            Wait::Peek => {
                let now = now_ns();
                if self.done.is_empty() && now < self.next_event {
                    return Ok(0);
                }
                self.last_now = now;
                // With none posted before, completions due now go straight to
                // `out`, in the order advance would post them: posting to the
                // ring and reading back at once cost a store-forwarding stall
                // per completion at QD1 (perf: a sixth of reap). Any left over
                // are posted as before.
                let mut n = 0;
                if self.done.is_empty() {
                    while n < out.len() {
                        let Some(c) = self.next_done(now) else { break };
                        out[n] = c;
                        n += 1;
                    }
                    self.outstanding -= n as u32;
                }
                self.advance(now);
                Ok(n + self.drain(&mut out[n..]))
            }
            Wait::Sleep { min } => {
                self.last_now = 0;
                Ok(self.sleep(min, out))
            }
        }
    }

    fn stats(&self) -> BackendStats {
        self.stats
    }

    #[inline]
    fn clock_hint(&self) -> u64 {
        self.last_now
    }

    fn abort(&mut self, slot: u32) -> bool {
        NullDevice::abort(self, slot)
    }

    fn commands_in_flight(&self) -> Option<u32> {
        Some(self.in_flight())
    }

    fn device_time(&mut self) -> Option<&mut dyn DeviceTime> {
        Some(self)
    }
}
