//! The binary ring-buffer page (`trace_pipe_raw`): its header and the walk over
//! its events (kernel/trace/ring_buffer.c's encoding).

use super::format::{FormatError, parse_field};

/// What is wrong with `header_page` or a binary ring-buffer page.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("header_page: {line:?}: {err}")]
    HeaderLine { line: String, err: FormatError },
    #[error("header_page has no `{0}` field")]
    HeaderField(&'static str),
    #[error("ring-buffer page of {0} bytes is shorter than its header")]
    ShorterThanHeader(usize),
    #[error("ring-buffer page header truncated")]
    HeaderTruncated,
    #[error("unsupported ring-buffer commit field size {0}")]
    CommitSize(usize),
    #[error("ring-buffer page says {len} bytes of data but only {read} were read")]
    ShortData { len: usize, read: usize },
    #[error("ring-buffer page truncated at byte {0}")]
    Truncated(usize),
    #[error("ring-buffer event at byte {off} has length {len}")]
    EventLength { off: usize, len: usize },
    #[error("ring-buffer event at byte {0} overruns page")]
    Overrun(usize),
}

type Result<T, E = PageError> = std::result::Result<T, E>;

/// One event read from the ring buffer.
#[derive(Clone, Copy, Debug)]
pub struct RawEvent<'a> {
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub cpu: u32,
    /// Timestamp on the instance's trace clock (CLOCK_MONOTONIC ns with `mono`).
    pub ts: u64,
    /// The event id (`common_type`).
    pub id: u16,
    /// `common_pid`: the thread that was current when the event fired.
    pub pid: i32,
    /// The whole record, common fields included, so `Field::offset` applies.
    pub payload: &'a [u8],
}

/// Layout of a ring-buffer page header (`events/header_page`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLayout {
    pub commit_offset: usize,
    pub commit_size: usize,
    pub data_offset: usize,
}

impl PageLayout {
    /// The 64-bit kernel layout: u64 timestamp, local_t commit, data at 16.
    pub const LP64: PageLayout = PageLayout {
        commit_offset: 8,
        commit_size: 8,
        data_offset: 16,
    };

    pub fn parse(header_page: &str) -> Result<PageLayout> {
        let mut commit = None;
        let mut data = None;
        for line in header_page.lines() {
            let line = line.trim();
            if !line.starts_with("field:") {
                continue;
            }
            let f = parse_field(line).map_err(|err| PageError::HeaderLine {
                line: line.to_string(),
                err,
            })?;
            match f.name.as_str() {
                "commit" => commit = Some((f.offset, f.size)),
                "data" => data = Some(f.offset),
                _ => {}
            }
        }
        let (commit_offset, commit_size) = commit.ok_or(PageError::HeaderField("commit"))?;
        Ok(PageLayout {
            commit_offset,
            commit_size,
            data_offset: data.ok_or(PageError::HeaderField("data"))?,
        })
    }
}

/// What one page said about itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageInfo {
    pub events: u64,
    /// The kernel flagged lost events before this page.
    pub missed: bool,
    /// Number of lost events when the kernel stored it (else 0 with `missed`).
    pub missed_count: u64,
}

// Ring-buffer event header: 5-bit type_len, 27-bit time delta (kernel/trace/ring_buffer.c).
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
const TS_SHIFT: u32 = 27;
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;

/// A page's base timestamp, the end of its data, and its lost-events flags,
/// without walking its events.
pub(super) fn page_header(page: &[u8], layout: PageLayout) -> Result<(u64, usize, PageInfo)> {
    if page.len() < layout.data_offset || page.len() < 8 {
        return Err(PageError::ShorterThanHeader(page.len()));
    }
    let ts = u64::from_le_bytes(page[0..8].try_into().expect("8 bytes"));
    let commit = match layout.commit_size {
        8 | 4 => {
            let b = page
                .get(layout.commit_offset..layout.commit_offset + layout.commit_size)
                .ok_or(PageError::HeaderTruncated)?;
            let mut w = [0u8; 8];
            w[..b.len()].copy_from_slice(b);
            u64::from_le_bytes(w)
        }
        n => return Err(PageError::CommitSize(n)),
    };
    let len = (commit & !(MISSED_EVENTS | MISSED_STORED) & 0xffff_ffff) as usize;
    let mut info = PageInfo {
        missed: commit & MISSED_EVENTS != 0,
        ..PageInfo::default()
    };
    let end = layout.data_offset + len;
    if end > page.len() {
        return Err(PageError::ShortData {
            len,
            read: page.len() - layout.data_offset,
        });
    }
    if commit & MISSED_STORED != 0 {
        // The count of lost events sits right after the data.
        if let Some(b) = page.get(end..end + 8) {
            info.missed_count = u64::from_le_bytes(b.try_into().expect("8 bytes"));
        }
    }
    Ok((ts, end, info))
}

/// Walk the events of one ring-buffer page (as read from `trace_pipe_raw`), calling
/// `f(ts, record)` for each data event. Malformed pages give an error naming the
/// byte offset rather than a panic.
pub fn parse_page(
    page: &[u8],
    layout: PageLayout,
    mut f: impl FnMut(u64, &[u8]),
) -> Result<PageInfo> {
    let rd_u32 = |off: usize| -> Result<u32> {
        page.get(off..off + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
            .ok_or(PageError::Truncated(off))
    };
    let (mut ts, end, mut info) = page_header(page, layout)?;
    let data = layout.data_offset;
    let mut off = data;
    while off + 4 <= end {
        let hdr = rd_u32(off)?;
        let type_len = hdr & 0x1f;
        let delta = (hdr >> 5) as u64;
        match type_len {
            TYPE_PADDING => {
                if delta == 0 {
                    break; // rest of the page is padding
                }
                // A discarded event: skip it, but its time delta still counts.
                ts += delta;
                let l = rd_u32(off + 4)? as usize;
                off += 4 + ((l + 3) & !3);
            }
            TYPE_TIME_EXTEND => {
                ts += delta | ((rd_u32(off + 4)? as u64) << TS_SHIFT);
                off += 8;
            }
            TYPE_TIME_STAMP => {
                let abs = delta | ((rd_u32(off + 4)? as u64) << TS_SHIFT);
                // Absolute stamps carry the low 59 bits; keep the top bits we had.
                ts = (ts & !((1u64 << 59) - 1)) | abs;
                off += 8;
            }
            0 => {
                ts += delta;
                let l = rd_u32(off + 4)? as usize;
                if l < 4 {
                    return Err(PageError::EventLength { off, len: l });
                }
                let rec = page
                    .get(off + 8..off + 4 + l)
                    .ok_or(PageError::Overrun(off))?;
                f(ts, rec);
                info.events += 1;
                off += 4 + ((l + 3) & !3);
            }
            n => {
                ts += delta;
                let l = n as usize * 4;
                let rec = page
                    .get(off + 4..off + 4 + l)
                    .ok_or(PageError::Overrun(off))?;
                f(ts, rec);
                info.events += 1;
                off += 4 + l;
            }
        }
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push_small(page: &mut Vec<u8>, delta: u32, rec: &[u8]) {
        assert!(rec.len().is_multiple_of(4) && rec.len() <= 112);
        let hdr = (delta << 5) | (rec.len() as u32 / 4);
        page.extend_from_slice(&hdr.to_le_bytes());
        page.extend_from_slice(rec);
    }

    fn finish(mut page: Vec<u8>, base_ts: u64, flags: u64) -> Vec<u8> {
        let len = (page.len() - 16) as u64;
        page[0..8].copy_from_slice(&base_ts.to_le_bytes());
        page[8..16].copy_from_slice(&(len | flags).to_le_bytes());
        page.resize(4096, 0xee);
        page
    }

    #[test]
    fn walks_page_with_extends_and_long_events() {
        let mut page = vec![0u8; 16];
        push_small(&mut page, 5, &[1, 0, 0, 0, 7, 0, 0, 0]);
        // time extend: delta = (2 << 27) | 3
        page.extend_from_slice(&((3u32 << 5) | TYPE_TIME_EXTEND).to_le_bytes());
        page.extend_from_slice(&2u32.to_le_bytes());
        // long event (type_len 0): array[0] = payload + 4
        let long = vec![9u8; 120];
        page.extend_from_slice(&(1u32 << 5).to_le_bytes());
        page.extend_from_slice(&(124u32).to_le_bytes());
        page.extend_from_slice(&long);
        // discarded event (padding with a delta), then a normal one
        page.extend_from_slice(&((1u32 << 5) | TYPE_PADDING).to_le_bytes());
        page.extend_from_slice(&12u32.to_le_bytes());
        page.extend_from_slice(&[0; 8]);
        push_small(&mut page, 10, &[2, 0, 0, 0, 8, 0, 0, 0]);
        let page = finish(page, 1000, 0);
        let mut seen = Vec::new();
        let info = parse_page(&page, PageLayout::LP64, |ts, rec| {
            seen.push((ts, rec.len()))
        })
        .unwrap();
        assert_eq!(info.events, 3);
        assert!(!info.missed);
        let ext = (2u64 << 27) | 3;
        assert_eq!(seen[0], (1005, 8));
        assert_eq!(seen[1], (1005 + ext + 1, 120));
        assert_eq!(seen[2], (1005 + ext + 1 + 1 + 10, 8));
    }

    #[test]
    fn reports_missed_events_flag_and_count() {
        let mut page = vec![0u8; 16];
        push_small(&mut page, 1, &[1, 0, 0, 0, 7, 0, 0, 0]);
        let mut page = finish(page, 0, MISSED_EVENTS | MISSED_STORED);
        let end = 16 + 12;
        page[end..end + 8].copy_from_slice(&42u64.to_le_bytes());
        let info = parse_page(&page, PageLayout::LP64, |_, _| {}).unwrap();
        assert!(info.missed);
        assert_eq!(info.missed_count, 42);
    }

    #[test]
    fn corrupt_page_is_an_error_not_a_panic() {
        let mut page = vec![0u8; 16];
        page.extend_from_slice(&0u32.to_le_bytes());
        page.extend_from_slice(&5000u32.to_le_bytes());
        let page = finish(page, 0, 0);
        assert!(parse_page(&page, PageLayout::LP64, |_, _| {}).is_err());
        assert!(parse_page(&page[..10], PageLayout::LP64, |_, _| {}).is_err());
    }
}
