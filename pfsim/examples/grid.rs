//! Run the dial99 grid for one resolved scenario (JSON file) and print one JSON line per
//! configuration: a quick loop for calibrating the simulator without the Python layer.
//! `cargo run --release --example grid -- scenario.json`

use pfsim::{Config, Sim};

fn main() {
    let path = std::env::args().nth(1).expect("usage: grid SCENARIO.json");
    let text = std::fs::read_to_string(&path).expect("readable scenario");
    let base: serde_json::Value = serde_json::from_str(&text).expect("json");
    // GRID_ONLY="1024,8" runs one configuration and prints its OSC statistics
    let only: Option<(u32, u32)> = std::env::var("GRID_ONLY").ok().map(|s| {
        let (a, b) = s.split_once(',').expect("GRID_ONLY=mppr,mrif");
        (a.parse().expect("mppr"), b.parse().expect("mrif"))
    });
    for m in 0..=10 {
        for r in 0..=8 {
            let (mppr, mrif) = (1u32 << m, 1u32 << r);
            if only.is_some_and(|o| o != (mppr, mrif)) {
                continue;
            }
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
            if only.is_some() {
                eprintln!("event kinds (thread, chunk, rpc, flusher, disk, pinger): {:?}", sim.ev_kinds);
                for &o in &sim.clients[0].oscs {
                    let name = &sim.oscs[o as usize].name;
                    let st = sim.get_param(0, &format!("osc.{name}.stats")).expect("stats");
                    if st.contains("ost_read") || st.contains("ost_write") {
                        println!("{st}");
                    }
                }
            }
        }
    }
}
