//! Cross-option rules of `verify_interval` and `fill_device` (the verify
//! family's checks beyond `options::check_verify`).

use super::spec::{BlockSizes, Direction, JobSpec};

/// fio's meaning of `verify_interval`, applied in place: unset with a write
/// block size range, it is the smallest write block; longer than the
/// smallest write block it becomes that block (or, for a job that also
/// reads, longer than the smallest read block: that one); and unset or not
/// dividing the smallest and largest write blocks, it becomes their greatest
/// common divisor (so a fixed block size without it gets one header per
/// block). fio does this silently and so does iolab: the header density is
/// the only thing that changes, and it is where fio puts the headers.
pub(crate) fn fit_interval(s: &mut JobSpec) {
    let mut iv = s.verify.interval;
    let (write_min, write_max) = (s.bs[1].min(), s.bs[1].max());
    let read_min = s.bs[0].min();
    if write_min == 0 || read_min == 0 {
        return;
    }
    if write_max != write_min && iv == 0 {
        iv = write_min;
    }
    if iv > write_min {
        iv = write_min;
    } else if s.rw.dir.issues()[0] && iv > read_min {
        iv = read_min;
    }
    if iv == 0 || write_min % iv != 0 || write_max % iv != 0 {
        iv = gcd(write_min, write_max);
    }
    s.verify.interval = iv;
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Why the job's `verify_interval` cannot be used, or None if it can (or is
/// not set), once [`fit_interval`] has given it fio's meaning. Every block
/// must still split into whole intervals (a size of a bssplit between the
/// smallest and largest may not): a chunk shorter than one would carry a
/// header and almost no data.
pub(crate) fn interval_problem(s: &JobSpec) -> Option<String> {
    let iv = s.verify.interval;
    if iv == 0 {
        return None;
    }
    if (iv as usize) < s.verify.min_block() {
        return Some(format!(
            "verify_interval={iv} is smaller than {} bytes (each interval carries a {}-byte \
             header); use verify_interval=512 or more",
            s.verify.min_block(),
            s.verify.header_len()
        ));
    }
    for b in &s.bs {
        // A range's sizes are multiples of its minimum, so checking it covers them.
        let sizes: Vec<u32> = match b {
            BlockSizes::Fixed(x) => vec![*x],
            BlockSizes::Range { min, .. } => vec![*min],
            BlockSizes::Split(v) => v.iter().map(|(x, _)| *x).collect(),
        };
        if let Some(bad) = sizes.into_iter().find(|x| x % iv != 0) {
            return Some(format!(
                "verify_interval={iv} does not divide the block size {bad}: every block must \
                 split into whole intervals; use a verify_interval that divides every block size"
            ));
        }
    }
    None
}

/// Why the job's `verify_offset` cannot be used, or None if it can (or is
/// 0). The header must not overlap the bytes it is swapped with, and the
/// swapped range must lie inside every interval (every block when there is
/// no `verify_interval`).
pub(crate) fn offset_problem(s: &JobSpec) -> Option<String> {
    let off = s.verify.offset as u64;
    if off == 0 {
        return None;
    }
    let h = s.verify.header_len() as u64;
    if off < h {
        return Some(format!(
            "verify_offset={off} would swap the {h}-byte header with bytes that overlap it; \
             use 0 or at least {h}"
        ));
    }
    let unit = match s.verify.interval {
        0 => s.bs[0].min().min(s.bs[1].min()) as u64,
        iv => iv as u64,
    };
    let smallest = s.bs[0].min().min(s.bs[1].min()) as u64;
    if off + h > unit {
        let what = if s.verify.interval == 0 || unit == smallest {
            "the smallest block"
        } else {
            "verify_interval"
        };
        return Some(format!(
            "verify_offset={off} plus the {h}-byte header runs past {what} ({unit} bytes); \
             use a verify_offset of at most {}",
            unit.saturating_sub(h)
        ));
    }
    None
}

/// Why the job's `fill_device` cannot be used as written, or None.
pub(crate) fn fill_device_problem(s: &JobSpec) -> Option<String> {
    if !s.fill_device {
        return None;
    }
    if s.rw.dir != Direction::Write {
        return Some(format!(
            "fill_device applies to write jobs (rw=write or randwrite); rw={} would first fill \
             the filesystem and then read it, which iolab does not do: lay the file out with a \
             write job and size=",
            s.rw.fio_name()
        ));
    }
    None
}
