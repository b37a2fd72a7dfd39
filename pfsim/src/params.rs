//! The parameter files of each client, by lctl name: where each lives (sysfs, procfs,
//! debugfs), what it prints, and how a write to it is checked and applied — with Lustre's ranges
//! and errnos (docs/lustre-client.md §2, §3).

use crate::engine::{adjust_max_dirty, Sim};
use crate::model::{PAGE, PAGES_PER_MIB};
use crate::parse::{kstrtobool, kstrtouint, kstrtoull, sysfs_memparse, EINVAL, ERANGE};
use crate::stats::{self, ImportInfo, ImportState, CHECKSUM_TYPES};

const ENOENT: i32 = 2;
/// `CONNECTION_SWITCH_MAX`: min(50, obd_timeout), the most `idle_timeout` accepts.
const CONNECTION_SWITCH_MAX: u32 = 50;
/// `LL_SA_RPC_MAX` (llite_internal.h), the most `statahead_max` takes.
const LL_SA_RPC_MAX: u32 = 512;
/// The MDT's `max_mod_rpcs_per_client` (default 8), sent at connection as `ocd_maxmodrpcs`.
const MDT_MAX_MOD_RPCS_PER_CLIENT: u32 = 8;

/// (file name, tree, writable) of every OSC parameter.
const OSC_PARAMS: &[(&str, Tree, bool)] = &[
    ("active", Tree::Sys, true),
    ("checksums", Tree::Sys, true),
    ("checksum_dump", Tree::Sys, true),
    ("conn_uuid", Tree::Sys, false),
    ("cur_dirty_bytes", Tree::Sys, false),
    ("cur_dirty_grant_bytes", Tree::Sys, false),
    ("cur_lost_grant_bytes", Tree::Sys, false),
    ("destroys_in_flight", Tree::Sys, false),
    ("grant_shrink", Tree::Sys, true),
    ("grant_shrink_interval", Tree::Sys, true),
    ("idle_timeout", Tree::Sys, true),
    ("max_dirty_mb", Tree::Sys, true),
    ("max_rpcs_in_flight", Tree::Sys, true),
    ("ost_conn_uuid", Tree::Sys, false),
    ("resend_count", Tree::Sys, true),
    ("short_io_bytes", Tree::Sys, true),
    ("uuid", Tree::Sys, false),
    ("checksum_type", Tree::Proc, true),
    ("connect_flags", Tree::Proc, false),
    ("cur_grant_bytes", Tree::Proc, true),
    ("import", Tree::Proc, false),
    ("max_pages_per_rpc", Tree::Proc, true),
    ("osc_cached_mb", Tree::Proc, true),
    ("osc_stats", Tree::Proc, true),
    ("ost_server_uuid", Tree::Proc, false),
    ("pinger_recov", Tree::Proc, true),
    ("rpc_stats", Tree::Proc, true),
    ("state", Tree::Proc, false),
    ("unstable_stats", Tree::Proc, false),
    ("stats", Tree::Debug, true),
];

const LLITE_PARAMS: &[(&str, Tree, bool)] = &[
    ("checksums", Tree::Sys, true),
    ("checksum_pages", Tree::Sys, true),
    ("fast_read", Tree::Sys, true),
    ("max_read_ahead_async_active", Tree::Sys, true),
    ("max_read_ahead_mb", Tree::Sys, true),
    ("max_read_ahead_per_file_mb", Tree::Sys, true),
    ("max_read_ahead_whole_mb", Tree::Sys, true),
    ("read_ahead_async_file_threshold_mb", Tree::Sys, true),
    ("read_ahead_range_kb", Tree::Sys, true),
    ("statahead_max", Tree::Sys, true),
    ("uuid", Tree::Sys, false),
    ("max_cached_mb", Tree::Debug, true),
    ("read_ahead_stats", Tree::Debug, true),
    ("stats", Tree::Debug, true),
];

const MDC_PARAMS: &[(&str, Tree, bool)] = &[("max_rpcs_in_flight", Tree::Sys, true), ("max_mod_rpcs_in_flight", Tree::Sys, true)];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tree {
    Sys,
    Proc,
    Debug,
}

impl Tree {
    fn prefix(self) -> &'static str {
        match self {
            Tree::Sys => "sys/fs/lustre",
            Tree::Proc => "proc/fs/lustre",
            Tree::Debug => "sys/kernel/debug/lustre",
        }
    }
}

/// One entry of `Sim::list_params`.
#[derive(Clone, Debug)]
pub struct ParamFile {
    pub path: String,
    pub name: String,
    pub writable: bool,
}

impl Sim {
    fn mdc_name(&self, client: usize) -> String {
        format!("{}-MDT0000-mdc-{:016x}", self.cfg.cluster.fsname, self.clients[client].instance)
    }

    pub fn llite_name(&self, client: usize) -> String {
        format!("{}-{:016x}", self.cfg.cluster.fsname, self.clients[client].instance)
    }

    /// The mount's client UUID, which its llite instance and its OSCs print in `uuid` (a real
    /// client's is random; this one comes from the instance, so the same seed gives the same one).
    pub fn client_uuid(&self, client: usize) -> String {
        let mut rng = crate::rng::Rng::new(self.clients[client].instance);
        let (a, b) = (rng.next_u64(), rng.next_u64());
        format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xffff,
            b >> 48,
            b & 0xffff_ffff_ffff
        )
    }

    /// Every parameter file of one client node.
    pub fn list_params(&self, client: usize) -> Vec<ParamFile> {
        let mut out = Vec::new();
        let mut add = |kind: &str, dev: &str, table: &[(&str, Tree, bool)]| {
            for &(p, tree, w) in table {
                out.push(ParamFile { path: format!("{}/{kind}/{dev}/{p}", tree.prefix()), name: format!("{kind}.{dev}.{p}"), writable: w });
            }
        };
        for &o in &self.clients[client].oscs {
            add("osc", &self.oscs[o as usize].name, OSC_PARAMS);
        }
        add("llite", &self.llite_name(client), LLITE_PARAMS);
        add("mdc", &self.mdc_name(client), MDC_PARAMS);
        out.push(ParamFile { path: "sys/fs/lustre/max_dirty_mb".into(), name: "max_dirty_mb".into(), writable: true });
        out
    }

    /// The OSC of `client` named `dev` (`<fs>-OST<hex>-osc-<instance>`): the OST index is in the
    /// name, so no search is needed (a node of a large cluster has hundreds of OSCs).
    fn find_osc(&self, client: usize, dev: &str) -> Result<usize, i32> {
        // the last "-OST": an fsname may contain '-', even "-OST" (mkfs.lustre allows it)
        let hex = dev.rsplit_once("-OST").and_then(|(_, rest)| rest.get(..4)).ok_or(ENOENT)?;
        let ost = usize::from_str_radix(hex, 16).map_err(|_| ENOENT)?;
        let o = *self.clients[client].oscs.get(ost).ok_or(ENOENT)? as usize;
        if self.oscs[o].name == dev {
            Ok(o)
        } else {
            Err(ENOENT)
        }
    }

    fn split(name: &str) -> Result<(&str, &str, &str), i32> {
        let (kind, rest) = name.split_once('.').ok_or(ENOENT)?;
        let (dev, param) = rest.rsplit_once('.').ok_or(ENOENT)?;
        Ok((kind, dev, param))
    }

    /// The text of a parameter file, as `cat` would print it.
    pub fn get_param(&self, client: usize, name: &str) -> Result<String, i32> {
        if client >= self.clients.len() {
            return Err(ENOENT);
        }
        if name == "max_dirty_mb" {
            return Ok(format!("{}\n", self.clients[client].global_max_dirty_pages / PAGES_PER_MIB));
        }
        let (kind, dev, param) = Sim::split(name)?;
        let now = self.clock_ns();
        let style = self.style;
        match kind {
            "osc" => {
                let o = &self.oscs[self.find_osc(client, dev)?];
                let ost_uuid = format!("{}-OST{:04x}_UUID", self.cfg.cluster.fsname, o.ost);
                let nid = self.ost_nid(o.ost);
                Ok(match param {
                    "active" => format!("{}\n", u8::from(o.active)),
                    "checksums" => format!("{}\n", u8::from(o.checksums)),
                    "checksum_dump" => format!("{}\n", u8::from(o.checksum_dump)),
                    // grant_shrink_show(): on unless disabled, and the OST offers GRANT_SHRINK
                    "grant_shrink" => format!("{}\n", u8::from(o.grant_shrink)),
                    // pinger_recov_seq_show(): !imp_no_pinger_recover
                    "pinger_recov" => format!("{}\n", u8::from(o.pinger_recov)),
                    // no OST object is destroyed through an OSC RPC in pfsim (removals go to the MDS)
                    "destroys_in_flight" => "0\n".into(),
                    "uuid" => format!("{}\n", self.client_uuid(client)),
                    "cur_dirty_bytes" => format!("{}\n", o.dirty_pages * PAGE),
                    "cur_dirty_grant_bytes" => format!("{}\n", o.dirty_grant),
                    "cur_lost_grant_bytes" => format!("{}\n", o.lost_grant),
                    "grant_shrink_interval" => format!("{}\n", o.grant_shrink_interval),
                    "idle_timeout" => format!("{}\n", o.idle_timeout),
                    "max_dirty_mb" => format!("{}\n", o.max_dirty_pages / PAGES_PER_MIB),
                    "max_rpcs_in_flight" => format!("{}\n", o.mrif),
                    // both are conn_uuid_show()
                    "ost_conn_uuid" | "conn_uuid" => format!("{nid}\n"),
                    "resend_count" => format!("{}\n", o.resend_count),
                    "short_io_bytes" => format!("{}\n", o.short_io_bytes),
                    "checksum_type" => stats::checksum_type_text(o.checksum_type),
                    "connect_flags" => {
                        // lprocfs_connect_flags_seq_show(): "flags=%#llx\n", "flags2=%#llx\n", one name a line
                        let mut s = format!(
                            "flags={:#x}\nflags2={:#x}\n",
                            stats::DEFAULT_OSC_CONNECT_FLAGS,
                            stats::DEFAULT_OSC_CONNECT_FLAGS2
                        );
                        for f in stats::DEFAULT_OSC_CONNECT_FLAG_NAMES {
                            s.push_str(f);
                            s.push('\n');
                        }
                        s
                    }
                    "cur_grant_bytes" => format!("{}\n", o.avail_grant),
                    "import" => stats::import_text(style, &self.import_info(o, &ost_uuid, &nid), &o.counters().stats),
                    "max_pages_per_rpc" => format!("{}\n", o.mppr),
                    "osc_cached_mb" => stats::osc_cached_mb_text((o.cached_pages / PAGES_PER_MIB) as i64, 0, 0),
                    "osc_stats" => stats::osc_stats_text(style, now, o.osc_stats_init_ns, 0, 0),
                    "ost_server_uuid" => format!("{ost_uuid}\t{}\n", o.import.name()),
                    "rpc_stats" => stats::rpc_stats_text(
                        style,
                        now,
                        o.rpc_stats_init_ns,
                        o.r_in_flight,
                        o.w_in_flight,
                        o.pending_w_pages,
                        o.pending_r_pages,
                        &o.counters().hists,
                    ),
                    "state" => {
                        let mount = self.clock_secs(0);
                        let hist = [(mount, ImportState::Connecting), (mount, ImportState::Full)];
                        stats::import_state_text(o.import, hist.iter().chain(&o.state_hist))
                    }
                    "unstable_stats" => stats::unstable_stats_text(0, 0),
                    "stats" => o.counters().stats.text(style, now),
                    _ => return Err(ENOENT),
                })
            }
            "llite" => {
                if dev != self.llite_name(client) {
                    return Err(ENOENT);
                }
                let c = &self.clients[client];
                Ok(match param {
                    // checksum_pages is the same attribute as checksums (ll_checksum_show)
                    "checksums" | "checksum_pages" => format!("{}\n", u8::from(c.checksums)),
                    "fast_read" => format!("{}\n", u8::from(c.fast_read)),
                    "max_read_ahead_async_active" => format!("{}\n", c.ra_async_active),
                    "max_read_ahead_mb" => format!("{}\n", c.ra_max_pages / PAGES_PER_MIB),
                    "max_read_ahead_per_file_mb" => format!("{}\n", c.ra_max_pages_per_file / PAGES_PER_MIB),
                    "max_read_ahead_whole_mb" => format!("{}\n", c.ra_max_read_ahead_whole_pages / PAGES_PER_MIB),
                    "read_ahead_async_file_threshold_mb" => format!("{}\n", c.ra_async_threshold_pages / PAGES_PER_MIB),
                    "read_ahead_range_kb" => format!("{}\n", c.ra_range_pages * 4),
                    "statahead_max" => format!("{}\n", c.statahead_max),
                    "uuid" => format!("{}\n", self.client_uuid(client)),
                    "max_cached_mb" => stats::max_cached_mb_text(
                        1,
                        (c.max_cached_pages / PAGES_PER_MIB) as i64,
                        (c.cached_pages / PAGES_PER_MIB) as i64,
                        (c.max_cached_pages.saturating_sub(c.cached_pages) / PAGES_PER_MIB) as i64,
                        c.reclaim_count,
                        c.ra_max_pages / PAGES_PER_MIB,
                        (c.ra_inflight_pages / PAGES_PER_MIB) as i32,
                    ),
                    "read_ahead_stats" => c.ra_stats.text(style, now),
                    "stats" => c.stats.text(style, now),
                    _ => return Err(ENOENT),
                })
            }
            "mdc" => {
                if dev != self.mdc_name(client) {
                    return Err(ENOENT);
                }
                let c = &self.clients[client];
                Ok(match param {
                    "max_rpcs_in_flight" => format!("{}\n", c.mdc_rif),
                    "max_mod_rpcs_in_flight" => format!("{}\n", c.mdc_mod_rif),
                    _ => return Err(ENOENT),
                })
            }
            _ => Err(ENOENT),
        }
    }

    fn ost_nid(&self, ost: u32) -> String {
        let oss = ost as usize / self.cfg.cluster.osts_per_oss;
        format!("10.10.1.{}@tcp", 11 + oss)
    }

    fn import_info(&self, o: &crate::model::Osc, target: &str, nid: &str) -> ImportInfo {
        let mut info = ImportInfo::new_osc(&o.name, target, nid);
        info.state = o.import;
        // every connect after the mount's follows an idle disconnect, which starts a generation
        (info.connection_attempts, info.generation) = (o.conn_cnt, o.conn_cnt);
        info.inflight = o.r_in_flight + o.w_in_flight + o.other_in_flight;
        info.idle_secs = self.secs_since_reply(o) as i64;
        info.connect.max_brw_size = self.cfg.cluster.brw_size_bytes as u32;
        info.connect.initial_grant = (2 * (self.cfg.cluster.brw_size_bytes + crate::model::EXTENT_TAX)) as u32;
        info
    }

    /// Write `value` into a parameter file, as `echo value > file` would.
    pub fn set_param(&mut self, client: usize, name: &str, value: &str) -> Result<(), i32> {
        if client >= self.clients.len() {
            return Err(ENOENT);
        }
        let ram_pages = self.clients[client].ram_pages;
        if name == "max_dirty_mb" {
            // max_dirty_mb_store(): more than 90% of RAM or less than 4 MiB is EINVAL
            let v = kstrtoull(value, 10)?;
            if v.saturating_mul(PAGES_PER_MIB) > ram_pages / 10 * 9 || v < 4 {
                return Err(EINVAL);
            }
            self.clients[client].global_max_dirty_pages = v * PAGES_PER_MIB;
            return Ok(());
        }
        let (kind, dev, param) = Sim::split(name)?;
        let now = self.clock_ns();
        // lprocfs_clear_stats() sets ls_init, the generic stats files' start_time, from 2.15.2 on;
        // 2.15.0 and 2.15.1 never assign it, so their start_time stays 0 through a clear
        let stats_init = if self.style == stats::TextStyle::V2_15_0 { 0 } else { now };
        let brw_pages = self.cfg.cluster.brw_size_bytes / PAGE;
        match kind {
            "osc" => {
                let oi = self.find_osc(client, dev)?;
                let o = &mut self.oscs[oi];
                match param {
                    "max_pages_per_rpc" => {
                        if value.len() > 21 {
                            return Err(EINVAL);
                        }
                        let mut v = sysfs_memparse(value, "B")?;
                        if v >= 1 << 20 {
                            v >>= 12; // a value of at least 1 MiB is in bytes
                        }
                        if v == 0 || v > brw_pages {
                            return Err(ERANGE);
                        }
                        o.mppr = v;
                        adjust_max_dirty(o, ram_pages);
                    }
                    "max_rpcs_in_flight" => {
                        let v = kstrtouint(value, 0)?;
                        if v == 0 || v > 256 {
                            return Err(ERANGE);
                        }
                        o.mrif = v;
                        adjust_max_dirty(o, ram_pages);
                        self.kick(oi);
                    }
                    "max_dirty_mb" => {
                        let v = kstrtoull(value, 10)?;
                        let pages = v.checked_mul(PAGES_PER_MIB).ok_or(ERANGE)?;
                        if pages >= 2048 * PAGES_PER_MIB || pages > ram_pages / 4 {
                            return Err(ERANGE);
                        }
                        o.max_dirty_pages = pages;
                        self.kick(oi);
                    }
                    "short_io_bytes" => {
                        let v = if value.trim() == "-1" { 16384 } else { sysfs_memparse(value, "B")? };
                        if v != 0 && !(64..=1 << 20).contains(&v) {
                            return Err(ERANGE);
                        }
                        // clamped to what fits in an OST_IO request buffer
                        o.short_io_bytes = v.min(65536 - 4096);
                    }
                    "checksums" => o.checksums = kstrtobool(value)?,
                    "checksum_dump" => o.checksum_dump = kstrtobool(value)?,
                    "grant_shrink" => o.grant_shrink = kstrtobool(value)?,
                    "pinger_recov" => o.pinger_recov = kstrtobool(value)?,
                    "checksum_type" => {
                        let v = value.trim_end_matches('\n');
                        o.checksum_type = CHECKSUM_TYPES.iter().copied().find(|t| *t == v).ok_or(EINVAL)?;
                    }
                    "resend_count" => o.resend_count = kstrtouint(value, 10)?,
                    "grant_shrink_interval" => {
                        let v = kstrtouint(value, 0)?;
                        if v == 0 {
                            return Err(ERANGE);
                        }
                        o.grant_shrink_interval = i64::from(v);
                    }
                    "idle_timeout" => {
                        // idle_timeout_store(): "debug"/"nodebug" switch a console message
                        // and leave the timeout alone (Lustre compares six characters of
                        // "nodebug"); at most CONNECTION_SWITCH_MAX seconds
                        if !(value.starts_with("debug") || value.starts_with("nodebu")) {
                            let v = kstrtouint(value, 10)?;
                            if v > CONNECTION_SWITCH_MAX {
                                return Err(ERANGE);
                            }
                            o.idle_timeout = v;
                        }
                    }
                    "active" => {
                        o.active = kstrtobool(value)?;
                        self.kick(oi);
                    }
                    "cur_grant_bytes" => {
                        // osc_cur_grant_bytes_seq_write(): MiB unless a unit is given; shrink
                        // only, and never below one RPC (osc_shrink_grant_to_target())
                        let v = sysfs_memparse(value, "MiB")?;
                        if v < o.avail_grant {
                            o.avail_grant = o.avail_grant.min(v.max(o.mppr * PAGE));
                        }
                    }
                    "osc_cached_mb" => {
                        // osc_cached_mb_seq_write(): shrink this OSC's LRU to N MiB
                        let v = value.trim().strip_prefix("used_mb:").unwrap_or(value).trim();
                        let target = sysfs_memparse(v, "MiB")? / PAGE;
                        self.shrink_osc_cache(client, oi as u32, target);
                    }
                    "rpc_stats" => {
                        o.clear_hists();
                        o.rpc_stats_init_ns = now;
                    }
                    "osc_stats" => o.osc_stats_init_ns = now,
                    "stats" => o.counters_mut().stats.clear(stats_init),
                    "cur_dirty_bytes" | "cur_dirty_grant_bytes" | "cur_lost_grant_bytes" | "ost_conn_uuid" | "conn_uuid"
                    | "destroys_in_flight" | "uuid" | "connect_flags" | "import"
                    | "ost_server_uuid" | "state" | "unstable_stats" => return Err(13),
                    _ => return Err(ENOENT),
                }
                Ok(())
            }
            "llite" => {
                if dev != self.llite_name(client) {
                    return Err(ENOENT);
                }
                let c = &mut self.clients[client];
                let mb_pages = |v: &str| -> Result<u64, i32> { Ok(sysfs_memparse(v, "MiB")?.div_ceil(1 << 20) * PAGES_PER_MIB) };
                match param {
                    "max_read_ahead_mb" => {
                        let p = mb_pages(value)?;
                        if p > c.ram_pages / 2 {
                            return Err(ERANGE);
                        }
                        c.ra_max_pages = p;
                    }
                    "max_read_ahead_per_file_mb" => {
                        let p = mb_pages(value)?;
                        if p > c.ra_max_pages {
                            return Err(ERANGE);
                        }
                        c.ra_max_pages_per_file = p;
                    }
                    "max_read_ahead_whole_mb" => {
                        let p = mb_pages(value)?;
                        if p > c.ra_max_pages_per_file {
                            return Err(ERANGE);
                        }
                        c.ra_max_read_ahead_whole_pages = p;
                    }
                    "read_ahead_async_file_threshold_mb" => {
                        let p = kstrtoull(value, 10)?.checked_mul(PAGES_PER_MIB).ok_or(ERANGE)?;
                        if p > c.ra_max_pages_per_file {
                            return Err(ERANGE);
                        }
                        c.ra_async_threshold_pages = p;
                    }
                    "read_ahead_range_kb" => {
                        let p = sysfs_memparse(value, "KiB")? / PAGE;
                        if p == 0 || p > c.ra_max_pages_per_file {
                            return Err(ERANGE);
                        }
                        c.ra_range_pages = p;
                    }
                    "max_read_ahead_async_active" => {
                        let v = kstrtouint(value, 10)?;
                        if v > 512 {
                            return Err(ERANGE);
                        }
                        c.ra_async_active = v;
                        // the workqueue runs at least one worker (wq_clamp_max_active())
                        c.ra_workers.resize(v.max(1) as usize);
                    }
                    "checksums" | "checksum_pages" => {
                        // checksums_store() pushes KEY_CHECKSUM to every OSC of the mount
                        let on = kstrtobool(value)?;
                        c.checksums = on;
                        for &o in &c.oscs {
                            self.oscs[o as usize].checksums = on;
                        }
                    }
                    "fast_read" => c.fast_read = kstrtobool(value)?,
                    "statahead_max" => {
                        // statahead_max_store(): a value above LL_SA_RPC_MAX is logged and
                        // ignored, and the write still succeeds
                        let v = kstrtouint(value, 0)?;
                        if v <= LL_SA_RPC_MAX {
                            c.statahead_max = v;
                        }
                    }
                    "max_cached_mb" => {
                        let v = value.trim().strip_prefix("max_cached_mb:").unwrap_or(value).trim();
                        let bytes = sysfs_memparse(v, "MiB")?;
                        if bytes / PAGE > c.ram_pages {
                            return Err(ERANGE);
                        }
                        c.max_cached_pages = (bytes / PAGE).max(64 * PAGES_PER_MIB);
                        // ll_max_cached_mb_seq_write() has the OSCs drop LRU pages at once
                        let most = c.max_cached_pages;
                        self.shrink_cache(client, most);
                    }
                    "read_ahead_stats" => c.ra_stats.clear(stats_init),
                    "stats" => c.stats.clear(stats_init),
                    "uuid" => return Err(13),
                    _ => return Err(ENOENT),
                }
                Ok(())
            }
            "mdc" => {
                if dev != self.mdc_name(client) {
                    return Err(ENOENT);
                }
                let c = &mut self.clients[client];
                let v = kstrtouint(value, 10)?;
                match param {
                    "max_rpcs_in_flight" => {
                        if !(2..=512).contains(&v) {
                            return Err(ERANGE);
                        }
                        c.mdc_rif = v;
                        if c.mdc_mod_rif >= v {
                            c.mdc_mod_rif = v - 1;
                        }
                    }
                    "max_mod_rpcs_in_flight" => {
                        if v == 0 || v >= c.mdc_rif || v > MDT_MAX_MOD_RPCS_PER_CLIENT {
                            return Err(ERANGE);
                        }
                        c.mdc_mod_rif = v;
                    }
                    _ => return Err(ENOENT),
                }
                Ok(())
            }
            _ => Err(ENOENT),
        }
    }

    /// What `set_param` of `param` (`max_rpcs_in_flight`) on a `kind` device (`osc`, `llite`,
    /// `mdc`; "" for the top-level `max_dirty_mb`) of `client` accepts now, in words, for error
    /// messages: Lustre itself answers only ERANGE or EINVAL, which leaves the user guessing.
    /// None for a read-only or unknown parameter. Kept beside `set_param`, whose checks it
    /// describes (`tests/tunables.rs` checks that the bounds it names are the ones enforced).
    pub fn valid_values(&self, client: usize, kind: &str, param: &str) -> Option<String> {
        let c = self.clients.get(client)?;
        let mib = |pages: u64| pages / PAGES_PER_MIB;
        let brw_pages = self.cfg.cluster.brw_size_bytes / PAGE;
        Some(match (kind, param) {
            ("", "max_dirty_mb") => format!("4 to {} MiB (90% of the node's RAM)", mib(c.ram_pages / 10 * 9)),
            ("osc", "max_pages_per_rpc") => {
                format!("1 to {brw_pages} pages (the OSTs' brw_size), or a size from 1M to {}M", brw_pages / PAGES_PER_MIB)
            }
            ("osc", "max_rpcs_in_flight") => "1 to 256".into(),
            ("osc", "max_dirty_mb") => {
                let most = mib(c.ram_pages / 4).min(2047);
                format!("0 to {most} MiB (below 2048 and at most a quarter of the node's RAM)")
            }
            ("osc", "short_io_bytes") => "0 (off), -1 (the default), or 64 to 1M bytes".into(),
            ("osc" | "llite", "checksums")
            | ("llite", "fast_read" | "checksum_pages")
            | ("osc", "checksum_dump" | "grant_shrink" | "pinger_recov") => "0 or 1 (y/n and on/off too)".into(),
            ("osc", "checksum_type") => CHECKSUM_TYPES.join(", "),
            ("osc", "resend_count") => "0 to 4294967295".into(),
            ("osc", "idle_timeout") => format!("0 to {CONNECTION_SWITCH_MAX} seconds, or debug/nodebug"),
            ("osc", "grant_shrink_interval") => "1 or more seconds".into(),
            ("osc", "active") => "0 or 1 (y/n and on/off too)".into(),
            ("osc", "cur_grant_bytes") => {
                "a size, in MiB unless a unit is given (only a smaller grant than now takes effect, and not below one RPC)".into()
            }
            ("llite", "max_read_ahead_mb") => format!("0 to {} MiB (half the node's RAM)", mib(c.ram_pages / 2)),
            ("llite", "max_read_ahead_per_file_mb") => format!("0 to {} MiB (max_read_ahead_mb)", mib(c.ra_max_pages)),
            ("llite", "max_read_ahead_whole_mb" | "read_ahead_async_file_threshold_mb") => {
                format!("0 to {} MiB (max_read_ahead_per_file_mb)", mib(c.ra_max_pages_per_file))
            }
            ("llite", "read_ahead_range_kb") => format!("4 to {} KiB (max_read_ahead_per_file_mb)", c.ra_max_pages_per_file * 4),
            ("llite", "max_read_ahead_async_active") => "0 to 512".into(),
            // never refused for its size: above LL_SA_RPC_MAX the write is ignored
            ("llite", "statahead_max") => format!("a whole number; above {LL_SA_RPC_MAX} the write is ignored"),
            ("llite", "max_cached_mb") => format!("0 to {} MiB (the node's RAM)", mib(c.ram_pages)),
            ("mdc", "max_rpcs_in_flight") => "2 to 512".into(),
            ("mdc", "max_mod_rpcs_in_flight") => format!(
                "1 to {} (less than max_rpcs_in_flight, and at most the MDT's {MDT_MAX_MOD_RPCS_PER_CLIENT})",
                c.mdc_rif.saturating_sub(1).min(MDT_MAX_MOD_RPCS_PER_CLIENT)
            ),
            _ => return None,
        })
    }

    /// `strerror(errno)` of a refused write of `name` (`osc.<dev>.max_rpcs_in_flight`,
    /// `osc.max_rpcs_in_flight` or `max_dirty_mb`) on `client`, followed by what would have been
    /// accepted when the value was out of range or not understood.
    pub fn refusal(&self, client: usize, name: &str, errno: i32) -> String {
        let text = crate::parse::strerror(errno);
        let kind = name.split_once('.').map_or("", |(k, _)| k);
        let param = name.rsplit('.').next().unwrap_or(name);
        match self.valid_values(client, kind, param) {
            Some(valid) if errno == ERANGE || errno == EINVAL => format!("{text}; valid: {valid}"),
            _ => text.to_string(),
        }
    }

    /// Apply a device-less name (`osc.max_rpcs_in_flight`) to every matching device of every client.
    pub fn set_everywhere(&mut self, name: &str, value: &str) -> Result<(), i32> {
        let (kind, param) = name.split_once('.').ok_or(ENOENT)?;
        for client in 0..self.clients.len() {
            let devs: Vec<String> = match kind {
                "osc" => self.clients[client].oscs.iter().map(|&o| self.oscs[o as usize].name.clone()).collect(),
                "llite" => vec![self.llite_name(client)],
                "mdc" => vec![self.mdc_name(client)],
                _ => return Err(ENOENT),
            };
            for d in devs {
                self.set_param(client, &format!("{kind}.{d}.{param}"), value)?;
            }
        }
        Ok(())
    }
}
