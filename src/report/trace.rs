//! `iolab.engine.trace`: one job's joined block trace (`iolab run --trace`), as
//! typed values. The engine's tracer builds a [`JobTrace`] once; the fio JSON
//! serialises it, `report::text` prints it and the breakdown study reads it.

use serde::Serialize;

use crate::measure::blktrace::{BttTable, MatchStats, StageStats};

/// One traced job: the device's btt table, the event and request counts, and
/// this job's requests split by layer.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
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

/// Block events seen, by action.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EventCounts {
    pub total: u64,
    pub by_action: ActionCounts,
    /// Events the kernel dropped: a trace that lost any fails its jobs instead.
    pub lost: u64,
}

/// Events per blktrace action letter, as btt names them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Split {
    pub all: LayerSplit,
    pub read: LayerSplit,
    pub write: LayerSplit,
}

/// Time per layer of a set of joined I/Os (study 002's breakdown).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LayerSplit {
    /// Submit start -> Q.
    pub user: StageStats,
    /// Q -> D; empty on bio-based devices.
    pub block: StageStats,
    /// D -> C; empty on bio-based devices.
    pub device: StageStats,
    /// Q -> C.
    pub q2c: StageStats,
    /// C -> the worker saw the completion.
    pub completion: StageStats,
    /// Submit start -> seen.
    pub total: StageStats,
}

impl LayerSplit {
    /// The stages in reading order, with the labels the text table uses.
    pub fn rows(&self) -> [(&'static str, &StageStats); 6] {
        [
            ("user (submit -> Q)", &self.user),
            ("block layer (Q -> D)", &self.block),
            ("driver+device (D -> C)", &self.device),
            ("block+driver+device (Q -> C)", &self.q2c),
            ("completion delivery (C -> seen)", &self.completion),
            ("total (submit -> seen)", &self.total),
        ]
    }
}

/// `--trace-sample`: how much of the run the events were on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct SamplingReport {
    pub percent: f64,
    pub period_ms: f64,
    pub windows: u64,
    pub traced_ms: f64,
    pub ios_outside_windows: u64,
}
