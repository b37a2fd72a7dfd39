//! The lock requests waiting at the OSTs, kept per object, in the order they came.
//!
//! Thousands of ranks writing at random into one shared file leave thousands of requests queued
//! (4,000 ranks of 64 KiB writes over 16 stripes: about 250 per object), and the lock queue asked
//! every question of all of them: which are to be looked at again, which came earlier on the
//! same object, which a grant or a cancel wakes. Each of those concerns one object, or only the
//! requests marked stale; here each object has its own list, and the stale requests an index of
//! their own, so a question looks only at the requests it is about.
//!
//! The order is that of a single queue: every request gets a sequence number when it comes, the
//! stale ones are looked at in that order, and each object's list keeps it, so the simulation is
//! the same as with one list of all requests.

use std::collections::BTreeMap;

use crate::dlm::Waiter;

/// An object: (file, stripe).
pub type ObjectKey = (u32, usize);

#[derive(Clone, Debug, Default)]
pub struct LockQueue {
    /// Each object's waiting requests, by sequence number (no empty list is kept).
    objects: BTreeMap<ObjectKey, Vec<Waiter>>,
    /// The requests marked stale (`Waiter::stale`), by sequence number.
    stale: BTreeMap<u64, ObjectKey>,
    /// Sequence number of the next request.
    next_seq: u64,
    len: usize,
}

impl LockQueue {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Queue a request behind every other; its `seq` is set here. Returns the sequence number.
    pub fn push(&mut self, mut w: Waiter) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        w.seq = seq;
        let key = (w.file, w.stripe);
        if w.stale {
            self.stale.insert(seq, key);
        }
        self.objects.entry(key).or_default().push(w);
        self.len += 1;
        seq
    }

    /// The requests waiting on one object, in the order they came.
    pub fn on_object(&self, file: u32, stripe: usize) -> &[Waiter] {
        self.objects.get(&(file, stripe)).map_or(&[], Vec::as_slice)
    }

    /// The first stale request with a sequence number `from` or above: (seq, file, stripe).
    pub fn next_stale(&self, from: u64) -> Option<(u64, u32, usize)> {
        self.stale.range(from..).next().map(|(&seq, &(file, stripe))| (seq, file, stripe))
    }

    /// Where request `seq` lies in its object's list (`on_object`).
    pub fn position(&self, file: u32, stripe: usize, seq: u64) -> usize {
        self.on_object(file, stripe).binary_search_by_key(&seq, |w| w.seq).expect("queued request")
    }

    /// Take request `seq` out of the queue.
    pub fn remove(&mut self, file: u32, stripe: usize, seq: u64) -> Waiter {
        let list = self.objects.get_mut(&(file, stripe)).expect("object with requests");
        let i = list.binary_search_by_key(&seq, |w| w.seq).expect("queued request");
        let w = list.remove(i);
        if list.is_empty() {
            self.objects.remove(&(file, stripe));
        }
        if w.stale {
            self.stale.remove(&seq);
        }
        self.len -= 1;
        w
    }

    /// Request `seq` has been looked at: not stale until something wakes it.
    pub fn set_looked_at(&mut self, file: u32, stripe: usize, seq: u64) {
        let i = self.position(file, stripe, seq);
        let w = &mut self.objects.get_mut(&(file, stripe)).expect("object with requests")[i];
        if w.stale {
            w.stale = false;
            self.stale.remove(&seq);
        }
    }

    /// Mark stale the requests on one object for which `wakes` is true.
    pub fn wake(&mut self, file: u32, stripe: usize, wakes: impl Fn(&Waiter) -> bool) {
        let Some(list) = self.objects.get_mut(&(file, stripe)) else { return };
        for w in list.iter_mut().filter(|w| !w.stale && wakes(w)) {
            w.stale = true;
            self.stale.insert(w.seq, (file, stripe));
        }
    }

    /// Every object's requests (objects in order of file and stripe).
    pub fn objects(&self) -> impl Iterator<Item = &[Waiter]> {
        self.objects.values().map(Vec::as_slice)
    }

    /// Every request, object by object.
    pub fn iter(&self) -> impl Iterator<Item = &Waiter> {
        self.objects.values().flatten()
    }

    /// The index agrees with the requests: each list on its object and in order, the stale index
    /// holding exactly the stale requests, the count right.
    pub fn check(&self) -> Result<(), String> {
        let mut stale = 0;
        let mut len = 0;
        for (&(file, stripe), list) in &self.objects {
            if list.is_empty() {
                return Err(format!("empty request list kept for file {file} stripe {stripe}"));
            }
            if !list.windows(2).all(|p| p[0].seq < p[1].seq) {
                return Err(format!("requests on file {file} stripe {stripe} out of order"));
            }
            for w in list {
                if (w.file, w.stripe) != (file, stripe) {
                    return Err(format!("request {} of file {} stripe {} listed on file {file} stripe {stripe}", w.seq, w.file, w.stripe));
                }
                if w.stale != (self.stale.get(&w.seq) == Some(&(file, stripe))) {
                    return Err(format!("request {} stale {} but {} the stale index", w.seq, w.stale, if w.stale { "not in" } else { "in" }));
                }
                stale += usize::from(w.stale);
                len += 1;
            }
        }
        if stale != self.stale.len() || len != self.len {
            return Err(format!("{} stale and {} requests counted, {stale} and {len} queued", self.stale.len(), self.len));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(file: u32, stripe: usize, start: u64, stale: bool) -> Waiter {
        Waiter { tid: 0, client: 0, file, stripe, start, end: start, write: true, stale, seq: 0 }
    }

    /// Against one list of every request, as the lock queue kept them before: the same requests
    /// on each object in the same order, and the stale ones in the order they came.
    #[test]
    fn agrees_with_one_list() {
        let mut rng = crate::rng::Rng::new(7);
        let mut q = LockQueue::default();
        let mut list: Vec<Waiter> = Vec::new();
        for step in 0..4000 {
            let file = rng.below(3) as u32;
            let stripe = rng.below(2) as usize;
            match rng.below(4) {
                0 | 1 => {
                    let stale = rng.below(2) == 0;
                    let seq = q.push(request(file, stripe, step, stale));
                    list.push(Waiter { seq, ..request(file, stripe, step, stale) });
                }
                2 => {
                    if let Some(i) = list.iter().position(|w| (w.file, w.stripe) == (file, stripe)) {
                        let w = list.remove(i);
                        assert_eq!(q.remove(file, stripe, w.seq).seq, w.seq);
                    }
                }
                _ => {
                    let odd = step % 2;
                    q.wake(file, stripe, |w| w.start % 2 == odd);
                    for w in list.iter_mut().filter(|w| (w.file, w.stripe) == (file, stripe) && w.start % 2 == odd) {
                        w.stale = true;
                    }
                    if let Some((seq, f, s)) = q.next_stale(0) {
                        q.set_looked_at(f, s, seq);
                        list.iter_mut().find(|w| w.seq == seq).expect("listed").stale = false;
                    }
                }
            }
            q.check().expect("consistent");
            for f in 0..3 {
                for s in 0..2 {
                    let expect: Vec<(u64, bool)> =
                        list.iter().filter(|w| (w.file, w.stripe) == (f, s)).map(|w| (w.seq, w.stale)).collect();
                    let got: Vec<(u64, bool)> = q.on_object(f, s).iter().map(|w| (w.seq, w.stale)).collect();
                    assert_eq!(got, expect, "step {step}");
                }
            }
            let mut stale = Vec::new();
            let mut from = 0;
            while let Some((seq, _, _)) = q.next_stale(from) {
                stale.push(seq);
                from = seq + 1;
            }
            assert_eq!(stale, list.iter().filter(|w| w.stale).map(|w| w.seq).collect::<Vec<_>>(), "step {step}");
            assert_eq!(q.len(), list.len());
        }
    }
}
