//! The called-back locks waiting for their holders, with indexes of the ones each look needs.
//!
//! Thousands of ranks writing at random into one shared file keep thousands of locks called back
//! at once, and the lock queue looked at all of them to find the few it wanted: those of one OSC
//! (at each of its replies), those marked to look at again, those of one holder on one object
//! (at each grant). The list stays as it was, a vector from which a cancelled lock goes by
//! `swap_remove` (the order the looks go in depends on that, and the order of what a cancel sends
//! on it); beside it, sets of positions find the ones a look is about, and move with them.

use std::collections::BTreeSet;

use crate::dlm::{Callback, Pending};

#[derive(Clone, Debug, Default)]
pub struct CallbackList {
    items: Vec<Callback>,
    /// Positions of the callbacks with `recheck` set.
    marked: BTreeSet<usize>,
    /// (holder OSC, position) of every callback.
    by_osc: BTreeSet<(u32, usize)>,
    /// (file, stripe, holder client, position) of every callback.
    by_holder: BTreeSet<(u32, usize, u32, usize)>,
}

impl CallbackList {
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// How many have `recheck` set.
    pub fn marked(&self) -> usize {
        self.marked.len()
    }

    pub fn get(&self, i: usize) -> &Callback {
        &self.items[i]
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Callback> {
        self.items.iter()
    }

    pub fn push(&mut self, cb: Callback) {
        let i = self.items.len();
        self.items.push(cb);
        self.index(i);
    }

    /// Take the callback at `i` out; the last takes its place (`Vec::swap_remove`).
    pub fn swap_remove(&mut self, i: usize) -> Callback {
        let last = self.items.len() - 1;
        self.unindex(i);
        if i != last {
            self.unindex(last);
        }
        let cb = self.items.swap_remove(i);
        if i != last {
            self.index(i);
        }
        cb
    }

    /// Set or clear `recheck` of the callback at `i`.
    pub fn set_recheck(&mut self, i: usize, on: bool) {
        self.items[i].recheck = on;
        if on {
            self.marked.insert(i);
        } else {
            self.marked.remove(&i);
        }
    }

    /// Mark every callback of `client`'s on one object to be looked at again.
    pub fn mark_holder(&mut self, file: u32, stripe: usize, client: u32) {
        let at: Vec<usize> =
            self.by_holder.range((file, stripe, client, 0)..=(file, stripe, client, usize::MAX)).map(|k| k.3).collect();
        for i in at {
            self.set_recheck(i, true);
        }
    }

    /// The first position `from` or after of a callback that `which` looks at.
    pub fn next(&self, which: Pending, from: usize) -> Option<usize> {
        match which {
            Pending::All => (from < self.items.len()).then_some(from),
            Pending::Osc(o) => self.by_osc.range((o, from)..=(o, usize::MAX)).next().map(|k| k.1),
            Pending::Marked => self.marked.range(from..).next().copied(),
        }
    }

    fn index(&mut self, i: usize) {
        let cb = &self.items[i];
        if cb.recheck {
            self.marked.insert(i);
        }
        self.by_osc.insert((cb.osc, i));
        self.by_holder.insert((cb.file, cb.stripe, cb.lock.client, i));
    }

    fn unindex(&mut self, i: usize) {
        let cb = &self.items[i];
        self.marked.remove(&i);
        self.by_osc.remove(&(cb.osc, i));
        self.by_holder.remove(&(cb.file, cb.stripe, cb.lock.client, i));
    }

    /// The indexes agree with the list.
    pub fn check(&self) -> Result<(), String> {
        let n = self.items.len();
        if self.by_osc.len() != n || self.by_holder.len() != n {
            return Err(format!("{n} callbacks, {} and {} indexed", self.by_osc.len(), self.by_holder.len()));
        }
        let marked: BTreeSet<usize> = (0..n).filter(|&i| self.items[i].recheck).collect();
        if marked != self.marked {
            return Err(format!("{} callbacks marked to look at again, {} indexed", marked.len(), self.marked.len()));
        }
        for (i, cb) in self.items.iter().enumerate() {
            if !self.by_osc.contains(&(cb.osc, i)) || !self.by_holder.contains(&(cb.file, cb.stripe, cb.lock.client, i)) {
                return Err(format!("callback {i} ({:?}) not indexed where it is", cb.lock));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dlm::Lock;

    fn callback(rng: &mut crate::rng::Rng) -> Callback {
        let lock = Lock { client: rng.below(3) as u32, start: 0, end: rng.below(1000), write: true, cancelling: true };
        Callback { file: rng.below(2) as u32, stripe: rng.below(2) as usize, lock, osc: rng.below(4) as u32, recheck: rng.below(2) == 0 }
    }

    /// Each look finds, one after another, the callbacks a whole scan of the list would, while
    /// callbacks come, go by `swap_remove` during the look, and get marked.
    #[test]
    fn looks_find_what_a_scan_finds() {
        let mut rng = crate::rng::Rng::new(11);
        let mut list = CallbackList::default();
        let mut plain: Vec<Callback> = Vec::new();
        for step in 0..3000 {
            match rng.below(3) {
                0 => {
                    let cb = callback(&mut rng);
                    list.push(cb);
                    plain.push(cb);
                }
                1 => {
                    let (file, stripe, client) = (rng.below(2) as u32, rng.below(2) as usize, rng.below(3) as u32);
                    list.mark_holder(file, stripe, client);
                    for cb in plain.iter_mut().filter(|cb| cb.file == file && cb.stripe == stripe && cb.lock.client == client) {
                        cb.recheck = true;
                    }
                }
                _ => {
                    let which = match rng.below(3) {
                        0 => Pending::All,
                        1 => Pending::Osc(rng.below(4) as u32),
                        _ => Pending::Marked,
                    };
                    // a look that unmarks what it sees and takes out every other one it sees
                    let (mut i, mut j, mut k) = (0, 0, 0);
                    loop {
                        // the scan of the plain list
                        while j < plain.len()
                            && !match which {
                                Pending::All => true,
                                Pending::Osc(o) => plain[j].osc == o,
                                Pending::Marked => plain[j].recheck,
                            }
                        {
                            j += 1;
                        }
                        let found = list.next(which, i);
                        assert_eq!(found, (j < plain.len()).then_some(j), "step {step}");
                        let Some(at) = found else { break };
                        i = at;
                        list.set_recheck(i, false);
                        plain[j].recheck = false;
                        k += 1;
                        if k % 2 == 0 {
                            list.swap_remove(i);
                            plain.swap_remove(j);
                        } else {
                            i += 1;
                            j += 1;
                        }
                    }
                }
            }
            list.check().expect("consistent");
            assert_eq!(list.iter().map(|cb| (cb.osc, cb.lock.end, cb.recheck)).collect::<Vec<_>>(),
                plain.iter().map(|cb| (cb.osc, cb.lock.end, cb.recheck)).collect::<Vec<_>>(), "step {step}");
        }
    }
}
