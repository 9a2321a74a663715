//! Log timestamps on a clock's epoch (fio's `log_unix_epoch`,
//! `log_alternate_epoch`, `log_alternate_epoch_clock_id`).
//!
//! A row's time is the milliseconds since its stream's measurement began
//! (`t_ns`); with an epoch clock the writer adds, per stream, that clock's
//! reading at the moment measurement began. The worker takes the reading once,
//! when its run starts ([`base_ns`]): the row itself stays one store on the
//! worker, and the addition happens on the writer thread.

/// Nanoseconds on clock `id` (a clock_gettime(2) id), or None when the kernel
/// refuses it.
pub fn read_clock_ns(id: i32) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a timespec; an unknown id returns EINVAL.
    let r = unsafe { libc::clock_gettime(id as libc::clockid_t, &mut ts) };
    (r == 0 && ts.tv_sec >= 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Clock `id`'s reading at engine time `began_ns` (which may lie ahead, at the
/// end of ramp_time): the reading now, moved by the engine time in between.
/// 0 when the clock cannot be read (checked while the job was parsed).
pub fn base_ns(id: i32, began_ns: u64) -> u64 {
    let now = crate::measure::clock::now_ns();
    let Some(c) = read_clock_ns(id) else {
        return 0;
    };
    if began_ns >= now {
        c + (began_ns - now)
    } else {
        c.saturating_sub(now - began_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_the_kernel_has_are_read_and_others_are_not() {
        assert!(read_clock_ns(libc::CLOCK_REALTIME).unwrap() > 1_600_000_000_000_000_000);
        assert!(read_clock_ns(libc::CLOCK_MONOTONIC).is_some());
        // 10 was CLOCK_SGI_CYCLE, never implemented by Linux.
        assert!(read_clock_ns(10).is_none());
    }

    #[test]
    fn a_base_ahead_is_the_clock_then() {
        let now = crate::measure::clock::now_ns();
        let wall = read_clock_ns(libc::CLOCK_REALTIME).unwrap();
        let b = base_ns(libc::CLOCK_REALTIME, now + 2_000_000_000);
        // Two seconds ahead, give or take the time between the readings.
        let ahead = b as i128 - wall as i128;
        assert!((1_990_000_000..2_100_000_000).contains(&ahead), "{ahead}");
    }
}
