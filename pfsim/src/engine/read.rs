//! The read path: a read system call through llite's page cache and read-ahead (`ras_update`,
//! stride detection, the window's reset after a miss) into batches of read chunks for the OSCs'
//! queues (`osc_io_submit`).

use super::*;

impl Sim {
    /// One cl_io iteration of a read system call of thread `tid` (its file `slot`), from
    /// `Op::cursor`: the stripe chunk `ensure_locks` locked, and the chunks after it that lie
    /// under locks the client holds (Lustre's read-ahead reads those, `ll_read_ahead_pages()`).
    /// The first iteration updates read-ahead's state (`ras_update`); each counts the pages it
    /// finds in the cache and makes read chunks for those it does not; the last reads ahead.
    pub(super) fn start_read(&mut self, tid: u32, slot: usize) {
        let th = &self.threads[tid as usize];
        let op = th.op.clone().expect("read op");
        let client = th.client as usize;
        let file = op.file as usize;
        let fsize_pages = ceil_div(self.files[file].size, PAGE).max(1);
        let p0 = op.offset / PAGE;
        let p1 = ((op.offset + op.len).max(1) - 1) / PAGE;
        let first_iteration = op.cursor == op.offset;
        let (c0, mut c1) = read_iteration(&op, &self.files[file]);
        while c1 < p1 {
            let next = p1.min(self.files[file].chunk_end(c1 + 1));
            if !self.own_lock_covers(client as u32, file, c1 + 1, next) {
                break;
            }
            c1 = next;
        }
        let npages = c1 - c0 + 1;
        // read-ahead state (ras_update / ll_ras_enter)
        let rpc_pages = {
            let f = &self.files[file];
            let osc_i = self.clients[client].oscs[f.osts[f.map(p0).0] as usize];
            self.oscs[osc_i as usize].mppr
        };
        let cl = &self.clients[client];
        let (per_file, whole) = (cl.ra_max_pages_per_file, cl.ra_max_read_ahead_whole_pages);
        let ras = &mut self.threads[tid as usize].ras[slot];
        // the state ras_update() checks a miss against: the window as the last read left it
        let (window_before, ra_next_before, next_before) = (ras.window, ras.ra_next, ras.next_page);
        let whole_file = ras.reads >= 1 && fsize_pages <= whole;
        if first_iteration {
            let sequential = match ras.next_page {
                Some(n) => p0 + 8 >= n && p0 <= n + 8,
                None => false,
            };
            // ras_detect_read_pattern: a read that is not sequential may continue a stride (the
            // same gap after the same bytes, twice in a row), which keeps the window
            let not_consecutive = !sequential && ras.next_page.is_some();
            let stride_detect = ras.detect_pattern(op.offset, op.len.max(1), sequential, p0);
            let stride = ras.stride_mode();
            if sequential {
                ras.consecutive += 1;
            }
            if stride && (stride_detect || sequential) {
                // ras_stride_increase_window: one RPC's worth more of the stride's data, the
                // window counted from the read's first page
                ras.stride_increase_window(p0, rpc_pages * PAGE, per_file, PAGE);
            } else if sequential {
                if ras.consecutive >= 1 {
                    let grown = (ras.window + rpc_pages.max(p1 - p0 + 1)).min(per_file);
                    ras.window = if grown >= rpc_pages { grown - grown % rpc_pages } else { grown };
                }
                if whole_file {
                    ras.window = fsize_pages;
                }
            }
            ras.reads += 1;
            ras.next_page = Some(p1 + 1);
            if not_consecutive {
                self.clients[client].ra_stats.add_n(RaCtr::ReadpageNotConsecutive, 1);
            }
        }
        // stride mode once this read's pattern detection (its first iteration) has run
        let stride = self.threads[tid as usize].ras[slot].stride_mode();
        // pages of the read itself
        let mut waits = 0u32;
        let mut sync_runs: Vec<(u64, u64)> = Vec::new();
        {
            let f = &mut self.files[file];
            for (s, e) in f.on(client).cache.gaps(c0, c1) {
                // pages already being read: wait for those chunks
                let mut q = s;
                let inflight: Vec<(u64, u64, u32)> = overlapping(&f.on(client).reading, s, e);
                for (rs, re, ch) in inflight {
                    if rs > q {
                        sync_runs.push((q, rs - 1));
                    }
                    if let Some((_, c)) = self.chunks[ch as usize].as_mut() {
                        c.waiters.push(tid);
                        waits += 1;
                    }
                    q = q.max(re + 1);
                }
                if q <= e {
                    sync_runs.push((q, e));
                }
            }
        }
        // ras_update() of each page that goes through ll_readpage(): a hit for a page read-ahead
        // brought in (vpg_defer_uptodate), cached or still in flight, the first time a read
        // reaches it; a miss for a page the read must fetch itself. Other cached pages are
        // uptodate and served by the fast read, which counts nothing.
        let miss_pages: u64 = sync_runs.iter().map(|(s, e)| e - s + 1).sum();
        // ras_update(): a miss on a page the window had already read ahead (reclaimed, or
        // dropped by a lock cancel, before the reader came) resets the window, and read-ahead
        // starts again after the missed pages once reads are sequential again
        // (RA_STAT_MISS_IN_WINDOW; a whole-file read-ahead checks no miss)
        if let (true, Some(&(m, _)), Some(&(_, last_miss)), Some(prev)) = (first_iteration, sync_runs.first(), sync_runs.last(), next_before) {
            let start = prev.saturating_sub(1) / rpc_pages * rpc_pages;
            if !whole_file && window_before > 0 && m < ra_next_before && m >= start && m < start + window_before {
                let ras = &mut self.threads[tid as usize].ras[slot];
                ras.window = 0;
                ras.consecutive = 0;
                ras.ra_next = last_miss + 1;
                if !stride {
                    ras.consecutive_bytes = 0;
                    ras.reset_stride();
                } else if m / rpc_pages * rpc_pages * PAGE < ras.stride_offset {
                    ras.reset_stride(); // stride mode keeps its detector while the window is on it
                }
                self.clients[client].ra_stats.add_n(RaCtr::MissInsideWindow, 1);
            }
        }
        let cl = &mut self.clients[client];
        // marks of pages no longer there (evicted, dropped by a lock cancel) are stale
        for &(s, e) in &sync_runs {
            cl.unmark_ra(file as u32, s, e);
        }
        let hit_pages = cl.unmark_ra(file as u32, c0, c1);
        {
            let ra = &mut self.clients[client].ra_stats;
            if hit_pages > 0 {
                ra.add_n(RaCtr::Hits, hit_pages);
            }
            if miss_pages > 0 {
                ra.add_n(RaCtr::Misses, miss_pages);
            }
        }
        // read-ahead beyond the read, bounded by the global budget (ll_ra_count_get), once the
        // iteration reaches the read's end (before, it stops at the chunk no lock covers)
        let ras = &self.threads[tid as usize].ras[slot];
        let window = ras.window;
        // the window ends on an RPC boundary so read-ahead forms whole RPCs; in stride mode it
        // counts from the read's first page and starts no earlier than the stride
        let (ra_from, window_end) = if stride {
            (ras.ra_next.max(p1 + 1).max(ras.stride_offset / PAGE), p0 + window)
        } else {
            (ras.ra_next.max(p1 + 1), p1 + 1 + window)
        };
        let ra_to = (window_end / rpc_pages * rpc_pages).saturating_sub(1).min(fsize_pages - 1);
        let mut ra_runs: Vec<(u64, u64)> = Vec::new();
        if c1 == p1 && window > 0 && ra_from <= ra_to {
            // in stride mode only the stride's runs are read ahead (ll_read_ahead_pages)
            let runs = if stride { stride_runs_within(ras, ra_from, ra_to) } else { vec![(ra_from, ra_to)] };
            let runs = self.under_own_locks(client as u32, file, &runs);
            let want: u64 = runs.iter().map(|(s, e)| e - s + 1).sum();
            let cl = &self.clients[client];
            let left = cl.ra_max_pages.saturating_sub(cl.ra_inflight_pages);
            let grant = left.min(want);
            if grant < want {
                self.clients[client].ra_stats.add_n(RaCtr::HitMaxReadaheadIssue, 1);
            }
            if grant > 0 && grant >= want.min(16384) {
                let (granted, to) = take_pages(&runs, grant);
                let f = &self.files[file];
                for (s, e) in granted.into_iter().flat_map(|(s, e)| f.on(client).cache.gaps(s, e)) {
                    let mut q = s;
                    for (rs, re, _) in overlapping(&f.on(client).reading, s, e) {
                        if rs > q {
                            ra_runs.push((q, rs - 1));
                        }
                        q = q.max(re + 1);
                    }
                    if q <= e {
                        ra_runs.push((q, e));
                    }
                }
                self.threads[tid as usize].ras[slot].ra_next = to + 1;
                // read-ahead queued pages up to the file's last page
                if ra_runs.last().is_some_and(|&(_, e)| e + 1 >= fsize_pages) {
                    self.clients[client].ra_stats.add_n(RaCtr::ReadaheadToEof, 1);
                }
            }
        }
        // submit: the reading thread sets up the pages it needs itself, read-ahead pages are set
        // up by the async read-ahead workers, and a batch leaves as soon as its pages are ready,
        // so small RPCs overlap set-up with I/O and large ones do not
        let (core, start) = self.free_core(client);
        let c = &self.cfg.cluster;
        let mut t = start + if first_iteration { c.client_syscall_ns } else { 0 };
        let (page_ns, extent_ns) = (c.client_page_ns, c.client_extent_ns);
        // the read's own pages and its read-ahead go to the OSCs in one queue, in page order;
        // each batch of it (below) reaches its OSC's read queue whole, once its last piece is set up
        let mut batches = Batches::default();
        let mut ready: Vec<(u64, u32, u64)> = Vec::new(); // (batch, piece, ready at)
        for (s, e) in sync_runs {
            for (ch, pages, batch, opens) in self.make_chunks(client, file as u32, s, e, false, Some(tid), &mut batches) {
                t += pages * page_ns + if opens { extent_ns } else { 0 };
                waits += 1;
                ready.push((batch, ch, t));
            }
        }
        // the thread sets up every page of the iteration before the queue goes to the OSCs
        // (`ll_io_read_page()` -> `ll_readahead()` fills it, then `cl_io_submit_rw()`), so its
        // batches leave together, not one by one as they are set up
        for r in &mut ready {
            r.2 = t;
        }
        for (s, e) in ra_runs {
            for (ch, pages, batch, opens) in self.make_chunks(client, file as u32, s, e, true, None, &mut batches) {
                let workers = &mut self.clients[client].ra_workers;
                let (w, free) = workers.earliest();
                let at = free.max(self.now) + pages * page_ns + if opens { extent_ns } else { 0 };
                workers.book(w, at);
                ready.push((batch, ch, at));
            }
        }
        self.queue_batches(&ready);
        let copy = npages * COPY_NS_PER_PAGE;
        self.clients[client].app_cores.book(core, t + copy);
        let th = &mut self.threads[tid as usize];
        let op = th.op.as_mut().expect("op");
        op.ready_at = t + copy;
        op.cursor = (op.offset + op.len).min((c1 + 1) * PAGE);
        if waits == 0 {
            op.state = OpState::Running;
            let at = t + copy;
            self.schedule(at, Ev::Thread(tid));
        } else {
            op.state = OpState::WaitIo;
            op.waits = waits;
        }
        // a lock called back while the read waited to begin this iteration under it is held
        // now by the pages being read, if any (`io_holds`)
        let f = &self.files[file];
        let osc_i = self.clients[client].oscs[f.osts[f.map(c0).0] as usize];
        self.release_callbacks(osc_i);
    }

    /// Split file pages [s, e] by stripe and into pieces for the OSCs' read queues.
    /// `osc_io_submit()` gives each OSC its pages of the read's queue in page order and flushes
    /// them as one extent every `max_pages_per_rpc` pages, counted from the first page it got
    /// (not from RPC boundaries of the object); `batches` carries that count from one run of
    /// the queue to the next. A piece ends at a batch's end, at a gap in the run (pages
    /// cached or already being read), or where the object's pages stop being contiguous.
    /// Returns each piece's chunk, pages, batch and whether it opens its batch.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn make_chunks(
        &mut self,
        client: usize,
        file: u32,
        s: u64,
        e: u64,
        ra: bool,
        waiter: Option<u32>,
        batches: &mut Batches,
    ) -> Vec<(u32, u64, u64, bool)> {
        let mut out = Vec::new();
        let mut p = s;
        while p <= e {
            let f = &self.files[file as usize];
            let (stripe, obj_page) = f.map(p);
            let osc_i = self.clients[client].oscs[f.osts[stripe] as usize];
            let mppr = self.oscs[osc_i as usize].mppr;
            let (batch, room, opens) = batches.room(stripe, mppr);
            let last = e.min(f.chunk_end(p)).min(p + room - 1);
            let pages = last - p + 1;
            batches.took(stripe, room, pages);
            let chunk = ReadChunk {
                file,
                obj: f.obj_ids[stripe],
                obj_start: obj_page,
                file_start: p,
                pages,
                waiters: waiter.into_iter().collect(),
                readahead: ra,
                next: None,
            };
            let id = match self.free_chunks.pop() {
                Some(id) => {
                    self.chunks[id as usize] = Some((osc_i, chunk));
                    id
                }
                None => {
                    self.chunks.push(Some((osc_i, chunk)));
                    (self.chunks.len() - 1) as u32
                }
            };
            self.files[file as usize].on_mut(client).reading.insert(p, (last, id));
            if ra {
                let cl = &mut self.clients[client];
                cl.ra_inflight_pages += pages;
                cl.ra_marks.entry(file).or_default().insert(p, last);
            }
            out.push((id, pages, batch, opens));
            p = last + 1;
        }
        out
    }

    /// Queue the pieces of a read's batches, `(batch, piece, ready at)` in queue order: each
    /// batch goes to its OSC's read queue in one event, when its last piece is ready, its
    /// pieces linked in order (`osc_queue_sync_pages()` queues a batch as one extent). Batches
    /// are numbered from 1 in the order their first pieces come.
    fn queue_batches(&mut self, ready: &[(u64, u32, u64)]) {
        let mut heads: Vec<(u32, u32, u64)> = Vec::new(); // per batch: first, last, ready at
        for &(batch, ch, at) in ready {
            let i = (batch - 1) as usize;
            if i == heads.len() {
                heads.push((ch, ch, at));
                continue;
            }
            let h = &mut heads[i];
            self.chunks[h.1 as usize].as_mut().expect("chunk").1.next = Some(ch);
            h.1 = ch;
            h.2 = h.2.max(at);
        }
        for (first, _, at) in heads {
            let osc = self.chunks[first as usize].as_ref().expect("chunk").0;
            self.schedule(at, Ev::ChunkReady(osc, first));
        }
    }
}

/// The pages of the cl_io iteration a read begins at `Op::cursor`: to the end of the read or of
/// the stripe chunk, whichever comes first (`lov_io_rw_iter_init()`).
pub(crate) fn read_iteration(op: &Op, f: &File) -> (u64, u64) {
    let page = op.cursor / PAGE;
    let last = ((op.offset + op.len).max(1) - 1) / PAGE;
    (page, last.min(f.chunk_end(page)))
}

/// Per stripe of the file, the batch `osc_io_submit()` is filling for its object: its number
/// and the room it has left (0: the next page starts a new batch).
#[derive(Default)]
pub(super) struct Batches {
    open: Vec<(usize, u64, u64)>,
    made: u64,
}

impl Batches {
    /// The batch the next piece of `stripe` goes into, the pages it may take, and whether the
    /// piece opens the batch (one extent each): the open batch's room, or a new batch of `mppr`
    /// pages.
    fn room(&mut self, stripe: usize, mppr: u64) -> (u64, u64, bool) {
        if let Some(&(_, batch, left)) = self.open.iter().find(|b| b.0 == stripe && b.2 > 0) {
            return (batch, left, false);
        }
        self.made += 1;
        match self.open.iter_mut().find(|b| b.0 == stripe) {
            Some(b) => *b = (stripe, self.made, mppr),
            None => self.open.push((stripe, self.made, mppr)),
        }
        (self.made, mppr, true)
    }

    /// A piece of `pages` pages of `stripe` took them from a room of `room`.
    fn took(&mut self, stripe: usize, room: u64, pages: u64) {
        if let Some(b) = self.open.iter_mut().find(|b| b.0 == stripe) {
            b.2 = room - pages;
        }
    }
}

/// The runs of pages of a stride within pages [from, to] (read-ahead in stride mode skips the gaps).
fn stride_runs_within(ras: &Readahead, from: u64, to: u64) -> Vec<(u64, u64)> {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    let mut p = from.max(ras.stride_offset / PAGE); // nothing of the stride lies before it
    while p <= to {
        let pos = p * PAGE;
        let offset = pos.saturating_sub(ras.stride_offset) % ras.stride_length;
        let next = if ras.page_in_stride(p, PAGE) {
            // to the last page holding a byte of this run (or the page of the next run's start)
            let run_end = (pos - offset + ras.stride_bytes).div_ceil(PAGE).max(p + 1);
            let last = (run_end - 1).min(to);
            push_run(&mut runs, p, last);
            last + 1
        } else {
            (pos + ras.stride_length - offset) / PAGE // the page where the next run starts
        };
        p = next.max(p + 1);
    }
    runs
}

/// The first `pages` pages of `runs`, and the last page taken.
fn take_pages(runs: &[(u64, u64)], mut pages: u64) -> (Vec<(u64, u64)>, u64) {
    let mut out = Vec::new();
    let mut last = 0;
    for &(s, e) in runs {
        if pages == 0 {
            break;
        }
        let end = e.min(s + pages - 1);
        out.push((s, end));
        pages -= end - s + 1;
        last = end;
    }
    (out, last)
}

#[cfg(test)]
mod tests {
    use super::{stride_runs_within, take_pages, Batches, PAGE};
    use crate::model::Readahead;
    use crate::rng::Rng;

    /// The runs are exactly the pages `page_in_stride` accepts, merged, for strides aligned to
    /// pages or not.
    #[test]
    fn stride_runs_are_the_pages_in_the_stride() {
        for seed in 0..500u64 {
            let mut rng = Rng::new(seed);
            let bytes = 1 + rng.below(64 * 1024);
            let length = bytes + 1 + rng.below(256 * 1024);
            let ras = Readahead { stride_offset: rng.below(1 << 20), stride_length: length, stride_bytes: bytes, ..Readahead::default() };
            let from = ras.stride_offset / PAGE + rng.below(64);
            let to = from + rng.below(512);
            let mut expected: Vec<(u64, u64)> = Vec::new();
            for p in from..=to {
                if ras.page_in_stride(p, PAGE) {
                    match expected.last_mut() {
                        Some((_, e)) if *e + 1 == p => *e = p,
                        _ => expected.push((p, p)),
                    }
                }
            }
            assert_eq!(stride_runs_within(&ras, from, to), expected, "seed {seed}: {ras:?} [{from}, {to}]");
        }
    }

    #[test]
    fn take_pages_takes_the_first_pages_of_the_runs() {
        let runs = [(10, 19), (30, 34), (50, 50)];
        assert_eq!(take_pages(&runs, 12), (vec![(10, 19), (30, 31)], 31));
        assert_eq!(take_pages(&runs, 100), (runs.to_vec(), 50));
        assert_eq!(take_pages(&runs, 10), (vec![(10, 19)], 19));
    }

    /// Each stripe's batch holds `mppr` pages, whatever pieces fill it; a full batch makes the
    /// next piece open a new one, numbered in the order batches open.
    #[test]
    fn batches_count_pages_per_stripe_from_the_first_they_get() {
        let mut b = Batches::default();
        // stripe 0: a piece of 3 pages, then one of 5 (a gap between), filling 8
        assert_eq!(b.room(0, 8), (1, 8, true));
        b.took(0, 8, 3);
        assert_eq!(b.room(0, 8), (1, 5, false));
        // stripe 1 has its own batch
        assert_eq!(b.room(1, 4), (2, 4, true));
        b.took(1, 4, 4);
        b.took(0, 5, 5);
        // both full: the next pieces open new batches
        assert_eq!(b.room(0, 8), (3, 8, true));
        assert_eq!(b.room(1, 4), (4, 4, true));
    }
}
