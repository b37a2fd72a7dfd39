//! LDLM extent locks on OST objects, as far as they shape client I/O: a client needs a lock
//! covering what it reads (PR) or writes (PW), one per cl_io iteration (a stripe chunk); the OST
//! grows the granted extent as Lustre's `ldlm_extent_policy()` does (the whole object when
//! nobody else uses it; `grown_extent`); a conflicting lock is called back: its holder writes the
//! dirty pages under it as high-priority RPCs (allowed past max_rpcs_in_flight), waits for the
//! writes and reads that hold it, drops its cached pages there that no other lock of its own
//! covers, and cancels it.

use crate::engine::{Ev, OtherRpc, Sim};
use crate::lockset::{LockKey, LockSet};
use crate::model::{File, OpKind, OpState, PAGE};
use crate::pageset::PageSet;
use crate::stats::OscCtr;

/// A granted extent lock on one object (pages, inclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lock {
    pub client: u32,
    pub start: u64,
    pub end: u64,
    pub write: bool,
    /// Called back: new I/O may not use it; it goes once its pages are written.
    pub cancelling: bool,
}

impl Lock {
    /// `client` may do I/O under this lock over object pages [start, end] (`write`: a write):
    /// it is the client's, not called back, covers them, and is of a strong enough mode.
    pub fn serves(&self, client: u32, start: u64, end: u64, write: bool) -> bool {
        self.client == client && !self.cancelling && self.start <= start && self.end >= end && (self.write || !write)
    }
}

/// A called-back lock, waiting for its holder's pages to be written.
#[derive(Clone, Copy, Debug)]
pub struct Callback {
    pub file: u32,
    pub stripe: usize,
    pub lock: Lock,
    /// The holder's OSC for the object (kept so that a look for one OSC's callbacks passes the
    /// others without reading their files).
    pub osc: u32,
    /// Something that may let it go happened since it was last looked at: it is new, or its
    /// holder was granted another lock on the object. (What else lets one go, its holder's
    /// I/O ending, looks at its OSC's callbacks itself: `Sim::release_callbacks`.)
    pub recheck: bool,
}

/// Which called-back locks `Sim::finish_callbacks` looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pending {
    All,
    /// Those of one holder OSC.
    Osc(u32),
    /// Those with `Callback::recheck`.
    Marked,
}

impl Callback {
    /// The object pages of file pages [first, last] (one stripe chunk of `f`), if they overlap
    /// this lock.
    fn overlap(&self, f: &File, first: u64, last: u64) -> Option<(u64, u64)> {
        let (stripe, start) = f.map(first);
        let end = start + (last - first);
        (stripe == self.stripe && start <= self.lock.end && end >= self.lock.start).then_some((start, end))
    }
}

/// A thread's lock request queued at the OST (granted in order).
#[derive(Clone, Copy, Debug)]
pub struct Waiter {
    pub tid: u32,
    pub client: u32,
    pub file: u32,
    pub stripe: usize,
    pub start: u64,
    pub end: u64,
    pub write: bool,
    /// Something that may change this request's outcome happened since it was last looked at:
    /// a conflicting lock was granted or cancelled, or an earlier conflicting request was
    /// granted (`Sim::wake_waiters`). A request not `stale` is blocked as it was, by locks
    /// already called back or by requests queued before it: looking again would do nothing.
    pub stale: bool,
    /// Its place in the order requests came in (set by `LockQueue::push`).
    pub seq: u64,
}

/// Parts of [start, end] outside every range of `covered`, into `out` (`tmp`: scratch).
fn uncovered(
    start: u64,
    end: u64,
    covered: impl Iterator<Item = (u64, u64)>,
    out: &mut Vec<(u64, u64)>,
    tmp: &mut Vec<(u64, u64)>,
) {
    out.clear();
    out.push((start, end));
    for (cs, ce) in covered {
        tmp.clear();
        for &(s, e) in out.iter() {
            if ce < s || cs > e {
                tmp.push((s, e));
                continue;
            }
            if cs > s {
                tmp.push((s, cs - 1));
            }
            if ce < e {
                tmp.push((ce + 1, e));
            }
        }
        std::mem::swap(out, tmp);
    }
}

pub(crate) fn conflicts(held: &Lock, client: u32, start: u64, end: u64, write: bool) -> bool {
    held.client != client && held.start <= end && start <= held.end && (write || held.write)
}

/// Whether an earlier request of another client in `waiters` conflicts with `waiters[i]` (the
/// OST grants conflicting requests in the order they came).
pub(crate) fn queued_behind(waiters: &[Waiter], i: usize) -> bool {
    let w = &waiters[i];
    waiters[..i].iter().any(|e| {
        e.file == w.file && e.stripe == w.stripe && e.client != w.client && e.start <= w.end && w.start <= e.end && (e.write || w.write)
    })
}

/// The extent the OST grants for request `w` (pages of its object), as Lustre's
/// `ldlm_extent_policy()` grows it:
/// - up to the nearest conflicting granted lock of another client on each side (the client's
///   own locks inside the new one merge into it rather than limit it);
/// - on a busy object (more than 4 conflicting granted locks, or more than 4 such waiting
///   requests) not downwards at all, since writers move forwards;
/// - up to the nearest waiting request on each side that does not overlap this one;
/// - with more than 32 conflicting locks, a write lock at most 32 MiB past its start
///   (`LDLM_MAX_GROWN_EXTENT`);
/// - then shrunk to the alignment of the request's own start and end.
///
/// `locks` are the object's granted locks, `waiters` the requests queued on it, in the order they
/// came (`w` not among them).
fn grown_extent(w: &Waiter, locks: &LockSet, waiters: &[Waiter]) -> (u64, u64) {
    const MAX_GROWN: u64 = (32 << 20) / PAGE;
    let cap = |conflicting: usize, hi: u64| if conflicting > 32 && w.write { hi.min((w.start + MAX_GROWN - 1).max(w.end)) } else { hi };
    // the locks of a mode that conflicts, the client's own among them
    let conflicting = if w.write { locks.len() } else { locks.writes() };
    let other = |l: &&Lock| l.client != w.client && (w.write || l.write);
    // the nearest conflicting lock of another client above the request, and below it (on a busy
    // object the lock does not grow downwards: no need to look)
    let mut hi = locks.starting_after(w.end).find(other).map_or(u64::MAX, |l| l.start - 1);
    let below = || locks.iter().filter(other).filter(|l| l.end < w.start).map(|l| l.end + 1).max().unwrap_or(0);
    let mut lo = if conflicting > 4 { w.start } else { below() };
    hi = cap(conflicting, hi);
    let mut waiting = 0;
    for e in waiters.iter().filter(|e| e.file == w.file && e.stripe == w.stripe) {
        // compatible requests of other clients do not matter; the client's own always do
        if !(w.write || e.write) && e.client != w.client {
            continue;
        }
        waiting += 1;
        if waiting > 4 {
            lo = w.start;
        }
        // outside what is left to grant, or overlapping the request (a ping-pong either way)
        if e.end < lo || e.start > hi || (e.start <= w.end && w.start <= e.end) {
            continue;
        }
        if e.end < w.start {
            lo = lo.max(e.end + 1);
        } else {
            hi = hi.min(e.start - 1);
        }
    }
    hi = cap(waiting, hi);
    // align to the request: the largest power of two (pages) dividing its start and its end + 1
    let align = ((w.end + 1) | w.start).max(1);
    let mask = (align & align.wrapping_neg()) - 1;
    lo = (lo.wrapping_sub(1) | mask).wrapping_add(1);
    hi = (hi.wrapping_add(1) & !mask).wrapping_sub(1);
    (lo, hi)
}

impl Sim {
    /// Make sure the current op of `tid` holds locks over what it touches; returns false when the
    /// thread must wait (the grant or the callbacks will wake it).
    pub(crate) fn ensure_locks(&mut self, tid: u32) -> bool {
        let th = &self.threads[tid as usize];
        let op = th.op.as_ref().expect("op");
        if op.locked {
            return true;
        }
        let (client, file, write) = (th.client, op.file as usize, op.kind == OpKind::Write);
        // one cl_io iteration: a write locks what it copies next, a read the stripe chunk it
        // reads next (`lov_io_rw_iter_init()`; it goes on over the chunks its client holds
        // locks on, `start_read`)
        let (first, last) = match op.kind {
            OpKind::Write => crate::engine::next_batch(op, &self.files[file]),
            OpKind::Read => crate::engine::read_iteration(op, &self.files[file]),
        };
        // each run of pages contiguous in one object must lie under one of our locks
        let mut p = first;
        let mut hint = th.lock_hint;
        while p <= last {
            let f = &self.files[file];
            let (stripe, start) = f.map(p);
            let run_end = last.min(f.chunk_end(p));
            let end = start + (run_end - p);
            let covers = |l: &Lock| l.serves(client, start, end, write);
            // the lock that covered this thread's last look usually covers this one: try it first
            let locks = &f.locks[stripe];
            let covered = locks.at(hint).is_some_and(covers) || {
                let at = locks.overlapping(start, end).find(|(_, l)| covers(l)).map(|(key, _)| key.2);
                hint = at.unwrap_or(hint);
                at.is_some()
            };
            if !covered {
                self.threads[tid as usize].op.as_mut().expect("op").state = OpState::WaitLock;
                self.queue_request(Waiter { tid, client, file: file as u32, stripe, start, end, write, stale: true, seq: 0 });
                self.process_lock_queue();
                return false;
            }
            p = run_end + 1;
        }
        let th = &mut self.threads[tid as usize];
        th.lock_hint = hint;
        th.op.as_mut().expect("op").locked = true;
        true
    }

    /// Queue lock request `w` at its OST, behind every other; its OSC and its thread count it.
    pub(crate) fn queue_request(&mut self, w: Waiter) {
        let osc_i = self.request_osc(&w);
        self.oscs[osc_i as usize].lock_requests += 1;
        self.threads[w.tid as usize].lock_requests += 1;
        self.lock_queue.push(w);
    }

    /// Take queued request `seq` on (file, stripe) out of the queue, to grant it.
    fn dequeue_request(&mut self, file: u32, stripe: usize, seq: u64) -> Waiter {
        let w = self.lock_queue.remove(file, stripe, seq);
        let osc_i = self.request_osc(&w);
        self.oscs[osc_i as usize].lock_requests -= 1;
        self.threads[w.tid as usize].lock_requests -= 1;
        w
    }

    /// The OSC a lock request comes from: its client's for the object's OST.
    pub(crate) fn request_osc(&self, w: &Waiter) -> u32 {
        self.clients[w.client as usize].oscs[self.files[w.file as usize].osts[w.stripe] as usize]
    }

    /// Whether a lock of `client`, not called back, covers file pages [first, last] (of one
    /// stripe chunk).
    pub(crate) fn own_lock_covers(&self, client: u32, file: usize, first: u64, last: u64) -> bool {
        let f = &self.files[file];
        let (stripe, start) = f.map(first);
        let end = start + (last - first);
        f.locks[stripe].overlapping(start, end).any(|(_, l)| l.serves(client, start, end, false))
    }

    /// The part of the read-ahead `runs` (file pages, in order) that lies under extent locks
    /// `client` holds: read-ahead enqueues no lock, so it stops at the first page no lock of the
    /// client covers (`ll_read_ahead_pages()`: `cl_io_read_ahead()` finds the lock over a page
    /// and its end, and read-ahead ends there when no lock covers the next page).
    pub(crate) fn under_own_locks(&self, client: u32, file: usize, runs: &[(u64, u64)]) -> Vec<(u64, u64)> {
        let f = &self.files[file];
        let mut out: Vec<(u64, u64)> = Vec::new();
        for &(s, e) in runs {
            let mut p = s;
            while p <= e {
                let (stripe, start) = f.map(p);
                // the first granted of the client's locks over the page
                let found = f.locks[stripe]
                    .overlapping(start, start)
                    .filter(|(_, l)| l.serves(client, start, start, false))
                    .min_by_key(|(key, _)| key.1);
                let Some((_, lock)) = found else { return out };
                let end = e.min(f.chunk_end(p)).min(p.saturating_add(lock.end - start)); // a lock may end at EOF (u64::MAX)
                crate::intervals::push_run(&mut out, p, end);
                p = end + 1;
            }
        }
        out
    }

    /// Cancel the called-back locks of OSC `osc_i` that nothing holds any more (its I/O under
    /// them just ended), and grant what they stood in the way of.
    pub(crate) fn release_callbacks(&mut self, osc_i: u32) {
        if self.finish_callbacks(Pending::Osc(osc_i)) > 0 {
            self.process_lock_queue();
        }
    }

    /// Grant queued requests in order; call back whatever stands in their way. Repeats while
    /// callbacks finish at once (holders with nothing dirty under the lock).
    pub(crate) fn process_lock_queue(&mut self) {
        loop {
            let cancelled = self.finish_callbacks(Pending::Marked);
            let (granted, called_back) = self.grant_pass();
            // a lock just called back may go at once (nothing dirty under it): go round again
            if cancelled == 0 && granted == 0 && called_back == 0 {
                return;
            }
        }
    }

    /// One pass over the queue's stale requests, in the order they came (those a grant in the
    /// pass wakes behind it included); returns how many requests were granted and how many locks
    /// were called back.
    fn grant_pass(&mut self) -> (usize, usize) {
        let (mut granted, mut called_back) = (0, 0);
        let mut from = 0;
        while let Some((seq, file, stripe)) = self.lock_queue.next_stale(from) {
            from = seq + 1;
            let on_object = self.lock_queue.on_object(file, stripe);
            let i = self.lock_queue.position(file, stripe, seq);
            let w = on_object[i];
            let locks = &self.files[w.file as usize].locks[w.stripe];
            let (mut blocked, mut live) = (false, false);
            for (_, l) in locks.overlapping(w.start, w.end).filter(|(_, l)| conflicts(l, w.client, w.start, w.end, w.write)) {
                blocked = true;
                live |= !l.cancelling;
            }
            // an earlier conflicting request of another client goes first (the OST's queue)
            if !blocked && !queued_behind(on_object, i) {
                let w = self.dequeue_request(file, stripe, seq);
                self.grant(w);
                granted += 1;
                continue;
            }
            // blocked by locks called back (now or before) or by earlier requests: it stays so
            // until one of those goes
            self.lock_queue.set_looked_at(file, stripe, seq);
            if live {
                // called back in the order they were granted
                let mut blocking: Vec<(LockKey, Lock)> = locks
                    .overlapping(w.start, w.end)
                    .filter(|(_, l)| !l.cancelling && conflicts(l, w.client, w.start, w.end, w.write))
                    .map(|(key, l)| (key, *l))
                    .collect();
                blocking.sort_unstable_by_key(|(key, _)| key.1);
                for (_, lock) in blocking {
                    self.call_back(w.file, w.stripe, lock);
                    called_back += 1;
                }
            }
        }
        (granted, called_back)
    }

    /// Mark the queued requests on the object that conflict with `lock` (of its client, extent
    /// and mode: a lock granted or cancelled, or a request granted) to be looked at again.
    fn wake_waiters(&mut self, file: u32, stripe: usize, lock: &Lock) {
        self.lock_queue.wake(file, stripe, |e| conflicts(lock, e.client, e.start, e.end, e.write));
    }

    /// Blocking AST: the holder writes its dirty pages under the lock at high priority.
    fn call_back(&mut self, file: u32, stripe: usize, lock: Lock) {
        let locks = &mut self.files[file as usize].locks[stripe];
        let Some(l) = locks.find_equal_mut(&lock) else { return };
        l.cancelling = true;
        let cancelling = *l;
        let f = &self.files[file as usize];
        let obj = f.obj_ids[stripe];
        let osc_i = self.clients[lock.client as usize].oscs[f.osts[stripe] as usize];
        self.callbacks.push(Callback { file, stripe, lock: cancelling, osc: osc_i, recheck: true });
        self.oscs[osc_i as usize].objects.entry(obj).or_default().make_hp(lock.start, lock.end);
        self.check_rpcs(osc_i);
    }

    /// Cancel every called-back lock (of those `which` says) whose pages are all on the OST;
    /// returns how many.
    pub(crate) fn finish_callbacks(&mut self, which: Pending) -> usize {
        let mut cancelled = 0;
        let rtt = 2 * self.cfg.cluster.net_latency_ns + self.cfg.cluster.oss_service_ns;
        let (mut own, mut tmp) = (Vec::new(), Vec::new());
        let mut i = 0;
        // the list's order, from position i on, as a scan of the whole list would find them (a
        // cancelled callback's place goes to the last one, looked at next if it is one of them)
        while let Some(at) = self.callbacks.next(which, i) {
            i = at;
            let cb = *self.callbacks.get(i);
            let osc_i = cb.osc;
            // looked at now: until something changes, it stays as this look leaves it
            if cb.recheck {
                self.callbacks.set_recheck(i, false);
            }
            let (dirty, writing) = self.pages_under_callback(&cb, &mut own, &mut tmp);
            if dirty || writing {
                // pages the op holding the lock dirtied since the callback go at high priority too
                if dirty {
                    let obj = self.files[cb.file as usize].obj_ids[cb.stripe];
                    let oc = self.oscs[osc_i as usize].objects.get_mut(&obj).expect("object");
                    for &(s, e) in &own {
                        oc.make_hp(s, e);
                    }
                    self.check_rpcs(osc_i);
                }
                i += 1;
                continue;
            }
            // a write system call that has not committed all its pages holds its locks (its
            // cl_io has them in use), and so do pages being read: the cancel waits for them
            if self.io_holds(&cb) {
                i += 1;
                continue;
            }
            self.callbacks.swap_remove(i);
            let f = &mut self.files[cb.file as usize];
            let removed = f.locks[cb.stripe].remove_equal(&cb.lock);
            if !f.removed {
                // (a removed file's locks left the count with it: `discard_file`)
                self.oscs[osc_i as usize].locks -= removed as u32;
            }
            self.wake_waiters(cb.file, cb.stripe, &cb.lock);
            // the LDLM_CANCEL RPC: `ldlm_cancel` and `req_waittime` at its reply
            self.send_other_rpc(osc_i, OtherRpc::Cancel, rtt);
            self.drop_cached_object_range(cb.lock.client as usize, cb.file, cb.stripe, cb.lock.start, cb.lock.end);
            cancelled += 1;
        }
        cancelled
    }

    /// Whether the holder of called-back lock `cb` has pages under it dirty (the parts of the lock
    /// no newer lock of its own covers, left in `own`; `tmp`: scratch) and whether it has pages
    /// in write RPCs there, which the cancel waits for.
    fn pages_under_callback(&self, cb: &Callback, own: &mut Vec<(u64, u64)>, tmp: &mut Vec<(u64, u64)>) -> (bool, bool) {
        let f = &self.files[cb.file as usize];
        let oc = self.oscs[cb.osc as usize].objects.get(&f.obj_ids[cb.stripe]);
        // pages dirtied under the holder's newer locks belong to those, not to this one
        let dirty = match oc {
            // (own parts lie inside the lock: without dirty pages there, none has any)
            Some(oc) if oc.has_pages_in(cb.lock.start, cb.lock.end) => {
                let newer = f.locks[cb.stripe]
                    .overlapping(cb.lock.start, cb.lock.end)
                    .filter(|(_, l)| l.client == cb.lock.client && !l.cancelling)
                    .map(|(_, l)| (l.start, l.end));
                uncovered(cb.lock.start, cb.lock.end, newer, own, tmp);
                own.iter().any(|&(s, e)| oc.has_pages_in(s, e))
            }
            _ => false,
        };
        // osc_cache_writeback_range(hp) marks every extent of the range oe_fsync_wait, those
        // already in RPCs too, and the cancel waits for them all (osc_cache_wait_range())
        let writing = oc.is_some_and(|oc| oc.hp_in_flight > 0 || oc.writeback.first_in(cb.lock.start, cb.lock.end).is_some());
        (dirty, writing)
    }

    /// A called-back lock that could go now (nothing of its holder's under it), if one is:
    /// `check_invariants` finds none, since whatever lets one go looks at it.
    pub(crate) fn callback_free_to_go(&self) -> Option<&Callback> {
        let (mut own, mut tmp) = (Vec::new(), Vec::new());
        self.callbacks.iter().find(|cb| {
            let (dirty, writing) = self.pages_under_callback(cb, &mut own, &mut tmp);
            !dirty && !writing && !self.io_holds(cb)
        })
    }

    /// I/O of the lock's client holds called-back lock `cb`, and its cancel waits for it:
    /// - a write system call with pages under the lock copied and not yet committed, or holding
    ///   its locks (`Op::locked`) for pages under it that it copies next, but for pages a newer
    ///   lock of the client covers (they are written under that one);
    /// - pages under the lock being read (the cancel owns each page before it discards it,
    ///   `osc_lock_discard_pages()`, and a page stays locked until its read is back), or a read
    ///   granted the lock that has not begun the cl_io iteration that holds it yet.
    ///
    /// One pass over the client's threads serves both: it runs for every called-back lock at
    /// every reply of its OSC.
    fn io_holds(&self, cb: &Callback) -> bool {
        let f = &self.files[cb.file as usize];
        let client = cb.lock.client;
        if f.on(client as usize).reading.iter().any(|(&s, &(e, _))| cb.overlap(f, s, e).is_some()) {
            return true;
        }
        self.clients[client as usize].threads.iter().any(|&tid| {
            let Some(op) = self.threads[tid as usize].op.as_ref().filter(|op| op.file == cb.file) else { return false };
            match op.kind {
                OpKind::Write => {
                    // one cl_io iteration: a run of pages in one object
                    let (first, last) = if op.cursor < op.copied {
                        (op.cursor / PAGE, (op.copied - 1) / PAGE)
                    } else if op.locked && op.copied < op.offset + op.len {
                        crate::engine::next_batch(op, f)
                    } else {
                        return false;
                    };
                    cb.overlap(f, first, last)
                        .is_some_and(|(start, end)| {
                            !f.locks[cb.stripe].overlapping(start, end).any(|(_, l)| l.serves(client, start, end, true))
                        })
                }
                OpKind::Read => {
                    let granted = op.locked && op.state == OpState::WaitLock;
                    granted && {
                        let (first, last) = crate::engine::read_iteration(op, f);
                        cb.overlap(f, first, last).is_some()
                    }
                }
            }
        })
    }

    /// Grant the request, grown as the OST grows it ([`grown_extent`]).
    fn grant(&mut self, w: Waiter) {
        let (lo, hi) = grown_extent(&w, &self.files[w.file as usize].locks[w.stripe], self.lock_queue.on_object(w.file, w.stripe));
        let locks = &mut self.files[w.file as usize].locks[w.stripe];
        // the client's own locks inside the new one, of the same or a weaker mode, merge into it
        let inside: Vec<LockKey> = locks
            .overlapping(lo, hi)
            .filter(|(_, l)| l.client == w.client && !l.cancelling && l.start >= lo && l.end <= hi && (w.write || !l.write))
            .map(|(key, _)| key)
            .collect();
        for &key in &inside {
            locks.remove(key);
        }
        let merged = inside.len() as u32;
        let lock = Lock { client: w.client, start: lo, end: hi, write: w.write, cancelling: false };
        locks.push(lock);
        // a called-back lock of the client on this object may go now: the pages and the I/O
        // the new lock covers are no longer held under the old one
        self.callbacks.mark_holder(w.file, w.stripe, w.client);
        // requests the new lock conflicts with must call it back; those queued behind this one
        // for its extent may go now (the lock covers the request, so they conflict with it too)
        self.wake_waiters(w.file, w.stripe, &lock);
        let c = &self.cfg.cluster;
        let rtt = 2 * c.net_latency_ns + c.oss_service_ns + c.client_rpc_ns;
        let osc_i = self.clients[w.client as usize].oscs[self.files[w.file as usize].osts[w.stripe] as usize];
        // the enqueue RPC: `ldlm_extent_enqueue` at once (ldlm_cli_enqueue()), `req_waittime`
        // at its reply
        self.oscs[osc_i as usize].counters_mut().stats.add(OscCtr::LdlmExtentEnqueue, 1);
        if !self.files[w.file as usize].removed {
            self.oscs[osc_i as usize].locks = self.oscs[osc_i as usize].locks + 1 - merged;
        }
        let back = self.send_other_rpc(osc_i, OtherRpc::Enqueue, rtt);
        // the op that asked holds a reference: its iteration proceeds even if the lock is called
        // back (an iteration needs one lock)
        let th = &mut self.threads[w.tid as usize];
        if let Some(op) = th.op.as_mut() {
            op.locked = th.lock_requests == 0;
        }
        self.schedule(back, Ev::Thread(w.tid));
    }

    /// Forget a client's cached pages under a cancelled lock (the cancel discards them), but
    /// those another lock of the client covers, not called back itself: they stay in the cache
    /// under that one (`check_and_discard_cb()` keeps a page `osc_dlmlock_at_pgoff()` finds a
    /// lock over).
    fn drop_cached_object_range(&mut self, client: usize, file: u32, stripe: usize, start: u64, end: u64) {
        let others = self.files[file as usize].locks[stripe]
            .overlapping(start, end)
            .filter(|(_, l)| l.client as usize == client && !l.cancelling)
            .map(|(_, l)| (l.start, l.end));
        let (mut runs, mut tmp) = (Vec::new(), Vec::new());
        uncovered(start, end, others, &mut runs, &mut tmp);
        for (s, e) in runs {
            self.drop_cached_object_run(client, file, stripe, s, e);
        }
    }

    /// Forget a client's cached pages in pages [start, end] of object `stripe` of `file`.
    fn drop_cached_object_run(&mut self, client: usize, file: u32, stripe: usize, start: u64, end: u64) {
        let f = &self.files[file as usize];
        let (n, sp) = (f.osts.len() as u64, f.stripe_size / PAGE);
        // read-ahead marks of the dropped pages (unless reads are in flight: their pages may
        // have been read ahead again) go with them; only to keep the marks small
        let size = f.size;
        let cl = &mut self.clients[client];
        if let Some(marks) = cl.ra_marks.get_mut(&file) {
            if f.on(client).reading.is_empty() {
                remove_object_range(marks, size, n, sp, stripe as u64, start, end);
                if marks.is_empty() {
                    cl.ra_marks.remove(&file);
                }
            }
        }
        if f.on(client).cache.is_empty() {
            return;
        }
        let cache = &mut self.files[file as usize].on_mut(client).cache;
        let removed = remove_object_range(cache, size, n, sp, stripe as u64, start, end);
        let cl = &mut self.clients[client];
        cl.cached_pages -= removed.min(cl.cached_pages);
    }
}

/// Remove from `set` (a client's pages of a file of `size` bytes striped over `n` objects in
/// chunks of `sp` pages) the pages in pages [start, end] of object `stripe`, which may run past
/// the object's end; returns how many were there.
fn remove_object_range(set: &mut PageSet, size: u64, n: u64, sp: u64, stripe: u64, start: u64, end: u64) -> u64 {
    if n == 1 {
        return set.remove(start, end);
    }
    let end = end.min(size.div_ceil(PAGE).div_ceil(n) + sp);
    remove_object_pages(set, n, sp, stripe, start, end)
}

/// Remove from `cache` (a client's pages of a file striped over `n` objects in chunks of `sp`
/// pages) the pages that lie in pages [start, end] of object `stripe`; returns how many were
/// cached.
fn remove_object_pages(cache: &mut PageSet, n: u64, sp: u64, stripe: u64, start: u64, end: u64) -> u64 {
    if start > end {
        return 0;
    }
    // walk the object's stripe chunks inside [start, end] and map them back to file pages
    let last_file_page = ((end / sp) * n + stripe) * sp + sp - 1;
    let mut removed = 0;
    let mut chunk = start / sp;
    while chunk * sp <= end {
        let (cs, ce) = ((chunk * sp).max(start), (chunk * sp + sp - 1).min(end));
        let file_chunk = chunk * n + stripe;
        let (fs, fe) = (file_chunk * sp + cs % sp, file_chunk * sp + ce % sp);
        // a lock may span the whole object: go straight to the next of this stripe's chunks
        // with a cached page rather than try every chunk
        match cache.first_in(fs, last_file_page) {
            None => break,
            Some(q) if q > fe => {
                let fc = q / sp;
                let next = if fc % n <= stripe { fc / n } else { fc / n + 1 };
                chunk = next.max(chunk + 1);
                continue;
            }
            Some(_) => removed += cache.remove(fs, fe),
        }
        chunk += 1;
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = (1 << 20) / PAGE;

    /// The walk that skips to cached chunks removes what removing every chunk in turn would.
    #[test]
    fn removing_an_objects_pages_skips_only_uncached_chunks() {
        use crate::rng::Rng;
        for seed in 0..200u64 {
            let mut rng = Rng::new(seed);
            let n = 1 + rng.below(8);
            let sp = 1 + rng.below(64);
            let stripe = rng.below(n);
            let mut cache = PageSet::new();
            for _ in 0..rng.below(20) {
                let s = rng.below(40 * n * sp);
                cache.insert(s, s + rng.below(3 * sp));
            }
            let mut naive = cache.clone();
            let start = rng.below(20 * sp);
            let end = start + rng.below(30 * sp);
            let mut expected = 0;
            for chunk in start / sp..=end / sp {
                let (cs, ce) = ((chunk * sp).max(start), (chunk * sp + sp - 1).min(end));
                let fc = chunk * n + stripe;
                expected += naive.remove(fc * sp + cs % sp, fc * sp + ce % sp);
            }
            assert_eq!(remove_object_pages(&mut cache, n, sp, stripe, start, end), expected, "seed {seed}");
            assert_eq!(cache.intervals(), naive.intervals(), "seed {seed}");
        }
    }

    fn request(client: u32, start: u64, end: u64) -> Waiter {
        Waiter { tid: 0, client, file: 0, stripe: 0, start, end, write: true, stale: true, seq: 0 }
    }

    fn lock(client: u32, start: u64, end: u64) -> Lock {
        Lock { client, start, end, write: true, cancelling: false }
    }

    fn set(locks: &[Lock]) -> LockSet {
        locks.iter().copied().collect()
    }

    /// Three clients on one object: client 0's lock over pages 0-9 is being called back, client
    /// 1 waits for pages 5-20 behind it and client 2 for pages 15-30 behind client 1 (not behind
    /// the lock). When the lock goes, client 1 is granted; its lock covers what client 2 waits
    /// for, so the grant must wake client 2's request, which calls that lock back and is granted
    /// once it goes. (No workload of pfsim has two clients ask for the same pages at once, so
    /// only this test takes the path.)
    #[test]
    fn a_grant_wakes_the_requests_queued_behind_it() {
        let mut sim = Sim::new(crate::config::Config::from_json(crate::config::TEST_THREE_CLIENTS).expect("config")).expect("sim");
        let gone = Lock { client: 0, start: 0, end: 9, write: true, cancelling: true };
        sim.files[0].locks[0] = LockSet::from_iter([gone]);
        let holder = sim.clients[0].oscs[sim.files[0].osts[0] as usize] as usize;
        sim.oscs[holder].locks = 1;
        let waiter = |tid: u32, start: u64, end: u64| Waiter { tid, client: tid, file: 0, stripe: 0, start, end, write: true, stale: false, seq: 0 };
        sim.queue_request(waiter(1, 5, 20));
        sim.queue_request(waiter(2, 15, 30));
        sim.check_invariants().expect("both requests are blocked as they were");
        // the cancel
        sim.files[0].locks[0] = LockSet::default();
        sim.oscs[holder].locks = 0;
        sim.wake_waiters(0, 0, &gone);
        sim.process_lock_queue();
        // client 1's lock had nothing dirty under it: it went at once, and client 2 got its own
        let locks = &sim.files[0].locks[0];
        assert_eq!(locks.iter().map(|l| (l.client, l.cancelling)).collect::<Vec<_>>(), vec![(2, false)], "{locks:?}");
        assert!(sim.lock_queue.is_empty() && sim.callbacks.is_empty());
        for client in [1, 2] {
            let osc = &sim.oscs[sim.clients[client].oscs[0] as usize];
            assert_eq!(osc.stat(OscCtr::LdlmExtentEnqueue).count, 1, "client {client} was granted once");
        }
        sim.check_invariants().expect("invariants");
    }

    /// A lock request waiting at the OST keeps its OSC's import from going idle, as any request
    /// on the import does (`ptlrpc_check_import_is_idle()`); once it is out of the queue, the
    /// import may go idle again.
    #[test]
    fn a_queued_lock_request_keeps_the_import_busy() {
        let mut sim = Sim::new(crate::config::Config::from_json(crate::config::TEST_THREE_CLIENTS).expect("config")).expect("sim");
        let osc = sim.clients[1].oscs[sim.files[0].osts[0] as usize];
        // nothing on the import for longer than its idle timeout
        sim.oscs[osc as usize].idle_timeout = 20;
        sim.now = 60_000_000_000;
        assert!(sim.import_is_idle(osc), "a quiet import with nothing queued is idle");
        sim.queue_request(Waiter { tid: 1, client: 1, file: 0, stripe: 0, start: 0, end: 9, write: true, stale: false, seq: 0 });
        assert_eq!(sim.oscs[osc as usize].lock_requests, 1);
        assert!(!sim.import_is_idle(osc), "a queued lock request is a request on the import");
        let other = sim.clients[2].oscs[sim.files[0].osts[0] as usize];
        sim.oscs[other as usize].idle_timeout = 20;
        assert!(sim.import_is_idle(other), "another client's import is not held by it");
        let w = sim.dequeue_request(0, 0, 0);
        assert_eq!((w.tid, sim.oscs[osc as usize].lock_requests, sim.threads[1].lock_requests), (1, 0, 0));
        assert!(sim.import_is_idle(osc));
    }

    /// A cancel discards the client's cached pages under the lock but those another lock of the
    /// client covers (`check_and_discard_cb()`); a lock called back itself keeps none.
    #[test]
    fn a_cancel_keeps_the_pages_another_lock_of_the_client_covers() {
        let mut sim = Sim::new(crate::config::Config::from_json(crate::config::TEST_THREE_CLIENTS).expect("config")).expect("sim");
        sim.files[0].on_mut(0).cache.insert(0, 99);
        sim.clients[0].cached_pages = 100;
        // the cancelled lock covered pages 0-59; a read lock of the client covers 40-69, and a
        // called-back one 0-9
        let read = Lock { client: 0, start: 40, end: 69, write: false, cancelling: false };
        let called_back = Lock { client: 0, start: 0, end: 9, write: true, cancelling: true };
        sim.files[0].locks[0] = LockSet::from_iter([read, called_back]);
        sim.drop_cached_object_range(0, 0, 0, 0, 59);
        assert_eq!(sim.files[0].on(0).cache.intervals(), vec![(40, 99)]);
        assert_eq!(sim.clients[0].cached_pages, 60);
    }

    #[test]
    fn a_lone_request_gets_the_whole_object() {
        assert_eq!(grown_extent(&request(0, 4 * MIB, 5 * MIB - 1), &LockSet::default(), &[]), (0, u64::MAX));
    }

    #[test]
    fn a_lock_grows_up_to_other_clients_locks_on_both_sides() {
        let locks = [lock(1, 0, 2 * MIB - 1), lock(2, 10 * MIB, 11 * MIB - 1), lock(0, 6 * MIB, 7 * MIB - 1)];
        // the client's own lock (6-7 MiB) does not limit it
        assert_eq!(grown_extent(&request(0, 4 * MIB, 5 * MIB - 1), &set(&locks), &[]), (2 * MIB, 10 * MIB - 1));
    }

    #[test]
    fn on_a_busy_object_a_lock_does_not_grow_downwards() {
        let mut locks: Vec<Lock> = (0..4).map(|i| lock(1 + i, i as u64 * MIB, (i as u64 + 1) * MIB - 1)).collect();
        let req = request(0, 8 * MIB, 9 * MIB - 1);
        assert_eq!(grown_extent(&req, &set(&locks), &[]), (4 * MIB, u64::MAX), "4 conflicting locks: still grows down");
        locks.push(lock(5, 20 * MIB, 21 * MIB - 1));
        assert_eq!(grown_extent(&req, &set(&locks), &[]), (8 * MIB, 20 * MIB - 1), "5: only upwards");
    }

    #[test]
    fn with_more_than_32_conflicting_locks_a_write_lock_grows_32_mib_at_most() {
        let locks: Vec<Lock> = (0..33).map(|i| lock(1 + i, i as u64 * MIB, (i as u64 + 1) * MIB - 1)).collect();
        let req = request(0, 100 * MIB, 101 * MIB - 1);
        assert_eq!(grown_extent(&req, &set(&locks), &[]), (100 * MIB, 132 * MIB - 1));
        let read = Waiter { write: false, ..req };
        let write_locks: Vec<Lock> = locks.iter().map(|l| Lock { write: true, ..*l }).collect();
        assert_eq!(grown_extent(&read, &set(&write_locks), &[]).1, u64::MAX, "the cap is for write locks");
    }

    #[test]
    fn waiting_requests_limit_growth_unless_they_overlap_the_request() {
        let req = request(0, 8 * MIB, 9 * MIB - 1);
        let below = request(1, 2 * MIB, 3 * MIB - 1);
        let above = request(2, 12 * MIB, 13 * MIB - 1);
        let overlapping = request(3, 8 * MIB, 8 * MIB + 15);
        assert_eq!(grown_extent(&req, &LockSet::default(), &[below, above, overlapping]), (3 * MIB, 12 * MIB - 1));
        // another client's compatible read request does not matter
        let reading = Waiter { write: false, ..req };
        let other_read = Waiter { write: false, ..above };
        assert_eq!(grown_extent(&reading, &LockSet::default(), &[other_read]), (0, u64::MAX));
        // the client's own waiting request does
        assert_eq!(grown_extent(&reading, &LockSet::default(), &[Waiter { client: 0, ..other_read }]), (0, 12 * MIB - 1));
    }

    #[test]
    fn the_grant_is_aligned_like_the_request() {
        // a 1 MiB-aligned request next to a lock ending mid-MiB: the grant starts at the next MiB
        let locks = [lock(1, 0, MIB + 9)];
        assert_eq!(grown_extent(&request(0, 4 * MIB, 5 * MIB - 1), &set(&locks), &[]), (2 * MIB, u64::MAX));
        // a one-page request is aligned to a page only
        assert_eq!(grown_extent(&request(0, 4 * MIB + 1, 4 * MIB + 1), &set(&locks), &[]), (MIB + 10, u64::MAX));
    }
}
