//! Plain state of the simulated components: clients (llite), OSCs, files, threads, RPCs.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};

use crate::stats::{LliteStats, OscCtr, OscStats, RaStats, RpcHists};

pub const PAGE: u64 = 4096;
/// Pages in one MiB, the unit of the `*_mb` tunables.
pub const PAGES_PER_MIB: u64 = (1 << 20) / PAGE;
/// Grant charged per new extent on ldiskfs (grant_extent_tax).
pub const EXTENT_TAX: u64 = 24576;
/// Most extents one write RPC may carry.
pub const MAX_EXTENTS_PER_RPC: usize = 256;
/// Pages a write copies into the page cache before it commits them to the OSCs
/// (`PTLRPC_MAX_BRW_PAGES`: 64 MiB, `ll_write_end()`).
pub const MAX_COMMIT_PAGES: u64 = (64 << 20) / PAGE;
/// Most grant an OSC asks for (`o_undirty`): `OBD_MAX_GRANT & ~(PTLRPC_MAX_BRW_SIZE * 4)`, with
/// `OBD_MAX_GRANT` 2 GiB - 1 and 64 MiB bulk RPCs, so 1,792 MiB - 1 (`osc_announce_cached()`).
/// DIAL's clients never held more than 1,800 MiB of grant and dirty pages on an OSC, with
/// `max_dirty_mb` 2000 (docs/pfsim.md, "Grant"). The OST refuses requests above 2 GiB - 1
/// (`tgt_grant_alloc()`).
pub const MAX_UNDIRTY: u64 = 0x7fff_ffff & !(4 * (64 << 20));
/// Largest LRU entry a preloaded file is cut into (16 MiB).
pub const PRELOAD_PIECE_PAGES: u64 = 4096;
/// Copying one 4 KiB page between the page cache and user memory (about 8 GB/s).
pub const COPY_NS_PER_PAGE: u64 = 500;
/// Linux flusher: dirty data older than dirty_expire_centisecs is written every
/// dirty_writeback_centisecs (defaults 30 s and 5 s).
pub const DIRTY_EXPIRE_NS: u64 = 30_000_000_000;
pub const FLUSH_PERIOD_NS: u64 = 5_000_000_000;
/// The pinger's period, `PING_INTERVAL` = obd_timeout / 4 (obd_timeout's default is 100 s): an
/// import that sent no RPC for that long is pinged, or disconnected if it is idle.
pub const PING_INTERVAL_NS: u64 = 25_000_000_000;
/// The pinger looks at every import due within this much of its wake-up (`ptlrpc_pinger_process_import()`).
pub const PING_SLACK_NS: u64 = 5_000_000_000;

/// A run of dirty pages in one OST object, inside one `max_pages_per_rpc`-aligned window.
#[derive(Clone, Debug)]
pub struct Extent {
    /// Last page, inclusive (the map key is the first page).
    pub end: u64,
    /// max_pages_per_rpc when the extent was created; its pages never leave that window.
    pub mppr: u64,
    pub window_end: u64,
    pub born_ns: u64,
    pub urgent: bool,
    pub file: u32,
    /// Thread waiting for this extent to reach the OST (synchronous write fallback).
    pub sync_waiter: Option<u32>,
}

impl Extent {
    pub fn pages(&self, start: u64) -> u64 {
        self.end - start + 1
    }
}

/// The dirty extents of one OST object, as one OSC sees them.
#[derive(Clone, Debug, Default)]
pub struct ObjectCache {
    pub extents: BTreeMap<u64, Extent>,
    /// Starts of full extents (oo_full_exts) and of urgent ones (oo_urgent_exts).
    pub full: BTreeSet<u64>,
    pub urgent: BTreeSet<u64>,
    /// Starts of high-priority extents (under a lock being called back, oo_hp_exts).
    pub hp: BTreeSet<u64>,
    /// High-priority write RPCs of this object in flight.
    pub hp_in_flight: u32,
    /// Pages in write RPCs in flight (PG_writeback): a write to one of them waits for its RPC
    /// (`cl_page_assume()` -> `wait_on_page_writeback()` in `ll_write_begin()`).
    pub writeback: crate::pageset::PageSet,
}

impl ObjectCache {
    /// Put an extent in the tree and on the lists it belongs to.
    pub fn insert(&mut self, start: u64, e: Extent) {
        if e.pages(start) >= e.mppr {
            self.full.insert(start);
        }
        if e.urgent {
            self.urgent.insert(start);
        }
        self.extents.insert(start, e);
    }

    /// Replace the extent at `start` (taken off the lists with `forget`) and put it on the lists
    /// it now belongs to: `insert` for a key already in the tree, without moving it.
    pub fn update(&mut self, start: u64, e: Extent) {
        if e.pages(start) >= e.mppr {
            self.full.insert(start);
        }
        if e.urgent {
            self.urgent.insert(start);
        }
        *self.extents.get_mut(&start).expect("present") = e;
    }

    /// Take an extent out of the tree and its lists.
    pub fn remove(&mut self, start: u64) -> Option<Extent> {
        let e = self.extents.remove(&start)?;
        self.forget(start);
        Some(e)
    }

    /// Take the extent at `start` off the lists (once it is out of the tree).
    pub fn forget(&mut self, start: u64) {
        if !self.full.is_empty() {
            self.full.remove(&start);
        }
        if !self.urgent.is_empty() {
            self.urgent.remove(&start);
        }
        if !self.hp.is_empty() {
            self.hp.remove(&start);
        }
    }

    /// Make the extents overlapping pages [start, end] high-priority.
    pub fn make_hp(&mut self, start: u64, end: u64) {
        let first = self.extents.range(..=start).next_back().map_or(start, |(&s, _)| s);
        for (&s, e) in self.extents.range(first..=end) {
            if e.end >= start {
                self.hp.insert(s);
            }
        }
    }

    /// Whether any dirty page lies in [start, end].
    pub fn has_pages_in(&self, start: u64, end: u64) -> bool {
        let first = self.extents.range(..=start).next_back().map_or(start, |(&s, _)| s);
        self.extents.range(first..=end).any(|(_, e)| e.end >= start)
    }

    /// Mark every extent born at or before `cutoff` (all with `u64::MAX`) urgent; true if any was.
    pub fn make_urgent(&mut self, cutoff: u64) -> bool {
        let mut any = false;
        for (&s, e) in self.extents.iter_mut() {
            if !e.urgent && e.born_ns <= cutoff {
                e.urgent = true;
                self.urgent.insert(s);
                any = true;
            }
        }
        any
    }
}

/// A queued read: pages of one object submitted together, at most max_pages_per_rpc.
#[derive(Clone, Debug)]
pub struct ReadChunk {
    pub file: u32,
    pub obj: u64,
    pub obj_start: u64,
    pub file_start: u64,
    pub pages: u64,
    pub waiters: Vec<u32>,
    pub readahead: bool,
    /// The next piece of the same batch, queued with this one (a batch is cut at gaps into
    /// pieces of contiguous pages).
    pub next: Option<u32>,
}

/// An OSC's `stats` and `rpc_stats` counters (2.5 KiB), kept out of [`Osc`] and boxed when
/// first changed: most OSCs of a large cluster never send an RPC (scale-1000: 512,000 OSCs, a
/// few thousand busy), and with the counters inline set-up wrote, and the loop walked, 1.4 GiB
/// that stayed as connecting left it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OscCounters {
    pub stats: OscStats,
    pub hists: RpcHists,
}

impl OscCounters {
    /// As an import leaves them after connecting at `t0`: the connect RPC counted, no BRW RPCs;
    /// then its idle disconnect, when `disconnect_us` is not 0.
    pub fn connected(t0: u64, disconnect_us: u32) -> Self {
        let mut stats = OscStats::new(t0);
        stats.add(OscCtr::OstConnect, 400);
        stats.add(OscCtr::ReqWaittime, 400);
        stats.add(OscCtr::ReqActive, 1);
        if disconnect_us != 0 {
            stats.add(OscCtr::ReqActive, 1);
            stats.add(OscCtr::ReqWaittime, disconnect_us as i64);
            stats.add(OscCtr::OstDisconnect, disconnect_us as i64);
        }
        OscCounters { stats, hists: RpcHists::default() }
    }
}

impl Osc {
    /// The counters as they are now (built on the fly for an OSC that never changed them).
    pub fn counters(&self) -> Cow<'_, OscCounters> {
        match &self.counters {
            Some(c) => Cow::Borrowed(c),
            None => Cow::Owned(OscCounters::connected(self.connect_ns, self.quiet_disconnect_us)),
        }
    }

    /// The counters, to change them.
    pub fn counters_mut(&mut self) -> &mut OscCounters {
        if self.counters.is_none() {
            // a quiet disconnect goes into the box with the rest, and is counted there from now on
            let disconnect_us = std::mem::take(&mut self.quiet_disconnect_us);
            self.counters = Some(Box::new(OscCounters::connected(self.connect_ns, disconnect_us)));
        }
        self.counters.as_mut().expect("boxed above")
    }

    /// `lprocfs_oh_clear()` of every `rpc_stats` histogram (no box needed: connecting leaves
    /// them empty).
    pub fn clear_hists(&mut self) {
        if let Some(c) = self.counters.as_mut() {
            c.hists.clear();
        }
    }

    /// `osc.*.stats` counter `c` as it is now.
    pub fn stat(&self, c: OscCtr) -> crate::stats::Counter {
        *self.counters().stats.get(c)
    }
}

/// One OSC: the client's view of one OST.
#[derive(Debug)]
pub struct Osc {
    pub client: u32,
    pub ost: u32,
    pub name: String,
    // tunables
    pub mppr: u64,
    pub mrif: u32,
    pub max_dirty_pages: u64,
    pub short_io_bytes: u64,
    pub checksums: bool,
    /// One of `stats::CHECKSUM_TYPES`.
    pub checksum_type: &'static str,
    pub resend_count: u32,
    pub grant_shrink_interval: i64,
    pub idle_timeout: u32,
    pub active: bool,
    /// `checksum_dump`: dump pages whose checksum failed (no checksums fail in pfsim).
    pub checksum_dump: bool,
    /// `grant_shrink`: whether the client may give unused grant back (not modelled).
    pub grant_shrink: bool,
    /// `pinger_recov`: whether the pinger reconnects a lost import (no failures in pfsim).
    pub pinger_recov: bool,
    // state
    pub r_in_flight: u32,
    pub w_in_flight: u32,
    /// High-priority write RPCs in flight (lock callbacks), all objects.
    pub hp_in_flight: u32,
    /// Lock requests of this OSC's client on objects of its OST, queued at the OST.
    pub lock_requests: u32,
    /// The next RPC goes to reads first when both directions have work (after a write RPC).
    pub read_turn: bool,
    pub other_in_flight: u32,
    pub dirty_pages: u64,
    pub pending_w_pages: u64,
    pub pending_r_pages: u64,
    pub avail_grant: u64,
    /// Grant the dirty pages hold (`cl_dirty_grant`): a page each and one extent tax per extent,
    /// from the commit until the write RPC's reply (or the extent's discard).
    pub dirty_grant: u64,
    /// Grant of extents discarded unsent (`cl_lost_grant`), reported to the OST with the next
    /// bulk RPC (`osc_announce_cached()`), less what the client borrowed back.
    pub lost_grant: u64,
    pub cached_pages: u64,
    pub objects: BTreeMap<u64, ObjectCache>,
    /// Where the next search for an object to write starts: objects take turns, as on
    /// Lustre's ready lists (`osc_next_obj()` takes the head, `osc_list_maint()` puts the
    /// object back at the tail after its RPC).
    pub next_write_obj: u64,
    pub read_queue: VecDeque<u32>,
    pub cache_waiters: Vec<u32>,
    /// Writers waiting for a page of theirs to leave write-back; they look again after each
    /// write reply of this OSC.
    pub writeback_waiters: Vec<u32>,
    pub last_reply_ns: u64,
    /// The import's state (`imp_state`): FULL; CONNECTING while an idle disconnect or a
    /// reconnect is under way; IDLE after the pinger found it `idle_timeout` without replies,
    /// RPCs or locks (`ptlrpc_check_import_is_idle()`).
    pub import: crate::stats::ImportState,
    /// Changes of `import` since the mount's CONNECTING and FULL, as (clock seconds, state);
    /// the `state` file shows the last 16 entries with those two (`imp_state_hist`).
    pub state_hist: Vec<(u64, crate::stats::ImportState)>,
    /// While CONNECTING: when the disconnect's or the connect's reply comes.
    pub connect_done_ns: u64,
    /// The CONNECTING state is an idle disconnect's (not a reconnect's).
    pub disconnecting: bool,
    /// An RPC waits for the import: the idle disconnect under way is followed by a connect.
    pub reconnect_queued: bool,
    /// When the pinger next looks at this import (`imp_next_ping`): `PING_INTERVAL` after the
    /// last RPC it sent.
    pub next_ping_ns: u64,
    /// Extent locks this OSC holds: with any, its import is never idle (`ns_bref`).
    pub locks: u32,
    /// Connects since the mount (`imp_conn_cnt`); each after an idle disconnect also starts a
    /// new `imp_generation`.
    pub conn_cnt: u32,
    /// The idle disconnect of an OSC whose counters were never boxed: its round trip in µs (0:
    /// none). Most OSCs of a large cluster do nothing but connect and go idle; this keeps their
    /// counters unboxed (see [`OscCounters`]).
    pub(crate) quiet_disconnect_us: u32,
    // statistics
    /// `stats` and `rpc_stats`, boxed when first changed (see [`OscCounters`]); `None` while
    /// they are as connecting at `connect_ns` left them.
    pub(crate) counters: Option<Box<OscCounters>>,
    pub connect_ns: u64,
    pub rpc_stats_init_ns: u64,
    pub osc_stats_init_ns: u64,
    pub osc_read_bytes: u64,
    pub osc_write_bytes: u64,
}

/// Read-ahead state of one open file (`ll_readahead_state`).
#[derive(Clone, Debug, Default)]
pub struct Readahead {
    pub next_page: Option<u64>,
    pub consecutive: u32,
    /// Confirmations of the stride (`ras_consecutive_stride_requests`); stride mode above 1.
    pub stride_requests: u32,
    pub window: u64,
    pub ra_next: u64,
    pub reads: u64,
    /// Byte offset of the last byte read (`ras_last_read_end_bytes`).
    pub last_end: u64,
    /// Bytes read since the last non-sequential read (`ras_consecutive_bytes`).
    pub consecutive_bytes: u64,
    /// The stride: where it was seen first, its period, and the bytes read per period.
    pub stride_offset: u64,
    pub stride_length: u64,
    pub stride_bytes: u64,
}

impl Readahead {
    /// Stride mode (`stride_io_mode`): the same gap and read size seen twice in a row.
    pub fn stride_mode(&self) -> bool {
        self.stride_requests > 1
    }

    /// `read_in_stride_window`: whether a read of `count` bytes at `pos` continues the stride.
    pub fn in_stride_window(&self, pos: u64, count: u64) -> bool {
        if self.stride_length == 0 || self.stride_bytes == 0 || self.stride_bytes == self.stride_length {
            return false;
        }
        let gap = pos as i128 - self.last_end as i128 - 1;
        if gap == 0 {
            return self.consecutive_bytes + count <= self.stride_bytes;
        }
        (self.stride_length - self.stride_bytes) as i128 == gap
            && self.consecutive_bytes == self.stride_bytes
            && count <= self.stride_bytes
    }

    /// `ras_detect_read_pattern`: update the stride detector with a read of `count` bytes at
    /// `pos` (page `p0`) that is or is not `sequential`; whether it confirms the stride, which
    /// asks for a larger window. A read that is neither sequential nor on the stride drops the
    /// window; a sequential one off the stride drops the stride.
    pub fn detect_pattern(&mut self, pos: u64, count: u64, sequential: bool, p0: u64) -> bool {
        let mut confirmed = false;
        if !sequential {
            if self.in_stride_window(pos, count) {
                self.consecutive = 0;
                self.stride_requests += 1;
                confirmed = self.stride_mode();
            } else {
                if self.stride_requests == 0 {
                    self.init_stride(pos);
                } else {
                    self.reset_stride();
                }
                self.consecutive = 0;
                self.window = 0;
                self.ra_next = 0;
            }
            self.consecutive_bytes = 0;
        } else if self.stride_mode() && !self.in_stride_window(pos, count) {
            self.reset_stride();
            self.window = 0;
            self.ra_next = p0;
        }
        self.consecutive_bytes += count;
        self.last_end = pos + count - 1;
        confirmed
    }

    /// `ras_init_stride_detector`: take the gap before `pos` and the bytes read before it as a
    /// candidate stride.
    pub fn init_stride(&mut self, pos: u64) {
        if pos <= self.last_end {
            self.reset_stride();
            return;
        }
        self.stride_bytes = self.consecutive_bytes;
        self.stride_length = pos - self.last_end - 1 + self.consecutive_bytes;
        self.stride_requests += 1;
        self.stride_offset = pos;
    }

    /// `ras_stride_reset`.
    pub fn reset_stride(&mut self) {
        self.stride_requests = 0;
        self.stride_length = 0;
        self.stride_bytes = 0;
    }

    /// `stride_byte_count`: the bytes of the stride's runs within [off, off + length).
    pub fn stride_byte_count(&self, off: u64, length: u64) -> u64 {
        let (st_off, st_len, st_bytes) = (self.stride_offset, self.stride_length, self.stride_bytes);
        let start = off.saturating_sub(st_off);
        let end = (off + length).saturating_sub(st_off);
        if st_len == 0 || length == 0 || end == 0 {
            return length;
        }
        let (start, start_left) = (start / st_len, start % st_len);
        let start_left = st_bytes.saturating_sub(start_left);
        let (end, end_left) = (end / st_len, (end % st_len).min(st_bytes));
        if start == end {
            end_left.saturating_sub(st_bytes - start_left)
        } else {
            start_left + st_bytes * (end - start - 1) + end_left
        }
    }

    /// `ras_stride_increase_window`: grow the window (pages from `start_page`) so that it holds
    /// `inc` more bytes of the stride's runs, unless that would put more than `max_pages` of
    /// them in it.
    pub fn stride_increase_window(&mut self, start_page: u64, mut inc: u64, max_pages: u64, page: u64) {
        let end = (start_page + self.window) * page;
        let covered = end.saturating_sub(self.stride_offset);
        let left = covered % self.stride_length;
        let mut window_bytes = self.window * page;
        let mut done = false;
        if left < self.stride_bytes {
            if self.stride_bytes - left >= inc {
                window_bytes += inc;
                done = true;
            } else {
                window_bytes += self.stride_bytes - left;
                inc -= self.stride_bytes - left;
            }
        } else {
            window_bytes += self.stride_length - left;
        }
        if !done {
            window_bytes += inc / self.stride_bytes * self.stride_length + inc % self.stride_bytes;
        }
        let pages = self.stride_byte_count(start_page * page, window_bytes).div_ceil(page);
        if pages <= max_pages || self.window == 0 {
            self.window = window_bytes / page;
        }
    }

    /// Whether page `p` lies in one of the stride's runs (`ras_inside_ra_window`).
    pub fn page_in_stride(&self, p: u64, page: u64) -> bool {
        let pos = p * page;
        if pos >= self.stride_offset {
            let offset = (pos - self.stride_offset) % self.stride_length;
            offset < self.stride_bytes || self.stride_length - offset < page
        } else {
            pos + page > self.stride_offset
        }
    }
}

/// When each of a set of identical workers (a node's cores, its read-ahead workers) is next
/// free. The one free first is found in O(log n) instead of a scan of all of them: a node may
/// have thousands of cores, and every system call asks.
#[derive(Clone, Debug)]
pub struct Workers {
    free_at: Vec<u64>,
    /// (free at, index), the earliest on top and the lowest index among equals, as a scan in
    /// index order would pick. An entry whose time is no longer its worker's is stale, and
    /// skipped.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
}

impl Workers {
    /// `n` workers (at least one), all free from time 0.
    pub fn new(n: usize) -> Workers {
        let n = n.max(1);
        Workers { free_at: vec![0; n], heap: (0..n).map(|i| Reverse((0, i))).collect() }
    }

    /// The worker free first (the lowest index among equals) and when it is free.
    pub fn earliest(&mut self) -> (usize, u64) {
        loop {
            let Reverse((t, i)) = *self.heap.peek().expect("at least one worker");
            if self.free_at[i] == t {
                return (i, t);
            }
            self.heap.pop();
        }
    }

    /// Worker `i` is busy until `until` (never earlier than it was).
    pub fn book(&mut self, i: usize, until: u64) {
        debug_assert!(until >= self.free_at[i], "worker {i} booked back in time");
        if until != self.free_at[i] {
            self.free_at[i] = until;
            self.heap.push(Reverse((until, i)));
        }
    }

    /// `n` workers (at least one): new ones are free, the ones beyond `n` go.
    pub fn resize(&mut self, n: usize) {
        self.free_at.resize(n.max(1), 0);
        self.heap = self.free_at.iter().enumerate().map(|(i, &t)| Reverse((t, i))).collect();
    }
}

/// One mounted file system on a client node (llite instance) and the node itself.
#[derive(Debug)]
pub struct Client {
    pub index: u32,
    pub instance: u64,
    pub ram_pages: u64,
    pub cpus: u32,
    pub oscs: Vec<u32>,
    /// ptlrpcd: RPC build/send/interpret work is serialised on it.
    pub cpu_free_at: u64,
    /// Read-ahead workers (max_read_ahead_async_active): when each is next free.
    pub ra_workers: Workers,
    /// The node's cores, as application threads use them: when each is next free. A system
    /// call's CPU work (copying pages, setting them up) waits for a core when every core is busy,
    /// so more threads than cores share them; with no more threads than cores it never waits.
    pub app_cores: Workers,
    // llite tunables (pages where Lustre keeps pages)
    pub ra_max_pages: u64,
    pub ra_max_pages_per_file: u64,
    pub ra_max_read_ahead_whole_pages: u64,
    pub ra_async_threshold_pages: u64,
    pub ra_range_pages: u64,
    pub ra_async_active: u32,
    pub max_cached_pages: u64,
    /// Clean pages the node's page cache keeps (`client_page_cache`; u64::MAX: no limit
    /// but `max_cached_pages`). Pages that are dirty or in a write RPC are kept beyond it.
    pub page_cache_pages: u64,
    pub checksums: bool,
    pub fast_read: bool,
    pub statahead_max: u32,
    pub global_max_dirty_pages: u64,
    pub mdc_rif: u32,
    pub mdc_mod_rif: u32,
    // state
    pub ra_inflight_pages: u64,
    pub cached_pages: u64,
    pub dirty_pages: u64,
    /// Ranges put in the page cache, oldest first.
    pub lru: crate::chunked::ChunkedDeque<LruEntry>,
    /// Per file: cached pages the reclaim met at the LRU's front while they were dirty or in a
    /// write RPC, in file pages (disjoint runs). They stay out of the LRU until a write RPC's
    /// reply makes them clean, and then go to its front under the node's page cache (the next
    /// the reclaim drops, as Linux's `folio_rotate_reclaimable()`) or to its end under
    /// `max_cached_mb` (Lustre's `osc_lru_add_batch()`): `Sim::release_held`. Only files with
    /// such pages have an entry.
    pub held: BTreeMap<u32, BTreeMap<u64, u64>>,
    pub reclaim_count: u32,
    pub stats: LliteStats,
    pub ra_stats: RaStats,
    /// Per file: pages brought in by read-ahead that no read has reached yet, cached or still
    /// in flight (`vpg_defer_uptodate`): the first read of one counts a read-ahead hit. Only
    /// files with such pages have an entry.
    pub ra_marks: BTreeMap<u32, crate::pageset::PageSet>,
    pub app_read_bytes: u64,
    pub app_write_bytes: u64,
    /// The application threads on this node.
    pub threads: Vec<u32>,
}

/// Pages [first, last] of `file`, put in a client's page cache together, all in one object:
/// one entry of the client's LRU, in 12 bytes, since the LRU is most of what a long run
/// allocates (scale-1000's random 8 KiB writers put 2.9 million entries in 10 s). The entry
/// does not keep its OSC, which the file's layout gives again (`Sim::lru_osc`). `span` holds
/// the first page in its low 48 bits (sizes stop at 1 EiB, 2^48 pages: `MAX_SIZE` in
/// pfstune/units.py) and the page count less one in its high 16 (`push_lru` cuts longer ranges).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, packed(4))]
pub struct LruEntry {
    span: u64,
    file: u32,
}

impl LruEntry {
    /// The most pages one entry holds (256 MiB; what enters a cache at once is at most an RPC).
    pub const MOST_PAGES: u64 = 1 << 16;
    const FIRST_BITS: u32 = 48;

    pub fn new(file: u32, first: u64, pages: u64) -> LruEntry {
        assert!(first >> Self::FIRST_BITS == 0, "page {first} beyond 1 EiB");
        debug_assert!((1..=Self::MOST_PAGES).contains(&pages));
        LruEntry { span: first | (pages - 1) << Self::FIRST_BITS, file }
    }

    pub fn file(&self) -> u32 {
        self.file
    }

    pub fn first(&self) -> u64 {
        self.span & ((1 << Self::FIRST_BITS) - 1)
    }

    pub fn last(&self) -> u64 {
        self.first() + (self.span >> Self::FIRST_BITS)
    }
}

/// Put pages [first, last] of `file` at the end of `lru`, in entries of at most `most` pages
/// (`LruEntry::MOST_PAGES` in the simulator).
pub fn push_lru(lru: &mut crate::chunked::ChunkedDeque<LruEntry>, file: u32, first: u64, last: u64, most: u64) {
    let mut s = first;
    while s <= last {
        let pages = (last - s + 1).min(most);
        lru.push_back(LruEntry::new(file, s, pages));
        s += pages;
    }
}

/// Put pages [first, last] of `file` at the LRU's front, in the entries `push_lru` would cut
/// and in the same order (the first page is the first the reclaim meets).
pub fn push_lru_front(lru: &mut crate::chunked::ChunkedDeque<LruEntry>, file: u32, first: u64, last: u64, most: u64) {
    let entries = (last - first) / most + 1;
    for k in (0..entries).rev() {
        let s = first + k * most;
        lru.push_front(LruEntry::new(file, s, (last - s + 1).min(most)));
    }
}

impl Client {
    /// Take pages [s, e] of `file` off the read-ahead marks, dropping the file's entry once it
    /// is empty; returns how many of them were marked.
    pub fn unmark_ra(&mut self, file: u32, s: u64, e: u64) -> u64 {
        let Some(marks) = self.ra_marks.get_mut(&file) else { return 0 };
        let removed = marks.remove(s, e);
        if marks.is_empty() {
            self.ra_marks.remove(&file);
        }
        removed
    }
}

/// A file: its layout and, per client, what of it is cached.
#[derive(Debug)]
pub struct File {
    /// Bytes: the size set-up gave it, grown by writes past its end (filebench's sequential
    /// writers).
    pub size: u64,
    pub stripe_size: u64,
    pub osts: Vec<u32>,
    pub obj_ids: Vec<u64>,
    /// Per client that has had anything of the file: its index in `on_clients` (`NOT_ON` for
    /// the others). Most files of a large cluster are used by a few of its clients.
    slot: Vec<u32>,
    on_clients: Vec<OnClient>,
    /// Granted extent locks, per stripe object.
    pub locks: Vec<crate::lockset::LockSet>,
    /// Unlinked (IOR between repetitions): nothing of it enters a page cache again.
    pub removed: bool,
}

/// What one client holds of one file.
#[derive(Clone, Debug, Default)]
pub struct OnClient {
    /// Cached pages.
    pub cache: crate::pageset::PageSet,
    /// Read chunks in flight (file start page -> (end page, chunk id)).
    pub reading: BTreeMap<u64, (u64, u32)>,
    pub dirty_pages: u64,
    pub writes_in_flight: u32,
}

/// A client's share of a file it has had nothing of.
static NOTHING: OnClient = OnClient { cache: crate::pageset::PageSet::new(), reading: BTreeMap::new(), dirty_pages: 0, writes_in_flight: 0 };
const NOT_ON: u32 = u32::MAX;

impl File {
    /// A file on `clients` clients, none of which has anything of it yet.
    pub fn new(size: u64, stripe_size: u64, osts: Vec<u32>, obj_ids: Vec<u64>, clients: usize) -> File {
        let locks = vec![crate::lockset::LockSet::default(); osts.len()];
        File { size, stripe_size, osts, obj_ids, slot: vec![NOT_ON; clients], on_clients: Vec::new(), locks, removed: false }
    }

    /// What `client` holds of the file (nothing, if it never had anything).
    pub fn on(&self, client: usize) -> &OnClient {
        match self.slot[client] {
            NOT_ON => &NOTHING,
            i => &self.on_clients[i as usize],
        }
    }

    /// What `client` holds of the file, to change it (made on first use).
    pub fn on_mut(&mut self, client: usize) -> &mut OnClient {
        if self.slot[client] == NOT_ON {
            self.slot[client] = self.on_clients.len() as u32;
            self.on_clients.push(OnClient::default());
        }
        &mut self.on_clients[self.slot[client] as usize]
    }

    /// What `client` holds of the file, to change it, if it ever had anything.
    pub fn on_existing_mut(&mut self, client: usize) -> Option<&mut OnClient> {
        match self.slot[client] {
            NOT_ON => None,
            i => Some(&mut self.on_clients[i as usize]),
        }
    }

    /// The clients that have had anything of the file, in client order, with what they hold.
    pub fn users(&self) -> impl Iterator<Item = (usize, &OnClient)> {
        self.slot.iter().enumerate().filter(|&(_, &i)| i != NOT_ON).map(|(c, &i)| (c, &self.on_clients[i as usize]))
    }

    /// Map a file page to (stripe index, object page).
    pub fn map(&self, page: u64) -> (usize, u64) {
        let sp = self.stripe_size / PAGE;
        let n = self.osts.len() as u64;
        let stripe_no = page / sp;
        ((stripe_no % n) as usize, (stripe_no / n) * sp + page % sp)
    }

    /// Last file page of the run of pages that holds `page` and lies contiguously in one object
    /// (a stripe chunk; the whole file when it has a single stripe).
    pub fn chunk_end(&self, page: u64) -> u64 {
        if self.osts.len() == 1 {
            return u64::MAX;
        }
        let sp = self.stripe_size / PAGE;
        (page / sp) * sp + sp - 1
    }

    /// File pages [s, e] in runs that each lie in one stripe chunk (so in one object), in order.
    pub fn chunks(&self, s: u64, e: u64) -> Vec<(u64, u64)> {
        let mut runs = Vec::new();
        let mut p = s;
        while p <= e {
            let q = self.chunk_end(p).min(e);
            runs.push((p, q));
            let Some(next) = q.checked_add(1) else { break };
            p = next;
        }
        runs
    }

    /// Object pages [s, e] of stripe `stripe` as file pages: one run per stripe chunk, in order.
    /// The inverse of `map`.
    pub fn object_runs(&self, stripe: usize, s: u64, e: u64) -> Vec<(u64, u64)> {
        let n = self.osts.len() as u64;
        if n == 1 {
            return vec![(s, e)];
        }
        let sp = self.stripe_size / PAGE;
        let mut runs = Vec::new();
        let mut p = s;
        while p <= e {
            let unit_end = ((p / sp) * sp + sp - 1).min(e);
            let fp = ((p / sp) * n + stripe as u64) * sp + p % sp;
            runs.push((fp, fp + (unit_end - p)));
            p = unit_end + 1;
        }
        runs
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    Read,
    Write,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpState {
    /// Being admitted into the cache (writes) or submitted (reads).
    Running,
    /// Copying a write's next pages into the page cache, until `Op::ready_at`; they are
    /// committed to the OSCs then.
    Copy,
    /// Blocked on dirty/grant space of an OSC.
    WaitCache,
    /// Waiting for read RPCs or a sync write.
    WaitIo,
    /// Waiting for fsync to drain the file.
    WaitSync,
    /// Waiting to begin: for the file's open on the MDS, or for an extent lock (enqueue, or
    /// callbacks of conflicting locks).
    WaitLock,
    /// Computing before the op is issued (h5bench timesteps, DLIO training steps).
    Think,
    /// Going through the steps before the op (`Op::between`).
    Between,
    /// At a barrier of its job, for the other ranks.
    WaitBarrier,
    /// Removing a file: for the unlink's reply and its node's pages under write-back.
    WaitRemove,
}

/// A step a rank takes before its op: IOR's between two phases (see `workload::next_ior`), and
/// h5bench_read's collective dataset open (see `workload::next_h5`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Wait for every rank of the job.
    Barrier,
    /// Remove the file, if this rank is the one that does.
    Remove,
    /// Wait until rank 0 of the job has opened the dataset this op reads.
    AfterRank0Opens,
}

#[derive(Clone, Debug)]
pub struct Op {
    pub kind: OpKind,
    pub file: u32,
    pub offset: u64,
    pub len: u64,
    /// Next byte still to be committed into the OSCs' cache (writes); the first byte of the
    /// read's next cl_io iteration (reads).
    pub cursor: u64,
    /// End of what the write has copied into the page cache: [cursor, copied) is copied and
    /// waits for its commit (`ll_write_end()`, `vvp_io_write_commit()`).
    pub copied: u64,
    pub started_ns: u64,
    pub state: OpState,
    pub waits: u32,
    pub ready_at: u64,
    pub fsync: bool,
    /// When the write's fsync began: the write itself was over then (and counted in the llite
    /// `write` stats); the op ends when the fsync does.
    pub fsync_ns: Option<u64>,
    /// The op holds references on locks covering it.
    pub locked: bool,
    /// Which of the thread's files (and read-ahead states) the op is on.
    pub slot: usize,
    /// The op opens its file again first (whole-file personalities, a new DLIO file).
    pub reopen: bool,
    /// Steps still to take before the op (IOR between phases); `file` is known after them.
    pub between: &'static [Step],
}

/// What an application thread does; see workload.rs.
#[derive(Clone, Debug)]
pub struct Thread {
    pub client: u32,
    pub job: u32,
    pub role: crate::workload::Role,
    pub files: Vec<u32>,
    pub pos: u64,
    pub op: Option<Op>,
    pub ras: Vec<Readahead>,
    pub start_ns: u64,
    pub stop_ns: u64,
    pub done: bool,
    pub phase: u32,
    /// Loop state of the h5bench and DLIO workloads.
    pub prog: crate::workload::Progress,
    /// Slot of the lock (in its stripe's set) that last covered an op of this thread; only a
    /// place to look first.
    pub lock_hint: u32,
    /// Its lock requests queued at the OSTs (an op's iteration holds its locks once none is).
    pub lock_requests: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RpcPhase {
    ToServer,
    Queued,
    Service,
    Bulk,
    Disk,
    Reply,
}

/// A bulk read or write RPC.
#[derive(Clone, Debug)]
pub struct Rpc {
    pub osc: u32,
    /// The OSC's OST and client (copies: every step of the RPC needs them).
    pub ost: u32,
    pub client: u32,
    pub write: bool,
    pub obj: u64,
    pub start_page: u64,
    pub end_page: u64,
    pub pages: u64,
    pub sent_ns: u64,
    pub phase: RpcPhase,
    pub short_io: bool,
    pub chunks: Vec<u32>,
    pub sync_waiters: Vec<u32>,
    pub files: Vec<(u32, u64)>,
    pub hp: bool,
    /// A write RPC's extents, [start, end] object pages: under write-back until the reply.
    pub extents: Vec<(u64, u64)>,
    /// Its pieces still on the OST's disk (one per contiguous run of its pages).
    pub disk_parts: u32,
}

#[cfg(test)]
mod tests {
    use super::{push_lru, push_lru_front, File, LruEntry, Readahead, Workers, PAGE};

    /// A client that never had anything of a file holds nothing of it and takes no room; the
    /// users come out in client order, whatever order they came in.
    #[test]
    fn object_pages_map_back_to_the_file_pages_they_came_from() {
        for (count, unit) in [(1u32, 1u64 << 20), (4, 64 << 10), (3, 1 << 20)] {
            let f = File::new(1 << 30, unit, (0..count).collect(), (0..count as u64).map(|i| 100 + i).collect(), 1);
            let sp = unit / PAGE;
            for stripe in 0..count as u64 {
                for (s, e) in [(0, 0), (0, 3 * sp - 1), (sp - 1, sp), (5, 2 * sp + 7)] {
                    let runs = f.object_runs(stripe as usize, s, e);
                    let pages: Vec<u64> = runs.iter().flat_map(|&(a, b)| a..=b).collect();
                    assert_eq!(pages.len() as u64, e - s + 1, "{count} stripes, stripe {stripe}, [{s}, {e}]: {runs:?}");
                    for (i, &page) in pages.iter().enumerate() {
                        assert_eq!(f.map(page), (stripe as usize, s + i as u64), "{count} stripes, file page {page}");
                    }
                    // one run per stripe unit, each inside one (so in one object), as `chunks` cuts
                    assert!(runs.iter().all(|&(a, b)| b <= f.chunk_end(a)), "{runs:?}");
                    for &(a, b) in &runs {
                        assert_eq!(f.chunks(a, b), vec![(a, b)]);
                    }
                }
            }
        }
    }

    #[test]
    fn a_file_keeps_state_only_for_the_clients_that_use_it() {
        let mut f = File::new(1 << 20, 1 << 20, vec![0], vec![1], 1000);
        f.on_mut(900).dirty_pages = 3;
        f.on_mut(7).cache.insert(0, 9);
        assert!(f.on_existing_mut(5).is_none());
        assert_eq!((f.on(5).dirty_pages, f.on(5).cache.len(), f.on(5).reading.len()), (0, 0, 0));
        assert_eq!((f.on(900).dirty_pages, f.on(7).cache.len()), (3, 10));
        let users: Vec<usize> = f.users().map(|(c, _)| c).collect();
        assert_eq!(users, vec![7, 900]);
        f.on_existing_mut(900).expect("a user").writes_in_flight += 1;
        assert_eq!(f.on(900).writes_in_flight, 1);
    }

    /// A range longer than an entry may hold is cut into entries that cover it exactly, in
    /// order, at either end; others take one entry each.
    #[test]
    fn lru_ranges_are_cut_into_entries_that_cover_them() {
        let mut lru = crate::chunked::ChunkedDeque::new();
        push_lru(&mut lru, 7, 10, 17, 3);
        push_lru(&mut lru, 8, 5, 5, 3);
        push_lru(&mut lru, 9, 0, 2, 3);
        let got: Vec<(u32, u64, u64)> = lru.iter().map(|e: &LruEntry| (e.file(), e.first(), e.last())).collect();
        assert_eq!(got, vec![(7, 10, 12), (7, 13, 15), (7, 16, 17), (8, 5, 5), (9, 0, 2)]);
        // at the front, the range comes first and in order
        push_lru_front(&mut lru, 6, 20, 26, 3);
        let got: Vec<(u32, u64, u64)> = lru.iter().take(4).map(|e: &LruEntry| (e.file(), e.first(), e.last())).collect();
        assert_eq!(got, vec![(6, 20, 22), (6, 23, 25), (6, 26, 26), (7, 10, 12)]);
        assert_eq!(std::mem::size_of::<LruEntry>(), 12);
        // the extremes of both fields
        let big = LruEntry::new(u32::MAX, (1 << 48) - 1, LruEntry::MOST_PAGES);
        assert_eq!((big.file(), big.first(), big.last()), (u32::MAX, (1 << 48) - 1, (1 << 48) - 1 + (1 << 16) - 1));
    }

    /// The earliest worker as a scan in index order picks it: the first of the smallest.
    fn scan(free_at: &[u64]) -> (usize, u64) {
        let (i, &t) = free_at.iter().enumerate().min_by_key(|&(_, &t)| t).unwrap();
        (i, t)
    }

    #[test]
    fn workers_pick_the_first_free_as_a_scan_would() {
        let mut rng = crate::rng::Rng::new(5);
        let mut workers = Workers::new(7);
        let mut model = vec![0u64; 7];
        for step in 0..5_000u64 {
            let (i, t) = workers.earliest();
            assert_eq!((i, t), scan(&model), "step {step}");
            // book it for 0-3 ticks (0: no change, ties stay frequent)
            let until = t + rng.below(4);
            workers.book(i, until);
            model[i] = until;
            if step % 997 == 0 {
                let n = 1 + rng.below(9) as usize;
                workers.resize(n);
                model.resize(n, 0);
            }
        }
        assert_eq!(workers.free_at.len(), model.len());
    }

    const K: u64 = 1024;

    /// Feed reads through the detector; whether each one leaves the state in stride mode.
    fn detect(ras: &mut Readahead, reads: &[(u64, u64)]) -> Vec<bool> {
        let mut modes = Vec::new();
        for &(pos, count) in reads {
            let sequential = ras.reads > 0 && pos.abs_diff(ras.last_end + 1) <= 8 * 4096;
            ras.detect_pattern(pos, count, sequential, pos / 4096);
            ras.reads += 1;
            modes.push(ras.stride_mode());
        }
        modes
    }

    #[test]
    fn a_stride_is_confirmed_by_the_fourth_read_and_lost_on_a_different_gap() {
        let mut ras = Readahead::default();
        let reads: Vec<(u64, u64)> = (0..6).map(|i| (1024 * K + i * 256 * K, 64 * K)).collect();
        // 1st read: a gap from 0 with no bytes before it; 2nd: that candidate fails; 3rd: the
        // candidate (gap 192 KiB after 64 KiB); 4th: confirmed
        assert_eq!(detect(&mut ras, &reads), vec![false, false, false, true, true, true]);
        assert_eq!((ras.stride_length, ras.stride_bytes), (256 * K, 64 * K));
        assert!(!detect(&mut ras, &[(100 * 1024 * K, 64 * K)])[0]);
    }

    #[test]
    fn stride_byte_count_counts_only_the_runs() {
        let ras = Readahead {
            stride_offset: 1024 * K,
            stride_length: 256 * K,
            stride_bytes: 64 * K,
            ..Readahead::default()
        };
        // four periods from the first run's start: four runs
        assert_eq!(ras.stride_byte_count(1024 * K, 1024 * K), 256 * K);
        // from the middle of a run to the middle of the run three periods on
        assert_eq!(ras.stride_byte_count(1056 * K, 768 * K), 32 * K + 2 * 64 * K + 32 * K);
        assert!(ras.page_in_stride(1024 * K / 4096, 4096));
        assert!(!ras.page_in_stride((1024 + 64) * K / 4096, 4096));
        assert!(ras.page_in_stride((1024 + 256) * K / 4096, 4096));
    }

    #[test]
    fn the_stride_window_grows_by_the_bytes_of_its_runs() {
        let mut ras = Readahead {
            stride_offset: 1024 * K,
            stride_length: 256 * K,
            stride_bytes: 64 * K,
            ..Readahead::default()
        };
        // 1 MiB more of the stride's data from the start of a run: 16 periods
        ras.stride_increase_window(1024 * K / 4096, 1024 * K, u64::MAX, 4096);
        assert_eq!(ras.window * 4096, 15 * 256 * K + 64 * K);
        // capped: a window holding more than `max_pages` of the runs does not grow
        let before = ras.window;
        ras.stride_increase_window(1024 * K / 4096, 1024 * K, 256, 4096);
        assert_eq!(ras.window, before);
    }
}
