//! The resolved scenario the Python side hands to the simulator (all sizes in bytes, times in ns).
//!
//! Python validates user input (YAML, presets, units); this module only deserialises the
//! resolved form and checks the few invariants the engine relies on.

use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub name: String,
    #[serde(default)]
    pub seed: u64,
    pub duration_ns: u64,
    #[serde(default = "default_probe")]
    pub probe_interval_ns: u64,
    #[serde(default = "default_epoch")]
    pub start_epoch_ns: u64,
    pub cluster: ClusterConfig,
    #[serde(default)]
    pub tunables: std::collections::BTreeMap<String, String>,
    pub jobs: Vec<JobConfig>,
}

fn default_rpm() -> u32 {
    7200
}

fn default_scheduler() -> String {
    "none".into()
}
fn default_probe() -> u64 {
    500_000_000
}
fn default_epoch() -> u64 {
    1_718_000_000_000_000_000
}

/// Physical description of the cluster (a preset plus overrides).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    pub lustre_version: String,
    pub fsname: String,
    pub clients: usize,
    pub client_ram_bytes: u64,
    /// Clean file data the node's page cache keeps, bytes (None: up to Lustre's
    /// `max_cached_mb`). Dirty pages and pages in write RPCs do not count and are never
    /// dropped for it: the kernel reclaims clean pages only.
    #[serde(default)]
    pub client_page_cache_bytes: Option<u64>,
    /// `llite.max_read_ahead_per_file_mb` at mount, bytes, rounded up to whole MiB; above
    /// `max_read_ahead_mb` the scenario is refused (None: Lustre's default, max_read_ahead_mb / 4
    /// up to 256 MiB).
    /// The async read-ahead threshold starts at it too, as `ll_init_sbi()` sets it.
    #[serde(default)]
    pub client_read_ahead_per_file_bytes: Option<u64>,
    /// Grant every OSC holds when the run starts, bytes: a client that has written recently
    /// (None: what an OST grants at connect, 2 x (`brw_size` + the extent tax)). At most
    /// `MAX_UNDIRTY`, the most an OSC asks for.
    #[serde(default)]
    pub client_grant_bytes: Option<u64>,
    pub client_cpus: u32,
    pub oss: usize,
    pub osts_per_oss: usize,
    pub oss_threads: usize,
    /// Per-node link bandwidth, bytes per second (each direction).
    pub net_bandwidth_bps: f64,
    pub net_latency_ns: u64,
    /// Rate of one bulk transfer on its own (one LNet/TCP stream); concurrent transfers share
    /// the link bandwidth above.
    pub net_stream_bps: f64,
    /// "ssd" or "hdd".
    pub ost_kind: String,
    pub ost_read_bw_bps: f64,
    pub ost_write_bw_bps: f64,
    pub ost_read_latency_ns: u64,
    pub ost_write_latency_ns: u64,
    /// Extra access time of a request that does not continue a recent one (seek, FTL miss).
    pub ost_random_penalty_ns: u64,
    /// The block layer's I/O scheduler: "none" (requests in arrival order) or "mq-deadline"
    /// (an elevator; one-channel devices only).
    #[serde(default = "default_scheduler")]
    pub ost_scheduler: String,
    /// Independent units a device serves in parallel (SSD channels; 1 for a disk).
    pub ost_channels: usize,
    /// Bytes of consecutive blocks on one channel before the next channel takes over.
    pub ost_stripe_bytes: u64,
    pub ost_capacity_bytes: u64,
    /// Spindle speed of a disk (`ost_kind` hdd): half a revolution is the mean rotational wait.
    /// An SSD has none (0, ignored).
    #[serde(default = "default_rpm")]
    pub ost_rpm: u32,
    /// OSS CPU time to handle one request (ptlrpc, ofd, osd), before any I/O.
    pub oss_service_ns: u64,
    /// Client CPU time (ptlrpcd) to build, send and finish one RPC.
    pub client_rpc_ns: u64,
    /// Client CPU time per page a read sets up for I/O (page allocation, cl_page, osc_page).
    pub client_page_ns: u64,
    /// Client CPU time per page a buffered write copies into the page cache (ll_write_begin,
    /// the copy, ll_write_end, osc_page_cache_add).
    pub client_write_page_ns: u64,
    /// Client CPU time of the submitting thread per extent queued for I/O (osc_queue_sync_pages).
    pub client_extent_ns: u64,
    /// Client CPU time of one read/write system call through the cl_io stack.
    pub client_syscall_ns: u64,
    /// Server maximum RPC size (obdfilter brw_size); bounds max_pages_per_rpc.
    pub brw_size_bytes: u64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IorConfig {
    pub api: String,
    pub processes: u32,
    pub transfer: u64,
    pub block: u64,
    pub segments: u64,
    pub file_per_process: bool,
    pub random: bool,
    pub fsync: bool,
    /// IOR's `-C` (reorderTasks): each rank reads back what a rank on another client wrote.
    #[serde(default)]
    pub reorder_tasks: bool,
}

/// h5bench_write (VPIC-IO) and h5bench_read (BDCATS-IO) parameters, resolved by Python.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct H5Config {
    /// MPI ranks, spread round-robin over the job's clients.
    pub processes: u32,
    /// Particles per rank (DIM_1 x DIM_2 x DIM_3).
    pub particles: u64,
    pub timesteps: u64,
    /// EMULATED_COMPUTE_TIME_PER_TIMESTEP.
    pub compute_ns: u64,
    /// Writes: "contig", "interleaved" or "strided".
    pub file_pattern: String,
    /// Reads: "full", "partial" or "strided".
    pub read_option: String,
    /// TO_READ_NUM_PARTICLES (partial reads).
    pub to_read: u64,
    /// STRIDE_SIZE, BLOCK_SIZE (particles) and BLOCK_CNT of strided access.
    pub stride: u64,
    pub block: u64,
    pub block_cnt: u64,
}

/// DLIO benchmark parameters, resolved by Python (a model preset plus overrides).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DlioConfig {
    /// "tfrecord" or "npz" (whole files in order), "indexed_binary" or "mmap_indexed_binary"
    /// (samples at shuffled offsets).
    pub format: String,
    pub files: u64,
    pub samples_per_file: u64,
    /// record_length, bytes.
    pub sample_size: u64,
    /// Bytes per read call.
    pub transfer_size: u64,
    /// Loader threads per rank (one rank per client of the job).
    pub read_threads: u32,
    /// Samples per batch per rank.
    pub batch_size: u64,
    pub computation_ns: u64,
    /// Batches a loader may hold ready ahead of training.
    pub prefetch: u32,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobConfig {
    pub name: String,
    pub clients: Vec<usize>,
    pub workload: String,
    #[serde(default = "one")]
    pub threads: u32,
    #[serde(default)]
    pub iosize: u64,
    #[serde(default)]
    pub filesize: u64,
    #[serde(default = "one")]
    pub stripe_count: u32,
    #[serde(default = "mib")]
    pub stripe_size: u64,
    #[serde(default)]
    pub start_ns: u64,
    pub stop_ns: u64,
    #[serde(default)]
    pub fsync: bool,
    /// filebench: the files start in the clients' page caches (preallocated, not dropped).
    #[serde(default)]
    pub cached: bool,
    #[serde(default)]
    pub ior: Option<IorConfig>,
    #[serde(default)]
    pub h5bench: Option<H5Config>,
    #[serde(default)]
    pub dlio: Option<DlioConfig>,
}

fn one() -> u32 {
    1
}
fn mib() -> u64 {
    1 << 20
}

impl Config {
    /// Parse and check the resolved configuration.
    pub fn from_json(text: &str) -> Result<Config, String> {
        let cfg: Config = serde_json::from_str(text).map_err(|e| format!("bad engine config: {e}"))?;
        cfg.check()?;
        Ok(cfg)
    }

    fn check(&self) -> Result<(), String> {
        let c = &self.cluster;
        if c.clients == 0 || c.oss == 0 || c.osts_per_oss == 0 {
            return Err("cluster needs at least one client, one OSS and one OST".into());
        }
        if c.osts_per_oss * c.oss > 0xffff {
            return Err("too many OSTs (at most 65535)".into());
        }
        if c.net_bandwidth_bps <= 0.0 || c.net_stream_bps <= 0.0 || c.ost_read_bw_bps <= 0.0 || c.ost_write_bw_bps <= 0.0 {
            return Err("bandwidths must be positive".into());
        }
        if c.ost_kind != "ssd" && c.ost_kind != "hdd" {
            return Err(format!("ost_kind must be ssd or hdd, not {:?}", c.ost_kind));
        }
        if c.ost_kind == "hdd" && c.ost_rpm == 0 {
            return Err("ost_rpm must be positive".into());
        }
        match c.ost_scheduler.as_str() {
            "none" => {}
            "mq-deadline" if c.ost_channels == 1 => {}
            "mq-deadline" => return Err("ost_scheduler mq-deadline needs ost_channels 1 (one actuator)".into()),
            other => return Err(format!("ost_scheduler must be none or mq-deadline, not {other:?}")),
        }
        if c.oss_threads == 0 || c.ost_channels == 0 || c.ost_stripe_bytes < 4096 {
            return Err("oss_threads and ost_channels must be at least 1, ost_stripe at least 4 KiB".into());
        }
        if c.brw_size_bytes < 4096 || c.brw_size_bytes > 64 << 20 || !c.brw_size_bytes.is_power_of_two() {
            return Err("brw_size must be a power of two between 4 KiB and 64 MiB".into());
        }
        if c.client_grant_bytes.is_some_and(|g| g > crate::model::MAX_UNDIRTY) {
            return Err(format!("client_grant must be at most {} bytes, the most an OSC asks for", crate::model::MAX_UNDIRTY));
        }
        if self.probe_interval_ns == 0 {
            return Err("probe_interval must be positive".into());
        }
        let n_ost = c.oss * c.osts_per_oss;
        for j in &self.jobs {
            if j.clients.iter().any(|&i| i >= c.clients) {
                return Err(format!("job {}: client index out of range", j.name));
            }
            if j.stripe_count == 0 || j.stripe_count as usize > n_ost {
                return Err(format!("job {}: stripe_count must be 1..{n_ost}", j.name));
            }
            if j.stripe_size < 65536 || j.stripe_size % 65536 != 0 {
                return Err(format!("job {}: stripe_size must be a multiple of 64 KiB", j.name));
            }
            let missing = match j.workload.as_str() {
                "ior" => j.ior.is_none(),
                "h5bench.vpic" | "h5bench.bdcats" => j.h5bench.as_ref().is_none_or(|h| h.processes == 0 || h.particles == 0 || h.timesteps == 0),
                "dlio" => j.dlio.as_ref().is_none_or(|d| {
                    d.files == 0 || d.samples_per_file == 0 || d.sample_size == 0 || d.transfer_size == 0 || d.read_threads == 0
                }),
                _ => {
                    if j.iosize == 0 || j.filesize < j.iosize {
                        return Err(format!("job {}: iosize must be positive and at most filesize", j.name));
                    }
                    false
                }
            };
            if missing {
                return Err(format!("job {}: {} parameters missing or zero", j.name, j.workload));
            }
            if let Some(d) = &j.dlio {
                // every sample of the dataset gets a number and an offset: they must fit
                let total = d.files.checked_mul(d.samples_per_file).and_then(|n| n.checked_mul(d.sample_size));
                if total.is_none_or(|t| t > 1 << 62) {
                    return Err(format!("job {}: the DLIO dataset (files x samples_per_file x sample_size) is above 2^62 bytes", j.name));
                }
            }
        }
        Ok(())
    }
}

/// For unit tests: the resolved scenario of three clients writing one file each on one OST (one
/// thread each, from t = 0).
#[cfg(test)]
pub(crate) const TEST_THREE_CLIENTS: &str = r#"{
    "name": "w", "seed": 1, "duration_ns": 1000000000,
    "probe_interval_ns": 500000000, "start_epoch_ns": 1718000000000000000,
    "cluster": {"lustre_version": "2.15.5", "fsname": "hasanfs", "clients": 3, "client_ram_bytes": 137438953472,
        "client_cpus": 16, "oss": 1, "osts_per_oss": 1, "oss_threads": 256, "net_bandwidth_bps": 2800000000.0,
        "net_stream_bps": 700000000.0, "net_latency_ns": 25000, "ost_kind": "ssd", "ost_read_bw_bps": 500000000.0,
        "ost_write_bw_bps": 300000000.0, "ost_read_latency_ns": 20000, "ost_write_latency_ns": 20000,
        "ost_random_penalty_ns": 400000, "ost_scheduler": "none", "ost_channels": 8, "ost_stripe_bytes": 131072,
        "ost_capacity_bytes": 472446402560, "ost_rpm": 0, "oss_service_ns": 20000, "client_rpc_ns": 12000,
        "client_page_ns": 10000, "client_write_page_ns": 2200, "client_extent_ns": 5000, "client_syscall_ns": 10000,
        "brw_size_bytes": 4194304},
    "tunables": {},
    "jobs": [{"name": "j", "clients": [0, 1, 2], "workload": "filebench.seqwrite", "threads": 1, "iosize": 1048576,
        "filesize": 1073741824, "stripe_count": 1, "stripe_size": 1048576, "start_ns": 0, "stop_ns": 1000000000,
        "fsync": false, "cached": false, "ior": null, "h5bench": null, "dlio": null}]
}"#;
