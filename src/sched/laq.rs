//! LAT (latency-aware throttling), the throttle half of study 003's `laq`.
//!
//! OIS is always capped at `ois_max`, the smallest OIS that saturates the device,
//! so the device's command queue never holds more than it needs for full
//! bandwidth. When a high-priority request arrives, a window of `t_wait` opens
//! (or is extended) during which low-priority classes are admitted only while
//! OIS stays within `ois_min`; the headroom `ois_max - ois_min` is left for the
//! high-priority requests that, by the study's measurement, tend to follow
//! within 1 ms.

use crate::job::spec::LaqParams;

/// Whether a request of `bytes` may go to the device with `ois` outstanding
/// under `cap`. A request larger than the cap goes alone when the device is
/// empty; refusing it would deadlock, since no completion would ever lower OIS.
#[inline]
pub(crate) fn admits(ois: u64, bytes: u32, cap: u64) -> bool {
    ois == 0 || ois + bytes as u64 <= cap
}

/// The throttle window and its time accounting.
pub(crate) struct Lat {
    pub(crate) ois_max: u64,
    pub(crate) ois_min: u64,
    t_wait_ns: u64,
    open: bool,
    start_ns: u64,
    until_ns: u64,
    /// Time covered by windows that have already closed.
    closed_ns: u64,
    pub(crate) windows: u64,
}

impl Lat {
    pub(crate) fn new(p: &LaqParams) -> Self {
        Lat {
            ois_max: p.ois_max,
            ois_min: p.ois_min,
            t_wait_ns: u64::try_from(p.t_wait.as_nanos()).unwrap_or(u64::MAX),
            open: false,
            start_ns: 0,
            until_ns: 0,
            closed_ns: 0,
            windows: 0,
        }
    }

    /// A high-priority request arrived at `now`: open the window or push its end.
    #[inline]
    pub(crate) fn on_high_arrival(&mut self, now: u64) {
        if self.t_wait_ns == 0 {
            return;
        }
        let until = now.saturating_add(self.t_wait_ns);
        if self.open && now <= self.until_ns {
            // Overlapping windows are one window: time at ois_min is their union.
            self.until_ns = self.until_ns.max(until);
            return;
        }
        if self.open {
            self.closed_ns += self.until_ns - self.start_ns;
        }
        self.open = true;
        self.start_ns = now;
        self.until_ns = until;
        self.windows += 1;
    }

    /// The cap that applies to low-priority classes at `now`.
    #[inline]
    pub(crate) fn low_cap(&self, now: u64) -> u64 {
        if self.open && now < self.until_ns {
            self.ois_min
        } else {
            self.ois_max
        }
    }

    /// End of the last window opened (it may already have passed).
    #[inline]
    pub(crate) fn window_until(&self) -> Option<u64> {
        self.open.then_some(self.until_ns)
    }

    /// Total time low classes were held to `ois_min`, up to `now`.
    pub(crate) fn time_at_min_ns(&self, now: u64) -> u64 {
        if !self.open {
            return self.closed_ns;
        }
        let end = now.min(self.until_ns);
        self.closed_ns + end.saturating_sub(self.start_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn lat(t_wait_us: u64) -> Lat {
        Lat::new(&LaqParams {
            ois_max: 1000,
            ois_min: 500,
            t_wait: Duration::from_micros(t_wait_us),
        })
    }

    #[test]
    fn window_opens_extends_and_expires() {
        let mut l = lat(1);
        assert_eq!(l.low_cap(0), 1000);
        l.on_high_arrival(10_000);
        assert_eq!(l.low_cap(10_000), 500);
        assert_eq!(l.low_cap(10_999), 500);
        assert_eq!(l.low_cap(11_000), 1000);
        // Arrival inside the window extends it; the union is counted once.
        l.on_high_arrival(10_500);
        assert_eq!(l.window_until(), Some(11_500));
        assert_eq!(l.time_at_min_ns(20_000), 1_500);
        l.on_high_arrival(30_000);
        assert_eq!(l.windows, 2);
        assert_eq!(l.time_at_min_ns(30_250), 1_750);
        assert_eq!(l.time_at_min_ns(99_000), 2_500);
    }

    #[test]
    fn zero_t_wait_never_throttles_low_classes_below_max() {
        let mut l = lat(0);
        l.on_high_arrival(5);
        assert_eq!(l.low_cap(5), 1000);
        assert_eq!(l.windows, 0);
    }

    #[test]
    fn oversize_request_goes_only_on_an_empty_device() {
        assert!(admits(0, 4096, 100));
        assert!(!admits(1, 4096, 100));
        assert!(admits(96, 4, 100));
        assert!(!admits(97, 4, 100));
    }
}
