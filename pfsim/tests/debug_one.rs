mod common;
use pfsim::{Config, Sim};

#[test]
fn debug_one() {
    let w = std::env::var("W").unwrap_or("filebench.seqread".into());
    let io: u64 = std::env::var("IO").map(|s| s.parse().unwrap()).unwrap_or(1 << 20);
    let m: u32 = std::env::var("M").map(|s| s.parse().unwrap()).unwrap_or(1024);
    let r: u32 = std::env::var("R").map(|s| s.parse().unwrap()).unwrap_or(8);
    let json = common::scenario(&w, io, m, r, 1);
    let mut sim = Sim::new(Config::from_json(&json).unwrap()).unwrap();
    for step in 1..=4 {
        sim.run_until(step * 250_000_000);
        let t = sim.totals();
        eprintln!("t={} events={} app_r={} osc_r={} app_w={} osc_w={}", sim.now, t.events, t.app_read_bytes, t.osc_read_bytes, t.app_write_bytes, t.osc_write_bytes);
    }
    let name = sim.clients[0].oscs.iter().map(|&o| sim.oscs[o as usize].name.clone()).find(|n| sim.get_param(0, &format!("osc.{n}.stats")).unwrap().contains("ost_r") || sim.get_param(0, &format!("osc.{n}.stats")).unwrap().contains("ost_w")).unwrap();
    eprintln!("{}", sim.get_param(0, &format!("osc.{name}.stats")).unwrap());
    eprintln!("{}", sim.get_param(0, &format!("osc.{name}.rpc_stats")).unwrap());
}
