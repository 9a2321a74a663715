//! Parsers of the workload options (`job::workload_opts` holds their types;
//! kept apart so the job spec does not import the draft).

use super::draft::Ctx;
use super::error::JobError;
use super::workload_opts::*;

pub(crate) fn sequencer(c: &Ctx) -> Result<bool, JobError> {
    match c.value {
        "sequential" => Ok(false),
        "identical" => Ok(true),
        _ => Err(c.bad(SEQUENCER_VALID)),
    }
}

pub(crate) fn generator(c: &Ctx) -> Result<RandomGenerator, JobError> {
    match c.value {
        "tausworthe" => Ok(RandomGenerator::Tausworthe),
        "tausworthe64" => Ok(RandomGenerator::Tausworthe64),
        "lfsr" => Ok(RandomGenerator::Lfsr),
        _ => Err(c.bad(GENERATOR_VALID)),
    }
}

pub(crate) fn think_count(c: &Ctx) -> Result<ThinkCount, JobError> {
    match c.value {
        "complete" => Ok(ThinkCount::Complete),
        "issue" => Ok(ThinkCount::Issue),
        _ => Err(c.bad(THINK_COUNT_VALID)),
    }
}
