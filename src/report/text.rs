//! fio-like normal (text) output.
//!
//! The layout follows fio 3.33's terse-free "normal" output closely enough that a
//! reader who knows fio finds every number where they expect it: job line, IOPS/BW
//! line, slat/clat/lat lines with fio's unit choice, the percentile block, bw/iops
//! sample lines, latency distribution, cpu, IO depths, run status groups, disk stats.
//! iolab-only facts (per-class latency) come after fio's lines of a job.

use std::fmt::Write as _;

use crate::job::spec::{BlockSizes, JobSpec};
use crate::measure::blktrace::{self, StageStats};
use crate::measure::cpu::SystemDelta;
use crate::placement::corunner::Kernel;
use crate::report::model::{
    DirResult, Dist, FIO_VERSION_STRING, JobResult, LatStats, RunResult, TextStyle,
};
use crate::report::raw::PlacementReport;
use crate::report::trace::JobTrace;

/// fio's `significant_figures` default.
const SIG_FIGS: usize = 4;

/// Render `num` in at most `maxlen` digits with an SI (`pow2 = false`) or IEC
/// (`pow2 = true`) prefix and `unit` suffix, the way fio prints sizes and rates:
/// 41795 -> "41.8k", 171196081 B/s -> "163MiB/s" (pow2) / "171MB/s".
pub fn num2str(num: u64, maxlen: usize, pow2: bool, unit: &str) -> String {
    const SI: [&str; 6] = ["", "k", "M", "G", "T", "P"];
    const IEC: [&str; 6] = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];
    let (step, prefixes) = if pow2 { (1024u64, IEC) } else { (1000u64, SI) };
    let digits = |n: u64| n.checked_ilog10().map_or(1, |d| d as usize + 1);
    let mut n = num;
    let mut level = 0;
    let mut rem = None;
    while digits(n) > maxlen && level < prefixes.len() - 1 {
        rem = Some(n % step);
        n /= step;
        level += 1;
    }
    let Some(rem) = rem else {
        return format!("{n}{}{unit}", prefixes[level]);
    };
    let room = maxlen.saturating_sub(digits(n));
    if room <= 1 {
        // No room for a decimal: round to nearest.
        if rem >= step / 2 {
            n += 1;
        }
        return format!("{n}{}{unit}", prefixes[level]);
    }
    let decimals = room - 1;
    let frac = format!("{:.*}", decimals, rem as f64 / step as f64);
    // A fraction that rounds up to 1.0 carries into the integer part.
    let (n, frac) = match frac.strip_prefix("1.") {
        Some(zeros) => (n + 1, zeros.to_string()),
        None => (n, frac[2..].to_string()),
    };
    format!("{n}.{frac}{}{unit}", prefixes[level])
}

/// Decimal places needed to print every percentile of `list` (fio's
/// `percentile_precision`), at most 6.
pub fn percentile_precision(list: &[f64]) -> usize {
    list.iter()
        .map(|&p| {
            (0..=6)
                .find(|&d| {
                    let s = 10f64.powi(d as i32);
                    ((p * s).round() - p * s).abs() < 1e-6
                })
                .unwrap_or(6)
        })
        .max()
        .unwrap_or(2)
}

/// The line fio prints for a job before it starts:
/// `name: (g=0): rw=randread, bs=(R) 4096B-4096B, (W) ..., ioengine=psync, iodepth=1`.
/// Trims take the write block sizes in iolab, so `(T)` repeats `(W)`, as fio's
/// does when `bs=` names two values.
pub fn job_start_line(spec: &JobSpec, groupid: u32) -> String {
    let size = |b: u32| num2str(u64::from(b), SIG_FIGS, spec.kb_base == 1024, "B");
    let range = |b: &BlockSizes| format!("{}-{}", size(b.min()), size(b.max()));
    format!(
        "{}: (g={}): rw={}, bs=(R) {}, (W) {}, (T) {}, ioengine={}, iodepth={}",
        spec.name,
        groupid,
        spec.rw.fio_name(),
        range(&spec.bs[0]),
        range(&spec.bs[1]),
        range(spec.trim_bs()),
        spec.ioengine.fio_name(),
        spec.iodepth
    )
}

/// What fio prints in normal output before the run: each job's start line
/// (`...` under it when it has clones), the version line, and `Starting N
/// threads`. iolab's workers are always threads (fio's `thread=1`), so it
/// says threads where fio without `thread` says processes.
pub fn startup_lines(jobs: &[JobSpec]) -> String {
    let mut out = String::new();
    let groups = crate::job::reporting_groups(jobs);
    for (j, &groupid) in jobs.iter().zip(&groups) {
        let _ = writeln!(out, "{}", job_start_line(j, groupid));
        if j.numjobs > 1 {
            out += "...\n";
        }
    }
    let n: u32 = jobs.iter().map(|j| j.numjobs).sum();
    let _ = writeln!(out, "{FIO_VERSION_STRING}");
    let _ = writeln!(out, "Starting {n} thread{}", if n == 1 { "" } else { "s" });
    out
}

/// fio's choice of unit for a latency line: msec if every figure exceeds 1 ms,
/// else usec if every figure exceeds 1 us, else nsec.
fn lat_line(out: &mut String, name: &str, s: &LatStats) {
    if s.n == 0 {
        return;
    }
    let (mut min, mut max, mut mean, mut dev) = (s.min, s.max, s.mean, s.stddev);
    let mut base = "(nsec)";
    for (limit, label) in [(1_000_000u64, "(msec)"), (1_000, "(usec)")] {
        let l = limit as f64;
        if min > limit && max > limit && mean > l && dev > l {
            min /= limit;
            max /= limit;
            mean /= l;
            dev /= l;
            base = label;
            break;
        }
    }
    let _ = writeln!(
        out,
        "    {name} {base}: min={}, max={}, avg={mean:5.2}, stdev={dev:5.2}",
        num2str(min, 6, false, ""),
        num2str(max, 6, false, ""),
    );
}

fn percentile_block(out: &mut String, name: &str, s: &LatStats, precision: usize) {
    let Some(p) = &s.percentile else { return };
    if p.0.is_empty() {
        return;
    }
    let minv = p.0.iter().map(|x| x.1).min().unwrap_or(0);
    let maxv = p.0.iter().map(|x| x.1).max().unwrap_or(0);
    let (scale_steps, label) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, "msec")
    } else if minv > 2_000 && maxv > 99_999 {
        (1, "usec")
    } else {
        (0, "nsec")
    };
    let divisor = 1000f64.powi(scale_steps);
    let width = ((maxv as f64 / divisor).log10().floor() as i64 + 1).max(5) as usize;
    let _ = write!(out, "    {name} percentiles ({label}):\n     |");
    let n = p.0.len();
    for (j, &(pc, v)) in p.0.iter().enumerate() {
        if j != 0 && j % 4 == 0 {
            out.push_str("     |");
        }
        // Round up per step, so a value never prints below its bucket.
        let mut v = v;
        for _ in 0..scale_steps {
            v = v.div_ceil(1000);
        }
        let last = j == n - 1;
        let _ = write!(
            out,
            " {pc:w$.prec$}th=[{v:width$}]{}",
            if last { '\n' } else { ',' },
            w = precision + 3,
            prec = precision,
        );
        if !last && j % 4 == 3 {
            out.push('\n');
        }
    }
}

/// `post` ends the IOPS line (fio's "; N zone resets" on a write line).
/// A rate as fio prints it: bytes per second, or bits with `unit_base=1`.
fn rate(v: u64, st: TextStyle, pow2: bool) -> String {
    if st.bits {
        num2str(v.saturating_mul(8), st.sig_figs, pow2, "bit/s")
    } else {
        num2str(v, st.sig_figs, pow2, "B/s")
    }
}

fn dir_block(
    out: &mut String,
    label: &str,
    d: &DirResult,
    precision: usize,
    post: &str,
    st: TextStyle,
) {
    let bw_p = rate(d.bw_bytes, st, true);
    let bw_alt = rate(d.bw_bytes, st, false);
    let io_p = num2str(d.io_bytes, st.sig_figs, true, "B");
    let _ = writeln!(
        out,
        "  {label}: IOPS={}, BW={bw_p} ({bw_alt})({io_p}/{}msec){post}",
        num2str(d.iops as u64, st.sig_figs, false, ""),
        d.runtime
    );
    lat_line(out, "slat", &d.slat_ns);
    lat_line(out, "clat", &d.clat_ns);
    lat_line(out, " lat", &d.lat_ns);
    // fio's per-priority lines: one latency line per priority, then (with
    // percentiles) one block each, named "clat prio CLASS/LEVEL".
    let prios = d.prios.as_deref().unwrap_or_default();
    for p in prios {
        if let Some(st) = p.stats() {
            let name = format!("{} prio {}/{}", p.kind(), p.prioclass, p.prio);
            lat_line(out, &name, st);
        }
    }
    percentile_block(out, "slat", &d.slat_ns, precision);
    percentile_block(out, "clat", &d.clat_ns, precision);
    percentile_block(out, "lat", &d.lat_ns, precision);
    let total: u64 = prios.iter().filter_map(|p| p.stats()).map(|st| st.n).sum();
    for p in prios {
        if let Some(st) = p.stats().filter(|st| st.n > 0) {
            let name = format!(
                "{} prio {}/{} ({:.2}% of IOs)",
                p.kind(),
                p.prioclass,
                p.prio,
                100.0 * st.n as f64 / total.max(1) as f64
            );
            percentile_block(out, &name, st, precision);
        }
    }
    if d.bw_samples > 0 {
        let (mut min, mut max, mut mean, mut dev, mut unit) =
            (d.bw_min, d.bw_max, d.bw_mean, d.bw_dev, "KiB");
        if mean > 1024.0 * 1024.0 {
            min /= 1024;
            max /= 1024;
            mean /= 1024.0;
            dev /= 1024.0;
            unit = "MiB";
        }
        let _ = writeln!(
            out,
            "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per={:3.2}%, avg={mean:5.2}, stdev={dev:5.2}, samples={}",
            d.bw_agg, d.bw_samples
        );
    }
    if d.iops_samples > 0 {
        let _ = writeln!(
            out,
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}",
            d.iops_min, d.iops_max, d.iops_mean, d.iops_stddev, d.iops_samples
        );
    }
}

/// fio's latency distribution lines: non-zero buckets, five per line.
fn lat_dist(out: &mut String, unit: &str, d: &Dist) {
    let shown: Vec<_> = d.0.iter().filter(|(_, v)| *v > 0.0).collect();
    for chunk in shown.chunks(5) {
        let items: Vec<String> = chunk.iter().map(|(k, v)| format!("{k}={v:3.2}%")).collect();
        let _ = writeln!(out, "  lat ({unit})   : {}", items.join(", "));
    }
}

fn dist_line(d: &Dist) -> String {
    d.0.iter()
        .map(|(k, v)| format!("{k}={v:3.1}%"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// fio 3.33 ends a job's write line with its zone resets (always: "; 0 zone
/// resets" for a job without zones).
fn zone_resets(j: &JobResult, dir: &str) -> String {
    if dir != "write" {
        return String::new();
    }
    let n = j
        .iolab
        .engine
        .as_ref()
        .map_or(0, |e| e.accounting.zone_resets);
    format!("; {n} zone resets")
}

/// One job's block, as fio prints it after the run.
pub fn job_block(out: &mut String, j: &JobResult, time: &str, precision: usize) {
    let _ = writeln!(
        out,
        "{}: (groupid={}, jobs={}): err={:2}: pid={}: {}",
        j.jobname, j.groupid, j.iolab.workers, j.error, j.iolab.pid, time
    );
    for (name, d) in j.dirs() {
        if !d.hidden && (d.total_ios > 0 || d.io_bytes > 0) {
            dir_block(out, name, d, precision, &zone_resets(j, name), j.style);
        }
    }
    if let Some(m) = &j.mixed {
        // unified_rw_reporting: the directions summed.
        dir_block(out, "mixed", m, precision, "", j.style);
    }
    lat_dist(out, "nsec", &j.latency_ns);
    lat_dist(out, "usec", &j.latency_us);
    lat_dist(out, "msec", &j.latency_ms);
    if j.sync.lat_ns.n > 0 {
        out.push_str("  fsync/fdatasync/sync_file_range:\n");
        lat_line(out, "sync", &j.sync.lat_ns);
        percentile_block(out, "sync", &j.sync.lat_ns, precision);
    }
    let _ = writeln!(
        out,
        "  cpu          : usr={:3.2}%, sys={:3.2}%, ctx={}, majf={}, minf={}",
        j.usr_cpu, j.sys_cpu, j.ctx, j.majf, j.minf
    );
    if j.has_depth_data() {
        let _ = writeln!(out, "  IO depths    : {}", dist_line(&j.iodepth_level));
        let _ = writeln!(out, "     submit    : {}", dist_line(&j.iodepth_submit));
        let _ = writeln!(out, "     complete  : {}", dist_line(&j.iodepth_complete));
    }
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},{} short={},{},{},0 dropped={},{},{},0",
        j.read.total_ios,
        j.write.total_ios,
        j.trim.total_ios,
        j.sync.total_ios,
        j.read.short_ios,
        j.write.short_ios,
        j.trim.short_ios,
        j.read.drop_ios,
        j.write.drop_ios,
        j.trim.drop_ios,
    );
    let _ = writeln!(
        out,
        "     latency   : target={}, window={}, percentile={:.2}%, depth={}",
        j.latency_target, j.latency_window, j.latency_percentile, j.latency_depth
    );
    if let Some(n) = (j.iolab.engine.as_ref()).and_then(|e| e.lat_target.as_ref()?.note()) {
        let _ = writeln!(out, "     note      : {n}");
    }
    if let Some(ss) = &j.steadystate {
        let _ = writeln!(
            out,
            "  steadystate  : attained={}, bw={} ({}), iops={}, {}",
            if ss.attained == 1 { "yes" } else { "no" },
            num2str(ss.data.bw_mean, SIG_FIGS, true, "B/s"),
            num2str(ss.data.bw_mean, SIG_FIGS, false, "B/s"),
            num2str(ss.data.iops_mean, SIG_FIGS, false, ""),
            ss.criterion_label()
        );
    }
    if j.iolab.classes.len() > 1 {
        for c in &j.iolab.classes {
            let pick = |p: f64| {
                c.clat_ns
                    .percentile
                    .as_ref()
                    .and_then(|v| v.0.iter().find(|x| (x.0 - p).abs() < 1e-9))
                    .map_or(String::from("-"), |x| x.1.to_string())
            };
            let _ = writeln!(
                out,
                "  class {:<10}: ios={}, clat (nsec): avg={:.2}, p50={}, p99={}, max={}",
                c.class,
                c.ios,
                c.clat_ns.mean,
                pick(50.0),
                pick(99.0),
                c.clat_ns.max
            );
        }
    }
    // How completions were actually observed: a run that asked to poll and
    // slept says so here, not only in JSON.
    let Some(e) = &j.iolab.engine else {
        return;
    };
    if e.stages.is_empty() {
        let _ = writeln!(out, "  iolab completion: {}", e.completion_summary);
    }
    // group_reporting over jobs of different stages: each one's line.
    for s in &e.stages {
        let _ = writeln!(
            out,
            "  iolab completion: {} ({}, {}): {}",
            s.jobs.join(", "),
            s.backend,
            s.scheduler,
            s.completion_summary
        );
    }
    if let Some(policy) = &e.policy_summary {
        let _ = writeln!(out, "  iolab policy    : {policy}");
    }
    // Adaptive's choice per size class, with the numbers it was made from.
    for d in &e.adaptive_decisions {
        let _ = writeln!(
            out,
            "  iolab adaptive  : <= {}: {} ({} samples): {}",
            crate::device::target::human(d.size_class),
            d.model.name(),
            d.samples,
            d.why
        );
    }
    let b = &e.backend_stats;
    let punts = match b.punted {
        Some(n) => format!(", io-wq punts={n}"),
        // Counting costs each punt a tracepoint, so it is asked for.
        None if e.backend == "uring" => ", io-wq punts=not counted (count_punts=1)".to_string(),
        None => String::new(),
    };
    let _ = writeln!(
        out,
        "  iolab backend   : {}, submit calls={}, wait calls={}{punts}, interrupts={}",
        e.backend, b.submit_calls, b.wait_calls, b.interrupts
    );
    if let Some(r) = &b.own.aio_reap {
        let _ = writeln!(
            out,
            "  iolab reap      : {}: {} completions from the ring, {} from {} io_getevents calls",
            r.path.describe(),
            r.counts.ring_events,
            r.counts.syscall_events,
            r.counts.getevents_calls
        );
    }
    if let Some(by) = b.performed_by {
        let _ = writeln!(out, "  iolab backend   : {}", by.describe());
    }
    if let Some(l) = &e.job_logs {
        let _ = writeln!(
            out,
            "  iolab job logs  : {} records, waited for the log writer {} times ({:.3} ms in all), \
             {} dropped",
            l.records,
            l.waits,
            l.wait_ns as f64 / 1e6,
            l.dropped
        );
    }
    if b.completed_in_submit > 0 {
        let _ = writeln!(
            out,
            "  iolab backend   : {} requests were already complete when io_submit \
             returned (AIO on a buffered file: the kernel did the I/O inside the call, so \
             slat holds the I/O time; use direct=1 for asynchronous AIO)",
            b.completed_in_submit
        );
    }
}

/// The group's directions `pick` (3: unified_rw_reporting's `mixed`) that
/// the reports show.
fn group_dirs<'a>(jobs: &[&'a JobResult], pick: usize) -> Vec<&'a DirResult> {
    jobs.iter()
        .filter_map(|j| match pick {
            3 => j.mixed.as_ref(),
            _ => Some(j.dirs()[pick].1).filter(|d| !d.hidden),
        })
        .collect()
}

/// "Run status group N" lines for the jobs of one group.
fn group_block(out: &mut String, gid: u32, jobs: &[&JobResult]) {
    let _ = writeln!(out, "\nRun status group {gid} (all jobs):");
    for (label, pick) in [
        ("   READ", 0usize),
        ("  WRITE", 1),
        ("   TRIM", 2),
        ("  MIXED", 3),
    ] {
        let dirs = group_dirs(jobs, pick);
        let io: u64 = dirs.iter().map(|d| d.io_bytes).sum();
        if io == 0 {
            continue;
        }
        let active: Vec<&&DirResult> = dirs.iter().filter(|d| d.runtime > 0).collect();
        let max_run = active.iter().map(|d| d.runtime).max().unwrap_or(1);
        let min_run = active.iter().map(|d| d.runtime).min().unwrap_or(0);
        let agg = io * 1000 / max_run.max(1);
        let min_bw = active.iter().map(|d| d.bw_bytes).min().unwrap_or(0);
        let max_bw = active.iter().map(|d| d.bw_bytes).max().unwrap_or(0);
        let st = jobs.first().map(|j| j.style).unwrap_or_default();
        let b = |v: u64, pow2: bool| rate(v, st, pow2);
        let _ = writeln!(
            out,
            "{label}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={min_run}-{max_run}msec",
            b(agg, true),
            b(agg, false),
            b(min_bw, true),
            b(max_bw, true),
            b(min_bw, false),
            b(max_bw, false),
            num2str(io, st.sig_figs, true, "B"),
            num2str(io, st.sig_figs, false, "B"),
        );
    }
}

/// The whole run, fio's normal output after the jobs finish.
pub fn render(run: &RunResult, percentile_list: &[f64]) -> String {
    let precision = percentile_precision(percentile_list);
    let mut out = String::new();
    for j in &run.jobs {
        job_block(&mut out, j, &run.time, precision);
    }
    let mut groups: Vec<u32> = run.jobs.iter().map(|j| j.groupid).collect();
    groups.sort_unstable();
    groups.dedup();
    for g in groups {
        let jobs: Vec<&JobResult> = run.jobs.iter().filter(|j| j.groupid == g).collect();
        group_block(&mut out, g, &jobs);
    }
    if !run.disk_util.is_empty() {
        out.push_str("\nDisk stats (read/write):\n");
        for d in &run.disk_util {
            let _ = writeln!(
                out,
                "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:3.2}%",
                d.name,
                d.read_ios,
                d.write_ios,
                d.read_merges,
                d.write_merges,
                d.read_ticks,
                d.write_ticks,
                d.in_queue,
                d.util
            );
        }
    }
    for p in &run.iolab.placement {
        placement_block(&mut out, p);
    }
    if let Some(sys) = &run.iolab.system {
        system_block(&mut out, sys);
    }
    if let Some(c) = &run.iolab.clock {
        let _ = writeln!(
            out,
            "iolab clock    : {}, {:.1} ns/read, resolution {} ns",
            c.source, c.cost_ns, c.resolution_ns
        );
    }
    out
}

/// Where a group's threads ran: one line per P task (worker) and C task
/// (co-runner), with the CPU share each got and the co-runners' work rate.
fn placement_block(out: &mut String, p: &PlacementReport) {
    let _ = writeln!(
        out,
        "\niolab placement (group {}): {}{}",
        p.groupid,
        p.policy
            .as_deref()
            .unwrap_or("as the jobs ask (cpus_allowed/cpumask, or any CPU)"),
        p.topology
            .as_ref()
            .map_or(String::new(), |t| format!(", on {t}"))
    );
    for t in &p.tasks {
        let last = t.last_cpu.map_or("-".to_string(), |c| c.to_string());
        let work = match (t.kernel.map(Kernel::name), t.units_per_s, t.units_per_cpu_s) {
            (Some(k), Some(u), Some(c)) => format!(
                ", {k}: {} units/s ({} per CPU-second)",
                num2str(u as u64, SIG_FIGS, false, ""),
                num2str(c as u64, SIG_FIGS, false, "")
            ),
            _ => String::new(),
        };
        let seen = t
            .predicted
            .as_ref()
            .map_or(String::new(), |k| format!(" predicted={}", k.letter()));
        let _ = writeln!(
            out,
            "  {} {:<24} cpus={:<8} last={:<3} cpu={:5.1}%{seen}{work}",
            t.kind.letter(),
            t.name,
            t.cpus,
            last,
            t.cpu_pct
        );
    }
    if let Some(b) = &p.balancer {
        let _ = writeln!(
            out,
            "  balancer: every {:.0} ms, {} ticks, {} migrations, {}, final placement {} the study's best for the predicted kinds",
            b.interval_ms,
            b.ticks,
            b.migrations,
            b.settled_at_tick
                .map_or("still moving at the end".to_string(), |t| format!(
                    "settled at tick {t}"
                )),
            if b.reached_best { "is" } else { "is not" }
        );
        for e in &b.errors {
            let _ = writeln!(out, "  balancer: {e}");
        }
    }
}

/// iolab's system-wide lines (what fio does not print): /proc/stat shares,
/// busiest interrupt sources, cpuidle use, and sources that could not be read.
fn system_block(out: &mut String, sys: &SystemDelta) {
    out.push('\n');
    if let Some(st) = &sys.stat {
        let p = st.total.percent();
        let _ = writeln!(
            out,
            "iolab system   : {} CPUs, {:.3}s: user={:.1}%, nice={:.1}%, sys={:.1}%, idle={:.1}%, iowait={:.1}%, irq={:.1}%, softirq={:.1}%, steal={:.1}%, ctxt={}, intr={}",
            st.cpus.len(),
            sys.elapsed_ns as f64 / 1e9,
            p.user,
            p.nice,
            p.system,
            p.idle,
            p.iowait,
            p.irq,
            p.softirq,
            p.steal,
            st.ctxt,
            st.intr
        );
    }
    if let Some(irq) = &sys.interrupts {
        let top: Vec<String> = irq
            .active()
            .iter()
            .take(6)
            .map(|s| {
                // Numbered rows end with the device name; named rows (LOC, RES)
                // are known by their label.
                let label = if s.irq.bytes().all(|b| b.is_ascii_digit()) {
                    format!("{} {}", s.irq, s.desc.rsplit(' ').next().unwrap_or(""))
                } else {
                    s.irq.clone()
                };
                let per: Vec<String> = irq
                    .cpus
                    .iter()
                    .zip(&s.per_cpu)
                    .map(|(c, v)| format!("cpu{c}={v}"))
                    .collect();
                format!("{label}={} ({})", s.total, per.join(" "))
            })
            .collect();
        if !top.is_empty() {
            let _ = writeln!(out, "iolab irqs     : {}", top.join(", "));
        }
    }
    match &sys.cpuidle {
        Some(ci) if ci.available => {
            let used: Vec<String> = ci
                .states
                .iter()
                .filter(|s| s.usage > 0)
                .map(|s| {
                    format!(
                        "cpu{} {}={}x/{:.1}ms",
                        s.cpu,
                        s.name,
                        s.usage,
                        s.time_us as f64 / 1e3
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "iolab cpuidle  : {}",
                if used.is_empty() {
                    String::from("no idle state entered")
                } else {
                    used.join(", ")
                }
            );
        }
        Some(_) => out.push_str(
            "iolab cpuidle  : not exposed by this kernel (no /sys/devices/system/cpu/cpu*/cpuidle states)\n",
        ),
        None => {}
    }
    for m in &sys.missing {
        let _ = writeln!(out, "iolab missing  : {m}");
    }
}

/// Text for every traced job of a run (empty when the run was not traced).
pub fn render_traces(run: &RunResult) -> String {
    let mut s = String::new();
    for j in &run.jobs {
        if let Some(t) = j.iolab.engine.as_ref().and_then(|e| e.trace.as_ref()) {
            s += &trace_text(&j.jobname, t);
        }
    }
    s
}

/// Text view of one job's block trace: btt's table, the biolatency-style
/// histograms and the per-layer split.
pub fn trace_text(job: &str, t: &JobTrace) -> String {
    let mut s = format!(
        "\n{job}: block trace of {} ({} events, {} requests completed, trace clock {})\n",
        t.device, t.events.total, t.requests.completed, t.clock
    );
    if let Some(sm) = &t.sampling {
        s += &format!(
            "sampled: {:.0}% of every {} ms ({} windows, {:.0} ms traced); the table \
             covers requests inside the windows; {} of this job's I/Os fell outside them\n",
            sm.percent, sm.period_ms, sm.windows, sm.traced_ms, sm.ios_outside_windows
        );
    }
    s += &blktrace::render_btt(&t.btt);
    if t.btt.d2c_hist.total() > 0 {
        s += &t.btt.d2c_hist.render("\nD2C (driver + device)");
    }
    if t.btt.q2c_hist.total() > 0 {
        s += &t
            .btt
            .q2c_hist
            .render("\nQ2C (block layer + driver + device)");
    }
    s += &format!(
        "\n{job}: where the time went ({} I/Os joined, avg us; read / write / all)\n",
        t.joined
    );
    s += &format!(
        "{:<34} {:>10} {:>10} {:>10} {:>9}\n",
        "stage", "read", "write", "all", "N"
    );
    let cell = |st: &StageStats| {
        if st.n == 0 {
            "-".to_string()
        } else {
            format!("{:.2}", st.avg_ns / 1e3)
        }
    };
    let (read, write, all) = (
        t.split.read.rows(),
        t.split.write.rows(),
        t.split.all.rows(),
    );
    for ((r, w), (name, a)) in read.iter().zip(&write).zip(&all) {
        s += &format!(
            "{name:<34} {:>10} {:>10} {:>10} {:>9}\n",
            cell(r.1),
            cell(w.1),
            cell(a),
            a.n
        );
    }
    if t.unmatched_user > 0 {
        s += &format!(
            "note: {} of this job's I/Os had no traced request inside their window\n",
            t.unmatched_user
        );
    }
    if t.unclaimed_requests > 0 {
        s += &format!(
            "note: {} traced requests belonged to no I/O of this job\n",
            t.unclaimed_requests
        );
    }
    for n in &t.notes {
        s += &format!("note: {n}\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn startup_lines_as_fio_prints_them() {
        let args: Vec<String> = [
            "--name=a",
            "--ioengine=null",
            "--size=1m",
            "--rw=randread",
            "--numjobs=3",
            "--name=b",
            "--rw=write",
            "--ioengine=null",
            "--size=1m",
            "--bs=128k,1m",
            "--iodepth=4",
            "--stonewall",
            "--name=c",
            "--ioengine=null",
            "--size=1m",
            "--bs=64k",
            "--rw=randrw",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let plan = crate::job::parse_run_args(&args, &|_| None).unwrap();
        // fio 3.33's lines for the same jobs (its `Starting 5 processes` says
        // threads here: iolab's workers are threads).
        let want = format!(
            "a: (g=0): rw=randread, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=null, iodepth=1\n\
             ...\n\
             b: (g=1): rw=write, bs=(R) 128KiB-128KiB, (W) 1024KiB-1024KiB, (T) 1024KiB-1024KiB, ioengine=null, iodepth=4\n\
             c: (g=1): rw=randrw, bs=(R) 64.0KiB-64.0KiB, (W) 64.0KiB-64.0KiB, (T) 64.0KiB-64.0KiB, ioengine=null, iodepth=1\n\
             {FIO_VERSION_STRING}\n\
             Starting 5 threads\n"
        );
        assert_eq!(startup_lines(&plan.jobs), want);
    }

    #[test]
    fn num2str_matches_fio_outputs_seen() {
        // Values from real fio 3.33 runs on this machine.
        assert_eq!(num2str(41_795, 4, false, ""), "41.8k");
        assert_eq!(num2str(171_196_081, 4, true, "B/s"), "163MiB/s");
        assert_eq!(num2str(171_196_081, 4, false, "B/s"), "171MB/s");
        assert_eq!(num2str(8_388_608, 4, true, "B"), "8192KiB");
        assert_eq!(num2str(8_388_608, 4, false, "B"), "8389kB");
        assert_eq!(num2str(14_117_000, 6, false, ""), "14117k");
        assert_eq!(num2str(2_704, 6, false, ""), "2704");
        assert_eq!(num2str(50_232_000, 4, false, "B/s"), "50.2MB/s");
        assert_eq!(num2str(0, 4, false, ""), "0");
        // A fraction rounding to 1 carries instead of printing "41.0k".
        assert_eq!(num2str(41_960, 4, false, ""), "42.0k");
    }

    #[test]
    fn percentile_precision_follows_the_list() {
        assert_eq!(
            percentile_precision(&crate::job::spec::DEFAULT_PERCENTILES),
            2
        );
        assert_eq!(percentile_precision(&[50.0, 99.0, 99.9]), 1);
        assert_eq!(percentile_precision(&[50.0, 99.0]), 0);
    }

    #[test]
    fn latency_line_picks_fios_unit() {
        let mut s = String::new();
        let st = |min, max, mean, stddev| LatStats {
            min,
            max,
            mean,
            stddev,
            n: 10,
            percentile: None,
            bins: None,
        };
        lat_line(&mut s, "clat", &st(110, 14_117_000, 120_126.08, 285_203.71));
        assert_eq!(
            s,
            "    clat (nsec): min=110, max=14117k, avg=120126.08, stdev=285203.71\n"
        );
        s.clear();
        lat_line(&mut s, " lat", &st(57_000, 706_000, 79_200.0, 19_460.0));
        assert_eq!(
            s,
            "     lat (usec): min=57, max=706, avg=79.20, stdev=19.46\n"
        );
    }

    #[test]
    fn percentile_block_layout() {
        let s = LatStats {
            n: 5,
            percentile: Some(crate::report::model::Percentiles(vec![
                (50.0, 104_000),
                (99.0, 268_500),
                (99.9, 2_704_000),
            ])),
            ..Default::default()
        };
        let mut out = String::new();
        percentile_block(&mut out, "clat", &s, 1);
        assert_eq!(
            out,
            "    clat percentiles (usec):\n     | 50.0th=[  104], 99.0th=[  269], 99.9th=[ 2704]\n"
        );
    }

    #[test]
    fn rendered_run_has_fios_landmarks() {
        use crate::measure::cpu::{DiskUtil, ThreadUsage};
        use crate::measure::recorder::{Recorder, RecorderConfig, Sample};
        use crate::report::model::{JobMeta, RunExtras};
        use crate::request::{Class, Op};
        let mut rec = Recorder::new_at(RecorderConfig::for_runtime(true, Some(3_000_000_000)), 0);
        for i in 0..30_000u64 {
            rec.note_depth(4);
            rec.record_sample(&Sample {
                op: Op::Read,
                class: Class::Read,
                bytes: 4096,
                slat_ns: 2_000 + i % 700,
                clat_ns: 90_000 + (i * 37) % 20_000,
                lat_ns: 93_000 + (i * 37) % 20_000,
                done_ns: i * 100_000,
            });
        }
        let meta = JobMeta {
            name: "u".into(),
            groupid: 0,
            jobnum: 0,
            workers: 1,
            pid: 42,
            options: vec![],
            iodepth: 4,
            percentile_list: crate::job::spec::DEFAULT_PERCENTILES.to_vec(),
            runtime_ns: 3_000_000_000,
            job_runtime_ns: 3_000_000_000,
            elapsed_ns: 3_000_000_000,
        };
        let job = JobResult::from_recorder(&meta, &rec, &ThreadUsage::default());
        let disk = DiskUtil {
            name: "zram0".into(),
            util: 50.0,
            ..Default::default()
        };
        let run = RunResult::new(vec![job], vec![disk], RunExtras::default());
        let t = render(&run, &meta.percentile_list);
        for landmark in [
            "u: (groupid=0, jobs=1): err= 0: pid=42: ",
            "  read: IOPS=10.0k, BW=39.1MiB/s (41.0MB/s)(117MiB/3000msec)\n",
            "    slat (nsec): min=2000, max=2699, avg=2348.50, stdev=201.66\n",
            "    clat (usec): min=90, max=109, avg=",
            "     lat (usec): min=93, max=112",
            // fio's percentiles of these latencies, from its bins (1024 ns
            // wide here, named by their middle, shown rounded up to µs).
            "    clat percentiles (usec):\n     |  1.00th=[   91],  5.00th=[   91],",
            "     | 99.99th=[  111]\n",
            "   bw (  KiB/s): min=",
            "samples=3\n",
            "   iops        : min=10000, max=10000, avg=10000.00, stdev= 0.00, samples=3\n",
            "  lat (usec)   : 100=50.",
            "  cpu          : usr=0.00%, sys=0.00%, ctx=0, majf=0, minf=0\n",
            "  IO depths    : 1=0.0%, 2=0.0%, 4=100.0%, 8=0.0%",
            "     issued rwts: total=30000,0,0,0 short=0,0,0,0 dropped=0,0,0,0\n",
            "     latency   : target=0, window=0, percentile=100.00%, depth=4\n",
            "\nRun status group 0 (all jobs):\n   READ: bw=39.1MiB/s (41.0MB/s), 39.1MiB/s-39.1MiB/s (41.0MB/s-41.0MB/s), io=117MiB (123MB), run=3000-3000msec\n",
            "\nDisk stats (read/write):\n  zram0: ios=0/0, merge=0/0, ticks=0/0, in_queue=0, util=50.00%\n",
        ] {
            assert!(t.contains(landmark), "missing {landmark:?} in:\n{t}");
        }
        assert!(
            !t.contains("write:"),
            "no write line for a read-only job:\n{t}"
        );
    }

    #[test]
    fn text_view_shows_table_and_split() {
        use crate::measure::blktrace::{self, Breakdown, BttTable, MatchStats};
        use crate::report::trace::TraceJoin;
        use crate::request::Op;
        let mut b = Breakdown::default();
        b.joined.push(blktrace::JoinedIo {
            offset: 0,
            op: Op::Read,
            user_ns: 1_000,
            block_ns: None,
            device_ns: None,
            q2c_ns: 3_000,
            completion_ns: 500,
            total_ns: 4_500,
        });
        let mut btt = BttTable::default();
        btt.q2c.add(3_000);
        btt.q2c_hist.add_ns(3_000);
        let v = JobTrace::join(&TraceJoin {
            device: "zram9",
            clock: "mono",
            job: "",
            file_extents: None,
            direct: true,
            btt: &btt,
            matched: &MatchStats::default(),
            breakdown: &b,
            not_logged: 0,
            log_capacity: 1 << 21,
            unmapped: 0,
            sampling: None,
        });
        let t = trace_text("j", &v);
        assert!(t.contains("Q2C") && t.contains("3.000"), "{t}");
        assert!(t.contains("trace clock mono"), "{t}");
        assert!(
            t.contains("user (submit -> Q)") && t.contains("4.50"),
            "{t}"
        );
        assert_eq!(v.split.read.total.n, 1);
        assert_eq!(v.split.write.total.n, 0);
    }
}
