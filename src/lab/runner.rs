//! Running jobs for a study: the null-device job studies start from and small
//! statistics. The run-and-reduce calls studies use are `engine::summary`'s
//! (which `iolab probe` shares).

use std::time::Duration;

use crate::job::{
    BlockSizes, CompletionModel, Direction, Engine, JobSpec, NullParams, Pattern, RwMode,
};

/// A QD-`qd` random-read job on the null device.
pub fn null_job(
    name: &str,
    null: NullParams,
    bs: u32,
    qd: u32,
    model: CompletionModel,
    runtime: Duration,
) -> JobSpec {
    JobSpec {
        name: name.to_string(),
        filename: Some(format!("{name}-dev")),
        ioengine: Engine::Null,
        size: Some(1 << 30),
        rw: RwMode {
            pattern: Pattern::Rand,
            dir: Direction::Read,
        },
        bs: [BlockSizes::Fixed(bs), BlockSizes::Fixed(bs)],
        iodepth: qd,
        completion: Some(model),
        runtime: Some(runtime),
        time_based: true,
        backend: crate::job::BackendOptions {
            null,
            ..Default::default()
        },
        ..JobSpec::default()
    }
}

/// Median of a small sample.
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}
