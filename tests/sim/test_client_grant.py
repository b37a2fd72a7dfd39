"""The preset field ``client_grant``: the grant every OSC holds when the run starts.

A client fresh from its connect holds one grant chunk per OSC (8,437,760 bytes with 4 MiB
bulk RPCs); one that has written recently keeps what its writes earned (DIAL's writers began
their runs with 17-1,800 MiB, docs/pfsim.md "Grant").  Short scenarios of large writes differ
most: the fresh client earns one chunk per write reply.
"""

from __future__ import annotations

import pytest

from pfstune.errors import ScenarioError
from pfstune.sim.engine import Engine
from pfstune.sim.presets import MAX_GRANT, PRESETS, resolve_field
from pfstune.sim.scenario import parse_scenario

MIB = 2**20
WRITER = "{name: w, client: 0, workload: filebench.randomwrite, iosize: 1m, filesize: 1g, stripe_count: 1}"


def engine(grant: str | None, duration: str = "0.5s") -> Engine:
    field = f", client_grant: {grant}" if grant is not None else ""
    text = (
        f"name: grant\nseed: 1\nduration: {duration}\n"
        f"cluster: {{preset: cloudlab-c6525, clients: 1{field}}}\n"
        f"jobs:\n  - {WRITER}\n"
    )
    return Engine(parse_scenario(text, "grant.yaml"))


def grants(e: Engine) -> set[int]:
    (client,) = e.clients()
    return {int(e.get_param(0, f"osc.{osc}.cur_grant_bytes")) for osc in client["osc"]}


def test_the_presets_start_from_the_connect_grant() -> None:
    assert PRESETS["cloudlab-c6525"]["client_grant"] == PRESETS["cloudlab-c220g5"]["client_grant"] == "connect"
    assert grants(engine(None)) == {8_437_760}
    assert grants(engine("connect")) == {8_437_760}


def test_a_warm_client_starts_with_its_grant_on_every_osc() -> None:
    assert grants(engine("1g")) == {1 << 30}


def test_a_warm_client_writes_more_of_its_first_half_second() -> None:
    # under the default (4 MiB RPCs, 8 in flight) the fresh client earns 8 MiB per write reply
    written = {}
    for grant in ("connect", "1g"):
        e = engine(grant)
        e.run()
        written[grant] = e.totals()["app_write_bytes"]
    assert written["1g"] > 2 * written["connect"], written


def test_the_field_takes_a_size_up_to_the_most_an_osc_asks_for() -> None:
    assert resolve_field("client_grant", "64m") == ("client_grant_bytes", 64 * MIB)
    assert resolve_field("client_grant", "connect") == ("client_grant_bytes", None)
    assert MAX_GRANT == 1792 * MIB - 1
    assert grants(engine(str(MAX_GRANT))) == {MAX_GRANT}
    with pytest.raises(ScenarioError, match=r"cluster\.client_grant: .*above the most grant an OSC asks for"):
        engine("1792m")
    with pytest.raises(ScenarioError, match=r"cluster\.client_grant"):
        engine("0")
    with pytest.raises(ScenarioError, match=r"cluster\.client_grant"):
        engine("warm")
