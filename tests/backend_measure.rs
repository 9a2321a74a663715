//! QD1 4 KiB random-read latency on zram: psync vs uring interrupt vs uring CQ
//! spinning. A printed measurement, not a pass/fail benchmark; run it with
//! `cargo test --release --test backend_measure -- --ignored --nocapture`.

mod backend_common;

use std::os::fd::AsRawFd;

use backend_common::*;
use iolab::device::psync::{Psync, PsyncFlags};
use iolab::device::uring::{Uring, UringOpts};
use iolab::device::{Queue, Queued, Wait};
use iolab::measure::clock::now_ns;
use iolab::request::{Completion, Op};

const SIZE: u64 = 64 << 20;
const N: usize = 20_000;

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-parameter.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

struct Offsets(u64);
impl Offsets {
    fn next(&mut self) -> u64 {
        // xorshift64: cheap, deterministic, no allocation.
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % (SIZE / 4096)) * 4096
    }
}

fn report(name: &str, lat: &mut [u64], cpu_ns: u64, wall_ns: u64, extra: String) {
    lat.sort_unstable();
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)] as f64 / 1e3;
    let mean = lat.iter().sum::<u64>() as f64 / lat.len() as f64 / 1e3;
    println!(
        "{name:<22} mean {mean:6.2} us  p50 {:6.2}  p99 {:6.2}  p99.9 {:7.2}  cpu {:5.1}%  {extra}",
        pct(0.5),
        pct(0.99),
        pct(0.999),
        cpu_ns as f64 * 100.0 / wall_ns as f64
    );
}

#[derive(Clone, Copy)]
enum Mode {
    Psync,
    Interrupt,
    Spin,
}

fn run(fd: i32, mode: Mode, lat: &mut [u64]) -> String {
    let b = AlignedBuf::new(4096);
    let mut offs = Offsets(0x2545F4914F6CDD1D);
    let mut out = [Completion::default(); 1];
    let mut uring;
    let mut psync;
    let q: &mut dyn Queue = match mode {
        Mode::Psync => {
            psync = Psync::new(fd, false, PsyncFlags::default()).unwrap();
            &mut psync
        }
        _ => {
            let o = UringOpts {
                entries: 1,
                ..UringOpts::default()
            };
            uring = Uring::new(fd, &o).unwrap();
            &mut uring
        }
    };
    // Warm up (io-wq worker creation, page-table faults on the buffer).
    for i in 0..(N / 10 + lat.len()) {
        let t0 = now_ns();
        let c = cmd(Op::Read, offs.next(), &b, 0);
        let done = match q.queue(&c).unwrap() {
            Queued::Done(c) => c,
            Queued::Pending => {
                q.commit().unwrap();
                let wait = match mode {
                    Mode::Spin => Wait::Peek,
                    _ => Wait::Sleep { min: 1 },
                };
                while q.reap(wait, &mut out).unwrap() == 0 {}
                out[0]
            }
            Queued::Busy => panic!("QD1 queue busy"),
        };
        assert_eq!(done.result, 4096);
        if let Some(i) = i.checked_sub(N / 10) {
            lat[i] = now_ns() - t0;
        }
    }
    let s = q.stats();
    format!(
        "per I/O: {:.2} submit calls, {:.2} wait calls, {:.2} punted",
        s.submit_calls as f64 / (N + N / 10) as f64,
        s.wait_calls as f64 / (N + N / 10) as f64,
        s.punted as f64 / (N + N / 10) as f64
    )
}

#[test]
#[ignore = "measurement: run explicitly in release mode"]
fn qd1_randread_latency_on_zram() {
    let Some(z) = ZramGuard::new(SIZE) else {
        return;
    };
    {
        let f = open(&z.path(), true, true);
        let fd = f.as_raw_fd();
        // Fill with incompressible data so reads decompress real pages.
        let mut w = Psync::new(fd, false, PsyncFlags::default()).unwrap();
        let mut b = AlignedBuf::new(4096);
        for blk in 0..SIZE / 4096 {
            b.fill(blk);
            let c = cmd(Op::Write, blk * 4096, &b, 0);
            assert!(matches!(w.queue(&c).unwrap(), Queued::Done(c) if c.result == 4096));
        }
        let mut lat = vec![0u64; N];
        for (name, mode) in [
            ("psync", Mode::Psync),
            ("uring interrupt", Mode::Interrupt),
            ("uring CQ spinning", Mode::Spin),
        ] {
            let (c0, w0) = (thread_cpu_ns(), now_ns());
            let extra = run(fd, mode, &mut lat);
            let (c1, w1) = (thread_cpu_ns(), now_ns());
            report(name, &mut lat, c1 - c0, w1 - w0, extra);
        }
    }
    drop(z);
}
