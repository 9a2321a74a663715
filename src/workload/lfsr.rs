//! fio's `random_generator=lfsr`: a maximal-period sequence over the region's
//! blocks, so every block is visited exactly once per pass without a map of
//! what was visited. iolab's random map ([`super::Generator`]'s coverage walk)
//! is already such a sequence (a full-period permutation at O(1) space), so
//! lfsr takes it whether or not `norandommap` is set; with `tausworthe` (fio's
//! default) and `norandommap`, offsets are drawn with replacement, as in fio.

use crate::job::JobSpec;
use crate::job::workload_opts::RandomGenerator;

/// Whether the job's random offsets must visit every block once per pass even
/// without the random map (fio's lfsr with `norandommap=1`, t0021).
pub fn visits_every_block(job: &JobSpec) -> bool {
    job.workload.random_generator == RandomGenerator::Lfsr
}

/// The random map of a `zonemode=strided` job, as fio keeps it: within each
/// visit to a zone, random offsets take every block of the zone's range once
/// before any repeats (a new permutation per visit, and whenever the range
/// has been covered). O(1) space; a draw is one [`super::coverage::Coverage`] step.
#[derive(Clone, Debug)]
pub struct ZoneMap {
    zone: u64,
    n: u64,
    left: u64,
    cover: Option<super::coverage::Coverage>,
}

impl ZoneMap {
    /// For a strided random job with one block size and its random map on
    /// (or lfsr), as the unzoned random map is chosen.
    pub fn for_job(job: &JobSpec, fixed_bs: Option<u64>) -> Option<ZoneMap> {
        use crate::job::zones::ZoneMode;
        let on = job.zones.mode == ZoneMode::Strided
            && job.rw.pattern == crate::job::Pattern::Rand
            && fixed_bs.is_some()
            && (!job.norandommap || visits_every_block(job))
            && job.random_distribution == crate::job::RandomDist::Random
            && job.blockalign == [0, 0];
        on.then_some(ZoneMap {
            zone: u64::MAX,
            n: 0,
            left: 0,
            cover: None,
        })
    }

    /// One of the `n` slots of the zone starting at `zone`.
    #[inline]
    pub fn draw(&mut self, zone: u64, n: u64, rng: &mut fastrand::Rng) -> u64 {
        if zone != self.zone || n != self.n || self.left == 0 || self.cover.is_none() {
            self.zone = zone;
            self.n = n;
            self.left = n;
            self.cover = Some(super::coverage::Coverage::new(n, rng));
        }
        self.left -= 1;
        self.cover
            .as_mut()
            .map_or(0, super::coverage::Coverage::next)
    }
}
