//! Compute co-runners: the C tasks of study 001, built in so a placement study needs
//! no SPEC CPU. Two kernels stress different execution units, like the study's INT
//! (perlbench, x264) and FLOAT (cactuBSSN, wrf) picks:
//! - `int`: hash-mixing and an insertion sort over a small array (ALU, multiplier,
//!   branches; fits in L1 so the memory system stays out of it);
//! - `float`: a 24×24 double-precision matrix multiply (FP multiply-add units).
//!
//! A work unit is one pass of the kernel; the report gives units per second of wall
//! time and the thread's own CPU time (getrusage RUSAGE_THREAD), so time-sharing
//! (less CPU) and SMT contention (less work per CPU second) can be told apart.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::thread::JoinHandle;

use crate::measure::clock::now_ns;

use super::affinity::gettid;

#[derive(
    schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Kernel {
    Int,
    Float,
}

impl Kernel {
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Int => "int",
            Kernel::Float => "float",
        }
    }

    pub fn parse(s: &str) -> Result<Kernel, UnknownKernel> {
        match s {
            "int" => Ok(Kernel::Int),
            "float" => Ok(Kernel::Float),
            _ => Err(UnknownKernel(s.to_string())),
        }
    }
}

/// A co-runner kernel name that is neither `int` nor `float`.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("unknown co-runner kernel `{0}` (valid: int, float)")]
pub struct UnknownKernel(pub String);

/// What one co-runner did.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct CoRunnerReport {
    pub kernel: Kernel,
    pub units: u64,
    pub elapsed_ns: u64,
    pub units_per_s: f64,
    /// User + system CPU time of the thread, ns.
    pub cpu_ns: u64,
    /// Units per CPU second: falls under SMT contention even when the CPU share
    /// does not.
    pub units_per_cpu_s: f64,
    /// Folded result of the computation, so the optimizer cannot drop the work.
    pub checksum: u64,
    /// The logical CPU the thread ran on when it stopped.
    pub last_cpu: Option<u32>,
}

/// CPU time (user + system) of the calling thread, ns.
pub fn thread_cpu_ns() -> u64 {
    thread_usage().0
}

/// CPU time (ns), voluntary and involuntary context switches of the calling thread.
pub fn thread_usage() -> (u64, u64, u64) {
    let u = crate::measure::cpu::ThreadUsage::now();
    (u.cpu_ns(), u.nvcsw, u.nivcsw)
}

const INT_N: usize = 256;
const MAT_N: usize = 24;

struct IntState {
    data: [u64; INT_N],
    seed: u64,
}

impl IntState {
    fn unit(&mut self) -> u64 {
        // Refill with a splitmix sequence, mix, then sort a 64-element window: the
        // sort's data-dependent branches are what perlbench-like code spends on.
        for x in self.data.iter_mut() {
            self.seed = self.seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.seed;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            *x = z ^ (z >> 31);
        }
        let w = &mut self.data[..64];
        for i in 1..w.len() {
            let mut j = i;
            while j > 0 && w[j - 1] > w[j] {
                w.swap(j - 1, j);
                j -= 1;
            }
        }
        self.data[0] ^ self.data[63].rotate_left(17)
    }
}

struct FloatState {
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl FloatState {
    fn new() -> Self {
        let a = (0..MAT_N * MAT_N)
            .map(|i| 1.0 + (i % 7) as f64 * 1e-3)
            .collect();
        let b = (0..MAT_N * MAT_N)
            .map(|i| 1.0 - (i % 5) as f64 * 1e-3)
            .collect();
        FloatState {
            a,
            b,
            c: vec![0.0; MAT_N * MAT_N],
        }
    }

    fn unit(&mut self) -> u64 {
        let n = MAT_N;
        for i in 0..n {
            for j in 0..n {
                let mut s = 0.0;
                for k in 0..n {
                    s += self.a[i * n + k] * self.b[k * n + j];
                }
                self.c[i * n + j] = s;
            }
        }
        // Feed the result back, normalised so values stay finite forever.
        let scale = 1.0 / (n as f64 * 1.000_001);
        for (a, c) in self.a.iter_mut().zip(&self.c) {
            *a = c * scale;
        }
        self.c[n + 1].to_bits()
    }
}

/// Run `kernel` on the calling thread until `stop` is set or `max_ns` elapses.
pub fn run_kernel(kernel: Kernel, stop: &AtomicBool, max_ns: u64) -> CoRunnerReport {
    let cpu0 = thread_cpu_ns();
    let t0 = now_ns();
    let mut units = 0u64;
    let mut checksum = 0u64;
    let mut int = IntState {
        data: [0; INT_N],
        seed: 0x1234_5678,
    };
    let mut fp = FloatState::new();
    loop {
        // Check the clock and flag every 16 units: cheap next to a unit's work.
        for _ in 0..16 {
            checksum ^= match kernel {
                Kernel::Int => int.unit(),
                Kernel::Float => fp.unit(),
            };
        }
        units += 16;
        if stop.load(Ordering::Relaxed) || now_ns() - t0 >= max_ns {
            break;
        }
    }
    let elapsed_ns = now_ns() - t0;
    let cpu_ns = thread_cpu_ns() - cpu0;
    CoRunnerReport {
        kernel,
        units,
        elapsed_ns,
        units_per_s: units as f64 * 1e9 / elapsed_ns.max(1) as f64,
        cpu_ns,
        units_per_cpu_s: if cpu_ns > 0 {
            units as f64 * 1e9 / cpu_ns as f64
        } else {
            0.0
        },
        checksum,
        last_cpu: super::affinity::current_cpu(),
    }
}

/// Why a co-runner thread could not be started or joined.
#[derive(Debug, thiserror::Error)]
pub enum CoRunnerError {
    #[error(transparent)]
    Spawn(#[from] std::io::Error),
    #[error("co-runner thread died before starting")]
    DiedBeforeStart,
    #[error("co-runner thread panicked")]
    Panicked,
}

/// A co-runner on its own thread: it publishes its thread id, waits at `go` (so the
/// caller can place every task before any starts), then runs until `stop`.
pub struct CoRunner {
    tid: i32,
    handle: JoinHandle<CoRunnerReport>,
}

impl CoRunner {
    pub fn spawn(
        kernel: Kernel,
        go: Arc<Barrier>,
        stop: Arc<AtomicBool>,
        max_ns: u64,
    ) -> Result<CoRunner, CoRunnerError> {
        let (tx, rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name(format!("iolab-c-{}", kernel.name()))
            .spawn(move || {
                let _ = tx.send(gettid());
                go.wait();
                run_kernel(kernel, &stop, max_ns)
            })?;
        let tid = rx.recv().map_err(|_| CoRunnerError::DiedBeforeStart)?;
        Ok(CoRunner { tid, handle })
    }

    pub fn tid(&self) -> i32 {
        self.tid
    }

    pub fn join(self) -> Result<CoRunnerReport, CoRunnerError> {
        self.handle.join().map_err(|_| CoRunnerError::Panicked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_kernels_do_work_and_use_cpu() {
        for k in [Kernel::Int, Kernel::Float] {
            let stop = AtomicBool::new(false);
            let r = run_kernel(k, &stop, 30_000_000);
            assert!(r.units > 0 && r.units_per_s > 0.0, "{r:?}");
            assert!(r.elapsed_ns >= 30_000_000);
            assert!(r.cpu_ns > 0, "a spinning kernel is charged CPU time: {r:?}");
        }
    }
}
