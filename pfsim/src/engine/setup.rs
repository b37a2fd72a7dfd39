//! Building a `Sim` from a resolved `Config`: the cluster's components, the files, the
//! application threads, the caches a scenario starts with, and the checks that the scenario fits
//! the OSTs' capacity and this machine's memory.

use super::*;

impl Sim {
    /// Build the cluster, its files and its application threads from a resolved scenario; an
    /// error names what does not fit (the OSTs' capacity, this machine's memory).
    pub fn new(cfg: Config) -> Result<Sim, String> {
        let style = TextStyle::parse(&cfg.cluster.lustre_version)
            .ok_or_else(|| format!("unsupported lustre_version {:?}", cfg.cluster.lustre_version))?;
        let c = cfg.cluster.clone();
        let n_ost = (c.oss * c.osts_per_oss) as u32;
        check_memory(&cfg, n_ost as u64)?;
        // every client mounts with the same read-ahead limits (the same RAM)
        let ra_max = read_ahead_max_pages(c.client_ram_bytes);
        let ra_file = read_ahead_per_file_pages(&c, ra_max)?;
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
            ev_kinds: [0; 6],
            mds_free_at: 0,
            callbacks: Default::default(),
            lock_queue: Default::default(),
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
                threads: Vec::new(),
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
                    checksum_dump: false,
                    grant_shrink: true,
                    pinger_recov: true,
                    r_in_flight: 0,
                    w_in_flight: 0,
                    hp_in_flight: 0,
                    lock_requests: 0,
                    read_turn: false,
                    other_in_flight: 0,
                    dirty_pages: 0,
                    pending_w_pages: 0,
                    pending_r_pages: 0,
                    avail_grant: c.client_grant_bytes.unwrap_or(2 * (c.brw_size_bytes + EXTENT_TAX)),
                    dirty_grant: 0,
                    lost_grant: 0,
                    cached_pages: 0,
                    objects: BTreeMap::new(),
                    next_write_obj: 0,
                    read_queue: Default::default(),
                    cache_waiters: Vec::new(),
                    writeback_waiters: Vec::new(),
                    last_reply_ns: 0,
                    import: crate::stats::ImportState::Full,
                    state_hist: Vec::new(),
                    connect_done_ns: 0,
                    disconnecting: false,
                    reconnect_queued: false,
                    next_ping_ns: PING_INTERVAL_NS,
                    locks: 0,
                    conn_cnt: 1,
                    quiet_disconnect_us: 0,
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
        // whose writes may raise it (client_adjust_max_dirty(), which also turns a 0 into 2000),
        // and the MDC's max_mod_rpcs_in_flight after its max_rpcs_in_flight, which may lower it
        // and bounds it (obd_set_max_rpcs_in_flight(), obd_set_max_mod_rpcs_in_flight())
        let mut tunables: Vec<(String, String)> = sim.cfg.tunables.clone().into_iter().collect();
        tunables.sort_by_key(|(name, _)| {
            (name.ends_with(".max_dirty_mb") || name == "max_dirty_mb", name.ends_with(".max_mod_rpcs_in_flight"))
        });
        for (name, value) in &tunables {
            sim.set_everywhere(name, value)
                .map_err(|e| format!("tunable {name}={value}: {}", sim.refusal(0, name, e)))?;
        }
        sim.preload_caches();
        for ci in 0..sim.clients.len() as u32 {
            sim.schedule(FLUSH_PERIOD_NS, Ev::Flusher(ci));
        }
        // the pinger's first look, PING_INTERVAL after the imports connected at the mount
        for ci in 0..sim.clients.len() as u32 {
            sim.schedule(PING_INTERVAL_NS, Ev::Pinger(ci));
        }
        Ok(sim)
    }

    /// Files of `cached` jobs start in their clients' page caches, as filebench's preallocation
    /// leaves them on Linux: it writes each file through the client, and its `msync(MS_INVALIDATE)`
    /// does not drop clean pages. Pages go in file order, so when a file is larger than
    /// `max_cached_mb` the LRU keeps its end, as after the sequential preallocation.
    pub(super) fn preload_caches(&mut self) {
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

    /// Create a file of `size` bytes striped over `stripe_count` consecutive OSTs, from the OST
    /// after the last file's, and return its index.
    pub(super) fn create_file(&mut self, size: u64, stripe_count: u32, stripe_size: u64) -> u32 {
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

    /// Create every job's files and application threads, and check that the files fit.
    pub(super) fn create_threads(&mut self, _rng: &mut Rng) -> Result<(), String> {
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
    pub(super) fn check_osts_hold_the_files(&self) -> Result<(), String> {
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
    pub(super) fn check_fits(&self, job: &JobConfig, size: u64) -> Result<(), String> {
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

    /// Add an application thread of `job` on `client` working on `files`.
    pub(super) fn add_thread(&mut self, client: u32, job: u32, role: Role, files: Vec<u32>, cfg: &JobConfig) {
        let tid = self.threads.len() as u32;
        self.clients[client as usize].threads.push(tid);
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
            lock_requests: 0,
        });
        self.schedule(cfg.start_ns, Ev::Thread(tid));
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

/// Lustre's `max_read_ahead_mb` at mount, in pages: RAM / 32, up to 1 GiB (`ll_init_sbi()`).
fn read_ahead_max_pages(ram_bytes: u64) -> u64 {
    (ram_bytes / PAGE / 32).min(1024 * PAGES_PER_MIB)
}

/// `max_read_ahead_per_file_mb` at mount, in pages: the preset's window in whole MiB, or Lustre's
/// default (`max_read_ahead_mb` / 4, up to 256 MiB). A window above `max_read_ahead_mb` is refused,
/// as Lustre refuses it (ERANGE).
fn read_ahead_per_file_pages(c: &crate::config::ClusterConfig, ra_max: u64) -> Result<u64, String> {
    let Some(bytes) = c.client_read_ahead_per_file_bytes else {
        return Ok((ra_max / 4).min(256 * PAGES_PER_MIB));
    };
    let mib = bytes.div_ceil(1 << 20);
    if mib * PAGES_PER_MIB <= ra_max {
        return Ok(mib * PAGES_PER_MIB);
    }
    Err(format!(
        "cluster.client_read_ahead_per_file: {mib} MiB is above max_read_ahead_mb ({} MiB: the node's RAM / 32, up to 1024), which Lustre refuses",
        ra_max / PAGES_PER_MIB
    ))
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

#[cfg(test)]
mod tests {
    use super::human_over;

    #[test]
    fn an_overflow_message_never_reads_as_equal_figures() {
        let gib = 1u64 << 30;
        assert_eq!(human_over(2 * gib, gib), ("2 GiB".to_string(), "1 GiB".to_string()));
        let (put, holds) = human_over(440 * gib + 4096, 440 * gib);
        assert_eq!((put.as_str(), holds.as_str()), ("472446406656 bytes", "472446402560 bytes"));
    }
}
