"""What a simulated client's busiest reading OSC shows in its ``stats`` file."""

from __future__ import annotations

from pfstune.lustre.parse import parse_stats
from pfstune.sim.engine import Engine


def read_rpcs_in_flight(engine: Engine, client: int = 0) -> tuple[float, float]:
    """(mean ``req_active`` at each send, mean read RPC bytes) of the OSC of ``client`` that read most."""
    best: tuple[int, float, float] = (0, 0.0, 0.0)
    for param in engine.list_params(client):
        if not (param.name.startswith("osc.") and param.name.endswith(".stats")):
            continue
        _, counters = parse_stats(engine.get_param(client, param.name))
        read, active = counters.get("read_bytes"), counters.get("req_active")
        if read and active and read["sum"] and read["sum"] > best[0]:
            best = (read["sum"], (active["sum"] or 0) / active["samples"], read["sum"] / read["samples"])
    if best[0] == 0:
        raise AssertionError(f"no OSC of client {client} read anything")
    return best[1], best[2]
