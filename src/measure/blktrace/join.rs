//! Joining iolab's per-request timestamps with the traced requests (study 002's
//! user / block / driver+device / completion split).

use super::matching::BlockRequest;
use super::stats::StageStats;
use std::collections::HashMap;

use serde::Serialize;

use crate::request::Op;

/// iolab's own timestamps of one request (engine-clock ns, like the events').
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct UserIo {
    /// Byte offset on the traced block device.
    pub offset: u64,
    pub len: u32,
    pub op: Op,
    pub t_submit_start: u64,
    pub t_submit_end: u64,
    pub t_complete_seen: u64,
}

/// One request's time split between the layers (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct JoinedIo {
    pub offset: u64,
    pub op: Op,
    /// Submit start to Q: the system call and file/bio setup.
    pub user_ns: u64,
    /// Q to D: request allocation, scheduler, dispatch. None on bio-based devices.
    pub block_ns: Option<u64>,
    /// D to C: driver and device. None on bio-based devices.
    pub device_ns: Option<u64>,
    /// Q to C when there is no D (bio-based): block layer, driver and device together.
    pub q2c_ns: u64,
    /// C to completion seen by iolab: interrupt, wakeup, reaping.
    pub completion_ns: u64,
    pub total_ns: u64,
}

/// Time per layer of a set of joined I/Os (study 002's breakdown).
#[derive(
    schemars::JsonSchema, Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize,
)]
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
    /// The split of the joined I/Os of one direction (None: all of them).
    pub fn of(joined: &[JoinedIo], op: Option<Op>) -> LayerSplit {
        let mut l = LayerSplit::default();
        for j in joined.iter().filter(|j| op.is_none_or(|o| j.op == o)) {
            l.user.add(j.user_ns);
            if let Some(v) = j.block_ns {
                l.block.add(v);
            }
            if let Some(v) = j.device_ns {
                l.device.add(v);
            }
            l.q2c.add(j.q2c_ns);
            l.completion.add(j.completion_ns);
            l.total.add(j.total_ns);
        }
        l
    }

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

/// The join of user timestamps with block requests.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Breakdown {
    /// Every joined I/O; [`LayerSplit::of`] sums them per layer.
    pub joined: Vec<JoinedIo>,
    /// User I/Os for which no traced request fell inside their submit..seen window.
    pub unmatched_user: u64,
    /// Traced requests of the device that no user I/O claimed (other processes,
    /// metadata, read-ahead...).
    pub unclaimed_requests: u64,
}

/// Join user I/Os with requests: same start sector (offset/512 + `sector_base`),
/// same direction, and Q (or first seen stage) inside the user I/O's window, C too.
pub fn join(user: &[UserIo], reqs: &[BlockRequest], sector_base: u64) -> Breakdown {
    // Per sector, the requests in time order (`reqs` is sorted by first stamp) and a
    // cursor past those no later user I/O can claim: taken, or queued before the
    // I/O being joined began. Users go in start order, so each list is walked once.
    let mut by_sector: HashMap<u64, (usize, Vec<usize>)> = HashMap::new();
    for (i, r) in reqs.iter().enumerate() {
        if r.c.is_some() && r.first_ts().is_some() {
            by_sector.entry(r.sector).or_default().1.push(i);
        }
    }
    let mut order: Vec<usize> = (0..user.len()).collect();
    order.sort_by_key(|&k| user[k].t_submit_start);
    let mut taken = vec![false; reqs.len()];
    let mut b = Breakdown::default();
    for u in order.into_iter().map(|k| &user[k]) {
        let sector = u.offset / 512 + sector_base;
        let want_write = u.op != Op::Read;
        let hit = by_sector.get_mut(&sector).and_then(|(cur, v)| {
            while *cur < v.len() && {
                let i = v[*cur];
                taken[i] || reqs[i].first_ts().unwrap_or(0) < u.t_submit_start
            } {
                *cur += 1;
            }
            v[*cur..].iter().copied().find(|&i| {
                let r = &reqs[i];
                let q = r.first_ts().unwrap_or(0);
                let c = r.c.unwrap_or(0);
                !taken[i]
                    && r.write == want_write
                    && q >= u.t_submit_start
                    && c <= u.t_complete_seen
                    && q <= c
            })
        });
        let Some(i) = hit else {
            b.unmatched_user += 1;
            continue;
        };
        taken[i] = true;
        let r = &reqs[i];
        let q = r.first_ts().expect("filtered above");
        let c = r.c.expect("filtered above");
        let j = JoinedIo {
            offset: u.offset,
            op: u.op,
            user_ns: q - u.t_submit_start,
            block_ns: r.d.map(|d| d.saturating_sub(q)),
            device_ns: r.d.map(|d| c.saturating_sub(d)),
            q2c_ns: c - q,
            completion_ns: u.t_complete_seen - c,
            total_ns: u.t_complete_seen - u.t_submit_start,
        };
        b.joined.push(j);
    }
    b.unclaimed_requests = taken.iter().filter(|t| !**t).count() as u64;
    b
}
