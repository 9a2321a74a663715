//! `iolab.engine.trace`: one job's joined block trace (`iolab run --trace`), as
//! typed values. The engine's tracer builds a [`JobTrace`] once; the fio JSON
//! serialises it, `report::text` prints it and the breakdown study reads it.

use serde::{Deserialize, Serialize};

use crate::measure::blktrace::{BlockTraceResult, Breakdown, BttTable, LayerSplit, MatchStats};
use crate::measure::clock;
use crate::request::Op;

/// One traced job: the device's btt table, the event and request counts, and
/// this job's requests split by layer.
#[derive(schemars::JsonSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobTrace {
    /// `/dev/NAME` of the traced device.
    pub device: String,
    pub job: String,
    /// The trace instance's clock.
    pub clock: String,
    /// The engine's clock the kernel stamps were put on.
    pub engine_clock: String,
    /// btt's stage table over every request on the device during the run.
    pub btt: BttTable,
    pub events: EventCounts,
    pub requests: RequestCounts,
    pub split: Split,
    /// This job's I/Os joined with a traced request.
    pub joined: u64,
    /// This job's I/Os with no traced request inside their window.
    pub unmatched_user: u64,
    /// Traced requests that belonged to no I/O of this job.
    pub unclaimed_requests: u64,
    /// Completions past the per-worker log's capacity (not in the split).
    pub not_logged: u64,
    pub notes: Vec<String>,
    /// `--trace-sample`: the windows the events were on (None: traced throughout).
    pub sampling: Option<SamplingReport>,
}

/// What the tracer joined for one job: the device's table and counts, the
/// job's joined I/Os, and what stayed out of the join.
pub struct TraceJoin<'a> {
    /// Device name without `/dev/`.
    pub device: &'a str,
    /// The trace instance's clock.
    pub clock: &'a str,
    pub job: &'a str,
    /// Extents the file's offsets were mapped through (None: the job addresses
    /// the device itself).
    pub file_extents: Option<usize>,
    pub direct: bool,
    pub btt: &'a BttTable,
    pub matched: &'a MatchStats,
    pub breakdown: &'a Breakdown,
    /// Completions past the per-worker log, and the log's capacity.
    pub not_logged: u64,
    pub log_capacity: usize,
    /// I/Os in holes or unwritten extents of the file (no device I/O).
    pub unmapped: u64,
    pub sampling: Option<SamplingReport>,
}

impl JobTrace {
    /// Build the job's trace once, with the notes that explain what the
    /// numbers cover.
    pub fn join(j: &TraceJoin) -> JobTrace {
        let dev = j.device;
        let mut notes: Vec<String> = Vec::new();
        notes.push(format!(
            "btt table: every request on /dev/{dev} during the run (other tasks' too); \
             split: this job's requests joined by sector and time"
        ));
        if let Some(n) = j.file_extents {
            notes.push(format!(
                "file offsets mapped to device sectors with FIEMAP ({n} extents)"
            ));
        }
        if !j.direct {
            notes.push(
                "direct=0: I/O served from the page cache has no block request and stays \
                 unmatched; use direct=1 for a full breakdown"
                    .into(),
            );
        }
        if j.not_logged > 0 {
            notes.push(format!(
                "{} completions after the first {} per worker were not \
                 logged and are not in the split",
                j.not_logged, j.log_capacity
            ));
        }
        if j.unmapped > 0 {
            notes.push(format!(
                "{} I/Os fell in holes or unwritten extents of the file (no device I/O)",
                j.unmapped
            ));
        }
        let st = j.matched;
        let b = j.breakdown;
        JobTrace {
            device: format!("/dev/{dev}"),
            job: j.job.to_string(),
            clock: j.clock.to_string(),
            engine_clock: clock::source().to_string(),
            btt: j.btt.clone(),
            events: EventCounts {
                total: st.events,
                by_action: ActionCounts::of(&st.by_action),
                lost: 0,
            },
            requests: RequestCounts::of(st),
            split: Split {
                all: LayerSplit::of(&b.joined, None),
                read: LayerSplit::of(&b.joined, Some(Op::Read)),
                write: LayerSplit::of(&b.joined, Some(Op::Write)),
            },
            joined: b.joined.len() as u64,
            unmatched_user: b.unmatched_user,
            unclaimed_requests: b.unclaimed_requests,
            not_logged: j.not_logged,
            notes,
            sampling: j.sampling,
        }
    }
}

/// Block events seen, by action.
#[derive(schemars::JsonSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EventCounts {
    pub total: u64,
    pub by_action: ActionCounts,
    /// Events the kernel dropped: a trace that lost any fails its jobs instead.
    pub lost: u64,
}

/// Events per blktrace action letter, as btt names them.
#[derive(
    schemars::JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize,
)]
pub struct ActionCounts {
    #[serde(rename = "Q")]
    pub q: u64,
    #[serde(rename = "G")]
    pub g: u64,
    #[serde(rename = "I")]
    pub i: u64,
    #[serde(rename = "D")]
    pub d: u64,
    #[serde(rename = "C")]
    pub c: u64,
    /// Bio completions (bio-based devices).
    #[serde(rename = "Cb")]
    pub cb: u64,
    /// Back merges.
    #[serde(rename = "Mb")]
    pub mb: u64,
    /// Front merges.
    #[serde(rename = "Mf")]
    pub mf: u64,
}

impl ActionCounts {
    /// From matching's counts, in its order (Q G I D C Cb Mb Mf).
    pub fn of(a: &[u64; 8]) -> ActionCounts {
        let [q, g, i, d, c, cb, mb, mf] = *a;
        ActionCounts {
            q,
            g,
            i,
            d,
            c,
            cb,
            mb,
            mf,
        }
    }
}

/// What matching made of the events.
#[derive(
    schemars::JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize,
)]
pub struct RequestCounts {
    pub completed: u64,
    pub merged_bios: u64,
    pub orphan_completions: u64,
    pub in_flight_at_end: u64,
    pub outside_windows: u64,
}

impl RequestCounts {
    pub fn of(st: &MatchStats) -> RequestCounts {
        RequestCounts {
            completed: st.completed,
            merged_bios: st.merged_bios,
            orphan_completions: st.orphan_completions,
            in_flight_at_end: st.in_flight_at_end,
            outside_windows: st.outside_windows,
        }
    }
}

/// The per-layer split of all of a job's joined I/Os and of each direction.
#[derive(schemars::JsonSchema, Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Split {
    pub all: LayerSplit,
    pub read: LayerSplit,
    pub write: LayerSplit,
}

/// `--trace-sample`: how much of the run the events were on.
#[derive(schemars::JsonSchema, Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SamplingReport {
    pub percent: f64,
    pub period_ms: f64,
    pub windows: u64,
    pub traced_ms: f64,
    pub ios_outside_windows: u64,
}

impl SamplingReport {
    /// The windows of a sampled trace (None when it traced throughout), and
    /// how many of the job's I/Os fell outside them.
    pub fn of(res: &BlockTraceResult, ios_outside_windows: u64) -> Option<SamplingReport> {
        let s = res.sampling?;
        let traced_ns: u64 = res.windows.iter().map(|w| w.end - w.start).sum();
        Some(SamplingReport {
            percent: s.traced_percent(),
            period_ms: s.period.as_secs_f64() * 1e3,
            windows: res.windows.len() as u64,
            traced_ms: traced_ns as f64 / 1e6,
            ios_outside_windows,
        })
    }
}
