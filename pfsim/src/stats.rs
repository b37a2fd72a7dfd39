//! Lustre 2.15 client statistics: counters, histograms and their exact text.
//!
//! Everything here reproduces the `seq_printf()` output of the Lustre 2.15
//! client byte for byte (see `docs/lustre-client.md` §0, §1 and §A).  The
//! simulator core owns *when* things are counted; this module owns *what* is
//! kept and *how* it is printed.
//!
//! Times are nanoseconds since an epoch chosen by the caller: wall-clock for
//! 2.15.2+, monotonic (since boot) for 2.15.0/2.15.1, where generic `stats`
//! files also never set their start time (pass `init_ns = 0` there).
#![warn(missing_docs)]

use std::fmt::Write as _;

// ---------------------------------------------------------------------------
// Text style (which 2.15.x release we imitate)
// ---------------------------------------------------------------------------

/// Which 2.15.x text variant to print (see §0 of the reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub enum TextStyle {
    /// 2.15.0 – 2.15.1: header `"%-25s%s "` (colon after the padded field),
    /// monotonic clock, `usec`/`sec` units.
    V2_15_0,
    /// 2.15.2 – 2.15.6: header `"%-25s "` with the colon inside the field,
    /// wall clock, `usec`/`sec` units.
    V2_15_5,
    /// 2.15.7 – 2.15.8: like 2.15.5 but units are spelled `usecs`/`secs`.
    V2_15_7,
}

impl TextStyle {
    /// Parses a release string such as `"2.15.5"` into the style it prints.
    pub fn parse(s: &str) -> Option<TextStyle> {
        match s {
            "2.15.0" | "2.15.1" => Some(TextStyle::V2_15_0),
            "2.15.2" | "2.15.3" | "2.15.4" | "2.15.5" | "2.15.6" => Some(TextStyle::V2_15_5),
            "2.15.7" | "2.15.8" => Some(TextStyle::V2_15_7),
            _ => None,
        }
    }

    /// 2.15.7 derives unit names from the counter type and pluralises them.
    fn plural_units(self) -> bool {
        self == TextStyle::V2_15_7
    }
}

/// Unit shown in `[...]` after a counter's sample count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Microseconds: `usec` (2.15.0–2.15.6) or `usecs` (2.15.7+).
    Usecs,
    /// Seconds: `sec` or `secs` (2.15.7+).
    Secs,
    /// Requests: `reqs` in every release.
    Reqs,
    /// Bytes: `bytes` in every release.
    Bytes,
    /// Pages: `pages` in every release.
    Pages,
}

impl Unit {
    /// The unit string as printed by the given release.
    pub fn text(self, style: TextStyle) -> &'static str {
        match (self, style.plural_units()) {
            (Unit::Usecs, false) => "usec",
            (Unit::Usecs, true) => "usecs",
            (Unit::Secs, false) => "sec",
            (Unit::Secs, true) => "secs",
            (Unit::Reqs, _) => "reqs",
            (Unit::Bytes, _) => "bytes",
            (Unit::Pages, _) => "pages",
        }
    }
}

/// Which fields a counter line shows (the `LPROCFS_CNTR_*` config bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fields {
    /// `name N samples [unit]` only.
    CountOnly,
    /// `name N samples [unit] min max sum sumsq` (AVGMINMAX | STDDEV).
    Full,
}

// ---------------------------------------------------------------------------
// Header and counter lines
// ---------------------------------------------------------------------------

/// Splits nanoseconds into the `%llu.%09lu` form of a `timespec64`.
fn timespec(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// `lprocfs_stats_header()`: the three `snapshot_time` / `start_time` /
/// `elapsed_time` lines with ` secs.nsecs` units.
///
/// `colon` selects the `rpc_stats`/`osc_stats` form (`snapshot_time:`); the
/// generic `stats` files use the no-colon form, which looks the same in every
/// release.  `elapsed_time` is `now - init`, saturating at zero.
pub fn stats_header(style: TextStyle, now_ns: u64, init_ns: u64, colon: bool) -> String {
    let rows = [
        ("snapshot_time", now_ns),
        ("start_time", init_ns),
        ("elapsed_time", now_ns.saturating_sub(init_ns)),
    ];
    let colon = if colon { ":" } else { "" };
    let mut out = String::new();
    for (field, ns) in rows {
        let ts = timespec(ns);
        match style {
            // "%-*s%s %llu.%09lu%s\n": the colon follows the padded field.
            TextStyle::V2_15_0 => {
                let _ = writeln!(out, "{field:<25}{colon} {ts} secs.nsecs");
            }
            // "%s%-*s %llu.%09lu%s\n": the colon is part of the padded field.
            TextStyle::V2_15_5 | TextStyle::V2_15_7 => {
                let padded = format!("{field}{colon}");
                let _ = writeln!(out, "{padded:<25} {ts} secs.nsecs");
            }
        }
    }
    out
}

/// One `lprocfs_stats_seq_show()` line; nothing for a zero-count counter.
///
/// `sumsq` is a signed 64-bit sum printed with `%llu`, so a wrapped value
/// shows as its unsigned reinterpretation.
pub fn counter_line(out: &mut String, name: &str, unit: &str, fields: Fields, c: &Counter) {
    if c.count == 0 {
        return;
    }
    let _ = write!(out, "{name:<25} {} samples [{unit}]", c.count);
    if fields == Fields::Full {
        let _ = write!(out, " {} {} {} {}", c.min, c.max, c.sum, c.sumsq as u64);
    }
    out.push('\n');
}

// ---------------------------------------------------------------------------
// Counter
// ---------------------------------------------------------------------------

/// `LC_MIN_INIT`: the value `lc_min` holds before the first sample.
pub const LC_MIN_INIT: i64 = i64::MAX;

/// lprocfs counter: count, min, max, sum, sumsq (sumsq is a signed 64-bit
/// sum that wraps, printed as unsigned `%llu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counter {
    /// Number of samples (`lc_count`).
    pub count: u64,
    /// Smallest sample; [`LC_MIN_INIT`] while empty.
    pub min: i64,
    /// Largest sample; 0 while empty (the kernel starts it at 0, too).
    pub max: i64,
    /// Sum of samples (wrapping).
    pub sum: i64,
    /// Sum of squared samples (wrapping).
    pub sumsq: i64,
}

impl Default for Counter {
    fn default() -> Self {
        Counter {
            count: 0,
            min: LC_MIN_INIT,
            max: 0,
            sum: 0,
            sumsq: 0,
        }
    }
}

impl Counter {
    /// `lprocfs_counter_add()`: one sample of value `v`.
    pub fn add(&mut self, v: i64) {
        self.count += 1;
        self.sum = self.sum.wrapping_add(v);
        self.sumsq = self.sumsq.wrapping_add(v.wrapping_mul(v));
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Back to the freshly initialised state (`lprocfs_clear_stats()`).
    pub fn clear(&mut self) {
        *self = Counter::default();
    }

    /// `div64_s64(sum, count)`, or 0 for an empty counter.
    fn avg_or_zero(&self) -> i64 {
        if self.count == 0 {
            0
        } else {
            self.sum.wrapping_div(self.count as i64)
        }
    }
}

// ---------------------------------------------------------------------------
// Histograms and osc rpc_stats
// ---------------------------------------------------------------------------

/// `OBD_HIST_MAX`: buckets per histogram.
pub const OBD_HIST_MAX: usize = 32;

/// obd_histogram with OBD_HIST_MAX = 32 buckets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hist {
    /// Bucket counts (`oh_buckets`).
    pub buckets: [u64; OBD_HIST_MAX],
}

/// The kernel's `fls()`: 1-based index of the highest set bit, 0 for 0.
fn fls(v: u32) -> u32 {
    32 - v.leading_zeros()
}

impl Hist {
    /// `lprocfs_oh_tally()`: bucket `v`, clamped to the last bucket.
    pub fn tally(&mut self, v: u32) {
        let i = (v as usize).min(OBD_HIST_MAX - 1);
        self.buckets[i] += 1;
    }

    /// `lprocfs_oh_tally_log2()`: bucket `fls(v - 1)` (0 for `v == 0`), so
    /// bucket `i` holds values in `(2^(i-1), 2^i]`.
    pub fn tally_log2(&mut self, v: u32) {
        let val = if v == 0 {
            0
        } else {
            fls(v - 1).min(OBD_HIST_MAX as u32)
        };
        self.tally(val);
    }

    /// `lprocfs_oh_sum()`: all buckets added up.
    pub fn total(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// Empties every bucket (`lprocfs_oh_clear()`).
    pub fn clear(&mut self) {
        self.buckets = [0; OBD_HIST_MAX];
    }
}

/// The six osc rpc_stats histograms, tallied exactly like `osc_build_rpc()`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RpcHists {
    /// `cl_read_page_hist`: pages per read RPC (log2).
    pub read_pages: Hist,
    /// `cl_write_page_hist`: pages per write RPC (log2).
    pub write_pages: Hist,
    /// `cl_read_rpc_hist`: read RPCs in flight, including the new one.
    pub read_rif: Hist,
    /// `cl_write_rpc_hist`: write RPCs in flight, including the new one.
    pub write_rif: Hist,
    /// `cl_read_offset_hist`: starting object page index + 1 (log2).
    pub read_offset: Hist,
    /// `cl_write_offset_hist`: starting object page index + 1 (log2).
    pub write_offset: Hist,
}

/// Tallies one RPC into a (pages, rpcs-in-flight, offset) histogram triple.
fn tally_rpc(
    pages: &mut Hist,
    rif: &mut Hist,
    offset: &mut Hist,
    page_count: u32,
    in_flight: u32,
    start_page_index: u64,
) {
    pages.tally_log2(page_count);
    rif.tally(in_flight);
    // The kernel passes `starting_offset + 1` as an `unsigned int`, so the
    // page index is truncated to 32 bits.
    offset.tally_log2(start_page_index.wrapping_add(1) as u32);
}

impl RpcHists {
    /// Records a read RPC of `page_count` pages, sent while
    /// `r_in_flight_including_this` reads (this one included) are in flight,
    /// starting at object page `start_page_index`.
    pub fn tally_read(
        &mut self,
        page_count: u32,
        r_in_flight_including_this: u32,
        start_page_index: u64,
    ) {
        tally_rpc(
            &mut self.read_pages,
            &mut self.read_rif,
            &mut self.read_offset,
            page_count,
            r_in_flight_including_this,
            start_page_index,
        );
    }

    /// Records a write RPC; arguments as for [`RpcHists::tally_read`].
    pub fn tally_write(
        &mut self,
        page_count: u32,
        w_in_flight_including_this: u32,
        start_page_index: u64,
    ) {
        tally_rpc(
            &mut self.write_pages,
            &mut self.write_rif,
            &mut self.write_offset,
            page_count,
            w_in_flight_including_this,
            start_page_index,
        );
    }

    /// Empties all six histograms (what a write to `rpc_stats` does).
    pub fn clear(&mut self) {
        *self = RpcHists::default();
    }
}

/// `pct()` from lprocfs_status.h: integer percentage, 0 when `b == 0`.
fn pct(a: u64, b: u64) -> u32 {
    a.wrapping_mul(100).checked_div(b).unwrap_or(0) as u32
}

/// One `\t\t\tread\t\t\twrite` section of rpc_stats.
///
/// Rows run from bucket `first` until both cumulative sums reach their totals
/// (that row is still printed), so trailing empty rows are omitted and two
/// empty histograms print exactly one row.
fn hist_section(
    out: &mut String,
    title: &str,
    read: &Hist,
    write: &Hist,
    first: usize,
    label: fn(usize) -> i64,
) {
    out.push_str("\n\t\t\tread\t\t\twrite\n");
    let _ = writeln!(out, "{title}|       rpcs   % cum %");
    let (read_tot, write_tot) = (read.total(), write.total());
    let (mut read_cum, mut write_cum) = (0u64, 0u64);
    for i in first..OBD_HIST_MAX {
        let (r, w) = (read.buckets[i], write.buckets[i]);
        read_cum += r;
        write_cum += w;
        let _ = writeln!(
            out,
            "{}:\t\t{:>10} {:>3} {:>3}   | {:>10} {:>3} {:>3}",
            label(i),
            r,
            pct(r, read_tot),
            pct(read_cum, read_tot),
            w,
            pct(w, write_tot),
            pct(write_cum, write_tot)
        );
        if read_cum == read_tot && write_cum == write_tot {
            break;
        }
    }
}

/// `1 << i` as a C `int` (row 31 would print negative, as in the kernel).
fn pages_label(i: usize) -> i64 {
    i64::from(1i32 << i)
}

/// The in-flight count itself.
fn rif_label(i: usize) -> i64 {
    i as i64
}

/// `0` for the first row, else `1 << (i - 1)` (a page index).
fn offset_label(i: usize) -> i64 {
    if i == 0 {
        0
    } else {
        i64::from(1i32 << (i - 1))
    }
}

/// `osc_rpc_stats_seq_show()`: the whole `osc.*.rpc_stats` file.
///
/// `init_ns` is `cl_stats_init`, which every 2.15.x release sets only when
/// the file is cleared (0 on a freshly mounted client).
#[allow(clippy::too_many_arguments)]
pub fn rpc_stats_text(
    style: TextStyle,
    now_ns: u64,
    init_ns: u64,
    r_in_flight: u32,
    w_in_flight: u32,
    pending_w_pages: u64,
    pending_r_pages: u64,
    h: &RpcHists,
) -> String {
    let mut out = stats_header(style, now_ns, init_ns, true);
    let _ = writeln!(out, "read RPCs in flight:  {r_in_flight}");
    let _ = writeln!(out, "write RPCs in flight: {w_in_flight}");
    let _ = writeln!(out, "pending write pages:  {pending_w_pages}");
    let _ = writeln!(out, "pending read pages:   {pending_r_pages}");
    hist_section(
        &mut out,
        "pages per rpc         rpcs   % cum % ",
        &h.read_pages,
        &h.write_pages,
        0,
        pages_label,
    );
    hist_section(
        &mut out,
        "rpcs in flight        rpcs   % cum % ",
        &h.read_rif,
        &h.write_rif,
        1,
        rif_label,
    );
    hist_section(
        &mut out,
        "offset                rpcs   % cum % ",
        &h.read_offset,
        &h.write_offset,
        0,
        offset_label,
    );
    out
}

// ---------------------------------------------------------------------------
// Generic lprocfs stats files
// ---------------------------------------------------------------------------

/// `lprocfs_stats_seq_show()`: no-colon header, then one line per non-empty
/// counter in index order.
fn stats_file_text<'a>(
    style: TextStyle,
    now_ns: u64,
    init_ns: u64,
    lines: impl Iterator<Item = (&'static str, Unit, Fields, &'a Counter)>,
) -> String {
    let mut out = stats_header(style, now_ns, init_ns, false);
    for (name, unit, fields, c) in lines {
        counter_line(&mut out, name, unit.text(style), fields, c);
    }
    out
}

// ---------------------------------------------------------------------------
// osc.*.stats (ptlrpc client stats)
// ---------------------------------------------------------------------------

/// The `osc.*.stats` (ptlrpc) counters a client OSC can print, in Lustre's
/// index order: the fixed counters, then the "extra" opcodes, then the
/// `ll_rpc_opcode_table[]` opcodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OscCtr {
    /// `req_waittime` `[usec]`: send → reply processing, every RPC.
    ReqWaittime,
    /// `req_active` `[reqs]`: RPCs in flight on the import at send (incl. this).
    ReqActive,
    /// `req_timeout` `[sec]`: server-side; a client never increments it.
    ReqTimeout,
    /// `ldlm_glimpse_enqueue` `[reqs]`: +1 per glimpse enqueue.
    LdlmGlimpseEnqueue,
    /// `ldlm_extent_enqueue` `[reqs]`: +1 per extent lock enqueue.
    LdlmExtentEnqueue,
    /// `read_bytes` `[bytes]`: bytes transferred per completed read BRW RPC.
    ReadBytes,
    /// `write_bytes` `[bytes]`: bytes transferred per completed write BRW RPC.
    WriteBytes,
    /// `ost_getattr` `[usec]`.
    OstGetattr,
    /// `ost_setattr` `[usec]`.
    OstSetattr,
    /// `ost_read` `[usec]`: latency of each read BRW RPC.
    OstRead,
    /// `ost_write` `[usec]`: latency of each write BRW RPC.
    OstWrite,
    /// `ost_get_info` `[usec]`.
    OstGetInfo,
    /// `ost_connect` `[usec]`.
    OstConnect,
    /// `ost_disconnect` `[usec]`.
    OstDisconnect,
    /// `ost_punch` `[usec]` (truncate).
    OstPunch,
    /// `ost_statfs` `[usec]`.
    OstStatfs,
    /// `ost_sync` `[usec]`.
    OstSync,
    /// `ost_set_info` `[usec]` (e.g. grant shrink).
    OstSetInfo,
    /// `ost_quotactl` `[usec]`.
    OstQuotactl,
    /// `ost_ladvise` `[usec]`.
    OstLadvise,
    /// `ost_fallocate` `[usec]`.
    OstFallocate,
    /// `ost_seek` `[usec]`.
    OstSeek,
    /// `ldlm_cancel` `[usec]`.
    LdlmCancel,
    /// `obd_ping` `[usec]`.
    ObdPing,
}

/// Name and unit of each [`OscCtr`], indexed by `OscCtr as usize`.
const OSC_TABLE: [(OscCtr, &str, Unit); OscCtr::COUNT] = [
    (OscCtr::ReqWaittime, "req_waittime", Unit::Usecs),
    (OscCtr::ReqActive, "req_active", Unit::Reqs),
    (OscCtr::ReqTimeout, "req_timeout", Unit::Secs),
    (
        OscCtr::LdlmGlimpseEnqueue,
        "ldlm_glimpse_enqueue",
        Unit::Reqs,
    ),
    (OscCtr::LdlmExtentEnqueue, "ldlm_extent_enqueue", Unit::Reqs),
    (OscCtr::ReadBytes, "read_bytes", Unit::Bytes),
    (OscCtr::WriteBytes, "write_bytes", Unit::Bytes),
    (OscCtr::OstGetattr, "ost_getattr", Unit::Usecs),
    (OscCtr::OstSetattr, "ost_setattr", Unit::Usecs),
    (OscCtr::OstRead, "ost_read", Unit::Usecs),
    (OscCtr::OstWrite, "ost_write", Unit::Usecs),
    (OscCtr::OstGetInfo, "ost_get_info", Unit::Usecs),
    (OscCtr::OstConnect, "ost_connect", Unit::Usecs),
    (OscCtr::OstDisconnect, "ost_disconnect", Unit::Usecs),
    (OscCtr::OstPunch, "ost_punch", Unit::Usecs),
    (OscCtr::OstStatfs, "ost_statfs", Unit::Usecs),
    (OscCtr::OstSync, "ost_sync", Unit::Usecs),
    (OscCtr::OstSetInfo, "ost_set_info", Unit::Usecs),
    (OscCtr::OstQuotactl, "ost_quotactl", Unit::Usecs),
    (OscCtr::OstLadvise, "ost_ladvise", Unit::Usecs),
    (OscCtr::OstFallocate, "ost_fallocate", Unit::Usecs),
    (OscCtr::OstSeek, "ost_seek", Unit::Usecs),
    (OscCtr::LdlmCancel, "ldlm_cancel", Unit::Usecs),
    (OscCtr::ObdPing, "obd_ping", Unit::Usecs),
];

impl OscCtr {
    /// Number of counters.
    pub const COUNT: usize = 24;

    /// All counters in print order.
    pub const ALL: [OscCtr; OscCtr::COUNT] = {
        let mut all = [OscCtr::ReqWaittime; OscCtr::COUNT];
        let mut i = 0;
        while i < OscCtr::COUNT {
            all[i] = OSC_TABLE[i].0;
            i += 1;
        }
        all
    };

    /// The counter's name as printed.
    pub fn name(self) -> &'static str {
        OSC_TABLE[self as usize].1
    }

    /// The counter's unit kind.
    pub fn unit(self) -> Unit {
        OSC_TABLE[self as usize].2
    }
}

/// `osc.*.stats`: the ptlrpc counters of one OSC plus their start time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OscStats {
    /// Counters indexed by `OscCtr as usize`.
    pub ctr: [Counter; OscCtr::COUNT],
    /// `ls_init`: time of allocation or last clear (ns).
    pub init_ns: u64,
}

impl Default for OscStats {
    fn default() -> Self {
        OscStats::new(0)
    }
}

impl OscStats {
    /// Empty stats whose `start_time` is `init_ns`.
    pub fn new(init_ns: u64) -> Self {
        OscStats {
            ctr: [Counter::default(); OscCtr::COUNT],
            init_ns,
        }
    }

    /// One sample `v` of counter `c`.
    pub fn add(&mut self, c: OscCtr, v: i64) {
        self.ctr[c as usize].add(v);
    }

    /// The current value of counter `c`.
    pub fn get(&self, c: OscCtr) -> &Counter {
        &self.ctr[c as usize]
    }

    /// `lprocfs_clear_stats()`: zero everything, `start_time` = `now_ns`.
    pub fn clear(&mut self, now_ns: u64) {
        *self = OscStats::new(now_ns);
    }

    /// The `osc.*.stats` file; every counter prints min max sum sumsq.
    pub fn text(&self, style: TextStyle, now_ns: u64) -> String {
        let lines = OscCtr::ALL
            .iter()
            .map(|&c| (c.name(), c.unit(), Fields::Full, self.get(c)));
        stats_file_text(style, now_ns, self.init_ns, lines)
    }
}

// ---------------------------------------------------------------------------
// llite.*.stats
// ---------------------------------------------------------------------------

/// The 35 `llite.*.stats` counters, in `LPROC_LL_*` (print) order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LliteCtr {
    /// `read_bytes` `[bytes]`: bytes returned per read syscall.
    ReadBytes,
    /// `write_bytes` `[bytes]`: bytes written per write syscall.
    WriteBytes,
    /// `read` `[usec]`: latency of each read syscall.
    Read,
    /// `write` `[usec]`: latency of each write syscall.
    Write,
    /// `ioctl` `[reqs]`, count only.
    Ioctl,
    /// `open` `[usec]`.
    Open,
    /// `close` `[usec]`.
    Close,
    /// `mmap` `[usec]`.
    Mmap,
    /// `page_fault` `[usec]`.
    PageFault,
    /// `page_mkwrite` `[usec]`.
    PageMkwrite,
    /// `seek` `[usec]`.
    Seek,
    /// `fsync` `[usec]`.
    Fsync,
    /// `readdir` `[usec]`.
    Readdir,
    /// `setattr` `[usec]`.
    Setattr,
    /// `truncate` `[usec]`.
    Truncate,
    /// `flock` `[usec]`.
    Flock,
    /// `getattr` `[usec]`.
    Getattr,
    /// `create` `[usec]`.
    Create,
    /// `link` `[usec]`.
    Link,
    /// `unlink` `[usec]`.
    Unlink,
    /// `symlink` `[usec]`.
    Symlink,
    /// `mkdir` `[usec]`.
    Mkdir,
    /// `rmdir` `[usec]`.
    Rmdir,
    /// `mknod` `[usec]`.
    Mknod,
    /// `rename` `[usec]`.
    Rename,
    /// `statfs` `[usec]`.
    Statfs,
    /// `setxattr` `[usec]`.
    Setxattr,
    /// `getxattr` `[usec]`.
    Getxattr,
    /// `getxattr_hits` `[reqs]`, count only.
    GetxattrHits,
    /// `listxattr` `[usec]`.
    Listxattr,
    /// `removexattr` `[usec]`.
    Removexattr,
    /// `inode_permission` `[usec]`.
    InodePermission,
    /// `fallocate` `[usec]`.
    Fallocate,
    /// `opencount` `[reqs]` with min max sum sumsq.
    Opencount,
    /// `openclosetime` `[usec]`.
    Openclosetime,
}

/// `LPROCFS_TYPE_*` configuration of an llite counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LliteKind {
    /// `LPROCFS_TYPE_BYTES_FULL`: `[bytes] min max sum sumsq`.
    BytesFull,
    /// `LPROCFS_TYPE_LATENCY`: `[usec] min max sum sumsq`.
    Latency,
    /// `LPROCFS_TYPE_REQS`: `[reqs]`, count only.
    Reqs,
    /// `REQS | AVGMINMAX | STDDEV`: `[reqs] min max sum sumsq`.
    ReqsFull,
}

impl LliteKind {
    /// Unit and printed fields for this kind.
    pub fn format(self) -> (Unit, Fields) {
        match self {
            LliteKind::BytesFull => (Unit::Bytes, Fields::Full),
            LliteKind::Latency => (Unit::Usecs, Fields::Full),
            LliteKind::Reqs => (Unit::Reqs, Fields::CountOnly),
            LliteKind::ReqsFull => (Unit::Reqs, Fields::Full),
        }
    }
}

/// Name and kind of each [`LliteCtr`], indexed by `LliteCtr as usize`.
const LLITE_TABLE: [(LliteCtr, &str, LliteKind); LliteCtr::COUNT] = [
    (LliteCtr::ReadBytes, "read_bytes", LliteKind::BytesFull),
    (LliteCtr::WriteBytes, "write_bytes", LliteKind::BytesFull),
    (LliteCtr::Read, "read", LliteKind::Latency),
    (LliteCtr::Write, "write", LliteKind::Latency),
    (LliteCtr::Ioctl, "ioctl", LliteKind::Reqs),
    (LliteCtr::Open, "open", LliteKind::Latency),
    (LliteCtr::Close, "close", LliteKind::Latency),
    (LliteCtr::Mmap, "mmap", LliteKind::Latency),
    (LliteCtr::PageFault, "page_fault", LliteKind::Latency),
    (LliteCtr::PageMkwrite, "page_mkwrite", LliteKind::Latency),
    (LliteCtr::Seek, "seek", LliteKind::Latency),
    (LliteCtr::Fsync, "fsync", LliteKind::Latency),
    (LliteCtr::Readdir, "readdir", LliteKind::Latency),
    (LliteCtr::Setattr, "setattr", LliteKind::Latency),
    (LliteCtr::Truncate, "truncate", LliteKind::Latency),
    (LliteCtr::Flock, "flock", LliteKind::Latency),
    (LliteCtr::Getattr, "getattr", LliteKind::Latency),
    (LliteCtr::Create, "create", LliteKind::Latency),
    (LliteCtr::Link, "link", LliteKind::Latency),
    (LliteCtr::Unlink, "unlink", LliteKind::Latency),
    (LliteCtr::Symlink, "symlink", LliteKind::Latency),
    (LliteCtr::Mkdir, "mkdir", LliteKind::Latency),
    (LliteCtr::Rmdir, "rmdir", LliteKind::Latency),
    (LliteCtr::Mknod, "mknod", LliteKind::Latency),
    (LliteCtr::Rename, "rename", LliteKind::Latency),
    (LliteCtr::Statfs, "statfs", LliteKind::Latency),
    (LliteCtr::Setxattr, "setxattr", LliteKind::Latency),
    (LliteCtr::Getxattr, "getxattr", LliteKind::Latency),
    (LliteCtr::GetxattrHits, "getxattr_hits", LliteKind::Reqs),
    (LliteCtr::Listxattr, "listxattr", LliteKind::Latency),
    (LliteCtr::Removexattr, "removexattr", LliteKind::Latency),
    (
        LliteCtr::InodePermission,
        "inode_permission",
        LliteKind::Latency,
    ),
    (LliteCtr::Fallocate, "fallocate", LliteKind::Latency),
    (LliteCtr::Opencount, "opencount", LliteKind::ReqsFull),
    (LliteCtr::Openclosetime, "openclosetime", LliteKind::Latency),
];

impl LliteCtr {
    /// Number of counters.
    pub const COUNT: usize = 35;

    /// All counters in print order.
    pub const ALL: [LliteCtr; LliteCtr::COUNT] = {
        let mut all = [LliteCtr::ReadBytes; LliteCtr::COUNT];
        let mut i = 0;
        while i < LliteCtr::COUNT {
            all[i] = LLITE_TABLE[i].0;
            i += 1;
        }
        all
    };

    /// The counter's name as printed.
    pub fn name(self) -> &'static str {
        LLITE_TABLE[self as usize].1
    }

    /// The counter's configuration.
    pub fn kind(self) -> LliteKind {
        LLITE_TABLE[self as usize].2
    }
}

/// `llite.*.stats`: the 35 llite counters plus their start time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LliteStats {
    /// Counters indexed by `LliteCtr as usize`.
    pub ctr: [Counter; LliteCtr::COUNT],
    /// `ls_init`: time of allocation or last clear (ns).
    pub init_ns: u64,
}

impl Default for LliteStats {
    fn default() -> Self {
        LliteStats::new(0)
    }
}

impl LliteStats {
    /// Empty stats whose `start_time` is `init_ns`.
    pub fn new(init_ns: u64) -> Self {
        LliteStats {
            ctr: [Counter::default(); LliteCtr::COUNT],
            init_ns,
        }
    }

    /// One sample `v` of counter `c` (count-only counters just count it).
    pub fn add(&mut self, c: LliteCtr, v: i64) {
        self.ctr[c as usize].add(v);
    }

    /// The current value of counter `c`.
    pub fn get(&self, c: LliteCtr) -> &Counter {
        &self.ctr[c as usize]
    }

    /// `lprocfs_clear_stats()`: zero everything, `start_time` = `now_ns`.
    pub fn clear(&mut self, now_ns: u64) {
        *self = LliteStats::new(now_ns);
    }

    /// The `llite.*.stats` file.
    pub fn text(&self, style: TextStyle, now_ns: u64) -> String {
        let lines = LliteCtr::ALL.iter().map(|&c| {
            let (unit, fields) = c.kind().format();
            (c.name(), unit, fields, self.get(c))
        });
        stats_file_text(style, now_ns, self.init_ns, lines)
    }
}

// ---------------------------------------------------------------------------
// llite.*.read_ahead_stats
// ---------------------------------------------------------------------------

/// The 16 `read_ahead_stats` counters, in `ra_stat_string[]` order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RaCtr {
    /// `hits`: page was already read ahead.
    Hits,
    /// `misses`: page was not read ahead.
    Misses,
    /// `readpage_not_consecutive`: non-sequential access detected.
    ReadpageNotConsecutive,
    /// `miss_inside_window`.
    MissInsideWindow,
    /// `failed_grab_cache_page`.
    FailedGrabCachePage,
    /// `failed_lock_match`.
    FailedLockMatch,
    /// `read_but_discarded`.
    ReadButDiscarded,
    /// `zero_length_file`: kms == 0.
    ZeroLengthFile,
    /// `zero_size_window`: read-ahead window of 0 pages.
    ZeroSizeWindow,
    /// `readahead_to_eof`.
    ReadaheadToEof,
    /// `hit_max_readahead_issue`: global read-ahead budget exhausted.
    HitMaxReadaheadIssue,
    /// `wrong_page_from_grab_cache_page`.
    WrongPageFromGrabCachePage,
    /// `failed_to_reach_end`.
    FailedToReachEnd,
    /// `async_readahead`.
    AsyncReadahead,
    /// `failed_to_fast_read`.
    FailedToFastRead,
    /// `mmap_range_read`.
    MmapRangeRead,
}

/// Name of each [`RaCtr`], indexed by `RaCtr as usize`.
const RA_TABLE: [(RaCtr, &str); RaCtr::COUNT] = [
    (RaCtr::Hits, "hits"),
    (RaCtr::Misses, "misses"),
    (RaCtr::ReadpageNotConsecutive, "readpage_not_consecutive"),
    (RaCtr::MissInsideWindow, "miss_inside_window"),
    (RaCtr::FailedGrabCachePage, "failed_grab_cache_page"),
    (RaCtr::FailedLockMatch, "failed_lock_match"),
    (RaCtr::ReadButDiscarded, "read_but_discarded"),
    (RaCtr::ZeroLengthFile, "zero_length_file"),
    (RaCtr::ZeroSizeWindow, "zero_size_window"),
    (RaCtr::ReadaheadToEof, "readahead_to_eof"),
    (RaCtr::HitMaxReadaheadIssue, "hit_max_readahead_issue"),
    (
        RaCtr::WrongPageFromGrabCachePage,
        "wrong_page_from_grab_cache_page",
    ),
    (RaCtr::FailedToReachEnd, "failed_to_reach_end"),
    (RaCtr::AsyncReadahead, "async_readahead"),
    (RaCtr::FailedToFastRead, "failed_to_fast_read"),
    (RaCtr::MmapRangeRead, "mmap_range_read"),
];

impl RaCtr {
    /// Number of counters.
    pub const COUNT: usize = 16;

    /// All counters in print order.
    pub const ALL: [RaCtr; RaCtr::COUNT] = {
        let mut all = [RaCtr::Hits; RaCtr::COUNT];
        let mut i = 0;
        while i < RaCtr::COUNT {
            all[i] = RA_TABLE[i].0;
            i += 1;
        }
        all
    };

    /// The counter's name as printed.
    pub fn name(self) -> &'static str {
        RA_TABLE[self as usize].1
    }
}

/// `llite.*.read_ahead_stats`: count-only `[pages]` counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaStats {
    /// Counters indexed by `RaCtr as usize` (only `count` is printed).
    pub ctr: [Counter; RaCtr::COUNT],
    /// `ls_init`: time of allocation or last clear (ns).
    pub init_ns: u64,
}

impl Default for RaStats {
    fn default() -> Self {
        RaStats::new(0)
    }
}

impl RaStats {
    /// Empty stats whose `start_time` is `init_ns`.
    pub fn new(init_ns: u64) -> Self {
        RaStats {
            ctr: [Counter::default(); RaCtr::COUNT],
            init_ns,
        }
    }

    /// `ll_ra_stats_add()`: one sample, whatever `v` is; the kernel's
    /// count-only counter just increments its count.
    pub fn add(&mut self, c: RaCtr, v: i64) {
        self.ctr[c as usize].add(v);
    }

    /// `n` samples at once (read-ahead counts pages; the simulator moves page ranges).
    pub fn add_n(&mut self, c: RaCtr, n: u64) {
        self.ctr[c as usize].count += n;
    }

    /// `ll_ra_stats_inc()`: one sample.
    pub fn inc(&mut self, c: RaCtr) {
        self.add(c, 1);
    }

    /// The current value of counter `c`.
    pub fn get(&self, c: RaCtr) -> &Counter {
        &self.ctr[c as usize]
    }

    /// `lprocfs_clear_stats()`: zero everything, `start_time` = `now_ns`.
    pub fn clear(&mut self, now_ns: u64) {
        *self = RaStats::new(now_ns);
    }

    /// The `llite.*.read_ahead_stats` file.
    pub fn text(&self, style: TextStyle, now_ns: u64) -> String {
        let lines = RaCtr::ALL
            .iter()
            .map(|&c| (c.name(), Unit::Pages, Fields::CountOnly, self.get(c)));
        stats_file_text(style, now_ns, self.init_ns, lines)
    }
}

// ---------------------------------------------------------------------------
// osc.*.import
// ---------------------------------------------------------------------------

/// `obd_connect_names[]` for `ocd_connect_flags`, bit 0 upwards (2.15.5).
#[rustfmt::skip]
pub const OBD_CONNECT_NAMES: [&str; 64] = [
    /*  0.. */ "read_only", "lov_index", "connect_from_mds", "write_grant", "server_lock", "version",
    /*  6.. */ "request_portal", "acl", "xattr", "create_on_write", "truncate_lock", "initial_transno",
    /* 12.. */ "inode_bit_locks", "barrier", "getattr_by_fid", "no_oh_for_devices", "remote_client", "remote_client_by_force",
    /* 18.. */ "max_byte_per_rpc", "64bit_qdata", "mds_capability", "oss_capability", "early_lock_cancel", "som",
    /* 24.. */ "adaptive_timeouts", "lru_resize", "mds_mds_connection", "real_conn", "change_qunit_size", "alt_checksum_algorithm",
    /* 30.. */ "fid_is_enabled", "version_recovery", "pools", "grant_shrink", "skip_orphan", "large_ea",
    /* 36.. */ "full20", "layout_lock", "64bithash", "object_max_bytes", "imp_recov", "jobstats",
    /* 42.. */ "umask", "einprogress", "grant_param", "flock_owner", "lvb_type", "nanoseconds_times",
    /* 48.. */ "lightweight_conn", "short_io", "pingless", "flock_deadlock", "disp_stripe", "open_by_fid",
    /* 54.. */ "lfsck", "unknown", "unlink_close", "multi_mod_rpcs", "dir_stripe", "subtree",
    /* 60.. */ "lockahead", "bulk_mbits", "compact_obdo", "second_flags",
];

/// `obd_connect_names[]` for `ocd_connect_flags2`, bit 0 upwards (2.15.5).
#[rustfmt::skip]
pub const OBD_CONNECT_NAMES2: [&str; 28] = [
    /*  0.. */ "file_secctx", "lockaheadv2", "dir_migrate", "sum_statfs", "overstriping", "flr",
    /*  6.. */ "wbc", "lock_convert", "archive_id_array", "increasing_xid", "selinux_policy", "lsom",
    /* 12.. */ "pcc", "crush", "async_discard", "client_encryption", "fidmap", "getattr_pfid",
    /* 18.. */ "lseek", "dom_lvb", "reply_mbits", "mode_convert", "batch_rpc", "pcc_ro",
    /* 24.. */ "mne_nid_type", "lock_contend", "atomic_open_lock", "name_encryption",
];

/// `OBD_CONNECT_INDEX`: prints `target_index`.
pub const OBD_CONNECT_INDEX: u64 = 1 << 1;
/// `OBD_CONNECT_MDS`: prints `mdt_index`.
pub const OBD_CONNECT_MDS: u64 = 1 << 2;
/// `OBD_CONNECT_GRANT`: prints `initial_grant`.
pub const OBD_CONNECT_GRANT: u64 = 1 << 3;
/// `OBD_CONNECT_VERSION`: prints `target_version`.
pub const OBD_CONNECT_VERSION: u64 = 1 << 5;
/// `OBD_CONNECT_TRANSNO`: prints `first_transno`.
pub const OBD_CONNECT_TRANSNO: u64 = 1 << 11;
/// `OBD_CONNECT_IBITS`: prints `ibits_known`.
pub const OBD_CONNECT_IBITS: u64 = 1 << 12;
/// `OBD_CONNECT_BRW_SIZE`: prints `max_brw_size`.
pub const OBD_CONNECT_BRW_SIZE: u64 = 1 << 18;
/// `OBD_CONNECT_CKSUM`: prints `cksum_types`.
pub const OBD_CONNECT_CKSUM: u64 = 1 << 29;
/// `OBD_CONNECT_MAX_EASIZE`: prints `max_easize`.
pub const OBD_CONNECT_MAX_EASIZE: u64 = 1 << 35;
/// `OBD_CONNECT_MAXBYTES`: prints `max_object_bytes`.
pub const OBD_CONNECT_MAXBYTES: u64 = 1 << 39;
/// `OBD_CONNECT_GRANT_PARAM`: prints the four `grant_*` lines.
pub const OBD_CONNECT_GRANT_PARAM: u64 = 1 << 44;
/// `OBD_CONNECT_MULTIMODRPCS`: prints `max_mod_rpcs`.
pub const OBD_CONNECT_MULTIMODRPCS: u64 = 1 << 57;
/// `OBD_CONNECT_FLAGS2`: `ocd_connect_flags2` is valid.
pub const OBD_CONNECT_FLAGS2: u64 = 1 << 63;

/// `ocd_connect_flags` of a 2.15.5 OSC talking to a 2.15.5 OST (§A.4).
pub const DEFAULT_OSC_CONNECT_FLAGS: u64 = 0xa042_5af2_e344_0478;
/// `ocd_connect_flags2` of a 2.15.5 OSC talking to a 2.15.5 OST (§A.4).
pub const DEFAULT_OSC_CONNECT_FLAGS2: u64 = 0x14_8202;

/// The connect flag names those defaults print (§A.4), in print order.
#[rustfmt::skip]
pub const DEFAULT_OSC_CONNECT_FLAG_NAMES: [&str; 30] = [
    "write_grant", "server_lock", "version", "request_portal", "truncate_lock",
    "max_byte_per_rpc", "early_lock_cancel", "adaptive_timeouts", "lru_resize", "alt_checksum_algorithm",
    "fid_is_enabled", "version_recovery", "grant_shrink", "full20", "layout_lock",
    "64bithash", "object_max_bytes", "jobstats", "einprogress", "grant_param",
    "lvb_type", "short_io", "lfsck", "bulk_mbits", "second_flags",
    "lockaheadv2", "increasing_xid", "client_encryption", "lseek", "reply_mbits",
];

/// C's `%#llx`: `0x`-prefixed hex, except plain `0` for zero.
fn alt_hex(v: u64) -> String {
    if v == 0 {
        "0".to_string()
    } else {
        format!("{v:#x}")
    }
}

/// `obd_connect_seq_flags2str()`: the names of the set bits; `flags2` only
/// counts when `second_flags` is set, and bits without a name print as
/// `unknown2_0x…`.
pub fn connect_flag_names(flags: u64, flags2: u64) -> Vec<String> {
    let mut names: Vec<String> = (0..64)
        .filter(|bit| flags & (1u64 << bit) != 0)
        .map(|bit| OBD_CONNECT_NAMES[bit].to_string())
        .collect();
    if flags & OBD_CONNECT_FLAGS2 == 0 || flags2 == 0 {
        return names;
    }
    let known = OBD_CONNECT_NAMES2.len();
    names.extend(
        (0..known)
            .filter(|bit| flags2 & (1u64 << bit) != 0)
            .map(|bit| OBD_CONNECT_NAMES2[bit].to_string()),
    );
    let unknown = flags2 & !((1u64 << known) - 1);
    if unknown != 0 {
        names.push(format!("unknown2_{}", alt_hex(unknown)));
    }
    names
}

/// `ptlrpc_import_state_name()` states.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub enum ImportState {
    /// `<UNKNOWN>`.
    Unknown,
    /// `CLOSED`.
    Closed,
    /// `NEW`.
    #[default]
    New,
    /// `DISCONN`.
    Disconn,
    /// `CONNECTING`.
    Connecting,
    /// `REPLAY`.
    Replay,
    /// `REPLAY_LOCKS`.
    ReplayLocks,
    /// `REPLAY_WAIT`.
    ReplayWait,
    /// `RECOVER`.
    Recover,
    /// `FULL`: connected and usable.
    Full,
    /// `EVICTED`.
    Evicted,
    /// `IDLE`: disconnected after `idle_timeout` without RPCs.
    Idle,
}

impl ImportState {
    /// The state name as printed.
    pub fn name(self) -> &'static str {
        match self {
            ImportState::Unknown => "<UNKNOWN>",
            ImportState::Closed => "CLOSED",
            ImportState::New => "NEW",
            ImportState::Disconn => "DISCONN",
            ImportState::Connecting => "CONNECTING",
            ImportState::Replay => "REPLAY",
            ImportState::ReplayLocks => "REPLAY_LOCKS",
            ImportState::ReplayWait => "REPLAY_WAIT",
            ImportState::Recover => "RECOVER",
            ImportState::Full => "FULL",
            ImportState::Evicted => "EVICTED",
            ImportState::Idle => "IDLE",
        }
    }
}

/// `osc.*.state` (`lprocfs_state_seq_show()`): the current state, then the history's entries
/// oldest first, the last `IMP_STATE_HIST_LEN` (16) of them.
pub fn import_state_text<'a>(current: ImportState, history: impl Iterator<Item = &'a (u64, ImportState)>) -> String {
    let entries: Vec<&(u64, ImportState)> = history.collect();
    let mut out = format!("current_state: {}\nstate_history:\n", current.name());
    for (secs, state) in &entries[entries.len().saturating_sub(16)..] {
        let _ = writeln!(out, " - [ {secs}, {} ]", state.name());
    }
    out
}

/// `struct obd_connect_data` fields printed by `obd_connect_data_seqprint()`.
///
/// Each optional line is printed only when its `OBD_CONNECT_*` bit is set in
/// `flags`.  Fields printed with `%d` are stored unsigned, as in the kernel,
/// and reinterpreted as signed when printed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConnectData {
    /// `ocd_connect_flags`.
    pub flags: u64,
    /// `ocd_connect_flags2`.
    pub flags2: u64,
    /// `ocd_instance`.
    pub instance: u32,
    /// Server version `major.minor.patch.fix` (`OBD_CONNECT_VERSION`).
    pub target_version: [u8; 4],
    /// `ocd_group` (`OBD_CONNECT_MDS`).
    pub mdt_index: u32,
    /// `ocd_grant` (`OBD_CONNECT_GRANT`).
    pub initial_grant: u32,
    /// `ocd_index` (`OBD_CONNECT_INDEX`).
    pub target_index: u32,
    /// `ocd_brw_size` (`OBD_CONNECT_BRW_SIZE`).
    pub max_brw_size: u32,
    /// `ocd_ibits_known` (`OBD_CONNECT_IBITS`).
    pub ibits_known: u64,
    /// `1 << ocd_grant_blkbits` (`OBD_CONNECT_GRANT_PARAM`).
    pub grant_block_size: u32,
    /// `1 << ocd_grant_inobits`.
    pub grant_inode_size: u32,
    /// `ocd_grant_max_blks << ocd_grant_blkbits`.
    pub grant_max_extent_size: u32,
    /// `ocd_grant_tax_kb << 10`.
    pub grant_extent_tax: u32,
    /// `ocd_transno` (`OBD_CONNECT_TRANSNO`).
    pub first_transno: u64,
    /// `ocd_cksum_types` (`OBD_CONNECT_CKSUM`).
    pub cksum_types: u32,
    /// `ocd_max_easize` (`OBD_CONNECT_MAX_EASIZE`).
    pub max_easize: u32,
    /// `ocd_maxbytes` (`OBD_CONNECT_MAXBYTES`).
    pub max_object_bytes: u64,
    /// `ocd_maxmodrpcs` (`OBD_CONNECT_MULTIMODRPCS`).
    pub max_mod_rpcs: u16,
}

impl ConnectData {
    /// What a 2.15.5 OST grants a 2.15.5 OSC (the values of §A.4).
    pub fn default_osc() -> Self {
        ConnectData {
            flags: DEFAULT_OSC_CONNECT_FLAGS,
            flags2: DEFAULT_OSC_CONNECT_FLAGS2,
            instance: 1,
            target_version: [2, 15, 5, 0],
            initial_grant: 8_437_760,
            max_brw_size: 4_194_304,
            grant_block_size: 4096,
            grant_inode_size: 32,
            grant_max_extent_size: 67_108_864,
            grant_extent_tax: 24_576,
            cksum_types: 0xf7,
            max_object_bytes: 17_592_186_040_320,
            ..ConnectData::default()
        }
    }

    /// `obd_connect_data_seqprint()`.
    fn write_text(&self, out: &mut String) {
        let has = |bit: u64| self.flags & bit != 0;
        let _ = writeln!(out, "    connect_data:");
        let _ = writeln!(out, "       flags: {}", alt_hex(self.flags));
        let _ = writeln!(out, "       instance: {}", self.instance);
        if has(OBD_CONNECT_VERSION) {
            let [a, b, c, d] = self.target_version;
            let _ = writeln!(out, "       target_version: {a}.{b}.{c}.{d}");
        }
        if has(OBD_CONNECT_MDS) {
            let _ = writeln!(out, "       mdt_index: {}", self.mdt_index as i32);
        }
        if has(OBD_CONNECT_GRANT) {
            let _ = writeln!(out, "       initial_grant: {}", self.initial_grant as i32);
        }
        if has(OBD_CONNECT_INDEX) {
            let _ = writeln!(out, "       target_index: {}", self.target_index);
        }
        if has(OBD_CONNECT_BRW_SIZE) {
            let _ = writeln!(out, "       max_brw_size: {}", self.max_brw_size as i32);
        }
        if has(OBD_CONNECT_IBITS) {
            let _ = writeln!(out, "       ibits_known: {}", alt_hex(self.ibits_known));
        }
        if has(OBD_CONNECT_GRANT_PARAM) {
            let _ = writeln!(
                out,
                "       grant_block_size: {}",
                self.grant_block_size as i32
            );
            let _ = writeln!(
                out,
                "       grant_inode_size: {}",
                self.grant_inode_size as i32
            );
            let _ = writeln!(
                out,
                "       grant_max_extent_size: {}",
                self.grant_max_extent_size as i32
            );
            let _ = writeln!(
                out,
                "       grant_extent_tax: {}",
                self.grant_extent_tax as i32
            );
        }
        if has(OBD_CONNECT_TRANSNO) {
            let _ = writeln!(out, "       first_transno: {}", alt_hex(self.first_transno));
        }
        if has(OBD_CONNECT_CKSUM) {
            let _ = writeln!(
                out,
                "       cksum_types: {}",
                alt_hex(u64::from(self.cksum_types))
            );
        }
        if has(OBD_CONNECT_MAX_EASIZE) {
            let _ = writeln!(out, "       max_easize: {}", self.max_easize as i32);
        }
        if has(OBD_CONNECT_MAXBYTES) {
            let _ = writeln!(out, "       max_object_bytes: {}", self.max_object_bytes);
        }
        if has(OBD_CONNECT_MULTIMODRPCS) {
            let _ = writeln!(out, "       max_mod_rpcs: {}", self.max_mod_rpcs);
        }
    }
}

/// The import flags `obd_import_flags2str()` prints, in its order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportFlags {
    /// `no_recov` (from the obd device).
    pub no_recov: bool,
    /// `invalid`.
    pub invalid: bool,
    /// `deactive`.
    pub deactive: bool,
    /// `replayable`.
    pub replayable: bool,
    /// `delayed_recovery`.
    pub delayed_recovery: bool,
    /// `vbr_failed`.
    pub vbr_failed: bool,
    /// `pingable`.
    pub pingable: bool,
    /// `resend_replay`.
    pub resend_replay: bool,
    /// `no_pinger_recover`.
    pub no_pinger_recover: bool,
    /// `connect_tried`.
    pub connect_tried: bool,
}

impl ImportFlags {
    /// A connected OSC: `replayable, pingable, connect_tried`.
    pub fn default_osc() -> Self {
        ImportFlags {
            replayable: true,
            pingable: true,
            connect_tried: true,
            ..ImportFlags::default()
        }
    }

    /// Names of the set flags, in print order.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.no_recov, "no_recov"),
            (self.invalid, "invalid"),
            (self.deactive, "deactive"),
            (self.replayable, "replayable"),
            (self.delayed_recovery, "delayed_recovery"),
            (self.vbr_failed, "vbr_failed"),
            (self.pingable, "pingable"),
            (self.resend_replay, "resend_replay"),
            (self.no_pinger_recover, "no_pinger_recover"),
            (self.connect_tried, "connect_tried"),
        ]
        .into_iter()
        .filter(|(set, _)| *set)
        .map(|(_, name)| name)
        .collect()
    }
}

/// Everything `lprocfs_import_seq_show_locked()` prints except the
/// averages, which come from the OSC's [`OscStats`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportInfo {
    /// `obd_name`, e.g. `testfs-OST0000-osc-ffff8881234abcd0`.
    pub obd_name: String,
    /// Target UUID, e.g. `testfs-OST0000_UUID`.
    pub target: String,
    /// Import state.
    pub state: ImportState,
    /// Negotiated connect data (the connect flag names derive from it).
    pub connect: ConnectData,
    /// Import flags.
    pub flags: ImportFlags,
    /// NIDs of all connections, e.g. `10.10.0.11@tcp`.
    pub failover_nids: Vec<String>,
    /// NID of the current connection; `None` prints `<none>`.
    pub current_connection: Option<String>,
    /// `imp_conn_cnt`.
    pub connection_attempts: u32,
    /// `imp_generation`.
    pub generation: u32,
    /// `imp_inval_count` (`in-progress_invalidations`).
    pub inval_count: u32,
    /// Seconds since the last reply (`idle:`).
    pub idle_secs: i64,
    /// `imp_inflight`: RPCs in flight on this import.
    pub inflight: u32,
    /// `imp_unregistering`.
    pub unregistering: u32,
    /// `imp_timeouts`.
    pub timeouts: u32,
    /// Largest adaptive-timeout service estimate over portals (s).
    pub service_estimate_secs: u32,
    /// Adaptive-timeout network latency estimate (s).
    pub network_secs: i32,
    /// `imp_last_replay_transno`.
    pub last_replay: u64,
    /// `imp_peer_committed_transno`.
    pub peer_committed: u64,
    /// `imp_last_transno_checked`.
    pub last_checked: u64,
}

impl ImportInfo {
    /// A freshly connected (FULL) OSC import with the defaults of §A.4.
    pub fn new_osc(obd_name: &str, target: &str, nid: &str) -> Self {
        ImportInfo {
            obd_name: obd_name.to_string(),
            target: target.to_string(),
            state: ImportState::Full,
            connect: ConnectData::default_osc(),
            flags: ImportFlags::default_osc(),
            failover_nids: vec![nid.to_string()],
            current_connection: Some(nid.to_string()),
            connection_attempts: 1,
            generation: 1,
            service_estimate_secs: 1,
            network_secs: 1,
            ..ImportInfo::default()
        }
    }
}

/// One `read_data_averages` / `write_data_averages` block.
///
/// Mirrors the kernel's integer arithmetic: `k` (bytes per RPC) and `j`
/// (µs per RPC) are C `int`s, `MB_per_sec` is `k / j` `.` `(100 * k / j) % 100`.
fn data_averages(
    out: &mut String,
    style: TextStyle,
    rw: &str,
    bytes: &Counter,
    lat: &Counter,
    lat_unit: Unit,
) {
    // When the bytes block is not printed, the kernel keeps the raw sum in k.
    let mut k_src = bytes.sum;
    if bytes.sum > 0 && bytes.count > 0 {
        k_src = bytes.avg_or_zero();
        let _ = writeln!(out, "    {rw}_data_averages:");
        let _ = writeln!(out, "       bytes_per_rpc: {}", k_src as u64);
    }
    let k = k_src as i32;
    if lat.sum > 0 && lat.count != 0 {
        let per_rpc = lat.avg_or_zero();
        let _ = writeln!(
            out,
            "       {}_per_rpc: {}",
            lat_unit.text(style),
            per_rpc as u64
        );
        let j = per_rpc as i32;
        if j > 0 {
            let whole = (k / j) as u32;
            let hundredths = (k.wrapping_mul(100) / j % 100) as u32;
            let _ = writeln!(out, "       MB_per_sec: {whole}.{hundredths:02}");
        }
    }
}

/// `lprocfs_import_seq_show_locked()`: the whole `osc.*.import` file.
///
/// `avg_waittime` is `req_waittime` sum/count; the data averages come from
/// `read_bytes`/`ost_read` and `write_bytes`/`ost_write`.
pub fn import_text(style: TextStyle, imp: &ImportInfo, stats: &OscStats) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "import:");
    let _ = writeln!(out, "    name: {}", imp.obd_name);
    let _ = writeln!(out, "    target: {}", imp.target);
    let _ = writeln!(out, "    state: {}", imp.state.name());
    let flags = connect_flag_names(imp.connect.flags, imp.connect.flags2);
    let _ = writeln!(out, "    connect_flags: [ {} ]", flags.join(", "));
    imp.connect.write_text(&mut out);
    let _ = writeln!(
        out,
        "    import_flags: [ {} ]",
        imp.flags.names().join(", ")
    );
    let _ = writeln!(out, "    connection:");
    let _ = writeln!(
        out,
        "       failover_nids: [ {} ]",
        imp.failover_nids.join(", ")
    );
    let current = imp.current_connection.as_deref().unwrap_or("<none>");
    let _ = writeln!(out, "       current_connection: {current}");
    let _ = writeln!(
        out,
        "       connection_attempts: {}",
        imp.connection_attempts
    );
    let _ = writeln!(out, "       generation: {}", imp.generation);
    let _ = writeln!(out, "       in-progress_invalidations: {}", imp.inval_count);
    let _ = writeln!(out, "       idle: {} sec", imp.idle_secs);

    let wait = stats.get(OscCtr::ReqWaittime);
    let _ = writeln!(out, "    rpcs:");
    let _ = writeln!(out, "       inflight: {}", imp.inflight);
    let _ = writeln!(out, "       unregistering: {}", imp.unregistering);
    let _ = writeln!(out, "       timeouts: {}", imp.timeouts);
    let wait_units = OscCtr::ReqWaittime.unit().text(style);
    let _ = writeln!(
        out,
        "       avg_waittime: {} {wait_units}",
        wait.avg_or_zero() as u64
    );
    let _ = writeln!(out, "    service_estimates:");
    let _ = writeln!(out, "       services: {} sec", imp.service_estimate_secs);
    let _ = writeln!(out, "       network: {} sec", imp.network_secs);
    let _ = writeln!(out, "    transactions:");
    let _ = writeln!(out, "       last_replay: {}", imp.last_replay);
    let _ = writeln!(out, "       peer_committed: {}", imp.peer_committed);
    let _ = writeln!(out, "       last_checked: {}", imp.last_checked);

    let read = (stats.get(OscCtr::ReadBytes), stats.get(OscCtr::OstRead));
    let write = (stats.get(OscCtr::WriteBytes), stats.get(OscCtr::OstWrite));
    data_averages(
        &mut out,
        style,
        "read",
        read.0,
        read.1,
        OscCtr::OstRead.unit(),
    );
    data_averages(
        &mut out,
        style,
        "write",
        write.0,
        write.1,
        OscCtr::OstWrite.unit(),
    );
    out
}

// ---------------------------------------------------------------------------
// Small fixed-format files
// ---------------------------------------------------------------------------

/// `llite.*.max_cached_mb` (`ll_max_cached_mb_seq_show()`).
pub fn max_cached_mb_text(
    users: i32,
    max_cached_mb: i64,
    used_mb: i64,
    unused_mb: i64,
    reclaim_count: u32,
    max_read_ahead_mb: u64,
    used_read_ahead_mb: i32,
) -> String {
    format!(
        "users: {users}\nmax_cached_mb: {max_cached_mb}\nused_mb: {used_mb}\nunused_mb: {unused_mb}\n\
         reclaim_count: {reclaim_count}\nmax_read_ahead_mb: {max_read_ahead_mb}\n\
         used_read_ahead_mb: {used_read_ahead_mb}\n"
    )
}

/// `osc.*.osc_cached_mb` (`osc_cached_mb_seq_show()`).
pub fn osc_cached_mb_text(used_mb: i64, busy_cnt: i64, reclaim: u64) -> String {
    format!("used_mb: {used_mb}\nbusy_cnt: {busy_cnt}\nreclaim: {reclaim}\n")
}

/// `osc.*.osc_stats`: colon header plus the two lockless byte counts.
pub fn osc_stats_text(
    style: TextStyle,
    now_ns: u64,
    init_ns: u64,
    lockless_write: u64,
    lockless_read: u64,
) -> String {
    let mut out = stats_header(style, now_ns, init_ns, true);
    let _ = writeln!(out, "lockless_write_bytes\t\t{lockless_write}");
    let _ = writeln!(out, "lockless_read_bytes\t\t{lockless_read}");
    out
}

/// `osc.*.unstable_stats`: `"unstable_pages: %20ld\n" "unstable_mb:              %10d\n"`.
pub fn unstable_stats_text(pages: i64, mb: i32) -> String {
    format!("unstable_pages: {pages:>20}\nunstable_mb:              {mb:>10}\n")
}

/// Checksum algorithms an OSC lists in `checksum_type`, in print order.
pub const CHECKSUM_TYPES: [&str; 7] = [
    "crc32",
    "adler",
    "crc32c",
    "t10ip512",
    "t10ip4K",
    "t10crc512",
    "t10crc4K",
];

/// `osc.*.checksum_type`: every type followed by a space, the selected one
/// in brackets, then a newline (note the trailing space).
pub fn checksum_type_text(selected: &str) -> String {
    let mut out = String::new();
    for name in CHECKSUM_TYPES {
        if name == selected {
            let _ = write!(out, "[{name}] ");
        } else {
            let _ = write!(out, "{name} ");
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_indexed_by_discriminant() {
        for (i, (c, _, _)) in OSC_TABLE.iter().enumerate() {
            assert_eq!(*c as usize, i);
        }
        for (i, (c, _, _)) in LLITE_TABLE.iter().enumerate() {
            assert_eq!(*c as usize, i);
        }
        for (i, (c, _)) in RA_TABLE.iter().enumerate() {
            assert_eq!(*c as usize, i);
        }
    }

    #[test]
    fn fls_and_log2_buckets() {
        assert_eq!(fls(0), 0);
        assert_eq!(fls(1), 1);
        assert_eq!(fls(1024), 11);
        let mut h = Hist::default();
        for v in [0, 1, 2, 3, 4, 1024, 1025, u32::MAX] {
            h.tally_log2(v);
        }
        // 0,1 -> 0; 2 -> 1; 3,4 -> 2; 1024 -> 10; 1025 -> 11; MAX -> 32 -> 31
        assert_eq!(h.buckets[0], 2);
        assert_eq!(h.buckets[1], 1);
        assert_eq!(h.buckets[2], 2);
        assert_eq!(h.buckets[10], 1);
        assert_eq!(h.buckets[11], 1);
        assert_eq!(h.buckets[31], 1);
        assert_eq!(h.total(), 8);
    }

    #[test]
    fn tally_clamps_to_last_bucket() {
        let mut h = Hist::default();
        h.tally(31);
        h.tally(200);
        assert_eq!(h.buckets[31], 2);
    }

    #[test]
    fn pct_truncates_and_handles_zero() {
        assert_eq!(pct(0, 0), 0);
        assert_eq!(pct(1, 259), 0);
        assert_eq!(pct(256, 259), 98);
        assert_eq!(pct(259, 259), 100);
    }

    #[test]
    fn alt_hex_matches_c() {
        assert_eq!(alt_hex(0), "0");
        assert_eq!(alt_hex(0xf7), "0xf7");
    }

    #[test]
    fn avg_or_zero_uses_integer_division() {
        let mut c = Counter::default();
        assert_eq!(c.avg_or_zero(), 0);
        c.add(3);
        c.add(4);
        assert_eq!(c.avg_or_zero(), 3);
    }

    #[test]
    fn connect_bits_match_their_names() {
        let name = |bit: u64| OBD_CONNECT_NAMES[bit.trailing_zeros() as usize];
        assert_eq!(name(OBD_CONNECT_INDEX), "lov_index");
        assert_eq!(name(OBD_CONNECT_MDS), "connect_from_mds");
        assert_eq!(name(OBD_CONNECT_GRANT), "write_grant");
        assert_eq!(name(OBD_CONNECT_VERSION), "version");
        assert_eq!(name(OBD_CONNECT_TRANSNO), "initial_transno");
        assert_eq!(name(OBD_CONNECT_IBITS), "inode_bit_locks");
        assert_eq!(name(OBD_CONNECT_BRW_SIZE), "max_byte_per_rpc");
        assert_eq!(name(OBD_CONNECT_CKSUM), "alt_checksum_algorithm");
        assert_eq!(name(OBD_CONNECT_MAX_EASIZE), "large_ea");
        assert_eq!(name(OBD_CONNECT_MAXBYTES), "object_max_bytes");
        assert_eq!(name(OBD_CONNECT_GRANT_PARAM), "grant_param");
        assert_eq!(name(OBD_CONNECT_MULTIMODRPCS), "multi_mod_rpcs");
        assert_eq!(name(OBD_CONNECT_FLAGS2), "second_flags");
    }

    #[test]
    fn labels() {
        assert_eq!(pages_label(0), 1);
        assert_eq!(pages_label(10), 1024);
        assert_eq!(pages_label(31), i64::from(i32::MIN));
        assert_eq!(offset_label(0), 0);
        assert_eq!(offset_label(1), 1);
        assert_eq!(offset_label(19), 262_144);
        assert_eq!(rif_label(9), 9);
    }

    #[test]
    fn the_state_file_shows_the_last_16_changes_oldest_first() {
        let states = [ImportState::Connecting, ImportState::Idle, ImportState::Connecting, ImportState::Full];
        let hist: Vec<(u64, ImportState)> = (0..20u64).map(|i| (100 + i, states[i as usize % 4])).collect();
        let text = import_state_text(ImportState::Full, hist.iter());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[..2], ["current_state: FULL", "state_history:"]);
        assert_eq!(lines.len(), 2 + 16);
        assert_eq!(lines[2], " - [ 104, CONNECTING ]");
        assert_eq!(lines[17], " - [ 119, FULL ]");
    }
}
