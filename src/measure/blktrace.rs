//! Block-layer breakdown from tracepoints (study 002): btt's stage table, a
//! biolatency-style histogram, and a per-request join with iolab's own timestamps.
//!
//! Events use blktrace's letters: Q (`block_bio_queue`), G (`block_getrq`),
//! I (`block_rq_insert`), D (`block_rq_issue`), C (`block_rq_complete`, or
//! `block_bio_complete` on bio-based devices such as zram, which have no request and
//! so no G/I/D), M (`block_bio_backmerge`/`frontmerge`). Requests are matched like
//! btt does: by (device, start sector), in time order.
//!
//! Stages that a device does not produce are reported as absent with the reason,
//! never as zero.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;

use crate::measure::clock;
use crate::measure::tracefs::{
    EventFormat, Field, Instance, LossReport, RawEvent, Tracefs, block_dev_numbers, field_i64,
    field_str, field_u64, kernel_dev, parse_page,
};
use crate::request::Op;

/// blktrace's action letters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Action {
    Q,
    G,
    I,
    D,
    /// Request completion (`block_rq_complete`).
    C,
    /// Bio completion (`block_bio_complete`): the C of bio-based devices.
    Cb,
    /// Back merge: the bio joined the end of an existing request.
    Mb,
    /// Front merge: the bio joined the front; the request now starts at its sector.
    Mf,
}

/// One block event, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct BlockEvent {
    pub ts: u64,
    pub action: Action,
    /// Kernel dev_t (major << 20 | minor).
    pub dev: u32,
    pub sector: u64,
    pub nr_sector: u32,
    pub write: bool,
    pub pid: i32,
    pub error: i32,
}

const EVENTS: [(&str, Action); 8] = [
    ("block_bio_queue", Action::Q),
    ("block_getrq", Action::G),
    ("block_rq_insert", Action::I),
    ("block_rq_issue", Action::D),
    ("block_rq_complete", Action::C),
    ("block_bio_complete", Action::Cb),
    ("block_bio_backmerge", Action::Mb),
    ("block_bio_frontmerge", Action::Mf),
];

struct Decode {
    action: Action,
    dev: Field,
    sector: Field,
    nr_sector: Field,
    rwbs: Field,
    error: Option<Field>,
}

/// Turns raw `block:*` records into [`BlockEvent`]s using the kernel's formats.
pub struct BlockDecoder {
    by_id: HashMap<u16, Decode>,
}

impl BlockDecoder {
    pub fn new(formats: &[EventFormat]) -> Result<BlockDecoder> {
        let mut by_id = HashMap::new();
        for f in formats {
            let Some(&(_, action)) = EVENTS.iter().find(|(n, _)| *n == f.name) else {
                continue;
            };
            by_id.insert(
                f.id,
                Decode {
                    action,
                    dev: f.field("dev")?.clone(),
                    sector: f.field("sector")?.clone(),
                    nr_sector: f.field("nr_sector")?.clone(),
                    rwbs: f.field("rwbs")?.clone(),
                    error: f.field("error").ok().cloned(),
                },
            );
        }
        Ok(BlockDecoder { by_id })
    }

    pub fn decode(&self, ev: &RawEvent) -> Option<BlockEvent> {
        let d = self.by_id.get(&ev.id)?;
        let rwbs = field_str(ev.payload, &d.rwbs)?;
        Some(BlockEvent {
            ts: ev.ts,
            action: d.action,
            dev: field_u64(ev.payload, &d.dev)? as u32,
            sector: field_u64(ev.payload, &d.sector)?,
            nr_sector: field_u64(ev.payload, &d.nr_sector)? as u32,
            write: rwbs_is_write(rwbs),
            pid: ev.pid,
            error: d
                .error
                .as_ref()
                .and_then(|f| field_i64(ev.payload, f))
                .unwrap_or(0) as i32,
        })
    }
}

fn rwbs_is_write(rwbs: &str) -> bool {
    // blktrace's rwbs: first letter F (flush) may precede; W = write, D = discard.
    rwbs.contains('W') || rwbs.contains('D')
}

/// Parse one line of tracefs text output (`cat trace`) into a block event, so saved
/// text traces can be analysed too. Lines of other events give `None`.
/// Text timestamps have microsecond resolution.
pub fn parse_trace_line(line: &str) -> Option<BlockEvent> {
    // "  dd-19976   [000] .....   626.589672: block_bio_queue: 7,0 RS 0 + 8 [dd]"
    let (head, rest) = line.split_once("] ")?;
    let (task, _cpu) = head.trim_start().rsplit_once(" [")?;
    let pid: i32 = task.trim_end().rsplit_once('-')?.1.parse().ok()?;
    let rest = rest.trim_start();
    let (_flags, rest) = rest.split_once(char::is_whitespace)?;
    let (ts, rest) = rest.trim_start().split_once(": ")?;
    let (name, body) = rest.split_once(": ")?;
    let action = EVENTS.iter().find(|(n, _)| *n == name)?.1;
    let ts = parse_text_ts(ts)?;
    let mut it = body.split_whitespace();
    let (maj, min) = it.next()?.split_once(',')?;
    let dev = kernel_dev(maj.parse().ok()?, min.parse().ok()?);
    let rwbs = it.next()?;
    // After rwbs: rq events carry "[bytes] (cmd)" before "sector + nr".
    let toks: Vec<&str> = it.collect();
    let plus = toks.iter().position(|t| *t == "+")?;
    let sector = toks.get(plus.checked_sub(1)?)?.parse().ok()?;
    let nr_sector = toks.get(plus + 1)?.parse().ok()?;
    let error = if action == Action::C || action == Action::Cb {
        toks.last()
            .and_then(|t| t.strip_prefix('[')?.strip_suffix(']')?.parse().ok())
            .unwrap_or(0)
    } else {
        0
    };
    Some(BlockEvent {
        ts,
        action,
        dev,
        sector,
        nr_sector,
        write: rwbs_is_write(rwbs),
        pid,
        error,
    })
}

fn parse_text_ts(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.')?;
    let sec: u64 = sec.trim().parse().ok()?;
    let mut ns: u64 = frac.parse().ok()?;
    for _ in frac.len()..9 {
        ns *= 10;
    }
    Some(sec * 1_000_000_000 + ns)
}

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
    fn first_ts(&self) -> Option<u64> {
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

/// min / avg / max / N of one stage, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
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
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
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
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
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

/// Render like btt's "All Devices" table (times in microseconds).
pub fn render_btt(t: &BttTable) -> String {
    let mut s = String::from(
        "            ALL        MIN (us)       AVG (us)       MAX (us)           N\n\
         --------------- -------------- -------------- -------------- -----------\n",
    );
    for (name, v) in [
        ("Q2G", &t.q2g),
        ("G2I", &t.g2i),
        ("I2D", &t.i2d),
        ("G2D", &t.g2d),
        ("Q2D", &t.q2d),
        ("D2C", &t.d2c),
        ("Q2C", &t.q2c),
    ] {
        stage_row(&mut s, name, v, [15, 14, 14, 14, 11]);
    }
    for n in &t.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s
}

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

/// The join of user timestamps with block requests.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Breakdown {
    pub joined: Vec<JoinedIo>,
    pub user: StageStats,
    pub block: StageStats,
    pub device: StageStats,
    pub q2c: StageStats,
    pub completion: StageStats,
    pub total: StageStats,
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
        b.user.add(j.user_ns);
        if let Some(v) = j.block_ns {
            b.block.add(v);
        }
        if let Some(v) = j.device_ns {
            b.device.add(v);
        }
        b.q2c.add(j.q2c_ns);
        b.completion.add(j.completion_ns);
        b.total.add(j.total_ns);
        b.joined.push(j);
    }
    b.unclaimed_requests = taken.iter().filter(|t| !**t).count() as u64;
    b
}

/// One `name  min  avg  max  N` line (us), column widths `w`; "-" when empty.
fn stage_row(s: &mut String, name: &str, v: &StageStats, w: [usize; 5]) {
    let [wn, w1, w2, w3, w4] = w;
    if v.n == 0 {
        s.push_str(&format!(
            "{name:<wn$} {:>w1$} {:>w2$} {:>w3$} {:>w4$}\n",
            "-", "-", "-", 0
        ));
    } else {
        s.push_str(&format!(
            "{name:<wn$} {:>w1$.3} {:>w2$.3} {:>w3$.3} {:>w4$}\n",
            v.min_ns as f64 / 1e3,
            v.avg_ns / 1e3,
            v.max_ns as f64 / 1e3,
            v.n
        ));
    }
}

pub fn render_breakdown(b: &Breakdown) -> String {
    let mut s = String::from(
        "stage                              MIN (us)       AVG (us)       MAX (us)         N\n",
    );
    let row =
        |s: &mut String, name: &str, v: &StageStats| stage_row(s, name, v, [30, 12, 14, 14, 9]);
    row(&mut s, "user (submit -> Q)", &b.user);
    row(&mut s, "block layer (Q -> D)", &b.block);
    row(&mut s, "driver+device (D -> C)", &b.device);
    if b.block.n == 0 && b.q2c.n > 0 {
        row(&mut s, "block+driver+device (Q -> C)", &b.q2c);
    }
    row(&mut s, "completion delivery (C -> seen)", &b.completion);
    row(&mut s, "total (submit -> seen)", &b.total);
    if b.block.n == 0 && b.q2c.n > 0 {
        s.push_str(
            "note: no D events (bio-based device): block layer and device are not separable\n",
        );
    }
    if b.unmatched_user > 0 {
        s.push_str(&format!(
            "note: {} user I/Os had no traced request inside their window\n",
            b.unmatched_user
        ));
    }
    if b.unclaimed_requests > 0 {
        s.push_str(&format!(
            "note: {} traced requests belonged to no user I/O (other tasks, metadata)\n",
            b.unclaimed_requests
        ));
    }
    s
}

/// Everything a block trace produced.
#[derive(Clone, Debug, Serialize)]
pub struct BlockTraceResult {
    pub device: String,
    /// Event stamps are engine-clock ns; this names the trace clock they came
    /// from (`x86-tsc` converted with the engine's TSC scale, or `mono`).
    pub clock: &'static str,
    pub events: Vec<BlockEvent>,
    pub loss: LossReport,
    /// The sampling windows (empty: the events were on for the whole trace).
    pub windows: Vec<Window>,
    pub sampling: Option<Sampling>,
}

impl BlockTraceResult {
    pub fn analyse(&self) -> (Vec<BlockRequest>, MatchStats, BttTable) {
        let (reqs, st) = match_windows(&self.events, &self.windows);
        let t = btt_table(&reqs, &st);
        (reqs, st, t)
    }
}

type Collected = (Vec<BlockEvent>, LossReport, Vec<Window>);

/// How the instance stamps events, and so how a stamp becomes engine-clock ns.
#[derive(Clone, Copy, Debug)]
enum StampClock {
    /// CLOCK_MONOTONIC ns: already the engine clock when it is monotonic.
    Mono,
    /// Raw TSC ticks, scaled with the engine clock's own calibration: the engine
    /// keeps its cheaper TSC clock and both sides share one factor and anchor.
    Tsc(clock::TscScale),
}

impl StampClock {
    fn name(self) -> &'static str {
        match self {
            StampClock::Mono => "mono",
            StampClock::Tsc(_) => "x86-tsc",
        }
    }

    #[inline]
    fn to_engine_ns(self, ts: u64) -> u64 {
        match self {
            StampClock::Mono => ts,
            StampClock::Tsc(sc) => sc.to_ns(ts),
        }
    }
}

/// The trace clock that puts kernel stamps on the engine clock: `x86-tsc` when
/// the engine reads the TSC, else `mono`. None when the engine reads the TSC and
/// the kernel has no `x86-tsc` clock: then only switching the engine to
/// CLOCK_MONOTONIC (`clock::use_monotonic`, before any timestamp of the run) makes
/// the two comparable, since a calibrated rate drifts microseconds over a run.
pub fn joinable_trace_clock(tfs: &Tracefs) -> Option<&'static str> {
    match clock::tsc_scale() {
        None => Some("mono"),
        Some(_) if tfs.offers_clock("x86-tsc") => Some("x86-tsc"),
        Some(_) => None,
    }
}

/// The block events a device can produce. Bio-based drivers (zram, brd, most
/// device-mapper targets) have no blk-mq queue (`/sys/dev/block/M:m/mq`), so no
/// request is allocated, inserted, issued or merged: only Q and the bio's
/// completion fire. Request-based devices complete requests (C); their bios'
/// own completion event fires only for remapped or throttled bios, which the
/// matcher ignores anyway. An event left disabled costs nothing per I/O.
fn events_for(major: u32, minor: u32) -> Vec<(&'static str, Action)> {
    let rq_based = Path::new(&format!("/sys/dev/block/{major}:{minor}/mq")).is_dir();
    EVENTS
        .iter()
        .copied()
        .filter(|&(_, a)| {
            if rq_based {
                a != Action::Cb
            } else {
                matches!(a, Action::Q | Action::Cb)
            }
        })
        .collect()
}

/// Live block tracing of one device in a tracefs instance, drained by a collector
/// thread so the traced workload's threads are never involved.
pub struct BlockTrace {
    stop: Arc<AtomicBool>,
    worker: Option<JoinHandle<Result<Collected>>>,
    device: String,
    clock: &'static str,
    events: Vec<&'static str>,
    sampling: Option<Sampling>,
}

/// Options for [`BlockTrace::start`].
#[derive(Clone, Copy, Debug)]
pub struct BlockTraceOptions {
    /// Per-CPU ring buffer in KiB.
    pub buffer_kb: u64,
    /// How often the collector looks at the buffers' fill; it reads a CPU's
    /// buffer only once that is half full, and every buffer at the end.
    pub drain_every: Duration,
    /// Trace only part of the time (None: all of it). See [`Sampling`].
    pub sampling: Option<Sampling>,
}

/// Time sampling: the events are enabled for `traced` at the start of every
/// `period` and disabled for the rest. A disabled tracepoint is patched out of
/// the kernel's code, so outside the windows tracing costs nothing per I/O; the
/// windows' requests are complete (Q to C), those cut by a window's edges are
/// counted and left out, as at the ends of a full trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Sampling {
    pub traced: Duration,
    pub period: Duration,
}

impl Sampling {
    /// Default window period: each switch patches the kernel's code on every
    /// CPU (~2% of a zram QD1 run at ten switches a second here), so switches
    /// are kept rare; a run of seconds still has several windows spread over it.
    pub const PERIOD: Duration = Duration::from_secs(1);

    /// `percent` (1-99) of every `period` (10 ms or more).
    pub fn new(percent: u32, period: Duration) -> Result<Sampling> {
        if !(1..=99).contains(&percent) {
            bail!(
                "{percent}% is out of range (1-99; without sampling --trace traces all the time)"
            );
        }
        if period < Duration::from_millis(10) {
            bail!(
                "period {period:?} is too short (10ms or more: each switch patches the kernel's code)"
            );
        }
        Ok(Sampling {
            traced: period * percent / 100,
            period,
        })
    }

    /// `PCT` or `PCT/PERIOD`, e.g. `20`, `20%`, `10/500ms`, `5/2s`.
    pub fn parse(s: &str) -> Result<Sampling> {
        let (pct, period) = match s.split_once('/') {
            Some((p, t)) => (
                p,
                crate::job::units::parse_time(t, crate::job::units::TimeUnit::Seconds, false)
                    .map_err(|e| anyhow!("period {t:?}: {e}"))?,
            ),
            None => (s, Self::PERIOD),
        };
        let pct: u32 = pct.trim().trim_end_matches('%').parse().map_err(|_| {
            anyhow!("{pct:?} is not a percentage (PCT or PCT/PERIOD, e.g. 20 or 10/500ms)")
        })?;
        Self::new(pct, period)
    }

    pub fn traced_percent(&self) -> f64 {
        self.traced.as_secs_f64() / self.period.as_secs_f64() * 100.0
    }
}

/// A span of engine-clock ns during which the events were enabled: every event
/// of a window carries a stamp inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Window {
    pub start: u64,
    pub end: u64,
}

impl Default for BlockTraceOptions {
    fn default() -> Self {
        BlockTraceOptions {
            buffer_kb: default_buffer_kb(),
            drain_every: Duration::from_millis(50),
            sampling: None,
        }
    }
}

/// Per-CPU buffer: big enough that a run of a few seconds at a few hundred
/// thousand I/Os per second on one CPU (~57 bytes per event, two events per I/O)
/// is read only after it ends, so the reader takes no CPU from the run; a 16th of
/// available memory at most, split across CPUs; never under 8 MiB.
fn default_buffer_kb() -> u64 {
    const MIN_KB: u64 = 8 << 10;
    const MAX_KB: u64 = 128 << 10;
    // SAFETY: sysconf has no preconditions.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as u64;
    let avail_kb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .unwrap_or(0);
    (avail_kb / 16 / cpus).clamp(MIN_KB, MAX_KB)
}

impl BlockTrace {
    /// Trace the block device node `dev_path` (e.g. /dev/zram0, /dev/loop3).
    pub fn start(dev_path: &Path, opts: BlockTraceOptions) -> Result<BlockTrace> {
        let (major, minor) = block_dev_numbers(dev_path)?;
        Self::start_dev(major, minor, opts)
            .with_context(|| format!("block tracing of {}", dev_path.display()))
    }

    /// Trace device `major:minor`. Event stamps come back on the engine clock
    /// (see [`joinable_trace_clock`]); fails when they cannot.
    pub fn start_dev(major: u32, minor: u32, opts: BlockTraceOptions) -> Result<BlockTrace> {
        let tfs = Tracefs::open()?;
        let stamp = match (joinable_trace_clock(&tfs), clock::tsc_scale()) {
            (Some("x86-tsc"), Some(sc)) => StampClock::Tsc(sc),
            (Some(_), _) => StampClock::Mono,
            (None, _) => bail!(
                "the engine clock reads the TSC but this kernel's trace_clock has no \
                 x86-tsc, so kernel stamps cannot be put on it exactly; switch the engine \
                 to CLOCK_MONOTONIC first (IOLAB_CLOCK=monotonic, or clock::use_monotonic)"
            ),
        };
        let mut inst = tfs.new_instance()?;
        inst.set_clock(stamp.name())?;
        inst.set_buffer_size_kb(opts.buffer_kb)?;
        // Keep the oldest events when full, and count the refused ones: a breakdown
        // must not silently lose the start of a run.
        inst.set_option("overwrite", false)?;
        let kdev = kernel_dev(major, minor);
        let mut formats = Vec::new();
        let events = events_for(major, minor);
        for &(name, _) in &events {
            formats.push(inst.enable_event("block", name)?);
            inst.set_filter("block", name, &format!("dev == {kdev}"))?;
        }
        let decoder = BlockDecoder::new(&formats)?;
        inst.open_readers()?;
        inst.set_tracing_on(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let names: Vec<&'static str> = events.iter().map(|(n, _)| *n).collect();
        let worker = std::thread::Builder::new()
            .name("iolab-blktrace".into())
            .spawn({
                let names = names.clone();
                move || collect(inst, decoder, stamp, stop2, opts, &names)
            })
            .context("spawning the block-trace collector")?;
        Ok(BlockTrace {
            stop,
            worker: Some(worker),
            device: format!("{major}:{minor}"),
            clock: stamp.name(),
            events: names,
            sampling: opts.sampling,
        })
    }

    /// The `block:*` events enabled for this device (what its kind can fire).
    pub fn events(&self) -> &[&'static str] {
        &self.events
    }

    /// The trace clock events are stamped with (`x86-tsc` or `mono`); either way
    /// [`BlockTraceResult::events`] carry engine-clock ns.
    pub fn clock(&self) -> &'static str {
        self.clock
    }

    /// Stop tracing, drain what is left, remove the instance.
    pub fn stop(mut self) -> Result<BlockTraceResult> {
        self.stop.store(true, Ordering::Release);
        let w = self.worker.take().expect("stop is called once");
        let (events, loss, windows) = w
            .join()
            .map_err(|_| anyhow!("block-trace collector panicked"))??;
        Ok(BlockTraceResult {
            device: self.device.clone(),
            clock: self.clock,
            events,
            loss,
            windows,
            sampling: self.sampling,
        })
    }
}

impl Drop for BlockTrace {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

/// Leave the ring buffers alone while they have room; read a CPU's raw pages
/// (a copy per page, no decoding) once its buffer is half full, and decode
/// everything after the run. With sampling, also switch the events on and off
/// on schedule and note each window's edges on the engine clock.
fn collect(
    mut inst: Instance,
    decoder: BlockDecoder,
    stamp: StampClock,
    stop: Arc<AtomicBool>,
    opts: BlockTraceOptions,
    events: &[&'static str],
) -> Result<Collected> {
    let mut pages: Vec<(u32, Vec<u8>)> = Vec::new();
    let mut keep = |cpu: u32, page: &[u8]| pages.push((cpu, page.to_vec()));
    let half = opts.buffer_kb * 1024 / 2;
    let cpus = inst.reader_cpus();
    let mut windows = Vec::new();
    // Switching takes the kernel a while per event (code patching), so a
    // window is the span when all events are on: the completion side is
    // switched on first and off last, and the window is stamped inside. The
    // few events fired while switching fall outside every window and are
    // counted, not matched.
    let switch = |inst: &Instance, on: bool| -> Result<()> {
        let order: Vec<&&str> = if on {
            events.iter().rev().collect()
        } else {
            events.iter().collect()
        };
        for e in order {
            inst.set_event_enabled("block", e, on)?;
        }
        Ok(())
    };
    // Events were enabled by start: the first window opens now.
    let mut window: Option<u64> = opts.sampling.map(|_| clock::now_ns());
    let mut next_switch =
        std::time::Instant::now() + opts.sampling.map_or(Duration::ZERO, |s| s.traced);
    let mut next_drain = std::time::Instant::now();
    while !stop.load(Ordering::Acquire) {
        let now = std::time::Instant::now();
        if let Some(sm) = opts.sampling
            && now >= next_switch
        {
            match window.take() {
                Some(start) => {
                    windows.push(Window {
                        start,
                        end: clock::now_ns(),
                    });
                    switch(&inst, false)?;
                    next_switch += sm.period - sm.traced;
                }
                None => {
                    switch(&inst, true)?;
                    window = Some(clock::now_ns());
                    next_switch += sm.traced;
                }
            }
        }
        if now >= next_drain {
            next_drain = now + opts.drain_every;
            // One small stats read per CPU instead of reading pages: while the run
            // fits in half the buffer, nothing else happens until it ends.
            let mut full = Vec::new();
            for &cpu in &cpus {
                if inst.unread_bytes(cpu)? >= half {
                    full.push(cpu);
                }
            }
            if !full.is_empty() {
                inst.drain_pages_of(|c| full.contains(&c), &mut keep)?;
            }
        }
        let wake = if opts.sampling.is_some() {
            next_drain.min(next_switch)
        } else {
            next_drain
        };
        std::thread::sleep(wake.saturating_duration_since(std::time::Instant::now()));
    }
    if let Some(start) = window {
        windows.push(Window {
            start,
            end: clock::now_ns(),
        });
        switch(&inst, false)?;
    }
    inst.set_tracing_on(false)?;
    inst.drain_pages(&mut keep)?;
    let loss = inst.loss_report()?;
    let layout = inst.page_layout()?;
    inst.remove()?;
    if loss.any_loss() {
        bail!(
            "block trace lost events ({}); raise the buffer (BlockTraceOptions::buffer_kb)",
            loss.describe()
        );
    }
    let mut events = Vec::new();
    for (cpu, page) in &pages {
        parse_page(page, layout, |ts, rec| {
            if rec.len() < 8 {
                return;
            }
            let ev = RawEvent {
                cpu: *cpu,
                ts: stamp.to_engine_ns(ts),
                id: u16::from_le_bytes([rec[0], rec[1]]),
                pid: i32::from_le_bytes(rec[4..8].try_into().expect("4 bytes")),
                payload: rec,
            };
            if let Some(b) = decoder.decode(&ev) {
                events.push(b);
            }
        })
        .with_context(|| format!("parsing a cpu{cpu} ring-buffer page"))?;
    }
    Ok((events, loss, windows))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts: u64, action: Action, sector: u64) -> BlockEvent {
        BlockEvent {
            ts,
            action,
            dev: kernel_dev(7, 0),
            sector,
            nr_sector: 8,
            write: false,
            pid: 1,
            error: 0,
        }
    }

    #[test]
    fn matches_full_request_path_out_of_cpu_order() {
        use Action::*;
        // Completion recorded on another CPU arrives first in the input.
        let evs = [
            ev(900, C, 0),
            ev(100, Q, 0),
            ev(150, G, 0),
            ev(200, I, 0),
            ev(400, D, 0),
        ];
        let (reqs, st) = match_requests(&evs);
        assert_eq!(reqs.len(), 1);
        assert_eq!(st.completed, 1);
        let t = btt_table(&reqs, &st);
        assert_eq!((t.q2g.min_ns, t.g2i.min_ns, t.i2d.min_ns), (50, 50, 200));
        assert_eq!((t.d2c.max_ns, t.q2c.n, t.q2c.avg_ns), (500, 1, 800.0));
        assert!(t.notes.is_empty(), "{:?}", t.notes);
    }

    #[test]
    fn windows_never_pair_events_across_a_gap() {
        use Action::*;
        // Sector 8 is queued in the first window and completes in the second:
        // unseen in between, so it must not become one 2 ms request.
        let evs = [
            ev(100, Q, 8),
            ev(300, Q, 16),
            ev(900, Cb, 16),
            ev(2_000_100, Cb, 8),
            ev(2_000_200, Q, 24),
            ev(2_000_700, Cb, 24),
        ];
        let w = [
            Window {
                start: 50,
                end: 1_000,
            },
            Window {
                start: 2_000_000,
                end: 2_001_000,
            },
        ];
        let (reqs, st) = match_windows(&evs, &w);
        let q2c: Vec<u64> = reqs.iter().map(|r| r.c.unwrap() - r.q.unwrap()).collect();
        assert_eq!(q2c, vec![600, 500]);
        assert_eq!((st.orphan_completions, st.in_flight_at_end), (1, 1));
        assert_eq!(st.events, 6);
        assert_eq!(st.outside_windows, 0);
        let (_, st) = match_windows(&evs, &w[1..]);
        assert_eq!(st.outside_windows, 3, "the first window's events");
        // Without windows the same events pair sector 8 across the gap.
        let (all, _) = match_windows(&evs, &[]);
        assert_eq!(all.len(), 3);
    }

    #[test]
    fn sampling_spec_is_checked() {
        let s = Sampling::parse("20").unwrap();
        assert_eq!(s.traced, Duration::from_millis(200));
        assert!((s.traced_percent() - 20.0).abs() < 1e-9);
        let s = Sampling::parse("10%/500ms").unwrap();
        assert_eq!(
            (s.traced, s.period),
            (Duration::from_millis(50), Duration::from_millis(500))
        );
        for bad in ["0", "100", "250/1s"] {
            let e = Sampling::parse(bad).unwrap_err().to_string();
            assert!(e.contains("1-99"), "{e}");
        }
        for (bad, says) in [
            ("x", "percentage"),
            ("20/1ms", "too short"),
            ("20/xs", "period"),
        ] {
            let e = Sampling::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn bio_based_device_reports_missing_stages() {
        use Action::*;
        let evs = [
            ev(10, Q, 8),
            ev(5_010, Cb, 8),
            ev(6_000, Q, 16),
            ev(9_000, Cb, 16),
        ];
        let (reqs, st) = match_requests(&evs);
        let t = btt_table(&reqs, &st);
        assert_eq!(t.q2c.n, 2);
        assert_eq!(t.d2c.n, 0);
        assert!(t.notes[0].contains("bio-based"));
        assert_eq!(t.q2c_hist.buckets, vec![0, 1, 1]);
        let txt = render_btt(&t);
        assert!(txt.contains("D2C                          -"), "{txt}");
    }

    #[test]
    fn merges_orphans_and_in_flight_are_counted() {
        use Action::*;
        let evs = [
            ev(1, C, 99),
            ev(10, Q, 0),
            ev(11, G, 0),
            ev(12, Q, 8),
            BlockEvent {
                ts: 13,
                ..ev(13, Mb, 8)
            },
            ev(20, D, 0),
            ev(30, C, 0),
            ev(40, Q, 64),
        ];
        let (reqs, st) = match_requests(&evs);
        assert_eq!(reqs.len(), 1);
        assert_eq!(reqs[0].nr_sector, 16);
        assert_eq!(reqs[0].merged, 1);
        assert_eq!(
            (st.merged_bios, st.orphan_completions, st.in_flight_at_end),
            (1, 1, 1)
        );
    }

    #[test]
    fn histogram_buckets_are_log2_microseconds() {
        let mut h = Log2Hist::default();
        for ns in [0, 1_999, 2_000, 3_999, 4_000, 1_000_000] {
            h.add_ns(ns);
        }
        assert_eq!(h.buckets[0], 2);
        assert_eq!(h.buckets[1], 2);
        assert_eq!(h.buckets[2], 1);
        assert_eq!(h.buckets[9], 1, "1000 us is in [512, 1024)");
        assert_eq!(h.total(), 6);
    }

    #[test]
    fn join_splits_time_between_layers() {
        use Action::*;
        let evs = [
            ev(1_100, Q, 16),
            ev(1_200, G, 16),
            ev(1_500, D, 16),
            ev(9_500, C, 16),
            ev(20_000, Q, 16),
            ev(21_000, Cb, 16),
        ];
        let (reqs, _) = match_requests(&evs);
        let user = [
            UserIo {
                offset: 8192,
                len: 4096,
                op: Op::Read,
                t_submit_start: 1_000,
                t_submit_end: 1_700,
                t_complete_seen: 10_000,
            },
            UserIo {
                offset: 8192,
                len: 4096,
                op: Op::Write,
                t_submit_start: 19_000,
                t_submit_end: 19_500,
                t_complete_seen: 22_000,
            },
        ];
        let b = join(&user, &reqs, 0);
        assert_eq!(b.joined.len(), 1, "write must not match a read request");
        let j = b.joined[0];
        assert_eq!(
            (
                j.user_ns,
                j.block_ns,
                j.device_ns,
                j.completion_ns,
                j.total_ns
            ),
            (100, Some(400), Some(8_000), 500, 9_000)
        );
        assert_eq!(b.unmatched_user, 1);
        assert_eq!(b.unclaimed_requests, 1);
        let txt = render_breakdown(&b);
        assert!(txt.contains("driver+device (D -> C)"), "{txt}");
    }

    #[test]
    fn join_takes_users_of_several_streams_in_any_order() {
        use Action::*;
        // Two streams hit the same sector; their logs arrive one after the other,
        // the later stream first.
        let evs = [
            ev(150, Q, 8),
            ev(400, Cb, 8),
            ev(1_100, Q, 8),
            ev(1_900, Cb, 8),
            ev(2_100, Q, 8),
            ev(2_300, Cb, 8),
        ];
        let (reqs, _) = match_requests(&evs);
        let u = |s, e| UserIo {
            offset: 4096,
            len: 4096,
            op: Op::Read,
            t_submit_start: s,
            t_submit_end: e,
            t_complete_seen: e,
        };
        let user = [u(1_000, 2_000), u(2_050, 2_400), u(100, 500), u(600, 700)];
        let b = join(&user, &reqs, 0);
        assert_eq!(b.joined.len(), 3);
        assert_eq!(b.unmatched_user, 1, "600..700 saw no request");
        assert_eq!(b.unclaimed_requests, 0);
        let mut totals: Vec<u64> = b.joined.iter().map(|j| j.total_ns).collect();
        totals.sort_unstable();
        assert_eq!(totals, [350, 400, 1_000]);
    }

    #[test]
    fn parses_text_trace_lines() {
        let l = "     ksoftirqd/1-22      [001] ..s..   626.589779: block_rq_complete: \
                 7,0 RS () 0 + 8 be,0,4 [0]";
        let e = parse_trace_line(l).unwrap();
        assert_eq!(
            (e.action, e.dev, e.sector, e.nr_sector, e.pid, e.ts),
            (Action::C, kernel_dev(7, 0), 0, 8, 22, 626_589_779_000)
        );
        let l = "   dd-19976   [000] .....   626.589685: block_rq_issue: 7,0 WS 4096 () 8 + 8 \
                 be,0,4 [dd]";
        let e = parse_trace_line(l).unwrap();
        assert_eq!((e.action, e.sector, e.write), (Action::D, 8, true));
        assert!(parse_trace_line("# tracer: nop").is_none());
        assert!(parse_trace_line("  x-1 [000] ..... 1.0: sys_enter: NR 3").is_none());
    }
}
