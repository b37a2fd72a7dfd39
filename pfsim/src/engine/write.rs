//! The write path: a write system call copies its pages into the page cache, batch by batch,
//! and commits each batch into the OSCs' dirty extents (aligned to `max_pages_per_rpc` in
//! object space), with admission against `max_dirty_mb` and the grant,
//! the node-wide dirty limit, fsync, and the kernel flusher.

use super::*;

impl Sim {
    /// The write system call copies its next pages into the page cache (`next_batch`), under
    /// the locks `ensure_locks` took for them. The copy takes the thread's core; its pages are
    /// committed when it ends (`continue_write`).
    pub(super) fn start_copy(&mut self, tid: u32) {
        let th = &self.threads[tid as usize];
        let client = th.client as usize;
        let op = th.op.as_ref().expect("write op");
        let first = op.copied == op.offset;
        let (page, last) = next_batch(op, &self.files[op.file as usize]);
        let copied = (op.offset + op.len).min((last + 1) * PAGE);
        let pages = ceil_div(copied, PAGE) - page;
        let c = &self.cfg.cluster;
        let cost = pages * c.client_write_page_ns + if first { c.client_syscall_ns } else { 0 };
        let (core, start) = self.free_core(client);
        let t = start + cost;
        self.clients[client].app_cores.book(core, t);
        let op = self.threads[tid as usize].op.as_mut().expect("write op");
        (op.copied, op.state, op.ready_at) = (copied, OpState::Copy, t);
        self.schedule(t, Ev::Thread(tid));
    }

    /// Commit what the write has copied into the OSCs' cache, window by window
    /// (`vvp_io_write_commit()` -> `osc_queue_async_io()`); block on the first OSC without
    /// dirty or grant space. Then copy the next pages, or return true: the write is over.
    pub(super) fn continue_write(&mut self, tid: u32) -> bool {
        let th = &self.threads[tid as usize];
        let op = th.op.clone().expect("write op");
        let client = th.client as usize;
        let file = op.file as usize;
        let end = op.copied;
        let mut cursor = op.cursor;
        while cursor < end {
            let page = cursor / PAGE;
            let last_page = (end - 1) / PAGE;
            let f = &self.files[file];
            f.on(client).cache.prefetch(page); // inserted below, after the admission's tree work
            let (stripe, obj_page) = f.map(page);
            let osc_i = self.clients[client].oscs[f.osts[stripe] as usize];
            let obj = f.obj_ids[stripe];
            let osc = &self.oscs[osc_i as usize];
            let mppr = osc.mppr;
            let window_end = obj_page - obj_page % mppr + mppr - 1;
            let run_end_file = last_page.min(f.chunk_end(page)).min(page + (window_end - obj_page));
            let mut n = run_end_file - page + 1;
            // a window larger than the dirty room is admitted in parts (Lustre admits page by page)
            let cl = &self.clients[client];
            let room = osc
                .max_dirty_pages
                .saturating_sub(osc.dirty_pages)
                .min(cl.global_max_dirty_pages.saturating_sub(cl.dirty_pages));
            if room > 0 && room < n {
                n = room;
            }
            // a page in a write RPC in flight cannot be written until its reply: write the
            // pages before it, then wait
            if let Some(wb) = osc.objects.get(&obj).and_then(|oc| oc.writeback.first_in(obj_page, obj_page + n - 1)) {
                if wb == obj_page {
                    let th = &mut self.threads[tid as usize];
                    let op = th.op.as_mut().expect("op");
                    op.cursor = cursor;
                    op.state = OpState::WaitCache;
                    self.oscs[osc_i as usize].writeback_waiters.push(tid);
                    return false;
                }
                n = wb - obj_page;
            }
            let run_end_file = page + n - 1;
            match self.admit(osc_i, obj, obj_page, obj_page + n - 1, op.file, client) {
                Admit::Ok => {}
                Admit::Wait => {
                    let th = &mut self.threads[tid as usize];
                    let op = th.op.as_mut().expect("op");
                    op.cursor = cursor;
                    op.state = OpState::WaitCache;
                    op.waits += 1;
                    self.oscs[osc_i as usize].cache_waiters.push(tid);
                    self.check_rpcs(osc_i);
                    return false;
                }
                Admit::Sync => {
                    // no grant can be had: this piece goes out synchronously, the thread waits
                    let th = &mut self.threads[tid as usize];
                    let o = th.op.as_mut().expect("op");
                    o.cursor = (run_end_file + 1) * PAGE;
                    o.state = OpState::WaitIo;
                    o.waits = 1;
                    self.add_dirty(osc_i, obj, obj_page, obj_page + n - 1, op.file, client, Some(tid));
                    self.check_rpcs(osc_i);
                    return false;
                }
            }
            self.insert_cached(client, op.file, page, run_end_file, osc_i);
            // the application's data replaces what read-ahead brought in
            self.clients[client].unmark_ra(op.file, page, run_end_file);
            cursor = (run_end_file + 1) * PAGE;
            cursor = cursor.min(end);
            self.check_rpcs(osc_i);
        }
        let o = self.threads[tid as usize].op.as_mut().expect("op");
        o.cursor = end;
        let done = end == o.offset + o.len;
        if !done {
            // the cl_io iteration is over and gives up its locks; the next takes its own
            o.locked = false;
        }
        // a lock called back while these pages were copied may go once they are on the OST
        // (`finish_callbacks` sends them at high priority)
        let (stripe, _) = self.files[file].map(op.cursor / PAGE); // a batch lies in one stripe chunk
        let osc_i = self.clients[client].oscs[self.files[file].osts[stripe] as usize];
        self.release_callbacks(osc_i);
        if done {
            return true;
        }
        if self.ensure_locks(tid) {
            self.start_copy(tid);
        }
        false
    }

    /// The core of `client` that is free first, and when the calling thread can start on it (now,
    /// unless every core is busy). The caller books the core until its CPU work is done.
    pub(super) fn free_core(&mut self, client: usize) -> (usize, u64) {
        let (core, free) = self.clients[client].app_cores.earliest();
        (core, free.max(self.now))
    }

    /// Pages [first, last] of object `obj` ask to become dirty on OSC `osc_i` (`osc_enter_cache`):
    /// with dirty room and grant they join its extents (`Ok`); otherwise the writer waits for this
    /// OSC's writes (`Wait`), or writes synchronously when it has none to wait for (`Sync`).
    pub(super) fn admit(&mut self, osc_i: u32, obj: u64, first: u64, last: u64, file: u32, client: usize) -> Admit {
        let osc = &self.oscs[osc_i as usize];
        if osc.max_dirty_pages == 0 {
            return Admit::Sync;
        }
        // one look at the extents around [first, last] serves the admission and the merge
        let mut near = std::mem::take(&mut self.near_buf);
        neighbours(&mut near, osc.objects.get(&obj), first, last);
        let (new_pages, new_ext) = count_new(&near, first, last, osc.mppr);
        let need_grant = new_pages * PAGE + new_ext * EXTENT_TAX;
        let cl = &self.clients[client];
        let over_dirty = osc.dirty_pages + new_pages > osc.max_dirty_pages
            || cl.dirty_pages + new_pages > cl.global_max_dirty_pages;
        // osc_enter_cache(): a page that cannot enter, for want of grant or of dirty room (this
        // OSC's or the node's), waits for this OSC's writes, and goes synchronously when it
        // has none to wait for
        let verdict = if osc.avail_grant >= need_grant && !(over_dirty && new_pages > 0) {
            self.merge_dirty(osc_i, obj, first, last, file, client, None, &near);
            Admit::Ok
        } else if osc.dirty_pages == 0 && osc.w_in_flight == 0 {
            Admit::Sync
        } else {
            Admit::Wait
        };
        self.near_buf = near;
        verdict
    }

    /// Dirty pages [first, last] of `obj` (one mppr window): merge into the extent tree.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn add_dirty(&mut self, osc_i: u32, obj: u64, first: u64, last: u64, file: u32, client: usize, sync: Option<u32>) {
        let mut near = std::mem::take(&mut self.near_buf);
        neighbours(&mut near, self.oscs[osc_i as usize].objects.get(&obj), first, last);
        self.merge_dirty(osc_i, obj, first, last, file, client, sync, &near);
        self.near_buf = near;
    }

    /// `add_dirty` with the extents touching [first-1, last+1] already found (`neighbours`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn merge_dirty(
        &mut self,
        osc_i: u32,
        obj: u64,
        first: u64,
        last: u64,
        file: u32,
        client: usize,
        sync: Option<u32>,
        near: &[(u64, Extent)],
    ) {
        let now = self.now;
        let osc = &mut self.oscs[osc_i as usize];
        let mppr = osc.mppr;
        let window_end = first - first % mppr + mppr - 1;
        let window_start = window_end + 1 - mppr;
        let oc = osc.objects.entry(obj).or_default();
        // extents touching [first-1, last+1] may merge: overlapping ones always, adjacent ones
        // only inside the same window with the same mppr (osc_extent_merge)
        let mut start = first;
        let mut end = last;
        let mut old_pages = 0;
        let mut born = now;
        let mut urgent = false;
        let mut ext_mppr = mppr;
        let mut wend = window_end;
        let mut merged = 0u64;
        let mut sync_waiter = sync;
        // the merged extent keeps its place in the tree when it starts where one of the merged
        // ones did (a write that extends or rewrites an extent): one update, not a removal and
        // an insertion
        let mut kept = None;
        for &(s, ref e) in near {
            let overlaps = s <= last && e.end >= first;
            let same_window = e.mppr == mppr && e.window_end == window_end && s >= window_start;
            if !overlaps && !same_window {
                continue;
            }
            if s <= first && kept.is_none() {
                kept = Some(s);
                oc.forget(s);
            } else {
                oc.remove(s).expect("present");
            }
            old_pages += e.end - s + 1;
            urgent |= e.urgent;
            start = start.min(s);
            end = end.max(e.end);
            born = born.min(e.born_ns);
            ext_mppr = ext_mppr.max(e.mppr);
            wend = wend.max(e.window_end);
            sync_waiter = sync_waiter.or(e.sync_waiter);
            merged += 1;
        }
        let new_pages = (end - start + 1) - old_pages;
        let ext = Extent { end, mppr: ext_mppr, window_end: wend, born_ns: born, urgent: urgent || sync.is_some(), file, sync_waiter };
        match kept {
            Some(s) => {
                debug_assert_eq!(s, start);
                oc.update(start, ext);
            }
            None => oc.insert(start, ext),
        }
        // grant: a page each, plus the extent tax for a new extent; merging returns taxes
        let taxes = 1i64 - merged as i64;
        let grant = (new_pages * PAGE) as i64 + taxes * EXTENT_TAX as i64;
        let before = osc.avail_grant;
        osc.avail_grant = (before as i64 - grant).max(0) as u64;
        // the dirty pages hold what the grant lost (osc_unreserve_grant(): cl_dirty_grant)
        osc.dirty_grant = (osc.dirty_grant as i64 + before as i64 - osc.avail_grant as i64).max(0) as u64;
        osc.dirty_pages += new_pages;
        osc.pending_w_pages += new_pages;
        self.clients[client].dirty_pages += new_pages;
        self.files[file as usize].on_mut(client).dirty_pages += new_pages;
    }

    /// The fsync after thread `tid`'s write: the write is counted, and its file's dirty pages go
    /// out as urgent RPCs. False if nothing of the file is dirty or in flight (no wait).
    pub(super) fn start_fsync(&mut self, tid: u32) -> bool {
        let th = &self.threads[tid as usize];
        let client = th.client as usize;
        let file = th.op.as_ref().expect("op").file as usize;
        let f = &self.files[file];
        let on = f.on(client);
        if on.dirty_pages == 0 && on.writes_in_flight == 0 {
            return false;
        }
        let oscs: Vec<(u32, u64)> =
            f.osts.iter().zip(&f.obj_ids).map(|(&o, &obj)| (self.clients[client].oscs[o as usize], obj)).collect();
        // the write system call is over (its copy into the cache has ended: ll_file_write_iter()
        // counts it here), and the application's fsync() begins
        let now = self.now;
        let op = self.threads[tid as usize].op.as_mut().expect("op");
        op.fsync_ns = Some(now);
        let (len, lat_us) = (op.len, ((now - op.started_ns) / 1000) as i64);
        let stats = &mut self.clients[client].stats;
        stats.add(LliteCtr::WriteBytes, len as i64);
        stats.add(LliteCtr::Write, lat_us);
        for (osc_i, obj) in oscs {
            if let Some(oc) = self.oscs[osc_i as usize].objects.get_mut(&obj) {
                oc.make_urgent(u64::MAX);
            }
            self.check_rpcs(osc_i);
        }
        self.threads[tid as usize].op.as_mut().expect("op").state = OpState::WaitSync;
        true
    }

    /// Let the fsyncs of `client` on `file` return once nothing of it is dirty or in flight.
    pub(super) fn wake_fsync_waiters(&mut self, file: u32, client: u32) {
        let on = self.files[file as usize].on(client as usize);
        if on.dirty_pages != 0 || on.writes_in_flight != 0 {
            return;
        }
        for tid in 0..self.threads.len() {
            let th = &mut self.threads[tid];
            if th.client == client {
                if let Some(op) = th.op.as_mut() {
                    if op.state == OpState::WaitSync && op.file == file {
                        op.state = OpState::Running;
                        op.fsync = false;
                        let rtt = 2 * self.cfg.cluster.net_latency_ns + self.cfg.cluster.oss_service_ns;
                        // one OST_SYNC per stripe object (osc_io_fsync_start() -> osc_fsync_ost()
                        // of each sub-io), all at once: the wait is one round trip; the llite
                        // `fsync` sample is taken when the thread goes on (finish_op)
                        // (an idle stripe's import connects first)
                        let mut back = self.now + rtt;
                        for stripe in 0..self.files[file as usize].osts.len() {
                            let ost = self.files[file as usize].osts[stripe];
                            let osc_i = self.clients[client as usize].oscs[ost as usize];
                            back = back.max(self.send_other_rpc(osc_i, OtherRpc::Sync, rtt));
                        }
                        self.seq += 1;
                        self.queue.push(back, self.seq, Ev::Thread(tid as u32));
                    }
                }
            }
        }
    }

    /// The last write RPC of removed `file` from `client` is back: its remover goes on.
    pub(super) fn wake_removers(&mut self, file: u32, client: u32) {
        for tid in 0..self.threads.len() {
            let th = &self.threads[tid];
            if th.client == client && th.op.as_ref().is_some_and(|op| op.state == OpState::WaitRemove && op.file == file) {
                self.schedule(self.now, Ev::Thread(tid as u32));
            }
        }
    }

    /// The kernel flusher of client `ci`: pages dirty for longer than the expiry go out.
    pub(super) fn on_flusher(&mut self, ci: u32) {
        let cutoff = self.now.saturating_sub(DIRTY_EXPIRE_NS);
        let oscs = self.clients[ci as usize].oscs.clone();
        for osc_i in oscs {
            let mut any = false;
            for oc in self.oscs[osc_i as usize].objects.values_mut() {
                any |= oc.make_urgent(cutoff);
            }
            if any {
                self.check_rpcs(osc_i);
            }
        }
        self.schedule(self.now + FLUSH_PERIOD_NS, Ev::Flusher(ci));
    }
}

pub(super) enum Admit {
    Ok,
    Wait,
    Sync,
}

/// File pages [first, last] that write `op` copies next, from `Op::copied`, before it commits
/// them: up to `PTLRPC_MAX_BRW_PAGES` (64 MiB, `ll_write_end()`), and no further than the
/// stripe chunk when the file has several stripes (`lov_io_rw_iter_init()` gives each chunk a
/// cl_io iteration of its own, which takes its locks, and commits at its end).
pub(crate) fn next_batch(op: &Op, f: &File) -> (u64, u64) {
    let page = op.copied / PAGE;
    let last = ((op.offset + op.len).max(1) - 1) / PAGE;
    (page, last.min(page + MAX_COMMIT_PAGES - 1).min(f.chunk_end(page)))
}

/// client_adjust_max_dirty(): default 2000 MiB, raised to rif x RPC size, capped at RAM/8,
/// rounded up to whole MiB.
pub fn adjust_max_dirty(osc: &mut Osc, ram_pages: u64) {
    if osc.max_dirty_pages == 0 {
        osc.max_dirty_pages = 2000 * PAGES_PER_MIB;
    } else {
        let want = osc.mrif as u64 * osc.mppr;
        osc.max_dirty_pages = osc.max_dirty_pages.max(want);
    }
    osc.max_dirty_pages = osc.max_dirty_pages.min(ram_pages / 8);
    osc.max_dirty_pages = osc.max_dirty_pages.div_ceil(PAGES_PER_MIB) * PAGES_PER_MIB;
}

/// Put in `out` the extents of `oc` touching pages [first-1, last+1], in page order (copies).
fn neighbours(out: &mut Vec<(u64, Extent)>, oc: Option<&ObjectCache>, first: u64, last: u64) {
    out.clear();
    let Some(oc) = oc else { return };
    let lo = first.saturating_sub(1);
    // extents are disjoint, so their ends ascend with their starts
    for (&s, e) in oc.extents.range(..=last + 1).rev() {
        if e.end < lo {
            break;
        }
        out.push((s, e.clone()));
    }
    out.reverse();
}

/// Pages of [first, last] not yet dirty, and whether a new extent would be created, from the
/// extents touching [first-1, last+1] (`neighbours`).
fn count_new(near: &[(u64, Extent)], first: u64, last: u64, mppr: u64) -> (u64, u64) {
    let mut covered = 0;
    let mut adjacent = false;
    let lo = first.saturating_sub(1);
    let window_end = first - first % mppr + mppr - 1;
    // the extent starting at or before first-1 (at most one touches it)
    if let Some((_, e)) = near.iter().find(|(s, _)| *s <= lo) {
        if e.end >= first {
            covered += e.end.min(last) - first + 1;
            adjacent = true;
        } else if e.end + 1 == first && e.window_end == window_end {
            adjacent = true;
        }
    }
    // those starting in [first, last+1] (with first = 0, the one at 0 is counted twice, as before)
    for (s, e) in near.iter().filter(|(s, _)| *s >= first) {
        if *s <= last {
            covered += e.end.min(last) - s + 1;
        }
        adjacent |= e.window_end == window_end || *s <= last;
    }
    (last - first + 1 - covered.min(last - first + 1), u64::from(!adjacent))
}
