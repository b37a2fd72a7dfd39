//! OSC RPCs from formation to reply: read and write RPC formation, the in-flight limit (reads
//! plus writes, max + 1), LNet transfers, the OSS's NRS FIFO queue and service threads, the OST
//! devices behind their elevators, and what each reply does on the client.

use super::*;

impl Sim {
    /// osc_check_rpcs(): send what may be sent within the in-flight limit. Reads and writes
    /// share the limit, and a normal object may go one above it (max + 1).
    pub(crate) fn check_rpcs(&mut self, osc_i: u32) {
        loop {
            let osc = &self.oscs[osc_i as usize];
            if !osc.active {
                return;
            }
            let in_flight = osc.r_in_flight + osc.w_in_flight;
            if in_flight > osc.mrif {
                // high-priority RPCs (pages under a lock being called back) still go (LU-13131)
                if osc.objects.values().any(|oc| !oc.hp.is_empty()) && self.try_write_rpc(osc_i) {
                    continue;
                }
                return;
            }
            // one RPC per pass, so the limit is checked before each. Reads and writes take turns
            // across passes: osc_check_rpcs() balances them by sending an object's write RPC and
            // then its read RPC. (It checks the limit once for the pair, which can reach max + 2;
            // taking turns gives each direction the same share within max + 1.) Starting every
            // pass with writes would starve a reader behind a writer that always has pages ready.
            let order = if osc.read_turn { [false, true] } else { [true, false] };
            let Some(wrote) = order.into_iter().find(|&write| if write { self.try_write_rpc(osc_i) } else { self.try_read_rpc(osc_i) }) else {
                return;
            };
            self.oscs[osc_i as usize].read_turn = wrote;
        }
    }

    /// A limit changed: send what it now allows and let blocked writers retry.
    pub(crate) fn kick(&mut self, osc_i: usize) {
        let waiters = std::mem::take(&mut self.oscs[osc_i].cache_waiters);
        for tid in waiters {
            self.schedule(self.now, Ev::Thread(tid));
        }
        self.check_rpcs(osc_i as u32);
    }

    /// Form and send one read RPC of OSC `osc_i` from the chunks at the head of its read queue
    /// (pages of one object, gaps allowed, up to `max_pages_per_rpc`); false if there is none.
    pub(super) fn try_read_rpc(&mut self, osc_i: u32) -> bool {
        let osc = &mut self.oscs[osc_i as usize];
        let Some(first) = osc.read_queue.pop_front() else { return false };
        let (obj, mut start, mut end, mut pages) = {
            let c = &self.chunks[first as usize].as_ref().expect("chunk").1;
            (c.obj, c.obj_start, c.obj_start + c.pages - 1, c.pages)
        };
        let mut ids = vec![first];
        // later chunks of the same object join while the RPC has room (osc_send_read_rpc)
        while let Some(&next) = osc.read_queue.front() {
            let c = &self.chunks[next as usize].as_ref().expect("chunk").1;
            if c.obj != obj || pages + c.pages > osc.mppr {
                break;
            }
            start = start.min(c.obj_start);
            end = end.max(c.obj_start + c.pages - 1);
            pages += c.pages;
            ids.push(next);
            osc.read_queue.pop_front();
        }
        osc.pending_r_pages -= pages.min(osc.pending_r_pages);
        let (ost, client) = (osc.ost, osc.client);
        let id = self.new_rpc(Rpc {
            osc: osc_i,
            ost,
            client,
            write: false,
            obj,
            start_page: start,
            end_page: end,
            pages,
            sent_ns: 0,
            phase: RpcPhase::ToServer,
            short_io: false,
            chunks: ids,
            sync_waiters: Vec::new(),
            files: Vec::new(),
            hp: false,
            extents: Vec::new(),
            disk_parts: 0,
        });
        self.send_rpc(id);
        true
    }

    /// Form and send one write RPC of OSC `osc_i` if an object has extents ready
    /// (`osc_next_obj`, `get_write_extents`); false if nothing makes an RPC now.
    pub(super) fn try_write_rpc(&mut self, osc_i: u32) -> bool {
        let osc = &self.oscs[osc_i as usize];
        let any_waiters = !osc.cache_waiters.is_empty();
        // pick an object that makes an RPC (osc_next_obj): one under a lock being called back,
        // then one with urgent or full extents, then, with anyone blocked on cache space, any
        // with dirty pages; objects take turns, from the one after the last written
        let turn = |ready: &dyn Fn(&ObjectCache) -> bool| {
            let from = osc.next_write_obj;
            osc.objects.range(from..).chain(osc.objects.range(..from)).find(|(_, oc)| ready(oc)).map(|(&o, _)| o)
        };
        let obj = turn(&|oc| !oc.hp.is_empty())
            .or_else(|| turn(&|oc| !oc.urgent.is_empty() || !oc.full.is_empty()))
            .or_else(|| if any_waiters { turn(&|oc| !oc.extents.is_empty()) } else { None });
        let Some(obj) = obj else { return false };
        let osc = &mut self.oscs[osc_i as usize];
        osc.next_write_obj = obj.wrapping_add(1);
        let mppr = osc.mppr;
        let oc = osc.objects.get_mut(&obj).expect("object");
        let hp = !oc.hp.is_empty();
        let first = oc
            .hp
            .first()
            .or_else(|| oc.urgent.first())
            .or_else(|| oc.full.first())
            .or_else(|| oc.extents.keys().next())
            .copied()
            .expect("non-empty");
        // get_write_extents(): from the chosen extent onwards, then from the tree's start, while
        // pages fit max_pages_per_rpc and extents fit 256
        // one pass finds the last extent to take from `first` on and, wrapping round, from the
        // start; the two runs of the tree then come out whole
        let mut max_pages = mppr;
        let mut pages = 0;
        let mut count = 0;
        let mut runs: [Option<u64>; 2] = [None, None];
        'pick: for (run, part) in [oc.extents.range(first..), oc.extents.range(..first)].into_iter().enumerate() {
            for (&s, e) in part {
                let n = e.pages(s);
                // erd_max_pages grows to the extent's own mppr: extents made under a larger
                // max_pages_per_rpc still leave whole
                let limit = max_pages.max(e.mppr);
                if count == MAX_EXTENTS_PER_RPC || (pages + n > limit && count > 0) {
                    break 'pick;
                }
                max_pages = limit;
                pages += n;
                count += 1;
                runs[run] = Some(s);
            }
        }
        let mut taken: Vec<(u64, Extent)> = Vec::with_capacity(count);
        if let Some(last) = runs[0] {
            taken.extend(oc.extents.extract_if(first..=last, |_, _| true));
        }
        if let Some(last) = runs[1] {
            taken.extend(oc.extents.extract_if(..=last, |_, _| true));
        }
        for (s, e) in &taken {
            oc.forget(*s);
            oc.writeback.insert(*s, e.end);
        }
        osc.pending_w_pages -= pages.min(osc.pending_w_pages);
        let start = taken.iter().map(|(s, _)| *s).min().expect("taken");
        let end = taken.iter().map(|(_, e)| e.end).max().expect("taken");
        let short_io = taken.len() == 1 && pages * PAGE <= osc.short_io_bytes;
        let mut files: Vec<(u32, u64)> = Vec::new();
        let mut sync_waiters = Vec::new();
        for (s, e) in &taken {
            match files.iter_mut().find(|(f, _)| *f == e.file) {
                Some(x) => x.1 += e.pages(*s),
                None => files.push((e.file, e.pages(*s))),
            }
            if let Some(w) = e.sync_waiter {
                sync_waiters.push(w);
            }
        }
        let client = osc.client as usize;
        for &(f, _) in &files {
            self.files[f as usize].on_mut(client).writes_in_flight += 1;
        }
        let ost = self.oscs[osc_i as usize].ost;
        let id = self.new_rpc(Rpc {
            osc: osc_i,
            ost,
            client: client as u32,
            write: true,
            obj,
            start_page: start,
            end_page: end,
            pages,
            sent_ns: 0,
            phase: RpcPhase::ToServer,
            short_io,
            chunks: Vec::new(),
            sync_waiters,
            files,
            hp,
            extents: taken.iter().map(|(s, e)| (*s, e.end)).collect(),
            disk_parts: 0,
        });
        if hp {
            let osc = &mut self.oscs[osc_i as usize];
            osc.hp_in_flight += 1;
            osc.objects.get_mut(&obj).expect("object").hp_in_flight += 1;
        }
        self.send_rpc(id);
        true
    }

    /// Store `rpc` in a free slot and return its id.
    pub(super) fn new_rpc(&mut self, rpc: Rpc) -> u32 {
        match self.free_rpcs.pop() {
            Some(id) => {
                self.rpcs[id as usize] = Some(rpc);
                id
            }
            None => {
                self.rpcs.push(Some(rpc));
                (self.rpcs.len() - 1) as u32
            }
        }
    }

    /// osc_build_rpc() + ptlrpcd: tally the histograms, count it in flight, and send it once the
    /// client's ptlrpcd has built it.
    pub(super) fn send_rpc(&mut self, id: u32) {
        let c = &self.cfg.cluster;
        let (rpc_ns, lat, bw, stream) = (c.client_rpc_ns, c.net_latency_ns, c.net_bandwidth_bps, c.net_stream_bps);
        let osts_per_oss = c.osts_per_oss;
        let rpc = self.rpcs[id as usize].as_mut().expect("rpc");
        let osc = &mut self.oscs[rpc.osc as usize];
        // I/O needs a lock, and an import with a lock is never idle
        debug_assert_eq!(osc.import, ImportState::Full, "{}: a bulk RPC on an import not connected", osc.name);
        let pages32 = rpc.pages.min(u32::MAX as u64) as u32;
        if rpc.write {
            osc.w_in_flight += 1;
        } else {
            osc.r_in_flight += 1;
        }
        // osc_announce_cached(): every bulk RPC reports the lost grant to the OST (o_dropped)
        osc.lost_grant = 0;
        let (reads, writes) = (osc.r_in_flight, osc.w_in_flight);
        let inflight = reads + writes + osc.other_in_flight;
        let counters = osc.counters_mut();
        if rpc.write {
            counters.hists.tally_write(pages32, writes, rpc.start_page);
        } else {
            counters.hists.tally_read(pages32, reads, rpc.start_page);
        }
        counters.stats.add(OscCtr::ReqActive, inflight as i64);
        let client = &mut self.clients[osc.client as usize];
        let sent = self.now.max(client.cpu_free_at) + rpc_ns;
        client.cpu_free_at = sent;
        osc.next_ping_ns = sent + PING_INTERVAL_NS; // ptlrpc_pinger_sending_on_import()
        rpc.sent_ns = sent;
        rpc.phase = RpcPhase::ToServer;
        // a short-io write carries its data inside the request, over the same links as bulk
        let mut arrive = sent + lat;
        if rpc.write && rpc.short_io {
            let (client, oss, bytes) = (rpc.client as usize, rpc.ost as usize / osts_per_oss, rpc.pages * PAGE);
            arrive = transfer(&mut self.client_up[client], &mut self.oss[oss].down, sent, bytes, bw, stream) + lat;
        }
        self.seq += 1;
        self.queue.push(arrive, self.seq, Ev::Rpc(id));
    }

    // ------------------------------------------------------------------ OSS and OST

    /// The next step of RPC `id`'s life (its `RpcPhase`): request on the client's link, the OSS's
    /// queue and service threads, the OST device, the reply's transfer back.
    pub(super) fn on_rpc(&mut self, id: u32) {
        // copies of the few scalars needed: this runs several times per RPC
        let c = &self.cfg.cluster;
        let (svc, lat, bw, stream) = (c.oss_service_ns, c.net_latency_ns, c.net_bandwidth_bps, c.net_stream_bps);
        let osts_per_oss = c.osts_per_oss;
        let r = self.rpcs[id as usize].as_ref().expect("rpc");
        let (phase, write, short_io, osc_i) = (r.phase, r.write, r.short_io, r.osc);
        let (ost, client) = (r.ost as usize, r.client as usize);
        let oss = ost / osts_per_oss;
        let bytes = r.pages * PAGE;
        let set_phase = |sim: &mut Sim, p: RpcPhase| sim.rpcs[id as usize].as_mut().expect("rpc").phase = p;
        match phase {
            RpcPhase::ToServer => {
                let s = &mut self.oss[oss];
                if s.free_threads == 0 {
                    s.queue.push_back(id);
                    set_phase(self, RpcPhase::Queued);
                } else {
                    s.free_threads -= 1;
                    set_phase(self, RpcPhase::Service);
                    self.schedule(self.now + svc, Ev::Rpc(id));
                }
            }
            RpcPhase::Queued => unreachable!("queued RPCs are started by a freed thread"),
            RpcPhase::Service => {
                if write && !short_io {
                    // bulk GET: the OSS pulls the pages from the client
                    let s = &mut self.oss[oss];
                    let done = transfer(&mut self.client_up[client], &mut s.down, self.now + lat, bytes, bw, stream);
                    set_phase(self, RpcPhase::Bulk);
                    self.schedule(done + lat, Ev::Rpc(id));
                } else {
                    self.submit_disk(id, ost);
                }
            }
            RpcPhase::Bulk => {
                if write {
                    self.submit_disk(id, ost);
                } else {
                    self.reply(id, oss, 0);
                }
            }
            RpcPhase::Disk => {
                if !write && bytes > self.oscs[osc_i as usize].short_io_bytes {
                    // bulk PUT to the client
                    let s = &mut self.oss[oss];
                    let done = transfer(&mut s.up, &mut self.client_down[client], self.now, bytes, bw, stream);
                    set_phase(self, RpcPhase::Bulk);
                    self.schedule(done, Ev::Rpc(id));
                } else {
                    // a short-io read's data comes back inside the reply
                    self.reply(id, oss, if write { 0 } else { bytes });
                }
            }
            RpcPhase::Reply => self.on_reply(id),
        }
    }

    /// The RPC's pieces of its OST object, (first byte, length), in object order, with
    /// contiguous pieces joined. An RPC may carry up to 256 extents that do not touch (writes) or
    /// read chunks with gaps between them; the OST reads or writes each run of pages on its own
    /// (osd_do_bio() starts a new bio at every gap), so the disk sees each as a request.
    pub(super) fn disk_ranges(&self, id: u32) -> Vec<(u64, u64)> {
        let rpc = self.rpcs[id as usize].as_ref().expect("rpc");
        let mut pieces: Vec<(u64, u64)> = if rpc.write {
            rpc.extents.iter().map(|&(s, e)| (s, e - s + 1)).collect()
        } else {
            rpc.chunks
                .iter()
                .map(|&ch| {
                    let c = &self.chunks[ch as usize].as_ref().expect("chunk").1;
                    (c.obj_start, c.pages)
                })
                .collect()
        };
        if pieces.is_empty() {
            pieces.push((rpc.start_page, rpc.pages));
        }
        pieces.sort_unstable();
        // join each piece to the run before it when they touch, in place (one RPC, one Vec)
        pieces.dedup_by(|next, run| {
            let touches = run.0 + run.1 == next.0;
            if touches {
                run.1 += next.1;
            }
            touches
        });
        for piece in &mut pieces {
            *piece = (piece.0 * PAGE, piece.1 * PAGE);
        }
        pieces
    }

    /// Hand RPC `id`'s pages to OST `ost`: one device request per disk range, straight to the
    /// device or through its elevator.
    pub(super) fn submit_disk(&mut self, id: u32, ost: usize) {
        let ranges = self.disk_ranges(id);
        let rpc = self.rpcs[id as usize].as_mut().expect("rpc");
        rpc.phase = RpcPhase::Disk;
        rpc.disk_parts = ranges.len() as u32;
        let (obj, write) = (rpc.obj, rpc.write);
        if self.elevators.is_empty() {
            let device = &mut self.devices[ost];
            let done = ranges.iter().map(|&(start, len)| device.submit(self.now, obj, start, len, write)).max();
            self.schedule(done.expect("an RPC has pages"), Ev::Rpc(id));
            return;
        }
        for (start, len) in ranges {
            self.elevators[ost].push(&self.devices[ost], id, Request { obj, start, len, write }, self.now);
        }
        if self.elevators[ost].is_idle() {
            self.dispatch_disk(ost);
        }
    }

    /// The elevator of an idle device sends it its next request, if one waits.
    pub(super) fn dispatch_disk(&mut self, ost: usize) {
        if let Some(d) = self.elevators[ost].dispatch(&self.devices[ost], self.now) {
            let done = self.devices[ost].submit(d.issued, d.obj, d.start, d.len, d.write);
            self.schedule(done, Ev::Disk(ost as u32));
        }
    }

    /// OST `ost`'s elevator finished a request: the RPCs whose ranges are all written or read go
    /// on to their reply, and the next request starts.
    pub(super) fn on_disk_done(&mut self, ost: usize) {
        for id in self.elevators[ost].finish() {
            let rpc = self.rpcs[id as usize].as_mut().expect("rpc");
            rpc.disk_parts -= 1;
            if rpc.disk_parts == 0 {
                self.on_rpc(id); // its Disk phase ends
            }
        }
        self.dispatch_disk(ost);
    }

    /// The service thread sends the reply (carrying `data` bytes: a short-io read's) and takes
    /// the next queued request.
    pub(super) fn reply(&mut self, id: u32, oss: usize, data: u64) {
        let c = &self.cfg.cluster;
        let (lat, svc, bw, stream) = (c.net_latency_ns, c.oss_service_ns, c.net_bandwidth_bps, c.net_stream_bps);
        let rpc = self.rpcs[id as usize].as_mut().expect("rpc");
        rpc.phase = RpcPhase::Reply;
        let leaves = if data > 0 {
            let client = rpc.client as usize;
            transfer(&mut self.oss[oss].up, &mut self.client_down[client], self.now, data, bw, stream)
        } else {
            self.now
        };
        self.schedule(leaves + lat, Ev::Rpc(id));
        let s = &mut self.oss[oss];
        if let Some(next) = s.queue.pop_front() {
            self.rpcs[next as usize].as_mut().expect("rpc").phase = RpcPhase::Service;
            self.schedule(self.now + svc, Ev::Rpc(next));
        } else {
            s.free_threads += 1;
        }
    }

    // ------------------------------------------------------------------ OSC: completions

    /// brw_interpret(): statistics, grant, pages, waiters, and the next RPCs.
    pub(super) fn on_reply(&mut self, id: u32) {
        let rpc = self.rpcs[id as usize].take().expect("rpc");
        self.free_rpcs.push(id);
        let now = self.now;
        let c = &self.cfg.cluster;
        let chunk_grant = 2 * (c.brw_size_bytes + EXTENT_TAX);
        let osc_i = rpc.osc;
        let osc = &mut self.oscs[osc_i as usize];
        let client = osc.client as usize;
        let bytes = rpc.pages * PAGE;
        let wait_us = ((now - rpc.sent_ns) / 1000) as i64;
        let (bytes_ctr, time_ctr) =
            if rpc.write { (OscCtr::WriteBytes, OscCtr::OstWrite) } else { (OscCtr::ReadBytes, OscCtr::OstRead) };
        let stats = &mut osc.counters_mut().stats;
        stats.add(OscCtr::ReqWaittime, wait_us);
        stats.add(bytes_ctr, bytes as i64);
        stats.add(time_ctr, wait_us);
        osc.last_reply_ns = now;
        if rpc.write {
            osc.w_in_flight -= 1;
            if rpc.hp {
                osc.hp_in_flight -= 1;
                if let Some(oc) = osc.objects.get_mut(&rpc.obj) {
                    oc.hp_in_flight -= 1;
                }
            }
            osc.osc_write_bytes += bytes;
            osc.dirty_pages -= rpc.pages.min(osc.dirty_pages);
            // osc_extent_finish() -> osc_free_grant(): the grant of each extent it carried
            let freed = bytes + rpc.extents.len() as u64 * EXTENT_TAX;
            osc.dirty_grant -= freed.min(osc.dirty_grant);
            // the OST hands out more grant, at most one chunk per reply, up to what the
            // client asks for: max_pages_per_rpc x (max_rpcs_in_flight + 1) or max_dirty_mb,
            // but never more than MAX_UNDIRTY (the extent taxes Lustre adds to the request,
            // 24 KiB per 128 MiB, are left out: they matter only under that cap). What counts
            // against it is all the grant the client holds: its available grant, what its
            // dirty pages hold, a page each and a tax per extent (docs/pfsim.md, "Grant": DIAL's
            // clients kept grant and dirty pages well under the cap while they wrote, as the
            // taxes of their small extents took the rest), and the grant it lost but has not
            // reported yet (o_dropped of its next bulk RPC)
            let want = ((osc.mppr * (osc.mrif as u64 + 1)).max(osc.max_dirty_pages) * PAGE).min(MAX_UNDIRTY);
            let have = osc.avail_grant + osc.dirty_grant + osc.lost_grant;
            if want > have {
                osc.avail_grant += (want - have).min(chunk_grant);
            }
            if let Some(oc) = osc.objects.get_mut(&rpc.obj) {
                for &(s, e) in &rpc.extents {
                    oc.writeback.remove(s, e);
                }
            }
            let cl = &mut self.clients[client];
            cl.dirty_pages -= rpc.pages.min(cl.dirty_pages);
            if !cl.held.is_empty() {
                for &(f, _) in &rpc.files {
                    self.release_held(client, f, rpc.obj, &rpc.extents);
                }
                // pages back in the LRU over the limit are reclaimed at once: under the node's
                // page cache the released ones first (`release_held`); under max_cached_mb as
                // Lustre's osc_lru_add_batch() queues its LRU work when the cache holds too much
                self.shrink_if_over(client);
            }
            let osc = &mut self.oscs[osc_i as usize];
            let mut waiters = std::mem::take(&mut osc.cache_waiters);
            waiters.append(&mut osc.writeback_waiters);
            for tid in waiters {
                self.schedule(now, Ev::Thread(tid));
            }
            for &(f, pages) in &rpc.files {
                let file = &mut self.files[f as usize];
                let removed = file.removed;
                let on = file.on_mut(client);
                on.dirty_pages -= pages.min(on.dirty_pages);
                on.writes_in_flight -= 1;
                if removed && on.writes_in_flight == 0 {
                    self.wake_removers(f, client as u32);
                }
                self.wake_fsync_waiters(f, client as u32);
            }
            for tid in rpc.sync_waiters {
                if let Some(op) = self.threads[tid as usize].op.as_mut() {
                    // the synchronous piece is on the OST: write the rest of the op
                    op.state = OpState::WaitCache;
                }
                self.schedule(now, Ev::Thread(tid));
            }
        } else {
            osc.r_in_flight -= 1;
            osc.osc_read_bytes += bytes;
            for ch in rpc.chunks {
                let (o, chunk) = self.chunks[ch as usize].take().expect("chunk");
                self.free_chunks.push(ch);
                let last = chunk.file_start + chunk.pages - 1;
                self.files[chunk.file as usize].on_mut(client).reading.remove(&chunk.file_start);
                self.insert_cached(client, chunk.file, chunk.file_start, last, o);
                if chunk.readahead {
                    let cl = &mut self.clients[client];
                    cl.ra_inflight_pages -= chunk.pages.min(cl.ra_inflight_pages);
                }
                for tid in chunk.waiters {
                    let th = &mut self.threads[tid as usize];
                    if let Some(op) = th.op.as_mut() {
                        if op.state == OpState::WaitIo {
                            op.waits -= 1;
                            if op.waits == 0 {
                                op.state = OpState::Running;
                                let t = now.max(op.ready_at);
                                self.schedule(t, Ev::Thread(tid));
                            }
                        }
                    }
                }
            }
        }
        self.check_rpcs(osc_i);
        // a reply may complete a lock callback of this OSC (its pages written, or read), which
        // may let a request through
        self.release_callbacks(osc_i);
    }
}
