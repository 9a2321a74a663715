//! Decoding block tracepoint events (raw pages or trace text) into [`BlockEvent`]s.

use std::collections::HashMap;

use serde::Serialize;

use crate::measure::tracefs::format::FormatError;
use crate::measure::tracefs::{EventFormat, Field, RawEvent, field_i64, field_str, field_u64};
#[cfg(any(test, feature = "testing"))]
use crate::sys::blockdev::kernel_dev;

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

pub(super) const EVENTS: [(&str, Action); 8] = [
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
    /// Fails when a block event's format lacks a field the decoder reads.
    pub fn new(formats: &[EventFormat]) -> Result<BlockDecoder, FormatError> {
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
#[cfg(any(test, feature = "testing"))]
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

#[cfg(any(test, feature = "testing"))]
fn parse_text_ts(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.')?;
    let sec: u64 = sec.trim().parse().ok()?;
    let mut ns: u64 = frac.parse().ok()?;
    for _ in frac.len()..9 {
        ns *= 10;
    }
    Some(sec * 1_000_000_000 + ns)
}
