//! The null device's options (fio-style `null_*`), typed, and the checks of
//! them against the rest of the job.

use std::time::Duration;

/// How the null device services queued commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NullOrder {
    /// In arrival order.
    Fifo,
    /// Queued reads before queued writes (UFS/NCQ-like command queue).
    ReadFirst,
}

/// How the null device signals completions to a sleeping host (null_blk's irqmode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IrqMode {
    /// An hrtimer wakes the sleeping thread at the completion time.
    Timer,
    /// A device thread wakes the host across CPUs.
    Thread,
}

/// Service-time distribution of the null device.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub enum LatDist {
    Fixed,
    /// Exponential around the mean (`null_lat`).
    Exp,
    /// Uniform in [lat*(1-j), lat*(1+j)].
    Uniform {
        jitter: f64,
    },
}

/// Fault injection on the null device (issue: reliability).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct NullFaults {
    /// Probability that a command fails with EIO.
    pub error_rate: f64,
    /// Probability that a read returns corrupted data (backing=mem).
    pub corrupt_rate: f64,
    /// Probability that a command never completes.
    pub hang_rate: f64,
    /// Probability of a latency spike, and its extra latency.
    pub spike_rate: f64,
    pub spike_lat: Duration,
    /// Restrict faults to [start, end) byte range of the device.
    pub range: Option<(u64, u64)>,
    /// Stop injecting after this many faults (0 = unlimited).
    pub limit: u64,
}

/// The emulated device's parameters (`null_*` options).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct NullParams {
    /// Fixed part of the service time per command.
    pub lat: Duration,
    /// Size-dependent part: bytes per second per channel (0 = infinite).
    pub bw: u64,
    pub dist: LatDist,
    /// Commands serviced in parallel.
    pub channels: u32,
    /// Device queue depth (commands accepted before `Busy`); 0 = unlimited.
    pub qd: u32,
    pub order: NullOrder,
    /// Keep written data in memory so it can be read back and verified.
    pub backing_mem: bool,
    pub irqmode: IrqMode,
    /// Coalesce interrupts: fire after this many completions (1 = every one) ...
    pub irq_coalesce_count: u32,
    /// ... or once the oldest uncoalesced completion is this old.
    pub irq_coalesce_time: Duration,
    pub faults: NullFaults,
}

impl Default for NullParams {
    fn default() -> Self {
        NullParams {
            lat: Duration::ZERO,
            bw: 0,
            dist: LatDist::Fixed,
            channels: 1,
            qd: 0,
            order: NullOrder::Fifo,
            backing_mem: false,
            irqmode: IrqMode::Timer,
            irq_coalesce_count: 1,
            irq_coalesce_time: Duration::ZERO,
            faults: NullFaults::default(),
        }
    }
}

impl NullParams {
    /// `null_*` options configure this device only.
    pub(crate) fn check_engine(
        &self,
        job: &crate::device::option_facts::JobFacts,
    ) -> Result<(), crate::device::option_facts::OptionError> {
        if job.engine != crate::device::engine::Engine::Null
            && let Some(n) = job.set.iter().find(|n| n.starts_with("null_"))
        {
            return Err(crate::device::option_facts::OptionError::new(
                n,
                format!(
                    "{n} configures the emulated device and needs ioengine=null, but {}",
                    job.uses()
                ),
            ));
        }
        Ok(())
    }

    /// Conflicts among the device's own options.
    pub(crate) fn check(&self) -> Result<(), crate::device::option_facts::OptionError> {
        if self.faults.corrupt_rate > 0.0 && !self.backing_mem {
            return Err(crate::device::option_facts::OptionError::new(
                "null_corrupt_rate",
                "null_corrupt_rate needs null_backing=mem (there is no data to corrupt otherwise)",
            ));
        }
        Ok(())
    }
}
