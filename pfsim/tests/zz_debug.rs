mod common;
use common::*;
fn one(mppr: &str, md: &str, stripe: u64, mrif: &str) {
    let sc = Scenario::new().seed(1032748058078213806).duration_ns(45*SEC)
        .tunable("osc.max_pages_per_rpc", mppr).tunable("osc.max_rpcs_in_flight", mrif)
        .job(Job::new("filebench.randomwrite", 4*MIB).filesize(4*GIB).stripes(1, stripe).stop_ns(300*MS));
    let mut sim = sc.build();
    sim.set_everywhere("osc.max_dirty_mb", md).unwrap();
    sim.run_until(1*SEC);
    let t = sim.totals();
    let th = &sim.threads[0];
    eprintln!("mppr={mppr} md={md} stripe={stripe} mrif={mrif}: ev={} app_w={} osc_w={} done={} op={:?}", t.events, t.app_write_bytes, t.osc_write_bytes, th.done, th.op.as_ref().map(|o| (o.offset/4096, o.state, (o.cursor - o.offset)/4096, o.waits)));
}
#[test]
fn dbg() {
    for (m, md, s, r) in [("257","1",65536,"1"),("256","1",65536,"1"),("257","2",65536,"1"),("257","1",1<<20,"1"),("257","1",65536,"8"),("100","1",65536,"8"),("300","1",1<<20,"8"),("1024","1",1<<20,"8"),("1024","4",1<<20,"8")] { one(m, md, s, r); }
}
#[test]
fn dbg2() {
    let sc = Scenario::new().job(Job::new("filebench.randomwrite", 4*MIB).filesize(4*GIB).stripes(1, 65536));
    eprintln!("{}", sc.json());
    let sim = sc.build();
    eprintln!("files {:?}", sim.files.iter().map(|f| (f.stripe_size, f.osts.clone(), f.chunk_end(300032))).collect::<Vec<_>>());
}
