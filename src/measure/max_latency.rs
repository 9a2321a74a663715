//! fio's `max_latency`: the first completion whose total latency (issue to
//! completion) exceeds the limit of its direction fails the job with
//! ETIMEDOUT. One compare per completion.

use crate::request::Op;

/// The limits of one stream and the completion that broke one.
#[derive(Clone, Copy, Debug, Default)]
pub struct MaxLatency {
    /// ns per direction [read, write, trim]; 0 = none.
    limit_ns: [u64; 3],
    pub exceeded: Option<Exceeded>,
}

/// The completion that exceeded its direction's limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exceeded {
    pub lat_ns: u64,
    pub limit_ns: u64,
    pub op: Op,
    pub offset: u64,
    pub len: u32,
}

impl MaxLatency {
    pub fn new(limit_ns: [u64; 3]) -> MaxLatency {
        MaxLatency {
            limit_ns,
            exceeded: None,
        }
    }

    pub fn active(&self) -> bool {
        self.limit_ns != [0; 3]
    }

    /// A completion of `op` with total latency `lat_ns`: true the first time
    /// one exceeds its limit (the job must stop).
    #[inline]
    pub fn check(&mut self, op: Op, lat_ns: u64, offset: u64, len: u32) -> bool {
        let d = op.dir();
        if d >= 3 || self.limit_ns[d] == 0 || lat_ns <= self.limit_ns[d] || self.exceeded.is_some()
        {
            return false;
        }
        self.exceeded = Some(Exceeded {
            lat_ns,
            limit_ns: self.limit_ns[d],
            op,
            offset,
            len,
        });
        true
    }

    /// fio's message for the job's error.
    pub fn message(&self, label: &str, file: &str) -> Option<String> {
        let e = self.exceeded?;
        let dir = ["read", "write", "trim"][e.op.dir().min(2)];
        Some(format!(
            "{label}: latency of {} nsec exceeds specified max ({} nsec): {file} {dir} {} {} \
             (max latency exceeded: ETIMEDOUT)",
            e.lat_ns, e.limit_ns, e.offset, e.len
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_completion_over_its_direction_limit_trips_once() {
        let mut m = MaxLatency::new([1_000, 0, 0]);
        assert!(m.active());
        assert!(!m.check(Op::Read, 1_000, 0, 4096));
        assert!(!m.check(Op::Write, 1_000_000, 0, 4096), "no write limit");
        assert!(m.check(Op::Read, 1_001, 8192, 4096));
        assert!(!m.check(Op::Read, 5_000, 0, 4096), "only the first");
        let msg = m.message("job", "f").unwrap();
        assert!(
            msg.contains(
                "latency of 1001 nsec exceeds specified max (1000 nsec): f read 8192 4096"
            ),
            "{msg}"
        );
    }
}
