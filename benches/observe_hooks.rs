//! Where `iolab observe`'s per-syscall cost goes: getppid timed plain, with BPF
//! programs that do nothing on the syscall tracepoints (the floor any tracepoint
//! hook pays here), with ones that only read the tid, look up an array or read
//! the clock, and with observe's own counter for an untracked and a tracked
//! thread; medians of interleaved rounds. A measurement, not a check:
//! `cargo bench --bench observe_hooks` (root; BENCHMARKS.md quotes it).
//!
//! `-- --hold SECS` instead keeps programs that do nothing on sys_enter,
//! sys_exit and sched_switch for SECS seconds: the floor of any tracer built on
//! those hooks, for a whole workload (bench/observe_pgbench.sh's `floor` series).

use anyhow::Result;
use iolab::observe::bpf::insn::{Alu, Asm, Helper, R0, R1, R2, R10, Size};
use iolab::observe::bpf::{BpfCounter, sys};

const CALLS: usize = 1_000_000;
const ROUNDS: usize = 7;

fn getppid_ns() -> f64 {
    let t = std::time::Instant::now();
    for _ in 0..CALLS {
        // SAFETY: getppid has no preconditions.
        unsafe { libc::syscall(libc::SYS_getppid) };
    }
    t.elapsed().as_nanos() as f64 / CALLS as f64
}

/// getppid with `asm`'s program on sys_enter and sys_exit.
fn with_program(name: &str, asm: &mut Asm) -> Result<f64> {
    on_tracepoints(name, asm, &["sys_enter", "sys_exit"])
}

/// getppid with `asm`'s program on each of `tps`.
fn on_tracepoints(name: &str, asm: &mut Asm, tps: &[&str]) -> Result<f64> {
    let prog = sys::prog_load(sys::PROG_RAW_TRACEPOINT, name, &asm.finish()?)?;
    let _links = tps
        .iter()
        .map(|tp| sys::raw_tracepoint_open(tp, &prog))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(getppid_ns())
}

fn program(build: impl Fn(&mut Asm)) -> Asm {
    let mut a = Asm::new();
    build(&mut a);
    a.mov_imm(R0, 0).exit();
    a
}

/// observe's own counter attached, this thread tracked or not.
fn observe(tracked: bool, time_one_in: u32) -> Result<f64> {
    let mut c = BpfCounter::timing_one_in(time_one_in)?;
    c.start()?;
    if tracked {
        // SAFETY: gettid has no preconditions.
        c.add_pids(&[unsafe { libc::gettid() }])?;
    }
    Ok(getppid_ns())
}

/// Empty programs on observe's hot tracepoints until `secs` pass.
fn hold(secs: f64) -> Result<()> {
    let prog = sys::prog_load(
        sys::PROG_RAW_TRACEPOINT,
        "nothing",
        &program(|_| {}).finish()?,
    )?;
    let _links = ["sys_enter", "sys_exit", "sched_switch"]
        .iter()
        .map(|tp| sys::raw_tracepoint_open(tp, &prog))
        .collect::<Result<Vec<_>, _>>()?;
    println!("attached");
    std::thread::sleep(std::time::Duration::from_secs_f64(secs));
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--hold") {
        let secs = args
            .get(i + 1)
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .ok_or_else(|| anyhow::anyhow!("--hold needs a positive number of seconds"))?;
        return hold(secs);
    }
    let arr = sys::Map::create(sys::MAP_ARRAY, "bench_arr", 4, 64, 32768)?;
    let pcpu = sys::Map::create(sys::MAP_PERCPU_ARRAY, "bench_pcpu", 4, 32, 1024)?;
    let lookup = |fd: i32| {
        program(move |a| {
            a.store_imm(Size::W, R10, -4, 7)
                .ld_map_fd(R1, fd)
                .mov_reg(R2, R10)
                .alu_imm(Alu::Add, R2, -4)
                .call(Helper::MapLookupElem);
        })
    };
    type Variant<'a> = (&'a str, Box<dyn Fn() -> Result<f64> + 'a>);
    let variants: Vec<Variant> = vec![
        ("plain", Box::new(|| Ok(getppid_ns()))),
        (
            "enter+exit programs doing nothing",
            Box::new(|| with_program("nothing", &mut program(|_| {}))),
        ),
        (
            "enter program only, doing nothing",
            Box::new(|| on_tracepoints("enter", &mut program(|_| {}), &["sys_enter"])),
        ),
        (
            "exit program only, doing nothing",
            Box::new(|| on_tracepoints("exit", &mut program(|_| {}), &["sys_exit"])),
        ),
        (
            "enter+exit reading the tid",
            Box::new(|| {
                with_program(
                    "tid",
                    &mut program(|a| {
                        a.call(Helper::GetCurrentPidTgid);
                    }),
                )
            }),
        ),
        (
            "enter+exit one array lookup",
            Box::new(|| with_program("array", &mut lookup(arr.raw_fd()))),
        ),
        (
            "enter+exit one per-CPU array lookup",
            Box::new(|| with_program("pcpu", &mut lookup(pcpu.raw_fd()))),
        ),
        (
            "enter+exit reading the clock",
            Box::new(|| {
                with_program(
                    "clock",
                    &mut program(|a| {
                        a.call(Helper::KtimeGetNs);
                    }),
                )
            }),
        ),
        (
            "observe's counter, untracked thread",
            Box::new(|| observe(false, 1)),
        ),
        (
            "observe's counter, tracked thread",
            Box::new(|| observe(true, 1)),
        ),
        (
            "observe's counter, tracked, timing 1/16",
            Box::new(|| observe(true, 16)),
        ),
        (
            "observe's counter, tracked, timing 1/64",
            Box::new(|| observe(true, 64)),
        ),
    ];
    // Rounds interleave the variants so this VM's drifts hit all of them alike.
    let mut ns = vec![Vec::new(); variants.len()];
    for _ in 0..ROUNDS {
        for (v, (_, run)) in ns.iter_mut().zip(&variants) {
            v.push(run()?);
        }
    }
    let med: Vec<f64> = ns
        .into_iter()
        .map(|mut v| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        })
        .collect();
    for ((what, _), m) in variants.iter().zip(&med) {
        println!("{what:<36} {m:6.0} ns/call {:5.2}x", m / med[0]);
    }
    Ok(())
}
