//! The granted extent locks of one OST object, indexed by where they start.
//!
//! Shared-file random writers leave thousands of granted locks on an object (scale-1000's
//! `ior-random`: about 1,750 per stripe), and every lock request, grant and cancel asks which of
//! them overlap some pages. A list scanned whole made those questions cost as much as the locks
//! held; here they look only near the pages asked about: the locks are kept by start page, and
//! no lock is longer than the longest one held, so one that overlaps [start, end] starts at most
//! that far before `start`. (While a lock spans the whole object, as a lone client's does, a
//! query looks at every lock before `end`, as the list did; such an object holds few.)
//!
//! Each lock also keeps the order it was granted in (the key's second part): where the order of
//! locks matters (the callbacks sent for one request), the callers sort by it, so the simulation
//! is the same as with a list kept in grant order.

use std::collections::{BTreeMap, BTreeSet};

use crate::dlm::Lock;

/// Up to this many locks, a query looks at every one.
const SMALL: usize = 8;

/// Where a lock lies in a [`LockSet`]: its start page, its place in the grant order, and its slot.
pub type LockKey = (u64, u64, u32);

#[derive(Clone, Debug, Default)]
pub struct LockSet {
    /// The locks, each in a slot that stays its own until it goes: a thread keeps the slot of
    /// the lock that last covered it (`Thread::lock_hint`) and looks there first.
    slots: Vec<Option<Lock>>,
    /// Slots free for the next locks.
    free: Vec<u32>,
    /// Every lock's key, by start page.
    by_start: BTreeSet<LockKey>,
    /// How many locks have each length (`end - start`): the last is the longest.
    lengths: BTreeMap<u64, u32>,
    /// How many are write locks.
    writes: usize,
    /// Grant order of the next lock.
    next_seq: u64,
}

impl LockSet {
    pub fn len(&self) -> usize {
        self.by_start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_start.is_empty()
    }

    /// How many write locks it holds.
    pub fn writes(&self) -> usize {
        self.writes
    }

    /// Every lock, in no particular order.
    pub fn iter(&self) -> std::iter::Flatten<std::slice::Iter<'_, Option<Lock>>> {
        self.slots.iter().flatten()
    }

    /// A lock granted now (after every lock already here).
    pub fn push(&mut self, lock: Lock) {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(None);
                (self.slots.len() - 1) as u32
            }
        };
        self.slots[slot as usize] = Some(lock);
        self.by_start.insert((lock.start, self.next_seq, slot));
        self.next_seq += 1;
        *self.lengths.entry(lock.end - lock.start).or_default() += 1;
        self.writes += usize::from(lock.write);
    }

    /// The lock in slot `slot`, if one is.
    pub fn at(&self, slot: u32) -> Option<&Lock> {
        self.slots.get(slot as usize).and_then(Option::as_ref)
    }

    fn lock(&self, key: &LockKey) -> &Lock {
        self.slots[key.2 as usize].as_ref().expect("a key's slot holds its lock")
    }

    /// The length (`end - start`) of the longest lock held: none that starts before page `p - it`
    /// reaches page `p`.
    fn longest(&self) -> u64 {
        self.lengths.last_key_value().map_or(0, |(&len, _)| len)
    }

    /// The locks that overlap pages [start, end] (start <= end), by start page, with their keys.
    pub fn overlapping(&self, start: u64, end: u64) -> impl Iterator<Item = (LockKey, &Lock)> {
        // most objects hold a lock or two: a look at each costs less than the searches of a range
        let near = if self.by_start.len() <= SMALL {
            self.by_start.range(..)
        } else {
            let from = start.saturating_sub(self.longest()).min(end);
            self.by_start.range((from, 0, 0)..=(end, u64::MAX, u32::MAX))
        };
        near.map(|k| (*k, self.lock(k))).filter(move |(_, l)| l.start <= end && l.end >= start)
    }

    /// The locks that start after page `page`, nearest first.
    pub fn starting_after(&self, page: u64) -> impl Iterator<Item = &Lock> {
        let range = page.checked_add(1).map(|from| self.by_start.range((from, 0, 0)..));
        range.into_iter().flatten().map(|k| self.lock(k))
    }

    /// Remove the lock at `key`; returns it.
    pub fn remove(&mut self, key: LockKey) -> Option<Lock> {
        if !self.by_start.remove(&key) {
            return None;
        }
        let lock = self.slots[key.2 as usize].take().expect("a key's slot holds its lock");
        self.free.push(key.2);
        let len = lock.end - lock.start;
        let n = self.lengths.get_mut(&len).expect("the length of a lock held");
        *n -= 1;
        if *n == 0 {
            self.lengths.remove(&len);
        }
        self.writes -= usize::from(lock.write);
        Some(lock)
    }

    /// The keys of the locks equal to `lock`, in grant order.
    fn equal(&self, lock: &Lock) -> impl Iterator<Item = LockKey> + '_ {
        let lock = *lock;
        self.by_start.range((lock.start, 0, 0)..=(lock.start, u64::MAX, u32::MAX)).copied().filter(move |k| *self.lock(k) == lock)
    }

    /// Remove every lock equal to `lock`; returns how many.
    pub fn remove_equal(&mut self, lock: &Lock) -> usize {
        let keys: Vec<LockKey> = self.equal(lock).collect();
        for &k in &keys {
            self.remove(k);
        }
        keys.len()
    }

    /// The first lock equal to `lock` in grant order, to change in place (its start page and
    /// length must stay).
    pub fn find_equal_mut(&mut self, lock: &Lock) -> Option<&mut Lock> {
        let key = self.equal(lock).next()?;
        self.slots[key.2 as usize].as_mut()
    }
}

impl FromIterator<Lock> for LockSet {
    /// The locks, granted in the order given.
    fn from_iter<I: IntoIterator<Item = Lock>>(locks: I) -> Self {
        let mut set = LockSet::default();
        for lock in locks {
            set.push(lock);
        }
        set
    }
}

impl<'a> IntoIterator for &'a LockSet {
    type Item = &'a Lock;
    type IntoIter = std::iter::Flatten<std::slice::Iter<'a, Option<Lock>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(client: u32, start: u64, end: u64) -> Lock {
        Lock { client, start, end, write: true, cancelling: false }
    }

    /// What a list scanned whole finds: the reference every query is checked against.
    fn scan(locks: &[Lock], start: u64, end: u64) -> Vec<Lock> {
        let mut v: Vec<Lock> = locks.iter().copied().filter(|l| l.start <= end && l.end >= start).collect();
        v.sort_by_key(|l| (l.start, l.end, l.client));
        v
    }

    #[test]
    fn queries_find_what_a_whole_scan_finds() {
        // a deterministic mix of short, long and whole-object locks, pushed and removed
        let mut set = LockSet::default();
        let mut list: Vec<Lock> = Vec::new();
        let mut x = 12345u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for step in 0..3000 {
            let r = next();
            if r % 5 < 3 || list.is_empty() {
                let start = next() % 10_000;
                let len = match next() % 10 {
                    0 => u64::MAX - start, // to the object's end
                    1..=2 => next() % 5_000,
                    _ => next() % 64,
                };
                let l = Lock { write: next() % 3 > 0, ..lock((next() % 4) as u32, start, start + len) };
                set.push(l);
                list.push(l);
            } else {
                let l = list.remove((next() % list.len() as u64) as usize);
                assert!(set.remove_equal(&l) >= 1);
                list.retain(|m| *m != l);
            }
            assert_eq!(set.len(), list.len());
            assert_eq!(set.writes(), list.iter().filter(|l| l.write).count());
            let (a, b) = (next() % 11_000, next() % 200);
            for (key, l) in set.overlapping(a, a + b) {
                assert_eq!(set.at(key.2), Some(l), "a key's slot holds its lock");
            }
            let mut got: Vec<Lock> = set.overlapping(a, a + b).map(|(_, l)| *l).collect();
            got.sort_by_key(|l| (l.start, l.end, l.client));
            assert_eq!(got, scan(&list, a, a + b), "step {step}: overlapping [{a}, {}]", a + b);
            let after: Vec<u64> = set.starting_after(a).map(|l| l.start).collect();
            let mut want: Vec<u64> = list.iter().filter(|l| l.start > a).map(|l| l.start).collect();
            want.sort_unstable();
            assert_eq!(after, want);
            assert_eq!(set.longest(), list.iter().map(|l| l.end - l.start).max().unwrap_or(0));
        }
    }

    #[test]
    fn equal_locks_go_together_and_a_found_lock_changes_in_place() {
        let mut set = LockSet::default();
        set.push(lock(1, 10, 20));
        set.push(lock(1, 10, 20));
        set.push(lock(2, 10, 30));
        set.find_equal_mut(&lock(2, 10, 30)).expect("held").cancelling = true;
        assert!(set.iter().any(|l| l.client == 2 && l.cancelling));
        assert_eq!(set.remove_equal(&lock(1, 10, 20)), 2);
        assert_eq!(set.len(), 1);
        // the longest lock left bounds the queries: the one of 20 pages went
        assert_eq!(set.overlapping(31, 40).count(), 0);
        assert_eq!(set.overlapping(30, 40).count(), 1);
    }
}
