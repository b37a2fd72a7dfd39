//! The event queue: events leave in order of (time, sequence number), exactly as from a binary
//! heap ordered by that pair, but the queue is a radix heap, which suits a simulation's clock.
//!
//! A radix heap keeps its items in buckets by the highest bit in which an item's key differs
//! from the last minimum taken out; keys never go below that minimum (the clock does not go
//! back, and sequence numbers grow), so a push is an append and a pop only looks through the
//! lowest non-empty bucket, spreading it over lower buckets. Each item moves down a bucket at a
//! time at most, so it costs a few moves over its life instead of a binary heap's sift through
//! a tree of tens of thousands of events that does not fit in the CPU's caches.

/// (time << 64 | sequence number): the order events leave in.
type Key = u128;

#[derive(Debug)]
pub struct EventQueue<T> {
    buckets: Vec<Vec<(Key, T)>>,
    /// Bit i set: bucket i is not empty.
    nonempty: u128,
    /// Bucket 129 is not empty.
    top_nonempty: bool,
    /// Every key in the queue is >= `base`; bucket 0 holds items with key == base.
    base: Key,
    len: usize,
}

impl<T: Copy> Default for EventQueue<T> {
    fn default() -> Self {
        EventQueue::new()
    }
}

impl<T: Copy> EventQueue<T> {
    pub fn new() -> EventQueue<T> {
        EventQueue { buckets: (0..130).map(|_| Vec::new()).collect(), nonempty: 0, top_nonempty: false, base: 0, len: 0 }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn bucket_of(&self, key: Key) -> usize {
        (128 - (key ^ self.base).leading_zeros()) as usize
    }

    #[inline]
    fn put(&mut self, key: Key, item: T) {
        let b = self.bucket_of(key);
        self.buckets[b].push((key, item));
        if b < 128 {
            self.nonempty |= 1 << b;
        } else {
            self.top_nonempty = true;
        }
    }

    /// Queue `item` at time `t` with sequence number `seq` (unique, growing).
    pub fn push(&mut self, t: u64, seq: u64, item: T) {
        let key = (t as Key) << 64 | seq as Key;
        if key < self.base {
            // only after a look at the minimum that did not take it out (`pop_until`): start
            // the buckets again from the new minimum
            self.rebuild(key);
        }
        self.put(key, item);
        self.len += 1;
    }

    fn rebuild(&mut self, base: Key) {
        let mut all = Vec::with_capacity(self.len);
        for b in &mut self.buckets {
            all.append(b);
        }
        self.nonempty = 0;
        self.top_nonempty = false;
        self.base = base;
        for (k, item) in all {
            self.put(k, item);
        }
    }

    /// Make bucket 0 hold the minimum; false when the queue is empty.
    fn settle(&mut self) -> bool {
        if self.nonempty & 1 != 0 {
            return true;
        }
        let b = if self.nonempty != 0 {
            self.nonempty.trailing_zeros() as usize
        } else if self.top_nonempty {
            128
        } else {
            return false;
        };
        let mut items = std::mem::take(&mut self.buckets[b]);
        if b < 128 {
            self.nonempty &= !(1 << b);
        } else {
            self.top_nonempty = false;
        }
        self.base = items.iter().map(|&(k, _)| k).min().expect("non-empty bucket");
        for &(k, item) in &items {
            self.put(k, item);
        }
        // keep the allocation of the emptied bucket
        items.clear();
        if self.buckets[b].is_empty() {
            self.buckets[b] = items;
        }
        true
    }

    /// Take out the first item if its time is at most `limit`: (time, item).
    pub fn pop_until(&mut self, limit: u64) -> Option<(u64, T)> {
        if !self.settle() {
            return None;
        }
        if (self.base >> 64) as u64 > limit {
            return None;
        }
        let b0 = &mut self.buckets[0];
        // keys are unique (sequence numbers), so bucket 0 holds exactly one item
        let (key, item) = b0.pop().expect("settled");
        if b0.is_empty() {
            self.nonempty &= !1;
        }
        self.len -= 1;
        Some(((key >> 64) as u64, item))
    }

    /// The time of the first item, if any.
    pub fn peek_time(&mut self) -> Option<u64> {
        self.settle().then(|| (self.base >> 64) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// Pops come out in the order of a binary heap on (time, seq), with pushes in between, at
    /// times at or after the last pop, and looks at the minimum that leave it in.
    #[test]
    fn same_order_as_a_binary_heap() {
        for seed in 0..20 {
            let mut rng = Rng::new(seed);
            let mut q = EventQueue::new();
            let mut h = BinaryHeap::new();
            let (mut now, mut seq) = (0u64, 0u64);
            for step in 0..20_000u32 {
                let r = rng.below(10);
                if r < 5 || h.is_empty() {
                    let dt = match rng.below(4) {
                        0 => 0,
                        1 => rng.below(100),
                        2 => rng.below(1_000_000),
                        _ => rng.below(10_000_000_000),
                    };
                    seq += 1;
                    q.push(now + dt, seq, step);
                    h.push(Reverse((now + dt, seq, step)));
                } else if r < 9 {
                    let Reverse((t, _, s)) = h.pop().expect("non-empty");
                    assert_eq!(q.pop_until(u64::MAX), Some((t, s)));
                    now = t;
                } else {
                    // a run_until boundary: look, maybe leave it, and move the clock forward
                    let limit = now + rng.below(1_000_000);
                    let top = h.peek().map(|r| r.0 .0);
                    assert_eq!(q.peek_time(), top);
                    if top.is_some_and(|t| t > limit) {
                        assert_eq!(q.pop_until(limit), None);
                        now = limit;
                    }
                }
                assert_eq!(q.len(), h.len());
            }
        }
    }
}
