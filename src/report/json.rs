//! fio's JSON output (`--output-format=json` and `json+`).
//!
//! The document is the serialisation of [`RunResult`]: fio 3.33's keys and
//! nesting (checked against real fio by tests/report_golden.rs), plus `iolab`
//! objects at the top level and in each job. `"fio version"` names the producer
//! honestly as `iolab-<version>` ([`FIO_VERSION_STRING`]), so tools that only
//! parse the schema work and tools that check the producer can tell.
//!
//! `json+` is the same document with fio's latency bins (`clat_ns.bins`, and
//! `slat_ns.bins`/`lat_ns.bins` with `slat_percentiles`/`lat_percentiles`, see
//! [`crate::report::jsonplus`]) in each direction that saw I/O; plain `json`
//! leaves them out, as fio does.
//!
//! The document reads back into the same typed value
//! (`serde_json::from_str::<RunResult>`), and renders again to the same text
//! (checked by tests/it/report_readback.rs).
//!
//! [`FIO_VERSION_STRING`]: crate::report::model::FIO_VERSION_STRING

use std::borrow::Cow;

use crate::report::model::RunResult;

/// Pretty-printed JSON document (fio's `json`), newline-terminated.
pub fn render(run: &RunResult) -> String {
    pretty(&without_bins(run))
}

/// Pretty-printed JSON document with fio's latency bins (fio's `json+`).
pub fn render_plus(run: &RunResult) -> String {
    pretty(run)
}

/// The `json` document as a value (for tests and for callers that post-process).
#[cfg(any(test, feature = "testing"))]
pub fn to_value(run: &RunResult) -> serde_json::Value {
    serde_json::to_value(without_bins(run).as_ref()).unwrap_or(serde_json::Value::Null)
}

/// The `json+` document as a value.
#[cfg(any(test, feature = "testing"))]
pub fn to_value_plus(run: &RunResult) -> serde_json::Value {
    serde_json::to_value(run).unwrap_or(serde_json::Value::Null)
}

fn pretty(run: &RunResult) -> String {
    // Serialising plain structs, string-keyed maps and finite numbers cannot fail;
    // non-finite floats become null, which JSON readers accept.
    let mut s = serde_json::to_string_pretty(run).unwrap_or_else(|e| {
        format!("{{\"error\": \"iolab could not serialise the result: {e}\"}}")
    });
    s.push('\n');
    s
}

/// `run` without json+'s bins (borrowed when it has none).
fn without_bins(run: &RunResult) -> Cow<'_, RunResult> {
    let has = run.jobs.iter().any(|j| {
        [&j.read, &j.write, &j.trim]
            .into_iter()
            .chain(j.mixed.as_ref())
            .any(|d| {
                [&d.slat_ns, &d.clat_ns, &d.lat_ns]
                    .iter()
                    .any(|s| s.bins.is_some())
            })
    });
    if !has {
        return Cow::Borrowed(run);
    }
    let mut r = run.clone();
    for j in &mut r.jobs {
        for d in [&mut j.read, &mut j.write, &mut j.trim]
            .into_iter()
            .chain(j.mixed.as_mut())
        {
            for s in [&mut d.slat_ns, &mut d.clat_ns, &mut d.lat_ns] {
                s.bins = None;
            }
        }
    }
    Cow::Owned(r)
}
