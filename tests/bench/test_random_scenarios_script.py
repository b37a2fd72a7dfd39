"""benchmarks/random-scenarios: the same scenarios for a seed, all runnable, and an honest summary."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.bench._scripts import load_script


def test_a_seed_draws_the_same_scenarios_and_every_kept_one_sets_up(tmp_path: Path) -> None:
    script = load_script("random-scenarios")
    kept, refused = script.write_scenarios(3, 12, tmp_path / "a")
    again, _ = script.write_scenarios(3, 12, tmp_path / "b")
    assert [p.read_text() for p in kept] == [p.read_text() for p in again]
    assert len(kept) + len(refused) == 12
    other, _ = script.write_scenarios(4, 12, tmp_path / "c")
    assert [p.read_text() for p in other] != [p.read_text() for p in kept]
    families = {job["workload"].split(".")[0] for i in range(40) for job in script.scenario(1, i)["jobs"]}
    assert families == {"filebench", "ior", "h5bench", "dlio"}


def _bench(rows: dict[str, dict[str, float]]) -> dict[str, object]:
    return {"scenarios": [{"name": n, "results": {t: {"mbps": v} for t, v in r.items()}} for n, r in rows.items()]}


def test_the_summary_is_ratios_to_the_oracle_and_counts_losses_to_the_default() -> None:
    script = load_script("random-scenarios")
    bench = _bench(
        {
            "a": {"default": 50.0, "dial": 96.0, "oracle": 100.0},
            "b": {"default": 10.0, "dial": 9.0, "oracle": 20.0},
            "idle": {"default": 0.0, "dial": 0.0, "oracle": 0.0},  # no I/O: no ratio, no loss
        }
    )
    summary = script.summarise(bench)
    assert summary["scenarios"] == 3
    assert summary["idle"] == 1
    assert summary["invalid_figures"] == []
    dial = summary["tuners"]["dial"]
    assert dial["mean"] == pytest.approx((0.96 + 0.45) / 2)
    assert dial["min"] == pytest.approx(0.45)
    assert dial["at_least_0.95"] == 1
    assert dial["below_default"] == 1  # 9 against 10
    assert summary["tuners"]["default"]["below_default"] == 0
    assert summary["tuners"]["oracle"]["mean"] == 1.0


def test_a_figure_that_is_not_finite_and_non_negative_is_reported() -> None:
    script = load_script("random-scenarios")
    summary = script.summarise(_bench({"a": {"default": 1.0, "dial": math.nan, "oracle": 2.0}}))
    assert summary["invalid_figures"] == [("a", "dial")]


def test_a_small_run_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = load_script("random-scenarios")
    options = ["--count", "2", "--seed", "5", "--tuners", "default,oracle", "--jobs", "1", "--duration", "2s"]
    code = script.main([*options, "--out", str(tmp_path), "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["drawn"] == 2
    assert summary["scenarios"] + summary["refused"] == 2
    assert summary["tuners"]["oracle"]["at_least_0.95"] == summary["scenarios"] - summary["idle"]
    assert summary["client_grant"] is None
    assert summary["tuner_options"] == []
    assert (tmp_path / "report" / "report.md").is_file()


def test_a_warm_run_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = load_script("random-scenarios")
    options = ["--count", "1", "--seed", "5", "--tuners", "default,oracle", "--jobs", "1", "--duration", "2s"]
    assert script.main([*options, "--client-grant", "64m", "--out", str(tmp_path)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith("; every OSC starting with 64m of grant)"), first


def test_the_tuners_must_include_the_two_the_figures_are_ratios_to(capsys: pytest.CaptureFixture[str]) -> None:
    script = load_script("random-scenarios")
    with pytest.raises(SystemExit) as exit_info:
        script.main(["--tuners", "dial,oracle"])
    assert exit_info.value.code == 2
    assert "must include default and oracle" in capsys.readouterr().err


def test_warm_clients_are_the_same_draws_with_their_grant(tmp_path: Path) -> None:
    import yaml

    script = load_script("random-scenarios")
    cold, _ = script.write_scenarios(1, 4, tmp_path / "cold")
    warm, _ = script.write_scenarios(1, 4, tmp_path / "warm", "1g")
    assert [p.name for p in cold] == [p.name for p in warm]
    for a, b in zip(cold, warm, strict=True):
        docs = yaml.safe_load(a.read_text()), yaml.safe_load(b.read_text())
        assert docs[1]["cluster"].pop("client_grant") == "1g"
        assert docs[0] == docs[1]


def test_a_grant_lustre_would_not_give_refuses_every_scenario_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script("random-scenarios")
    assert script.main(["--count", "2", "--client-grant", "2g", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("every scenario refused:")
    assert "client_grant" in err
    assert "\n" not in err


def test_tuner_options_reach_pfstune_bench(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    script = load_script("random-scenarios")
    options = ["--count", "1", "--seed", "5", "--tuners", "default,dial,oracle", "--duration", "1s"]
    # a guard bench refuses: the refusal shows the option got there, before any run
    assert script.main([*options, "--tuner-option", "dial:guard=2", "--out", str(tmp_path)]) == 2
    assert "guard must be a fraction" in capfd.readouterr().err
