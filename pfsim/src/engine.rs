//! The event loop and the behaviour of every component: application threads, llite (page cache,
//! read-ahead), OSC (extents, grant, RPC formation, in-flight limit), network, OSS and OSTs.
//!
//! Time is in nanoseconds. Pages are ranges: no event is ever per page.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use crate::config::{Config, JobConfig};
use crate::device::{transfer, Device, Disk, Elevator, Link, Request};
use crate::model::*;
use crate::queue::EventQueue;
use crate::rng::Rng;
use crate::stats::{LliteCtr, LliteStats, OscCtr, RaCtr, RaStats, TextStyle};
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
}

/// An RPC an OSC sends besides its bulk reads and writes: an extent lock enqueue, a lock cancel,
/// an `OST_SYNC`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum OtherRpc {
    Enqueue,
    Cancel,
    Sync,
}

impl OtherRpc {
    /// The `osc.*.stats` opcode counter its reply adds to (an enqueue is counted at send, in
    /// `ldlm_extent_enqueue`).
    fn counter(self) -> Option<OscCtr> {
        match self {
            OtherRpc::Enqueue => None,
            OtherRpc::Cancel => Some(OscCtr::LdlmCancel),
            OtherRpc::Sync => Some(OscCtr::OstSync),
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
    /// device completions behind an elevator (what a run spends its time on).
    pub ev_kinds: [u64; 5],
    /// When the MDS is next free to serve an open or close.
    mds_free_at: u64,
    pub(crate) callbacks: Vec<crate::dlm::Callback>,
    pub(crate) lock_waiters: Vec<crate::dlm::Waiter>,
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

impl Sim {
    pub fn new(cfg: Config) -> Result<Sim, String> {
        let style = TextStyle::parse(&cfg.cluster.lustre_version)
            .ok_or_else(|| format!("unsupported lustre_version {:?}", cfg.cluster.lustre_version))?;
        let c = cfg.cluster.clone();
        let n_ost = (c.oss * c.osts_per_oss) as u32;
        check_memory(&cfg, n_ost as u64)?;
        let mut rng = Rng::new(cfg.seed);
        // 2.15.0/2.15.1 print a monotonic (since boot) clock and never initialise ls_init
        let t0 = if style == TextStyle::V2_15_0 { 0 } else { cfg.start_epoch_ns };
        let n_jobs = cfg.jobs.len();
        let mut sim = Sim {
            style,
            now: 0,
            events: 0,
            seq: 0,
            queue: EventQueue::new(),
            clients: Vec::new(),
            oscs: Vec::new(),
            files: Vec::new(),
            threads: Vec::new(),
            oss: (0..c.oss).map(|_| Oss { free_threads: c.oss_threads, ..Default::default() }).collect(),
            devices: (0..n_ost)
                .map(|_| {
                    Device::new(
                        c.ost_channels,
                        c.ost_stripe_bytes,
                        c.ost_read_bw_bps,
                        c.ost_write_bw_bps,
                        (c.ost_read_latency_ns, c.ost_write_latency_ns),
                        c.ost_random_penalty_ns,
                        (c.ost_kind == "hdd").then(|| Disk::new(c.ost_capacity_bytes, c.ost_rpm, c.ost_random_penalty_ns)),
                    )
                })
                .collect(),
            elevators: if c.ost_scheduler == "mq-deadline" {
                (0..n_ost).map(|_| Elevator::default()).collect()
            } else {
                Vec::new()
            },
            client_up: vec![Link::default(); c.clients],
            client_down: vec![Link::default(); c.clients],
            rpcs: Vec::new(),
            free_rpcs: Vec::new(),
            chunks: Vec::new(),
            free_chunks: Vec::new(),
            next_obj_id: 0x2_0000_0400,
            next_ost: 0,
            ev_kinds: [0; 5],
            mds_free_at: 0,
            callbacks: Vec::new(),
            lock_waiters: Vec::new(),
            live_threads: vec![0; n_jobs],
            barriers: vec![Vec::new(); n_jobs],
            barrier_ns: vec![Vec::new(); n_jobs],
            h5_opened: vec![0; n_jobs],
            h5_waiting: vec![Vec::new(); n_jobs],
            h5_steps: vec![Vec::new(); n_jobs],
            near_buf: Vec::new(),
            other_rpcs: BinaryHeap::new(),
            rng: Rng::new(0),
            cfg,
        };
        let ram_pages = c.client_ram_bytes / PAGE;
        let brw_pages = c.brw_size_bytes / PAGE;
        // sized once: growing by doubling would copy every OSC (~300 bytes each) into fresh pages
        // again and again, and fresh pages are what set-up of a large cluster spends its time on
        sim.oscs.reserve_exact(c.clients * n_ost as usize);
        sim.clients.reserve_exact(c.clients);
        for ci in 0..c.clients as u32 {
            // cfg_instance is the super_block pointer: a kernel address, different per mount
            let instance = 0xffff_8800_0000_0000u64 | ((rng.below(1 << 30)) << 12);
            let ra_max = (ram_pages / 32).min(1024 * PAGES_PER_MIB);
            let ra_file = (ra_max / 4).min(256 * PAGES_PER_MIB);
            let mut client = Client {
                index: ci,
                instance,
                ram_pages,
                cpus: c.client_cpus,
                oscs: Vec::new(),
                cpu_free_at: 0,
                ra_workers: Workers::new((c.client_cpus / 2) as usize),
                app_cores: Workers::new(c.client_cpus as usize),
                ra_max_pages: ra_max,
                ra_max_pages_per_file: ra_file,
                ra_max_read_ahead_whole_pages: (brw_pages.max(512)).min(ra_file),
                ra_async_threshold_pages: ra_file,
                ra_range_pages: 256,
                ra_async_active: (c.client_cpus / 2).max(1),
                max_cached_pages: ram_pages / 2,
                page_cache_pages: c.client_page_cache_bytes.map_or(u64::MAX, |b| (b / PAGE).max(1)),
                checksums: true,
                fast_read: true,
                statahead_max: 32,
                // obd_max_dirty_pages: half the RAM, a quarter on nodes with 512 MiB or less
                global_max_dirty_pages: if ram_pages * PAGE <= 512 << 20 { ram_pages / 4 } else { ram_pages / 2 },
                mdc_rif: 8,
                mdc_mod_rif: 7,
                ra_inflight_pages: 0,
                cached_pages: 0,
                dirty_pages: 0,
                lru: Default::default(),
                held: BTreeMap::new(),
                reclaim_count: 0,
                stats: LliteStats::new(t0),
                ra_stats: RaStats::new(t0),
                ra_marks: BTreeMap::new(),
                app_read_bytes: 0,
                app_write_bytes: 0,
            };
            for ost in 0..n_ost {
                let idx = sim.oscs.len() as u32;
                client.oscs.push(idx);
                let mut osc = Osc {
                    client: ci,
                    ost,
                    name: format!("{}-OST{:04x}-osc-{:016x}", c.fsname, ost, instance),
                    mppr: brw_pages.min(16384),
                    mrif: match ram_pages * PAGE {
                        r if r <= 128 << 20 => 2,
                        r if r <= 256 << 20 => 3,
                        r if r <= 512 << 20 => 4,
                        _ => 8,
                    },
                    max_dirty_pages: 0,
                    short_io_bytes: 16384,
                    checksums: true,
                    checksum_type: "crc32c",
                    resend_count: 10,
                    grant_shrink_interval: 1200,
                    idle_timeout: 20,
                    active: true,
                    r_in_flight: 0,
                    w_in_flight: 0,
                    hp_in_flight: 0,
                    callbacks: 0,
                    read_turn: false,
                    other_in_flight: 0,
                    dirty_pages: 0,
                    pending_w_pages: 0,
                    pending_r_pages: 0,
                    avail_grant: 2 * (c.brw_size_bytes + EXTENT_TAX),
                    cached_pages: 0,
                    objects: BTreeMap::new(),
                    next_write_obj: 0,
                    read_queue: Default::default(),
                    cache_waiters: Vec::new(),
                    writeback_waiters: Vec::new(),
                    last_reply_ns: 0,
                    connected: true,
                    counters: None,
                    connect_ns: t0,
                    rpc_stats_init_ns: 0,
                    osc_stats_init_ns: t0,
                    osc_read_bytes: 0,
                    osc_write_bytes: 0,
                };
                adjust_max_dirty(&mut osc, ram_pages);
                sim.oscs.push(osc);
            }
            sim.clients.push(client);
        }
        sim.next_ost = rng.below(n_ost as u64) as u32;
        sim.create_threads(&mut rng)?;
        sim.check_osts_hold_the_files()?;
        sim.rng = rng;
        // tunables of the scenario, applied to every matching device before anything runs; each
        // listed value must be the one in force, so max_dirty_mb goes after the RPC parameters
        // whose writes may raise it (client_adjust_max_dirty(), which also turns a 0 into 2000)
        let mut tunables: Vec<(String, String)> = sim.cfg.tunables.clone().into_iter().collect();
        tunables.sort_by_key(|(name, _)| name.ends_with(".max_dirty_mb") || name == "max_dirty_mb");
        for (name, value) in &tunables {
            sim.set_everywhere(name, value)
                .map_err(|e| format!("tunable {name}={value}: {}", sim.refusal(0, name, e)))?;
        }
        sim.preload_caches();
        for ci in 0..sim.clients.len() as u32 {
            sim.schedule(FLUSH_PERIOD_NS, Ev::Flusher(ci));
        }
        Ok(sim)
    }

    /// Files of `cached` jobs start in their clients' page caches, as filebench's preallocation
    /// leaves them on Linux: it writes each file through the client, and its `msync(MS_INVALIDATE)`
    /// does not drop clean pages. Pages go in file order, so when a file is larger than
    /// `max_cached_mb` the LRU keeps its end, as after the sequential preallocation.
    fn preload_caches(&mut self) {
        let mut done: BTreeSet<(u32, u32)> = BTreeSet::new();
        for ti in 0..self.threads.len() {
            let th = &self.threads[ti];
            if !self.cfg.jobs[th.job as usize].cached {
                continue;
            }
            let client = th.client;
            for &file in &th.files.clone() {
                if !done.insert((client, file)) {
                    continue;
                }
                let last_page = ceil_div(self.files[file as usize].size, PAGE).max(1) - 1;
                let mut page = 0;
                while page <= last_page {
                    let f = &self.files[file as usize];
                    let osc_i = self.clients[client as usize].oscs[f.osts[f.map(page).0] as usize];
                    // one LRU entry per 16 MiB at most, so that eviction keeps the file's end
                    let end = f.chunk_end(page).min(last_page).min(page + PRELOAD_PIECE_PAGES - 1);
                    self.insert_cached(client as usize, file, page, end, osc_i);
                    page = end + 1;
                }
            }
        }
    }

    fn create_file(&mut self, size: u64, stripe_count: u32, stripe_size: u64) -> u32 {
        let n_ost = self.devices.len() as u32;
        let osts: Vec<u32> = (0..stripe_count).map(|i| (self.next_ost + i) % n_ost).collect();
        self.next_ost = (self.next_ost + stripe_count) % n_ost;
        let obj_ids = (0..stripe_count)
            .map(|_| {
                self.next_obj_id += 1;
                self.next_obj_id
            })
            .collect();
        let n = self.clients.len();
        self.files.push(File::new(size, stripe_size, osts, obj_ids, n));
        (self.files.len() - 1) as u32
    }

    fn create_threads(&mut self, _rng: &mut Rng) -> Result<(), String> {
        let jobs = self.cfg.jobs.clone();
        for (ji, job) in jobs.iter().enumerate() {
            if job.workload == "ior" {
                let ior = job.ior.as_ref().expect("checked");
                let nproc = ior.processes.max(1);
                let size = workload::ior_file_size(job, nproc);
                self.check_fits(job, size)?;
                let files: Vec<u32> = if ior.file_per_process {
                    (0..nproc).map(|_| self.create_file(size, job.stripe_count, job.stripe_size)).collect()
                } else {
                    vec![self.create_file(size, job.stripe_count, job.stripe_size)]
                };
                for rank in 0..nproc {
                    let client = job.clients[rank as usize % job.clients.len()] as u32;
                    let own = files[rank as usize % files.len()];
                    // with reorder_tasks a rank of a file-per-process job reads another rank's file
                    let read = files[workload::ior_read_owner(job, rank, nproc) as usize % files.len()];
                    let mine = if read == own { vec![own] } else { vec![own, read] };
                    self.add_thread(client, ji as u32, Role::Ior { rank, nproc }, mine, job);
                }
                continue;
            }
            if job.workload.starts_with("h5bench.") {
                let h5 = job.h5bench.as_ref().expect("checked");
                let size = workload::h5_file_size(h5);
                self.check_fits(job, size)?;
                let file = self.create_file(size, job.stripe_count, job.stripe_size);
                let write = workload::h5_writes(job);
                for rank in 0..h5.processes {
                    let client = job.clients[rank as usize % job.clients.len()] as u32;
                    let role = Role::H5 { rank, nproc: h5.processes, write };
                    self.add_thread(client, ji as u32, role, vec![file], job);
                }
                continue;
            }
            if job.workload == "dlio" {
                let dl = job.dlio.as_ref().expect("checked");
                let size = dl.samples_per_file.saturating_mul(dl.sample_size);
                self.check_fits(job, size)?;
                let files: Vec<u32> =
                    (0..dl.files).map(|_| self.create_file(size, job.stripe_count, job.stripe_size)).collect();
                let workers = job.clients.len() as u32 * dl.read_threads;
                for (rank, &client) in job.clients.iter().enumerate() {
                    for t in 0..dl.read_threads {
                        let role = Role::Dlio { worker: rank as u32 * dl.read_threads + t, workers };
                        self.add_thread(client as u32, ji as u32, role, files.clone(), job);
                    }
                }
                continue;
            }
            let roles = workload::roles(job)?;
            self.check_fits(job, job.filesize)?;
            for &client in &job.clients {
                let mut group_files: BTreeMap<u32, u32> = BTreeMap::new();
                for &(role, group) in &roles {
                    let file = *group_files
                        .entry(group)
                        .or_insert_with(|| self.create_file(job.filesize, job.stripe_count, job.stripe_size));
                    self.add_thread(client as u32, ji as u32, role, vec![file], job);
                }
            }
        }
        Ok(())
    }

    /// All the files set-up made must fit on the OSTs together, as on a real cluster, where the
    /// workloads' preallocation or first writes would fail with ENOSPC.
    fn check_osts_hold_the_files(&self) -> Result<(), String> {
        let mut used = vec![0u64; self.devices.len()];
        for f in &self.files {
            for (i, &ost) in f.osts.iter().enumerate() {
                let bytes = object_bytes(f.size, f.stripe_size, f.osts.len() as u64, i as u64);
                used[ost as usize] = used[ost as usize].saturating_add(bytes);
            }
        }
        let capacity = self.cfg.cluster.ost_capacity_bytes;
        let Some((ost, &bytes)) = used.iter().enumerate().max_by_key(|&(_, b)| *b) else { return Ok(()) };
        if bytes <= capacity {
            return Ok(());
        }
        let (put, holds) = human_over(bytes, capacity);
        Err(format!(
            "the scenario's files put {put} on OST{ost:04x}, which holds {holds} (cluster.ost_capacity); use fewer or smaller files, or more OSTs"
        ))
    }

    /// A job's file must fit on the OSTs it is striped over, as on a real cluster (ENOSPC): its
    /// first object is the largest.
    fn check_fits(&self, job: &JobConfig, size: u64) -> Result<(), String> {
        let count = job.stripe_count.max(1) as u64;
        let largest = object_bytes(size, job.stripe_size, count, 0);
        let capacity = self.cfg.cluster.ost_capacity_bytes;
        if largest <= capacity {
            return Ok(());
        }
        let (put, holds) = human_over(largest, capacity);
        Err(format!(
            "job {:?}: its file of {} over {} OST(s) puts {put} on one OST, which holds {holds} (cluster.ost_capacity); stripe it over more OSTs (stripe_count, -1 for all)",
            job.name,
            human_bytes(size),
            count,
        ))
    }

    fn add_thread(&mut self, client: u32, job: u32, role: Role, files: Vec<u32>, cfg: &JobConfig) {
        let tid = self.threads.len() as u32;
        self.live_threads[job as usize] += 1;
        self.threads.push(Thread {
            client,
            job,
            role,
            ras: vec![Readahead::default(); files.len()],
            files,
            pos: 0,
            op: None,
            start_ns: cfg.start_ns,
            stop_ns: cfg.stop_ns.min(self.cfg.duration_ns),
            done: false,
            phase: 0,
            prog: Default::default(),
            lock_hint: 0,
        });
        self.schedule(cfg.start_ns, Ev::Thread(tid));
    }

    // ------------------------------------------------------------------ event loop

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
            };
            self.ev_kinds[kind] += 1;
            match ev {
                Ev::Thread(tid) => self.on_thread(tid),
                Ev::ChunkReady(osc, ch) => {
                    self.oscs[osc as usize].read_queue.push_back(ch);
                    let pages = self.chunk(ch).pages;
                    self.oscs[osc as usize].pending_r_pages += pages;
                    self.check_rpcs(osc);
                }
                Ev::Rpc(id) => self.on_rpc(id),
                Ev::Flusher(ci) => self.on_flusher(ci),
                Ev::Disk(ost) => self.on_disk_done(ost as usize),
            }
        }
        self.now = self.now.max(t);
        self.settle_other_rpcs(self.now);
    }

    /// OSC `osc_i` sends an `OtherRpc` whose reply comes `rtt` from now: it is in flight on the
    /// import until then, and `req_active` counts the RPCs in flight with it (`ptl_send_rpc()`).
    pub(crate) fn send_other_rpc(&mut self, osc_i: u32, kind: OtherRpc, rtt: u64) {
        let osc = &mut self.oscs[osc_i as usize];
        osc.other_in_flight += 1;
        let inflight = osc.r_in_flight + osc.w_in_flight + osc.other_in_flight;
        osc.counters_mut().stats.add(OscCtr::ReqActive, inflight as i64);
        self.other_rpcs.push(Reverse((self.now + rtt, osc_i, kind, (rtt / 1000) as i64)));
    }

    /// The replies of `OtherRpc`s due by `t`: `req_waittime` and the opcode's counter take their
    /// round trip (`after_reply()`), and they leave the import's in-flight count.
    fn settle_other_rpcs(&mut self, t: u64) {
        while let Some(&Reverse((reply_ns, osc_i, kind, wait_us))) = self.other_rpcs.peek() {
            if reply_ns > t {
                return;
            }
            self.other_rpcs.pop();
            let osc = &mut self.oscs[osc_i as usize];
            osc.other_in_flight -= 1;
            let stats = &mut osc.counters_mut().stats;
            stats.add(OscCtr::ReqWaittime, wait_us);
            if let Some(c) = kind.counter() {
                stats.add(c, wait_us);
            }
        }
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

    fn chunk(&self, id: u32) -> &ReadChunk {
        &self.chunks[id as usize].as_ref().expect("live chunk").1
    }

    // ------------------------------------------------------------------ application threads

    fn on_thread(&mut self, tid: u32) {
        let th = &self.threads[tid as usize];
        if th.done {
            return;
        }
        if let Some(op) = th.op.clone() {
            match op.state {
                OpState::WaitCache => {
                    self.threads[tid as usize].op.as_mut().expect("op").state = OpState::Running;
                    self.continue_write(tid);
                    return;
                }
                OpState::Running => {
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
    fn retire(&mut self, tid: u32) {
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
    fn h5_rank0_opens(&mut self, job: usize, opened: u64) {
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
    fn release_barrier(&mut self, job: usize, except: Option<u32>) {
        for tid in std::mem::take(&mut self.barriers[job]) {
            if Some(tid) != except {
                self.threads[tid as usize].op.as_mut().expect("op").state = OpState::Between;
                self.schedule(self.now, Ev::Thread(tid));
            }
        }
    }

    fn start_op(&mut self, tid: u32) {
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
    fn issue_op(&mut self, tid: u32) {
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
    fn reopen(&mut self, client: usize) -> u64 {
        let closed = self.mds_rpc(client, self.now, LliteCtr::Close);
        self.mds_rpc(client, closed, LliteCtr::Open)
    }

    /// One RPC to the MDS sent at `t`, counted as `ctr` in the client's llite stats; returns
    /// when its reply is back.
    fn mds_rpc(&mut self, client: usize, t: u64, ctr: LliteCtr) -> u64 {
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
    fn run_between(&mut self, tid: u32) {
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
    fn remove_file(&mut self, tid: u32) -> bool {
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
    fn discard_file(&mut self, file: u32) {
        self.files[file as usize].removed = true;
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
                let pages: u64 = extents.iter().map(|(s, e)| e.pages(*s)).sum();
                let lost = pages * PAGE + extents.len() as u64 * EXTENT_TAX;
                let borrow = PAGE + EXTENT_TAX;
                if osc.avail_grant < borrow && lost >= borrow {
                    osc.avail_grant += borrow;
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
        if !self.callbacks.is_empty() && self.finish_callbacks(None) > 0 {
            self.process_lock_queue();
        }
    }

    /// The op holds its locks: move its data.
    fn begin_io(&mut self, tid: u32) {
        match self.threads[tid as usize].op.as_ref().expect("op").kind {
            OpKind::Write => self.continue_write(tid),
            OpKind::Read => {
                let slot = self.threads[tid as usize].op.as_ref().expect("op").slot;
                self.start_read(tid, slot)
            }
        }
    }

    fn finish_op(&mut self, tid: u32) {
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
    fn h5_request_done(&mut self, tid: u32) {
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

    // ------------------------------------------------------------------ buffered writes

    /// Admit the rest of the current write into the page cache, window by window; block on the
    /// first OSC without dirty or grant space.
    fn continue_write(&mut self, tid: u32) {
        let th = &self.threads[tid as usize];
        let op = th.op.clone().expect("write op");
        let client = th.client as usize;
        let file = op.file as usize;
        let end = op.offset + op.len;
        let mut cursor = op.cursor;
        let c = &self.cfg.cluster;
        let (page_ns, syscall_ns) = (c.client_write_page_ns, c.client_syscall_ns);
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
                    return;
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
                    return;
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
                    return;
                }
            }
            self.insert_cached(client, op.file, page, run_end_file, osc_i);
            // the application's data replaces what read-ahead brought in
            self.clients[client].unmark_ra(op.file, page, run_end_file);
            cursor = (run_end_file + 1) * PAGE;
            cursor = cursor.min(end);
            self.check_rpcs(osc_i);
        }
        let pages = ceil_div(end, PAGE) - op.offset / PAGE;
        let th = &mut self.threads[tid as usize];
        let o = th.op.as_mut().expect("op");
        o.cursor = end;
        o.state = OpState::Running;
        let (core, start) = self.free_core(client);
        let t = start + syscall_ns + pages * page_ns;
        self.clients[client].app_cores.book(core, t);
        self.schedule(t, Ev::Thread(tid));
    }

    /// The core of `client` that is free first, and when the calling thread can start on it (now,
    /// unless every core is busy). The caller books the core until its CPU work is done.
    fn free_core(&mut self, client: usize) -> (usize, u64) {
        let (core, free) = self.clients[client].app_cores.earliest();
        (core, free.max(self.now))
    }

    fn admit(&mut self, osc_i: u32, obj: u64, first: u64, last: u64, file: u32, client: usize) -> Admit {
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
    fn add_dirty(&mut self, osc_i: u32, obj: u64, first: u64, last: u64, file: u32, client: usize, sync: Option<u32>) {
        let mut near = std::mem::take(&mut self.near_buf);
        neighbours(&mut near, self.oscs[osc_i as usize].objects.get(&obj), first, last);
        self.merge_dirty(osc_i, obj, first, last, file, client, sync, &near);
        self.near_buf = near;
    }

    /// `add_dirty` with the extents touching [first-1, last+1] already found (`neighbours`).
    #[allow(clippy::too_many_arguments)]
    fn merge_dirty(
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
        osc.avail_grant = (osc.avail_grant as i64 - grant).max(0) as u64;
        osc.dirty_pages += new_pages;
        osc.pending_w_pages += new_pages;
        self.clients[client].dirty_pages += new_pages;
        self.files[file as usize].on_mut(client).dirty_pages += new_pages;
    }

    fn start_fsync(&mut self, tid: u32) -> bool {
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

    fn wake_fsync_waiters(&mut self, file: u32, client: u32) {
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
                        for stripe in 0..self.files[file as usize].osts.len() {
                            let ost = self.files[file as usize].osts[stripe];
                            let osc_i = self.clients[client as usize].oscs[ost as usize];
                            self.send_other_rpc(osc_i, OtherRpc::Sync, rtt);
                        }
                        self.seq += 1;
                        self.queue.push(self.now + rtt, self.seq, Ev::Thread(tid as u32));
                    }
                }
            }
        }
    }

    /// The last write RPC of removed `file` from `client` is back: its remover goes on.
    fn wake_removers(&mut self, file: u32, client: u32) {
        for tid in 0..self.threads.len() {
            let th = &self.threads[tid];
            if th.client == client && th.op.as_ref().is_some_and(|op| op.state == OpState::WaitRemove && op.file == file) {
                self.schedule(self.now, Ev::Thread(tid as u32));
            }
        }
    }

    fn on_flusher(&mut self, ci: u32) {
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

    // ------------------------------------------------------------------ page cache and reads

    fn insert_cached(&mut self, client: usize, file: u32, first: u64, last: u64, osc_i: u32) {
        if self.files[file as usize].removed {
            return; // a read of it that was in flight when it went
        }
        let added = self.files[file as usize].on_mut(client).cache.insert(first, last);
        if added == 0 {
            return;
        }
        debug_assert_eq!(osc_i, self.lru_osc(client, file, first), "a range put in the cache lies in one object");
        let cl = &mut self.clients[client];
        cl.cached_pages += added;
        push_lru(&mut cl.lru, file, first, last, LruEntry::MOST_PAGES);
        self.oscs[osc_i as usize].cached_pages += added;
        self.shrink_if_over(client);
    }

    /// Reclaim if `client` caches more than it may keep: Lustre's `max_cached_mb` counts every
    /// page, the node's page cache only the clean ones.
    fn shrink_if_over(&mut self, client: usize) {
        let cl = &self.clients[client];
        let keep = cl.max_cached_pages.min(cl.page_cache_pages.saturating_add(cl.dirty_pages));
        if cl.cached_pages > keep {
            self.shrink_cache(client, keep);
        }
    }

    /// Drop `client`'s least recently cached clean pages until at most `target` pages remain
    /// (`osc_lru_shrink()` for `max_cached_mb`; the kernel's reclaim for `client_page_cache`).
    /// Pages that are dirty or in a write RPC cannot be dropped: they leave the LRU for the
    /// client's held set until a write RPC's reply makes them clean (`release_held`), and the
    /// cache stays above `target` while they hold it. (Lustre would make the writer wait for an
    /// LRU slot instead; pfsim lets it write.) One pass over the LRU at most; an entry leaves it
    /// once, so a reclaim behind many dirty entries walks each of them once, not at every page
    /// cached.
    pub(crate) fn shrink_cache(&mut self, client: usize, target: u64) {
        let mut budget = self.clients[client].lru.len();
        while self.clients[client].cached_pages > target && budget > 0 {
            budget -= 1;
            let Some(entry) = self.clients[client].lru.pop_front() else { break };
            let (file, first, last) = (entry.file(), entry.first(), entry.last());
            let o = self.lru_osc(client, file, first);
            let pinned = self.pinned_pages(client, file, first, last);
            if pinned.is_empty() {
                self.drop_cached(client, file, first, last, o); // the usual case, without allocating
                continue;
            }
            for (s, e) in run_gaps(&pinned, first, last) {
                self.drop_cached(client, file, s, e, o);
            }
            let held = self.clients[client].held.entry(file).or_default();
            for &(s, e) in &pinned {
                interval_insert(held, s, e);
            }
        }
    }

    /// A write RPC of `client` carried `extents` (object pages) of object `obj` of `file`: the
    /// pages of them the reclaim held go to the LRU's end, but for pages still dirty.
    fn release_held(&mut self, client: usize, file: u32, obj: u64, extents: &[(u64, u64)]) {
        if !self.clients[client].held.contains_key(&file) {
            return;
        }
        let f = &self.files[file as usize];
        let Some(stripe) = f.obj_ids.iter().position(|&o| o == obj) else { return };
        let runs: Vec<(u64, u64)> = extents.iter().flat_map(|&(s, e)| f.object_runs(stripe, s, e)).collect();
        for (fs, fe) in runs {
            let Some(held) = self.clients[client].held.get_mut(&file) else { return };
            let mut parts: Vec<(u64, u64)> = Vec::new();
            for (&a, &b) in held.range(..=fe).rev() {
                if b < fs {
                    break;
                }
                parts.push((a.max(fs), b.min(fe)));
            }
            parts.reverse();
            for &(a, b) in &parts {
                interval_remove(held, a, b);
            }
            for (a, b) in parts {
                // [a, b] lies in one stripe unit, so in one object, as `pinned_pages` needs
                let pinned = self.pinned_pages(client, file, a, b);
                let cl = &mut self.clients[client];
                for (gs, ge) in run_gaps(&pinned, a, b) {
                    push_lru(&mut cl.lru, file, gs, ge, LruEntry::MOST_PAGES);
                }
                let held = cl.held.entry(file).or_default();
                for (ps, pe) in pinned {
                    interval_insert(held, ps, pe);
                }
            }
        }
        if self.clients[client].held.get(&file).is_some_and(|h| h.is_empty()) {
            self.clients[client].held.remove(&file);
        }
    }

    /// The runs of pages [first, last] of `file` (one LRU entry: one object) that `client` holds
    /// dirty or in a write RPC, in file pages, in order.
    fn pinned_pages(&self, client: usize, file: u32, first: u64, last: u64) -> Vec<(u64, u64)> {
        let f = &self.files[file as usize];
        let (stripe, o_first) = f.map(first);
        let o_last = o_first + (last - first);
        let osc_i = self.clients[client].oscs[f.osts[stripe] as usize];
        let Some(oc) = self.oscs[osc_i as usize].objects.get(&f.obj_ids[stripe]) else { return Vec::new() };
        let mut runs: Vec<(u64, u64)> = Vec::new();
        // dirty extents are disjoint, so their ends rise with their starts: one walk back from
        // o_last finds every one that overlaps (a reclaim asks this of every entry it drops)
        for (&s, x) in oc.extents.range(..=o_last).rev() {
            if x.end < o_first {
                break;
            }
            runs.push((s.max(o_first), x.end.min(o_last)));
        }
        if oc.writeback.first_in(o_first, o_last).is_some() {
            runs.extend(run_gaps(&oc.writeback.gaps(o_first, o_last), o_first, o_last));
        }
        runs.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(runs.len());
        for (s, e) in runs {
            match merged.last_mut() {
                Some(m) if s <= m.1 + 1 => m.1 = m.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        merged.into_iter().map(|(s, e)| (s - o_first + first, e - o_first + first)).collect()
    }

    /// The OSC of `client` that holds page `page` of `file` (that of an LRU entry starting there).
    fn lru_osc(&self, client: usize, file: u32, page: u64) -> u32 {
        let f = &self.files[file as usize];
        self.clients[client].oscs[f.osts[f.map(page).0] as usize]
    }

    /// Drop the least recently cached pages of OSC `osc_i` (of `client`) until it holds at
    /// most `target` pages (`osc_lru_shrink()`, as a write to `osc_cached_mb` asks).
    pub(crate) fn shrink_osc_cache(&mut self, client: usize, osc_i: u32, target: u64) {
        let entries: Vec<LruEntry> =
            self.clients[client].lru.iter().filter(|e| self.lru_osc(client, e.file(), e.first()) == osc_i).copied().collect();
        let mut dropped = 0usize;
        for e in entries {
            if self.oscs[osc_i as usize].cached_pages <= target {
                break;
            }
            self.drop_cached(client, e.file(), e.first(), e.last(), osc_i);
            dropped += 1;
        }
        let mut lru = std::mem::take(&mut self.clients[client].lru);
        lru.retain(|e| {
            let drop = dropped > 0 && self.lru_osc(client, e.file(), e.first()) == osc_i;
            dropped -= usize::from(drop);
            !drop
        });
        self.clients[client].lru = lru;
    }

    /// Take pages [s, e] of `file` out of `client`'s page cache (one LRU entry, on OSC `o`), and
    /// forget their read-ahead marks.
    fn drop_cached(&mut self, client: usize, file: u32, s: u64, e: u64, o: u32) {
        self.uncache(client, file, s, e, o);
        self.forget_ra_marks(client, file, s, e);
    }

    /// The page-cache part of `drop_cached`: the pages and the client's and OSC's counts.
    fn uncache(&mut self, client: usize, file: u32, s: u64, e: u64, o: u32) {
        let removed = self.files[file as usize].on_existing_mut(client).map_or(0, |on| on.cache.remove(s, e));
        let cl = &mut self.clients[client];
        cl.cached_pages -= removed.min(cl.cached_pages);
        let osc = &mut self.oscs[o as usize];
        osc.cached_pages -= removed.min(osc.cached_pages);
    }

    /// Forget the read-ahead marks of pages [s, e] of `file` on `client`, which left its page
    /// cache unread, but for pages of reads in flight (read ahead again since). Only to keep the
    /// marks small: a read counts no stale mark.
    fn forget_ra_marks(&mut self, client: usize, file: u32, s: u64, e: u64) {
        if !self.clients[client].ra_marks.contains_key(&file) {
            return;
        }
        if !overlapping(&self.files[file as usize].on(client).reading, s, e).is_empty() {
            return;
        }
        self.clients[client].unmark_ra(file, s, e);
    }

    fn start_read(&mut self, tid: u32, slot: usize) {
        let th = &self.threads[tid as usize];
        let op = th.op.clone().expect("read op");
        let client = th.client as usize;
        let file = op.file as usize;
        let fsize_pages = ceil_div(self.files[file].size, PAGE).max(1);
        let p0 = op.offset / PAGE;
        let p1 = ((op.offset + op.len).max(1) - 1) / PAGE;
        let npages = p1 - p0 + 1;
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
                let grown = (ras.window + rpc_pages.max(npages)).min(per_file);
                ras.window = if grown >= rpc_pages { grown - grown % rpc_pages } else { grown };
            }
            if ras.reads >= 1 && fsize_pages <= whole {
                ras.window = fsize_pages;
            }
        }
        let whole_file = ras.reads >= 1 && fsize_pages <= whole;
        ras.reads += 1;
        ras.next_page = Some(p1 + 1);
        let mut window = ras.window;
        // the window ends on an RPC boundary so read-ahead forms whole RPCs; in stride mode it
        // counts from the read's first page and starts no earlier than the stride
        let (ra_from, window_end) = if stride {
            (ras.ra_next.max(p1 + 1).max(ras.stride_offset / PAGE), p0 + window)
        } else {
            (ras.ra_next.max(p1 + 1), p1 + 1 + window)
        };
        let ra_to = (window_end / rpc_pages * rpc_pages).saturating_sub(1).min(fsize_pages - 1);
        let stride_runs = stride.then(|| ras.clone());
        if not_consecutive {
            self.clients[client].ra_stats.add_n(RaCtr::ReadpageNotConsecutive, 1);
        }
        // pages of the read itself
        let mut waits = 0u32;
        let mut sync_runs: Vec<(u64, u64)> = Vec::new();
        {
            let f = &mut self.files[file];
            for (s, e) in f.on(client).cache.gaps(p0, p1) {
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
        if let (Some(&(m, _)), Some(&(_, last_miss)), Some(prev)) = (sync_runs.first(), sync_runs.last(), next_before) {
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
                window = 0;
                self.clients[client].ra_stats.add_n(RaCtr::MissInsideWindow, 1);
            }
        }
        let cl = &mut self.clients[client];
        // marks of pages no longer there (evicted, dropped by a lock cancel) are stale
        for &(s, e) in &sync_runs {
            cl.unmark_ra(file as u32, s, e);
        }
        let hit_pages = cl.unmark_ra(file as u32, p0, p1);
        {
            let ra = &mut self.clients[client].ra_stats;
            if hit_pages > 0 {
                ra.add_n(RaCtr::Hits, hit_pages);
            }
            if miss_pages > 0 {
                ra.add_n(RaCtr::Misses, miss_pages);
            }
        }
        // read-ahead beyond the read, bounded by the global budget (ll_ra_count_get)
        let mut ra_runs: Vec<(u64, u64)> = Vec::new();
        if window > 0 && ra_from <= ra_to {
            // in stride mode only the stride's runs are read ahead (ll_read_ahead_pages)
            let runs = match &stride_runs {
                Some(ras) => stride_runs_within(ras, ra_from, ra_to),
                None => vec![(ra_from, ra_to)],
            };
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
        // submit: the reading thread sets up the pages it needs itself, and an RPC chunk leaves
        // as soon as its pages are ready, so small RPCs overlap set-up with I/O and large ones
        // do not; read-ahead pages are set up by the async read-ahead workers
        let (core, start) = self.free_core(client);
        let c = &self.cfg.cluster;
        let mut t = start + c.client_syscall_ns;
        let (page_ns, extent_ns) = (c.client_page_ns, c.client_extent_ns);
        for (s, e) in sync_runs {
            for (ch, pages) in self.make_chunks(client, file as u32, s, e, false, Some(tid)) {
                t += pages * page_ns + extent_ns;
                waits += 1;
                let osc = self.chunks[ch as usize].as_ref().expect("chunk").0;
                self.schedule(t, Ev::ChunkReady(osc, ch));
            }
        }
        for (s, e) in ra_runs {
            for (ch, pages) in self.make_chunks(client, file as u32, s, e, true, None) {
                let workers = &mut self.clients[client].ra_workers;
                let (w, free) = workers.earliest();
                let ready = free.max(self.now) + pages * page_ns + extent_ns;
                workers.book(w, ready);
                let osc = self.chunks[ch as usize].as_ref().expect("chunk").0;
                self.schedule(ready, Ev::ChunkReady(osc, ch));
            }
        }
        let copy = npages * COPY_NS_PER_PAGE;
        self.clients[client].app_cores.book(core, t + copy);
        let th = &mut self.threads[tid as usize];
        let op = th.op.as_mut().expect("op");
        op.ready_at = t + copy;
        if waits == 0 {
            op.state = OpState::Running;
            let at = t + copy;
            self.schedule(at, Ev::Thread(tid));
        } else {
            op.state = OpState::WaitIo;
            op.waits = waits;
        }
    }

    /// Split file pages [s, e] by stripe and into pieces of at most max_pages_per_rpc
    /// (osc_io_submit flushes its page list every max_pages_per_rpc pages).
    fn make_chunks(&mut self, client: usize, file: u32, s: u64, e: u64, ra: bool, waiter: Option<u32>) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        let mut p = s;
        while p <= e {
            let f = &self.files[file as usize];
            let (stripe, obj_page) = f.map(p);
            let osc_i = self.clients[client].oscs[f.osts[stripe] as usize];
            let mppr = self.oscs[osc_i as usize].mppr;
            // pieces end on max_pages_per_rpc boundaries of the object, as the read-ahead window
            // is aligned to RPCs
            let last = e.min(f.chunk_end(p)).min(p + (mppr - 1 - obj_page % mppr));
            let pages = last - p + 1;
            let chunk = ReadChunk {
                file,
                obj: f.obj_ids[stripe],
                obj_start: obj_page,
                file_start: p,
                pages,
                waiters: waiter.into_iter().collect(),
                readahead: ra,
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
            out.push((id, pages));
            p = last + 1;
        }
        out
    }

    // ------------------------------------------------------------------ OSC: forming RPCs

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

    fn try_read_rpc(&mut self, osc_i: u32) -> bool {
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

    fn try_write_rpc(&mut self, osc_i: u32) -> bool {
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

    fn new_rpc(&mut self, rpc: Rpc) -> u32 {
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
    fn send_rpc(&mut self, id: u32) {
        let c = &self.cfg.cluster;
        let (rpc_ns, lat, bw, stream) = (c.client_rpc_ns, c.net_latency_ns, c.net_bandwidth_bps, c.net_stream_bps);
        let osts_per_oss = c.osts_per_oss;
        let rpc = self.rpcs[id as usize].as_mut().expect("rpc");
        let osc = &mut self.oscs[rpc.osc as usize];
        let pages32 = rpc.pages.min(u32::MAX as u64) as u32;
        if rpc.write {
            osc.w_in_flight += 1;
        } else {
            osc.r_in_flight += 1;
        }
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

    fn on_rpc(&mut self, id: u32) {
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
    fn disk_ranges(&self, id: u32) -> Vec<(u64, u64)> {
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

    fn submit_disk(&mut self, id: u32, ost: usize) {
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
    fn dispatch_disk(&mut self, ost: usize) {
        if let Some(d) = self.elevators[ost].dispatch(&self.devices[ost], self.now) {
            let done = self.devices[ost].submit(d.issued, d.obj, d.start, d.len, d.write);
            self.schedule(done, Ev::Disk(ost as u32));
        }
    }

    fn on_disk_done(&mut self, ost: usize) {
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
    fn reply(&mut self, id: u32, oss: usize, data: u64) {
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
    fn on_reply(&mut self, id: u32) {
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
            // the OST hands out more grant, at most one chunk per reply, up to what the
            // client asks for: max_pages_per_rpc x (max_rpcs_in_flight + 1) or max_dirty_mb
            let want = (osc.mppr * (osc.mrif as u64 + 1)).max(osc.max_dirty_pages) * PAGE;
            let have = osc.avail_grant + osc.dirty_pages * PAGE;
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
                // pages back in the LRU over the limit are reclaimed at once, as Lustre's
                // osc_lru_add_batch() queues its LRU work when the cache holds too much
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
        // a write reply may complete a lock callback of this OSC, which may let a request through
        if rpc.write && self.oscs[osc_i as usize].callbacks > 0 && self.finish_callbacks(Some(osc_i)) > 0 {
            self.process_lock_queue();
        }
    }

    // ------------------------------------------------------------------ totals

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
        // each OSC counts its locks called back and not yet cancelled
        let mut callbacks = vec![0u32; self.oscs.len()];
        for cb in &self.callbacks {
            callbacks[cb.osc as usize] += 1;
        }
        if let Some(i) = (0..self.oscs.len()).find(|&i| self.oscs[i].callbacks != callbacks[i]) {
            return Err(format!("{}: {} callbacks counted, {} pending", self.oscs[i].name, self.oscs[i].callbacks, callbacks[i]));
        }
        // pages of the write RPCs in flight, per OSC
        let mut in_flight = vec![0u64; self.oscs.len()];
        for r in self.rpcs.iter().flatten().filter(|r| r.write) {
            in_flight[r.osc as usize] += r.pages;
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
        // a queued lock request not marked stale is blocked, and only by what it cannot hurry:
        // locks already called back, or conflicting requests queued before it
        for (i, w) in self.lock_waiters.iter().enumerate().filter(|(_, w)| !w.stale) {
            let conflicting = |l: &crate::dlm::Lock| crate::dlm::conflicts(l, w.client, w.start, w.end, w.write);
            let locks = &self.files[w.file as usize].locks[w.stripe];
            if let Some(l) = locks.iter().find(|l| conflicting(l) && !l.cancelling) {
                return Err(format!("lock request of thread {} left waiting beside a live conflicting lock {l:?}", w.tid));
            }
            if !crate::dlm::queued_behind(&self.lock_waiters, i) && !locks.iter().any(conflicting) {
                return Err(format!("lock request of thread {} left waiting with nothing in its way", w.tid));
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

/// Bytes of object `i` of a file of `size` bytes in `count` stripes of `unit` bytes: a whole
/// stripe unit of every full row of stripes, and its part of the last row.
fn object_bytes(size: u64, unit: u64, count: u64, i: u64) -> u64 {
    let unit = unit.max(1);
    let row = unit.saturating_mul(count.max(1));
    let tail = (size % row).saturating_sub(i.saturating_mul(unit)).min(unit);
    (size / row).saturating_mul(unit).saturating_add(tail)
}

/// Refuse a scenario whose simulator state cannot fit in this machine's memory, before
/// allocating it: each client holds one OSC per OST (~0.4 KiB each), each file keeps a little
/// state for every client and each thread some for every file it works on, so a typo such as
/// `clients: 10000000` would otherwise swap, or be killed, minutes into set-up. The figure is a
/// lower bound of what set-up allocates.
fn check_memory(cfg: &Config, n_ost: u64) -> Result<(), String> {
    const OSC_BYTES: u64 = std::mem::size_of::<Osc>() as u64 + 64; // and its name
    const CLIENT_BYTES: u64 = std::mem::size_of::<Client>() as u64 + 2 * std::mem::size_of::<Link>() as u64;
    // per file and client: cached pages, reads in flight, dirty pages, writes in flight
    const FILE_CLIENT_BYTES: u64 = 68;
    // per thread and file it works on: the file's index and its read-ahead state
    const THREAD_BYTES: u64 = std::mem::size_of::<Thread>() as u64;
    const THREAD_FILE_BYTES: u64 = 4 + std::mem::size_of::<Readahead>() as u64;
    let clients = cfg.cluster.clients as u64;
    let (mut files, mut thread_bytes, mut map_bytes) = (0u64, 0u64, 0u64);
    for job in &cfg.jobs {
        let on = job.clients.len() as u64;
        // the page cache's map of each file on each client of the job grows to the highest page
        // cached: a random reader of a 1 EiB file would need 1 TiB of it
        let file_size = match (&job.dlio, &job.h5bench) {
            (Some(dl), _) => dl.samples_per_file.saturating_mul(dl.sample_size),
            (_, Some(h5)) => workload::h5_file_size(h5),
            _ => job.filesize,
        };
        // (files of the job, threads, files each thread works on, (file, client) pairs cached)
        let (f, threads, each, cached) = match (job.workload.as_str(), &job.ior, &job.dlio, &job.h5bench) {
            ("ior", Some(ior), ..) => {
                let n = ior.processes.max(1) as u64;
                // a file per process is cached by its writer and, with -C, by its reader
                if ior.file_per_process { (n, n, 2, n.saturating_mul(on.min(2))) } else { (1, n, 2, on) }
            }
            ("dlio", _, Some(dl), _) => (dl.files, on.saturating_mul(dl.read_threads as u64), dl.files, dl.files.saturating_mul(on)),
            (_, _, _, Some(h5)) => (1, h5.processes as u64, 1, on),
            (w, ..) => {
                // filebench: a file per thread and client, cached by that client only
                let groups = on.saturating_mul(job.threads.max(1) as u64);
                let roles = if matches!(w, "filebench.randomrw" | "filebench.seqrw") { 2 } else { 1 };
                (groups, groups.saturating_mul(roles), 1, groups)
            }
        };
        files = files.saturating_add(f);
        let map = crate::pageset::PageSet::max_map_bytes(file_size);
        map_bytes = map_bytes.saturating_add(cached.saturating_mul(map));
        let per_thread = THREAD_BYTES.saturating_add(each.saturating_mul(THREAD_FILE_BYTES));
        thread_bytes = thread_bytes.saturating_add(threads.saturating_mul(per_thread));
    }
    let need = clients
        .saturating_mul(n_ost.saturating_mul(OSC_BYTES).saturating_add(CLIENT_BYTES + 4 * n_ost))
        .saturating_add(files.saturating_mul(clients).saturating_mul(FILE_CLIENT_BYTES))
        .saturating_add(thread_bytes)
        .saturating_add(map_bytes);
    let Some(available) = available_memory() else { return Ok(()) };
    if need <= available {
        return Ok(());
    }
    Err(format!(
        "simulating this scenario needs at least {} of memory ({} clients x {} OSTs = {} OSCs, {} file(s) kept for every client, {} of application threads, up to {} of page-cache maps for its file sizes), more than the {} this machine has available",
        human_bytes(need),
        clients,
        n_ost,
        clients.saturating_mul(n_ost),
        files,
        human_bytes(thread_bytes),
        human_bytes(map_bytes),
        human_bytes(available)
    ))
}

/// `MemAvailable` of /proc/meminfo in bytes; None where there is no such file (not Linux).
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// `bytes` and `limit` (`bytes` > `limit`) for a message, in exact bytes where the rounded
/// figures would read the same ("440 GiB, which holds 440 GiB").
fn human_over(bytes: u64, limit: u64) -> (String, String) {
    let (a, b) = (human_bytes(bytes), human_bytes(limit));
    // "440.0 GiB" reads as "440 GiB"
    if a.replace(".0 ", " ") == b.replace(".0 ", " ") { (format!("{bytes} bytes"), format!("{limit} bytes")) } else { (a, b) }
}

/// `bytes` in the largest binary unit that leaves at least 1 (`1.5 GiB`, `440 GiB`, `512 B`).
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 || value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
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

enum Admit {
    Ok,
    Wait,
    Sync,
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

/// Append pages [s, e] to `runs` (in page order), joining them to the last run if they follow it.
pub(crate) fn push_run(runs: &mut Vec<(u64, u64)>, s: u64, e: u64) {
    match runs.last_mut() {
        Some((_, last)) if *last + 1 == s => *last = e,
        _ => runs.push((s, e)),
    }
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

/// Insert [s, e] into a set of disjoint intervals; returns how many pages were new.
pub fn interval_insert(set: &mut BTreeMap<u64, u64>, s: u64, e: u64) -> u64 {
    let mut ns = s;
    let mut ne = e;
    let mut covered = 0;
    let mut remove = Vec::new();
    if let Some((&a, &b)) = set.range(..s).next_back() {
        if b + 1 >= s {
            remove.push(a);
        }
    }
    for (&a, _) in set.range(s..=e.saturating_add(1)) {
        remove.push(a);
    }
    for a in remove {
        let b = set.remove(&a).expect("present");
        let (is, ie) = (a.max(s), b.min(e));
        if is <= ie {
            covered += ie - is + 1;
        }
        ns = ns.min(a);
        ne = ne.max(b);
    }
    set.insert(ns, ne);
    (e - s + 1) - covered
}

/// Remove [s, e] from a set of disjoint intervals; returns how many pages were removed.
pub fn interval_remove(set: &mut BTreeMap<u64, u64>, s: u64, e: u64) -> u64 {
    let mut removed = 0;
    let mut hits = Vec::new();
    if let Some((&a, &b)) = set.range(..s).next_back() {
        if b >= s {
            hits.push((a, b));
        }
    }
    for (&a, &b) in set.range(s..=e) {
        hits.push((a, b));
    }
    for (a, b) in hits {
        set.remove(&a);
        let (is, ie) = (a.max(s), b.min(e));
        removed += ie - is + 1;
        if a < s {
            set.insert(a, s - 1);
        }
        if b > e {
            set.insert(e + 1, b);
        }
    }
    removed
}

/// Sub-ranges of [s, e] not covered by `runs` (sorted, disjoint, within [s, e]).
fn run_gaps(runs: &[(u64, u64)], s: u64, e: u64) -> Vec<(u64, u64)> {
    let mut gaps = Vec::new();
    let mut at = s;
    for &(a, b) in runs {
        if a > at {
            gaps.push((at, a - 1));
        }
        at = b + 1;
    }
    if at <= e {
        gaps.push((at, e));
    }
    gaps
}

/// Sub-ranges of [s, e] not covered by the set.
pub fn interval_gaps(set: &BTreeMap<u64, u64>, s: u64, e: u64) -> Vec<(u64, u64)> {
    let mut gaps = Vec::new();
    let mut p = s;
    if let Some((_, &b)) = set.range(..s).next_back() {
        if b >= s {
            p = b + 1;
        }
    }
    for (&a, &b) in set.range(s..=e) {
        if p > e {
            break;
        }
        if a > p {
            gaps.push((p, a - 1));
        }
        p = p.max(b + 1);
    }
    if p <= e {
        gaps.push((p, e));
    }
    gaps
}

/// Read chunks in flight overlapping [s, e], in page order.
fn overlapping(map: &BTreeMap<u64, (u64, u32)>, s: u64, e: u64) -> Vec<(u64, u64, u32)> {
    let mut out = Vec::new();
    if let Some((&a, &(b, id))) = map.range(..s).next_back() {
        if b >= s {
            out.push((a, b, id));
        }
    }
    for (&a, &(b, id)) in map.range(s..=e) {
        out.push((a, b, id));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{human_over, stride_runs_within, take_pages, PAGE};
    use crate::model::Readahead;
    use crate::rng::Rng;

    #[test]
    fn an_overflow_message_never_reads_as_equal_figures() {
        let gib = 1u64 << 30;
        assert_eq!(human_over(2 * gib, gib), ("2 GiB".to_string(), "1 GiB".to_string()));
        let (put, holds) = human_over(440 * gib + 4096, 440 * gib);
        assert_eq!((put.as_str(), holds.as_str()), ("472446406656 bytes", "472446402560 bytes"));
    }

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
}
