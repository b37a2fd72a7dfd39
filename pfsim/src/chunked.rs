//! A FIFO queue kept in fixed-size blocks, with a push at the front for the few elements that
//! jump the queue.
//!
//! `VecDeque` doubles its buffer as it grows and copies every element into the new one. A
//! client's page-cache LRU holds one entry per range put in the cache and, on a node that
//! writes 8 KiB at random, grows by hundreds of thousands of entries in seconds without ever
//! evicting: the copies, and the fresh memory each larger buffer needs, were up to 14% of a
//! simulation's time (fivestream-mix). Blocks are allocated once and never copied.

use std::collections::VecDeque;

const BLOCK: usize = 4096;

#[derive(Clone, Debug)]
pub struct ChunkedDeque<T> {
    blocks: VecDeque<Vec<T>>,
    /// Elements already popped from the front block.
    head: usize,
    len: usize,
}

// (derived, it would ask T for a Default too)
impl<T> Default for ChunkedDeque<T> {
    fn default() -> Self {
        ChunkedDeque { blocks: VecDeque::new(), head: 0, len: 0 }
    }
}

impl<T: Copy> ChunkedDeque<T> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push_back(&mut self, v: T) {
        match self.blocks.back_mut() {
            Some(b) if b.len() < BLOCK => b.push(v),
            _ => {
                let mut b = Vec::with_capacity(BLOCK);
                b.push(v);
                self.blocks.push_back(b);
            }
        }
        self.len += 1;
    }

    /// Put `v` before every element: into the front block's popped room, or a new front block
    /// filled from its end (its unused front slots hold copies of `v` that are never read).
    pub fn push_front(&mut self, v: T) {
        match self.blocks.front_mut() {
            Some(b) if self.head > 0 => {
                self.head -= 1;
                b[self.head] = v;
            }
            _ => {
                self.blocks.push_front(vec![v; BLOCK]);
                self.head = BLOCK - 1;
            }
        }
        self.len += 1;
    }

    pub fn pop_front(&mut self) -> Option<T> {
        let b = self.blocks.front()?;
        let v = b[self.head];
        self.head += 1;
        self.len -= 1;
        if self.head == b.len() {
            // every element of the block has been popped (a block is full up to its end: the
            // last one ends where the queue does, a front block made by `push_front` is full)
            self.blocks.pop_front();
            self.head = 0;
        }
        Some(v)
    }

    /// The element `i` places from the front, if there is one. Every block but the last is full
    /// from the front block's `head` on, so the place is a division.
    pub fn get(&self, i: usize) -> Option<&T> {
        if i >= self.len {
            return None;
        }
        let at = self.head + i;
        self.blocks.get(at / BLOCK).and_then(|b| b.get(at % BLOCK))
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.blocks.iter().enumerate().flat_map(move |(i, b)| b[if i == 0 { self.head } else { 0 }..].iter())
    }

    /// Keep only the elements for which `keep` is true, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let mut out = ChunkedDeque::new();
        for v in self.iter() {
            if keep(v) {
                out.push_back(*v);
            }
        }
        *self = out;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_as_a_vecdeque() {
        let mut a = ChunkedDeque::new();
        let mut b = VecDeque::new();
        let mut x = 12345u64;
        for step in 0..40_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            match x >> 60 {
                0..=8 => {
                    a.push_back(step);
                    b.push_back(step);
                }
                9 | 10 => {
                    a.push_front(step);
                    b.push_front(step);
                }
                11..=14 => assert_eq!(a.pop_front(), b.pop_front()),
                _ => {
                    let m = (x >> 32) % 7;
                    a.retain(|v| v % 7 != m);
                    b.retain(|v| v % 7 != m);
                }
            }
            assert_eq!(a.len(), b.len());
            let i = (x >> 8) as usize % (b.len() + 2);
            assert_eq!(a.get(i), b.get(i), "element {i} of {}", b.len());
            if step % 997 == 0 {
                assert!(a.iter().eq(b.iter()));
            }
        }
        while let Some(v) = b.pop_front() {
            assert_eq!(a.pop_front(), Some(v));
        }
        assert!(a.is_empty() && a.pop_front().is_none());
    }
}
