//! Where `--trace`'s cost goes on zram: 4 KiB O_DIRECT preads at QD1 timed
//! plain, with BPF programs that do nothing on block_bio_queue and
//! block_bio_complete (the floor any hook on those two tracepoints pays here),
//! with programs that only read the clock, on incompressible data, and with the two tracefs events
//! recorded into an instance's ring buffer (what `--trace` enables on a
//! bio-based device), reader or not. A measurement, not a check:
//! `cargo bench --bench trace_hooks` (root; BENCHMARKS.md quotes it).

use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};

use anyhow::{Context, Result};
use iolab::measure::tracefs::Tracefs;
use iolab::observe::bpf::insn::{Asm, Helper, R0};
use iolab::observe::bpf::sys;
use iolab::sys::zram::Zram;

const CALLS: u64 = 200_000;
const ROUNDS: usize = 9;

fn preads_ns(f: &std::fs::File, buf: &mut [u8]) -> f64 {
    let t = std::time::Instant::now();
    for i in 0..CALLS {
        let off = (i * 13 % 4096) * 4096;
        f.read_at(buf, off).expect("pread on zram");
    }
    t.elapsed().as_nanos() as f64 / CALLS as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<()> {
    // One CPU for the whole run: zram's per-CPU streams and caches otherwise
    // make the same read cost differ by tens of percent between rounds.
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set);
    }
    let zram = Zram::create(16 << 20).context("hot-adding a zram device (root)")?;
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(zram.path())?;
    let layout = std::alloc::Layout::from_size_align(4096, 4096)?;
    // SAFETY: non-zero size; freed at the end.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    // SAFETY: p is valid for 4096 bytes until dealloc.
    let buf = unsafe { std::slice::from_raw_parts_mut(p, 4096) };
    // Incompressible pages, as bench/trace_overhead.sh writes: reads then do
    // real decompression, as on a used zram (unwritten pages cost nothing).
    let w = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(zram.path())?;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for page in 0..4096u64 {
        for chunk in buf.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunk.copy_from_slice(&x.to_le_bytes());
        }
        w.write_at(buf, page * 4096)?;
    }
    preads_ns(&f, buf); // warm the caches

    let bpf = |asm: &mut Asm| -> Result<[std::os::fd::OwnedFd; 3]> {
        let prog = sys::prog_load(sys::PROG_RAW_TRACEPOINT, "bench", &asm.finish()?)?;
        let q = sys::raw_tracepoint_open("block_bio_queue", &prog)?;
        let c = sys::raw_tracepoint_open("block_bio_complete", &prog)?;
        Ok([prog, q, c])
    };
    let tfs = Tracefs::open()?;
    let mut rows: Vec<(&str, Vec<f64>)> = Vec::new();
    for what in [
        "plain",
        "Q+C programs doing nothing",
        "Q+C programs reading the clock",
        "Q+C tracefs events, no reader",
    ] {
        rows.push((what, Vec::new()));
    }
    // Rounds interleave the variants so drifts of this noisy VM hit all alike.
    for _ in 0..ROUNDS {
        rows[0].1.push(preads_ns(&f, buf));
        let mut nothing = Asm::new();
        nothing.mov_imm(R0, 0).exit();
        let hooks = bpf(&mut nothing)?;
        rows[1].1.push(preads_ns(&f, buf));
        drop(hooks);
        let mut clock = Asm::new();
        clock.call(Helper::KtimeGetNs).mov_imm(R0, 0).exit();
        let hooks = bpf(&mut clock)?;
        rows[2].1.push(preads_ns(&f, buf));
        drop(hooks);
        let inst = tfs.new_instance()?;
        if tfs.offers_clock("x86-tsc") {
            inst.set_clock("x86-tsc")?;
        }
        inst.set_buffer_size_kb(65536)?;
        inst.enable_event("block", "block_bio_queue")?;
        inst.enable_event("block", "block_bio_complete")?;
        inst.set_tracing_on(true)?;
        rows[3].1.push(preads_ns(&f, buf));
        drop(inst);
    }
    let plain = median(rows[0].1.clone());
    for (what, v) in rows {
        let ns = median(v);
        println!(
            "{what:<34} {ns:7.0} ns/read  {:6.1}% slower",
            (ns / plain - 1.0) * 100.0
        );
    }
    // SAFETY: allocated above with this layout.
    unsafe { std::alloc::dealloc(p, layout) };
    Ok(())
}
