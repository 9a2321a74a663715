//! Fault injection of the null device: errors, corrupted reads, hangs, latency
//! spikes, decided per command from a seeded PRNG so a run can be replayed.
//!
//! One uniform draw per eligible command picks at most one fault: the unit
//! interval is cut into consecutive bands `[error | corrupt | hang | spike | none]`
//! whose widths are the configured rates. So each kind happens with exactly its
//! configured probability, a command never suffers two faults, and the sum of the
//! rates must be at most 1.

use std::time::Duration;

use super::options::NullFaults;
use super::service::Rng;
use crate::request::Op;

/// Faults injected so far, per kind.
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
pub struct FaultCounts {
    /// Commands completed with -EIO.
    pub errors: u64,
    /// Reads whose returned data had one byte flipped.
    pub corruptions: u64,
    /// Commands that never complete on their own (see `NullDevice::abort`).
    pub hangs: u64,
    /// Commands that got `spike_lat` added to their service time.
    pub spikes: u64,
}

impl FaultCounts {
    /// Faults injected, of every kind.
    pub fn total(&self) -> u64 {
        self.errors + self.corruptions + self.hangs + self.spikes
    }
}

/// What happens to one command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fault {
    None,
    Error,
    /// Flip the byte at this offset within the command's data.
    Corrupt(u32),
    Hang,
    Spike,
}

/// A `null_*` fault option that cannot be honoured; the message names it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum FaultConfigError {
    #[error("{name}={rate}: a probability must be in [0, 1]")]
    NotAProbability { name: &'static str, rate: f64 },
    #[error(
        "null_err_rate + null_corrupt_rate + null_hang_rate + null_spike_rate = {0}: \
         a command gets at most one fault, so the rates must add up to at most 1"
    )]
    SumAboveOne(f64),
    #[error(
        "null_corrupt_rate={0} needs null_backing=mem: without a backing store a read \
         returns no data, so there is nothing to corrupt or verify"
    )]
    CorruptNeedsBacking(f64),
    #[error("null_spike_rate={0} with null_spike_lat=0: give the spike a latency (e.g. 1ms)")]
    SpikeWithoutLatency(f64),
    #[error(
        "null_fault_range={start}-{end}: the start must be below the end (bytes, [start, end))"
    )]
    EmptyRange { start: u64, end: u64 },
}

pub(super) struct FaultInjector {
    /// Upper edges of the error, corrupt, hang and spike bands.
    edges: [f64; 4],
    pub(super) spike_ns: u64,
    range: Option<(u64, u64)>,
    limit: u64,
    counts: FaultCounts,
    rng: Rng,
}

impl FaultInjector {
    /// Checks the configuration; the error names the offending `null_*` option.
    pub(super) fn new(
        f: &NullFaults,
        backing_mem: bool,
        seed: u64,
    ) -> Result<Self, FaultConfigError> {
        let rates = [
            ("null_err_rate", f.error_rate),
            ("null_corrupt_rate", f.corrupt_rate),
            ("null_hang_rate", f.hang_rate),
            ("null_spike_rate", f.spike_rate),
        ];
        for (name, r) in rates {
            if !(0.0..=1.0).contains(&r) {
                return Err(FaultConfigError::NotAProbability { name, rate: r });
            }
        }
        let sum: f64 = rates.iter().map(|r| r.1).sum();
        if sum > 1.0 + 1e-12 {
            return Err(FaultConfigError::SumAboveOne(sum));
        }
        if f.corrupt_rate > 0.0 && !backing_mem {
            return Err(FaultConfigError::CorruptNeedsBacking(f.corrupt_rate));
        }
        if f.spike_rate > 0.0 && f.spike_lat == Duration::ZERO {
            return Err(FaultConfigError::SpikeWithoutLatency(f.spike_rate));
        }
        if let Some((s, e)) = f.range
            && s >= e
        {
            return Err(FaultConfigError::EmptyRange { start: s, end: e });
        }
        let mut edges = [0.0; 4];
        let mut acc = 0.0;
        for (i, (_, r)) in rates.iter().enumerate() {
            acc += r;
            edges[i] = acc;
        }
        Ok(FaultInjector {
            edges,
            spike_ns: u64::try_from(f.spike_lat.as_nanos()).unwrap_or(u64::MAX),
            range: f.range,
            limit: f.limit,
            counts: FaultCounts::default(),
            rng: Rng::new(seed),
        })
    }

    pub(super) fn counts(&self) -> FaultCounts {
        self.counts
    }

    /// Decide the fate of one command (called once per queued command, in order).
    #[inline]
    pub(super) fn decide(&mut self, op: Op, offset: u64, len: u32) -> Fault {
        if self.edges[3] == 0.0 {
            return Fault::None;
        }
        if self.limit != 0 && self.counts.total() >= self.limit {
            return Fault::None;
        }
        if let Some((s, e)) = self.range {
            // A zero-length command (fsync) touches no byte of the range.
            let end = offset.saturating_add(len as u64);
            if len == 0 || end <= s || offset >= e {
                return Fault::None;
            }
        }
        let u = self.rng.next_f64();
        let fault = if u < self.edges[0] {
            Fault::Error
        } else if u < self.edges[1] {
            if op == Op::Read && len > 0 {
                Fault::Corrupt((self.rng.next_u64() % len as u64) as u32)
            } else {
                Fault::None
            }
        } else if u < self.edges[2] {
            Fault::Hang
        } else if u < self.edges[3] {
            Fault::Spike
        } else {
            Fault::None
        };
        match fault {
            Fault::None => {}
            Fault::Error => self.counts.errors += 1,
            Fault::Corrupt(_) => self.counts.corruptions += 1,
            Fault::Hang => self.counts.hangs += 1,
            Fault::Spike => self.counts.spikes += 1,
        }
        fault
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inj(f: NullFaults) -> FaultInjector {
        FaultInjector::new(&f, true, 42).unwrap()
    }

    #[test]
    fn bad_configurations_are_refused_with_the_option_name() {
        let e = |f: NullFaults, mem| FaultInjector::new(&f, mem, 1).err().unwrap().to_string();
        assert!(
            e(
                NullFaults {
                    error_rate: 1.5,
                    ..Default::default()
                },
                true
            )
            .contains("null_err_rate")
        );
        assert!(
            e(
                NullFaults {
                    error_rate: 0.6,
                    hang_rate: 0.6,
                    ..Default::default()
                },
                true
            )
            .contains("at most 1")
        );
        assert!(
            e(
                NullFaults {
                    corrupt_rate: 0.1,
                    ..Default::default()
                },
                false
            )
            .contains("null_backing=mem")
        );
        assert!(
            e(
                NullFaults {
                    spike_rate: 0.1,
                    ..Default::default()
                },
                true
            )
            .contains("null_spike_lat")
        );
        assert!(
            e(
                NullFaults {
                    error_rate: 0.1,
                    range: Some((8, 8)),
                    ..Default::default()
                },
                true
            )
            .contains("null_fault_range")
        );
    }

    #[test]
    fn range_and_limit_are_respected() {
        let mut f = inj(NullFaults {
            error_rate: 1.0,
            range: Some((4096, 8192)),
            limit: 3,
            ..Default::default()
        });
        assert_eq!(f.decide(Op::Read, 0, 4096), Fault::None);
        assert_eq!(f.decide(Op::Read, 8192, 4096), Fault::None);
        assert_eq!(f.decide(Op::Fsync, 0, 0), Fault::None);
        let hits = (0..10)
            .filter(|_| f.decide(Op::Write, 4000, 200) == Fault::Error)
            .count();
        assert_eq!(hits, 3);
        assert_eq!(f.counts().errors, 3);
    }

    #[test]
    fn rates_are_met_and_corruption_only_hits_reads() {
        let mut f = inj(NullFaults {
            error_rate: 0.1,
            corrupt_rate: 0.2,
            hang_rate: 0.05,
            spike_rate: 0.15,
            spike_lat: Duration::from_millis(1),
            ..Default::default()
        });
        let n = 100_000;
        for _ in 0..n {
            if let Fault::Corrupt(p) = f.decide(Op::Read, 0, 512) {
                assert!(p < 512);
            }
        }
        let c = f.counts();
        let near = |got: u64, rate: f64| (got as f64 / n as f64 - rate).abs() < 0.01;
        assert!(near(c.errors, 0.1) && near(c.corruptions, 0.2), "{c:?}");
        assert!(near(c.hangs, 0.05) && near(c.spikes, 0.15), "{c:?}");
        let before = f.counts().corruptions;
        for _ in 0..1000 {
            assert!(!matches!(f.decide(Op::Write, 0, 512), Fault::Corrupt(_)));
        }
        assert_eq!(f.counts().corruptions, before);
    }
}
