//! Building the results from the engine's recorders: a direction's
//! latencies, percentiles and distributions, a job's whole result, and the
//! group aggregates fio computes once every job is in.

use super::*;

const DEPTH_LABELS: [&str; DEPTH_BUCKETS] = ["1", "2", "4", "8", "16", "32", ">=64"];
const BATCH_LABELS: [&str; DEPTH_BUCKETS] = ["0", "4", "8", "16", "32", "64", ">=64"];
const LAT_LABELS: [&str; 10] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
];

fn pct(v: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        100.0 * v as f64 / total as f64
    }
}

fn dist(labels: &[&str], counts: &[u64], total: u64) -> Dist {
    Dist(
        labels
            .iter()
            .zip(counts)
            .map(|(l, &c)| (l.to_string(), pct(c, total)))
            .collect(),
    )
}

/// min, max, mean, sample stddev of per-interval values.
fn sample_stats(v: &[f64]) -> (u64, u64, f64, f64) {
    if v.is_empty() {
        return (0, 0, 0.0, 0.0);
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let dev = if v.len() > 1 {
        (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = v.iter().cloned().fold(0.0, f64::max);
    (min as u64, max as u64, mean, dev)
}

impl DirResult {
    /// `runtime_ns`: the direction's measured time (fio's per-direction
    /// `runtime`: the longest of the workers that did I/O this way).
    fn build(rec: &Recorder, dir: usize, runtime_ns: u64, pct_list: &[f64]) -> DirResult {
        let d = &rec.dirs[dir];
        if d.total_ios == 0 && d.io_bytes == 0 {
            return DirResult::default();
        }
        let runtime_ms = runtime_ns.div_ceil(1_000_000).max(1);
        let bw_bytes = d.io_bytes * 1000 / runtime_ms;
        // fio's samples: one per bwavgtime (iopsavgtime) window, full
        // windows only (the trailing partial one would understate the rate).
        let iv = rec.log.interval_ns();
        let slots = rec.log.slots();
        let w = rec.windows;
        let windows = |window_ns: u64, bytes: bool, scale: f64| -> Vec<f64> {
            let per = (window_ns / iv).max(1) as usize;
            let full = (runtime_ns / (per as u64 * iv)) as usize;
            let per_s = 1e9 / (per as u64 * iv) as f64;
            (0..full)
                .map(|w| {
                    let n: u64 = (w * per..(w + 1) * per)
                        .map(|i| {
                            let s = slots.get(i).copied().unwrap_or_default();
                            if bytes { s.bytes[dir] } else { s.ios[dir] }
                        })
                        .sum();
                    n as f64 * per_s / scale
                })
                .collect()
        };
        let bws = if w.no_bw {
            Vec::new()
        } else {
            windows(w.bw_ns, true, 1024.0)
        };
        let iops = windows(w.iops_ns, false, 1.0);
        let (bw_min, bw_max, bw_mean, bw_dev) = sample_stats(&bws);
        let (iops_min, iops_max, iops_mean, iops_stddev) = sample_stats(&iops);
        let bw_kib = bw_bytes as f64 / 1024.0;
        DirResult {
            io_bytes: d.io_bytes,
            io_kbytes: d.io_bytes / 1024,
            bw_bytes,
            bw: bw_bytes / 1024,
            iops: d.total_ios as f64 * 1000.0 / runtime_ms as f64,
            runtime: runtime_ms,
            total_ios: d.total_ios,
            short_ios: d.short_ios,
            drop_ios: d.drop_ios,
            slat_ns: LatStats::of(&d.slat),
            clat_ns: LatStats::with_percentiles(&d.clat, pct_list),
            lat_ns: LatStats::of(&d.lat),
            prios: None,
            bw_min,
            bw_max,
            bw_agg: if bws.is_empty() || bw_kib == 0.0 {
                0.0
            } else {
                (bw_mean * 100.0 / bw_kib).min(100.0)
            },
            bw_mean,
            bw_dev,
            bw_samples: bws.len() as u64,
            iops_min,
            iops_max,
            iops_mean,
            iops_stddev,
            iops_samples: iops.len() as u64,
            hidden: false,
        }
    }
}

impl JobResult {
    /// Build a job's result from its (possibly merged) recorder and the summed
    /// rusage delta of its workers.
    pub fn from_recorder(meta: &JobMeta, rec: &Recorder, cpu: &ThreadUsage) -> JobResult {
        Self::from_recorder_by_dir(meta, rec, cpu, [meta.runtime_ns; 3])
    }

    /// [`from_recorder`](Self::from_recorder) with each direction's own
    /// measured time `[read, write, trim]` (a report merging jobs that ran
    /// for different times: fio's runtime of a direction is the longest of
    /// the workers that did I/O that way).
    pub fn from_recorder_by_dir(
        meta: &JobMeta,
        rec: &Recorder,
        cpu: &ThreadUsage,
        dir_runtime_ns: [u64; 3],
    ) -> JobResult {
        let pl = &meta.percentile_list;
        let sync = &rec.dirs[Op::Fsync.dir()];
        let cpu_base = (meta.runtime_ns as f64 * meta.workers.max(1) as f64).max(1.0);
        // fio's latency distribution counts reads, writes and trims.
        let rw_ios: u64 = [Op::Read, Op::Write, Op::Trim]
            .iter()
            .map(|op| rec.dirs[op.dir()].total_ios)
            .sum();
        let lb = &rec.lat_buckets;
        let mut lat_ms = dist(&LAT_LABELS, &lb[20..30], rw_ios);
        lat_ms.0.push(("2000".into(), pct(lb[30], rw_ios)));
        lat_ms
            .0
            .push((">=2000".into(), pct(lb[LAT_BUCKETS - 1], rw_ios)));
        let depth_total: u64 = rec.depth.iter().sum();
        let submit_total: u64 = rec.submit.iter().sum();
        let complete_total: u64 = rec.complete.iter().sum();
        let log = &rec.log;
        JobResult {
            jobname: meta.name.clone(),
            groupid: meta.groupid,
            error: rec.first_error,
            eta: 0,
            elapsed: meta.elapsed_ns.div_ceil(1_000_000_000),
            job_options: OrderedMap(meta.options.clone()),
            read: DirResult::build(rec, 0, dir_runtime_ns[0], pl),
            write: DirResult::build(rec, 1, dir_runtime_ns[1], pl),
            trim: DirResult::build(rec, Op::Trim.dir(), dir_runtime_ns[2], pl),
            sync: SyncResult {
                total_ios: sync.total_ios,
                lat_ns: LatStats::with_percentiles(&sync.lat, pl),
                hidden: false,
            },
            mixed: None,
            style: TextStyle::default(),
            job_runtime: meta.job_runtime_ns / 1_000_000,
            usr_cpu: 100.0 * cpu.user_ns as f64 / cpu_base,
            sys_cpu: 100.0 * cpu.sys_ns as f64 / cpu_base,
            ctx: cpu.ctx(),
            majf: cpu.majflt,
            minf: cpu.minflt,
            iodepth_level: dist(&DEPTH_LABELS, &rec.depth, depth_total),
            iodepth_submit: dist(&BATCH_LABELS, &rec.submit, submit_total),
            iodepth_complete: dist(&BATCH_LABELS, &rec.complete, complete_total),
            latency_ns: dist(&LAT_LABELS, &lb[0..10], rw_ios),
            latency_us: dist(&LAT_LABELS, &lb[10..20], rw_ios),
            latency_ms: lat_ms,
            latency_depth: meta.iodepth,
            latency_target: 0,
            latency_percentile: 100.0,
            latency_window: 0,
            steadystate: None,
            iolab: JobExtras {
                jobnum: meta.jobnum,
                workers: meta.workers,
                runtime_ms: meta.runtime_ns / 1_000_000,
                pid: meta.pid,
                histogram: HistogramInfo::current(rec.clamped()),
                errors: std::array::from_fn(|d| rec.dirs[d].errors),
                classes: Class::ALL
                    .iter()
                    .zip(&rec.classes)
                    .filter(|(_, c)| c.ios > 0)
                    .map(|(k, c)| ClassResult {
                        class: k.name().to_string(),
                        ios: c.ios,
                        bytes: c.bytes,
                        clat_ns: LatStats::with_own_percentiles(&c.clat, pl),
                    })
                    .collect(),
                clat_percentile: {
                    let own = |d: usize| LatStats::with_own_percentiles(&rec.dirs[d].clat, pl);
                    OwnPercentiles {
                        read: own(0).percentile,
                        write: own(1).percentile,
                        trim: own(Op::Trim.dir()).percentile,
                    }
                },
                iops_log: IopsLog {
                    interval_ms: log.interval_ns() / 1_000_000,
                    ios: log.slots().iter().map(|s| s.ios).collect(),
                    bytes: log.slots().iter().map(|s| s.bytes).collect(),
                    dropped: log.dropped,
                },
                cpu: *cpu,
                engine: None,
            },
        }
    }

    /// Add fio's json+ completion-latency bins (`clat_ns.bins`) to the
    /// directions of `rec` that saw I/O; a run asks for them with `json+`.
    pub fn add_fio_bins(&mut self, rec: &Recorder) {
        for (d, dir) in [
            (&mut self.read, 0),
            (&mut self.write, 1),
            (&mut self.trim, 2),
        ] {
            d.clat_ns.bins = FioBins::of(&rec.dirs[dir].clat);
        }
        self.add_sync_bins(rec);
    }

    /// fio's json+ writes the bins of the sync latencies too (`sync.lat_ns.bins`)
    /// whenever the job synced.
    fn add_sync_bins(&mut self, rec: &Recorder) {
        self.sync.lat_ns.bins = FioBins::of(&rec.dirs[Op::Fsync.dir()].lat);
    }

    /// fio's `slat_percentiles`, `clat_percentiles`, `lat_percentiles` (`on`, in
    /// that order): the latency objects of each direction that carry
    /// `percentile` of `list` and, with `bins` (json+), fio's `bins` — both
    /// only where the series has samples, as fio's stat.c writes them.
    pub fn choose_percentiles(&mut self, rec: &Recorder, on: [bool; 3], list: &[f64], bins: bool) {
        for (d, dir) in [
            (&mut self.read, 0),
            (&mut self.write, 1),
            (&mut self.trim, 2),
        ] {
            let r = &rec.dirs[dir];
            let objs = [
                (&mut d.slat_ns, &r.slat),
                (&mut d.clat_ns, &r.clat),
                (&mut d.lat_ns, &r.lat),
            ];
            for ((s, h), on) in objs.into_iter().zip(on) {
                if on {
                    s.percentile = LatStats::with_percentiles(h, list).percentile;
                    s.bins = if bins && s.percentile.is_some() {
                        FioBins::of(h)
                    } else {
                        None
                    };
                } else {
                    s.percentile = None;
                    s.bins = None;
                }
            }
            d.prios = prio_results(rec, dir, on, list, bins);
        }
        if bins {
            self.add_sync_bins(rec);
        }
    }

    /// Directions as `(fio name, result)`, fio's order.
    pub fn dirs(&self) -> [(&'static str, &DirResult); 3] {
        [
            ("read", &self.read),
            ("write", &self.write),
            ("trim", &self.trim),
        ]
    }

    /// Raw count of depth samples, to tell "no data" from "all zero".
    pub fn has_depth_data(&self) -> bool {
        self.iodepth_level.0.iter().any(|(_, v)| *v > 0.0)
    }
}

/// Re-express each job's `bw_agg` against its group's aggregate bandwidth (fio's
/// `per=`): call once all jobs are in.
pub fn apply_group_aggregates(jobs: &mut [JobResult]) {
    let groups: Vec<u32> = {
        let mut g: Vec<u32> = jobs.iter().map(|j| j.groupid).collect();
        g.sort_unstable();
        g.dedup();
        g
    };
    for g in groups {
        for dir in 0..3 {
            let pick = |j: &JobResult| match dir {
                0 => j.read.clone(),
                1 => j.write.clone(),
                _ => j.trim.clone(),
            };
            let agg_bytes: u64 = jobs
                .iter()
                .filter(|j| j.groupid == g)
                .map(|j| pick(j).io_bytes)
                .sum();
            let max_rt: u64 = jobs
                .iter()
                .filter(|j| j.groupid == g)
                .map(|j| pick(j).runtime)
                .max()
                .unwrap_or(0);
            if max_rt == 0 {
                continue;
            }
            let agg_kib = (agg_bytes * 1000 / max_rt) as f64 / 1024.0;
            for j in jobs.iter_mut().filter(|j| j.groupid == g) {
                let d = match dir {
                    0 => &mut j.read,
                    1 => &mut j.write,
                    _ => &mut j.trim,
                };
                if d.bw_samples > 0 && agg_kib > 0.0 {
                    d.bw_agg = (d.bw_mean * 100.0 / agg_kib).min(100.0);
                }
            }
        }
    }
}

/// fio's `prios` of direction `dir`: one entry per priority that saw I/O
/// there, written only when two or more did (as fio's stat.c does). Each
/// carries percentiles when clat or lat percentiles are on (`on`), and fio's
/// bins with json+ (`bins`).
fn prio_results(
    rec: &Recorder,
    dir: usize,
    on: [bool; 3],
    list: &[f64],
    bins: bool,
) -> Option<Vec<PrioResult>> {
    let p = rec.prios.as_deref()?;
    if p.with_samples(dir).count() < 2 {
        return None;
    }
    let pct = on[1] || on[2];
    Some(
        p.with_samples(dir)
            .map(|s| {
                let h = &s.dirs[dir];
                let mut st = if pct {
                    LatStats::with_percentiles(h, list)
                } else {
                    LatStats::of(h)
                };
                st.bins = if bins && st.percentile.is_some() {
                    FioBins::of(h)
                } else {
                    None
                };
                PrioResult {
                    prioclass: u32::from(s.ioprio >> 13),
                    prio: u32::from(s.ioprio & 7),
                    clat_ns: (!p.total).then(|| st.clone()),
                    lat_ns: p.total.then_some(st),
                }
            })
            .collect(),
    )
}
