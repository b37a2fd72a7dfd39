//! Scenario builders shared by the integration tests.
#![allow(dead_code)]

pub fn scenario(workload: &str, iosize: u64, mppr: u32, mrif: u32, secs: u64) -> String {
    format!(
        r#"{{"name": "t", "seed": 3, "duration_ns": {d}, "probe_interval_ns": 500000000,
        "cluster": {{"lustre_version": "2.15.5", "fsname": "testfs", "clients": 1, "client_ram_bytes": 137438953472,
          "client_cpus": 16, "oss": 4, "osts_per_oss": 2, "oss_threads": 256, "net_bandwidth_bps": 2.8e9,
          "net_latency_ns": 25000, "ost_kind": "ssd", "ost_read_bw_bps": 5e8, "ost_write_bw_bps": 3e8,
          "ost_read_latency_ns": 20000, "ost_write_latency_ns": 20000, "ost_random_penalty_ns": 400000,
          "ost_channels": 8, "ost_stripe_bytes": 131072, "ost_capacity_bytes": 440000000000, "oss_service_ns": 20000, "client_rpc_ns": 12000,
          "client_page_ns": 10000, "client_syscall_ns": 20000, "brw_size_bytes": 4194304}},
        "tunables": {{"osc.max_pages_per_rpc": "{mppr}", "osc.max_rpcs_in_flight": "{mrif}"}},
        "jobs": [{{"name": "j", "clients": [0], "workload": "{workload}", "threads": 1, "iosize": {iosize},
          "filesize": 107374182400, "stripe_count": 1, "stripe_size": 1048576, "start_ns": 0, "stop_ns": {d}}}]}}"#,
        d = secs * 1_000_000_000
    )
}

