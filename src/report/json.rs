//! fio's JSON output (`--output-format=json`).
//!
//! The document is the serialisation of [`RunResult`]: fio 3.33's keys and
//! nesting (checked against real fio by tests/report_golden.rs), plus `iolab`
//! objects at the top level and in each job. `"fio version"` names the producer
//! honestly as `iolab-<version>` ([`FIO_VERSION_STRING`]), so tools that only
//! parse the schema work and tools that check the producer can tell.
//!
//! The document reads back into the same typed value
//! (`serde_json::from_str::<RunResult>`), and renders again to the same text
//! (checked by tests/it/report_readback.rs).
//!
//! [`FIO_VERSION_STRING`]: crate::report::model::FIO_VERSION_STRING

use crate::report::model::RunResult;

/// Pretty-printed JSON document, newline-terminated.
pub fn render(run: &RunResult) -> String {
    // Serialising plain structs, string-keyed maps and finite numbers cannot fail;
    // non-finite floats become null, which JSON readers accept.
    let mut s = serde_json::to_string_pretty(run).unwrap_or_else(|e| {
        format!("{{\"error\": \"iolab could not serialise the result: {e}\"}}")
    });
    s.push('\n');
    s
}

/// The document as a value (for tests and for callers that post-process).
pub fn to_value(run: &RunResult) -> serde_json::Value {
    serde_json::to_value(run).unwrap_or(serde_json::Value::Null)
}
