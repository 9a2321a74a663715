//! JSON Schemas of iolab's documents, generated from the serde types that
//! write them (`schemars`), so a schema describes what is really written.
//! The repository ships them in `docs/schema/` (a test keeps those equal to
//! these); docs/json.md says what each field means and how versions change.

use schemars::generate::SchemaSettings;

use crate::report::model::{RUN_SCHEMA_VERSION, RunResult};
use crate::report::study::{LAB_SCHEMA_VERSION, LabResults};

fn schema_of<T: schemars::JsonSchema>(
    id: &str,
    title: &str,
    version: &str,
    description: &str,
) -> serde_json::Value {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let mut v = generator.into_root_schema_for::<T>().to_value();
    if let Some(o) = v.as_object_mut() {
        o.insert("$id".into(), id.into());
        o.insert("title".into(), title.into());
        o.insert(
            "description".into(),
            format!("{description} Schema version {version} (docs/json.md).").into(),
        );
    }
    v
}

/// The schema of `iolab run --output-format=json` (and `json+`, whose latency
/// bins are optional keys): fio 3.33's document plus the `iolab` objects; the
/// version is in `iolab.schema_version`.
///
/// ```
/// let schema = iolab::schema::run();
/// assert_eq!(schema["title"], "iolab run --output-format=json");
/// assert!(schema["$defs"]["RunExtras"]["properties"]["schema_version"].is_object());
/// ```
pub fn run() -> serde_json::Value {
    schema_of::<RunResult>(
        "https://iolab.invalid/schema/run.schema.json",
        "iolab run --output-format=json",
        RUN_SCHEMA_VERSION,
        "One run: fio's JSON output keys and nesting, with iolab's facts under `iolab` \
         objects (per run and per job).",
    )
}

/// The schema of `results.json`, what `iolab lab` writes and `iolab report`
/// reads; the version is in `schema_version`.
pub fn lab_results() -> serde_json::Value {
    schema_of::<LabResults>(
        "https://iolab.invalid/schema/lab-results.schema.json",
        "iolab lab results.json",
        LAB_SCHEMA_VERSION,
        "The studies one `iolab lab` ran on one machine: tables, charts and published \
         figures beside the measured ones.",
    )
}

/// A schema as shipped: pretty JSON ending in a newline.
pub fn to_text(schema: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(schema).expect("a JSON value serialises");
    s.push('\n');
    s
}
