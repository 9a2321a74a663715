//! The result model: what a run measured, shaped like fio's JSON output.
//!
//! Field names, nesting and units follow fio 3.33's `--output-format=json` so
//! serialising a [`RunResult`] (see `report::json`) gives a document fio tooling
//! reads. What fio has no key for lives under `iolab` objects ([`JobExtras`],
//! [`RunExtras`]). Build jobs with [`JobResult::from_recorder`].
//!
//! Every type here is `Deserialize` too: a saved document reads back into the
//! same [`RunResult`]. Names kept as `&'static str` elsewhere (a hot path
//! fills them) read back through their fixed sets; those here are `String`.

use std::convert::Infallible;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::completion::CompletionStats;
use crate::completion::adaptive::Decision;
use crate::device::BackendStats;
use crate::device::null::FaultCounts;
use crate::measure::clock::ClockCheck;
use crate::measure::cpu::{DiskUtil, SystemDelta, ThreadUsage};
use crate::measure::recorder::{self, DEPTH_BUCKETS, DIRS, LAT_BUCKETS, LatHist, Recorder};
use crate::report::jsonplus::FioBins;
pub use crate::report::raw::JobLogs;
use crate::report::raw::{Accounting, PlacementReport};
use crate::report::trace::JobTrace;
use crate::request::{Class, Op};
use crate::sched::SchedStats;
use crate::workload::verify::VerifyStats;

mod build;
pub use build::apply_group_aggregates;

/// What iolab writes as `"fio version"`: its own name and version, never fio's,
/// so readers can tell the producer apart while parsing the same schema.
pub const FIO_VERSION_STRING: &str = concat!("iolab-", env!("CARGO_PKG_VERSION"));

/// The version of the run document's schema (`docs/schema/run.schema.json`,
/// docs/json.md), written as `iolab.schema_version`: MAJOR.MINOR.PATCH, where a
/// new optional key raises MINOR and a key removed, renamed or retyped raises
/// MAJOR.
pub const RUN_SCHEMA_VERSION: &str = "1.3.0";

/// Ordered string map (fio prints options in the order given).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OrderedMap(pub Vec<(String, String)>);

impl Serialize for OrderedMap {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for OrderedMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(PairsVisitor(
            Ok::<_, Infallible>,
            "an object of strings",
            PhantomData,
        ))
        .map(OrderedMap)
    }
}

/// The JSON Schema of an object whose values all have `value`'s schema (the
/// ordered maps here serialise as plain objects), keys matching `keys` if given.
fn object_of(description: &str, keys: Option<&str>, value: serde_json::Value) -> schemars::Schema {
    let mut o = serde_json::json!({
        "type": "object",
        "description": description,
        "additionalProperties": value,
    });
    if let Some(pattern) = keys {
        o["propertyNames"] = serde_json::json!({ "pattern": pattern });
    }
    schemars::Schema::try_from(o).expect("an object is a schema")
}

macro_rules! object_schema {
    ($t:ty, $name:literal, $desc:expr, $keys:expr, $value:tt) => {
        impl schemars::JsonSchema for $t {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                $name.into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                object_of($desc, $keys, serde_json::json!($value))
            }
        }
    };
}

object_schema!(
    OrderedMap,
    "OrderedMap",
    "Options as written, in the order given: name -> value.",
    None,
    { "type": "string" }
);
object_schema!(
    Percentiles,
    "Percentiles",
    "Percentile (fio's \"%f\" key, e.g. \"99.000000\") -> latency in ns.",
    Some("^[0-9]+\\.[0-9]{6}$"),
    { "type": "integer", "minimum": 0 }
);
object_schema!(
    Dist,
    "Dist",
    "Label (fio's bucket name) -> percent of requests.",
    None,
    { "type": "number" }
);
object_schema!(
    crate::report::jsonplus::FioBins,
    "FioBins",
    "fio's json+ latency bins: latency in ns -> requests in that bin.",
    Some("^[0-9]+$"),
    { "type": "integer", "minimum": 0 }
);

/// `iolab.engine`'s schema: [`JobEngine`], or `{}` for a result built without
/// an engine run ([`engine_or_empty`]).
fn engine_or_empty_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let engine = g.subschema_for::<JobEngine>();
    schemars::json_schema!({
        "anyOf": [engine, { "type": "object", "maxProperties": 0 }]
    })
}

/// Reads a JSON object into its `(key, value)` pairs in document order, the
/// key turned into `K` by the closure (the maps here are ordered lists, which
/// serde's own map types would reorder or deduplicate).
struct PairsVisitor<V, F>(F, &'static str, PhantomData<V>);

impl<'de, K, V, E, F> Visitor<'de> for PairsVisitor<V, F>
where
    V: Deserialize<'de>,
    F: Fn(String) -> Result<K, E>,
    E: fmt::Display,
{
    type Value = Vec<(K, V)>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.1)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(m.size_hint().unwrap_or(0));
        while let Some((k, v)) = m.next_entry::<String, V>()? {
            out.push(((self.0)(k).map_err(de::Error::custom)?, v));
        }
        Ok(out)
    }
}

/// Percentile -> value (ns), serialised with fio's `"%f"` keys ("99.000000").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Percentiles(pub Vec<(f64, u64)>);

impl Serialize for Percentiles {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (p, v) in &self.0 {
            m.serialize_entry(&format!("{p:.6}"), v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Percentiles {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let key = |k: String| {
            k.parse::<f64>()
                .ok()
                .filter(|p| (0.0..=100.0).contains(p))
                .ok_or_else(|| format!("percentile key `{k}` is not a number from 0 to 100"))
        };
        d.deserialize_map(PairsVisitor(
            key,
            "an object of percentile -> ns",
            PhantomData,
        ))
        .map(Percentiles)
    }
}

/// Labelled percentages (fio's `iodepth_level`, `latency_ns`, ...).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dist(pub Vec<(String, f64)>);

impl Serialize for Dist {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Dist {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(PairsVisitor(
            Ok::<_, Infallible>,
            "an object of label -> percent",
            PhantomData,
        ))
        .map(Dist)
    }
}

/// fio's latency object: `{min max mean stddev N [percentile]}`, in ns.
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize,
)]
#[non_exhaustive]
pub struct LatStats {
    /// Smallest sample, ns.
    pub min: u64,
    /// Largest sample, ns.
    pub max: u64,
    /// Mean, ns.
    pub mean: f64,
    /// Standard deviation, ns.
    pub stddev: f64,
    #[serde(rename = "N")]
    /// Samples (fio's `N`).
    pub n: u64,
    /// Present where fio prints it: clat and sync latency with samples.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentile: Option<Percentiles>,
    /// fio's json+ latency bins (clat by default; slat and lat with their
    /// `*_percentiles`, see [`JobResult::choose_percentiles`]); `report::json`
    /// drops them for plain json, as fio does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bins: Option<FioBins>,
}

impl LatStats {
    /// Moments only.
    pub fn of(h: &LatHist) -> LatStats {
        LatStats {
            min: h.min(),
            max: h.max(),
            mean: h.mean(),
            stddev: h.stddev(),
            n: h.count(),
            percentile: None,
            bins: None,
        }
    }

    /// Moments and, when there are samples, the percentiles of `list` as
    /// fio reports them: read from fio's bins (`FioBins::percentile`), so
    /// each is the name of the fio bin it falls in (within 1/128 of the
    /// true value), the figure fio would print for the same latencies.
    pub fn with_percentiles(h: &LatHist, list: &[f64]) -> LatStats {
        let mut s = LatStats::of(h);
        if list.is_empty() {
            return s;
        }
        if let Some(b) = FioBins::of(h) {
            let n = h.count();
            s.percentile = Some(Percentiles(
                list.iter()
                    .map(|&p| (p, b.percentile(p, n).unwrap_or(h.max())))
                    .collect(),
            ));
        }
        s
    }

    /// Moments and iolab's own percentiles of `list`, from its finer
    /// histogram (within 0.1 % of the true value).
    pub fn with_own_percentiles(h: &LatHist, list: &[f64]) -> LatStats {
        let mut s = LatStats::of(h);
        if h.count() > 0 && !list.is_empty() {
            s.percentile = Some(Percentiles(
                list.iter().map(|&p| (p, h.percentile(p))).collect(),
            ));
        }
        s
    }
}

/// One direction (read, write, trim) of a job, fio's keys.
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize,
)]
#[non_exhaustive]
pub struct DirResult {
    /// Bytes transferred.
    pub io_bytes: u64,
    /// KiB transferred.
    pub io_kbytes: u64,
    /// Bytes per second over `runtime`.
    pub bw_bytes: u64,
    /// KiB per second.
    pub bw: u64,
    /// Requests per second over `runtime`.
    pub iops: f64,
    /// Milliseconds.
    pub runtime: u64,
    /// Requests completed.
    pub total_ios: u64,
    /// Requests that transferred fewer bytes than asked.
    pub short_ios: u64,
    /// Requests dropped (always 0: iolab drops none).
    pub drop_ios: u64,
    /// Submission latency: from issue to the backend accepting it (fio's slat).
    pub slat_ns: LatStats,
    /// Completion latency: from submission to completion seen (fio's clat).
    pub clat_ns: LatStats,
    /// Total latency: slat plus clat (fio's lat).
    pub lat_ns: LatStats,
    /// Latency per I/O priority, as fio writes it: only for jobs with command
    /// priorities (`cmdprio_percentage`, `cmdprio_bssplit`) and only when at
    /// least two priorities saw I/O in this direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prios: Option<Vec<PrioResult>>,
    /// Per-interval bandwidth samples, KiB/s.
    pub bw_min: u64,
    /// Highest per-interval bandwidth sample, KiB/s.
    pub bw_max: u64,
    /// Mean sample bandwidth as percent of the group's aggregate bandwidth.
    pub bw_agg: f64,
    /// Mean of the bandwidth samples, KiB/s.
    pub bw_mean: f64,
    /// Standard deviation of the bandwidth samples, KiB/s.
    pub bw_dev: f64,
    /// Bandwidth samples taken.
    pub bw_samples: u64,
    /// Lowest per-interval IOPS sample.
    pub iops_min: u64,
    /// Highest per-interval IOPS sample.
    pub iops_max: u64,
    /// Mean of the IOPS samples.
    pub iops_mean: f64,
    /// Standard deviation of the IOPS samples.
    pub iops_stddev: f64,
    /// IOPS samples taken.
    pub iops_samples: u64,
    /// Left out of the reports: `unified_rw_reporting=mixed` reports only
    /// the `mixed` sum (`report::unified`).
    #[serde(skip)]
    pub hidden: bool,
}

impl DirResult {
    /// For serde: a hidden direction has no key in the JSON.
    pub fn is_hidden(&self) -> bool {
        self.hidden
    }
}

/// One entry of fio's `prios`: the latency of one direction's I/Os issued
/// with one priority. The series is total latency (`lat_ns`) when the job
/// sets `lat_percentiles=1`, completion latency (`clat_ns`) otherwise.
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize,
)]
pub struct PrioResult {
    /// The I/O priority class (ioprio_set(2): 0 none, 1 realtime, 2
    /// best-effort, 3 idle).
    pub prioclass: u32,
    /// The priority level within the class (0-7).
    pub prio: u32,
    /// Completion latency of these I/Os (without `lat_percentiles`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clat_ns: Option<LatStats>,
    /// Total latency of these I/Os (with `lat_percentiles=1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat_ns: Option<LatStats>,
}

impl PrioResult {
    /// The series it carries, whichever it is.
    pub fn stats(&self) -> Option<&LatStats> {
        self.clat_ns.as_ref().or(self.lat_ns.as_ref())
    }

    /// The series' name in fio's text ("clat" or "lat").
    pub fn kind(&self) -> &'static str {
        if self.lat_ns.is_some() { "lat" } else { "clat" }
    }
}

/// fio's `sync` object: fsync latency.
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize,
)]
#[non_exhaustive]
pub struct SyncResult {
    /// fsyncs issued.
    pub total_ios: u64,
    /// fsync latency, ns.
    pub lat_ns: LatStats,
    /// Left out, as fio leaves it out under `unified_rw_reporting=mixed`.
    #[serde(skip)]
    pub hidden: bool,
}

impl SyncResult {
    /// For serde: a hidden `sync` has no key in the JSON.
    pub fn is_hidden(&self) -> bool {
        self.hidden
    }
}

/// Latency per request class (study 003), fio's `prios[]` idea keyed by class.
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize,
)]
#[non_exhaustive]
pub struct ClassResult {
    /// The class's name (`read`, `syncwrite`, `readahead`, `asyncwrite`).
    pub class: String,
    /// Requests of the class completed.
    pub ios: u64,
    /// Bytes of the class transferred.
    pub bytes: u64,
    /// The class's completion latency, ns, with iolab's own percentiles
    /// (finer than fio's bins).
    pub clat_ns: LatStats,
}

/// iolab's own completion-latency percentiles per direction, from its finer
/// histogram (within 0.1 %); the fio objects' `percentile` are fio's, read
/// from fio's bins. A direction without I/O has none.
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize,
)]
pub struct OwnPercentiles {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<Percentiles>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<Percentiles>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trim: Option<Percentiles>,
}

impl OwnPercentiles {
    /// A direction's by fio's name (`read`, `write`, `trim`).
    pub fn get(&self, dir: &str) -> Option<&Percentiles> {
        match dir {
            "read" => self.read.as_ref(),
            "write" => self.write.as_ref(),
            "trim" => self.trim.as_ref(),
            _ => None,
        }
    }
}

/// Completions per interval, for IOPS/bandwidth-over-time charts.
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize,
)]
#[non_exhaustive]
pub struct IopsLog {
    /// Length of one interval, ms.
    pub interval_ms: u64,
    /// `[read, write, trim, sync]` completions per interval.
    pub ios: Vec<[u64; DIRS]>,
    /// `[read, write, trim, sync]` bytes per interval.
    pub bytes: Vec<[u64; DIRS]>,
    /// Completions past the log's fixed capacity (not in `ios`).
    pub dropped: u64,
}

/// How the latency histograms were kept, so readers know the error bound.
#[derive(schemars::JsonSchema, Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct HistogramInfo {
    /// The histogram implementation (`hdrhistogram`).
    pub kind: String,
    /// Significant decimal digits kept per value.
    pub significant_digits: u8,
    /// Largest relative error of a recorded value (from `significant_digits`).
    pub max_relative_error: f64,
    /// Lowest value the histograms resolve, ns.
    pub lowest_ns: u64,
    /// Highest value the histograms record, ns.
    pub highest_ns: u64,
    /// Samples above `highest_ns`, recorded as `highest_ns`.
    pub clamped: u64,
}

impl HistogramInfo {
    /// How this build keeps its histograms, with `clamped` samples above the top.
    pub fn current(clamped: u64) -> HistogramInfo {
        HistogramInfo {
            kind: "hdrhistogram".to_string(),
            significant_digits: recorder::SIGFIG,
            max_relative_error: recorder::RELATIVE_ERROR,
            lowest_ns: recorder::LOWEST_NS,
            highest_ns: recorder::HIGHEST_NS,
            clamped,
        }
    }
}

/// What fio has no key for, per job.
#[derive(schemars::JsonSchema, Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct JobExtras {
    /// The job's number among the run's jobs (fio's job order).
    pub jobnum: u32,
    /// Workers folded into this result (numjobs / group_reporting).
    pub workers: u32,
    /// The measured time, ms: the longest worker's. fio's `job_runtime` is
    /// the workers' times summed; this is the wall span the logs cover.
    #[serde(default)]
    pub runtime_ms: u64,
    /// The process id that ran the job.
    pub pid: u32,
    /// How the latency histograms were kept (their error bound).
    pub histogram: HistogramInfo,
    /// Failed requests per direction `[read, write, trim, sync]`.
    pub errors: [u64; DIRS],
    /// Classes that saw requests.
    pub classes: Vec<ClassResult>,
    /// iolab's own completion-latency percentiles per direction (finer than
    /// the fio objects' `percentile`, which fio's bins give).
    #[serde(default)]
    pub clat_percentile: OwnPercentiles,
    /// Completions and bytes per interval.
    pub iops_log: IopsLog,
    /// CPU time of the job's worker threads.
    pub cpu: ThreadUsage,
    /// How the run actually went (`report::assemble` fills it from the engine's
    /// results); serialised as `{}` for a result built without an engine run.
    #[serde(
        serialize_with = "engine_or_empty",
        deserialize_with = "engine_unless_empty"
    )]
    #[schemars(schema_with = "engine_or_empty_schema")]
    pub engine: Option<JobEngine>,
}

fn engine_or_empty<S: Serializer>(e: &Option<JobEngine>, s: S) -> Result<S::Ok, S::Error> {
    match e {
        Some(e) => e.serialize(s),
        None => s.serialize_map(Some(0))?.end(),
    }
}

/// The reverse of [`engine_or_empty`]: `{}` is a result built without an engine run.
fn engine_unless_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Option<JobEngine>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    if v.as_object().is_some_and(|m| m.is_empty()) {
        return Ok(None);
    }
    JobEngine::deserialize(v)
        .map(Some)
        .map_err(de::Error::custom)
}

/// `iolab.engine`: how one job's I/O was actually done, beyond fio's keys:
/// backend and completion model with what they observed, the scheduler, request
/// accounting and errors, verification, injected faults and the block trace.
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize,
)]
#[non_exhaustive]
pub struct JobEngine {
    /// The device backend that did the I/O (fio's `ioengine` name); a
    /// group_reporting report over jobs of several backends names each,
    /// comma-separated, in job order (`stages` holds each one's share).
    pub backend: String,
    /// The completion model the job ran with (`poll`, `interrupt`, ...);
    /// several comma-separated as `backend`.
    pub completion_model: String,
    /// Polls, sleeps, spin time... summed over the job's workers.
    pub completion: CompletionStats,
    /// `completion` in a sentence (what text prints).
    pub completion_summary: String,
    /// What a hybrid polling policy did (hybrid-uring, pas, dpas), in a sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_summary: Option<String>,
    /// What the backend counted (submit calls, reaps, ...).
    pub backend_stats: BackendStats,
    /// The host scheduler (`noop`, `prio`, `laq`); several comma-separated
    /// as `backend`.
    pub scheduler: String,
    /// What the host scheduler counted per request class.
    pub scheduler_stats: SchedStats,
    /// Adaptive's choice per size class (adaptive only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adaptive_decisions: Vec<Decision>,
    /// Streams that shared the worker (only when more than one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_worker_streams: Option<usize>,
    /// The run was stopped (SIGINT) before the job finished.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// fio's `total_err`: failed requests plus verification failures.
    pub total_err: u64,
    /// fio's `first_error`: the first errno, 0 if none.
    pub first_error: i32,
    /// fio's `continue_on_error` as the job set it.
    pub continue_on_error: String,
    /// Requests submitted, completed, failed, timed out.
    pub accounting: Accounting,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Data verification (jobs that verify only).
    pub verify: Option<VerifyReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Faults the emulated device injected (null device with fault options only).
    pub faults_injected: Option<FaultCounts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// The error that ended the job early, in words.
    pub error_message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// The per-request trace (`--trace` runs only).
    pub trace: Option<JobTrace>,
    /// The latency-target depth search (`latency_target=` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat_target: Option<crate::report::lat_target::LatTargetReport>,
    /// What the job's per-I/O logs cost (jobs writing `write_lat_log` and
    /// friends only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_logs: Option<JobLogs>,
    /// `group_reporting` over jobs that ran different stages: one entry per
    /// backend, completion model and scheduler, in job order, with its jobs
    /// and completion counters (the ones above are their sums). Empty when
    /// every stream of the report ran the same (one job's clones, say).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageShare>,
}

/// One set of stages (backend, completion model, scheduler) within a report
/// that merged jobs which ran different ones (`iolab.engine.stages`).
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize,
)]
pub struct StageShare {
    /// The backend (fio's `ioengine` name).
    pub backend: String,
    /// The completion model.
    pub completion_model: String,
    /// The host scheduler.
    pub scheduler: String,
    /// The jobs (section names) whose streams ran these stages.
    pub jobs: Vec<String>,
    /// Their workers' completion counters.
    pub completion: CompletionStats,
    /// `completion` in a sentence.
    pub completion_summary: String,
}

/// Data verification of a job, with its first failure in words.
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize,
)]
#[non_exhaustive]
pub struct VerifyReport {
    #[serde(flatten)]
    /// Blocks verified and failures found.
    pub stats: VerifyStats,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// The first verification failure, in words.
    pub first_failure_message: Option<String>,
}

/// One job (or group of workers) in fio's JSON shape.
#[derive(schemars::JsonSchema, Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct JobResult {
    /// The job's name (its section in the job file).
    pub jobname: String,
    /// The job's reporting group (fio's numbering: `stonewall` and
    /// `new_group` each start the next).
    pub groupid: u32,
    /// First error (errno), 0 if none.
    pub error: i32,
    /// Seconds left when the report was written: always 0, the job is done.
    pub eta: u64,
    /// Wall seconds since the job started.
    pub elapsed: u64,
    /// The options the job set with a value, in order, as given; left out
    /// when there are none, as fio leaves it out.
    #[serde(
        rename = "job options",
        default,
        skip_serializing_if = "OrderedMap::is_empty"
    )]
    pub job_options: OrderedMap,
    #[serde(default, skip_serializing_if = "DirResult::is_hidden")]
    /// Reads.
    pub read: DirResult,
    #[serde(default, skip_serializing_if = "DirResult::is_hidden")]
    /// Writes.
    pub write: DirResult,
    /// Trims (`rw=trim` and friends): discards on a block device, punched
    /// holes in a file.
    #[serde(default, skip_serializing_if = "DirResult::is_hidden")]
    pub trim: DirResult,
    #[serde(default, skip_serializing_if = "SyncResult::is_hidden")]
    /// fsyncs.
    pub sync: SyncResult,
    /// fio's `mixed` direction: reads, writes and trims summed
    /// (`unified_rw_reporting=mixed` or `both`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mixed: Option<DirResult>,
    /// Milliseconds.
    pub job_runtime: u64,
    /// User CPU, percent of the job's runtime.
    pub usr_cpu: f64,
    /// System CPU, percent of the job's runtime.
    pub sys_cpu: f64,
    /// Context switches.
    pub ctx: u64,
    /// Major page faults.
    pub majf: u64,
    /// Minor page faults.
    pub minf: u64,
    /// Queue depth over time: percent of the time at each depth bucket.
    pub iodepth_level: Dist,
    /// Requests per submit call: percent of calls per bucket.
    pub iodepth_submit: Dist,
    /// Completions per reap call: percent of calls per bucket.
    pub iodepth_complete: Dist,
    /// Latency distribution under 1 us: percent of requests per ns bucket.
    pub latency_ns: Dist,
    /// Latency distribution, percent of requests per us bucket.
    pub latency_us: Dist,
    /// Latency distribution, percent of requests per ms bucket.
    pub latency_ms: Dist,
    /// The queue depth the latency-target search settled on (the job's iodepth without one).
    pub latency_depth: u32,
    /// fio's latency-target search (`latency_target=`, ns; window in us); without
    /// one, fio's "off" values and `latency_depth` = iodepth.
    pub latency_target: u64,
    /// The percentile the latency target applies to (`latency_percentile`).
    pub latency_percentile: f64,
    /// The latency target's window, us (`latency_window`).
    pub latency_window: u64,
    /// fio's steady-state result (jobs with `steadystate=` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steadystate: Option<crate::report::steady::SteadyReport>,
    /// What fio has no key for: iolab's own figures for the job.
    pub iolab: JobExtras,
    /// How the text report prints this job's figures (`significant_figures`,
    /// `unit_base`); not part of fio's JSON.
    #[serde(skip)]
    pub style: TextStyle,
}

/// fio's `significant_figures` and `unit_base=1` (bandwidth in bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextStyle {
    pub sig_figs: usize,
    pub bits: bool,
}

impl Default for TextStyle {
    fn default() -> Self {
        TextStyle {
            sig_figs: 4,
            bits: false,
        }
    }
}

/// Who ran and what it measured, besides the recorder.
#[derive(Clone, Debug)]
pub struct JobMeta {
    pub name: String,
    pub groupid: u32,
    pub jobnum: u32,
    pub workers: u32,
    pub pid: u32,
    /// Options as the user wrote them (fio's `job options`).
    pub options: Vec<(String, String)>,
    pub iodepth: u32,
    pub percentile_list: Vec<f64>,
    /// Measured time (after ramp_time), ns; with several workers, the
    /// longest.
    pub runtime_ns: u64,
    /// fio's `job_runtime`: the workers' measured times summed (fio adds its
    /// threads' `total_run_time` under group_reporting), so `usr_cpu` times
    /// it is the group's CPU time, as with fio.
    pub job_runtime_ns: u64,
    /// Wall time since the job started (including ramp), ns.
    pub elapsed_ns: u64,
}

/// What fio has no key for, per run.
#[derive(schemars::JsonSchema, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct RunExtras {
    /// The schema this document follows (`RUN_SCHEMA_VERSION`); empty when
    /// read from a document written before the field existed.
    #[serde(default)]
    pub schema_version: String,
    /// iolab's version.
    pub version: String,
    /// Cost and resolution of the engine clock, measured at start.
    pub clock: Option<ClockCheck>,
    /// System-wide deltas over the run: /proc/stat, /proc/interrupts, cpuidle.
    pub system: Option<SystemDelta>,
    /// Free-form run-level facts (placement, tracing, warnings), in order.
    pub notes: OrderedMap,
    /// Where each group's threads ran, for groups that chose CPUs or ran
    /// co-runners (`placement=`, `cpus_allowed=`, `cpumask=`, `corunners=`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement: Vec<PlacementReport>,
}

/// One run: all jobs, disks and run-level extras.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[non_exhaustive]
pub struct RunResult {
    #[serde(rename = "fio version")]
    /// The producer and its version: `iolab-<version>`, never fio's (fio's `fio version` key).
    pub fio_version: String,
    /// Unix seconds at the end of the run.
    pub timestamp: u64,
    /// Milliseconds since the Unix epoch at the end of the run.
    pub timestamp_ms: u64,
    /// Local time, ctime(3) style.
    pub time: String,
    /// fio prints this only when the job file has a `[global]` section.
    #[serde(
        rename = "global options",
        default,
        skip_serializing_if = "OrderedMap::is_empty"
    )]
    pub global_options: OrderedMap,
    /// One result per job clone (per reporting group with `group_reporting`).
    pub jobs: Vec<JobResult>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// Disk utilisation of the block devices the run used (fio's `disk_util`).
    pub disk_util: Vec<DiskUtil>,
    /// What fio has no key for: iolab's run-level figures.
    pub iolab: RunExtras,
}

impl OrderedMap {
    /// True when no global options were given.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl RunResult {
    /// A run that ends now (timestamps taken from the wall clock).
    pub fn new(jobs: Vec<JobResult>, disk_util: Vec<DiskUtil>, iolab: RunExtras) -> RunResult {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        RunResult {
            fio_version: FIO_VERSION_STRING.to_string(),
            timestamp: now.as_secs(),
            timestamp_ms: now.as_millis() as u64,
            time: ctime(now.as_secs() as i64),
            global_options: OrderedMap::default(),
            jobs,
            disk_util,
            iolab: RunExtras {
                schema_version: RUN_SCHEMA_VERSION.to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                ..iolab
            },
        }
    }
}

/// `Mon Nov 23 07:05:03 2026` in local time, as ctime(3) without the newline.
pub fn ctime(unix_s: i64) -> String {
    let t: libc::time_t = unix_s as libc::time_t;
    // SAFETY: tm is plain data; localtime_r fills it from a valid time_t.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call.
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return String::new();
    }
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[tm.tm_wday.rem_euclid(7) as usize],
        MONTHS[tm.tm_mon.rem_euclid(12) as usize],
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        tm.tm_year + 1900
    )
}
