//! Zones shaping a job's offsets (fio's `zonemode`): the strided walk and the
//! emulated zoned device of `zonemode=zbd`. Both are built once per generator;
//! per request they cost a few arithmetic operations and touch preallocated
//! state only (a zbd read into an empty zone searches the zones for data).
//!
//! Offsets here are relative to the generator's region start, like the
//! generator's own.

use crate::job::zones::{ZoneMode, ZoneSpec};
use crate::job::{Direction, JobSpec, Pattern};

/// fio's strided walk: `size` bytes are issued in each zone of `range` bytes
/// (wrapping inside the zone when `size > range`), then the walk moves
/// `range + skip` on. A zone start past the end wraps to the start; so does
/// an I/O that would run past it (fio ends the file there and starts it
/// again, zone count and all). The end is the file's, as in fio (not the end
/// of `offset` + `size`); on a block device or the emulated one it is the
/// region's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Strided {
    size: u64,
    range: u64,
    step: u64,
    /// Where the walk wraps (relative to the region start).
    end: u64,
    /// Start of the current zone and bytes issued in it.
    zone_start: u64,
    zone_bytes: u64,
}

/// The walk's position, to take a request back (`Generator::redo_as`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct StridedPos {
    zone_start: u64,
    zone_bytes: u64,
}

impl Strided {
    pub(crate) fn new(z: &ZoneSpec, region: u64) -> Strided {
        Strided {
            size: z.size,
            range: z.range(),
            step: z.range().saturating_add(z.skip),
            end: region,
            zone_start: 0,
            zone_bytes: 0,
        }
    }

    pub(crate) fn pos(&self) -> StridedPos {
        StridedPos {
            zone_start: self.zone_start,
            zone_bytes: self.zone_bytes,
        }
    }

    pub(crate) fn set_pos(&mut self, p: StridedPos) {
        self.zone_start = p.zone_start;
        self.zone_bytes = p.zone_bytes;
    }

    /// A new pass over the region starts at the first zone.
    pub(crate) fn restart(&mut self) {
        self.zone_start = 0;
        self.zone_bytes = 0;
    }

    /// Move to the next zone once this one had its `size` bytes; returns
    /// true when the sequential position must go to the zone start (a new
    /// zone, or the end of the zone's range when `size > range`).
    #[inline]
    pub(crate) fn set_end(&mut self, end: u64) {
        self.end = self.end.max(end);
    }

    #[inline]
    fn advance(&mut self, pos: u64) -> bool {
        let mut moved = false;
        if self.zone_bytes >= self.size {
            self.zone_bytes = 0;
            self.zone_start = self.zone_start.saturating_add(self.step);
            if self.zone_start >= self.end {
                self.zone_start = 0;
            }
            moved = true;
        }
        moved || pos >= self.zone_start + self.range
    }

    /// The next sequential offset: `pos` is the direction's position, moved
    /// to the zone start as the walk demands, and the I/O's `len` counted.
    #[inline]
    pub(crate) fn seq(&mut self, pos: &mut u64, len: u64) -> u64 {
        if self.advance(*pos) {
            *pos = self.zone_start;
        }
        if pos.saturating_add(len) > self.end {
            self.restart();
            *pos = 0;
        }
        self.zone_bytes += len;
        *pos
    }

    /// The next random offset: uniform over the zone's range (what of it
    /// lies in the region), in `align` steps; `draw(n, zone_start)` picks
    /// one of `n` in the zone starting there.
    #[inline]
    pub(crate) fn rand(&mut self, len: u64, align: u64, draw: impl FnOnce(u64, u64) -> u64) -> u64 {
        self.advance(0);
        if self.zone_start.saturating_add(len) > self.end {
            self.restart();
        }
        let avail = self.range.min(self.end - self.zone_start);
        let slots = avail.saturating_sub(len) / align + 1;
        self.zone_bytes += len;
        self.zone_start + draw(slots, self.zone_start) * align
    }
}

const CLOSED: u32 = u32::MAX;

/// fio's zoned block device model as it emulates one on a regular file or a
/// non-zoned block device: every zone sequential-write-required and empty at
/// the start, write pointers kept in memory. A write goes to the write
/// pointer of the zone its offset falls in (or, with `max_open_zones` zones
/// open already, of an open zone picked from the offset, as fio does); a full
/// zone is reset before it is written again; reads stay below the write
/// pointer, moving to the nearest zone with data when theirs has none.
#[derive(Debug)]
pub(crate) struct Zbd {
    zone: u64,
    /// `zonecapacity`: the writable bytes at the start of each zone (at most
    /// `zone`); a zone is full there and reads stop at its write pointer.
    cap: u64,
    region: u64,
    min_bs: u64,
    random: bool,
    read_beyond_wp: bool,
    /// Bytes written in each zone (its write pointer, relative to its start).
    wp: Box<[u64]>,
    /// Each zone's index in `open`, or CLOSED.
    slot: Box<[u32]>,
    /// Open zones; the first `nopen` are valid.
    open: Box<[u32]>,
    nopen: u32,
    /// Bytes below all write pointers.
    data: u64,
    /// zone_reset_threshold in bytes, and writes between resets once it is
    /// passed (0 = never), and how many are left.
    reset_at: u64,
    reset_every: u32,
    reset_left: u32,
    resets: u64,
    writes: u64,
}

impl Zbd {
    pub(crate) fn new(job: &JobSpec, region: u64) -> Zbd {
        let z = &job.zones;
        let zone = z.size.max(1);
        let nr = region.div_ceil(zone).max(1) as usize;
        let max_open = match z.max_open {
            0 => nr,
            m => (m as usize).min(nr),
        };
        let reset_every = if z.reset_frequency > 0.0 {
            (1.0 / z.reset_frequency).min(f64::from(u32::MAX)) as u32
        } else {
            0
        };
        Zbd {
            zone,
            cap: match job.target.zonecapacity {
                Some(c) if c > 0 => c.min(zone),
                _ => zone,
            },
            region,
            min_bs: u64::from(job.bs[0].min().min(job.bs[1].min()).max(1)),
            random: job.rw.pattern == Pattern::Rand,
            read_beyond_wp: z.read_beyond_wp,
            wp: vec![0; nr].into_boxed_slice(),
            slot: vec![CLOSED; nr].into_boxed_slice(),
            open: vec![0; max_open].into_boxed_slice(),
            nopen: 0,
            data: 0,
            reset_at: (region as f64 * z.reset_threshold) as u64,
            reset_every,
            reset_left: reset_every,
            resets: 0,
            writes: 0,
        }
    }

    /// Zone resets so far (fio reports them as "N zone resets").
    pub(crate) fn resets(&self) -> u64 {
        self.resets
    }

    /// fio's zbd_adjust_ddir: a mixed job's reads are writes until the first
    /// write, since empty zones hold nothing to read.
    #[inline]
    pub(crate) fn read_allowed(&self, dir: Direction) -> bool {
        dir != Direction::Mixed || self.writes > 0 || self.read_beyond_wp
    }

    #[inline]
    fn zone_of(&self, o: u64) -> usize {
        ((o / self.zone) as usize).min(self.wp.len() - 1)
    }

    /// Writable bytes of zone `z`: its capacity, or less for a last zone
    /// the region cuts short.
    #[inline]
    fn zone_len(&self, z: usize) -> u64 {
        self.cap.min(self.region - z as u64 * self.zone)
    }

    /// fio's sequential writes past a zone's capacity: the position jumps to
    /// the zone's end (the bytes between are never written). `Some(end)`
    /// when `pos` (a sequential write position) lies past its zone's
    /// capacity.
    #[inline]
    pub(crate) fn past_capacity(&self, pos: u64) -> Option<u64> {
        if self.cap == self.zone || pos % self.zone < self.cap {
            return None;
        }
        Some((pos / self.zone + 1) * self.zone)
    }

    fn try_open(&mut self, z: usize) -> bool {
        if self.slot[z] != CLOSED {
            return true;
        }
        if self.nopen as usize == self.open.len() {
            return false;
        }
        self.open[self.nopen as usize] = z as u32;
        self.slot[z] = self.nopen;
        self.nopen += 1;
        true
    }

    fn close(&mut self, z: usize) {
        let i = self.slot[z];
        if i == CLOSED {
            return;
        }
        self.nopen -= 1;
        let last = self.open[self.nopen as usize];
        self.open[i as usize] = last;
        self.slot[last as usize] = i;
        self.slot[z] = CLOSED;
    }

    fn reset(&mut self, z: usize) {
        self.data -= self.wp[z];
        self.wp[z] = 0;
        self.resets += 1;
    }

    /// Where a write of `len` bytes proposed at `o` goes: `(offset, len)`.
    #[inline]
    pub(crate) fn write(&mut self, o: u64, len: u64) -> (u64, u64) {
        let mut z = self.zone_of(o);
        if !self.try_open(z) {
            // fio's pick_random_zone_idx: an open zone chosen by where the
            // offset lies in the region. Open zones are never full (a zone
            // closes when it fills), so the write fits.
            let i = (u128::from(o) * u128::from(self.nopen) / u128::from(self.region)) as usize;
            z = self.open[i] as usize;
        }
        let zlen = self.zone_len(z);
        if self.reset_every > 0 && self.data >= self.reset_at {
            self.reset_left -= 1;
            if self.reset_left == 0 {
                self.reset_left = self.reset_every;
                self.reset(z);
            }
        }
        if self.wp[z] + self.min_bs > zlen {
            self.reset(z);
        }
        let at = z as u64 * self.zone + self.wp[z];
        let len = len.min(zlen - self.wp[z]) / self.min_bs * self.min_bs;
        self.wp[z] += len;
        self.data += len;
        self.writes += 1;
        if self.wp[z] + self.min_bs > zlen {
            self.close(z);
        }
        (at, len)
    }

    /// Written bytes of zone `z` in whole smallest blocks.
    #[inline]
    fn readable(&self, z: usize) -> u64 {
        self.wp[z] / self.min_bs * self.min_bs
    }

    /// The zone nearest to `z` (after it first) with data to read.
    fn find(&self, z: usize) -> Option<usize> {
        let n = self.wp.len();
        (1..n).find_map(|d| {
            [z.checked_add(d).filter(|&a| a < n), z.checked_sub(d)]
                .into_iter()
                .flatten()
                .find(|&c| self.readable(c) >= self.min_bs)
        })
    }

    /// Where a read of `len` bytes proposed at `o` goes, kept below the write
    /// pointer; `None` when no zone holds data (fio ends the job then).
    #[inline]
    pub(crate) fn read(&self, o: u64, len: u64) -> Option<(u64, u64)> {
        if self.read_beyond_wp {
            return Some((o, len));
        }
        let orig = self.zone_of(o);
        let orig_start = orig as u64 * self.zone;
        let mut z = orig;
        let mut o = o;
        let mut range = self.readable(z);
        if range < self.min_bs || (!self.random && o + self.min_bs > orig_start + self.wp[z]) {
            z = self.find(orig)?;
            range = self.readable(z);
            if !self.random {
                o = z as u64 * self.zone;
            }
        }
        let start = z as u64 * self.zone;
        if range <= len {
            o = start;
        } else if self.random {
            o = start + (o - orig_start) % (range - len) / self.min_bs * self.min_bs;
        }
        let len = len.min(start + self.wp[z] - o) / self.min_bs * self.min_bs;
        Some((o, len))
    }
}

/// A job's zones as its generator keeps them.
#[derive(Debug)]
pub(crate) enum Zones {
    None,
    Strided(Strided),
    Zbd(Box<Zbd>),
}

impl Zones {
    pub(crate) fn new(job: &JobSpec, region: u64) -> Zones {
        match job.zones.mode {
            ZoneMode::None => Zones::None,
            ZoneMode::Strided => Zones::Strided(Strided::new(&job.zones, region)),
            ZoneMode::Zbd => Zones::Zbd(Box::new(Zbd::new(job, region))),
        }
    }
}

/// Bytes from `start` to the end of the target's file, where fio's strided
/// walk wraps; `None` for block devices and the emulated device (their walk
/// wraps at the region's end).
pub fn file_end(target: Option<&crate::device::target::Target>, start: u64) -> Option<u64> {
    let t = target.filter(|t| t.kind == crate::device::target::TargetKind::File)?;
    Some(t.file.metadata().ok()?.len().saturating_sub(start))
}

/// Why a zbd job cannot run on its region (checked before the first I/O).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ZoneError {
    #[error(
        "zonemode=zbd: offset {offset} is not on a zone boundary (zonesize={zone}); use \
         offset={rounded} (fio rounds it up to that)"
    )]
    Offset {
        offset: u64,
        zone: u64,
        rounded: u64,
    },
    #[error(
        "zonemode=zbd: the job's region ({len} bytes from offset {offset}) holds no whole zone \
         of zonesize={zone}; give a larger size or a smaller zonesize"
    )]
    NoZone { offset: u64, len: u64, zone: u64 },
    #[error(
        "zonemode=zbd: the job's region ({len} bytes) does not end on a zone boundary \
         (zonesize={zone}); use size={rounded} (fio rounds it down to that)"
    )]
    Size { len: u64, zone: u64, rounded: u64 },
    #[error(
        "zonemode=zbd: {device} is a zoned block device ({model}); iolab emulates zones on \
         regular files and non-zoned devices only, real zones (BLKREPORTZONE, BLKRESETZONE) \
         are not supported yet: run zonemode=zbd on a file or a non-zoned device"
    )]
    ZonedDevice { device: String, model: String },
    #[error(
        "zonemode=zbd: {file}: file size {size} is smaller than zonesize={zone} (fio refuses \
         it too: \"file/device size is smaller than zone size\"); give a smaller zonesize, or \
         a file of at least one zone"
    )]
    SmallFile { file: String, size: u64, zone: u64 },
}

/// Whether a zone job can run on its target: a zoned block device is refused,
/// and every file's region (first byte, length) must suit the zones.
pub fn check_target(
    job: &JobSpec,
    target: Option<&crate::device::target::Target>,
    regions: &[(u64, u64)],
) -> Result<(), ZoneError> {
    if let Some(t) = target
        && t.kind == crate::device::target::TargetKind::BlockDevice
    {
        check_device(job, &t.path)?;
    }
    // fio refuses a file smaller than one zone for any direction (a read
    // job would otherwise read nothing: its zones have nothing written).
    if let Some(t) = target
        && t.kind == crate::device::target::TargetKind::File
        && job.zones.mode == ZoneMode::Zbd
        && job.zones.size > 0
    {
        let size = t.file.metadata().map_or(0, |m| m.len());
        if size < job.zones.size {
            return Err(ZoneError::SmallFile {
                file: t.path.display().to_string(),
                size,
                zone: job.zones.size,
            });
        }
    }
    regions
        .iter()
        .try_for_each(|&(offset, len)| check_region(job, offset, len))
}

/// fio's rule for jobs that write in zbd mode: the region starts and ends on
/// zone boundaries (fio rounds; iolab asks for the rounded values). Zones are
/// counted from the start of the file or device.
pub fn check_region(job: &JobSpec, offset: u64, len: u64) -> Result<(), ZoneError> {
    let zone = job.zones.size;
    if job.zones.mode != ZoneMode::Zbd || job.rw.dir == Direction::Read || zone == 0 {
        return Ok(());
    }
    if len < zone {
        return Err(ZoneError::NoZone { offset, len, zone });
    }
    if !offset.is_multiple_of(zone) {
        return Err(ZoneError::Offset {
            offset,
            zone,
            rounded: offset.next_multiple_of(zone),
        });
    }
    if !len.is_multiple_of(zone) {
        return Err(ZoneError::Size {
            len,
            zone,
            rounded: len / zone * zone,
        });
    }
    Ok(())
}

/// A block device's zoned model (`queue/zoned`): zbd emulation is for
/// `none` only.
pub fn check_device(job: &JobSpec, device: &std::path::Path) -> Result<(), ZoneError> {
    if job.zones.mode != ZoneMode::Zbd {
        return Ok(());
    }
    let Ok(dev) = crate::sys::blockdev::BlockDev::from_path(device) else {
        return Ok(());
    };
    match dev.queue_attr("zoned") {
        Ok(model) if model != "none" => Err(ZoneError::ZonedDevice {
            device: device.display().to_string(),
            model,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(pattern: Pattern, dir: Direction, zones: ZoneSpec) -> JobSpec {
        JobSpec {
            rw: crate::job::RwMode { pattern, dir },
            bs: [
                crate::job::BlockSizes::Fixed(4096),
                crate::job::BlockSizes::Fixed(4096),
            ],
            zones,
            ..JobSpec::default()
        }
    }

    #[test]
    fn strided_walks_size_of_each_range_then_skips() {
        let j = job(
            Pattern::Seq,
            Direction::Read,
            ZoneSpec {
                mode: ZoneMode::Strided,
                size: 8192,
                range: 16384,
                skip: 16384,
                ..ZoneSpec::default()
            },
        );
        let mut s = Strided::new(&j.zones, 64 * 1024);
        let mut pos = 0;
        let offs: Vec<u64> = (0..6)
            .map(|_| {
                let o = s.seq(&mut pos, 4096);
                pos += 4096;
                o / 1024
            })
            .collect();
        assert_eq!(offs, [0, 4, 32, 36, 0, 4]);
    }

    #[test]
    fn zbd_writes_at_the_write_pointer_and_resets_full_zones() {
        let j = job(
            Pattern::Rand,
            Direction::Write,
            ZoneSpec {
                mode: ZoneMode::Zbd,
                size: 16384,
                max_open: 1,
                ..ZoneSpec::default()
            },
        );
        let mut z = Zbd::new(&j, 64 * 1024);
        // The first write opens zone 2; every later one lands there at its
        // write pointer until it is full.
        let got: Vec<u64> = [40, 0, 60, 8]
            .map(|k| z.write(k * 1024, 4096).0 / 1024)
            .into();
        assert_eq!(got, [32, 36, 40, 44]);
        // Zone 2 is full and closed: the next write opens zone 0.
        assert_eq!(z.write(0, 4096), (0, 4096));
        assert_eq!(z.resets(), 0);
        // Reads stay below the write pointers: zone 1 is empty, so a read
        // there goes to the nearest zone with data.
        let (o, l) = z.read(20 * 1024, 4096).expect("data to read");
        assert!((o < 4096 || (32 * 1024..48 * 1024).contains(&o)) && l == 4096);
        // Writes aimed at closed zone 3 go to the one open zone (0) until it
        // is full and closes; a write aimed at full zone 2 then resets it and
        // starts again at its start.
        for k in [1, 2, 3] {
            assert_eq!(z.write(50 * 1024, 4096).0, k * 4096);
        }
        assert_eq!(z.write(40 * 1024, 4096), (32 * 1024, 4096));
        assert_eq!(z.resets(), 1);
        // A read in zone 2 now stays below its new write pointer.
        assert_eq!(z.read(44 * 1024, 4096), Some((32 * 1024, 4096)));
    }
}
