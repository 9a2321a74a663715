//! A fixed-capacity FIFO ring: the scheduler's per-class queues and the null
//! device's command and completion queues.
//!
//! Capacity is fixed at construction so that enqueue/dequeue on the per-request
//! path never allocate; a full ring hands the value back instead of growing.

pub(crate) struct Ring<T: Copy> {
    buf: Box<[T]>,
    head: usize,
    len: usize,
}

impl<T: Copy> Ring<T> {
    /// `fill` only initialises the storage; it is never observed.
    pub(crate) fn new(capacity: usize, fill: T) -> Self {
        Ring {
            // At least one slot, so index arithmetic never divides by zero.
            buf: vec![fill; capacity.max(1)].into_boxed_slice(),
            head: 0,
            len: 0,
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub(crate) fn push(&mut self, v: T) -> Result<(), T> {
        let cap = self.buf.len();
        if self.len == cap {
            return Err(v);
        }
        let mut i = self.head + self.len;
        if i >= cap {
            i -= cap;
        }
        self.buf[i] = v;
        self.len += 1;
        Ok(())
    }

    #[inline]
    pub(crate) fn front(&self) -> Option<&T> {
        if self.len == 0 {
            None
        } else {
            Some(&self.buf[self.head])
        }
    }

    #[inline]
    pub(crate) fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = self.buf[self.head];
        self.head += 1;
        if self.head == self.buf.len() {
            self.head = 0;
        }
        self.len -= 1;
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::Ring;

    #[test]
    fn fifo_order_across_wraparound_and_full_ring_refuses() {
        let mut r = Ring::new(3, 0u32);
        assert_eq!(r.pop(), None);
        for round in 0..5u32 {
            for k in 0..3 {
                r.push(round * 10 + k).unwrap();
            }
            assert_eq!(r.push(99), Err(99), "a full ring must refuse, not grow");
            assert_eq!(r.front(), Some(&(round * 10)));
            for k in 0..3 {
                assert_eq!(r.pop(), Some(round * 10 + k));
            }
            assert!(r.is_empty());
            // Shift the head so the next round wraps around the end of the buffer.
            r.push(7).unwrap();
            assert_eq!(r.pop(), Some(7));
        }
    }
}
