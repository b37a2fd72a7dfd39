//! Scenario builders and text parsers shared by the integration tests.
#![allow(dead_code)]

use pfsim::{Config, Sim};
use serde_json::{json, Value};

pub const KIB: u64 = 1 << 10;
pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;
pub const SEC: u64 = 1_000_000_000;
pub const MS: u64 = 1_000_000;

/// The historical one-job scenario: one client with 128 GiB of RAM, 8 SSD OSTs, one thread of
/// `workload` on a 100 GiB file striped over one OST.
pub fn scenario(workload: &str, iosize: u64, mppr: u32, mrif: u32, secs: u64) -> String {
    Scenario::new()
        .duration_ns(secs * SEC)
        .tunable("osc.max_pages_per_rpc", &mppr.to_string())
        .tunable("osc.max_rpcs_in_flight", &mrif.to_string())
        .job(Job::new(workload, iosize).filesize(100 * GIB))
        .json()
}

/// IOR parameters of a job (`workload: "ior"`).
#[derive(Clone, Debug)]
pub struct Ior {
    pub processes: u32,
    pub transfer: u64,
    pub block: u64,
    pub segments: u64,
    pub file_per_process: bool,
    pub random: bool,
    pub fsync: bool,
    pub reorder_tasks: bool,
}

/// One job of a scenario. Defaults: client 0, one thread, 1 GiB file, one stripe of 1 MiB,
/// running from 0 until the end of the scenario.
#[derive(Clone, Debug)]
pub struct Job {
    pub workload: String,
    pub clients: Vec<usize>,
    pub threads: u32,
    pub iosize: u64,
    pub filesize: u64,
    pub stripe_count: u32,
    pub stripe_size: u64,
    pub start_ns: u64,
    /// `None`: the scenario's duration.
    pub stop_ns: Option<u64>,
    pub fsync: bool,
    /// filebench: the files start in the page cache.
    pub cached: bool,
    pub ior: Option<Ior>,
    /// h5bench parameters (`H5Config` as JSON), for `h5bench.vpic` and `h5bench.bdcats`.
    pub h5bench: Option<Value>,
}

impl Job {
    pub fn new(workload: &str, iosize: u64) -> Job {
        Job {
            workload: workload.to_string(),
            clients: vec![0],
            threads: 1,
            iosize,
            filesize: GIB,
            stripe_count: 1,
            stripe_size: MIB,
            start_ns: 0,
            stop_ns: None,
            fsync: false,
            cached: false,
            ior: None,
            h5bench: None,
        }
    }

    /// An h5bench job (`workload`: `h5bench.vpic` or `h5bench.bdcats`) with `h5` as its
    /// resolved parameters.
    pub fn h5bench(workload: &str, h5: Value) -> Job {
        Job { h5bench: Some(h5), ..Job::new(workload, 0) }
    }

    /// An IOR job: `processes` ranks, write phase then read phase.
    pub fn ior(ior: Ior) -> Job {
        Job { ior: Some(ior), ..Job::new("ior", 0) }
    }

    pub fn clients(mut self, c: &[usize]) -> Job {
        self.clients = c.to_vec();
        self
    }
    pub fn threads(mut self, t: u32) -> Job {
        self.threads = t;
        self
    }
    pub fn filesize(mut self, s: u64) -> Job {
        self.filesize = s;
        self
    }
    pub fn stripes(mut self, count: u32, size: u64) -> Job {
        self.stripe_count = count;
        self.stripe_size = size;
        self
    }
    pub fn start_ns(mut self, t: u64) -> Job {
        self.start_ns = t;
        self
    }
    pub fn stop_ns(mut self, t: u64) -> Job {
        self.stop_ns = Some(t);
        self
    }
    pub fn fsync(mut self, f: bool) -> Job {
        self.fsync = f;
        self
    }
    pub fn cached(mut self, c: bool) -> Job {
        self.cached = c;
        self
    }

    fn to_json(&self, i: usize, duration_ns: u64) -> Value {
        let mut j = json!({
            "name": format!("j{i}"),
            "clients": self.clients,
            "workload": self.workload,
            "threads": self.threads,
            "iosize": self.iosize,
            "filesize": self.filesize,
            "stripe_count": self.stripe_count,
            "stripe_size": self.stripe_size,
            "start_ns": self.start_ns,
            "stop_ns": self.stop_ns.unwrap_or(duration_ns),
            "fsync": self.fsync,
            "cached": self.cached,
        });
        if let Some(h5) = &self.h5bench {
            j["h5bench"] = h5.clone();
        }
        if let Some(ior) = &self.ior {
            j["ior"] = json!({
                "api": "POSIX",
                "processes": ior.processes,
                "transfer": ior.transfer,
                "block": ior.block,
                "segments": ior.segments,
                "file_per_process": ior.file_per_process,
                "reorder_tasks": ior.reorder_tasks,
                "random": ior.random,
                "fsync": ior.fsync,
            });
        }
        j
    }
}

/// A whole scenario; `json()` gives the resolved form `Config::from_json` reads.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub seed: u64,
    pub duration_ns: u64,
    pub clients: usize,
    pub client_ram_bytes: u64,
    pub client_cpus: u32,
    pub oss: usize,
    pub osts_per_oss: usize,
    pub oss_threads: usize,
    pub brw_size_bytes: u64,
    pub lustre_version: String,
    /// OSTs are disks behind the mq-deadline elevator (`disks`), not SSDs.
    pub disks: Option<u64>,
    /// Grant every OSC holds at the start (None: the connect grant).
    pub client_grant: Option<u64>,
    /// Client CPU time per page of a buffered write.
    pub write_page_ns: u64,
    pub tunables: Vec<(String, String)>,
    pub jobs: Vec<Job>,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario::new()
    }
}

impl Scenario {
    /// One 128 GiB, 16-CPU client; 4 OSS x 2 SSD OSTs; 4 MiB brw_size; 1 s; seed 3; no jobs.
    pub fn new() -> Scenario {
        Scenario {
            seed: 3,
            duration_ns: SEC,
            clients: 1,
            client_ram_bytes: 128 * GIB,
            client_cpus: 16,
            oss: 4,
            osts_per_oss: 2,
            oss_threads: 256,
            brw_size_bytes: 4 * MIB,
            lustre_version: "2.15.5".into(),
            disks: None,
            client_grant: None,
            write_page_ns: 2200,
            tunables: Vec::new(),
            jobs: Vec::new(),
        }
    }

    pub fn seed(mut self, s: u64) -> Scenario {
        self.seed = s;
        self
    }
    pub fn duration_ns(mut self, d: u64) -> Scenario {
        self.duration_ns = d;
        self
    }
    pub fn clients(mut self, n: usize) -> Scenario {
        self.clients = n;
        self
    }
    pub fn client_ram(mut self, bytes: u64) -> Scenario {
        self.client_ram_bytes = bytes;
        self
    }
    pub fn osts(mut self, oss: usize, per_oss: usize) -> Scenario {
        self.oss = oss;
        self.osts_per_oss = per_oss;
        self
    }
    pub fn brw_size(mut self, bytes: u64) -> Scenario {
        self.brw_size_bytes = bytes;
        self
    }
    /// Every OST a disk (one actuator, 180/170 MB/s, `seek_ns` per non-sequential request)
    /// behind the mq-deadline elevator.
    pub fn disks(mut self, seek_ns: u64) -> Scenario {
        self.disks = Some(seek_ns);
        self
    }
    /// Every OSC starts with `bytes` of grant (a client that has written recently).
    pub fn client_grant(mut self, bytes: u64) -> Scenario {
        self.client_grant = Some(bytes);
        self
    }
    pub fn write_page_ns(mut self, ns: u64) -> Scenario {
        self.write_page_ns = ns;
        self
    }
    pub fn version(mut self, v: &str) -> Scenario {
        self.lustre_version = v.into();
        self
    }
    /// A device-less tunable applied to every client before the run (`osc.max_pages_per_rpc`).
    pub fn tunable(mut self, name: &str, value: &str) -> Scenario {
        self.tunables.push((name.into(), value.into()));
        self
    }
    pub fn job(mut self, j: Job) -> Scenario {
        self.jobs.push(j);
        self
    }

    pub fn json(&self) -> String {
        let tunables: serde_json::Map<String, Value> =
            self.tunables.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
        let jobs: Vec<Value> = self.jobs.iter().enumerate().map(|(i, j)| j.to_json(i, self.duration_ns)).collect();
        let mut out = json!({
            "name": "t",
            "seed": self.seed,
            "duration_ns": self.duration_ns,
            "probe_interval_ns": 500_000_000u64,
            "cluster": {
                "lustre_version": self.lustre_version,
                "fsname": "testfs",
                "clients": self.clients,
                "client_ram_bytes": self.client_ram_bytes,
                "client_cpus": self.client_cpus,
                "oss": self.oss,
                "osts_per_oss": self.osts_per_oss,
                "oss_threads": self.oss_threads,
                "net_bandwidth_bps": 2.8e9,
                "net_latency_ns": 25000, "net_stream_bps": 7e8,
                "ost_kind": "ssd",
                "ost_read_bw_bps": 5e8,
                "ost_write_bw_bps": 3e8,
                "ost_read_latency_ns": 20000,
                "ost_write_latency_ns": 20000,
                "ost_random_penalty_ns": 400000,
                "ost_channels": 8,
                "ost_stripe_bytes": 131072,
                "ost_capacity_bytes": 440_000_000_000u64,
                "oss_service_ns": 20000,
                "client_rpc_ns": 12000,
                "client_page_ns": 10000, "client_write_page_ns": self.write_page_ns, "client_extent_ns": 5000,
                "client_syscall_ns": 10000,
                "brw_size_bytes": self.brw_size_bytes,
            },
            "tunables": tunables,
            "jobs": jobs,
        });
        if let Some(bytes) = self.client_grant {
            out["cluster"]["client_grant_bytes"] = json!(bytes);
        }
        if let Some(seek_ns) = self.disks {
            let disk = json!({
                "ost_kind": "hdd", "ost_scheduler": "mq-deadline", "ost_channels": 1,
                "ost_read_bw_bps": 1.8e8, "ost_write_bw_bps": 1.7e8,
                "ost_read_latency_ns": 200_000, "ost_write_latency_ns": 200_000,
                "ost_random_penalty_ns": seek_ns, "ost_stripe_bytes": 1 << 20,
            });
            let cluster = out["cluster"].as_object_mut().expect("cluster");
            for (key, value) in disk.as_object().expect("disk") {
                cluster.insert(key.clone(), value.clone());
            }
        }
        out.to_string()
    }

    /// The simulator for this scenario, not yet run.
    pub fn build(&self) -> Sim {
        sim_from_json(&self.json())
    }

    /// The simulator run to the end of the scenario.
    pub fn run(&self) -> Sim {
        let mut sim = self.build();
        sim.run_until(self.duration_ns);
        sim
    }
}

pub fn sim_from_json(json: &str) -> Sim {
    Sim::new(Config::from_json(json).expect("valid config")).expect("simulator")
}

/// lctl names of every OSC device of `client`.
pub fn osc_names(sim: &Sim, client: usize) -> Vec<String> {
    sim.clients[client].oscs.iter().map(|&o| sim.oscs[o as usize].name.clone()).collect()
}

/// One row of an rpc_stats histogram section: label, read count, write count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistRow {
    pub label: i64,
    pub read: u64,
    pub write: u64,
}

/// The parsed `osc.*.rpc_stats` text.
#[derive(Clone, Debug, Default)]
pub struct RpcStats {
    pub start_time: String,
    pub read_in_flight: u64,
    pub write_in_flight: u64,
    pub pending_write_pages: u64,
    pub pending_read_pages: u64,
    /// The `pages per rpc`, `rpcs in flight` and `offset` sections, in that order.
    pub sections: Vec<(String, Vec<HistRow>)>,
}

impl RpcStats {
    pub fn section(&self, title: &str) -> &[HistRow] {
        &self.sections.iter().find(|(t, _)| t == title).unwrap_or_else(|| panic!("no section {title}")).1
    }
    pub fn pages_per_rpc(&self) -> &[HistRow] {
        self.section("pages per rpc")
    }
    pub fn rpcs_in_flight(&self) -> &[HistRow] {
        self.section("rpcs in flight")
    }
    pub fn offset(&self) -> &[HistRow] {
        self.section("offset")
    }
}

/// Sum of the read and of the write column of a section.
pub fn row_sums(rows: &[HistRow]) -> (u64, u64) {
    rows.iter().fold((0, 0), |(r, w), x| (r + x.read, w + x.write))
}

fn header_value(line: &str) -> &str {
    line.split_once(':').map(|(_, v)| v.trim()).unwrap_or_else(|| panic!("no colon in {line:?}"))
}

/// Parse `osc.*.rpc_stats`, checking the shape of every line on the way (panics on a surprise).
pub fn parse_rpc_stats(text: &str) -> RpcStats {
    let mut out = RpcStats::default();
    let mut lines = text.lines();
    let mut next = |what: &str| lines.next().unwrap_or_else(|| panic!("rpc_stats ends before {what}:\n{text}"));
    assert!(next("snapshot_time").starts_with("snapshot_time:"));
    let start = next("start_time");
    assert!(start.starts_with("start_time:"), "{start:?}");
    out.start_time = header_value(start).trim_end_matches(" secs.nsecs").to_string();
    assert!(next("elapsed_time").starts_with("elapsed_time:"));
    let mut scalar = |prefix: &str| {
        let l = next(prefix);
        assert!(l.starts_with(prefix), "expected {prefix:?}, got {l:?}");
        header_value(l).parse::<u64>().unwrap_or_else(|_| panic!("bad number in {l:?}"))
    };
    out.read_in_flight = scalar("read RPCs in flight:");
    out.write_in_flight = scalar("write RPCs in flight:");
    out.pending_write_pages = scalar("pending write pages:");
    out.pending_read_pages = scalar("pending read pages:");
    let rest: Vec<&str> = text.lines().skip(7).collect();
    let mut i = 0;
    while i < rest.len() {
        assert_eq!(rest[i], "", "blank line before a section expected:\n{text}");
        assert_eq!(rest[i + 1], "\t\t\tread\t\t\twrite", "section header:\n{text}");
        let title_line = rest[i + 2];
        let (title, tail) = title_line.split_at(22);
        assert_eq!(tail, "rpcs   % cum % |       rpcs   % cum %", "title line {title_line:?}");
        let mut rows = Vec::new();
        i += 3;
        while i < rest.len() && !rest[i].is_empty() {
            let l = rest[i];
            let (label, counts) = l.split_once(":\t\t").unwrap_or_else(|| panic!("row {l:?}"));
            let (r, w) = counts.split_once("   | ").unwrap_or_else(|| panic!("row {l:?}"));
            let first = |s: &str| -> u64 { s.split_whitespace().next().expect("count").parse().expect("number") };
            rows.push(HistRow { label: label.parse().expect("label"), read: first(r), write: first(w) });
            i += 1;
        }
        out.sections.push((title.trim_end().to_string(), rows));
    }
    out
}

/// (samples, sum) of a counter line of a `stats` file, if it is printed.
pub fn stats_counter(text: &str, name: &str) -> Option<(u64, i64)> {
    text.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        if f.next() != Some(name) {
            return None;
        }
        let samples = f.next()?.parse().ok()?;
        assert_eq!(f.next(), Some("samples"), "{l:?}");
        let _unit = f.next();
        let _min = f.next();
        let _max = f.next();
        let sum = f.next().map(|s| s.parse().expect("sum")).unwrap_or(0);
        Some((samples, sum))
    })
}
