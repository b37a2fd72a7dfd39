//! The event loop and the cluster's state: the `Sim` (clients, OSCs, files, threads, OSS, OST
//! devices, links), its event queue, and the checks of its invariants. Each component's behaviour
//! lives in a module of its own:
//!
//! - `setup`: building a `Sim` from a `Config`;
//! - `threads`: application threads and their operations;
//! - `write`: llite writes into the OSC's dirty extents, grant and dirty limits, fsync, flusher;
//! - `read`: llite reads, read-ahead, read chunks;
//! - `cache`: the page cache, its LRU and its reclaim;
//! - `rpc`: RPC formation, the in-flight limit, network, OSS, OST devices, replies;
//! - `crate::dlm` (beside this module): extent locks on shared files.
//!
//! Time is in nanoseconds. Pages are ranges: no event is ever per page.

mod cache;
mod read;
mod rpc;
mod setup;
mod threads;
mod write;

pub use write::adjust_max_dirty;
pub(crate) use read::read_iteration;
pub(crate) use write::next_batch;

// The component modules take these through `use super::*`.
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use crate::config::{Config, JobConfig};
use crate::device::{transfer, Device, Disk, Elevator, Link, Request};
use crate::intervals::{interval_insert, interval_remove, overlapping, push_run, run_gaps};
use crate::model::*;
use crate::queue::EventQueue;
use crate::rng::Rng;
use crate::stats::{ImportState, LliteCtr, LliteStats, OscCtr, RaCtr, RaStats, TextStyle};
use crate::workload::{self, Role};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ev {
    /// An application thread may continue (its op is done, or it retries admission).
    Thread(u32),
    /// The client has set up the pages of a read chunk; it joins the OSC's queue.
    ChunkReady(u32, u32),
    /// An RPC reaches the next step of its life (see `RpcPhase`).
    Rpc(u32),
    /// The kernel flusher of a client.
    Flusher(u32),
    /// An OST device behind an elevator finished its request (its RPCs go on, the next starts).
    Disk(u32),
    /// The pinger of a client looks at its OSCs' imports (`ptlrpc_pinger_main()`).
    Pinger(u32),
}

/// An RPC an OSC sends besides its bulk reads and writes: an extent lock enqueue, a lock cancel,
/// an `OST_SYNC`, and the import's own: a ping, an idle disconnect, a reconnect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum OtherRpc {
    Enqueue,
    Cancel,
    Sync,
    Ping,
    Disconnect,
    /// A disconnect counted as `OscCounters::connected` shows it (the OSC's counters unboxed).
    QuietDisconnect,
    Connect,
}

impl OtherRpc {
    /// The `osc.*.stats` opcode counter its reply adds to (an enqueue is counted at send, in
    /// `ldlm_extent_enqueue`).
    fn counter(self) -> Option<OscCtr> {
        match self {
            OtherRpc::Enqueue => None,
            OtherRpc::Cancel => Some(OscCtr::LdlmCancel),
            OtherRpc::Sync => Some(OscCtr::OstSync),
            OtherRpc::Ping => Some(OscCtr::ObdPing),
            OtherRpc::Disconnect => Some(OscCtr::OstDisconnect),
            OtherRpc::QuietDisconnect => None,
            OtherRpc::Connect => Some(OscCtr::OstConnect),
        }
    }
}

/// OSS: NRS FIFO request queue served by a pool of service threads.
#[derive(Debug, Default)]
pub struct Oss {
    pub free_threads: usize,
    pub queue: std::collections::VecDeque<u32>,
    pub up: Link,
    pub down: Link,
}

/// The whole simulated cluster.
pub struct Sim {
    pub cfg: Config,
    pub style: TextStyle,
    pub now: u64,
    pub events: u64,
    seq: u64,
    queue: EventQueue<Ev>,
    pub rng: Rng,
    pub clients: Vec<Client>,
    pub oscs: Vec<Osc>,
    pub files: Vec<File>,
    pub threads: Vec<Thread>,
    pub oss: Vec<Oss>,
    pub devices: Vec<Device>,
    /// Each OST device's mq-deadline elevator; empty when requests go straight to the devices
    /// (`ost_scheduler: none`).
    elevators: Vec<Elevator>,
    pub client_up: Vec<Link>,
    pub client_down: Vec<Link>,
    rpcs: Vec<Option<Rpc>>,
    free_rpcs: Vec<u32>,
    chunks: Vec<Option<(u32, ReadChunk)>>,
    free_chunks: Vec<u32>,
    next_obj_id: u64,
    next_ost: u32,
    /// Events processed by kind: application threads, read set-up, RPC steps, flusher ticks,
    /// device completions behind an elevator, pinger wake-ups (what a run spends its time on).
    pub ev_kinds: [u64; 6],
    /// When the MDS is next free to serve an open or close.
    mds_free_at: u64,
    /// Called-back locks waiting for their holders.
    pub(crate) callbacks: crate::callbacklist::CallbackList,
    /// Lock requests waiting at the OSTs.
    pub(crate) lock_queue: crate::lockqueue::LockQueue,
    /// Per job: its threads not yet done, and those waiting at its barrier (IOR).
    live_threads: Vec<u32>,
    barriers: Vec<Vec<u32>>,
    /// Per job: when each of its barriers let its ranks go on (IOR's phase boundaries).
    barrier_ns: Vec<Vec<u64>>,
    /// Per job (BDCATS-IO): datasets rank 0 has opened (`u64::MAX` once it is done), and the
    /// other ranks waiting to open theirs, with the dataset each waits for.
    h5_opened: Vec<u64>,
    h5_waiting: Vec<Vec<(u32, u64)>>,
    /// Per job (h5bench): per timestep, how many ranks have finished it, and when the last did.
    h5_steps: Vec<Vec<(u32, u64)>>,
    /// Scratch for the extents around a write (`neighbours`), kept to spare an allocation per
    /// write system call.
    near_buf: Vec<(u64, Extent)>,
    /// RPCs of the OSCs other than bulk reads and writes (`OtherRpc`) whose replies are not back:
    /// (reply time, OSC, kind, round trip in µs), the first reply on top. Their round trip is
    /// fixed, so they take no event: a reply is counted before the first event at or after it
    /// (and at the end of `run_until`).
    other_rpcs: BinaryHeap<Reverse<(u64, u32, OtherRpc, i64)>>,
}

/// How long the simulated clients have been up when a scenario starts.
pub const UPTIME_AT_START_NS: u64 = 86_400_000_000_000;

fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

/// The import of `osc` goes to `state` at clock second `secs` (`import_set_state_nolock()`:
/// the state and an entry of its history, of which the `state` file shows the last 16).
fn push_state(osc: &mut Osc, secs: u64, state: ImportState) {
    osc.import = state;
    osc.state_hist.push((secs, state));
    // with the mount's CONNECTING and FULL before them, the last 16 are shown
    if osc.state_hist.len() > 16 {
        osc.state_hist.remove(0);
    }
}

impl Sim {
    pub(crate) fn schedule(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.queue.push(t.max(self.now), self.seq, ev);
    }

    /// Process every event up to and including time `t`, then set the clock to `t`.
    pub fn run_until(&mut self, t: u64) {
        while let Some((at, ev)) = self.queue.pop_until(t) {
            if self.other_rpcs.peek().is_some_and(|r| r.0 .0 <= at) {
                self.settle_other_rpcs(at);
            }
            self.now = at;
            self.events += 1;
            let kind = match ev {
                Ev::Thread(_) => 0,
                Ev::ChunkReady(..) => 1,
                Ev::Rpc(_) => 2,
                Ev::Flusher(_) => 3,
                Ev::Disk(_) => 4,
                Ev::Pinger(_) => 5,
            };
            self.ev_kinds[kind] += 1;
            match ev {
                Ev::Thread(tid) => self.on_thread(tid),
                Ev::ChunkReady(osc, first) => {
                    // a batch's pieces, in order
                    let mut next = Some(first);
                    while let Some(ch) = next {
                        let (pages, after) = (self.chunk(ch).pages, self.chunk(ch).next);
                        let o = &mut self.oscs[osc as usize];
                        o.read_queue.push_back(ch);
                        o.pending_r_pages += pages;
                        next = after;
                    }
                    self.check_rpcs(osc);
                }
                Ev::Rpc(id) => self.on_rpc(id),
                Ev::Flusher(ci) => self.on_flusher(ci),
                Ev::Disk(ost) => self.on_disk_done(ost as usize),
                Ev::Pinger(ci) => self.on_pinger(ci),
            }
        }
        self.now = self.now.max(t);
        self.settle_other_rpcs(self.now);
    }

    /// OSC `osc_i` sends an `OtherRpc` whose reply comes `rtt` after it leaves: it is in flight
    /// on the import until then, and `req_active` counts the RPCs in flight with it
    /// (`ptl_send_rpc()`). It leaves now, or once an idle import has connected again
    /// ([`Sim::when_connected`]). Returns when its reply comes.
    pub(crate) fn send_other_rpc(&mut self, osc_i: u32, kind: OtherRpc, rtt: u64) -> u64 {
        let sent = match kind {
            OtherRpc::Disconnect | OtherRpc::Connect => self.now,
            _ => self.when_connected(osc_i),
        };
        self.send_other_rpc_at(osc_i, kind, sent, rtt)
    }

    fn send_other_rpc_at(&mut self, osc_i: u32, kind: OtherRpc, sent: u64, rtt: u64) -> u64 {
        let osc = &mut self.oscs[osc_i as usize];
        osc.other_in_flight += 1;
        osc.next_ping_ns = sent + PING_INTERVAL_NS; // ptlrpc_pinger_sending_on_import()
        let wait_us = (rtt / 1000) as i64;
        let mut kind = kind;
        if kind == OtherRpc::Disconnect && osc.counters.is_none() {
            // counted as `OscCounters::connected` shows it, to keep the counters unboxed
            osc.quiet_disconnect_us = wait_us as u32;
            kind = OtherRpc::QuietDisconnect;
        } else {
            let inflight = osc.r_in_flight + osc.w_in_flight + osc.other_in_flight;
            osc.counters_mut().stats.add(OscCtr::ReqActive, inflight as i64);
        }
        self.other_rpcs.push(Reverse((sent + rtt, osc_i, kind, wait_us)));
        sent + rtt
    }

    /// The replies of `OtherRpc`s due by `t`: `req_waittime` and the opcode's counter take their
    /// round trip (`after_reply()`), they leave the import's in-flight count, and the import
    /// notes the reply (`reply_in_callback()`). A disconnect's reply leaves the import IDLE, or
    /// connecting again when an RPC waits for it; a connect's leaves it FULL.
    fn settle_other_rpcs(&mut self, t: u64) {
        while let Some(&Reverse((reply_ns, osc_i, kind, wait_us))) = self.other_rpcs.peek() {
            if reply_ns > t {
                return;
            }
            self.other_rpcs.pop();
            let secs = self.clock_secs(reply_ns);
            let osc = &mut self.oscs[osc_i as usize];
            osc.other_in_flight -= 1;
            osc.last_reply_ns = reply_ns;
            if kind != OtherRpc::QuietDisconnect {
                let stats = &mut osc.counters_mut().stats;
                stats.add(OscCtr::ReqWaittime, wait_us);
                if let Some(c) = kind.counter() {
                    stats.add(c, wait_us);
                }
            }
            match kind {
                OtherRpc::Disconnect | OtherRpc::QuietDisconnect => {
                    osc.disconnecting = false;
                    if osc.reconnect_queued {
                        // ptlrpc_disconnect_idle_interpret(): requests wait, so connect again
                        osc.reconnect_queued = false;
                        push_state(osc, secs, ImportState::New);
                        push_state(osc, secs, ImportState::Connecting);
                        let rtt = osc.connect_done_ns - reply_ns;
                        self.send_other_rpc_at(osc_i, OtherRpc::Connect, reply_ns, rtt);
                    } else {
                        push_state(osc, secs, ImportState::Idle);
                    }
                }
                OtherRpc::Connect => push_state(osc, secs, ImportState::Full),
                _ => {}
            }
        }
    }

    /// When OSC `osc_i`'s import can send an RPC: now when it is FULL; when it is IDLE, once a
    /// connect started now is back (`ptlrpc_reconnect_if_idle()`: the request waits for it); while
    /// its idle disconnect is under way, once the disconnect and a connect after it are back.
    pub(crate) fn when_connected(&mut self, osc_i: u32) -> u64 {
        if self.oscs[osc_i as usize].import == ImportState::Full {
            return self.now; // the usual case: every lock enqueue and cancel asks
        }
        let rtt = self.import_rtt();
        let secs = self.clock_secs(self.now);
        let osc = &mut self.oscs[osc_i as usize];
        match osc.import {
            ImportState::Idle => {
                push_state(osc, secs, ImportState::Connecting);
                osc.conn_cnt += 1;
                osc.connect_done_ns = self.now + rtt;
                self.send_other_rpc_at(osc_i, OtherRpc::Connect, self.now, rtt)
            }
            _ if osc.disconnecting => {
                if !osc.reconnect_queued {
                    osc.reconnect_queued = true;
                    osc.conn_cnt += 1;
                    osc.connect_done_ns += rtt;
                }
                osc.connect_done_ns
            }
            _ => osc.connect_done_ns,
        }
    }

    /// Round trip of an RPC the OSS answers without the disk (ping, connect, disconnect).
    fn import_rtt(&self) -> u64 {
        let c = &self.cfg.cluster;
        2 * c.net_latency_ns + c.oss_service_ns + c.client_rpc_ns
    }

    /// The pinger of client `ci` wakes (`ptlrpc_pinger_main()`): each import due within
    /// `PING_SLACK_NS` is pinged, or, when idle, disconnected; it sleeps until the next import is
    /// due, `PING_INTERVAL` at most.
    fn on_pinger(&mut self, ci: u32) {
        let now = self.now;
        let rtt = self.import_rtt();
        let oscs = self.clients[ci as usize].oscs.clone();
        for &osc_i in &oscs {
            let osc = &self.oscs[osc_i as usize];
            if osc.next_ping_ns >= now + PING_SLACK_NS || osc.import != ImportState::Full || !osc.active {
                continue; // not due, not FULL or deactivated: not pinged (ptlrpc_pinger_process_import())
            }
            if self.import_is_idle(osc_i) {
                // ptlrpc_disconnect_and_idle_import()
                let secs = self.clock_secs(now);
                let osc = &mut self.oscs[osc_i as usize];
                osc.disconnecting = true;
                push_state(osc, secs, ImportState::Connecting);
                let back = self.send_other_rpc_at(osc_i, OtherRpc::Disconnect, now, rtt);
                self.oscs[osc_i as usize].connect_done_ns = back;
            } else {
                self.send_other_rpc_at(osc_i, OtherRpc::Ping, now, rtt);
            }
        }
        // pinger_check_timeout(): the nearest next ping still ahead, PING_INTERVAL at most
        let next = oscs
            .iter()
            .map(|&o| self.oscs[o as usize].next_ping_ns)
            .filter(|&t| t > now)
            .fold(now + PING_INTERVAL_NS, u64::min);
        self.schedule(next, Ev::Pinger(ci));
    }

    /// `ptlrpc_check_import_is_idle()`: no request on the import, no lock in the OSC's namespace
    /// (a lock request waiting at the OST is a request), and no reply for `idle_timeout` seconds
    /// (0: never idle). Seconds as the kernel counts them, whole seconds of the clock.
    pub(crate) fn import_is_idle(&self, osc_i: u32) -> bool {
        let osc = &self.oscs[osc_i as usize];
        osc.idle_timeout != 0
            && osc.locks == 0
            && osc.lock_requests == 0
            && osc.r_in_flight + osc.w_in_flight + osc.other_in_flight == 0
            && osc.read_queue.is_empty()
            && osc.dirty_pages == 0
            && self.secs_since_reply(osc) >= osc.idle_timeout as u64
    }

    /// Whole seconds since `osc`'s last reply, as the idle check and the `import` file's `idle:`
    /// count them (`ktime_get_real_seconds() - imp_last_reply_time`; the kernel subtracts whole
    /// seconds, so it may count one more than this floor of the difference).
    pub(crate) fn secs_since_reply(&self, osc: &Osc) -> u64 {
        self.now.saturating_sub(osc.last_reply_ns) / 1_000_000_000
    }

    /// Whole seconds of wall-clock time (`ktime_get_real_seconds()`) at simulated time `t`.
    pub(crate) fn clock_secs(&self, t: u64) -> u64 {
        (self.cfg.start_epoch_ns + t) / 1_000_000_000
    }

    /// The clock the statistics headers print: wall-clock time, or for 2.15.0/2.15.1 (LU-16231)
    /// the time since boot (the client booted `UPTIME_AT_START_NS` before the scenario began).
    pub fn clock_ns(&self) -> u64 {
        if self.style == TextStyle::V2_15_0 {
            UPTIME_AT_START_NS + self.now
        } else {
            self.cfg.start_epoch_ns + self.now
        }
    }

    /// Read chunk `id` (it must be live).
    fn chunk(&self, id: u32) -> &ReadChunk {
        &self.chunks[id as usize].as_ref().expect("live chunk").1
    }

    /// Per job, the times at which its barriers were passed by all its ranks, in order. An IOR
    /// repetition passes three: after the write phase, after the read phase, after the removal.
    pub fn barrier_times(&self) -> &[Vec<u64>] {
        &self.barrier_ns
    }

    /// Per job: the training steps each DLIO loader thread has ended by now (empty for other
    /// workloads).
    pub fn dlio_steps(&self) -> Vec<Vec<u64>> {
        let mut out = vec![Vec::new(); self.cfg.jobs.len()];
        for th in &self.threads {
            if let Role::Dlio { .. } = th.role {
                let job = &self.cfg.jobs[th.job as usize];
                out[th.job as usize].push(workload::dlio_steps_done(job, &th.prog, self.now));
            }
        }
        out
    }

    /// Per job: for h5bench, the bytes its ranks move per timestep and the times at which all of
    /// them had finished each timestep, in order, up to the first one some rank has not
    /// finished; for other workloads `(0, [])`.
    pub fn h5_timesteps(&self) -> Vec<(u64, Vec<u64>)> {
        let jobs = self.cfg.jobs.iter().zip(&self.h5_steps);
        jobs.map(|(job, steps)| match &job.h5bench {
            Some(h5) => {
                let ranks = h5.processes;
                let done = steps.iter().take_while(|(n, _)| *n >= ranks).map(|(_, t)| *t).collect();
                (workload::h5_timestep_bytes(job), done)
            }
            None => (0, Vec::new()),
        })
        .collect()
    }

    pub fn totals(&self) -> Totals {
        let mut t = Totals { sim_ns: self.now, events: self.events, ..Default::default() };
        for c in &self.clients {
            t.app_read_bytes += c.app_read_bytes;
            t.app_write_bytes += c.app_write_bytes;
        }
        for o in &self.oscs {
            t.osc_read_bytes += o.osc_read_bytes;
            t.osc_write_bytes += o.osc_write_bytes;
        }
        t
    }

    /// Checks of the invariants the property tests rely on; returns a description of the first
    /// violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        // each OSC counts the locks it holds on files not removed; an import with bulk RPCs in
        // flight is connected
        let mut locks = vec![0u32; self.oscs.len()];
        for f in self.files.iter().filter(|f| !f.removed) {
            for (stripe, &ost) in f.osts.iter().enumerate() {
                for l in &f.locks[stripe] {
                    locks[self.clients[l.client as usize].oscs[ost as usize] as usize] += 1;
                }
            }
        }
        if let Some(i) = (0..self.oscs.len()).find(|&i| self.oscs[i].locks != locks[i]) {
            return Err(format!("{}: {} locks counted, {} held", self.oscs[i].name, self.oscs[i].locks, locks[i]));
        }
        if let Some(o) = self.oscs.iter().find(|o| o.import != ImportState::Full && o.r_in_flight + o.w_in_flight > 0) {
            return Err(format!("{}: {} with bulk RPCs in flight", o.name, o.import.name()));
        }
        // pages of the write RPCs in flight, per OSC
        let mut in_flight = vec![0u64; self.oscs.len()];
        let mut extents_in_flight = vec![0u64; self.oscs.len()];
        for r in self.rpcs.iter().flatten().filter(|r| r.write) {
            in_flight[r.osc as usize] += r.pages;
            extents_in_flight[r.osc as usize] += r.extents.len() as u64;
        }
        for (i, o) in self.oscs.iter().enumerate() {
            let hists = &o.counters().hists;
            let hist_r = hists.read_pages.total();
            let hist_w = hists.write_pages.total();
            if hists.read_rif.total() != hist_r || hists.write_rif.total() != hist_w {
                return Err(format!("{}: histogram totals differ", o.name));
            }
            let pending: u64 = o.objects.values().flat_map(|oc| oc.extents.iter().map(|(s, e)| e.pages(*s))).sum();
            if pending != o.pending_w_pages {
                return Err(format!("{}: pending write pages {} != extents {}", o.name, o.pending_w_pages, pending));
            }
            // the dirty pages hold a page of grant each and a tax per extent, cached or in
            // flight; less only where a write went in without the grant for it (synchronously)
            let extents: u64 = o.objects.values().map(|oc| oc.extents.len() as u64).sum::<u64>() + extents_in_flight[i];
            let held = o.dirty_pages * PAGE + extents * EXTENT_TAX;
            if o.dirty_grant > held {
                return Err(format!("{}: dirty grant {} above the {held} its pages and extents hold", o.name, o.dirty_grant));
            }
            // the OST grants no more than the most a client asks for, counting all it holds
            // (a mount's first chunk, at most 2 x 64 MiB, is far below)
            if o.avail_grant + o.dirty_grant + o.lost_grant > MAX_UNDIRTY {
                return Err(format!(
                    "{}: grant {} + dirty grant {} + lost {} above {MAX_UNDIRTY}",
                    o.name, o.avail_grant, o.dirty_grant, o.lost_grant
                ));
            }
            let writeback: u64 = o.objects.values().map(|oc| oc.writeback.len()).sum();
            if writeback != in_flight[i] {
                return Err(format!("{}: pages under write-back {} != pages of write RPCs in flight {}", o.name, writeback, in_flight[i]));
            }
            // a page under write-back is not written again until its RPC is back
            for (obj, oc) in &o.objects {
                if let Some((s, e)) = oc.extents.iter().find(|(s, e)| oc.writeback.first_in(**s, e.end).is_some()) {
                    return Err(format!("{}: object {obj}: dirty extent [{s}, {}] overlaps pages under write-back", o.name, e.end));
                }
            }
        }
        // a dirty page lies under an extent lock of its client (called back or not): a cancel
        // waits for the pages under it, and for the writes that hold the lock to commit theirs
        let mut objects = std::collections::HashMap::new();
        for (i, f) in self.files.iter().enumerate().filter(|(_, f)| !f.removed) {
            for (stripe, (&ost, &obj)) in f.osts.iter().zip(&f.obj_ids).enumerate() {
                objects.insert((ost, obj), (i, stripe));
            }
        }
        for o in &self.oscs {
            for (obj, oc) in &o.objects {
                let Some(&(file, stripe)) = objects.get(&(o.ost, *obj)) else { continue };
                let locks = &self.files[file].locks[stripe];
                let locked = |p: u64| locks.iter().any(|l| l.client == o.client && l.write && l.start <= p && l.end >= p);
                if let Some((s, e)) = oc.extents.iter().find(|(s, e)| !locked(**s) || !locked(e.end)) {
                    return Err(format!("{}: file {file}: dirty extent [{s}, {}] under no write lock of client {}", o.name, e.end, o.client));
                }
            }
        }
        // a page being read lies under an extent lock of its client (called back or not): a
        // cancel waits for the reads under it
        for (i, f) in self.files.iter().enumerate().filter(|(_, f)| !f.removed) {
            for (c, on) in f.users() {
                for (&s, &(e, _)) in &on.reading {
                    let (stripe, start) = f.map(s);
                    let end = start + (e - s);
                    if !f.locks[stripe].iter().any(|l| l.client as usize == c && l.start <= start && l.end >= end) {
                        return Err(format!("client {c} reads pages [{s}, {e}] of file {i} under no lock of its own"));
                    }
                }
            }
        }
        self.callbacks.check()?;
        self.lock_queue.check()?;
        // each OSC and each thread counts its queued lock requests
        let mut requests = vec![0u32; self.oscs.len()];
        let mut of_thread = vec![0u32; self.threads.len()];
        for w in self.lock_queue.iter() {
            requests[self.request_osc(w) as usize] += 1;
            of_thread[w.tid as usize] += 1;
        }
        if let Some(i) = (0..self.oscs.len()).find(|&i| self.oscs[i].lock_requests != requests[i]) {
            return Err(format!("{}: {} lock requests counted, {} queued", self.oscs[i].name, self.oscs[i].lock_requests, requests[i]));
        }
        if let Some(t) = (0..self.threads.len()).find(|&t| self.threads[t].lock_requests != of_thread[t]) {
            return Err(format!("thread {t}: {} lock requests counted, {} queued", self.threads[t].lock_requests, of_thread[t]));
        }
        // a called-back lock goes as soon as nothing of its holder's is under it
        if let Some(cb) = self.callback_free_to_go() {
            return Err(format!("called-back lock {:?} of file {} stripe {} left with nothing under it", cb.lock, cb.file, cb.stripe));
        }
        // a queued lock request not marked stale is blocked, and only by what it cannot hurry:
        // locks already called back, or conflicting requests queued before it
        for q in self.lock_queue.objects() {
            for (i, w) in q.iter().enumerate().filter(|(_, w)| !w.stale) {
                let conflicting = |l: &crate::dlm::Lock| crate::dlm::conflicts(l, w.client, w.start, w.end, w.write);
                let locks = &self.files[w.file as usize].locks[w.stripe];
                if let Some(l) = locks.iter().find(|l| conflicting(l) && !l.cancelling) {
                    return Err(format!("lock request of thread {} left waiting beside a live conflicting lock {l:?}", w.tid));
                }
                if !crate::dlm::queued_behind(q, i) && !locks.iter().any(conflicting) {
                    return Err(format!("lock request of thread {} left waiting with nothing in its way", w.tid));
                }
            }
        }
        // the reclaim holds a page only while it is dirty or in a write RPC
        for (c, cl) in self.clients.iter().enumerate() {
            for (&file, held) in &cl.held {
                for (s, e) in held.iter().flat_map(|(&s, &e)| self.files[file as usize].chunks(s, e)) {
                    if let Some(&(gs, ge)) = run_gaps(&self.pinned_pages(c, file, s, e), s, e).first() {
                        return Err(format!("client {c} holds pages [{gs}, {ge}] of file {file}, which are clean"));
                    }
                }
            }
        }
        // nothing of a removed file stays in a page cache; its dirty pages are those of its
        // write RPCs still in flight
        for (i, f) in self.files.iter().enumerate().filter(|(_, f)| f.removed) {
            if let Some((c, on)) = f.users().find(|(_, on)| !on.cache.is_empty()) {
                return Err(format!("removed file {i}: {} pages in client {c}'s cache", on.cache.len()));
            }
            if let Some((c, on)) = f.users().find(|(_, on)| on.dirty_pages > 0 && on.writes_in_flight == 0) {
                return Err(format!("removed file {i}: {} dirty pages on client {c}", on.dirty_pages));
            }
        }
        // a BDCATS-IO rank waits to open a dataset only while rank 0 has not opened it
        for (job, waiting) in self.h5_waiting.iter().enumerate() {
            for &(tid, dataset) in waiting {
                let state = self.threads[tid as usize].op.as_ref().map(|op| op.state);
                if dataset < self.h5_opened[job] || state != Some(OpState::WaitBarrier) {
                    return Err(format!("thread {tid} waits ({state:?}) to open dataset {dataset}, which rank 0 has opened"));
                }
            }
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Totals {
    pub sim_ns: u64,
    pub events: u64,
    pub app_read_bytes: u64,
    pub app_write_bytes: u64,
    pub osc_read_bytes: u64,
    pub osc_write_bytes: u64,
}
