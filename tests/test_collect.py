"""pfstune.collect: simulated runs under random dial99 configurations, written as dataset rows."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

import pfstune.collect
from pfstune.collect import COLUMNS, METADATA_COLUMNS, CollectError, collect, plan_runs
from pfstune.errors import UserError
from pfstune.features import FEATURE_COLUMNS
from pfstune.tuners.random import DIAL99

#: One client (8 OSCs) reading 16 MiB at random from a file on one OST for 3 simulated seconds.
SCENARIO = """\
name: tiny
seed: 7
duration: 3s
cluster: {preset: cloudlab-c6525, clients: 1}
jobs:
  - {name: reader, client: 0, workload: filebench.randomread, iosize: 16m, filesize: 1g, stripe_count: 1}
"""
MPPR = "osc_rpc_configuration_current.mppr_value"
MRIF = "osc_rpc_configuration_current.mrif_value"


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, object], list[float]]:
    """One collection of 2 seeds with 2 worker processes, progress recorded."""
    root = tmp_path_factory.mktemp("collect")
    scenario = root / "tiny.yaml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    seen: list[float] = []
    manifest = collect([scenario], root / "out", seeds=[1, 2], jobs=2, progress=lambda done, total: seen.append(done))
    assert seen == [3.0, 6.0]  # one report per finished run, in simulated seconds
    return scenario, root / "out", manifest, seen


@contextmanager
def _one_thread(jobs: int | None = None, scheduler: str | None = None) -> Iterator[Executor]:
    """An executor in this process, so that a monkeypatched ``record_run`` applies on the "worker"."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield pool


def test_one_file_per_scenario_and_seed_and_a_manifest(collected: tuple[Path, Path, dict, list[float]]) -> None:
    _, out, manifest, _ = collected
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "tiny-seed1.parquet", "tiny-seed2.parquet"]
    assert json.loads((out / "manifest.json").read_text()) == manifest
    assert manifest["source"] == "sim"
    assert manifest["seeds"] == [1, 2]
    assert manifest["columns"] == list(COLUMNS)
    runs = manifest["runs"]
    assert [(r["file"], r["seed"], r["duration_s"], r["rows"]) for r in runs] == [
        ("tiny-seed1.parquet", 1, 3.0, 8 * 6),
        ("tiny-seed2.parquet", 2, 3.0, 8 * 6),
    ]
    assert manifest["rows"] == 96
    for run in runs:
        assert run["sha256"] == hashlib.sha256((out / run["file"]).read_bytes()).hexdigest()
        assert 0 < run["active_rows"] < run["rows"]


def test_schema_is_every_feature_column_plus_the_metadata(collected: tuple[Path, Path, dict, list[float]]) -> None:
    _, out, _, _ = collected
    schema = pq.read_schema(out / "tiny-seed1.parquet")
    assert schema.names == list(COLUMNS)
    assert set(FEATURE_COLUMNS) | set(METADATA_COLUMNS) == set(schema.names)
    df = pd.read_parquet(out / "tiny-seed1.parquet")
    assert (df["source"] == "sim").all()
    assert (df["workload"] == "tiny").all()
    assert (df["iteration"] == 1).all()
    assert (df["client"] == 0).all()
    assert df["scenario_file"].str.endswith("tiny.yaml").all()
    assert all(str(df[c].dtype) == "float64" for c in FEATURE_COLUMNS)
    assert (df["actual_record_duration"] == 0.5).all()


def test_configurations_are_random_dial99_points(collected: tuple[Path, Path, dict, list[float]]) -> None:
    _, out, _, _ = collected
    df = pd.read_parquet(out / "tiny-seed1.parquet")
    assert set(df[MPPR]) <= set(DIAL99["max_pages_per_rpc"])
    assert set(df[MRIF]) <= set(DIAL99["max_rpcs_in_flight"])
    for _, series in df.groupby("osc"):
        assert series[[MPPR, MRIF]].drop_duplicates().shape[0] > 1  # changes between observations
    assert (df["osc_rpc_configuration_current.mdm_value"] > 0).all()


def test_observations_count_from_one_per_osc(collected: tuple[Path, Path, dict, list[float]]) -> None:
    _, out, _, _ = collected
    df = pd.read_parquet(out / "tiny-seed2.parquet")
    assert df["osc"].nunique() == 8
    for _, series in df.groupby("osc"):
        assert series["observation_no"].tolist() == [1, 2, 3, 4, 5, 6]


def test_the_busy_osc_carries_data_and_the_others_are_idle(collected: tuple[Path, Path, dict, list[float]]) -> None:
    _, out, _, _ = collected
    df = pd.read_parquet(out / "tiny-seed1.parquet")
    per_osc = df.groupby("osc")["ost_read_rpc_bytes_data.samples_sum"].sum()
    assert (per_osc > 0).sum() == 1  # stripe_count 1: one OST, one OSC
    busy = df[df["osc"] == per_osc.idxmax()]
    assert (busy["x_mbps"] > 0).all()
    assert (busy["x_read_mbps"] == busy["ost_read_rpc_bytes_data.samples_sum"] / 0.5 / 1e6).all()
    assert (busy["llite_stats_read_bytes.samples_sum"] > 0).any()


def test_a_run_can_record_another_tuner_s_configurations(tmp_path: Path) -> None:
    """``record_run(tuner=...)`` puts that tuner in the loop (``benchmarks/fidelity`` replays the
    real collector's sequence with it): each interval runs under what it wrote after the probe before it."""
    from pfstune.sim.scenario import parse_scenario
    from pfstune.tuners._base import Config, Context, Tuner

    class Fixed(Tuner):
        name = "fixed"

        def suggest(self, context: Context) -> Config:
            return {"max_pages_per_rpc": 32, "max_rpcs_in_flight": 64}

        def state_dict(self) -> dict[str, Any]:
            return {}

        def load_state_dict(self, state: Any) -> None:
            pass

    table, result = pfstune.collect.record_run(parse_scenario(SCENARIO, "tiny.yaml"), 1, tuner=Fixed())
    df = table.to_pandas()
    assert df["observation_no"].max() == 6
    # the agent writes after its first probe, at t = 0: every interval runs under the tuner's
    assert (df[MPPR] == 32).all()
    assert (df[MRIF] == 64).all()
    assert result["mbps"] > 0


def test_the_same_scenario_and_seed_give_the_same_bytes(
    collected: tuple[Path, Path, dict, list[float]], tmp_path: Path
) -> None:
    scenario, out, manifest, _ = collected
    again = collect([scenario], tmp_path / "again", seeds=[2], jobs=1)  # one worker process this time
    assert (tmp_path / "again" / "tiny-seed2.parquet").read_bytes() == (out / "tiny-seed2.parquet").read_bytes()
    assert again["runs"][0]["sha256"] == manifest["runs"][1]["sha256"]
    assert manifest["runs"][0]["sha256"] != manifest["runs"][1]["sha256"]


def test_plan_uses_each_scenario_seed_by_default_and_overrides_the_duration(tmp_path: Path) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    (run,) = plan_runs([path], duration="1500ms")
    assert (run.seed, run.duration_s, run.file) == (7, 1.5, "tiny-seed7.parquet")


def test_bad_input_is_a_user_error_before_any_run(tmp_path: Path) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    with pytest.raises(UserError, match="cannot read the scenario"):
        collect([tmp_path / "missing.yaml"], tmp_path / "out")
    with pytest.raises(UserError, match="collected twice"):
        plan_runs([path, path])
    with pytest.raises(UserError, match="not a duration"):
        plan_runs([path], duration="10")
    with pytest.raises(UserError, match=r"seeds below 2\^63"):
        plan_runs([path], seeds=[2**63])
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError, match="not a directory"):
        collect([path], tmp_path / "file")
    assert not (tmp_path / "out").exists()


def test_file_names_are_made_of_what_a_file_name_may_hold(tmp_path: Path) -> None:
    def plan(*names: str) -> list[str]:
        paths = []
        for i, name in enumerate(names):
            paths.append(tmp_path / f"s{i}.yaml")
            paths[-1].write_text(SCENARIO.replace("name: tiny", f"name: {name!r}"), encoding="utf-8")
        return [run.file for run in plan_runs(paths, seeds=[1])]

    assert plan("sub/x", "../../y", "a b") == ["sub_x-seed1.parquet", ".._.._y-seed1.parquet", "a_b-seed1.parquet"]
    with pytest.raises(UserError, match=r"s0.yaml: the file name x+\.\.\. would be 314 bytes, over the 255"):
        plan("x" * 300)
    with pytest.raises(
        UserError, match=r"scenario 'a_b' seed 1 and scenario 'a b' would both write a_b-seed1\.parquet"
    ):
        plan("a b", "a_b")


def test_a_set_up_the_engine_refuses_fails_before_any_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = tmp_path / "tiny.yaml"
    good.write_text(SCENARIO, encoding="utf-8")
    huge = tmp_path / "huge.yaml"
    huge.write_text(SCENARIO.replace("name: tiny", "name: huge").replace("filesize: 1g", "filesize: 1000t"))

    def no_runs(*_: object) -> None:
        raise AssertionError("a run started")

    monkeypatch.setattr(pfstune.collect, "open_executor", no_runs)
    with pytest.raises(UserError, match=r"huge.yaml: job \"reader\": its file of 1000 TiB .* \(with seed 2\)"):
        collect([good, huge], tmp_path / "out", seeds=[2])
    assert not (tmp_path / "out").exists()


def test_collecting_into_an_earlier_collection_adds_to_its_manifest(
    collected: tuple[Path, Path, dict, list[float]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario, first, earlier, _ = collected
    out = tmp_path / "o"
    shutil.copytree(first, out)
    monkeypatch.setattr(pfstune.collect, "open_executor", _one_thread)
    manifest = collect([scenario], out, seeds=[3], duration="1s")
    assert json.loads((out / "manifest.json").read_text()) == manifest
    assert [r["file"] for r in manifest["runs"]] == ["tiny-seed1.parquet", "tiny-seed2.parquet", "tiny-seed3.parquet"]
    assert manifest["runs"][:2] == earlier["runs"]  # their provenance is kept
    assert manifest["seeds"] == [1, 2, 3]
    assert manifest["rows"] == earlier["rows"] + manifest["runs"][2]["rows"]
    assert manifest["earlier_runs"] == 2
    assert manifest["duration"] == "1s"  # the latest collection's
    # a file written again is listed once, with its new run; a file gone is no longer listed
    (out / "tiny-seed1.parquet").unlink()
    again = collect([scenario], out, seeds=[2], duration="1s")
    assert [(r["file"], r["duration_s"]) for r in again["runs"]] == [
        ("tiny-seed3.parquet", 1.0),
        ("tiny-seed2.parquet", 1.0),
    ]
    assert again["seeds"] == [2, 3]
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "tiny-seed2.parquet", "tiny-seed3.parquet"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "cannot read the manifest already there (not JSON)"),
        ('{"runs": [{"file": 3}]}', "not a manifest pfstune collect wrote"),
        ('{"runs": [], "columns": ["workload"], "pfstune_version": "0.1"}', "has other columns (pfstune 0.1)"),
    ],
)
def test_a_manifest_already_there_that_cannot_be_added_to_is_refused_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, message: str
) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "manifest.json").write_text(text)
    monkeypatch.setattr(pfstune.collect, "open_executor", lambda *_: pytest.fail("a run started"))
    with pytest.raises(UserError, match=re.escape(message)):
        collect([path], tmp_path / "o", seeds=[1])
    assert (tmp_path / "o" / "manifest.json").read_text() == text


def test_a_failed_run_costs_no_other_run_s_file(
    collected: tuple[Path, Path, dict, list[float]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario, out, _, _ = collected
    real = pfstune.collect.record_run

    def flaky(scenario: Any, tuner_seed: int, scenario_file: str | None = None) -> Any:
        if tuner_seed == 1:
            raise RuntimeError("engine exploded\nsecond line")
        return real(scenario, tuner_seed, scenario_file)

    monkeypatch.setattr(pfstune.collect, "open_executor", _one_thread)
    monkeypatch.setattr(pfstune.collect, "record_run", flaky)
    seen: list[float] = []
    with pytest.raises(CollectError, match=r"1 of 2 runs failed \(tiny-seed1.parquet: RuntimeError: engine exploded\)"):
        collect([scenario], tmp_path / "o", seeds=[1, 2], progress=lambda done, _: seen.append(done))
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["manifest.json", "tiny-seed2.parquet"]
    assert (tmp_path / "o" / "tiny-seed2.parquet").read_bytes() == (out / "tiny-seed2.parquet").read_bytes()
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert [r["file"] for r in manifest["runs"]] == ["tiny-seed2.parquet"]
    assert manifest["failed"] == [
        {"file": "tiny-seed1.parquet", "scenario": "tiny", "seed": 1, "error": "RuntimeError: engine exploded"}
    ]
    assert seen[-1] == 6.0  # a failed run is finished too


def test_an_interrupted_write_leaves_no_file_under_the_final_name(
    collected: tuple[Path, Path, dict, list[float]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = collected[0]

    def interrupted(table: Any, where: Path, **kwargs: Any) -> None:
        Path(where).write_bytes(b"PAR1 half a file")
        raise KeyboardInterrupt

    monkeypatch.setattr(pfstune.collect, "open_executor", _one_thread)
    monkeypatch.setattr(pfstune.collect.pq, "write_table", interrupted)
    with pytest.raises(KeyboardInterrupt):
        collect([scenario], tmp_path / "o", seeds=[1], duration="1s")
    assert not (tmp_path / "o").exists()  # no Parquet, no partial file, no manifest: not even the directory


def test_collect_on_a_dask_cluster_writes_the_same_files(
    collected: tuple[Path, Path, dict, list[float]], tmp_path: Path
) -> None:
    distributed = pytest.importorskip("distributed")
    scenario, out, manifest, _ = collected
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        on_dask = collect([scenario], tmp_path / "dask", seeds=[1, 2], scheduler=cluster.scheduler_address)
    assert on_dask["scheduler"] == cluster.scheduler_address
    assert on_dask["jobs"] is None
    for local, remote in zip(manifest["runs"], on_dask["runs"], strict=True):
        assert remote["sha256"] == local["sha256"]
        assert (tmp_path / "dask" / remote["file"]).read_bytes() == (out / local["file"]).read_bytes()
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / "dask" / remote["file"]), pd.read_parquet(out / local["file"])
        )
