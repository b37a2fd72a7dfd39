//! Run the dial99 grid for one resolved scenario (JSON file) and print one JSON line per
//! configuration: a quick loop for calibrating the simulator without the Python layer.
//! `cargo run --release --example grid -- scenario.json`

use pfsim::{Config, Sim};

fn main() {
    let path = std::env::args().nth(1).expect("usage: grid SCENARIO.json");
    let text = std::fs::read_to_string(&path).expect("readable scenario");
    let base: serde_json::Value = serde_json::from_str(&text).expect("json");
    for m in 0..=10 {
        for r in 0..=8 {
            let (mppr, mrif) = (1u32 << m, 1u32 << r);
            let mut v = base.clone();
            v["tunables"]["osc.max_pages_per_rpc"] = mppr.to_string().into();
            v["tunables"]["osc.max_rpcs_in_flight"] = mrif.to_string().into();
            let mut sim = Sim::new(Config::from_json(&v.to_string()).expect("config")).expect("sim");
            let end = sim.cfg.duration_ns;
            sim.run_until(end);
            let t = sim.totals();
            let secs = end as f64 / 1e9;
            println!(
                "{{\"mppr\": {mppr}, \"mrif\": {mrif}, \"osc_mbps\": {:.3}, \"mbps\": {:.3}, \"events\": {}}}",
                (t.osc_read_bytes + t.osc_write_bytes) as f64 / secs / 1e6,
                (t.app_read_bytes + t.app_write_bytes) as f64 / secs / 1e6,
                t.events
            );
        }
    }
}
