//! Golden tests: every source-derived sample of docs/lustre-client.md §A,
//! reproduced byte for byte through the public `pfsim::stats` API, plus the
//! 2.15.0 / 2.15.7 variants and property tests.
//!
//! The `EXPECTED_*` literals are copied verbatim from the reference (they
//! contain real TAB characters).

use pfsim::stats::*;
use proptest::prelude::*;

/// `snapshot_time` of every §A sample.
const NOW_NS: u64 = 1_718_000_000_123_456_789;
/// `start_time` of every §A sample that has one.
const INIT_NS: u64 = 1_717_990_000_987_654_321;

/// A counter with the given printed fields.
fn ctr(count: u64, min: i64, max: i64, sum: i64, sumsq: i64) -> Counter {
    Counter {
        count,
        min,
        max,
        sum,
        sumsq,
    }
}

/// Adds every sample in `samples` to a fresh counter.
fn ctr_from(samples: &[i64]) -> Counter {
    let mut c = Counter::default();
    for &v in samples {
        c.add(v);
    }
    c
}

/// §A.1 of docs/lustre-client.md, verbatim.
const EXPECTED_A_1: &str = r#"snapshot_time:            1718000000.123456789 secs.nsecs
start_time:               0.000000000 secs.nsecs
elapsed_time:             1718000000.123456789 secs.nsecs
read RPCs in flight:  0
write RPCs in flight: 0
pending write pages:  0
pending read pages:   0

			read			write
pages per rpc         rpcs   % cum % |       rpcs   % cum %
1:		         0   0   0   |          0   0   0

			read			write
rpcs in flight        rpcs   % cum % |       rpcs   % cum %
1:		         0   0   0   |          0   0   0

			read			write
offset                rpcs   % cum % |       rpcs   % cum %
0:		         0   0   0   |          0   0   0
"#;

/// §A.2 of docs/lustre-client.md, verbatim.
const EXPECTED_A_2: &str = r#"snapshot_time:            1718000000.123456789 secs.nsecs
start_time:               1717990000.987654321 secs.nsecs
elapsed_time:             9999.135802468 secs.nsecs
read RPCs in flight:  0
write RPCs in flight: 3
pending write pages:  2048
pending read pages:   0

			read			write
pages per rpc         rpcs   % cum % |       rpcs   % cum %
1:		         0   0   0   |          1   0   0
2:		         0   0   0   |          0   0   0
4:		         0   0   0   |          1   0   0
8:		         0   0   0   |          0   0   0
16:		         0   0   0   |          0   0   0
32:		         0   0   0   |          1   0   1
64:		         0   0   0   |          0   0   1
128:		         0   0   0   |          0   0   1
256:		         0   0   0   |          0   0   1
512:		         0   0   0   |          0   0   1
1024:		        50 100 100   |        256  98 100

			read			write
rpcs in flight        rpcs   % cum % |       rpcs   % cum %
1:		        13  26  26   |          4   1   1
2:		        13  26  52   |          1   0   1
3:		        12  24  76   |          1   0   2
4:		        12  24 100   |          1   0   2
5:		         0   0 100   |          1   0   3
6:		         0   0 100   |          1   0   3
7:		         0   0 100   |          1   0   3
8:		         0   0 100   |          1   0   4
9:		         0   0 100   |        248  95 100

			read			write
offset                rpcs   % cum % |       rpcs   % cum %
0:		         1   2   2   |          1   0   0
1:		         0   0   2   |          0   0   0
2:		         0   0   2   |          0   0   0
4:		         0   0   2   |          0   0   0
8:		         0   0   2   |          0   0   0
16:		         0   0   2   |          0   0   0
32:		         0   0   2   |          0   0   0
64:		         0   0   2   |          0   0   0
128:		         0   0   2   |          0   0   0
256:		         0   0   2   |          0   0   0
512:		         0   0   2   |          0   0   0
1024:		         1   2   4   |          1   0   0
2048:		         2   4   8   |          2   0   1
4096:		         4   8  16   |          4   1   3
8192:		         8  16  32   |          8   3   6
16384:		        16  32  64   |         16   6  12
32768:		        18  36 100   |         32  12  24
65536:		         0   0 100   |         64  24  49
131072:		         0   0 100   |        128  49  98
262144:		         0   0 100   |          3   1 100
"#;

/// §A.2b of docs/lustre-client.md, verbatim.
const EXPECTED_A_2B: &str = r#"snapshot_time            : 1718000000.123456789 secs.nsecs
start_time               : 1717990000.987654321 secs.nsecs
elapsed_time             : 9999.135802468 secs.nsecs
"#;

/// §A.3 of docs/lustre-client.md, verbatim.
const EXPECTED_A_3: &str = r#"snapshot_time             1718000000.123456789 secs.nsecs
start_time                1717990000.987654321 secs.nsecs
elapsed_time              9999.135802468 secs.nsecs
req_waittime              336 samples [usec] 93 15954 3412525 40874916763
req_active                336 samples [reqs] 1 9 1683 10903
ldlm_extent_enqueue       12 samples [reqs] 1 1 12 12
read_bytes                50 samples [bytes] 4194304 4194304 209715200 879609302220800
write_bytes               259 samples [bytes] 4096 4194304 1073827840 4503604643758080
ost_setattr               2 samples [usec] 200 236 436 95696
ost_read                  50 samples [usec] 3594 5978 239027 1164451469
ost_write                 259 samples [usec] 9001 15954 3168136 39709227448
ost_connect               1 samples [usec] 402 402 402 161604
ost_punch                 3 samples [usec] 150 273 625 137833
ost_statfs                2 samples [usec] 164 181 345 59657
ldlm_cancel               10 samples [usec] 143 344 2377 619319
obd_ping                  9 samples [usec] 93 185 1177 163737
"#;

/// §A.4 of docs/lustre-client.md, verbatim.
const EXPECTED_A_4: &str = r#"import:
    name: testfs-OST0000-osc-ffff8881234abcd0
    target: testfs-OST0000_UUID
    state: FULL
    connect_flags: [ write_grant, server_lock, version, request_portal, truncate_lock, max_byte_per_rpc, early_lock_cancel, adaptive_timeouts, lru_resize, alt_checksum_algorithm, fid_is_enabled, version_recovery, grant_shrink, full20, layout_lock, 64bithash, object_max_bytes, jobstats, einprogress, grant_param, lvb_type, short_io, lfsck, bulk_mbits, second_flags, lockaheadv2, increasing_xid, client_encryption, lseek, reply_mbits ]
    connect_data:
       flags: 0xa0425af2e3440478
       instance: 1
       target_version: 2.15.5.0
       initial_grant: 8437760
       max_brw_size: 4194304
       grant_block_size: 4096
       grant_inode_size: 32
       grant_max_extent_size: 67108864
       grant_extent_tax: 24576
       cksum_types: 0xf7
       max_object_bytes: 17592186040320
    import_flags: [ replayable, pingable, connect_tried ]
    connection:
       failover_nids: [ 10.10.0.11@tcp ]
       current_connection: 10.10.0.11@tcp
       connection_attempts: 1
       generation: 1
       in-progress_invalidations: 0
       idle: 0 sec
    rpcs:
       inflight: 3
       unregistering: 0
       timeouts: 0
       avg_waittime: 10156 usec
    service_estimates:
       services: 1 sec
       network: 1 sec
    transactions:
       last_replay: 0
       peer_committed: 21474836489
       last_checked: 21474836489
    read_data_averages:
       bytes_per_rpc: 4194304
       usec_per_rpc: 4780
       MB_per_sec: 877.46
    write_data_averages:
       bytes_per_rpc: 4146053
       usec_per_rpc: 12232
       MB_per_sec: 338.95
"#;

/// §A.5 of docs/lustre-client.md, verbatim.
const EXPECTED_A_5: &str = r#"snapshot_time             1718000000.123456789 secs.nsecs
start_time                1717990000.987654321 secs.nsecs
elapsed_time              9999.135802468 secs.nsecs
read_bytes                200 samples [bytes] 1048576 1048576 209715200 219902325555200
write_bytes               1024 samples [bytes] 1048576 1048576 1073741824 1125899906842624
read                      200 samples [usec] 10 3986 391168 1035068868
write                     1024 samples [usec] 80 2997 1509876 2951834078
ioctl                     4 samples [reqs]
open                      3 samples [usec] 80 420 800 272800
close                     3 samples [usec] 50 700 1100 615000
seek                      2 samples [usec] 0 1 1 1
fsync                     1 samples [usec] 30123 30123 30123 907395129
getattr                   5 samples [usec] 2 10 25 161
inode_permission          20 samples [usec] 0 2 10 14
opencount                 3 samples [reqs] 1 2 4 6
openclosetime             2 samples [usec] 1201234 5123456 6324690 27692764506692
"#;

/// §A.6 of docs/lustre-client.md, verbatim.
const EXPECTED_A_6: &str = r#"snapshot_time             1718000000.123456789 secs.nsecs
start_time                1717990000.987654321 secs.nsecs
elapsed_time              9999.135802468 secs.nsecs
hits                      50950 samples [pages]
misses                    250 samples [pages]
readpage_not_consecutive  2 samples [pages]
zero_size_window          120 samples [pages]
failed_to_fast_read       240 samples [pages]
"#;

/// §A.7 of docs/lustre-client.md, verbatim.
const EXPECTED_A_7: &str = r#"users: 1
max_cached_mb: 64230
used_mb: 1250
unused_mb: 62980
reclaim_count: 0
max_read_ahead_mb: 1024
used_read_ahead_mb: 0
"#;

/// §A.8 of docs/lustre-client.md, verbatim.
const EXPECTED_A_8: &str = r#"used_mb: 312
busy_cnt: 0
reclaim: 0
"#;

/// §A.9 of docs/lustre-client.md, verbatim.
const EXPECTED_A_9: &str = r#"snapshot_time:            1718000000.123456789 secs.nsecs
start_time:               1717990000.987654321 secs.nsecs
elapsed_time:             9999.135802468 secs.nsecs
lockless_write_bytes		0
lockless_read_bytes		0
"#;

/// §A.10 of docs/lustre-client.md, verbatim.
const EXPECTED_A_10: &str = r#"unstable_pages:                    0
unstable_mb:                       0
"#;

// ---------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------

/// The synthetic workload of the §A preamble, tallied like `osc_build_rpc()`:
/// 256 × 4 MiB writes with at most 9 in flight, a 17/3/1-page tail written
/// one at a time, and 50 × 4 MiB reads with 1..4 in flight.
fn a2_workload() -> RpcHists {
    let mut h = RpcHists::default();
    for k in 0..256u64 {
        let in_flight = (k as u32 + 1).min(9);
        h.tally_write(1024, in_flight, k * 1024);
    }
    let mut page = 256 * 1024;
    for pages in [17u32, 3, 1] {
        h.tally_write(pages, 1, page);
        page += u64::from(pages);
    }
    for k in 0..50u64 {
        h.tally_read(1024, (k % 4) as u32 + 1, k * 1024);
    }
    h
}

/// The `osc.*.stats` counters of §A.3 (sample lists where they are short).
fn a3_stats() -> OscStats {
    let mut s = OscStats::new(INIT_NS);
    s.ctr[OscCtr::ReqWaittime as usize] = ctr(336, 93, 15954, 3412525, 40874916763);
    s.ctr[OscCtr::ReqActive as usize] = ctr(336, 1, 9, 1683, 10903);
    for _ in 0..12 {
        s.add(OscCtr::LdlmExtentEnqueue, 1);
    }
    for _ in 0..50 {
        s.add(OscCtr::ReadBytes, 4_194_304);
    }
    s.ctr[OscCtr::WriteBytes as usize] = ctr(259, 4096, 4194304, 1073827840, 4503604643758080);
    s.add(OscCtr::OstSetattr, 200);
    s.add(OscCtr::OstSetattr, 236);
    s.ctr[OscCtr::OstRead as usize] = ctr(50, 3594, 5978, 239027, 1164451469);
    s.ctr[OscCtr::OstWrite as usize] = ctr(259, 9001, 15954, 3168136, 39709227448);
    s.add(OscCtr::OstConnect, 402);
    for v in [150, 202, 273] {
        s.add(OscCtr::OstPunch, v);
    }
    s.add(OscCtr::OstStatfs, 164);
    s.add(OscCtr::OstStatfs, 181);
    s.ctr[OscCtr::LdlmCancel as usize] = ctr(10, 143, 344, 2377, 619319);
    s.ctr[OscCtr::ObdPing as usize] = ctr(9, 93, 185, 1177, 163737);
    s
}

/// The import of §A.4, built field by field.
fn a4_import() -> ImportInfo {
    ImportInfo {
        obd_name: "testfs-OST0000-osc-ffff8881234abcd0".to_string(),
        target: "testfs-OST0000_UUID".to_string(),
        state: ImportState::Full,
        connect: ConnectData {
            flags: 0xa0425af2e3440478,
            flags2: DEFAULT_OSC_CONNECT_FLAGS2,
            instance: 1,
            target_version: [2, 15, 5, 0],
            initial_grant: 8437760,
            max_brw_size: 4194304,
            grant_block_size: 4096,
            grant_inode_size: 32,
            grant_max_extent_size: 67108864,
            grant_extent_tax: 24576,
            cksum_types: 0xf7,
            max_object_bytes: 17592186040320,
            ..ConnectData::default()
        },
        flags: ImportFlags {
            replayable: true,
            pingable: true,
            connect_tried: true,
            ..ImportFlags::default()
        },
        failover_nids: vec!["10.10.0.11@tcp".to_string()],
        current_connection: Some("10.10.0.11@tcp".to_string()),
        connection_attempts: 1,
        generation: 1,
        inval_count: 0,
        idle_secs: 0,
        inflight: 3,
        unregistering: 0,
        timeouts: 0,
        service_estimate_secs: 1,
        network_secs: 1,
        last_replay: 0,
        peer_committed: 21474836489,
        last_checked: 21474836489,
    }
}

/// The `llite.*.stats` counters of §A.5 (sample lists where they are short).
fn a5_stats() -> LliteStats {
    let mut s = LliteStats::new(INIT_NS);
    for _ in 0..200 {
        s.add(LliteCtr::ReadBytes, 1_048_576);
    }
    for _ in 0..1024 {
        s.add(LliteCtr::WriteBytes, 1_048_576);
    }
    s.ctr[LliteCtr::Read as usize] = ctr(200, 10, 3986, 391168, 1035068868);
    s.ctr[LliteCtr::Write as usize] = ctr(1024, 80, 2997, 1509876, 2951834078);
    let samples: [(LliteCtr, &[i64]); 9] = [
        (LliteCtr::Ioctl, &[0, 0, 0, 0]),
        (LliteCtr::Open, &[80, 420, 300]),
        (LliteCtr::Close, &[50, 700, 350]),
        (LliteCtr::Seek, &[0, 1]),
        (LliteCtr::Fsync, &[30123]),
        (LliteCtr::Getattr, &[2, 4, 4, 5, 10]),
        (
            LliteCtr::InodePermission,
            &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2],
        ),
        (LliteCtr::Opencount, &[1, 1, 2]),
        (LliteCtr::Openclosetime, &[1201234, 5123456]),
    ];
    for (c, list) in samples {
        for &v in list {
            s.add(c, v);
        }
    }
    s
}

/// The read-ahead counters of §A.6.
fn a6_stats() -> RaStats {
    let mut s = RaStats::new(INIT_NS);
    let counts = [
        (RaCtr::Hits, 50950),
        (RaCtr::Misses, 250),
        (RaCtr::ReadpageNotConsecutive, 2),
        (RaCtr::ZeroSizeWindow, 120),
        (RaCtr::FailedToFastRead, 240),
    ];
    for (c, n) in counts {
        for _ in 0..n {
            s.inc(c);
        }
    }
    s
}

/// The 2.15.7 spelling of a 2.15.5 text: `usec` → `usecs` where it is a unit.
fn plural_units(text: &str) -> String {
    text.replace("[usec]", "[usecs]")
        .replace(" usec\n", " usecs\n")
        .replace("usec_per_rpc", "usecs_per_rpc")
}

/// Replaces the three header lines of `text` with `header`.
fn with_header(header: &str, text: &str) -> String {
    let body: Vec<&str> = text.split_inclusive('\n').skip(3).collect();
    format!("{header}{}", body.concat())
}

// ---------------------------------------------------------------------------
// §A golden blocks
// ---------------------------------------------------------------------------

#[test]
fn expected_texts_contain_real_tabs() {
    assert!(EXPECTED_A_1.contains("\t\t\tread\t\t\twrite\n"));
    assert!(EXPECTED_A_2.contains("1024:\t\t"));
    assert!(EXPECTED_A_9.contains("lockless_write_bytes\t\t0\n"));
}

#[test]
fn a1_rpc_stats_fresh_mount() {
    let h = RpcHists::default();
    for style in [TextStyle::V2_15_5, TextStyle::V2_15_7] {
        assert_eq!(
            rpc_stats_text(style, NOW_NS, 0, 0, 0, 0, 0, &h),
            EXPECTED_A_1
        );
    }
}

#[test]
fn a2_rpc_stats_after_workload() {
    let h = a2_workload();
    let text = rpc_stats_text(TextStyle::V2_15_5, NOW_NS, INIT_NS, 0, 3, 2048, 0, &h);
    assert_eq!(text, EXPECTED_A_2);
    let text = rpc_stats_text(TextStyle::V2_15_7, NOW_NS, INIT_NS, 0, 3, 2048, 0, &h);
    assert_eq!(text, EXPECTED_A_2);
}

#[test]
fn a2_rpc_stats_clear_keeps_instantaneous_lines() {
    let mut h = a2_workload();
    h.clear();
    assert_eq!(h, RpcHists::default());
    let text = rpc_stats_text(TextStyle::V2_15_5, NOW_NS, 0, 0, 0, 0, 0, &h);
    assert_eq!(text, EXPECTED_A_1);
}

#[test]
fn a2b_header_2_15_0() {
    assert_eq!(
        stats_header(TextStyle::V2_15_0, NOW_NS, INIT_NS, true),
        EXPECTED_A_2B
    );
    let h = a2_workload();
    let text = rpc_stats_text(TextStyle::V2_15_0, NOW_NS, INIT_NS, 0, 3, 2048, 0, &h);
    assert_eq!(text, with_header(EXPECTED_A_2B, EXPECTED_A_2));
}

#[test]
fn a3_osc_stats() {
    let s = a3_stats();
    assert_eq!(s.text(TextStyle::V2_15_5, NOW_NS), EXPECTED_A_3);
    // The no-colon header looks the same in 2.15.0.
    assert_eq!(s.text(TextStyle::V2_15_0, NOW_NS), EXPECTED_A_3);
}

#[test]
fn a3_osc_stats_2_15_7_units() {
    let text = a3_stats().text(TextStyle::V2_15_7, NOW_NS);
    assert_eq!(text, plural_units(EXPECTED_A_3));
    assert!(text.contains("req_waittime              336 samples [usecs] 93 15954"));
    assert!(text.contains("[reqs]") && text.contains("[bytes]"));
}

#[test]
fn a3_req_timeout_unit_per_style() {
    let mut s = OscStats::new(INIT_NS);
    s.add(OscCtr::ReqTimeout, 5);
    let line = |style| s.text(style, NOW_NS).lines().nth(3).unwrap().to_string();
    assert_eq!(
        line(TextStyle::V2_15_5),
        "req_timeout               1 samples [sec] 5 5 5 25"
    );
    assert_eq!(
        line(TextStyle::V2_15_7),
        "req_timeout               1 samples [secs] 5 5 5 25"
    );
}

#[test]
fn a4_import_text() {
    let text = import_text(TextStyle::V2_15_5, &a4_import(), &a3_stats());
    assert_eq!(text, EXPECTED_A_4);
    assert_eq!(
        import_text(TextStyle::V2_15_0, &a4_import(), &a3_stats()),
        EXPECTED_A_4
    );
}

#[test]
fn a4_import_from_osc_defaults() {
    let mut imp = ImportInfo::new_osc(
        "testfs-OST0000-osc-ffff8881234abcd0",
        "testfs-OST0000_UUID",
        "10.10.0.11@tcp",
    );
    imp.inflight = 3;
    imp.peer_committed = 21474836489;
    imp.last_checked = 21474836489;
    assert_eq!(imp, a4_import());
    assert_eq!(
        import_text(TextStyle::V2_15_5, &imp, &a3_stats()),
        EXPECTED_A_4
    );
}

#[test]
fn a4_import_2_15_7_units() {
    let text = import_text(TextStyle::V2_15_7, &a4_import(), &a3_stats());
    assert_eq!(text, plural_units(EXPECTED_A_4));
    assert!(text.contains("       avg_waittime: 10156 usecs\n"));
    assert!(text.contains("       usecs_per_rpc: 4780\n"));
    // Only the waittime/per-rpc units change; the AT lines keep "sec".
    assert!(text.contains("       services: 1 sec\n"));
}

#[test]
fn a4_connect_flag_names() {
    let names = connect_flag_names(DEFAULT_OSC_CONNECT_FLAGS, DEFAULT_OSC_CONNECT_FLAGS2);
    assert_eq!(names, DEFAULT_OSC_CONNECT_FLAG_NAMES.to_vec());
    // flags2 is ignored without `second_flags`.
    let names = connect_flag_names(OBD_CONNECT_GRANT, DEFAULT_OSC_CONNECT_FLAGS2);
    assert_eq!(names, vec!["write_grant".to_string()]);
    // flags2 bits without a name.
    let names = connect_flag_names(OBD_CONNECT_FLAGS2, 1 | (1 << 40));
    assert_eq!(
        names,
        vec!["second_flags", "file_secctx", "unknown2_0x10000000000"]
    );
}

#[test]
fn import_without_rpcs_and_connection() {
    let mut imp = a4_import();
    imp.state = ImportState::Idle;
    imp.current_connection = None;
    imp.failover_nids.clear();
    imp.flags = ImportFlags::default();
    imp.connect = ConnectData {
        flags: 0,
        ..ConnectData::default()
    };
    let text = import_text(TextStyle::V2_15_5, &imp, &OscStats::new(0));
    let expected = "import:
    name: testfs-OST0000-osc-ffff8881234abcd0
    target: testfs-OST0000_UUID
    state: IDLE
    connect_flags: [  ]
    connect_data:
       flags: 0
       instance: 0
    import_flags: [  ]
    connection:
       failover_nids: [  ]
       current_connection: <none>
       connection_attempts: 1
       generation: 1
       in-progress_invalidations: 0
       idle: 0 sec
    rpcs:
       inflight: 3
       unregistering: 0
       timeouts: 0
       avg_waittime: 0 usec
    service_estimates:
       services: 1 sec
       network: 1 sec
    transactions:
       last_replay: 0
       peer_committed: 21474836489
       last_checked: 21474836489
";
    assert_eq!(text, expected);
}

#[test]
fn import_latency_without_bytes_prints_no_block_header() {
    // The kernel prints `usec_per_rpc` even when no bytes were counted; k is
    // then the raw (zero) byte sum, so MB_per_sec is 0.00.
    let mut s = OscStats::new(0);
    s.add(OscCtr::OstWrite, 1000);
    let text = import_text(TextStyle::V2_15_5, &a4_import(), &s);
    assert!(text.ends_with(
        "       last_checked: 21474836489\n       usec_per_rpc: 1000\n       MB_per_sec: 0.00\n"
    ));
}

/// The `MB_per_sec` line printed for one write RPC of `bytes` taking `usecs`.
fn mb_per_sec_line(bytes: i64, usecs: i64) -> String {
    let mut s = OscStats::new(0);
    s.add(OscCtr::WriteBytes, bytes);
    s.add(OscCtr::OstWrite, usecs);
    let text = import_text(TextStyle::V2_15_5, &a4_import(), &s);
    text.lines().last().unwrap().to_string()
}

#[test]
fn import_mb_per_sec_integer_arithmetic() {
    // k / j, then (100 * k / j) % 100 zero-padded to two digits.
    assert_eq!(mb_per_sec_line(4096, 1000), "       MB_per_sec: 4.09");
    assert_eq!(mb_per_sec_line(1005, 1000), "       MB_per_sec: 1.00");
    assert_eq!(
        mb_per_sec_line(1_000_000, 990_099),
        "       MB_per_sec: 1.01"
    );
    assert_eq!(mb_per_sec_line(999, 1000), "       MB_per_sec: 0.99");
}

#[test]
fn a5_llite_stats() {
    let s = a5_stats();
    assert_eq!(s.text(TextStyle::V2_15_5, NOW_NS), EXPECTED_A_5);
    assert_eq!(s.text(TextStyle::V2_15_0, NOW_NS), EXPECTED_A_5);
    assert_eq!(
        s.text(TextStyle::V2_15_7, NOW_NS),
        plural_units(EXPECTED_A_5)
    );
}

#[test]
fn a6_read_ahead_stats() {
    let s = a6_stats();
    for style in [TextStyle::V2_15_0, TextStyle::V2_15_5, TextStyle::V2_15_7] {
        assert_eq!(s.text(style, NOW_NS), EXPECTED_A_6);
    }
}

#[test]
fn a7_max_cached_mb() {
    assert_eq!(
        max_cached_mb_text(1, 64230, 1250, 62980, 0, 1024, 0),
        EXPECTED_A_7
    );
}

#[test]
fn a8_osc_cached_mb() {
    assert_eq!(osc_cached_mb_text(312, 0, 0), EXPECTED_A_8);
}

#[test]
fn a9_osc_stats() {
    assert_eq!(
        osc_stats_text(TextStyle::V2_15_5, NOW_NS, INIT_NS, 0, 0),
        EXPECTED_A_9
    );
    assert_eq!(
        osc_stats_text(TextStyle::V2_15_7, NOW_NS, INIT_NS, 0, 0),
        EXPECTED_A_9
    );
    let old = osc_stats_text(TextStyle::V2_15_0, NOW_NS, INIT_NS, 0, 0);
    assert_eq!(old, with_header(EXPECTED_A_2B, EXPECTED_A_9));
}

#[test]
fn a10_unstable_stats() {
    assert_eq!(unstable_stats_text(0, 0), EXPECTED_A_10);
}

// ---------------------------------------------------------------------------
// Other formatting rules
// ---------------------------------------------------------------------------

#[test]
fn header_shapes() {
    let colon_new = stats_header(TextStyle::V2_15_5, 5_000_000_001, 0, true);
    assert_eq!(
        colon_new,
        "snapshot_time:            5.000000001 secs.nsecs\n\
         start_time:               0.000000000 secs.nsecs\n\
         elapsed_time:             5.000000001 secs.nsecs\n"
    );
    let plain = "snapshot_time             5.000000001 secs.nsecs\n\
                 start_time                0.000000000 secs.nsecs\n\
                 elapsed_time              5.000000001 secs.nsecs\n";
    for style in [TextStyle::V2_15_0, TextStyle::V2_15_5, TextStyle::V2_15_7] {
        assert_eq!(stats_header(style, 5_000_000_001, 0, false), plain);
    }
    // elapsed saturates at zero when the start lies in the future.
    let h = stats_header(TextStyle::V2_15_5, 1, 2, false);
    assert!(h.ends_with("elapsed_time              0.000000000 secs.nsecs\n"));
}

#[test]
fn text_style_parse() {
    for (s, style) in [
        ("2.15.0", TextStyle::V2_15_0),
        ("2.15.1", TextStyle::V2_15_0),
        ("2.15.2", TextStyle::V2_15_5),
        ("2.15.5", TextStyle::V2_15_5),
        ("2.15.6", TextStyle::V2_15_5),
        ("2.15.7", TextStyle::V2_15_7),
        ("2.15.8", TextStyle::V2_15_7),
    ] {
        assert_eq!(TextStyle::parse(s), Some(style), "{s}");
    }
    for s in ["2.15.9", "2.14.0", "2.16.0", "", "2.15"] {
        assert_eq!(TextStyle::parse(s), None, "{s}");
    }
}

#[test]
fn zero_count_counters_are_omitted() {
    let mut s = OscStats::new(INIT_NS);
    assert_eq!(
        s.text(TextStyle::V2_15_5, NOW_NS),
        stats_header(TextStyle::V2_15_5, NOW_NS, INIT_NS, false)
    );
    s.add(OscCtr::ObdPing, 100);
    let text = s.text(TextStyle::V2_15_5, NOW_NS);
    assert_eq!(text.lines().count(), 4);
    assert!(text.ends_with("obd_ping                  1 samples [usec] 100 100 100 10000\n"));
    // Clearing empties the counters and restarts the clock.
    s.clear(NOW_NS);
    assert_eq!(
        s.text(TextStyle::V2_15_5, NOW_NS),
        stats_header(TextStyle::V2_15_5, NOW_NS, NOW_NS, false)
    );
    assert_eq!(*s.get(OscCtr::ObdPing), Counter::default());
}

#[test]
fn sumsq_wraps_and_prints_unsigned() {
    // 3_037_000_500^2 = 9_223_372_037_000_250_000 > i64::MAX: one sample
    // already wraps the signed sum; %llu shows the unsigned value.
    let one = ctr_from(&[3_037_000_500]);
    assert!(one.sumsq < 0);
    let mut s = OscStats::new(INIT_NS);
    s.ctr[OscCtr::OstWrite as usize] = one;
    let text = s.text(TextStyle::V2_15_5, NOW_NS);
    assert!(
        text.ends_with(" 3037000500 3037000500 3037000500 9223372037000250000\n"),
        "{text}"
    );
    // Two samples wrap past 2^64: (2 * 9_223_372_037_000_250_000) mod 2^64.
    let two = ctr_from(&[3_037_000_500, 3_037_000_500]);
    s.ctr[OscCtr::OstWrite as usize] = two;
    let text = s.text(TextStyle::V2_15_5, NOW_NS);
    assert!(
        text.ends_with(" 3037000500 3037000500 6074001000 290948384\n"),
        "{text}"
    );
    // The DDN fixture value: sumsq == i64::MAX prints as such.
    s.ctr[OscCtr::OstWrite as usize] = ctr(1, 1, 1, 1, i64::MAX);
    assert!(s
        .text(TextStyle::V2_15_5, NOW_NS)
        .ends_with(" 1 1 1 9223372036854775807\n"));
}

#[test]
fn count_only_counters_print_no_fields() {
    let mut s = LliteStats::new(0);
    s.add(LliteCtr::GetxattrHits, 7);
    s.add(LliteCtr::Ioctl, 0);
    let text = s.text(TextStyle::V2_15_7, 10);
    assert!(text.ends_with(
        "ioctl                     1 samples [reqs]\ngetxattr_hits             1 samples [reqs]\n"
    ));
}

#[test]
fn counter_clear_restores_initial_state() {
    let mut c = ctr_from(&[5, -3, 9]);
    assert_eq!((c.count, c.min, c.max, c.sum, c.sumsq), (3, -3, 9, 11, 115));
    c.clear();
    assert_eq!(c, Counter::default());
    assert_eq!(c.min, LC_MIN_INIT);
}

#[test]
fn rpc_stats_row_rules() {
    // 3 pages -> row 4:, 1025 pages -> row 2048:, rows stop at the last
    // non-empty bucket of either column.
    let mut h = RpcHists::default();
    h.tally_read(3, 1, 0);
    h.tally_write(1025, 2, 1);
    let text = rpc_stats_text(TextStyle::V2_15_5, NOW_NS, 0, 1, 1, 0, 0, &h);
    let sections: Vec<&str> = text.split("\n\t\t\tread\t\t\twrite\n").collect();
    assert_eq!(sections.len(), 4);
    let pages: Vec<&str> = sections[1].lines().skip(1).collect();
    assert_eq!(pages.len(), 12);
    assert_eq!(pages[2], "4:\t\t         1 100 100   |          0   0   0");
    assert_eq!(
        pages[11],
        "2048:\t\t         0   0 100   |          1 100 100"
    );
    let rif: Vec<&str> = sections[2].lines().skip(1).collect();
    assert_eq!(
        rif,
        vec![
            "1:\t\t         1 100 100   |          0   0   0",
            "2:\t\t         0   0 100   |          1 100 100"
        ]
    );
    // Page index 1 -> value 2 -> row 1:.
    let offset: Vec<&str> = sections[3].lines().skip(1).collect();
    assert_eq!(
        offset,
        vec![
            "0:\t\t         1 100 100   |          0   0   0",
            "1:\t\t         0   0 100   |          1 100 100"
        ]
    );
}

#[test]
fn checksum_type() {
    assert_eq!(
        checksum_type_text("crc32c"),
        "crc32 adler [crc32c] t10ip512 t10ip4K t10crc512 t10crc4K \n"
    );
    assert_eq!(
        checksum_type_text("t10crc4K"),
        "crc32 adler crc32c t10ip512 t10ip4K t10crc512 [t10crc4K] \n"
    );
}

#[test]
fn counter_tables_have_lustre_names_in_order() {
    let osc: Vec<&str> = OscCtr::ALL.iter().map(|c| c.name()).collect();
    let pos = |n: &str| osc.iter().position(|x| *x == n).unwrap();
    let order = [
        "req_waittime",
        "req_active",
        "ldlm_glimpse_enqueue",
        "ldlm_extent_enqueue",
        "read_bytes",
        "write_bytes",
        "ost_getattr",
        "ost_setattr",
        "ost_read",
        "ost_write",
        "ost_connect",
        "ost_disconnect",
        "ost_punch",
        "ost_statfs",
        "ost_sync",
        "ldlm_cancel",
        "obd_ping",
    ];
    for w in order.windows(2) {
        assert!(pos(w[0]) < pos(w[1]), "{} before {}", w[0], w[1]);
    }
    let llite: Vec<&str> = LliteCtr::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(llite.len(), 35);
    assert_eq!(llite.join(" "), "read_bytes write_bytes read write ioctl open close mmap page_fault page_mkwrite seek \
         fsync readdir setattr truncate flock getattr create link unlink symlink mkdir rmdir mknod rename statfs \
         setxattr getxattr getxattr_hits listxattr removexattr inode_permission fallocate opencount openclosetime");
    let ra: Vec<&str> = RaCtr::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(ra.join(" "), "hits misses readpage_not_consecutive miss_inside_window failed_grab_cache_page \
         failed_lock_match read_but_discarded zero_length_file zero_size_window readahead_to_eof \
         hit_max_readahead_issue wrong_page_from_grab_cache_page failed_to_reach_end async_readahead \
         failed_to_fast_read mmap_range_read");
}

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

/// Sums the read and write `rpcs` columns of one rpc_stats section.
fn section_totals(section: &str) -> (u64, u64) {
    let mut totals = (0, 0);
    for row in section.lines().skip(1) {
        let (left, right) = row.split_once('|').unwrap();
        let (_, left) = left.split_once(":\t\t").unwrap();
        totals.0 += left
            .split_whitespace()
            .next()
            .unwrap()
            .parse::<u64>()
            .unwrap();
        totals.1 += right
            .split_whitespace()
            .next()
            .unwrap()
            .parse::<u64>()
            .unwrap();
    }
    totals
}

proptest! {
    #[test]
    fn rpc_stats_rows_sum_to_tallied_rpcs(
        rpcs in proptest::collection::vec((any::<bool>(), 0u32..5000, 1u32..40, any::<u64>()), 0..200)
    ) {
        let mut h = RpcHists::default();
        let (mut reads, mut writes) = (0u64, 0u64);
        for &(is_read, pages, rif, start) in &rpcs {
            if is_read {
                h.tally_read(pages, rif, start);
                reads += 1;
            } else {
                h.tally_write(pages, rif, start);
                writes += 1;
            }
        }
        let text = rpc_stats_text(TextStyle::V2_15_5, NOW_NS, INIT_NS, 0, 0, 0, 0, &h);
        let sections: Vec<&str> = text.split("\n\t\t\tread\t\t\twrite\n").collect();
        prop_assert_eq!(sections.len(), 4);
        for section in &sections[1..] {
            prop_assert_eq!(section_totals(section), (reads, writes));
            let last = section.lines().last().unwrap();
            if reads > 0 {
                prop_assert!(last.contains(" 100   |"), "{}", last);
            }
            if writes > 0 {
                prop_assert!(last.ends_with(" 100"), "{}", last);
            }
        }
    }

    #[test]
    fn counter_min_max_sum(samples in proptest::collection::vec(any::<i32>(), 1..100)) {
        let c = ctr_from(&samples.iter().map(|&v| i64::from(v)).collect::<Vec<_>>());
        prop_assert_eq!(c.count, samples.len() as u64);
        prop_assert_eq!(c.min, i64::from(*samples.iter().min().unwrap()));
        // the kernel starts lc_max at 0, so samples all below 0 leave it there
        prop_assert_eq!(c.max, i64::from(*samples.iter().max().unwrap()).max(0));
        prop_assert_eq!(c.sum, samples.iter().map(|&v| i64::from(v)).sum::<i64>());
        let sumsq: i128 = samples.iter().map(|&v| i128::from(v) * i128::from(v)).sum();
        prop_assert_eq!(c.sumsq, sumsq as i64);
    }
}
