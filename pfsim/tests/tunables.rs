//! Writes to parameter files: every writable parameter accepts its good values and prints them
//! back as Lustre does, rejects bad ones with Lustre's errno (docs/lustre-client.md §3) and keeps
//! its old value; read-only and unknown files; couplings between tunables; clearing statistics;
//! and tunables taking effect on a running workload.

mod common;

use common::*;
use pfsim::config::Config;
use pfsim::stats::OscCtr;
use pfsim::Sim;

const ENOENT: i32 = 2;
const E2BIG: i32 = 7;
const EACCES: i32 = 13;
const EINVAL: i32 = 22;
const ERANGE: i32 = 34;

/// An idle cluster: one 128 GiB, 16-CPU client, 8 OSTs, 4 MiB brw_size.
fn idle() -> Sim {
    Scenario::new().build()
}

fn idle_with_ram(bytes: u64) -> Sim {
    Scenario::new().client_ram(bytes).build()
}

/// The full lctl name of `kind.param` on the first device of that kind of client 0
/// (`osc.max_rpcs_in_flight` -> `osc.testfs-OST0000-osc-ffff....max_rpcs_in_flight`).
fn full_name(sim: &Sim, short: &str) -> String {
    if !short.contains('.') {
        return short.to_string();
    }
    let (kind, param) = short.split_once('.').unwrap();
    sim.list_params(0)
        .into_iter()
        .find(|p| p.name.starts_with(&format!("{kind}.")) && p.name.ends_with(&format!(".{param}")))
        .unwrap_or_else(|| panic!("no {short}"))
        .name
}

fn get(sim: &Sim, short: &str) -> String {
    sim.get_param(0, &full_name(sim, short)).unwrap_or_else(|e| panic!("get {short}: errno {e}"))
}

fn set(sim: &mut Sim, short: &str, value: &str) -> Result<(), i32> {
    let name = full_name(sim, short);
    sim.set_param(0, &name, value)
}

/// The line of a multi-line file that starts with `key:`, value only.
fn field(text: &str, key: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}:")))
        .unwrap_or_else(|| panic!("no {key} in {text:?}"))
        .trim()
        .to_string()
}

/// What a parameter prints, reduced to the value under test.
fn value(sim: &Sim, short: &str) -> String {
    let text = get(sim, short);
    match short {
        "llite.max_cached_mb" => field(&text, "max_cached_mb"),
        // "crc32 adler [crc32c] ... \n": the trailing space is Lustre's
        "osc.checksum_type" => text,
        _ => text.trim_end_matches('\n').to_string(),
    }
}

/// One writable parameter: values written in order with what is read back, and values rejected
/// with their errno (each checked on a fresh client, which must keep its value).
struct Param {
    name: &'static str,
    good: &'static [(&'static str, &'static str)],
    bad: &'static [(&'static str, i32)],
}

const CKSUM_ADLER: &str = "crc32 [adler] crc32c t10ip512 t10ip4K t10crc512 t10crc4K \n";
const CKSUM_CRC32C: &str = "crc32 adler [crc32c] t10ip512 t10ip4K t10crc512 t10crc4K \n";
const CKSUM_T10: &str = "crc32 adler crc32c t10ip512 t10ip4K t10crc512 [t10crc4K] \n";

/// Ranges on the 128 GiB client of `idle()`.
const PARAMS: &[Param] = &[
    // --- OSC
    Param {
        name: "osc.max_rpcs_in_flight",
        // kstrtouint(buf, 0): hex, octal, '+', echo's newline
        good: &[("1", "1"), ("256", "256"), ("0x10", "16"), ("010", "8"), ("+5", "5"), ("32\n", "32")],
        bad: &[("0", ERANGE), ("257", ERANGE), ("abc", EINVAL), ("-1", EINVAL), ("", EINVAL), ("4294967296", ERANGE)],
    },
    Param {
        name: "osc.max_pages_per_rpc",
        // a value below 1 MiB is pages, from 1 MiB on it is bytes; no power of two needed
        good: &[
            ("1", "1"),
            ("16", "16"),
            ("1023", "1023"),
            ("1024", "1024"),
            ("1M", "256"),
            ("4M", "1024"),
            ("1.5M", "384"),
            ("1048576", "256"),
            ("4194304", "1024"),
            ("000000000000000000016", "16"), // 21 characters: fits string_to_size's buffer
            ("4MiB", "1024"),
            ("4000000B", "976"), // bytes, rounded down to pages
            ("4MB", "976"),      // a "B" without "i" is decimal: 4,000,000 bytes
        ],
        bad: &[
            ("0", ERANGE),
            ("2048", ERANGE), // > brw_size 4 MiB = 1024 pages
            ("5M", ERANGE),
            ("512K", ERANGE), // 524288 pages
            ("1048575", ERANGE),
            ("abc", EINVAL),
            ("1Q", EINVAL),
            ("0000000000000000000016", EINVAL), // 22 characters: longer than kernbuf
            ("4m", EINVAL),                     // units are case-sensitive
            ("1.5", EINVAL),                    // no fraction without a unit
        ],
    },
    Param {
        name: "osc.max_dirty_mb",
        // 0 is accepted (every write then goes out synchronously)
        good: &[("0", "0"), ("1", "1"), ("512", "512"), ("2047", "2047")],
        bad: &[("2048", ERANGE), ("abc", EINVAL), ("1M", EINVAL), ("-1", EINVAL)],
    },
    Param {
        name: "osc.short_io_bytes",
        good: &[("0", "0"), ("64", "64"), ("4096", "4096"), ("16K", "16384"), ("-1", "16384")],
        bad: &[("63", ERANGE), ("1048577", ERANGE), ("2M", ERANGE), ("abc", EINVAL)],
    },
    Param {
        name: "osc.checksums",
        good: &[("0", "0"), ("1", "1"), ("off", "0"), ("on", "1"), ("n", "0"), ("Y", "1")],
        bad: &[("maybe", EINVAL), ("2", EINVAL), ("", EINVAL)],
    },
    Param {
        name: "osc.checksum_type",
        good: &[("adler", CKSUM_ADLER), ("t10crc4K", CKSUM_T10), ("crc32c", CKSUM_CRC32C)],
        bad: &[("md5", EINVAL), ("CRC32C", EINVAL), ("", EINVAL)],
    },
    Param {
        name: "osc.resend_count",
        good: &[("0", "0"), ("5", "5")],
        bad: &[("abc", EINVAL), ("-1", EINVAL)],
    },
    Param {
        name: "osc.grant_shrink_interval",
        // kstrtouint(buf, 0): hex and octal too
        good: &[("1", "1"), ("600", "600"), ("0x10", "16")],
        bad: &[("0", ERANGE), ("-5", EINVAL), ("4294967296", ERANGE), ("abc", EINVAL)],
    },
    Param {
        name: "osc.idle_timeout",
        // at most CONNECTION_SWITCH_MAX (50); "debug"/"nodebug" leave the value alone
        good: &[("0", "0"), ("30", "30"), ("50", "50"), ("debug", "50"), ("nodebug", "50")],
        bad: &[("51", ERANGE), ("abc", EINVAL)],
    },
    Param {
        name: "osc.active",
        // kstrtobool
        good: &[("0", "0"), ("1", "1"), ("y", "1"), ("off", "0")],
        bad: &[("2", EINVAL), ("abc", EINVAL)],
    },
    Param {
        name: "osc.checksum_dump",
        good: &[("1", "1"), ("0", "0"), ("on", "1")],
        bad: &[("2", EINVAL), ("abc", EINVAL)],
    },
    Param {
        name: "osc.grant_shrink",
        good: &[("0", "0"), ("1", "1"), ("n", "0")],
        bad: &[("2", EINVAL), ("abc", EINVAL)],
    },
    Param {
        name: "osc.pinger_recov",
        good: &[("0", "0"), ("1", "1"), ("Y", "1")],
        bad: &[("2", EINVAL), ("", EINVAL)],
    },
    // --- llite (128 GiB: max_read_ahead_mb 1024, per file 256, whole 4)
    Param {
        name: "llite.max_read_ahead_mb",
        // MiB by default, rounded up to whole MiB; at most RAM/2 = 65536 MiB
        good: &[("512", "512"), ("1.5", "2"), ("512K", "1"), ("1G", "1024"), ("65536", "65536"), ("0", "0")],
        bad: &[("65537", ERANGE), ("abc", EINVAL), ("123456789012345678901", E2BIG)],
    },
    Param {
        name: "llite.max_read_ahead_per_file_mb",
        good: &[("64", "64"), ("1024", "1024")],
        bad: &[("1025", ERANGE), ("abc", EINVAL)],
    },
    Param {
        name: "llite.max_read_ahead_whole_mb",
        good: &[("2", "2"), ("256", "256")],
        bad: &[("257", ERANGE), ("abc", EINVAL)],
    },
    Param {
        name: "llite.read_ahead_async_file_threshold_mb",
        // kstrtoul(buf, 10): MiB, no unit
        good: &[("16", "16"), ("256", "256"), ("0", "0")],
        bad: &[("257", ERANGE), ("abc", EINVAL), ("16M", EINVAL), ("1.5", EINVAL)],
    },
    Param {
        name: "llite.read_ahead_range_kb",
        good: &[("2048", "2048"), ("4", "4"), ("262144", "262144")],
        bad: &[("0", ERANGE), ("262148", ERANGE), ("abc", EINVAL)],
    },
    Param {
        name: "llite.max_read_ahead_async_active",
        good: &[("1", "1"), ("512", "512"), ("0", "0")],
        bad: &[("513", ERANGE), ("abc", EINVAL)],
    },
    Param {
        name: "llite.checksums",
        good: &[("0", "0"), ("1", "1"), ("off", "0")],
        bad: &[("maybe", EINVAL)],
    },
    Param {
        // the same attribute as checksums under another name
        name: "llite.checksum_pages",
        good: &[("0", "0"), ("1", "1"), ("off", "0")],
        bad: &[("maybe", EINVAL)],
    },
    Param {
        name: "llite.fast_read",
        good: &[("0", "0"), ("1", "1")],
        bad: &[("maybe", EINVAL)],
    },
    Param {
        name: "llite.statahead_max",
        // above LL_SA_RPC_MAX (512) the write succeeds and changes nothing
        good: &[("0", "0"), ("64", "64"), ("512", "512"), ("513", "512")],
        bad: &[("abc", EINVAL)],
    },
    Param {
        name: "llite.max_cached_mb",
        // "N", "NM" or "max_cached_mb: N", MiB by default; raised to at least 64 MiB; <= RAM
        good: &[("4096", "4096"), ("max_cached_mb: 8192", "8192"), ("2G", "2048"), ("10", "64"), ("8GB", "7629")],
        bad: &[("131073", ERANGE), ("abc", EINVAL), ("2g", EINVAL)],
    },
    // --- mdc
    Param {
        name: "mdc.max_rpcs_in_flight",
        // kstrtouint(buf, 10); 2..512 for an MDC
        good: &[("2", "2"), ("512", "512"), ("16", "16")],
        bad: &[("1", ERANGE), ("0", ERANGE), ("513", ERANGE), ("abc", EINVAL), ("0x10", EINVAL)],
    },
    Param {
        name: "mdc.max_mod_rpcs_in_flight",
        // 1..max_rpcs_in_flight-1 (default rif 8)
        good: &[("1", "1"), ("7", "7")],
        bad: &[("0", ERANGE), ("8", ERANGE), ("abc", EINVAL)],
    },
    // --- the global /sys/fs/lustre/max_dirty_mb
    Param { name: "max_dirty_mb", good: &[("1024", "1024"), ("64", "64")], bad: &[("abc", EINVAL), ("1M", EINVAL)] },
];

/// Writable files whose write is an action rather than a value; tested below.
const ACTIONS: &[&str] = &[
    "osc.cur_grant_bytes",
    "osc.osc_cached_mb",
    "osc.rpc_stats",
    "osc.osc_stats",
    "osc.stats",
    "llite.read_ahead_stats",
    "llite.stats",
];

/// `osc.testfs-OST0000-osc-ffff...max_rpcs_in_flight` -> `osc.max_rpcs_in_flight`.
fn short_name(full: &str) -> String {
    match full.split_once('.') {
        Some((kind, rest)) => format!("{kind}.{}", rest.rsplit_once('.').expect("dev.param").1),
        None => full.to_string(),
    }
}

#[test]
fn every_writable_parameter_is_covered() {
    let sim = idle();
    for p in sim.list_params(0).into_iter().filter(|p| p.writable) {
        let short = short_name(&p.name);
        assert!(
            PARAMS.iter().any(|x| x.name == short) || ACTIONS.contains(&short.as_str()),
            "writable {} has no test",
            p.name
        );
    }
}

#[test]
fn good_values_are_accepted_and_read_back() {
    for p in PARAMS {
        let mut sim = idle();
        for &(input, shown) in p.good {
            assert_eq!(set(&mut sim, p.name, input), Ok(()), "{} = {input:?}", p.name);
            assert_eq!(value(&sim, p.name), shown, "{} = {input:?}", p.name);
        }
    }
}

#[test]
fn bad_values_are_rejected_with_lustres_errno_and_change_nothing() {
    for p in PARAMS {
        for &(input, errno) in p.bad {
            let mut sim = idle();
            let before: Vec<String> = sim.list_params(0).iter().map(|f| sim.get_param(0, &f.name).unwrap()).collect();
            assert_eq!(set(&mut sim, p.name, input), Err(errno), "{} = {input:?}", p.name);
            let after: Vec<String> = sim.list_params(0).iter().map(|f| sim.get_param(0, &f.name).unwrap()).collect();
            assert_eq!(before, after, "{} = {input:?} was rejected but changed something", p.name);
        }
    }
}

/// Every device of the kind gets the value through a device-less name, as a scenario tunable.
#[test]
fn set_everywhere_reaches_every_device() {
    let mut sim = Scenario::new().clients(2).build();
    sim.set_everywhere("osc.max_rpcs_in_flight", "0x20").unwrap();
    for c in 0..2 {
        for dev in osc_names(&sim, c) {
            assert_eq!(sim.get_param(c, &format!("osc.{dev}.max_rpcs_in_flight")).unwrap(), "32\n");
        }
    }
    assert_eq!(sim.set_everywhere("osc.max_rpcs_in_flight", "257"), Err(ERANGE));
    assert_eq!(sim.set_everywhere("nosuch.param", "1"), Err(ENOENT));
}

#[test]
fn scenario_tunables_are_checked() {
    let json = Scenario::new().tunable("osc.max_pages_per_rpc", "512K").json();
    let err = Sim::new(pfsim::Config::from_json(&json).unwrap()).err().expect("512K pages must be refused");
    assert!(err.contains("max_pages_per_rpc") && err.contains("Numerical result out of range"), "{err}");
}

/// Every value a scenario lists is the one in force at the start: a write of max_pages_per_rpc
/// calls client_adjust_max_dirty(), which turns a max_dirty_mb of 0 into 2000 and raises a
/// smaller one, so the scenario's max_dirty_mb is applied after it (in name order it came first).
#[test]
fn scenario_tunables_are_all_in_force_whatever_their_names_order() {
    for (dirty, mppr) in [("0", "256"), ("16", "1024")] {
        let sim = Scenario::new().tunable("osc.max_dirty_mb", dirty).tunable("osc.max_pages_per_rpc", mppr).build();
        assert_eq!(value(&sim, "osc.max_dirty_mb"), dirty);
        assert_eq!(value(&sim, "osc.max_pages_per_rpc"), mppr);
    }
    // max_mod_rpcs_in_flight must stay below max_rpcs_in_flight, whose write can lower it
    for (rif, modify) in [("16", "8"), ("4", "3")] {
        let sim =
            Scenario::new().tunable("mdc.max_mod_rpcs_in_flight", modify).tunable("mdc.max_rpcs_in_flight", rif).build();
        assert_eq!(value(&sim, "mdc.max_rpcs_in_flight"), rif);
        assert_eq!(value(&sim, "mdc.max_mod_rpcs_in_flight"), modify);
    }
}

#[test]
fn defaults_are_lustres() {
    let sim = idle();
    let expect = [
        ("osc.max_rpcs_in_flight", "8"),
        ("osc.max_pages_per_rpc", "1024"),
        ("osc.max_dirty_mb", "2000"),
        ("osc.short_io_bytes", "16384"),
        ("osc.checksums", "1"),
        ("osc.checksum_type", CKSUM_CRC32C),
        ("osc.resend_count", "10"),
        ("osc.grant_shrink_interval", "1200"),
        ("osc.idle_timeout", "20"),
        ("osc.active", "1"),
        ("osc.checksum_dump", "0"),
        ("osc.grant_shrink", "1"),
        ("osc.pinger_recov", "1"),
        ("osc.destroys_in_flight", "0"),
        ("llite.checksum_pages", "1"),
        ("osc.cur_dirty_bytes", "0"),
        // 2 x (4 MiB brw_size + 24 KiB extent tax), the real idle value
        ("osc.cur_grant_bytes", "8437760"),
        ("llite.max_read_ahead_mb", "1024"),
        ("llite.max_read_ahead_per_file_mb", "256"),
        ("llite.max_read_ahead_whole_mb", "4"),
        ("llite.read_ahead_async_file_threshold_mb", "256"),
        ("llite.max_read_ahead_async_active", "8"),
        ("llite.read_ahead_range_kb", "1024"),
        ("llite.max_cached_mb", "65536"),
        ("mdc.max_rpcs_in_flight", "8"),
        ("mdc.max_mod_rpcs_in_flight", "7"),
        ("max_dirty_mb", "65536"),
    ];
    for (name, shown) in expect {
        assert_eq!(value(&sim, name), shown, "{name}");
    }
    // the server's brw_size bounds max_pages_per_rpc: 16 MiB -> 4096 pages
    let mut big = Scenario::new().brw_size(16 * MIB).build();
    assert_eq!(value(&big, "osc.max_pages_per_rpc"), "4096");
    assert_eq!(set(&mut big, "osc.max_pages_per_rpc", "16M"), Ok(()));
    assert_eq!(set(&mut big, "osc.max_pages_per_rpc", "4097"), Err(ERANGE));
    // small clients: read-ahead is RAM/32, its per-file share a quarter of that
    let small = idle_with_ram(4 * GIB);
    assert_eq!(value(&small, "llite.max_read_ahead_mb"), "128");
    assert_eq!(value(&small, "llite.max_read_ahead_per_file_mb"), "32");
    assert_eq!(value(&small, "osc.max_dirty_mb"), "512");
}

/// client_setup(): max_rpcs_in_flight is 2 up to 128 MiB of RAM, 3 up to 256 MiB, 4 up to 512 MiB.
#[test]
fn small_clients_default_max_rpcs_in_flight() {
    for (mib, rif) in [(128, "2"), (256, "3"), (512, "4"), (1024, "8")] {
        assert_eq!(value(&idle_with_ram(mib * MIB), "osc.max_rpcs_in_flight"), rif, "{mib} MiB client");
    }
}

/// /sys/fs/lustre/max_dirty_mb (max_dirty_mb_store, obdclass): kstrtoul, then below 4 MiB or
/// above 90% of RAM is EINVAL (not ERANGE).
#[test]
fn global_max_dirty_mb_range() {
    let mut sim = idle();
    assert_eq!(set(&mut sim, "max_dirty_mb", "4"), Ok(()));
    for bad in ["0", "3", "117965", "131072"] {
        assert_eq!(set(&mut sim, "max_dirty_mb", bad), Err(EINVAL), "max_dirty_mb = {bad}");
    }
    assert_eq!(value(&sim, "max_dirty_mb"), "4");
}

#[test]
fn read_only_files_refuse_writes_with_eacces() {
    let mut sim = idle();
    let read_only: Vec<String> = sim.list_params(0).into_iter().filter(|p| !p.writable).map(|p| p.name).collect();
    for short in ["osc.import", "osc.state", "osc.cur_dirty_bytes"] {
        assert!(read_only.contains(&full_name(&sim, short)), "{short} should be read-only");
    }
    for name in &read_only {
        let before = sim.get_param(0, name).unwrap();
        assert_eq!(sim.set_param(0, name, "0"), Err(EACCES), "{name}");
        assert_eq!(sim.get_param(0, name).unwrap(), before, "{name}");
    }
}

#[test]
fn aliases_show_the_same_attribute() {
    let mut sim = idle();
    assert_eq!(get(&sim, "osc.conn_uuid"), get(&sim, "osc.ost_conn_uuid"));
    assert_eq!(set(&mut sim, "llite.checksum_pages", "0"), Ok(()));
    assert_eq!(value(&sim, "llite.checksums"), "0");
    assert_eq!(value(&sim, "osc.checksums"), "0"); // pushed to the OSCs as checksums does
    // the mount's client UUID, as its llite instance and every OSC of it print it
    let uuid = value(&sim, "llite.uuid");
    let groups: Vec<usize> = uuid.split('-').map(str::len).collect();
    assert_eq!(groups, [8, 4, 4, 4, 12], "{uuid}");
    assert!(uuid.chars().all(|ch| ch == '-' || ch.is_ascii_hexdigit()), "{uuid}");
    for osc in osc_names(&sim, 0) {
        assert_eq!(sim.get_param(0, &format!("osc.{osc}.uuid")).unwrap(), format!("{uuid}\n"));
    }
    assert_eq!(value(&idle(), "llite.uuid"), uuid); // the same seed, the same UUID
}

#[test]
fn connect_flags_prints_both_words_then_one_name_a_line() {
    // lprocfs_connect_flags_seq_show() (lustre-client.md §B.4); the real 2.10 client's file has
    // the same shape (flags2=0x0 there)
    let sim = idle();
    let text = sim.get_param(0, &full_name(&sim, "osc.connect_flags")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..2], ["flags=0xa0425af2e3440478", "flags2=0x148202"]);
    assert_eq!(lines[2..], pfsim::stats::DEFAULT_OSC_CONNECT_FLAG_NAMES);
    assert!(text.ends_with("reply_mbits\n"));
}

#[test]
fn unknown_names_are_enoent() {
    let mut sim = idle();
    let osc = osc_names(&sim, 0).remove(0);
    let llite = sim.llite_name(0);
    for name in [
        format!("osc.{osc}.no_such_param"),
        "osc.testfs-OST9999-osc-ffff880000000000.max_rpcs_in_flight".to_string(),
        format!("llite.{osc}.statahead_max"),
        format!("llite.{llite}.bogus"),
        "mdc.wrong-MDT0000-mdc-0000000000000000.max_rpcs_in_flight".to_string(),
        "lov.x.stripesize".to_string(),
        "max_dirty".to_string(),
        "".to_string(),
    ] {
        assert_eq!(sim.get_param(0, &name), Err(ENOENT), "get {name:?}");
        assert_eq!(sim.set_param(0, &name, "1"), Err(ENOENT), "set {name:?}");
    }
    // a client that does not exist
    assert_eq!(sim.get_param(1, &format!("osc.{osc}.max_rpcs_in_flight")), Err(ENOENT));
    assert_eq!(sim.set_param(1, &format!("osc.{osc}.max_rpcs_in_flight"), "8"), Err(ENOENT));
}

// ------------------------------------------------------------------ couplings

/// Interdependent llite limits: per-file <= total, whole-file and async threshold <= per-file.
#[test]
fn read_ahead_limits_are_checked_against_each_other() {
    let mut sim = idle();
    assert_eq!(set(&mut sim, "llite.max_read_ahead_mb", "64"), Ok(()));
    assert_eq!(set(&mut sim, "llite.max_read_ahead_per_file_mb", "65"), Err(ERANGE));
    assert_eq!(set(&mut sim, "llite.max_read_ahead_per_file_mb", "16"), Ok(()));
    assert_eq!(set(&mut sim, "llite.max_read_ahead_whole_mb", "17"), Err(ERANGE));
    assert_eq!(set(&mut sim, "llite.read_ahead_async_file_threshold_mb", "17"), Err(ERANGE));
    assert_eq!(set(&mut sim, "llite.read_ahead_range_kb", "16388"), Err(ERANGE));
    assert_eq!(set(&mut sim, "llite.max_read_ahead_whole_mb", "16"), Ok(()));
    assert_eq!(set(&mut sim, "llite.read_ahead_range_kb", "16384"), Ok(()));
    assert_eq!(value(&sim, "llite.max_read_ahead_whole_mb"), "16");
    // max_read_ahead_mb bounds max_cached_mb's report of it
    assert_eq!(field(&get(&sim, "llite.max_cached_mb"), "max_read_ahead_mb"), "64");
}

#[test]
fn mdc_max_rpcs_in_flight_pulls_max_mod_rpcs_down() {
    let mut sim = idle();
    assert_eq!(set(&mut sim, "mdc.max_rpcs_in_flight", "4"), Ok(()));
    assert_eq!(value(&sim, "mdc.max_mod_rpcs_in_flight"), "3");
    assert_eq!(set(&mut sim, "mdc.max_mod_rpcs_in_flight", "4"), Err(ERANGE));
    assert_eq!(set(&mut sim, "mdc.max_rpcs_in_flight", "16"), Ok(()));
    assert_eq!(value(&sim, "mdc.max_mod_rpcs_in_flight"), "3", "raising rif leaves max_mod alone");
    // the MDT allows 8 modifying RPCs per client (ocd_maxmodrpcs)
    assert_eq!(set(&mut sim, "mdc.max_mod_rpcs_in_flight", "9"), Err(ERANGE));
    assert_eq!(set(&mut sim, "mdc.max_mod_rpcs_in_flight", "8"), Ok(()));
}

/// client_adjust_max_dirty(): setting max_rpcs_in_flight or max_pages_per_rpc raises
/// max_dirty_mb to rif x RPC size, never lowers it, caps it at RAM/8 and rounds up to a MiB.
#[test]
fn rpc_tunables_raise_max_dirty_mb() {
    // 128 GiB: 256 x 4 MiB = 1024 MiB < 2000, unchanged
    let mut sim = idle();
    assert_eq!(set(&mut sim, "osc.max_rpcs_in_flight", "256"), Ok(()));
    assert_eq!(value(&sim, "osc.max_dirty_mb"), "2000");

    // 4 GiB: RAM/8 = 512 MiB caps the default and the raise
    let mut small = idle_with_ram(4 * GIB);
    assert_eq!(value(&small, "osc.max_dirty_mb"), "512");
    assert_eq!(set(&mut small, "osc.max_dirty_mb", "100"), Ok(()));
    assert_eq!(value(&small, "osc.max_dirty_mb"), "100");
    assert_eq!(set(&mut small, "osc.max_rpcs_in_flight", "64"), Ok(()));
    assert_eq!(value(&small, "osc.max_dirty_mb"), "256", "64 x 4 MiB");
    assert_eq!(set(&mut small, "osc.max_rpcs_in_flight", "256"), Ok(()));
    assert_eq!(value(&small, "osc.max_dirty_mb"), "512", "256 x 4 MiB capped at RAM/8");
    assert_eq!(set(&mut small, "osc.max_rpcs_in_flight", "8"), Ok(()));
    assert_eq!(set(&mut small, "osc.max_pages_per_rpc", "1"), Ok(()));
    assert_eq!(value(&small, "osc.max_dirty_mb"), "512", "never lowered");
    // max_dirty_mb itself: below 2048 and at most RAM/4
    assert_eq!(set(&mut small, "osc.max_dirty_mb", "1025"), Err(ERANGE));
    assert_eq!(set(&mut small, "osc.max_dirty_mb", "1024"), Ok(()));

    // rounded up to whole MiB: 255 x 3 pages = 765 pages -> 768 = 3 MiB
    let mut sim = idle();
    assert_eq!(set(&mut sim, "osc.max_dirty_mb", "1"), Ok(()));
    assert_eq!(set(&mut sim, "osc.max_pages_per_rpc", "3"), Ok(()));
    assert_eq!(value(&sim, "osc.max_dirty_mb"), "1", "8 x 3 pages < 1 MiB");
    assert_eq!(set(&mut sim, "osc.max_rpcs_in_flight", "255"), Ok(()));
    assert_eq!(value(&sim, "osc.max_dirty_mb"), "3");

    // 0 counts as "not set": the next adjustment restores the default
    assert_eq!(set(&mut sim, "osc.max_dirty_mb", "0"), Ok(()));
    assert_eq!(value(&sim, "osc.max_dirty_mb"), "0");
    assert_eq!(set(&mut sim, "osc.max_rpcs_in_flight", "8"), Ok(()));
    assert_eq!(value(&sim, "osc.max_dirty_mb"), "2000");
}

/// cur_grant_bytes can only be shrunk (osc_cur_grant_bytes_seq_write()): a number is MiB, a
/// smaller value is taken, a larger one ignored, and the grant never goes below one RPC
/// (osc_shrink_grant_to_target()).
#[test]
fn cur_grant_bytes_only_shrinks() {
    let mut sim = idle();
    // 4194304 MiB is far above the grant: nothing happens
    assert_eq!(set(&mut sim, "osc.cur_grant_bytes", "4194304"), Ok(()));
    assert_eq!(value(&sim, "osc.cur_grant_bytes"), "8437760");
    assert_eq!(set(&mut sim, "osc.cur_grant_bytes", "5"), Ok(()));
    assert_eq!(value(&sim, "osc.cur_grant_bytes"), "5242880");
    assert_eq!(set(&mut sim, "osc.cur_grant_bytes", "8M"), Ok(()));
    assert_eq!(value(&sim, "osc.cur_grant_bytes"), "5242880");
    // one 4 MiB RPC is the floor, however small the value
    for small in ["1M", "0", "4096B"] {
        assert_eq!(set(&mut sim, "osc.cur_grant_bytes", small), Ok(()), "{small}");
        assert_eq!(value(&sim, "osc.cur_grant_bytes"), "4194304", "{small}");
    }
    assert_eq!(set(&mut sim, "osc.max_pages_per_rpc", "256"), Ok(()));
    assert_eq!(set(&mut sim, "osc.cur_grant_bytes", "0"), Ok(()));
    assert_eq!(value(&sim, "osc.cur_grant_bytes"), "1048576", "one 1 MiB RPC");
    assert_eq!(set(&mut sim, "osc.cur_grant_bytes", "abc"), Err(EINVAL));
    assert_eq!(set(&mut sim, "osc.cur_grant_bytes", "1m"), Err(EINVAL));
}

/// A client that has written recently holds more than the connect grant: `client_grant` starts
/// every OSC with it, it can be shrunk as any grant, and above the most an OSC asks for
/// (1,792 MiB - 1) the scenario is refused.
#[test]
fn a_warm_client_starts_with_the_grant_it_was_given() {
    let mut sim = Scenario::new().clients(2).client_grant(GIB).build();
    for client in 0..2 {
        for dev in osc_names(&sim, client) {
            assert_eq!(sim.get_param(client, &format!("osc.{dev}.cur_grant_bytes")).unwrap(), "1073741824\n", "{dev}");
        }
    }
    assert_eq!(set(&mut sim, "osc.cur_grant_bytes", "100"), Ok(()));
    assert_eq!(value(&sim, "osc.cur_grant_bytes"), "104857600");
    let most = pfsim::model::MAX_UNDIRTY;
    assert!(Config::from_json(&Scenario::new().client_grant(most).json()).is_ok());
    let err = Config::from_json(&Scenario::new().client_grant(most + 1).json()).unwrap_err();
    assert!(err.contains("client_grant must be at most 1879048191 bytes"), "{err}");
}

/// With the grant a long run leaves, a writer's first interval is not held back by grant: under
/// the default configuration (4 MiB RPCs, 8 in flight) a client fresh from its connect earns
/// one chunk of grant (8 MiB) per write reply, and writes a third of what a warm one does.
#[test]
fn a_warm_client_writes_its_first_interval_from_its_grant() {
    let written = |grant: Option<u64>| {
        let mut s = Scenario::new().duration_ns(SEC / 2).job(Job::new("filebench.randomwrite", MIB).filesize(GIB));
        if let Some(g) = grant {
            s = s.client_grant(g);
        }
        s.run().totals().app_write_bytes
    };
    let (cold, warm) = (written(None), written(Some(GIB)));
    assert!(warm > 2 * cold, "cold {cold} B, warm {warm} B");
}

#[test]
fn osc_cached_mb_accepts_a_shrink_request() {
    let mut sim = idle();
    for v in ["0", "used_mb: 0", "used_mb:16", "16M"] {
        assert_eq!(set(&mut sim, "osc.osc_cached_mb", v), Ok(()), "{v:?}");
    }
    assert_eq!(set(&mut sim, "osc.osc_cached_mb", "abc"), Err(EINVAL));
    assert_eq!(field(&get(&sim, "osc.osc_cached_mb"), "used_mb"), "0");
}

/// `used_mb` of the `osc_cached_mb` of OSC `dev` of client 0.
fn osc_used_mb(sim: &Sim, dev: &str) -> u64 {
    field(&sim.get_param(0, &format!("osc.{dev}.osc_cached_mb")).unwrap(), "used_mb").parse().unwrap()
}

/// Writing osc_cached_mb shrinks that OSC's share of the page cache at once, and no other's.
#[test]
fn osc_cached_mb_shrinks_that_oscs_cache() {
    let mut sim = busy(400);
    let (_, dev) = busiest_osc(&sim);
    let others: Vec<String> = osc_names(&sim, 0).into_iter().filter(|d| *d != dev).collect();
    let before: Vec<u64> = others.iter().map(|d| osc_used_mb(&sim, d)).collect();
    assert!(osc_used_mb(&sim, &dev) > 2, "the busiest OSC caches {} MiB", osc_used_mb(&sim, &dev));
    sim.set_param(0, &format!("osc.{dev}.osc_cached_mb"), "used_mb: 2").unwrap();
    assert!(osc_used_mb(&sim, &dev) <= 2, "{} MiB left", osc_used_mb(&sim, &dev));
    let after: Vec<u64> = others.iter().map(|d| osc_used_mb(&sim, d)).collect();
    assert_eq!(before, after, "the other OSCs keep their pages");
}

/// Lowering llite max_cached_mb drops pages at once: used_mb never exceeds the limit.
#[test]
fn lowering_max_cached_mb_shrinks_the_cache_at_once() {
    let mut sim = busy(400);
    let used = |sim: &Sim| -> u64 { field(&get(sim, "llite.max_cached_mb"), "used_mb").parse().unwrap() };
    assert!(used(&sim) > 64, "the client caches {} MiB", used(&sim));
    assert_eq!(set(&mut sim, "llite.max_cached_mb", "64"), Ok(()));
    assert!(used(&sim) <= 64, "{} MiB cached under a 64 MiB limit", used(&sim));
    assert_eq!(field(&get(&sim, "llite.max_cached_mb"), "unused_mb"), (64 - used(&sim)).to_string());
}

/// llite checksums is pushed to every OSC of the mount (KEY_CHECKSUM).
#[test]
fn llite_checksums_reaches_the_oscs() {
    let mut sim = idle();
    assert_eq!(set(&mut sim, "llite.checksums", "0"), Ok(()));
    for dev in osc_names(&sim, 0) {
        assert_eq!(sim.get_param(0, &format!("osc.{dev}.checksums")).unwrap(), "0\n", "{dev}");
    }
    // an OSC may still be set on its own afterwards
    assert_eq!(set(&mut sim, "osc.checksums", "1"), Ok(()));
    assert_eq!(value(&sim, "llite.checksums"), "0");
}

// ------------------------------------------------------------------ clearing statistics

/// A client that has done some reading and writing on every OST.
fn busy(secs_ms: u64) -> Sim {
    let sc = Scenario::new()
        .duration_ns(secs_ms * MS)
        .job(Job::new("filebench.seqread", MIB).stripes(8, MIB))
        .job(Job::new("filebench.seqwrite", MIB).stripes(8, MIB).fsync(true));
    let mut sim = sc.build();
    sim.run_until(200 * MS);
    sim
}

/// `start_time` of a stats header as printed (`%llu.%09lu`), for the current time.
fn now_text(sim: &Sim) -> String {
    let ns = sim.cfg.start_epoch_ns + sim.now;
    format!("{}.{:09}", ns / SEC, ns % SEC)
}

/// The `start_time` of a stats header, with (`rpc_stats`, `osc_stats`) or without a colon.
fn header_start(text: &str) -> String {
    let line = text.lines().find(|l| l.starts_with("start_time")).unwrap_or_else(|| panic!("no start_time in {text:?}"));
    line.split_whitespace().nth(1).expect("time").to_string()
}

/// The OSC of client 0 that did the most reads.
fn busiest_osc(sim: &Sim) -> (usize, String) {
    let oi = sim.clients[0].oscs.iter().map(|&o| o as usize).max_by_key(|&o| sim.oscs[o].osc_read_bytes).unwrap();
    (oi, sim.oscs[oi].name.clone())
}

#[test]
fn writing_stats_clears_the_counters() {
    let mut sim = busy(400);
    let (_, dev) = busiest_osc(&sim);
    let name = format!("osc.{dev}.stats");
    let before = sim.get_param(0, &name).unwrap();
    for counter in ["req_waittime", "req_active", "read_bytes", "write_bytes", "ost_read", "ost_write"] {
        assert!(stats_counter(&before, counter).is_some(), "no {counter} in\n{before}");
    }
    sim.set_param(0, &name, "clear").unwrap();
    let cleared = sim.get_param(0, &name).unwrap();
    assert_eq!(cleared.lines().count(), 3, "only the header is left:\n{cleared}");
    assert_eq!(header_start(&cleared), now_text(&sim));
    // counting resumes from zero: read_bytes sums exactly the bytes of reads replied since
    let (oi, _) = busiest_osc(&sim);
    let read_at_clear = sim.oscs[oi].osc_read_bytes;
    sim.run_until(300 * MS);
    let after = sim.get_param(0, &name).unwrap();
    let (_, sum_after) = stats_counter(&after, "read_bytes").expect("reads after the clear");
    assert_eq!(sum_after as u64, sim.oscs[oi].osc_read_bytes - read_at_clear);
    assert_eq!(header_start(&after), header_start(&cleared));

    // llite stats, read_ahead_stats and osc_stats the same way
    let llite = sim.llite_name(0);
    for file in [format!("llite.{llite}.stats"), format!("llite.{llite}.read_ahead_stats"), format!("osc.{dev}.osc_stats")] {
        sim.run_until(sim.now + 10 * MS);
        sim.set_param(0, &file, "1").unwrap();
        let text = sim.get_param(0, &file).unwrap();
        assert_eq!(header_start(&text), now_text(&sim), "{file}");
        if !file.ends_with("osc_stats") {
            assert_eq!(text.lines().count(), 3, "{file} still has counters:\n{text}");
        }
    }
}

#[test]
fn a_clear_leaves_the_generic_stats_start_time_at_zero_in_2_15_0() {
    // 2.15.0 and 2.15.1 never assign ls_init: their generic stats files print start_time 0, and
    // a clear zeroes the counters but not that (lustre-client.md §0); rpc_stats and osc_stats
    // take the clear's time (on those releases' monotonic clock; their colon follows the padding)
    let mut sim = Scenario::new()
        .version("2.15.0")
        .duration_ns(400 * MS)
        .job(Job::new("filebench.seqread", MIB).stripes(8, MIB))
        .build();
    sim.run_until(200 * MS);
    let (_, dev) = busiest_osc(&sim);
    let llite = sim.llite_name(0);
    for file in [format!("osc.{dev}.stats"), format!("llite.{llite}.stats"), format!("llite.{llite}.read_ahead_stats")] {
        let before = sim.get_param(0, &file).unwrap();
        assert_eq!(header_start(&before), "0.000000000", "{file}");
        sim.set_param(0, &file, "clear").unwrap();
        let cleared = sim.get_param(0, &file).unwrap();
        assert_eq!(cleared.lines().count(), 3, "{file} still has counters:\n{cleared}");
        assert_eq!(header_start(&cleared), "0.000000000", "{file}");
    }
    for file in [format!("osc.{dev}.rpc_stats"), format!("osc.{dev}.osc_stats")] {
        sim.set_param(0, &file, "clear").unwrap();
        let text = sim.get_param(0, &file).unwrap();
        let start = text.lines().find(|l| l.starts_with("start_time")).expect("start_time");
        assert!(start.ends_with(" secs.nsecs") && !start.contains(" 0.000000000"), "{file}: {start}");
    }
}

#[test]
fn writing_rpc_stats_clears_the_histograms() {
    let mut sim = busy(400);
    let (oi, dev) = busiest_osc(&sim);
    let name = format!("osc.{dev}.rpc_stats");
    let before = parse_rpc_stats(&sim.get_param(0, &name).unwrap());
    assert_eq!(before.start_time, "0.000000000", "never cleared: cl_stats_init is 0");
    assert!(row_sums(before.pages_per_rpc()).0 > 0);
    sim.set_param(0, &name, "0").unwrap();
    let cleared = parse_rpc_stats(&sim.get_param(0, &name).unwrap());
    assert_eq!(cleared.start_time, now_text(&sim));
    for (title, rows) in &cleared.sections {
        assert_eq!(rows.len(), 1, "{title}: one empty row");
        assert_eq!(row_sums(rows), (0, 0), "{title}");
    }
    // the instantaneous lines are not cleared
    let o = &sim.oscs[oi];
    assert_eq!((cleared.read_in_flight, cleared.write_in_flight), (o.r_in_flight as u64, o.w_in_flight as u64));
    // afterwards the rows count exactly the RPCs sent since the clear
    let sent = |sim: &Sim| {
        let o = &sim.oscs[oi];
        (
            o.stat(OscCtr::ReadBytes).count + o.r_in_flight as u64,
            o.stat(OscCtr::WriteBytes).count + o.w_in_flight as u64,
        )
    };
    let at_clear = sent(&sim);
    sim.run_until(350 * MS);
    let now = sent(&sim);
    let after = parse_rpc_stats(&sim.get_param(0, &name).unwrap());
    let expect = (now.0 - at_clear.0, now.1 - at_clear.1);
    assert!(expect.0 > 0, "no reads after the clear");
    for (title, rows) in &after.sections {
        assert_eq!(row_sums(rows), expect, "{title}");
    }
    assert_eq!(after.start_time, cleared.start_time);
}

// ------------------------------------------------------------------ tunables on a running workload

/// A new max_pages_per_rpc applies to RPCs formed after the write: a sequential reader's RPCs
/// shrink from 1024 pages to 16. (Read-ahead is kept to 8 MiB per file so that little is queued,
/// in old-size pieces, when the value changes.)
#[test]
fn max_pages_per_rpc_change_applies_to_new_read_rpcs() {
    let sc = Scenario::new()
        .duration_ns(SEC)
        .tunable("llite.max_read_ahead_per_file_mb", "8")
        .job(Job::new("filebench.seqread", MIB).filesize(4 * GIB));
    let mut sim = sc.build();
    sim.run_until(200 * MS);
    let (_, dev) = busiest_osc(&sim);
    let name = format!("osc.{dev}.rpc_stats");
    let rows = |sim: &Sim| parse_rpc_stats(&sim.get_param(0, &name).unwrap()).pages_per_rpc().to_vec();
    let reads_of = |rows: &[HistRow], label: i64| rows.iter().find(|r| r.label == label).map_or(0, |r| r.read);
    let before = rows(&sim);
    assert!(reads_of(&before, 1024) > 0, "1024-page read RPCs expected: {before:?}");
    assert_eq!(reads_of(&before, 16), 0);

    sim.set_everywhere("osc.max_pages_per_rpc", "16").unwrap();
    sim.run_until(400 * MS);
    let after = rows(&sim);
    assert!(reads_of(&after, 16) > 10, "no 16-page RPCs after the change: {after:?}");

    // once what was queued before the change has gone, no read RPC is larger than 16 pages
    sim.set_param(0, &name, "clear").unwrap();
    sim.run_until(600 * MS);
    let later = rows(&sim);
    assert!(reads_of(&later, 16) > 0);
    assert!(later.iter().all(|r| r.label <= 16 || r.read == 0), "{later:?}");
}

/// The same for writes: extents made after the change are at most 16 pages.
#[test]
fn max_pages_per_rpc_change_applies_to_new_write_rpcs() {
    let sc = Scenario::new().duration_ns(SEC).job(Job::new("filebench.seqwrite", MIB).filesize(4 * GIB));
    let mut sim = sc.build();
    sim.run_until(200 * MS);
    let oi = sim.clients[0].oscs.iter().map(|&o| o as usize).max_by_key(|&o| sim.oscs[o].osc_write_bytes).unwrap();
    let name = format!("osc.{}.rpc_stats", sim.oscs[oi].name);
    let rows = |sim: &Sim| parse_rpc_stats(&sim.get_param(0, &name).unwrap()).pages_per_rpc().to_vec();
    let writes_of = |rows: &[HistRow], label: i64| rows.iter().find(|r| r.label == label).map_or(0, |r| r.write);
    assert!(writes_of(&rows(&sim), 1024) > 0, "{:?}", rows(&sim));
    sim.set_everywhere("osc.max_pages_per_rpc", "16").unwrap();
    sim.run_until(400 * MS);
    sim.set_param(0, &name, "clear").unwrap();
    sim.run_until(600 * MS);
    let later = rows(&sim);
    assert!(writes_of(&later, 16) > 0, "{later:?}");
    assert!(later.iter().all(|r| r.label <= 16 || r.write == 0), "{later:?}");
}

/// Lowering max_rpcs_in_flight bounds RPCs sent afterwards; raising it lets more out at once.
#[test]
fn max_rpcs_in_flight_change_applies_to_new_rpcs() {
    let sc = Scenario::new()
        .duration_ns(SEC)
        .tunable("osc.max_pages_per_rpc", "16")
        .tunable("osc.max_rpcs_in_flight", "32")
        .job(Job::new("filebench.seqread", 16 * MIB).filesize(4 * GIB));
    let mut sim = sc.build();
    sim.run_until(100 * MS);
    let (oi, dev) = busiest_osc(&sim);
    let most_in_flight = |sim: &Sim| sim.oscs[oi].stat(OscCtr::ReqActive).max;
    assert!(most_in_flight(&sim) > 8, "the reader should use more than 8 RPCs in flight");
    sim.set_param(0, &format!("osc.{dev}.max_rpcs_in_flight"), "2").unwrap();
    sim.run_until(200 * MS);
    sim.set_param(0, &format!("osc.{dev}.stats"), "clear").unwrap();
    sim.run_until(400 * MS);
    assert!(sim.oscs[oi].stat(OscCtr::ReadBytes).count > 0);
    assert!(most_in_flight(&sim) <= 3, "max_rpcs_in_flight 2 allows 3 in flight, saw {}", most_in_flight(&sim));
    sim.set_param(0, &format!("osc.{dev}.max_rpcs_in_flight"), "32").unwrap();
    sim.run_until(600 * MS);
    assert!(most_in_flight(&sim) > 3, "raising the limit should let more RPCs out");
}

// ------------------------------------------------------------------ what a refusal says

/// The first "A to B" of a `valid_values` text, as numbers.
fn bounds_in(text: &str) -> Option<(u64, u64)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    words.windows(3).find_map(|w| Some((w[0].parse().ok()?, w[2].parse().ok()?)).filter(|_| w[1] == "to"))
}

/// What a refusal says is valid is what the parameter accepts: its bounds are accepted and the
/// values just outside them refused, for every writable tunable that refuses values, on a large
/// client and on one whose RAM sets the bounds.
#[test]
fn refusals_say_what_is_valid() {
    for ram in [128u64 << 30, 1 << 30] {
        refusals_say_what_is_valid_on(ram);
    }
}

fn refusals_say_what_is_valid_on(ram: u64) {
    let idle = || idle_with_ram(ram);
    let mut checked = 0;
    for p in PARAMS.iter().filter(|p| p.bad.iter().any(|&(_, e)| e == ERANGE || e == EINVAL)) {
        let sim = idle();
        let (kind, param) = p.name.split_once('.').unwrap_or(("", p.name));
        let valid = sim.valid_values(0, kind, param).unwrap_or_else(|| panic!("{}: no description", p.name));
        let Some((lo, hi)) = bounds_in(&valid) else { continue };
        // a KiB parameter counts whole pages: one page more is the next value it can refuse
        let step = if valid.contains("KiB") { 4 } else { 1 };
        for (v, ok) in [(lo, true), (hi, true), (hi + step, false)].into_iter().chain((lo > 0).then(|| (lo - 1, false))) {
            let mut sim = idle();
            let got = set(&mut sim, p.name, &v.to_string());
            assert_eq!(got.is_ok(), ok, "{} = {v} ({valid}, RAM {ram}): {got:?}", p.name);
            if let Err(e) = got {
                let said = sim.refusal(0, &full_name(&sim, p.name), e);
                assert!(said.ends_with(&format!("; valid: {valid}")), "{said}");
            }
        }
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} parameters had bounds");
}

#[test]
fn scenario_tunable_errors_say_what_is_valid() {
    let json = Scenario::new().tunable("osc.max_rpcs_in_flight", "300").json();
    let err = Sim::new(pfsim::Config::from_json(&json).unwrap()).err().expect("300 must be refused");
    assert_eq!(err, "tunable osc.max_rpcs_in_flight=300: Numerical result out of range; valid: 1 to 256");
}

/// An OSC that never sent an RPC shows what connecting left in `stats` (its counters are only
/// stored once they change) and clears like any other.
#[test]
fn an_idle_oscs_counters_are_those_of_its_connect() {
    let mut sim = idle();
    let name = full_name(&sim, "osc.stats");
    let text = sim.get_param(0, &name).unwrap();
    for counter in ["req_waittime", "req_active", "ost_connect"] {
        assert!(stats_counter(&text, counter).is_some(), "no {counter} in\n{text}");
    }
    assert_eq!(stats_counter(&text, "ost_connect"), Some((1, 400)));
    assert!(stats_counter(&text, "ost_write").is_none());
    sim.run_until(5 * MS);
    sim.set_param(0, &name, "clear").unwrap();
    assert_eq!(sim.get_param(0, &name).unwrap().lines().count(), 3);
    let rpc = full_name(&sim, "osc.rpc_stats");
    sim.set_param(0, &rpc, "0").unwrap();
    assert_eq!(parse_rpc_stats(&sim.get_param(0, &rpc).unwrap()).start_time, now_text(&sim));
}
