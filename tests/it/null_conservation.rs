//! Property test of the null device under random parameters and host behaviour:
//! every command completes exactly once, with its exact service time, never more
//! than `channels` at a time, no channel idles while a command waits, fifo keeps
//! arrival order, and `in_flight` always equals queued - reaped.

use std::time::Duration;

use iolab::device::null::NullDevice;
use iolab::device::{Queue, Queued, Wait};
use iolab::job::spec::{NullOrder, NullParams};
use iolab::measure::clock::now_ns;
use iolab::request::{Class, Completion, IoCmd, Op};
use proptest::prelude::*;

#[derive(Clone, Copy, Debug)]
enum Step {
    /// Queue this many commands (reads when true) and commit them together.
    Submit(u8, bool),
    Peek,
    Sleep(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (1u8..6, any::<bool>()).prop_map(|(n, r)| Step::Submit(n, r)),
        Just(Step::Peek),
        (1u8..4).prop_map(Step::Sleep),
    ]
}

struct Issued {
    op: Op,
    len: u32,
    commit_lo: u64,
    commit_hi: u64,
    seq: usize,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn conservation_and_channel_invariants(
        channels in 1u32..4,
        readfirst in any::<bool>(),
        lat_us in 0u64..15,
        bw in prop_oneof![Just(0u64), Just(1_000_000_000u64)],
        qd in 0u32..6,
        steps in prop::collection::vec(step(), 1..40),
    ) {
        let p = NullParams {
            lat: Duration::from_micros(lat_us),
            bw,
            channels,
            qd,
            order: if readfirst { NullOrder::ReadFirst } else { NullOrder::Fifo },
            ..NullParams::default()
        };
        let mut d = NullDevice::new(&p, 1 << 30, 8, 3).unwrap();
        let mut issued: Vec<Issued> = Vec::new();
        let mut got: Vec<Completion> = Vec::new();
        let mut out = [Completion::default(); 16];
        let (mut queued, mut reaped) = (0u32, 0u32);

        let mut run = |s: Step,
                       d: &mut NullDevice,
                       issued: &mut Vec<Issued>,
                       got: &mut Vec<Completion>|
         -> Result<(), TestCaseError> {
            match s {
                Step::Submit(n, reads) => {
                    let mut batch = Vec::new();
                    for k in 0..n {
                        let slot = issued.len() as u32 + k as u32;
                        let op = if reads { Op::Read } else { Op::Write };
                        let len = 512 << (slot % 4);
                        let c = IoCmd::new(op, 0, len, slot, std::ptr::null_mut())
                            .with_class(Class::Read);
                        match d.queue(&c).unwrap() {
                            Queued::Pending => batch.push((op, len)),
                            Queued::Busy => break,
                            Queued::Done(_) => panic!("the null device is never synchronous"),
                        }
                    }
                    let lo = now_ns();
                    prop_assert_eq!(d.commit().unwrap() as usize, batch.len());
                    let hi = now_ns();
                    for (op, len) in batch {
                        let seq = issued.len();
                        issued.push(Issued { op, len, commit_lo: lo, commit_hi: hi, seq });
                        queued += 1;
                    }
                }
                Step::Peek => {
                    let n = d.reap(Wait::Peek, &mut out).unwrap();
                    got.extend_from_slice(&out[..n]);
                    reaped += n as u32;
                }
                Step::Sleep(min) => {
                    let n = d.reap(Wait::Sleep { min: min as u32 }, &mut out).unwrap();
                    let expect = (min as u32).min(queued - reaped) as usize;
                    prop_assert!(n >= expect, "sleep for {} returned {}", min, n);
                    got.extend_from_slice(&out[..n]);
                    reaped += n as u32;
                }
            }
            prop_assert_eq!(d.in_flight(), queued - reaped);
            Ok(())
        };
        for s in steps {
            run(s, &mut d, &mut issued, &mut got)?;
        }
        while (got.len()) < issued.len() {
            run(Step::Sleep(16), &mut d, &mut issued, &mut got)?;
        }
        prop_assert_eq!(d.in_flight(), 0);

        // Exactly once each.
        got.sort_by_key(|c| c.slot);
        prop_assert_eq!(got.len(), issued.len());
        for (k, c) in got.iter().enumerate() {
            prop_assert_eq!(c.slot as usize, k);
            let i = &issued[k];
            prop_assert_eq!(c.result, i.len as i64);
            let svc = lat_us * 1_000 + if bw == 0 { 0 } else { i.len as u64 };
            prop_assert_eq!(c.dev_done - c.dev_start, svc);
            prop_assert!(c.dev_start >= i.commit_lo);
            // Work conservation: starting after its commit means a channel just freed.
            if c.dev_start > i.commit_hi {
                prop_assert!(got.iter().any(|o| o.dev_done == c.dev_start),
                    "slot {} started at {} with no channel freeing then", k, c.dev_start);
            }
        }
        // Never more than `channels` in service at once.
        let mut edges: Vec<(u64, i32)> = got.iter()
            .filter(|c| c.dev_done > c.dev_start)
            .flat_map(|c| [(c.dev_start, 1), (c.dev_done, -1)])
            .collect();
        edges.sort();
        let mut busy = 0;
        for (_, e) in edges {
            busy += e;
            prop_assert!(busy <= channels as i32);
        }
        // Fifo: service starts in arrival order.
        if !readfirst {
            for w in issued.windows(2) {
                prop_assert!(got[w[0].seq].dev_start <= got[w[1].seq].dev_start);
            }
        }
        // readfirst: a read never starts after a write that arrived later.
        if readfirst {
            for r in issued.iter().filter(|i| i.op == Op::Read) {
                for w in issued.iter().filter(|i| i.op == Op::Write && i.seq > r.seq) {
                    prop_assert!(got[r.seq].dev_start <= got[w.seq].dev_start);
                }
            }
        }
    }
}
