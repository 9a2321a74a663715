//! fio's options about measurement and reporting: how the results are
//! summed (`unified_rw_reporting`), printed (`unit_base`,
//! `significant_figures`), sampled (`bwavgtime`, `iopsavgtime`,
//! `disable_bw_measurement`), whether a job reports at all (`stats`), the
//! disk statistics (`disk_util`), `max_latency`, and how logs are stored
//! (`log_compression`, `log_store_compressed`). Values land in
//! [`ReportOpts`]; `report::` and `measure::` act on them.

use std::time::Duration;

/// fio's `unified_rw_reporting`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Unified {
    /// Reads, writes and trims apart (fio's `none`, `0`).
    #[default]
    None,
    /// Summed into one `mixed` direction only (`mixed`, `1`).
    Mixed,
    /// Apart, followed by the `mixed` sum (`both`, `2`).
    Both,
}

/// What the options of this file set (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ReportOpts {
    pub unified: Unified,
    /// `stats=0`: the job runs but is left out of every report.
    pub stats: bool,
    /// `unit_base=1`: bandwidth in bits per second (fio's N2S_BITPERSEC).
    pub bits: bool,
    /// `significant_figures`: digits of the text output's scaled numbers.
    pub sig_figs: u8,
    /// `bwavgtime` and `iopsavgtime`: the windows the bw/iops samples
    /// ("samples=N" lines) average over, ms.
    pub bw_avg_ms: u32,
    pub iops_avg_ms: u32,
    /// `disable_bw_measurement`: no bandwidth samples (nor their line).
    pub disable_bw: bool,
    /// `disk_util=0`: no disk statistics for this job's devices.
    pub disk_util: bool,
    /// `max_latency` per direction [read, write, trim]; zero = none.
    pub max_latency: [Duration; 3],
    /// `log_compression`: chunk size of compressed logs, bytes (0 = off).
    pub log_compression: u64,
    /// `log_store_compressed`: keep the logs compressed on disk (`.fz`).
    pub log_store_compressed: bool,
}

impl Default for ReportOpts {
    fn default() -> Self {
        ReportOpts {
            unified: Unified::None,
            stats: true,
            bits: false,
            sig_figs: 4,
            bw_avg_ms: 500,
            iops_avg_ms: 500,
            disable_bw: false,
            disk_util: true,
            max_latency: [Duration::ZERO; 3],
            log_compression: 0,
            log_store_compressed: false,
        }
    }
}

pub(crate) const UNIFIED_VALID: &str = "none, mixed or both (0, 1 or 2)";
pub(crate) const UNIT_BASE_VALID: &str = "0 (bytes), 8 (bytes) or 1 (bits)";
pub(crate) const AVG_VALID: &str = "milliseconds, 1 or more (default 500)";

/// fio's rule for `group_reporting`: a job that joins a report may not
/// differ from the earlier jobs of its reporting group in `lat_percentiles`
/// (the report has one set of total-latency percentiles). fio 3.33 refuses
/// the job file with "lat_percentiles in job: NAME differs from group";
/// iolab does too, naming the job it differs from. `earlier`: the jobs
/// before `job`, in order.
pub(crate) fn check_group_percentiles(
    job: &super::JobSpec,
    earlier: &[super::JobSpec],
) -> Result<(), super::error::JobError> {
    if !job.group_reporting || !job.reporting.stats || earlier.is_empty() {
        return Ok(());
    }
    let groups = super::reporting_groups(earlier);
    let last = groups[groups.len() - 1];
    let own = last + u32::from(job.stonewall || job.new_group);
    let differs = earlier
        .iter()
        .zip(&groups)
        .find(|(j, g)| **g == own && j.lat_percentiles.lat != job.lat_percentiles.lat);
    match differs {
        None => Ok(()),
        Some((other, _)) => Err(super::error::JobError::Conflict {
            at: job.origin.0.clone(),
            job: job.name.clone(),
            problem: format!(
                "lat_percentiles differs from job '{}' of its reporting group (group {own}); \
                 with group_reporting the group is one report with one set of percentiles \
                 (fio refuses this too): set lat_percentiles alike in the group, or give the \
                 job new_group",
                other.name
            ),
        }),
    }
}
