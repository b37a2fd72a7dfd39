//! End-to-end runs of small scenarios: RPC size and concurrency show where Lustre says they
//! should, and what the applications move matches what the RPCs carry.

mod common;
use common::{osc_names, parse_rpc_stats, scenario, sim_from_json, Ior, Job, Scenario, GIB, MIB, MS, SEC, KIB};
use pfsim::stats::LliteCtr;
use pfsim::{Config, Sim, Totals};

fn run(workload: &str, iosize: u64, mppr: u32, mrif: u32) -> (Sim, Totals) {
    let mut sim = Sim::new(Config::from_json(&scenario(workload, iosize, mppr, mrif, 1)).unwrap()).unwrap();
    // half a second of the one-second scenario
    sim.run_until(500_000_000);
    sim.check_invariants().unwrap();
    let t = sim.totals();
    (sim, t)
}

/// One-page RPCs, one at a time, are latency-bound; 4 MiB RPCs, 8 in flight, are not.
#[test]
fn seqread_throughput_grows_with_rpc_size_and_concurrency() {
    let (_, small) = run("filebench.seqread", 1 << 20, 1, 1);
    let (_, large) = run("filebench.seqread", 1 << 20, 1024, 8);
    assert!(small.app_read_bytes > 0);
    assert!(large.app_read_bytes > 5 * small.app_read_bytes, "1024x8 {large:?} vs 1x1 {small:?}");
    // fewer, larger RPCs: far fewer events for more data
    assert!(large.events * 5 < small.events, "{} vs {} events", large.events, small.events);
    for t in [small, large] {
        // a sequential reader gets what it asked for, plus at most its read-ahead window
        assert!(t.osc_read_bytes >= t.app_read_bytes && t.osc_read_bytes <= t.app_read_bytes + (256 << 20), "{t:?}");
        assert_eq!(t.osc_write_bytes + t.app_write_bytes, 0);
    }
}

/// Buffered writes go at memory speed while dirty space and grant last (2000 MiB here); the
/// RPC settings only change how fast the cache drains. The writer copies 10 us per page, slow
/// enough for the grant of a fresh mount, which grows by one chunk per write reply, to keep up
/// with 4 MiB RPCs too (`fast_writers_wait_for_the_grant_of_a_fresh_mount`).
#[test]
fn seqwrite_is_absorbed_by_the_cache() {
    let run = |mppr: &str, mrif: &str| {
        let mut sim = Scenario::new()
            .write_page_ns(10_000)
            .tunable("osc.max_pages_per_rpc", mppr)
            .tunable("osc.max_rpcs_in_flight", mrif)
            .job(Job::new("filebench.seqwrite", 16 * MIB).filesize(100 * GIB))
            .build();
        sim.run_until(SEC / 2);
        sim.check_invariants().unwrap();
        let t = sim.totals();
        (sim, t)
    };
    let (_, small) = run("1", "1");
    let (large_sim, large) = run("1024", "8");
    let ratio = small.app_write_bytes as f64 / large.app_write_bytes as f64;
    assert!((0.9..=1.1).contains(&ratio), "app rate should not depend on RPCs: {small:?} {large:?}");
    assert!(large.osc_write_bytes > 3 * small.osc_write_bytes, "{large:?} vs {small:?}");
    for t in [small, large] {
        assert!(t.osc_write_bytes > 0 && t.osc_write_bytes < t.app_write_bytes, "{t:?}");
    }
    // what has not been carried yet is dirty in the cache (or partly written, in flight)
    let dirty: u64 = large_sim.oscs.iter().map(|o| o.dirty_pages * 4096).sum();
    assert!(large.osc_write_bytes + dirty >= large.app_write_bytes, "{large:?} + {dirty} dirty");
    assert!(large.osc_write_bytes + dirty <= large.app_write_bytes + (16 << 20), "{large:?} + {dirty} dirty");
}

/// A fresh mount holds one grant chunk per OSC, and each write reply adds at most one more, up
/// to what the OSC asks for. 4 KiB RPCs ramp the grant within milliseconds, 4 MiB RPCs take
/// seconds. But with 4 KiB RPCs every page is an extent of its own and holds a 24 KiB tax
/// besides its 4 KiB, and the grant an OSC asks for counts both: its dirty pages stop at a
/// seventh of the cap.
#[test]
fn fast_writers_wait_for_the_grant_of_a_fresh_mount() {
    let run = |mppr: &str, mrif: &str| {
        let mut sim = Scenario::new()
            .tunable("osc.max_pages_per_rpc", mppr)
            .tunable("osc.max_rpcs_in_flight", mrif)
            .job(Job::new("filebench.seqwrite", 16 * MIB).filesize(100 * GIB))
            .build();
        sim.run_until(SEC / 2);
        sim.check_invariants().unwrap();
        let o = sim.oscs.iter().max_by_key(|o| o.dirty_grant).expect("oscs");
        (sim.totals(), o.avail_grant + o.dirty_grant, o.dirty_pages * 4096)
    };
    let cap = pfsim::model::MAX_UNDIRTY;
    let (small, small_grant, small_dirty) = run("1", "1");
    let (large, large_grant, _) = run("1024", "8");
    assert!(small_grant > cap - 8 * MIB, "4 KiB RPCs: grant {small_grant} should reach the cap {cap}");
    assert!(large_grant * 4 < small_grant * 3, "grant held: 4 MiB RPCs {large_grant}, 4 KiB RPCs {small_grant}");
    assert!(small_dirty <= cap / 7 && small_dirty > cap / 8, "4 KiB extents: {small_dirty} dirty");
    // the writer copies 16 MiB at a time: what the cache took or sent, and one copy more
    assert!(small.app_write_bytes <= small_dirty + small.osc_write_bytes + 16 * MIB, "{small:?}");
    assert!(small.app_write_bytes < 400 * MIB, "{small:?}");
    assert!(large.app_write_bytes < 400 * MIB, "{large:?}");
}

/// An OSC asks for at most 1,792 MiB - 1 of grant (`o_undirty` under `OBD_MAX_GRANT`), so at
/// the default `max_dirty_mb` (2000) a writer faster than its OST fills the cache to that much
/// of grant, the grant its dirty pages hold included, not to 2000 MiB; DIAL's real clients
/// never held more than 1,776 MiB dirty on an OSC. A smaller `max_dirty_mb` still bounds the
/// dirty pages. The taxes of small extents count too: 16 MiB random writes in 64 KiB extents
/// (`max_pages_per_rpc` 16) hold 24 KiB more per 64 KiB, and their dirty pages stop at 64/88
/// of the cap, where DIAL's random writers kept theirs.
#[test]
fn the_grant_an_osc_asks_for_caps_its_dirty_pages() {
    let run = |workload: &str, mppr: &str, max_dirty_mb: &str| {
        let mut sim = Scenario::new()
            .duration_ns(22 * SEC)
            .disks(8_000_000) // 170 MB/s written: far slower than the writer
            .tunable("osc.max_dirty_mb", max_dirty_mb)
            .tunable("osc.max_pages_per_rpc", mppr)
            .job(Job::new(workload, 16 * MIB).filesize(100 * GIB))
            .build();
        let mut most = (0, 0);
        for step in 1..=80 {
            sim.run_until(step * SEC / 4);
            let o = sim.oscs.iter().max_by_key(|o| o.dirty_pages).expect("oscs");
            most = most.max((o.avail_grant + o.dirty_grant, o.dirty_pages * 4096));
        }
        sim.check_invariants().unwrap();
        most
    };
    let cap = pfsim::model::MAX_UNDIRTY;
    assert_eq!(cap, 1792 * MIB - 1);
    let (held, dirty) = run("filebench.seqwrite", "1024", "2000");
    assert!(held <= cap, "grant and dirty grant {held} above {cap}");
    assert!(dirty > 1700 * MIB, "the writer should fill the cache: {dirty} dirty");
    let (held, dirty) = run("filebench.seqwrite", "1024", "1000");
    assert!(dirty <= 1000 * MIB && dirty > 900 * MIB, "{dirty} dirty ({held} with the grant)");
    let (held, dirty) = run("filebench.randomwrite", "16", "2000");
    assert!(held <= cap, "grant and dirty grant {held} above {cap}");
    assert!(dirty <= cap / 88 * 64 && dirty > cap / 88 * 60, "64 KiB extents: {dirty} dirty");
}

/// `cur_dirty_grant_bytes` is the grant the dirty pages hold: a page each plus one 24 KiB
/// extent tax per extent (`cl_dirty_grant`), where `cur_dirty_bytes` counts the pages alone.
#[test]
fn dirty_grant_counts_a_tax_per_extent() {
    let mut sim = Scenario::new()
        .duration_ns(3 * SEC)
        .job(Job::new("filebench.randomwrite", 8 * KIB).filesize(GIB).stop_ns(SEC))
        .build();
    sim.run_until(2 * SEC);
    sim.check_invariants().unwrap();
    let o = sim.oscs.iter().max_by_key(|o| o.dirty_pages).expect("oscs");
    assert_eq!(o.w_in_flight, 0, "the writer stopped; its extents wait for the flusher");
    let extents: u64 = o.objects.values().map(|oc| oc.extents.len() as u64).sum();
    assert!(extents > 100, "{extents} extents");
    let text = |name: &str| sim.get_param(0, &format!("osc.{}.{name}", o.name)).unwrap().trim().parse::<u64>().unwrap();
    assert_eq!(text("cur_dirty_bytes"), o.dirty_pages * 4096);
    assert_eq!(text("cur_dirty_grant_bytes"), o.dirty_pages * 4096 + extents * 24 * KIB);
}

/// The grant of dirty pages dropped unsent (a removed file's) is lost (`cl_lost_grant`), but
/// for one page and a tax lent back at once to an OSC left with less (`osc_free_grant()`); the
/// next bulk RPC reports it to the OST, which clears it (`osc_announce_cached()`).
#[test]
fn a_removal_loses_the_grant_of_its_unsent_pages_until_the_next_rpc() {
    let ior = Ior { processes: 1, transfer: MIB, block: 8 * MIB, segments: 1, file_per_process: true, random: false, fsync: false, reorder_tasks: false };
    let mut sim = Scenario::new()
        .osts(1, 1) // every repetition's new file on the same OST, so the same OSC writes again
        .disks(8_000_000)
        .tunable("osc.max_pages_per_rpc", "64")
        .tunable("osc.max_rpcs_in_flight", "1")
        .job(Job::ior(ior))
        .build();
    let (mut lost_seen, mut cleared_after) = (0, false);
    for step in 1..=2000 {
        sim.run_until(step * MS);
        sim.check_invariants().unwrap();
        let lost: u64 = sim.oscs.iter().map(|o| o.lost_grant).sum();
        let text: u64 = (0..sim.oscs.len())
            .map(|i| sim.get_param(0, &format!("osc.{}.cur_lost_grant_bytes", sim.oscs[i].name)).unwrap().trim().parse::<u64>().unwrap())
            .sum();
        assert_eq!(text, lost);
        if lost > 0 {
            // whole pages and taxes: the dropped extents' grant
            assert_eq!(lost % 4096, 0, "{lost}");
            lost_seen = lost_seen.max(lost);
        } else if lost_seen > 0 {
            cleared_after = true;
        }
    }
    assert!(lost_seen >= 64 * 4096, "the removals dropped unsent pages: {lost_seen} bytes lost");
    assert!(cleared_after, "a later bulk RPC reports the lost grant");
}

/// A write to a page under write-back waits for the RPC that carries it (`ll_write_begin()` ->
/// `cl_page_assume()` -> `wait_on_page_writeback()`). With 1 MiB RPCs each 1 MiB write makes a
/// full extent, which leaves at once; so a writer that rewrites a 4 MiB file over and over
/// cannot run ahead of its RPCs, although the cache has room for the whole file.
#[test]
fn rewriting_a_page_under_write_back_waits_for_its_rpc() {
    let file = 4 * MIB;
    let mut sim = Scenario::new()
        .disks(8_000_000)
        .tunable("osc.max_pages_per_rpc", "256")
        .job(Job::new("filebench.randomwrite", MIB).filesize(file).stripes(1, MIB))
        .build();
    for step in 1..=100 {
        sim.run_until(step * 10_000_000);
        // among them: no page is dirty while under write-back
        sim.check_invariants().unwrap();
    }
    let t = sim.totals();
    assert!(t.osc_write_bytes >= 8 * file, "{t:?}");
    // beyond what the RPCs carried, the application wrote at most the pages dirty but not yet
    // sent and those in flight: the file, twice
    assert!(t.app_write_bytes <= t.osc_write_bytes + 2 * file, "{t:?}");
}

/// A write RPC may carry up to 256 extents that do not touch; the OST writes each on its own
/// (`osd_do_bio()` starts a new bio at every gap), so a disk positions its head once per extent,
/// not once per RPC. Random 1 MiB writes over a 16 GiB file leave 1 MiB extents far apart: 4 MiB
/// RPCs of four of them then move no faster than 1 MiB RPCs of one (one head move per RPC would
/// make them about 1.5x faster), and both stay well below a sequential writer.
#[test]
fn a_disk_positions_once_per_extent_of_a_write_rpc() {
    let secs = 10;
    let run = |workload: &str, mppr: &str| {
        let mut sim = Scenario::new()
            .disks(8_000_000)
            .duration_ns(secs * SEC)
            .tunable("osc.max_pages_per_rpc", mppr)
            .job(Job::new(workload, MIB).filesize(16 * GIB).stripes(1, MIB))
            .build();
        sim.run_until(secs * SEC);
        sim.totals().osc_write_bytes as f64 / secs as f64 / 1e6
    };
    let (four, one) = (run("filebench.randomwrite", "1024"), run("filebench.randomwrite", "256"));
    assert!(four < 1.1 * one, "4 MiB RPCs of scattered extents {four:.1} MB/s, 1 MiB RPCs {one:.1} MB/s");
    let sequential = run("filebench.seqwrite", "1024");
    assert!(four < 0.7 * sequential, "random {four:.1} MB/s, sequential {sequential:.1} MB/s");
}

/// IOR's repetitions, as `TestIoSys()` runs them: every rank waits at a barrier after its write
/// phase and after its read phase, and the file is removed before the next write phase, so no
/// rank writes while another reads, and each repetition writes a new file. The removal drops
/// the dirty pages not yet sent: they never reach the OST.
#[test]
fn ior_ranks_meet_at_barriers_and_remove_the_file_between_repetitions() {
    use pfsim::model::OpState;
    for fpp in [true, false] {
        // three ranks on two clients: one client has two, so the ranks go at different speeds
        let ior = Ior { processes: 3, transfer: MIB, block: 8 * MIB, segments: 1, file_per_process: fpp, random: false, fsync: false, reorder_tasks: false };
        // one small RPC at a time: the writers leave dirty pages behind for the removal to drop
        let mut sim = Scenario::new()
            .clients(2)
            .disks(8_000_000)
            .tunable("osc.max_pages_per_rpc", "64")
            .tunable("osc.max_rpcs_in_flight", "1")
            .job(Job::ior(ior).clients(&[0, 1]))
            .build();
        let first_files: Vec<u32> = sim.threads.iter().map(|t| t.files[0]).collect();
        let (mut phases_seen, mut last_phase) = (0, u32::MAX);
        for step in 1..=2000 {
            sim.run_until(step * 1_000_000);
            sim.check_invariants().unwrap();
            let busy: Vec<u32> = sim
                .threads
                .iter()
                .filter(|t| t.op.as_ref().is_some_and(|op| !matches!(op.state, OpState::Between | OpState::WaitBarrier | OpState::WaitRemove)))
                .map(|t| t.phase)
                .collect();
            assert!(busy.windows(2).all(|w| w[0] == w[1]), "fpp {fpp}: ranks in different phases at {} ms: {busy:?}", step);
            if let Some(&p) = busy.first() {
                if p != last_phase {
                    (phases_seen, last_phase) = (phases_seen + 1, p);
                }
            }
        }
        assert!(phases_seen >= 4, "fpp {fpp}: only {phases_seen} phases in 2 s");
        // each repetition writes a new file
        assert!(sim.threads.iter().zip(&first_files).all(|(t, &f)| t.files[0] != f), "fpp {fpp}");
        // the remover's unlinks: each rank its own file, or rank 0 the shared one
        let unlinks: u64 = sim.clients.iter().map(|c| c.stats.get(LliteCtr::Unlink).count).sum();
        let reps = (phases_seen / 2) as u64;
        let removers = if fpp { 3 } else { 1 };
        assert!(unlinks >= removers * (reps - 1) && unlinks <= removers * reps, "fpp {fpp}: {unlinks} unlinks, {reps} repetitions");
        // dirty pages of removed files were dropped, not sent (in the shared file the ranks'
        // extent locks conflict, and their callbacks flush everything before the removal)
        let t = sim.totals();
        if fpp {
            assert!(t.osc_write_bytes < t.app_write_bytes, "{t:?}");
        }
    }
}

/// A `cached` job's file starts in the page cache: random reads of it send no RPC. A file
/// larger than `max_cached_mb` keeps its end, as after filebench's sequential preallocation.
#[test]
fn cached_files_start_in_the_page_cache() {
    let reads = |cached: bool, max_cached_mb: &str| {
        let mut sim = Scenario::new()
            .tunable("llite.max_cached_mb", max_cached_mb)
            .job(Job::new("filebench.randomread", MIB).filesize(GIB).cached(cached))
            .build();
        let at_start = sim.clients[0].cached_pages;
        sim.run_until(SEC / 2);
        sim.check_invariants().unwrap();
        (at_start, sim.totals())
    };
    let (cold_pages, cold) = reads(false, "4096");
    let (warm_pages, warm) = reads(true, "4096");
    assert_eq!(cold_pages, 0);
    assert_eq!(warm_pages, GIB / 4096);
    assert!(cold.osc_read_bytes > 0, "{cold:?}");
    assert_eq!(warm.osc_read_bytes, 0, "{warm:?}");
    assert!(warm.app_read_bytes > 10 * cold.app_read_bytes, "{warm:?} vs {cold:?}");
    // a quarter of the file fits: its last 256 MiB are cached, and about a quarter of the
    // random reads hit them
    let (part_pages, part) = reads(true, "256");
    assert_eq!(part_pages, 256 * MIB / 4096);
    let hit = 1.0 - part.osc_read_bytes as f64 / part.app_read_bytes as f64;
    assert!((0.1..0.5).contains(&hit), "hit ratio {hit}: {part:?}");
}

/// Random 8 KiB reads have no read-ahead: the RPCs carry what the application read, no more
/// than the read in progress on top.
#[test]
fn random_small_reads_fetch_what_is_read() {
    for (m, r) in [(1, 1), (1024, 8)] {
        let (_, t) = run("filebench.randomread", 8192, m, r);
        assert!(t.app_read_bytes > 0);
        assert!(t.osc_read_bytes >= t.app_read_bytes && t.osc_read_bytes <= t.app_read_bytes + 8192, "({m},{r}) {t:?}");
    }
}

/// A reader and a writer of one file (filebench seqrw) both keep moving: the writer always has
/// dirty pages ready, and osc_check_rpcs() still gives the reader its turn (it sends an
/// object's write RPC and then its read RPC). pfsim once started every pass with writes, and
/// the reader then got no RPC at all once the dirty cache had filled. (The reader moves in
/// bursts: its demand page waits behind its own read-ahead, then the cache serves a run at
/// once; hence 2 s windows.)
#[test]
fn a_writer_with_pages_ready_does_not_starve_a_reader() {
    for disks in [false, true] {
        let mut sc = Scenario::new().duration_ns(12 * SEC).job(Job::new("filebench.seqrw", MIB).filesize(100 * GIB));
        if disks {
            sc = sc.disks(8_000_000);
        }
        let mut sim = sc.build();
        sim.run_until(2 * SEC);
        let start = sim.totals();
        let mut last = start;
        for second in [4, 6, 8, 10, 12] {
            sim.run_until(second * SEC);
            let now = sim.totals();
            assert!(now.app_read_bytes > last.app_read_bytes, "disks {disks}: no read in the 2 s to {second} s: {now:?}");
            assert!(now.app_write_bytes > last.app_write_bytes, "disks {disks}: no write in the 2 s to {second} s: {now:?}");
            last = now;
        }
        let (read, written) = (last.app_read_bytes - start.app_read_bytes, last.app_write_bytes - start.app_write_bytes);
        assert!(4 * read > written, "disks {disks}: {read} bytes read against {written} written");
        sim.check_invariants().unwrap();
    }
}

/// Set-up's error for a scenario the core refuses (panics when it is accepted).
fn refused(json: &str) -> String {
    match Sim::new(Config::from_json(json).unwrap()) {
        Ok(_) => panic!("accepted: {json}"),
        Err(e) => e,
    }
}

/// A file must fit on the OSTs it is striped over (the test cluster's OSTs hold 440 GB): its
/// first object, the largest, is what is checked.
#[test]
fn a_file_larger_than_its_osts_is_refused() {
    let cap = 440_000_000_000u64;
    let job = |size: u64, stripes: u32| Scenario::new().job(Job::new("filebench.randomread", MIB).filesize(size).stripes(stripes, MIB)).json();
    let err = refused(&job(cap + 1, 1));
    assert!(err.contains("cluster.ost_capacity") && err.contains("one OST"), "{err}");
    assert!(Sim::new(Config::from_json(&job(cap, 1)).unwrap()).is_ok());
    // two stripes of 1 MiB: each object holds half of the file, rounded to whole stripes
    assert!(Sim::new(Config::from_json(&job(2 * cap - 2 * MIB, 2)).unwrap()).is_ok());
    assert!(refused(&job(2 * cap + 2 * MIB, 2)).contains("cluster.ost_capacity"));
}

/// Short I/O carries its data inside the request (writes) or the reply (reads), over the same
/// links as bulk transfers: 16 KiB RPCs from 16 threads cannot move more than a slow link
/// carries. Before, a short-io reply cost only latency (a 1 MB/s link "carried" 220 MB/s).
#[test]
fn short_io_shares_the_links_with_bulk_transfers() {
    for (workload, iosize) in [("filebench.randomread", 16 * 1024), ("filebench.randomwrite", 8 * 1024)] {
        let job = Job::new(workload, iosize).threads(16).filesize(GIB).fsync(true);
        let mut v: serde_json::Value = serde_json::from_str(&Scenario::new().duration_ns(5 * SEC).job(job).json()).unwrap();
        v["cluster"]["net_bandwidth_bps"] = serde_json::json!(1e6);
        v["cluster"]["net_stream_bps"] = serde_json::json!(1e6);
        let mut sim = sim_from_json(&v.to_string());
        sim.run_until(5 * SEC);
        let t = sim.totals();
        let carried = t.osc_read_bytes + t.osc_write_bytes;
        assert!(carried > 0, "{workload}: nothing moved");
        // 5 s at 1 MB/s, plus the RPCs already on their way
        assert!(carried <= 5_000_000 + 16 * iosize, "{workload}: {carried} bytes over a 1 MB/s link in 5 s");
    }
}

/// A DLIO dataset whose samples cannot all be numbered and placed in 64 bits is refused (the
/// shuffle multiplied files by samples per file, and overflowed).
#[test]
fn a_dlio_dataset_beyond_64_bit_offsets_is_refused() {
    let dlio = |samples_per_file: u64| {
        let mut v: serde_json::Value = serde_json::from_str(&Scenario::new().job(Job::new("dlio", 4096)).json()).unwrap();
        v["jobs"][0]["dlio"] = serde_json::json!({
            "format": "indexed_binary", "files": 16, "samples_per_file": samples_per_file, "sample_size": 1,
            "transfer_size": 1, "read_threads": 1, "batch_size": 1, "computation_ns": 0, "prefetch": 2,
        });
        v.to_string()
    };
    let err = Config::from_json(&dlio(1 << 60)).unwrap_err();
    assert!(err.contains("DLIO dataset"), "{err}");
    assert!(Config::from_json(&dlio(1 << 20)).is_ok());
}

/// A cluster whose OSCs alone cannot fit in memory is refused before set-up allocates them.
#[test]
fn a_cluster_too_large_for_memory_is_refused_before_set_up() {
    if !std::path::Path::new("/proc/meminfo").exists() {
        return; // the check needs Linux's MemAvailable; elsewhere set-up simply tries
    }
    // 2^32 clients x 8 OSTs: tens of TiB of OSCs, more than any machine has
    let err = refused(&Scenario::new().clients(1 << 32).job(Job::new("filebench.seqread", MIB)).json());
    assert!(err.starts_with("simulating this scenario needs at least") && err.contains("this machine has available"), "{err}");
}

/// The page cache's map of a file grows to the highest page cached: a random reader of a 1 EiB
/// file would need 1 TiB of it. Refused with the reason, where set-up used to abort on the
/// allocation.
#[test]
fn a_file_whose_cache_map_cannot_fit_in_memory_is_refused() {
    if !std::path::Path::new("/proc/meminfo").exists() {
        return;
    }
    let job = Job::new("filebench.randomread", 4096).filesize(1 << 60).stripes(8, MIB);
    let mut v: serde_json::Value = serde_json::from_str(&Scenario::new().job(job).json()).unwrap();
    v["cluster"]["ost_capacity_bytes"] = serde_json::json!(1u64 << 62);
    let err = refused(&v.to_string());
    assert!(err.contains("1.0 TiB of page-cache maps"), "{err}");
}

/// Application threads share their node's cores: reading a file that sits in the page cache is
/// CPU work (the system call, the copy), so up to `client_cpus` threads read side by side and
/// more only take turns.
#[test]
fn threads_beyond_the_cores_of_a_node_take_turns() {
    let read = |threads: u32| {
        let json = Scenario { client_cpus: 4, ..Scenario::new() }
            .duration_ns(SEC / 2)
            .job(Job::new("filebench.seqread", 64 * 1024).filesize(MIB).threads(threads).cached(true))
            .json();
        let mut sim = Sim::new(Config::from_json(&json).unwrap()).unwrap();
        sim.run_until(SEC / 2);
        sim.clients[0].stats.get(LliteCtr::ReadBytes).sum as f64
    };
    let (two, four, eight) = (read(2), read(4), read(8));
    assert!((four / two - 2.0).abs() < 0.01, "2 threads {two}, 4 threads {four}");
    assert!((eight / four - 1.0).abs() < 0.01, "4 threads {four}, 8 threads {eight}");
}

/// The files of a scenario must fit on the OSTs together: files go to the OSTs in turn, so on the
/// test cluster's 8 OSTs of 440 GB eight 300 GB files fit and a ninth shares an OST with one.
#[test]
fn files_that_overfill_an_ost_together_are_refused() {
    let files = |n: u32| Scenario::new().job(Job::new("filebench.seqread", MIB).filesize(300_000_000_000).threads(n)).json();
    assert!(Sim::new(Config::from_json(&files(8)).unwrap()).is_ok());
    let err = refused(&files(9));
    assert!(err.starts_with("the scenario's files put 558.8 GiB on OST") && err.contains("cluster.ost_capacity"), "{err}");
}

/// One BDCATS-IO rank reading 64 KiB blocks every 256 KiB (h5bench's strided read). Lustre's
/// read-ahead detects the stride after the same gap follows the same bytes twice
/// (`ras_consecutive_stride_requests` > 1) and then reads ahead the blocks of the stride only.
fn strided_reader(read_ahead_mb: &str) -> Sim {
    let h5 = serde_json::json!({
        "processes": 1, "particles": 1 << 20, "timesteps": 2, "compute_ns": 0,
        "file_pattern": "contig", "read_option": "strided", "to_read": 0,
        "stride": 1 << 16, "block": 1 << 14, "block_cnt": 16,
    });
    let json = Scenario::new()
        .duration_ns(SEC)
        .tunable("llite.max_read_ahead_mb", read_ahead_mb)
        .job(Job::h5bench("h5bench.bdcats", h5))
        .json();
    Sim::new(Config::from_json(&json).unwrap()).unwrap()
}

/// The largest read RPC (pages) of client 0, over all its OSCs.
fn largest_read_rpc(sim: &Sim) -> i64 {
    let mut largest = 0;
    for name in osc_names(sim, 0) {
        let stats = parse_rpc_stats(&sim.get_param(0, &format!("osc.{name}.rpc_stats")).unwrap());
        for row in stats.pages_per_rpc() {
            if row.read > 0 {
                largest = largest.max(row.label);
            }
        }
    }
    largest
}

#[test]
fn strided_reads_are_read_ahead_by_their_stride_only() {
    // 2 timesteps x 8 datasets x 16 blocks of 64 KiB
    let total = 2 * 8 * 16 * 64 * 1024;
    let mut with = strided_reader("1024");
    let mut without = strided_reader("0");
    with.run_until(50_000_000);
    without.run_until(50_000_000);
    let (a, b) = (with.totals(), without.totals());
    assert!(a.app_read_bytes >= 4 * b.app_read_bytes, "with read-ahead {a:?}, without {b:?}");
    // without read-ahead every RPC is one 16-page block; with it, one RPC carries several
    assert_eq!(largest_read_rpc(&without), 16);
    assert!(largest_read_rpc(&with) > 16);
    // and never the gaps between the blocks: the OSCs carry exactly what the rank reads
    with.run_until(SEC);
    with.check_invariants().unwrap();
    let t = with.totals();
    assert_eq!((t.app_read_bytes, t.osc_read_bytes), (total, total));
}

/// Objects with full extents take turns for write RPCs (`osc_next_obj()` takes the head of the
/// ready list, `osc_list_maint()` puts the object back at its tail): two sequential writers of
/// two files on one OST both get their data out, neither file's pages pile up dirty.
#[test]
fn objects_of_one_osc_take_turns_for_write_rpcs() {
    let mut sim = Scenario::new().osts(1, 1).duration_ns(6 * SEC).job(Job::new("filebench.seqwrite", MIB).threads(2).filesize(50 * GIB)).build();
    sim.run_until(6 * SEC);
    let sent: Vec<u64> = sim
        .threads
        .iter()
        .map(|th| {
            let f = th.files[0] as usize;
            th.pos - sim.files[f].on(0).dirty_pages * 4096
        })
        .collect();
    let (least, most) = (*sent.iter().min().unwrap(), *sent.iter().max().unwrap());
    assert!(least * 2 >= most, "bytes written back per file: {sent:?}");
}

/// A writer that cannot enter the cache for want of the node's dirty room goes synchronously
/// when its own OSC has nothing to wait for (`osc_enter_cache()` stops waiting when the OSC has
/// no dirty pages and no writes in flight), instead of waiting for replies that never come.
#[test]
fn a_writer_over_the_nodes_dirty_limit_on_an_idle_osc_goes_on() {
    // the first job fills the node's dirty room on four OSTs; once the node's limit is down to
    // 4 MiB, the second job (on a fifth OST) holds it, and the first job's OSCs have nothing to
    // wait for
    let mut sim = Scenario::new()
        .client_ram(2 * GIB)
        .tunable("osc.max_dirty_mb", "512")
        .duration_ns(12 * SEC)
        .job(Job::new("filebench.seqwrite", 16 * MIB).filesize(40 * GIB).stripes(4, MIB))
        .job(Job::new("filebench.seqwrite", MIB).filesize(4 * GIB).start_ns(3 * SEC))
        .build();
    sim.run_until(2 * SEC);
    sim.set_param(0, "max_dirty_mb", "4").unwrap();
    sim.run_until(6 * SEC);
    let at_6s = sim.threads[0].pos;
    sim.run_until(12 * SEC);
    assert!(sim.threads[0].pos > at_6s, "the first writer stopped at {at_6s} bytes");
}

/// h5bench_read opens every dataset with collective metadata reads: rank 0 reads the object
/// header and broadcasts it, so no rank begins a dataset before rank 0 has begun it. Three ranks
/// on two clients; client 0 (ranks 0 and 2) sends one 4 KiB RPC at a time, so rank 1 would run
/// ahead of rank 0.
#[test]
fn no_bdcats_rank_opens_a_dataset_before_rank_0() {
    use pfsim::model::OpState;
    let particles: u64 = 1 << 20; // 4 MiB per rank and dataset
    let h5 = serde_json::json!({
        "processes": 3, "particles": particles, "timesteps": 2, "compute_ns": 50_000_000u64,
        "file_pattern": "contig", "read_option": "full", "to_read": 0,
        "stride": 0, "block": 0, "block_cnt": 0,
    });
    let json = Scenario::new().clients(2).duration_ns(20 * SEC).job(Job::h5bench("h5bench.bdcats", h5).clients(&[0, 1])).json();
    let mut sim = Sim::new(Config::from_json(&json).unwrap()).unwrap();
    for name in osc_names(&sim, 0) {
        sim.set_param(0, &format!("osc.{name}.max_pages_per_rpc"), "1").unwrap();
        sim.set_param(0, &format!("osc.{name}.max_rpcs_in_flight"), "1").unwrap();
    }
    let dataset_bytes = 3 * particles * 4;
    // (rank, dataset in file order) -> when the rank's read of it began
    let mut began: std::collections::BTreeMap<(u32, u64), u64> = Default::default();
    let mut waited = 0;
    let mut t = 0;
    while t < 20 * SEC {
        t += 100_000; // 0.1 ms: shorter than any read of 4 MiB
        sim.run_until(t);
        for th in &sim.threads {
            let pfsim::workload::Role::H5 { rank, .. } = th.role else { continue };
            let Some(op) = &th.op else { continue };
            match op.state {
                OpState::WaitBarrier => waited += 1,
                OpState::Think | OpState::Between => {}
                _ => {
                    began.entry((rank, op.offset / dataset_bytes)).or_insert(op.started_ns);
                }
            }
        }
    }
    sim.check_invariants().unwrap();
    assert_eq!(began.len(), 3 * 2 * 8, "every rank read every dataset: {began:?}");
    for (&(rank, dataset), &at) in &began {
        let first = began[&(0, dataset)];
        assert!(at >= first, "rank {rank} began dataset {dataset} at {at} ns, rank 0 at {first} ns");
    }
    assert!(waited > 0, "no rank ever waited for rank 0: the test does not exercise the rule");
}

/// A reclaim under a small `max_cached_mb` cannot drop dirty pages or pages in write RPCs: it
/// holds them aside, and a write RPC's reply puts them back at the LRU's end once clean. Random
/// 64 KiB writes with 16-page RPCs leave thousands of dirty entries at the LRU's front; a reader
/// that follows them must find the cache back at its limit, with nothing held.
#[test]
fn the_reclaim_holds_dirty_pages_aside_until_they_are_written() {
    let limit_mb = 64u64; // Lustre's least
    let mut sim = Scenario::new()
        .tunable("osc.max_pages_per_rpc", "16")
        .tunable("llite.max_cached_mb", &limit_mb.to_string())
        .job(Job::new("filebench.randomwrite", 64 << 10).filesize(GIB).stripes(1, MIB).stop_ns(SEC / 2))
        .job(Job::new("filebench.seqread", MIB).filesize(GIB).stripes(1, MIB).start_ns(3 * SEC))
        .duration_ns(5 * SEC)
        .build();
    let limit_pages = limit_mb * MIB / 4096;
    let (mut most_held, mut most_dirty) = (0u64, 0u64);
    for ms in (10..=5000).step_by(10) {
        sim.run_until(ms * 1_000_000);
        sim.check_invariants().unwrap();
        let c = &sim.clients[0];
        let held: u64 = c.held.values().flat_map(|h| h.iter().map(|(s, e)| e - s + 1)).sum();
        most_held = most_held.max(held);
        most_dirty = most_dirty.max(c.dirty_pages);
        // the clean pages are held to the limit, but for one insertion's worth
        assert!(c.cached_pages <= limit_pages + c.dirty_pages + held + 256, "at {ms} ms: {} cached, max {}, {} dirty, {} held", c.cached_pages, c.max_cached_pages, c.dirty_pages, held);
    }
    let c = &sim.clients[0];
    assert!(most_dirty > 4 * limit_pages, "the writer never got far ahead of its OST: {most_dirty} dirty pages");
    assert!(most_held > limit_pages, "the reclaim never met dirty pages: {most_held} held");
    assert_eq!(c.dirty_pages, 0);
    assert!(c.held.is_empty(), "pages still held once written: {:?}", c.held);
    assert!(c.cached_pages <= limit_pages, "{} pages cached against a limit of {limit_pages}", c.cached_pages);
    assert!(sim.totals().app_read_bytes > 0);
}

/// `osc_io_submit()` cuts a read's queue of pages every `max_pages_per_rpc` pages counted from
/// the first page it sends to the OSC, not at RPC boundaries of the object: random 768 KiB
/// reads (at multiples of 768 KiB) with 256-page RPCs leave as one 192-page RPC each, where cuts
/// at the object's 1 MiB boundaries would split two reads in three into 64 + 128 pages.
#[test]
fn a_read_leaves_in_batches_counted_from_its_first_page() {
    let mut sim = Scenario::new()
        .tunable("osc.max_pages_per_rpc", "256")
        .job(Job::new("filebench.randomread", 768 * 1024).filesize(100 * GIB))
        .build();
    sim.run_until(SEC / 2);
    sim.check_invariants().unwrap();
    let mut rpcs = 0;
    for name in osc_names(&sim, 0) {
        let text = sim.get_param(0, &format!("osc.{name}.stats")).unwrap();
        if let Some(line) = text.lines().find(|l| l.starts_with("read_bytes ")) {
            // read_bytes N samples [bytes] min max sum sumsq
            let f: Vec<&str> = line.split_whitespace().collect();
            rpcs += f[1].parse::<u64>().unwrap();
            assert_eq!((f[4], f[5]), ("786432", "786432"), "{line}");
        }
    }
    // about 66 reads in the half second (before: 108 RPCs for as many reads)
    assert!(rpcs > 50, "{rpcs} read RPCs");
}

/// A batch of a read's queue leaves whole, gaps and all (one RPC, several niobufs): one
/// BDCATS-IO rank reads 64 KiB blocks every 256 KiB, and with 64-page RPCs each read-ahead
/// batch of the stride holds four blocks. Only the first two blocks, read before the stride is
/// known, go alone; a batch at the end of a read-ahead window may be short. (Before batches
/// were queued whole, a block set up after its batch-mates had left went in an RPC of its own:
/// 21 one-block RPCs here.)
#[test]
fn a_batch_with_gaps_leaves_as_one_rpc() {
    let h5 = serde_json::json!({
        "processes": 1, "particles": 1 << 20, "timesteps": 2, "compute_ns": 0,
        "file_pattern": "contig", "read_option": "strided", "to_read": 0,
        "stride": 1 << 16, "block": 1 << 14, "block_cnt": 16,
    });
    let mut sim = Scenario::new()
        .duration_ns(SEC)
        .tunable("osc.max_pages_per_rpc", "64")
        .job(Job::h5bench("h5bench.bdcats", h5))
        .build();
    sim.run_until(SEC);
    sim.check_invariants().unwrap();
    let mut rows = std::collections::BTreeMap::new();
    for name in osc_names(&sim, 0) {
        let stats = parse_rpc_stats(&sim.get_param(0, &format!("osc.{name}.rpc_stats")).unwrap());
        for row in stats.pages_per_rpc() {
            *rows.entry(row.label).or_insert(0) += row.read;
        }
    }
    // 2 timesteps x 8 datasets x 16 blocks of 16 pages: 4096 pages, 64 full RPCs' worth
    assert_eq!(rows.get(&16), Some(&2), "{rows:?}");
    assert!(rows.get(&64).copied().unwrap_or(0) >= 60, "{rows:?}");
    let t = sim.totals();
    assert_eq!((t.app_read_bytes, t.osc_read_bytes), (4096 * 4096, 4096 * 4096));
}

/// The OSC of stripe `s` of file 0 on client 0.
fn stripe_osc(sim: &Sim, s: usize) -> &pfsim::model::Osc {
    &sim.oscs[sim.clients[0].oscs[sim.files[0].osts[s] as usize] as usize]
}

/// A write system call copies its pages into the page cache and only then commits them to the
/// OSCs (`ll_write_end()`, `vvp_io_write_commit()`): at the latest every 64 MiB, and at the end
/// of each stripe chunk of a striped file (each chunk is a cl_io iteration of its own,
/// `lov_io_rw_iter_init()`). No page of it is dirty, or in an RPC, before its copy has ended.
#[test]
fn a_write_commits_its_pages_when_their_copy_ends() {
    let page_ns = 10_000;
    let step = 100_000;
    // the first time each OSC of file 0 holds pages (dirty or in write RPCs)
    let first_pages = |stripes: u32| {
        let mut sim = Scenario::new()
            .write_page_ns(page_ns)
            .duration_ns(SEC)
            .job(Job::new("filebench.seqwrite", 16 * MIB).filesize(GIB).stripes(stripes, MIB))
            .build();
        let mut first = vec![None; stripes as usize];
        let mut t = 0;
        while first.iter().any(Option::is_none) && t < SEC {
            t += step;
            sim.run_until(t);
            for (s, at) in first.iter_mut().enumerate() {
                let o = stripe_osc(&sim, s);
                if at.is_none() && (o.dirty_pages > 0 || o.w_in_flight > 0) {
                    *at = Some(t);
                }
            }
        }
        sim.check_invariants().unwrap();
        first.into_iter().map(|t| t.expect("the OSC got pages")).collect::<Vec<u64>>()
    };
    // one stripe: the 16 MiB (4,096 pages) are copied first, 41 ms; the open and the lock take
    // well under a millisecond
    let one = first_pages(1);
    assert!(one[0] >= 4096 * page_ns && one[0] <= 4096 * page_ns + 2 * MS, "first dirty page at {} ns", one[0]);
    // four 1 MiB stripes: each chunk of 256 pages reaches its OSC when its own copy ends (after
    // its lock's enqueue on this first write)
    let four = first_pages(4);
    for s in 1..4 {
        let gap = four[s] - four[s - 1];
        assert!(gap + step >= 256 * page_ns && gap <= 256 * page_ns + MS, "stripe {s} {gap} ns after stripe {}", s - 1);
    }
}
