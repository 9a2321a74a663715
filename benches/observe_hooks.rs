//! Where `iolab observe`'s per-syscall cost goes: getppid timed plain, with BPF
//! programs that do nothing on the syscall tracepoints (the floor any tracepoint
//! hook pays here), with one that only reads the clock, and with observe's own
//! counter for an untracked and a tracked thread. A measurement, not a check:
//! `cargo bench --bench observe_hooks` (root; BENCHMARKS.md quotes it).

use anyhow::Result;
use iolab::measure::observe::bpf::insn::{Asm, Helper, R0};
use iolab::measure::observe::bpf::{BpfCounter, sys};

const CALLS: usize = 2_000_000;

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
    let prog = sys::prog_load(sys::PROG_RAW_TRACEPOINT, name, &asm.finish()?)?;
    let _enter = sys::raw_tracepoint_open("sys_enter", &prog)?;
    let _exit = sys::raw_tracepoint_open("sys_exit", &prog)?;
    Ok(getppid_ns())
}

fn main() -> Result<()> {
    let plain = getppid_ns();
    let row = |what: &str, ns: f64| println!("{what:<36} {ns:6.0} ns/call {:5.2}x", ns / plain);
    row("plain", plain);
    let mut nothing = Asm::new();
    nothing.mov_imm(R0, 0).exit();
    row(
        "enter+exit programs doing nothing",
        with_program("nothing", &mut nothing)?,
    );
    let mut clock = Asm::new();
    clock.call(Helper::KtimeGetNs).mov_imm(R0, 0).exit();
    row(
        "enter+exit reading the clock",
        with_program("clock", &mut clock)?,
    );
    let mut c = BpfCounter::new()?;
    c.start()?;
    row("observe's counter, untracked thread", getppid_ns());
    // SAFETY: gettid has no preconditions.
    c.add_pids(&[unsafe { libc::gettid() }])?;
    row("observe's counter, tracked thread", getppid_ns());
    c.stop();
    row("after stop", getppid_ns());
    Ok(())
}
