//! btt's stage statistics and table, and the biolatency-style log2 histogram.

use super::decode::Action;
use super::matching::{BlockRequest, MatchStats};

use serde::{Deserialize, Serialize};

/// min / avg / max / N of one stage, in ns.
#[derive(schemars::JsonSchema, Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageStats {
    pub n: u64,
    pub min_ns: u64,
    pub avg_ns: f64,
    pub max_ns: u64,
    #[serde(skip)]
    sum: u128,
}

impl StageStats {
    pub fn add(&mut self, v: u64) {
        if self.n == 0 || v < self.min_ns {
            self.min_ns = v;
        }
        self.max_ns = self.max_ns.max(v);
        self.n += 1;
        self.sum += v as u128;
        self.avg_ns = self.sum as f64 / self.n as f64;
    }

    fn add_span(&mut self, a: Option<u64>, b: Option<u64>) {
        if let (Some(a), Some(b)) = (a, b)
            && b >= a
        {
            self.add(b - a);
        }
    }
}

/// biolatency-style histogram: bucket k counts values in [2^k, 2^(k+1)) us, with
/// bucket 0 holding [0, 2) us.
#[derive(schemars::JsonSchema, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Log2Hist {
    pub buckets: Vec<u64>,
}

impl Log2Hist {
    pub fn add_ns(&mut self, ns: u64) {
        let us = ns / 1000;
        let k = if us < 2 {
            0
        } else {
            63 - us.leading_zeros() as usize
        };
        if self.buckets.len() <= k {
            self.buckets.resize(k + 1, 0);
        }
        self.buckets[k] += 1;
    }

    pub fn total(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// Text like biolatency's: range, count, and a bar.
    pub fn render(&self, title: &str) -> String {
        let mut s = format!(
            "{title}\n{:>24} : {:<8} {}\n",
            "usecs", "count", "distribution"
        );
        let max = self.buckets.iter().copied().max().unwrap_or(0).max(1);
        for (k, &c) in self.buckets.iter().enumerate() {
            let (lo, hi) = if k == 0 {
                (0, 1)
            } else {
                (1u64 << k, (1u64 << (k + 1)) - 1)
            };
            let bar = "*".repeat((c * 40).div_ceil(max) as usize);
            s.push_str(&format!("{lo:>10} -> {hi:<10} : {c:<8} |{bar:<40}|\n"));
        }
        s
    }
}

/// btt's stage table plus what the device did not report.
#[derive(schemars::JsonSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BttTable {
    pub q2g: StageStats,
    pub g2i: StageStats,
    pub i2d: StageStats,
    /// G2D when requests bypass the scheduler (no I): block layer after allocation.
    pub g2d: StageStats,
    pub q2d: StageStats,
    pub d2c: StageStats,
    pub q2c: StageStats,
    /// Serialised under the names `iolab.engine.trace.btt` has always used.
    #[serde(rename = "d2c_hist_log2_us")]
    pub d2c_hist: Log2Hist,
    #[serde(rename = "q2c_hist_log2_us")]
    pub q2c_hist: Log2Hist,
    /// Why some rows are empty (device kind, scheduler).
    pub notes: Vec<String>,
}

pub fn btt_table(reqs: &[BlockRequest], st: &MatchStats) -> BttTable {
    let mut t = BttTable::default();
    for r in reqs {
        t.q2g.add_span(r.q, r.g);
        t.g2i.add_span(r.g, r.i);
        t.i2d.add_span(r.i, r.d);
        if r.i.is_none() {
            t.g2d.add_span(r.g, r.d);
        }
        t.q2d.add_span(r.q, r.d);
        t.d2c.add_span(r.d, r.c);
        t.q2c.add_span(r.q, r.c);
        if let (Some(d), Some(c)) = (r.d, r.c)
            && c >= d
        {
            t.d2c_hist.add_ns(c - d);
        }
        if let (Some(q), Some(c)) = (r.q, r.c)
            && c >= q
        {
            t.q2c_hist.add_ns(c - q);
        }
    }
    let n = |a: Action| st.by_action[a as usize];
    if n(Action::G) == 0 && n(Action::D) == 0 && n(Action::Q) > 0 {
        t.notes.push(
            "no G/I/D events: bio-based device (e.g. zram) — no request is allocated, \
             queued or issued, so only Q2C (block layer + driver + device) is measured"
                .into(),
        );
    } else if n(Action::I) == 0 && n(Action::D) > 0 {
        t.notes.push(
            "no I events: requests were issued directly without an I/O scheduler \
             insert (scheduler `none` or direct issue), so G2I/I2D are empty; see G2D"
                .into(),
        );
    }
    if st.merged_bios > 0 {
        t.notes.push(format!(
            "{} bios were merged into other requests (counted in those requests)",
            st.merged_bios
        ));
    }
    if st.outside_windows > 0 {
        t.notes.push(format!(
            "{} events fired while sampling switched tracing on or off (outside the \
             windows, left out)",
            st.outside_windows
        ));
    }
    if st.orphan_completions > 0 || st.in_flight_at_end > 0 {
        t.notes.push(format!(
            "{} completions of requests started before tracing (or its window) began, {} \
             requests still in flight when it (or its window) stopped (left out)",
            st.orphan_completions, st.in_flight_at_end
        ));
    }
    t
}
