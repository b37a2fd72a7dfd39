//! A set of page numbers (one client's cached pages of one file) as a sparse bitmap.
//!
//! The set is the same whatever represents it; this one answers the page cache's questions (how
//! many pages of a range were new, how many were removed, which sub-ranges are missing) in time
//! proportional to the range's length in 64-page words, with no search, where a tree of
//! intervals needed several descents of a tree that random 8 KiB writes grow to hundreds of
//! thousands of entries. Pages are grouped in blocks of 4,096 (16 MiB); a block is absent, full
//! (no bitmap kept) or partly present (a 512-byte bitmap).

const BLOCK_BITS: u32 = 12;
const BLOCK_PAGES: u64 = 1 << BLOCK_BITS;
const WORDS: usize = (BLOCK_PAGES / 64) as usize;

#[derive(Clone, Debug, Default)]
enum Slot {
    #[default]
    Empty,
    Full,
    Part(Box<Bits>),
}

#[derive(Clone, Debug)]
struct Bits {
    words: [u64; WORDS],
    count: u32,
}

/// Mask of bits [a, b] of a word (0 <= a <= b <= 63).
#[inline]
fn mask(a: u64, b: u64) -> u64 {
    (u64::MAX >> (63 - b)) & (u64::MAX << a)
}

#[derive(Clone, Debug, Default)]
pub struct PageSet {
    blocks: Vec<Slot>,
    count: u64,
}

impl PageSet {
    pub const fn new() -> PageSet {
        PageSet { blocks: Vec::new(), count: 0 }
    }

    /// The most memory the block map of one file of `bytes` can take (when its last page is
    /// cached): one slot per 16 MiB of file, whatever is cached.
    pub fn max_map_bytes(bytes: u64) -> u64 {
        (bytes / crate::model::PAGE / BLOCK_PAGES + 1).saturating_mul(std::mem::size_of::<Slot>() as u64)
    }

    /// Number of pages in the set.
    pub fn len(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Ask the CPU to fetch the bitmap word of page `p` now, so that an `insert` or `remove` of it
    /// some work later does not wait for memory: a random writer's next word is rarely in cache,
    /// and that wait was most of `insert`'s time (fivestream-mix). Changes nothing else.
    #[inline]
    pub fn prefetch(&self, p: u64) {
        #[cfg(target_arch = "x86_64")]
        if let Some(Slot::Part(bits)) = self.blocks.get((p >> BLOCK_BITS) as usize) {
            let word = &bits.words[((p & (BLOCK_PAGES - 1)) / 64) as usize];
            // SAFETY: a prefetch is a hint that never faults and reads nothing the program sees;
            // SSE, which it needs, is part of every x86-64 CPU.
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>((word as *const u64).cast())
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = p;
    }

    /// Add pages [s, e]; returns how many were not in the set.
    pub fn insert(&mut self, s: u64, e: u64) -> u64 {
        debug_assert!(s <= e);
        let (b0, b1) = (s >> BLOCK_BITS, e >> BLOCK_BITS);
        if b1 as usize >= self.blocks.len() {
            self.blocks.resize_with(b1 as usize + 1, Slot::default);
        }
        let mut added = 0;
        for b in b0..=b1 {
            let base = b << BLOCK_BITS;
            let lo = s.max(base) - base;
            let hi = e.min(base + BLOCK_PAGES - 1) - base;
            let slot = &mut self.blocks[b as usize];
            let whole = lo == 0 && hi == BLOCK_PAGES - 1;
            match slot {
                Slot::Full => {}
                Slot::Empty if whole => {
                    *slot = Slot::Full;
                    added += BLOCK_PAGES;
                }
                Slot::Part(bits) if whole => {
                    added += BLOCK_PAGES - bits.count as u64;
                    *slot = Slot::Full;
                }
                _ => {
                    if let Slot::Empty = slot {
                        *slot = Slot::Part(Box::new(Bits { words: [0; WORDS], count: 0 }));
                    }
                    let Slot::Part(bits) = slot else { unreachable!() };
                    let mut n = 0u64;
                    let (w0, w1) = ((lo / 64) as usize, (hi / 64) as usize);
                    for w in w0..=w1 {
                        let a = if w == w0 { lo % 64 } else { 0 };
                        let z = if w == w1 { hi % 64 } else { 63 };
                        let m = mask(a, z);
                        n += (m & !bits.words[w]).count_ones() as u64;
                        bits.words[w] |= m;
                    }
                    bits.count += n as u32;
                    added += n;
                    if bits.count as u64 == BLOCK_PAGES {
                        *slot = Slot::Full;
                    }
                }
            }
        }
        self.count += added;
        added
    }

    /// Remove pages [s, e]; returns how many were in the set.
    pub fn remove(&mut self, s: u64, e: u64) -> u64 {
        if self.count == 0 || s > e {
            return 0;
        }
        let b0 = s >> BLOCK_BITS;
        let b1 = (e >> BLOCK_BITS).min(self.blocks.len() as u64 - 1);
        let mut removed = 0;
        let mut b = b0;
        while b <= b1 {
            let base = b << BLOCK_BITS;
            let lo = s.max(base) - base;
            let hi = e.min(base + BLOCK_PAGES - 1) - base;
            let slot = &mut self.blocks[b as usize];
            let whole = lo == 0 && hi == BLOCK_PAGES - 1;
            match slot {
                Slot::Empty => {}
                Slot::Full if whole => {
                    *slot = Slot::Empty;
                    removed += BLOCK_PAGES;
                }
                Slot::Part(bits) if whole => {
                    removed += bits.count as u64;
                    *slot = Slot::Empty;
                }
                _ => {
                    if let Slot::Full = slot {
                        *slot = Slot::Part(Box::new(Bits { words: [u64::MAX; WORDS], count: BLOCK_PAGES as u32 }));
                    }
                    let Slot::Part(bits) = slot else { unreachable!() };
                    let mut n = 0u64;
                    let (w0, w1) = ((lo / 64) as usize, (hi / 64) as usize);
                    for w in w0..=w1 {
                        let a = if w == w0 { lo % 64 } else { 0 };
                        let z = if w == w1 { hi % 64 } else { 63 };
                        let m = mask(a, z);
                        n += (m & bits.words[w]).count_ones() as u64;
                        bits.words[w] &= !m;
                    }
                    bits.count -= n as u32;
                    removed += n;
                    if bits.count == 0 {
                        *slot = Slot::Empty;
                    }
                }
            }
            b += 1;
        }
        self.count -= removed;
        removed
    }

    /// Whether page `p` is in the set.
    pub fn contains(&self, p: u64) -> bool {
        match self.blocks.get((p >> BLOCK_BITS) as usize) {
            None | Some(Slot::Empty) => false,
            Some(Slot::Full) => true,
            Some(Slot::Part(bits)) => {
                let i = p & (BLOCK_PAGES - 1);
                bits.words[(i / 64) as usize] >> (i % 64) & 1 == 1
            }
        }
    }

    /// The first page >= p and <= e that is (`present`) or is not (`!present`) in the set.
    fn next(&self, mut p: u64, e: u64, present: bool) -> Option<u64> {
        while p <= e {
            let b = p >> BLOCK_BITS;
            let base = b << BLOCK_BITS;
            let slot = self.blocks.get(b as usize);
            let found = match slot {
                None => {
                    if present {
                        return None;
                    }
                    Some(p)
                }
                Some(Slot::Empty) => (!present).then_some(p),
                Some(Slot::Full) => present.then_some(p),
                Some(Slot::Part(bits)) => {
                    let mut i = p - base;
                    let mut hit = None;
                    while i < BLOCK_PAGES {
                        let w = bits.words[(i / 64) as usize];
                        let w = if present { w } else { !w } >> (i % 64);
                        if w != 0 {
                            hit = Some(base + i + w.trailing_zeros() as u64);
                            break;
                        }
                        i = (i / 64 + 1) * 64;
                    }
                    hit
                }
            };
            if let Some(q) = found {
                return (q <= e).then_some(q);
            }
            p = base.checked_add(BLOCK_PAGES)?;
        }
        None
    }

    /// The first page of [s, e] in the set.
    pub fn first_in(&self, s: u64, e: u64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        self.next(s, e, true)
    }

    /// The maximal sub-ranges of [s, e] not in the set, in order.
    pub fn gaps(&self, s: u64, e: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut p = s;
        while p <= e {
            let Some(a) = self.next(p, e, false) else { break };
            let b = match self.next(a, e, true) {
                Some(q) => q - 1,
                None => e,
            };
            out.push((a, b));
            if b == u64::MAX {
                break;
            }
            p = b + 1;
        }
        out
    }

    /// The set as maximal intervals (for tests and debugging).
    pub fn intervals(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let end = (self.blocks.len() as u64) << BLOCK_BITS;
        let mut p = 0;
        while p < end {
            let Some(a) = self.next(p, end - 1, true) else { break };
            let b = match self.next(a, end - 1, false) {
                Some(q) => q - 1,
                None => end - 1,
            };
            out.push((a, b));
            p = b + 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intervals::{interval_gaps, interval_insert, interval_remove};
    use crate::rng::Rng;
    use std::collections::BTreeMap;

    /// Random inserts and removes agree with the interval map they replace, in what they return
    /// and in the set they leave.
    #[test]
    fn agrees_with_the_interval_map() {
        for seed in 0..40u64 {
            let mut rng = Rng::new(seed);
            let mut set = PageSet::new();
            let mut map: BTreeMap<u64, u64> = BTreeMap::new();
            let span = [100u64, 5_000, 20_000, 70_000][seed as usize % 4];
            for _ in 0..600 {
                let s = rng.below(span);
                let len = match rng.below(4) {
                    0 => 1 + rng.below(3),
                    1 => 1 + rng.below(64),
                    2 => 1 + rng.below(5000),
                    _ => 1 + rng.below(span),
                };
                let e = s + len - 1;
                match rng.below(3) {
                    0 | 1 => assert_eq!(set.insert(s, e), interval_insert(&mut map, s, e), "insert {s}-{e}"),
                    _ => assert_eq!(set.remove(s, e), interval_remove(&mut map, s, e), "remove {s}-{e}"),
                }
                let (gs, ge) = (rng.below(span), rng.below(span));
                let (gs, ge) = (gs.min(ge), gs.max(ge));
                assert_eq!(set.gaps(gs, ge), interval_gaps(&map, gs, ge), "gaps {gs}-{ge}");
                let first = map.range(..=ge).find(|(_, &b)| b >= gs).map(|(&a, _)| a.max(gs));
                assert_eq!(set.first_in(gs, ge), first, "first_in {gs}-{ge}");
                assert_eq!(set.len(), map.iter().map(|(a, b)| b - a + 1).sum::<u64>());
                assert_eq!(set.is_empty(), map.is_empty());
            }
            assert_eq!(set.intervals(), map.iter().map(|(&a, &b)| (a, b)).collect::<Vec<_>>());
        }
    }

    #[test]
    fn huge_ranges() {
        let mut set = PageSet::new();
        assert_eq!(set.remove(0, u64::MAX), 0);
        assert_eq!(set.insert(10, 20), 11);
        assert_eq!(set.gaps(0, u64::MAX), vec![(0, 9), (21, u64::MAX)]);
        assert_eq!(set.remove(15, u64::MAX), 6);
        assert_eq!(set.insert(0, 3 * BLOCK_PAGES - 1), 3 * BLOCK_PAGES - 5);
        assert_eq!(set.remove(5, u64::MAX), 3 * BLOCK_PAGES - 5);
        assert_eq!(set.intervals(), vec![(0, 4)]);
        assert!(set.contains(4) && !set.contains(5));
    }
}
