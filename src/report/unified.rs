//! fio's `unified_rw_reporting`: a job's reads, writes and trims summed into
//! one `mixed` direction. `mixed` (fio's 1) reports only the sum, in place of
//! the directions (JSON: a `mixed` object and no `read`/`write`/`trim`/`sync`;
//! text: a `mixed:` block and a `MIXED:` group line; terse: the sum in the
//! read fields, no write fields); `both` (fio's 2) reports the directions and
//! then the sum.

use crate::job::report_opts::Unified;
use crate::measure::cpu::ThreadUsage;
use crate::measure::recorder::Recorder;
use crate::report::model::{JobMeta, JobResult};

/// Give `jr` its `mixed` direction as `mode` asks, built from the job's
/// recorder `rec` the same way as the directions are (`meta`, `cpu`, the
/// percentile choices).
#[allow(clippy::too_many_arguments)]
pub fn apply(
    jr: &mut JobResult,
    mode: Unified,
    rec: &Recorder,
    meta: &JobMeta,
    cpu: &ThreadUsage,
    pcts: [bool; 3],
    pct_list: &[f64],
    fio_bins: bool,
) {
    if mode == Unified::None {
        return;
    }
    let m = rec.mixed();
    let mut sum = JobResult::from_recorder(meta, &m, cpu);
    sum.choose_percentiles(&m, pcts, pct_list, fio_bins);
    jr.mixed = Some(sum.read);
    if mode == Unified::Mixed {
        jr.read.hidden = true;
        jr.write.hidden = true;
        jr.trim.hidden = true;
        jr.sync.hidden = true;
    }
}
