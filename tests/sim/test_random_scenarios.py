"""Random scenarios, generated: each is refused with a one-line error or runs to its end.

test_scenario.py names each validation error, and test_engine.py each mechanism. This test mixes
what they test one at a time: several jobs of every workload family on shared clients, odd
request sizes, striping, tunables at their bounds, tuners in the loop. Every scenario must either
be refused as a user mistake (UserError) or run to its end with finite, non-negative figures.
Outside checks run scenarios we do not have; a panic in the core would end theirs with a traceback.
"""

from __future__ import annotations

import math
import random
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pfstune.errors import UserError
from pfstune.runs import simulate
from pfstune.sim.scenario import parse_scenario

FILEBENCH = ("seqread", "seqwrite", "randomread", "randomwrite", "randomrw", "seqrw")
FILEBENCH += ("wholefileread", "wholefilewrite", "wholefilerw")


def job(rng: random.Random, index: int, clients: int) -> dict[str, Any]:
    """One job of a random workload family with random (mostly valid) parameters."""
    spec: dict[str, Any] = {"name": f"j{index}"}
    if rng.random() < 0.5:
        spec["client"] = rng.randrange(clients)
    else:
        spec["clients"] = sorted(rng.sample(range(clients), rng.randint(1, clients)))
    if rng.random() < 0.5:
        spec["stripe_count"] = rng.choice([-1, 1, 2, 4])
    if rng.random() < 0.3:
        spec["stripe_size"] = rng.choice(["64k", "1m", "4m"])
    if rng.random() < 0.3:
        spec["start"] = rng.choice(["0s", "0.1s", "0.5s"])
    family = rng.choice(["filebench"] * 5 + ["ior", "ior", "vpic", "bdcats", "dlio"])
    if rng.random() < 0.2 and family in ("filebench", "ior"):  # h5bench and DLIO have no fsync
        spec["fsync"] = rng.random() < 0.5
    if family == "filebench":
        spec |= {
            "workload": "filebench." + rng.choice(FILEBENCH),
            "iosize": rng.choice(["4k", "8k", "3000", "12k", "64k", "1m", "1500k", "4m", "16m", "33m"]),
            "filesize": rng.choice(["64m", "100m", "1g", "20g"]),
            "threads": rng.choice([1, 1, 2, 5, 16]),
        }
    elif family == "ior":
        transfer = rng.choice([4096, 65536, 1 << 20, 4 << 20])
        spec |= {
            "workload": "ior",
            "api": rng.choice(["posix", "mpiio"]),
            "processes": rng.choice([1, 2, 4, 8]),
            "transfer": transfer,
            "block": transfer * rng.choice([1, 2, 16, 64]),
            "segments": rng.choice([1, 2, 4]),
            "file_per_process": rng.random() < 0.5,
            "random": rng.random() < 0.5,
        }
    elif family == "vpic":
        dims = rng.choice([1, 2, 3])
        spec |= {"workload": "h5bench.vpic", "processes": rng.choice([1, 2, 4]), "num_dims": dims}
        spec |= {"dim_1": rng.choice([1024, 65536, 1 << 20]), "timesteps": rng.choice([1, 2, 5])}
        spec |= {"dim_2": rng.choice([1, 4, 16])} if dims >= 2 else {}
        spec |= {"dim_3": rng.choice([1, 2, 8])} if dims == 3 else {}
        spec["compute_time"] = rng.choice(["0s", "0.1s", "1s"])
    elif family == "bdcats":
        option = rng.choice(["full", "partial", "strided"])
        spec |= {"workload": "h5bench.bdcats", "processes": rng.choice([1, 2, 4]), "read_option": option}
        spec |= {"dim_1": rng.choice([1024, 65536, 1 << 20]), "timesteps": rng.choice([1, 2])}
        spec |= {"to_read_num_particles": 512} if option == "partial" else {}
        spec |= {"stride_size": 64, "block_size": 16, "block_cnt": 8} if option == "strided" else {}
    else:
        spec |= {
            "workload": "dlio",
            "files": rng.choice([1, 8, 64]),
            "samples_per_file": rng.choice([1, 4, 32]),
            "sample_size": rng.choice(["1k", "100k", "2m"]),
            "read_threads": rng.choice([1, 4, 8]),
            "computation_time": rng.choice(["0s", "0.05s", "0.5s"]),
        }
        if rng.random() < 0.5:
            spec["transfer_size"] = rng.choice(["4k", "256k", "1m"])
    return spec


def scenario(rng: random.Random) -> dict[str, Any]:
    """A random scenario of 1 to 4 clients and 1 to 4 jobs, sometimes with tunables at their bounds,
    a small page cache and a narrow read-ahead window."""
    clients = rng.randint(1, 4)
    doc: dict[str, Any] = {
        "name": "random",
        "seed": rng.randrange(1000),
        "duration": rng.choice(["0.3s", "1s"]),
        "cluster": {"preset": rng.choice(["cloudlab-c6525", "cloudlab-c220g5"]), "clients": clients},
        "jobs": [job(rng, i, clients) for i in range(rng.randint(1, 4))],
    }
    if rng.random() < 0.3:  # the node's page cache, down to less than a few reads' read-ahead
        doc["cluster"]["client_page_cache"] = rng.choice(["none", "64m", "850m"])
    if rng.random() < 0.3:  # the read-ahead window at mount, down to one 4 MiB RPC
        doc["cluster"]["client_read_ahead_per_file"] = rng.choice(["default", "4m", "40m"])
    choices = {
        "osc.max_pages_per_rpc": [1, 2, 16, 256, 1024],
        "osc.max_rpcs_in_flight": [1, 2, 8, 64, 256],
        "osc.max_dirty_mb": [0, 1, 32, 2000],
        "osc.short_io_bytes": [0, 4096, 65536],
        "osc.checksums": [0, 1],
        "llite.max_read_ahead_mb": [0, 1, 64],
        "llite.max_cached_mb": [1, 128, 4096],
    }
    tunables = {name: rng.choice(values) for name, values in choices.items() if rng.random() < 0.4}
    if tunables:
        doc["tunables"] = tunables
    return doc


@settings(max_examples=60, deadline=None, derandomize=True)
@given(rng=st.randoms(use_true_random=False))
def test_a_random_scenario_is_refused_or_runs_to_its_end(rng: random.Random) -> None:
    text = yaml.safe_dump(scenario(rng))
    try:
        parsed = parse_scenario(text, "random.yaml", {})
    except UserError:
        return
    result = simulate(parsed, rng.choice(["default", "default", "iopathtune", "dial", "bandit"]), None)
    assert result["sim_seconds"] == parsed.duration_ns / 1e9, text
    for key in ("mbps", "read_mbps", "write_mbps", "osc_mbps"):
        assert math.isfinite(result[key]), (key, text)
        assert result[key] >= 0, (key, text)
