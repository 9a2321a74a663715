//! This machine's cost of sleeping, measured once per process: how late a
//! thread that sleeps on an hrtimer runs again (the wakeup cost, the price of
//! any sleep-based completion model), and the shortest sleep that really
//! gives the CPU away. Adaptive completion decides with them, `iolab probe`
//! and the lab's poll study report them.

use std::sync::OnceLock;

use crate::measure::clock;
use crate::measure::cpu::ThreadUsage;

/// Sleep lengths tried when looking for the shortest one that blocks (ns).
const BLOCK_TRIES_NS: [u64; 6] = [1_000, 2_000, 4_000, 8_000, 16_000, 32_000];
/// Sleeps per length, and how many of them must block.
const BLOCK_SAMPLES: u32 = 8;
const BLOCK_NEEDED: u32 = 7;

/// This machine's wakeup cost (ns): median lateness of a 20 us hrtimer sleep,
/// measured once per process with timer slack set to 1 ns.
pub fn wakeup_cost_ns() -> u64 {
    static COST: OnceLock<u64> = OnceLock::new();
    *COST.get_or_init(|| measure_wakeup_cost(41))
}

/// Measure wakeup lateness: sleep until a deadline `samples` times and take the
/// median of (time seen awake - deadline) plus the sleep's entry cost.
pub fn measure_wakeup_cost(samples: usize) -> u64 {
    clock::set_thread_timer_slack_ns(1);
    let mut late: Vec<u64> = (0..samples)
        .map(|_| {
            let start = clock::now_ns();
            let deadline = start + 20_000;
            clock::sleep_until(deadline);
            clock::now_ns().saturating_sub(deadline)
        })
        .collect();
    late.sort_unstable();
    late[late.len() / 2].max(1)
}

/// The shortest sleep (ns) that gives the CPU away on this machine, measured
/// once per process.
pub fn blocking_sleep_ns() -> u64 {
    static BLOCK: OnceLock<u64> = OnceLock::new();
    *BLOCK.get_or_init(|| measure_blocking_sleep(&BLOCK_TRIES_NS))
}

/// Voluntary context switches of this thread so far.
fn voluntary_switches() -> Option<u64> {
    ThreadUsage::try_now().map(|u| u.nvcsw)
}

/// The first of `tries` (ns, ascending) at which at least `BLOCK_NEEDED` of
/// `BLOCK_SAMPLES` sleeps made a voluntary context switch; the last one if
/// none did. Why: a sleep whose timer is due before the thread reaches the
/// scheduler returns without blocking, yet still costs the timer's
/// programming. On this Firecracker VM sleeps of up to 5 us never blocked and
/// took 15-20 us each, holding the CPU all along; 8 us blocked. A nap meant to
/// hand the CPU to another thread must be at least this long.
pub fn measure_blocking_sleep(tries: &[u64]) -> u64 {
    clock::set_thread_timer_slack_ns(1);
    let last = tries.last().copied().unwrap_or(0);
    for &d in tries {
        let mut blocked = 0;
        for _ in 0..BLOCK_SAMPLES {
            let Some(before) = voluntary_switches() else {
                return last;
            };
            clock::sleep_until(clock::now_ns() + d);
            if voluntary_switches().is_some_and(|after| after > before) {
                blocked += 1;
            }
        }
        if blocked >= BLOCK_NEEDED {
            return d;
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_blocking_sleep_is_measured() {
        // A sleep already due returns at once (no context switch); 2 ms
        // always blocks. So the second length is the answer.
        assert_eq!(measure_blocking_sleep(&[1, 2_000_000]), 2_000_000);
        // None blocks: the longest tried.
        assert_eq!(measure_blocking_sleep(&[1, 2]), 2);
    }

    #[test]
    fn wakeup_cost_is_measured_not_assumed() {
        let w = measure_wakeup_cost(5);
        assert!(w > 0);
    }
}
