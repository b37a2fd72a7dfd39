//! Time one resolved scenario (JSON file) and print a digest of everything it prints, so two
//! builds can be compared for speed and for identical output.
//! `cargo run --release --example simbench -- scenario.json [duration_s] [--digest-clients N]`
//!
//! The clock advances in 0.5 s steps as `pfstune sim run` does. The digest is an FNV-1a hash of
//! the totals and of every parameter file of every N-th client (default: every client), read at
//! the end.

use std::time::Instant;

use pfsim::{Config, Sim};

fn fnv(h: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *h ^= b as u64;
        *h = h.wrapping_mul(0x100_0000_01b3);
    }
}

/// CPU seconds (user + system) of this process so far, from /proc (Linux; 0 elsewhere).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    let after = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|u| u.parse().ok()).unwrap_or(0.0) + f.get(12).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: simbench SCENARIO.json [duration_s] [--digest-clients N]");
    let text = std::fs::read_to_string(path).expect("readable scenario");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
    let mut every = 1usize;
    let mut i = 2;
    while i < args.len() {
        if args[i] == "--digest-clients" {
            every = args[i + 1].parse().expect("N");
            i += 2;
            continue;
        }
        let secs: f64 = args[i].parse().expect("duration in seconds");
        v["duration_ns"] = ((secs * 1e9) as u64).into();
        i += 1;
    }
    let t0 = Instant::now();
    let mut sim = Sim::new(Config::from_json(&v.to_string()).expect("config")).expect("sim");
    let setup = t0.elapsed().as_secs_f64();
    let end = sim.cfg.duration_ns;
    let step = 500_000_000u64;
    let t1 = Instant::now();
    let c1 = cpu_seconds();
    while sim.now < end {
        let target = end.min((sim.now / step + 1) * step);
        sim.run_until(target);
    }
    let wall = t1.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - c1;
    if std::env::var("SIMBENCH_SIZES").is_ok() {
        for (i, f) in sim.files.iter().enumerate().take(20) {
            let c: usize = f.users().map(|(_, on)| on.cache.intervals().len()).sum();
            eprintln!("file {i}: cache intervals {c}");
        }
        for o in sim.oscs.iter().take(64) {
            let n: usize = o.objects.values().map(|oc| oc.extents.len()).sum();
            if n > 0 {
                eprintln!("{}: extents {n} dirty {} grant {}", o.name, o.dirty_pages, o.avail_grant);
            }
        }
    }
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    fnv(&mut h, format!("{:?}", sim.totals()).as_bytes());
    for c in (0..sim.clients.len()).step_by(every) {
        for p in sim.list_params(c) {
            let text = sim.get_param(c, &p.name).unwrap_or_else(|e| format!("errno {e}"));
            fnv(&mut h, p.name.as_bytes());
            fnv(&mut h, text.as_bytes());
        }
    }
    let t = sim.totals();
    println!(
        "sim {:.1} s, set-up {:.2} s, loop {:.2} s (cpu {:.2} s), speedup {:.3}x, events {} ({:.0}/s), kinds {:?}, digest {:016x}",
        end as f64 / 1e9,
        setup,
        wall,
        cpu,
        end as f64 / 1e9 / wall,
        t.events,
        t.events as f64 / wall,
        sim.ev_kinds,
        h
    );
}
