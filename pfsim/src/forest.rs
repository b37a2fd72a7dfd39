//! The leaves a row's own splits leave open in every tree of a compiled LightGBM forest.
//!
//! `pfstune.models.forest.CandidateForest` scores 1,000 OSCs x 99 candidate configurations per
//! tick by deciding each row's splits once: for every tree, the leaves whose path agrees with the
//! row on the splits that test the row's columns (the candidate's splits are decided separately).
//! In numpy that step builds (rows x slots) and (rows x trees x leaves) arrays and took ~30 ms
//! per tick.  Here each tree is walked from its root: a split on a row column sends the walk one
//! way, a split on a candidate column both ways, so only the nodes on open paths are visited.
//! The result is the sparse matrix A (CSR, leaf values as data, a row's leaves in tree order and,
//! within a tree, in leaf order) that the Python side multiplies.
//!
//! The decisions are exactly `CandidateForest._reached`'s (itself LightGBM's `NumericalDecision`
//! over a dense row): |x| <= 1e-35f is 0; a column's value goes left at a split iff fewer than
//! rank + 1 of the column's sorted, distinct thresholds lie below it; a split of missing type
//! Zero sends 0 (and NaN, read as 0) its default way; one of missing type NaN sends NaN its
//! default way.

/// A node of any tree, with what deciding it needs in one place (16 bytes: one cache line holds
/// four nodes, and a walk touches nothing else until it reaches a leaf).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Node {
    kind: u8,
    /// Row splits: `DEFAULT_LEFT`, `ZERO`, `NAN` bits.
    flags: u8,
    /// Row splits: the column tested; leaves: unused.
    column: u16,
    /// Row splits: the threshold's rank among the column's thresholds; leaves: the flat leaf
    /// index (`tree * leaves + l`).
    rank: i32,
    /// Splits: the children's indices in the node array.
    left: u32,
    right: u32,
}

const ROW: u8 = 0;
const BOTH: u8 = 1;
const LEAF: u8 = 2;
const DEFAULT_LEFT: u8 = 1;
const ZERO: u8 = 2;
const NAN: u8 = 4;

/// The trees of a forest as the row's side of `CandidateForest` sees them.
pub struct RowSplits {
    /// Every tree's nodes, one tree after the other; `roots[t]` is tree t's root.
    nodes: Vec<Node>,
    roots: Vec<u32>,
    /// Per column: its thresholds, sorted and distinct (empty for a column no split tests).
    cuts: Vec<Vec<f64>>,
    /// Per leaf (`tree * leaves + l`): its value.
    values: Vec<f64>,
    zero_threshold: f64,
}

/// The open leaves of many rows: CSR (indptr, indices, data) over `trees * leaves` columns.
pub struct OpenLeaves {
    pub indptr: Vec<i64>,
    pub indices: Vec<i32>,
    pub data: Vec<f64>,
}

/// One tree's nodes as the Python side lists them: (kind, number, left, right) with kind 0 a
/// row split, 1 a split the row does not decide, 2 a leaf.
pub type NodeRecord = (u8, usize, usize, usize);

impl RowSplits {
    /// Check the layout and keep it.  `cuts` lists (column, thresholds) for the tested columns.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        leaves: usize,
        bits: usize,
        columns: usize,
        column: Vec<usize>,
        rank: Vec<i64>,
        default_left: Vec<bool>,
        zero: Vec<bool>,
        nan: Vec<bool>,
        cuts: Vec<(usize, Vec<f64>)>,
        trees: Vec<Vec<NodeRecord>>,
        values: Vec<f64>,
        zero_threshold: f64,
    ) -> Result<RowSplits, String> {
        let slots = trees.len() * bits;
        if bits == 0 || bits > 64 {
            return Err(format!("{bits} bits per tree: 1..64 expected"));
        }
        for (name, len) in [
            ("column", column.len()),
            ("rank", rank.len()),
            ("default_left", default_left.len()),
            ("zero", zero.len()),
            ("nan", nan.len()),
        ] {
            if len != slots {
                return Err(format!("{name} has {len} slots, not {slots}"));
            }
        }
        if values.len() != trees.len() * leaves {
            return Err(format!("{} leaf values, not {}", values.len(), trees.len() * leaves));
        }
        if column.iter().any(|&c| c >= columns) {
            return Err("a split tests a column beyond the row".to_string());
        }
        let mut by_column = vec![Vec::new(); columns];
        for (c, thresholds) in cuts {
            if c >= columns {
                return Err("thresholds for a column beyond the row".to_string());
            }
            by_column[c] = thresholds;
        }
        if columns > usize::from(u16::MAX) {
            return Err(format!("{columns} columns: at most {} supported", u16::MAX));
        }
        let mut nodes = Vec::new();
        let mut roots = Vec::with_capacity(trees.len());
        for (t, records) in trees.into_iter().enumerate() {
            let (start, count) = (nodes.len(), records.len());
            roots.push(u32::try_from(start).map_err(|_| "too many nodes".to_string())?);
            let at = |i: usize| u32::try_from(start + i).map_err(|_| "too many nodes".to_string());
            for (kind, number, left, right) in records {
                let node = match kind {
                    0 if number < bits && left < count && right < count => {
                        let s = t * bits + number;
                        if rank[s] < 0 {
                            return Err(format!("row split {number} of tree {t} has no threshold"));
                        }
                        let flags = u8::from(default_left[s]) * DEFAULT_LEFT
                            + u8::from(zero[s]) * ZERO
                            + u8::from(nan[s]) * NAN;
                        let rank = i32::try_from(rank[s]).map_err(|_| "a rank beyond 32 bits".to_string())?;
                        // column[s] < columns <= u16::MAX, checked above
                        Node {
                            kind: ROW,
                            flags,
                            column: column[s] as u16,
                            rank,
                            left: at(left)?,
                            right: at(right)?,
                        }
                    }
                    1 if left < count && right < count => Node {
                        kind: BOTH,
                        flags: 0,
                        column: 0,
                        rank: 0,
                        left: at(left)?,
                        right: at(right)?,
                    },
                    2 if number < leaves => {
                        let leaf = i32::try_from(t * leaves + number).map_err(|_| "too many leaves".to_string())?;
                        Node {
                            kind: LEAF,
                            flags: 0,
                            column: 0,
                            rank: leaf,
                            left: 0,
                            right: 0,
                        }
                    }
                    _ => return Err(format!("a node ({kind}, {number}, {left}, {right}) out of its tree")),
                };
                nodes.push(node);
            }
            if count == 0 {
                return Err(format!("tree {t} has no node"));
            }
        }
        Ok(RowSplits {
            nodes,
            roots,
            cuts: by_column,
            values,
            zero_threshold,
        })
    }

    /// The open leaves of each row of `rows` (row-major, `columns` values per row).
    pub fn open_leaves(&self, rows: &[f64], columns: usize) -> OpenLeaves {
        let n = rows.len().checked_div(columns).unwrap_or(0);
        let mut out = OpenLeaves {
            indptr: Vec::with_capacity(n + 1),
            indices: Vec::with_capacity(n * self.roots.len() * 2),
            data: Vec::with_capacity(n * self.roots.len() * 2),
        };
        out.indptr.push(0);
        let mut known = vec![0.0f64; columns];
        let mut unknown = vec![false; columns];
        let mut ranks = vec![0i64; columns];
        let mut stack: Vec<u32> = Vec::with_capacity(64);
        for row in rows.chunks_exact(columns.max(1)).take(n) {
            for (c, &x) in row.iter().enumerate() {
                // LightGBM leaves |x| <= 1e-35f out of the row it builds: 0.  NaN stays NaN.
                let value = if x.abs() <= self.zero_threshold { 0.0 } else { x };
                unknown[c] = value.is_nan();
                known[c] = if unknown[c] { 0.0 } else { value };
                let cuts = &self.cuts[c];
                // numpy's searchsorted (side="left"): how many thresholds lie below the value.
                ranks[c] = if cuts.is_empty() {
                    0
                } else {
                    cuts.partition_point(|&t| t < known[c]) as i64
                };
            }
            for &root in &self.roots {
                stack.clear();
                stack.push(root);
                // Left before right: the open leaves come out in leaf order (the walk that
                // numbered them went left first too).
                while let Some(at) = stack.pop() {
                    let node = self.nodes[at as usize];
                    match node.kind {
                        LEAF => {
                            out.indices.push(node.rank);
                            out.data.push(self.values[node.rank as usize]);
                        }
                        ROW => {
                            let c = usize::from(node.column);
                            let missing =
                                (node.flags & ZERO != 0 && known[c] == 0.0) || (node.flags & NAN != 0 && unknown[c]);
                            let goes_left = if missing {
                                node.flags & DEFAULT_LEFT != 0
                            } else {
                                ranks[c] <= i64::from(node.rank)
                            };
                            stack.push(if goes_left { node.left } else { node.right });
                        }
                        _ => {
                            stack.push(node.right);
                            stack.push(node.left);
                        }
                    }
                }
            }
            out.indptr.push(out.indices.len() as i64);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One tree: the root splits row column 0 at 1.5 (slot 0); its left child splits row column 1
    /// at 0.0 (slot 1, missing type NaN, default right); its right child splits a candidate
    /// column.  Leaves in walk order: 0 (left, left), 1 (left, right), 2 and 3 (right, either).
    fn tiny() -> RowSplits {
        RowSplits::new(
            4,
            8,
            2,
            vec![0, 1, 0, 0, 0, 0, 0, 0],
            vec![0, 0, -1, -1, -1, -1, -1, -1],
            vec![false; 8],
            vec![false; 8],
            vec![false, true, false, false, false, false, false, false],
            vec![(0, vec![1.5]), (1, vec![0.0])],
            vec![vec![
                (0, 0, 1, 2),
                (0, 1, 3, 4),
                (1, 0, 5, 6),
                (2, 0, 0, 0),
                (2, 1, 0, 0),
                (2, 2, 0, 0),
                (2, 3, 0, 0),
            ]],
            vec![10.0, 20.0, 30.0, 40.0],
            f64::from(1e-35f32),
        )
        .unwrap()
    }

    #[test]
    fn each_row_opens_its_leaves() {
        let splits = tiny();
        let rows = [1.0, -1.0, 1.0, 5.0, 2.0, 0.0, 1.0, f64::NAN, 1.5, 1e-40];
        let open = splits.open_leaves(&rows, 2);
        assert_eq!(open.indptr, vec![0, 1, 2, 4, 5, 6]);
        assert_eq!(open.indices, vec![0, 1, 2, 3, 1, 0]);
        assert_eq!(open.data, vec![10.0, 20.0, 30.0, 40.0, 20.0, 10.0]);
    }

    #[test]
    fn zero_as_missing_goes_the_default_way() {
        // One split of missing type Zero on column 0 at -1.0, default left: 0 and NaN go left.
        let splits = RowSplits::new(
            2,
            8,
            1,
            vec![0; 8],
            vec![0, -1, -1, -1, -1, -1, -1, -1],
            vec![true, false, false, false, false, false, false, false],
            vec![true, false, false, false, false, false, false, false],
            vec![false; 8],
            vec![(0, vec![-1.0])],
            vec![vec![(0, 0, 1, 2), (2, 0, 0, 0), (2, 1, 0, 0)]],
            vec![1.0, 2.0],
            f64::from(1e-35f32),
        )
        .unwrap();
        let open = splits.open_leaves(&[0.0, f64::NAN, -2.0, 3.0, 1e-40], 1);
        assert_eq!(open.indices, vec![0, 0, 0, 1, 0]);
    }

    #[test]
    fn layouts_are_checked() {
        // one leaf of 8 bits, one column: only the column list and the trees vary
        let layout = |column: Vec<usize>, trees: Vec<Vec<NodeRecord>>| {
            RowSplits::new(1, 8, 1, column, vec![-1; 8], vec![false; 8], vec![false; 8], vec![false; 8], vec![], trees, vec![1.0], 0.0)
        };
        let tree = vec![vec![(2, 0, 0, 0)]];
        let ok = layout(vec![0; 8], tree.clone());
        assert_eq!(ok.unwrap().open_leaves(&[3.0], 1).indices, vec![0]);
        let short = layout(vec![0; 7], tree.clone());
        assert!(short.is_err());
        let beyond = layout(vec![3; 8], tree);
        assert!(beyond.is_err());
        let dangling = vec![vec![(0, 0, 1, 5), (2, 0, 0, 0)]];
        let bad = layout(vec![0; 8], dangling);
        assert!(bad.is_err());
    }
}
