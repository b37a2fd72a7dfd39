"""The ``bayesopt`` tuner: online Bayesian optimisation with Optuna's TPE, one study per OSC.

SAPPHIRE-style tuning treats the file system as a black box and lets Bayesian optimisation pick
the next configuration to try from the throughput of those tried so far.  Online, every probe
interval is one evaluation:

- **Study**: one Optuna study per OSC (in memory), maximising the OSC's throughput (MB/s).  The
  search space is the dial99 grid as log2 exponents (``max_pages_per_rpc`` 2^0..2^10,
  ``max_rpcs_in_flight`` 2^0..2^8), cut to the actuator's bounds.
- **Ask/tell**: ``suggest`` asks the study for a trial and returns its configuration; ``observe``
  tells the trial the throughput of the interval that ran under it.  When the configuration in
  force is not the one asked for (the actuator clamped it, someone else wrote it, or a replay of
  recorded data), the asked trial is marked failed and the configuration actually observed is
  added as a completed trial instead, so every interval still informs the model.
- **Budget**: a study asks for ``budget`` trials, then applies the best configuration found (the
  highest mean throughput over its evaluations) and keeps measuring it.  SAPPHIRE spends a
  budget of trials and then deploys the winner; an online study that never stops asking would
  keep paying for exploration (on a smooth synthetic optimum TPE alone stays near 60% of the
  peak after 400 asks, because every ask is an evaluation on the live system).
- **Sampler**: TPE (multivariate, since the two parameters interact through the bytes in
  flight), with ``startup`` random trials first.  It is re-seeded before every ask from (seed,
  OSC, number of trials), so runs are reproducible and a restored state decides exactly as the
  saved one would have.
- **Forgetting**: only the last ``window`` evaluations are kept (the study is rebuilt from them
  when twice as many have accumulated), and a change of the OSC's access pattern
  (:func:`pfstune.tuners._pattern.access_pattern`) starts a new study: what was best for
  yesterday's workload is a poor prior for today's.
- **Idle**: an OSC that moved no data goes back to the configuration it had when first seen;
  its pending trial waits for the next busy interval.

The state saved is each OSC's evaluations, pending trial and pattern, as plain JSON.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pfstune.errors import UserError
from pfstune.features import osc_throughput_mbps
from pfstune.tuners._base import TUNED_PARAMS, Config, Context, Tuner, keep, tuned_part
from pfstune.tuners._pattern import access_pattern, spatiality_of

if TYPE_CHECKING:
    import optuna

#: Largest log2 exponent of each parameter (dial99).
_MAX_EXPONENT = {"max_pages_per_rpc": 10, "max_rpcs_in_flight": 8}
_KEY = {"max_pages_per_rpc": "log2_max_pages_per_rpc", "max_rpcs_in_flight": "log2_max_rpcs_in_flight"}

Exponents = dict[str, int]  # study parameter name -> log2 value


def _optuna() -> Any:
    """Optuna, imported on first use (it takes a quarter of a second) and made quiet."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def _exponents(config: Mapping[str, int]) -> Exponents | None:
    """The study parameters of ``config``; None if it is not a point of the dial99 grid."""
    out: Exponents = {}
    for param in TUNED_PARAMS:
        value = config.get(param)
        if value is None or value < 1 or value & (value - 1) or value > 2 ** _MAX_EXPONENT[param]:
            return None
        out[_KEY[param]] = int(value).bit_length() - 1
    return out


def _inside(params: Exponents, space: Mapping[str, tuple[int, int]]) -> bool:
    return all(space[p][0] <= params[_KEY[p]] <= space[p][1] for p in TUNED_PARAMS)


@dataclass
class _Osc:
    """One OSC's study and what rebuilds it."""

    original: Config | None = None
    spatiality: str | None = None
    pattern: str | None = None
    space: dict[str, tuple[int, int]] | None = None  # exponent range per parameter
    history: list[tuple[Exponents, float]] = field(default_factory=list)
    pending: Exponents | None = None
    study: Any = None  # optuna.Study, rebuilt lazily from ``history``
    trial: Any = None  # the pending optuna.trial.Trial, if asked in this process
    idled: bool = False  # the last suggestion was the original, for an idle interval: the trial waits


class BayesOptTuner(Tuner):
    """TPE ask/tell per OSC over the dial99 grid (see the module docstring)."""

    name = "bayesopt"

    def __init__(self, budget: int = 24, startup: int = 8, window: int = 40, seed: int = 0) -> None:
        """``budget``: trials per study; ``startup``: random ones first; ``window``: evaluations kept."""
        if not 1 <= startup <= budget:
            raise UserError(f"tuner bayesopt: need 1 <= startup <= budget, got startup={startup}, budget={budget}")
        if window < budget:
            raise UserError(f"tuner bayesopt: window={window} must be at least budget={budget}")
        self.budget = int(budget)
        self.startup = int(startup)
        self.window = int(window)
        self.seed = int(seed)
        self._oscs: dict[str, _Osc] = {}

    # --- the study of one OSC ---------------------------------------------------------------

    def _osc(self, osc: str) -> _Osc:
        state = self._oscs.get(osc)
        if state is None:
            state = self._oscs[osc] = _Osc()
        return state

    def _distributions(self, state: _Osc) -> dict[str, optuna.distributions.BaseDistribution]:
        optuna = _optuna()
        assert state.space is not None
        return {_KEY[p]: optuna.distributions.IntDistribution(*state.space[p]) for p in TUNED_PARAMS}

    def _study(self, state: _Osc) -> Any:
        """The OSC's ``optuna.Study``, rebuilt from its history if this process has none yet."""
        if state.study is None:
            optuna = _optuna()
            study = optuna.create_study(direction="maximize")
            distributions = self._distributions(state)
            for params, value in state.history:
                if state.space is not None and _inside(params, state.space):
                    study.add_trial(optuna.trial.create_trial(params=params, distributions=distributions, value=value))
            state.study, state.trial = study, None
        return state.study

    def _restart(self, state: _Osc) -> None:
        state.history, state.pending, state.study, state.trial = [], None, None, None

    def _record(self, state: _Osc, params: Exponents, value: float) -> None:
        # after an idle interval the OSC ran its original configuration, which the tuner chose:
        # that evaluation counts, and the pending trial waits for its own interval
        waits = state.idled and state.pending is not None and state.pending != params
        state.idled = False
        if state.space is not None:  # no space yet: the study is built from the history later
            optuna = _optuna()
            study = self._study(state)
            if state.trial is not None and state.pending == params:
                study.tell(state.trial, value)
            else:
                if state.trial is not None and not waits:
                    study.tell(state.trial, state=optuna.trial.TrialState.FAIL)
                if _inside(params, state.space):
                    study.add_trial(
                        optuna.trial.create_trial(params=params, distributions=self._distributions(state), value=value)
                    )
        state.history.append((params, value))
        if not waits:
            state.pending, state.trial = None, None
        if len(state.history) > 2 * self.window:
            state.history = state.history[-self.window :]
            state.study = None  # rebuilt from the kept window on next use

    def _best(self, state: _Osc) -> Exponents:
        """The evaluated point of highest mean throughput (ties: the one evaluated first)."""
        totals: dict[tuple[int, ...], list[float]] = {}
        for params, value in state.history:
            if state.space is None or not _inside(params, state.space):
                continue
            entry = totals.setdefault(tuple(params[_KEY[p]] for p in TUNED_PARAMS), [0.0, 0.0])
            entry[0] += value
            entry[1] += 1
        best = max(totals, key=lambda point: totals[point][0] / totals[point][1])
        return {_KEY[p]: best[i] for i, p in enumerate(TUNED_PARAMS)}

    def _ask(self, osc: str, state: _Osc) -> Exponents:
        optuna = _optuna()
        study = self._study(state)
        if state.pending is not None and state.trial is not None:
            return state.pending
        text = f"pfstune.bayesopt\0{self.seed}\0{osc}\0{len(state.history)}"
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.sampler = optuna.samplers.TPESampler(n_startup_trials=self.startup, multivariate=True, seed=seed)
        if state.pending is not None:  # restored from a saved state: ask for the same point again
            study.enqueue_trial(state.pending)
        state.trial = study.ask(self._distributions(state))
        state.pending = {key: int(value) for key, value in state.trial.params.items()}
        return state.pending

    # --- the Tuner interface ------------------------------------------------------------------

    def observe(self, osc: str, config: Config, metrics: Mapping[str, float]) -> None:
        """Tell the OSC's study the throughput of the configuration that was in force."""
        state = self._osc(osc)
        if state.original is None:
            state.original = tuned_part(config)
        pattern = access_pattern(metrics, state.spatiality)
        value = osc_throughput_mbps(metrics)
        if pattern is None or math.isnan(value):
            return
        state.spatiality = spatiality_of(pattern)
        if pattern != state.pattern:
            self._restart(state)
            state.pattern = pattern
        params = _exponents(config)
        if params is not None:
            self._record(state, params, value)

    def suggest(self, context: Context) -> Config:
        """The configuration of the OSC's next trial; the original one while the OSC is idle."""
        state = self._osc(context.osc)
        if state.original is None:
            state.original = tuned_part(context.config)
        bounds = {param: context.bounds.get(param, (1, 1 << 30)) for param in TUNED_PARAMS}
        space: dict[str, tuple[int, int]] = {}
        for param in TUNED_PARAMS:
            low, high = bounds[param]
            exponents = [e for e in range(_MAX_EXPONENT[param] + 1) if low <= 2**e <= high]
            if exponents:
                space[param] = (exponents[0], exponents[-1])
        pattern = access_pattern(context.metrics, state.spatiality)
        if pattern is None or len(space) < len(TUNED_PARAMS):
            state.idled = state.idled or (pattern is None and bool(context.metrics))
            return keep(state.original or {}, context)
        if space != state.space:  # new bounds: a new search space, the study is rebuilt over it
            state.space, state.study, state.trial, state.pending = space, None, None, None
        inside = sum(_inside(params, space) for params, _ in state.history)
        params = self._best(state) if inside >= self.budget else self._ask(context.osc, state)
        return {param: 2 ** params[_KEY[param]] for param in TUNED_PARAMS}

    def forget(self, osc: str) -> None:
        """Drop ``osc``'s study."""
        self._oscs.pop(osc, None)

    def state_dict(self) -> dict[str, Any]:
        """Each OSC's evaluations, pending trial, pattern and search space."""
        return {
            "seed": self.seed,
            "oscs": {
                osc: {
                    "original": s.original,
                    "spatiality": s.spatiality,
                    "pattern": s.pattern,
                    "space": None if s.space is None else {p: list(r) for p, r in s.space.items()},
                    "history": [[params, value] for params, value in s.history],
                    "pending": s.pending,
                    "idled": s.idled,
                }
                for osc, s in sorted(self._oscs.items())
            },
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from what :meth:`state_dict` saved (studies are rebuilt on first use)."""
        try:
            self.seed = int(state.get("seed", self.seed))
            oscs: dict[str, _Osc] = {}
            for osc, s in dict(state.get("oscs", {})).items():
                space = s.get("space")
                oscs[str(osc)] = _Osc(
                    original=None if s.get("original") is None else {k: int(v) for k, v in s["original"].items()},
                    spatiality=s.get("spatiality"),
                    pattern=s.get("pattern"),
                    space=None if space is None else {p: (int(r[0]), int(r[1])) for p, r in space.items()},
                    history=[({k: int(v) for k, v in params.items()}, float(value)) for params, value in s["history"]],
                    pending=None if s.get("pending") is None else {k: int(v) for k, v in s["pending"].items()},
                    idled=bool(s.get("idled", False)),
                )
            self._oscs = oscs
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            raise UserError(f"tuner bayesopt: invalid saved state ({err})") from None
