//! Sets of page runs: `BTreeMap<first, last>` of disjoint inclusive runs, and sorted run lists.

use std::collections::BTreeMap;

/// Append pages [s, e] to `runs` (in page order), joining them to the last run if they follow it.
pub(crate) fn push_run(runs: &mut Vec<(u64, u64)>, s: u64, e: u64) {
    match runs.last_mut() {
        Some((_, last)) if *last + 1 == s => *last = e,
        _ => runs.push((s, e)),
    }
}

/// Insert [s, e] into a set of disjoint intervals; returns how many pages were new.
pub fn interval_insert(set: &mut BTreeMap<u64, u64>, s: u64, e: u64) -> u64 {
    let mut ns = s;
    let mut ne = e;
    let mut covered = 0;
    let mut remove = Vec::new();
    if let Some((&a, &b)) = set.range(..s).next_back() {
        if b + 1 >= s {
            remove.push(a);
        }
    }
    for (&a, _) in set.range(s..=e.saturating_add(1)) {
        remove.push(a);
    }
    for a in remove {
        let b = set.remove(&a).expect("present");
        let (is, ie) = (a.max(s), b.min(e));
        if is <= ie {
            covered += ie - is + 1;
        }
        ns = ns.min(a);
        ne = ne.max(b);
    }
    set.insert(ns, ne);
    (e - s + 1) - covered
}

/// Remove [s, e] from a set of disjoint intervals; returns how many pages were removed.
pub fn interval_remove(set: &mut BTreeMap<u64, u64>, s: u64, e: u64) -> u64 {
    let mut removed = 0;
    let mut hits = Vec::new();
    if let Some((&a, &b)) = set.range(..s).next_back() {
        if b >= s {
            hits.push((a, b));
        }
    }
    for (&a, &b) in set.range(s..=e) {
        hits.push((a, b));
    }
    for (a, b) in hits {
        set.remove(&a);
        let (is, ie) = (a.max(s), b.min(e));
        removed += ie - is + 1;
        if a < s {
            set.insert(a, s - 1);
        }
        if b > e {
            set.insert(e + 1, b);
        }
    }
    removed
}

/// Sub-ranges of [s, e] not covered by `runs` (sorted, disjoint, within [s, e]).
pub(crate) fn run_gaps(runs: &[(u64, u64)], s: u64, e: u64) -> Vec<(u64, u64)> {
    let mut gaps = Vec::new();
    let mut at = s;
    for &(a, b) in runs {
        if a > at {
            gaps.push((at, a - 1));
        }
        at = b + 1;
    }
    if at <= e {
        gaps.push((at, e));
    }
    gaps
}

/// Sub-ranges of [s, e] not covered by the set.
pub fn interval_gaps(set: &BTreeMap<u64, u64>, s: u64, e: u64) -> Vec<(u64, u64)> {
    let mut gaps = Vec::new();
    let mut p = s;
    if let Some((_, &b)) = set.range(..s).next_back() {
        if b >= s {
            p = b + 1;
        }
    }
    for (&a, &b) in set.range(s..=e) {
        if p > e {
            break;
        }
        if a > p {
            gaps.push((p, a - 1));
        }
        p = p.max(b + 1);
    }
    if p <= e {
        gaps.push((p, e));
    }
    gaps
}

/// Read chunks in flight overlapping [s, e], in page order.
pub(crate) fn overlapping(map: &BTreeMap<u64, (u64, u32)>, s: u64, e: u64) -> Vec<(u64, u64, u32)> {
    let mut out = Vec::new();
    if let Some((&a, &(b, id))) = map.range(..s).next_back() {
        if b >= s {
            out.push((a, b, id));
        }
    }
    for (&a, &(b, id)) in map.range(s..=e) {
        out.push((a, b, id));
    }
    out
}
