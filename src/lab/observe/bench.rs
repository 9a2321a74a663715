//! One measured benchmark run against a server (pgbench or sysbench): the
//! machine's deltas around it, the server's cgroup CPU, and (when observed) the
//! collector's exact system calls and context switches of the server's process
//! tree. Also the alternating plain/observed pairs that price the collector.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::cgroup::{CgCpu, ServerCgroup};
use super::device::dev_ios;
use crate::measure::cpu::{ProcStat, ThreadUsage};
use crate::observe::collector::Collector;
use crate::observe::names::syscall_name;
use crate::observe::target::process_tree_threads;
use crate::sys::cleanup;

/// Per-CPU trace buffer: a database on zram makes a few MB/s of syscall events,
/// drained every 50 ms.
const TRACE_BUFFER_KB: u64 = 32 * 1024;

/// What a benchmark client printed, in the terms both drivers share.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BenchOut {
    pub tps: f64,
    pub latency_ms: f64,
    pub transactions: u64,
    /// Failed transactions (pgbench) or ignored errors, i.e. deadlocks rolled
    /// back and retried (sysbench).
    pub failed: u64,
}

/// One syscall's totals over a run.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Sc {
    pub(super) name: String,
    pub(super) calls: u64,
    pub(super) timed: u64,
    pub(super) total_ns: u64,
}

/// The collector's view of one run.
#[derive(Clone, Debug, Default)]
pub(super) struct Observed {
    pub(super) syscalls: Vec<Sc>,
    pub(super) voluntary: u64,
    pub(super) involuntary: u64,
    pub(super) threads: usize,
    pub(super) events: u64,
    /// CPU time of the reader (this thread: drains, decodes, pairs) during the run.
    pub(super) reader_cpu_ns: u64,
}

impl Observed {
    pub(super) fn calls(&self, name: &str) -> u64 {
        self.syscalls
            .iter()
            .find(|s| s.name == name)
            .map_or(0, |s| s.calls)
    }
    pub(super) fn total_calls(&self) -> u64 {
        self.syscalls.iter().map(|s| s.calls).sum()
    }
    pub(super) fn switches(&self) -> u64 {
        self.voluntary + self.involuntary
    }
}

/// One benchmark run with the machine's deltas around it.
#[derive(Clone, Debug)]
pub(super) struct Run {
    pub(super) out: BenchOut,
    pub(super) secs: f64,
    pub(super) stat: ProcStat,
    pub(super) dev_reads: u64,
    pub(super) dev_writes: u64,
    /// CPU time of the server's processes (cpuacct), when the hierarchy exists.
    pub(super) srv_cpu: Option<CgCpu>,
    pub(super) obs: Option<Observed>,
}

/// Kills a still-running client on the error path.
struct Reap(Option<Child>);

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The benchmark client of one run: its command for `secs` seconds, its name
/// for messages and the parser of its summary.
pub(super) struct Client<'a> {
    pub(super) what: &'static str,
    pub(super) command: &'a dyn Fn(u32) -> Command,
    pub(super) parse: fn(&str) -> Result<BenchOut>,
}

/// Run the client for `secs` against the server `pid`, observed or not.
pub(super) fn measured_run(
    client: &Client,
    pid: i32,
    cg: Option<&ServerCgroup>,
    dev: &str,
    secs: u32,
    observe: bool,
) -> Result<Run> {
    let what = client.what;
    let mut tracer = None;
    if observe {
        // iolab observe's backend choice: eBPF counters where they work, else
        // the tracefs tracer (said once on stderr).
        let mut t = Collector::open(None, TRACE_BUFFER_KB, 1)?;
        // An empty tracefs pid filter would trace everyone: fill it before
        // tracing starts, then re-list until no thread appeared in between (forks
        // and clones after a parent is listed are followed in the kernel).
        let mut known = process_tree_threads(pid)?;
        t.add_pids(&known)?;
        t.start()?;
        loop {
            let now = process_tree_threads(pid)?;
            let new: Vec<i32> = now.into_iter().filter(|x| !known.contains(x)).collect();
            if new.is_empty() {
                break;
            }
            t.add_pids(&new)?;
            known.extend(new);
        }
        tracer = Some(t);
    }
    let (r0, w0) = dev_ios(dev)?;
    let u0 = ThreadUsage::now();
    let c0 = cg.map(ServerCgroup::cpu).transpose()?.flatten();
    let s0 = ProcStat::read()?;
    let t0 = Instant::now();
    let child = (client.command)(secs)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {what}"))?;
    let mut reap = Reap(Some(child));
    let limit = Duration::from_secs(secs as u64 + 60);
    loop {
        std::thread::sleep(Duration::from_millis(50));
        if let Some(t) = tracer.as_mut() {
            t.poll()?;
        }
        if cleanup::stop_requested() {
            bail!("interrupted");
        }
        let c = reap.0.as_mut().expect("child present until taken");
        if c.try_wait()?.is_some() {
            break;
        }
        if t0.elapsed() > limit {
            bail!(
                "{what} for {secs} s still running after {} s",
                limit.as_secs()
            );
        }
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let s1 = ProcStat::read()?;
    let c1 = cg.map(ServerCgroup::cpu).transpose()?.flatten();
    let (r1, w1) = dev_ios(dev)?;
    let obs = match tracer.take() {
        Some(mut t) => {
            t.stop()?;
            t.require_no_loss()?;
            let u = ThreadUsage::delta(&u0, &ThreadUsage::now());
            let p = t.total_period()?;
            let o = Observed {
                syscalls: p
                    .syscall_rows()
                    .into_iter()
                    .map(|(nr, s)| Sc {
                        name: syscall_name(nr),
                        calls: s.calls,
                        timed: s.timed,
                        total_ns: s.total_ns,
                    })
                    .collect(),
                voluntary: p.voluntary(),
                involuntary: p.involuntary(),
                threads: p.threads.len(),
                events: t.events(),
                reader_cpu_ns: u.user_ns + u.sys_ns,
            };
            t.remove()?;
            Some(o)
        }
        None => None,
    };
    let mut child = reap.0.take().expect("child present");
    let status = child.wait()?;
    let mut out = String::new();
    let mut err = String::new();
    if let Some(mut o) = child.stdout.take() {
        o.read_to_string(&mut out)?;
    }
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err)?;
    }
    if !status.success() {
        // A terminal's Ctrl-C reaches the client too: say what happened.
        if cleanup::stop_requested() {
            bail!("interrupted");
        }
        bail!(
            "{what} failed ({status}): {}{}",
            err.trim(),
            last_lines(&out, 5)
        );
    }
    let parsed = (client.parse)(&out).with_context(|| format!("{what} stderr: {}", err.trim()))?;
    Ok(Run {
        out: parsed,
        secs: elapsed,
        stat: ProcStat::delta(&s0, &s1),
        dev_reads: r1.saturating_sub(r0),
        dev_writes: w1.saturating_sub(w0),
        srv_cpu: match (c0, c1) {
            (Some(a), Some(b)) => Some(CgCpu {
                user_ns: b.user_ns.saturating_sub(a.user_ns),
                sys_ns: b.sys_ns.saturating_sub(a.sys_ns),
            }),
            _ => None,
        },
        obs,
    })
}

fn last_lines(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return String::new();
    }
    format!(" | {}", lines[lines.len().saturating_sub(n)..].join(" | "))
}

/// One plain and one observed run, back to back.
#[derive(Clone, Copy, Debug)]
pub(super) struct OverheadPair {
    pub(super) plain_tps: f64,
    pub(super) observed_tps: f64,
    pub(super) events_per_s: f64,
    /// The reader's CPU in % of one CPU during the observed run.
    pub(super) reader_pct: f64,
}

impl OverheadPair {
    pub(super) fn cost_pct(&self) -> f64 {
        100.0 * (self.plain_tps - self.observed_tps) / self.plain_tps
    }
}

/// `pairs` plain/observed pairs of `secs` each, alternating which goes first
/// so a drift in machine load hits both.
pub(super) fn overhead_pairs(
    client: &Client,
    pid: i32,
    cg: Option<&ServerCgroup>,
    dev: &str,
    secs: u32,
    pairs: usize,
) -> Result<Vec<OverheadPair>> {
    let mut v = Vec::with_capacity(pairs);
    for i in 0..pairs {
        let first_observed = i % 2 == 1;
        let a = measured_run(client, pid, cg, dev, secs, first_observed)?;
        let b = measured_run(client, pid, cg, dev, secs, !first_observed)?;
        let (plain, obs) = if first_observed { (b, a) } else { (a, b) };
        let o = obs.obs.as_ref().expect("observed run has collector data");
        v.push(OverheadPair {
            plain_tps: plain.out.tps,
            observed_tps: obs.out.tps,
            events_per_s: o.events as f64 / obs.secs,
            reader_pct: 100.0 * o.reader_cpu_ns as f64 / 1e9 / obs.secs,
        });
    }
    Ok(v)
}

/// Runs built from recorded counts, for the tests of what is computed from them.
#[cfg(test)]
pub(super) mod recorded {
    use super::*;

    /// A run of `txns` transactions in `secs` with these syscall counts and
    /// voluntary/involuntary switches.
    pub(in crate::lab::observe) fn run(
        txns: u64,
        secs: f64,
        calls: &[(&str, u64)],
        vol: u64,
        invol: u64,
    ) -> Run {
        Run {
            out: BenchOut {
                tps: txns as f64 / secs,
                latency_ms: 1.0,
                transactions: txns,
                failed: 0,
            },
            secs,
            stat: ProcStat::default(),
            dev_reads: 0,
            dev_writes: 0,
            srv_cpu: None,
            obs: Some(Observed {
                syscalls: calls
                    .iter()
                    .map(|(n, c)| Sc {
                        name: n.to_string(),
                        calls: *c,
                        timed: *c,
                        total_ns: c * 1000,
                    })
                    .collect(),
                voluntary: vol,
                involuntary: invol,
                threads: 40,
                events: 0,
                reader_cpu_ns: 0,
            }),
        }
    }
}
