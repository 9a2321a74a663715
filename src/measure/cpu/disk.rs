//! /proc/diskstats and fio's disk utilisation.

use std::fs;
use std::path::Path;

use crate::measure::clock;

use super::{CpuSourceError, Result, read_proc};

/// One line of /proc/diskstats (the fields fio's disk_util uses).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DiskStat {
    pub major: u32,
    pub minor: u32,
    pub name: String,
    pub read_ios: u64,
    pub read_merges: u64,
    pub read_sectors: u64,
    pub read_ticks: u64,
    pub write_ios: u64,
    pub write_merges: u64,
    pub write_sectors: u64,
    pub write_ticks: u64,
    pub in_flight: u64,
    /// Milliseconds with at least one request in flight.
    pub io_ticks: u64,
    /// Weighted milliseconds in queue (sum over requests).
    pub in_queue: u64,
}

/// /proc/diskstats at one instant.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DiskStats {
    /// Engine-clock time of the reading (for util%).
    pub t_ns: u64,
    pub disks: Vec<DiskStat>,
}

impl DiskStats {
    pub fn read() -> Result<DiskStats> {
        read_proc("/proc/diskstats", |text| {
            DiskStats::parse(text, clock::now_ns())
        })
    }

    pub fn parse(text: &str, t_ns: u64) -> Result<DiskStats> {
        let mut disks = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let f: Vec<&str> = line.split_ascii_whitespace().collect();
            if f.is_empty() {
                continue;
            }
            if f.len() < 14 {
                return Err(CpuSourceError::FewDiskFields {
                    line: i + 1,
                    n: f.len(),
                });
            }
            let n = |k: usize| -> Result<u64> {
                f[k].parse::<u64>()
                    .map_err(|err| CpuSourceError::DiskNumber {
                        line: i + 1,
                        field: k + 1,
                        value: f[k].to_string(),
                        err,
                    })
            };
            disks.push(DiskStat {
                major: n(0)? as u32,
                minor: n(1)? as u32,
                name: f[2].to_string(),
                read_ios: n(3)?,
                read_merges: n(4)?,
                read_sectors: n(5)?,
                read_ticks: n(6)?,
                write_ios: n(7)?,
                write_merges: n(8)?,
                write_sectors: n(9)?,
                write_ticks: n(10)?,
                in_flight: n(11)?,
                io_ticks: n(12)?,
                in_queue: n(13)?,
            });
        }
        Ok(DiskStats { t_ns, disks })
    }

    pub fn get(&self, name: &str) -> Option<&DiskStat> {
        self.disks.iter().find(|d| d.name == name)
    }

    /// fio's disk_util for the named devices (those present in both readings).
    pub fn util(before: &DiskStats, after: &DiskStats, names: &[&str]) -> Vec<DiskUtil> {
        let elapsed_ms = after.t_ns.saturating_sub(before.t_ns) as f64 / 1e6;
        names
            .iter()
            .filter_map(|n| {
                let (b, a) = (before.get(n)?, after.get(n)?);
                let d = |x: u64, y: u64| y.saturating_sub(x);
                let io_ticks = d(b.io_ticks, a.io_ticks);
                let util = if elapsed_ms > 0.0 {
                    (100.0 * io_ticks as f64 / elapsed_ms).min(100.0)
                } else {
                    0.0
                };
                Some(DiskUtil {
                    name: a.name.clone(),
                    read_ios: d(b.read_ios, a.read_ios),
                    write_ios: d(b.write_ios, a.write_ios),
                    read_merges: d(b.read_merges, a.read_merges),
                    write_merges: d(b.write_merges, a.write_merges),
                    read_ticks: d(b.read_ticks, a.read_ticks),
                    write_ticks: d(b.write_ticks, a.write_ticks),
                    in_queue: d(b.in_queue, a.in_queue),
                    util,
                })
            })
            .collect()
    }
}

/// fio's `disk_util[]` entry (same keys and meaning).
#[derive(
    schemars::JsonSchema, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize,
)]
pub struct DiskUtil {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub read_ticks: u64,
    pub write_ticks: u64,
    pub in_queue: u64,
    /// Percent of the elapsed time the device had I/O in flight.
    pub util: f64,
}

/// The block device (whole disk) holding `path`, by name as in /proc/diskstats,
/// so a job on a file can report its disk like fio does. `None` for files on
/// filesystems without a block device (tmpfs, overlay without one).
pub fn disk_of_path(path: &Path) -> Option<String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let md = fs::metadata(path).ok()?;
    let (maj, min) = if md.file_type().is_block_device() {
        (libc::major(md.rdev()), libc::minor(md.rdev()))
    } else {
        (libc::major(md.dev()), libc::minor(md.dev()))
    };
    if maj == 0 {
        return None;
    }
    let disk = crate::sys::blockdev::block_queue_of_dev(maj, min)
        .ok()?
        .disk;
    (!disk.is_empty()).then_some(disk)
}
