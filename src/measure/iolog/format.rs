//! fio's log file formats: the rows iolab writes and reads back.
//!
//! Latency, bandwidth and IOPS logs (fio's HOWTO, "Log File Formats"):
//! `time_ms, value, ddir, bs[, offset], prio` — latency in ns, bandwidth in
//! KiB/s, IOPS; `prio` is 0/1 (high-priority class) or, with `log_prio`, the
//! ioprio value in hex. Averaged rows (`log_avg_msec`) carry bs and offset 0.
//!
//! Histogram logs: `time_ms, ddir, bs, bin0, bin1, ...`, each row the I/Os
//! completed in its window per bin of fio's clat histogram ([`PLAT_NR`] bins,
//! `2^log_hist_coarseness` of them summed per column).

use std::io::{self, Write};

/// fio's histogram: 2^6 bins per power of two above 2^6 ns, 29 groups.
pub const PLAT_BITS: u32 = 6;
pub const PLAT_VAL: u64 = 1 << PLAT_BITS;
pub const PLAT_GROUPS: usize = 29;
pub const PLAT_NR: usize = PLAT_GROUPS * PLAT_VAL as usize;

/// The histogram bin of a latency (ns), as fio sorts them: values below 128 ns
/// have a bin each; above, each power of two is split in 64 equal bins (so a
/// bin is at most 1/64 of its value wide).
pub fn plat_index(ns: u64) -> usize {
    let msb = 63u32.saturating_sub(ns.leading_zeros());
    if ns == 0 || msb <= PLAT_BITS {
        return ns as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) as u64) << PLAT_BITS;
    let offset = (ns >> error_bits) & (PLAT_VAL - 1);
    ((base + offset) as usize).min(PLAT_NR - 1)
}

/// The smallest latency (ns) that falls in bin `idx`.
#[cfg(any(test, feature = "testing"))]
pub fn plat_bin_low(idx: usize) -> u64 {
    let idx = idx as u64;
    if idx < 2 * PLAT_VAL {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let offset = idx & (PLAT_VAL - 1);
    (PLAT_VAL + offset) << error_bits
}

/// How a job's rows end: the optional offset column and the priority column.
#[derive(Clone, Copy, Debug, Default)]
pub struct Columns {
    pub offset: bool,
    /// `log_prio`: the ioprio value in hex; otherwise 1 for the RT class.
    pub prio_value: bool,
    pub ioprio: u16,
}

impl Columns {
    /// fio's priority column for a stream with this ioprio.
    fn prio(&self) -> (bool, u16) {
        (self.prio_value, self.ioprio)
    }
}

/// Write one latency/bandwidth/IOPS row.
pub fn write_row(
    w: &mut impl Write,
    cols: &Columns,
    t_ms: u64,
    value: u64,
    ddir: u8,
    bs: u32,
    offset: u64,
) -> io::Result<()> {
    write!(w, "{t_ms}, {value}, {ddir}, {bs}")?;
    if cols.offset {
        write!(w, ", {offset}")?;
    }
    match cols.prio() {
        (true, v) => writeln!(w, ", 0x{v:04x}"),
        // IOPRIO_CLASS_RT is class 1 (the top three bits of the value).
        (false, v) => writeln!(w, ", {}", u8::from(v >> 13 == 1)),
    }
}

/// One row of a latency, bandwidth or IOPS log, read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub t_ms: u64,
    pub value: u64,
    pub ddir: u8,
    pub bs: u32,
    pub offset: Option<u64>,
}

/// A row that does not read as fio's format.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("line {line}: '{text}' is not a fio log row (time, value, ddir, bs[, offset], prio)")]
pub struct BadRow {
    pub line: usize,
    pub text: String,
}

/// Read a latency, bandwidth or IOPS log.
pub fn parse_rows(text: &str) -> Result<Vec<Row>, BadRow> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = || BadRow {
            line: i + 1,
            text: line.to_string(),
        };
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() != 5 && f.len() != 6 {
            return Err(bad());
        }
        let num = |s: &str| s.parse::<u64>().map_err(|_| bad());
        out.push(Row {
            t_ms: num(f[0])?,
            value: num(f[1])?,
            ddir: num(f[2])? as u8,
            bs: num(f[3])? as u32,
            offset: if f.len() == 6 { Some(num(f[4])?) } else { None },
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_match_fio_layout() {
        // Exact below 128 ns, then 64 bins per power of two.
        assert_eq!(plat_index(0), 0);
        assert_eq!(plat_index(127), 127);
        assert_eq!(plat_index(128), 128);
        assert_eq!(plat_index(255), 191);
        assert_eq!(plat_index(256), 192);
        assert_eq!(plat_index(u64::MAX), PLAT_NR - 1);
        for v in [1u64, 64, 127, 128, 1000, 4096, 123_456, 9_999_999_999] {
            let i = plat_index(v);
            assert!(plat_bin_low(i) <= v, "{v} in bin {i}");
            assert!(plat_bin_low(i + 1) > v, "{v} below bin {}", i + 1);
        }
        // Bins are contiguous.
        for i in 0..PLAT_NR - 1 {
            assert_eq!(plat_index(plat_bin_low(i)), i);
        }
    }

    #[test]
    fn rows_round_trip_with_and_without_offset() {
        let mut b = Vec::new();
        let plain = Columns::default();
        write_row(&mut b, &plain, 5, 1234, 1, 4096, 8192).unwrap();
        let with = Columns {
            offset: true,
            prio_value: true,
            ioprio: (1 << 13) | 4,
        };
        write_row(&mut b, &with, 6, 99, 0, 512, 8192).unwrap();
        let text = String::from_utf8(b).unwrap();
        assert_eq!(text, "5, 1234, 1, 4096, 0\n6, 99, 0, 512, 8192, 0x2004\n");
        let rows = parse_rows(&text).unwrap();
        assert_eq!(rows[0].offset, None);
        assert_eq!(rows[1].offset, Some(8192));
        assert_eq!(rows[1].value, 99);
        assert!(parse_rows("1, 2, 3").is_err());
    }
}
