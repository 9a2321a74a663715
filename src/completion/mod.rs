//! Completion models: how a worker learns that its I/O finished.
//!
//! * `sync` — the backend performed the I/O inside `queue` (pread): nothing to wait for.
//! * `interrupt` — sleep in the backend's interrupt mechanism until a completion.
//! * `poll` — spin on the completion queue (`Wait::Peek`) and never sleep.
//! * `hybrid` — sleep for half the mean completion latency, then poll (Linux's
//!   classic hybrid polling).
//! * `adaptive` — see [`adaptive`]: chooses between the others from measurements.
//!
//! Whatever the model, [`CompletionStats`] records how completions were actually
//! observed, so a run that asked for polling and slept is visible in the report.

pub mod adaptive;

use crate::device::{Caps, DevResult, Queue, Wait};
use crate::job::CompletionModel;
use crate::measure::clock;
use crate::request::Completion;

/// How completions were observed during a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
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
        if self.adaptive_sync > 0 {
            s.push_str(&format!(", {} performed inline", self.adaptive_sync));
        }
        if asked == CompletionModel::Poll && self.sleeps > 0 {
            s.push_str(" — WARNING: asked to poll but slept");
        }
        if matches!(asked, CompletionModel::Poll | CompletionModel::Hybrid)
            && self.completions > 0
            && self.polls_hit == 0
        {
            s.push_str(" — WARNING: asked to poll but no completion was found by polling");
        }
        s
    }
}

/// Pick the model a job gets when it names none, and refuse impossible pairs.
pub fn resolve(
    asked: Option<CompletionModel>,
    caps: Caps,
    backend: &str,
) -> Result<CompletionModel, String> {
    use CompletionModel::*;
    let model = match asked {
        Some(m) => m,
        None if caps.sync => Sync,
        None => Interrupt,
    };
    let why = match model {
        Sync if !caps.sync => Some(format!(
            "backend {backend} completes I/O asynchronously; completion=sync needs a synchronous backend (sync, psync, vsync, pvsync, pvsync2)"
        )),
        Interrupt | Poll | Hybrid | Adaptive if caps.sync => Some(format!(
            "backend {backend} performs each I/O inside the submitting call, so there is no completion to {} for; use completion=sync (or ioengine=io_uring / libaio / null)",
            match model {
                Interrupt => "sleep",
                _ => "poll",
            }
        )),
        Interrupt if !caps.can_sleep => {
            Some(format!("backend {backend} cannot sleep for completions"))
        }
        Poll if !caps.can_peek => Some(format!("backend {backend} cannot be polled")),
        Hybrid | Adaptive if !(caps.can_peek && caps.can_sleep) => Some(format!(
            "completion={} needs a backend that can both sleep and poll; {backend} cannot",
            model.name()
        )),
        _ => None,
    };
    match why {
        Some(w) => Err(w),
        None => Ok(model),
    }
}

/// Waits for completions according to one model and keeps the account.
#[derive(Debug)]
pub struct Completer {
    model: CompletionModel,
    pub stats: CompletionStats,
    /// Running mean of submit-to-completion latency (ns), for hybrid's nap.
    mean_ns: f64,
    samples: u64,
    adaptive: adaptive::Adaptive,
}

impl Completer {
    pub fn new(model: CompletionModel, adaptive: adaptive::Adaptive) -> Completer {
        Completer {
            model,
            stats: CompletionStats::default(),
            mean_ns: 0.0,
            samples: 0,
            adaptive,
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

    /// Feed one observed issue-to-completion latency (hybrid and adaptive learn
    /// from it; issue rather than submit-return, because some backends finish
    /// the I/O inside the submit call). `inline`: the request was performed in the
    /// caller's context ([`Completer::take_inline`]).
    #[inline]
    pub fn observe(&mut self, len: u32, clat_ns: u64, inline: bool) {
        match self.model {
            // Adaptive keeps percentiles, which outliers do not move.
            CompletionModel::Adaptive => return self.adaptive.observe(len, clat_ns, inline),
            CompletionModel::Hybrid => {}
            _ => return,
        }
        // An exponentially weighted mean follows drift without a window.
        self.samples += 1;
        // A preempted request can take milliseconds on a busy machine; clamping
        // it keeps hybrid's nap tied to the device rather than to the scheduler.
        let clat_ns = if self.samples > 16 {
            clat_ns.min((4.0 * self.mean_ns) as u64)
        } else {
            clat_ns
        };
        let w = if self.samples < 16 {
            1.0 / self.samples as f64
        } else {
            1.0 / 16.0
        };
        self.mean_ns += (clat_ns as f64 - self.mean_ns) * w;
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
    /// `out`. `oldest_submit_ns` is when the oldest in-flight request was
    /// submitted and `len` its size (hybrid and adaptive time their nap from it);
    /// `deadline_ns` (0 = none) is when the engine must regain control even if
    /// nothing completed (a paced stream falls due).
    #[inline]
    pub fn wait(
        &mut self,
        q: &mut dyn Queue,
        out: &mut [Completion],
        oldest_submit_ns: u64,
        len: u32,
        deadline_ns: u64,
    ) -> DevResult<usize> {
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
            CompletionModel::Interrupt => self.sleep(q, out, deadline_ns)?,
            CompletionModel::Hybrid | CompletionModel::Adaptive => {
                // The I/O may have completed inside the submit call (io-wq,
                // inline completion): never nap for something already done.
                let n = q.reap(Wait::Peek, out)?;
                if n > 0 {
                    self.stats.polls_hit += 1;
                    self.stats.completions += n as u64;
                    return Ok(n);
                }
                let nap = match self.model {
                    CompletionModel::Adaptive => self.adaptive.nap_ns(len),
                    _ => (self.mean_ns / 2.0) as u64,
                };
                let wake = oldest_submit_ns + nap;
                let wake = if deadline_ns != 0 {
                    wake.min(deadline_ns)
                } else {
                    wake
                };
                if nap > 0 && clock::now_ns() < wake {
                    let t0 = clock::now_ns();
                    clock::sleep_until(wake);
                    self.stats.sleeps += 1;
                    self.stats.sleep_ns += clock::now_ns() - t0;
                }
                self.poll(q, out, deadline_ns)?
            }
        };
        self.stats.completions += n as u64;
        Ok(n)
    }

    #[inline]
    fn poll(
        &mut self,
        q: &mut dyn Queue,
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
        deadline_ns: u64,
    ) -> DevResult<usize> {
        // Completions may already be there (a fast device, or a batch): taking
        // them costs no sleep, as an interrupt handler finding work would.
        let n = q.reap(Wait::Peek, out)?;
        if n > 0 {
            return Ok(n);
        }
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
            q.sleep_until(1, deadline_ns, out)?
        } else {
            q.reap(Wait::Sleep { min: 1 }, out)?
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
        let e = resolve(Some(CompletionModel::Poll), SYNC, "psync").unwrap_err();
        assert!(e.contains("psync") && e.contains("completion=sync"), "{e}");
        let e = resolve(Some(CompletionModel::Sync), ASYNC, "io_uring").unwrap_err();
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
}
