//! BASE against NEW: match the jobs, check their options, and reach a verdict
//! per metric with the test that fits the data at hand.
//!
//! - Two or more rounds a side: each round gives one value; the interval is
//!   the percentile bootstrap of the ratio of medians, and a difference is
//!   called only when that interval excludes 1 AND the exact Mann-Whitney U
//!   test on the rounds gives p < alpha. The bootstrap alone is too narrow with
//!   a handful of rounds (5 values resample into few distinct medians); the
//!   exact test holds its false-alarm rate at alpha whatever the noise, and
//!   says so when the rounds are too few to ever reach it (3 vs 3).
//! - One round on a side: latency metrics fall back on the latency
//!   distributions themselves (json+ bins, else the percentile list) and say
//!   that this interval sees only the I/O-to-I/O variation inside a run; IOPS,
//!   bandwidth and CPU have one value a side and cannot be judged.
//! - Either way a significant change smaller than the minimum effect
//!   (`--min-effect`, 1% by default) is reported as no difference that
//!   matters: with enough data every real machine shows tiny drifts.

use std::collections::{BTreeMap, BTreeSet};

use crate::compare::load::{DirSample, JobKey, JobSample, Side};
use crate::compare::model::{
    Cdf, Comparison, JobComparison, LogSd, Metric, MetricRow, Mismatch, OptionDiff, SideInfo,
    Verdict,
};
use crate::compare::stats::{
    self, Interval, LatDist, bootstrap_quantile_ratio, mean_ratio_interval, welch_log,
};

/// How to judge.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Confidence level of the intervals (0.95); alpha is 1 - level.
    pub level: f64,
    /// Smallest |ratio - 1| called a difference (0.01 = 1%).
    pub min_effect: f64,
    /// Options allowed to differ between the sides (the change under test);
    /// `*` allows any.
    pub allow_diff: BTreeSet<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            level: 0.95,
            min_effect: 0.01,
            allow_diff: BTreeSet::new(),
        }
    }
}

/// A deterministic seed per row, so a row's interval does not depend on which
/// other rows were computed before it.
fn seed_of(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

fn pct(level: f64) -> String {
    format!("{}%", (level * 100.0 * 10.0).round() / 10.0)
}

/// The verdict on per-round values of one metric (two or more rounds a side):
/// Welch's t-test on ln(value), each side's variance at least its `floors`
/// entry (the sampling variance of ln(value) inside one round).
pub fn rounds_row(
    metric: Metric,
    dir: &str,
    base: &[f64],
    new: &[f64],
    set: &Settings,
    floors: (f64, f64),
) -> MetricRow {
    let alpha = 1.0 - set.level;
    let (sb, sn) = (stats::spread(base), stats::spread(new));
    let Some(w) = welch_log(base, new, floors.0, floors.1, set.level) else {
        // A round with a zero (no I/O in that direction, a figure the
        // producer left at 0): no ratio of geometric means to test.
        let mut row = single_row(metric, dir, base, new);
        row.test = format!("none: a zero among {} vs {} rounds", base.len(), new.len());
        row.note = Some(format!(
            "{} is 0 in some round, so Welch's test on its logarithm cannot judge it",
            metric.label()
        ));
        return row;
    };
    let test = format!(
        "Welch's t-test on ln({}) over {} vs {} rounds{}, {} CI of the geometric-mean ratio",
        metric.name(),
        base.len(),
        new.len(),
        if floors.0 > 0.0 || floors.1 > 0.0 {
            ", spread floored by each round's own sampling error"
        } else {
            ""
        },
        pct(set.level),
    );
    let significant = w.p < alpha;
    let note = (!significant).then(|| {
        format!(
            "p = {:.3}: the change is within what the rounds' spread allows",
            w.p
        )
    });
    let gm = |v: &[f64]| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
    finish(
        MetricRow {
            dir: dir.to_string(),
            metric,
            base: sb,
            new: sn,
            base_rounds: base.len(),
            new_rounds: new.len(),
            ratio: Some(w.ratio),
            diff: gm(new) - gm(base),
            ci: Some(w.ci),
            p: Some(w.p),
            significant,
            verdict: Verdict::NoDifference,
            test,
            note,
            log_sd: Some(LogSd {
                base: w.sd_base,
                new: w.sd_new,
            }),
        },
        set,
    )
}

/// Turn significance and the size of the change into the verdict.
fn finish(mut row: MetricRow, set: &Settings) -> MetricRow {
    if !row.significant {
        return row;
    }
    let change = match row.ratio {
        Some(r) => r - 1.0,
        // BASE is 0: any significant change is large.
        None => row.diff.signum(),
    };
    if change.abs() < set.min_effect {
        row.note = Some(format!(
            "significant, but the change ({:+.2}%) is under the minimum effect ({:.1}%)",
            change * 100.0,
            set.min_effect * 100.0
        ));
        return row;
    }
    let up_is_better = row.metric.higher_is_better();
    row.verdict = if (change > 0.0) == up_is_better {
        Verdict::Faster
    } else {
        Verdict::Slower
    };
    row
}

/// A side's latency distribution for a direction: the rounds' json+ bins
/// pooled when every round has them, else the first round's percentile list.
fn pooled_dist(samples: &[&DirSample]) -> Option<LatDist> {
    if samples.is_empty() {
        return None;
    }
    if samples
        .iter()
        .all(|s| matches!(s.dist, Some(LatDist::Bins(_))))
    {
        let mut m: BTreeMap<u64, u64> = BTreeMap::new();
        for s in samples {
            if let Some(LatDist::Bins(b)) = &s.dist {
                for &(v, c) in b {
                    *m.entry(v.max(0.0).round() as u64).or_default() += c;
                }
            }
        }
        return Some(LatDist::Bins(
            m.into_iter().map(|(v, c)| (v as f64, c)).collect(),
        ));
    }
    samples.iter().find_map(|s| s.dist.clone())
}

fn dist_kind(d: &LatDist) -> &'static str {
    match d {
        LatDist::Bins(_) => "json+ bins",
        LatDist::Percentiles { .. } => "percentiles",
    }
}

/// The verdict for a latency metric when a side has one round: from the
/// latency distributions.
fn dist_row(
    metric: Metric,
    dir: &str,
    base: &[&DirSample],
    new: &[&DirSample],
    set: &Settings,
    seed: u64,
) -> Option<MetricRow> {
    let value = |s: &DirSample| match metric {
        Metric::ClatMean => s.clat_mean,
        Metric::P50 => s.p50,
        Metric::P99 => s.p99,
        Metric::P999 => s.p999,
        _ => None,
    };
    let vb: Vec<f64> = base.iter().filter_map(|s| value(s)).collect();
    let vn: Vec<f64> = new.iter().filter_map(|s| value(s)).collect();
    if vb.is_empty() || vn.is_empty() {
        return None;
    }
    let (sb, sn) = (stats::spread(&vb), stats::spread(&vn));
    let ratio = (sb.median != 0.0).then(|| sn.median / sb.median);
    let within = "one round on a side: this interval covers the I/O-to-I/O variation inside a run, not run-to-run variation; compare several rounds (--rounds) for that";
    let (ci, test) = if let Some(q) = metric.quantile() {
        let (db, dn) = (pooled_dist(base)?, pooled_dist(new)?);
        let ci = bootstrap_quantile_ratio(&db, &dn, q, set.level, seed);
        let test = format!(
            "bootstrap {} CI of the {} ratio over the latency distributions ({} vs {}; {} vs {} I/Os)",
            pct(set.level),
            metric.name(),
            dist_kind(&db),
            dist_kind(&dn),
            db.n(),
            dn.n()
        );
        (ci, test)
    } else {
        let agg = |s: &[&DirSample]| {
            let means: Vec<f64> = s.iter().filter_map(|d| d.clat_mean).collect();
            let sds: Vec<f64> = s.iter().map(|d| d.clat_stddev).collect();
            (
                stats::median(&means),
                stats::median(&sds),
                s.iter().map(|d| d.clat_n).sum::<u64>(),
            )
        };
        let (ab, an) = (agg(base), agg(new));
        let ci = mean_ratio_interval(ab, an, set.level, seed);
        let test = format!(
            "normal {} CI of the mean ratio from each side's mean, stddev and N ({} vs {} I/Os)",
            pct(set.level),
            ab.2,
            an.2
        );
        (ci, test)
    };
    let significant = ci.is_some_and(|c: Interval| c.excludes_one());
    Some(finish(
        MetricRow {
            dir: dir.to_string(),
            metric,
            base: sb,
            new: sn,
            base_rounds: vb.len(),
            new_rounds: vn.len(),
            ratio,
            diff: sn.median - sb.median,
            ci,
            p: None,
            significant,
            verdict: Verdict::NoDifference,
            test,
            note: Some(within.to_string()),
            log_sd: None,
        },
        set,
    ))
}

/// One value a side (IOPS, bandwidth, CPU from single rounds): nothing to
/// judge the noise by.
fn single_row(metric: Metric, dir: &str, base: &[f64], new: &[f64]) -> MetricRow {
    let (sb, sn) = (stats::spread(base), stats::spread(new));
    MetricRow {
        dir: dir.to_string(),
        metric,
        base: sb,
        new: sn,
        base_rounds: base.len(),
        new_rounds: new.len(),
        ratio: (sb.median != 0.0).then(|| sn.median / sb.median),
        diff: sn.median - sb.median,
        ci: None,
        p: None,
        significant: false,
        verdict: Verdict::NoDifference,
        test: format!("none: {} vs {} rounds", base.len(), new.len()),
        note: Some(format!(
            "{} has one value per run; with {} vs {} rounds there is no run-to-run spread to judge a difference by: run several rounds a side (5 is a good start)",
            metric.label(),
            base.len(),
            new.len()
        )),
        log_sd: None,
    }
}

fn dir_value(metric: Metric, s: &DirSample) -> Option<f64> {
    match metric {
        Metric::Iops => Some(s.iops),
        Metric::Bw => Some(s.bw_bytes),
        Metric::ClatMean => s.clat_mean,
        Metric::P50 => s.p50,
        Metric::P99 => s.p99,
        Metric::P999 => s.p999,
        Metric::CpuPerIo => None,
    }
}

/// The mean over a side's rounds of the sampling variance of ln(value)
/// inside one round, where the round's data gives it: a percentile's from its
/// latency distribution. The clat mean has none: its stddev / sqrt(N) assumes
/// independent I/Os, and the stalls that dominate a busy machine's stddev
/// are not (a round's mean agrees with the next far better than that figure
/// says); IOPS and bandwidth are one number per round. Those rely on the
/// rounds' spread alone: 0.
fn within_var(metric: Metric, samples: &[&DirSample]) -> f64 {
    let Some(q) = metric.quantile() else {
        return 0.0;
    };
    let vars: Vec<f64> = samples
        .iter()
        .filter_map(|s| s.dist.as_ref().map(|d| d.quantile_log_var(q)))
        .collect();
    if vars.is_empty() {
        0.0
    } else {
        vars.iter().sum::<f64>() / vars.len() as f64
    }
}

fn side_info(label: &str, side: &Side) -> SideInfo {
    SideInfo {
        label: label.to_string(),
        path: side.path.display().to_string(),
        rounds: side.rounds.len(),
        producers: side.producers(),
    }
}

/// Every job of a side with its samples, in first-seen order.
fn jobs_of(side: &Side) -> Vec<(JobKey, Vec<&JobSample>)> {
    let mut order: Vec<JobKey> = Vec::new();
    let mut map: BTreeMap<JobKey, Vec<&JobSample>> = BTreeMap::new();
    for r in &side.rounds {
        for j in &r.jobs {
            if !map.contains_key(&j.key) {
                order.push(j.key.clone());
            }
            map.entry(j.key.clone()).or_default().push(j);
        }
    }
    order
        .into_iter()
        .map(|k| {
            let v = map.remove(&k).unwrap_or_default();
            (k, v)
        })
        .collect()
}

/// Options that differ. fio's JSON leaves some flag options out (`time_based`
/// given with no value), iolab writes them with an empty value: a flag on one
/// side only is not a difference.
pub fn option_diffs(
    base: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
) -> Vec<OptionDiff> {
    let keys: BTreeSet<&String> = base.keys().chain(new.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let (b, n) = (base.get(k), new.get(k));
            match (b, n) {
                (Some(x), Some(y)) if x == y => None,
                (Some(x), None) | (None, Some(x)) if x.is_empty() => None,
                _ => Some(OptionDiff {
                    option: k.clone(),
                    base: b.cloned(),
                    new: n.cloned(),
                }),
            }
        })
        .collect()
}

fn thin(points: Vec<(f64, f64)>, max: usize) -> Vec<(f64, f64)> {
    if points.len() <= max {
        return points;
    }
    let step = points.len().div_ceil(max);
    let last = *points.last().expect("non-empty");
    let mut v: Vec<(f64, f64)> = points.into_iter().step_by(step).collect();
    if v.last() != Some(&last) {
        v.push(last);
    }
    v
}

/// Compare two sides.
pub fn compare(
    title: &str,
    (base_label, base): (&str, &Side),
    (new_label, new): (&str, &Side),
    set: &Settings,
) -> Comparison {
    let bj = jobs_of(base);
    let nj: BTreeMap<JobKey, Vec<&JobSample>> = jobs_of(new).into_iter().collect();
    let mut out = Comparison {
        title: title.to_string(),
        base: side_info(base_label, base),
        new: side_info(new_label, new),
        jobs: Vec::new(),
        mismatched: Vec::new(),
        only_base: Vec::new(),
        only_new: Vec::new(),
    };
    let base_keys: BTreeSet<&JobKey> = bj.iter().map(|(k, _)| k).collect();
    for (k, _) in jobs_of(new) {
        if !base_keys.contains(&k) {
            out.only_new.push(k.to_string());
        }
    }
    for (key, bs) in &bj {
        let Some(ns) = nj.get(key) else {
            out.only_base.push(key.to_string());
            continue;
        };
        let diffs = option_diffs(&bs[0].options, &ns[0].options);
        let (allowed, refused): (Vec<OptionDiff>, Vec<OptionDiff>) = diffs
            .into_iter()
            .partition(|d| set.allow_diff.contains("*") || set.allow_diff.contains(&d.option));
        if !refused.is_empty() {
            out.mismatched.push(Mismatch {
                job: key.to_string(),
                options: refused,
            });
            continue;
        }
        out.jobs.push(compare_job(key, bs, ns, allowed, set));
    }
    out
}

fn compare_job(
    key: &JobKey,
    bs: &[&JobSample],
    ns: &[&JobSample],
    options_differ: Vec<OptionDiff>,
    set: &Settings,
) -> JobComparison {
    let job = key.to_string();
    let mut rows = Vec::new();
    let mut cdfs = Vec::new();
    let dirs: BTreeSet<&str> = bs
        .iter()
        .flat_map(|j| j.dirs.keys().copied())
        .filter(|d| ns.iter().any(|j| j.dirs.contains_key(d)))
        .collect();
    for dir in ["read", "write", "trim"] {
        if !dirs.contains(dir) {
            continue;
        }
        let db: Vec<&DirSample> = bs.iter().filter_map(|j| j.dirs.get(dir)).collect();
        let dn: Vec<&DirSample> = ns.iter().filter_map(|j| j.dirs.get(dir)).collect();
        for metric in Metric::ALL {
            if metric == Metric::CpuPerIo {
                continue;
            }
            let vb: Vec<f64> = db.iter().filter_map(|s| dir_value(metric, s)).collect();
            let vn: Vec<f64> = dn.iter().filter_map(|s| dir_value(metric, s)).collect();
            if vb.is_empty() || vn.is_empty() {
                continue;
            }
            let seed = seed_of(&format!("{job}/{dir}/{}", metric.name()));
            let row = if vb.len() >= 2 && vn.len() >= 2 {
                let floors = (within_var(metric, &db), within_var(metric, &dn));
                Some(rounds_row(metric, dir, &vb, &vn, set, floors))
            } else if metric.is_latency() {
                dist_row(metric, dir, &db, &dn, set, seed)
            } else {
                None
            };
            rows.push(row.unwrap_or_else(|| single_row(metric, dir, &vb, &vn)));
        }
        if let (Some(a), Some(b)) = (pooled_dist(&db), pooled_dist(&dn)) {
            cdfs.push(Cdf {
                dir: dir.to_string(),
                from: if dist_kind(&a) == dist_kind(&b) {
                    dist_kind(&a).to_string()
                } else {
                    format!("{} vs {}", dist_kind(&a), dist_kind(&b))
                },
                base: thin(a.cdf_points(), 400),
                new: thin(b.cdf_points(), 400),
            });
        }
    }
    let cb: Vec<f64> = bs.iter().filter_map(|j| j.cpu_per_io).collect();
    let cn: Vec<f64> = ns.iter().filter_map(|j| j.cpu_per_io).collect();
    if !cb.is_empty() && !cn.is_empty() {
        let m = Metric::CpuPerIo;
        rows.push(if cb.len() >= 2 && cn.len() >= 2 {
            rounds_row(m, "job", &cb, &cn, set, (0.0, 0.0))
        } else {
            single_row(m, "job", &cb, &cn)
        });
    }
    JobComparison {
        job,
        options_differ,
        rows,
        cdfs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};
    use rand_distr::{Distribution, StudentT};

    fn row(base: &[f64], new: &[f64], metric: Metric) -> MetricRow {
        rounds_row(metric, "read", base, new, &Settings::default(), (0.0, 0.0))
    }

    #[test]
    fn shifted_rounds_are_slower_or_faster_by_metric_direction() {
        let base = [4.10, 4.12, 4.09, 4.11, 4.13];
        let new = [6.10, 6.12, 6.08, 6.15, 6.11];
        let r = row(&base, &new, Metric::P50);
        assert_eq!(r.verdict, Verdict::Slower, "{r:?}");
        assert!(r.significant);
        let ci = r.ci.unwrap();
        assert!(ci.lo > 1.4 && ci.hi < 1.55, "{ci:?}");
        // Higher IOPS is better.
        let r = row(&base, &new, Metric::Iops);
        assert_eq!(r.verdict, Verdict::Faster);
        assert!(r.test.contains("5 vs 5 rounds"), "{}", r.test);
        assert!(
            r.test.starts_with("Welch's t-test on ln(iops)"),
            "{}",
            r.test
        );
    }

    #[test]
    fn equal_rounds_show_no_difference() {
        let base = [4.10, 4.12, 4.09, 4.11, 4.13];
        let new = [4.11, 4.09, 4.12, 4.10, 4.13];
        let r = row(&base, &new, Metric::P99);
        assert_eq!(r.verdict, Verdict::NoDifference);
        assert!(!r.significant);
        assert!(!r.ci.unwrap().excludes_one());
    }

    /// 4 us against 6 us in every round: two or three rounds a side are
    /// enough when every round shows the shift far beyond the rounds' spread.
    #[test]
    fn few_rounds_decide_a_shift_far_beyond_their_spread() {
        let r = row(&[4.02, 4.02, 4.03], &[6.05, 6.05, 6.05], Metric::P50);
        assert_eq!(r.verdict, Verdict::Slower, "{r:?}");
        assert!(r.test.contains("3 vs 3 rounds"), "{}", r.test);
        let r = row(&[227e3, 226e3], &[155e3, 156e3], Metric::Iops);
        assert_eq!(r.verdict, Verdict::Slower, "{r:?}");
        // Identical rounds: the within-round floor still makes it a test.
        let r = rounds_row(
            Metric::P50,
            "read",
            &[4020.0; 3],
            &[6050.0; 3],
            &Settings::default(),
            (1e-6, 1e-6),
        );
        assert_eq!(r.verdict, Verdict::Slower, "{r:?}");
        assert!(r.test.contains("floored"), "{}", r.test);
        // But 2 rounds that disagree by more than the change decide nothing.
        let r = row(&[1.0, 1.3], &[1.1, 1.4], Metric::P50);
        assert_eq!(r.verdict, Verdict::NoDifference, "{r:?}");
        assert!(r.note.as_deref().unwrap().contains("rounds' spread allows"));
    }

    #[test]
    fn a_tiny_significant_change_is_under_the_minimum_effect() {
        let base = [100.0, 100.01, 100.02, 100.03, 100.04];
        let new = [100.5, 100.51, 100.52, 100.53, 100.54];
        let r = row(&base, &new, Metric::P50);
        assert!(r.significant);
        assert_eq!(r.verdict, Verdict::NoDifference);
        assert!(r.note.as_deref().unwrap().contains("minimum effect"));
    }

    /// Draws like a busy machine's rounds: heavy-tailed noise around a common
    /// level (Student's t with 3 degrees of freedom on the log scale, 3%
    /// scale: now and then a round 10-15% off), plus now and then a round hit
    /// by a noisy neighbour (10% of rounds, +30%).
    pub(crate) fn noisy_rounds(rng: &mut StdRng, n: usize, level: f64) -> Vec<f64> {
        let t3 = StudentT::new(3.0).unwrap();
        (0..n)
            .map(|_| {
                let hit = if rng.random_bool(0.1) { 1.3 } else { 1.0 };
                let z: f64 = t3.sample(rng);
                level * (0.03 * z).exp() * hit
            })
            .collect()
    }

    /// The false-alarm rate of A/A comparisons: the same distribution on both
    /// sides must give "no difference" in at least 95% of draws, for 2, 3, 5
    /// and 10 rounds a side, with the minimum effect off (the test's own
    /// level) and on. Seeded: the same draws every run.
    #[test]
    fn a_a_false_alarm_rate_is_at_most_five_percent() {
        let mut rng = StdRng::seed_from_u64(2026);
        for rounds in [2, 3, 5, 10] {
            for min_effect in [0.0, 0.01] {
                let set = Settings {
                    min_effect,
                    ..Settings::default()
                };
                let draws = 2000;
                let mut alarms = 0;
                for _ in 0..draws {
                    let a = noisy_rounds(&mut rng, rounds, 5000.0);
                    let b = noisy_rounds(&mut rng, rounds, 5000.0);
                    let r = rounds_row(Metric::P99, "read", &a, &b, &set, (0.0, 0.0));
                    if r.verdict != Verdict::NoDifference {
                        alarms += 1;
                    }
                }
                let rate = alarms as f64 / draws as f64;
                eprintln!(
                    "A/A {rounds} vs {rounds} rounds, min effect {min_effect}: false alarms {rate:.4}"
                );
                assert!(
                    rate <= 0.05,
                    "{rounds} vs {rounds} rounds, min effect {min_effect}: false alarms {rate}"
                );
            }
        }
    }

    /// And the test has power: under the same noise (a round's ln(value)
    /// spreads by about 0.09) a 20% shift is seen in most 5 vs 5 draws and a
    /// 50% shift (4 us against 6 us) in most 3 vs 3 draws, so the A/A check
    /// above is not passing by never calling anything.
    #[test]
    fn shifts_are_seen_in_most_draws() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut seen = [0, 0];
        for _ in 0..500 {
            for (i, (n, new)) in [(5, 6000.0), (3, 7500.0)].into_iter().enumerate() {
                let a = noisy_rounds(&mut rng, n, 5000.0);
                let b = noisy_rounds(&mut rng, n, new);
                let set = Settings::default();
                let r = rounds_row(Metric::P99, "read", &a, &b, &set, (0.0, 0.0));
                if r.verdict == Verdict::Slower {
                    seen[i] += 1;
                }
            }
        }
        eprintln!(
            "20% shift 5 vs 5: {} of 500; 50% shift 3 vs 3: {} of 500",
            seen[0], seen[1]
        );
        assert!(
            seen[0] >= 300,
            "20% slower seen in {} of 500 draws",
            seen[0]
        );
        assert!(
            seen[1] >= 350,
            "50% slower seen in {} of 500 draws",
            seen[1]
        );
    }

    fn sample(p50: f64, bins: Vec<(f64, u64)>) -> DirSample {
        let n = bins.iter().map(|b| b.1).sum();
        DirSample {
            iops: 1000.0,
            bw_bytes: 4e6,
            clat_mean: Some(p50),
            clat_stddev: p50 / 10.0,
            clat_n: n,
            p50: Some(p50),
            p99: Some(p50 * 1.2),
            p999: Some(p50 * 1.3),
            dist: Some(LatDist::Bins(bins)),
        }
    }

    #[test]
    fn one_round_a_side_uses_the_distributions_and_says_so() {
        let bins_a: Vec<(f64, u64)> = (0..100).map(|i| (4000.0 + i as f64 * 10.0, 100)).collect();
        let bins_b: Vec<(f64, u64)> = bins_a.iter().map(|&(v, c)| (v * 1.5, c)).collect();
        let a = sample(4500.0, bins_a.clone());
        let b = sample(6750.0, bins_b);
        let set = Settings::default();
        let r = dist_row(Metric::P50, "read", &[&a], &[&b], &set, 1).unwrap();
        assert_eq!(r.verdict, Verdict::Slower, "{r:?}");
        assert!(r.test.contains("json+ bins"), "{}", r.test);
        assert!(r.note.as_deref().unwrap().contains("not run-to-run"));
        let same = dist_row(Metric::P50, "read", &[&a], &[&a.clone()], &set, 1).unwrap();
        assert_eq!(same.verdict, Verdict::NoDifference);
        // IOPS of one round: not judged.
        let s = single_row(Metric::Iops, "read", &[1000.0], &[2000.0]);
        assert_eq!(s.verdict, Verdict::NoDifference);
        assert!(!s.significant);
        // One round against five: latency from the pooled bins of the five.
        let five: Vec<DirSample> = (0..5).map(|_| a.clone()).collect();
        let refs: Vec<&DirSample> = five.iter().collect();
        let r = dist_row(Metric::P99, "read", &refs, &[&b], &set, 3).unwrap();
        assert_eq!(r.verdict, Verdict::Slower);
        assert!(r.test.contains("50000 vs 10000 I/Os"), "{}", r.test);
    }

    #[test]
    fn flags_fio_leaves_out_are_not_differences() {
        let m = |v: &[(&str, &str)]| {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        let d = option_diffs(&m(&[("time_based", ""), ("bs", "4k")]), &m(&[("bs", "8k")]));
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].option, "bs");
    }
}
