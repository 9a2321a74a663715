//! `iolab probe` output: readable text, or JSON of the whole report.

use std::fmt::Write as _;

use super::caps::{NodeKind, Outcome};
use super::{OpKind, OpResult, ProbeReport, target::TargetOrigin};
use crate::device::target::human;

pub fn json(r: &ProbeReport) -> serde_json::Result<String> {
    serde_json::to_string_pretty(r)
}

fn outcome(o: &Outcome) -> String {
    match o {
        Outcome::Yes => "yes".into(),
        Outcome::No(why) => format!("no ({why})"),
        Outcome::Unknown(why) => format!("unknown ({why})"),
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

pub fn text(r: &ProbeReport) -> String {
    let mut s = String::new();
    let c = &r.caps;
    let kind = match (c.kind, r.origin) {
        (_, TargetOrigin::TempFileInDirectory) => "regular file (temp file in the directory)",
        (NodeKind::RegularFile, _) => "regular file",
        (NodeKind::BlockDevice, _) => "block device",
        (NodeKind::CharDevice, _) => "character device",
        (NodeKind::Other, _) => "other",
    };
    let _ = writeln!(s, "iolab probe {}", r.given.display());
    let _ = writeln!(s, "\ntarget");
    let _ = writeln!(s, "  path             {}", c.path.display());
    let _ = writeln!(
        s,
        "  kind             {kind}{}",
        r.fs_type
            .as_deref()
            .map(|f| format!(" on {f}"))
            .unwrap_or_default()
    );
    let _ = writeln!(s, "  size             {} ({} bytes)", human(c.size), c.size);
    let _ = writeln!(
        s,
        "  block device     {}",
        match &c.block_device {
            Ok(q) => match &q.partition {
                Some(p) => format!("{} (partition {p})", q.disk),
                None => q.disk.clone(),
            },
            Err(why) => format!("none ({why})"),
        }
    );
    let _ = writeln!(
        s,
        "  block size       logical {} B, physical {} B",
        opt(c.logical_block_size),
        opt(c.physical_block_size)
    );
    let _ = writeln!(
        s,
        "  DIOALIGN         offset {} B, memory {} B",
        opt(c.dio_offset_align),
        opt(c.dio_mem_align)
    );
    let _ = writeln!(s, "  O_DIRECT         {}", outcome(&c.o_direct_ok));
    let _ = writeln!(
        s,
        "  io_poll          {}",
        c.io_poll.map_or("-".into(), |p| (p as u8).to_string())
    );
    let _ = writeln!(s, "  hybrid IOPOLL    {}", outcome(&c.hybrid_iopoll));
    let _ = writeln!(
        s,
        "  scheduler        {}",
        c.scheduler
            .as_ref()
            .map_or("- (no request queue)".into(), |x| {
                format!("{} (available: {})", x.current, x.available.join(" "))
            })
    );
    let _ = writeln!(
        s,
        "  rotational       {}",
        c.rotational.map_or("-".into(), |v| (v as u8).to_string())
    );
    let _ = writeln!(s, "  nr_requests      {}", opt(c.nr_requests));
    let _ = writeln!(s, "  RWF_NOWAIT       {}", outcome(&c.nowait.rwf_nowait));
    let _ = writeln!(s, "  io_uring punted  {}", outcome(&c.nowait.uring_punted));
    for n in &r.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    let _ = writeln!(s, "\nwhat it means");
    for line in &r.consequences {
        let _ = writeln!(s, "  - {line}");
    }
    let m = &r.machine;
    let _ = writeln!(s, "\nthis machine");
    let _ = writeln!(
        s,
        "  wakeup cost      {:.1} us (median lateness of a 20 us hrtimer sleep, measured)",
        m.wakeup_ns as f64 / 1e3
    );
    let _ = writeln!(
        s,
        "  clock cost       {:.0} ns per read, resolution {} ns ({})",
        m.clock_cost_ns, m.clock_resolution_ns, m.clock_source
    );
    let _ = writeln!(s, "  CPUs             {}", m.cpus);
    op_text(&mut s, &r.read);
    if let Some(w) = &r.write {
        op_text(&mut s, w);
    }
    s
}

fn op_text(s: &mut String, o: &OpResult) {
    let what = match o.op {
        OpKind::Read => "reads",
        OpKind::Write => "writes",
    };
    let _ = writeln!(
        s,
        "\nQD1 {} KiB random {what}, {:.2} s per model, {}",
        o.bs / 1024,
        o.runtime_s,
        if o.direct {
            "O_DIRECT"
        } else {
            "buffered (page cache)"
        }
    );
    let _ = writeln!(
        s,
        "  {:<24} {:>8} {:>8} {:>9} {:>10} {:>10} {:>7} {:>8}",
        "model", "p50 us", "p99 us", "IOPS", "thr CPU us", "all CPU us", "ctx/IO", "punts"
    );
    for r in &o.rows {
        let _ = writeln!(
            s,
            "  {:<24} {:>8.2} {:>8.2} {:>9.0} {:>10.2} {:>10.2} {:>7.2} {:>8}",
            r.label,
            r.p50_ns as f64 / 1e3,
            r.p99_ns as f64 / 1e3,
            r.iops,
            r.cpu_thread_ns_per_io / 1e3,
            r.cpu_all_ns_per_io / 1e3,
            r.ctx_per_io,
            match (r.model.uses_uring(), r.punted) {
                (false, _) => "n/a".to_string(),
                (true, Some(p)) => format!("{p}/{}", r.ios),
                (true, None) => "?".to_string(),
            }
        );
    }
    for k in &o.skipped {
        let _ = writeln!(s, "  {:<24} not measured: {}", k.model.label(), k.reason);
    }
    let _ = writeln!(
        s,
        "  (CPU per I/O: thr = the submitting thread; all = the whole process, io-wq workers included)"
    );
    for r in o.rows.iter().filter(|r| !r.adaptive.is_empty()) {
        let _ = writeln!(s, "  adaptive decided: {}", r.adaptive.join("; "));
    }
    match &o.recommendation {
        Some(rec) => {
            let _ = writeln!(s, "\nrecommendation ({what}, QD1): {}", rec.label);
            let _ = writeln!(s, "  why:  {}", rec.reason);
            let _ = writeln!(s, "  rule: {}", rec.rule);
            if let Some(c) = &rec.cheapest {
                let _ = writeln!(s, "  if CPU matters more: {c}");
            }
        }
        None => {
            let _ = writeln!(
                s,
                "\nrecommendation ({what}, QD1): none — no model completed any I/O"
            );
        }
    }
}
