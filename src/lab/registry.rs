//! The studies of `iolab lab`, in one table: each one's command-line name,
//! seed document, one-line subject, usual duration and how it runs. The
//! command line (valid names, `--help`, the order they run in) and the lab's
//! report read them from [`STUDIES`]; adding a study is one [`Study`] here.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use crate::report::study::StudyResult;

/// What every study is given besides its own defaults.
pub struct LabContext<'a> {
    /// Short runs (CI): the whole lab in about two minutes.
    pub quick: bool,
    /// `--topology`: a what-if machine (the placement study's).
    pub topology: Option<&'a Path>,
}

/// One study of `iolab lab`.
pub trait Study: Sync {
    /// The command-line name, which is also the result's `id` (`poll`).
    fn name(&self) -> &'static str;
    /// The seed document it reproduces (`000`), which orders the report.
    fn seed(&self) -> &'static str;
    /// What it reproduces, in a few words (for `--help`).
    fn about(&self) -> &'static str;
    /// How long it usually takes on a 2-CPU machine (the status line's ETA).
    fn expected(&self, quick: bool) -> Duration;
    /// Whether it must run after the others: tracing switches the engine
    /// clock to CLOCK_MONOTONIC for the rest of the process, so a tracing
    /// study runs last and the others keep the cheaper TSC.
    fn runs_last(&self) -> bool {
        false
    }
    /// Runs it (quick or full, as `cx` says) and returns its result, which
    /// the report renders as every study's (`StudyResult::render_text`, the
    /// HTML report).
    fn run(&self, cx: &LabContext) -> Result<StudyResult>;
}

struct Poll;
struct Placement;
struct Breakdown;
struct Laq;
struct Observe;

/// Every study, in seed order: the one list the lab reads.
pub static STUDIES: [&dyn Study; 5] = [&Poll, &Placement, &Breakdown, &Laq, &Observe];

/// The study of that command-line name.
pub fn find(name: &str) -> Option<&'static dyn Study> {
    STUDIES.iter().copied().find(|s| s.name() == name)
}

/// Every study's name, in order, joined by ", ".
pub fn names() -> String {
    STUDIES
        .iter()
        .map(|s| s.name())
        .collect::<Vec<_>>()
        .join(", ")
}

fn secs(quick: bool, (q, full): (u64, u64)) -> Duration {
    Duration::from_secs(if quick { q } else { full })
}

impl Study for Poll {
    fn name(&self) -> &'static str {
        "poll"
    }
    fn seed(&self) -> &'static str {
        "000"
    }
    fn about(&self) -> &'static str {
        "poll vs interrupt completion (FAST '12)"
    }
    fn expected(&self, quick: bool) -> Duration {
        secs(quick, (18, 160))
    }
    fn run(&self, cx: &LabContext) -> Result<StudyResult> {
        super::poll::run(&super::poll::PollStudyOpts { quick: cx.quick })
    }
}

impl Study for Placement {
    fn name(&self) -> &'static str {
        "placement"
    }
    fn seed(&self) -> &'static str {
        "001"
    }
    fn about(&self) -> &'static str {
        "polling-aware thread placement"
    }
    fn expected(&self, quick: bool) -> Duration {
        secs(quick, (7, 30))
    }
    fn run(&self, cx: &LabContext) -> Result<StudyResult> {
        let opts = super::placement::PlacementStudyOpts {
            quick: cx.quick,
            topology: cx.topology.map(Path::to_path_buf),
            ..Default::default()
        };
        Ok(super::placement::run_placement_study(&opts)?.to_study_result())
    }
}

impl Study for Breakdown {
    fn name(&self) -> &'static str {
        "breakdown"
    }
    fn seed(&self) -> &'static str {
        "002"
    }
    fn about(&self) -> &'static str {
        "I/O response time across the kernel's layers"
    }
    fn expected(&self, quick: bool) -> Duration {
        secs(quick, (9, 50))
    }
    fn runs_last(&self) -> bool {
        true
    }
    fn run(&self, cx: &LabContext) -> Result<StudyResult> {
        super::breakdown::run(&super::breakdown::BreakdownStudyOpts { quick: cx.quick })
    }
}

impl Study for Laq {
    fn name(&self) -> &'static str {
        "laq"
    }
    fn seed(&self) -> &'static str {
        "003"
    }
    fn about(&self) -> &'static str {
        "latency-aware queueing for command-queue flash"
    }
    fn expected(&self, quick: bool) -> Duration {
        secs(quick, (13, 50))
    }
    fn run(&self, cx: &LabContext) -> Result<StudyResult> {
        super::laq::run(&super::laq::LaqStudyOpts { quick: cx.quick })
    }
}

impl Study for Observe {
    fn name(&self) -> &'static str {
        "observe"
    }
    fn seed(&self) -> &'static str {
        "004"
    }
    fn about(&self) -> &'static str {
        "RDBMS interrupt overhead, slow vs fast device"
    }
    fn expected(&self, quick: bool) -> Duration {
        secs(quick, (65, 160))
    }
    fn run(&self, cx: &LabContext) -> Result<StudyResult> {
        super::observe::run(&super::observe::ObserveStudyOpts { quick: cx.quick })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_seeds_are_unique_and_in_seed_order() {
        let seeds: Vec<&str> = STUDIES.iter().map(|s| s.seed()).collect();
        let mut sorted = seeds.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(seeds, sorted);
        let mut names: Vec<&str> = STUDIES.iter().map(|s| s.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), STUDIES.len());
        assert_eq!(find("laq").map(|s| s.seed()), Some("003"));
        assert!(find("nosuch").is_none());
    }
}
