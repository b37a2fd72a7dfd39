"""The read-ahead window at mount (preset field ``client_read_ahead_per_file``).

DIAL's real sequential readers kept about 40 MiB of read RPCs in flight whatever the RPC size
and however many RPCs they were allowed (docs/calibration.md, "The real clients' read-ahead
window"), which is what a 40 MiB ``max_read_ahead_per_file_mb`` gives; Lustre 2.15's default on
their 128 GiB nodes is 256 MiB.  The field sets the tunable at mount; it shows in the llite file
and an administrator's write changes it as on any client.
"""

from __future__ import annotations

import pytest

from pfstune.errors import ScenarioError
from pfstune.sim.engine import Engine
from pfstune.sim.presets import PRESETS, resolve_field
from pfstune.sim.scenario import parse_scenario
from tests.sim._osc_stats import read_rpcs_in_flight

MIB = 2**20
SEQREAD = "{name: r, client: 0, workload: filebench.seqread, iosize: 1m, filesize: 10g, stripe_count: 1}"


def engine(read_ahead: str | None, tunables: str = "{}") -> Engine:
    field = f", client_read_ahead_per_file: {read_ahead}" if read_ahead is not None else ""
    text = (
        "name: ra\nseed: 1\nduration: 6s\n"
        f"cluster: {{preset: cloudlab-c6525, clients: 1{field}}}\n"
        f"tunables: {tunables}\n"
        f"jobs:\n  - {SEQREAD}\n"
    )
    return Engine(parse_scenario(text, "ra.yaml"))


def llite_value(e: Engine, name: str) -> int:
    (client,) = e.clients()
    return int(e.get_param(0, f"llite.{client['llite']}.{name}"))


def mib_in_flight(e: Engine) -> float:
    """Mean read RPCs in flight at each send (``req_active`` of the busy OSC) x the RPC size, MiB."""
    e.run()
    in_flight, rpc_bytes = read_rpcs_in_flight(e)
    return in_flight * rpc_bytes / MIB


def test_the_preset_mounts_a_40_mib_window_and_the_llite_file_shows_it() -> None:
    e = engine(None)
    assert llite_value(e, "max_read_ahead_per_file_mb") == 40
    assert llite_value(e, "read_ahead_async_file_threshold_mb") == 40  # set with it at mount
    assert llite_value(e, "max_read_ahead_mb") == 1024  # the node-wide budget keeps Lustre's default
    assert llite_value(engine("default"), "max_read_ahead_per_file_mb") == 256  # 1024 / 4


@pytest.mark.parametrize("mppr", [256, 1024])
def test_a_sequential_reader_keeps_about_the_window_in_flight_whatever_its_rpcs_allow(mppr: int) -> None:
    # 256 RPCs of 1 or 4 MiB allowed: the window, not max_rpcs_in_flight, bounds what is in
    # flight (DIAL's readers: 40 and 43 MiB at these two configurations)
    tunables = f"{{osc.max_pages_per_rpc: {mppr}, osc.max_rpcs_in_flight: 256}}"
    narrow = mib_in_flight(engine(None, tunables))
    wide = mib_in_flight(engine("default", tunables))
    assert 20 < narrow <= 44
    assert wide > 3 * narrow


def test_a_write_to_the_tunable_widens_the_window_as_on_any_client() -> None:
    osc = "osc.max_pages_per_rpc: 256, osc.max_rpcs_in_flight: 256"
    e = engine(None, f"{{llite.max_read_ahead_per_file_mb: 256, {osc}}}")
    assert llite_value(e, "max_read_ahead_per_file_mb") == 256
    assert mib_in_flight(e) > 3 * mib_in_flight(engine(None, f"{{{osc}}}"))


def test_the_field_takes_a_size_or_default() -> None:
    assert resolve_field("client_read_ahead_per_file", "40m") == ("client_read_ahead_per_file_bytes", 40 * MIB)
    assert resolve_field("client_read_ahead_per_file", "default") == ("client_read_ahead_per_file_bytes", None)
    assert PRESETS["cloudlab-c6525"]["client_read_ahead_per_file"] == "40m"
    assert PRESETS["cloudlab-c220g5"]["client_read_ahead_per_file"] == "default"
    with pytest.raises(ScenarioError, match=r"cluster\.client_read_ahead_per_file"):
        engine("0")
    # above max_read_ahead_mb (1024 MiB on a 128 GiB node) Lustre refuses the window
    assert llite_value(engine("1g"), "max_read_ahead_per_file_mb") == 1024
    refused = r"cluster\.client_read_ahead_per_file: 1025 MiB is above max_read_ahead_mb \(1024 MiB"
    with pytest.raises(ScenarioError, match=refused):
        engine("1025m")
