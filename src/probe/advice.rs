//! From capabilities and measurements to advice: what each capability means for
//! I/O on this target, and which completion model to use at QD1, with the reason.
//!
//! The recommendation follows study 000: spinning pays when the device answers
//! faster than a wakeup costs (poll small/fast I/O), sleeping pays when the device
//! is slow (interrupt large/slow I/O), and hybrid sits between. It is decided on
//! the measured numbers, not on the rule: among the models whose p50 is within
//! 10% (or 0.5 us) of the best, the one with the least CPU per I/O (whole process,
//! io-wq workers included) wins; near-ties in CPU go to the simpler model. The
//! rule is printed beside it, so a disagreement between rule and measurement is
//! visible rather than hidden.

use super::caps::{Outcome, TargetCaps};
use super::{ModelKey, OpResult, Row};

/// Latency within this fraction of the best counts as equally fast.
const LAT_TOLERANCE: f64 = 0.10;
/// ...or within this many ns, for sub-microsecond page-cache reads.
const LAT_TOLERANCE_NS: f64 = 500.0;
/// CPU within this fraction of the least counts as equally cheap.
const CPU_TOLERANCE: f64 = 0.10;
/// Simplest first: the model a near-tie goes to.
const PREFERENCE: [ModelKey; 6] = [
    ModelKey::Sync,
    ModelKey::Interrupt,
    ModelKey::Hybrid,
    ModelKey::Iopoll,
    ModelKey::Poll,
    ModelKey::Adaptive,
];

/// Which model to use, and why, in numbers.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Recommendation {
    pub model: ModelKey,
    pub label: &'static str,
    pub reason: String,
    /// Study 000's rule applied to the measured latency and wakeup cost.
    pub rule: String,
    /// The model with the least CPU per I/O when it is not the pick: the choice
    /// where CPU matters more than latency, with its price.
    pub cheapest: Option<String>,
}

fn us(ns: f64) -> f64 {
    ns / 1e3
}

fn pct(a: f64, b: f64) -> f64 {
    (a / b - 1.0) * 100.0
}

/// Pick the model for QD1 from measured rows; `None` when nothing completed.
pub fn recommend(rows: &[Row], wakeup_ns: u64) -> Option<Recommendation> {
    // The pinned row is a placement, not a model to recommend (ModelKey docs).
    let ok: Vec<&Row> = rows
        .iter()
        .filter(|r| r.ios > 0 && r.p50_ns > 0 && r.model != ModelKey::InterruptPinned)
        .collect();
    let best = ok.iter().map(|r| r.p50_ns as f64).reduce(f64::min)?;
    let limit = best + (best * LAT_TOLERANCE).max(LAT_TOLERANCE_NS);
    let fast: Vec<&Row> = ok
        .iter()
        .copied()
        .filter(|r| r.p50_ns as f64 <= limit)
        .collect();
    let cheapest = fast
        .iter()
        .map(|r| r.cpu_all_ns_per_io)
        .filter(|c| c.is_finite())
        .reduce(f64::min)
        .unwrap_or(0.0);
    let cpu_limit = cheapest * (1.0 + CPU_TOLERANCE) + 100.0;
    let pick = PREFERENCE.iter().find_map(|k| {
        fast.iter()
            .find(|r| r.model == *k && r.cpu_all_ns_per_io <= cpu_limit)
            .copied()
    })?;
    let w = wakeup_ns as f64;
    Some(Recommendation {
        model: pick.model,
        label: pick.label,
        reason: reason(pick, &ok, w),
        rule: rule(&ok, w),
        cheapest: cheapest_other(pick, &ok),
    })
}

fn cheapest_other(pick: &Row, rows: &[&Row]) -> Option<String> {
    let c = rows
        .iter()
        .filter(|r| r.cpu_all_ns_per_io.is_finite())
        .min_by(|a, b| a.cpu_all_ns_per_io.total_cmp(&b.cpu_all_ns_per_io))?;
    (c.model != pick.model && c.cpu_all_ns_per_io < pick.cpu_all_ns_per_io * 0.9).then(|| {
        format!(
            "{}: {:.1} us CPU per I/O ({:+.0}%) at {:.1} us p50 ({:+.0}%)",
            c.label,
            us(c.cpu_all_ns_per_io),
            pct(c.cpu_all_ns_per_io, pick.cpu_all_ns_per_io),
            us(c.p50_ns as f64),
            pct(c.p50_ns as f64, pick.p50_ns as f64)
        )
    })
}

fn find<'a>(rows: &[&'a Row], k: ModelKey) -> Option<&'a Row> {
    rows.iter().find(|r| r.model == k).copied()
}

/// "io_uring punts every request ..." when most requests went to io-wq.
fn punt_note(rows: &[&Row]) -> Option<String> {
    let r = find(rows, ModelKey::Interrupt).or_else(|| find(rows, ModelKey::Poll))?;
    let p = r.punted?;
    (p * 2 >= r.ios).then(|| {
        format!(
            "io_uring punts every request to an io-wq worker ({p} of {} punted): study 000's \
             asynchronous model inside the kernel",
            r.ios
        )
    })
}

/// What the pinned interrupt row measured against the free one, if both ran.
fn pinned_measured(read: &OpResult) -> String {
    let find = |k| read.rows.iter().find(|r| r.model == k);
    match (find(ModelKey::Interrupt), find(ModelKey::InterruptPinned)) {
        (Some(free), Some(pinned)) => format!(
            "; measured at QD1: pinned p50 {:.1} us, {:.0} IOPS, {:.1} us CPU per I/O against \
             {:.1} us, {:.0} IOPS, {:.1} us free",
            us(pinned.p50_ns as f64),
            pinned.iops,
            us(pinned.cpu_all_ns_per_io),
            us(free.p50_ns as f64),
            free.iops,
            us(free.cpu_all_ns_per_io)
        ),
        _ => String::new(),
    }
}

/// Latency a spinning thread sees: the device plus the submit path, no wakeup.
fn spin_latency(rows: &[&Row]) -> Option<f64> {
    find(rows, ModelKey::Iopoll)
        .or_else(|| find(rows, ModelKey::Poll))
        .map(|r| r.p50_ns as f64)
}

fn reason(pick: &Row, rows: &[&Row], w: f64) -> String {
    let p50 = pick.p50_ns as f64;
    let cpu = pick.cpu_all_ns_per_io;
    let poll = find(rows, ModelKey::Poll);
    let d = spin_latency(rows).unwrap_or(p50);
    match pick.model {
        ModelKey::Sync => {
            let how = if pick.ctx_per_io < 0.5 {
                "completes in the caller's context"
            } else {
                "sleeps in the kernel until the device completes (an interrupt without a ring)"
            };
            let mut s = format!(
                "psync {how} at {:.1} us p50 for {:.1} us CPU per I/O",
                us(p50),
                us(cpu)
            );
            let uring = rows
                .iter()
                .filter(|r| r.model.uses_uring())
                .min_by_key(|r| r.p50_ns);
            if let Some(u) = uring {
                s.push_str(&format!(
                    "; io_uring's best ({}) takes {:.1} us p50 for {:.1} us CPU",
                    u.label,
                    us(u.p50_ns as f64),
                    us(u.cpu_all_ns_per_io)
                ));
            }
            if pick.ctx_per_io >= 0.5
                && let Some(p) = poll
            {
                s.push_str(&format!(
                    "; spinning on the CQ changes p50 by {:+.0}% for {:.1}x the CPU per I/O",
                    pct(p.p50_ns as f64, p50),
                    p.cpu_all_ns_per_io / cpu
                ));
            }
            if let Some(n) = punt_note(rows) {
                s.push_str(&format!("; {n}"));
            }
            s
        }
        ModelKey::Interrupt | ModelKey::InterruptPinned => {
            let mut s = format!(
                "spinning latency {:.1} us {} wakeup cost {:.1} us",
                us(d),
                if d > 3.0 * w {
                    ">>"
                } else if d >= 2.0 * w {
                    ">="
                } else {
                    "<"
                },
                us(w)
            );
            if d < 2.0 * w {
                s.push_str(" x 2, yet interrupt matched the best latency within 10%");
            }
            if let Some(p) = poll {
                s.push_str(&format!(
                    "; spinning on the CQ changes p50 by {:+.0}% ({:.1} us) for {:.1}x the CPU per I/O",
                    pct(p.p50_ns as f64, p50),
                    us(p.p50_ns as f64),
                    p.cpu_all_ns_per_io / cpu
                ));
            }
            if let Some(n) = punt_note(rows) {
                s.push_str(&format!("; {n}"));
            }
            s
        }
        ModelKey::Poll | ModelKey::Iopoll => {
            let mut s = if d < 2.0 * w {
                format!(
                    "spinning latency {:.1} us < 2 x wakeup cost {:.1} us: a sleep costs about \
                     as much as the whole wait",
                    us(d),
                    us(2.0 * w)
                )
            } else {
                format!(
                    "spinning latency {:.1} us >= 2 x wakeup cost {:.1} us, so study 000's rule \
                     says sleep, but here every sleeping model is more than 10% slower",
                    us(d),
                    us(2.0 * w)
                )
            };
            let slower: Vec<String> = [ModelKey::Sync, ModelKey::Interrupt, ModelKey::Hybrid]
                .into_iter()
                .filter_map(|k| find(rows, k))
                .map(|r| {
                    format!(
                        "{} {:+.0}% ({:.1} us)",
                        r.label,
                        pct(r.p50_ns as f64, p50),
                        us(r.p50_ns as f64)
                    )
                })
                .collect();
            if !slower.is_empty() {
                s.push_str(&format!("; p50 of the others: {}", slower.join(", ")));
            }
            if pick.model == ModelKey::Iopoll
                && let Some(p) = poll
            {
                s.push_str(&format!(
                    "; the kernel polling the device beats CQ spinning ({:.1} us)",
                    us(p.p50_ns as f64)
                ));
            }
            s.push_str(&format!(
                "; polling pays with {:.1} us CPU per I/O (a core per queue)",
                us(cpu)
            ));
            s
        }
        ModelKey::Hybrid => {
            let mut s = format!(
                "spinning latency {:.1} us against wakeup cost {:.1} us: hybrid naps, then polls",
                us(d),
                us(w)
            );
            if let Some(p) = poll {
                s.push_str(&format!(
                    "; {:.1} us p50 ({:+.0}% vs poll's {:.1} us) at {:.0}% of poll's CPU per I/O",
                    us(p50),
                    pct(p50, p.p50_ns as f64),
                    us(p.p50_ns as f64),
                    cpu / p.cpu_all_ns_per_io * 100.0
                ));
            }
            s
        }
        ModelKey::Adaptive => format!(
            "adaptive ({}) reaches {:.1} us p50 at {:.1} us CPU per I/O: the least CPU within \
             10% of the best latency",
            if pick.adaptive.is_empty() {
                "no decision recorded".to_string()
            } else {
                pick.adaptive.join("; ")
            },
            us(p50),
            us(cpu)
        ),
    }
}

/// Study 000's rule on the measured spinning latency, and what adaptive decided.
fn rule(rows: &[&Row], w: f64) -> String {
    let Some(d) = spin_latency(rows) else {
        return format!(
            "no io_uring spinning run to estimate the device latency (wakeup cost {:.1} us)",
            us(w)
        );
    };
    if d < 2.0 * w {
        format!(
            "study 000: spinning latency {:.1} us < 2 x wakeup {:.1} us -> poll (a sleep costs \
             about as much as the wait)",
            us(d),
            us(w)
        )
    } else {
        format!(
            "study 000: spinning latency {:.1} us >= 2 x wakeup {:.1} us -> sleep: hybrid where \
             the latency is steady enough to time a nap, interrupt where it is not",
            us(d),
            us(w)
        )
    }
}

/// One line per capability, saying what it means for I/O on this target.
pub fn consequences(caps: &TargetCaps, fs_type: Option<&str>, read: &OpResult) -> Vec<String> {
    let mut out = Vec::new();
    match &caps.o_direct_ok {
        Outcome::Yes if caps.block_device.is_err() => out.push(format!(
            "O_DIRECT accepted by {}, but no block device is under it: the data lives in \
             memory (tmpfs) or behind a network or FUSE file system, so the numbers are that \
             path's, not a disk's",
            fs_type.unwrap_or("this file system")
        )),
        Outcome::Yes => out.push(format!(
            "O_DIRECT works: reads bypass the page cache, so the numbers are the device's \
             (alignment: offsets {} B, buffers {} B)",
            caps.dio_offset_align
                .or(caps.logical_block_size)
                .map_or("?".into(), |v| v.to_string()),
            caps.dio_mem_align
                .or(caps.logical_block_size)
                .map_or("?".into(), |v| v.to_string()),
        )),
        Outcome::No(why) | Outcome::Unknown(why) => out.push(format!(
            "O_DIRECT unsupported ({}; {why}): reads are served from the page cache, so the \
             numbers measure memory copies, not a device",
            fs_type.unwrap_or("this file system")
        )),
    }
    match &caps.block_device {
        Ok(q) => {
            let on = match &q.partition {
                Some(p) => format!("{p} (partition of {})", q.disk),
                None => q.disk.clone(),
            };
            let mut s = format!(
                "block device {on}: logical block {} B, physical {} B",
                caps.logical_block_size
                    .map_or("?".into(), |v| v.to_string()),
                caps.physical_block_size
                    .map_or("?".into(), |v| v.to_string())
            );
            if let (Some(l), Some(p)) = (caps.logical_block_size, caps.physical_block_size)
                && p > l
            {
                s.push_str(&format!(
                    "; writes smaller than {p} B make the device read-modify-write"
                ));
            }
            out.push(s);
        }
        Err(why) => out.push(format!(
            "no block device under the target ({why}): no queue attributes, no IOPOLL"
        )),
    }
    if caps.block_device.is_ok() {
        out.push(match caps.io_poll {
            Some(true) => "io_poll=1: IOPOLL (hipri) available: the kernel can poll the device's \
                           completion queue instead of taking an interrupt"
                .into(),
            Some(false) => "io_poll=0: IOPOLL (hipri) unavailable; CQ spinning is the only \
                            user-space polling (completions still arrive by interrupt)"
                .into(),
            None => "no io_poll attribute (bio-based driver): IOPOLL unavailable; CQ spinning \
                     is the only user-space polling"
                .into(),
        });
        out.push(match &caps.hybrid_iopoll {
            Outcome::Yes => "hybrid IOPOLL (hybrid_iopoll=1, Linux 6.13) available: the kernel \
                             sleeps about half the fastest completion before polling"
                .into(),
            Outcome::No(why) | Outcome::Unknown(why) => format!(
                "hybrid IOPOLL (hybrid_iopoll=1) unavailable: {why}; completion=hybrid-uring \
                 runs the same rule in user space"
            ),
        });
    }
    let measured = read
        .rows
        .iter()
        .find(|r| r.model == ModelKey::Interrupt)
        .and_then(|r| r.punted.map(|p| (p, r.ios)));
    let in_probe = match measured {
        Some((p, n)) => format!("{p} of {n} punted in the probe"),
        None => "punts not counted in the runs".into(),
    };
    out.push(match &caps.nowait.uring_punted {
        Outcome::Yes => match measured {
            Some((p, n)) if p * 2 < n => format!(
                "io_uring punted the one-block check to io-wq but not the runs ({in_probe}): \
                 punting here depends on the request (allocation, cache state)"
            ),
            _ => format!(
                "no NOWAIT: io_uring punts every request to io-wq workers ({in_probe}); each I/O \
                 pays a hand-off to a kernel thread and a wakeup. At low depth, pinning the job \
                 to one CPU (cpus_allowed) keeps the io-wq worker, which inherits the \
                 submitter's CPUs, beside it: the hand-off becomes a local switch instead of two \
                 cross-CPU wakeups (deep queues lose the second CPU instead){}",
                pinned_measured(read)
            ),
        },
        Outcome::No(_) => format!(
            "NOWAIT issue works: io_uring issues requests inline, no io-wq hand-off ({in_probe})"
        ),
        Outcome::Unknown(why) => format!("io-wq punting unknown: {why}"),
    });
    out.push(match &caps.nowait.rwf_nowait {
        Outcome::Yes => "preadv2(RWF_NOWAIT) works: a read that would block returns EAGAIN \
                         instead of sleeping"
            .into(),
        Outcome::No(why) => {
            format!("no RWF_NOWAIT ({why}): a non-blocking read needs a helper thread")
        }
        Outcome::Unknown(why) => format!("preadv2(RWF_NOWAIT) unknown: {why}"),
    });
    if caps.block_device.is_ok() {
        out.push(match &caps.scheduler {
            Some(s) if s.current == "none" => format!(
                "scheduler none (available: {}): requests go straight to the driver",
                s.available.join(", ")
            ),
            Some(s) => format!(
                "scheduler {} (available: {}): requests pass the elevator, which costs at QD1; \
                 'none' costs least",
                s.current,
                s.available.join(", ")
            ),
            None => "no scheduler (bio-based driver such as zram or brd): no request queue; \
                     psync I/O runs in the submitter's context"
                .into(),
        });
        let fastest = read.rows.iter().map(|r| r.p50_ns).filter(|&v| v > 0).min();
        match (caps.rotational, fastest) {
            (Some(true), Some(p50)) if p50 < 1_000_000 => out.push(format!(
                "rotational=1 as the driver reports it, but reads take {:.1} us p50, far below \
                 a seek: a virtual or cached disk (virtio-blk sets the flag by default); the \
                 kernel still tunes for a spinning disk (e.g. mq-deadline's defaults)",
                p50 as f64 / 1e3
            )),
            (Some(true), _) => out.push(
                "rotational: seeks cost milliseconds; sleeping pays, spinning would burn a core \
                 for nothing"
                    .into(),
            ),
            (Some(false), _) => out
                .push("non-rotational: no seek cost; latency is the device's service time".into()),
            (None, _) => {}
        }
        if let Some(n) = caps.nr_requests {
            out.push(format!(
                "nr_requests={n}: requests the queue holds before submitters wait"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(model: ModelKey, p50_us: f64, cpu_us: f64, ctx: f64) -> Row {
        Row {
            model,
            label: model.label(),
            ios: 1000,
            iops: 1e6 / p50_us,
            p50_ns: (p50_us * 1e3) as u64,
            p99_ns: (p50_us * 2e3) as u64,
            cpu_thread_ns_per_io: cpu_us * 1e3,
            cpu_all_ns_per_io: cpu_us * 1e3,
            ctx_per_io: ctx,
            punted: model.uses_uring().then_some(0),
            sleeps_per_io: 0.0,
            polls_hit: 0,
            polls_empty: 0,
            adaptive: vec![],
        }
    }

    #[test]
    fn slow_device_gets_interrupt() {
        // 65 us device, 20 us wakeup: poll 5% faster for far more CPU.
        let rows = [
            row(ModelKey::Sync, 70.0, 6.0, 1.0),
            row(ModelKey::Interrupt, 66.0, 5.0, 1.0),
            row(ModelKey::Poll, 63.0, 63.0, 0.0),
            row(ModelKey::Hybrid, 64.0, 40.0, 1.0),
        ];
        let r = recommend(&rows, 20_000).unwrap();
        assert_eq!(r.model, ModelKey::Interrupt, "{r:?}");
        assert!(r.reason.contains(">>") && r.reason.contains("CPU"), "{r:?}");
        assert!(
            r.rule.contains("hybrid") || r.rule.contains("interrupt"),
            "{r:?}"
        );
    }

    #[test]
    fn zram_like_target_gets_psync_with_the_punt_named() {
        let mut intr = row(ModelKey::Interrupt, 12.0, 14.0, 2.0);
        intr.punted = Some(1000);
        let rows = [
            row(ModelKey::Sync, 2.1, 2.1, 0.0),
            intr,
            row(ModelKey::Poll, 8.0, 12.0, 0.0),
        ];
        let r = recommend(&rows, 18_000).unwrap();
        assert_eq!(r.model, ModelKey::Sync);
        assert!(r.reason.contains("caller's context"), "{r:?}");
        assert!(r.reason.contains("1000 of 1000 punted"), "{r:?}");
    }

    #[test]
    fn fast_device_gets_poll_when_interrupt_is_much_slower() {
        let rows = [
            row(ModelKey::Interrupt, 25.0, 6.0, 1.0),
            row(ModelKey::Poll, 5.0, 5.0, 0.0),
            row(ModelKey::Hybrid, 9.0, 5.0, 1.0),
        ];
        let r = recommend(&rows, 18_000).unwrap();
        assert_eq!(r.model, ModelKey::Poll, "{r:?}");
        assert!(r.reason.contains("< 2 x wakeup"), "{r:?}");
        assert!(r.rule.contains("-> poll"), "{r:?}");
    }

    #[test]
    fn hybrid_wins_when_as_fast_as_poll_for_less_cpu() {
        let rows = [
            row(ModelKey::Interrupt, 60.0, 6.0, 1.0),
            row(ModelKey::Poll, 45.0, 45.0, 0.0),
            row(ModelKey::Hybrid, 47.0, 15.0, 1.0),
        ];
        let r = recommend(&rows, 15_000).unwrap();
        assert_eq!(r.model, ModelKey::Hybrid, "{r:?}");
        assert!(r.reason.contains("of poll's CPU"), "{r:?}");
    }

    fn caps(block: bool, punted: Outcome) -> TargetCaps {
        use crate::probe::caps::{NodeKind, NowaitCaps, hybrid_iopoll_outcome};
        use crate::sys::blockdev::BlockQueue;
        let block_device = if block {
            Ok(BlockQueue {
                disk: "zram9".into(),
                partition: None,
                sysfs: "/sys/block/zram9".into(),
            })
        } else {
            Err(crate::probe::caps::NoBlockDevice(
                "device 0:27 is an anonymous device".into(),
            ))
        };
        TargetCaps {
            path: "/x".into(),
            kind: NodeKind::RegularFile,
            size: 1 << 20,
            hybrid_iopoll: hybrid_iopoll_outcome(&block_device, None, Ok(())),
            block_device,
            logical_block_size: block.then_some(4096),
            physical_block_size: block.then_some(4096),
            dio_offset_align: block.then_some(4096),
            dio_mem_align: block.then_some(512),
            o_direct_ok: Outcome::Yes,
            io_poll: None,
            nowait: NowaitCaps {
                rwf_nowait: Outcome::No("EOPNOTSUPP".into()),
                uring_punted: punted,
            },
            scheduler: None,
            rotational: Some(true),
            nr_requests: None,
        }
    }

    fn op(rows: Vec<Row>) -> OpResult {
        OpResult {
            op: super::super::OpKind::Read,
            direct: true,
            bs: 4096,
            runtime_s: 1.0,
            rows,
            skipped: vec![],
            recommendation: None,
        }
    }

    #[test]
    fn consequences_follow_the_capabilities_and_the_runs() {
        let mut intr = row(ModelKey::Interrupt, 9.0, 11.0, 1.0);
        intr.punted = Some(1000);
        let c = consequences(&caps(true, Outcome::Yes), None, &op(vec![intr.clone()]));
        let all = c.join("\n");
        assert!(all.contains("no NOWAIT: io_uring punts every request to io-wq workers (1000 of 1000 punted in the probe)"), "{all}");
        assert!(
            all.contains("pinning the job to one CPU (cpus_allowed)"),
            "{all}"
        );
        assert!(
            !all.contains("measured at QD1: pinned"),
            "no pinned row: {all}"
        );
        let mut pinned = row(ModelKey::InterruptPinned, 6.0, 5.0, 1.0);
        pinned.iops = 150_000.0;
        let c = consequences(
            &caps(true, Outcome::Yes),
            None,
            &op(vec![intr.clone(), pinned.clone()]),
        );
        let all = c.join("\n");
        assert!(
            all.contains(
                "measured at QD1: pinned p50 6.0 us, 150000 IOPS, 5.0 us CPU per I/O against 9.0 us"
            ),
            "{all}"
        );
        // Measured, never recommended: it is a placement, not a model.
        let mut best = pinned;
        best.p50_ns = 1_000;
        let r = recommend(&[intr.clone(), best], 15_000).expect("a pick");
        assert_eq!(r.model, ModelKey::Interrupt, "{r:?}");
        assert!(all.contains("no io_poll attribute"), "{all}");
        assert!(
            all.contains(
                "hybrid IOPOLL (hybrid_iopoll=1) unavailable: zram9 has no io_poll attribute"
            ),
            "{all}"
        );
        assert!(all.contains("no scheduler (bio-based"), "{all}");
        // A 9 us "rotational" disk is not spinning.
        assert!(all.contains("far below a seek"), "{all}");
        assert!(all.contains("O_DIRECT works"), "{all}");

        let c = consequences(
            &caps(false, Outcome::No("inline".into())),
            Some("tmpfs"),
            &op(vec![]),
        );
        let all = c.join("\n");
        assert!(
            all.contains("O_DIRECT accepted by tmpfs, but no block device"),
            "{all}"
        );
        assert!(all.contains("NOWAIT issue works"), "{all}");
        assert!(!all.contains("scheduler"), "{all}");
    }

    #[test]
    fn hybrid_iopoll_says_why_not() {
        use crate::probe::caps::{NoBlockDevice, hybrid_iopoll_outcome};
        use crate::sys::blockdev::BlockQueue;
        let vda = Ok(BlockQueue {
            disk: "vda".into(),
            partition: None,
            sysfs: "/sys/block/vda".into(),
        });
        let no = |o: Outcome| match o {
            Outcome::No(why) => why,
            o => panic!("expected No, got {o:?}"),
        };
        let why = no(hybrid_iopoll_outcome(&vda, Some(false), Ok(())));
        assert!(why.contains("vda has no poll queues (io_poll=0)"), "{why}");
        assert!(why.contains("nvme.poll_queues=N"), "{why}");
        let old =
            Err(crate::device::uring::HybridIopollUnsupported::KernelTooOld { major: 6, minor: 6 });
        let why = no(hybrid_iopoll_outcome(&vda, Some(true), old.clone()));
        assert!(why.starts_with("kernel 6.6"), "{why}");
        let why = no(hybrid_iopoll_outcome(&vda, Some(false), old));
        assert!(why.contains("poll queues") && why.contains("6.13"), "{why}");
        let none = Err(NoBlockDevice("tmpfs".into()));
        assert!(no(hybrid_iopoll_outcome(&none, None, Ok(()))).contains("no block device"));
        assert_eq!(
            hybrid_iopoll_outcome(&vda, Some(true), Ok(())),
            Outcome::Yes
        );
    }

    #[test]
    fn poll_pick_names_the_cheaper_choice() {
        let rows = [
            row(ModelKey::Sync, 67.0, 34.0, 1.0),
            row(ModelKey::Interrupt, 66.0, 35.0, 1.0),
            row(ModelKey::Poll, 46.0, 49.0, 0.0),
        ];
        let r = recommend(&rows, 20_000).unwrap();
        assert_eq!(r.model, ModelKey::Poll);
        assert!(r.reason.contains("rule says sleep"), "{r:?}");
        let c = r.cheapest.expect("cheaper alternative");
        assert!(c.starts_with("sync (psync)"), "{c}");
    }

    #[test]
    fn nothing_measured_means_no_recommendation() {
        let mut r = row(ModelKey::Poll, 5.0, 5.0, 0.0);
        r.ios = 0;
        assert!(recommend(&[r], 10_000).is_none());
    }
}
