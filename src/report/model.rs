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
use crate::report::raw::{Accounting, PlacementReport};
use crate::report::trace::JobTrace;
use crate::request::{Class, Op};
use crate::sched::SchedStats;
use crate::workload::verify::VerifyStats;

/// What iolab writes as `"fio version"`: its own name and version, never fio's,
/// so readers can tell the producer apart while parsing the same schema.
pub const FIO_VERSION_STRING: &str = concat!("iolab-", env!("CARGO_PKG_VERSION"));

/// The version of the run document's schema (`docs/schema/run.schema.json`,
/// docs/json.md), written as `iolab.schema_version`: MAJOR.MINOR.PATCH, where a
/// new optional key raises MINOR and a key removed, renamed or retyped raises
/// MAJOR.
pub const RUN_SCHEMA_VERSION: &str = "1.1.0";

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

/// fio's `sync` object: fsync latency.
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize,
)]
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
pub struct JobEngine {
    /// The device backend that did the I/O (fio's `ioengine` name).
    pub backend: String,
    /// The completion model the job ran with (`poll`, `interrupt`, ...).
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
    /// The host scheduler (`noop`, `prio`, `laq`).
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
}

/// Data verification of a job, with its first failure in words.
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize,
)]
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
pub struct JobResult {
    /// The job's name (its section in the job file).
    pub jobname: String,
    /// The job's stonewall group.
    pub groupid: u32,
    /// First error (errno), 0 if none.
    pub error: i32,
    /// Seconds left when the report was written: always 0, the job is done.
    pub eta: u64,
    /// Wall seconds since the job started.
    pub elapsed: u64,
    #[serde(rename = "job options")]
    /// The options the job set, in order, as given.
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

const DEPTH_LABELS: [&str; DEPTH_BUCKETS] = ["1", "2", "4", "8", "16", "32", ">=64"];
const BATCH_LABELS: [&str; DEPTH_BUCKETS] = ["0", "4", "8", "16", "32", "64", ">=64"];
const LAT_LABELS: [&str; 10] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
];

fn pct(v: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        100.0 * v as f64 / total as f64
    }
}

fn dist(labels: &[&str], counts: &[u64], total: u64) -> Dist {
    Dist(
        labels
            .iter()
            .zip(counts)
            .map(|(l, &c)| (l.to_string(), pct(c, total)))
            .collect(),
    )
}

/// min, max, mean, sample stddev of per-interval values.
fn sample_stats(v: &[f64]) -> (u64, u64, f64, f64) {
    if v.is_empty() {
        return (0, 0, 0.0, 0.0);
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let dev = if v.len() > 1 {
        (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = v.iter().cloned().fold(0.0, f64::max);
    (min as u64, max as u64, mean, dev)
}

impl DirResult {
    fn build(rec: &Recorder, dir: usize, meta: &JobMeta, pct_list: &[f64]) -> DirResult {
        let d = &rec.dirs[dir];
        if d.total_ios == 0 && d.io_bytes == 0 {
            return DirResult::default();
        }
        let runtime_ms = meta.runtime_ns.div_ceil(1_000_000).max(1);
        let bw_bytes = d.io_bytes * 1000 / runtime_ms;
        // fio's samples: one per bwavgtime (iopsavgtime) window, full
        // windows only (the trailing partial one would understate the rate).
        let iv = rec.log.interval_ns();
        let slots = rec.log.slots();
        let w = rec.windows;
        let windows = |window_ns: u64, bytes: bool, scale: f64| -> Vec<f64> {
            let per = (window_ns / iv).max(1) as usize;
            let full = (meta.runtime_ns / (per as u64 * iv)) as usize;
            let per_s = 1e9 / (per as u64 * iv) as f64;
            (0..full)
                .map(|w| {
                    let n: u64 = (w * per..(w + 1) * per)
                        .map(|i| {
                            let s = slots.get(i).copied().unwrap_or_default();
                            if bytes { s.bytes[dir] } else { s.ios[dir] }
                        })
                        .sum();
                    n as f64 * per_s / scale
                })
                .collect()
        };
        let bws = if w.no_bw {
            Vec::new()
        } else {
            windows(w.bw_ns, true, 1024.0)
        };
        let iops = windows(w.iops_ns, false, 1.0);
        let (bw_min, bw_max, bw_mean, bw_dev) = sample_stats(&bws);
        let (iops_min, iops_max, iops_mean, iops_stddev) = sample_stats(&iops);
        let bw_kib = bw_bytes as f64 / 1024.0;
        DirResult {
            io_bytes: d.io_bytes,
            io_kbytes: d.io_bytes / 1024,
            bw_bytes,
            bw: bw_bytes / 1024,
            iops: d.total_ios as f64 * 1000.0 / runtime_ms as f64,
            runtime: runtime_ms,
            total_ios: d.total_ios,
            short_ios: d.short_ios,
            drop_ios: d.drop_ios,
            slat_ns: LatStats::of(&d.slat),
            clat_ns: LatStats::with_percentiles(&d.clat, pct_list),
            lat_ns: LatStats::of(&d.lat),
            bw_min,
            bw_max,
            bw_agg: if bws.is_empty() || bw_kib == 0.0 {
                0.0
            } else {
                (bw_mean * 100.0 / bw_kib).min(100.0)
            },
            bw_mean,
            bw_dev,
            bw_samples: bws.len() as u64,
            iops_min,
            iops_max,
            iops_mean,
            iops_stddev,
            iops_samples: iops.len() as u64,
            hidden: false,
        }
    }
}

impl JobResult {
    /// Build a job's result from its (possibly merged) recorder and the summed
    /// rusage delta of its workers.
    pub fn from_recorder(meta: &JobMeta, rec: &Recorder, cpu: &ThreadUsage) -> JobResult {
        let pl = &meta.percentile_list;
        let sync = &rec.dirs[Op::Fsync.dir()];
        let cpu_base = (meta.runtime_ns as f64 * meta.workers.max(1) as f64).max(1.0);
        // fio's latency distribution counts reads, writes and trims.
        let rw_ios: u64 = [Op::Read, Op::Write, Op::Trim]
            .iter()
            .map(|op| rec.dirs[op.dir()].total_ios)
            .sum();
        let lb = &rec.lat_buckets;
        let mut lat_ms = dist(&LAT_LABELS, &lb[20..30], rw_ios);
        lat_ms.0.push(("2000".into(), pct(lb[30], rw_ios)));
        lat_ms
            .0
            .push((">=2000".into(), pct(lb[LAT_BUCKETS - 1], rw_ios)));
        let depth_total: u64 = rec.depth.iter().sum();
        let submit_total: u64 = rec.submit.iter().sum();
        let complete_total: u64 = rec.complete.iter().sum();
        let log = &rec.log;
        JobResult {
            jobname: meta.name.clone(),
            groupid: meta.groupid,
            error: rec.first_error,
            eta: 0,
            elapsed: meta.elapsed_ns.div_ceil(1_000_000_000),
            job_options: OrderedMap(meta.options.clone()),
            read: DirResult::build(rec, 0, meta, pl),
            write: DirResult::build(rec, 1, meta, pl),
            trim: DirResult::build(rec, Op::Trim.dir(), meta, pl),
            sync: SyncResult {
                total_ios: sync.total_ios,
                lat_ns: LatStats::with_percentiles(&sync.lat, pl),
                hidden: false,
            },
            mixed: None,
            style: TextStyle::default(),
            job_runtime: meta.job_runtime_ns / 1_000_000,
            usr_cpu: 100.0 * cpu.user_ns as f64 / cpu_base,
            sys_cpu: 100.0 * cpu.sys_ns as f64 / cpu_base,
            ctx: cpu.ctx(),
            majf: cpu.majflt,
            minf: cpu.minflt,
            iodepth_level: dist(&DEPTH_LABELS, &rec.depth, depth_total),
            iodepth_submit: dist(&BATCH_LABELS, &rec.submit, submit_total),
            iodepth_complete: dist(&BATCH_LABELS, &rec.complete, complete_total),
            latency_ns: dist(&LAT_LABELS, &lb[0..10], rw_ios),
            latency_us: dist(&LAT_LABELS, &lb[10..20], rw_ios),
            latency_ms: lat_ms,
            latency_depth: meta.iodepth,
            latency_target: 0,
            latency_percentile: 100.0,
            latency_window: 0,
            steadystate: None,
            iolab: JobExtras {
                jobnum: meta.jobnum,
                workers: meta.workers,
                runtime_ms: meta.runtime_ns / 1_000_000,
                pid: meta.pid,
                histogram: HistogramInfo::current(rec.clamped()),
                errors: std::array::from_fn(|d| rec.dirs[d].errors),
                classes: Class::ALL
                    .iter()
                    .zip(&rec.classes)
                    .filter(|(_, c)| c.ios > 0)
                    .map(|(k, c)| ClassResult {
                        class: k.name().to_string(),
                        ios: c.ios,
                        bytes: c.bytes,
                        clat_ns: LatStats::with_own_percentiles(&c.clat, pl),
                    })
                    .collect(),
                clat_percentile: {
                    let own = |d: usize| LatStats::with_own_percentiles(&rec.dirs[d].clat, pl);
                    OwnPercentiles {
                        read: own(0).percentile,
                        write: own(1).percentile,
                        trim: own(Op::Trim.dir()).percentile,
                    }
                },
                iops_log: IopsLog {
                    interval_ms: log.interval_ns() / 1_000_000,
                    ios: log.slots().iter().map(|s| s.ios).collect(),
                    bytes: log.slots().iter().map(|s| s.bytes).collect(),
                    dropped: log.dropped,
                },
                cpu: *cpu,
                engine: None,
            },
        }
    }

    /// Add fio's json+ completion-latency bins (`clat_ns.bins`) to the
    /// directions of `rec` that saw I/O; a run asks for them with `json+`.
    pub fn add_fio_bins(&mut self, rec: &Recorder) {
        for (d, dir) in [
            (&mut self.read, 0),
            (&mut self.write, 1),
            (&mut self.trim, 2),
        ] {
            d.clat_ns.bins = FioBins::of(&rec.dirs[dir].clat);
        }
        self.add_sync_bins(rec);
    }

    /// fio's json+ writes the bins of the sync latencies too (`sync.lat_ns.bins`)
    /// whenever the job synced.
    fn add_sync_bins(&mut self, rec: &Recorder) {
        self.sync.lat_ns.bins = FioBins::of(&rec.dirs[Op::Fsync.dir()].lat);
    }

    /// fio's `slat_percentiles`, `clat_percentiles`, `lat_percentiles` (`on`, in
    /// that order): the latency objects of each direction that carry
    /// `percentile` of `list` and, with `bins` (json+), fio's `bins` — both
    /// only where the series has samples, as fio's stat.c writes them.
    pub fn choose_percentiles(&mut self, rec: &Recorder, on: [bool; 3], list: &[f64], bins: bool) {
        for (d, dir) in [
            (&mut self.read, 0),
            (&mut self.write, 1),
            (&mut self.trim, 2),
        ] {
            let r = &rec.dirs[dir];
            let objs = [
                (&mut d.slat_ns, &r.slat),
                (&mut d.clat_ns, &r.clat),
                (&mut d.lat_ns, &r.lat),
            ];
            for ((s, h), on) in objs.into_iter().zip(on) {
                if on {
                    s.percentile = LatStats::with_percentiles(h, list).percentile;
                    s.bins = if bins && s.percentile.is_some() {
                        FioBins::of(h)
                    } else {
                        None
                    };
                } else {
                    s.percentile = None;
                    s.bins = None;
                }
            }
        }
        if bins {
            self.add_sync_bins(rec);
        }
    }

    /// Directions as `(fio name, result)`, fio's order.
    pub fn dirs(&self) -> [(&'static str, &DirResult); 3] {
        [
            ("read", &self.read),
            ("write", &self.write),
            ("trim", &self.trim),
        ]
    }

    /// Raw count of depth samples, to tell "no data" from "all zero".
    pub fn has_depth_data(&self) -> bool {
        self.iodepth_level.0.iter().any(|(_, v)| *v > 0.0)
    }
}

/// Re-express each job's `bw_agg` against its group's aggregate bandwidth (fio's
/// `per=`): call once all jobs are in.
pub fn apply_group_aggregates(jobs: &mut [JobResult]) {
    let groups: Vec<u32> = {
        let mut g: Vec<u32> = jobs.iter().map(|j| j.groupid).collect();
        g.sort_unstable();
        g.dedup();
        g
    };
    for g in groups {
        for dir in 0..3 {
            let pick = |j: &JobResult| match dir {
                0 => j.read.clone(),
                1 => j.write.clone(),
                _ => j.trim.clone(),
            };
            let agg_bytes: u64 = jobs
                .iter()
                .filter(|j| j.groupid == g)
                .map(|j| pick(j).io_bytes)
                .sum();
            let max_rt: u64 = jobs
                .iter()
                .filter(|j| j.groupid == g)
                .map(|j| pick(j).runtime)
                .max()
                .unwrap_or(0);
            if max_rt == 0 {
                continue;
            }
            let agg_kib = (agg_bytes * 1000 / max_rt) as f64 / 1024.0;
            for j in jobs.iter_mut().filter(|j| j.groupid == g) {
                let d = match dir {
                    0 => &mut j.read,
                    1 => &mut j.write,
                    _ => &mut j.trim,
                };
                if d.bw_samples > 0 && agg_kib > 0.0 {
                    d.bw_agg = (d.bw_mean * 100.0 / agg_kib).min(100.0);
                }
            }
        }
    }
}

/// What fio has no key for, per run.
#[derive(schemars::JsonSchema, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
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
    /// One result per job (per group with `group_reporting`).
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
