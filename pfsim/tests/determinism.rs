//! Determinism: a scenario and its seed fix everything the simulator prints; the seed matters to
//! random workloads; how the caller steps the clock does not matter.

mod common;

use common::*;
use pfsim::Sim;

/// Several jobs at once, two clients, random and sequential, reads and writes, IOR.
fn busy_scenario(seed: u64) -> Scenario {
    Scenario::new()
        .seed(seed)
        .clients(2)
        .duration_ns(400 * MS)
        .tunable("osc.max_pages_per_rpc", "256")
        .tunable("osc.max_rpcs_in_flight", "4")
        .job(Job::new("filebench.randomrw", 64 * KIB).clients(&[0, 1]).threads(2).filesize(256 * MIB).stripes(2, MIB))
        .job(Job::new("filebench.seqread", MIB).clients(&[1]).stripes(4, MIB).start_ns(50 * MS))
        .job(
            Job::ior(Ior {
                processes: 3,
                transfer: 64 * KIB,
                block: 512 * KIB,
                segments: 2,
                file_per_process: false,
                random: true,
                fsync: true,
                reorder_tasks: true,
            })
            .clients(&[0, 1])
            .stop_ns(300 * MS),
        )
}

/// Every parameter file of every client, by name, as `cat` prints it.
fn all_params(sim: &Sim) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    for c in 0..sim.clients.len() {
        for p in sim.list_params(c) {
            let text = sim.get_param(c, &p.name).unwrap_or_else(|e| panic!("{}: errno {e}", p.name));
            out.push((c, p.name, text));
        }
    }
    out
}

fn assert_same(a: &Sim, b: &Sim, what: &str) {
    assert_eq!(format!("{:?}", a.totals()), format!("{:?}", b.totals()), "{what}: totals differ");
    let (pa, pb) = (all_params(a), all_params(b));
    assert_eq!(pa.len(), pb.len(), "{what}: parameter lists differ");
    for (x, y) in pa.iter().zip(&pb) {
        assert_eq!(x, y, "{what}: client {} {} differs", x.0, x.1);
    }
}

#[test]
fn same_scenario_and_seed_give_identical_totals_and_texts() {
    let json = busy_scenario(11).json();
    let mut a = sim_from_json(&json);
    let mut b = sim_from_json(&json);
    for t in [100 * MS, 250 * MS, 400 * MS] {
        a.run_until(t);
        b.run_until(t);
        assert_same(&a, &b, &format!("at {t} ns"));
    }
    let t = a.totals();
    assert!(t.app_read_bytes > 0 && t.app_write_bytes > 0 && t.osc_read_bytes > 0 && t.osc_write_bytes > 0, "{t:?}");
}

#[test]
fn disks_behind_the_elevator_are_deterministic_too() {
    let json = busy_scenario(11).disks(8 * MS).json();
    let (mut a, mut b) = (sim_from_json(&json), sim_from_json(&json));
    a.run_until(400 * MS);
    b.run_until(400 * MS);
    assert_same(&a, &b, "disks");
    assert!(a.ev_kinds[4] > 0, "the elevator served the disks: {:?}", a.ev_kinds);
    assert_ne!(format!("{:?}", a.totals()), format!("{:?}", busy_scenario(11).run().totals()), "disks are not SSDs");
}

#[test]
fn a_different_seed_changes_a_random_workload() {
    let run = |seed| Scenario::new().seed(seed).duration_ns(300 * MS).job(Job::new("filebench.randomread", 8 * KIB)).run();
    let (a, b) = (run(1), run(2));
    assert_ne!(format!("{:?}", a.totals()), format!("{:?}", b.totals()), "seed does not reach the random offsets");
    // the same seed again reproduces the first run
    assert_eq!(format!("{:?}", a.totals()), format!("{:?}", run(1).totals()));
}

#[test]
fn the_seed_picks_the_mount_instances() {
    let names = |seed| Scenario::new().seed(seed).clients(2).build().list_params(1).into_iter().map(|p| p.name).collect::<Vec<_>>();
    assert_eq!(names(5), names(5));
    assert_ne!(names(5), names(6));
}

/// Stepping the clock 1 ms at a time, at uneven intervals, or in one go reaches the same state.
#[test]
fn stepping_granularity_does_not_change_results() {
    let sc = busy_scenario(7);
    let end = sc.duration_ns;
    let one_go = sc.run();
    let mut fine = sc.build();
    for step in 1..=end / MS {
        fine.run_until(step * MS);
    }
    let mut uneven = sc.build();
    let mut t = 0;
    let mut k = 1;
    while t < end {
        t = (t + k * 77_777).min(end);
        uneven.run_until(t);
        k = k * 7 % 13 + 1;
    }
    assert_same(&one_go, &fine, "1 ms steps");
    assert_same(&one_go, &uneven, "uneven steps");
}
