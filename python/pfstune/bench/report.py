"""What ``pfstune bench`` writes: ``bench.json``, ``runs.csv``, ``report.md`` and PNG plots.

- ``bench.json``: the whole document of :func:`pfstune.bench.harness.run_bench` (time series
  and configuration trajectories included);
- ``runs.csv``: one line per run (scenario, seed, tuner, MB/s, ratio to the oracle, ...);
- ``report.md``: per scenario, a table of every tuner (mean MB/s and spread over seeds, ratio
  to the oracle and to the default, convergence after each phase change, decision time), and
  the plots: throughput per tuner normalised to the oracle, throughput over time and the
  configuration of the busiest OSC over time (first seed).

Plots use matplotlib's non-interactive Agg backend, so no display is needed.
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pfstune.bench.harness import CONVERGED, HOLD_S, WINDOW_S, best_mbps, best_measure
from pfstune.outputs import file_stem, replacing

#: How the phase line names a phase's measure (pfstune.bench.harness.phase_measures).
_MEASURED = {"osc_mbps": "", "osc_read_mbps": " read", "osc_write_mbps": " written"}

CSV_FIELDS = (
    "scenario",
    "file",
    "seed",
    "tuner",
    "mbps",
    "read_mbps",
    "write_mbps",
    "osc_mbps",
    "vs_oracle",
    "decisions",
    "decide_ms",
    "decide_first_ms",
)


def _num(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def write_report(document: Mapping[str, Any], out: Path) -> list[Path]:
    """Write every output file into ``out`` (created if missing); return their paths.

    Every file is written under a temporary name first and all are renamed once all are
    written, so a failed write (a full disk) leaves an earlier report in ``out`` as it was.
    """
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "bench.json", out / "runs.csv", out / "report.md"]
    with contextlib.ExitStack() as stack:

        def temporary(path: Path) -> Path:
            return stack.enter_context(replacing(path))

        temporary(written[0]).write_text(json.dumps(document, indent=1) + "\n")
        with temporary(written[1]).open("w", newline="") as handle:
            writer = csv.DictWriter(handle, CSV_FIELDS, extrasaction="ignore")
            writer.writeheader()
            for run in document["runs"]:
                writer.writerow(run)
        plots = _plots(document, out, temporary)
        temporary(written[2]).write_text(markdown(document, {p.name: p for p in plots}, out))
    return written + plots


#: What the report's tables compare, said once at its top.
INTRO = (
    "Each scenario ran in pfsim, a simulated Lustre cluster, once per tuner and seed. `default` keeps "
    "Lustre's configuration (max_pages_per_rpc 1024, max_rpcs_in_flight 8); the online tuners change "
    "each OSC's configuration while the scenario runs (`iopathtune`: seed 001's heuristic; `dial`: seed "
    "000's learned tuner with the shipped model; `bandit`, `bayesopt`: explorers); the `oracle` is the "
    "best of the 99 static dial99 configurations for that scenario and seed, found by sweeping: a "
    "yardstick no online tuner can know in advance."
)


def markdown(document: Mapping[str, Any], plots: Mapping[str, Path], out: Path | None = None) -> str:
    """The Markdown report (``plots``: file name -> path, linked where present; scenario files are
    named relative to ``out``, the report's directory, when given)."""
    seeds = ", ".join(str(s) for s in document["seeds"])
    lines = ["# pfstune bench", "", INTRO, ""]
    lines += [f"Seeds: {seeds}. MB = 10^6 bytes of application I/O per simulated second.", ""]
    if "normalised.png" in plots:
        lines += ["![throughput normalised to the oracle](normalised.png)", ""]
    for scenario in document["scenarios"]:
        where = os.path.relpath(scenario["file"], out) if out is not None else scenario["file"]
        lines += [f"## {scenario['name']}", "", f"`{where}`, {scenario['duration_s']:g} s simulated."]
        starts = scenario["phase_starts_s"]
        lines += [f"Phases start at {', '.join(f'{t:g} s' for t in starts)}.", ""]
        if scenario["oracle_configs"]:
            best = "; ".join(
                f"seed {seed}: ({c['osc.max_pages_per_rpc']}, {c['osc.max_rpcs_in_flight']})"
                for seed, c in scenario["oracle_configs"].items()
            )
            lines += [f"Oracle (best static max_pages_per_rpc, max_rpcs_in_flight): {best}.", ""]
        for seed, phases in scenario.get("phase_best", {}).items():
            if len(phases) > 1:
                per_phase = "; ".join(
                    f"{t:g} s: ({p['config']['osc.max_pages_per_rpc']}, {p['config']['osc.max_rpcs_in_flight']}) "
                    f"{best_mbps(p):.0f} MB/s{_MEASURED[best_measure(p)]}"
                    for t, p in zip(starts, phases, strict=True)
                )
                lines += [
                    f"Best static configuration of each phase (seed {seed}, OSC MB/s; of the read or write "
                    f"RPCs alone where the phase only reads or only writes): {per_phase}.",
                    "",
                ]
        if scenario["results"]:
            note = (
                f"Convergence: seconds from each phase start until the {WINDOW_S:g} s mean reaches "
                f"{CONVERGED:.0%} of the phase's best and holds there for the next {HOLD_S:g} s; "
                "the mean over seeds, with the slowest seed in brackets where it differs. Decide ms: "
                "the tuner's time per agent tick for all the OSCs it drives, after its first decision "
                "(which pays a model's set-up: `decide_first_ms` in bench.json)."
            )
            if "oracle" not in scenario["results"]:
                note += (
                    " Convergence needs each phase's best static configuration, which the oracle's sweep "
                    "finds: without `oracle` among `--tuners` it is not measured (-)."
                )
            lines += [note, ""]
        header = (
            "| tuner | MB/s | spread (std, min-max) | vs oracle | vs default | convergence (s) per phase | decide ms |"
        )
        lines += [header, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for tuner, r in scenario["results"].items():
            converge = _convergence_cell(r.get("convergence_s", []), r.get("convergence_max_s"))
            lines.append(
                f"| {tuner} | {_num(r['mbps'])} | {_num(r['mbps_std'])}, {_num(r['mbps_min'])}-{_num(r['mbps_max'])} "
                f"| {_num(r['vs_oracle'], 3)} | {_num(r['vs_default'], 3)} | {converge} | {_num(r['decide_ms'], 2)} |"
            )
        lines.append("")
        lines += _tool_tables(scenario["results"])
        for kind, caption in (("throughput", "OSC throughput over time"), ("config", "configuration over time")):
            name = f"{file_stem(scenario['name'])}-{kind}.png"
            if name in plots:
                lines += [f"![{caption}]({name})", ""]
    return "\n".join(lines)


def _convergence_cell(means: Sequence[float | None], slowest: Sequence[float | None] | None) -> str:
    """``2.5 (4)`` per phase: the mean over seeds and, where it differs, the slowest seed."""
    cells = []
    for i, mean in enumerate(means):
        worst = slowest[i] if slowest is not None and i < len(slowest) else mean
        if mean is None:
            cells.append("never")
        elif worst is not None and abs(worst - mean) > 1e-9:
            cells.append(f"{mean:.3g} ({worst:g})")
        else:
            cells.append(f"{mean:g}")
    return ", ".join(cells) or "-"


def _most_tuned_osc(runs: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The tracked OSC whose configuration the tuners changed most (the busiest of the first run on
    a tie), so that every tuner's line in the plot is of the same OSC, and one a tuner worked on:
    the busiest OSC may be one no tuner touched (a writer whose data the cache absorbs)."""
    changes: dict[str, int] = {}
    for run in runs.values():
        for osc, trajectory in run["trajectories"].items():
            steps = sum(
                1
                for param in ("max_pages_per_rpc", "max_rpcs_in_flight")
                for a, b in zip(trajectory[param], trajectory[param][1:], strict=False)
                if a != b
            )
            changes[osc] = changes.get(osc, 0) + steps
    if not changes:
        return None
    return max(changes, key=lambda osc: changes[osc])  # dict order: the first run's busiest first


#: A column of a tool's own table: its header, and its cell from the tool's figures of one tuner.
_Column = tuple[str, Callable[[Mapping[str, Any]], str]]

#: The benchmark tools' own figures, one table each where a scenario runs the tool: the key of
#: the tuner's result that holds them, what the table says, and its columns.
_TOOL_TABLES: tuple[tuple[str, str, tuple[_Column, ...]], ...] = (
    (
        "ior",
        "IOR's own bandwidth (MiB/s, as IOR prints it: a phase's bytes over the time until every rank "
        "finished it), mean over the phases that finished in the run:",
        (
            ("write MiB/s", lambda f: _num(f["write_mibps"])),
            ("write phases", lambda f: str(f["write_phases"])),
            ("read MiB/s", lambda f: _num(f["read_mibps"])),
            ("read phases", lambda f: str(f["read_phases"])),
        ),
    ),
    (
        "h5bench",
        "h5bench's observed rate (MiB/s, as h5bench prints it: the bytes of the finished timesteps "
        "over their time less the compute time between them), mean over the seeds:",
        (
            ("observed MiB/s", lambda f: _num(f["observed_mibps"])),
            ("timesteps", lambda f: str(f["timesteps"])),
        ),
    ),
    (
        "dlio",
        "DLIO's own figures (as dlio_benchmark reports them: samples of the training steps that "
        "ended per second, their MiB/s, and the accelerator utilisation), mean over the seeds:",
        (
            ("samples/s", lambda f: _num(f["samples_per_second"])),
            ("MiB/s", lambda f: _num(f["io_mibps"])),
            ("AU %", lambda f: _num(f["au_percent"])),
        ),
    ),
)


def _tool_tables(results: Mapping[str, Any]) -> list[str]:
    """The tools' own figures per tuner (IOR's, h5bench's, DLIO's), for the tools the scenario runs."""
    lines: list[str] = []
    for key, intro, columns in _TOOL_TABLES:
        rows = [(tuner, r[key]) for tuner, r in results.items() if key in r]
        if not rows:
            continue
        lines += [intro, "", "| tuner | " + " | ".join(header for header, _ in columns) + " |"]
        lines.append("| --- |" + " ---: |" * len(columns))
        lines += [f"| {tuner} | " + " | ".join(cell(f) for _, cell in columns) + " |" for tuner, f in rows]
        lines.append("")
    return lines


def _plots(document: Mapping[str, Any], out: Path, temporary: Callable[[Path], Path]) -> list[Path]:
    """Draw the plots into ``out``; each is saved to ``temporary(its path)``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []
    tuners: Sequence[str] = document["tuners"]
    scenarios = document["scenarios"]
    if "oracle" in tuners and scenarios:
        fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(scenarios) * len(tuners) / 3), 4))
        width = 0.8 / len(tuners)
        for i, tuner in enumerate(tuners):
            values = [s["results"].get(tuner, {}).get("vs_oracle") or 0.0 for s in scenarios]
            ax.bar([j + i * width for j in range(len(scenarios))], values, width, label=tuner)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(scenarios))], [s["name"] for s in scenarios])
        ax.tick_params(axis="x", labelrotation=30)
        ax.set_ylabel("throughput / oracle")
        ax.legend(fontsize="small")
        fig.tight_layout()
        written.append(out / "normalised.png")
        fig.savefig(temporary(written[-1]), dpi=100, format="png")
        plt.close(fig)
    first_seed = document["seeds"][0]
    for scenario in scenarios:
        runs = {r["tuner"]: r for r in document["runs"] if r["file"] == scenario["file"] and r["seed"] == first_seed}
        fig, ax = plt.subplots(figsize=(7, 3.5))
        for tuner, run in runs.items():
            ax.plot(run["series"]["time"], run["series"]["osc_mbps"], label=tuner, linewidth=1)
        for start in scenario["phase_starts_s"][1:]:
            ax.axvline(start, color="grey", linestyle=":", linewidth=0.8)
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel("OSC MB/s, all OSCs")
        ax.legend(fontsize="small")
        fig.tight_layout()
        written.append(out / f"{file_stem(scenario['name'])}-throughput.png")
        fig.savefig(temporary(written[-1]), dpi=100, format="png")
        plt.close(fig)
        fig, axes = plt.subplots(2, 1, figsize=(7, 4.5), sharex=True)
        shown = _most_tuned_osc(runs)
        for tuner, run in runs.items():
            trajectory = run["trajectories"].get(shown) if shown is not None else None
            if trajectory is None:
                continue  # this run did not track that OSC among its busiest
            for ax, param in zip(axes, ("max_pages_per_rpc", "max_rpcs_in_flight"), strict=True):
                ax.step(run["series"]["time"], trajectory[param], where="post", label=tuner, linewidth=1)
        for ax, param in zip(axes, ("max_pages_per_rpc", "max_rpcs_in_flight"), strict=True):
            ax.set_yscale("log", base=2)
            ax.set_ylabel(param, fontsize="small")
        axes[1].set_xlabel(f"simulated time (s), OSC {shown or '-'}")
        axes[0].legend(fontsize="small")
        fig.tight_layout()
        written.append(out / f"{file_stem(scenario['name'])}-config.png")
        fig.savefig(temporary(written[-1]), dpi=100, format="png")
        plt.close(fig)
    return written
