//! Application threads: their operations in order (opens, closes, reads, writes, fsyncs,
//! removals), the compute between them, the barriers of IOR and h5bench, and the MDS round
//! trips of opens and closes.

use super::*;

impl Sim {
    /// Thread `tid` may go on: the next step of the operation it is in (a wait ended, its compute
    /// time passed, its system call is done), or its next operation.
    pub(super) fn on_thread(&mut self, tid: u32) {
        let th = &self.threads[tid as usize];
        if th.done {
            return;
        }
        if let Some(op) = th.op.clone() {
            match op.state {
                OpState::Copy | OpState::WaitCache => {
                    debug_assert!(op.state != OpState::Copy || self.now >= op.ready_at, "woken before its copy ended");
                    self.threads[tid as usize].op.as_mut().expect("op").state = OpState::Running;
                    if !self.continue_write(tid) {
                        return;
                    }
                    // every page is committed: the system call returns
                    if op.fsync && self.start_fsync(tid) {
                        return;
                    }
                    self.finish_op(tid);
                }
                OpState::Running => {
                    if op.kind == OpKind::Read && op.cursor < op.offset + op.len {
                        // the read's next cl_io iteration, under its own lock
                        self.threads[tid as usize].op.as_mut().expect("op").locked = false;
                        if self.ensure_locks(tid) {
                            self.begin_io(tid);
                        }
                        return;
                    }
                    if op.fsync && op.kind == OpKind::Write && self.start_fsync(tid) {
                        return;
                    }
                    self.finish_op(tid);
                }
                OpState::WaitLock => {
                    self.threads[tid as usize].op.as_mut().expect("op").state = OpState::Running;
                    if self.ensure_locks(tid) {
                        self.begin_io(tid);
                    }
                    return;
                }
                OpState::Think => {
                    if self.now >= self.threads[tid as usize].stop_ns {
                        self.retire(tid);
                    } else if !op.between.is_empty() {
                        // after the compute time, the steps before the op (a collective open)
                        self.threads[tid as usize].op.as_mut().expect("op").state = OpState::Between;
                        self.run_between(tid);
                    } else {
                        // the system call begins now, after the compute time
                        let now = self.now;
                        let op = self.threads[tid as usize].op.as_mut().expect("op");
                        (op.state, op.started_ns, op.ready_at) = (OpState::Running, now, now);
                        self.issue_op(tid);
                    }
                    return;
                }
                OpState::Between => {
                    if self.now >= self.threads[tid as usize].stop_ns {
                        self.retire(tid);
                    } else {
                        self.run_between(tid);
                    }
                    return;
                }
                OpState::WaitRemove => {
                    let f = op.file as usize;
                    let client = self.threads[tid as usize].client as usize;
                    if self.now >= op.ready_at && self.files[f].on(client).writes_in_flight == 0 {
                        self.threads[tid as usize].op.as_mut().expect("op").state = OpState::Between;
                        self.run_between(tid);
                    }
                    return;
                }
                OpState::WaitIo | OpState::WaitSync | OpState::WaitBarrier => return,
            }
        }
        let th = &self.threads[tid as usize];
        if self.now >= th.stop_ns {
            self.retire(tid);
            return;
        }
        self.start_op(tid);
    }

    /// The thread is done; ranks of its job at a barrier wait for it no more.
    pub(super) fn retire(&mut self, tid: u32) {
        let th = &mut self.threads[tid as usize];
        th.op = None;
        th.done = true;
        let job = th.job as usize;
        let rank0 = matches!(th.role, Role::H5 { rank: 0, write: false, .. });
        self.live_threads[job] -= 1;
        if !self.barriers[job].is_empty() && self.barriers[job].len() as u32 >= self.live_threads[job] {
            self.release_barrier(job, None);
        }
        if rank0 {
            // the others open what is left without it (a rank 0 that stops with the run)
            self.h5_rank0_opens(job, u64::MAX);
        }
    }

    /// Rank 0 of BDCATS-IO job `job` has opened its first `opened` datasets: the ranks waiting
    /// to open one of those go on.
    pub(super) fn h5_rank0_opens(&mut self, job: usize, opened: u64) {
        self.h5_opened[job] = opened;
        let waiting = std::mem::take(&mut self.h5_waiting[job]);
        for (tid, dataset) in waiting {
            if dataset < opened {
                self.threads[tid as usize].op.as_mut().expect("op").state = OpState::Between;
                self.schedule(self.now, Ev::Thread(tid));
            } else {
                self.h5_waiting[job].push((tid, dataset));
            }
        }
    }

    /// Every rank waiting at `job`'s barrier goes on (but `except`, which is going on already).
    pub(super) fn release_barrier(&mut self, job: usize, except: Option<u32>) {
        for tid in std::mem::take(&mut self.barriers[job]) {
            if Some(tid) != except {
                self.threads[tid as usize].op.as_mut().expect("op").state = OpState::Between;
                self.schedule(self.now, Ev::Thread(tid));
            }
        }
    }

    /// Draw thread `tid`'s next request from its workload; it starts now, or after its compute
    /// time (h5bench, DLIO). A thread whose workload is done retires.
    pub(super) fn start_op(&mut self, tid: u32) {
        let th = &mut self.threads[tid as usize];
        let job = &self.cfg.jobs[th.job as usize];
        let now = self.now;
        let req = match th.role {
            Role::Ior { .. } => Some(workload::next_ior(th.role, job, &mut th.pos, &mut th.phase, self.cfg.seed)),
            Role::H5 { .. } => workload::next_h5(th.role, job, &mut th.prog, now),
            Role::Dlio { .. } => workload::next_dlio(th.role, job, &mut th.prog, now, self.cfg.seed),
            r => {
                let eof = self.files[th.files[0] as usize].size;
                Some(workload::next_filebench(r, job, &mut th.pos, &mut th.phase, &mut self.rng, eof))
            }
        };
        let Some(req) = req else {
            // the workload has nothing more to do
            self.retire(tid);
            return;
        };
        let file = th.files[req.file_slot];
        if req.reopen {
            th.ras[req.file_slot] = Readahead::default();
        }
        if req.kind == OpKind::Write {
            // a write past the end grows the file (filebench's sequential writers never seek
            // back): readers of the file then read, and read ahead, to its new end
            let f = &mut self.files[file as usize];
            f.size = f.size.max(req.offset.saturating_add(req.len));
        }
        th.op = Some(Op {
            kind: req.kind,
            file,
            offset: req.offset,
            len: req.len,
            cursor: req.offset,
            copied: req.offset,
            started_ns: self.now,
            state: OpState::Running,
            waits: 0,
            ready_at: self.now,
            fsync: req.fsync_after,
            fsync_ns: None,
            locked: false,
            slot: req.file_slot,
            reopen: req.reopen,
            between: req.between,
        });
        if req.start_at > now {
            // compute time first (h5bench, DLIO); the steps before the op come after it
            self.threads[tid as usize].op.as_mut().expect("op").state = OpState::Think;
            self.schedule(req.start_at, Ev::Thread(tid));
        } else if !req.between.is_empty() {
            self.threads[tid as usize].op.as_mut().expect("op").state = OpState::Between;
            self.run_between(tid);
        } else {
            self.issue_op(tid);
        }
    }

    /// The thread's new op goes to the file system: after an open if it reopens the file, once
    /// it holds its extent locks.
    pub(super) fn issue_op(&mut self, tid: u32) {
        let th = &self.threads[tid as usize];
        if let Role::H5 { rank: 0, .. } = th.role {
            let job = th.job as usize;
            if let Some(dataset) = workload::h5_read_opens(th.role, &self.cfg.jobs[job], th.prog.step - 1) {
                self.h5_rank0_opens(job, dataset + 1);
            }
        }
        let th = &self.threads[tid as usize];
        let client = th.client as usize;
        let op = th.op.as_ref().expect("op");
        if op.reopen {
            let t = self.reopen(client);
            // the op begins once the file is open again
            self.threads[tid as usize].op.as_mut().expect("op").state = OpState::WaitLock;
            self.schedule(t, Ev::Thread(tid));
        } else if self.ensure_locks(tid) {
            self.begin_io(tid);
        }
    }

    /// Close and open a file: two RPCs to the one MDS, which serves them in order (its service
    /// time is the OSS's). Returns when the open's reply is back.
    pub(super) fn reopen(&mut self, client: usize) -> u64 {
        let closed = self.mds_rpc(client, self.now, LliteCtr::Close);
        self.mds_rpc(client, closed, LliteCtr::Open)
    }

    /// One RPC to the MDS sent at `t`, counted as `ctr` in the client's llite stats; returns
    /// when its reply is back.
    pub(super) fn mds_rpc(&mut self, client: usize, t: u64, ctr: LliteCtr) -> u64 {
        let c = &self.cfg.cluster;
        let (lat, svc) = (c.net_latency_ns, c.oss_service_ns.max(1));
        let start = (t + lat).max(self.mds_free_at);
        self.mds_free_at = start + svc;
        let done = start + svc + lat;
        self.clients[client].stats.add(ctr, ((done - t) / 1000) as i64);
        done
    }

    // ------------------------------------------------ IOR between phases, h5bench's collective opens

    /// Take the op's steps (`Op::between`: IOR's between phases, BDCATS-IO's collective open)
    /// until one waits; then issue the op on the thread's file as it is now (a removal gives the
    /// next IOR repetition a new file).
    pub(super) fn run_between(&mut self, tid: u32) {
        loop {
            let th = &mut self.threads[tid as usize];
            let op = th.op.as_mut().expect("op");
            let Some((&step, rest)) = op.between.split_first() else { break };
            op.between = rest;
            match step {
                Step::Barrier => {
                    let job = th.job as usize;
                    self.barriers[job].push(tid);
                    if (self.barriers[job].len() as u32) < self.live_threads[job] {
                        self.threads[tid as usize].op.as_mut().expect("op").state = OpState::WaitBarrier;
                        return;
                    }
                    // the last rank in: everyone goes on (a release by a rank that stops, in
                    // retire(), ends no phase and is not recorded)
                    self.barrier_ns[job].push(self.now);
                    self.release_barrier(job, Some(tid));
                }
                Step::Remove => {
                    if self.remove_file(tid) {
                        return;
                    }
                }
                Step::AfterRank0Opens => {
                    let job = th.job as usize;
                    let dataset = workload::h5_read_opens(th.role, &self.cfg.jobs[job], th.prog.step - 1)
                        .expect("only BDCATS-IO opens wait for rank 0");
                    if dataset >= self.h5_opened[job] {
                        self.h5_waiting[job].push((tid, dataset));
                        self.threads[tid as usize].op.as_mut().expect("op").state = OpState::WaitBarrier;
                        return;
                    }
                }
            }
        }
        if self.now >= self.threads[tid as usize].stop_ns {
            self.retire(tid);
            return;
        }
        // the op begins now: its latency does not count the barriers and the removal
        let now = self.now;
        let th = &mut self.threads[tid as usize];
        let op = th.op.as_mut().expect("op");
        (op.file, op.state, op.started_ns, op.ready_at) = (th.files[op.slot], OpState::Running, now, now);
        self.issue_op(tid);
    }

    /// IOR's `RemoveFile()` at the end of a repetition, by the rank that removes (each rank its
    /// own file with a file per process, rank 0 a shared file): an unlink RPC to the MDS, and
    /// every client drops the file's dirty and cached pages (on the remover's node
    /// `ll_delete_inode()` discards them, `CL_FSYNC_DISCARD`; elsewhere the OST objects'
    /// destruction calls the locks back with `LDLM_FL_DISCARD_DATA`, which pfsim does at once).
    /// Pages already in write RPCs are not recalled: the remover waits for those of its node
    /// (`truncate_inode_pages_final()` waits on `PG_writeback`). The threads' next phase works on
    /// a new file, with new objects placed as the first were. Returns true when the remover waits.
    pub(super) fn remove_file(&mut self, tid: u32) -> bool {
        let th = &self.threads[tid as usize];
        let Role::Ior { rank, .. } = th.role else { return false };
        let job = &self.cfg.jobs[th.job as usize];
        let ior = job.ior.as_ref().expect("checked in config");
        if !ior.file_per_process && rank != 0 {
            return false;
        }
        let (client, old) = (th.client as usize, th.files[0]);
        let (stripes, stripe_size) = (job.stripe_count, job.stripe_size);
        let unlinked = self.mds_rpc(client, self.now, LliteCtr::Unlink);
        self.discard_file(old);
        let new = self.create_file(self.files[old as usize].size, stripes, stripe_size);
        for th in &mut self.threads {
            for f in th.files.iter_mut().filter(|f| **f == old) {
                *f = new;
            }
        }
        let op = self.threads[tid as usize].op.as_mut().expect("op");
        (op.file, op.ready_at, op.state) = (old, unlinked, OpState::WaitRemove);
        self.schedule(unlinked, Ev::Thread(tid));
        true
    }

    /// Drop every page of `file` from every client: dirty ones leave their OSC's extents as if
    /// sent (`osc_cache_writeback_range()` with discard), cached ones leave the page cache.
    pub(super) fn discard_file(&mut self, file: u32) {
        self.files[file as usize].removed = true;
        // the objects' destruction cancels every lock on them: they leave their OSCs' counts
        let f = &self.files[file as usize];
        for (stripe, &ost) in f.osts.iter().enumerate() {
            for l in &f.locks[stripe] {
                self.oscs[self.clients[l.client as usize].oscs[ost as usize] as usize].locks -= 1;
            }
        }
        for client in 0..self.clients.len() {
            self.clients[client].ra_marks.remove(&file);
            if let Some(held) = self.clients[client].held.remove(&file) {
                let f = &self.files[file as usize];
                let runs: Vec<(u64, u64)> = held.iter().flat_map(|(&s, &e)| f.chunks(s, e)).collect();
                for (s, e) in runs {
                    let o = self.lru_osc(client, file, s);
                    self.uncache(client, file, s, e, o);
                }
            }
            let f = &self.files[file as usize];
            let on = f.on(client);
            if on.cache.is_empty() && on.dirty_pages == 0 {
                continue; // nothing of it on this client (most, on a large cluster)
            }
            let objects: Vec<(u32, u64)> =
                f.osts.iter().zip(&f.obj_ids).map(|(&o, &obj)| (self.clients[client].oscs[o as usize], obj)).collect();
            for (osc_i, obj) in objects {
                let osc = &mut self.oscs[osc_i as usize];
                let Some(oc) = osc.objects.get_mut(&obj) else { continue };
                let extents = std::mem::take(&mut oc.extents);
                (oc.full, oc.urgent, oc.hp) = Default::default();
                if oc.writeback.is_empty() && oc.hp_in_flight == 0 {
                    osc.objects.remove(&obj);
                }
                // osc_extent_finish() of an extent never sent: its grant is lost (reported back
                // to the OST with the next RPC), but for one page borrowed by osc_free_grant()
                // (what the extents hold: less where pages went in synchronously, without grant)
                let pages: u64 = extents.iter().map(|(s, e)| e.pages(*s)).sum();
                let lost = (pages * PAGE + extents.len() as u64 * EXTENT_TAX).min(osc.dirty_grant);
                osc.dirty_grant -= lost;
                osc.lost_grant += lost;
                let borrow = PAGE + EXTENT_TAX;
                if osc.avail_grant < borrow && osc.lost_grant >= borrow {
                    osc.avail_grant += borrow;
                    osc.lost_grant -= borrow;
                }
                osc.dirty_pages -= pages.min(osc.dirty_pages);
                osc.pending_w_pages -= pages.min(osc.pending_w_pages);
                // every write of the file has returned (its ranks are past it), so no thread
                // waits for one of these extents to reach the OST
                debug_assert!(extents.values().all(|e| e.sync_waiter.is_none()));
                let woken = std::mem::take(&mut osc.cache_waiters);
                let cl = &mut self.clients[client];
                cl.dirty_pages -= pages.min(cl.dirty_pages);
                let fd = &mut self.files[file as usize].on_mut(client).dirty_pages;
                *fd -= pages.min(*fd);
                for w in woken {
                    self.schedule(self.now, Ev::Thread(w));
                }
                self.check_rpcs(osc_i);
            }
            // every other cached page lies in an LRU entry of the client
            let entries: Vec<LruEntry> = self.clients[client].lru.iter().filter(|e| e.file() == file).copied().collect();
            for e in entries {
                let o = self.lru_osc(client, file, e.first());
                self.uncache(client, file, e.first(), e.last(), o);
            }
            self.clients[client].lru.retain(|e| e.file() != file);
        }
        if !self.callbacks.is_empty() && self.finish_callbacks(crate::dlm::Pending::All) > 0 {
            self.process_lock_queue();
        }
    }

    /// The op holds its locks: move its data.
    pub(super) fn begin_io(&mut self, tid: u32) {
        match self.threads[tid as usize].op.as_ref().expect("op").kind {
            OpKind::Write => self.start_copy(tid),
            OpKind::Read => {
                let slot = self.threads[tid as usize].op.as_ref().expect("op").slot;
                self.start_read(tid, slot)
            }
        }
    }

    /// Thread `tid`'s system call is done: count it in its client's llite `stats` (an fsync
    /// after a write as `fsync`) and in its h5bench timestep.
    pub(super) fn finish_op(&mut self, tid: u32) {
        let th = &mut self.threads[tid as usize];
        let Some(op) = th.op.take() else { return };
        let client = &mut self.clients[th.client as usize];
        let lat_us = ((self.now - op.started_ns) / 1000) as i64;
        match op.kind {
            OpKind::Read => {
                client.stats.add(LliteCtr::ReadBytes, op.len as i64);
                client.stats.add(LliteCtr::Read, lat_us);
                client.app_read_bytes += op.len;
            }
            OpKind::Write => {
                match op.fsync_ns {
                    // the write was counted when its copy ended; this is the end of its fsync
                    Some(t) => client.stats.add(LliteCtr::Fsync, ((self.now - t) / 1000) as i64),
                    None => {
                        client.stats.add(LliteCtr::WriteBytes, op.len as i64);
                        client.stats.add(LliteCtr::Write, lat_us);
                    }
                }
                client.app_write_bytes += op.len;
            }
        }
        self.h5_request_done(tid);
    }

    /// An h5bench rank's request has ended: if it was the last of a timestep, count the rank
    /// as done with that timestep.
    pub(super) fn h5_request_done(&mut self, tid: u32) {
        let th = &self.threads[tid as usize];
        if !matches!(th.role, Role::H5 { .. }) {
            return; // every op ends here: the others leave at once
        }
        let job = th.job as usize;
        let Some(t) = workload::h5_timestep_done(th.role, &self.cfg.jobs[job], th.prog.step) else { return };
        let steps = &mut self.h5_steps[job];
        if steps.len() <= t as usize {
            steps.resize(t as usize + 1, (0, 0));
        }
        steps[t as usize].0 += 1;
        steps[t as usize].1 = self.now;
    }
}
