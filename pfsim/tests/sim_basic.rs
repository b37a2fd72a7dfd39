//! End-to-end runs of small scenarios: conservation, limits, determinism.

mod common;
use common::scenario;
use pfsim::{Config, Sim};

fn run(json: &str) -> Sim {
    let mut sim = Sim::new(Config::from_json(json).unwrap()).unwrap();
    let end = sim.cfg.duration_ns;
    sim.run_until(end);
    sim
}

#[test]
fn print_rates() {
    for (w, io) in [("filebench.randomread", 16 << 20), ("filebench.seqread", 1 << 20), ("filebench.seqwrite", 16 << 20), ("filebench.randomwrite", 8192), ("filebench.randomread", 8192)] {
        for (m, r) in [(1, 1), (8, 128), (256, 8), (1024, 8), (1024, 256)] {
            let sim = run(&scenario(w, io, m, r, 2));
            let t = sim.totals();
            println!(
                "{w} {io} ({m},{r}): app {:.0} MB/s osc {:.0} MB/s events {}",
                (t.app_read_bytes + t.app_write_bytes) as f64 / 2e6,
                (t.osc_read_bytes + t.osc_write_bytes) as f64 / 2e6,
                t.events
            );
            sim.check_invariants().unwrap();
        }
    }
}
