//! The OSC imports' life after the mount (lustre-client.md §1.3): the pinger pings an import that
//! sent nothing for `PING_INTERVAL` (25 s), disconnects one with no lock, no request and no reply
//! for `idle_timeout` (IDLE), and the next RPC connects it again first.

mod common;

use common::{Job, Scenario, MIB, SEC};
use pfsim::Sim;

/// Index of client 0's OSC for file 0's first stripe, and of one it never uses.
fn used_and_unused(sim: &Sim) -> (usize, usize) {
    let used = sim.clients[0].oscs[sim.files[0].osts[0] as usize] as usize;
    let unused = sim.clients[0].oscs.iter().map(|&o| o as usize).find(|&o| !sim.files.iter().any(|f| f.osts.iter().any(|&t| sim.clients[0].oscs[t as usize] as usize == o)));
    (used, unused.expect("an OSC no file uses"))
}

fn param(sim: &Sim, osc: usize, name: &str) -> String {
    sim.get_param(0, &format!("osc.{}.{name}", sim.oscs[osc].name)).expect(name)
}

/// The `state` file's history as (seconds after the mount, state).
fn history(sim: &Sim, osc: usize) -> Vec<(u64, String)> {
    let mount = sim.cfg.start_epoch_ns / SEC;
    param(sim, osc, "state")
        .lines()
        .filter_map(|l| l.strip_prefix(" - [ ")?.strip_suffix(" ]")?.split_once(", "))
        .map(|(t, s)| (t.parse::<u64>().expect("seconds") - mount, s.to_string()))
        .collect()
}

fn counter(sim: &Sim, osc: usize, name: &str) -> Option<u64> {
    common::stats_counter(&param(sim, osc, "stats"), name).map(|(n, _)| n)
}

fn one_second_of_writes() -> Scenario {
    Scenario::new().duration_ns(90 * SEC).job(Job::new("filebench.seqwrite", MIB).stop_ns(SEC))
}

#[test]
fn an_import_without_locks_goes_idle_at_the_pinger_and_one_with_locks_is_pinged() {
    let mut sim = one_second_of_writes().build();
    let (used, unused) = used_and_unused(&sim);
    sim.run_until(24 * SEC);
    assert_eq!(param(&sim, unused, "state").lines().next(), Some("current_state: FULL"));
    sim.run_until(26 * SEC);
    sim.check_invariants().unwrap();

    // the pinger's first look, 25 s after the mount: 25 s without a reply, no lock, no request
    assert_eq!(param(&sim, unused, "state").lines().next(), Some("current_state: IDLE"));
    let h = history(&sim, unused);
    assert_eq!(h, [(0, "CONNECTING".into()), (0, "FULL".into()), (25, "CONNECTING".into()), (25, "IDLE".into())]);
    assert!(param(&sim, unused, "ost_server_uuid").ends_with("\tIDLE\n"));
    assert!(param(&sim, unused, "import").contains("\n    state: IDLE\n"));
    assert_eq!(counter(&sim, unused, "ost_disconnect"), Some(1));
    assert_eq!(counter(&sim, unused, "req_waittime"), Some(2), "the connect and the disconnect");
    assert_eq!(counter(&sim, unused, "obd_ping"), None);

    // the OSC that wrote holds its lock: it is pinged instead, 24 s after its last RPC
    assert_eq!(param(&sim, used, "state").lines().next(), Some("current_state: FULL"));
    assert_eq!(counter(&sim, used, "obd_ping"), Some(1));
    assert_eq!(counter(&sim, used, "ost_disconnect"), None);
    assert!(param(&sim, used, "import").contains("       idle: 0 sec\n"), "the ping's reply is the last");

    // the kernel flusher writes what was left dirty once it is 30 s old (at 35 s); the OSC is
    // pinged 25 s after that RPC, and 25 s after that ping, and never goes idle
    sim.run_until(90 * SEC);
    assert_eq!(counter(&sim, used, "ost_write").map(|n| n > 0), Some(true));
    assert_eq!(counter(&sim, used, "obd_ping"), Some(3));
    assert_eq!(history(&sim, used).len(), 2);
    assert_eq!(history(&sim, unused).len(), 4, "an IDLE import is not pinged");
    sim.check_invariants().unwrap();
}

#[test]
fn idle_timeout_zero_keeps_every_import_connected() {
    let mut sim = one_second_of_writes().tunable("osc.idle_timeout", "0").build();
    let (_, unused) = used_and_unused(&sim);
    sim.run_until(60 * SEC);
    assert_eq!(history(&sim, unused).len(), 2);
    assert_eq!(counter(&sim, unused, "obd_ping"), Some(2), "pinged at 25 s and 50 s");
}

#[test]
fn a_deactivated_import_is_neither_pinged_nor_idled() {
    // ptlrpc_pinger_process_import(): an import with imp_deactive is left alone
    let mut sim = one_second_of_writes().tunable("osc.active", "0").build();
    let (used, unused) = used_and_unused(&sim);
    sim.run_until(60 * SEC);
    for osc in [used, unused] {
        assert_eq!(history(&sim, osc).len(), 2);
        assert_eq!(counter(&sim, osc, "obd_ping"), None);
        assert_eq!(counter(&sim, osc, "ost_disconnect"), None);
    }
}

#[test]
fn the_first_io_on_an_idle_import_connects_it_again() {
    let late = Job::new("filebench.seqwrite", MIB).start_ns(30 * SEC).stop_ns(31 * SEC);
    let mut sim = Scenario::new().duration_ns(32 * SEC).job(late).build();
    let osc = sim.clients[0].oscs[sim.files[0].osts[0] as usize] as usize;
    sim.run_until(29 * SEC);
    assert_eq!(param(&sim, osc, "state").lines().next(), Some("current_state: IDLE"));
    sim.run_until(32 * SEC);
    sim.check_invariants().unwrap();
    assert_eq!(
        history(&sim, osc),
        [
            (0, "CONNECTING".into()),
            (0, "FULL".into()),
            (25, "CONNECTING".into()),
            (25, "IDLE".into()),
            (30, "CONNECTING".into()),
            (30, "FULL".into())
        ]
    );
    assert_eq!(counter(&sim, osc, "ost_connect"), Some(2));
    let import = param(&sim, osc, "import");
    assert!(import.contains("       connection_attempts: 2\n       generation: 2\n"), "{import}");
    assert!(sim.clients[0].app_write_bytes > 0);

}

#[test]
fn the_first_write_after_idle_waits_for_the_connect() {
    // the same job on an import left idle and on one kept connected (idle_timeout 0): the first
    // write waits for the connect's round trip and then the lock's, where the other waits for
    // the lock's alone
    let late = || Job::new("filebench.seqwrite", MIB).start_ns(30 * SEC).stop_ns(31 * SEC);
    let mut idle = Scenario::new().duration_ns(31 * SEC).job(late()).build();
    let mut connected = Scenario::new().duration_ns(31 * SEC).tunable("osc.idle_timeout", "0").job(late()).build();
    let first_write_ns = |sim: &mut Sim| {
        let step = 2_000;
        (0..10_000u64).map(|k| 30 * SEC + k * step).find(|&t| {
            sim.run_until(t);
            sim.clients[0].app_write_bytes > 0
        })
    };
    let c = &idle.cfg.cluster;
    let connect_rtt = 2 * c.net_latency_ns + c.oss_service_ns + c.client_rpc_ns;
    let (after_idle, kept) = (first_write_ns(&mut idle).unwrap(), first_write_ns(&mut connected).unwrap());
    let later = after_idle - kept;
    assert!(later + 2_000 >= connect_rtt && later <= connect_rtt + 2_000, "{later} ns later, the connect takes {connect_rtt}");
}

#[test]
fn io_during_the_idle_disconnect_connects_again_at_its_reply() {
    // the job's first enqueue comes 1 µs after the pinger sent the disconnect
    let job = Job::new("filebench.seqwrite", MIB).start_ns(25 * SEC + 1_000).stop_ns(26 * SEC);
    let mut sim = Scenario::new().duration_ns(27 * SEC).job(job).build();
    let osc = sim.clients[0].oscs[sim.files[0].osts[0] as usize] as usize;
    sim.run_until(27 * SEC);
    sim.check_invariants().unwrap();
    let states: Vec<String> = history(&sim, osc).into_iter().skip(2).map(|(_, s)| s).collect();
    assert_eq!(states, ["CONNECTING", "NEW", "CONNECTING", "FULL"]);
    assert_eq!(counter(&sim, osc, "ost_disconnect"), Some(1));
    assert_eq!(counter(&sim, osc, "ost_connect"), Some(2));
    assert!(sim.clients[0].app_write_bytes > 0);
}

