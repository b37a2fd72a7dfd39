"""The ``dial`` tuner: DIAL's Conditional Score Greedy choice (seed 000, Algorithm 1), per OSC.

Every probe, for every OSC that moved data in the interval that just ended:

1. The interval's dominant operation (read or write bytes, :func:`pfstune.features.dominant_op`)
   picks the read or the write model.
2. The model gives every candidate configuration c of the dial99 grid within the actuator's bounds
   a probability p(c) that the next interval's throughput beats this one's by more than 15%
   (one batched call for all OSCs and all candidates).
3. S = {c : p(c) > tau} (tau = 0.8).  If S is empty the configuration stays as it is.
4. Configurations in S are min-max normalised, each parameter on a log2 scale (DIAL's collector
   used the same scale).  ``score=paper`` normalises over S, as Algorithm 1's line 6 says (a
   parameter with one value in S scores 0); ``score=released`` over the grid's range, as the
   released tuner does, so 1 -> 0 and the largest grid value -> 1 whatever S holds.
5. The choice is the argmax over S of the operation's score, where x1 is the normalised
   ``max_pages_per_rpc`` and x2 the normalised ``max_rpcs_in_flight``.  The regularisers favour
   larger RPCs and more RPCs in flight among configurations the model already trusts, which is
   what keeps the search from settling on timid "safe" choices.

The seed prints the scores as ``p * (1 + beta * (x1 + x2))`` (write) and
``p * (1 + alpha * x1) + x2`` (read), lines 12 and 14; ``score=paper`` uses exactly those, with
x1 and x2 normalised over S (until 2026-11-26 it normalised over the grid, as the released tuner
does; docs/results.md gives the paper scores' figures of both).  The
default, ``score=released``, is what DIAL's authors released as its tuner (DIR-LAB/VertoIO,
``tuning_scripts/tuning_rpc_param_{read,write}.py``, ``greedy_config``), which fills in what the
paper leaves open:

- a single configuration in S is chosen as it is;
- p is min-max normalised over S first (q = 1 for all when they are equal), then
  write: ``q * (1 + x1 + x2)``, read: ``q + x1 + x2``;
- **writes the cache absorbs**: when the client's application wrote bytes in the interval but this
  OSC's write RPCs carried less than ``xfer_threshold`` percent (80) of its estimated share of them,
  the write score becomes ``q + (1 - x2)`` (fewer RPCs in flight win) and the OSC's next
  ``skip_intervals`` (5) write intervals change nothing.  The share is DIAL's
  ``pct_estimated_write_xfer``: the bytes that entered this OSC's dirty cache in the interval
  (``cur_dirty_bytes`` now + bytes its write RPCs carried - ``cur_dirty_bytes`` at the previous
  probe: the row's ``x_prev_dirty_bytes``, which the agent reads with the interval, so the first
  interval is judged as the released tuner judges it from its previous snapshot; the level
  remembered from the last row where a row lacks it), as a fraction of the same over every OSC
  of the client, times the mount's llite ``write_bytes``.  Such writes are rewrites of cached
  pages, or data discarded before it is sent; piling up RPCs in flight only makes the next
  rewrite wait for pages under write-back.  As in the released tuner, an OSC into whose cache
  nothing new entered (one that only drains while the mount writes through others) has no
  estimate, which reads as 0%: it counts as absorbed
  too (docs/results.md, ior-fpp-nocache, measures the readings that would not).

**The guard** (``guard``, off by default; not in DIAL): DIAL changes an OSC's configuration when
the model is confident the change gains more than 15%, and never looks back.  With ``guard`` = g > 0,
the interval after a change is compared with the one before it (same operation, both busy): if the
OSC's RPCs carried more than a fraction g fewer bytes per second, the previous configuration comes
back and the one that lost may not be chosen on that OSC for ``guard_intervals`` (20) intervals.
docs/results.md ("A guard against changes that lose") measures it on the suite.

An OSC that carried no data reverts to the configuration it had when the tuner first saw it
(its original values; DIAL's collector restored the defaults), so an idle device is left as the
administrator set it.  The model is loaded from a model directory (``model``, default the one
shipped in the package, see :mod:`pfstune.models`).

Not taken from the released tuner: it starts every OSC's first busy interval at (1, 1); it keeps
an OSC's configuration through idle intervals and does not tune right after one (here an idle OSC
goes back to its original values, so that a device left alone is as the administrator set it;
``idle=keep`` does what the released tuner does, docs/results.md measures both); and it skips
reads while llite's ``read_ahead_stats`` report "hit max r-a issue" on more than 5% of the pages.
That last rule cannot have fired on DIAL's own Lustre 2.15.5 testbed: 2.15 prints the counter as
``hit_max_readahead_issue``, which the released tuner's pattern does not match (lustre-client.md
section 1.6).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    import pandas as pd  # imported where DIAL builds its feature frame, not at every start-up

from pfstune.errors import UserError
from pfstune.features import FEATURE_COLUMNS, dominant_op, feature_matrix, osc_throughput_mbps
from pfstune.lustre.layout import parse_osc_name
from pfstune.tuners._base import Config, Context, Tuner

#: The scores of Algorithm 1: as released by DIAL's authors, or as printed in the seed.
#: What an OSC that carried no data gets: its original values, or what it had (the released tuner).
IDLE_RULES = ("original", "keep")
SCORES = ("released", "paper")

_DIRTY = "cur_dirty_bytes"
_RPC_WRITTEN = "ost_write_rpc_bytes_data.samples_sum"
_APP_WRITTEN = "llite_stats_write_bytes.samples_sum"
_DIRTY_BEFORE = "x_prev_dirty_bytes"  # the agent's rows carry the level the interval began with

#: The probe intervals of DIAL's data (5th and 95th percentiles of the dev file's busy
#: ``actual_record_duration``, s), for a model whose metadata does not say what it learned from.
DIAL_INTERVALS_S = {"p5": 0.511, "p95": 0.639}
#: How far outside the learned intervals the agent may probe before it is warned.
INTERVAL_SLACK = 0.2

#: DIAL's candidate grid: max_pages_per_rpc 2^0..2^10 x max_rpcs_in_flight 2^0..2^8.
DIAL99: tuple[Config, ...] = tuple(
    {"max_pages_per_rpc": 2**i, "max_rpcs_in_flight": 2**j} for i in range(11) for j in range(9)
)


class Predictor(Protocol):
    """What the tuner needs of a model (:class:`pfstune.models._base.Model` provides it)."""

    def predict_proba(self, op: str, features: pd.DataFrame, candidates: Sequence[Config]) -> np.ndarray:
        """P(improvement > 15%) for each row (an OSC's interval) and candidate: shape (rows, candidates)."""
        ...


def _normalised_grid(grid: Sequence[Config]) -> tuple[np.ndarray, np.ndarray]:
    pages = np.log2([c["max_pages_per_rpc"] for c in grid])
    flight = np.log2([c["max_rpcs_in_flight"] for c in grid])

    def minmax(values: np.ndarray) -> np.ndarray:
        span = values.max() - values.min()
        return (values - values.min()) / span if span > 0 else np.zeros_like(values)

    return minmax(pages), minmax(flight)


def _minmax_over(values: np.ndarray, members: np.ndarray) -> np.ndarray:
    """``values`` (one per candidate) min-max normalised over each row's ``members``; 0 where they all agree."""
    low = np.where(members, values, np.inf).min(axis=1, keepdims=True)
    high = np.where(members, values, -np.inf).max(axis=1, keepdims=True)
    span = high - low
    with np.errstate(invalid="ignore"):
        return np.where(span > 0, (values - low) / np.where(span > 0, span, 1.0), 0.0)


class DialTuner(Tuner):
    """Algorithm 1 of DIAL over a read and a write GBDT classifier."""

    name = "dial"

    def __init__(
        self,
        model: str = "default",
        tau: float = 0.8,
        alpha: float = 1.0,
        beta: float = 1.0,
        score: str = "released",
        xfer_threshold: float = 80.0,
        skip_intervals: int = 5,
        guard: float = 0.0,
        guard_intervals: int = 20,
        idle: str = "original",
        *,
        predictor: Predictor | None = None,
    ) -> None:
        """Load the model directory ``model`` (``default``: the shipped model) unless ``predictor`` is given.

        ``alpha`` and ``beta`` weigh the paper's scores (``score=paper``); ``xfer_threshold`` and
        ``skip_intervals`` belong to the released scores (``score=released``); ``guard`` and
        ``guard_intervals`` take back changes that lost throughput; ``idle`` is what an idle OSC
        gets, its ``original`` values or the configuration it had (``keep``) (module docstring).
        """
        if not 0 <= tau < 1:
            raise UserError(f"dial: tau must be in [0, 1), got {tau}")
        if not (0 <= alpha < math.inf and 0 <= beta < math.inf):
            raise UserError(f"dial: alpha and beta must be finite and >= 0, got {alpha} and {beta}")
        if score not in SCORES:
            raise UserError(f"dial: score must be one of {', '.join(SCORES)}, got {score!r}")
        if idle not in IDLE_RULES:
            raise UserError(f"dial: idle must be one of {', '.join(IDLE_RULES)}, got {idle!r}")
        if not 0 <= xfer_threshold <= 100:
            raise UserError(f"dial: xfer_threshold must be a percentage in [0, 100], got {xfer_threshold}")
        if skip_intervals < 0 or int(skip_intervals) != skip_intervals:
            raise UserError(f"dial: skip_intervals must be a whole number >= 0, got {skip_intervals}")
        if not 0 <= guard < 1:
            raise UserError(f"dial: guard must be a fraction in [0, 1), got {guard}")
        if guard_intervals < 1 or int(guard_intervals) != guard_intervals:
            raise UserError(f"dial: guard_intervals must be a whole number >= 1, got {guard_intervals}")
        self.tau, self.alpha, self.beta = tau, alpha, beta
        self.score = score
        self.xfer_threshold = float(xfer_threshold)
        self.skip_intervals = int(skip_intervals)
        self.idle = idle
        self.guard = float(guard)
        self.guard_intervals = int(guard_intervals)
        self.model_path = model
        if predictor is None:
            from pfstune.models import load_model  # deferred: LightGBM is only needed when DIAL runs

            predictor = load_model(model)
        self.predictor = predictor
        self.grid = DIAL99
        self._index = {_key(c): i for i, c in enumerate(self.grid)}
        self._pages, self._flight = _normalised_grid(self.grid)
        self._originals: dict[str, Config] = {}
        self._allowed: dict[tuple[tuple[str, tuple[int, int]], ...], np.ndarray] = {}  # bounds -> grid mask
        self._dirty: dict[str, float] = {}  # cur_dirty_bytes of each OSC at the previous probe
        self._skip: dict[str, int] = {}  # write intervals each OSC still leaves alone
        self._clients: dict[str, str] = {}  # OSC -> its mount
        self._last: dict[str, tuple[tuple[int, int], float, str]] = {}  # (config, MB/s, op) of the last busy interval
        self._banned: dict[str, dict[tuple[int, int], int]] = {}  # configuration -> intervals left, per OSC
        self._after_idle: set[str] = set()  # idle=keep: OSCs whose last interval was idle

    def suggest(self, context: Context) -> Config:
        """Algorithm 1 for one OSC (see :meth:`suggest_batch`)."""
        return self.suggest_batch([context])[0]

    def suggest_batch(self, contexts: Sequence[Context]) -> list[Config]:
        """Algorithm 1 for every OSC, with one model call per operation for all of them."""
        results: list[Config] = []
        by_op: dict[str, list[int]] = {"read": [], "write": []}
        absorbed = self._absorbed_writes(contexts) if self.score == "released" else [False] * len(contexts)
        for index, context in enumerate(contexts):
            self._originals.setdefault(context.osc, dict(context.config))
            results.append(dict(context.config))
            if not context.metrics:
                continue  # first probe: no interval yet
            op = dominant_op(context.metrics)
            if op is None:
                self._last.pop(context.osc, None)
                if self.idle == "keep":  # the released tuner: keep it, and skip the next busy interval
                    self._after_idle.add(context.osc)
                else:  # back to what the administrator had
                    results[index] = dict(self._originals[context.osc])
                continue
            if context.osc in self._after_idle:
                # an interval that began idle mixes the two; the released tuner does not judge it
                self._after_idle.discard(context.osc)
                continue
            if self.guard > 0:
                taken_back = self._check_last_change(context, op)
                if taken_back is not None:
                    results[index] = {**results[index], **taken_back}
                    continue
            if op == "write" and self._skip.get(context.osc, 0) > 0:
                self._skip[context.osc] -= 1  # left alone after writes the cache absorbed
                continue
            by_op[op].append(index)
        for operation, indices in by_op.items():
            if not indices:
                continue
            values = feature_matrix([contexts[i].metrics for i in indices], FEATURE_COLUMNS)
            import pandas as pd

            rows = pd.DataFrame(values, columns=list(FEATURE_COLUMNS))
            probabilities = np.asarray(self.predictor.predict_proba(operation, rows, self.grid), dtype=float)
            low = np.array([absorbed[i] for i in indices], dtype=bool)
            banned = self._banned_mask([contexts[i].osc for i in indices]) if self._banned else None
            choices, lowered = self._choose_many(
                operation, probabilities, [contexts[i].bounds for i in indices], low, banned
            )
            for index, choice, skip in zip(indices, choices, lowered, strict=True):
                if choice is not None:
                    results[index] = {**results[index], **choice}
                if skip:
                    self._skip[contexts[index].osc] = self.skip_intervals
        return results

    def _check_last_change(self, context: Context, op: str) -> Config | None:
        """The guard: the configuration to go back to if the change before this interval lost.

        The interval that just ended ran under ``context.config``.  If the one before it was busy
        with the same operation under another configuration, and this one moved more than
        ``guard`` (a fraction) fewer bytes per second, the change lost: the configuration that lost
        may not be chosen on this OSC for ``guard_intervals`` intervals, and the previous one
        comes back.  A change back is judged the same way.  Also counts the bans down and
        remembers this interval for the next probe.
        """
        osc = context.osc
        now = _key(context.config)
        bans = self._banned.get(osc)
        if bans:
            for config in list(bans):
                bans[config] -= 1
                if bans[config] <= 0:
                    del bans[config]
        mbps = osc_throughput_mbps(context.metrics)
        last = self._last.pop(osc, None)
        if not math.isfinite(mbps):  # an interval that cannot be measured judges nothing
            return None
        self._last[osc] = (now, mbps, op)
        if last is None or last[0] == now or last[2] != op or not mbps < last[1] * (1 - self.guard):
            return None
        self._banned.setdefault(osc, {})[now] = self.guard_intervals
        # judged from here on as any other change: the interval under the restored configuration
        # is compared with this one
        return {"max_pages_per_rpc": last[0][0], "max_rpcs_in_flight": last[0][1]}

    def _banned_mask(self, oscs: Sequence[str]) -> np.ndarray:
        """(rows, candidates): True where the guard bans the candidate on the row's OSC."""
        mask = np.zeros((len(oscs), len(self.grid)), dtype=bool)
        for row, osc in enumerate(oscs):
            for config in self._banned.get(osc, {}):
                at = self._index.get(config)  # an administrator's original may lie off the grid
                if at is not None:
                    mask[row, at] = True
        return mask

    def _absorbed_writes(self, contexts: Sequence[Context]) -> list[bool]:
        """Per context: did the client write bytes this OSC's RPCs mostly did not carry?

        DIAL's ``pct_estimated_write_xfer < 80`` with llite write bytes (module docstring).  Also
        remembers each OSC's ``cur_dirty_bytes`` for the next probe.  The dirty level the
        interval began with is the row's ``x_prev_dirty_bytes`` (the agent's rows: read from the
        probe before, as the released tuner reads it, so even the first interval is judged), else
        the level remembered from the last row (rows without it: the dataset's replay); False
        where neither is known.  Vectorised: the agent asks this for every OSC of the node at
        every probe.
        """
        if not any(c.metrics for c in contexts):  # the first probe: no interval yet
            return [False] * len(contexts)
        values = feature_matrix([c.metrics for c in contexts], (_DIRTY, _RPC_WRITTEN, _APP_WRITTEN, _DIRTY_BEFORE))
        dirty, carried, app, given = values[:, 0], values[:, 1], values[:, 2], values[:, 3]
        remembered = np.array([self._dirty.get(c.osc, np.nan) for c in contexts], dtype=float)
        before = np.where(np.isfinite(given), given, remembered)
        for context, level in zip(contexts, dirty.tolist(), strict=True):
            if np.isfinite(level):
                self._dirty[context.osc] = level
        # bytes that entered each OSC's dirty cache in the interval (NaN where anything is unknown)
        into_cache = dirty + carried - before
        known = np.isfinite(into_cache)
        clients = [self._client(c.osc) for c in contexts]
        _, which = np.unique(clients, return_inverse=True)
        total = np.bincount(which, weights=np.where(known, into_cache, 0.0))[which]
        with np.errstate(invalid="ignore", divide="ignore"):
            share = app * into_cache / total
            # as DIAL's get_pct_estimated_write_xfer: no estimate (nothing cached) reads as 0%
            pct = np.where((into_cache != 0) & (total != 0), carried / share * 100.0, 0.0)
        absorbed = known & np.isfinite(app) & (app != 0) & (pct < self.xfer_threshold)
        result: list[bool] = absorbed.tolist()
        return result

    def _client(self, osc: str) -> str:
        """The mount of ``osc`` (cached: the same OSCs come back every probe)."""
        client = self._clients.get(osc)
        if client is None:
            client = self._clients[osc] = _client_of(osc)
        return client

    def _allowed_mask(self, bounds: Mapping[str, tuple[int, int]]) -> np.ndarray:
        """Which grid configurations lie within ``bounds`` (cached: OSCs mostly share their bounds)."""
        key = tuple(sorted((param, tuple(bound)) for param, bound in bounds.items()))
        allowed = self._allowed.get(key)  # type: ignore[arg-type]
        if allowed is None:
            allowed = np.array(
                [all(bounds[param][0] <= value <= bounds[param][1] for param, value in c.items()) for c in self.grid]
            )
            self._allowed[key] = allowed  # type: ignore[index]
        return allowed

    def _choose_many(
        self,
        op: str,
        p: np.ndarray,
        bounds: Sequence[Mapping[str, tuple[int, int]]],
        low: np.ndarray | None = None,
        banned: np.ndarray | None = None,
    ) -> tuple[list[Config | None], list[bool]]:
        """Algorithm 1's choice for every row of ``p`` (rows, candidates): the best-scoring trusted
        configuration within the row's bounds, None where none is trusted.  ``low`` marks the write
        rows whose cache absorbed the writes (released scores); ``banned`` (rows, candidates) the
        candidates the guard excludes.  The second list says which rows used the low-in-flight
        score and so start a pause."""
        # OSCs mostly share their bounds: one mask per distinct bounds, then one row per OSC.
        distinct: dict[Any, int] = {}
        masks: list[np.ndarray] = []
        which: list[int] = []
        for bound in bounds:
            try:
                key: Any = tuple(bound.items())
                at = distinct.get(key)
            except TypeError:  # unhashable bounds (lists): no sharing
                key, at = object(), None
            if at is None:
                at = distinct[key] = len(masks)
                masks.append(self._allowed_mask(bound))
            which.append(at)
        allowed = np.stack(masks)[which] if masks else np.zeros(p.shape, dtype=bool)
        if banned is not None:
            allowed = allowed & ~banned
        in_s = allowed & (p > self.tau)
        lowered = np.zeros(p.shape[0], dtype=bool)
        if self.score == "paper":
            x1, x2 = _minmax_over(self._pages, in_s), _minmax_over(self._flight, in_s)
            scores = p * (1 + self.beta * (x1 + x2)) if op == "write" else p * (1 + self.alpha * x1) + x2
        else:
            # p min-max normalised over S (tuning_utils.normalize: 1 when all are equal)
            top = np.where(in_s, p, -np.inf).max(axis=1, keepdims=True)
            bottom = np.where(in_s, p, np.inf).min(axis=1, keepdims=True)
            span = top - bottom
            with np.errstate(invalid="ignore", divide="ignore"):
                q = np.where(span > 0, (p - bottom) / np.where(span > 0, span, 1.0), 1.0)
            if op == "write":
                scores = q * (1 + self._pages + self._flight)
                if low is not None and low.any():
                    # a lone trusted configuration is taken as it is, before any score (greedy_config)
                    lowered = low & (in_s.sum(axis=1) > 1)
                    scores = np.where(lowered[:, None], q + (1 - self._flight), scores)
            else:
                scores = q + self._pages + self._flight
        best: list[int] = np.argmax(np.where(in_s, scores, -np.inf), axis=1).tolist()
        trusted: list[bool] = np.asarray(in_s.any(axis=1)).tolist()
        choices = [dict(self.grid[b]) if ok else None for b, ok in zip(best, trusted, strict=True)]
        return choices, lowered.tolist()

    def forget(self, osc: str) -> None:
        """Drop what is kept about a device that went away."""
        self._originals.pop(osc, None)
        self._dirty.pop(osc, None)
        self._skip.pop(osc, None)
        self._clients.pop(osc, None)
        self._last.pop(osc, None)
        self._banned.pop(osc, None)
        self._after_idle.discard(osc)

    def interval_warning(self, seconds: float) -> str | None:
        """A probe interval well outside those the model learned from: its features count per interval."""
        known = getattr(self.predictor, "metadata", {}).get("training", {}).get("interval_s") or DIAL_INTERVALS_S
        low, high = known["p5"], known["p95"]
        if low * (1 - INTERVAL_SLACK) <= seconds <= high * (1 + INTERVAL_SLACK):
            return None
        return (
            f"dial: the agent probes every {seconds:g} s, but the model learned from intervals of "
            f"{low:g}-{high:g} s; its features count per interval, so it sees values it never learned "
            f"from (probe every {round(low, 1) or low:g} s: the agent's --interval, a scenario's "
            "probe_interval; or train a model on data collected at this interval)"
        )

    def state_dict(self) -> dict[str, Any]:
        """The originals per OSC, and the released scores' memory (the model is its own directory)."""
        return {
            "model": self.model_path,
            "originals": {osc: dict(c) for osc, c in self._originals.items()},
            "dirty": dict(self._dirty),
            "skip": dict(self._skip),
            "last": {osc: [list(c), mbps, op] for osc, (c, mbps, op) in self._last.items()},
            "banned": {osc: [[*c, n] for c, n in bans.items()] for osc, bans in self._banned.items()},
            "after_idle": sorted(self._after_idle),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved."""
        self._originals = {osc: {k: int(v) for k, v in c.items()} for osc, c in state.get("originals", {}).items()}
        self._dirty = {osc: float(v) for osc, v in state.get("dirty", {}).items()}
        self._skip = {osc: int(v) for osc, v in state.get("skip", {}).items()}
        self._last = {
            osc: ((int(c[0]), int(c[1])), float(mbps), str(op)) for osc, (c, mbps, op) in state.get("last", {}).items()
        }
        self._banned = {
            osc: {(int(pages), int(flight)): int(n) for pages, flight, n in bans}
            for osc, bans in state.get("banned", {}).items()
        }
        self._after_idle = {str(osc) for osc in state.get("after_idle", [])}


def _key(config: Mapping[str, int]) -> tuple[int, int]:
    """(max_pages_per_rpc, max_rpcs_in_flight) of a configuration."""
    return int(config["max_pages_per_rpc"]), int(config["max_rpcs_in_flight"])


def _client_of(osc: str) -> str:
    """The mount an OSC belongs to (its llite instance); the name itself if it is not an OSC's."""
    device = parse_osc_name(osc)
    return device.llite if device is not None else osc
