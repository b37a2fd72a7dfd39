"""A read's RPCs leave together: the thread sets up all of its pages first.

Lustre's `ll_io_read_page()` has `ll_readahead()` fill one queue with every page of the read
(and what it reads ahead) before `cl_io_submit_rw()` hands the queue to the OSCs, which cut it
into RPCs and send them one after another.  DIAL's real random 16 MiB reader shows it: the mean
number of RPCs in flight when each was sent is about half the read's RPCs (the k-th of a burst
of n sees k in flight), 8 MiB of data whatever the RPC size (docs/calibration.md, "A read's RPCs
leave together").
"""

from __future__ import annotations

import pytest

from pfstune.sim.engine import Engine
from pfstune.sim.scenario import parse_scenario
from tests.sim._osc_stats import read_rpcs_in_flight

MIB = 2**20


def mean_in_flight_at_send(mppr: int) -> tuple[float, float]:
    """(mean ``req_active`` of the busy OSC, mean read RPC size in MiB) of random 16 MiB reads."""
    text = (
        "name: burst\nseed: 1\nduration: 3s\n"
        "cluster: {preset: cloudlab-c6525, clients: 1}\n"
        f"tunables: {{osc.max_pages_per_rpc: {mppr}, osc.max_rpcs_in_flight: 256}}\n"
        "jobs:\n  - {name: r, client: 0, workload: filebench.randomread, iosize: 16m, filesize: 10g,"
        " stripe_count: 1}\n"
    )
    e = Engine(parse_scenario(text, "burst.yaml"))
    e.run()
    in_flight, rpc_bytes = read_rpcs_in_flight(e)
    return in_flight, rpc_bytes / MIB


@pytest.mark.parametrize(("mppr", "rpcs_per_read"), [(256, 16), (1024, 4)])
def test_a_random_read_sends_its_rpcs_as_one_burst(mppr: int, rpcs_per_read: int) -> None:
    in_flight, rpc_mib = mean_in_flight_at_send(mppr)
    assert rpc_mib == pytest.approx(16 / rpcs_per_read, rel=0.05)
    # a burst of n RPCs averages (n + 1) / 2 in flight at send; sent one by one as they were set
    # up (pfsim before 2026-11-27), each found about one in flight
    burst = (rpcs_per_read + 1) / 2
    assert burst * 0.85 <= in_flight <= burst * 1.15
