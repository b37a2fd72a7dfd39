"""The Lustre backend passes the backend conformance suite on a live pfsim tree and on the real 2.10 tree."""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pfstune.backends.lustre import LustreBackend
from pfstune.backends.sim import SimBackend
from pfstune.errors import UserError
from pfstune.features import FEATURE_COLUMNS, osc_features
from pfstune.lustre.types import Snapshot
from pfstune.sim.engine import Engine
from pfstune.sim.scenario import load_scenario
from pfstune.sim.tree import VirtualTree
from pfstune.testing.backends import check_backend
from tests.conftest import SHARED


@pytest.fixture
def live_tree(small_scenario: Path, tmp_path: Path) -> tuple[VirtualTree, Path]:
    """A simulated client's tree under tmp_path/root, as `pfstune sim serve` keeps it."""
    engine = Engine(load_scenario(small_scenario))
    root = tmp_path / "root"
    tree = VirtualTree(engine, 0, root, log=lambda line: None)
    tree.refresh()
    return tree, root


def _stepper(tree: VirtualTree) -> Callable[[LustreBackend], None]:
    def advance(_backend: LustreBackend) -> None:
        tree.apply_writes()
        tree.engine.run(until_ns=tree.engine.now_ns + 100_000_000)
        tree.refresh()
        time.sleep(0.01)  # the probe clock is real time

    return advance


def test_lustre_backend_conforms_on_a_live_simulated_tree(live_tree: tuple[VirtualTree, Path], tmp_path: Path) -> None:
    tree, root = live_tree
    check_backend(lambda: LustreBackend(root, state_dir=tmp_path / "state"), _stepper(tree))


def test_lustre_backend_conforms_on_the_real_2_10_tree(tmp_path: Path) -> None:
    root = tmp_path / "client"
    shutil.copytree(SHARED / "fixtures" / "lustre-2.10-client", root)
    check_backend(lambda: LustreBackend(root, state_dir=tmp_path / "state"), lambda _b: time.sleep(0.01))


def test_a_missing_root_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not a directory"):
        LustreBackend(tmp_path / "absent", state_dir=tmp_path / "state")


def _nan_columns(first: Snapshot, second: Snapshot) -> set[str]:
    osc = sorted(second["osc"])[0]
    llite = {o: mount for mount in second["llite"].values() for o in mount.get("osc", [])}[osc]
    before = {o: mount for mount in first["llite"].values() for o in mount.get("osc", [])}[osc]
    row = osc_features(first["osc"][osc], second["osc"][osc], before, llite, 0.1)
    return {column for column in FEATURE_COLUMNS if math.isnan(row[column])}


def test_the_agent_reads_every_file_its_features_need(small_scenario: Path, tmp_path: Path) -> None:
    """The features from a client's files have no more gaps than from the simulator directly
    (the llite request sizes among them: DIAL's models are trained on them)."""
    engine = Engine(load_scenario(small_scenario))
    tree = VirtualTree(engine, 0, tmp_path / "root", log=lambda line: None)
    with LustreBackend(tmp_path / "root", state_dir=tmp_path / "state") as lustre, SimBackend(engine) as sim:
        snapshots: dict[str, list[Snapshot]] = {"lustre": [], "sim": []}
        for _ in range(2):
            engine.run(until_ns=engine.now_ns + 100_000_000)
            tree.refresh()
            snapshots["lustre"].append(lustre.probe())
            snapshots["sim"].append(sim.probe())
    from_files = _nan_columns(*snapshots["lustre"])
    assert not {c for c in from_files if c.startswith("llite_")}
    assert from_files == _nan_columns(*snapshots["sim"])
