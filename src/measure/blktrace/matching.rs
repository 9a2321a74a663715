//! Matching events into requests like btt: by (device, start sector), in time
//! order; merges and bio-based completions counted apart.

use super::decode::{Action, BlockEvent};
use std::collections::HashMap;

use serde::Serialize;

/// One request (or, on bio-based devices, one bio) with its stage timestamps (ns).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BlockRequest {
    pub dev: u32,
    pub sector: u64,
    pub nr_sector: u32,
    pub write: bool,
    pub q: Option<u64>,
    pub g: Option<u64>,
    pub i: Option<u64>,
    pub d: Option<u64>,
    pub c: Option<u64>,
    /// Bios merged into this request after it was created.
    pub merged: u32,
    pub error: i32,
}

impl BlockRequest {
    pub(super) fn first_ts(&self) -> Option<u64> {
        self.q.or(self.g).or(self.i).or(self.d)
    }
}

/// What matching found besides complete requests.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MatchStats {
    pub events: u64,
    pub by_action: [u64; 8],
    pub completed: u64,
    /// Bios merged into other requests (they have no C of their own).
    pub merged_bios: u64,
    /// C events whose request started before tracing began.
    pub orphan_completions: u64,
    /// Requests still open when tracing stopped.
    pub in_flight_at_end: u64,
    /// Events fired while sampling switched the events on or off, outside
    /// every window: counted, not matched.
    pub outside_windows: u64,
}

/// Match events to requests, btt style. Events may come from several CPUs in any
/// order; they are sorted by time first.
pub fn match_requests(events: &[BlockEvent]) -> (Vec<BlockRequest>, MatchStats) {
    let mut ev: Vec<BlockEvent> = events.to_vec();
    ev.sort_by_key(|e| e.ts);
    let mut st = MatchStats {
        events: ev.len() as u64,
        ..MatchStats::default()
    };
    // Open bios (Q seen, no request yet) and open requests, by (dev, sector).
    let mut bios: HashMap<(u32, u64), Vec<BlockRequest>> = HashMap::new();
    let mut rqs: HashMap<(u32, u64), BlockRequest> = HashMap::new();
    let mut done = Vec::new();
    for e in &ev {
        st.by_action[e.action as usize] += 1;
        let key = (e.dev, e.sector);
        match e.action {
            Action::Q => bios.entry(key).or_default().push(BlockRequest {
                dev: e.dev,
                sector: e.sector,
                nr_sector: e.nr_sector,
                write: e.write,
                q: Some(e.ts),
                ..BlockRequest::default()
            }),
            Action::Mb | Action::Mf => {
                if pop_bio(&mut bios, key).is_some() {
                    st.merged_bios += 1;
                }
                if e.action == Action::Mf {
                    // The request that began right after this bio now begins here.
                    let old = (e.dev, e.sector + e.nr_sector as u64);
                    if let Some(mut r) = rqs.remove(&old) {
                        r.sector = e.sector;
                        r.nr_sector += e.nr_sector;
                        r.merged += 1;
                        rqs.insert(key, r);
                    }
                } else if let Some(r) = rqs
                    .values_mut()
                    .find(|r| r.dev == e.dev && r.sector + r.nr_sector as u64 == e.sector)
                {
                    r.nr_sector += e.nr_sector;
                    r.merged += 1;
                }
            }
            Action::G => {
                let mut r = pop_bio(&mut bios, key).unwrap_or(BlockRequest {
                    dev: e.dev,
                    sector: e.sector,
                    nr_sector: e.nr_sector,
                    write: e.write,
                    ..BlockRequest::default()
                });
                r.g = Some(e.ts);
                if let Some(prev) = rqs.insert(key, r) {
                    // Same sector re-requested before completing: keep the older
                    // as in flight (it will never match now).
                    let _ = prev;
                    st.in_flight_at_end += 1;
                }
            }
            Action::I | Action::D => {
                let r = rqs.entry(key).or_insert_with(|| {
                    // Request created before tracing began, or a device without G
                    // (the Q becomes the request directly).
                    let mut r = pop_bio(&mut bios, key).unwrap_or(BlockRequest {
                        dev: e.dev,
                        sector: e.sector,
                        nr_sector: e.nr_sector,
                        write: e.write,
                        ..BlockRequest::default()
                    });
                    r.nr_sector = r.nr_sector.max(e.nr_sector);
                    r
                });
                if e.action == Action::I {
                    r.i.get_or_insert(e.ts);
                } else {
                    // After a requeue the request is issued again: D2C is from the
                    // last issue.
                    r.d = Some(e.ts);
                }
            }
            Action::C => {
                if let Some(mut r) = rqs.remove(&key) {
                    r.c = Some(e.ts);
                    r.error = e.error;
                    st.completed += 1;
                    done.push(r);
                } else if let Some(mut r) = pop_bio(&mut bios, key) {
                    r.c = Some(e.ts);
                    r.error = e.error;
                    st.completed += 1;
                    done.push(r);
                } else {
                    st.orphan_completions += 1;
                }
            }
            Action::Cb => {
                // On request-based devices the request's C already closed it.
                if let Some(mut r) = pop_bio(&mut bios, key) {
                    r.c = Some(e.ts);
                    r.error = e.error;
                    st.completed += 1;
                    done.push(r);
                } else if !rqs.contains_key(&key) {
                    st.orphan_completions += 1;
                }
            }
        }
    }
    st.in_flight_at_end += rqs.len() as u64 + bios.values().map(|v| v.len() as u64).sum::<u64>();
    done.sort_by_key(|r| r.first_ts().or(r.c));
    (done, st)
}

/// [`match_requests`] window by window: a request never pairs with events of
/// another window, since what happened between them was not seen. Requests cut
/// by the edges count as orphan completions and in flight at end, as at the
/// ends of a whole trace. No windows: one match over everything.
pub fn match_windows(events: &[BlockEvent], windows: &[Window]) -> (Vec<BlockRequest>, MatchStats) {
    if windows.is_empty() {
        return match_requests(events);
    }
    let mut ev: Vec<BlockEvent> = events.to_vec();
    ev.sort_by_key(|e| e.ts);
    let mut reqs = Vec::new();
    let mut st = MatchStats::default();
    let mut rest = &ev[..];
    for w in windows {
        let from = rest.partition_point(|e| e.ts < w.start);
        let to = from + rest[from..].partition_point(|e| e.ts <= w.end);
        // Events between windows fired while the events were being switched.
        st.events += from as u64;
        st.outside_windows += from as u64;
        let (r, s) = match_requests(&rest[from..to]);
        reqs.extend(r);
        st.add(&s);
        rest = &rest[to..];
    }
    st.events += rest.len() as u64;
    st.outside_windows += rest.len() as u64;
    (reqs, st)
}

impl MatchStats {
    fn add(&mut self, o: &MatchStats) {
        self.events += o.events;
        for (a, b) in self.by_action.iter_mut().zip(o.by_action) {
            *a += b;
        }
        self.completed += o.completed;
        self.merged_bios += o.merged_bios;
        self.orphan_completions += o.orphan_completions;
        self.in_flight_at_end += o.in_flight_at_end;
        self.outside_windows += o.outside_windows;
    }
}

fn pop_bio(
    bios: &mut HashMap<(u32, u64), Vec<BlockRequest>>,
    key: (u32, u64),
) -> Option<BlockRequest> {
    let v = bios.get_mut(&key)?;
    // Oldest first: two bios to one sector are served in order.
    let r = if v.is_empty() {
        None
    } else {
        Some(v.remove(0))
    };
    if v.is_empty() {
        bios.remove(&key);
    }
    r
}

/// A span of engine-clock ns during which the events were enabled: every event
/// of a window carries a stamp inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Window {
    pub start: u64,
    pub end: u64,
}
