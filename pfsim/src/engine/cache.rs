//! The llite page cache: the pages a client keeps per file, its LRU, the reclaim against
//! `max_cached_mb` and the node's page cache, and the held set of pages the reclaim cannot drop
//! until a write RPC's reply makes them clean.

use super::*;

/// How many LRU entries ahead of the one it drops the reclaim prefetches a bitmap word.
const PREFETCH_AHEAD: usize = 16;

impl Sim {
    /// Put pages [first, last] of `file` (one object, on OSC `osc_i`) in `client`'s page cache, at
    /// the LRU's end, and reclaim if the client is over its limit.
    pub(super) fn insert_cached(&mut self, client: usize, file: u32, first: u64, last: u64, osc_i: u32) {
        if self.files[file as usize].removed {
            return; // a read of it that was in flight when it went
        }
        let added = self.files[file as usize].on_mut(client).cache.insert(first, last);
        if added == 0 {
            return;
        }
        debug_assert_eq!(osc_i, self.lru_osc(client, file, first), "a range put in the cache lies in one object");
        let cl = &mut self.clients[client];
        cl.cached_pages += added;
        push_lru(&mut cl.lru, file, first, last, LruEntry::MOST_PAGES);
        self.oscs[osc_i as usize].cached_pages += added;
        self.shrink_if_over(client);
    }

    /// Reclaim if `client` caches more than it may keep: Lustre's `max_cached_mb` counts every
    /// page, the node's page cache only the clean ones.
    pub(super) fn shrink_if_over(&mut self, client: usize) {
        let cl = &self.clients[client];
        let keep = cl.max_cached_pages.min(cl.page_cache_pages.saturating_add(cl.dirty_pages));
        if cl.cached_pages > keep {
            self.shrink_cache(client, keep);
        }
    }

    /// Drop `client`'s least recently cached clean pages until at most `target` pages remain
    /// (`osc_lru_shrink()` for `max_cached_mb`; the kernel's reclaim for `client_page_cache`).
    /// Pages that are dirty or in a write RPC cannot be dropped: they leave the LRU for the
    /// client's held set until a write RPC's reply makes them clean (`release_held`), and the
    /// cache stays above `target` while they hold it. (Lustre would make the writer wait for an
    /// LRU slot instead; pfsim lets it write.) One pass over the LRU at most; an entry leaves it
    /// once, so a reclaim behind many dirty entries walks each of them once, not at every page
    /// cached.
    pub(crate) fn shrink_cache(&mut self, client: usize, target: u64) {
        let mut budget = self.clients[client].lru.len();
        while self.clients[client].cached_pages > target && budget > 0 {
            budget -= 1;
            // the bitmap word of an entry some places on is rarely in the CPU's cache (a random
            // writer's old pages): ask for it now, so that its `drop_cached` does not wait
            if let Some(ahead) = self.clients[client].lru.get(PREFETCH_AHEAD) {
                self.files[ahead.file() as usize].on(client).cache.prefetch(ahead.first());
            }
            let Some(entry) = self.clients[client].lru.pop_front() else { break };
            let (file, first, last) = (entry.file(), entry.first(), entry.last());
            let o = self.lru_osc(client, file, first);
            let pinned = self.pinned_pages(client, file, first, last);
            if pinned.is_empty() {
                self.drop_cached(client, file, first, last, o); // the usual case, without allocating
                continue;
            }
            for (s, e) in run_gaps(&pinned, first, last) {
                self.drop_cached(client, file, s, e, o);
            }
            let held = self.clients[client].held.entry(file).or_default();
            for &(s, e) in &pinned {
                interval_insert(held, s, e);
            }
        }
    }

    /// A write RPC of `client` carried `extents` (object pages) of object `obj` of `file`: the
    /// pages of them the reclaim held rejoin the LRU, but for pages still dirty. Where the node's
    /// page cache is the tighter limit they go to its front, the next the reclaim drops: the
    /// kernel's reclaim marked them for immediate reclaim when it met them under write-back, and
    /// the end of their write-back moves them to the inactive list's tail, where it takes its
    /// next pages (`folio_rotate_reclaimable()`). Under `max_cached_mb` they go to its end, as
    /// Lustre's LRU takes a page back once its write is done (`osc_lru_add_batch()`).
    pub(super) fn release_held(&mut self, client: usize, file: u32, obj: u64, extents: &[(u64, u64)]) {
        if !self.clients[client].held.contains_key(&file) {
            return;
        }
        let f = &self.files[file as usize];
        let Some(stripe) = f.obj_ids.iter().position(|&o| o == obj) else { return };
        let runs: Vec<(u64, u64)> = extents.iter().flat_map(|&(s, e)| f.object_runs(stripe, s, e)).collect();
        let mut clean: Vec<(u64, u64)> = Vec::new();
        for (fs, fe) in runs {
            let Some(held) = self.clients[client].held.get_mut(&file) else { break };
            let mut parts: Vec<(u64, u64)> = Vec::new();
            for (&a, &b) in held.range(..=fe).rev() {
                if b < fs {
                    break;
                }
                parts.push((a.max(fs), b.min(fe)));
            }
            parts.reverse();
            for &(a, b) in &parts {
                interval_remove(held, a, b);
            }
            for (a, b) in parts {
                // [a, b] lies in one stripe unit, so in one object, as `pinned_pages` needs
                let pinned = self.pinned_pages(client, file, a, b);
                clean.extend(run_gaps(&pinned, a, b));
                let held = self.clients[client].held.entry(file).or_default();
                for (ps, pe) in pinned {
                    interval_insert(held, ps, pe);
                }
            }
        }
        let cl = &mut self.clients[client];
        if cl.page_cache_pages.saturating_add(cl.dirty_pages) < cl.max_cached_pages {
            for &(s, e) in clean.iter().rev() {
                push_lru_front(&mut cl.lru, file, s, e, LruEntry::MOST_PAGES);
            }
        } else {
            for (s, e) in clean {
                push_lru(&mut cl.lru, file, s, e, LruEntry::MOST_PAGES);
            }
        }
        if cl.held.get(&file).is_some_and(|h| h.is_empty()) {
            cl.held.remove(&file);
        }
    }

    /// The runs of pages [first, last] of `file` (one LRU entry: one object) that `client` holds
    /// dirty or in a write RPC, in file pages, in order.
    pub(super) fn pinned_pages(&self, client: usize, file: u32, first: u64, last: u64) -> Vec<(u64, u64)> {
        let f = &self.files[file as usize];
        let (stripe, o_first) = f.map(first);
        let o_last = o_first + (last - first);
        let osc_i = self.clients[client].oscs[f.osts[stripe] as usize];
        let Some(oc) = self.oscs[osc_i as usize].objects.get(&f.obj_ids[stripe]) else { return Vec::new() };
        let mut runs: Vec<(u64, u64)> = Vec::new();
        // dirty extents are disjoint, so their ends rise with their starts: one walk back from
        // o_last finds every one that overlaps (a reclaim asks this of every entry it drops)
        for (&s, x) in oc.extents.range(..=o_last).rev() {
            if x.end < o_first {
                break;
            }
            runs.push((s.max(o_first), x.end.min(o_last)));
        }
        if oc.writeback.first_in(o_first, o_last).is_some() {
            runs.extend(run_gaps(&oc.writeback.gaps(o_first, o_last), o_first, o_last));
        }
        runs.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(runs.len());
        for (s, e) in runs {
            match merged.last_mut() {
                Some(m) if s <= m.1 + 1 => m.1 = m.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        merged.into_iter().map(|(s, e)| (s - o_first + first, e - o_first + first)).collect()
    }

    /// The OSC of `client` that holds page `page` of `file` (that of an LRU entry starting there).
    pub(super) fn lru_osc(&self, client: usize, file: u32, page: u64) -> u32 {
        let f = &self.files[file as usize];
        self.clients[client].oscs[f.osts[f.map(page).0] as usize]
    }

    /// Drop the least recently cached pages of OSC `osc_i` (of `client`) until it holds at
    /// most `target` pages (`osc_lru_shrink()`, as a write to `osc_cached_mb` asks).
    pub(crate) fn shrink_osc_cache(&mut self, client: usize, osc_i: u32, target: u64) {
        let entries: Vec<LruEntry> =
            self.clients[client].lru.iter().filter(|e| self.lru_osc(client, e.file(), e.first()) == osc_i).copied().collect();
        let mut dropped = 0usize;
        for e in entries {
            if self.oscs[osc_i as usize].cached_pages <= target {
                break;
            }
            self.drop_cached(client, e.file(), e.first(), e.last(), osc_i);
            dropped += 1;
        }
        let mut lru = std::mem::take(&mut self.clients[client].lru);
        lru.retain(|e| {
            let drop = dropped > 0 && self.lru_osc(client, e.file(), e.first()) == osc_i;
            dropped -= usize::from(drop);
            !drop
        });
        self.clients[client].lru = lru;
    }

    /// Take pages [s, e] of `file` out of `client`'s page cache (one LRU entry, on OSC `o`), and
    /// forget their read-ahead marks.
    pub(super) fn drop_cached(&mut self, client: usize, file: u32, s: u64, e: u64, o: u32) {
        self.uncache(client, file, s, e, o);
        self.forget_ra_marks(client, file, s, e);
    }

    /// The page-cache part of `drop_cached`: the pages and the client's and OSC's counts.
    pub(super) fn uncache(&mut self, client: usize, file: u32, s: u64, e: u64, o: u32) {
        let removed = self.files[file as usize].on_existing_mut(client).map_or(0, |on| on.cache.remove(s, e));
        let cl = &mut self.clients[client];
        cl.cached_pages -= removed.min(cl.cached_pages);
        let osc = &mut self.oscs[o as usize];
        osc.cached_pages -= removed.min(osc.cached_pages);
    }

    /// Forget the read-ahead marks of pages [s, e] of `file` on `client`, which left its page
    /// cache unread, but for pages of reads in flight (read ahead again since). Only to keep the
    /// marks small: a read counts no stale mark.
    pub(super) fn forget_ra_marks(&mut self, client: usize, file: u32, s: u64, e: u64) {
        if !self.clients[client].ra_marks.contains_key(&file) {
            return;
        }
        if !overlapping(&self.files[file as usize].on(client).reading, s, e).is_empty() {
            return;
        }
        self.clients[client].unmark_ra(file, s, e);
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, TEST_THREE_CLIENTS};
    use crate::engine::Sim;
    use crate::intervals::interval_insert;

    /// Pages 0-9, 100-109 and 200-209 cached under a limit of 20, of which the reclaim dropped
    /// 0-9 and held 100-109 (in a write RPC then); 300-309 are cached, and 200-209 go. The limit
    /// falls to 10, and the write RPC's reply releases 100-109. Returns the pages left cached, in
    /// LRU order, once the reclaim has run. Client 0 of the test cluster, whose writers never run
    /// here (no event is processed).
    fn release_over_the_limit(node_page_cache: bool) -> Vec<(u64, u64)> {
        let mut sim = Sim::new(Config::from_json(TEST_THREE_CLIENTS).expect("config")).expect("sim");
        let osc = sim.clients[0].oscs[sim.files[0].osts[0] as usize];
        for first in [0, 100, 200] {
            sim.insert_cached(0, 0, first, first + 9, osc);
        }
        let cl = &mut sim.clients[0];
        if node_page_cache {
            cl.page_cache_pages = 20;
        } else {
            cl.max_cached_pages = 20;
        }
        // what the reclaim did while 100-109 were in a write RPC: 0-9 dropped, 100-109 held
        cl.lru.pop_front();
        cl.lru.pop_front();
        interval_insert(cl.held.entry(0).or_default(), 100, 109);
        sim.uncache(0, 0, 0, 9, osc);
        assert_eq!(sim.clients[0].cached_pages, 20);
        sim.insert_cached(0, 0, 300, 309, osc); // over the limit again: 200-209 go, 100-109 stay held
        assert_eq!(sim.clients[0].cached_pages, 20);
        // the node (or the administrator) wants 10 pages back before the reply comes
        let cl = &mut sim.clients[0];
        if node_page_cache {
            cl.page_cache_pages = 10;
        } else {
            cl.max_cached_pages = 10;
        }
        let obj = sim.files[0].obj_ids[0];
        let (_, o_first) = sim.files[0].map(100);
        sim.release_held(0, 0, obj, &[(o_first, o_first + 9)]);
        sim.shrink_if_over(0);
        assert!(sim.clients[0].held.is_empty());
        sim.check_invariants().expect("invariants");
        sim.clients[0].lru.iter().map(|e| (e.first(), e.last())).collect()
    }

    /// The kernel's reclaim marks a page it meets under write-back for immediate reclaim, and the
    /// end of the write-back moves it to the inactive list's tail, where the reclaim takes its next
    /// page (`folio_rotate_reclaimable()`): the released pages are the next to go.
    #[test]
    fn under_the_node_page_cache_written_pages_the_reclaim_met_go_first() {
        assert_eq!(release_over_the_limit(true), vec![(300, 309)]);
    }

    /// Lustre's LRU takes a page back at its tail once its write is done (`osc_lru_add_batch()`),
    /// behind the pages cached before it, and `osc_lru_shrink()` takes pages from its head.
    #[test]
    fn under_max_cached_mb_written_pages_rejoin_the_lru_behind_the_others() {
        assert_eq!(release_over_the_limit(false), vec![(100, 109)]);
    }
}
