//! The event queue: events leave in order of (time, sequence number), exactly as from a binary
//! heap ordered by that pair, but the queue is a radix heap, which suits a simulation's clock.
//!
//! A radix heap keeps its items in buckets by where an item's key first differs from the last
//! minimum taken out (`base`); times never go below that minimum (the clock does not go back),
//! so a push is an append and a pop only looks through the lowest non-empty bucket, spreading it
//! over lower buckets. An item only ever moves to a lower bucket, so it costs a few moves over
//! its life instead of a binary heap's sift through a tree of tens of thousands of events that
//! does not fit in the CPU's caches. Keys are read in 4-bit digits: an item's bucket is the
//! highest digit in which its time differs from `base` and its own value of that digit (16
//! levels of 16), so an item moves at most once per digit, about a quarter as often as with one
//! bucket per bit. The buckets sort by time only: the items at the current minimum time wait in
//! a FIFO, which is their order of sequence numbers (an item pushed later has a larger one;
//! those that arrive from a bucket together are sorted).

use std::collections::VecDeque;

const DIGIT_BITS: u32 = 4;
const RADIX: usize = 1 << DIGIT_BITS;
const BUCKETS: usize = 64 / DIGIT_BITS as usize * RADIX;

#[derive(Debug)]
pub struct EventQueue<T> {
    /// The items at time `base`, in order of sequence number.
    current: VecDeque<(u64, T)>,
    /// Bucket `level * RADIX + d`: items whose time differs from `base` first in digit `level`
    /// (counted from the lowest), where their digit is `d` (greater than `base`'s). Buckets in
    /// index order hold ever later times.
    buckets: Vec<Vec<(u64, u64, T)>>,
    /// Bit i of word i / 64 set: bucket i is not empty.
    nonempty: [u64; BUCKETS / 64],
    /// Every time in the queue is >= `base`.
    base: u64,
    len: usize,
}

impl<T: Copy> Default for EventQueue<T> {
    fn default() -> Self {
        EventQueue::new()
    }
}

impl<T: Copy> EventQueue<T> {
    pub fn new() -> EventQueue<T> {
        EventQueue {
            current: VecDeque::new(),
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            nonempty: [0; BUCKETS / 64],
            base: 0,
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// File an item at a time other than `base`.
    #[inline]
    fn put(&mut self, t: u64, seq: u64, item: T) {
        let level = (63 - (t ^ self.base).leading_zeros()) / DIGIT_BITS;
        let digit = (t >> (level * DIGIT_BITS)) as usize & (RADIX - 1);
        let b = level as usize * RADIX + digit;
        self.buckets[b].push((t, seq, item));
        self.nonempty[b / 64] |= 1 << (b % 64);
    }

    /// Queue `item` at time `t` with sequence number `seq` (unique, larger than any queued).
    pub fn push(&mut self, t: u64, seq: u64, item: T) {
        if t < self.base {
            // only after a look at the minimum that did not take it out (`pop_until`): start
            // the buckets again from the new minimum
            self.rebuild(t);
        }
        if t == self.base {
            self.current.push_back((seq, item));
        } else {
            self.put(t, seq, item);
        }
        self.len += 1;
    }

    fn rebuild(&mut self, base: u64) {
        let old = self.base;
        let current: Vec<(u64, T)> = self.current.drain(..).collect();
        let mut all = Vec::new();
        for b in &mut self.buckets {
            all.append(b);
        }
        self.nonempty = [0; BUCKETS / 64];
        self.base = base;
        for (seq, item) in current {
            self.put(old, seq, item);
        }
        for (t, seq, item) in all {
            self.put(t, seq, item);
        }
    }

    /// Make `current` hold the first items; false when the queue is empty.
    fn settle(&mut self) -> bool {
        if !self.current.is_empty() {
            return true;
        }
        let Some(w) = self.nonempty.iter().position(|&m| m != 0) else { return false };
        let b = w * 64 + self.nonempty[w].trailing_zeros() as usize;
        self.nonempty[w] &= !(1 << (b % 64));
        let mut items = std::mem::take(&mut self.buckets[b]);
        self.base = items.iter().map(|&(t, _, _)| t).min().expect("non-empty bucket");
        for &(t, seq, item) in &items {
            if t == self.base {
                self.current.push_back((seq, item));
            } else {
                self.put(t, seq, item);
            }
        }
        if self.current.len() > 1 {
            self.current.make_contiguous().sort_unstable_by_key(|&(seq, _)| seq);
        }
        // keep the allocation of the emptied bucket
        items.clear();
        self.buckets[b] = items;
        true
    }

    /// Take out the first item if its time is at most `limit`: (time, item).
    pub fn pop_until(&mut self, limit: u64) -> Option<(u64, T)> {
        if !self.settle() || self.base > limit {
            return None;
        }
        let (_, item) = self.current.pop_front().expect("settled");
        self.len -= 1;
        Some((self.base, item))
    }

    /// The time of the first item, if any.
    pub fn peek_time(&mut self) -> Option<u64> {
        self.settle().then_some(self.base)
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
