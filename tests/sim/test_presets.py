from __future__ import annotations

import pytest

from pfstune.errors import ScenarioError, UserError
from pfstune.sim.presets import DEFAULT_PRESET, FIELDS, PRESETS, resolve_field
from pfstune.sim.scenario import parse_scenario


def scenario_text(cluster: str) -> str:
    return f"name: t\nduration: 1s\ncluster: {cluster}\njobs: [{{name: j, client: 0, workload: filebench.seqread}}]\n"


def test_the_two_presets() -> None:
    assert set(PRESETS) == {"cloudlab-c6525", "cloudlab-c220g5"}
    assert DEFAULT_PRESET in PRESETS


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_declares_exactly_the_fields(name: str) -> None:
    assert set(PRESETS[name]) == set(FIELDS)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_resolves_to_every_engine_key(name: str) -> None:
    cluster = parse_scenario(scenario_text(f"{{preset: {name}}}"), "t.yaml").cluster
    assert list(cluster) == [f.engine_key for f in FIELDS.values() if f.engine_key is not None]


def test_hdd_preset_values() -> None:
    cluster = parse_scenario(scenario_text("{preset: cloudlab-c220g5}"), "t.yaml").cluster
    assert cluster["ost_kind"] == "hdd"
    assert cluster["ost_scheduler"] == "mq-deadline"  # CentOS 7's default for a rotational disk
    assert cluster["ost_random_penalty_ns"] == 8_000_000
    assert cluster["net_bandwidth_bps"] == 1.15e9  # decimal MB/s
    assert cluster["client_ram_bytes"] == 192 << 30  # binary GiB
    assert cluster["osts_per_oss"] == 1
    # a "1 TB" disk holds 10^12 bytes (931 GiB), not 1000 GiB
    assert 0.99e12 <= cluster["ost_capacity_bytes"] <= 1e12


def test_a_disk_needs_its_spindle_speed() -> None:
    cluster = parse_scenario(scenario_text("{preset: cloudlab-c220g5}"), "t.yaml").cluster
    assert cluster["ost_rpm"] == 7200
    assert parse_scenario(scenario_text("{preset: cloudlab-c6525}"), "t.yaml").cluster["ost_rpm"] == 0
    with pytest.raises(ScenarioError, match=r"cluster\.ost_kind.*ost_rpm"):
        parse_scenario(scenario_text("{preset: cloudlab-c6525, ost_kind: hdd, ost_scheduler: none}"), "t.yaml")
    with pytest.raises(ScenarioError, match=r"cluster\.ost_rpm"):
        parse_scenario(scenario_text("{preset: cloudlab-c220g5, ost_rpm: 0}"), "t.yaml")


def test_preset_fields_can_be_overridden() -> None:
    cluster = parse_scenario(
        scenario_text("{preset: cloudlab-c6525, clients: 2, ost_read_bw: 450MB/s, net_latency: 50us, brw_size: 16m}"),
        "t.yaml",
    ).cluster
    assert cluster["clients"] == 2
    assert cluster["ost_read_bw_bps"] == 4.5e8
    assert cluster["net_latency_ns"] == 50_000
    assert cluster["brw_size_bytes"] == 16 << 20
    assert cluster["oss"] == 4


def test_unknown_preset_field_is_rejected() -> None:
    with pytest.raises(ScenarioError, match=r"t\.yaml: cluster: unknown key 'ost_speed'"):
        parse_scenario(scenario_text("{ost_speed: 1g}"), "t.yaml")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("clients", 0),
        ("clients", True),
        ("oss", "4"),
        ("fsname", "averylongfsname"),
        ("fsname", "bad name"),
        ("ost_kind", "nvme"),
        ("brw_size", "3k"),
        ("brw_size", "12k"),
        ("brw_size", "128m"),
        ("net_bandwidth", "0"),
        ("ost_read_latency", "60"),
        ("client_ram", "0"),
        ("lustre_version", ""),
    ],
)
def test_bad_field_values(field: str, value: object) -> None:
    with pytest.raises(UserError):
        resolve_field(field, value)


def test_resolve_field_converts_units() -> None:
    assert resolve_field("ost_write_bw", "300m") == ("ost_write_bw_bps", 3e8)
    assert resolve_field("ost_capacity", "440g") == ("ost_capacity_bytes", 440 << 30)
    assert resolve_field("oss_service_time", "20us") == ("oss_service_ns", 20_000)
    assert resolve_field("description", "text") == (None, "text")
