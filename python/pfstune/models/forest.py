"""LightGBM's scores for every (row, candidate) pair, without walking the trees once per pair.

The DIAL tuner scores all 99 candidate configurations for every OSC in one call: a design of
rows x candidates lines that differ only in their last few columns (the candidate's).  LightGBM
walks every tree for every line, about 5 µs a line: half a second for 1,000 OSCs.  But a split
tests one column, so it is decided by the row alone (a feature of the OSC), by the candidate
alone (its ``max_pages_per_rpc``), or by the candidate and the row's *group* (its log2 change
from the OSC's current configuration: the same for every OSC with that configuration).
:class:`CandidateForest` decides each kind of split once per row, once per candidate and once
per (group, candidate), not once per line:

1. the splits of one kind in a tree are numbered 0, 1, ...; a line's decisions on them are
   packed into one integer per tree (bit k set iff split k sends the line left);
2. leaf l is reached iff, for every kind, the decisions agree with the splits of that kind on
   l's path: ``(bits & mask_l) == want_l``.  That gives ``A[row, l]`` (row splits) and
   ``B[candidate, l]`` (candidate splits, per group);
3. exactly one leaf of each tree is reached by both, so the raw score of (row, candidate) is
   ``sum_l value_l A[row, l] B[candidate, l]``: a sparse matrix (about 1.5 leaves of a tree are
   open to a row before its candidate is known) times a 0/1 matrix, which scipy adds up in
   the order of the trees, as LightGBM does.  The raw scores are therefore LightGBM's bit for
   bit; the sigmoid (numpy's ``exp``, not the C library's) can differ in the last bit.

B depends only on the candidates and the groups, which the agent passes again every tick, so it
is kept for the next call with the same ones.  A is found by the Rust extension when it is built
(``pfstune._pfsim.LeafFinder``: each tree walked from its root, a row split one way, a candidate
split both ways), else by the numpy arrays of ``_reached``; both give the same matrix (tested).
Measured (docs/models.md): 16 ms for 1,000 OSCs x 99 candidates of the shipped write model,
all in one configuration, on one core (28 ms with the numpy A in the same run), against 500 ms
for LightGBM.

A split decides as LightGBM's ``NumericalDecision`` over its dense-matrix input: a value with
``|x| <= 1e-35f`` is 0 (LightGBM leaves it out of the row it builds), NaN is 0 unless the split's
missing type is NaN, a split of missing type Zero sends 0 its default way and one of missing
type NaN sends NaN its default way; otherwise ``x <= threshold`` goes left.

:meth:`CandidateForest.from_booster` returns None for what it does not reproduce (categorical
splits, linear trees, objectives other than binary, a tree with more than 64 splits of a kind);
the caller then uses LightGBM itself.  ``tests/models/test_forest.py`` compares the two.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import lightgbm as lgb
import numpy as np
import numpy.typing as npt
import scipy.sparse

try:  # the Rust extension finds each row's open leaves (_open_leaves); numpy does without it
    from pfstune._pfsim import LeafFinder
except ImportError:  # pragma: no cover - a source tree without the built extension
    LeafFinder = None

__all__ = ["CandidateForest"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
BitsArray = npt.NDArray[np.unsignedinteger[Any]]

#: LightGBM's kZeroThreshold (``1e-35f``, a float): its dense-matrix predictor reads |x| <= this as 0.
_ZERO = float(np.float32(1e-35))
#: ``dump_model`` writes thresholds beyond +-1e300 as +-1e300 (AvoidInf), so such a model would
#: not be reproduced exactly: it is left to LightGBM.
_HUGE = 1e300
#: Rows evaluated at a time: bounds the (rows, trees, leaves) work arrays (~5 MB per 1,000 rows).
_CHUNK = 1024
#: Below this many rows, a group's B is refreshed only where its rows have leaves open.
_FEW = 64
#: The kinds of split, in the order of their masks in a leaf record.
_ROW, _CANDIDATE, _GROUP = 0, 1, 2

#: A leaf as recorded while walking a tree: its value, then (mask, want) for each kind.
_Leaf = tuple[float, int, int, int, int, int, int]
#: A node of a tree, numbered in the order of the walk (the root 0): (_NODE_LEAF, leaf number, 0, 0),
#: (_NODE_ROW, the split's number among the tree's row splits, left node, right node) or
#: (_NODE_BOTH, 0, left node, right node) for a candidate or group split (both ways stay open).
_Node = tuple[int, int, int, int]
_NODE_ROW, _NODE_BOTH, _NODE_LEAF = 0, 1, 2


@dataclass(frozen=True)
class _Splits:
    """The splits of one kind, split k of tree t in slot ``t * bits + k`` (``bits`` slots per tree)."""

    bits: int  # 8, 16, 32 or 64: the width of the packed decisions
    column: IntArray  # (trees * bits,) the column each slot tests; 0 for an empty slot
    # A value x goes left at threshold cuts[c][r] iff x <= cuts[c][r] iff fewer than r + 1 of
    # column c's thresholds lie below x: one searchsorted per column, then small integers to
    # compare per slot (cheaper to gather than the floats).
    cuts: dict[int, FloatArray]  # column -> its thresholds, sorted, unique
    rank: npt.NDArray[np.signedinteger[Any]]  # (trees * bits,) the slot's r; -1 for an empty slot: never left
    default_left: BoolArray  # (trees * bits,) where missing values go, for the two slot lists below
    zero_slots: IntArray  # slots of missing type Zero
    nan_slots: IntArray  # slots of missing type NaN
    mask: BitsArray  # (trees * leaves,) the slots of this kind on each leaf's path
    want: BitsArray  # (trees * leaves,) those among them that go left on the way to the leaf


@dataclass(frozen=True)
class _CandidateSide:
    """What :meth:`CandidateForest.raw_scores` needs of the candidates, whatever the rows."""

    key: tuple[tuple[int, ...], bytes]  # the candidates it was computed for
    b: FloatArray  # (trees * leaves, candidates) B, with the first group's rows behind group splits
    first: BoolArray  # (candidates, grouped leaves) the candidate splits' part of those rows
    agrees: BoolArray  # (distinct group lines, grouped leaves) the group splits' part
    line_of: IntArray  # (groups, candidates) -> row of ``agrees``
    grouped_index: IntArray  # (trees * leaves,) -> index among the grouped leaves, -1 if not one


@dataclass
class _Builder:
    """One kind's splits, collected while walking the trees."""

    tree: list[int] = field(default_factory=list)
    number: list[int] = field(default_factory=list)  # the split's number among its tree's splits of this kind
    column: list[int] = field(default_factory=list)
    threshold: list[float] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    default_left: list[bool] = field(default_factory=list)


class CandidateForest:
    """A LightGBM binary classifier over ``[row columns..., candidate columns...]``, scored per (row, candidate).

    Build with :meth:`from_booster`.  :meth:`predict_proba` gives ``booster.predict`` of the
    design whose line (i, j) is ``rows[i]`` followed by ``candidates[group[i], j]``.
    """

    def __init__(
        self, trees: int, leaves: int, values: FloatArray, splits: tuple[_Splits, _Splits, _Splits], sigmoid: float
    ) -> None:
        """Use :meth:`from_booster`."""
        self._sigmoid = sigmoid  # LightGBM's binary objective: p = 1 / (1 + exp(-sigmoid * raw))
        self._trees = trees
        self._leaves = leaves  # per tree, padded
        self._values = values  # (trees * leaves,) leaf values, 0 for padding
        self._splits = splits
        # Leaves behind a group split: their B differs between groups.
        self._grouped = np.flatnonzero(splits[_GROUP].mask)
        self._side: _CandidateSide | None = None  # the last candidates' (the same every tick, mostly)
        self._finder: Any = None  # the extension's LeafFinder for rows of ``_finder_columns`` columns
        self._finder_columns = -1
        self._nodes: list[list[_Node]] = []  # each tree's shape (from_booster), for the LeafFinder

    @classmethod
    def from_booster(
        cls, booster: lgb.Booster, row_columns: int, group_columns: Sequence[int] = ()
    ) -> CandidateForest | None:
        """Compile ``booster``, or None if this module does not reproduce it (see the module docstring).

        The booster's first ``row_columns`` features are the row's, the others the candidate's;
        ``group_columns`` (indices among the candidate's columns) are those whose values also
        depend on the row's group.
        """
        model = booster.dump_model()
        objective = str(model.get("objective", "")).split()
        if (
            not objective
            or objective[0] != "binary"
            or model.get("average_output")
            or model.get("num_tree_per_iteration") != 1
            or not 0 < row_columns < booster.num_feature()
        ):
            return None
        sigmoid = next((float(o.removeprefix("sigmoid:")) for o in objective[1:] if o.startswith("sigmoid:")), 1.0)
        builders = (_Builder(), _Builder(), _Builder())
        records: list[list[_Leaf]] = []
        nodes: list[list[_Node]] = []
        for t, tree in enumerate(model["tree_info"]):
            found: list[_Leaf] = []
            shape: list[_Node] = []
            if not _walk(tree["tree_structure"], t, row_columns, frozenset(group_columns), builders, found, shape):
                return None
            records.append(found)
            nodes.append(shape)
        trees, leaves = len(records), max(len(found) for found in records)
        counts = [np.bincount(b.tree, minlength=trees).max(initial=0) if b.tree else 0 for b in builders]
        widths = [next((w for w in (8, 16, 32, 64) if count <= w), 0) for count in counts]
        if not all(widths):
            return None
        values = np.zeros((trees, leaves))
        paths = np.zeros((6, trees, leaves), dtype=np.uint64)
        paths[1] = 1  # a padding leaf wants a row bit outside its mask: never reached
        for t, found in enumerate(records):
            for i, (value, *path) in enumerate(found):
                values[t, i] = value
                paths[:, t, i] = path
        splits = []
        for kind, (builder, bits) in enumerate(zip(builders, widths, strict=True)):
            slots = np.array(builder.tree, dtype=np.int64) * bits + np.array(builder.number, dtype=np.int64)
            if any(abs(threshold) >= _HUGE for threshold in builder.threshold):
                return None
            column = np.zeros(trees * bits, dtype=np.int64)
            default_left = np.zeros(trees * bits, dtype=bool)
            missing = np.full(trees * bits, "None", dtype=object)
            column[slots] = builder.column
            default_left[slots] = builder.default_left
            missing[slots] = builder.missing
            thresholds = np.array(builder.threshold, dtype=np.float64)
            cuts = {int(c): np.unique(thresholds[column[slots] == c]) for c in np.unique(column[slots])}
            small = max(map(len, cuts.values()), default=0) < 2**15
            rank = np.full(trees * bits, -1, dtype=np.int16 if small else np.int32)
            rank[slots] = [np.searchsorted(cuts[c], t) for c, t in zip(builder.column, builder.threshold, strict=True)]
            dtype = np.dtype(f"<u{bits // 8}")
            splits.append(
                _Splits(
                    bits=bits,
                    column=column,
                    cuts=cuts,
                    rank=rank,
                    default_left=default_left,
                    zero_slots=np.flatnonzero(missing == "Zero"),
                    nan_slots=np.flatnonzero(missing == "NaN"),
                    mask=paths[2 * kind].ravel().astype(dtype),
                    want=paths[2 * kind + 1].ravel().astype(dtype),
                )
            )
        forest = cls(trees, leaves, values.ravel(), (splits[0], splits[1], splits[2]), sigmoid)
        forest._nodes = nodes
        return forest

    def predict_proba(self, rows: FloatArray, candidates: FloatArray, group: IntArray) -> FloatArray:
        """P(class 1) of every (row i, candidate j): shape (rows, candidates).

        ``rows`` is (n, row columns); ``candidates`` is (groups, candidates, candidate columns),
        equal across groups but in the group columns; ``group[i]`` is row i's group.
        """
        out = self.raw_scores(rows, candidates, group)
        np.multiply(out, -self._sigmoid, out=out)
        np.exp(out, out=out)
        out += 1.0
        return np.reciprocal(out, out=out)

    def raw_scores(self, rows: FloatArray, candidates: FloatArray, group: IntArray) -> FloatArray:
        """The sums of leaf values (LightGBM's ``raw_score=True``), as :meth:`predict_proba` takes them."""
        n, count = len(rows), candidates.shape[1]
        out = np.empty((n, count), dtype=np.float64)
        if n == 0 or count == 0:
            return out
        side = self._candidate_side(candidates)
        b, grouped = side.b, self._grouped
        order = np.argsort(group, kind="stable")
        loaded = -1  # the group all of whose rows of B are in b (none yet: b holds whatever came last)
        for start in range(0, n, _CHUNK):
            chunk = order[start : start + _CHUNK]
            a = self._open_leaves(rows[chunk])
            groups = group[chunk]
            edges = [0, *(np.flatnonzero(groups[1:] != groups[:-1]) + 1), len(chunk)]
            for lo, hi in itertools.pairwise(edges):
                mine = a if hi - lo == len(chunk) else a[lo:hi]
                g = int(groups[lo])
                if grouped.size and g != loaded:
                    if hi - lo >= _FEW:
                        refresh, loaded = np.arange(grouped.size), g
                    else:  # a few rows: only the leaves they have open
                        open_leaves = np.unique(mine.indices)
                        refresh, loaded = side.grouped_index[open_leaves], -1
                        refresh = refresh[refresh >= 0]
                    fresh = side.agrees[np.ix_(side.line_of[g], refresh)]
                    b[grouped[refresh]] = (side.first[:, refresh] & fresh).T
                out[chunk[lo:hi]] = mine @ b
        return out

    def _candidate_side(self, candidates: FloatArray) -> _CandidateSide:
        """B and what refreshes it per group; kept for the next call with the same candidates (each tick's)."""
        key = (candidates.shape, candidates.tobytes())
        if self._side is not None and self._side.key == key:
            return self._side
        count = candidates.shape[1]
        first = self._reached(candidates[0], self._splits[_CANDIDATE])
        b = np.ascontiguousarray(first.T, dtype=np.float64)
        grouped = self._grouped
        agrees = np.zeros((0, grouped.size), dtype=bool)
        line_of = np.zeros((len(candidates), count), dtype=np.int64)
        if grouped.size:
            # Group splits see few distinct values (a log2 change takes some 20): decide them
            # once per distinct value, not per (group, candidate).
            lines = candidates.reshape(-1, candidates.shape[2])
            tested = sorted(self._splits[_GROUP].cuts)
            _, index, inverse = np.unique(lines[:, tested], axis=0, return_index=True, return_inverse=True)
            agrees = self._reached(lines[index], self._splits[_GROUP], grouped)
            line_of = inverse.reshape(len(candidates), count)
        grouped_index = np.full(len(b), -1)
        grouped_index[grouped] = np.arange(grouped.size)
        self._side = _CandidateSide(key, b, first[:, grouped], agrees, line_of, grouped_index)
        return self._side

    def _open_leaves(self, rows: FloatArray) -> scipy.sparse.csr_matrix:
        """A, weighted by the leaf values: (rows, trees * leaves), in tree order within a row."""
        shape = (len(rows), self._trees * self._leaves)
        finder = self._leaf_finder(rows.shape[1]) if len(rows) else None
        if finder is not None:
            # The same decisions as _reached, one row at a time in Rust (~10x faster than the
            # (rows x slots) and (rows x trees x leaves) arrays below); tested to agree.
            indptr, indices, data = finder.open_leaves(np.ascontiguousarray(rows, dtype=np.float64).tobytes())
            return scipy.sparse.csr_matrix(
                (
                    np.frombuffer(data, dtype=np.float64),
                    np.frombuffer(indices, dtype=np.int32),
                    np.frombuffer(indptr, dtype=np.int64),
                ),
                shape=shape,
            )
        reach = self._reached(rows, self._splits[_ROW])
        width = reach.shape[1]
        where = np.flatnonzero(reach)
        columns = where % width
        indptr = np.searchsorted(where, np.arange(len(rows) + 1) * width)
        return scipy.sparse.csr_matrix((self._values[columns], columns, indptr), shape=reach.shape)

    def _leaf_finder(self, columns: int) -> Any:
        """The extension's LeafFinder for this forest's row splits (built once), None without it."""
        if LeafFinder is None or not self._nodes:
            return None
        if self._finder is None or self._finder_columns != columns:
            splits = self._splits[_ROW]
            slots = len(splits.column)
            zero = np.zeros(slots, dtype=bool)
            zero[splits.zero_slots] = True
            nan = np.zeros(slots, dtype=bool)
            nan[splits.nan_slots] = True
            self._finder = LeafFinder(
                self._leaves,
                splits.bits,
                columns,
                splits.column.tolist(),
                splits.rank.astype(np.int64).tolist(),
                splits.default_left.tolist(),
                zero.tolist(),
                nan.tolist(),
                [(int(column), cuts.tolist()) for column, cuts in splits.cuts.items()],
                self._nodes,
                self._values.tolist(),
                _ZERO,
            )
            self._finder_columns = columns
        return self._finder

    def _reached(self, lines: FloatArray, splits: _Splits, leaves: IntArray | None = None) -> BoolArray:
        """(lines, leaves): whether each line agrees with the splits of this kind on the leaf's path.

        ``leaves`` are flat leaf indices (default all, ``trees * leaves`` of them).
        """
        with np.errstate(invalid="ignore"):
            values = np.where(np.abs(lines) <= _ZERO, 0.0, lines)
        unknown = np.isnan(values)
        known = np.where(unknown, 0.0, values)
        ranks = np.zeros(known.shape, dtype=splits.rank.dtype)
        for column, cuts in splits.cuts.items():
            ranks[:, column] = np.searchsorted(cuts, known[:, column])
        left = ranks[:, splits.column] <= splits.rank
        if splits.zero_slots.size:
            slots = splits.zero_slots
            left[:, slots] = np.where(known[:, splits.column[slots]] == 0, splits.default_left[slots], left[:, slots])
        if splits.nan_slots.size:
            slots = splits.nan_slots
            left[:, slots] = np.where(unknown[:, splits.column[slots]], splits.default_left[slots], left[:, slots])
        # Each line's slots are whole bytes per tree, so packing the flat array packs per tree.
        packed = np.packbits(left.ravel(), bitorder="little")
        decisions = packed.view(splits.mask.dtype).reshape(len(lines), self._trees)
        agree: BoolArray
        if leaves is None:
            shape = (self._trees, self._leaves)
            agree = (decisions[:, :, None] & splits.mask.reshape(shape)) == splits.want.reshape(shape)
            return agree.reshape(len(lines), -1)
        agree = (decisions[:, leaves // self._leaves] & splits.mask[leaves]) == splits.want[leaves]
        return agree


def _walk(
    root: dict[str, Any],
    tree: int,
    row_columns: int,
    group_columns: frozenset[int],
    builders: tuple[_Builder, _Builder, _Builder],
    leaves: list[_Leaf],
    nodes: list[_Node],
) -> bool:
    """Record one tree's splits, by kind, its leaves and its shape; False if one is not reproducible here."""
    counts = [0, 0, 0]
    nodes.append((_NODE_LEAF, 0, 0, 0))  # the root, filled in when it is visited
    stack: list[tuple[dict[str, Any], list[int], int]] = [(root, [0] * 6, 0)]
    while stack:
        node, path, at = stack.pop()
        if "split_feature" not in node:
            if "leaf_coeff" in node or "leaf_value" not in node:  # a linear tree
                return False
            value = float(node["leaf_value"])
            nodes[at] = (_NODE_LEAF, len(leaves), 0, 0)
            leaves.append((value, path[0], path[1], path[2], path[3], path[4], path[5]))
            continue
        if node.get("decision_type") != "<=":  # categorical
            return False
        feature = int(node["split_feature"])
        column = feature if feature < row_columns else feature - row_columns
        kind = _ROW if feature < row_columns else _GROUP if column in group_columns else _CANDIDATE
        if counts[kind] == 64:
            return False
        builder = builders[kind]
        builder.tree.append(tree)
        builder.number.append(counts[kind])
        builder.column.append(column)
        builder.threshold.append(float(node["threshold"]))
        builder.missing.append(str(node.get("missing_type", "None")))
        builder.default_left.append(bool(node.get("default_left", False)))
        left_at, right_at = len(nodes), len(nodes) + 1
        nodes += [(_NODE_LEAF, 0, 0, 0), (_NODE_LEAF, 0, 0, 0)]
        split = (_NODE_ROW, counts[kind]) if kind == _ROW else (_NODE_BOTH, 0)
        nodes[at] = (*split, left_at, right_at)
        bit = 1 << counts[kind]
        counts[kind] += 1
        left, right = list(path), list(path)
        for side in (left, right):
            side[2 * kind] |= bit
        left[2 * kind + 1] |= bit
        stack.append((node["right_child"], right, right_at))
        stack.append((node["left_child"], left, left_at))
    return True
