//! fio's text iologs, versions 2 and 3 (fio's HOWTO, "Trace file format").
//!
//! Version 2: `FILE add|open|close` and `FILE read|write|trim|sync|datasync|wait
//! OFFSET LENGTH`; `wait` stalls OFFSET microseconds. Version 3 puts a
//! timestamp (microseconds from the start of the run) in front of every line
//! and has no `wait`. fio skips a line it cannot read with a message; iolab
//! stops with the file and line, because a replay without that line is not
//! the logged workload.

use std::path::Path;

use super::{Builder, ReplayError, Want};
use crate::request::Op;

pub(super) const V2: &str = "fio version 2 iolog";
pub(super) const V3: &str = "fio version 3 iolog";

/// The log's version from its first line, if it is an iolog.
pub(super) fn version(first: &str) -> Option<u8> {
    if first.starts_with(V2) {
        Some(2)
    } else if first.starts_with(V3) {
        Some(3)
    } else {
        None
    }
}

/// Parse `text` (the whole log, header included) into `b`.
pub(super) fn parse(path: &Path, text: &str, b: &mut Builder) -> Result<(), ReplayError> {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("");
    let v = version(first).ok_or_else(|| ReplayError::NotALog {
        path: path.to_path_buf(),
        first: first.chars().take(60).collect(),
    })?;
    let line_err = |line: usize, problem: String| ReplayError::Line {
        path: path.to_path_buf(),
        line,
        problem,
    };
    for (i, raw) in lines.enumerate() {
        let line = i + 2;
        let l = raw.trim();
        // Clones of an fio job append to one file, each with its header:
        // the header again is not an I/O.
        if l.is_empty() || version(l).is_some() {
            continue;
        }
        let f: Vec<&str> = l.split_whitespace().collect();
        let (t_us, rest) = if v == 3 {
            let Some((t, rest)) = f.split_first() else {
                continue;
            };
            let t = t.parse::<u64>().map_err(|_| {
                line_err(
                    line,
                    format!("'{t}' is not a timestamp (a version 3 line starts with microseconds)"),
                )
            })?;
            (Some(t), rest)
        } else {
            (None, &f[..])
        };
        let num = |s: &str, what: &str| {
            s.parse::<u64>()
                .map_err(|_| line_err(line, format!("{what} '{s}' is not a whole number")))
        };
        match rest {
            [file, act] => {
                let want = match *act {
                    "add" => Want::Add,
                    "open" => Want::Open,
                    "close" => Want::Close,
                    _ => {
                        return Err(line_err(
                            line,
                            format!("unknown file action '{act}' (valid: add, open, close)"),
                        ));
                    }
                };
                b.file_action(file, want, t_us)
                    .map_err(|p| line_err(line, p))?;
            }
            [file, act, off, len] => {
                let op = match *act {
                    "read" => Op::Read,
                    "write" => Op::Write,
                    "trim" => Op::Trim,
                    "sync" | "datasync" => Op::Fsync,
                    "wait" if v == 2 => {
                        b.wait_us(num(off, "wait time")?);
                        continue;
                    }
                    "wait" => {
                        return Err(line_err(
                            line,
                            "wait is not allowed in a version 3 log (its timestamps say when)"
                                .into(),
                        ));
                    }
                    _ => {
                        return Err(line_err(
                            line,
                            format!(
                                "unknown I/O action '{act}' (valid: read, write, trim, sync, \
                                 datasync{})",
                                if v == 2 { ", wait" } else { "" }
                            ),
                        ));
                    }
                };
                let offset = num(off, "offset")?;
                let len = num(len, "length")?;
                let len = u32::try_from(len).map_err(|_| {
                    line_err(
                        line,
                        format!("length {len} is over 4 GiB, more than one I/O can be"),
                    )
                })?;
                if *act == "datasync" {
                    b.next_is_datasync();
                }
                b.io(file, op, offset, len, t_us)
                    .map_err(|p| line_err(line, p))?;
            }
            _ => {
                return Err(line_err(
                    line,
                    format!(
                        "'{l}' is not a version {v} line ({}FILE ACTION or {}FILE ACTION OFFSET \
                         LENGTH)",
                        if v == 3 { "TIME " } else { "" },
                        if v == 3 { "TIME " } else { "" },
                    ),
                ));
            }
        }
    }
    Ok(())
}
