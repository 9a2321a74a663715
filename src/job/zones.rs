//! fio's zone options (`zonemode`, `zonesize`, `zonerange`, `zoneskip`,
//! `max_open_zones`, `zone_reset_threshold`, `zone_reset_frequency`,
//! `read_beyond_wp`): what they mean for a job, and the rules between them.
//! The offsets they shape are `workload::zones`'s; parsing and the rules
//! between the options are `zones_opts`'s (so this file imports no draft).

/// fio's `zonemode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ZoneMode {
    /// No zones (fio's default).
    #[default]
    None,
    /// Walk `zonesize` bytes of every `zonerange`, then skip `zoneskip`.
    Strided,
    /// Zoned block device semantics: writes at each zone's write pointer,
    /// reads below it. Regular files and non-zoned block devices get emulated
    /// sequential-write-required zones, as in fio.
    Zbd,
}

pub const MODE_VALID: &str = "none, strided or zbd";

/// fio's largest `max_open_zones` (ZBD_MAX_OPEN_ZONES).
pub const MAX_OPEN_ZONES: u64 = 4096;

/// The zone options of one job.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ZoneSpec {
    pub mode: ZoneMode,
    /// `zonesize`: bytes per zone (strided: bytes read or written per zone
    /// before moving on). 0 = not given.
    pub size: u64,
    /// `zonerange`: bytes a strided zone spans (0 = `zonesize`, fio's default).
    pub range: u64,
    /// `zoneskip`: bytes skipped after each strided zone.
    pub skip: u64,
    /// `max_open_zones` (zbd): zones written at once; 0 = no limit.
    pub max_open: u32,
    /// `read_beyond_wp` (zbd): reads may go above the write pointer.
    pub read_beyond_wp: bool,
    /// `zone_reset_threshold` (zbd): share of the region holding data above
    /// which zones are reset every 1/`zone_reset_frequency` writes.
    pub reset_threshold: f64,
    /// `zone_reset_frequency` (zbd): 0 = never reset for the threshold.
    pub reset_frequency: f64,
}

impl ZoneSpec {
    /// `zonerange` as in effect (fio: it defaults to `zonesize`).
    pub fn range(&self) -> u64 {
        if self.range == 0 {
            self.size
        } else {
            self.range
        }
    }
}

/// fio's zone-count sizes: `Nz` in `size`, `io_size`, `offset`,
/// `offset_increment` and `zoneskip` means N zones, in bytes N times the zone
/// size (fio's `zbd_recalc_options_with_zone_granularity`). A later byte value
/// of the same option clears its count.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ZoneCounts {
    pub size: Option<u64>,
    pub io_size: Option<u64>,
    pub offset: Option<u64>,
    pub offset_increment: Option<u64>,
    pub zoneskip: Option<u64>,
}
