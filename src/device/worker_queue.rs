//! The worker's device queue, with the null device's calls dispatched statically.
//!
//! The worker calls its queue several times per request: `queue`, `commit` and
//! the clock hints of the submit and the completion stamps. Through a
//! `Box<dyn Queue>` each is an indirect call the compiler cannot inline; at QD1 on
//! the null device, where a whole request costs about 100 ns, those calls and
//! the work they kept the optimiser from seeing across were a visible share
//! (BENCHMARKS.md, "Null device QD1"). So the null device is held by its own
//! type and its calls inline into the loop. Every other backend makes a system
//! call per request or more, next to which an indirect call is noise: it stays a
//! trait object. Each call is one predictable branch on the arm.
//!
//! Everything else about the queue (stats, abort, perform, the completion
//! model's `reap`) goes through [`Deref`] to the `dyn Queue`, as before.

use std::any::Any;
use std::ops::{Deref, DerefMut};

use super::null::NullDevice;
use super::{DevResult, Queue, Queued};
use crate::request::IoCmd;

/// One worker's queue pair (see the module docs).
pub enum WorkerQueue {
    /// The null device, called directly.
    Null(Box<NullDevice>),
    /// Any other backend, through its trait object.
    Other(Box<dyn Queue>),
}

impl WorkerQueue {
    /// Hold `q` by its own type when it is the null device.
    pub fn new(q: Box<dyn Queue>) -> WorkerQueue {
        let seen: &dyn Queue = &*q;
        let seen: &dyn Any = seen;
        if !seen.is::<NullDevice>() {
            return WorkerQueue::Other(q);
        }
        let any: Box<dyn Any> = q;
        match any.downcast::<NullDevice>() {
            Ok(d) => WorkerQueue::Null(d),
            Err(_) => unreachable!("the queue's type was checked just above"),
        }
    }

    /// Whether the queue's per-request calls are dispatched statically.
    #[cfg(any(test, feature = "testing"))]
    pub fn is_static(&self) -> bool {
        matches!(self, WorkerQueue::Null(_))
    }

    /// [`Queue::queue`].
    #[inline(always)]
    pub fn queue(&mut self, cmd: &IoCmd) -> DevResult<Queued> {
        match self {
            WorkerQueue::Null(d) => d.queue(cmd),
            WorkerQueue::Other(q) => q.queue(cmd),
        }
    }

    /// [`Queue::commit`].
    #[inline(always)]
    pub fn commit(&mut self) -> DevResult<u32> {
        match self {
            WorkerQueue::Null(d) => d.commit(),
            WorkerQueue::Other(q) => q.commit(),
        }
    }

    /// [`Queue::commit`] as if made at `at_ns` (engine clock, at most now):
    /// the scheduler's completion path releasing held requests at the
    /// completion that made room. Only the null device keeps device time and
    /// can honour a past time ([`NullDevice::commit_at`]); the others commit
    /// now.
    #[inline(always)]
    pub fn commit_at(&mut self, at_ns: u64) -> DevResult<u32> {
        match self {
            WorkerQueue::Null(d) => d.commit_at(at_ns),
            WorkerQueue::Other(q) => q.commit(),
        }
    }

    /// [`Queue::clock_hint`].
    #[inline(always)]
    pub fn clock_hint(&self) -> u64 {
        match self {
            WorkerQueue::Null(d) => d.clock_hint(),
            WorkerQueue::Other(q) => q.clock_hint(),
        }
    }
}

impl Deref for WorkerQueue {
    type Target = dyn Queue;
    fn deref(&self) -> &(dyn Queue + 'static) {
        match self {
            WorkerQueue::Null(d) => &**d,
            WorkerQueue::Other(q) => &**q,
        }
    }
}

impl DerefMut for WorkerQueue {
    fn deref_mut(&mut self) -> &mut (dyn Queue + 'static) {
        match self {
            WorkerQueue::Null(d) => &mut **d,
            WorkerQueue::Other(q) => &mut **q,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    use super::*;
    use crate::device::Wait;
    use crate::device::null::options::NullParams;
    use crate::device::psync::{Psync, PsyncFlags};
    use crate::device::sync::{SyncIo, SyncKind};
    use crate::request::{Class, Completion, Op};

    fn read(slot: u32, buf: *mut u8) -> IoCmd {
        IoCmd {
            op: Op::Read,
            offset: 4096,
            len: 4096,
            slot,
            buf,
            buf_index: 0,
            file: 0,
            ioprio: 0,
            class: Class::Read,
            flush: Default::default(),
        }
    }

    #[test]
    fn the_null_device_is_called_directly() {
        let d = NullDevice::new(&NullParams::default(), 1 << 20, 1, 0).unwrap();
        let mut q = WorkerQueue::new(Box::new(d));
        assert!(q.is_static());
        assert_eq!(q.name(), "null");
        // A QD1 round trip through the direct calls and the trait object.
        let mut out = [Completion::default(); 1];
        for slot in 0..3 {
            assert_eq!(
                q.queue(&read(slot, std::ptr::null_mut())).unwrap(),
                Queued::Pending
            );
            assert_eq!(q.commit().unwrap(), 1);
            let submit = q.clock_hint();
            assert_ne!(submit, 0, "the commit's clock read is the submit stamp");
            while q.reap(Wait::Peek, &mut out).unwrap() == 0 {}
            assert_eq!((out[0].slot, out[0].result), (slot, 4096));
            assert!(q.clock_hint() >= submit);
        }
        assert_eq!(q.commands_in_flight(), Some(0));
    }

    #[test]
    fn every_other_backend_stays_a_trait_object() {
        let mut f = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut f, &[7u8; 8192]).unwrap();
        let fd = f.as_raw_fd();
        let others: Vec<Box<dyn Queue>> = vec![
            Box::new(Psync::new(fd, false, PsyncFlags::default()).unwrap()),
            Box::new(SyncIo::new(fd, SyncKind::Lseek).unwrap()),
        ];
        for b in others {
            let name = b.name();
            let mut q = WorkerQueue::new(b);
            assert!(!q.is_static(), "{name}");
            assert_eq!(q.name(), name);
            // Synchronous: performed inside `queue`, through the trait object.
            let mut buf = vec![0u8; 4096];
            match q.queue(&read(5, buf.as_mut_ptr())).unwrap() {
                Queued::Done(c) => assert_eq!((c.slot, c.result), (5, 4096), "{name}"),
                other => panic!("{name}: {other:?}"),
            }
            assert_eq!(buf, vec![7u8; 4096], "{name}");
        }
    }
}
