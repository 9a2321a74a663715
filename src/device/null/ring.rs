//! Fixed-capacity FIFO used for the device's command and completion queues.
//!
//! Storage is allocated once in `new`; push/pop never allocate, which is what
//! keeps the null device's per-request path free of the heap.

pub(super) struct Ring<T: Copy> {
    buf: Box<[T]>,
    head: usize,
    len: usize,
}

impl<T: Copy> Ring<T> {
    pub(super) fn new(capacity: usize, fill: T) -> Ring<T> {
        Ring {
            buf: vec![fill; capacity.max(1)].into_boxed_slice(),
            head: 0,
            len: 0,
        }
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Returns false (and drops nothing) when full: callers size the ring so that
    /// this cannot happen and treat it as an accounting bug.
    #[inline]
    pub(super) fn push(&mut self, v: T) -> bool {
        if self.len == self.buf.len() {
            return false;
        }
        let mut i = self.head + self.len;
        if i >= self.buf.len() {
            i -= self.buf.len();
        }
        self.buf[i] = v;
        self.len += 1;
        true
    }

    #[inline]
    pub(super) fn front(&self) -> Option<&T> {
        if self.len == 0 {
            None
        } else {
            Some(&self.buf[self.head])
        }
    }

    #[inline]
    pub(super) fn pop(&mut self) -> Option<T> {
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
    use super::*;

    #[test]
    fn wraps_around_and_refuses_when_full() {
        let mut r = Ring::new(3, 0u32);
        assert!(r.push(1) && r.push(2) && r.push(3));
        assert!(!r.push(4), "a full ring must refuse");
        assert_eq!(r.pop(), Some(1));
        assert!(r.push(4));
        assert_eq!(r.front(), Some(&2));
        assert_eq!(
            [r.pop(), r.pop(), r.pop(), r.pop()],
            [Some(2), Some(3), Some(4), None]
        );
        assert!(r.is_empty());
    }
}
