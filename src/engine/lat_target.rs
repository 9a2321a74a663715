//! fio's latency-target queue-depth search (`latency_target=`): the controller
//! a stream consults to learn how many requests it may keep in flight.
//!
//! The search, as fio runs it: start at depth 1. At the end of every
//! `latency_window`, judge the window: if at least `latency_percentile` percent
//! of the I/Os completed in it took no longer than `latency_target`, step up —
//! double the depth while no depth has failed yet, bisect towards the lowest
//! failed depth once one has; otherwise step down — bisect towards the highest
//! depth that passed. A step down first lets the requests issued at the deeper
//! queue drain (fio's quiesce), so the next window measures only the new depth.
//! With `latency_percentile=100`, one late I/O is a failed window at once.
//!
//! When a step up lands on the depth it came from, the search has settled: the
//! stream drains, its statistics restart, and it runs one more window at that
//! depth, so the report covers only the found depth; a second settling ends the
//! job. `latency_run` keeps searching for the whole runtime instead.
//!
//! Where depth 1 fails: with `latency_percentile=100` the job ends with fio's
//! error (ETIMEDOUT, "latency ... exceeds specified max"); below 100 it stays at
//! depth 1 and keeps judging the window from the last step on, as fio does, and
//! the report notes that the target is out of reach.
//!
//! Per request it costs a compare and two counter updates ([`LatTarget::completed`]);
//! the window check is a clock compare on the loop's own `now`.

use crate::job::lat_target::LatTargetSpec;
use crate::report::lat_target::LatTargetReport;

/// What the stream must do after a window check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Carry on (at [`LatTarget::depth`]).
    Go,
    /// The search settled: restart the statistics; the final window begins.
    FinalRun,
    /// The final window is over: the job ends here.
    Done,
}

/// One stream's depth search.
#[derive(Clone, Debug)]
pub struct LatTarget {
    target_ns: u64,
    window_ns: u64,
    percentile: f64,
    keep_running: bool,
    max_qd: u32,
    /// The depth the stream may keep in flight.
    qd: u32,
    /// Highest depth known to pass, and lowest known to fail (`max_qd` until one fails).
    low: u32,
    high: u32,
    cycle_start: u64,
    /// I/Os completed in this window, and those over the target.
    ios: u64,
    failed: u64,
    /// Draining the deeper queue before the next window starts.
    quiescing: bool,
    /// The drain ends in the final window (statistics restart).
    final_next: bool,
    /// The final window is running.
    end_run: bool,
    windows: u32,
    last_met_pct: Option<f64>,
    unmet_at_1: bool,
    /// The latency that ended the job (100th-percentile miss at depth 1), ns.
    fatal_ns: Option<u64>,
}

impl LatTarget {
    /// The controller for a job with `latency_target=`, None without one.
    pub fn new(spec: &LatTargetSpec, iodepth: u32) -> Option<LatTarget> {
        let target = spec.target?;
        let max_qd = iodepth.max(1);
        Some(LatTarget {
            target_ns: target.as_nanos() as u64,
            window_ns: spec.window.map_or(0, |w| w.as_nanos() as u64),
            percentile: spec.percentile,
            keep_running: spec.keep_running,
            max_qd,
            qd: 1,
            low: 1,
            high: max_qd,
            cycle_start: 0,
            ios: 0,
            failed: 0,
            quiescing: false,
            final_next: false,
            end_run: false,
            windows: 0,
            last_met_pct: None,
            unmet_at_1: false,
            fatal_ns: None,
        })
    }

    /// Start (or, at the end of ramp_time, restart) the search at depth 1.
    pub fn start(&mut self, now: u64) {
        if self.end_run {
            return;
        }
        self.qd = 1;
        self.low = 1;
        self.high = self.max_qd;
        self.quiescing = false;
        self.final_next = false;
        self.new_cycle(now);
    }

    /// Requests the stream may keep in flight now (0 while draining).
    #[inline]
    pub fn depth(&self) -> u32 {
        if self.quiescing { 0 } else { self.qd }
    }

    /// One I/O completed with total latency `lat_ns`. Returns true when it is
    /// fatal: a 100th-percentile target missed at depth 1 (fio's ETIMEDOUT).
    #[inline]
    pub fn completed(&mut self, lat_ns: u64) -> bool {
        if self.quiescing {
            // Issued at the depth being left: not this window's evidence.
            return false;
        }
        self.ios += 1;
        if lat_ns > self.target_ns {
            if self.percentile >= 100.0 && self.fail() {
                self.fatal_ns.get_or_insert(lat_ns);
                return true;
            }
            if self.percentile >= 100.0 {
                return false;
            }
            self.failed += 1;
        }
        false
    }

    /// The job's error when a miss ended it, in fio's words and with the way out.
    pub fn fatal_message(&self, job: &str) -> Option<String> {
        let lat = self.fatal_ns?;
        Some(format!(
            "{job}: latency of {lat} nsec exceeds specified max ({} nsec): latency_target is \
             not met even at depth 1 with latency_percentile=100; raise latency_target or set \
             latency_percentile below 100",
            self.target_ns
        ))
    }

    /// At the loop's pass: judge the window if it is over. `outstanding` is the
    /// stream's requests in flight (a drain ends when it reaches 0).
    #[inline]
    pub fn check(&mut self, now: u64, outstanding: u32) -> Verdict {
        if self.quiescing {
            if outstanding > 0 {
                return Verdict::Go;
            }
            self.quiescing = false;
            self.new_cycle(now);
            if std::mem::take(&mut self.final_next) {
                return Verdict::FinalRun;
            }
            return Verdict::Go;
        }
        // A window without a completion says nothing (fio would count it as a
        // failure: 0 of 0 I/Os is no success rate); it stays open until one.
        if now.saturating_sub(self.cycle_start) < self.window_ns || self.ios == 0 {
            return Verdict::Go;
        }
        self.windows += 1;
        let met = 100.0 * (self.ios - self.failed) as f64 / self.ios as f64;
        self.last_met_pct = Some(met);
        if met >= self.percentile {
            self.unmet_at_1 = false;
            self.success(now)
        } else {
            self.fail();
            Verdict::Go
        }
    }

    fn new_cycle(&mut self, now: u64) {
        self.cycle_start = now;
        self.ios = 0;
        self.failed = 0;
    }

    /// A window passed: step up, or settle where the step does not move.
    fn success(&mut self, now: u64) -> Verdict {
        let qd = self.qd;
        self.low = qd;
        self.qd = if self.high != self.max_qd {
            (qd + self.high) / 2
        } else {
            qd.saturating_mul(2)
        }
        .min(self.max_qd);
        if self.qd == qd && !self.keep_running {
            if self.end_run {
                return Verdict::Done;
            }
            // Settled: drain, restart the statistics, run one window here.
            self.end_run = true;
            self.final_next = true;
            self.quiescing = true;
            return Verdict::Go;
        }
        self.new_cycle(now);
        Verdict::Go
    }

    /// A window failed: step down and drain. Returns true at depth 1, where
    /// there is nowhere to go (the window keeps running, from its old start).
    fn fail(&mut self) -> bool {
        if self.qd == 1 {
            self.unmet_at_1 = true;
            return true;
        }
        self.high = self.qd;
        if self.qd == self.low {
            self.low -= 1;
        }
        self.qd = (self.qd + self.low) / 2;
        self.quiescing = true;
        false
    }

    pub fn report(&self) -> LatTargetReport {
        LatTargetReport {
            target_ns: self.target_ns,
            window_us: self.window_ns / 1000,
            percentile: self.percentile,
            depth: self.qd,
            max_depth: self.max_qd,
            windows: self.windows,
            settled: self.end_run,
            last_met_pct: self.last_met_pct,
            keep_running: self.keep_running,
            unmet_at_depth_1: self.unmet_at_1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const MS: u64 = 1_000_000;

    fn ctl(max: u32, pct: f64) -> LatTarget {
        let spec = LatTargetSpec {
            target: Some(Duration::from_micros(100)),
            window: Some(Duration::from_millis(10)),
            percentile: pct,
            keep_running: false,
        };
        let mut c = LatTarget::new(&spec, max).unwrap();
        c.start(0);
        c
    }

    /// Drive windows against a device whose latency is `lat(depth)` for every
    /// I/O; returns the depths the search visited and how it ended.
    fn drive(c: &mut LatTarget, lat: impl Fn(u32) -> u64) -> (Vec<u32>, Verdict) {
        let mut now = 0;
        let mut seen = vec![c.depth()];
        for _ in 0..200 {
            let d = c.depth();
            if d > 0 {
                for _ in 0..10 {
                    if c.completed(lat(d)) {
                        return (seen, Verdict::Done);
                    }
                }
            }
            now += 10 * MS;
            let v = c.check(now, 0);
            if c.depth() > 0 && seen.last() != Some(&c.depth()) {
                seen.push(c.depth());
            }
            if v == Verdict::Done {
                return (seen, v);
            }
        }
        (seen, Verdict::Go)
    }

    #[test]
    fn doubles_then_bisects_like_fio() {
        // Latency 30us per queued request: depth <= 3 meets 100us.
        let mut c = ctl(64, 99.0);
        let (seen, v) = drive(&mut c, |d| 30_000 * u64::from(d));
        assert_eq!(v, Verdict::Done);
        assert_eq!(seen, vec![1, 2, 4, 3]);
        assert_eq!(c.report().depth, 3);
        assert!(c.report().settled);
    }

    #[test]
    fn ceiling_is_iodepth() {
        let mut c = ctl(8, 100.0);
        let (seen, v) = drive(&mut c, |_| 10_000);
        assert_eq!(v, Verdict::Done);
        assert_eq!(seen, vec![1, 2, 4, 8]);
        assert_eq!(c.report().depth, 8);
    }

    #[test]
    fn unreachable_target_stays_at_one() {
        let mut c = ctl(32, 99.0);
        let (seen, v) = drive(&mut c, |_| 500_000);
        assert_eq!(v, Verdict::Go);
        assert_eq!(seen, vec![1]);
        let r = c.report();
        assert!(r.unmet_at_depth_1 && !r.settled);
        assert_eq!(r.last_met_pct, Some(0.0));
        assert!(r.note().unwrap().contains("not met even at depth 1"));
    }

    #[test]
    fn full_percentile_miss_at_one_is_fatal() {
        let mut c = ctl(32, 100.0);
        assert!(!c.completed(50_000));
        assert!(c.fatal_message("j").is_none());
        assert!(c.completed(500_000));
        let m = c.fatal_message("j").unwrap();
        assert!(
            m.contains("latency of 500000 nsec exceeds specified max (100000 nsec)"),
            "{m}"
        );
    }

    #[test]
    fn step_down_drains_first() {
        let mut c = ctl(64, 100.0);
        // Pass depth 1, 2: now at 4.
        for t in 1..=2 {
            c.completed(1);
            c.check(t * 10 * MS, 0);
        }
        assert_eq!(c.depth(), 4);
        assert!(!c.completed(200_000)); // a miss at 4: down to 3, draining
        assert_eq!(c.depth(), 0);
        assert!(!c.completed(200_000)); // old depth's I/O: ignored
        assert_eq!(c.check(21 * MS, 2), Verdict::Go);
        assert_eq!(c.depth(), 0);
        assert_eq!(c.check(22 * MS, 0), Verdict::Go);
        assert_eq!(c.depth(), 3);
    }

    #[test]
    fn empty_window_is_not_judged() {
        let mut c = ctl(64, 99.0);
        assert_eq!(c.check(50 * MS, 1), Verdict::Go);
        assert_eq!(c.depth(), 1);
        assert_eq!(c.report().windows, 0);
    }
}
