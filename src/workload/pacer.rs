//! The pacer: when a job may issue its next request (`rate`, `rate_iops`,
//! `rate_process`, `thinktime`), and whether it keeps up with `rate_min` /
//! `rate_iops_min`.

use super::dur_ns;
use super::generator::{Generator, NextIo};
use super::thinktime;
use crate::job::JobSpec;
use crate::request::Op;

/// When a job may issue its next request: `rate`, `rate_iops` (with
/// `rate_process`) and `thinktime`; and whether it keeps up with `rate_min` /
/// `rate_iops_min`.
#[derive(Debug, Clone)]
pub struct Pacer {
    /// `rate` per direction `[read, write, trim]` (`Op::dir`) in bytes/s (0:
    /// none): an I/O of `len` bytes takes `len * 1e9 / rate` ns of the
    /// schedule. Trims have the write's values on a schedule of their own, as
    /// fio's `rate=A,B` gives trims B.
    bps: [u64; PACED],
    /// `rate_iops`: fixed spacing per direction (ns); 0 = unpaced.
    interval_ns: [u64; PACED],
    next_ns: [u64; PACED],
    /// `rate_process=poisson`: gaps drawn from an exponential distribution with
    /// the paced mean, from this generator (seeded: reproducible).
    poisson: Option<fastrand::Rng>,
    /// `thinktime` and its family (`thinktime::Think`).
    think: thinktime::Think,
    /// `rate_ignore_thinktime`: the schedule moves past a pause; otherwise
    /// the rate catches up on it afterwards (the schedule is absolute).
    think_ignored: bool,
    /// `rate_min` (bytes/s) and `rate_iops_min` per direction, 0 = none,
    /// checked over windows of `cycle_ns` from `check_from` on, for the
    /// directions the job issues.
    min_bps: [u64; PACED],
    min_iops: [u64; PACED],
    dirs: [bool; PACED],
    cycle_ns: u64,
    ramp_ns: u64,
    check_from: [u64; PACED],
    cycle_bytes: [u64; PACED],
    cycle_ios: [u64; PACED],
    /// The first window that fell short.
    missed: Option<MinRateMiss>,
    /// fio's inline submission (`io_submit_mode=inline`) of a paced job that
    /// may keep several I/Os in flight: ahead of its rate, it first lets them
    /// all complete, then waits out the gap it was ahead by ([`Pacer::inline_due`]).
    quiesce: bool,
    /// Draining: the gap to wait once the job's I/O in flight has completed.
    drain_gap: Option<u64>,
    /// Drained: the next request goes at this time (0 = not held).
    release_at: u64,
}

/// Paced directions: read, write, trim (`Op::dir`); fsyncs are not paced.
const PACED: usize = 3;

/// A job's `[read, write]` option pair as `[read, write, trim]`: trims take
/// the write value (`Op::rw_slot`).
fn with_trim(v: [u64; 2]) -> [u64; PACED] {
    [v[0], v[1], v[1]]
}

/// A `rate_min`/`rate_iops_min` window that fell short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinRateMiss {
    /// 0 = reads, 1 = writes, 2 = trims.
    pub dir: usize,
    /// Bytes/s (or IOPS when `iops`) reached in the window, and the minimum.
    pub got: u64,
    pub want: u64,
    pub iops: bool,
    pub cycle_ms: u64,
}

impl Pacer {
    pub fn new(job: &JobSpec, start_ns: u64) -> Pacer {
        let iv = |r: u64| 1_000_000_000u64.checked_div(r).unwrap_or(0);
        let paced = job.rate != [0, 0] || job.rate_iops != [0, 0];
        let dirs = job.rw.dir.issues();
        let ramp_ns = dur_ns(job.ramp_time);
        let cycle_ns = dur_ns(job.rate_cycle).max(1);
        Pacer {
            bps: with_trim(job.rate),
            interval_ns: with_trim(job.rate_iops).map(iv),
            next_ns: [start_ns; PACED],
            poisson: (job.rate_poisson && paced)
                .then(|| fastrand::Rng::with_seed(job.randseed ^ 0x9e37_79b9_7f4a_7c15)),
            think: thinktime::Think::new(job, start_ns),
            think_ignored: job.workload.rate_ignore_thinktime,
            min_bps: with_trim(job.rate_min),
            min_iops: with_trim(job.rate_iops_min),
            dirs,
            cycle_ns,
            ramp_ns,
            check_from: [start_ns + ramp_ns; PACED],
            cycle_bytes: [0; PACED],
            cycle_ios: [0; PACED],
            missed: None,
            quiesce: paced && !job.io_submit_offload && job.iodepth > 1,
            drain_gap: None,
            release_at: 0,
        }
    }

    /// Start pacing afresh at `start_ns` (when the worker's clock starts).
    pub fn restart(&mut self, start_ns: u64) {
        self.next_ns = [start_ns; PACED];
        self.think.restart(start_ns);
        self.check_from = [start_ns + self.ramp_ns; PACED];
        self.cycle_bytes = [0; PACED];
        self.cycle_ios = [0; PACED];
        self.drain_gap = None;
        self.release_at = 0;
    }

    /// Is pacing in effect at all? (Lets the engine skip the clock checks.)
    pub fn active(&self) -> bool {
        self.interval_ns != [0; PACED] || self.bps != [0; PACED] || self.think.active()
    }

    /// Does the job have a minimum rate (`rate_min`, `rate_iops_min`) that
    /// completions are checked against?
    pub fn checks_min_rate(&self) -> bool {
        self.min_bps != [0; PACED] || self.min_iops != [0; PACED]
    }

    /// Earliest time a request in direction `d` may be issued.
    #[inline]
    pub fn due_at(&self, d: usize) -> u64 {
        let rate = if d < PACED { self.next_ns[d] } else { 0 };
        rate.max(self.think.until)
    }

    /// Until when the worker should spin rather than sleep (`thinktime_spin`).
    #[inline]
    pub fn spin_until(&self) -> u64 {
        self.think.spin_until()
    }

    /// A pause of `ns` started: with `rate_ignore_thinktime` the rate's
    /// schedule moves past it (fio counts the bytes it would have done);
    /// otherwise the absolute schedule catches up on it afterwards.
    #[inline]
    fn thought(&mut self, d: usize, ns: u64) {
        if ns == 0 || d >= PACED || !self.think_ignored {
            return;
        }
        let until = self.think.until;
        self.next_ns[d] = self.next_ns[d].max(until);
    }

    /// Record that a request of `len` bytes in direction `d` was issued at `now`.
    #[inline]
    pub fn issued(&mut self, d: usize, len: u32, now: u64) {
        if d >= PACED {
            return;
        }
        let ns = self.think.count(true, now);
        self.thought(d, ns);
        self.release_at = 0;
        let mean = (u64::from(len) * 1_000_000_000)
            .checked_div(self.bps[d])
            .unwrap_or(self.interval_ns[d]);
        if mean == 0 {
            return;
        }
        let gap = match &mut self.poisson {
            // Inverse transform: -ln(U) * mean is exponential with that mean.
            Some(rng) => (-(1.0 - rng.f64()).ln() * mean as f64) as u64,
            None => mean,
        };
        // fio's schedule is absolute (the time the bytes issued so far take
        // at the rate, from the start): a job held back (a slow completion,
        // the CPU taken by another thread, its flow's share) catches up in a
        // burst afterwards, so it keeps its rate over the run.
        self.next_ns[d] += gap;
    }

    /// When a request of direction `d`, due at `due` by [`Pacer::due_at`], may go
    /// under fio's inline rule (`io_submit_mode=inline`, fio's `rate_ddir`): a
    /// job ahead of its rate with I/O in flight first waits for all of it to
    /// complete, then sleeps the gap it was ahead by when it stopped, so it
    /// issues in bursts that fall behind the schedule by the drain time.
    /// `u64::MAX` while it drains: no timed wake, the completions wake it.
    /// With offload (or one I/O in flight at most) this is `due`: the schedule
    /// holds whatever the I/O in flight does.
    #[inline]
    pub fn inline_due(&mut self, d: usize, due: u64, now: u64, in_flight: u32) -> u64 {
        if !self.quiesce || d >= 2 {
            return due;
        }
        if let Some(gap) = self.drain_gap {
            if in_flight > 0 {
                return u64::MAX;
            }
            self.drain_gap = None;
            self.release_at = now + gap;
        }
        if self.release_at != 0 {
            return due.max(self.release_at);
        }
        // Only the rate's schedule drains (fio quiesces in rate_ddir); think
        // time has its own rule.
        if self.next_ns[d] > now && in_flight > 0 {
            self.drain_gap = Some(due - now);
            return u64::MAX;
        }
        due
    }

    /// Held by the inline rule at `now` (draining, or waiting out the gap).
    #[inline]
    pub fn inline_held(&self, now: u64) -> bool {
        self.drain_gap.is_some() || self.release_at > now
    }

    /// Record a completion of `bytes` in direction `d` at `now`: fio's think
    /// time starts when an I/O completes. Returns true once, when a
    /// `rate_min`/`rate_iops_min` window ends short (the job must end).
    #[inline]
    pub fn completed(&mut self, now: u64, d: usize, bytes: u64) -> bool {
        let ns = self.think.count(false, now);
        self.thought(d, ns);
        if self.min_bps == [0; PACED] && self.min_iops == [0; PACED] {
            return false;
        }
        // Each direction keeps its own window and is checked when one of its
        // own I/Os completes (fio: `lastrate[ddir]`, checked for the
        // directions that completed something). A shared window would judge
        // the writes at a read's completion: after a stall longer than the
        // cycle, the first read to finish would find no write in the window.
        if d >= PACED || now < self.check_from[d] || !self.dirs[d] {
            // Ramp time: not held to the minimum, not counted.
            return false;
        }
        self.cycle_bytes[d] += bytes;
        self.cycle_ios[d] += 1;
        let spent = now - self.check_from[d];
        if spent < self.cycle_ns || self.missed.is_some() {
            return false;
        }
        let per_s = |n: u64| (n as u128 * 1_000_000_000 / spent as u128) as u64;
        let checks = [
            (per_s(self.cycle_bytes[d]), self.min_bps[d], false),
            (per_s(self.cycle_ios[d]), self.min_iops[d], true),
        ];
        for (got, want, iops) in checks {
            if want > 0 && got < want {
                self.missed = Some(MinRateMiss {
                    dir: d,
                    got,
                    want,
                    iops,
                    cycle_ms: self.cycle_ns / 1_000_000,
                });
                return true;
            }
        }
        self.check_from[d] = now;
        self.cycle_bytes[d] = 0;
        self.cycle_ios[d] = 0;
        false
    }

    /// The window that fell short, if one did.
    #[cfg(any(test, feature = "testing"))]
    pub fn min_rate_missed(&self) -> Option<MinRateMiss> {
        self.missed
    }

    /// The job's error when it fell below its minimum rate, as fio words it.
    pub fn min_rate_message(&self, label: &str) -> Option<String> {
        let m = self.missed?;
        let dir = ["read", "write", "trim"][m.dir];
        Some(if m.iops {
            format!(
                "{label}: min rate not met: {dir} IOPS {} is below rate_iops_min={} over {} ms",
                m.got, m.want, m.cycle_ms
            )
        } else {
            format!(
                "{label}: min rate not met: {dir} bandwidth {} bytes/s is below rate_min={} over {} ms",
                m.got, m.want, m.cycle_ms
            )
        })
    }
}

/// When `io` may be issued under the job's rate. A mixed job whose `io` must
/// wait while the other direction may go now gets an I/O of that direction
/// instead, as fio's rate_ddir does: a cap on one direction does not slow the
/// other.
#[inline]
pub fn due_or_switch(pacer: &Pacer, generator: &mut Generator, io: &mut NextIo, now: u64) -> u64 {
    let d = io.op.dir();
    let due = pacer.due_at(d);
    if due <= now || d >= 2 || !generator.is_mixed() {
        return due;
    }
    let (other, op) = if d == 0 {
        (1, Op::Write)
    } else {
        (0, Op::Read)
    };
    let other_due = pacer.due_at(other);
    if other_due > now {
        return due;
    }
    match generator.redo_as(op) {
        Some(n) => {
            *io = n;
            other_due
        }
        None => due,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Direction, Pattern, RwMode};
    use std::time::Duration;

    fn job(pattern: Pattern, dir: Direction) -> JobSpec {
        JobSpec {
            rw: RwMode { pattern, dir },
            ..JobSpec::default()
        }
    }

    #[test]
    fn rate_paces_bytes_and_poisson_keeps_the_mean() {
        let mut j = job(Pattern::Rand, Direction::Read);
        j.rate = [1 << 20, 0];
        let mut p = Pacer::new(&j, 0);
        p.issued(0, 4096, 0);
        // 4 KiB at 1 MiB/s: 3.90625 ms.
        assert_eq!(p.due_at(0), 3_906_250);
        p.issued(0, 8192, 3_906_250);
        assert_eq!(p.due_at(0), 3_906_250 * 3);
        assert_eq!(p.due_at(1), 0, "writes are not capped");
        j.rate_poisson = true;
        let mut p = Pacer::new(&j, 0);
        let mut t = 0;
        let mut gaps = Vec::new();
        for _ in 0..20_000 {
            p.issued(0, 4096, t);
            gaps.push(p.due_at(0) - t);
            t = p.due_at(0);
        }
        let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
        assert!((mean / 3_906_250.0 - 1.0).abs() < 0.03, "mean gap {mean}");
        // Exponential: the standard deviation equals the mean.
        let sd = (gaps.iter().map(|g| (*g as f64 - mean).powi(2)).sum::<f64>() / gaps.len() as f64)
            .sqrt();
        assert!((sd / mean - 1.0).abs() < 0.05, "sd/mean {}", sd / mean);
    }

    /// fio's rate schedule is absolute: a job held back (here 50 ms of every
    /// 100 ms, as a flow's share or a busy CPU may hold it) catches up in a
    /// burst, so over a second it still issues its 1000 I/Os.
    #[test]
    fn a_held_job_catches_up_on_its_schedule() {
        let mut j = job(Pattern::Rand, Direction::Read);
        j.rate_iops = [1000, 0];
        let mut p = Pacer::new(&j, 0);
        let mut issued = 0u64;
        let mut now = 0u64;
        // Fake clock in 10 us steps; the job may issue only in the second
        // half of each 100 ms.
        while now < 1_000_000_000 {
            let held = now % 100_000_000 < 50_000_000;
            while !held && p.due_at(0) <= now {
                p.issued(0, 4096, now);
                issued += 1;
            }
            now += 10_000;
        }
        assert!((999..=1001).contains(&issued), "issued {issued} of 1000");
        // Never ahead of the schedule: a burst stops where it caught up.
        assert_eq!(p.due_at(0), issued * 1_000_000);
    }

    #[test]
    fn rate_min_ends_a_slow_window() {
        let mut j = job(Pattern::Rand, Direction::Read);
        j.rate_min = [1 << 20, 0];
        j.rate_cycle = Duration::from_millis(100);
        let mut p = Pacer::new(&j, 0);
        // 4 KiB per ms is 4 MB/s: above the minimum for the first window.
        let mut t = 0;
        for _ in 0..150 {
            t += 1_000_000;
            assert!(!p.completed(t, 0, 4096));
        }
        // Then one per 10 ms: 400 KB/s, below 1 MiB/s at the window's end.
        let mut missed = false;
        for _ in 0..20 {
            t += 10_000_000;
            missed |= p.completed(t, 0, 4096);
        }
        assert!(missed);
        let m = p.min_rate_missed().unwrap();
        assert_eq!((m.dir, m.want, m.iops), (0, 1 << 20, false));
        assert!(m.got < 1 << 20);
        assert!(
            p.min_rate_message("job 'x'")
                .unwrap()
                .contains("rate_min=1048576")
        );
    }

    #[test]
    fn pacer_spaces_issues_and_think_time() {
        let mut j = job(Pattern::Rand, Direction::Read);
        j.rate_iops = [1000, 0];
        let mut p = Pacer::new(&j, 0);
        assert_eq!(p.due_at(0), 0);
        p.issued(0, 4096, 0);
        assert_eq!(p.due_at(0), 1_000_000);
        j.rate_iops = [0, 0];
        j.thinktime = Duration::from_micros(50);
        let mut p = Pacer::new(&j, 0);
        p.completed(10, 0, 4096);
        assert_eq!(p.due_at(0), 50_010);
    }

    #[test]
    fn inline_drains_before_it_waits_offload_keeps_the_schedule() {
        let mut j = job(Pattern::Rand, Direction::Read);
        j.rate_iops = [1000, 0];
        j.iodepth = 8;
        let mut p = Pacer::new(&j, 0);
        p.issued(0, 4096, 0);
        assert_eq!(p.due_at(0), 1_000_000);
        // Ahead by 0.9 ms with a read in flight: no timed wake while it drains.
        assert_eq!(p.inline_due(0, p.due_at(0), 100_000, 1), u64::MAX);
        assert!(p.inline_held(100_000));
        assert_eq!(p.inline_due(0, p.due_at(0), 5_000_000, 1), u64::MAX);
        // Drained at 5 ms: it waits out the 0.9 ms it was ahead by, then goes.
        assert_eq!(p.inline_due(0, p.due_at(0), 5_000_000, 0), 5_900_000);
        p.issued(0, 4096, 5_900_000);
        assert!(!p.inline_held(5_900_000));
        // Nothing in flight: the schedule as it is.
        let due = p.due_at(0);
        assert_eq!(p.inline_due(0, due, 5_900_000, 0), due);
        // Offload, and depth 1, keep the schedule whatever is in flight.
        for (offload, depth) in [(true, 8), (false, 1)] {
            j.io_submit_offload = offload;
            j.iodepth = depth;
            let mut p = Pacer::new(&j, 0);
            p.issued(0, 4096, 0);
            assert_eq!(p.inline_due(0, p.due_at(0), 100_000, 1), 1_000_000);
        }
    }
}
