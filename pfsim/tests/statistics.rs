//! What the statistics files count, against lustre-client.md: llite `write` and `fsync`, every
//! RPC in `req_active` and `req_waittime`, one OST_SYNC per stripe, read-ahead hits and misses.

mod common;

use common::{Ior, Job, Scenario, MIB, MS};
use pfsim::model::{Osc, PAGE};
use pfsim::stats::{LliteCtr, OscCtr, RaCtr};
use pfsim::Sim;

/// The OSCs of client 0 for the OSTs of file 0, in stripe order.
fn file_oscs(sim: &Sim) -> Vec<u32> {
    sim.files[0].osts.iter().map(|&o| sim.clients[0].oscs[o as usize]).collect()
}

/// filebench's sequential writer never seeks back: its file grows past `filesize`, and
/// read-ahead of a reader of it (seqrw) may go to the new end.
#[test]
fn a_sequential_writer_grows_its_file() {
    let mut sim = Scenario::new().duration_ns(200 * MS).job(Job::new("filebench.seqrw", MIB).filesize(8 * MIB).stripes(1, MIB).stop_ns(200 * MS)).build();
    sim.run_until(200 * MS);
    let written = sim.clients[0].app_write_bytes;
    assert!(written > 32 * MIB, "{written}");
    // the writer's next MiB is in the size from the write's start
    let size = sim.files[0].size;
    assert!((written..=written + MIB).contains(&size), "size {size}, written {written}");
    assert!(sim.clients[0].app_read_bytes > 0);
    sim.check_invariants().unwrap();
}

/// llite `write` times the write system call (the copy into the page cache) and `fsync` the
/// fsync() after it, from its start to its OST_SYNC reply: the flush in between is the
/// fsync's (lustre-client.md §1.5).
#[test]
fn an_fsync_is_timed_apart_from_the_write_before_it() {
    let mut sim = Scenario::new().duration_ns(200 * MS).job(Job::new("filebench.seqwrite", MIB).filesize(1 << 30).stripes(1, MIB).stop_ns(50 * MS).fsync(true)).build();
    sim.run_until(200 * MS);
    let stats = &sim.clients[0].stats;
    let (write, fsync) = (*stats.get(LliteCtr::Write), *stats.get(LliteCtr::Fsync));
    assert!(write.count > 5, "{write:?}");
    assert_eq!(fsync.count, write.count, "an fsync after every write");
    assert_eq!(stats.get(LliteCtr::WriteBytes).count, write.count);
    // 1 MiB into the cache: 10 us + 256 x 2.2 us; the flush is a write RPC of 1 MiB to an
    // SSD at 300 MB/s, and the OST_SYNC round trip is 70 us
    assert!(write.max < 1000, "a write without its flush: {write:?}");
    assert!(fsync.min > 3000, "an fsync with its flush: {fsync:?}");
    assert_eq!(sim.totals().app_write_bytes, write.count * MIB);
}

/// Every RPC an OSC sends (reads, writes, extent lock enqueues and cancels, OST_SYNCs, the
/// connect) counts once in `req_active` at its send and once in `req_waittime` at its reply
/// (lustre-client.md §1.2, §4.7).
#[test]
fn every_rpc_counts_in_req_active_and_req_waittime() {
    // two clients write one shared file, so that they call back each other's locks
    let ior = Ior { processes: 2, transfer: MIB, block: 4 * MIB, segments: 16, file_per_process: false, random: false, fsync: true, reorder_tasks: false };
    let job = Job::ior(ior).clients(&[0, 1]).stripes(4, MIB).stop_ns(150 * MS);
    let mut sim = Scenario::new().clients(2).duration_ns(600 * MS).job(job).build();
    let count = |o: &Osc, c: OscCtr| o.stat(c).count;
    for step in 1..=60 {
        sim.run_until(step * 10 * MS);
        for o in &sim.oscs {
            let in_flight = (o.r_in_flight + o.w_in_flight + o.other_in_flight) as u64;
            assert_eq!(count(o, OscCtr::ReqActive), count(o, OscCtr::ReqWaittime) + in_flight, "{} at {step}0 ms", o.name);
        }
    }
    let (mut syncs, mut cancels) = (0, 0);
    for o in &sim.oscs {
        assert_eq!(o.r_in_flight + o.w_in_flight + o.other_in_flight, 0, "{}: all replies back", o.name);
        let opcodes: u64 = [OscCtr::OstRead, OscCtr::OstWrite, OscCtr::OstSync, OscCtr::LdlmCancel, OscCtr::OstConnect, OscCtr::LdlmExtentEnqueue]
            .iter()
            .map(|&c| count(o, c))
            .sum();
        assert_eq!(count(o, OscCtr::ReqWaittime), opcodes, "{}", o.name);
        syncs += count(o, OscCtr::OstSync);
        cancels += count(o, OscCtr::LdlmCancel);
    }
    assert!(syncs > 0 && cancels > 0, "syncs {syncs}, cancels {cancels}");
}

/// Enqueues, cancels and OST_SYNCs are in flight on the import until their replies: in
/// `req_active` of the RPCs sent meanwhile and in the import's `inflight:`.
#[test]
fn lock_and_sync_rpcs_are_in_flight_until_their_reply() {
    let mut sim = Scenario::new().duration_ns(30 * MS).job(Job::new("filebench.seqwrite", MIB).filesize(1 << 30).stripes(4, MIB).stop_ns(20 * MS).fsync(true)).build();
    let oscs = file_oscs(&sim);
    let mut seen = vec![0u32; oscs.len()];
    for step in 1..=3000 {
        sim.run_until(step * 10_000);
        for (i, &o) in oscs.iter().enumerate() {
            let osc = &sim.oscs[o as usize];
            seen[i] = seen[i].max(osc.other_in_flight);
            let name = format!("osc.{}.import", osc.name);
            let text = sim.get_param(0, &name).expect("import");
            let inflight = osc.r_in_flight + osc.w_in_flight + osc.other_in_flight;
            assert!(text.contains(&format!("inflight: {inflight}\n")), "{text}");
        }
    }
    assert!(seen.iter().all(|&n| n > 0), "each stripe's OSC had an enqueue or a sync in flight: {seen:?}");
    assert!(oscs.iter().all(|&o| sim.oscs[o as usize].other_in_flight == 0));
}

/// fsync() sends an OST_SYNC to every stripe object (osc_io_fsync_start() ->
/// osc_fsync_ost() of each sub-io), all at once.
#[test]
fn an_fsync_syncs_every_stripe() {
    let mut sim = Scenario::new().duration_ns(200 * MS).job(Job::new("filebench.seqwrite", MIB).filesize(1 << 30).stripes(4, MIB).stop_ns(50 * MS).fsync(true)).build();
    sim.run_until(200 * MS);
    let fsyncs = sim.clients[0].stats.get(LliteCtr::Fsync).count;
    assert!(fsyncs > 5);
    for o in file_oscs(&sim) {
        let sync = sim.oscs[o as usize].stat(OscCtr::OstSync);
        assert_eq!(sync.count, fsyncs, "{}", sim.oscs[o as usize].name);
        // one round trip each: 2 x 25 us + 20 us of service
        assert_eq!((sync.min, sync.max), (70, 70));
    }
}

/// `read_ahead_stats` hits and misses are counted per page that goes through ll_readpage():
/// a hit for a page read-ahead brought in, whether its RPC is back or not, a miss for one the
/// read fetches itself; every page of a sequential read of an uncached file is one or the
/// other, once.
#[test]
fn every_page_of_an_uncached_sequential_read_is_a_hit_or_a_miss_once() {
    let mut sim = Scenario::new().duration_ns(300 * MS).job(Job::new("filebench.seqread", MIB).filesize(1 << 30).stripes(1, MIB).stop_ns(100 * MS)).build();
    sim.run_until(300 * MS);
    let ra = &sim.clients[0].ra_stats;
    let (hits, misses) = (ra.get(RaCtr::Hits).count, ra.get(RaCtr::Misses).count);
    let pages = sim.totals().app_read_bytes / PAGE;
    assert!(pages > 1000 && misses > 0 && hits > misses, "hits {hits}, misses {misses}, pages {pages}");
    assert_eq!(hits + misses, pages);
    assert!(sim.clients[0].ra_marks.values().map(|m| m.len()).sum::<u64>() > 0, "read ahead, not yet read");
}

/// Pages already uptodate in the cache (here a file preloaded there) are served by the fast
/// read and count neither a hit nor a miss; read-ahead, which has nothing to fetch, does not
/// reach EOF either.
#[test]
fn cached_pages_count_no_read_ahead_hits() {
    let mut sim = Scenario::new().duration_ns(100 * MS).job(Job::new("filebench.seqread", MIB).filesize(64 * MIB).stripes(1, MIB).stop_ns(100 * MS).cached(true)).build();
    sim.run_until(100 * MS);
    assert!(sim.totals().app_read_bytes >= 64 * MIB, "the file read at least once");
    let ra = &sim.clients[0].ra_stats;
    for c in [RaCtr::Hits, RaCtr::Misses, RaCtr::ReadaheadToEof] {
        assert_eq!(ra.get(c).count, 0, "{c:?}");
    }
    assert!(sim.clients[0].ra_marks.is_empty());
}
